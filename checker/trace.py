"""Traces: one object whether they come from a counterexample or from a GPU run.

A trace is an ordered list of events.  Each event says who acted (an agent: a warp of a
CTA with its role, or an environment agent: a TMA delivery, a tcgen05 commit, a cp.async
completion, a bulk-store group), what it did in the user's words, the source line, and
the barrier state it changed (phase, pending, tx, before and after).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class BarrierChange:
    barrier: str
    phase: tuple[int, int]
    pending: tuple[int, int]
    tx: tuple[int, int]
    expected: int

    def render(self) -> str:
        parts = []
        if self.phase[0] != self.phase[1]:
            parts.append(f"phase {self.phase[0]}->{self.phase[1]} (completed)")
        else:
            parts.append(f"phase {self.phase[1]}")
        if self.pending[0] != self.pending[1]:
            parts.append(f"pending {self.pending[0]}->{self.pending[1]}")
        else:
            parts.append(f"pending {self.pending[1]}")
        if self.tx[0] != self.tx[1]:
            parts.append(f"tx {self.tx[0]}->{self.tx[1]}")
        elif self.tx[1]:
            parts.append(f"tx {self.tx[1]}")
        return f"{self.barrier}: " + ", ".join(parts) + f" (of {self.expected})"


def barrier_changes(bars: dict, before: Any, after: Any) -> tuple[BarrierChange, ...]:
    """The barriers a step changed, between two flat states (``bars``: a ``System``'s
    barrier slots, ``System.bar``; fields in ``model.mbarrier.FIELDS`` order)."""
    out = []
    for ref, b in bars.items():
        if before[b:b + 5] != after[b:b + 5]:
            out.append(BarrierChange(str(ref), (before[b], after[b]),
                                     (before[b + 1], after[b + 1]),
                                     (before[b + 3], after[b + 3]), after[b + 2]))
    return tuple(out)


@dataclass(frozen=True)
class Event:
    step: int
    actor: str          # "cta0.w4" or "tma", "tcgen05", "cp.async", "bulk", "clc"
    role: str           # role name of the warp, or the kind of environment agent
    cta: Optional[int]
    what: str
    loc: str = ""
    kind: str = "agent"  # agent | env
    changes: tuple[BarrierChange, ...] = ()
    violation: Optional[str] = None
    # Structured view of the operation (ARCHITECTURE.md: operation, pipeline, barrier,
    # stage, phase/parity, bytes); filled from the instruction by ``instr_fields`` /
    # ``env_fields``; empty where unknown (e.g. hand-written or older traces).
    op: str = ""                  # PTX-level operation: wait, arrive, arrive.expect_tx, ...
    pipeline: str = ""            # pipeline variable ("ab"), or "" for raw barriers
    barrier: str = ""             # the barrier it waits on / signals ("ab.full[0]@cta0")
    stage: Optional[int] = None   # pipeline stage (barrier or buffer index)
    parity: Optional[int] = None  # wait parity (phase bit) for waits
    tx: Optional[int] = None      # bytes expected or delivered (a multicast tma_load:
    #                               per destination, one per barrier in ``barrier``)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["changes"] = [asdict(c) for c in self.changes]
        return d


@dataclass
class Trace:
    events: list[Event] = field(default_factory=list)
    violated: Optional[str] = None
    detail: str = ""
    loop_start: Optional[int] = None     # lasso traces (starvation): index of the loop's start
    #: deadlock: who waits on what; starvation (``loop_start`` set): where the starving
    #: warps wait when the loop starts -- not stuck, so timelines draw no STUCK row
    blocked: list[str] = field(default_factory=list)
    #: the steps in the explicit engine's ids, naming the real warps (no symmetry
    #: permutation): ``Explorer(system, symmetry=False).replay(steps, ...)`` re-runs them
    steps: list[tuple] = field(default_factory=list, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.events)

    def to_json(self) -> dict[str, Any]:
        return {
            "violated": self.violated,
            "detail": self.detail,
            "loop_start": self.loop_start,
            "blocked": self.blocked,
            "events": [e.to_json() for e in self.events],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2)


def _pipe_of(name: str) -> str:
    """``"ab.full"`` -> ``"ab"``; array names are ``<pipeline var>.<array>``."""
    return name.rsplit(".", 1)[0] if "." in name else ""


def instr_fields(ins: Any) -> dict[str, Any]:
    """The structured fields of an ``Event`` for one instruction of a warp
    (``model/program.py``): operation, pipeline, barrier, stage, parity, bytes.  Where
    the instruction names no stage, the stage buffer of its ghost effects gives it (a
    ``read`` or ``write`` of a stage)."""
    d = _instr_fields(ins)
    if d.get("stage") is None and d.get("op") in ("ghost", "misuse"):
        for e in tuple(getattr(ins, "pre", ())) + tuple(getattr(ins, "post", ())):
            buf = getattr(e, "buf", None)
            if buf is not None:
                d["stage"] = buf.stage
                if not d.get("pipeline"):
                    d["pipeline"] = _pipe_of(buf.buffer)
                break
    return d


def _instr_fields(ins: Any) -> dict[str, Any]:
    from ..model import program as P

    t = type(ins)
    bar = getattr(ins, "bar", None)
    if t is P.Wait:
        return _bar_fields("wait", bar, parity=ins.parity)
    if t is P.TryWait:
        return _bar_fields("test_wait" if ins.test else "try_wait", bar, parity=ins.parity)
    if t is P.Arrive:
        tx = sum(a.tx for a in ins.arrivals)
        op = ("arrive_drop" if ins.drop else "arrive") + (".expect_tx" if tx else "")
        if not ins.arrivals:
            return {"op": op}
        d = _bar_fields(op, ins.arrivals[0].bar, tx=tx or None)
        if len(ins.arrivals) > 1:
            d["barrier"] = ", ".join(str(a.bar) for a in ins.arrivals)
        return d
    if t is P.ExpectTx:
        return _bar_fields("expect_tx", bar, tx=ins.tx)
    if t is P.CompleteTx:
        return _bar_fields("complete_tx", bar, tx=ins.tx)
    if t is P.TmaLoad:
        op = "clc.try_cancel" if ins.kind == "clc" else "tma_load"
        if not ins.deliveries:
            return {"op": op}
        d0 = ins.deliveries[0]
        # a multicast lands the same box in every destination: ``tx`` is the bytes per
        # destination (each barrier in ``barrier``); None where deliveries differ
        bars = sorted({str(x.bar) for x in ins.deliveries})
        sizes = {x.bytes for x in ins.deliveries}
        per = d0.bytes if len(sizes) == 1 and len(bars) == len(ins.deliveries) else None
        d = _bar_fields(op, d0.bar, tx=per)
        if d0.buf is not None:
            d["stage"] = d0.buf.stage
        if len(ins.deliveries) > 1:
            d["barrier"] = ", ".join(bars)
        return d
    if t is P.CpAsync:
        return {"op": "cp.async", "pipeline": _pipe_of(ins.buf.buffer), "stage": ins.buf.stage}
    if t is P.CpAsyncArrive:
        return _bar_fields("cp.async.mbarrier.arrive", bar)
    if t is P.UmmaCommit:
        if not ins.bars:
            return {"op": "tcgen05.commit"}
        d = _bar_fields("tcgen05.commit", ins.bars[0])
        if len(ins.bars) > 1:
            d["barrier"] = ", ".join(str(b) for b in ins.bars)
        return d
    if t is P.TmaStore:
        return {"op": "tma_store", "pipeline": _pipe_of(ins.buf.buffer), "stage": ins.buf.stage}
    if t is P.BulkCommit:
        return {"op": "bulk.commit_group"}
    if t is P.CpAsyncCommit:
        return {"op": "cp.async.commit_group"}
    if t is P.CpAsyncWaitGroup:
        return {"op": f"cp.async.wait_group {ins.n}"}
    if t is P.BulkWaitRead:
        return {"op": f"bulk.wait_group.read {ins.n}"}
    if t is P.WgmmaWait:
        return {"op": f"wgmma.wait_group {ins.n}"}
    if t is P.NamedBarrierOp:
        return {"op": ("bar.sync" if ins.sync else "bar.arrive") + f" {ins.id}"}
    if t is P.NamedWait:
        return {"op": f"bar.sync {ins.id} (wait)"}
    if t is P.ClusterArrive:
        return {"op": "barrier.cluster.arrive" + (".relaxed" if ins.relaxed else "")}
    if t is P.ClusterWait:
        return {"op": "barrier.cluster.wait"}
    if t is P.MbarInit:
        return {"op": "mbarrier.init"}
    if t is P.FenceMbarInit:
        return {"op": "fence.mbarrier_init"}
    if t is P.Fail:
        return {"op": "misuse"}
    if t is P.Exit:
        return {"op": "exit"}
    if t is P.Nop:
        return {"op": "ghost"}
    if t is P.ParamSplit:
        return {"op": "param split"}
    if t is P.TmemAlloc:
        return {"op": f"tcgen05.alloc.cta_group::{ins.cta_group}"}
    if t is P.TmemDealloc:
        return {"op": f"tcgen05.dealloc.cta_group::{ins.cta_group}"}
    if t is P.TmemRelinquish:
        return {"op": f"tcgen05.relinquish_alloc_permit.cta_group::{ins.cta_group}"}
    if t is P.GmemAtomic:
        kind = (f"red.{ins.sem}.gpu.global.add" if ins.op == "add"
                else f"st.{ins.sem}.gpu.global")
        return {"op": f"{kind} {ins.value}", "barrier": str(ins.flag)}
    if t is P.GmemWait:
        return {"op": f"ld.{ins.sem}.gpu.global spin ({ins.cmp} {ins.value})",
                "barrier": str(ins.flag)}
    if t is P.GmemFence:
        return {"op": "fence.acq_rel.gpu"}
    if t is P.TmemWait:
        return {"op": "tcgen05 cta_group::2 alloc/dealloc (wait for the peer CTA)"}
    return {"op": t.__name__}


def env_fields(system: Any, item: tuple) -> dict[str, Any]:
    """The structured fields of an ``Event`` for one step of an environment agent
    (``model/system.py`` ``exec_env`` items)."""
    kind = item[0]
    if kind == "tma":
        ins = system.code(item[1])[item[2]]
        dl = ins.deliveries[item[3]]
        d = _bar_fields("complete_tx", dl.bar, tx=dl.bytes)
        if dl.buf is not None:
            d["stage"] = dl.buf.stage
        return d
    ins = system.code(item[1])[item[2]] if item[2] >= 0 else None
    if kind == "tcgen05" and ins is not None and getattr(ins, "bars", ()):
        d = _bar_fields("tcgen05.commit arrive", ins.bars[0])
        if len(ins.bars) > 1:
            d["barrier"] = ", ".join(str(b) for b in ins.bars)
        return d
    if kind == "cp.async" and ins is not None:
        if getattr(ins, "bar", None) is not None:
            return _bar_fields("cp.async.mbarrier.arrive fires", ins.bar)
        if getattr(ins, "buf", None) is None:  # a commit group's marker
            return {"op": "cp.async group done"}
        return {"op": "cp.async done", "pipeline": _pipe_of(ins.buf.buffer),
                "stage": ins.buf.stage}
    if kind == "bulk":
        if ins is not None and getattr(ins, "buf", None) is not None:
            return {"op": "bulk store read done", "pipeline": _pipe_of(ins.buf.buffer),
                    "stage": ins.buf.stage}
        return {"op": "bulk group done"}
    return {"op": kind}


def _bar_fields(op: str, bar: Any, parity: Optional[int] = None,
                tx: Optional[int] = None) -> dict[str, Any]:
    if bar is None:
        return {"op": op}
    return {"op": op, "pipeline": _pipe_of(bar.array), "barrier": str(bar),
            "stage": bar.stage, "parity": parity, "tx": tx}


def render_text(trace: Trace, max_width: int = 110) -> str:
    """Numbered steps, who did what, and the barrier state after each step."""
    lines = []
    width = len(str(len(trace.events)))
    for ev in trace.events:
        who = ev.actor if ev.kind == "env" else f"{ev.actor} ({ev.role})"
        mark = "  <-- " + ev.violation if ev.violation else ""
        loop = "  [loop starts here]" if trace.loop_start is not None and \
            ev.step == trace.loop_start else ""
        lines.append(f"{ev.step:>{width}}. {who}: {ev.what}{mark}{loop}")
        pad = " " * (width + 2)
        if ev.loc:
            lines.append(f"{pad}   at {ev.loc}")
        for c in ev.changes:
            lines.append(f"{pad}   {c.render()}")
    if trace.blocked:
        lines.append("")
        lines.append("Stuck for ever:" if trace.loop_start is None else
                     f"Where the starving warps wait (step {trace.loop_start}, where the "
                     "loop starts):")
        for b in trace.blocked:
            lines.append(f"  {b}")
    return "\n".join(lines)
