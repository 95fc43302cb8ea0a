"""The native explicit engine: ``check_native``.

The same search as ``checker/explicit.py`` without reductions (``reduce=False``), run
in C over the transition templates of ``checker/symbolic.py``'s ``Encoding``
(``ccode.py`` prints them, ``build.py`` compiles them): same states, same order, same
verdicts, same counterexamples.  What is reported goes back through the concrete model:

* a violation or deadlock is a step list, re-run by ``ConcreteRunner`` (the last step
  must violate the same property; a deadlock's last state must have no step) and
  described by the explicit engine's own replay -- a mismatch is UNKNOWN (internal
  error), never a verdict;
* where some warp loops for ever, the reachable graph (state ids, edges labelled by the
  acting warp or asynchronous unit) goes to the explicit engine's starvation analysis
  (``graphs.starving_component``) and a lasso to ``lasso.report_lasso``.

The encoding has fixed-size keys (value ranges, queue capacities).  Their first guess
comes from a small breadth-first sample bounded by states (not by time, so the verdict
never depends on the clock); a step that leaves them stops the search, is replayed on
the concrete model to see which keys were too small, and the search restarts with those
widened -- never a SAFE or PROVEN over a truncated encoding.

With ``safe_steps`` (kernels whose every warp ends), the search follows the reduced rule
of ``certificate.certify_reduced``: where some warp (lowest index first) is at one of its
*safe points* with an enabled step, only that warp's steps are followed.  The safe
points are proven by z3 over this very encoding (``checker/safesteps.py``: the step
cannot be disabled, enabled, spoiled or reordered by any other actor's step; undecided
within ``SAFE_SECONDS`` counts as not safe), so ``certify_reduced``'s theorem carries
over: every step of every reached state is still evaluated, and where none violates,
none leaves the encoding, no state deadlocks and the reduced graph has no cycle
(``pp_acyclic``), no reachable state has a problem -- PROVEN.  That covers every
property the steps check and deadlocks; starvation is not searched with it (some warp
loops for ever: the reduction is off).  A counterexample it finds is real (replayed as
any other) but perhaps not a shortest one: the unreduced search bounded by
``CONFIRM_SECONDS`` looks for a shortest one, and says so where it stopped first.  An
unfinished reduced search claims nothing about bounded runs.

With ``por`` (kernels whose every warp ends), the explicit engine's stubborn sets
instead: every step of a state is evaluated in C and the explicit engine's ``Reducer``
says, through a callback (``native/por.py``), which of them count; states are stored
as the explicit engine stores them under its reductions (``stored_keys``).  Its
counterexamples are shortened and confirmed as the safe-step reduction's are.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Optional, Sequence

from ...model.properties import ALL_PROPERTIES
from ...model.program import is_acyclic
from ...model.system import System
from ..concrete import ConcreteRunner
from ..cta_symmetry import CtaPermutation, cta_automorphisms
from ..errors import InternalError, SetupTimeout
from ..graphs import fair_cycle, starving_component
from ..lasso import poll_pcs, report_lasso
from ..properties import DEADLOCK_MSG, PRIORITY
from ..packed import component_of
from ..statespace import Explorer, dead_local_slots, symmetric_groups
from ..symbolic import (Encoding, bits_for, join_ranges, pool_key_name, same_shape,
                        sample_ranges)
from ..verdict import PROVEN, UNKNOWN, VIOLATED, Stats, Verdict, state_limit_reason
from .build import BuildFailed, NativeUnavailable, core_source, loaded
from .ccode import Program, Unsupported, generate

ST_DONE, ST_FOUND, ST_LIMIT, ST_TIMEOUT, ST_OVERFLOW, ST_NOMEM, ST_POR = range(7)

#: states of the sample that guesses the encoding's value ranges
SAMPLE_STATES = 2_000
#: restarts with a wider encoding before the engine gives up (UNKNOWN)
MAX_RESTARTS = 12
#: seconds of z3 for proving safe points (at most a quarter of the timeout)
SAFE_SECONDS = 10.0
#: seconds of the unreduced search that looks for a shorter counterexample
CONFIRM_SECONDS = 20.0


def _storage_range(lo: int, hi: int) -> tuple[int, int]:
    """The full range of the smallest of int8/int16/int32 holding [lo, hi]: a key costs
    its storage bytes whatever range it declares, so it may as well declare all of it."""
    w = bits_for(lo, hi)
    for b in (8, 16, 32):
        if w <= b:
            return -(1 << (b - 1)), (1 << (b - 1)) - 1
    raise Unsupported(f"a value range [{lo}, {hi}] wider than 32 bits")


class _Shape:
    """The encoding's sizes: key ranges by name and queue capacities by slot."""

    def __init__(self, system: System, groups: list[list[int]],
                 perms: Sequence[CtaPermutation] = (), reduced: bool = False):
        self.system = system
        # ``reduced`` (a search with stubborn sets): where the unreduced sample does not
        # finish, the reduced one goes on (to 4 x SAMPLE_STATES states, not by time):
        # the states such a search reaches lie deeper than the unreduced sample's, and
        # each key it leaves costs a restart, a new encoding and a compile
        sample = sample_ranges(system, max_states=SAMPLE_STATES, seconds=1e9,
                               exact_seconds=1e9, reduced_seconds=1e9 if reduced else 0.0)
        self.sample = sample
        self.caps: dict[int, int] = {}
        self.ranges: dict[str, tuple[int, int]] = {}
        names = system.layout.names
        pcs = {ag.pc for ag in system.agents}
        for slot, r in sample.slot.items():
            if slot not in pcs:
                self.ranges[names[slot]] = _storage_range(*r)
        init = system.initial_state()
        for slot in range(system.n):
            if (slot not in pcs and slot != system.pool and names[slot] not in self.ranges
                    and isinstance(init[slot], int)):
                self.ranges[names[slot]] = _storage_range(int(init[slot]), int(init[slot]))
        for it, n in sample.pool.items():
            self.ranges[pool_key_name(it)] = _storage_range(0, max(1, n))
        # interchangeable warps swap values, and so do CTAs a renaming maps onto each
        # other: the keys of twins get one range, the queues of twins one capacity
        self.twins = [names_ for g in groups
                      for names_ in zip(*[[names[s] for s in warp_slots(system, a)]
                                          for a in g])]
        self.twins += _renaming_classes(system, perms)
        qslots = {q for ag in system.agents for q in (ag.qtc, ag.qcp, ag.qbs)}
        self.queue_twins = [[q, *(g.slots[q] for g in perms)] for q in sorted(qslots)
                            if perms]
        self._unify()

    def _unify(self) -> None:
        for names in self.twins:
            join_ranges(self.ranges, names)
        for qs in self.queue_twins:
            cs = [self.caps[q] for q in qs if q in self.caps]
            if cs:
                for q in qs:
                    self.caps[q] = max(cs)

    def encoding(self) -> Encoding:
        return Encoding(self.system, caps=dict(self.caps), ranges=dict(self.ranges),
                        sample=self.sample)

    def widen(self, enc: Encoding, flat: tuple) -> bool:
        """Widen what ``flat`` (a state the encoding could not hold) leaves; False when
        it leaves nothing (the overflow is not explained)."""
        bad, long = enc.out_of_range(flat)
        shapes: dict[str, tuple[int, int]] = {}
        for name, r in bad.items():
            k = same_shape(name)
            o = shapes.get(k, r)
            shapes[k] = (min(o[0], r[0]), max(o[1], r[1]))
        # the same key of other CTAs, warps and stages climbs as far, a little later:
        # widen them all at once rather than restart for each
        for name in enc.key_names:
            r = shapes.get(same_shape(name))
            if r is not None and (name in self.ranges or name in bad):
                o = self.ranges.get(name, r)
                self.ranges[name] = _storage_range(min(o[0], r[0]), max(o[1], r[1]))
        for slot, n in long.items():
            self.caps[slot] = max(n, 2 * enc.caps[slot])
        self._unify()
        return bool(bad or long)


