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
    blocked: list[str] = field(default_factory=list)  # deadlock: who waits on what

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
        lines.append("Stuck for ever:")
        for b in trace.blocked:
            lines.append(f"  {b}")
    return "\n".join(lines)
