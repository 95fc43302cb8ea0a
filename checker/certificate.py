"""Unbounded proofs for the BMC engine: a complete enumeration, certified against the
encoding's transition relation.

Why: for acyclic kernels BMC proves "every run has ended" only at the depth of the
longest run (tens of levels, each harder than the last), and for kernels that loop for
ever no depth ends every run.  Induction with the invariants of ``checker/invariants.py``
does not close (the missing facts tie program counters to barrier phases), and IC3 with
cube generalisation or Houdini over pairwise value sets were measured and dropped
(pipeline_async: 20,000 IC3 queries in 43 s; the pairwise facts let a deadlocked state
through).  But the states themselves are few: pipeline_async has 56, pipeline_order
17,418.  When the unreduced breadth-first pass of ``symbolic.sample_ranges`` (the
concrete model's successor function, no reduction) finishes, its state set ``R`` is a
candidate inductive invariant, and the certificate decides, over the encoding's own
relation:

1. the initial state is in ``R``;
2. ``R(x) and step(x, x') => R(x')`` for every good step of the encoding (**closure**);
3. (``problem_free``) no state of ``R`` has an enabled step that violates a check of the
   catalogue or leaves the encoding, and none is deadlocked.

1 and 2 make ``R`` hold in every state reachable by good steps, whoever enumerated it:
a state the enumeration missed (a bug in either interpreter) makes the closure query
sat and there is no certificate.  With 3 as well, no run of any length violates or
deadlocks: PROVEN without unrolling.  Without 3 a counterexample exists, and the
breadth-first search of ``checker/evalgraph.py`` over the encoding's compiled steps
finds a shortest one (``Certificate.search``); the set is also the invariant of every
level when the unrolling runs after all (a step that only leaves the encoding).

So the *search* for the invariant is enumerative and the *proof* is over the relation
obtained by running the model's transition functions over z3 terms (z3 decides the
symmetry queries below; closure and problems are decided on those terms as below) --
the enumeration and the symbolic relation must agree for it to go through.  It does not
scale past the enumeration: above ``MAX_STATES`` states, or when the pass does not finish
in its time, there is no certificate and the search unrolls as before.

**How queries 2 and 3 are decided.**  As SAT queries over ``R`` they took 5 to 66 s for
16,000 to 50,000 states (p7-fixed: 66 s); so ``check_by_evaluation`` decides them state
by state instead: every transition template's terms -- the same z3 terms the unrolling's
relation is built from -- compiled to Python (``checker/termeval.py``) and evaluated on
every row (p7-fixed: 1 s).  The SAT queries remain the fallback (a term the compiler
does not handle) and are what ``--smt2`` writes; tests check that both give the same
answers and that the compiled terms give z3's values.

``R`` is written as a multi-valued decision diagram over the keys (``state_set``), built
only when asked for (``--smt2``, or as the invariant of the levels when it has problems).

**Warp symmetry.**  Warps of one CTA running one program (``statespace.symmetric_groups``;
warps that issue wgmma only within their warpgroup) are interchangeable, and the enumeration keeps one state per class of states equal up to
permuting them (p10-fixed: 41,079 classes, more than 354,273 states).  Then ``R`` holds
the *sorted* form of each class -- every group's warps in increasing order of their key
vectors (``WarpSymmetry.canonical``) -- and the set certified is "``sort(x)`` is in
``R``".  The queries become:

0. (**symmetry**) for each two neighbours ``a, b`` of a group, with ``P`` swapping their
   keys and ``s`` their actor names: ``step(x, x', act) => step(Px, Px', s(act))``, and
   a problem step or deadlock at ``x`` is one at ``Px`` (``symmetry_queries``; the
   transpositions of neighbours generate every permutation of the group);
1. ``sort(init)`` is in ``R``;
2. ``R(x) and step(x, x') => R(sort(x'))``, ``sort`` a sorting network of
   compare-and-swap steps on key vectors (``sorting_network``);
3. no state of ``R`` has a problem.

Induction: a reachable ``x`` is ``Py`` for some ``y`` in ``R`` and permutation ``P``; a
step of ``x`` is, by 0, ``P`` applied to a step of ``y``, which by 2 lands in a state
whose sorted form is in ``R``, and sorting is blind to ``P``.  A problem at ``x`` would be
one at ``y`` (0), which 3 excludes.  So z3 checks the symmetry the explicit engine
assumes, too: a warp whose steps depended on its index would make query 0 sat.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any, Callable, Iterator, Optional, Sequence

import z3

from .evalgraph import CompiledSteps, Problem, graph_lasso, shortest_problems
from .graphs import starving_component
from .invariants import find_tuple_invariants
from .lasso import poll_pcs
from .packed import component_of
from .safesteps import SafeSteps, footprint_candidates
from .symbolic import Encoding, Substitution, solver_ms
from .termeval import Unsupported

#: reachable sets larger than this get no certificate (the unreduced enumeration
#: reaches 30,000-60,000 states in its 3 s; the closure query has its own budget)
MAX_STATES = 100_000
#: rows of the reduced certificate's first pass that its invariant's candidates are read
#: from (a tuple set missing a reachable value is dropped by Houdini: weaker, not wrong)
INVARIANT_ROWS = 10_000


@dataclass(frozen=True)
class Certificate:
    """``states``: the rows of the reachable set ``R`` (one per class of interchangeable
    warps when ``stats["symmetry"]`` names groups), shown closed under the good steps;
    ``problem_free``: no state of ``R`` deadlocks or has an enabled violating or
    overflowing step (None: not asked).  ``term`` (``R`` over ``Encoding.X``, for a
    symmetric certificate "the sorted form is in ``R``") and ``queries`` (the symmetry,
    closure and problem queries as z3 formulas, each unsat, for ``--smt2``) are built
    when first asked for: a PROVEN verdict needs neither."""

    states: int
    problem_free: Optional[bool]
    stats: dict[str, Any] = field(default_factory=dict)
    build: Callable[[], tuple[Any, tuple]] = field(default=lambda: (None, ()), repr=False,
                                                  compare=False)
    #: (rows, successors) of the encoding's state graph over ``R`` (``check_by_evaluation``)
    #: for kernels that loop for ever, when ``R`` is not reduced by symmetry
    graph: Optional[tuple] = field(default=None, repr=False, compare=False)
    #: with problems: ``shortest_problems`` from the initial state over the encoding's
    #: compiled steps (``checker/evalgraph.py``), given a deadline; None without
    search: Optional[Callable[[float], Optional[list[Problem]]]] = field(
        default=None, repr=False, compare=False)
    #: the compiled steps and the initial row, to name the graph's edges as steps
    compiled: Optional[CompiledSteps] = field(default=None, repr=False, compare=False)
    init_row: Optional[tuple] = field(default=None, repr=False, compare=False)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def starvation_free(self, enc: Encoding) -> Optional[bool]:
        """No fair cycle of the graph starves a warp (``graphs.starving_component``:
        the explicit engine's definition, on the encoding's graph) -- every run of any
        length then ends or keeps every waiting warp moving; None without a graph.  The
        graph holds every state reachable by good steps (closure), so a starving lasso
        of the encoding would be a fair cycle here."""
        if self.graph is None:
            return None
        return self._starving(enc) is None

    def starving_lasso(self, enc: Encoding) -> Optional[tuple[list[tuple], int]]:
        """Where the graph has a starving fair cycle: a lasso through it as step ids
        and the index of the loop's first step (``evalgraph.graph_lasso``), of any
        length -- no depth bound; None without a graph or a starving cycle."""
        if self.graph is None or self.compiled is None or self.init_row is None:
            return None
        best = self._starving(enc)
        if best is None:
            return None
        rows, succ = self.graph
        return graph_lasso(self.compiled, list(rows), list(succ), rows.index(self.init_row),
                           best, len(enc.sys.agents))

    def _starving(self, enc: Encoding) -> Optional[tuple]:
        """``graphs.starving_component`` on the graph (computed once)."""
        if "starving" in self._memo:
            return self._memo["starving"]
        rows, succ = self.graph
        sysm = enc.sys
        nag = len(sysm.agents)
        pk = [(enc.key_of_slot[ag.pc], enc.width[enc.key_of_slot[ag.pc]])
              for ag in sysm.agents]

        def pc(v: int, w: int) -> int:
            k, wd = pk[w]
            x = rows[v][k]
            return x - (1 << wd) if x >> (wd - 1) else x

        enabled = [{a for _t, a in edges} for edges in succ]
        polls = [set(poll_pcs(sysm, a)) for a in range(nag)]
        best = starving_component(nag, pc, polls, list(succ), enabled)
        self._memo["starving"] = best
        return best

    @cached_property
    def _built(self) -> tuple[Any, tuple]:
        return self.build()

    @property
    def term(self) -> Any:
        return self._built[0]

    @property
    def queries(self) -> tuple[tuple[str, Any], ...]:
        return self._built[1]


def state_set(enc: Encoding, rows: Sequence[Sequence[int]], X: Sequence[Any]) -> Any:
    """The set of key-value rows as a term over ``X``: keys with one value as
    equalities, the others as a multi-valued decision diagram in the encoding's key order
    (a warp's keys together, then each barrier's), equal sub-diagrams built once.  Both
    choices matter (measured on named_barrier, 31,151 states): a plain trie took 21 s to
    build, the diagram 1.5 s; ordering keys by fewest values first left the closure query
    at 7.3 s, the encoding's order 0.7 s (and the diagram 0.5 s)."""
    rows = sorted(set(map(tuple, rows)))
    cols = list(zip(*rows))
    const = [X[k] == z3.BitVecVal(rows[0][k], enc.width[k])
             for k in range(enc.nkeys) if len(set(cols[k])) == 1]
    order = [k for k in range(enc.nkeys) if len(set(cols[k])) > 1]
    # pass 1, plain Python: node ids, unique per (level, ((value, child id), ...)),
    # from the sorted rows in one pass (Daciuk et al.'s construction of a minimal
    # acyclic automaton): a node is final once a row leaves its prefix
    unique: dict[tuple, int] = {}
    nodes: list[tuple] = []
    n = len(order)
    open_: list[list] = [[] for _ in range(n)]  # edges (value, child) along the path

    def close(i: int) -> int:
        key = (i, tuple(open_[i]))
        open_[i] = []
        got = unique.get(key)
        if got is None:
            got = unique[key] = len(nodes)
            nodes.append(key)
        return got

    def close_below(level: int) -> None:
        for i in range(n - 1, level, -1):
            node = close(i)
            v, _ = open_[i - 1][-1]
            open_[i - 1][-1] = (v, node)

    prev: Optional[tuple] = None
    for row in rows:
        vals = [row[k] for k in order]
        if prev is None:
            lcp = 0
        else:
            lcp = next(i for i in range(n) if vals[i] != prev[i])
            close_below(lcp)
        for i in range(lcp, n):
            open_[i].append((vals[i], -1))  # -1: the "true" leaf (patched when closed)
        prev = vals
    root = -1
    if n:
        close_below(0)
        root = close(0)
    # pass 2: one z3 term per node, children first (they have smaller ids); the
    # equalities, and Boolean connectives made with the C API (z3.And/Or's argument
    # checks took most of the time)
    ctx = X[0].ctx
    eqs: dict[tuple[int, int], Any] = {}

    def eq(k: int, v: int) -> Any:
        t = eqs.get((k, v))
        if t is None:
            t = eqs[(k, v)] = X[k] == z3.BitVecVal(v, enc.width[k])
        return t

    terms: list[Any] = []
    for i, alts in nodes:
        k = order[i]
        parts = [_connect(z3.z3core.Z3_mk_and, [eq(k, v), terms[c]], ctx) if c >= 0
                 else eq(k, v) for v, c in alts]
        terms.append(parts[0] if len(parts) == 1
                     else _connect(z3.z3core.Z3_mk_or, parts, ctx))
    return z3.And(*const, terms[root] if root >= 0 else z3.BoolVal(True))