def warp_slots(system: System, a: int) -> list[int]:
    """The slots of warp ``a``'s own component (``packed.component_of``: its pc, locals,
    barrier bookkeeping and queues), in slot order."""
    names = system.layout.names
    comp = component_of(names[system.agents[a].pc])
    return [s for s in range(system.n) if component_of(names[s]) == comp]


def warp_blocks(enc: Encoding, groups: list[list[int]]) -> list[list[list[int]]]:
    """group -> warp -> the keys of its component, aligned across the group."""
    out = []
    for g in groups:
        blocks = []
        for a in g:
            keys: list[int] = []
            for s in warp_slots(enc.sys, a):
                if s in enc.key_of_slot:
                    keys.append(enc.key_of_slot[s])
                elif s in enc.qkeys:
                    keys += enc.qkeys[s][0] + [enc.qkeys[s][1]]
            blocks.append(keys)
        if len({len(b) for b in blocks}) != 1:
            raise Unsupported("interchangeable warps with differently shaped states")
        out.append(blocks)
    return out


def canon_order(vals: list[int], blocks: list[list[int]]) -> list[int]:
    """Positions of a group's warps in the canonical state: position ``j`` holds the
    warp ``order[j]`` (index into the group), ``canon`` of the generated C."""
    return sorted(range(len(blocks)), key=lambda j: [vals[k] for k in blocks[j]])


