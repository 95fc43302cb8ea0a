"""Print an ``Encoding``'s transition templates as C.

Every transition of ``checker/symbolic.py``'s ``Encoding`` is a guard, a list of checks
(in the model's order), an overflow condition and slot updates, all z3 terms over the
template variables (one per state key).  This module transcribes those terms into C,
node for node, with exact SMT-LIB bit-vector semantics: a bit-vector of width ``w``
(at most 64) is a ``uint64_t`` holding its value modulo 2^w (the bits above ``w`` kept
0), signed comparisons sign-extend, Booleans are 0/1 ints.  Shared sub-terms become one
temporary each.  Nothing is simplified or re-derived: what the C computes is what the
z3 term means.

The generated ``expand`` enumerates the successors of a state in the explicit engine's
order (``statespace.Explorer._all_successors``): warps in index order, a warp's outcome
choices in order up to the first disabled one, then TMA/CLC deliveries in item order
(the pool is a sorted multiset), then per warp the heads of its tcgen05, cp.async and
bulk-store queues.  The same order makes the breadth-first search discover the same
states in the same order, so a search stopped by a limit or at a deadlock has seen the
same states as the explicit engine's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import z3

from ..properties import PRIORITY
from ..symbolic import Encoding
from .build import UNIT

#: result codes of a generated transition function
DISABLED, OK, VIOLATES, OVERFLOWS = 0, 1, 2, 3

_K = z3  # short alias for the Z3_OP_* constants
#: a child's placeholder in a node's code (``_Fn._emit``)
_HOLE = re.compile("\x00(\\d+)\x00")


class Unsupported(Exception):
    """A term the printer does not transcribe (an operator or width it does not know):
    the engine answers UNKNOWN, never a guess."""


def _mask(w: int) -> str:
    return "0xFFFFFFFFFFFFFFFFULL" if w >= 64 else f"0x{(1 << w) - 1:X}ULL"


def _sx(a: str, w: int) -> str:
    """``a`` (a ``uint64_t`` holding a ``w``-bit value) sign-extended to ``int64_t``."""
    if w >= 64:
        return f"((int64_t)({a}))"
    s = 64 - w
    return f"(((int64_t)(({a}) << {s})) >> {s})"


def storage_bytes(lo: int, hi: int) -> int:
    """Bytes of the smallest signed integer type holding [lo, hi]."""
    for b in (1, 2, 4):
        if -(1 << (8 * b - 1)) <= lo and hi < (1 << (8 * b - 1)):
            return b
    raise Unsupported(f"a state key with range [{lo}, {hi}] does not fit 32 bits")


class Dag:
    """The z3 nodes met while printing one program, by id: the node, its children and
    their ids, read from z3 once.  z3 shares equal terms, so the templates of a kernel
    share most of their nodes, and each call through z3's Python API costs microseconds:
    asking once per program instead of once per transition is most of the printing time.
    ``tmpl`` holds ``_Fn``'s code of each node with its children as placeholders.

    The children of a commutative operator are put in the order of their structural
    digests (``digest``), so that equal templates print as equal C.  ``z3.simplify``
    orders such operands by AST id, and ids depend on which terms earlier work left
    alive: without this, a second check of the same kernel in one process printed
    other C, and compiled it again."""

    def __init__(self) -> None:
        self.nodes: dict[int, tuple[Any, list[Any], tuple[int, ...]]] = {}
        self.tmpl: dict[int, tuple[Optional[str], str]] = {}
        #: id -> (commutative?, z3's hash of the declaration, children, their ids)
        self._raw: dict[int, tuple[bool, int, list[Any], tuple[int, ...]]] = {}
        self._digest: dict[int, int] = {}

    def _read(self, nid: int, t: Any) -> tuple[bool, int, list[Any], tuple[int, ...]]:
        r = self._raw.get(nid)
        if r is None:
            if z3.is_app(t):
                d = t.decl()
                kids = [t.arg(i) for i in range(t.num_args())]
                r = (len(kids) > 1 and d.kind() in _COMMUTATIVE, d.hash(), kids,
                     tuple(k.get_id() for k in kids))
            else:
                r = (False, t.hash(), [], ())
            self._raw[nid] = r
        return r

    def digest(self, nid: int, t: Any) -> int:
        """A hash of the term's structure, blind to the order of commutative operands:
        the declaration (z3 hashes its name, parameters and sorts) and the operands'
        digests, sorted where the operator commutes."""
        memo = self._digest
        todo = [(nid, t)]
        while todo:
            i, n = todo[-1]
            if i in memo:
                todo.pop()
                continue
            comm, dh, kids, ids = self._read(i, n)
            missing = [(ids[j], kids[j]) for j in range(len(kids)) if ids[j] not in memo]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            ds = [memo[j] for j in ids]
            memo[i] = hash((dh, tuple(sorted(ds)) if comm else tuple(ds)))
        return memo[nid]

    def node(self, nid: int, t: Any) -> tuple[Any, list[Any], tuple[int, ...]]:
        r = self.nodes.get(nid)
        if r is None:
            comm, _dh, kids, ids = self._read(nid, t)
            if comm:
                keyed = sorted((self.digest(ids[j], kids[j]), j) for j in range(len(kids)))
                if len({d for d, _ in keyed}) < len(keyed):  # equal digests: the text
                    keyed = sorted((self.digest(ids[j], kids[j]), kids[j].sexpr(), j)
                                   for j in range(len(kids)))
                order = [e[-1] for e in keyed]
                kids, ids = [kids[j] for j in order], tuple(ids[j] for j in order)
            r = (t, kids, ids)
            self.nodes[nid] = r
        return r


#: operators whose operands may be printed in any order (C's ``&&``/``||`` included: the
#: operands are temporaries already computed, so the order changes no side effect)
_COMMUTATIVE = frozenset((
    _K.Z3_OP_AND, _K.Z3_OP_OR, _K.Z3_OP_XOR, _K.Z3_OP_EQ, _K.Z3_OP_DISTINCT,
    _K.Z3_OP_BADD, _K.Z3_OP_BMUL, _K.Z3_OP_BAND, _K.Z3_OP_BOR, _K.Z3_OP_BXOR))


class TermPrinter:
    """Prints a z3 term DAG node by node, each shared node once, children first (no
    recursion: the templates of a large kernel nest deeply).  The Boolean operators are
    written here, once; a subclass says how the rest is written: C for the native engine
    (``_Fn``), Promela for the SPIN yardstick (``bench/spin_promela.py``)."""

    #: the conditional expression of the target language
    ITE = "({} ? {} : {})"

    def __init__(self, dag: Optional["Dag"] = None) -> None:
        self.memo: dict[int, str] = {}
        self.lines: list[str] = []
        self.n = 0
        self.dag = dag if dag is not None else Dag()

    def expr(self, t: Any) -> str:
        """An expression for ``t`` (emitting the temporaries it needs)."""
        memo, dag = self.memo, self.dag
        rid = t.get_id()
        todo: list[tuple[int, Any, bool]] = [(rid, t, False)]
        while todo:
            nid, node, ready = todo.pop()
            if nid in memo:
                continue
            node, kids, kid_ids = dag.node(nid, node)
            if not ready and any(k not in memo for k in kid_ids):
                todo.append((nid, node, True))
                todo.extend((kid_ids[i], kids[i], False) for i in range(len(kids))
                            if kid_ids[i] not in memo)
                continue
            memo[nid] = self._emit(nid, node, [memo[k] for k in kid_ids])
        return memo[rid]

    def _emit(self, nid: int, t: Any, a: list[str]) -> str:
        """The name or literal of node ``t`` (id ``nid``) whose children are ``a``."""
        return self._node(t, a)

    def _node(self, t: Any, a: list[str]) -> str:
        raise NotImplementedError

    @staticmethod
    def _sx(a: str, w: int) -> str:
        """``a`` (a ``w``-bit value as the target holds it) as a signed number."""
        raise NotImplementedError

    def _bool(self, t: Any, k: int, a: list[str]) -> str:
        if k == _K.Z3_OP_TRUE:
            return "1"
        if k == _K.Z3_OP_FALSE:
            return "0"
        if k == _K.Z3_OP_AND:
            return "(" + " && ".join(a) + ")"
        if k == _K.Z3_OP_OR:
            return "(" + " || ".join(a) + ")"
        if k == _K.Z3_OP_NOT:
            return f"(!{a[0]})"
        if k in (_K.Z3_OP_XOR, _K.Z3_OP_DISTINCT) and len(a) == 2:
            return f"({a[0]} != {a[1]})"
        if k == _K.Z3_OP_IMPLIES:
            return f"((!{a[0]}) || {a[1]})"
        if k == _K.Z3_OP_EQ:
            return f"({a[0]} == {a[1]})"
        if k == _K.Z3_OP_ITE:
            return self.ITE.format(*a)
        if k in (_K.Z3_OP_SLEQ, _K.Z3_OP_SLT, _K.Z3_OP_SGEQ, _K.Z3_OP_SGT):
            w = t.arg(0).size()
            op = {_K.Z3_OP_SLEQ: "<=", _K.Z3_OP_SLT: "<", _K.Z3_OP_SGEQ: ">=",
                  _K.Z3_OP_SGT: ">"}[k]
            return f"({self._sx(a[0], w)} {op} {self._sx(a[1], w)})"
        if k in (_K.Z3_OP_ULEQ, _K.Z3_OP_ULT, _K.Z3_OP_UGEQ, _K.Z3_OP_UGT):
            op = {_K.Z3_OP_ULEQ: "<=", _K.Z3_OP_ULT: "<", _K.Z3_OP_UGEQ: ">=",
                  _K.Z3_OP_UGT: ">"}[k]
            return f"({a[0]} {op} {a[1]})"
        raise Unsupported(f"Boolean operator {t.decl()}")


class _Fn(TermPrinter):
    """One C function's body: temporaries for the z3 nodes it needs, each emitted once."""

    _sx = staticmethod(_sx)

    def __init__(self, key_of_var: dict[int, int], dag: Optional[Dag] = None):
        super().__init__(dag)
        self.key_of_var = key_of_var

    def _tmp(self, ctype: str, code: str) -> str:
        name = f"t{self.n}"
        self.n += 1
        self.lines.append(f"  {ctype} {name} = {code};")
        return name

    def _emit(self, nid: int, t: Any, a: list[str]) -> str:
        # the node's code with its children as placeholders, made once per program
        c = self.dag.tmpl.get(nid)
        if c is None:
            c = self._code(t, [f"\x00{i}\x00" for i in range(len(a))])
            self.dag.tmpl[nid] = c
        ctype, code = c
        if a:
            code = _HOLE.sub(lambda m: a[int(m.group(1))], code)
        return code if ctype is None else self._tmp(ctype, code)

    def _node(self, t: Any, a: list[str]) -> str:
        ctype, code = self._code(t, a)
        return code if ctype is None else self._tmp(ctype, code)

    def _code(self, t: Any, a: list[str]) -> tuple[Optional[str], str]:
        """(C type of the temporary, its initialiser), or (None, a literal)."""
        if not z3.is_app(t):
            raise Unsupported(f"a z3 term that is not an application: {t}")
        k = t.decl().kind()
        if z3.is_bool(t):
            code = self._bool(t, k, a)
            return (None, code) if code in ("0", "1") else ("int", code)
        if not z3.is_bv(t):
            raise Unsupported(f"a z3 term of sort {t.sort()}")
        w = t.size()
        if w > 64:
            raise Unsupported(f"a {w}-bit term (at most 64 are transcribed)")
        if k == _K.Z3_OP_BNUM:
            return None, f"0x{t.as_long():X}ULL"
        if k == _K.Z3_OP_UNINTERPRETED and not a:
            key = self.key_of_var.get(t.get_id())
            if key is None:
                raise Unsupported(f"a free constant that is no state key: {t}")
            return "uint64_t", f"((uint64_t)(int64_t)x[{key}] & {_mask(w)})"
        return "uint64_t", self._bv(t, k, a, w)

    def _bv(self, t: Any, k: int, a: list[str], w: int) -> str:
        m = _mask(w)
        if k == _K.Z3_OP_ITE:
            return self.ITE.format(*a)
        if k == _K.Z3_OP_BADD:
            return "((" + " + ".join(a) + f") & {m})"
        if k == _K.Z3_OP_BSUB:
            return f"(({a[0]} - {a[1]}) & {m})"
        if k == _K.Z3_OP_BMUL:
            return "((" + " * ".join(a) + f") & {m})"
        if k == _K.Z3_OP_BNEG:
            return f"((0ULL - {a[0]}) & {m})"
        if k == _K.Z3_OP_BAND:
            return "(" + " & ".join(a) + ")"
        if k == _K.Z3_OP_BOR:
            return "(" + " | ".join(a) + ")"
        if k == _K.Z3_OP_BXOR:
            return "(" + " ^ ".join(a) + ")"
        if k == _K.Z3_OP_BNOT:
            return f"((~{a[0]}) & {m})"
        if k == _K.Z3_OP_CONCAT:
            out, shift = [], 0
            for i in range(len(a) - 1, -1, -1):
                out.append(f"({a[i]} << {shift})" if shift else a[i])
                shift += t.arg(i).size()
            return "(" + " | ".join(out) + ")"
        if k == _K.Z3_OP_EXTRACT:
            hi, lo = t.params()
            return f"(({a[0]} >> {lo}) & {_mask(hi - lo + 1)})"
        if k == _K.Z3_OP_SIGN_EXT:
            return f"(((uint64_t){_sx(a[0], t.arg(0).size())}) & {m})"
        if k == _K.Z3_OP_ZERO_EXT:
            return a[0]
        if k in (_K.Z3_OP_BSDIV, _K.Z3_OP_BSDIV_I, _K.Z3_OP_BSREM, _K.Z3_OP_BSREM_I,
                 _K.Z3_OP_BSMOD, _K.Z3_OP_BSMOD_I, _K.Z3_OP_BUDIV, _K.Z3_OP_BUDIV_I,
                 _K.Z3_OP_BUREM, _K.Z3_OP_BUREM_I):
            d = t.arg(1)
            # a divisor known non-zero: SMT-LIB's division-by-zero results never arise
            if not (z3.is_bv_value(d) and d.as_long() != 0) or w >= 64:
                raise Unsupported(f"division by a non-constant or zero divisor: {t}")
            if k in (_K.Z3_OP_BUDIV, _K.Z3_OP_BUDIV_I):
                return f"({a[0]} / {a[1]})"
            if k in (_K.Z3_OP_BUREM, _K.Z3_OP_BUREM_I):
                return f"({a[0]} % {a[1]})"
            sa, sb = _sx(a[0], w), _sx(a[1], w)
            if k in (_K.Z3_OP_BSDIV, _K.Z3_OP_BSDIV_I):
                return f"(((uint64_t)({sa} / {sb})) & {m})"  # truncating, as bvsdiv
            if k in (_K.Z3_OP_BSREM, _K.Z3_OP_BSREM_I):
                return f"(((uint64_t)({sa} % {sb})) & {m})"  # sign of the dividend
            # bvsmod: the sign of the divisor
            return f"(((uint64_t)pp_smod({sa}, {sb})) & {m})"
        if k in (_K.Z3_OP_BSHL, _K.Z3_OP_BLSHR, _K.Z3_OP_BASHR):
            s = t.arg(1)
            if not z3.is_bv_value(s):
                raise Unsupported(f"a shift by a non-constant amount: {t}")
            n = s.as_long()
            if n >= w:
                return ("0ULL" if k != _K.Z3_OP_BASHR
                        else f"(((uint64_t)({_sx(a[0], w)} >> {w - 1})) & {m})")
            if k == _K.Z3_OP_BSHL:
                return f"(({a[0]} << {n}) & {m})"
            if k == _K.Z3_OP_BLSHR:
                return f"({a[0]} >> {n})"
            return f"(((uint64_t)({_sx(a[0], w)} >> {n})) & {m})"
        raise Unsupported(f"bit-vector operator {t.decl()}")