def _connect(mk: Any, args: list, ctx: Any) -> Any:
    arr = (z3.Ast * len(args))()
    for i, a in enumerate(args):
        arr[i] = a.as_ast()
    return z3.BoolRef(mk(ctx.ref(), len(args), arr), ctx)


@dataclass(frozen=True)
class WarpSymmetry:
    """Interchangeable warps (``statespace.symmetric_groups``: one CTA, one program) as the
    encoding sees them: ``keys[g][i]`` are the keys of warp ``groups[g][i]`` -- its
    program counter, locals, barrier bookkeeping and queues, in slot order, so that
    equal positions hold the same thing for every warp of the group."""

    groups: tuple[tuple[int, ...], ...]
    keys: tuple[tuple[tuple[int, ...], ...], ...]

    def canonical(self, row: Sequence[int], width: Sequence[int]) -> tuple:
        """``row`` (signed key values) with the warps of every group in increasing
        order of their key vectors: lexicographic, each value read as an unsigned
        bit-vector, as ``sort_terms`` compares them.  Unsigned because it is faster for
        z3: warps that have exited (pc -1) sort last (pipeline_umma_async closure
        query: 5 s, signed 9-10 s)."""
        raw = self.canonical_raw(tuple(v & ((1 << w) - 1) for v, w in zip(row, width)))
        return tuple(v - (1 << w) if v >> (w - 1) else v for v, w in zip(raw, width))

    def canonical_raw(self, row: tuple) -> tuple:
        """``canonical`` of a row of unsigned values (``check_by_evaluation``'s
        representation): a plain sort."""
        out = None
        for getters, per_warp in self._getters:
            vecs = [g(row) for g in getters]
            if all(vecs[i] <= vecs[i + 1] for i in range(len(vecs) - 1)):
                continue
            if out is None:
                out = list(row)
            for ks, old, vec in zip(per_warp, vecs, sorted(vecs)):
                if old != vec:
                    for k, v in zip(ks, vec):
                        out[k] = v
        return row if out is None else tuple(out)

    @cached_property
    def _getters(self) -> list[tuple[list[Any], tuple]]:
        return [([_vector_getter(ks) for ks in per_warp], per_warp) for per_warp in self.keys]

    def sort_terms(self, X: Sequence[Any]) -> list[Any]:
        """``X`` with the warps of every group sorted like ``canonical``: a sorting
        network of compare-and-swap steps on whole key vectors."""
        out = list(X)
        for per_warp in self.keys:
            vecs = [[out[k] for k in ks] for ks in per_warp]
            for i, j in sorting_network(len(vecs)):
                swap = _lex_less(vecs[j], vecs[i])
                lo = [z3.If(swap, b, a) for a, b in zip(vecs[i], vecs[j])]
                hi = [z3.If(swap, a, b) for a, b in zip(vecs[i], vecs[j])]
                vecs[i], vecs[j] = lo, hi
            for ks, vec in zip(per_warp, vecs):
                for k, t in zip(ks, vec):
                    out[k] = t
        return out