def _renaming_classes(system: System, perms: Sequence[CtaPermutation]) -> list[list[str]]:
    """Key names a CTA renaming maps onto each other (slots and in-flight items), each
    with its images under every renaming of the group."""
    if not perms:
        return []
    names = system.layout.names
    out = [[names[i], *(names[g.slots[i]] for g in perms)] for i in range(system.n)]
    for it in system.static_env_items():
        if it[0] == "tma":
            out.append([pool_key_name(it[1:]),
                        *(pool_key_name(g.pool((it[1:],))[0]) for g in perms)])
    return out


def cta_sources(enc: Encoding, perms: Sequence[CtaPermutation]) -> list[list[int]]:
    """Per CTA renaming, the key each key of the renamed state takes its value from
    (``ccode._canon_fn``): a slot's key from its preimage's, a queue's entries and
    length from its preimage's, an in-flight item's counter from its preimage's.
    Raises ``Unsupported`` where the encoding does not map onto itself (a key or a
    queue of another size)."""
    out = []
    for g in perms:
        src = [-1] * enc.nkeys
        for s, k in enc.key_of_slot.items():
            src[enc.key_of_slot[g.slots[s]]] = k
        for q, (ents, ln) in enc.qkeys.items():
            ents2, ln2 = enc.qkeys[g.slots[q]]
            if len(ents2) != len(ents):
                raise Unsupported("CTAs renamed onto each other with queues of other sizes")
            for a, b in zip(ents, ents2):
                src[b] = a
            src[ln2] = ln
        for it, k in enc.pool_keys.items():
            src[enc.pool_keys[g.pool((it,))[0]]] = k
        if sorted(src) != list(range(enc.nkeys)) or \
                any(enc.key_range[k] != enc.key_range[src[k]] for k in range(enc.nkeys)):
            raise Unsupported("a CTA renaming does not map the encoding onto itself")
        out.append(src)
    return out


def sort_warps(x: list[int], blocks: list[list[list[int]]]) -> list[int]:
    """The generated ``canon_warps`` in Python: each group's warp blocks sorted, in
    place (``x`` is returned)."""
    for bl in blocks:
        order = canon_order(x, bl)
        vals_ = [[x[k] for k in bl[j]] for j in order]
        for blk, v in zip(bl, vals_):
            for k, xv in zip(blk, v):
                x[k] = xv
    return x


def canon_keys(vals: Sequence[int], blocks: list[list[list[int]]],
               sources: list[list[int]]) -> list[int]:
    """The generated ``canon`` in Python: each group's warp blocks sorted, then the least
    of that and its CTA renamings (``sources``), each with its warps sorted."""
    best = sort_warps(list(vals), blocks)
    x0 = list(best)
    for src in sources:
        y = sort_warps([x0[src[k]] for k in range(len(x0))], blocks)
        if y < best:
            best = y
    return best


