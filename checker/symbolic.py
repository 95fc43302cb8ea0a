"""Symbolic interpretation of the model: the transition relation as z3 terms.

ARCHITECTURE.md, "one semantics, several interpreters": the rules of
``model/system.py`` and ``model/mbarrier.py`` are written against a value interface
``V`` and a state accessor ``S``.  This module supplies the z3 versions of both and runs
the *same* ``System.exec_agent`` / ``exec_env`` / ``env_enabled`` code over them, once per
transition, with every state slot a free variable.  Nothing here restates a rule of the
semantics; it only encodes values.

* ``Z3Values`` -- the value interface (method names of ``model/values.py`` ``Concrete``)
  over fixed-width bit-vectors and Booleans.  It folds constants: when every operand is
  a Python value the result is a Python value, so the parts of a step that do not depend
  on the state (static operands, conditions that are known) cost nothing and checks that
  are concretely false are dropped (``model.properties.add_check``).  Bit-vectors of
  ``width`` bits are exact because every value the model keeps is range-checked well
  inside them (mbarrier counts and tx within 2^20, see ``model/mbarrier.py``; the width
  is chosen from the largest constant in the programs).
* ``SymState`` -- the state accessor: ``get``/``set`` on scalar slots, and the
  ``QueueOps`` of ``model.system`` with fixed-size encodings: a warp's tcgen05 /
  cp.async / bulk-store queue is a vector of ``cap`` entries plus a length (entries past
  the length are kept 0, so equal queues are equal vectors), the TMA/CLC in-flight pool
  is one counter per static item of ``System.static_env_items()``.  A push into a full
  queue records an *overflow* condition; engines treat a reachable overflow as "the
  encoding is too small" (never as SAFE).  ``fork``/``merge`` let ``System.run_local``
  follow both sides of a branch on a symbolic local and merge them with ``ite``.
* ``Encoding`` -- the symbolic transition relation: one ``Transition`` per warp
  instruction (and outcome choice) and per static environment item, each with its guard
  (enabled), violation and overflow conditions and its slot updates, all over template
  variables ``X`` (one per state key).  Engines instantiate the templates per step.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Callable, Iterable, Optional, Sequence

import z3

from ..model.program import (Branch, BulkCommit, CpAsync, CpAsyncArrive, CpAsyncCommit, Jump,
                             SetLocal,
                             TmaStore, UmmaCommit, is_acyclic)
from ..model.system import DONE, ConcreteState, QueueOps, System
from ..model.values import CONCRETE
from .errors import SetupTimeout
from .por import stubborn_sets
from .statespace import Explorer

_PY = (int, bool)
#: widest bit-vector a value may need (exactness guard; the model's values are far smaller)
MAX_WIDTH = 128


def _is_py(x: Any) -> bool:
    return isinstance(x, _PY)


def bits_for(lo: int, hi: int) -> int:
    """Width of the smallest signed bit-vector holding every value of [lo, hi]."""
    w = 2
    while not (-(1 << (w - 1)) <= lo and hi <= (1 << (w - 1)) - 1):
        w += 1
    return w


def _ext(t: Any, w: int) -> Any:
    d = w - t.size()
    return t if d == 0 else z3.SignExt(d, t)


class SV:
    """A symbolic integer: a z3 bit-vector term of just the width it needs, with an
    interval ``[lo, hi]`` that is known to contain its value.

    Arithmetic widens (``a + b`` has one bit more than the wider operand), so it is exact
    integer arithmetic; the interval lets comparisons against out-of-range constants fold
    to Python bools (e.g. the 2^20 range checks of ``model/mbarrier.py`` on a 16-bit
    tx-count).  Python truth tests and ``==`` raise: the model must go through ``V``."""

    __slots__ = ("t", "lo", "hi")

    def __init__(self, t: Any, lo: int, hi: int):
        self.t = t
        self.lo = lo
        self.hi = hi

    def __repr__(self) -> str:
        return f"SV({self.t}, [{self.lo}, {self.hi}])"

    def __bool__(self) -> bool:
        raise TypeError("a symbolic value was used as a Python truth value")

    def __eq__(self, other: object) -> bool:  # pragma: no cover - misuse guard
        raise TypeError("compare symbolic values with V.eq")

    __hash__ = object.__hash__

    def __add__(self, o: Any) -> Any:
        return _add(self, o)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Any:
        return _add(self, _neg(o))

    def __rsub__(self, o: Any) -> Any:
        return _add(o, _neg(self))

    def __neg__(self) -> Any:
        return _neg(self)

    def __mul__(self, o: Any) -> Any:
        if not isinstance(o, int):
            raise TypeError("only multiplication by a constant is supported")
        if o == 0:
            return 0
        if o == 1:
            return self
        lo, hi = sorted((self.lo * o, self.hi * o))
        w = max(bits_for(lo, hi), self.t.size(), bits_for(o, o))
        return _mk(_ext(self.t, w) * z3.BitVecVal(o, w), lo, hi)  # exact: fits in w bits

    __rmul__ = __mul__


def _sv(x: Any) -> SV:
    """Any integer-like value as an SV (Python ints and z3 Booleans included)."""
    if isinstance(x, SV):
        return x
    if isinstance(x, _PY):
        n = int(x)
        return SV(z3.BitVecVal(n, bits_for(n, n)), n, n)
    if z3.is_bool(x):
        return SV(z3.If(x, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2)), 0, 1)
    raise TypeError(f"not a value: {x!r}")


def _mk(t: Any, lo: int, hi: int) -> Any:
    if lo == hi:
        return lo
    if t.size() > MAX_WIDTH:
        raise OverflowError("symbolic value wider than MAX_WIDTH bits")
    return SV(t, lo, hi)


def _add(a: Any, b: Any) -> Any:
    if _is_py(a) and _is_py(b):
        return int(a) + int(b)
    if _is_py(b) and b == 0:
        return a
    if _is_py(a) and a == 0:
        return b
    x, y = _sv(a), _sv(b)
    lo, hi = x.lo + y.lo, x.hi + y.hi
    w = max(bits_for(lo, hi), x.t.size(), y.t.size())
    return _mk(_ext(x.t, w) + _ext(y.t, w), lo, hi)


def _neg(a: Any) -> Any:
    if _is_py(a):
        return -int(a)
    x = _sv(a)
    w = max(bits_for(-x.hi, -x.lo), x.t.size())
    return _mk(-_ext(x.t, w), -x.hi, -x.lo)


def _aligned(a: Any, b: Any) -> tuple[Any, Any]:
    x, y = _sv(a), _sv(b)
    w = max(x.t.size(), y.t.size())
    return _ext(x.t, w), _ext(y.t, w)


def _boolish(x: Any) -> bool:
    return isinstance(x, bool) or (not isinstance(x, (int, SV)) and z3.is_bool(x))


class Z3Values:
    """The value interface of ``model/values.py`` over z3 bit-vectors (``SV``) and
    Booleans, folding everything that is known (see ``SV``)."""

    symbolic = True

    # ---------------------------------------------------------------- lifting

    @staticmethod
    def boolean(x: Any) -> Any:
        """A z3 Boolean term (an integer means ``x != 0``)."""
        if isinstance(x, _PY):
            return z3.BoolVal(bool(x))
        if isinstance(x, SV):
            return z3.Not(x.t == 0)
        return x

    # ---------------------------------------------------------------- interface

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if _is_py(c):
            return a if c else b
        if isinstance(c, SV):
            if c.lo > 0 or c.hi < 0:
                return a
            if c.lo == 0 == c.hi:
                return b
        c = self.boolean(c)
        if a is b:
            return a
        if _boolish(a) and _boolish(b):
            if _is_py(a) and _is_py(b) and bool(a) == bool(b):
                return a
            return z3.If(c, self.boolean(a), self.boolean(b))
        if _is_py(a) and _is_py(b) and int(a) == int(b):
            return a
        if isinstance(a, SV) and isinstance(b, SV) and a.t.eq(b.t):
            return a if (a.lo, a.hi) == (b.lo, b.hi) else SV(a.t, min(a.lo, b.lo),
                                                            max(a.hi, b.hi))
        x, y = _sv(a), _sv(b)
        ta, tb = _aligned(x, y)
        return _mk(z3.If(c, ta, tb), min(x.lo, y.lo), max(x.hi, y.hi))

    def and_(self, *xs: Any) -> Any:
        terms = []
        for x in xs:
            if _is_py(x):
                if not x:
                    return False
            else:
                terms.append(self.boolean(x))
        if not terms:
            return True
        return terms[0] if len(terms) == 1 else z3.And(*terms)

    def or_(self, *xs: Any) -> Any:
        terms = []
        for x in xs:
            if _is_py(x):
                if x:
                    return True
            else:
                terms.append(self.boolean(x))
        if not terms:
            return False
        return terms[0] if len(terms) == 1 else z3.Or(*terms)

    def not_(self, x: Any) -> Any:
        if _is_py(x):
            return not x
        return z3.Not(self.boolean(x))

    def eq(self, a: Any, b: Any) -> Any:
        if _is_py(a) and _is_py(b):
            return a == b
        if _boolish(a) and _boolish(b):
            return self.boolean(a) == self.boolean(b)
        x, y = _sv(a), _sv(b)
        if x.hi < y.lo or y.hi < x.lo:
            return False
        ta, tb = _aligned(x, y)
        return ta == tb

    def ne(self, a: Any, b: Any) -> Any:
        r = self.eq(a, b)
        return (not r) if _is_py(r) else z3.Not(r)

    def lt(self, a: Any, b: Any) -> Any:
        if _is_py(a) and _is_py(b):
            return a < b
        x, y = _sv(a), _sv(b)
        if x.hi < y.lo:
            return True
        if x.lo >= y.hi:
            return False
        ta, tb = _aligned(x, y)
        return ta < tb  # signed

    def le(self, a: Any, b: Any) -> Any:
        if _is_py(a) and _is_py(b):
            return a <= b
        x, y = _sv(a), _sv(b)
        if x.hi <= y.lo:
            return True
        if x.lo > y.hi:
            return False
        ta, tb = _aligned(x, y)
        return ta <= tb

    def mod(self, a: Any, b: Any) -> Any:
        """Python's ``a % b`` (floor modulo) for a constant ``b > 0``."""
        if _is_py(a) and _is_py(b):
            return a % b
        if not (isinstance(b, int) and b > 0):
            raise NotImplementedError("modulo by a symbolic or non-positive value")
        x = _sv(a)
        if 0 <= x.lo and x.hi < b:
            return x
        if b & (b - 1) == 0:  # two's complement: the low bits are the floor modulo
            k = b.bit_length() - 1
            if k == 0:
                return 0
            t = x.t if x.t.size() > k else _ext(x.t, k + 1)
            return _mk(z3.ZeroExt(1, z3.Extract(k - 1, 0, t)), 0, b - 1)
        w = max(x.t.size(), bits_for(0, b))
        return _mk(_ext(x.t, w) % z3.BitVecVal(b, w), 0, b - 1)  # bvsmod

    def div(self, a: Any, b: Any) -> Any:
        """Python's ``a // b`` (floor division) for a constant ``b > 0``."""
        if _is_py(a) and _is_py(b):
            return a // b
        if not (isinstance(b, int) and b > 0):
            raise NotImplementedError("division by a symbolic or non-positive value")
        x = _sv(a)
        lo, hi = x.lo // b, x.hi // b
        w = max(x.t.size(), bits_for(0, b)) + 1
        t = _ext(x.t, w)
        r = t % z3.BitVecVal(b, w)  # bvsmod: the sign of the divisor, as in Python
        return _mk((t - r) / z3.BitVecVal(b, w), lo, hi)  # an exact (bvsdiv) division

    def select(self, seq: Sequence[Any], i: Any) -> Any:
        if _is_py(i):
            return seq[i]
        out = seq[-1]
        for k in range(len(seq) - 2, -1, -1):
            out = self.ite(self.eq(i, k), seq[k], out)
        return out

    def in_range(self, x: Any, lo: int, hi: int) -> Any:
        return self.and_(self.le(lo, x), self.lt(x, hi))

    @staticmethod
    def is_true(x: Any) -> bool:
        """Is ``x`` known to be true (a Python truth or the literal ``True``)?"""
        if _is_py(x):
            return bool(x)
        if isinstance(x, SV):
            return x.lo > 0 or x.hi < 0
        return z3.is_true(x)

    @staticmethod
    def const(x: Any) -> Any:
        return x