def _vector_getter(keys: tuple) -> Any:
    if len(keys) == 1:
        k = keys[0]
        return lambda row: (row[k],)
    return itemgetter(*keys)


def _lex_less(a: Sequence[Any], b: Sequence[Any]) -> Any:
    """``a < b`` lexicographically, each position compared unsigned."""
    out: Any = z3.BoolVal(False)
    for x, y in reversed(list(zip(a, b))):
        out = z3.Or(z3.ULT(x, y), z3.And(x == y, out))
    return out


def sorting_network(n: int) -> list[tuple[int, int]]:
    """Comparators ``(i, j)``, ``i < j``, of Batcher's odd-even merge sort for ``n``
    inputs (the network for the next power of two, without the comparators that touch
    an input past ``n``: padding with maxima at the top, those never swap)."""
    size = 1
    while size < n:
        size *= 2
    out: list[tuple[int, int]] = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    a, b = i + j, i + j + k
                    if a // (2 * p) == b // (2 * p) and b < n:
                        out.append((a, b))
            k //= 2
        p *= 2
    return out


def warp_symmetry(enc: Encoding, groups: Sequence[Sequence[int]]
                  ) -> tuple[Optional[WarpSymmetry], str]:
    """The keys of every warp of ``groups``, or None and why the encoding cannot permute
    them (twins of different widths)."""
    sysm = enc.sys
    names = sysm.layout.names
    comp = [component_of(n) for n in names]
    out = []
    for g in groups:
        per_warp = []
        for a in g:
            mine = comp[sysm.agents[a].pc]
            ks: list[int] = []
            for s in range(sysm.n):
                if comp[s] != mine:
                    continue
                if s in enc.key_of_slot:
                    ks.append(enc.key_of_slot[s])
                elif s in enc.qkeys:
                    ents, ln = enc.qkeys[s]
                    ks.extend(ents + [ln])
            per_warp.append(tuple(ks))
        shapes = {tuple(enc.width[k] for k in ks) for ks in per_warp}
        if len(shapes) != 1:
            return None, (f"the keys of the interchangeable warps {list(g)} differ in "
                          "number or width")
        out.append(tuple(per_warp))
    return WarpSymmetry(tuple(tuple(g) for g in groups), tuple(out)), ""


