"""The real CuTe DSL test kernels of ``tests/cute_kernels/`` and what each should give.

Each kernel module names its architecture (``ARCH``), its planted bugs (``BUGS``) and
its ``.pipe`` twin (``Twin: path`` in the docstring); bug ``N``'s twin is
``NAME_bugN.pipe`` next to it.  ``LIFTED_DIFFERS`` lists where the lifted kernel's
verdict is expected to differ from the twin's, and why: the lifted kernel shows more
(ghost effects on every load and store), never less -- except for the pipeline-state
ghost phases, which only the twin has: a surplus arrival that the twin reports where it
happens (``arrival-overflow``, spec/properties.md) the lifted kernel reports at the same
arrive as the ``phase-overrun`` it also is (``_SURPLUS``).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(HERE, "cute_kernels")


@dataclass(frozen=True)
class CuteCase:
    name: str
    path: str
    arch: str
    bug: int
    twin: str

    @property
    def entry(self) -> str:
        return f"{self.path}::{self.name}"

    @property
    def id(self) -> str:
        return f"{self.name}-bug{self.bug}" if self.bug else self.name


def cases() -> list[CuteCase]:
    out = []
    for path in sorted(glob.glob(os.path.join(KERNELS, "*.py"))):
        src = open(path).read()
        arch = re.search(r'^ARCH = "(\w+)"', src, re.M)
        bugs = re.search(r"^BUGS = \(([^)]*)\)", src, re.M)
        twin = re.search(r"Twin: (\S+\.pipe)", src)
        if not (arch and bugs and twin):
            continue
        name = os.path.basename(path)[:-3]
        out.append(CuteCase(name, path, arch.group(1), 0, os.path.join(ROOT, twin.group(1))))
        for b in (int(x) for x in bugs.group(1).split(",") if x.strip()):
            out.append(CuteCase(name, path, arch.group(1), b,
                                os.path.join(KERNELS, f"{name}_bug{b}.pipe")))
    return out


#: (kernel, bug) -> (status, property, why the lifted kernel's answer is the right one)
LIFTED_DIFFERS: dict[tuple[str, int], tuple[str, Optional[str], str]] = {
    ("pipeline_tma_async_participants", 3): (
        "VIOLATED", "overwrite-before-release",
        "the stage is released before it is read: the twin reports the producer's next "
        "write reaching the read (read-before-full); the lifted read holds the stage from "
        "the start of its window, right after the release, so the same write is an "
        "overwrite of a held stage"),
    ("pipeline_tma_multi_consumers_async", 3): (
        "VIOLATED", "overwrite-before-release",
        "the helper warp releases the stage before reading it: as in "
        "pipeline_tma_async_participants bug 3, the twin names the read, the lifted "
        "kernel the write"),
    ("pipeline_umma_async", 1): (
        "VIOLATED", "phase-overrun",
        "the same bug (consumer group not scaled by the CTA pair): the twin's first "
        "symptom is an overwrite of the TMEM accumulator, which the lifter does not "
        "track per stage (tcgen05.ld/mma are a tmem_use of the CTA's whole tensor "
        "memory, frontend/cute/tmem_ops.py); the lifted "
        "kernel shows the second CTA's release overrunning the phase"),
    ("pipeline_tma_umma", 3): (
        "VIOLATED", "tmem-misuse",
        "tensor memory freed before the MMAs: the lifted kernel's tcgen05.mma accesses "
        "tensor memory (a tmem_use step, frontend/cute/tmem_ops.py), the twin's "
        "tcgen05_mma does not (in .pipe only PipelineUmmaAsync accumulator stages are "
        "tensor memory, spec/primitives.md 12 C-T6), so the twin is PROVEN"),
    ("pipeline_order", 2): (
        "VIOLATED", "read-before-full",
        "both warpgroups enter the critical section at once: besides the surplus arrival "
        "the twin reports, their read-modify-writes of the buffer race, and that race "
        "is reached in fewer steps"),
    ("pipeline_order", 3): (
        "VIOLATED", "read-before-full",
        "no order.wait(): the two warpgroups' read-modify-writes race (the twin has no "
        "buffer)"),
}

#: surplus arrivals: the twin knows, from the pipeline state's ghost phase, which phase
#: the arrival belongs to and reports ``arrival-overflow`` at the surplus arrive; the
#: lifted kernel has no ghost phases and reports the same arrive as a ``phase-overrun``
#: (the phase it completes early has not been observed yet)
_SURPLUS = {
    ("pipeline_order", 1): "one warp's worth of arrivals completes the phase, the other "
                           "three warps of the group arrive on the next one",
    ("pipeline_tma_async", 3): "a consumer group counted once, four warps release",
    ("pipeline_tma_async_2x1", 2): "the consumer group is not scaled by the 2 CTAs",
    ("pipeline_tma_async_multicast", 1): "the consumer group is not scaled by the "
                                         "cm + cn - 1 releasing CTAs",
    ("pipeline_tma_async_participants", 1): "consumer.wait() does not advance: the same "
                                            "stage and phase is released again",
    ("pipeline_tma_async_participants", 2): "handle.release() twice per warp",
}
for _k, _why in _SURPLUS.items():
    LIFTED_DIFFERS[_k] = ("VIOLATED", "phase-overrun",
                          f"a surplus arrival ({_why}): the twin names it arrival-overflow "
                          "from its pipeline-state ghost phase, the lifted kernel (no ghost "
                          "phases) the phase overrun of the same arrive")


#: kernels the front end refuses today (UNKNOWN, naming what it cannot follow); the
#: test expects exactly this refusal, so support arriving shows up as a failing test
LIFT_UNSUPPORTED: dict[str, str] = {}
