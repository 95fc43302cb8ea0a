"""Safe steps: program points where one warp's step cannot interact with anything any
other actor does, proven by z3 over the encoding's own transition templates.

``checker/certificate.py`` certifies an enumerated state set as an inductive invariant.
Unreduced, the sets of multi-CTA kernels are too large (p9-fixed: 1,554,128 classes of
symmetric states); following one warp's safe step alone wherever there is one (the
explicit engine's "safe steps", ``checker/por/`` ``Reducer.safe_step``) shrinks them
30-fold.  Here that reduction is not taken on trust: the program points it uses are
checked by z3 first, and ``certificate.certify_reduced`` checks the rest.

**Definition.**  A program point ``p`` of warp ``a`` is *safe* when, in every state ``x``
of the encoding where the proven invariant holds, for every transition ``t`` of ``a`` at
``p`` (either choice) and every transition ``u`` of every other actor (any program
counter, either choice, and the environment items):

1. if ``u`` and ``t`` are good in ``x`` (enabled, no check fails, within the encoding),
   ``t`` is good in ``u(x)``; and if ``u`` is good, some step of ``a`` is enabled and
   ``t`` is not, ``t`` is not enabled in ``u(x)`` either;
2. if ``t`` is good in ``x``: a good ``u`` is good in ``t(x)``, and a violating ``u``
   (enabled, a check fails or it leaves the encoding) still violates in ``t(x)``;
3. if both are good in ``x``: ``t(u(x)) = u(t(x))``.

**Lemma.**  Let ``s`` be a reachable state in which ``a`` is at a safe point, every
enabled step is good, and ``P``, ``a``'s enabled steps, is not empty.  Along any run
``w`` of other actors' good steps from ``s``, every step of ``P`` stays good (1) and no
other step of ``a`` becomes enabled (1), so ``a``'s first step in any run from ``s`` is
in ``P``; moved to the front of ``w`` it reaches the same state, and every step of ``w``
-- and a violating step after ``w`` -- keeps its outcome (2, 3).  ``P`` is a persistent
set (Godefroid, "Partial-order methods for the verification of concurrent systems",
1996, def. 4.1); the theorem it serves is in ``certificate.certify_reduced``.

Candidates come from the explicit engine's footprints (a guess; a wrong one is refused
here, never used).  Pairs whose keys do not meet (neither writes a key the other reads
or writes) satisfy 1-3 without a query; the others are asked of z3, one query per
candidate point and other actor, with a time limit: undecided counts as not safe.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import z3

from ..model.system import System
from .por import Reducer
from .symbolic import solver_ms


def footprint_candidates(system: System) -> dict[int, set[int]]:
    """Per warp, the program points whose step's footprint conflicts with nothing any
    other warp's program (or the asynchronous work it starts) may do
    (``por.Reducer.safe_point``)."""
    red = Reducer(system, None, full=False)
    out: dict[int, set[int]] = {}
    for a in range(len(system.agents)):
        for pc in range(len(system.code(a))):
            if red.safe_point(a, pc):
                out.setdefault(a, set()).add(pc)
    return out


class SafeSteps:
    """The z3 check of candidate safe points on an unrolling template ``u``
    (``unrolling.Unrolling``).  ``safe``: warp -> its proven safe program points;
    ``queries``: each proven (point, other actor) question as a formula that is unsat
    (for ``--smt2``); ``stats``: counts and seconds."""

    def __init__(self, u: Any, candidates: dict[int, set[int]], deadline: float,
                 inv: Any = None, query_ms: int = 2000):
        t0 = time.perf_counter()
        self.u = u
        #: a proven invariant over ``Encoding.X`` (``checker/invariants.py``): the
        #: states of the lemma are reachable, so only states where it holds are asked
        self.inv = z3.BoolVal(True) if inv is None else inv
        enc = u.enc
        trs = enc.transitions
        reads, writes = u.footprints()
        keys_r = {b: set().union(*(reads[i] for i in idx)) if idx else set()
                  for b, idx in u.by_actor.items()}
        keys_w = {b: set().union(*(writes[i] for i in idx)) if idx else set()
                  for b, idx in u.by_actor.items()}
        self.safe: dict[int, frozenset[int]] = {}
        self.queries: list[tuple[str, Any]] = []
        self.stats = {"candidates": sum(len(v) for v in candidates.values()), "asked": 0,
                      "static": 0, "refused": 0, "undecided": 0}
        rel_all: dict[int, Any] = {}
        for a, pcs in sorted(candidates.items()):
            proven = set()
            for p in sorted(pcs):
                idx = [i for i in u.by_actor.get(a, []) if trs[i].pc == p]
                if not idx:
                    continue  # no transition there (e.g. a local instruction)
                rt = set().union(*(reads[i] for i in idx))
                wt = set().union(*(writes[i] for i in idx))
                rel_t = None
                ok = True
                for b in u.by_actor:
                    if b == a:
                        continue
                    if not (wt & (keys_r[b] | keys_w[b]) or keys_w[b] & rt):
                        self.stats["static"] += 1
                        continue
                    if time.perf_counter() > deadline:
                        ok = False
                        self.stats["undecided"] += 1
                        break
                    if rel_t is None:
                        rel_t = u.relation(a, idx)
                    if b not in rel_all:
                        rel_all[b] = u.relation(b, u.by_actor[b])
                    q = self.query(rel_t, rel_all[b])
                    self.stats["asked"] += 1
                    r = _check(q, min(query_ms, solver_ms(deadline - time.perf_counter())))
                    if r is not True:
                        ok = False
                        self.stats["refused" if r is False else "undecided"] += 1
                        break
                    self.queries.append((f"safe step warp {a} pc {p} / actor {b}", q))
                if ok:
                    proven.add(p)
            if proven:
                self.safe[a] = frozenset(proven)
        self.stats["safe"] = sum(len(v) for v in self.safe.values())
        self.stats["seconds"] = round(time.perf_counter() - t0, 2)

    def query(self, rel_t: Any, rel_u: Any) -> Any:
        """Conditions 1-3 of the module docstring fail for some state and choices."""
        u = self.u
        X = list(u.enc.X)
        ct, cu = z3.Bool("safe.cht"), z3.Bool("safe.chu")
        gt, et, _, Xt = u.apply(rel_t, X, ct)
        gu, _, bu, Xu = u.apply(rel_u, X, cu)
        gt2, et2, _, Xtu = u.apply(rel_t, Xu, ct)  # t after u
        gu2, _, bu2, Xut = u.apply(rel_u, Xt, cu)  # u after t
        active = z3.Or(z3.substitute(rel_t.en, (u.CH, z3.BoolVal(True))),
                       z3.substitute(rel_t.en, (u.CH, z3.BoolVal(False))))
        keys = sorted(set(rel_t.nxt) | set(rel_u.nxt))
        differ = z3.Or(*[Xtu[k] != Xut[k] for k in keys]) if keys else z3.BoolVal(False)
        return z3.And(self.inv, z3.Or(
            z3.And(gu, gt, z3.Not(gt2)),                 # 1: u spoils t
            z3.And(gu, active, z3.Not(et), et2),          # 1: u enables another choice
            z3.And(gt, gu, z3.Not(gu2)),                 # 2: t spoils u
            z3.And(gt, bu, z3.Not(bu2)),                 # 2: t hides u's violation
            z3.And(gt, gu, differ)))                     # 3: they do not commute

    def enabled_term(self, a: int) -> Any:
        """Warp ``a`` is at one of its safe points with an enabled step (either
        choice), over ``Encoding.X``."""
        u = self.u
        trs = u.enc.transitions
        idx = [i for i in u.by_actor[a] if trs[i].pc in self.safe.get(a, ())]
        if not idx:
            return z3.BoolVal(False)
        en = u.relation(a, idx).en
        return z3.Or(z3.substitute(en, (u.CH, z3.BoolVal(True))),
                     z3.substitute(en, (u.CH, z3.BoolVal(False))))


def _check(q: Any, ms: int) -> Optional[bool]:
    """True when ``q`` is unsat (the pair is independent), False when sat, None when
    undecided."""
    if ms <= 0:
        return None
    s = z3.SolverFor("QF_BV")
    s.set("timeout", ms)
    s.add(q)
    r = s.check()
    return None if r == z3.unknown else r == z3.unsat