def _transpositions(sym: WarpSymmetry) -> Iterator[tuple[int, int, dict[int, int]]]:
    """Every two neighbours ``a``, ``b`` of a group (transpositions generate every
    permutation) with the key permutation that swaps them."""
    for g, per_warp in zip(sym.groups, sym.keys):
        for p in range(len(g) - 1):
            perm: dict[int, int] = {}
            for ka, kb in zip(per_warp[p], per_warp[p + 1]):
                perm[ka], perm[kb] = kb, ka
            yield g[p], g[p + 1], perm


def _twin_item(item: tuple, a: int, b: int) -> tuple:
    """An environment item with warps ``a`` and ``b`` swapped: an item names the warp
    whose queue it drains second (TMA items name their issuer, which is in no group)."""
    if item[1] in (a, b):
        return (item[0], b if item[1] == a else a) + tuple(item[2:])
    return item


def symmetry_queries(u: Any, sym: WarpSymmetry) -> tuple[list[tuple[str, Any]], str]:
    """For every two neighbours of a group (transpositions generate every permutation):
    swapping their keys -- and the actor names of the step, a warp for its twin, a
    warp's asynchronous items for its twin's -- maps a good step to a good step, a
    problem step to a problem step and a deadlock to a deadlock.  Each query is unsat
    exactly then.  Empty list and why when a swap has no counterpart (then the warps
    are not interchangeable for the encoding)."""
    enc = u.enc
    X = enc.X
    index = {a: i for i, a in enumerate(u.actors) if not isinstance(a, int)}
    step = z3.And(u.T_GOOD, u.T_NEXT)
    dead = z3.And(z3.Not(u.T_ENABLED), z3.Not(u.T_DONE))
    out = []
    for a, b, perm in _transpositions(sym):
        if any((k in u.Xn) != (perm[k] in u.Xn) for k in perm):
            return [], f"warps {a} and {b} change different keys"
        pairs = [(X[k], X[perm[k]]) for k in perm]
        pairs += [(u.Xn[k], u.Xn[perm[k]]) for k in perm if k in u.Xn]
        moved = {a: b, b: a}
        for it, i in index.items():
            if it[1] in (a, b):
                twin = _twin_item(it, a, b)
                if twin not in index:
                    return [], f"{it} has no counterpart for warp {moved[it[1]]}"
                moved[i] = index[twin]
        act: Any = u.ACT
        for i, j in moved.items():
            if i != j:
                act = z3.If(u.ACT == z3.BitVecVal(i, u.act_width),
                            z3.BitVecVal(j, u.act_width), act)
        pairs.append((u.ACT, act))
        swap = Substitution(pairs)
        out.append((f"symmetry step {a}<->{b}", z3.And(step, z3.Not(swap(step)))))
        out.append((f"symmetry problem {a}<->{b}",
                    z3.Or(z3.And(u.T_BAD, z3.Not(swap(u.T_BAD))),
                          z3.And(dead, z3.Not(swap(dead))))))
    return out, ""