# --------------------------------------------------------------------------- state


class SymState(QueueOps):
    """State accessor over z3 terms (see the module docstring for the encodings).

    ``scal``: slot -> term; ``queues``: slot -> (entries, length); ``pool``: in-flight
    item ``(agent, pc, delivery, choice)`` -> count.  ``ovf`` is the condition under which
    a push overflowed a queue in this step."""

    __slots__ = ("V", "pool_slot", "scal", "queues", "pool", "ovf")

    def __init__(self, V: Z3Values, pool_slot: int, scal: dict, queues: dict, pool: dict,
                 ovf: Any = False):
        self.V = V
        self.pool_slot = pool_slot
        self.scal = scal
        self.queues = queues
        self.pool = pool
        self.ovf = ovf

    def get(self, i: int) -> Any:
        return self.scal[i]

    def set(self, i: int, x: Any) -> None:
        if isinstance(x, bool):
            x = int(x)
        elif not isinstance(x, (int, SV)):
            x = _sv(x)  # a z3 Boolean stored as 0/1
        self.scal[i] = x

    # QueueOps ----------------------------------------------------------------

    def q_push(self, slot: int, x: Any) -> None:
        V = self.V
        ents, ln = self.queues[slot]
        cap = len(ents)
        if _is_py(ln):
            if ln >= cap:
                self.ovf = True
            else:
                ents = ents[:ln] + (x,) + ents[ln + 1:]
        else:
            ents = tuple(V.ite(V.eq(ln, j), x, e) for j, e in enumerate(ents))
            self.ovf = V.or_(self.ovf, V.le(cap, ln))
        self.queues[slot] = (ents, ln + 1)

    def q_pop(self, slot: int) -> Any:
        ents, ln = self.queues[slot]
        if not ents:  # only under a false guard (a queue that can never hold anything)
            return 0
        self.queues[slot] = (ents[1:] + (0,), ln - 1)
        return ents[0]

    def q_len(self, slot: int) -> Any:
        return self.queues[slot][1]

    def q_head(self, slot: int) -> Any:
        ents = self.queues[slot][0]
        return ents[0] if ents else 0

    def q_count(self, slot: int, x: Any) -> Any:
        V = self.V
        if slot == self.pool_slot:
            return self.pool.get(tuple(x), 0)
        ents, ln = self.queues[slot]
        total: Any = 0
        for j, e in enumerate(ents):
            total = total + V.ite(V.and_(V.lt(j, ln), V.eq(e, x)), 1, 0)
        return total

    def pool_add(self, slot: int, item: tuple) -> None:
        self.pool[item] = self.pool.get(item, 0) + 1

    def pool_remove(self, slot: int, item: tuple) -> None:
        self.pool[item] = self.pool.get(item, 0) - 1

    # fork / merge (symbolic branches in System.run_local) -------------------

    def fork(self) -> "SymState":
        return SymState(self.V, self.pool_slot, dict(self.scal), dict(self.queues),
                        dict(self.pool), self.ovf)

    def merge(self, c: Any, a: "SymState", b: "SymState") -> None:
        """This state := ``a`` where ``c`` holds, else ``b``."""
        V = self.V
        self.scal = {k: V.ite(c, a.scal[k], b.scal[k]) for k in a.scal}
        q = {}
        for k, (ea, la) in a.queues.items():
            eb, lb = b.queues[k]
            q[k] = (tuple(V.ite(c, x, y) for x, y in zip(ea, eb)), V.ite(c, la, lb))
        self.queues = q
        self.pool = {k: V.ite(c, a.pool.get(k, 0), b.pool.get(k, 0))
                     for k in set(a.pool) | set(b.pool)}
        self.ovf = V.or_(V.and_(c, a.ovf), V.and_(V.not_(c), b.ovf))