@dataclass(frozen=True)
class Program:
    """The generated C and what the search needs to read its answers."""

    source: str
    nkeys: int
    state_bytes: int
    #: transition index -> the explicit engine's step id
    steps: tuple
    #: key index of each warp's program counter
    pc_keys: tuple


def _transition_fn(enc: Encoding, i: int, key_of_var: dict[int, int], dag: Dag) -> list[str]:
    """``static int T<i>(x, y, rank)``: DISABLED; OVERFLOWS; VIOLATES with the rank of
    the first failing check (``properties.PRIORITY``, as the explicit engine ranks it);
    or OK with the successor's keys in ``y``."""
    tr = enc.transitions[i]
    f = _Fn(key_of_var, dag)
    out = [f"static int T{i}(const int32_t *x, int32_t *y, int *rank) {{"]
    g = f.expr(tr.guard)
    out += f.lines
    f.lines = []
    out.append(f"  if (!{g}) return {DISABLED};")
    o = f.expr(tr.ovf)
    out += f.lines
    f.lines = []
    out.append(f"  if ({o}) return {OVERFLOWS};")
    for cond, prop in tr.checks:
        c = f.expr(cond)
        out += f.lines
        f.lines = []
        out.append(f"  if ({c}) {{ *rank = {PRIORITY.get(prop, 99)}; return {VIOLATES}; }}")
    ups = []
    for k, t in sorted(tr.updates.items()):
        e = f.expr(t)
        ups.append(f"  y[{k}] = (int32_t){_sx(e, enc.width[k])};")
    out += f.lines
    out.append(f"  memcpy(y, x, sizeof(int32_t) * {enc.nkeys});")
    out += ups
    out.append(f"  return {OK};")
    out.append("}")
    return out


