"""The timeline view of a trace, shared by every renderer (text, Perfetto, HTML).

A ``Timeline`` has one *lane* per agent that appears in the trace -- a warp of a CTA
with its role, or an environment agent (TMA deliveries, tcgen05 commits, cp.async
completions, bulk stores) -- and one *row* per step, in step order.  Each row knows its
lane, a short description of the operation in CUTLASS words (method, PTX operation,
stage, parity, bytes) and the barrier state it changed.  For a deadlock the timeline
also lists, per blocked agent, what it waits on and why that can never complete
(``Trace.blocked``, computed by ``System.blocked_reason``).

The renderers only lay this out; nothing here re-states the semantics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..trace import BarrierChange, Event, Trace

_AGENT = re.compile(r"^cta(\d+)\.w(\d+)$")
_METHOD = re.compile(r"^(?:(?P<var>[A-Za-z_]\w*)\.)?(?P<m>[A-Za-z_]\w*)\(")
_ASSIGN = re.compile(r"^[A-Za-z_]\w*\s*=\s*(?P<rhs>.*)$")
_STATE = re.compile(r"stage (\d+), phase (\d+)")

#: short forms of PTX-level operation names for narrow columns
OP_SHORT = {
    "arrive.expect_tx": "arrive+tx",
    "arrive_drop.expect_tx": "arrive_drop+tx",
    "cp.async.mbarrier.arrive": "cp.async.arrive",
    "cp.async.mbarrier.arrive fires": "cp.async.arrive",
    "tcgen05.commit arrive": "commit arrive",
    "fence.mbarrier_init": "fence.init",
    "barrier.cluster.arrive": "cluster.arrive",
    "barrier.cluster.arrive.relaxed": "cluster.arrive.relaxed",
    "barrier.cluster.wait": "cluster.wait",
}

#: environment agents, as the lane titles call them
ENV_TITLES = {
    "tma": "TMA", "clc": "CLC", "tcgen05": "tcgen05", "cp.async": "cp.async",
    "bulk": "bulk store",
}


@dataclass(frozen=True)
class Lane:
    """One agent: a warp (``cta0.w4``, role ``mma``) or an environment agent."""

    key: str
    title: str
    role: str
    cta: Optional[int]
    kind: str  # "agent" | "env"

    @property
    def label(self) -> str:
        return f"{self.title} ({self.role})" if self.kind == "agent" else \
            f"async: {self.title}"


@dataclass(frozen=True)
class Row:
    step: int
    lane: int
    event: Event
    cell: str          # short operation text for the agent's column
    state: str         # barrier state it changed, short form
    violation: bool


@dataclass(frozen=True)
class Blocked:
    """A warp that can never move again (deadlock), and why."""

    lane: int
    agent: str
    cell: str          # short form: "wait ab.empty[0] p0"
    reason: str        # the full sentence


@dataclass
class Timeline:
    lanes: list[Lane]
    rows: list[Row]
    blocked: list[Blocked] = field(default_factory=list)
    violated: Optional[str] = None
    detail: str = ""
    loop_start: Optional[int] = None

    @property
    def violation_step(self) -> Optional[int]:
        for r in self.rows:
            if r.violation:
                return r.step
        return None

    @property
    def pipelines(self) -> list[str]:
        seen: list[str] = []
        for r in self.rows:
            p = r.event.pipeline
            if p and p not in seen:
                seen.append(p)
        return seen


# --------------------------------------------------------------------------- building


def lane_key(ev: Event) -> str:
    return ev.actor


def _lane_for(ev: Event) -> Lane:
    if ev.kind == "env":
        return Lane(ev.actor, ENV_TITLES.get(ev.actor, ev.actor), "async", None, "env")
    return Lane(ev.actor, ev.actor, ev.role, ev.cta, "agent")


def _lane_order(lane: Lane) -> tuple:
    m = _AGENT.match(lane.key)
    if lane.kind == "agent" and m:
        return (0, int(m.group(1)), int(m.group(2)), lane.key)
    if lane.kind == "agent":
        return (1, 0, 0, lane.key)
    order = list(ENV_TITLES)
    return (2, order.index(lane.key) if lane.key in order else len(order), 0, lane.key)


def build(trace: Trace) -> Timeline:
    """The timeline of ``trace``: lanes sorted by CTA and warp, environment lanes last."""
    lanes_by_key: dict[str, Lane] = {}
    for ev in trace.events:
        lanes_by_key.setdefault(lane_key(ev), _lane_for(ev))
    blocked_raw = [(_blocked_agent(b), b) for b in trace.blocked]
    for agent, text in blocked_raw:
        if agent and agent not in lanes_by_key:
            role = _blocked_role(text)
            m = _AGENT.match(agent)
            lanes_by_key[agent] = Lane(agent, agent, role, int(m.group(1)) if m else None,
                                       "agent")
    lanes = sorted(lanes_by_key.values(), key=_lane_order)
    index = {ln.key: i for i, ln in enumerate(lanes)}
    pipes = {e.pipeline for e in trace.events if e.pipeline}
    multi = len(pipes) > 1
    ctas = {ln.cta for ln in lanes if ln.cta is not None}
    single_cta = ctas <= {0}
    rows = [Row(ev.step, index[lane_key(ev)], ev, cell_text(ev, multi),
                changes_text(ev.changes, 0 if single_cta else ev.cta),
                ev.violation is not None)
            for ev in trace.events]
    blocked = []
    for agent, text in blocked_raw:
        # a lasso's starving warps are not stuck (steps stay enabled): no STUCK column;
        # the verdict's detail names them
        if agent in index and trace.loop_start is None:
            ln = lanes[index[agent]]
            cell = blocked_cell(text, ln.cta, next(iter(pipes)) if len(pipes) == 1 else "")
            blocked.append(Blocked(index[agent], agent, cell, text))
    blocked.sort(key=lambda b: b.lane)
    return Timeline(lanes, rows, blocked, trace.violated, trace.detail, trace.loop_start)


def _blocked_agent(text: str) -> str:
    return text.split(" ", 1)[0] if text else ""


def _blocked_role(text: str) -> str:
    m = re.match(r"^\S+ \(([^)]*)\)", text)
    return m.group(1) if m else "?"


# --------------------------------------------------------------------------- cells


def method_of(ev: Event) -> str:
    """The user-level operation of a step: the pipeline method or builtin named in its
    label (``producer_acquire``, ``tma_load``, ``create``), or the PTX operation."""
    what = ev.what
    if ev.kind == "env":
        return ""
    m = _ASSIGN.match(what)
    if m and "(" in m.group("rhs"):
        what = m.group("rhs")
        mm = _METHOD.match(what)
        if mm:
            return mm.group("m")
    mm = _METHOD.match(what)
    if mm:
        return mm.group("m")
    return ""


#: pipeline methods whose PTX operations are worth showing (they issue several)
_SIDE_PREFIXES = ("producer_", "consumer_")


def short_method(method: str) -> str:
    """``producer_acquire`` -> ``acquire``: the lane's role already says which side."""
    for p in _SIDE_PREFIXES:
        if method.startswith(p) and len(method) > len(p):
            return method[len(p):]
    return method


