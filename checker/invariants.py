"""Inductive invariants of the symbolic encoding: guessed from sampled states, proven by z3.

Why: a BMC query ranges over every state of the encoding that the unrolled steps reach,
but the commutation queries of the chain normal form (``checker/chain.py``) range over
*every* assignment of the state keys, most of them unreachable.  There, two named-barrier
arrivals of different warps "do not commute" only in states where the barrier's thread
count disagrees with the warps' arrival flags, or a flag is -2; with those states ruled
out they commute, the normal form gets much shorter and the SAT queries much easier
(named_barrier: a level-6 deadlock query took 34 s without, 0.04 s with).

How (Houdini, Flanagan & Leino 2001, over candidates from data as in Daikon):

1. candidates, each true on every sampled reachable state (``Sample.kept``, states of
   the concrete model's breadth-first search): every affine equality over the key values
   (the affine hull of the samples, computed exactly: modular elimination, rational
   reconstruction, then checked over the integers on every sample); for every key its
   interval and, when it has at most ``MAX_VALUES`` values that are not an interval, the
   set of them;
2. an inductive subset ``I`` -- ``I(x) and step(x, x') => I(x')`` for every good step of
   the encoding -- found by dropping the candidates a counterexample to induction breaks
   until z3 says unsat (with each broken candidate also its twins: the same fact of
   another warp, stage or CTA; so not always the largest subset, in far fewer rounds).  The initial state satisfies every candidate (it is a sample, and
   is checked again).

Then ``I`` holds in every state reachable by good steps of the encoding -- in every state
a BMC level or chain slot can take -- so asserting it at every level and assuming it in
the commutation queries loses no run.  Nothing depends on the samples being complete: a
candidate the samples wrongly suggest is dropped by step 2 or never holds initially.  An
unfinished search (time budget) yields no invariant at all, never a partial one.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Sequence

import z3

from .symbolic import Encoding, Substitution, same_shape, solver_ms

#: a key with at most this many sampled values (not an interval) gets a value-set candidate
MAX_VALUES = 4
#: rows of the samples that the affine hull is computed from (the others only check it)
HULL_ROWS = 4000
#: bit-width of the exact sums of affine candidates (keys are far narrower)
SUM_WIDTH = 48
_P = (1 << 61) - 1  # a prime: elimination modulo _P, then rational reconstruction


@dataclass(frozen=True)
class Candidate:
    """``kind``: ``affine`` (sum of coef * key == const over ``terms``), ``range``
    (lo <= key <= hi) or ``values`` (key is one of ``values``)."""

    kind: str
    terms: tuple[tuple[int, int], ...] = ()  # (key, coefficient); one key for range/values
    const: int = 0
    values: tuple[int, ...] = ()

    def holds(self, row: Sequence[int]) -> bool:
        if self.kind == "affine":
            return sum(c * row[k] for k, c in self.terms) == self.const
        if self.kind == "tuple":
            return tuple(row[k] for k, _ in self.terms) in self.values
        v = row[self.terms[0][0]]
        if self.kind == "range":
            return self.values[0] <= v <= self.values[1]
        return v in self.values

    def term(self, enc: Encoding, Y: Sequence[Any]) -> Any:
        if self.kind == "affine":
            s = z3.Sum(*[z3.SignExt(SUM_WIDTH - enc.width[k], Y[k]) * c
                         for k, c in self.terms])
            return s == z3.BitVecVal(self.const, SUM_WIDTH)
        if self.kind == "tuple":
            return z3.Or(*[z3.And(*[Y[k] == z3.BitVecVal(v, enc.width[k])
                                    for (k, _), v in zip(self.terms, vs)])
                           for vs in self.values])
        k = self.terms[0][0]
        val = lambda v: z3.BitVecVal(v, enc.width[k])  # noqa: E731
        if self.kind == "range":
            return z3.And(Y[k] >= val(self.values[0]), Y[k] <= val(self.values[1]))
        return z3.Or(*[Y[k] == val(v) for v in self.values])

    def shape(self, enc: Encoding) -> tuple:
        """The candidate with every index erased from its keys' names."""
        return (self.kind, tuple(sorted((same_shape(enc.key_names[k]), c)
                                        for k, c in self.terms)), self.const, self.values)

    def text(self, enc: Encoding) -> str:
        if self.kind == "affine":
            lhs = " + ".join(f"{c}*{enc.key_names[k]}" if c != 1 else enc.key_names[k]
                             for k, c in self.terms)
            return f"{lhs} == {self.const}"
        if self.kind == "tuple":
            names = ", ".join(enc.key_names[k] for k, _ in self.terms)
            return f"({names}) in {{{len(self.values)} tuples}}"
        name = enc.key_names[self.terms[0][0]]
        if self.kind == "range":
            return f"{self.values[0]} <= {name} <= {self.values[1]}"
        return f"{name} in {set(self.values)}"


