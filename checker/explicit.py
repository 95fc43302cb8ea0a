"""The explicit-state engine: exhaustive breadth-first search with state hashing.

Breadth-first order makes the first violation found a shortest counterexample (fewest
steps, counting every warp step and every completion of asynchronous hardware).  A
state with no enabled step in which some warp has not exited is a deadlock.  When the
whole reachable state space has been explored without a violation the verdict is
PROVEN for this configuration; when a state or time limit stops the search first, the
verdict is UNKNOWN with the depth reached -- never SAFE by default.
"""

from __future__ import annotations

import time
import tracemalloc
from collections import deque
from typing import Any, Callable, Iterator, Optional

from ..model.program import TmaLoad, is_acyclic
from ..model.properties import ALL_PROPERTIES
from ..model.system import DONE, ConcreteState, System
from ..model.values import CONCRETE
from .packed import FlatState, PackedState, Packer
from .trace import BarrierChange, Event, Trace, env_fields, instr_fields
from .verdict import PROVEN, UNKNOWN, VIOLATED, Stats, Verdict

V = CONCRETE


def symmetric_groups(system: System) -> list[list[int]]:
    """Warps of one CTA with the same program (and no TMA/CLC loads, whose in-flight
    work is keyed by the issuing pc): renaming them maps runs to runs, keeping every
    property and every length.  Each group lists agent indices in increasing order."""
    by_key: dict[tuple, list[int]] = {}
    for ag in system.agents:
        code = ag.program.code
        if any(isinstance(i, TmaLoad) for i in code):
            continue
        by_key.setdefault((ag.cta, code, ag.program.locals), []).append(ag.index)
    return [g for g in by_key.values() if len(g) > 1]