def _call(i: int, stop_on_disabled: bool) -> str:
    """Transition ``i`` evaluated and its outcome handed to ``visit``; a warp's outcome
    choices stop at the first disabled one (``break`` out of its ``case``)."""
    if stop_on_disabled:
        return (f"      r = T{i}(x, y, &rank); if (r == {DISABLED}) break; "
                f"if (visit({i}, r, rank, y)) return 1;")
    return (f"  r = T{i}(x, y, &rank); if (r != {DISABLED} && visit({i}, r, rank, y)) "
            "return 1;")


_HEAD = "(const int32_t *x, int32_t *y)"


def _agent_expand_fn(enc: Encoding, a: int, pc_key: int) -> list[str]:
    """``expand_a<a>(x, y)``: the successors of ``x`` by warp ``a``'s own steps, in
    order; 1 when ``visit`` asks to stop."""
    lo, hi = enc.agent_range[a]
    by_pc: dict[int, list[int]] = {}
    for i in range(lo, hi):
        by_pc.setdefault(enc.transitions[i].pc, []).append(i)
    out = [f"PP_HIDDEN int expand_a{a}{_HEAD} {{", "  int rank = 0, r;",
           f"  switch (x[{pc_key}]) {{"]
    for pc, idxs in sorted(by_pc.items()):
        idxs.sort(key=lambda i: enc.transitions[i].step[2])
        out.append(f"    case {pc}:")
        out += [_call(i, True) for i in idxs]
        out.append("      break;")
    out += ["    default: break;", "  }", "  (void)rank; (void)r;", "  return 0;", "}"]
    return out