def template_symmetry(u: Any, sym: WarpSymmetry, deadline: float) -> Optional[bool]:
    """The symmetry of ``symmetry_queries`` shown template by template: for every
    transposition of neighbours and every transition template, the template of the
    swapped actor at the same pc and choice exists, and the swap maps the template's
    guard, check and overflow terms and its updates (to the swapped keys) onto that
    template's.  The step relation, its problem and enabled terms are built from the
    templates alone (``unrolling.Unrolling``: selection by actor, pc and choice; keys a
    template does not update stay), so the swap maps each of them onto itself; the
    "every warp has exited" term is checked as a whole.  Terms are compared as z3
    terms first (equal after ``simplify``), the rest by one z3 query per swap.  True
    when shown, False when some template has no match or differs, None out of time."""
    enc = u.enc
    X = enc.X
    trs = enc.transitions

    def key(t: Any) -> tuple:
        return (("a", t.agent), t.pc, t.step[2]) if t.agent is not None \
            else (("e", t.step[1]), None, None)

    index = {key(t): t for t in trs}
    if len(index) != len(trs):
        return False  # two templates with one selection: not the relation argued about
    for a, b, perm in _transpositions(sym):
        swap = Substitution([(X[k], X[perm[k]]) for k in perm])
        mv = {a: b, b: a}
        pairs = [(swap(u.T_DONE), u.T_DONE)]
        for t in trs:
            (kind, who), pc, ch = key(t)
            twin = ("a", mv.get(who, who)) if kind == "a" else ("e", _twin_item(who, a, b))
            t2 = index.get((twin, pc, ch))
            if t2 is None or {perm.get(k, k) for k in t.updates} != set(t2.updates):
                return False
            pairs += [(swap(t.guard), t2.guard), (swap(t.viol), t2.viol),
                      (swap(t.ovf), t2.ovf)]
            pairs += [(swap(v), t2.updates[perm.get(k, k)]) for k, v in t.updates.items()]
        rest = [x != y for x, y in pairs
                if not (x.eq(y) or z3.simplify(x).eq(z3.simplify(y)))]
        if rest:  # one query: no term of the swapped templates differs
            r = _unsat(z3.Or(*rest), deadline)
            if not r:
                return r
    return True


def _symmetry(u: Any, groups: Sequence[Sequence[int]], deadline: float
              ) -> tuple[Optional[WarpSymmetry], list[tuple[str, Any]], str]:
    """The warp symmetry of ``groups`` with its queries, each shown unsat (``""``), or
    why not.  Shown template by template where that works (``template_symmetry``; the
    queries over the whole relation, which that implies, still go to ``--smt2``), else
    by the queries."""
    if not groups:
        return None, [], ""
    sym, why = warp_symmetry(u.enc, groups)
    if sym is None:
        return None, [], why
    queries, why = symmetry_queries(u, sym)
    if not queries:
        return None, [], why
    if template_symmetry(u, sym, deadline):
        return sym, queries, ""
    for name, q in queries:
        r = _unsat(q, deadline)
        if r is None:
            return None, [], "the symmetry queries ran out of time"
        if not r:
            return None, [], f"the warps are not interchangeable for the encoding ({name})"
    return sym, queries, ""


def certify(u: Any, states: Optional[Sequence[tuple]], deadline: float,
            groups: Sequence[Sequence[int]] = ()) -> tuple[Optional[Certificate], str]:
    """The certificate of the complete state set ``states`` (flat concrete states) over
    the good steps of the unrolling template ``u`` (``unrolling.Unrolling``), or None and why
    not.  With ``groups`` (interchangeable warps), ``states`` holds at least one state of
    every class of states equal up to permuting the warps of a group, and the
    certificate is symmetric (module docstring)."""
    enc = u.enc
    if states is None:
        return None, "the unreduced enumeration did not finish"
    if len(states) > MAX_STATES:
        return None, f"{len(states):,} reachable states (more than {MAX_STATES:,})"
    sym, queries, why = _symmetry(u, groups, deadline)
    if why:
        return None, why
    rows = encode_rows(enc, states)
    if rows is None:
        return None, "a reachable state lies outside the encoding's ranges"
    # rows of unsigned values from here on: what the sort compares and the compiled
    # terms read (z3.BitVecVal takes them as they are)
    init_raw = tuple(v & ((1 << w) - 1) for v, w in zip(enc.init_values, enc.width))
    init_row = init_raw
    if sym is not None:
        rows = {sym.canonical_raw(r) for r in rows}
        init_row = sym.canonical_raw(init_row)
    if init_row not in rows:
        return None, "the initial state is not among the enumerated states"
    how = "evaluated"
    # the state graph, for the starvation decision of kernels that loop for ever
    graph: Optional[list] = [] if (sym is None and not enc.acyclic) else None
    search = None
    try:
        cs = CompiledSteps(enc)
        pf, closed, why = check_by_evaluation(enc, rows, sym, deadline, graph, cs)
        canon = (lambda r: r) if sym is None else sym.canonical_raw

        def search(until: float) -> Optional[list[Problem]]:
            return shortest_problems(cs, init_raw, canon, until)
    except Unsupported:
        how = "z3"
        closure, bad, _ = _queries(u, rows, sym)
        r = _unsat(closure, deadline)
        if r is None:
            return None, "the closure query ran out of time"
        closed, why = r, "the enumerated states are not closed under the encoding's steps"
        pf = _unsat(bad, deadline) if closed else None
    if closed is None:
        return None, why
    if not closed:
        return None, why

    def build() -> tuple[Any, tuple]:
        closure, bad, term = _queries(u, rows, sym)
        return term, tuple(queries) + (("closure", closure),) + (
            (("problem", bad),) if pf else ())

    return Certificate(len(rows), pf, {"symmetry": [list(g) for g in sym.groups] if sym
                                       else [], "closure": how}, build,
                       tuple(graph) if graph else None, None if pf else search,
                       cs if search is not None else None, init_raw), ""