class Explorer:
    """Successor generation over packed states.

    With ``symmetry``, warps of one CTA that run identical programs (and issue no TMA,
    whose in-flight deliveries name their issuer) are interchangeable: every state is
    replaced by the representative whose per-warp components are sorted, which divides
    the state space by up to n! for a group of n such warps.  Everything a warp owns --
    its pc, locals, barrier bookkeeping and queues -- lives in its own component, so the
    permutation is exact.
    """

    def __init__(self, system: System, symmetry: bool = True, por: bool = False,
                 safe_steps: bool = False):
        self.sys = system
        flat = list(system.initial_state())
        S = ConcreteState(flat)
        for a in range(len(system.agents)):
            system.run_local(V, S, a, [])
        self.packer = Packer(system.layout.names, S.v)
        self.pc_slots = [ag.pc for ag in system.agents]
        self.agent_comp = [self.packer.where[ag.pc][0] for ag in system.agents]
        self.groups: list[list[int]] = symmetric_groups(system) if symmetry else []
        if symmetry:
            for g in self.groups:
                comps = [self.agent_comp[a] for a in g]
                assert len(set(comps)) == len(comps)
        self.comp_groups = [[self.agent_comp[a] for a in g] for g in self.groups]
        self.initial = self.canon(self.packer.initial)
        # does any warp's program loop (a back edge)?  Then runs may never end and the
        # engine must look for cycles nobody leaves, not only for deadlocks
        self.cyclic = not all(is_acyclic(ag.program.code) for ag in system.agents)
        self.reducer = None
        if (por or safe_steps) and not self.cyclic:  # they would not preserve livelocks
            from .por import Reducer

            self.reducer = Reducer(system, self, full=por)

    def canon(self, st: tuple) -> tuple:
        """The representative of ``st`` under permutations of symmetric warps."""
        lst = None
        for g in self.comp_groups:
            vals = [st[c] for c in g]
            sv = sorted(vals)
            if sv != vals:
                if lst is None:
                    lst = list(st)
                for c, v in zip(g, sv):
                    lst[c] = v
        return st if lst is None else tuple(lst)

    def canon_perm(self, st: tuple) -> tuple[tuple, list[int]]:
        """``canon`` plus the permutation: warp position j of the result holds the warp
        that was at position ``perm[j]``."""
        perm = list(range(len(self.sys.agents)))
        lst = list(st)
        for g in self.groups:
            comps = [self.agent_comp[a] for a in g]
            order = sorted(range(len(g)), key=lambda j: st[comps[j]])
            for j, src in enumerate(order):
                lst[comps[j]] = st[comps[src]]
                perm[g[j]] = g[src]
        return tuple(lst), perm

    def _real_step(self, step: tuple, who: list[int]) -> tuple:
        """A step of a canonical state, naming the real warp (``who``: canonical position
        -> real warp).  TMA items name their issuing warp, which is never permuted (warps
        that issue TMA/CLC loads are in no symmetric group); the other asynchronous items
        name the warp whose queue they drain."""
        if step[0] == "a":
            return ("a", who[step[1]], step[2])
        item = step[1]
        if item[0] == "tma":
            return step
        return ("e", (item[0], who[item[1]]) + tuple(item[2:]))

    def pc(self, state: tuple, a: int) -> int:
        ci, off = self.packer.where[self.pc_slots[a]]
        return self.packer.table[state[ci]][off]

    def getter(self, state: tuple) -> Callable[[int], Any]:
        return PackedState(self.packer, state).get

    def successors(self, state: tuple) -> list[tuple[tuple, tuple, Optional[tuple]]]:
        """The steps of a stubborn set of ``state`` (all steps without reduction)."""
        succ = list(self._all_successors(state))
        if self.reducer is not None and len(succ) > 1:
            succ = self.reducer.reduce(state, succ)
        return succ

    def _all_successors(self, state: tuple) -> Iterator[tuple[tuple, tuple, Optional[tuple]]]:
        """Yield ``(step, next_state, violation)``; ``step`` identifies the transition:
        ``("a", agent, choice)`` or ``("e", item)``; ``violation`` is ``(prop, detail)``."""
        sysm = self.sys
        base = self.packer.unpack_list(state)
        packer = self.packer
        for a, slot in enumerate(self.pc_slots):
            pc = base[slot]
            if pc == DONE:
                continue
            for choice in range(sysm.agent_choices(a, pc)):
                S = FlatState(packer, state, base)
                out = sysm.exec_agent(V, S, a, pc, choice)
                if not out.enabled:
                    break
                yield ("a", a, choice), self.canon(S.freeze()), _first_violation(out.checks)
        for item in sysm.env_items_of(base.__getitem__):
            S = FlatState(packer, state, base)
            out = sysm.exec_env(V, S, item)
            yield ("e", item), self.canon(S.freeze()), _first_violation(out.checks)

    def _env_items(self, state: tuple) -> list[tuple]:
        return self.sys.env_items_of(PackedState(self.packer, state).get)

    def all_done(self, state: tuple) -> bool:
        return all(self.pc(state, a) == DONE for a in range(len(self.sys.agents)))

    # ------------------------------------------------------------------ replay

    def replay(self, steps: list[tuple], violation: Optional[tuple],
               stuck_state: Optional[tuple] = None) -> Trace:
        """Re-execute ``steps`` from the initial state and describe each one.

        Steps name warps by their position in the (canonical) state they were taken
        from; ``who`` follows the symmetry permutations so that every event names the warp
        that really acted."""
        sysm = self.sys
        state = self.initial
        who = list(range(len(sysm.agents)))
        step_who = who
        trace = Trace()
        for i, step in enumerate(steps, 1):
            S = PackedState(self.packer, state)
            before = self.packer.unpack(state)
            trace.steps.append(self._real_step(step, who))
            if step[0] == "a":
                _, a, choice = step
                pc = self.pc(state, a)
                ins = sysm.code(a)[pc]
                out = sysm.exec_agent(V, S, a, pc, choice)
                if not out.enabled:
                    raise RuntimeError(f"replay mismatch at step {i}: {step} is not enabled")
                ag = sysm.agents[who[a]]
                actor, role, cta, kind = ag.name, ag.role, ag.cta, "agent"
                loc = str(ins.loc) if ins.loc.line else ""
                what = out.what
                fields = instr_fields(ins)
            else:
                item = step[1]
                out = sysm.exec_env(V, S, item)
                actor, role, cta, kind = sysm.env_name(item), "async", None, "env"
                loc = ""
                fields = env_fields(sysm, item)
                what = out.what
            # the step's messages name warps by their positions in the state it was taken
            # from: rename them with that state's permutation, before the next one
            step_who = who
            state, perm = self.canon_perm(S.freeze())
            who = [who[p] for p in perm]
            after = self.packer.unpack(state)
            viol = _first_violation(out.checks)
            ev_viol = None
            if i == len(steps) and violation is not None:
                if viol is None or viol[0] != violation[0]:
                    raise RuntimeError("replay mismatch: the last step does not violate "
                                       f"{violation[0]}")
                ev_viol = f"VIOLATED {viol[0]}: {_rename(viol[1], sysm, step_who)}"
            elif viol is not None:
                raise RuntimeError(f"replay mismatch: step {i} violates {viol[0]} early")
            trace.events.append(Event(i, actor, role, cta, _rename(what, sysm, step_who), loc, kind,
                                      _changes(sysm, before, after), ev_viol, **fields))
        if violation is not None:
            trace.violated, trace.detail = violation[0], _rename(violation[1], sysm, step_who)
        if stuck_state is not None:
            flat = self.packer.unpack(stuck_state)
            trace.blocked = [f"{sysm.agents[who[ag.index]].name} ({ag.role}) "
                             f"{_rename(sysm.blocked_reason(flat, ag.index), sysm, who)}"
                             for ag in sysm.agents if flat[ag.pc] != DONE]
        return trace


