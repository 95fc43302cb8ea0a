"""Chrome / Perfetto trace-event JSON of a trace (open it in ui.perfetto.dev or
chrome://tracing).

Layout: one *process* per CTA (``CTA 0``, ``CTA 1`` ...) with one *thread* (track) per
warp, named ``w4 (mma)``; one process ``async hardware`` with a track per environment
agent (TMA deliveries, tcgen05 commits, ...).  Every step is a complete event (``ph:
"X"``) of one time unit (1 ms per step; the model has no real time, only an order) on
its agent's track, with the label, source location, stage, parity and barrier changes
in ``args``.  Barrier state is a set of counters (``ph: "C"``) per barrier in the CTA
that owns it: ``phase`` (mod 4, as the model keeps it), ``pending`` arrivals and ``tx``
bytes.  The violating step is a global instant event; for a deadlock every stuck warp
gets a final ``STUCK`` slice whose ``args.reason`` says what it waits on.

Format reference: the Trace Event Format document (Google), which Perfetto's JSON
importer follows.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from ..trace import Trace
from .lanes import Timeline, build

STEP_US = 1000          # one model step = 1 ms on the time axis
SLICE_US = 800          # slices leave a gap so that consecutive steps stay distinct
ENV_PID = 1000
_CTA_OF_BAR = re.compile(r"@cta(\d+)$")


def _category(op: str) -> str:
    """wait / arrive / async copy / data (ghost reads and writes of a stage) / other."""
    if op == "ghost":
        return "data"
    if "wait" in op:
        return "wait"
    if "arrive" in op or "commit" in op:
        return "arrive"
    if op in ("tma_load", "complete_tx", "cp.async", "tma_store", "clc.try_cancel"):
        return "async copy"
    return "other"


def perfetto_events(trace: Trace, meta: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The trace-event JSON object (``{"traceEvents": [...], ...}``)."""
    tl = build(trace)
    return _events(tl, meta or {})


def _events(tl: Timeline, meta: dict[str, Any]) -> dict[str, Any]:
    evs: list[dict[str, Any]] = []
    where: list[tuple[int, int]] = []
    ctas = sorted({ln.cta for ln in tl.lanes if ln.cta is not None})
    for c in ctas:
        evs.append({"ph": "M", "name": "process_name", "pid": c + 1, "tid": 0,
                    "args": {"name": f"CTA {c}"}})
        evs.append({"ph": "M", "name": "process_sort_index", "pid": c + 1, "tid": 0,
                    "args": {"sort_index": c}})
    if any(ln.kind == "env" for ln in tl.lanes):
        evs.append({"ph": "M", "name": "process_name", "pid": ENV_PID, "tid": 0,
                    "args": {"name": "async hardware"}})
        evs.append({"ph": "M", "name": "process_sort_index", "pid": ENV_PID, "tid": 0,
                    "args": {"sort_index": 10_000}})
    for i, ln in enumerate(tl.lanes):
        if ln.kind == "agent":
            pid = (ln.cta or 0) + 1
            tid = i + 1
            name = f"{ln.title} ({ln.role})"
        else:
            pid, tid, name = ENV_PID, i + 1, ln.title
        where.append((pid, tid))
        evs.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": name}})
        evs.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                    "args": {"sort_index": i}})
    seen_bar: set[str] = set()
    last_ts = 0
    for r in tl.rows:
        ev = r.event
        pid, tid = where[r.lane]
        ts = r.step * STEP_US
        last_ts = ts
        args: dict[str, Any] = {"step": r.step, "what": ev.what}
        if ev.loc:
            args["loc"] = ev.loc
        for k in ("op", "pipeline", "barrier"):
            v = getattr(ev, k)
            if v:
                args[k] = v
        for k in ("stage", "parity", "tx"):
            v = getattr(ev, k)
            if v is not None:
                args[k] = v
        if r.state:
            args["barrier state"] = r.state
        if ev.violation:
            args["violation"] = ev.violation
        evs.append({"ph": "X", "name": r.cell, "cat": _category(ev.op), "pid": pid,
                    "tid": tid, "ts": ts, "dur": SLICE_US, "args": args})
        for c in ev.changes:
            m = _CTA_OF_BAR.search(c.barrier)
            cpid = int(m.group(1)) + 1 if m else pid
            if c.barrier not in seen_bar:
                seen_bar.add(c.barrier)
                evs.append({"ph": "C", "name": c.barrier, "pid": cpid, "ts": 0,
                            "args": {"phase": c.phase[0], "pending": c.pending[0],
                                     "tx": c.tx[0]}})
            evs.append({"ph": "C", "name": c.barrier, "pid": cpid, "ts": ts,
                        "args": {"phase": c.phase[1], "pending": c.pending[1],
                                 "tx": c.tx[1]}})
        if r.violation:
            evs.append({"ph": "i", "name": f"VIOLATED {tl.violated}", "s": "g",
                        "pid": pid, "tid": tid, "ts": ts + SLICE_US // 2,
                        "args": {"detail": tl.detail}})
    for b in tl.blocked:
        pid, tid = where[b.lane]
        evs.append({"ph": "X", "name": "STUCK " + b.cell, "cat": "deadlock", "pid": pid,
                    "tid": tid, "ts": last_ts + STEP_US, "dur": 3 * STEP_US,
                    "args": {"reason": b.reason}})
    if tl.loop_start is not None and tl.violation_step is None and not tl.blocked:
        evs.append({"ph": "i", "name": f"VIOLATED {tl.violated or 'starvation'}", "s": "g",
                    "pid": where[0][0], "tid": where[0][1], "ts": tl.loop_start * STEP_US,
                    "args": {"detail": tl.detail, "loop starts at step": tl.loop_start}})
    if tl.blocked:
        evs.append({"ph": "i", "name": f"VIOLATED {tl.violated or 'deadlock'}", "s": "g",
                    "pid": where[tl.blocked[0].lane][0], "tid": where[tl.blocked[0].lane][1],
                    "ts": last_ts + STEP_US, "args": {"detail": tl.detail}})
    out: dict[str, Any] = {"traceEvents": evs, "displayTimeUnit": "ms"}
    md = {"tool": "pipeproof", "time axis": "one model step = 1 ms (order only)"}
    md.update({k: v for k, v in meta.items() if isinstance(v, (str, int, float, bool))})
    if tl.violated:
        md["violated"] = tl.violated
        md["detail"] = tl.detail
    out["metadata"] = md
    return out


def write_perfetto(trace: Optional[Trace], path: str,
                   meta: Optional[dict[str, Any]] = None) -> None:
    """Write the trace-event JSON of ``trace`` (an empty timeline when ``None``)."""
    data = perfetto_events(trace if trace is not None else Trace(), meta)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