def _env_order(enc: Encoding) -> list[int]:
    """The asynchronous deliveries in the explicit engine's order: TMA/CLC items (the
    pool is a sorted multiset), then per warp its tcgen05, cp.async and bulk queues."""
    env = [i for i, tr in enumerate(enc.transitions) if tr.agent is None]
    order = sorted((i for i in env if enc.transitions[i].step[1][0] == "tma"),
                   key=lambda i: enc.transitions[i].step[1][1:])
    for ag in enc.sys.agents:
        for kind in ("tcgen05", "cp.async", "bulk"):
            order += [i for i in env if enc.transitions[i].step[1][:2] == (kind, ag.index)]
    return order


def _env_expand_fn(order: Sequence[int]) -> list[str]:
    """``expand_env(x, y)``: the successors of ``x`` by asynchronous deliveries."""
    return ([f"PP_HIDDEN int expand_env{_HEAD} {{", "  int rank = 0, r;"]
            + [_call(i, False) for i in order]
            + ["  (void)rank; (void)r;", "  return 0;", "}"])


def _expand_fn(nagents: int) -> list[str]:
    """``static int expand(x, y)``: every successor of ``x`` handed to ``visit`` in the
    explicit engine's order (module docstring): the warps' steps in warp order, then the
    asynchronous deliveries; 1 when ``visit`` asks to stop."""
    return ([f"static int expand{_HEAD} {{"]
            + [f"  if (expand_a{a}(x, y)) return 1;" for a in range(nagents)]
            + ["  return expand_env(x, y);", "}"])