def counterexample_end(ex: "Explorer", steps: list[tuple], prop: str) -> Optional[tuple]:
    """(violation, final state) when ``steps`` (real warps; ``ex`` without symmetry) run
    in the unreduced model -- each enabled, none violating before the last -- and end in a
    violation of ``prop``, or, for ``deadlock``, in a state where nothing can move and some
    warp has not exited (violation None); otherwise None."""
    state = ex.initial
    for i, step in enumerate(steps):
        nxt = None
        for st, n, viol in ex._all_successors(state):
            if st == step:
                nxt = (n, viol)
                break
        if nxt is None:
            return None
        state, viol = nxt
        if viol is not None:
            return (viol, state) if i == len(steps) - 1 and viol[0] == prop else None
    if prop == "deadlock" and not ex.all_done(state) and \
            not any(True for _ in ex._all_successors(state)):
        return (None, state)
    return None


def shorten(system: System, steps: list[tuple], prop: str,
            deadline: Optional[float] = None) -> Optional[Verdict]:
    """A shorter run with the same ending: greedily drop single steps (last first) while
    the rest still replays through the unreduced model -- every step enabled, none
    violating early -- and ends in a violation of ``prop`` (for ``deadlock``: in a state
    where nothing can move and some warp has not exited).  ``steps`` name real warps
    (``Trace.steps``).  Used when the search that would confirm a shortest
    counterexample runs out of time: the result is a real run, not necessarily a
    shortest one.  Returns the shorter counterexample as a verdict, or None if no step
    could be dropped."""
    ex = Explorer(system, symmetry=False)

    def run(cand: list[tuple]) -> Optional[tuple]:
        return counterexample_end(ex, cand, prop)

    cur = list(steps)
    best = None
    changed = True
    while changed:
        changed = False
        i = len(cur) - 2 if prop != "deadlock" else len(cur) - 1
        while i >= 0:
            if deadline is not None and time.perf_counter() > deadline:
                changed = False
                break
            cand = cur[:i] + cur[i + 1:]
            r = run(cand)
            if r is not None:
                cur, best = cand, r
                changed = True
            i -= 1
    if best is None:
        return None
    viol, final = best
    if viol is None:
        trace = ex.replay(cur, None, stuck_state=final)
        trace.violated = "deadlock"
        trace.detail = DEADLOCK_MSG
    else:
        trace = ex.replay(cur, viol)
    return Verdict(VIOLATED, trace.violated, trace.detail or "", trace, depth=len(cur))


def _rename(text: str, sysm: System, who: list[int]) -> str:
    """Agent names inside a message refer to canonical positions; use the real warps."""
    if all(w == i for i, w in enumerate(who)):
        return text
    import re

    names = {ag.name: sysm.agents[who[ag.index]].name for ag in sysm.agents}
    return re.sub(r"cta\d+\.w\d+", lambda m: names.get(m.group(0), m.group(0)), text)


def _first_violation(checks: list) -> Optional[tuple]:
    for c in checks:
        if c.condition is True or (c.condition and not isinstance(c.condition, bool)):
            return (c.prop, c.detail)
    return None


