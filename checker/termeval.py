"""The encoding's z3 terms as Python functions, to evaluate them on many concrete states.

Why: the certificate (``checker/certificate.py``) asks whether every enumerated state's
good steps under the *encoding* land in the set again.  As one SAT query that took 5 to
66 s for 16,000 to 50,000 states (the solver rediscovers the states one conflict at a
time); evaluating the same terms state by state takes a fraction of that.  The terms are
the ones the BMC unrolling asserts -- the model's transition functions run over z3 terms
(``symbolic.Encoding``) -- so this is a second reading of the same formulas, not of the
model.

Semantics are the SMT-LIB bit-vector theory's (a value of width ``w`` is an integer in
``[0, 2^w)``; signed comparisons read it in two's complement).  Only the operators the
encoding produces are compiled; any other raises ``Unsupported`` and the caller falls back
to the SAT query.  ``tests/test_certificate.py`` checks every compiled template against
``z3.simplify`` on random states.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import z3
from z3 import z3core as C


class Unsupported(Exception):
    """A term uses an operator this module does not compile."""


def _signed(e: str, w: int) -> str:
    return f"({e} - {1 << w} if {e} >> {w - 1} else {e})"


class Compiler:
    """Compiles terms over the key variables ``X`` (read from a list ``x`` of unsigned
    key values) into Python source, one local per shared sub-term.

    The terms are walked through z3's C API (``z3core``), not its Python wrappers:
    building an ``ExprRef`` for every child of every node was most of the cost
    (symbolic parameter ranges: 4 s of a 10 s BMC check)."""

    def __init__(self, X: Sequence[Any]):
        self.ctx = X[0].ctx.ref() if X else z3.main_ctx().ref()
        self.var = {x.get_id(): i for i, x in enumerate(X)}

    def function(self, name: str, sections: Sequence[Sequence[Any]]) -> str:
        """Source of ``def name(x)``: for each section (a list of terms) in order, the
        values of its terms; a section after the first is only evaluated when the first
        term of the first section is true (the guard): the result is ``None`` then."""
        lines = [f"def {name}(x):"]
        done: dict[int, str] = {}
        out: list[str] = []
        for si, terms in enumerate(sections):
            for t in terms:
                out.append(self._emit(t.as_ast(), lines, done))
            if si == 0:
                lines.append(f"    if not {out[0]}: return None")
        lines.append(f"    return ({', '.join(out)},)")
        return "\n".join(lines)

    def _node(self, a: Any) -> tuple[int, Any, int, list[Any]]:
        """``(id, decl, decl kind, children)`` of an application (decl None: a leaf)."""
        ctx = self.ctx
        nid = C.Z3_get_ast_id(ctx, a)
        if C.Z3_get_ast_kind(ctx, a) != z3.Z3_APP_AST:
            return nid, None, -1, []
        app = C.Z3_to_app(ctx, a)
        decl = C.Z3_get_app_decl(ctx, app)
        n = C.Z3_get_app_num_args(ctx, app)
        if n == 0:
            return nid, None, -1, []
        return nid, decl, C.Z3_get_decl_kind(ctx, decl), \
            [C.Z3_get_app_arg(ctx, app, i) for i in range(n)]

    def _emit(self, t: Any, lines: list[str], done: dict[int, str]) -> str:
        """An expression for the raw term ``t``: a literal, a key read, or a local
        assigned above."""
        tid, decl, _k, _kids = self._node(t)
        if tid in done or decl is None:
            return self._leaf(t, done)
        # children first (iteratively: the terms are deep)
        stack: list[tuple[Any, Optional[tuple]]] = [(t, None)]
        while stack:
            node, info = stack.pop()
            if info is None:
                info = self._node(node)
                if info[0] in done:
                    continue
                stack.append((node, info))
                for c in info[3]:
                    if C.Z3_get_ast_id(self.ctx, c) not in done:
                        stack.append((c, None))
                continue
            nid, decl, kind, kids = info
            if nid in done:
                continue
            if decl is None:  # a leaf: read where it is used
                continue
            args = [self._leaf(c, done) for c in kids]
            expr = self._op(node, decl, kind, args, kids)
            local = f"v{len(done)}"
            lines.append(f"    {local} = {expr}")
            done[nid] = local
        return done[tid]

    def _leaf(self, c: Any, done: dict[int, str]) -> str:
        ctx = self.ctx
        cid = C.Z3_get_ast_id(ctx, c)
        if cid in done:
            return done[cid]
        kind = C.Z3_get_ast_kind(ctx, c)
        if kind == z3.Z3_NUMERAL_AST:
            return C.Z3_get_numeral_string(ctx, c)
        if kind == z3.Z3_APP_AST:
            app = C.Z3_to_app(ctx, c)
            k = C.Z3_get_decl_kind(ctx, C.Z3_get_app_decl(ctx, app))
            if k == z3.Z3_OP_TRUE:
                return "True"
            if k == z3.Z3_OP_FALSE:
                return "False"
            if C.Z3_get_app_num_args(ctx, app) == 0 and cid in self.var:
                return f"x[{self.var[cid]}]"
        raise Unsupported(f"unexpected leaf {C.Z3_ast_to_string(ctx, c)}")

    def _size(self, a: Any) -> int:
        """The bit width of a bit-vector term; 0 for any other sort."""
        s = C.Z3_get_sort(self.ctx, a)
        if C.Z3_get_sort_kind(self.ctx, s) != z3.Z3_BV_SORT:
            return 0
        return C.Z3_get_bv_sort_size(self.ctx, s)

    def _op(self, node: Any, decl: Any, k: int, a: list[str], kids: list[Any]) -> str:
        w = self._size(node)
        m = (1 << w) - 1 if w else 0
        simple = _SIMPLE.get(k)
        if simple is not None:
            return simple(a, m)
        if k == z3.Z3_OP_CONCAT:
            out = a[0]
            for c, e in zip(kids[1:], a[1:]):
                out = f"(({out} << {self._size(c)}) | {e})"
            return out
        if k == z3.Z3_OP_EXTRACT:
            hi = C.Z3_get_decl_int_parameter(self.ctx, decl, 0)
            lo = C.Z3_get_decl_int_parameter(self.ctx, decl, 1)
            return f"(({a[0]} >> {lo}) & {(1 << (hi - lo + 1)) - 1})"
        if k == z3.Z3_OP_SIGN_EXT:
            n = C.Z3_get_decl_int_parameter(self.ctx, decl, 0)
            cw = self._size(kids[0])
            return f"({a[0]} | {((1 << n) - 1) << cw} if {a[0]} >> {cw - 1} else {a[0]})"
        if k in _SIGNED:
            cw = self._size(kids[0])
            return f"({_signed(a[0], cw)} {_SIGNED[k]} {_signed(a[1], cw)})"
        raise Unsupported(f"operator {C.Z3_get_symbol_string(self.ctx, C.Z3_get_decl_name(self.ctx, decl))}")


#: operators whose Python form needs only the arguments and the result's mask
_SIMPLE: dict[int, Callable[[list[str], int], str]] = {
    z3.Z3_OP_AND: lambda a, m: "(" + " and ".join(a) + ")",
    z3.Z3_OP_OR: lambda a, m: "(" + " or ".join(a) + ")",
    z3.Z3_OP_NOT: lambda a, m: f"(not {a[0]})",
    z3.Z3_OP_IMPLIES: lambda a, m: f"((not {a[0]}) or {a[1]})",
    z3.Z3_OP_EQ: lambda a, m: f"({a[0]} == {a[1]})",
    z3.Z3_OP_IFF: lambda a, m: f"({a[0]} == {a[1]})",
    z3.Z3_OP_XOR: lambda a, m: f"({a[0]} != {a[1]})",
    z3.Z3_OP_DISTINCT: lambda a, m: f"(len({{{', '.join(a)}}}) == {len(a)})",
    z3.Z3_OP_ITE: lambda a, m: f"({a[1]} if {a[0]} else {a[2]})",
    z3.Z3_OP_BADD: lambda a, m: f"(({' + '.join(a)}) & {m})",
    z3.Z3_OP_BSUB: lambda a, m: f"(({a[0]} - {a[1]}) & {m})",
    z3.Z3_OP_BMUL: lambda a, m: f"(({' * '.join(a)}) & {m})",
    z3.Z3_OP_BNEG: lambda a, m: f"((-{a[0]}) & {m})",
    z3.Z3_OP_ZERO_EXT: lambda a, m: a[0],
    z3.Z3_OP_ULEQ: lambda a, m: f"({a[0]} <= {a[1]})",
    z3.Z3_OP_ULT: lambda a, m: f"({a[0]} < {a[1]})",
    z3.Z3_OP_UGEQ: lambda a, m: f"({a[0]} >= {a[1]})",
    z3.Z3_OP_UGT: lambda a, m: f"({a[0]} > {a[1]})",
}
#: signed comparisons: both sides read in two's complement
_SIGNED = {z3.Z3_OP_SLEQ: "<=", z3.Z3_OP_SLT: "<", z3.Z3_OP_SGEQ: ">=", z3.Z3_OP_SGT: ">"}


def compile_functions(X: Sequence[Any], named: dict[str, Sequence[Sequence[Any]]]
                      ) -> dict[str, Callable[[list[int]], Any]]:
    """Python functions of the unsigned key values, one per ``named`` entry (its
    sections as in ``Compiler.function``)."""
    comp = Compiler(X)
    src = "\n\n".join(comp.function(n, secs) for n, secs in named.items())
    scope: dict[str, Any] = {}
    exec(compile(src, "<pipeproof encoding>", "exec"), scope)  # noqa: S102 - our source
    return {n: scope[n] for n in named}