def certify_reduced(u: Any, deadline: float,
                    groups: Sequence[Sequence[int]] = ()) -> tuple[Optional[Certificate], str]:
    """PROVEN from a *reduced* state set, or None and why not.  For kernels whose every
    warp ends (``Encoding.acyclic``); only a set without problem states is a certificate
    (with problems, counterexamples need the unreduced set: the reduction does not keep
    their shortest length).

    The safe points are proven by z3 (``checker/safesteps.py``) under an invariant
    Houdini proves (``invariants.find_tuple_invariants``) from candidates read off a
    first pass of the enumeration below with the explicit engine's candidate points
    (unproven, so that pass is only a source of reachable states).  When z3 proves
    every candidate, the first pass is the enumeration; else it is run again with the
    proven points.

    The set ``R`` is enumerated here, from the sorted initial row, over the encoding's
    compiled steps (``checker/evalgraph.py``) with the *reduced rule*: in a row where
    some warp (lowest index first) is at one of its safe points with an enabled step,
    only that warp's steps are followed; in any other row every step.  Every step of
    every row is evaluated all the same, and the pass refuses the set when one
    violates, leaves the encoding, or a row deadlocks.  Checked besides: the warps'
    symmetry (``symmetry_queries``) and that the reduced graph over ``R`` has no cycle.

    **Theorem.**  Then no state reachable by good steps of the encoding has a problem.
    Suppose one does; take a row ``s`` of ``R`` from which a problem is reachable, with
    the least (``k``, height of ``s`` in the acyclic reduced graph), ``k`` the length of
    a shortest such run ``w`` (ending in a deadlock or a violating step).  ``k > 0``,
    since ``s`` has no problem.  If the reduced rule follows every step of ``s``,
    ``w``'s first step leads to a state whose sorted form is a row of ``R`` (the
    symmetry maps runs to runs of the same length) with ``k - 1``.  Else the rule
    follows ``P``, the enabled steps of a warp ``a`` at a safe point, a persistent set
    (``safesteps``, lemma).  If ``w`` contains a step of ``a``, the first one is in
    ``P`` and moves to the front: ``k - 1`` from a successor.  If not, every ``t`` of
    ``P`` stays good along ``w``, so ``w`` does not end in a deadlock, nor in a violating
    step of ``a`` (no other step of ``a`` becomes enabled); its violating last step, of
    another actor, still violates after ``t`` moved to the front (conditions 2, 3): a
    run of length ``k`` from ``t(s)``, whose sorted form is a reduced successor of ``s``
    and lower in the graph.  Either way a smaller pair: a contradiction."""
    enc = u.enc
    if not enc.acyclic:
        return None, "some warp loops for ever"
    sym, queries, why = _symmetry(u, groups, deadline)
    if why:
        return None, why
    try:
        cs = CompiledSteps(enc)
    except Unsupported:
        return None, "a term of the encoding does not compile"
    canon = (lambda r: r) if sym is None else sym.canonical_raw
    cand = {a: frozenset(p) for a, p in footprint_candidates(enc.sys).items()}
    first, why = _reduced_graph(enc, cs, canon, cand, deadline)
    if first is None:
        return None, why
    # the first pass's rows are reachable (canonical forms of states reached by good
    # steps): samples for the invariant the safe points are proven under
    Xn = [u.Xn.get(k, x) for k, x in enumerate(enc.X)]
    left = deadline - time.perf_counter()
    rows = first[0] if len(first[0]) <= INVARIANT_ROWS else \
        random.Random(0).sample(first[0], INVARIANT_ROWS)
    inv = find_tuple_invariants(enc, [_signed(enc, r) for r in rows],
                                z3.And(u.T_GOOD, u.T_NEXT), Xn, 0.5 * left)
    safe = SafeSteps(u, cand, deadline, inv.term)
    if safe.safe == {a: p for a, p in cand.items() if p}:
        graph = first
    else:
        graph, why = _reduced_graph(enc, cs, canon, safe.safe, deadline)
        if graph is None:
            return None, why
    order, succ = graph
    if not _acyclic(succ):
        return None, "the reduced graph has a cycle"
    rows = set(order)

    def build() -> tuple[Any, tuple]:
        return _reduced_queries(u, rows, sym, safe, queries, inv.term)

    return Certificate(len(rows), True, {
        "symmetry": [list(g) for g in sym.groups] if sym else [], "closure": "reduced",
        "safe_steps": dict(safe.stats), "invariants": dict(inv.stats)}, build), ""


def _signed(enc: Encoding, row: tuple) -> list[int]:
    """Unsigned key values as the model's (signed where a key's range is)."""
    return [v - (1 << w) if lo < 0 and v >= 1 << (w - 1) else v
            for v, w, (lo, _) in zip(row, enc.width, enc.key_range)]