def _changes(sysm: System, before: tuple, after: tuple) -> tuple[BarrierChange, ...]:
    out = []
    for ref, b in sysm.bar.items():
        if before[b:b + 5] != after[b:b + 5]:
            out.append(BarrierChange(str(ref), (before[b], after[b]),
                                     (before[b + 1], after[b + 1]),
                                     (before[b + 3], after[b + 3]), after[b + 2]))
    return tuple(out)


PRIORITY = {p: i for i, p in enumerate(ALL_PROPERTIES)}

#: seconds the search for a shorter counterexample than the reduced one may take
CONFIRM_TIMEOUT = 20.0
#: seconds for dropping needless steps from an unconfirmed counterexample (``shorten``)
SHORTEN_TIMEOUT = 10.0
DEADLOCK_MSG = ("no warp can move and no asynchronous operation is in flight, but some "
                "warps have not exited")

#: ``por=None``: stubborn sets for one CTA from this many warps on (see check_explicit)
POR_AUTO_WARPS = 10


def check_explicit(system: System, max_states: int = 2_000_000, timeout: float = 600.0,
                   progress: Optional[Callable[[int, int, float], None]] = None,
                   reduce: bool = True, por: Optional[bool] = None,
                   confirm_timeout: float = CONFIRM_TIMEOUT) -> Verdict:
    """Exhaustive breadth-first search.

    The reported violation is a shortest one (fewest steps); among violations of equal
    length the property that comes first in the catalogue (``model.properties.Prop``)
    is reported, so the answer does not depend on exploration order.

    ``reduce`` enables symmetry reduction (identical warps of a CTA are interchangeable,
    which preserves path lengths exactly) and explores a step alone when nothing any
    other warp ever does can interfere with it (``checker/por.py``).  The second
    reduction preserves every verdict but may lengthen counterexamples, so when it finds
    a violation of length D the engine confirms the shortest one with a search without
    it, bounded to depth D, for at most ``confirm_timeout`` seconds (if that search
    exceeds its limits, the reduced counterexample is reported -- replayed and valid, but
    perhaps not the shortest -- with ``stats.extra["shortest"] = False``; the text
    output says so).  The confirmation can cost far more than the search: p9-bug's
    55-step counterexample takes 56 reduced states, the 51-step one 2.1 million.  ``reduce=False`` explores the
    full interleaving graph (the reference for differential tests).  ``por`` adds the
    full stubborn-set computation (fewer states, each costlier to expand); ``None``
    (``auto``) turns it on where it pays: clusters of more than one CTA, and CTAs of at
    least ``POR_AUTO_WARPS`` warps.  Measured (bench/results/explicit.md): it cuts the
    2x2-cluster and 2-CTA kernels and the 12-warp FMHA from millions of states to
    thousands, while on small CTAs it can cost more time than it saves (p7-fixed, 8
    warps: 1.6 s without, 8.6 s with)."""
    t0 = time.perf_counter()
    if por is None:
        por = system.info.cluster_size > 1 or len(system.agents) >= POR_AUTO_WARPS
    ex = Explorer(system, symmetry=reduce, por=reduce and por, safe_steps=reduce)
    if ex.cyclic and ex.groups:
        # the starvation search follows each warp along cycles: no permuted warps
        ex = Explorer(system, symmetry=False, por=False, safe_steps=False)
    v = _bfs(ex, max_states, timeout, progress, None, t0)
    if v.status == VIOLATED and ex.reducer is not None and v.prop != "starvation":
        # first drop the steps the violation does not need (cheap; often already the
        # shortest), then confirm: search the unreduced graph to that depth
        if v.trace is not None and v.prop is not None:
            s = shorten(system, v.trace.steps, v.prop, time.perf_counter() + SHORTEN_TIMEOUT)
            if s is not None:
                s.stats = v.stats
                s.stats.extra["reduced_length"] = v.depth
                s.reason = s.reason or v.reason
                v = s
        exact = Explorer(system, symmetry=reduce, por=False, safe_steps=False)
        budget = min(max(timeout - (time.perf_counter() - t0), 1.0), confirm_timeout)
        w = _bfs(exact, max_states, budget, None, v.depth, time.perf_counter())
        if w.status == VIOLATED:
            w.stats.extra["reduced_states"] = v.stats.states
            w.stats.states += v.stats.states
            w.stats.seconds = time.perf_counter() - t0
            return w
        v.stats.extra["shortest"] = w.status == PROVEN
        v.stats.extra["confirm_states"] = w.stats.states
        v.stats.extra["confirm_seconds"] = round(w.stats.seconds, 2)
        v.stats.extra["confirm_stopped"] = w.reason
        v.stats.seconds = time.perf_counter() - t0
    return v