# --------------------------------------------------------------------------- encoding


@dataclass
class Transition:
    """One transition template: a warp instruction with one outcome choice, or one
    static environment item.  Terms are over the template variables ``Encoding.X``."""

    index: int
    step: tuple                  # ("a", agent, choice) or ("e", item): Explorer's step ids
    agent: Optional[int]         # the warp, for agent steps
    pc: Optional[int]
    guard: Any                   # enabled (pc matches and the instruction can proceed)
    viol: Any                    # some check of the step fails
    ovf: Any                     # the encoding is too small (queue or value range)
    updates: dict[int, Any] = field(default_factory=dict)  # key -> new value (width of key)
    reads: frozenset = frozenset()   # unused (kept for reductions)
    checks: tuple = ()           # (condition, prop) of every check, in the model's order

    def good(self) -> Any:
        """Enabled, violating no check and staying in the encoding: a step the unrollings
        take (``bmc.selected_steps``) and the certificate follows."""
        return z3.simplify(z3.And(self.guard, z3.Not(self.viol), z3.Not(self.ovf)))

    def problem(self) -> Any:
        """Enabled but violating a check or leaving the encoding: the last step of a
        counterexample (or an overflow restart)."""
        return z3.simplify(z3.And(self.guard, z3.Or(self.viol, self.ovf)))

    def first_violation(self, prop: str) -> Any:
        """The step's *first* failing check has property ``prop`` (how the explicit
        engine names a violating step)."""
        out = []
        earlier: list[Any] = []
        for c, p in self.checks:
            if p == prop:
                out.append(z3.And(c, *[z3.Not(e) for e in earlier]) if earlier else c)
            earlier.append(c)
        return z3.simplify(z3.Or(*out)) if out else z3.BoolVal(False)