def _canon_fn(blocks: Sequence[Sequence[Sequence[int]]],
              cta: Sequence[Sequence[int]] = ()) -> list[str]:
    """``static void canon(x)``: for each group of interchangeable warps (``blocks``:
    group -> warp -> its keys, aligned), sort the warps' key blocks by value
    (lexicographic over the keys in order, signed); then, for each renaming of the
    cluster's CTAs (``cta``: the key each key takes its value from), the renamed state
    with its warps sorted again, keeping the least (lexicographic over the keys): the
    representative of the state's class (``search.canon_keys`` is the same in Python)."""
    out = ["static int blk_cmp(const int32_t *x, const int *a, const int *b, int L) {",
           "  for (int i = 0; i < L; i++) { int32_t u = x[a[i]], v = x[b[i]];",
           "    if (u != v) return u < v ? -1 : 1; }",
           "  return 0; }",
           "static void canon_group(int32_t *x, const int *K, int n, int L) {",
           "  for (int i = 1; i < n; i++)",
           "    for (int j = i; j > 0 && blk_cmp(x, K + (j - 1) * L, K + j * L, L) > 0; j--)",
           "      for (int t = 0; t < L; t++) { int32_t u = x[K[(j - 1) * L + t]];",
           "        x[K[(j - 1) * L + t]] = x[K[j * L + t]]; x[K[j * L + t]] = u; }",
           "}"]
    body = []
    for gi, g in enumerate(blocks):
        flat = [k for blk in g for k in blk]
        out.append(f"static const int GK{gi}[] = {{{', '.join(map(str, flat))}}};")
        body.append(f"  canon_group(x, GK{gi}, {len(g)}, {len(g[0])});")
    out += ["static void canon_warps(int32_t *x) {", *body, "  (void)x;", "}",
            f"#define CANON_CTA {1 if cta else 0}"]
    if not cta:
        return out + ["static void canon(int32_t *x) { canon_warps(x); }"]
    for ci, src in enumerate(cta):
        out.append(f"static const int CS{ci}[NK] = {{{', '.join(map(str, src))}}};")
    out += ["static const int *const CS[] = {"
            + ", ".join(f"CS{ci}" for ci in range(len(cta))) + "};",
            "static void canon(int32_t *x) {",
            "  int32_t x0[NK], y[NK];",
            "  canon_warps(x);",
            "  memcpy(x0, x, sizeof x0);",
            f"  for (int c = 0; c < {len(cta)}; c++) {{",
            "    for (int k = 0; k < NK; k++) y[k] = x0[CS[c][k]];",
            "    canon_warps(y);",
            "    for (int k = 0; k < NK; k++)",
            "      if (y[k] != x[k]) { if (y[k] < x[k]) memcpy(x, y, sizeof y); break; }",
            "  }",
            "}"]
    return out