def _bfs(ex: Explorer, max_states: int, timeout: float,
         progress: Optional[Callable[[int, int, float], None]],
         depth_limit: Optional[int], t0: float) -> Verdict:
    """One breadth-first search; ``depth_limit`` bounds the length of runs explored."""
    init = ex.initial
    index: dict[tuple, int] = {init: 0}
    parent: list[tuple[int, Any]] = [(-1, None)]
    depth_of: list[int] = [0]
    queue: deque[tuple] = deque([init])
    states: list[tuple] = [init]
    succ_lists: Optional[list[list[tuple[int, Any]]]] = [] if ex.cyclic else None
    stats = Stats(engine="explicit")
    transitions = 0
    max_depth = 0
    next_report = time.perf_counter() + 1.0
    # candidate violations found in the layer being finished: (length, rank, steps, viol,
    # stuck state)
    found: list[tuple] = []
    found_len: Optional[int] = None

    def path_to(i: int) -> list:
        steps = []
        while i > 0:
            p, step = parent[i]
            steps.append(step)
            i = p
        steps.reverse()
        return steps

    def finish(v: Verdict) -> Verdict:
        stats.states = len(parent)
        stats.transitions = transitions
        stats.depth = max_depth
        stats.seconds = time.perf_counter() - t0
        stats.extra["components"] = len(ex.packer.table)
        stats.extra["symmetric_groups"] = [len(g) for g in ex.groups]
        v.stats = stats
        return v

    def bounded_note(d: int) -> str:
        """What the unfinished search does guarantee.  Breadth-first: every state of
        depth < d was expanded, so every step from them was checked -- no violation in
        runs of up to d steps, no deadlock within d - 1 -- provided no reduction that
        can lengthen runs was used (symmetry keeps lengths; partial-order and safe-step
        reductions do not)."""
        if ex.reducer is not None or d < 2:
            return ""
        return (f"; no violation or deadlock in any run of up to {d - 1} steps (every one "
                "explored; starvation not checked)")

    def report() -> Verdict:
        length, _rank, steps, viol, stuck = min(found, key=lambda f: (f[0], f[1]))
        if viol[0] == "deadlock":
            trace = ex.replay(steps, None, stuck_state=stuck)
            trace.violated, trace.detail = viol
        else:
            trace = ex.replay(steps, viol)
        return finish(Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace,
                              depth=len(steps)))

    while queue:
        state = queue.popleft()
        si = index[state]
        d = depth_of[si]
        if found_len is not None and d >= found_len:
            break  # every run shorter than the violation found has been explored
        any_succ = False
        out_edges: list[tuple[int, Any]] = []
        expand = depth_limit is None or d < depth_limit
        for step, nxt, viol in (ex.successors(state) if expand else ()):
            any_succ = True
            transitions += 1
            if viol is not None:
                if found_len is None or d + 1 <= found_len:
                    found.append((d + 1, PRIORITY.get(viol[0], 99), path_to(si) + [step],
                                  viol, None))
                    found_len = d + 1
                continue
            ni = index.get(nxt)
            if ni is None:
                ni = index[nxt] = len(parent)
                parent.append((si, step))
                depth_of.append(d + 1)
                states.append(nxt)
                if d + 1 > max_depth:
                    max_depth = d + 1
                queue.append(nxt)
            if succ_lists is not None:
                out_edges.append((ni, ("a", step[1]) if step[0] == "a" else ("e", step[1])))
        if succ_lists is not None:
            succ_lists.append(out_edges)
        if expand and not any_succ and not ex.all_done(state):
            found.append((d, PRIORITY.get("deadlock", 99), path_to(si),
                          ("deadlock", DEADLOCK_MSG), state))
            found_len = d if found_len is None else min(found_len, d)
        if len(parent) > max_states and found_len is None:
            return finish(Verdict(UNKNOWN, reason=f"state limit: more than {max_states} states "
                                  f"(explored to depth {max_depth}){bounded_note(d)}; use "
                                  "--engine bmc or smaller parameters", depth=max_depth))
        now = time.perf_counter()
        if now - t0 > timeout and found_len is None:
            return finish(Verdict(UNKNOWN, reason=f"timeout after {timeout:.0f} s with "
                                  f"{len(parent)} states explored to depth {max_depth}"
                                  f"{bounded_note(d)}", depth=max_depth))
        if progress is not None and now >= next_report:
            progress(len(parent), max_depth, now - t0)
            next_report = now + 1.0
    if found:
        return report()
    if depth_limit is not None:
        return finish(Verdict(PROVEN, depth=max_depth, bounded=True))
    if succ_lists is not None:
        lasso = _find_starvation(ex, states, succ_lists)
        if lasso is not None:
            from .bmc import ConcreteRunner
            from .liveness import report_lasso

            entry, cycle_steps = lasso
            steps = path_to(entry)
            # checked on the concrete model and worded as BMC's lassos are
            v = report_lasso(ex.sys, ConcreteRunner(ex.sys), steps + cycle_steps, len(steps))
            stats.extra.update(v.stats.extra)
            return finish(v)
    return finish(Verdict(PROVEN, depth=max_depth, bounded=False))