def _reduced_graph(enc: Encoding, cs: Any, canon: Callable[[tuple], tuple],
                   safe: dict[int, frozenset], deadline: float
                   ) -> tuple[Optional[tuple[list, list]], str]:
    """The rows reachable under the reduced rule (``certify_reduced``) with the safe
    points ``safe`` and their reduced successor lists, or None and why: a row with a
    problem, too many rows, out of time."""
    pc_keys = cs.pc_keys
    safe_at = [safe.get(a, frozenset()) for a in range(len(pc_keys))]
    init = canon(tuple(v & ((1 << w) - 1) for v, w in zip(enc.init_values, enc.width)))
    index = {init: 0}
    order = [init]
    succ: list[list[int]] = []
    i = 0
    while i < len(order):
        if i % 1024 == 0 and time.perf_counter() > deadline:
            return None, "the reduced enumeration ran out of time"
        if len(order) > MAX_STATES:
            return None, f"more than {MAX_STATES:,} states in the reduced enumeration"
        row = order[i]
        i += 1
        steps = list(cs.successors(row))
        if not steps and not cs.all_done(row):
            return None, "a state of the reduced enumeration deadlocks"
        if any(nxt is None for _, nxt in steps):
            return None, "a state of the reduced enumeration has a violating step"
        follow = steps
        for a, k in enumerate(pc_keys):
            if row[k] in safe_at[a]:
                own = [x for x in steps if x[0].actor == ("a", a)]
                if own:
                    follow = own
                    break
        out = []
        for _, nxt in follow:
            n = canon(nxt)
            j = index.get(n)
            if j is None:
                j = index[n] = len(order)
                order.append(n)
            out.append(j)
        succ.append(out)
    return (order, succ), ""


def _acyclic(succ: list[list[int]]) -> bool:
    """Has the graph (successor lists by index) no cycle?  (Kahn's algorithm.)"""
    indeg = [0] * len(succ)
    for out in succ:
        for j in out:
            indeg[j] += 1
    todo = [i for i, d in enumerate(indeg) if d == 0]
    seen = 0
    while todo:
        i = todo.pop()
        seen += 1
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                todo.append(j)
    return seen == len(succ)


def _reduced_queries(u: Any, rows: set[tuple], sym: Optional[WarpSymmetry], safe: Any,
                     sym_queries: list, inv: Any) -> tuple[Any, tuple]:
    """The term of a reduced certificate's set and its queries (each unsat): symmetry,
    the invariant ``inv`` (initial, inductive), the safe points' conditions under it,
    closure under the reduced rule, problems.  (That the reduced graph has no cycle is
    checked by pipeproof, not by these queries.)"""
    enc = u.enc
    X = enc.X
    Xn = [u.Xn.get(k, x) for k, x in enumerate(X)]
    init = Substitution([(x, z3.BitVecVal(v, w))
                         for x, v, w in zip(X, enc.init_values, enc.width)])
    inv_queries = (("invariant initial", z3.Not(init(inv))),
                   ("invariant inductive", z3.And(
                       inv, u.T_GOOD, u.T_NEXT,
                       z3.Not(Substitution([(x, xn) for x, xn in zip(X, Xn)
                                            if x is not xn])(inv)))))
    R = state_set(enc, rows, X)
    if sym is not None:
        Xn = sym.sort_terms(Xn)
    Rn = Substitution([(x, xn) for x, xn in zip(X, Xn) if x is not xn])(R)
    # the reduced rule: the lowest warp at a safe point with an enabled step moves
    chosen: Any = z3.BoolVal(True)
    for a in sorted(safe.safe, reverse=True):
        chosen = z3.If(safe.enabled_term(a), u.is_act(a), chosen)
    closure = z3.And(R, u.T_GOOD, u.T_NEXT, chosen, z3.Not(Rn))
    problem = z3.Or(u.T_BAD, z3.And(z3.Not(u.T_ENABLED), z3.Not(u.T_DONE)))
    term = R if sym is None else Substitution(list(zip(X, sym.sort_terms(X))))(R)
    return term, (tuple(sym_queries) + inv_queries + tuple(safe.queries)
                  + (("reduced closure", closure), ("problem", z3.And(R, problem))))


def _queries(u: Any, rows: set[tuple], sym: Optional[WarpSymmetry]) -> tuple[Any, Any, Any]:
    """The closure query, the problem query and the invariant term of ``rows``."""
    enc = u.enc
    X = enc.X
    R = state_set(enc, rows, X)
    Xn = [u.Xn.get(k, x) for k, x in enumerate(X)]
    if sym is not None:
        Xn = sym.sort_terms(Xn)
    Rn = Substitution([(x, xn) for x, xn in zip(X, Xn) if x is not xn])(R)
    closure = z3.And(R, u.T_GOOD, u.T_NEXT, z3.Not(Rn))
    problem = z3.Or(u.T_BAD, z3.And(z3.Not(u.T_ENABLED), z3.Not(u.T_DONE)))
    # the invariant of every state: its sorted form is one of the rows
    term = R if sym is None else Substitution(list(zip(X, sym.sort_terms(X))))(R)
    return closure, z3.And(R, problem), term


