"""Unbounded proofs for the BMC engine: a complete enumeration, certified by z3.

Why: for acyclic kernels BMC proves "every run has ended" only at the depth of the
longest run (tens of levels, each harder than the last), and for kernels that loop for
ever no depth ends every run.  Induction with the invariants of ``checker/invariants.py``
does not close (the missing facts tie program counters to barrier phases), and IC3 with
cube generalisation or Houdini over pairwise value sets were measured and dropped
(pipeline_async: 20,000 IC3 queries in 43 s; the pairwise facts let a deadlocked state
through).  But the states themselves are few: pipeline_async has 56, pipeline_order
17,418.  When the unreduced breadth-first pass of ``symbolic.sample_ranges`` (the
concrete model's successor function, no reduction) finishes, its state set ``R`` is a
candidate inductive invariant, and z3 decides, over the encoding's own relation:

1. the initial state is in ``R`` (evaluated on the bit-vector terms);
2. ``R(x) and step(x, x') => R(x')`` for every good step of the encoding (**closure**);
3. (``problem_free``) no state of ``R`` has an enabled step that violates a check of the
   catalogue or leaves the encoding, and none is deadlocked.

1 and 2 make ``R`` hold in every state reachable by good steps, whoever enumerated it:
a state the enumeration missed (a bug in either interpreter) makes the closure query
sat and there is no certificate.  With 3 as well, no run of any length violates or
deadlocks: PROVEN without unrolling.  Without 3 the certificate still holds and is
asserted of every level as an invariant (a counterexample exists; BMC finds a shortest
one among far fewer states).

So the *search* for the invariant is enumerative and the *proof* is z3's, over the
relation obtained by running the model's transition functions over z3 terms -- the
enumeration and the symbolic relation must agree for it to go through.  It does not
scale past the enumeration: above ``MAX_STATES`` states, or when the pass does not finish
in its time, there is no certificate and the search unrolls as before.

``R`` is written as a multi-valued decision diagram over the keys (``state_set``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import z3

from .symbolic import Encoding, Substitution

#: reachable sets larger than this get no certificate (the unreduced enumeration
#: reaches 30,000-60,000 states in its 3 s; the closure query has its own budget)
MAX_STATES = 100_000


@dataclass(frozen=True)
class Certificate:
    """``term``: the reachable set ``R`` over ``Encoding.X``, shown closed under the good
    steps; ``problem_free``: no state of ``R`` deadlocks or has an enabled violating or
    overflowing step (None: not asked).  ``queries``: the closure and problem queries as
    z3 formulas (each unsat), for ``--smt2``."""

    term: Any
    states: int
    problem_free: Optional[bool]
    queries: tuple[tuple[str, Any], ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)


def state_set(enc: Encoding, rows: Sequence[Sequence[int]], X: Sequence[Any]) -> Any:
    """The set of key-value rows as a term over ``X``: keys with one value as
    equalities, the others as a multi-valued decision diagram in the encoding's key order
    (a warp's keys together, then each barrier's), equal sub-diagrams built once.  Both
    choices matter (measured on named_barrier, 31,151 states): a plain trie took 21 s to
    build, the diagram 1.5 s; ordering keys by fewest values first left the closure query
    at 7.3 s, the encoding's order 0.7 s (and the diagram 0.5 s)."""
    rows = list(rows)
    nvals = [len({r[k] for r in rows}) for k in range(enc.nkeys)]
    const = [X[k] == z3.BitVecVal(rows[0][k], enc.width[k])
             for k in range(enc.nkeys) if nvals[k] == 1]
    order = [k for k in range(enc.nkeys) if nvals[k] > 1]
    # pass 1, plain Python: node ids, unique per (level, ((value, child id), ...))
    unique: dict[tuple, int] = {}
    nodes: list[tuple] = []

    def build(part: list, i: int) -> int:
        if i == len(order):
            return -1  # the "true" leaf
        k = order[i]
        groups: dict[int, list] = {}
        for r in part:
            groups.setdefault(r[k], []).append(r)
        key = (i, tuple(sorted((v, build(g, i + 1)) for v, g in groups.items())))
        if key not in unique:
            unique[key] = len(nodes)
            nodes.append(key)
        return unique[key]

    root = build(rows, 0)
    # pass 2: one z3 term per node, children first (they have smaller ids)
    terms: list[Any] = []
    for i, alts in nodes:
        k = order[i]
        parts = [z3.And(X[k] == z3.BitVecVal(v, enc.width[k]), terms[c]) if c >= 0
                 else X[k] == z3.BitVecVal(v, enc.width[k]) for v, c in alts]
        terms.append(parts[0] if len(parts) == 1 else z3.Or(*parts))
    return z3.And(*const, terms[root] if root >= 0 else z3.BoolVal(True))


