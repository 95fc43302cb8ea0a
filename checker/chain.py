"""Chained steps for BMC: one unrolling level lets every actor take a step, in a fixed
order, in a normal form of independent steps.

The single-step unrolling of ``checker/bmc.py`` takes one transition per level, so a run
of ``n`` steps needs ``n`` levels, and PROVEN ("every run has ended") needs as many
levels as the longest run has steps (59 for pipeline_tma_async), while the solver's work
grows with the number of interleavings per level.  Here a level is a *chain*: a fixed
sequence of slots, one per actor (warps, then static environment items; ``REPEAT``
times), and in each slot the actor either stays put or takes one enabled, non-violating
step from the state the slots before it left (the "chained" or ∃-step semantics of
planning as satisfiability).  At least one actor moves per level.

**Normal form.**  Alone, chains would not shorten anything that matters: one actor per
level is still a chain run, so "no live state at level k" would still need ``k`` longer
than every run.  So chains are constrained to a normal form in the spirit of Foata's
for Mazurkiewicz traces: an actor moves in a slot only if some step it *depends* on
forces it past the actor's previous slot -- its own previous move, or a dependent step
between the two slots (in this chain, or back across the level boundary in the previous
one).  Otherwise the same step could have been taken in that earlier slot.

**Dependence** (``_dependence``) is computed, not assumed: two actors' steps at program
counters ``p`` and ``q`` are independent when, in *every* state of the encoding (not
only reachable ones), whenever one then the other can run, the other could run first and
then the one, reaching the same state -- or one of the swapped steps fails a check (a
violation the search reports from that state anyway).  Static footprints (keys read and
written) rule out most pairs; z3 decides the rest, one query per actor pair plus one per
dependent pc pair found (model enumeration); undecided or unasked pairs (past
``budget`` seconds) count as dependent, which is always sound.  Identical warps share
answers, each checked with one more query.  Four consumer warps arriving on the same
empty barriers commute everywhere except at the set-up named barrier and at exit.

**Why the search stays exact** (the relation is still the one ``checker/symbolic.py``
builds from the model's own transition functions):

* every chain is a sequence of ordinary steps, so every state at a level is reachable;
  a counterexample's run is read off the model (the slots that moved, in order) and
  replayed through the concrete model before anything is shown;
* every run can be brought into normal form by swapping adjacent independent steps
  (each actor's steps placed in the earliest slot after everything they depend on),
  reaching the same state, with at most as many levels as steps and every level
  non-empty; a swap can only fail by exposing a violation from a reachable state of a
  shorter run, so a shortest counterexample's run always has a normal form.  Hence
  ``k`` levels cover at least every run of up to ``k`` steps, and no live state at level
  ``k`` means every reachable state lies within ``k - 1`` levels, each of which was
  asked for violations (single steps from every level) and deadlocks: PROVEN;
* a chain counterexample may still take more steps than needed:
  ``checker/bmc.py`` shortens it and confirms (or replaces) it with the single-step
  search bounded to its length (``_confirm``).

tests/test_chain.py checks the declared independence against the concrete model in
every reachable state of examples and generated mutants, and the chain search against
the explicit engine.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import z3

from .errors import Timeout
from .statespace import symmetric_groups
from .symbolic import Encoding, Substitution
from .unrolling import Unrolling

#: how many times each actor appears in one chain (measured in bench/results/bmc.md)
REPEAT = 1


class ChainUnrolling(Unrolling):
    """``Unrolling`` whose good step ``k -> k + 1`` is a chain of every actor (see the
    module docstring).  Deadlock, violation and liveness-of-a-level queries are the
    interleaving ones, asked of the chain level's state."""

    def __init__(self, enc: Encoding, solver: z3.Solver, repeat: int = REPEAT,
                 budget: float = 20.0, inv: Any = None):
        super().__init__(enc, solver, inv)
        self.budget = budget
        nact = len(self.actors)
        #: the chain: actor of each slot (warps, then environment items, ``repeat`` times)
        self.order = list(range(nact)) * max(1, repeat)
        by_actor = self.by_actor
        # per actor, selection by pc/choice only (no act variable: whether the actor
        # moves is the level's fire literal)
        self.rel = {a: self.relation(a, idx) for a, idx in by_actor.items()}
        self.dep = self._dependence(by_actor)
        # per level and slot: the fire literal, the choice literal, the key values seen
        self.sub: list[list[tuple[Any, Any, list[Any]]]] = []

    def _dependence(self, by_actor: dict[int, list[int]]) -> dict[int, set[int]]:
        """Actors whose steps may not commute, and for those pairs, at which program
        counters (``self.pcdep``).

        First static footprints per transition (keys free in its selection, guard,
        checks and updates; keys it updates): transitions with disjoint footprints
        commute.  Pairs with overlapping footprints are asked of z3 (``_pair_dependence``,
        a semantic check of commutation over every state, not only reachable ones).
        Warps of one symmetry group (``checker.statespace.symmetric_groups``) share their
        answers: renaming the warps maps one pair's question onto the other's.  Past
        ``budget`` seconds the remaining pairs count as dependent everywhere (sound: a
        coarser relation only admits more chains)."""

        t0 = time.perf_counter()
        trs = self.enc.transitions
        reads, writes = self.footprints()
        # per actor: key -> pcs whose transitions read it / update it
        rd: dict[int, dict[int, set[Any]]] = {}
        wr: dict[int, dict[int, set[Any]]] = {}
        for a, idx in by_actor.items():
            ra: dict[int, set[Any]] = {}
            wa: dict[int, set[Any]] = {}
            for i in idx:
                for k in reads[i]:
                    ra.setdefault(k, set()).add(trs[i].pc)
                for k in writes[i]:
                    wa.setdefault(k, set()).add(trs[i].pc)
            rd[a], wr[a] = ra, wa

        def candidates(a: int, b: int) -> set[tuple[Any, Any]]:
            out: set[tuple[Any, Any]] = set()
            for k, pa in wr[a].items():
                for pb in (rd[b].get(k), wr[b].get(k)):
                    if pb:
                        out.update((p, q) for p in pa for q in pb)
            for k, pb in wr[b].items():
                pa = rd[a].get(k)
                if pa:
                    out.update((p, q) for p in pa for q in pb)
            return out

        group = {}
        for gi, g in enumerate(symmetric_groups(self.enc.sys)):
            for x in g:
                group[x] = gi
        cache: dict[tuple, Any] = {}
        dep: dict[int, set[int]] = {a: {a} for a in by_actor}
        self.pcdep: dict[tuple[int, int], Any] = {}
        self.dep_stats = {"pairs": 0, "static": 0, "asked": 0, "shared": 0, "budget": 0}
        for a in by_actor:
            for b in by_actor:
                if b <= a:
                    continue
                self.dep_stats["pairs"] += 1
                cand = candidates(a, b)
                if not cand:
                    self.dep_stats["static"] += 1
                    continue
                key = None
                if a in group and b in group:
                    key = (group[a], group[b], group[a] == group[b])
                if time.perf_counter() - t0 > self.budget:
                    self.dep_stats["budget"] += 1
                    r = cand
                elif key is not None and key in cache:
                    # the renamed pair's answer, checked: one query that nothing else
                    # depends (the encoding's ranges of renamed keys may differ)
                    self.dep_stats["shared"] += 1
                    r = self._pair_dependence(a, b, cand, cache[key] & cand)
                else:
                    self.dep_stats["asked"] += 1
                    r = self._pair_dependence(a, b, cand)
                    if key is not None:
                        cache[key] = r
                if r:
                    dep[a].add(b)
                    dep[b].add(a)
                    self.pcdep[(a, b)] = r
        self.dep_stats["seconds"] = round(time.perf_counter() - t0, 2)
        return dep

    def _pc_is(self, a: int, X: list[Any], p: Optional[int]) -> Any:
        return z3.BoolVal(True) if p is None else self.enc.pc_in(a, [p], X)

    def _pair_dependence(self, a: int, b: int, cand: set[tuple[Any, Any]],
                         known: frozenset = frozenset()) -> set[tuple[Any, Any]]:
        """The pc pairs ``(pc_a, pc_b)`` among ``cand`` at which a step of ``a`` and one
        of ``b`` may not commute (None stands for an environment item's pc).  Commute:
        whenever one then the other can run (both good), the other could run first, then
        the one, to the same state -- or one of the swapped steps fails a check, a
        violation the search reports from that (reachable) state anyway.  Pairs z3 does
        not decide count as dependent.  ``known``: pairs already counted dependent.
        Models are enumerated (one query per dependent pair and one more), not every
        candidate asked."""
        enc = self.enc
        X = list(enc.X)
        ca, cb = z3.Bool("commute.cha"), z3.Bool("commute.chb")
        s = z3.SolverFor("QF_BV")
        s.set("timeout", 2000)
        # only states where the proven invariant holds: the swaps of the normal-form
        # argument happen in reachable states, and every reachable state satisfies it
        s.add(self.inv)
        trs = enc.transitions
        pcs_a = {p for p, _ in cand}
        pcs_b = {q for _, q in cand}
        rel = {a: self.relation(a, [i for i in self.by_actor[a] if trs[i].pc in pcs_a]),
               b: self.relation(b, [i for i in self.by_actor[b] if trs[i].pc in pcs_b])}
        bad = []
        for x, y in ((a, b), (b, a)):
            cx, cy = (ca, cb) if x == a else (cb, ca)
            gx, _, _, Xx = self.apply(rel[x], X, cx)
            gxy, _, _, Xxy = self.apply(rel[y], Xx, cy)
            _, ey, by, Xy = self.apply(rel[y], X, cy)
            _, eyx, byx, Xyx = self.apply(rel[x], Xy, cx)
            same = z3.And(*[u == v for u, v in zip(Xxy, Xyx)])
            ok = z3.And(ey, z3.Or(by, z3.And(eyx, z3.Or(byx, same))))
            bad.append(z3.And(gx, gxy, z3.Not(ok)))
        s.add(z3.Or(*bad))
        s.add(z3.Or(*[z3.And(self._pc_is(a, X, p), self._pc_is(b, X, q)) for p, q in cand]))
        pa, pb = self._pc_key(a), self._pc_key(b)
        out: set[tuple[Any, Any]] = set(known)
        for p, q in known:
            s.add(z3.Not(z3.And(self._pc_is(a, X, p), self._pc_is(b, X, q))))
        while True:
            r = s.check()
            if r == z3.unsat:
                break
            if r != z3.sat:  # undecided: every candidate may depend
                return out | cand
            m = s.model()
            p = None if pa is None else m.eval(X[pa], model_completion=True).as_signed_long()
            q = None if pb is None else m.eval(X[pb], model_completion=True).as_signed_long()
            out.add((p, q))
            if (p, q) in known or (p is None and q is None):
                break
            s.add(z3.Not(z3.And(self._pc_is(a, X, p), self._pc_is(b, X, q))))
        return out

    def _pc_key(self, a: int) -> Optional[int]:
        return None if a >= self.nag else self.enc.key_of_slot[self.enc.sys.agents[a].pc]

    def _dep_term(self, a: int, sta: list[Any], b: int, stb: list[Any]) -> Any:
        """``a`` (moving from key values ``sta``) and ``b`` (from ``stb``) may not
        commute."""
        if a == b:
            return z3.BoolVal(True)
        pairs = self.pcdep.get((min(a, b), max(a, b)))
        if pairs is None:
            return z3.BoolVal(False)
        if a > b:
            pairs = {(q, p) for p, q in pairs}
        by_p: dict[Any, list[Any]] = {}
        for p, q in pairs:
            by_p.setdefault(p, []).append(q)
        out = []
        for p, qs in by_p.items():
            cq = (z3.BoolVal(True) if None in qs
                  else z3.Or(*[self._pc_is(b, stb, q) for q in qs]))
            out.append(z3.And(self._pc_is(a, sta, p), cq))
        return z3.Or(*out) if out else z3.BoolVal(False)

    # the states of levels > 0 are created by assert_step
    def state(self, k: int) -> list[Any]:
        if k >= len(self.states):
            raise IndexError(f"chain level {k} is not unrolled yet")
        return self.states[k]

    def assert_step(self, k: int, guard: Any = None) -> None:
        assert k == self.asserted_steps == len(self.states) - 1
        enc = self.enc
        cur = list(self.states[k])
        fires = []
        subs = []
        cons: list[Any] = []
        for slot, a in enumerate(self.order):
            self._in_time(k)
            good, nxt = self.rel[a].good, self.rel[a].nxt
            f = z3.Bool(f"fire@{k}.{slot}")
            ch = z3.Bool(f"choice@{k}.{slot}")
            pairs = [(enc.X[i], cur[i]) for i in range(len(cur)) if cur[i] is not enc.X[i]]
            pairs.append((self.CH, ch))
            sub = Substitution(pairs)
            subs.append((f, ch, list(cur)))
            fires.append(f)
            g = sub(good)
            if z3.is_false(z3.simplify(g)):
                cons.append(z3.Not(f))
                continue
            cons.append(z3.Implies(f, g))
            new = list(cur)
            for key, val in nxt.items():
                v = z3.BitVec(f"{enc.key_names[key]}@{k}.{slot}", enc.width[key])
                cons.append(v == z3.If(f, sub(val), cur[key]))
                new[key] = v
            cur = new
        cons.append(z3.Or(*fires))
        # Foata-like normal form: an actor moves in a slot only if a dependent step
        # forces it past its previous slot (else it could have moved there): its own
        # earlier move or a dependent one between the two slots, in this chain or, back
        # across the level boundary, in the previous one
        n = len(self.order)
        prev = self.sub[k - 1] if k > 0 else None
        for i, a in enumerate(self.order):
            self._in_time(k)
            f, _, st = subs[i]
            window: list[tuple[Any, Any, list[Any]]] = []
            j = i - 1
            while j >= 0 and self.order[j] != a:
                window.append((self.order[j],) + subs[j][0:1] + (subs[j][2],))
                j -= 1
            if j >= 0:
                window.append((a, subs[j][0], subs[j][2]))
            elif prev is None:
                continue  # first slot of the actor in the first level: nothing earlier
            else:
                j = n - 1
                while self.order[j] != a:
                    window.append((self.order[j], prev[j][0], prev[j][2]))
                    j -= 1
                window.append((a, prev[j][0], prev[j][2]))
            why = []
            for b, fb, stb in window:
                if b not in self.dep[a]:
                    continue
                self._in_time(k)
                d = self._dep_term(a, st, b, stb)
                if not z3.is_false(d):
                    why.append(z3.And(fb, d))
            cons.append(z3.Implies(f, z3.Or(*why) if why else z3.BoolVal(False)))
        self.sub.append(subs)
        self.states.append(cur)
        cons.append(self.inv_at(k + 1))
        body = z3.And(*cons)
        self.step_terms.append(body)
        self.solver.add(body if guard is None else z3.Implies(guard, body))
        self.asserted_steps += 1
        if self.extra_frame is not None:
            self.extra_frame(k + 1)

    def _in_time(self, k: int) -> None:
        """Past ``deadline``, stop building level ``k + 1``: nothing of it has reached the
        solver yet, so the unrolling stays at ``k + 1`` states."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise Timeout(k + 1)

    def steps_from_model(self, m: z3.ModelRef, n: int, bad_last: bool = False) -> list[tuple]:
        """Interleaved step ids of the first ``n`` chain levels (actors that moved, in
        chain order), plus the violating step from level ``n - 1`` with ``bad_last``
        (then ``n - 1`` chain levels are read)."""
        out = []
        levels = n - 1 if bad_last else n
        for k in range(levels):
            for a, (f, ch, st) in zip(self.order, self.sub[k]):
                if not z3.is_true(m.eval(f, model_completion=True)):
                    continue
                out.append(self._step_id(m, a, ch, st))
        if bad_last:
            act, ch = self.bad_act(n - 1)
            out.append(self.step_of(m, n - 1, act, ch))
        return out

    def _step_id(self, m: z3.ModelRef, a: int, ch: Any, st: list[Any]) -> tuple:
        actor = self.actors[a]
        if isinstance(actor, tuple):
            return ("e", actor)
        enc = self.enc
        pck = enc.key_of_slot[enc.sys.agents[actor].pc]
        pc = m.eval(st[pck], model_completion=True).as_signed_long()
        c = z3.is_true(m.eval(ch, model_completion=True))
        choice = 1 if c and enc.sys.agent_choices(actor, pc) > 1 else 0
        return ("a", actor, choice)