def queue_pushes(code: Sequence[Any]) -> tuple[int, int, int]:
    """Static counts of the instructions that push onto a warp's tcgen05, cp.async and
    bulk-store queues (``System.exec_agent``)."""
    tc = sum(isinstance(i, UmmaCommit) for i in code)
    cp = sum(isinstance(i, (CpAsync, CpAsyncArrive, CpAsyncCommit)) for i in code)
    bs = sum(isinstance(i, (TmaStore, BulkCommit)) for i in code)
    return tc, cp, bs


def pool_key_name(item: Sequence[Any]) -> str:
    """The key name of the counter of one TMA/CLC delivery in flight, ``(agent, pc,
    delivery, choice)`` (``Encoding.pool_keys``)."""
    return f"in_flight{list(item)}"


def join_ranges(ranges: dict, twins: Sequence[Any]) -> None:
    """Give each of ``twins`` that has a range in ``ranges`` the union of their ranges
    (keys whose values a symmetry swaps)."""
    rs = [ranges[k] for k in twins if k in ranges]
    if rs:
        r = (min(x[0] for x in rs), max(x[1] for x in rs))
        for k in twins:
            if k in ranges:
                ranges[k] = r


@dataclass
class Sample:
    """Value ranges seen in a bounded concrete exploration (a guess for the encoding's
    ranges; the encoding checks every update against its ranges, so a wrong guess costs
    a restart, never soundness)."""

    slot: dict[int, tuple[int, int]] = field(default_factory=dict)
    qlen: dict[int, int] = field(default_factory=dict)
    pool: dict[tuple, int] = field(default_factory=dict)
    complete: bool = False
    states: int = 0
    #: some of the states seen (flat tuples), for ``checker/invariants.py``
    kept: list = field(default_factory=list)
    #: ``checker/invariants.py`` results per encoding shape (``bmc.prove_invariants``, ``bmc.prove_certificate``)
    invariants: dict = field(default_factory=dict)
    #: every reachable state (flat tuples) when the unreduced pass finished, else None
    #: (``checker/certificate.py``); up to ``symmetry`` when that is not empty: one state
    #: of every class of states equal up to a permutation of the warps of a group
    reachable: Optional[list] = None
    #: groups of interchangeable warps (``statespace.symmetric_groups``) ``reachable`` is
    #: reduced by
    symmetry: list = field(default_factory=list)


#: sampled states kept for invariant candidates (``checker/invariants.py``)
KEEP_STATES = 20_000