def dead_keys(enc: Encoding) -> list[tuple[int, dict[int, list[int]]]]:
    """Per warp with locals: its pc key and {pc: the keys of its locals dead there}
    (``statespace.dead_local_slots``): the generated ``forget``'s table."""
    out = []
    for ag in enc.sys.agents:
        by_pc = {pc: [enc.key_of_slot[s] for s in slots]
                 for pc, slots in dead_local_slots(enc.sys, ag.index).items()}
        if by_pc:
            out.append((enc.key_of_slot[ag.pc], by_pc))
    return out


def stored_keys(vals: Sequence[int], blocks: list[list[list[int]]],
                dead: list[tuple[int, dict[int, list[int]]]]) -> list[int]:
    """The state the search stores and expands with stubborn sets (``bfs.c`` ``store``):
    the dead locals at 0 (the generated ``forget``), then the warps sorted."""
    x = list(vals)
    for pck, by_pc in dead:
        for k in by_pc.get(x[pck], ()):
            x[k] = 0
    return sort_warps(x, blocks)


def check_native(system: System, max_states: int = 2_000_000, timeout: float = 600.0,
                 progress: Optional[Callable[[int, int, float], None]] = None,
                 symmetry: bool = False, safe_steps: bool = False,
                 cta_symmetry: Optional[bool] = None, por: bool = False) -> Verdict:
    """Exhaustive breadth-first search in native code (module docstring).

    ``symmetry``: explore one state per class of states equal up to a permutation of
    interchangeable warps (``statespace.symmetric_groups``), the explicit engine's warp
    symmetry with another representative (warp blocks sorted by value); not where some
    warp loops for ever (the starvation analysis follows each warp, as the explicit
    engine's).  ``safe_steps``: the safe-step reduction (module docstring), likewise
    not where some warp loops for ever.  ``cta_symmetry`` (default: ``symmetry``, not
    with ``safe_steps``): also one state per class of states equal up to renaming
    identical CTAs of the cluster (``checker/cta_symmetry.py``), the least renaming of
    the keys (``ccode._canon_fn``).  ``por``: the explicit engine's stubborn sets
    (``native/por.py``; kernels whose every warp ends, in place of ``safe_steps``), with
    its dead-local forgetting and its rule of expanding the state reached, the CTA
    renamings keying the visited set only: the explicit engine's reduced search (with
    ``symmetry``, its warp symmetry by another representative), its counterexamples
    shortened and confirmed as the safe-step reduction's are.  ``progress`` is not
    called: the search runs in C to its end or limit.
    Raises ``NativeUnavailable`` where cffi or a C compiler is missing."""
    t0 = time.perf_counter()
    stats = Stats(engine="native")
    acyclic = all(is_acyclic(ag.program.code) for ag in system.agents)
    groups = symmetric_groups(system) if symmetry and acyclic else []
    stats.extra["symmetric_groups"] = [len(g) for g in groups]
    if cta_symmetry is None:
        cta_symmetry = symmetry
    por = por and acyclic
    if por:
        safe_steps = False
    perms = cta_automorphisms(system) if cta_symmetry and acyclic and not safe_steps else []
    if perms:
        stats.extra["cta_automorphisms"] = len(perms) + 1
    with contextlib.ExitStack() as libs:
        return _check(system, max_states, timeout, safe_steps and acyclic, groups, perms,
                      stats, t0, libs, por)