def _sccs(nodes: list[int], adj: dict[int, list[int]]) -> list[list[int]]:
    """Strongly connected components of the graph ``adj`` restricted to ``nodes``
    (iterative Tarjan)."""
    inside = set(nodes)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            edges = adj.get(v, ())
            recurse = False
            while i < len(edges):
                w = edges[i]
                i += 1
                if w not in inside:
                    continue
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out


def starving_component(nag: int, pc: Callable[[int, int], int], polls: list[set[int]],
                       succ: list[list[tuple[int, Any]]], enabled: list[set]
                       ) -> Optional[tuple[int, int, set[int], set, set[int]]]:
    """The decision of ``_find_starvation`` on any finite graph: states ``0..n-1``,
    ``succ[v]`` its (target, actor) pairs, ``enabled[v]`` the actors with a step there,
    ``pc(v, w)`` warp ``w``'s program counter in state ``v`` and ``polls[w]`` its polling
    pcs.  Returns (entry, starving warp, component, actors moving inside it, the states
    where the warp polls) for the fair component with the smallest entry, or None when
    no fair cycle starves a warp (the BMC certificate's graph uses it too,
    ``checker/certificate.py``)."""
    best: Optional[tuple] = None
    for w in range(nag):
        alive = [v for v in range(len(succ)) if pc(v, w) != DONE]
        if not alive:
            continue
        # w's moves that are polls (try_wait/try_acquire) stay: spinning is waiting
        wpoll = {v for v in alive if pc(v, w) in polls[w]}
        adj = {v: [t for t, a in succ[v] if a != ("a", w) or v in wpoll] for v in alive}
        work = _sccs(alive, adj)
        while work:
            comp = work.pop()
            cset = set(comp)
            internal = {a for v in comp for t, a in succ[v]
                        if t in cset and (a != ("a", w) or v in wpoll)}
            if not internal:
                continue  # a single state without a self-loop: not a cycle
            # strong fairness of asynchronous completions
            unfair_env = {a for v in comp for a in enabled[v]
                          if a[0] == "e" and a not in internal}
            if unfair_env:
                keep = [v for v in comp if not (enabled[v] & unfair_env)]
                work.extend(_sccs(keep, adj))
                continue
            # weak fairness of warps (w included: it must be blocked somewhere)
            if any(all(("a", a) in enabled[v] for v in comp)
                   for a in range(nag) if ("a", a) not in internal):
                continue
            entry = min(comp)
            if best is None or entry < best[0]:
                best = (entry, w, cset, internal, wpoll)
            break
    return best