def sample_ranges(system: System, max_states: int = 50_000, seconds: float = 2.0,
                  exact_seconds: Optional[float] = None,
                  reduced_seconds: Optional[float] = None) -> Sample:
    """Breadth-first exploration of at most ``max_states`` concrete states: unreduced
    but for warp symmetry for ``exact_seconds`` (default 40% of ``seconds``), then, if
    that did not finish, reduced for the rest of ``seconds`` (or, given
    ``reduced_seconds``, for that long from where the first search stopped)."""
    import time
    from collections import Counter, deque

    queue_slots = [s for ag in system.agents for s in (ag.qtc, ag.qcp, ag.qbs)]
    qset = set(queue_slots)
    scal = [i for i in range(system.n) if i != system.pool and i not in qset]
    out = Sample()
    t0 = time.perf_counter()
    # exact when it finishes; else the reduced search below
    t_end = t0 + (0.4 * seconds if exact_seconds is None else exact_seconds)

    def note(st: tuple) -> None:
        for i in scal:
            v = int(st[i])
            r = out.slot.get(i)
            out.slot[i] = (v, v) if r is None else (min(r[0], v), max(r[1], v))
        for q in queue_slots:
            out.qlen[q] = max(out.qlen.get(q, 0), len(st[q]))
        for it, n in Counter(st[system.pool]).items():
            out.pool[tuple(it)] = max(out.pool.get(tuple(it), 0), n)

    # unreduced but for warp symmetry: one state per class of states equal up to a
    # permutation of interchangeable warps (a group of 4 such warps: up to 24 times fewer).
    # Not where some warp loops for ever: there the certificate's state graph decides
    # starvation, following each warp along its cycles (as the explicit engine does)
    acyclic = all(is_acyclic(ag.program.code) for ag in system.agents)
    sym = Explorer(system, symmetry=acyclic)
    seen = {sym.initial}
    todo = deque([sym.initial])
    while todo:
        if len(seen) >= max_states or time.perf_counter() > t_end:
            break
        for _, nxt, viol in sym.successors(todo.popleft()):
            if viol is None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    else:
        out.complete = True
    # the ranges from the distinct values of each component (a state is a tuple of
    # component numbers), not state by state: far fewer of them
    table, comp_slots = sym.packer.table, sym.packer.comp_slots
    for ci, column in enumerate(zip(*seen)):
        for cid in set(column):
            part = [None] * system.n
            for s, v in zip(comp_slots[ci], table[cid]):
                part[s] = v
            for i in comp_slots[ci]:
                if i in qset:
                    out.qlen[i] = max(out.qlen.get(i, 0), len(part[i]))
                elif i == system.pool:
                    for it, n in Counter(part[i]).items():
                        out.pool[tuple(it)] = max(out.pool.get(tuple(it), 0), n)
                else:
                    v = int(part[i])
                    r = out.slot.get(i)
                    out.slot[i] = (v, v) if r is None else (min(r[0], v), max(r[1], v))
    out.states = len(seen)
    out.kept = [sym.packer.unpack(st) for st in list(seen)[:KEEP_STATES]]
    if out.complete:
        out.reachable = [sym.packer.unpack(st) for st in seen]
        out.symmetry = [list(g) for g in sym.groups]
        # the states of a class hold the same values in permuted warps: every warp of a
        # group gets the ranges of all of them
        for g in out.symmetry:
            comps = [sym.packer.comp_slots[sym.agent_comp[a]] for a in g]
            for twins in zip(*comps):
                join_ranges(out.slot, twins)
                if twins[0] in out.qlen:
                    n = max(out.qlen.get(s, 0) for s in twins)
                    for s in twins:
                        out.qlen[s] = n
    if not out.complete:
        # the reduced search (symmetry, partial-order reduction) gets much further in
        # the same time; it may skip states, which the shape-wide ranges and headroom
        # below, and in the end the overflow restarts of the BMC engine, make up for
        t_end = t0 + seconds if reduced_seconds is None else \
            time.perf_counter() + reduced_seconds
        try:
            ex = Explorer(system, symmetry=True,
                          reduction=stubborn_sets(full=True, deadline=t_end) if acyclic
                          else None)
        except SetupTimeout:
            # the reduction's set-up outlasted the sampling's time: the symmetric
            # search without it (the ranges decide how soon the encoding fits, never
            # a verdict)
            ex = Explorer(system, symmetry=True)
        rseen = {ex.initial}
        rtodo = deque([ex.initial])
        while rtodo and len(rseen) < 4 * max_states and time.perf_counter() < t_end:
            for _, nxt, viol in ex.successors(rtodo.popleft()):
                if viol is None and nxt not in rseen:
                    rseen.add(nxt)
                    rtodo.append(nxt)
                    full = ex.packer.unpack(nxt)
                    note(full)
                    if len(out.kept) < KEEP_STATES:
                        out.kept.append(full)
        out.states += len(rseen)
        # an unfinished sample sees some CTAs, warps and stages further along than their
        # twins; give every slot the range of all slots of the same shape (each one found
        # too small later costs a restart of the BMC search)
        names = system.layout.names
        shape: dict[str, tuple[int, int]] = {}
        for i, r in out.slot.items():
            k = same_shape(names[i])
            o = shape.get(k, r)
            shape[k] = (min(o[0], r[0]), max(o[1], r[1]))
        for i in out.slot:
            lo, hi = shape[same_shape(names[i])]
            # and one bit of headroom each way: counters keep climbing past the sample
            out.slot[i] = (min(lo, 2 * lo - 1 if lo < 0 else lo), 2 * hi + 1 if hi >= 0 else hi)
    return out


def same_shape(name: str) -> str:
    """A state key's name with every index (CTA, warp, stage) erased."""
    import re

    return re.sub(r"\d+", "#", name)


def _signed_range(w: int) -> tuple[int, int]:
    return -(1 << (w - 1)), (1 << (w - 1)) - 1


