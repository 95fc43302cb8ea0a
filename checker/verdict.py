"""Verdicts (ARCHITECTURE.md): exactly one of SAFE (bounded to depth N), PROVEN
(unbounded), VIOLATED <property> with a counterexample, UNKNOWN <reason>.  Exit codes:
0 safe/proven, 1 violated, 2 bad input or usage, 3 unknown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..model.errors import option
from .trace import Trace

SAFE, PROVEN, VIOLATED, UNKNOWN = "SAFE", "PROVEN", "VIOLATED", "UNKNOWN"
EXIT_CODES = {SAFE: 0, PROVEN: 0, VIOLATED: 1, UNKNOWN: 3}


@dataclass
class Stats:
    engine: str = ""
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    peak_mb: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Verdict:
    status: str
    prop: Optional[str] = None
    reason: str = ""
    trace: Optional[Trace] = None
    stats: Stats = field(default_factory=Stats)
    bounded: bool = True  # SAFE from an exhaustive search of a finite system is not bounded
    depth: int = 0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def headline(self) -> str:
        if self.status == SAFE:
            if self.bounded:
                return f"SAFE (bounded to depth {self.depth})"
            return (f"SAFE (exhaustive: all {self.stats.states} reachable states explored, "
                    f"longest run {self.depth} steps)")
        if self.status == PROVEN:
            return "PROVEN (unbounded)"
        if self.status == VIOLATED:
            return f"VIOLATED {self.prop}"
        return f"UNKNOWN {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "property": self.prop,
            "reason": self.reason,
            "headline": self.headline(),
            # SAFE: to a depth (true) or exhaustive (false); PROVEN: unbounded (false);
            # a violation or an unknown has no bound to speak of (null)
            "bounded": (self.bounded if self.status == SAFE else
                        False if self.status == PROVEN else None),
            "depth": self.depth,
            "stats": {
                "engine": self.stats.engine,
                "states": self.stats.states,
                "transitions": self.stats.transitions,
                "depth": self.stats.depth,
                "seconds": round(self.stats.seconds, 4),
                "states_per_second": round(self.stats.states_per_second, 1),
                "peak_mb": round(self.stats.peak_mb, 1),
                **self.stats.extra,
            },
            "trace": self.trace.to_json() if self.trace is not None else None,
        }


def state_limit_reason(max_states: int, max_depth: int, note: str = "") -> str:
    """The UNKNOWN reason of an explicit-state search that ran out of states (one
    sentence for every engine that enumerates states, so they agree word for word)."""
    return (f"state limit: more than {max_states} states (explored to depth {max_depth})"
            f"{note}; use {option('engine', 'bmc')} or smaller parameters")