def _forget_fn(dead: Sequence[tuple[int, dict[int, Sequence[int]]]]) -> list[str]:
    """``static void forget(x)``: each warp's dead locals set to 0 (``dead``: per warp with
    locals, its pc key and {pc: the keys of the locals dead there}), as
    ``statespace.Explorer.forget`` does in the explicit engine (``bfs.c`` uses it with
    stubborn sets only, as the explicit engine uses it with its reductions only)."""
    out = ["static void forget(int32_t *x) {"]
    for pck, by_pc in dead:
        cases = [f"    case {pc}: {' '.join(f'x[{k}] = 0;' for k in keys)} break;"
                 for pc, keys in sorted(by_pc.items()) if keys]
        if cases:
            out += [f"  switch (x[{pck}]) {{", *cases, "    default: break;", "  }"]
    return out + ["  (void)x;", "}"]


def _safe_fn(enc: Encoding, safe: dict[int, frozenset[int]]) -> list[str]:
    """``TACT`` (the warp of each transition, -1 for an asynchronous item) and
    ``is_safe(a, pc)``: is ``pc`` one of warp ``a``'s safe points (``safe``, proven by
    ``checker/safesteps.py``) -- the table of the safe-step reduction in ``bfs.c``."""
    tact = [-1 if t.agent is None else t.agent for t in enc.transitions] or [-1]
    out = [f"static const int TACT[] = {{{', '.join(map(str, tact))}}};",
           "static int is_safe(int a, int32_t pc) {", "  switch (a) {"]
    for a, pcs in sorted(safe.items()):
        if pcs:
            cases = " ".join(f"case {p}:" for p in sorted(pcs))
            out.append(f"    case {a}: switch (pc) {{ {cases} return 1; default: return 0; }}")
    out += ["    default: return 0;", "  }", "}"]
    return out