def _check(system: System, max_states: int, timeout: float, safe_steps: bool,
           groups: list, perms: list, stats: Stats, t0: float,
           libs: contextlib.ExitStack, por: bool = False) -> Verdict:
    """``check_native``'s search, its libraries held by ``libs``."""
    stubborn = None
    try:
        if por:
            from .por import NativeStubborn
            try:
                stubborn = NativeStubborn(system, deadline=t0 + timeout)
            except SetupTimeout as e:
                return _finish(Verdict(UNKNOWN, reason=f"timeout after {timeout:.0f} s while "
                                       f"preparing {e}"), stats, t0)
        shape = _Shape(system, groups, perms, reduced=stubborn is not None)
        restarts = 0
        while True:
            enc = shape.encoding()
            blocks = warp_blocks(enc, groups)
            try:
                sources = cta_sources(enc, perms)
            except Unsupported as e:  # not expected (the shape unifies them): no renaming
                sources = []
                stats.extra["cta_symmetry_off"] = str(e)
                stats.extra.pop("cta_automorphisms", None)
            safe: dict[int, frozenset[int]] = {}
            if safe_steps:
                safe = _safe_points(system, enc, min(SAFE_SECONDS, 0.25 * timeout), stats)
            dead = dead_keys(enc) if stubborn is not None else []
            prog = generate(enc, core_source(), blocks, safe, sources, dead)
            t_build = time.perf_counter()
            ffi, lib = libs.enter_context(loaded(prog.source, timeout - (t_build - t0)))
            # sampling ranges, building the templates and proving safe points;
            # compiling (or the cache)
            stats.extra["encode_seconds"] = round(t_build - t0, 3)
            stats.extra["compile_seconds"] = round(time.perf_counter() - t_build, 3)
            left = max(timeout - (time.perf_counter() - t0), 0.01)
            # cffi looks a function up on its first call through a handle: not search
            set_reduce, search = lib.pp_set_reduce, lib.pp_search
            callback = None
            if stubborn is not None:
                stubborn.bind(enc, prog.steps, ffi)
                callback = ffi.callback("int(int32_t *, int, int32_t *, int8_t *)",
                                        stubborn)
                lib.pp_set_por(callback)
            search_t0 = time.perf_counter()
            set_reduce(2 if stubborn is not None else 1 if safe else 0)
            st = search(max_states, left, 1 if not enc.acyclic or safe else 0,
                        PRIORITY.get("deadlock", 99))
            stats.extra["search_seconds"] = round(time.perf_counter() - search_t0, 6)
            if stubborn is not None:
                lib.pp_set_por(ffi.NULL)
                stats.extra["por"] = stubborn.stats()
            if st == ST_POR:
                lib.pp_free()
                err = stubborn.error if stubborn is not None else None
                raise InternalError(f"the stubborn-set callback failed: "
                                    f"{type(err).__name__}: {err}")
            if st != ST_OVERFLOW:
                break
            # a step left the encoding: see on the concrete model which keys it overflowed
            run = _Real(enc, groups, blocks, sources, ffi, lib, prog, dead, stubborn)
            steps = run(lib.pp_ovf_state(), lib.pp_ovf_tid(),
                        lambda nxt, viol: any(enc.out_of_range(nxt)))
            states, _viol = ConcreteRunner(system).run(steps)
            restarts += 1
            if restarts > MAX_RESTARTS or not shape.widen(enc, states[-1]):
                lib.pp_free()
                return _finish(Verdict(UNKNOWN, reason="the native encoding overflowed and "
                                       "could not be widened (use --engine explicit)"),
                               stats, t0)
            lib.pp_free()
        stats.extra["restarts"] = restarts
        stats.extra["keys"] = enc.nkeys
        stats.extra["state_bytes"] = prog.state_bytes
        try:
            real = _Real(enc, groups, blocks, sources, ffi, lib, prog, dead, stubborn)
            v = _answer(system, enc, prog, ffi, lib, st, max_states, timeout, stats, t0,
                        real, reduced=bool(safe) or stubborn is not None, safe=bool(safe))
            if v.status == VIOLATED and stubborn is not None:
                # as the explicit engine: the steps the violation does not need go first
                from ..explicit import drop_needless_steps
                v = drop_needless_steps(system, v)
            if v.status == VIOLATED and (safe or stubborn is not None):
                v = _confirm(system, enc, prog, ffi, lib, v, max_states, timeout, t0,
                             _Real(enc, groups, blocks, sources, ffi, lib, prog))
            return v
        finally:
            lib.pp_set_reduce(0)
            lib.pp_free()
    except Unsupported as e:
        return _finish(Verdict(UNKNOWN, reason=f"the native engine cannot encode this kernel: "
                               f"{e} (use --engine explicit)"), stats, t0)
    except BuildFailed as e:
        return _finish(Verdict(UNKNOWN, reason=str(e)), stats, t0)
    except InternalError as e:
        return _finish(Verdict(UNKNOWN, reason=f"internal error: {e}"), stats, t0)


