"""The binary trace format shared by emitted kernels and the decoder.

Every cluster of a launch (every *instance*: the clusters of a grid that the model checks
as one system, when the kernel uses global memory or its place in the grid) owns a
control block (``CTRL_WORDS`` u32) and an event buffer of ``cap`` records of 16 bytes.
An event's index in the buffer *is* its ticket: a per-instance atomic counter (in CTA
0's shared memory for one cluster, ``C_GTICKET`` in global memory for several) taken
before any signal and after any wait returns, so that ticket order respects every
happens-before edge between traced steps.

Record (4 x u32):
  word 0  header: ``VALID | kind << 24 | cta << 8 | warp``
  word 1  pc: the index of the instruction in the warp's ``AgentProgram``
  word 2  obs0: the observed value (an arrive's pending count from the returned state,
          a try_wait's result, a wait's spin count, a CLC response's validity)
  word 3  obs1: flags (``F_*``) | the low 16 bits of the first bad stamp << 16
"""

from __future__ import annotations

from dataclasses import dataclass

VALID = 0x80000000
K_STEP = 1       # a warp executed instruction ``pc`` (one model step)
K_ENV = 2        # an emulated asynchronous completion the warp performed itself
K_STUCK = 3      # the watchdog expired while the warp waited at ``pc``

F_PENDING = 0x1  # obs0 is the pending count returned by the first local arrive
F_DATA = 0x2     # a stamp check failed at this step (data error)
F_CHOICE = 0x4   # obs0 is the validity of a (emulated) CLC response
F_RESULT = 0x8   # obs0 is a try_wait/test_wait result
F_ABORT = 0x10   # STUCK because another warp's watchdog expired (abort flag)
F_FLAG = 0x20    # obs0 is a global flag's value: the one an ``atom`` returned (before its
                 # add) or the one that ended a spin (diagnostic: the replay judges steps)

# control block words (u32) per cluster
CTRL_WORDS = 16
C_TICKET, C_ABORT, C_EXITED, C_ERRORS, C_OVERFLOW, C_STUCK, C_ERR_WHO, C_ERR_PC, \
    C_ERR_STAMP, C_GTICKET = range(10)
# C_GTICKET: the ticket counter of an instance of several clusters (global memory; a
# one-cluster instance keeps it in CTA 0's shared memory)

EVENT_BYTES = 16


@dataclass(frozen=True)
class GpuEvent:
    ticket: int
    kind: int
    cta: int
    warp: int
    pc: int
    obs0: int
    obs1: int

    @property
    def flags(self) -> int:
        return self.obs1 & 0xFFFF

    @property
    def bad_stamp(self) -> int:
        return self.obs1 >> 16

    def describe(self) -> str:
        k = {K_STEP: "step", K_ENV: "async", K_STUCK: "STUCK"}.get(self.kind, "?")
        return f"#{self.ticket} cta{self.cta}.w{self.warp} {k} pc {self.pc}"


def decode_events(words: "Sequence[int]", count: int) -> list[GpuEvent]:  # noqa: F821
    """Decode ``count`` records of one cluster's buffer (a flat u32 sequence)."""
    out = []
    for t in range(count):
        h, pc, o0, o1 = (int(x) for x in words[4 * t:4 * t + 4])
        if not h & VALID:
            continue
        out.append(GpuEvent(t, (h >> 24) & 0x7F, (h >> 8) & 0xFFFF, h & 0xFF, pc, o0, o1))
    return out


def encode_event(kind: int, cta: int, warp: int, pc: int, obs0: int = 0,
                 obs1: int = 0) -> tuple[int, int, int, int]:
    return (VALID | kind << 24 | cta << 8 | warp, pc, obs0 & 0xFFFFFFFF, obs1 & 0xFFFFFFFF)
