"""``Reducer``: the reduction the explicit engine applies in each state
(``statespace.Explorer``'s ``reduction``, made by ``stubborn_sets``).

First the safe-step fast path (a warp's step that conflicts with nothing any other warp
may ever do is a stubborn set alone); then, with ``full``, the closure (``closure.py``,
or its native twin ``checker/native/porwalk.py``) from each enabled unit as the seed,
keeping a smallest set.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ...model.program import ParamSplit
from ...model.system import BULK_MARK, DONE, System
from ...model.values import CONCRETE
from .closure import Closure, NativeClosureUnavailable
from .footprints import Footprints
from .modes import PARAM_FP, Footprint, conflicts


class Reducer:
    """Compute stubborn sets in concrete states.

    Fast path (``safe``): a warp's enabled step that conflicts with nothing any *other*
    warp's whole program (or the asynchronous work it starts) may ever do is a stubborn
    set on its own -- nothing outside can interfere with it or disable it -- so it is
    explored alone.  Cluster arrivals that do not complete the barrier, exits that do not
    complete it and no-op fences are typical: the prologue of a kernel collapses to one
    order.  Only when no such step exists is the full computation run (``full=True``).
    """

    def __init__(self, sysm: System, explorer: Any, full: bool = True,
                 deadline: Optional[float] = None,
                 native: Optional[Callable[[Footprints], Any]] = None):
        self.sys = sysm
        self.ex = explorer
        self.fp = Footprints(sysm, deadline)
        self.full = full
        #: the closure in native code (``native/porwalk.py`` ``NativeClosure``: the same
        #: sets, tests/test_por_closure.py), made by ``native`` from the footprints; None:
        #: the Python closure.  States it does not take go to the Python closure
        #: (counted in ``native_fallbacks``)
        self.native = native(self.fp) if native is not None and full else None
        self.native_calls = 0
        self.native_fallbacks = 0
        #: a list to collect why units join a stubborn set (debugging), or None
        self.why: Optional[list] = None
        # object -> {agent: modes} over each warp's whole program and async work
        self.touch: dict = {}
        for a in range(len(sysm.agents)):
            for pc in range(len(sysm.code(a))):
                for obj, mode in self.fp.step[a][pc] | self.fp.future_env[a][pc]:
                    self.touch.setdefault(obj, {}).setdefault(a, set()).add(mode)
        self._safe_cache: dict = {}
        #: ``_can_complete`` answers by (pending, tx, ops, proper_of), across states
        self._complete_memo: dict = {}
        #: a small int per barrier (``future_tuple``), across states
        self._bar_id: dict = {}
        #: ``Closure._walk_result`` by (warp, cluster frozen, pcs walked, looped), across
        #: states: it reads only the static segment tables
        self._walk_memo: dict = {}
        #: ``Closure._later_waits`` answers by (warp, pc, phases it reads), across states
        self._later_memo: dict = {}
        #: seed position -> how often it gave the chosen stubborn set: tried first later
        self._hits: dict = {}

    def safe_point(self, a: int, pc: int) -> bool:
        """Is warp ``a``'s step at ``pc`` safe by its static footprint alone (without the
        state-dependent cases of ``safe_step``)?"""
        return self._safe(a, self.fp.step[a][pc])

    def _safe(self, a: int, fp: frozenset) -> bool:
        key = (a, fp)
        r = self._safe_cache.get(key)
        if r is None:
            r = True
            for obj, mode in fp:
                for b, modes in self.touch.get(obj, {}).items():
                    if b != a and any(conflicts(mode, m) for m in modes):
                        r = False
                        break
                if not r:
                    break
            self._safe_cache[key] = r
        return r

    def safe_step(self, state: tuple, enabled: list[tuple]) -> Optional[list[tuple]]:
        """The steps of one warp whose current step is safe (see the class docstring)."""
        get = None
        for e in enabled:
            step = e[0]
            if step[0] != "a":
                continue
            a = step[1]
            if get is None:
                get = self.ex.getter(state)
            pc = get(self.sys.agents[a].pc)
            nc = self.fp.noncompleting[a][pc]
            if nc is not None and not self._completes_now(get, a):
                fp = nc
            else:
                fp = self.fp.step[a][pc]
            if PARAM_FP in fp and self._uniform_split(get, a, pc):
                fp = fp - {PARAM_FP}
            if self._safe(a, fp):
                return [x for x in enabled if x[0][0] == "a" and x[0][1] == a]
        return None

    def _uniform_split(self, get: Any, a: int, pc: int) -> bool:
        """A parameter split whose condition every value still possible decides alike
        (``System.split_sides``): it leaves the parameter bits as they are (only the
        warp's pc moves), and other splits only remove values, which keeps it decided.
        So it conflicts with no other unit's step, now or later -- unless another warp
        sits at a split of the same condition, which it moves on too (it would move this
        warp on as well)."""
        ins = self.sys.code(a)[pc]
        if not isinstance(ins, ParamSplit):
            return False
        inside, outside = self.sys.split_sides(CONCRETE, get, ins)
        if inside and outside:
            return False
        return not any(get(self.sys.agents[b].pc) == q
                       for b, q in self.sys.split_partners(a, ins))

    def _completes_now(self, get: Any, a: int) -> bool:
        for b, ag in enumerate(self.sys.agents):
            if b != a and get(ag.pc) != DONE and get(ag.carr) != 1:
                return False
        return True

    # units: ("a", agent) for warps; ("e", item) for environment items

    def env_fp(self, item: tuple) -> Footprint:
        kind = item[0]
        if kind == "tma":
            _, a, pc, d, _choice = item
            ins = self.sys.code(a)[pc]
            dl = ins.deliveries[d]
            fp = {(("bar", dl.bar), "X"), (("pool",), "Q"), (("exit", dl.bar.cta), "R"),
                  (("arr", dl.bar.cta, dl.bar.array), "R")}
            if dl.buf is not None:
                fp.add((("buf", dl.buf), f"AE{dl.tag}"))
                fp.add((("exit", dl.buf.cta), "R"))
                if ins.kind == "clc":
                    fp.add((("buf", dl.buf), "W"))
            return frozenset(fp)
        a, head = item[1], item[2]
        if kind == "bulk" and head == BULK_MARK:
            return frozenset({(("q", a, "bulk"), "Q")})
        return self.fp.future_env[a][head]

    def reduce(self, state: tuple, enabled: list[tuple]) -> list[tuple]:
        """Given the enabled steps of ``state`` (tuples whose first item is the step, the
        rest carried along: ``Explorer.successors`` passes ``(step, S, outcome)`` before
        the kept ones are made states), return those of a smallest stubborn set found
        (trying each enabled unit as the seed).

        Seeds whose position (warp and pc, or environment item) gave the chosen set most
        often so far go first: every seed gives a stubborn set, so the order is only
        about how soon a set with one enabled step ends the search (K3: 3.2 seeds tried
        a state and 24 s in smallest-unit order; 2.0 and 18 s this way)."""
        units = {}
        for e in enabled:
            units.setdefault(_unit(e[0]), []).append(e)
        if len(units) <= 1:
            return enabled
        one = self.safe_step(state, enabled)
        if one is not None:
            return one
        if not self.full:
            return enabled
        get = self.ex.getter(state)
        ctx = Closure(self, state, get)
        # which units are enabled is the model's answer the explorer just computed (the
        # units with a step); ``Futures._enabled`` would derive it again
        en = ctx._en_cache
        for u in ctx._units:
            en[u] = u in units
        best: Optional[set] = None
        best_pos = None
        pos = {u: (u[0], u[1], ctx.pcs[u[1]]) if u[0] == "a" else u for u in units}
        hits = self._hits
        for u in sorted(units, key=lambda u: (-hits.get(pos[u], 0), len(units[u]))):
            t = self._stubborn(ctx, u, None if best is None else _count(best, units))
            if t is None:
                continue
            if best is None or _count(t, units) < _count(best, units):
                best, best_pos = t, pos[u]
                if _count(best, units) == 1:
                    break
        if best is None:
            return enabled
        hits[best_pos] = hits.get(best_pos, 0) + 1
        return [e for e in enabled if _unit(e[0]) in best]


    def _stubborn(self, ctx: "Closure", seed: tuple, best_size: Optional[int]) -> Optional[set]:
        """``ctx.stubborn``, by the native closure where there is one and it takes the
        state (the debugging trace ``why`` wants the Python one)."""
        if self.native is not None and self.why is None:
            try:
                t = self.native.stubborn(ctx, seed, best_size)
                self.native_calls += 1
                return t
            except NativeClosureUnavailable:
                self.native_fallbacks += 1
        return ctx.stubborn(seed, best_size=best_size)



def _unit(step: tuple) -> tuple:
    if step[0] == "a":
        return ("a", step[1])
    return ("e", step[1])


def _count(t: set, units: dict) -> int:
    return sum(len(units[u]) for u in t if u in units)


def stubborn_sets(full: bool, deadline: Optional[float] = None,
                  native: Optional[Callable[[Footprints], Any]] = None
                  ) -> Callable[[Any], Reducer]:
    """The ``reduction`` argument of ``statespace.Explorer``: a ``Reducer`` over that
    explorer -- the safe steps alone, or with ``full`` the whole stubborn-set
    computation.  Passed from above so that the state space knows nothing of it.
    ``deadline`` (a ``time.perf_counter()`` value): its set-up raises ``SetupTimeout``
    past it.  ``native``: makes the native closure from the footprints (or None)."""
    return lambda explorer: Reducer(explorer.sys, explorer, full=full, deadline=deadline,
                                    native=native)