def _safe_points(system: System, enc: Encoding, seconds: float, stats: Stats
                 ) -> dict[int, frozenset[int]]:
    """Warp -> its safe points proven by z3 over ``enc`` within ``seconds``
    (``safesteps.SafeSteps`` on the explicit engine's candidates, no invariant assumed:
    every state of the encoding is asked about)."""
    import z3

    from ..safesteps import SafeSteps, footprint_candidates
    from ..unrolling import Unrolling

    t = time.perf_counter()
    cand = {a: p for a, p in footprint_candidates(system).items() if p}
    safe: dict[int, frozenset[int]] = {}
    if cand:
        s = SafeSteps(Unrolling(enc, z3.Solver()), cand, t + seconds)
        safe = {a: p for a, p in s.safe.items() if p}
        stats.extra["safe_steps"] = dict(s.stats)
    stats.extra["safe_points"] = sum(len(p) for p in safe.values())
    stats.extra["safe_seconds"] = round(time.perf_counter() - t, 3)
    return safe


def _confirm(system: System, enc: Encoding, prog: Program, ffi: Any, lib: Any, v: Verdict,
             max_states: int, timeout: float, t0: float,
             real: "_Real") -> Verdict:
    """A counterexample of the reduced search: the unreduced search (same compiled
    program, reduction off), bounded by ``CONFIRM_SECONDS``, gives a shortest one; where
    it stops first, ``v`` is kept and marked perhaps not shortest."""
    c0 = time.perf_counter()
    left = min(CONFIRM_SECONDS, timeout - (c0 - t0))
    ex = dict(v.stats.extra)
    if left <= 0:
        v.stats.extra.update(shortest=False, confirm_seconds=0.0, confirm_states=0)
        return v
    lib.pp_set_reduce(0)
    st = lib.pp_search(max_states, left, 0, PRIORITY.get("deadlock", 99))
    if st == ST_FOUND:
        w = _answer(system, enc, prog, ffi, lib, st, max_states, timeout,
                    Stats(engine="native"), t0, real)
        if w.status != VIOLATED:
            raise InternalError(f"the unreduced search did not confirm the reduced "
                                f"search's counterexample ({w.status})")
        ex.update(reduced_states=v.stats.states, shortest=True,
                  confirm_seconds=round(time.perf_counter() - c0, 3))
        w.stats.extra = {**ex, **w.stats.extra}
        return w
    if st == ST_DONE:
        raise InternalError("the unreduced search finds no problem where the reduced "
                            "search found one")
    v.stats.extra.update(shortest=False, confirm_seconds=round(time.perf_counter() - c0, 3),
                         confirm_states=int(lib.pp_nstates()))
    return v


def _finish(v: Verdict, stats: Stats, t0: float) -> Verdict:
    stats.seconds = time.perf_counter() - t0
    v.stats = stats
    return v


def _path(lib: Any, prog: Program, i: int) -> list[tuple]:
    """The steps from the initial state to state ``i`` (parent links)."""
    steps = []
    while i > 0:
        steps.append(prog.steps[lib.pp_ptid(i)])
        i = lib.pp_parent(i)
    steps.reverse()
    return steps


