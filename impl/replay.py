"""Replay a GPU trace through the model: ACCEPTED, or REJECTED at the first event the
model cannot take.

A GPU trace (``impl/events.py``) is a list of events in ticket order: each says that warp
``(cta, warp)`` executed the instruction at ``pc`` of its ``AgentProgram`` (a model step),
with what it observed; emulated asynchronous completions the warp performed itself
(``tcgen05.commit`` firing, on sm_90a) are events too; ``STUCK`` events say where the
watchdog found a warp waiting.

The replay executes those steps with the transition system (``model/system.py``:
``exec_agent``/``exec_env`` on a concrete accessor, as ``checker/explicit.py``'s
``Explorer.replay`` does) and checks every observation:

* the warp's model pc is the event's pc (control flow agrees, including branches on
  ``try_wait`` tokens and CLC responses);
* the step is enabled in the model (a wait that returned on the GPU must be able to
  return in the model);
* a ``try_wait`` returned what the model returns; an arrive's pending count (from the
  state ``mbarrier.arrive`` returned) equals the model's (rule ``pending_rule``);
* a CLC response's validity is the model's choice for that step.

Two freedoms make this a search, both sound with respect to the ticket protocol:

1. **Inferred completions.**  Asynchronous completions nobody observes directly (a TMA
   delivery landing, a cp.async arrive firing, a bulk-store group finishing reads) are
   environment steps the replay inserts *just before the first event that needs them*
   (lazily), preferring those that target the barrier the event waits on.
2. **Reordering concurrent events.**  A ticket is taken just before a signal and just
   after a wait returns, so two signals of different warps may reach a barrier in the
   other order than their tickets, and a ``try_wait`` may miss a signal whose ticket is
   earlier.  The replay may take, instead of the earliest untaken event, the *next*
   event of another warp within ``window`` tickets.  Each warp's events stay in program
   order; an event that waited for something is never taken before its cause (the
   cause's ticket is earlier and it is its warp's next event).

The search is depth-first with backtracking and a node budget; on well-formed traces it
is linear.  When no order explains the trace, the verdict is REJECTED with the furthest
point reached: the event, and the model state there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..checker.trace import Event, Trace, barrier_changes, env_fields, instr_fields
from ..model.compile import CompiledKernel
from ..model.program import (Arrive, BulkWaitRead, CpAsyncArrive, CpAsyncWaitGroup, Exit,
                             TmaLoad, TryWait, Wait)
from ..model.system import DONE, ConcreteState, System
from ..model.values import CONCRETE as V
from . import events as E
from .events import GpuEvent

ACCEPTED = "ACCEPTED"
REJECTED = "REJECTED"
DEADLOCK = "DEADLOCK"
VIOLATION = "VIOLATION"
DATA_ERROR = "DATA_ERROR"
INCOMPLETE = "INCOMPLETE"


@dataclass
class ReplayResult:
    status: str
    detail: str = ""
    event: Optional[GpuEvent] = None          # REJECTED: the event the model cannot take
    state_text: str = ""                      # REJECTED: the model state there
    violation: Optional[tuple[str, str, int]] = None   # (prop, detail, ticket) seen in replay
    data_errors: list[GpuEvent] = field(default_factory=list)
    stuck: list[GpuEvent] = field(default_factory=list)
    steps: list[tuple] = field(default_factory=list)    # model steps taken, in order
    inferred: int = 0                          # environment steps inferred
    reordered: int = 0                         # events taken out of ticket order
    nodes: int = 0
    violation_inferred: bool = False           # the violation is at an inferred completion
    possible: Optional[tuple[str, str]] = None  # a violation only a late placement shows

    @property
    def ok(self) -> bool:
        return self.status == ACCEPTED

    def headline(self) -> str:
        s = self.status
        if self.violation and s in (VIOLATION, DEADLOCK, DATA_ERROR):
            s += f" {self.violation[0]}"
        return s + (f": {self.detail}" if self.detail else "")


class _Frame:
    __slots__ = ("state", "ptr", "cands", "step", "ticket", "viol", "kind", "consumed", "front")

    def __init__(self, state: list, ptr: tuple, step: Any = None, ticket: int = -1,
                 viol: Any = None, kind: str = "", consumed: int = 0, front: int = 0):
        self.state = state
        self.ptr = ptr
        self.consumed = consumed   # events taken so far
        self.front = front         # index in ticket order where the frontier search starts
        self.cands: Optional[Iterator] = None
        self.step = step
        self.ticket = ticket
        self.viol = viol
        self.kind = kind


class Replayer:
    """Replay traces of one compiled kernel (one trace per instance: one cluster, or
    every cluster of the grid for a kernel with global memory -- its flag updates and
    spins are steps like any other, ``GmemWait`` enabled only when the model's flag
    satisfies it, and its ``gmem-race`` checks run on the replayed steps)."""

    def __init__(self, ck: CompiledKernel, pending_rule: str = "before",
                 observed_env: tuple[str, ...] = ("tcgen05",), window: int = 64,
                 budget: int = 20000, eager: bool = False, sited: Optional[bool] = None):
        self.eager = eager
        #: lifted CuTe DSL kernels (``impl/cute_trace.py``): an event's ``pc`` is the
        #: trace site of its record (``Instr.site``), and steps no record stands for
        #: are taken as soon as the warp reaches them (the exit: at the end)
        self.sited = any(ins.site >= 0 for p in ck.programs for ins in p.code) \
            if sited is None else sited
        self.ck = ck
        self.sys = System(ck)
        self.pending_rule = pending_rule
        self.observed_env = observed_env
        self.window = window
        self.budget = budget
        S = ConcreteState(self.sys.initial_state())
        for a in range(len(self.sys.agents)):
            self.sys.run_local(V, S, a, [])
        self.init = S.v
        self.agent_of = {(ag.cta, ag.warp): ag.index for ag in self.sys.agents}
        self.sites_of = [frozenset(i.site for i in self.sys.code(ag.index) if i.site >= 0)
                         for ag in self.sys.agents]

    # ------------------------------------------------------------------ sites

    def at(self, state: list, a: int) -> int:
        """What an event of warp ``a`` must match: its model pc, or (sited) the trace
        site of the instruction there (-1: none, -2: exited)."""
        pc = state[self.sys.agents[a].pc]
        if not self.sited:
            return pc
        return -2 if pc == DONE else self.sys.code(a)[pc].site

    def unrecorded(self, state: list, with_exit: bool = False) -> Optional[int]:
        """(sited) A warp whose next step no record stands for, which the replay takes
        now; the exit only when ``with_exit``."""
        if not self.sited:
            return None
        for ag in self.sys.agents:
            pc = state[ag.pc]
            if pc == DONE:
                continue
            ins = self.sys.code(ag.index)[pc]
            if ins.site < 0 and (with_exit or not isinstance(ins, Exit)):
                return ag.index
        return None

    # ------------------------------------------------------------------ checks

    def _first_local_arrival(self, ins: Arrive, cta: int) -> Optional[Any]:
        for arr in ins.arrivals:
            if arr.bar not in self.sys.bar or arr.count < 0:
                continue
            if arr.bar.cta != cta:
                continue
            if arr.count == 0 and not ins.drop:
                continue
            return arr
        return None

    def try_event(self, state: list, e: GpuEvent) -> tuple[Optional[list], Any, str]:
        """Apply event ``e``; return (new state or None, violation, why-not)."""
        sysm = self.sys
        a = self.agent_of.get((e.cta, e.warp))
        if a is None:
            return None, None, f"no warp cta{e.cta}.w{e.warp} in the model"
        ag = sysm.agents[a]
        if e.kind == E.K_ENV:
            item = ("tcgen05", a, e.pc)
            if item not in sysm.env_items_of(lambda i: state[i]):
                return None, None, "the model has no such tcgen05 completion pending"
            S = ConcreteState(list(state))
            out = sysm.exec_env(V, S, item)
            return S.v, _first_violation(out.checks), ""
        pc = state[ag.pc]
        here = self.at(state, a)
        unit = "site" if self.sited else "pc"
        if e.kind == E.K_STUCK:
            if here != e.pc:
                return None, None, (f"the warp is at {unit} {here} in the model, stuck at "
                                    f"{e.pc} on the GPU")
            return list(state), None, ""
        if here != e.pc:
            if pc == DONE:
                where = "has exited"
            else:
                lbl = sysm.code(a)[pc].label
                where = f"is at {unit} {here}" + (f" [{lbl}]" if lbl else "")
            return None, None, f"in the model the warp {where}, the GPU recorded {unit} {e.pc}"
        ins = sysm.code(a)[pc]
        choice = 0
        if isinstance(ins, TmaLoad) and ins.kind == "clc":
            choice = 1 if (e.flags & E.F_CHOICE and e.obs0) else 0
            if choice >= ins.outcomes:
                return None, None, ("the GPU's CLC response is a valid tile, the model allows "
                                    "only \"no more work\" here (grid bound)")
        S = ConcreteState(list(state))
        out = sysm.exec_agent(V, S, a, pc, choice)
        if not out.enabled:
            return None, None, "the step is not enabled in the model"
        if isinstance(ins, TryWait) and e.flags & E.F_RESULT:
            model = S.v[ag.locals[ins.dest]]
            if int(bool(model)) != int(bool(e.obs0)):
                return None, None, (f"try_wait returned {bool(e.obs0)} on the GPU, "
                                    f"{bool(model)} in the model")
        return S.v, _first_violation(out.checks), ""

    def env_candidates(self, state: list, focus: Optional[GpuEvent]) -> list[tuple]:
        items = [it for it in self.sys.env_items_of(lambda i: state[i])
                 if self.sys.env_name(it) not in self.observed_env]
        if focus is None:
            return items
        target = self._focus_bar(state, focus)
        return sorted(items, key=lambda it: 0 if self._helps_target(target, it) else 1)

    def _focus_bar(self, state: list, e: GpuEvent) -> Any:
        a = self.agent_of.get((e.cta, e.warp))
        if a is None or e.kind != E.K_STEP:
            return None
        pc = state[self.sys.agents[a].pc]
        if self.at(state, a) != e.pc:
            return None
        ins = self.sys.code(a)[pc]
        if isinstance(ins, (Wait, TryWait)):
            return ins.bar
        if isinstance(ins, BulkWaitRead):
            return ("bulk", a)
        if isinstance(ins, CpAsyncWaitGroup):
            return ("cp.async", a)
        return None

    # ------------------------------------------------------------------ search

    def replay(self, events: list[GpuEvent], overflow: int = 0,
               hung: bool = False) -> ReplayResult:
        """``hung``: the launch never finished (the harness gave up on it) and no warp
        says where it waits: then the trace is explained only if the model too ends
        where no warp can move."""
        self._hung = hung
        res = ReplayResult(ACCEPTED)
        res.data_errors = [e for e in events if e.flags & E.F_DATA]
        res.stuck = [e for e in events if e.kind == E.K_STUCK]
        n_ag = len(self.sys.agents)
        per: list[list[GpuEvent]] = [[] for _ in range(n_ag)]
        for e in sorted(events, key=lambda x: x.ticket):
            a = self.agent_of.get((e.cta, e.warp))
            if a is None:
                res.status, res.event = REJECTED, e
                res.detail = f"event of cta{e.cta}.w{e.warp}, which the kernel does not have"
                return res
            per[a].append(e)
        total = sum(len(p) for p in per)
        by_ticket = {e.ticket: e for e in events}
        self._order = [(e, self.agent_of[(e.cta, e.warp)]) for e in
                       sorted(events, key=lambda x: x.ticket)]
        self._pos = {}
        for a, lst in enumerate(per):
            for i, e in enumerate(lst):
                self._pos[e.ticket] = i
        visited: set = set()
        root = _Frame(list(self.init), tuple([0] * n_ag))
        stack = [root]
        best = (-1, root, None, "")
        end_reason = ""
        nodes = 0
        while stack:
            fr = stack[-1]
            consumed = fr.consumed
            if consumed == total:
                ok, why, viol = self._final(fr.state, res.stuck)
                if ok:
                    why = self.check_pending(stack, by_ticket)
                    ok = not why
                if ok:
                    return self._finish(res, stack, viol, overflow)
                end_reason = end_reason or why
                stack.pop()
                continue
            if fr.cands is None:
                fr.cands = self._successors(fr, per)
            nxt = next(fr.cands, None)
            if nxt is None:
                if consumed > best[0]:
                    pass
                stack.pop()
                continue
            nodes += 1
            if nodes > self.budget:
                break
            if nxt.kind != "event":
                # only alternatives to the plain ticket order can meet a state twice
                key = (nxt.ptr, _freeze(nxt.state))
                if key in visited:
                    continue
                visited.add(key)
            stack.append(nxt)
            c2 = nxt.consumed
            if c2 > best[0]:
                best = (c2, nxt, None, "")
        res.nodes = nodes
        return self._reject(res, per, best[1], end_reason, nodes > self.budget)

    def _frontier(self, fr: _Frame) -> int:
        """Index (in ticket order) of the earliest event not taken yet."""
        i = fr.front
        order, pos = self._order, self._pos
        while i < len(order):
            e, a = order[i]
            if pos[e.ticket] >= fr.ptr[a]:
                break
            i += 1
        fr.front = i
        return i

    def _successors(self, fr: _Frame, per: list[list[GpuEvent]]) -> Iterator[_Frame]:
        a = self.unrecorded(fr.state)
        if a is not None:  # sited: a step no record stands for is taken right away
            S = ConcreteState(list(fr.state))
            pc = S.v[self.sys.agents[a].pc]
            out = self.sys.exec_agent(V, S, a, pc, 0)
            if out.enabled:
                yield _Frame(S.v, fr.ptr, ("a", a, 0), -1, _first_violation(out.checks),
                             "unrecorded", fr.consumed, fr.front)
            return
        i0 = self._frontier(fr)
        frontier, fa = self._order[i0]
        fr_why = ""

        def take(e: GpuEvent, a: int, kind: str) -> Optional[_Frame]:
            nonlocal fr_why
            st, viol, why = self.try_event(fr.state, e)
            if st is None:
                if e is frontier and not fr_why:
                    fr_why = why
                return None
            ptr = list(fr.ptr)
            ptr[a] += 1
            step = ("e", ("tcgen05", a, e.pc)) if e.kind == E.K_ENV else \
                (None if e.kind == E.K_STUCK else ("a", a, _choice(self.sys, a, e)))
            return _Frame(st, tuple(ptr), step, e.ticket, viol, kind, fr.consumed + 1, fr.front)

        env = self.env_candidates(fr.state, frontier)
        if self.eager:  # completions as early as possible (see judge())
            for it in env:
                yield self._env_frame(fr, it)
            env = []
        f = take(frontier, fa, "event")
        if f is not None:
            yield f
        helpful = [it for it in env if self._helps(fr.state, frontier, it)]
        for it in helpful:
            yield self._env_frame(fr, it)
        for e, a in self._order[i0 + 1:]:
            if e.ticket >= frontier.ticket + self.window:
                break
            if self._pos[e.ticket] != fr.ptr[a]:
                continue  # not its warp's next event
            g = take(e, a, "reordered")
            if g is not None:
                yield g
        for it in env:
            if it not in helpful:
                yield self._env_frame(fr, it)
        fr.kind = fr.kind or ""
        self._last_why = fr_why

    def _helps(self, state: list, e: GpuEvent, it: tuple) -> bool:
        return self._helps_target(self._focus_bar(state, e), it)

    def _helps_target(self, target: Any, it: tuple) -> bool:
        """Can environment item ``it`` bring the wait ``target`` (``_focus_bar``) closer?"""
        if target is None:
            return False
        if it[0] == "tma":
            _, a, pc, d, _c = it
            return self.sys.code(a)[pc].deliveries[d].bar == target
        if it[0] == "cp.async":
            ins = self.sys.code(it[1])[it[2]]
            # an arrive on the awaited barrier, or any of the warp's own cp.async work
            # ahead of the group it waits for
            return (isinstance(ins, CpAsyncArrive) and ins.bar == target) \
                or target == ("cp.async", it[1])
        if it[0] == "bulk":
            return target == ("bulk", it[1])
        return False

    def _env_frame(self, fr: _Frame, it: tuple) -> _Frame:
        S = ConcreteState(list(fr.state))
        out = self.sys.exec_env(V, S, it)
        return _Frame(S.v, fr.ptr, ("e", it), -1, _first_violation(out.checks), "inferred",
                      fr.consumed, fr.front)

    def _final(self, state: list, stuck: list[GpuEvent]) -> tuple[bool, str, Any]:
        """All events taken: the rest must be what the GPU saw (all exited, or stuck)."""
        sysm = self.sys
        S = ConcreteState(list(state))
        viol = None
        for _ in range(100000):  # sited: the steps no record stands for, exits included
            a = self.unrecorded(S.v, with_exit=True)
            if a is None:
                break
            out = sysm.exec_agent(V, S, a, S.v[sysm.agents[a].pc], 0)
            if not out.enabled:
                break
            viol = viol or _first_violation(out.checks)
        # asynchronous work still in flight completes (the hardware finished it)
        for _ in range(10000):
            items = sysm.env_items_of(S.get)
            if not items:
                break
            out = sysm.exec_env(V, S, items[0])
            viol = viol or _first_violation(out.checks)
        stuck_agents = {self.agent_of[(e.cta, e.warp)] for e in stuck}
        if getattr(self, "_hung", False):
            stuck_agents = {ag.index for ag in sysm.agents if S.v[ag.pc] != DONE}
            if not stuck_agents:
                return False, "the launch hung on the GPU, but in the model every warp exits", None
        movable = []
        for ag in sysm.agents:
            pc = S.v[ag.pc]
            if pc == DONE:
                if ag.index in stuck_agents:
                    return False, f"{ag.name} was stuck on the GPU but exited in the model", None
                continue
            if ag.index not in stuck_agents:
                return False, (f"{ag.name} ({ag.role}) neither exited nor got stuck on the "
                               f"GPU; in the model it is at pc {pc}"), None
            for choice in range(max(1, sysm.agent_choices(ag.index, pc))):
                T = ConcreteState(list(S.v))
                out = sysm.exec_agent(V, T, ag.index, pc, choice)
                if out.enabled:
                    v = _first_violation(out.checks)
                    if v is None:
                        movable.append(ag.name)
                        break
                    # the model allows this step only as undefined behaviour (a stale
                    # parity wait may return or not): blocking is one of its outcomes
                    viol = viol or v
        if movable:
            return False, ("the GPU watchdog fired, but in the model " + ", ".join(movable)
                           + " can still move"), None
        return True, "", viol

    def _arrivals(self, before: list, step: tuple, ev: Optional[GpuEvent]) -> list[tuple]:
        """(barrier, count, observed pending or None) of the arrivals a step makes."""
        sysm = self.sys
        out: list[tuple] = []
        if step[0] == "a":
            a = step[1]
            ag = sysm.agents[a]
            ins = sysm.code(a)[before[ag.pc]]
            if isinstance(ins, Arrive):
                obs_arr = None
                if ev is not None and ev.flags & E.F_PENDING:
                    obs_arr = self._first_local_arrival(ins, ag.cta)
                for arr in ins.arrivals:
                    if arr.bar in sysm.bar and arr.count > 0:
                        out.append((arr.bar, arr.count, ev.obs0 if arr is obs_arr else None))
        else:
            it = step[1]
            if it[0] in ("tcgen05", "cp.async"):
                ins = sysm.code(it[1])[it[2]]
                if isinstance(ins, CpAsyncArrive):
                    out.append((ins.bar, ins.count, None))
                elif it[0] == "tcgen05":
                    out.extend((b, 1, None) for b in ins.bars if b in sysm.bar)
        return out

    def check_pending(self, stack: list[_Frame], events: dict[int, GpuEvent]) -> str:
        """Observed pending counts must come from *some* order of each phase's arrivals.

        Tickets do not order concurrent arrivals on one barrier (a ticket is taken just
        before the arrive lands, remote arrives return nothing), so the pending count an
        arrive observed is checked per barrier phase: sorted by observed value, the gaps
        between consecutive observations (minus the observer's own count) must be made
        of the phase's other arrivals.
        """
        if self.pending_rule == "ignore":
            return ""
        sysm = self.sys
        groups: dict[tuple, list] = {}
        current: dict[Any, tuple] = {}
        for prev, fr in zip(stack, stack[1:]):
            if fr.step is None:
                continue
            ev = events.get(fr.ticket)
            for bar, count, obs in self._arrivals(prev.state, fr.step, ev):
                b = sysm.bar[bar]
                phase, pend = prev.state[b], prev.state[b + 1]
                key = current.get(bar)
                if key is None or key[1] != phase:
                    key = (bar, phase, len(groups))
                    current[bar] = key
                    groups[key] = [pend]
                groups[key].append((count, obs))
        for (bar, phase, _), g in groups.items():
            E0, arrs = g[0], g[1:]
            obs = sorted(((o, c) for c, o in arrs if o is not None), reverse=True)
            if not obs:
                continue
            others = sorted(c for c, o in arrs if o is None)
            gaps, top = [], E0
            for o, c in obs:
                want = o if self.pending_rule == "before" else o + c
                gaps.append(top - want)
                top = want - c
            if any(x < 0 for x in gaps) or not _fits(gaps, others):
                return (f"pending counts observed on {bar} (phase {phase} mod 4, "
                        f"{E0} expected): {[o for o, _ in obs]} cannot come from any order "
                        f"of its arrivals (counts {[c for c, _ in arrs]})")
        return ""

    def _finish(self, res: ReplayResult, stack: list[_Frame], final_viol: Any,
                overflow: int) -> ReplayResult:
        steps, first_viol = [], None
        for fr in stack[1:]:
            if fr.step is not None:
                steps.append(fr.step)
            if fr.kind == "inferred":
                res.inferred += 1
            if fr.kind == "reordered":
                res.reordered += 1
            if fr.viol is not None and first_viol is None:
                first_viol = (fr.viol[0], fr.viol[1], fr.ticket)
                res.violation_inferred = fr.kind == "inferred"
        if first_viol is None and final_viol is not None:
            first_viol = (final_viol[0], final_viol[1], -1)
            res.violation_inferred = True
        res.steps = steps
        res.violation = first_viol
        if overflow:
            res.status = INCOMPLETE
            res.detail = f"{overflow} events did not fit in the trace buffer"
        elif getattr(self, "_hung", False):
            res.status = DEADLOCK
            res.detail = ("the launch hung; the model agrees that no warp can move after "
                          "the last record")
        elif res.stuck:
            res.status = DEADLOCK
            res.detail = "the watchdog fired; the model agrees that no warp can move: " + \
                ", ".join(f"cta{e.cta}.w{e.warp}@pc{e.pc}" for e in res.stuck)
        elif first_viol is not None:
            res.status = VIOLATION
            res.detail = f"{first_viol[1]} (at ticket {first_viol[2]})"
        elif res.data_errors:
            e = res.data_errors[0]
            res.status = DATA_ERROR
            res.detail = (f"stamp mismatch at {e.describe()} (saw 0x..{e.bad_stamp:04x}); "
                          "the model saw no violation")
        if res.data_errors and res.status in (DEADLOCK, VIOLATION):
            res.detail += f"; {len(res.data_errors)} data error(s)"
        return res

    def _reject(self, res: ReplayResult, per: list, fr: _Frame, end_reason: str,
                budget_hit: bool) -> ReplayResult:
        res.status = REJECTED
        nexts = [per[a][fr.ptr[a]] for a in range(len(per)) if fr.ptr[a] < len(per[a])]  # noqa
        if not nexts:
            res.detail = end_reason or "the trace ends where the model cannot"
        else:
            e = min(nexts, key=lambda x: x.ticket)
            res.event = e
            _, _, why = self.try_event(fr.state, e)
            ag = self.sys.agents[self.agent_of[(e.cta, e.warp)]]
            pc = e.pc
            if self.sited:
                lbl = next((i.label for i in self.sys.code(ag.index) if i.site == pc), "?")
            else:
                lbl = self.sys.code(ag.index)[pc].label if 0 <= pc < len(ag.program.code) \
                    else "?"
            res.detail = f"{e.describe()} [{lbl}]: {why or 'no order of the events fits'}"
        if budget_hit:
            res.detail += " (search budget exhausted)"
        res.state_text = self.render_state(fr.state)
        return res

    def judge(self, events: list[GpuEvent], overflow: int = 0,
              hung: bool = False) -> ReplayResult:
        """Replay, and decide whether a violation was really observed.

        Completions nobody observes are placed lazily; a violation found *at* such an
        inferred completion (a TMA landing or a bulk store reading after its CTA exited)
        may only be an artefact of that placement.  Then the trace is replayed again
        with completions placed as early as possible: if that order is clean, the trace
        is ACCEPTED and the violation is kept as ``possible`` (the GPU cannot tell when
        the completion happened; the model says it may be late).
        """
        res = self.replay(events, overflow, hung)
        if res.status == VIOLATION and res.violation_inferred:
            eager = Replayer(self.ck, self.pending_rule, self.observed_env, self.window,
                             self.budget, eager=True, sited=self.sited)
            r2 = eager.replay(events, overflow, hung)
            if r2.status in (ACCEPTED, DATA_ERROR) and r2.violation is None:
                r2.possible = (res.violation[0], res.violation[1]) if res.violation else None
                return r2
        return res

    # ------------------------------------------------------------------ rendering

    def render_state(self, state: list) -> str:
        sysm = self.sys
        lines = ["model state:"]
        for ag in sysm.agents:
            pc = state[ag.pc]
            if pc == DONE:
                lines.append(f"  {ag.name} ({ag.role}): exited")
            else:
                ins = sysm.code(ag.index)[pc]
                lines.append(f"  {ag.name} ({ag.role}) pc {pc}: {ins.label or type(ins).__name__}"
                             f" -- {sysm.blocked_reason(tuple(state), ag.index)}")
        for ref, b in sysm.bar.items():
            ph, pend, exp, tx = state[b], state[b + 1], state[b + 2], state[b + 3]
            lines.append(f"  {ref}: phase {ph} pending {pend}/{exp} tx {tx}")
        items = sysm.env_items_of(lambda i: state[i])
        if items:
            lines.append("  in flight: " + ", ".join(map(str, items)))
        return "\n".join(lines)

    def to_trace(self, res: ReplayResult) -> Trace:
        """The replayed steps as a ``checker.trace.Trace`` (same schema as counterexamples)."""
        sysm = self.sys
        S = ConcreteState(list(self.init))
        tr = Trace()
        for i, step in enumerate(res.steps, 1):
            before = list(S.v)
            if step[0] == "a":
                _, a, choice = step
                pc = S.v[sysm.agents[a].pc]
                ins = sysm.code(a)[pc]
                out = sysm.exec_agent(V, S, a, pc, choice)
                ag = sysm.agents[a]
                ev = Event(i, ag.name, ag.role, ag.cta, out.what,
                           str(ins.loc) if ins.loc.line else "", "agent",
                           barrier_changes(sysm.bar, before, S.v), **instr_fields(ins))
            else:
                out = sysm.exec_env(V, S, step[1])
                ev = Event(i, sysm.env_name(step[1]), "async", None, out.what, "", "env",
                           barrier_changes(sysm.bar, before, S.v),
                           **env_fields(sysm, step[1]))
            v = _first_violation(out.checks)
            if v is not None:
                ev = dataclasses.replace(ev, violation=f"VIOLATED {v[0]}: {v[1]}")
            tr.events.append(ev)
        if res.violation:
            tr.violated, tr.detail = res.violation[0], res.violation[1]
        return tr


def _fits(gaps: list[int], others: list[int]) -> bool:
    """Can the gaps be filled exactly by disjoint groups of ``others`` (the rest arriving
    after the last observation)?  Exact for unit counts; small backtracking otherwise."""
    if sum(gaps) > sum(others):
        return False
    if all(c == 1 for c in others):
        return True
    if len(others) > 24:
        return True  # too many to search: accept (documented approximation)
    items = sorted(others, reverse=True)

    def go(i: int, rem: list[int]) -> bool:
        if all(r == 0 for r in rem):
            return True
        if i == len(items):
            return False
        for j, r in enumerate(rem):
            if r >= items[i]:
                rem[j] -= items[i]
                if go(i + 1, rem):
                    return True
                rem[j] += items[i]
        return go(i + 1, rem)  # this arrival came after the last observation

    return go(0, list(gaps))


def _choice(sysm: System, a: int, e: GpuEvent) -> int:
    if e.flags & E.F_CHOICE:
        return 1 if e.obs0 else 0
    return 0


def _first_violation(checks: list) -> Optional[tuple]:
    for c in checks:
        if c.condition is True or (c.condition and not isinstance(c.condition, bool)):
            return (c.prop, c.detail)
    return None


def _freeze(state: list) -> tuple:
    return tuple(state)