def _find_starvation(ex: Explorer, states: list[tuple],
                     succ: list[list[tuple[int, Any]]]) -> Optional[tuple]:
    """A fair cycle in which some warp that has not exited never gets past its wait --
    it does not move, or only polls (the definition the BMC engine uses,
    ``checker/liveness.py``): asynchronous hardware is strongly fair
    (an operation enabled somewhere in the cycle completes in it) and warps are weakly
    fair (a warp enabled in every state of the cycle moves in it), so the starving warp
    really waits.  For each warp ``w``: the strongly connected components of the graph
    without ``w``'s moves, refined the Emerson-Lei way (drop the states where a strongly
    fair actor is enabled but never acts inside; drop a component where a warp is
    enabled everywhere but never moves).  Returns (entry state, steps of a fair cycle
    through it) or None; ``liveness.report_lasso`` names the starving warps.  ``succ[v]`` lists (target, actor) pairs, actor
    = ("a", warp) or ("e", item); the explorer must not permute warps (no symmetry)."""
    from .liveness import poll_pcs

    nag = len(ex.sys.agents)
    enabled = [{a for _t, a in succ[v]} for v in range(len(succ))]
    best = starving_component(nag, lambda v, w: ex.pc(states[v], w),
                              [set(poll_pcs(ex.sys, a)) for a in range(nag)], succ, enabled)
    if best is None:
        return None
    entry = best[0]

    def step_of(u: int, t: int, actor: tuple) -> tuple:
        for step, nxt, viol in ex.successors(states[u]):
            if viol is None and nxt == states[t] and _actor(step) == actor:
                return step
        raise AssertionError("a graph edge the explorer does not take")  # pragma: no cover

    return entry, [step_of(*e) for e in fair_cycle(succ, enabled, best, nag)]


def _actor(step: tuple) -> tuple:
    return ("a", step[1]) if step[0] == "a" else ("e", step[1])


Edge = tuple[int, int, tuple]  # (source, target, actor) of a state graph


def graph_path(succ: list[list[tuple[int, Any]]], src: int,
               goal: Callable[[int, int, tuple], bool],
               allowed: Callable[[int, int, tuple], bool]) -> tuple[list[Edge], int]:
    """Shortest edge path from ``src`` over ``allowed`` edges whose last edge satisfies
    ``goal(source, target, actor)`` (edges tried in ``succ`` order); returns (edges, end
    state)."""
    prev: dict[int, Edge] = {}
    frontier, seen = [src], {src}
    while frontier:
        nxt_frontier = []
        for u in frontier:
            for t, a in succ[u]:
                if not allowed(u, t, a):
                    continue
                if goal(u, t, a):
                    path = [(u, t, a)]
                    v = u
                    while v != src:
                        path.append(prev[v])
                        v = prev[v][0]
                    return path[::-1], t
                if t not in seen:
                    seen.add(t)
                    prev[t] = (u, t, a)
                    nxt_frontier.append(t)
        frontier = nxt_frontier
    raise AssertionError("no path in the graph")  # pragma: no cover


def fair_cycle(succ: list[list[tuple[int, Any]]], enabled: list[set], comp: tuple,
               nag: int) -> list[Edge]:
    """The closed walk through ``comp`` (``starving_component``'s answer) that shows the
    starvation: from the entry, inside the component and without a move of the starving
    warp ``w`` except polls, one move of every actor that moves inside, then, for every
    warp that does not, a state where it is disabled, then back to the entry -- a fair
    cycle.  Both engines build their lasso with it (the explicit engine on its graph,
    BMC on the certified one, ``evalgraph.graph_lasso``)."""
    entry, w, cset, internal, wpoll = comp

    def inside(u: int, t: int, a: tuple) -> bool:
        return t in cset and (a != ("a", w) or u in wpoll)

    targets: list[tuple[str, Any]] = [("edge", a) for a in sorted(internal, key=repr)]
    targets += [("off", a) for a in range(nag) if ("a", a) not in internal]
    edges: list[Edge] = []
    cur = entry
    for kind, what in targets + [("home", None)]:
        if kind == "off" and ("a", what) not in enabled[cur]:
            continue  # already where the warp is disabled
        if kind == "edge":
            goal = (lambda what: lambda u, t, a: a == what)(what)
        elif kind == "off":
            goal = (lambda what: lambda u, t, a: ("a", what) not in enabled[t])(what)
        else:
            goal = lambda u, t, a: t == entry  # noqa: E731
        path, cur = graph_path(succ, cur, goal, inside)
        edges += path
    return edges