class _Real:
    """The run to a state of the search (by its parent links), as steps of the unreduced
    system naming the real warps.  Without CTA renamings or stubborn sets: ``_real``.
    With them, each step is found again on the concrete model: a step of the real state
    whose successor has the search's next state as its stored form (``rep``: the
    representative ``canon_keys``, or with stubborn sets ``stored_keys``); the last step
    (a violation, an overflow) is any step of the last real state that ``last_ok``
    accepts -- the renamed image of the search's own last step is one."""

    def __init__(self, enc: Encoding, groups: list[list[int]],
                 blocks: list[list[list[int]]], sources: list[list[int]], ffi: Any,
                 lib: Any, prog: Program, dead: Optional[list] = None,
                 stubborn: Any = None):
        self.enc, self.groups, self.blocks, self.sources = enc, groups, blocks, sources
        self.ffi, self.lib, self.prog = ffi, lib, prog
        #: with stubborn sets (``stubborn`` not None) the search stores each state as
        #: ``stored_keys`` makes it (``dead``: the forget table), not as its canon
        self.dead = dead if stubborn is not None else None

    def rep(self, vals: list[int]) -> list[int]:
        """The search's stored form of a state's keys."""
        if self.dead is not None:
            return stored_keys(vals, self.blocks, self.dead)
        return canon_keys(vals, self.blocks, self.sources)

    def __call__(self, si: int, tid: int,
                 last_ok: Callable[[tuple, Optional[tuple]], bool]) -> list[tuple]:
        lib, prog = self.lib, self.prog
        if not self.sources and self.dead is None:
            steps = _path(lib, prog, si) + ([prog.steps[tid]] if tid >= 0 else [])
            return _real(self.enc, self.groups, self.blocks, steps)
        ids = [si]
        while ids[-1] > 0:
            ids.append(lib.pp_parent(ids[-1]))
        ids.reverse()
        buf = self.ffi.new("int32_t[]", prog.nkeys)
        runner = ConcreteRunner(self.enc.sys)
        flat = runner.initial
        out: list[tuple] = []
        for j, v in enumerate(ids[1:], 1):
            lib.pp_state(v, buf)
            want = list(buf)
            for step, nxt, viol in runner.successors(flat):
                if viol is None and self.rep(self.enc.encode_concrete(nxt)[0]) == want:
                    out.append(step)
                    flat = nxt
                    break
            else:
                raise InternalError(f"step {j} of the native run has no step of the real "
                                    "state with the same representative")
        if tid >= 0:
            step = next((st for st, nxt, viol in runner.successors(flat)
                         if last_ok(nxt, viol)), None)
            if step is None:
                raise InternalError("the last step of the native run has no counterpart "
                                    "in the real state")
            out.append(step)
        return out


def _real(enc: Encoding, groups: list[list[int]], blocks: list[list[list[int]]],
          steps: list[tuple]) -> list[tuple]:
    """Steps of canonical states (naming warps by their canonical positions) as steps of
    the unreduced system (naming the real warps): the run is re-executed on the concrete
    model, and after every step each group's canonical order (``canon_order``) of the
    real state says which real warp sits at which position.  TMA/CLC items name their
    issuing warp, which is in no group (``symmetric_groups``)."""
    if not groups:
        return list(steps)
    runner = ConcreteRunner(enc.sys)
    nag = len(enc.sys.agents)

    def positions(flat: tuple) -> list[int]:
        vals, _ = enc.encode_concrete(flat)
        who = list(range(nag))
        for g, bl in zip(groups, blocks):
            for j, src in enumerate(canon_order(vals, bl)):
                who[g[j]] = g[src]
        return who

    flat = runner.initial
    who = positions(flat)
    out = []
    for i, step in enumerate(steps):
        if step[0] == "a":
            real = ("a", who[step[1]], step[2])
        elif step[1][0] == "tma":
            real = step
        else:
            item = step[1]
            real = ("e", (item[0], who[item[1]]) + tuple(item[2:]))
        out.append(real)
        if i + 1 < len(steps):
            r = runner.step(flat, real)
            if r is None:
                raise InternalError(f"step {i + 1} of the native run ({real}) is not enabled "
                                    "in the concrete model")
            flat = r[0]
            who = positions(flat)
    return out


def _answer(system: System, enc: Encoding, prog: Program, ffi: Any, lib: Any, st: int,
            max_states: int, timeout: float, stats: Stats, t0: float,
            real: "_Real", reduced: bool = False, safe: bool = False) -> Verdict:
    stats.states = lib.pp_nstates()
    stats.transitions = lib.pp_ntrans()
    stats.depth = max_depth = lib.pp_maxdepth()
    if st == ST_NOMEM:
        return _finish(Verdict(UNKNOWN, reason=f"out of memory after {stats.states} states "
                               f"(explored to depth {max_depth})", depth=max_depth), stats, t0)
    if st in (ST_LIMIT, ST_TIMEOUT):
        d = lib.pp_cur_depth()  # the depth being expanded when it stopped
        # the safe-step reduction does not explore every run: no claim about them
        note = (f"; no violation or deadlock in any run of up to {d - 1} steps (every one "
                "explored; starvation not checked)") if d >= 2 and not reduced else ""
        if st == ST_LIMIT:
            why = state_limit_reason(max_states, max_depth, note)
        else:
            why = (f"timeout after {timeout:.0f} s with {stats.states} states explored to "
                   f"depth {max_depth}{note}")
        return _finish(Verdict(UNKNOWN, reason=why, depth=max_depth), stats, t0)
    if st == ST_FOUND:
        n = lib.pp_ncand()
        c = lib.pp_cands()
        cands = [(c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]) for i in range(n)]
        length, rank, si, tid = min(cands, key=lambda f: (f[0], f[1]))
        return _finish(_counterexample(system, lib, prog, rank, si, tid, real), stats, t0)
    if safe and lib.pp_acyclic() != 1:
        return _finish(Verdict(UNKNOWN, reason="the safe-step reduction's graph has a cycle "
                               "(or no memory to check it): no proof from it",
                               depth=max_depth), stats, t0)
    if not enc.acyclic:
        v = _starvation(system, prog, ffi, lib)
        if v is not None:
            stats.extra.update(v.stats.extra)
            return _finish(v, stats, t0)
    return _finish(Verdict(PROVEN, depth=max_depth, bounded=False), stats, t0)


