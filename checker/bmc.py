"""Bounded model checking with z3 over the symbolic transition relation.

The transition relation is the one ``checker/symbolic.py`` obtains by running the
model's own transition functions over z3 terms (ARCHITECTURE.md: one semantics, several
interpreters).  Steps have exactly the explicit engine's granularity: one warp step (a
synchronisation instruction with its ghost effects and the local control flow after it)
or one step of an environment agent (a TMA/CLC delivery, a tcgen05 commit, a cp.async
completion, a bulk-store step).  A level of the unrolling is either one step
(``steps="single"``, ``Unrolling``) or, by default, a *chain*: every actor once, in a
fixed order, each optionally, in a normal form of independent steps
(``checker/chain.py``, ``ChainUnrolling``): runs of 59 steps end within 23 levels, so
PROVEN comes within reach.  A chain counterexample is shortened and then confirmed (or
replaced) by the single-step search bounded to its length (``_confirm``).

Deepening is incremental on one solver.  At level ``k`` (states reachable in ``k``
steps, every step so far free of violations) it asks, under an assumption literal:

* deadlock: a level-``k`` state in which some warp has not exited and nothing is
  enabled (a counterexample of ``k`` steps), else
* violation: an enabled step from a level-``k`` state that fails a check of the
  property catalogue, or overflows a queue encoding (``k + 1`` steps),
* alive: some level-``k`` state has a warp that has not exited.  If none has, every run
  ended within ``k`` steps and the verdict is PROVEN (exhaustive).

Then the step ``k -> k + 1`` is asserted for good.  The first level with a problem gives
a shortest counterexample, as the explicit engine's breadth-first search does.  Every
counterexample is replayed through the concrete model first (``ConcreteRunner``; then
``Explorer.replay`` builds the ``Trace``); a mismatch raises ``InternalError`` and is never
a verdict.  A queue overflow is not a verdict either: the capacities grow and the
search restarts (``max_cap`` bounds this; past it the result is UNKNOWN).

Every level's state is also constrained by an invariant proven before the search.  If
the enumeration of the reachable states (unreduced but for warp symmetry) finishes
(``ENUMERATE_SECONDS``), that set -- closed under permuting interchangeable warps -- is
the invariant, certified closed under the encoding's good steps
(``checker/certificate.py``); when no state of it violates or deadlocks, that is the
proof (PROVEN, or for warps that loop for ever, safety at every depth before the
starvation search) and nothing is unrolled.  When some state of it has a problem, a
breadth-first search of the encoding's own steps (compiled terms, ``checker/evalgraph.py``)
from the initial state gives the shortest counterexample -- every reachable state is in
the certified set, so no shorter one exists -- and again nothing is unrolled (it is
replayed through the concrete model like every other).  Where the enumeration does not
finish or is too large and every warp's program ends, a *reduced* certificate may still
prove the kernel: the states reached following one warp's step alone wherever z3 proves
that step persistent (``checker/safesteps.py``, ``certificate.certify_reduced``; only a
proof: with problems it is dropped, as the reduction does not keep counterexamples
shortest).  Otherwise the invariant comes from
``checker/invariants.py`` (candidates from sampled states, kept only if z3 shows them
inductive).  Either holds in every state the unrolling can reach, so it removes no run;
it spares the solver the unreachable ones.

Liveness (starvation lassos) is in ``checker/liveness.py`` and runs on the same
unrolling after the safety levels.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import z3
from ..model.program import is_acyclic
from ..model.system import System
# modules, not names, where tests replace a function (``monkeypatch.setattr``)
from . import certificate as certificates
from . import liveness
from .certificate import MAX_STATES, certify, certify_reduced
from .chain import ChainUnrolling
from .concrete import ConcreteRunner, first_violation
from .errors import InternalError, SetupTimeout, Timeout
from .invariants import find_invariants
from .lasso import report_lasso
from .properties import DEADLOCK, DEADLOCK_MSG, PRIORITY
from .shorten import SHORTEN_TIMEOUT, shorten
from .statespace import symmetric_groups
from .symbolic import Encoding, same_shape, sample_ranges, solver_ms
from .tracebuild import build_trace
from .unrolling import Unrolling, make_solver
from .verdict import PROVEN, SAFE, UNKNOWN, VIOLATED, Stats, Verdict

__all__ = ["DEFAULT_DEPTH", "BmcOptions", "ConcreteRunner", "InternalError", "Timeout",
           "Unrolling", "check_bmc", "first_violation", "make_solver", "prove_certificate",
           "prove_invariants", "prove_reduced_certificate", "write_smt2"]

DEFAULT_DEPTH = 60
#: ``check_bmc(steps=...)``: a level is a chain of steps or one step; ``auto`` (default):
#: chains where every warp's program ends, single steps where some loop
STEP_MODES = ("auto", "chain", "single")
#: seconds the single-step search may take to confirm a chain counterexample is shortest
CONFIRM_TIMEOUT = 20.0
#: at most this many seconds (and a quarter of the time left) go to the commutation
#: queries of the chain's normal form; pairs not asked by then count as dependent
DEPENDENCE_BUDGET = 20.0
#: at most this many seconds (and a fifth of the time left) go to finding invariants
INVARIANT_BUDGET = 10.0
#: seconds (at most a fifth of the timeout) for the enumeration, unreduced but for warp
#: symmetry, whose state set, if it finishes, is certified as an inductive invariant
#: (``checker/certificate.py``; pipeline_umma_async: 53,957 classes in 4.3 s)
ENUMERATE_SECONDS = 6.0
#: at most this many seconds (and half of the time left) for the certificate: where an
#: enumeration finished, its proof is the best use of the time (the unrolling of those
#: examples stops tens of levels short of the end of their runs)
CERTIFICATE_BUDGET = 30.0
#: at most this many seconds (and a third of the time left) for the reduced certificate
#: (``certificate.certify_reduced``), tried where the unreduced enumeration did not
#: finish or was too large (p9-fixed: 54,225 states instead of 1,554,128, proven in
#: 6 s); where it does not decide, the time is lost to the unrolling (K2: 9 s to more
#: than 100,000 states; K1's 32 warps: fewer than 1,500 states a second)
REDUCED_BUDGET = 60.0
#: a certificate with problems constrains every level only up to this many states: the
#: larger ones slow the levels down (p4-bug, 53,135 states: 30 s to its counterexample
#: against 16 s with the proven invariants; x2-bug, 181 states: 2.9 s against 8.1 s)
LEVEL_INVARIANT_STATES = 20_000


# --------------------------------------------------------------------------- the engine


@dataclass
class BmcOptions:
    depth: int = DEFAULT_DEPTH
    timeout: float = 600.0
    max_cap: int = 64
    liveness: bool = True
    smt2: Optional[str] = None
    progress: Optional[Callable[[int, int, float], None]] = None
    steps: str = "auto"
    certificate: bool = True
    #: decide only from the certificate (``checker/portfolio.py``): UNKNOWN, without
    #: unrolling, where it does not decide
    certificate_only: bool = False
    #: False: no phase gets a wall-clock share of its own (``check_bmc``)
    phase_budgets: bool = True


@dataclass
class _Run:
    t0: float
    deadline: float
    checks: int = 0
    restarts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: the certificate that decided safety (``checker/certificate.py``), if one did
    certified: Any = None


def _n(k: int, word: str) -> str:
    """``k word`` with the plural where it needs one ("1 level", "9 levels")."""
    return f"{k} {word}" + ("" if k == 1 else "s")


class _Overflow(Exception):
    def __init__(self, caps: dict[int, int], ranges: dict[str, tuple[int, int]]):
        self.caps = caps
        self.ranges = ranges


def check_bmc(system: System, depth: int = DEFAULT_DEPTH, timeout: float = 600.0,
              progress: Optional[Callable[[int, int, float], None]] = None,
              smt2: Optional[str] = None, liveness: bool = True,
              max_cap: int = 64, steps: str = "auto",
              confirm_timeout: float = CONFIRM_TIMEOUT, certificate: bool = True,
              certificate_only: bool = False,
              max_states: Optional[int] = None, phase_budgets: Optional[bool] = None,
              on_found: Optional[Callable[[Verdict], None]] = None) -> Verdict:
    """Check every safety property and deadlock up to ``depth`` levels (and starvation
    lassos for non-terminating warps); see the module docstring.

    ``steps="chain"``: a level is a chain of steps in normal form
    (``checker/chain.py``); a counterexample it finds is then shortened and confirmed
    (or replaced) by the single-step search bounded to its length, for at most
    ``confirm_timeout`` seconds.  ``steps="single"``: one step per level.
    ``steps="auto"`` (default): chains when every warp's program ends (acyclic), where
    they bring PROVEN within reach; single steps when some warp loops for ever, where
    no depth ends every run and the starvation lassos are single-step runs anyway
    (measured: persistent_consumer_stops_releasing's lasso in 22 s with single steps,
    none within 30 s after 49 levels of chains).

    ``certificate``: first enumerate the reachable states, unreduced but for warp
    symmetry (at most ``ENUMERATE_SECONDS``), and, if that finishes, certify the set as an inductive
    invariant (``checker/certificate.py``): PROVEN at once when no state of it violates
    or deadlocks, else the invariant of every level.  ``certificate_only``: return
    UNKNOWN (saying why) where the certificate does not decide, without unrolling.
    ``max_states``: a lower bound than ``certificate.MAX_STATES`` on the enumeration.

    ``phase_budgets=False``: the phases that decide a verdict get no wall-clock share of
    their own -- the enumeration is bounded by ``max_states`` only, the certificate and
    the reduced certificate by the overall deadline only -- so a slower machine changes
    when the answer comes, not which one (tests; ``timeout`` still ends the run, with
    UNKNOWN).  The default shares suit the command line: a slow phase leaves time to
    the next.  Either way running out of time only ever gives UNKNOWN.  ``None``
    (default): on, unless the environment sets ``PIPEPROOF_PHASE_BUDGETS=0``.

    ``on_found``: called with a chain counterexample (shortened) before the single-step
    search confirms it is shortest (``explicit.check_explicit`` says how);
    ``confirm_timeout=0`` skips that search."""
    if steps not in STEP_MODES:
        raise ValueError(f"steps must be one of {', '.join(STEP_MODES)}, not {steps!r}")
    if phase_budgets is None:
        # the test suite turns the shares off (tests/conftest.py): a loaded machine must
        # change when an answer comes, never which one
        phase_budgets = os.environ.get("PIPEPROOF_PHASE_BUDGETS", "1") != "0"
    if steps == "auto":
        acyclic = all(is_acyclic(ag.program.code) for ag in system.agents)
        steps = "chain" if acyclic else "single"
    opts = BmcOptions(depth, timeout, max_cap, liveness, smt2, progress, steps,
                      certificate or certificate_only, certificate_only, phase_budgets)
    t0 = time.perf_counter()
    run = _Run(t0, t0 + timeout)
    runner = ConcreteRunner(system)
    if opts.certificate:
        exact = min(ENUMERATE_SECONDS, 0.2 * timeout) if phase_budgets else timeout
        cap = MAX_STATES if max_states is None else min(MAX_STATES, max_states)
        # the reduced sampling after an unfinished enumeration is for the unrolling (its
        # ranges: they decide how soon the encoding fits, never a verdict)
        sample = sample_ranges(system, max_states=cap, seconds=exact,
                               exact_seconds=exact,
                               reduced_seconds=0.0 if certificate_only else 1.2)
        if certificate_only and sample.reachable is None:
            v = _undecided(f"no certificate: the unreduced enumeration did not finish "
                           f"(in {exact:.0f} s, within {cap:,} states)")
            return _finish(v, run, None)
    else:
        sample = sample_ranges(system, **({} if max_states is None
                                          else {"max_states": max_states}))
    run.extra["sampled_states"] = sample.states
    run.extra["bmc_steps"] = steps
    v, u, k, enc = _solve(system, runner, sample, opts, run)
    written = None
    if opts.smt2 and run.certified is not None:
        certificates.write_smt2(run.certified, opts.smt2)
        written = "certificate"
    elif opts.smt2 and u is not None:
        write_smt2(u, k, opts.smt2)
        written = "unrolling"
    if (steps == "chain" and v.status == VIOLATED and v.prop != "starvation"
            and run.extra.get("counterexample_from") != "certificate"):
        v = _confirm(system, runner, sample, opts, run, v, confirm_timeout, on_found)
    if written:
        run.extra["smt2_expect"] = _smt2_expect(written, v)
    return _finish(v, run, enc)


def _smt2_expect(written: str, v: Verdict) -> str:
    """The answer the ``--smt2`` query gives if the verdict is right
    (``proofs/recheck.py``).  A certificate's obligations are ``unsat`` whatever the
    verdict (with a problem state the set is still inductive; the counterexample is
    replayed besides).  The unrolling's query asks for a violation or deadlock: ``sat``
    for such a counterexample, ``unsat`` for SAFE or PROVEN; a starvation lasso is not
    in it, and an undecided search claims nothing ("none")."""
    if written == "certificate":
        return "unsat"
    if v.status == VIOLATED:
        return "none" if v.prop == "starvation" else "sat"
    return "unsat" if v.status in (SAFE, PROVEN) else "none"


def _solve(system: System, runner: ConcreteRunner, sample: Any, opts: BmcOptions,
           run: _Run) -> tuple[Verdict, Optional["Unrolling"], int, Encoding]:
    """``_search`` on an encoding that grows (queue capacities, value ranges) whenever a
    counterexample leaves it."""
    caps: dict[int, int] = {}
    ranges: dict[str, tuple[int, int]] = {}
    while True:
        try:
            enc = Encoding(system, caps, ranges, sample, deadline=run.deadline)
        except SetupTimeout as e:
            return (Verdict(UNKNOWN, reason=f"timeout after {opts.timeout:.0f} s while "
                            f"building {e}; no level finished", depth=0), None, 0,
                    None)
        try:
            v, u, k = _search(system, enc, runner, opts, run, sample)
        except _Overflow as o:
            run.restarts += 1
            if any(c > opts.max_cap for c in o.caps.values()):
                v = Verdict(UNKNOWN, reason="an asynchronous-work queue needs more than "
                            f"{opts.max_cap} entries in the symbolic encoding", depth=0)
                return v, None, 0, enc
            caps.update(o.caps)
            # widen the twins of a key found too small too (same name up to its CTA,
            # warp and stage indices): they tend to overflow one restart later
            grown = {same_shape(n): r for n, r in o.ranges.items()}
            for name in enc.key_names:
                r = grown.get(same_shape(name))
                if r is None:
                    continue
                old = ranges.get(name, r)
                ranges[name] = (min(old[0], r[0]), max(old[1], r[1]))
            continue
        return v, u, k, enc


def _confirm(system: System, runner: ConcreteRunner, sample: Any, opts: BmcOptions,
             run: _Run, v: Verdict, confirm_timeout: float,
             on_found: Optional[Callable[[Verdict], None]] = None) -> Verdict:
    """A chain counterexample of ``n`` steps is a real run but maybe not a shortest one.
    Drop the steps it does not need (``checker.shorten.shorten``), then search single
    steps to its length: the first level with a problem gives the shortest
    counterexample and, among those, the property first in the catalogue -- the explicit
    engine's answer.  If that search runs out of time the shortened counterexample is
    reported with ``stats.extra["shortest"] = False``."""
    t_conf = time.perf_counter()
    chain_len = v.depth
    steps = v.stats.extra.get("steps")
    if steps and v.prop:
        left = max(run.deadline - t_conf, 1.0)
        w = shorten(system, steps, v.prop, t_conf + min(SHORTEN_TIMEOUT, left))
        if w is not None:
            w.stats.extra["steps"] = w.trace.steps if w.trace is not None else None
            v = w
    run.extra["chain_length"] = chain_len
    if confirm_timeout <= 0:
        run.extra["shortest"] = False
        run.extra["confirm_skipped"] = True
        return v
    budget = min(max(run.deadline - time.perf_counter(), 1.0), confirm_timeout)
    if on_found is not None:
        shown = _finish(Verdict(v.status, v.prop, v.reason, v.trace,
                                Stats(extra=dict(v.stats.extra)), depth=v.depth), run, None)
        shown.stats.extra["confirming"] = round(budget, 1)
        on_found(shown)
    sub = _Run(time.perf_counter(), time.perf_counter() + budget)
    shown_len = v.depth
    progress = (None if opts.progress is None else
                lambda L, D, t, _p=opts.progress: _p(L, shown_len, t, confirm=shown_len))
    single = BmcOptions(v.depth, budget, opts.max_cap, False, None, progress, "single")
    w, _, _, _ = _solve(system, runner, sample, single, sub)
    run.checks += sub.checks
    run.restarts += sub.restarts
    run.extra["confirm_seconds"] = round(time.perf_counter() - t_conf, 2)
    if w.status == VIOLATED:
        if w.depth > v.depth:
            raise InternalError(f"the single-step search found {w.depth} steps, more than "
                                f"the chain counterexample's {v.depth}")
        run.extra["shortest"] = True
        # one of the same length and property: the one found (perhaps shown) stays
        return v if (w.depth, w.prop) == (v.depth, v.prop) else w
    if w.status in (SAFE, PROVEN):
        raise InternalError(f"the single-step search says {w.status} to depth {w.depth}, "
                            f"but a chain counterexample of {v.depth} steps replays")
    run.extra["shortest"] = False
    run.extra["confirm_depth"] = w.depth
    return v


def _finish(v: Verdict, run: _Run, enc: Optional[Encoding]) -> Verdict:
    st = Stats(engine="bmc")
    st.depth = v.depth
    st.seconds = time.perf_counter() - run.t0
    st.extra.update(v.stats.extra)
    if enc is not None:
        st.extra.update({"transitions_templates": len(enc.transitions),
                         "state_keys": enc.nkeys, "state_bits": sum(enc.width)})
    st.extra.update({"solver_checks": run.checks, "restarts": run.restarts, **run.extra})
    v.stats = st
    return v


def _check(solver: z3.Solver, run: _Run, depth: int, *assumptions: Any) -> Any:
    left = run.deadline - time.perf_counter()
    if left <= 0:
        raise Timeout(depth)
    solver.set("timeout", solver_ms(left))
    run.checks += 1
    r = solver.check(*assumptions)
    if r == z3.unknown:
        raise Timeout(depth)
    return r


def _search(system: System, enc: Encoding, runner: ConcreteRunner, opts: BmcOptions,
            run: _Run, sample: Any) -> tuple[Verdict, "Unrolling", int]:
    """The level loop; returns the verdict, the unrolling and the depth of its query."""
    solver = make_solver()
    if _past(run):
        return _timed_out(opts), None, 0
    cert = _certificate(enc, sample, run, opts)
    if cert is not None and cert.problem_free:
        # no reachable state violates or deadlocks (checker/certificate.py)
        run.certified = cert
        if enc.acyclic or not opts.liveness:
            return Verdict(PROVEN, depth=0, bounded=False), Unrolling(enc, solver), 0
        # warps that loop for ever: starvation decided on the certified state graph when
        # there is one (no symmetry reduction); a starving cycle there is then found and
        # shown by the lasso search below
        free = cert.starvation_free(enc)
        if free is not None:
            run.extra["starvation_free"] = free
        if free:
            return Verdict(PROVEN, depth=0, bounded=False), Unrolling(enc, solver), 0
        if free is False:
            # the graph's starving cycle, as a lasso of any length (no depth bound)
            lasso = cert.starving_lasso(enc)
            if lasso is not None:
                v = report_lasso(system, runner, *lasso)
                run.extra["counterexample_from"] = "certificate"
                return v, Unrolling(enc, solver), v.depth
        if free is None and opts.certificate_only:
            return _undecided("safety certified at every depth; starvation is not decided "
                              "on a certificate reduced by warp symmetry"), None, 0
        if opts.certificate_only:
            # the graph has a starving cycle; the lasso search shows one, but a long one
            # may take long: the explicit engine (checker/portfolio.py) gets the rest
            run.deadline = min(run.deadline, time.perf_counter() + 0.25 * opts.timeout)
        u0 = Unrolling(enc, solver, inv=cert.term)
        return _lassos(system, enc, u0, runner, opts, run, opts.depth, safe_unbounded=True)
    if cert is not None and cert.search is not None:
        # some certified state has a problem: the shortest counterexample is a
        # breadth-first search of the encoding's own (compiled) steps away
        v = _certified_counterexample(system, enc, cert, runner, run)
        if v is not None:
            u = Unrolling(enc, solver)
            if opts.smt2:  # the --smt2 query: the single-step unrolling to its length
                for k in range(v.depth):
                    u.assert_step(k)
            return v, u, v.depth
    if opts.certificate_only:
        why = (run.extra.get("certificate", {}).get("note") if cert is None else
               "the shortest problem of the certified states leaves the encoding")
        return _undecided(f"no certificate: {why}" if cert is None else why), None, 0
    # each set-up phase below takes seconds on a large kernel and none of them can stop
    # half-way: one that would start past the deadline is not started (--timeout holds
    # to within one phase; issue 23 item 2, found by bench/fuzz_pipe.py)
    if _past(run):
        return _timed_out(opts), None, 0
    inv = _level_invariant(enc, sample, run, cert, opts.phase_budgets)
    if _past(run):
        return _timed_out(opts), None, 0
    if opts.steps == "chain":
        left = run.deadline - time.perf_counter()
        u = ChainUnrolling(enc, solver, budget=min(DEPENDENCE_BUDGET, 0.25 * left), inv=inv)
        run.extra["dependence"] = dict(u.dep_stats)
        run.extra["chain_slots"] = len(u.order)
    else:
        u = Unrolling(enc, solver, inv=inv)
    u.deadline = run.deadline
    reached = 0
    try:
        for L in range(opts.depth + 1):
            if opts.progress is not None:
                opts.progress(L, opts.depth, time.perf_counter() - run.t0)
            # counterexamples of exactly L steps: a violating step from level L - 1 (or a
            # good step that leaves the encoding), or a deadlock at level L
            # the good step L - 1 -> L only under ``stepped``: the violation query below
            # asks for a bad step from level L - 1, which must not need a good one too
            stepped = u.literal("step") if L > 0 else z3.BoolVal(True)
            if L > 0:
                u.assert_step(L - 1, guard=stepped)
            dead_L = z3.And(stepped, z3.Not(u.at(u.T_ENABLED, L)),
                            z3.Not(u.at(u.T_DONE, L)))
            bad_L = u.at(u.T_BAD, L - 1, bad=True) if L > 0 else z3.BoolVal(False)
            prob = u.literal("problem")
            solver.add(z3.Implies(prob, z3.Or(dead_L, bad_L)))
            if _check(solver, run, L, prob) == z3.sat:
                return _classify(system, enc, u, runner, run, L, dead_L), u, L
            solver.add(stepped)  # no counterexample of L steps: level L is reached for good
            alive = u.literal("alive")
            # a state where every warp has exited but an asynchronous operation can still
            # complete is not final either (its steps are asked at the next level)
            solver.add(z3.Implies(alive, z3.Or(z3.Not(u.at(u.T_DONE, L)),
                                               u.at(u.T_ENABLED, L))))
            if _check(solver, run, L, alive) == z3.unsat:
                # every run has ended within L steps, none of them violating
                return Verdict(PROVEN, depth=L, bounded=False), u, L
            reached = L
    except Timeout as t:
        d = max(0, t.depth - 1)
        if d == 0:
            within = "no level finished"
        elif opts.steps == "chain":
            within = (f"no counterexample within {_n(d, 'level')} of chained steps (every "
                      f"run of up to {_n(d, 'step')}, and longer ones)")
        else:
            within = f"no counterexample of up to {_n(d, 'step')}"
        return Verdict(UNKNOWN, reason=f"timeout after {opts.timeout:.0f} s; {within}",
                       depth=d), u, d
    if opts.liveness and not enc.acyclic:
        # lassos are sought over single steps (fairness is a property of interleaved
        # runs); in chain mode on an unrolling of their own, asserted as it goes
        lu = u if opts.steps == "single" else Unrolling(enc, make_solver(), inv=inv)
        return _lassos(system, enc, lu, runner, opts, run, reached)
    return Verdict(SAFE, depth=reached, bounded=True), u, reached


def _past(run: _Run) -> bool:
    return time.perf_counter() > run.deadline


def _timed_out(opts: BmcOptions) -> Verdict:
    return Verdict(UNKNOWN, reason=f"timeout after {opts.timeout:.0f} s; no level finished",
                   depth=0)


def _undecided(why: str) -> Verdict:
    """The certificate-only answer where the certificate does not decide."""
    return Verdict(UNKNOWN, reason=why, depth=0)


def _lassos(system: System, enc: Encoding, lu: Unrolling, runner: ConcreteRunner,
            opts: BmcOptions, run: _Run, reached: int,
            safe_unbounded: bool = False) -> tuple[Verdict, "Unrolling", int]:
    """The starvation search after the safety levels (``checker/liveness.py``).  With
    ``safe_unbounded`` (a certificate showed no reachable state violates or deadlocks)
    the SAFE verdict's bound is the lasso search's depth, and it says so."""
    what = ("no violation or deadlock at any depth (certified invariant)" if safe_unbounded
            else f"safe to depth {reached}")
    done: list[int] = []
    try:
        lv = liveness.find_lasso(system, lu, runner, opts.depth,
                        lambda *a: _check(lu.solver, run, opts.depth, *a), done)
    except Timeout:
        k = done[-1] if done else 0
        if safe_unbounded:
            reached = k
        secs = time.perf_counter() - run.t0
        return Verdict(UNKNOWN, reason=f"timeout after {secs:.0f} s: {what}; "
                       f"no starvation lasso of up to {k} steps, search unfinished",
                       depth=reached), lu, reached
    if lv is not None:
        return lv, lu, reached
    if safe_unbounded:
        run.extra["safety_unbounded"] = True
        reached = opts.depth
    return Verdict(SAFE, depth=reached, bounded=True), lu, reached


def prove_invariants(enc: Encoding, sample: Any, seconds: float) -> Any:
    """The proven invariant of ``enc`` (``checker/invariants.py``: candidates from the
    sampled states, Houdini under the encoding's good steps), computed once per encoding
    shape and kept on ``sample`` (the confirmation search of a chain counterexample, on
    an encoding of the same shape, reuses it)."""
    key = (tuple(enc.key_names), tuple(enc.key_range), tuple(sorted(enc.caps.items())))
    inv = sample.invariants.get(key)
    if inv is None:
        u = Unrolling(enc, make_solver())
        Xn = [u.Xn.get(k, x) for k, x in enumerate(enc.X)]
        inv = find_invariants(enc, sample.kept, z3.And(u.T_GOOD, u.T_NEXT), Xn, seconds)
        sample.invariants[key] = inv
    return inv


def prove_certificate(enc: Encoding, sample: Any, seconds: float) -> tuple[Any, str]:
    """The certificate of ``sample.reachable`` for ``enc`` (``checker/certificate.py``)
    and why there is none; cached on ``sample`` per encoding shape like the invariants."""
    key = ("certificate", tuple(enc.key_names), tuple(enc.key_range),
           tuple(sorted(enc.caps.items())))
    got = sample.invariants.get(key)
    if got is None:
        u = Unrolling(enc, make_solver())
        t0 = time.perf_counter()
        cert, why = certify(u, sample.reachable, t0 + seconds, sample.symmetry)
        got = (cert, why, round(time.perf_counter() - t0, 2))
        if not why.endswith("ran out of time"):  # a later, longer try may finish
            sample.invariants[key] = got
    cert, why, secs = got
    return cert, why if cert is None else f"{secs}"


def prove_reduced_certificate(enc: Encoding, sample: Any, run: _Run,
                              share: bool = True) -> tuple[Any, str]:
    """The reduced certificate (``certificate.certify_reduced``: safe steps proven by
    z3) -- a proof only, None with problems -- and why there is none; cached on
    ``sample`` per encoding shape.  ``share``: at most ``REDUCED_BUDGET`` seconds and a
    third of the time left, else all of it."""
    key = ("reduced", tuple(enc.key_names), tuple(enc.key_range),
           tuple(sorted(enc.caps.items())))
    got = sample.invariants.get(key)
    if got is None:
        left = max(run.deadline - time.perf_counter(), 0.0)
        u = Unrolling(enc, make_solver())
        t0 = time.perf_counter()
        cert, why = certify_reduced(u, t0 + (min(REDUCED_BUDGET, left / 3) if share else left),
                                    symmetric_groups(enc.sys))
        got = (cert, why if cert is None else f"{round(time.perf_counter() - t0, 2)}")
        sample.invariants[key] = got
    return got


def _certificate(enc: Encoding, sample: Any, run: _Run, opts: BmcOptions) -> Any:
    """The certificate of the enumerated reachable set (``checker/certificate.py``), or
    None (why is recorded in the stats)."""
    if not opts.certificate:
        return None
    left = max(run.deadline - time.perf_counter(), 0.0)
    cert, why = prove_certificate(enc, sample, min(CERTIFICATE_BUDGET, 0.5 * left)
                                  if opts.phase_budgets else left)

    unfinished = sample.reachable is None or len(sample.reachable) > MAX_STATES
    if cert is None and unfinished and enc.acyclic and not opts.certificate_only:
        note = why
        if _past(run):
            run.extra["certificate"] = {"note": f"{note}; reduced: no time left"}
            return None
        cert, why = prove_reduced_certificate(enc, sample, run, opts.phase_budgets)
        if cert is None:
            run.extra["certificate"] = {"note": f"{note}; reduced: {why}"}
            return None
    if cert is None:
        run.extra["certificate"] = {"note": why}
        return None
    run.extra["certificate"] = {"states": cert.states, "seconds": float(why),
                                "symmetry": cert.stats.get("symmetry", []),
                                "problem_free": cert.problem_free}
    if cert.stats.get("closure") == "reduced":
        run.extra["certificate"]["reduced"] = {
            "safe_points": cert.stats["safe_steps"]["safe"],
            "safe_queries": cert.stats["safe_steps"]["asked"],
            "invariants": cert.stats["invariants"].get("proven", 0)}
    return cert


def _level_invariant(enc: Encoding, sample: Any, run: _Run, cert: Any,
                     budgeted: bool = True) -> Any:
    """The invariant asserted of every level: the certificate's set (built on demand)
    when it is small enough, else the proven invariants (``checker/invariants.py``;
    nothing Houdini finds is stronger than a certificate).  ``budgeted``: Houdini gets
    its share of the time left; without phase budgets, all of it (so what is proven does
    not depend on the machine's speed)."""
    if cert is not None:
        if cert.states <= LEVEL_INVARIANT_STATES:
            return cert.term
        run.extra["certificate"]["note"] = (
            f"{cert.states:,} states: too many to constrain every level; the proven "
            "invariants instead")
    left = max(run.deadline - time.perf_counter(), 0.0)
    inv = prove_invariants(enc, sample, min(INVARIANT_BUDGET, 0.2 * left) if budgeted else left)
    run.extra["invariants"] = dict(inv.stats)
    return inv.term


def _classify(system: System, enc: Encoding, u: Unrolling, runner: ConcreteRunner,
              run: _Run, L: int, dead_L: Any) -> Verdict:
    """Some counterexample of ``L`` steps exists: report the one the explicit engine
    reports -- the property first in the catalogue among those of length ``L`` -- after
    making sure the encoding was exact up to here (else grow it and restart)."""
    solver = u.solver
    if L > 0:
        q = u.literal("overflow")
        solver.add(z3.Implies(q, u.at(u.T_OVF, L - 1, bad=True)))
        if _check(solver, run, L, q) == z3.sat:
            _overflow(enc, u, runner, solver.model(), L)
    possible = u.props_possible() | {DEADLOCK}
    for prop in sorted(possible, key=lambda p: PRIORITY.get(p, 99)):
        if prop == DEADLOCK:
            term = dead_L
        elif L == 0:
            continue
        else:
            term = u.at(u.prop_term(prop), L - 1, bad=True)
        q = u.literal(prop)
        solver.add(z3.Implies(q, term))
        if _check(solver, run, L, q) == z3.sat:
            m = solver.model()
            if prop == DEADLOCK:
                return _deadlock(system, u, runner, m, L)
            return _violation(system, enc, u, runner, m, L, prop)
    # only an overflow of a violating step: the violation itself is still real
    raise InternalError(f"BMC found a problem of {L} steps but no property explains it")


def _certified_counterexample(system: System, enc: Encoding, cert: Any,
                              runner: ConcreteRunner, run: _Run) -> Optional[Verdict]:
    """The shortest counterexample of a certificate with problems
    (``evalgraph.shortest_problems``: breadth-first over the encoding's compiled steps
    from the initial state; every reachable state is in the certified set, so nothing
    shorter exists), the catalogue's first property among those of that length -- the
    explicit engine's answer.  Replayed through the concrete model like every BMC
    counterexample.  None (the unrolling takes over) past the deadline or when the
    shortest problem only leaves the encoding (then the encoding must grow)."""
    t = time.perf_counter()
    found = cert.search(run.deadline)
    run.extra["certificate_search_seconds"] = round(time.perf_counter() - t, 2)
    if not found:
        if found is not None:
            raise InternalError("the certificate has problem states but none is reachable "
                                "by the encoding's steps")
        return None
    if any(p.prop is None for p in found):
        return None
    best = min(found, key=lambda p: PRIORITY.get(p.prop, 99))
    steps = list(best.steps)
    if best.prop == DEADLOCK:
        v = _deadlock_steps(system, runner, steps)
    else:
        v = _violation_steps(system, runner, steps, best.prop)
    run.extra["shortest"] = True
    run.extra["counterexample_from"] = "certificate"
    return v


def _overflow(enc: Encoding, u: Unrolling, runner: ConcreteRunner, m: z3.ModelRef,
              L: int) -> None:
    steps = u.steps_from_model(m, L, bad_last=True)
    states, viol = runner.run(steps)
    grow: dict[int, int] = {}
    widen: dict[str, tuple[int, int]] = {}
    for st in states:
        bad, long = enc.out_of_range(st)
        for name, r in bad.items():
            old = widen.get(name, r)
            widen[name] = (min(old[0], r[0]), max(old[1], r[1]))
        for q, n in long.items():
            grow[q] = max(grow.get(q, 0), 2 * enc.caps[q], n, 1)
    if not grow and not widen:
        raise InternalError(f"BMC step {L} ({steps[-1]}) leaves the encoding only "
                            "symbolically")
    raise _Overflow(grow, widen)


def _deadlock(system: System, u: Unrolling, runner: ConcreteRunner, m: z3.ModelRef,
              L: int) -> Verdict:
    return _deadlock_steps(system, runner, u.steps_from_model(m, L))


def _deadlock_steps(system: System, runner: ConcreteRunner, steps: list[tuple]) -> Verdict:
    """The deadlock verdict of ``steps``, replayed through the concrete model."""
    states, viol = runner.run(steps)
    if viol is not None:
        raise InternalError(f"deadlock path violates {viol[0]} on the way")
    last = states[-1]
    if runner.all_done(last) or any(True for _ in runner.successors(last)):
        raise InternalError("the BMC deadlock state is not a deadlock in the concrete model")
    trace = build_trace(system, steps, None, stuck=last)
    trace.violated = DEADLOCK
    trace.detail = DEADLOCK_MSG
    v = Verdict(VIOLATED, DEADLOCK, trace.detail, trace, depth=len(steps))
    v.stats.extra["steps"] = steps
    return v


def _violation(system: System, enc: Encoding, u: Unrolling, runner: ConcreteRunner,
               m: z3.ModelRef, L: int, prop: str) -> Verdict:
    return _violation_steps(system, runner, u.steps_from_model(m, L, bad_last=True), prop)


def _violation_steps(system: System, runner: ConcreteRunner, steps: list[tuple],
                     prop: str) -> Verdict:
    """The verdict of ``steps`` whose last step should violate ``prop``, replayed
    through the concrete model (anything else is an internal error)."""
    states, viol = runner.run(steps)
    if viol is None or viol[0] != prop:
        raise InternalError(f"BMC step {len(steps)} ({steps[-1]}) should violate {prop}; "
                            f"the concrete model says {viol[0] if viol else 'nothing'}")
    trace = build_trace(system, steps, viol)
    v = Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace, depth=len(steps))
    v.stats.extra["steps"] = steps
    return v


def write_smt2(u: Unrolling, k: int, path: str) -> None:
    """One self-contained SMT-LIB 2 script (``--smt2``): the unrolled relation to ``k``
    levels (single steps, or chains in normal form) and the disjunction of every
    deadlock, violation and encoding-overflow query of up to ``k`` levels; ``sat`` means
    a counterexample exists, ``unsat`` that none within ``k`` levels does.  The steps
    include the proven invariant of each level's state (a lemma: it was shown inductive
    before the search, ``checker/invariants.py``)."""
    s = z3.Solver()
    goals = []
    # reached_j: the good steps 0 .. j-1 were taken (a run may stop at any level, so a
    # violation at level j never needs a good step after it)
    reached = [z3.BoolVal(True)] + [z3.Bool(f"reached@{j}") for j in range(1, k + 1)]
    for j in range(k + 1):
        if j < k:
            s.add(z3.Implies(reached[j + 1], z3.And(reached[j], u.step_terms[j])))
            goals.append(z3.And(reached[j], u.at(u.T_BAD, j, bad=True)))
        goals.append(z3.And(reached[j], z3.Not(u.at(u.T_ENABLED, j)),
                            z3.Not(u.at(u.T_DONE, j))))
    s.add(z3.Or(*goals))
    with open(path, "w") as f:
        f.write(f"; pipeproof BMC query ({type(u).__name__}): a counterexample within {k} levels "
                "(sat = a violation or deadlock exists)\n")
        if not z3.is_true(u.inv):
            f.write("; each level's state also satisfies the invariant that pipeproof "
                    "proved inductive before the search\n")
        f.write("(set-logic QF_BV)\n")
        f.write(s.sexpr())
        f.write("(check-sat)\n")