@dataclass(frozen=True)
class Invariants:
    """The proven invariant: ``term`` over ``Encoding.X`` (True when none was found)."""

    proven: tuple[Candidate, ...]
    term: Any
    stats: dict[str, Any]


def none(reason: str, **stats: Any) -> Invariants:
    return Invariants((), z3.BoolVal(True), dict(stats, proven=0, note=reason))


# --------------------------------------------------------------------------- candidates


def affine_hull(rows: Sequence[Sequence[int]], check: Sequence[Sequence[int]],
                seed: int = 0, deadline: float = float("inf")
                ) -> Optional[list[tuple[tuple[tuple[int, int], ...], int]]]:
    """Every affine equality ``sum(c_j * x_j) == c0`` (integer coefficients, as a basis of
    the equalities) that holds on all of ``rows`` and ``check``.  Elimination runs modulo
    a 61-bit prime on ``rows``; a basis equation some row of ``check`` breaks adds that
    row and the elimination goes on, so the result is exact over the integers.  None
    past ``deadline``."""
    if not rows:
        return []
    n = len(rows[0])
    piv: dict[int, dict[int, int]] = {}  # pivot column -> reduced row (pivot entry 1)
    order = list(rows)
    random.Random(seed).shuffle(order)
    for i, r in enumerate(order):
        if i % 64 == 0 and time.perf_counter() > deadline:
            return None
        _add_row(piv, r, n)
    while True:
        if time.perf_counter() > deadline:
            return None
        eqs = _nullspace(piv, n)
        broken = None
        for terms, c0 in eqs:
            for r in check:
                if sum(c * r[j] for j, c in terms) != c0:
                    broken = r
                    break
            if broken is not None:
                break
        if broken is None:
            return eqs
        _add_row(piv, broken, n)


def _add_row(piv: dict[int, dict[int, int]], row: Sequence[int], n: int) -> None:
    """Add ``row`` (with a constant 1 in column ``n``) to the reduced row echelon form."""
    red = {j: v % _P for j, v in enumerate(row) if v % _P}
    red[n] = 1
    for c, pr in piv.items():
        _eliminate(red, c, pr)
    if not red:
        return
    c = min(red)
    inv = pow(red[c], _P - 2, _P)
    red = {j: v * inv % _P for j, v in red.items()}
    for pr in piv.values():
        _eliminate(pr, c, red)
    piv[c] = red


def _eliminate(row: dict[int, int], c: int, pivot: dict[int, int]) -> None:
    """Subtract the multiple of ``pivot`` (entry 1 at column ``c``) that clears
    ``row``'s column ``c``, in place (sparse rows, modulo _P)."""
    v = row.get(c)
    if not v:
        return
    for j, w in pivot.items():
        x = (row.get(j, 0) - v * w) % _P
        if x:
            row[j] = x
        else:
            row.pop(j, None)