class Encoding:
    """The symbolic transition relation of a ``System`` (see the module docstring).

    State keys: every scalar slot of ``system.layout``, plus for every queue slot its
    ``cap`` entries and its length, plus one counter per static TMA/CLC item.  Every key
    has a declared range ``[lo, hi]`` and the width of the smallest signed bit-vector
    holding it; an update that may leave the range adds to the transition's overflow
    condition.  ``caps`` (queue slot -> capacity) and ``ranges`` (key name -> range)
    override the defaults: exact ranges for program counters and queue entries, and
    for everything else the ranges of ``sample`` (a bounded concrete exploration)."""

    def __init__(self, system: System, caps: Optional[dict[int, int]] = None,
                 ranges: Optional[dict[str, tuple[int, int]]] = None,
                 sample: Optional[Sample] = None, deadline: Optional[float] = None):
        self.sys = system
        #: ``time.perf_counter()`` value past which building the templates gives up
        #: (``SetupTimeout``): a cp.async queue of 256 entries makes every template of
        #: a 1,000-instruction program cost a fraction of a second
        self.deadline = deadline
        self.V = V = Z3Values()
        sample = sample or Sample()
        self.caps: dict[int, int] = {}
        queue_slots: list[int] = []
        self.acyclic = True
        code_len: dict[int, int] = {}
        for ag in system.agents:
            code = ag.program.code
            acyc = is_acyclic(code)
            self.acyclic &= acyc
            tc, cp, bs = queue_pushes(code)
            for slot, n in ((ag.qtc, tc), (ag.qcp, cp), (ag.qbs, bs)):
                # an acyclic program cannot push more than it has push instructions
                self.caps[slot] = n if acyc else min(n, max(1, sample.qlen.get(slot, 1)))
                queue_slots.append(slot)
                code_len[slot] = len(code)
            code_len[ag.pc] = len(code)
        if caps:
            self.caps.update(caps)
        self.queue_slots = queue_slots
        self.env_items = system.static_env_items()
        tma_items = [it[1:] for it in self.env_items if it[0] == "tma"]
        ranges = dict(ranges or {})
        # ---- keys
        names = system.layout.names
        self.key_names: list[str] = []
        self.key_range: list[tuple[int, int]] = []
        self.key_of_slot: dict[int, int] = {}
        self.qkeys: dict[int, tuple[list[int], int]] = {}
        self.pool_keys: dict[tuple, int] = {}
        qset = set(queue_slots)
        init = system.initial_state()

        def key(name: str, guess: tuple[int, int]) -> int:
            r = ranges.get(name, guess)
            self.key_names.append(name)
            self.key_range.append(_signed_range(bits_for(*r)))
            return len(self.key_names) - 1

        for slot in range(system.n):
            if slot == system.pool:
                for it in tma_items:
                    n = sample.pool.get(it, 1)
                    self.pool_keys[it] = key(pool_key_name(it), (0, max(1, n)))
            elif slot in qset:
                cap = self.caps[slot]
                ents = [key(f"{names[slot]}[{j}]", (-1, code_len[slot])) for j in range(cap)]
                self.qkeys[slot] = (ents, key(f"{names[slot]}.len", (0, cap + 1)))
            else:
                if slot in code_len:  # a program counter
                    guess = (DONE, code_len[slot])
                else:
                    v = int(init[slot])
                    lo, hi = sample.slot.get(slot, (v, v))
                    guess = (min(lo, v), max(hi, v))
                self.key_of_slot[slot] = key(names[slot], guess)
        self.width = [bits_for(*r) for r in self.key_range]
        self.X = [z3.BitVec(f"x.{n}", w) for n, w in zip(self.key_names, self.width)]
        self.init_values = self._initial_values()
        for k, v in enumerate(self.init_values):
            lo, hi = self.key_range[k]
            assert lo <= v <= hi, (self.key_names[k], v, self.key_range[k])
        self.base = self.state_from_keys([SV(x, *r) for x, r in zip(self.X, self.key_range)])
        self.transitions: list[Transition] = []
        self.agent_range: dict[int, tuple[int, int]] = {}
        self._build()

    def _key(self, name: str) -> int:  # pragma: no cover - kept for callers
        raise NotImplementedError

    @property
    def nkeys(self) -> int:
        return len(self.key_names)

    # ---------------------------------------------------------------- states

    def state_from_keys(self, vals: Sequence[Any]) -> SymState:
        scal = {s: vals[k] for s, k in self.key_of_slot.items()}
        queues = {s: (tuple(vals[k] for k in ents), vals[ln])
                  for s, (ents, ln) in self.qkeys.items()}
        pool = {it: vals[k] for it, k in self.pool_keys.items()}
        return SymState(self.V, self.sys.pool, scal, queues, pool)

    def keys_from_state(self, S: SymState) -> list[Any]:
        out: list[Any] = [None] * self.nkeys
        for s, k in self.key_of_slot.items():
            out[k] = S.scal[s]
        for s, (ents, ln) in self.qkeys.items():
            e, n = S.queues[s]
            for k, x in zip(ents, e):
                out[k] = x
            out[ln] = n
        for it, k in self.pool_keys.items():
            out[k] = S.pool.get(it, 0)
        return out

    def encode_concrete(self, flat: Sequence[Any]) -> tuple[list[int], dict[int, int]]:
        """Key values of a concrete flat state, and the queues longer than their
        capacity (slot -> length)."""
        out: list[int] = [0] * self.nkeys
        long: dict[int, int] = {}
        for s, k in self.key_of_slot.items():
            out[k] = int(flat[s])
        for s, (ents, ln) in self.qkeys.items():
            q = flat[s]
            if len(q) > len(ents):
                long[s] = len(q)
            for j, x in enumerate(q[:len(ents)]):
                out[ents[j]] = int(x)
            out[ln] = len(q)
        for it in flat[self.sys.pool]:
            out[self.pool_keys[tuple(it)]] += 1
        return out, long

    def concrete_decoder(self) -> Callable[[list[int]], list[Any]]:
        """``encode_concrete``'s inverse on the states the encoding holds: a function from
        a list of key values (consumed) to the concrete flat state -- scalars from their
        keys, a queue as the tuple of its first ``len`` entries, the pool as the sorted
        tuple of its items with their counts (``QueueOps.pool_add`` keeps it sorted)."""
        nk, n = self.nkeys, self.sys.n
        # slot -> where its value is: a key, or a queue or the pool after the keys
        where = [0] * n
        for s, k in self.key_of_slot.items():
            where[s] = k
        queues = []
        for j, (s, (ents, ln)) in enumerate(self.qkeys.items()):
            where[s] = nk + j
            queues.append((ents, ln))
        where[self.sys.pool] = nk + len(queues)
        pick = itemgetter(*where) if n > 1 else (lambda v: (v[where[0]],))
        pool_items = sorted((tuple(it), k) for it, k in self.pool_keys.items())

        def decode(v: list[int]) -> list[Any]:
            for ents, ln in queues:
                v.append(tuple([v[e] for e in ents[:v[ln]]]))
            pool: list = []
            for it, k in pool_items:
                if v[k]:
                    pool.extend([it] * v[k])
            v.append(tuple(pool))
            return list(pick(v))
        return decode

    def out_of_range(self, flat: Sequence[Any]) -> tuple[dict[str, tuple[int, int]],
                                                         dict[int, int]]:
        """Keys of a concrete state outside their declared ranges (name -> value range
        to cover) and queues over capacity."""
        vals, long = self.encode_concrete(flat)
        bad = {}
        for k, v in enumerate(vals):
            lo, hi = self.key_range[k]
            if not lo <= v <= hi:
                bad[self.key_names[k]] = (min(lo, v), max(hi, v))
        return bad, long

    def _initial_values(self) -> list[int]:
        """The initial state, as the explicit engine computes it (every warp has run its
        local control flow up to its first synchronisation instruction)."""
        S = ConcreteState(self.sys.initial_state())
        for a in range(len(self.sys.agents)):
            self.sys.run_local(CONCRETE, S, a, [])
        vals, long = self.encode_concrete(S.v)
        assert not long
        return vals

    # ---------------------------------------------------------------- transitions

    def fit(self, k: int, v: Any) -> tuple[Any, Any]:
        """``v`` as a term of key ``k``'s width, and the condition that it leaves the
        key's declared range."""
        lo, hi = self.key_range[k]
        w = self.width[k]
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, int):
            ok = lo <= v <= hi
            return z3.BitVecVal(v, w), (not ok)
        x = _sv(v)
        t = x.t
        ovf: Any = False
        if not (lo <= x.lo and x.hi <= hi):
            wt = max(t.size(), w)
            te = _ext(t, wt)
            ovf = z3.Or(te < z3.BitVecVal(lo, wt), te > z3.BitVecVal(hi, wt))
        if t.size() > w:
            t = z3.Extract(w - 1, 0, t)
        elif t.size() < w:
            t = _ext(t, w)
        return t, ovf

    def _build(self) -> None:
        sysm, V = self.sys, self.V
        pcx = [self.base.scal[ag.pc] for ag in sysm.agents]
        for ag in sysm.agents:
            lo = len(self.transitions)
            for pc, ins in enumerate(ag.program.code):
                if isinstance(ins, (Jump, Branch, SetLocal)):
                    continue
                if self.deadline is not None and time.perf_counter() > self.deadline:
                    raise SetupTimeout("the symbolic encoding")
                for choice in range(sysm.agent_choices(ag.index, pc)):
                    S = self.base.fork()
                    out = sysm.exec_agent(V, S, ag.index, pc, choice)
                    guard = V.and_(V.eq(pcx[ag.index], pc), out.enabled)
                    self._add(("a", ag.index, choice), ag.index, pc, guard, out.checks, S)
            self.agent_range[ag.index] = (lo, len(self.transitions))
        for item in self.env_items:
            S = self.base.fork()
            en = sysm.env_enabled(V, S, item)
            out = sysm.exec_env(V, S, item)
            self._add(("e", item), None, None, V.and_(en, out.enabled), out.checks, S)

    def _add(self, step: tuple, agent: Optional[int], pc: Optional[int], guard: Any,
             checks: Iterable[Any], S: SymState) -> None:
        V = self.V
        checks = [c for c in checks if c.condition is not False]
        viol = V.or_(*[c.condition for c in checks])
        chk = tuple((_simp(V.boolean(c.condition)), c.prop) for c in checks)
        chk = tuple((c, p) for c, p in chk if not z3.is_false(c))
        new = self.keys_from_state(S)
        base = self.keys_from_state(self.base)
        upd = {}
        ovfs = [S.ovf]
        for k, (b, v) in enumerate(zip(base, new)):
            if v is b:
                continue
            t, o = self.fit(k, v)
            # the range check first: a value cut to the key's width may look unchanged
            # (expect_tx 32768 B on a 2-bit tx key: x + 32768 is x modulo 4), yet the
            # step leaves the encoding; dropping it with its overflow made the template
            # silently wrong wherever the sampled ranges were narrow
            ovfs.append(o)
            t = z3.simplify(t)
            if t.eq(self.X[k]):
                continue
            upd[k] = t
        g = _simp(V.boolean(guard))
        vi = _simp(V.boolean(viol))
        ov = _simp(V.boolean(V.or_(*ovfs)))
        t = Transition(len(self.transitions), step, agent, pc, g, vi, ov, upd,
                       frozenset(), chk)
        self.transitions.append(t)

    def _var_key(self) -> dict[Any, int]:
        if not hasattr(self, "_vk"):
            self._vk = {x.get_id(): k for k, x in enumerate(self.X)}
        return self._vk

    # ---------------------------------------------------------------- helpers

    def pc_in(self, a: int, pcs: Iterable[int], X: Optional[Sequence[Any]] = None) -> Any:
        """Warp ``a``'s program counter (key values ``X``, default the template
        variables) is one of ``pcs``."""
        X = self.X if X is None else X
        k = self.key_of_slot[self.sys.agents[a].pc]
        return z3.Or(*[X[k] == z3.BitVecVal(p, self.width[k]) for p in pcs])

    def all_done(self, X: Optional[Sequence[Any]] = None) -> Any:
        X = self.X if X is None else X
        out = []
        for ag in self.sys.agents:
            k = self.key_of_slot[ag.pc]
            out.append(X[k] == z3.BitVecVal(DONE, self.width[k]))
        return z3.And(*out)