def cell_text(ev: Event, with_pipeline: bool = False) -> str:
    """``acquire wait s0 p1``: method, PTX operation, stage, parity, bytes."""
    if ev.op == "param split":  # the side taken: ``iters == 1: no``
        return ev.what.split(" (for ")[0]
    method = method_of(ev)
    op = OP_SHORT.get(ev.op, ev.op)
    stage, parity = ev.stage, ev.parity
    if (stage is None or (parity is None and op in ("wait", "try_wait", "test_wait"))):
        m = _STATE.search(ev.what)  # older traces without structured fields
        if m:
            stage = int(m.group(1)) if stage is None else stage
            parity = int(m.group(2)) if parity is None and op.endswith("wait") else parity
    parts = []
    if method:
        # a misuse names the whole method: a role-misuse is a call of the lane's other side
        name = method if op == "misuse" else short_method(method)
        parts.append(f"{ev.pipeline}.{name}" if with_pipeline and ev.pipeline else name)
        # a pipeline method lowers to several PTX operations: say which one this is
        if (ev.pipeline or op == "misuse") and op and op not in (method, name, "ghost"):
            parts.append(op)
        elif op.endswith("(wait)"):
            parts.append("wait")
    elif op and op != "ghost":
        parts.append(op)
    else:
        parts.append(ev.what.split(":")[0][:24] or "step")
    if stage is not None:
        parts.append(f"s{stage}")
    if parity is not None:
        parts.append(f"p{parity}")
    if ev.tx and op in ("tma_load", "complete_tx", "arrive+tx", "expect_tx", "clc.try_cancel"):
        n = len(ev.barrier.split(", ")) if op == "tma_load" and ev.barrier else 1
        parts.append(f"{ev.tx}B" + (f" x{n}" if n > 1 else ""))
    return " ".join(parts)


def short_barrier(name: str, cta: Optional[int] = None) -> str:
    """``ab.full[0]@cta0`` -> ``ab.full[0]`` when the reader is in CTA 0."""
    if cta is not None and name.endswith(f"@cta{cta}"):
        return name[: -len(f"@cta{cta}")]
    return name


def change_text(c: BarrierChange, cta: Optional[int] = None) -> str:
    parts = []
    if c.phase[0] != c.phase[1]:
        parts.append(f"phase {c.phase[0]}->{c.phase[1]} done")
    else:
        parts.append(f"phase {c.phase[1]}")
    if c.pending[0] != c.pending[1]:
        parts.append(f"pending {c.pending[0]}->{c.pending[1]}")
    else:
        parts.append(f"pending {c.pending[1]}")
    if c.tx[0] != c.tx[1]:
        parts.append(f"tx {c.tx[0]}->{c.tx[1]}")
    elif c.tx[1]:
        parts.append(f"tx {c.tx[1]}")
    return f"{short_barrier(c.barrier, cta)}: " + ", ".join(parts) + f" /{c.expected}"