def certify(enc: Encoding, states: Optional[Sequence[tuple]], step: Any,
            Xn: Sequence[Any], problem: Any, deadline: float) -> tuple[Optional[Certificate], str]:
    """The certificate of the complete state set ``states`` (flat concrete states), or
    None and why not.  ``step``: the good-step relation over ``enc.X`` and ``Xn``;
    ``problem``: a term over ``enc.X`` (and free action variables) true where a state
    deadlocks or has an enabled bad step."""
    if states is None:
        return None, "the unreduced enumeration did not finish"
    if len(states) > MAX_STATES:
        return None, f"{len(states):,} reachable states (more than {MAX_STATES:,})"
    rows = set()
    for st in states:
        vals, long = enc.encode_concrete(st)
        if long or any(not lo <= v <= hi for v, (lo, hi) in zip(vals, enc.key_range)):
            return None, "a reachable state lies outside the encoding's ranges"
        rows.add(tuple(vals))
    X = enc.X
    R = state_set(enc, rows, X)
    init = Substitution([(x, z3.BitVecVal(v, w))
                         for x, v, w in zip(X, enc.init_values, enc.width)])
    if not z3.is_true(z3.simplify(init(R))):
        return None, "the initial state is not among the enumerated states"
    Rn = Substitution([(x, xn) for x, xn in zip(X, Xn) if x is not xn])(R)
    closure = z3.And(R, step, z3.Not(Rn))
    r = _unsat(closure, deadline)
    if r is None:
        return None, "the closure query ran out of time"
    if not r:
        return None, "the enumerated states are not closed under the encoding's steps"
    bad = z3.And(R, problem)
    pf = _unsat(bad, deadline)
    queries = (("closure", closure),) + ((("problem", bad),) if pf else ())
    return Certificate(R, len(rows), pf, queries), ""


def _unsat(term: Any, deadline: float) -> Optional[bool]:
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    s = z3.SolverFor("QF_BV")
    s.set("timeout", max(1, int(left * 1000)))
    s.add(term)
    r = s.check()
    return None if r == z3.unknown else r == z3.unsat


def write_smt2(cert: Certificate, path: str) -> None:
    """The certificate as one SMT-LIB 2 query (``--smt2``): the disjunction of its
    queries over shared variables; ``unsat`` means the proof holds."""
    s = z3.Solver()
    s.add(z3.Or(*[q for _, q in cert.queries]))
    with open(path, "w") as f:
        f.write(f"; pipeproof certificate: R = the {cert.states:,} reachable states of the "
                "encoding (the initial state is one of them)\n"
                "; closure: R(x) and a good step x -> x' and not R(x')\n")
        if cert.problem_free:
            f.write("; or problem: R(x) and (x deadlocks or has an enabled violating step)\n")
        f.write("; unsat = R is an inductive invariant"
                + (" in which no state violates or deadlocks\n" if cert.problem_free
                   else "\n"))
        f.write("(set-logic QF_BV)\n")
        f.write(s.sexpr())
        f.write("(check-sat)\n")