def generate(enc: Encoding, core: str,
             blocks: Sequence[Sequence[Sequence[int]]] = (),
             safe: Optional[dict[int, frozenset[int]]] = None,
             cta: Sequence[Sequence[int]] = (),
             dead: Sequence[tuple[int, dict[int, Sequence[int]]]] = ()) -> Program:
    """The C source of ``enc``: the transition functions, ``expand``, the packing of a
    state's keys into bytes, the initial state, the canonical form under the warp
    symmetry ``blocks`` and the CTA renamings ``cta`` (``_canon_fn``; none: the
    identity), the safe points ``safe``
    (``_safe_fn``; none: no point is safe), the dead locals ``dead`` (``_forget_fn``),
    and ``core`` (the search, ``bfs.c``) after them.

    The source is one C file, cut by ``UNIT`` lines into a prelude (what every unit
    needs), one unit per warp (its transition functions and ``expand_a<i>``), one for
    the asynchronous deliveries, and the search last: ``build.load`` may compile the
    units as separate files in parallel, prelude first in each."""
    key_of_var = {x.get_id(): k for k, x in enumerate(enc.X)}
    pc_keys = tuple(enc.key_of_slot[ag.pc] for ag in enc.sys.agents)
    nag = len(pc_keys)
    sizes = [storage_bytes(*r) for r in enc.key_range]
    # widest keys first: every key lands on an offset aligned to its size
    order = sorted(range(enc.nkeys), key=lambda k: -sizes[k])
    off, offsets = 0, [0] * enc.nkeys
    for k in order:
        offsets[k] = off
        off += sizes[k]
    sb = max(8, (off + 7) // 8 * 8)
    ctype = {1: "int8_t", 2: "int16_t", 4: "int32_t"}
    lines = ["#include <stdint.h>", "#include <string.h>", "#include <stdlib.h>",
             "#include <time.h>", "",
             f"#define NK {enc.nkeys}", f"#define SB {sb}", f"#define NAGENTS {nag}",
             f"#define DONE_PC {-1}",
             # one shared object: calls between its files need no symbol lookup
             "#define PP_HIDDEN __attribute__((visibility(\"hidden\")))",
             "static inline int64_t pp_smod(int64_t a, int64_t b) {",
             "  int64_t r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }",
             "PP_HIDDEN int visit(int tid, int r, int rank, int32_t *y);",
             *(f"PP_HIDDEN int expand_a{a}{_HEAD};" for a in range(nag)),
             f"PP_HIDDEN int expand_env{_HEAD};"]
    dag = Dag()
    for ag in enc.sys.agents:
        lo, hi = enc.agent_range[ag.index]
        lines.append(UNIT)
        for i in range(lo, hi):
            lines += _transition_fn(enc, i, key_of_var, dag)
        lines += _agent_expand_fn(enc, ag.index, pc_keys[ag.index])
    env = _env_order(enc)
    lines.append(UNIT)
    for i in sorted(env):
        lines += _transition_fn(enc, i, key_of_var, dag)
    lines += _env_expand_fn(env)
    lines += [UNIT,
              f"static const int32_t INIT[NK] = {{{', '.join(map(str, enc.init_values))}}};",
              f"static const int PC_KEYS[NAGENTS] = {{{', '.join(map(str, pc_keys))}}};",
              "static void pack(const int32_t *x, uint8_t *p) {", "  memset(p, 0, SB);"]
    for k in order:
        lines.append(f"  {{ {ctype[sizes[k]]} v = ({ctype[sizes[k]]})x[{k}]; "
                     f"memcpy(p + {offsets[k]}, &v, {sizes[k]}); }}")
    lines += ["}", "static void unpack(const uint8_t *p, int32_t *x) {"]
    for k in order:
        lines.append(f"  {{ {ctype[sizes[k]]} v; memcpy(&v, p + {offsets[k]}, {sizes[k]}); "
                     f"x[{k}] = v; }}")
    lines.append("}")
    lines += _expand_fn(nag)
    lines += _canon_fn(blocks, cta)
    lines += _forget_fn(dead)
    lines += _safe_fn(enc, safe or {})
    lines.append(core)
    return Program("\n".join(lines) + "\n", enc.nkeys, sb,
                   tuple(tr.step for tr in enc.transitions), pc_keys)