def check_by_evaluation(enc: Encoding, rows: set[tuple], sym: Optional[WarpSymmetry],
                        deadline: float = float("inf"), graph: Optional[list] = None,
                        cs: Optional[CompiledSteps] = None
                        ) -> tuple[Optional[bool], Optional[bool], str]:
    """Queries 2 and 3 (closure, problems) decided state by state: every transition
    template's terms (``Encoding.transitions``: guard, ``Transition.good`` and updates,
    the terms ``unrolling.Unrolling`` builds its relation from) compiled by ``checker/termeval.py``
    and evaluated on every row (``rows``: unsigned values, sorted forms when ``sym``).
    Returns (problem-free or None if not closed, closed
    or None past ``deadline``, why not closed); raises ``termeval.Unsupported`` for a
    term it cannot compile.  With ``graph`` (a list, only without ``sym``): appends the
    rows in a fixed order and, per row, its good steps as (target index, actor) pairs,
    actor ``("a", warp)`` or ``("e", item)`` -- the encoding's state graph over ``rows``."""
    cs = cs if cs is not None else CompiledSteps(enc)
    urows = rows  # unsigned values, as the compiled terms read and write them
    canon = (lambda r: r) if sym is None else sym.canonical_raw
    problem_free = True
    order = list(urows)
    index = {r: i for i, r in enumerate(order)} if graph is not None else {}
    succ: list[list[tuple[int, tuple]]] = []
    for i, row in enumerate(order):
        if i % 1024 == 0 and time.perf_counter() > deadline:
            return None, None, "the closure check ran out of time"
        enabled = False
        edges: list[tuple[int, tuple]] = []
        for c, nxt in cs.successors(row):
            enabled = True
            if nxt is None:  # enabled, not good: violates or leaves the encoding
                problem_free = False
                continue
            nrow = canon(nxt)
            if nrow not in urows:
                return None, False, ("the enumerated states are not closed under the "
                                     "encoding's steps")
            if graph is not None:
                edges.append((index[nrow], c.actor))
        if not enabled and not cs.all_done(row):
            problem_free = False
        succ.append(edges)
    if graph is not None:
        graph.extend([order, succ])
    return problem_free, True, ""


def encode_rows(enc: Encoding, states: Sequence[tuple]) -> Optional[set[tuple]]:
    """The key values of every state (``Encoding.encode_concrete``, column by column:
    the per-state loop took seconds for 50,000 states) as unsigned bit-vector values, or
    None when one of them lies outside the encoding's ranges or queues."""
    if not states:
        return set()
    flat_cols = list(zip(*states))
    cols: list[Any] = [None] * enc.nkeys
    for s, k in enc.key_of_slot.items():
        cols[k] = tuple(map(int, flat_cols[s]))
    for s, (ents, ln) in enc.qkeys.items():
        qs = flat_cols[s]
        if max(map(len, qs)) > len(ents):
            return None
        for j, k in enumerate(ents):
            cols[k] = tuple(int(q[j]) if len(q) > j else 0 for q in qs)
        cols[ln] = tuple(map(len, qs))
    pool = enc.sys.pool
    for it, k in enc.pool_keys.items():
        cols[k] = tuple(sum(1 for x in p if tuple(x) == it) for p in flat_cols[pool])
    for k, col in enumerate(cols):
        lo, hi = enc.key_range[k]
        if not (lo <= min(col) and max(col) <= hi):
            return None
        if lo < 0 and min(col) < 0:
            m = (1 << enc.width[k]) - 1
            cols[k] = tuple(v & m for v in col)
    return set(zip(*cols))


def _unsat(term: Any, deadline: float) -> Optional[bool]:
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    s = z3.SolverFor("QF_BV")
    s.set("timeout", solver_ms(left))
    s.add(term)
    r = s.check()
    return None if r == z3.unknown else r == z3.unsat


def write_smt2(cert: Certificate, path: str) -> None:
    """The certificate as one SMT-LIB 2 query (``--smt2``): the disjunction of its
    queries over shared variables; ``unsat`` means the proof holds."""
    s = z3.Solver()
    s.add(z3.Or(*[q for _, q in cert.queries]))
    with open(path, "w") as f:
        if cert.stats.get("closure") == "reduced":
            f.write(f"; pipeproof reduced certificate: R = the {cert.states:,} states reached "
                    "following one warp alone at its safe points (the initial state is one "
                    "of them)\n; safe step: the conditions of checker/safesteps.py fail "
                    "under the proven invariant\n; reduced closure: R(x) and a step x -> x' "
                    "the reduced rule follows and not R(x')\n; (that the reduced graph "
                    "over R has no cycle is checked by pipeproof, not here)\n")
        else:
            f.write(f"; pipeproof certificate: R = the {cert.states:,} reachable states of "
                    "the encoding (the initial state is one of them)\n"
                    "; closure: R(x) and a good step x -> x' and not R(x')\n")
        if cert.problem_free:
            f.write("; or problem: R(x) and (x deadlocks or has an enabled violating step)\n")
        f.write("; unsat = R is an inductive invariant"
                + (" in which no state violates or deadlocks\n" if cert.problem_free
                   else "\n"))
        f.write("(set-logic QF_BV)\n")
        f.write(s.sexpr())
        f.write("(check-sat)\n")