class FreeVars:
    """Ids of the uninterpreted constants in terms, memoised per sub-term across calls
    (the transitions of one encoding share most of their sub-terms).  Walks the raw
    z3 C API: the Python wrappers' per-node checks made this the dominant cost of the
    chain's dependence analysis on large kernels (K1: 12 s)."""

    def __init__(self) -> None:
        self.memo: dict[int, frozenset] = {}

    def __call__(self, t: Any) -> frozenset:
        core = z3.z3core
        c = t.ctx.ref()
        memo = self.memo
        root = t.as_ast()
        rid = core.Z3_get_ast_id(c, root)
        if rid in memo:
            return memo[rid]
        app = z3.Z3_APP_AST
        uninterp = z3.Z3_OP_UNINTERPRETED
        # iterative post-order: (ast, id, expanded)
        todo = [(root, rid, False)]
        while todo:
            a, i, expanded = todo.pop()
            if i in memo:
                continue
            if core.Z3_get_ast_kind(c, a) != app:
                memo[i] = frozenset()
                continue
            n = core.Z3_get_app_num_args(c, a)
            if n == 0:
                d = core.Z3_get_app_decl(c, a)
                memo[i] = (frozenset((i,)) if core.Z3_get_decl_kind(c, d) == uninterp
                           else frozenset())
                continue
            kids = [core.Z3_get_app_arg(c, a, j) for j in range(n)]
            ids = [core.Z3_get_ast_id(c, k) for k in kids]
            if expanded:
                out: frozenset = frozenset()
                for k in ids:
                    out = out | memo[k]
                memo[i] = out
                continue
            todo.append((a, i, True))
            todo.extend((k, ki, False) for k, ki in zip(kids, ids) if ki not in memo)
        return memo[rid]