def _counterexample(system: System, lib: Any, prog: Program, rank: int, si: int,
                    tid: int, real: "_Real") -> Verdict:
    """The candidate as the explicit engine reports it, after the concrete model agreed."""
    runner = ConcreteRunner(system)
    ex = Explorer(system, symmetry=False)
    prop = ALL_PROPERTIES[rank] if rank < len(ALL_PROPERTIES) else None
    steps = real(si, tid, lambda nxt, viol: viol is not None and viol[0] == prop)
    if tid < 0:  # a deadlock: the last state has no step and some warp has not exited
        states, _ = runner.run(steps)
        last = states[-1]
        if any(True for _ in runner.successors(last)) or runner.all_done(last):
            raise InternalError("the native engine's deadlock state is not one in the "
                                "concrete model")
        try:
            trace = ex.replay(steps, None, stuck_state=ex.packer.pack(list(last)))
        except RuntimeError as e:
            raise InternalError(f"replay of the native counterexample failed: {e}") from e
        trace.violated, trace.detail = "deadlock", DEADLOCK_MSG
        return Verdict(VIOLATED, "deadlock", trace.detail or DEADLOCK_MSG, trace,
                       depth=len(steps))
    _states, viol = runner.run(steps)
    if viol is None or (prop is not None and viol[0] != prop):
        raise InternalError(f"the native engine's last step violates {prop}, the concrete "
                            f"model says {viol and viol[0]}")
    try:
        trace = ex.replay(steps, viol)
    except RuntimeError as e:
        raise InternalError(f"replay of the native counterexample failed: {e}") from e
    return Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace, depth=len(steps))


def _starvation(system: System, prog: Program, ffi: Any, lib: Any) -> Optional[Verdict]:
    """The explicit engine's starvation analysis (``explicit._find_starvation``) over the
    native engine's reachable graph."""
    n = lib.pp_nstates()
    ne = lib.pp_nedges()
    e = ffi.unpack(lib.pp_edges(), 3 * ne) if ne else []
    succ: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
    first_tid: dict[tuple, int] = {}
    for j in range(ne):
        s, t, tid = e[3 * j], e[3 * j + 1], e[3 * j + 2]
        step = prog.steps[tid]
        actor = ("a", step[1]) if step[0] == "a" else ("e", step[1])
        succ[s].append((t, actor))
        first_tid.setdefault((s, t, actor), tid)
    nag = len(system.agents)
    buf = ffi.new("int32_t[]", prog.nkeys)
    pcs: list[tuple] = []
    for v in range(n):
        lib.pp_state(v, buf)
        pcs.append(tuple(buf[k] for k in prog.pc_keys))
    enabled = [{a for _t, a in succ[v]} for v in range(n)]
    best = starving_component(nag, lambda v, w: pcs[v][w],
                              [set(poll_pcs(system, a)) for a in range(nag)], succ, enabled)
    if best is None:
        return None
    entry = best[0]
    steps = _path(lib, prog, entry)
    cycle = [prog.steps[first_tid[edge]] for edge in fair_cycle(succ, enabled, best, nag)]
    return report_lasso(system, ConcreteRunner(system), steps + cycle, len(steps))


__all__ = ["check_native", "NativeUnavailable"]