def _nullspace(piv: dict[int, dict[int, int]], n: int
               ) -> list[tuple[tuple[tuple[int, int], ...], int]]:
    out = []
    for f in range(n + 1):  # free columns; the constant column n is free when every
        if f in piv:        # row has the same value at some pivot column
            continue
        vec = {f: Fraction(1)}
        ok = True
        for c, pr in piv.items():
            v = pr.get(f)
            if v:
                q = _rational(-v % _P)
                if q is None:
                    ok = False
                    break
                vec[c] = q
        if not ok:
            continue  # a coefficient too large to reconstruct: no candidate
        den = 1
        for q in vec.values():
            den = den * q.denominator // math.gcd(den, q.denominator)
        ints = {j: int(q * den) for j, q in vec.items()}
        c0 = -ints.pop(n, 0)
        if not ints:
            continue  # "0 == c0": no rows at all
        out.append((tuple(sorted(ints.items())), c0))
    return out


def _rational(a: int) -> Optional[Fraction]:
    """The fraction p/q with |p|, |q| <= sqrt(P/2) congruent to ``a`` modulo P."""
    bound = math.isqrt(_P // 2)
    r0, r1, s0, s1 = _P, a, 0, 1
    while r1 > bound:
        q = r0 // r1
        r0, r1 = r1, r0 - q * r1
        s0, s1 = s1, s0 - q * s1
    if s1 == 0 or abs(s1) > bound:
        return None
    return Fraction(r1, s1)


def tuple_candidates(enc: Encoding, rows: Sequence[Sequence[int]],
                     groups: Sequence[Sequence[int]]) -> list[Candidate]:
    """For each group of keys, the set of its value tuples on the rows (the facts that
    tie a warp's program counter to its own flags and the barrier state they follow,
    which no affine equality or single-key set can state)."""
    out = []
    for g in groups:
        vals = tuple(sorted({tuple(r[k] for k in g) for r in rows}))
        out.append(Candidate("tuple", tuple((k, 1) for k in g), values=vals))
    return out


def warp_key_groups(enc: Encoding) -> list[tuple[int, ...]]:
    """Per warp of a cluster with a cluster barrier: its program counter, its arrival
    flag and arrival generation, and the barrier's generation (a wait passes when the
    generation moved on since the warp's arrival; an arrival flag is set only between
    the arrival and the completion that clears it)."""
    keys = enc.key_of_slot
    gen = keys.get(enc.sys.cluster_gen)
    if gen is None:
        return []  # constant: no cluster barrier is ever used
    out = []
    for ag in enc.sys.agents:
        own = [keys.get(ag.carr), keys.get(ag.cgen)]
        if None not in own:
            out.append((keys[ag.pc], *own, gen))
    return out


def candidates(enc: Encoding, rows: Sequence[Sequence[int]],
               deadline: float = float("inf")) -> list[Candidate]:
    """Facts true on every row (key values of sampled states; see the module docstring).
    Keys with one value give ``key == value``; the affine hull is taken over the others
    (projected rows, duplicates merged), and left out past ``deadline``; ranges and value
    sets for keys with more than one value."""
    out: list[Candidate] = []
    values = [sorted({r[k] for r in rows}) for k in range(enc.nkeys)]
    varying = [k for k in range(enc.nkeys) if len(values[k]) > 1]
    out.extend(Candidate("affine", ((k, 1),), values[k][0])
               for k in range(enc.nkeys) if len(values[k]) == 1)
    proj = list({tuple(r[k] for k in varying) for r in rows})
    sub = proj if len(proj) <= HULL_ROWS else random.Random(1).sample(proj, HULL_ROWS)
    for terms, c0 in affine_hull(sub, proj, deadline=deadline) or []:
        terms = tuple((varying[j], c) for j, c in terms)
        # exact in SUM_WIDTH bits (the wrapped sum would still be sound, just weaker)
        if sum(abs(c) << (enc.width[k] - 1) for k, c in terms) + abs(c0) < 1 << (SUM_WIDTH - 1):
            out.append(Candidate("affine", terms, c0))
    for k in varying:
        vs = values[k]
        out.append(Candidate("range", ((k, 1),), values=(vs[0], vs[-1])))
        if len(vs) <= MAX_VALUES and vs != list(range(vs[0], vs[-1] + 1)):
            out.append(Candidate("values", ((k, 1),), values=tuple(vs)))
    return out


# --------------------------------------------------------------------------- Houdini


def houdini(enc: Encoding, cands: list[Candidate], step: Any, Xn: Sequence[Any],
            deadline: float) -> Optional[list[Candidate]]:
    """The largest inductive subset of ``cands`` under ``step`` (a relation over
    ``enc.X`` and ``Xn``), or None past ``deadline``."""
    X = enc.X
    # the initial state must satisfy the terms themselves (bit-vectors), not only the
    # integer facts they stand for: a constant outside a key's width would wrap
    init = Substitution([(x, z3.BitVecVal(v, w))
                         for x, v, w in zip(X, enc.init_values, enc.width)])
    alive = [c for c in cands
             if c.holds(enc.init_values) and z3.is_true(z3.simplify(init(c.term(enc, X))))]
    now = {c: c.term(enc, X) for c in alive}
    nxt = {c: c.term(enc, Xn) for c in alive}
    s = z3.SolverFor("QF_BV")
    s.add(step)
    lits = {c: z3.Bool(f"inv#{i}") for i, c in enumerate(alive)}
    for c in alive:
        s.add(z3.Implies(lits[c], now[c]))
    rounds = 0
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        rounds += 1
        q = z3.Bool(f"broken#{rounds}")
        s.add(z3.Implies(q, z3.Not(z3.And(*[nxt[c] for c in alive]))))
        s.set("timeout", solver_ms(left))
        r = s.check(q, *[lits[c] for c in alive])
        if r == z3.unsat:
            return alive
        if r != z3.sat:
            return None
        m = s.model()
        broken = {c for c in alive if not z3.is_true(m.eval(nxt[c], model_completion=True))}
        assert broken
        # and their twins (the same fact of another warp, stage or CTA): they tend to
        # break one round later each; dropping more only weakens the result
        shapes = {c.shape(enc) for c in broken}
        alive = [c for c in alive if c not in broken and c.shape(enc) not in shapes]


def find_invariants(enc: Encoding, states: Sequence[tuple], step: Any, Xn: Sequence[Any],
                    seconds: float) -> Invariants:
    """Candidates from the concrete ``states`` (flat tuples of the model), then Houdini
    under ``step``; ``seconds`` bounds the whole."""
    t0 = time.perf_counter()
    rows = []
    for st in states:
        vals, long = enc.encode_concrete(st)
        if not long:
            rows.append(vals)
    rows.append(list(enc.init_values))
    # the hull gets at most half of the time; Houdini the rest
    cands = candidates(enc, rows, deadline=t0 + seconds / 2)
    return _prove(enc, rows, cands, step, Xn, t0, seconds)


def find_tuple_invariants(enc: Encoding, rows: Sequence[Sequence[int]], step: Any,
                          Xn: Sequence[Any], seconds: float) -> Invariants:
    """Per-warp tuple sets (``warp_key_groups``) and every key's range, read off
    ``rows`` (key values of reachable states, signed), then Houdini under ``step``: the
    invariant ``checker/safesteps.py`` proves safe points under (no affine hull: on
    p9-fixed it took 25 s of Houdini rounds, these 0.2 s, and prove the same points)."""
    t0 = time.perf_counter()
    rows = list(rows) + [list(enc.init_values)]
    cands = tuple_candidates(enc, rows, warp_key_groups(enc))
    for k in range(enc.nkeys):
        vs = {r[k] for r in rows}
        cands.append(Candidate("range", ((k, 1),), values=(min(vs), max(vs))))
    return _prove(enc, rows, cands, step, Xn, t0, seconds)


def _prove(enc: Encoding, rows: list, cands: list[Candidate], step: Any, Xn: Sequence[Any],
           t0: float, seconds: float) -> Invariants:
    stats: dict[str, Any] = {"sampled": len(rows), "candidates": len(cands)}
    proven = houdini(enc, cands, step, Xn, t0 + seconds)
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    if proven is None:
        return none(f"no inductive subset found within {seconds:.0f} s", **stats)
    stats["proven"] = len(proven)
    term = z3.And(*[c.term(enc, enc.X) for c in proven]) if proven else z3.BoolVal(True)
    return Invariants(tuple(proven), term, stats)