class Substitution:
    """A substitution of z3 constants, applied to many terms (what ``z3.substitute``
    does, without re-checking the pairs' sorts on every call -- that check dominated
    the set-up of large unrollings)."""

    __slots__ = ("n", "src", "dst", "ctx", "keep")

    def __init__(self, pairs: Sequence[tuple[Any, Any]]):
        self.n = n = len(pairs)
        self.src = (z3.Ast * n)()
        self.dst = (z3.Ast * n)()
        self.ctx = pairs[0][0].ctx if pairs else z3.main_ctx()
        # the arrays hold raw pointers: the terms must live as long as they do
        self.keep = list(pairs)
        for i, (a, b) in enumerate(pairs):
            assert a.sort().eq(b.sort()), (a, b)
            self.src[i] = a.as_ast()
            self.dst[i] = b.as_ast()

    def __call__(self, t: Any) -> Any:
        if self.n == 0:
            return t
        r = z3.z3core.Z3_substitute(self.ctx.ref(), t.as_ast(), self.n, self.src, self.dst)
        return z3.z3._to_expr_ref(r, self.ctx)


def _simp(x: Any) -> Any:
    return z3.simplify(x)


def solver_ms(seconds: float) -> int:
    """z3's ``timeout`` parameter (milliseconds, an unsigned 32-bit number) for
    ``seconds`` left: at least 1, and the largest it takes when no limit is set
    (``--timeout inf``), which ``int()`` of an infinite float cannot give."""
    if seconds != seconds or seconds >= (2 ** 32 - 1) / 1000:
        return 2 ** 32 - 1
    return max(1, int(seconds * 1000))