def changes_text(changes: tuple[BarrierChange, ...], cta: Optional[int] = None) -> str:
    """Barrier state a step changed; several barriers (an init) are summarised."""
    interesting = [c for c in changes
                   if c.phase[0] != c.phase[1] or c.pending[0] != c.pending[1]
                   or c.tx[0] != c.tx[1]]
    if not interesting:
        return ""
    if len(interesting) > 2:
        arrays = sorted({re.sub(r"\[\d+\]", "[*]", short_barrier(c.barrier, cta))
                         for c in interesting})
        return f"{len(interesting)} barriers: " + ", ".join(arrays)
    return "; ".join(change_text(c, cta) for c in interesting)


_WAITS = re.compile(r"waits on (?P<bar>\S+) for (?:the phase with )?parity (?P<p>\d)")


def blocked_cell(text: str, cta: Optional[int] = None, pipeline: str = "") -> str:
    """Short form of a blocked reason for the agent's column: ``wait full[0] p1``."""
    body = text.split(") ", 1)[1] if ") " in text else text
    m = _WAITS.search(body)
    if m:
        bar = short_barrier(m.group("bar"), cta)
        if pipeline and bar.startswith(pipeline + "."):
            bar = bar[len(pipeline) + 1:]
        return f"wait {bar} p{m.group('p')}"
    if "named barrier" in body:
        m2 = re.search(r"named barrier (\d+)", body)
        return f"bar.sync {m2.group(1) if m2 else ''}".strip()
    if "cluster barrier" in body:
        return "cluster.wait"
    if "bulk" in body:
        return "bulk.wait_group"
    return body[:30]


# --------------------------------------------------------------------------- grouping


def _warp_no(key: str) -> Optional[int]:
    m = _AGENT.match(key)
    return int(m.group(2)) if m else None


def warp_range(warps: list[int]) -> str:
    """``[0, 1, 2, 3]`` -> ``w0-w3``; ``[0, 2]`` -> ``w0,w2``."""
    ws = sorted(warps)
    if len(ws) > 2 and ws == list(range(ws[0], ws[-1] + 1)):
        return f"w{ws[0]}-w{ws[-1]}"
    return ",".join(f"w{w}" for w in ws)


def group_by_role(tl: Timeline) -> Timeline:
    """One lane per (CTA, role) instead of per warp: for narrow terminals.  Cells say
    which warp acted (``w2 wait s0 p0``); stuck warps with the same reason share a cell."""
    groups: dict[tuple, list[int]] = {}
    order: list[tuple] = []
    for i, ln in enumerate(tl.lanes):
        key = (ln.kind, ln.cta, ln.role) if ln.kind == "agent" and _warp_no(ln.key) \
            is not None else (ln.kind, ln.key)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    if len(order) == len(tl.lanes):
        return tl
    lanes: list[Lane] = []
    remap: dict[int, int] = {}
    for key in order:
        idx = groups[key]
        first = tl.lanes[idx[0]]
        if len(idx) == 1:
            lanes.append(first)
        else:
            ws = [_warp_no(tl.lanes[i].key) or 0 for i in idx]
            lanes.append(Lane(f"cta{first.cta}:{first.role}", f"cta{first.cta} {first.role}",
                              warp_range(ws), first.cta, "agent"))
        for i in idx:
            remap[i] = len(lanes) - 1
    rows = []
    for r in tl.rows:
        lane = remap[r.lane]
        cell = r.cell
        if len(groups[order[lane]]) > 1:
            cell = f"w{_warp_no(tl.lanes[r.lane].key)} {cell}"
        rows.append(Row(r.step, lane, r.event, cell, r.state, r.violation))
    blocked: list[Blocked] = []
    by_lane: dict[int, list[Blocked]] = {}
    for b in tl.blocked:
        by_lane.setdefault(remap[b.lane], []).append(b)
    for lane, bs in sorted(by_lane.items()):
        if len(groups[order[lane]]) == 1:
            blocked.extend(Blocked(lane, b.agent, b.cell, b.reason) for b in bs)
            continue
        cells: dict[str, list[int]] = {}
        for b in bs:
            cells.setdefault(b.cell, []).append(_warp_no(b.agent) or 0)
        cell = "; ".join(f"{warp_range(ws)} {c}" for c, ws in cells.items())
        for b in bs:
            blocked.append(Blocked(lane, b.agent, cell, b.reason))
    return Timeline(lanes, rows, blocked, tl.violated, tl.detail, tl.loop_start)
