"""Parse ``.pipe`` files (grammar: ``spec/pipe.lark``) into the kernel IR.

Parse errors name the file, line and column and list what was expected there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import stat
import threading
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Optional

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import DedentError, Indenter

from .. import ir
from ..errors import ConfigError, did_you_mean, misspelt_keyword

#: nesting limits (spec/language.md "Limits"): blocks inside blocks, brackets inside
#: brackets, and the depth of one expression's tree (a chain ``a + b + c ...`` counts one
#: level per operator).  The parser, the compiler and the engines recurse over these
#: trees; past the limits Python's recursion limit would be hit instead of a clear error.
MAX_BLOCK_DEPTH = 100
MAX_BRACKET_DEPTH = 200
MAX_EXPR_DEPTH = 200
#: the largest .pipe file read (bytes); skeletons are a few kilobytes
MAX_FILE_BYTES = 4 * 1024 * 1024
#: digits of an integer literal (a 64-bit value has at most 20 decimal digits)
MAX_LITERAL_CHARS = 100


class _IndentProblem(Exception):
    """Raised by the indenter with the position of the offending line (the parser does
    not know the file name; ``parse`` turns it into a ConfigError)."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class _PipeIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token: Token) -> Any:
        line = (token.end_line or token.line or 0)
        indent_str = str(token).rsplit("\n", 1)[1]
        col = len(indent_str) + 1
        try:
            yield from super().handle_NL(token)
        except DedentError:
            levels = ", ".join(str(i) for i in self.indent_level if i)
            raise _IndentProblem(
                f"inconsistent indentation: this line is indented by {col - 1}, which "
                f"matches no enclosing block (indented by {levels or 0})", line, col) from None
        if len(self.indent_level) - 1 > MAX_BLOCK_DEPTH:
            raise _IndentProblem(f"blocks nested more than {MAX_BLOCK_DEPTH} deep", line, col)

    def _process(self, stream: Any) -> Any:
        for token in super()._process(stream):
            if self.paren_level > MAX_BRACKET_DEPTH:
                raise _IndentProblem(f"brackets nested more than {MAX_BRACKET_DEPTH} deep",
                                     token.line or 0, token.column or 0)
            yield token


@functools.lru_cache(maxsize=1)
def _grammar() -> str:
    return resources.files("pipeproof.spec").joinpath("pipe.lark").read_text()


_LOCAL = threading.local()

#: Held while Python's ``ast`` module builds trees.  CPython 3.11's AST constructor keeps
#: its recursion depth in interpreter-wide state, so two threads building ASTs at once can
#: fail with "AST constructor recursion depth mismatch" (CPython gh-106905).  Lark loads
#: grammars with ``ast.literal_eval``; the Python front end (pipeproof/dsl.py) parses and
#: compiles functions.  Both take this lock.
PY_AST_LOCK = threading.Lock()


def _parser() -> Lark:
    """One parser per thread: lark's indenter keeps state while it parses, so a shared
    parser gives garbled errors when callers parse from several threads at once."""
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        with PY_AST_LOCK:
            p = _LOCAL.parser = _build_parser()
    return p


def parser_cache_dir() -> Optional[Path]:
    """Where the built LALR tables are kept (``PIPEPROOF_PARSER_CACHE``; ``off``: none),
    by default beside the native engine's builds in ``~/.cache/pipeproof``."""
    base = os.environ.get("PIPEPROOF_PARSER_CACHE")
    if base == "off":
        return None
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pipeproof" / "parser"


def _build_parser(cache: bool = True) -> Lark:
    """The .pipe parser.  Building lark's LALR tables for the grammar takes 0.3-0.5 s of
    CPU, the largest share of a small check's start-up (bench/results/spin.md), so the
    tables are pickled once in ``parser_cache_dir()`` and loaded (20 ms) afterwards.  The
    file's name hashes the grammar, lark's version and Python's; lark checks its own hash
    of the grammar and options inside and rebuilds on any mismatch.  A new file is written
    under a name of this process's and then renamed, so a concurrent reader sees a whole
    file or none; without a writable cache the tables are built every time."""
    grammar = _grammar()
    opts: dict[str, Any] = dict(parser="lalr", postlex=_PipeIndenter(),
                                propagate_positions=True, maybe_placeholders=True)
    d = parser_cache_dir() if cache else None
    if d is None:
        return Lark(grammar, **opts)
    import hashlib
    import sys

    import lark

    key = hashlib.sha256("\0".join([grammar, lark.__version__, sys.version]).encode())
    final = d / f"pipe-{key.hexdigest()[:24]}.lark"
    if final.is_file():
        return Lark(grammar, cache=str(final), **opts)
    tmp = d / f"{final.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Lark(grammar, **opts)
    p = Lark(grammar, cache=str(tmp), **opts)  # lark goes on if it cannot write the file
    try:
        os.replace(tmp, final)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return p


_TOKEN_WORDS = {
    "_NL": "end of line", "_INDENT": "an indented block", "_DEDENT": "end of block",
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string", "LPAR": "'('",
    "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "COMMA": "','",
    "EQUAL": "'='", "DOT": "'.'", "$END": "end of file", "DEF": "'def'", "AT": "'@'",
}


def _token_word(t: str) -> str:
    """A terminal in the user's words: its literal text when it has one (lark names
    anonymous literals such as '==' ``__ANON_1``)."""
    if t in _TOKEN_WORDS:
        return _TOKEN_WORDS[t]
    try:
        pattern = _parser().get_terminal(t).pattern
    except KeyError:
        pattern = None
    if pattern is not None and type(pattern).__name__ == "PatternStr":
        return repr(pattern.value)
    return t.lower().replace("_", " ").strip() if t.isupper() else t


def _describe_expected(expected: set[str]) -> str:
    words = sorted({_token_word(t) for t in expected})
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words)


class _ToIR(Transformer):
    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename

    def _loc(self, meta: Any) -> ir.Loc:
        line = getattr(meta, "line", 0) or 0
        col = getattr(meta, "column", 0) or 0
        return ir.Loc(self.filename, line, col)

    def _tok_loc(self, tok: Token) -> ir.Loc:
        return ir.Loc(self.filename, tok.line or 0, tok.column or 0)

    # ---- file and kernel
    def start(self, items: list) -> ir.Kernel:
        kernels = [i for i in items if isinstance(i, ir.Kernel)]
        return kernels[0]

    def import_stmt(self, items: list) -> None:
        return None

    def import_names(self, items: list) -> None:
        return None

    def dotted_name(self, items: list) -> str:
        return ".".join(str(t) for t in items)

    @v_args(meta=True)
    def decorator(self, meta: Any, items: list) -> str:
        return items[0]

    @v_args(meta=True)
    def kernel_def(self, meta: Any, items: list) -> ir.Kernel:
        # items: decorators..., NAME, parameters|None, returns|None, suite
        idx = 0
        while isinstance(items[idx], str) and not isinstance(items[idx], Token):
            idx += 1
        name = items[idx]
        params = items[idx + 1] or ()
        body = items[-1]
        return ir.Kernel(str(name), tuple(params), tuple(body), self._loc(meta))

    def parameters(self, items: list) -> tuple:
        return tuple(p for p in items if p is not None)

    @v_args(meta=True)
    def param(self, meta: Any, items: list) -> ir.Param:
        name, _annotation, default = items
        return ir.Param(str(name), default, self._loc(meta))

    def suite(self, items: list) -> tuple:
        out: list = []
        for it in items:
            if isinstance(it, list):
                out.extend(it)
            elif it is not None:
                out.append(it)
        return tuple(out)

    def simple_stmt(self, items: list) -> list:
        return [i for i in items if i is not None]

    # ---- simple statements
    @v_args(meta=True)
    def assign_stmt(self, meta: Any, items: list) -> ir.Assign:
        targets, value = items
        names, unpack = targets
        return ir.Assign(names, value, unpack, self._loc(meta))

    def targets(self, items: list) -> tuple:
        exprs = [t for t in items if t is not None]
        unpack = len(exprs) > 1
        if len(exprs) == 1 and isinstance(exprs[0], ir.TupleExpr):
            exprs, unpack = list(exprs[0].elts), True
        names = []
        for e in exprs:
            if not isinstance(e, ir.Name):
                raise ConfigError("only names can be assigned to (a = ..., or a, b = ...)",
                                  getattr(e, "loc", None))
            names.append(e.id)
        return tuple(names), unpack

    @v_args(meta=True)
    def augassign_stmt(self, meta: Any, items: list) -> ir.AugAssign:
        name, op, value = items
        return ir.AugAssign(str(name), str(op)[:-1], value, self._loc(meta))

    @v_args(meta=True)
    def expr_stmt(self, meta: Any, items: list) -> ir.ExprStmt:
        return ir.ExprStmt(items[0], self._loc(meta))

    @v_args(meta=True)
    def pass_stmt(self, meta: Any, items: list) -> ir.Pass:
        return ir.Pass(self._loc(meta))

    @v_args(meta=True)
    def break_stmt(self, meta: Any, items: list) -> ir.Break:
        return ir.Break(self._loc(meta))

    @v_args(meta=True)
    def continue_stmt(self, meta: Any, items: list) -> ir.Continue:
        return ir.Continue(self._loc(meta))

    @v_args(meta=True)
    def return_stmt(self, meta: Any, items: list) -> ir.Return:
        if items and items[0] is not None:
            raise ConfigError("a kernel body cannot return a value", self._loc(meta))
        return ir.Return(self._loc(meta))

    # ---- compound statements
    @v_args(meta=True)
    def if_stmt(self, meta: Any, items: list) -> ir.If:
        cond, body = items[0], items[1]
        rest = items[2:]
        else_body: tuple = ()
        if rest and rest[-1] is not None and isinstance(rest[-1], tuple) and rest[-1][:1] == ("else",):
            else_body = rest[-1][1]
        elifs = [r for r in rest if isinstance(r, tuple) and r[:1] == ("elif",)]
        for _tag, econd, ebody, eloc in reversed(elifs):
            else_body = (ir.If(econd, ebody, else_body, eloc),)
        return ir.If(cond, body, else_body, self._loc(meta))

    @v_args(meta=True)
    def elif_clause(self, meta: Any, items: list) -> tuple:
        return ("elif", items[0], items[1], self._loc(meta))

    def else_clause(self, items: list) -> tuple:
        return ("else", items[0])

    @v_args(meta=True)
    def for_stmt(self, meta: Any, items: list) -> ir.For:
        var, it, body = items
        loc = self._loc(meta)
        fn = getattr(it, "func", None)
        name = fn.id if isinstance(fn, ir.Name) else \
            fn.name if isinstance(fn, ir.Attr) and isinstance(fn.obj, ir.Name) \
            and fn.obj.id == "cutlass" else ""
        if not (isinstance(it, ir.Call) and name in ("range", "range_constexpr")
                and not it.kwargs and 1 <= len(it.args) <= 3):
            raise ConfigError("a for loop must iterate over range(stop), range(start, stop) "
                              "or range(start, stop, step) (or cutlass.range / "
                              "cutlass.range_constexpr)", getattr(it, "loc", loc))
        args = it.args
        if len(args) == 1:
            start, stop, step = ir.Const(0), args[0], ir.Const(1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ir.Const(1)
        else:
            start, stop, step = args
        return ir.For(str(var), start, stop, step, body, loc, name == "range_constexpr")

    @v_args(meta=True)
    def while_stmt(self, meta: Any, items: list) -> ir.While:
        return ir.While(items[0], items[1], self._loc(meta))

    @v_args(meta=True)
    def with_stmt(self, meta: Any, items: list) -> Any:
        ctx, alias, body = items
        loc = self._loc(meta)
        if alias is not None:
            raise ConfigError("'with ... as NAME' is not supported", loc)
        if isinstance(ctx, ir.Call) and isinstance(ctx.func, ir.Name) and ctx.func.id == "role":
            return _role_block(ctx, body, loc)
        return ir.With(ctx, body, loc)

    # ---- expressions
    @v_args(meta=True)
    def ifexp(self, meta: Any, items: list) -> ir.IfExp:
        then, cond, orelse = items
        return ir.IfExp(cond, then, orelse, self._loc(meta))

    @v_args(meta=True)
    def or_test(self, meta: Any, items: list) -> ir.BoolOp:
        return ir.BoolOp("or", tuple(items), self._loc(meta))

    @v_args(meta=True)
    def and_test(self, meta: Any, items: list) -> ir.BoolOp:
        return ir.BoolOp("and", tuple(items), self._loc(meta))

    @v_args(meta=True)
    def not_op(self, meta: Any, items: list) -> ir.UnaryOp:
        return ir.UnaryOp("not", items[0], self._loc(meta))

    def comp_op(self, items: list) -> str:
        return " ".join(str(t) for t in items)

    @v_args(meta=True)
    def comparison(self, meta: Any, items: list) -> Any:
        loc = self._loc(meta)
        parts = []
        left = items[0]
        for i in range(1, len(items), 2):
            op, right = items[i], items[i + 1]
            parts.append(ir.Compare(op, left, right, loc))
            left = right
        return parts[0] if len(parts) == 1 else ir.BoolOp("and", tuple(parts), loc)

    def _binchain(self, meta: Any, items: list, op: Optional[str] = None) -> Any:
        loc = self._loc(meta)
        left = items[0]
        i = 1
        while i < len(items):
            if op is None:
                o, right = str(items[i]), items[i + 1]
                i += 2
            else:
                o, right = op, items[i]
                i += 1
            left = ir.BinOp(o, left, right, loc)
        return left

    @v_args(meta=True)
    def bor_expr(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items, "|")

    @v_args(meta=True)
    def xor_expr(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items, "^")

    @v_args(meta=True)
    def band_expr(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items, "&")

    @v_args(meta=True)
    def shift_expr(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items)

    @v_args(meta=True)
    def arith_expr(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items)

    @v_args(meta=True)
    def term(self, meta: Any, items: list) -> Any:
        return self._binchain(meta, items)

    @v_args(meta=True)
    def power(self, meta: Any, items: list) -> Any:
        return ir.BinOp("**", items[0], items[-1], self._loc(meta))

    @v_args(meta=True)
    def unary(self, meta: Any, items: list) -> Any:
        op, operand = items
        if str(op) == "-" and isinstance(operand, ir.Const) and isinstance(operand.value, int):
            return ir.Const(-operand.value, self._loc(meta))
        return ir.UnaryOp(str(op), operand, self._loc(meta))

    @v_args(meta=True)
    def call(self, meta: Any, items: list) -> ir.Call:
        func, args = items
        pos, kw = [], []
        for a in args or ():
            if isinstance(a, tuple) and len(a) == 3 and a[0] == "kw":
                kw.append((a[1], a[2]))
            else:
                if kw:
                    raise ConfigError("positional argument after keyword argument",
                                      self._loc(meta))
                pos.append(a)
        return ir.Call(func, tuple(pos), tuple(kw), self._loc(meta))

    def arguments(self, items: list) -> list:
        return [i for i in items if i is not None]

    def kwarg(self, items: list) -> tuple:
        return ("kw", str(items[0]), items[1])

    @v_args(meta=True)
    def subscript(self, meta: Any, items: list) -> ir.Subscript:
        return ir.Subscript(items[0], items[1], self._loc(meta))

    @v_args(meta=True)
    def attr(self, meta: Any, items: list) -> ir.Attr:
        return ir.Attr(items[0], str(items[1]), self._loc(meta))

    @v_args(meta=True)
    def name(self, meta: Any, items: list) -> ir.Name:
        return ir.Name(str(items[0]), self._loc(meta))

    @v_args(meta=True)
    def number(self, meta: Any, items: list) -> ir.Const:
        text = str(items[0])
        if len(text) > MAX_LITERAL_CHARS:
            raise ConfigError(f"integer literal of {len(text)} characters: too large (values "
                              "must fit in 64 bits)", self._loc(meta))
        return ir.Const(int(text.replace("_", ""), 0), self._loc(meta))

    @v_args(meta=True)
    def string(self, meta: Any, items: list) -> ir.Const:
        s = str(items[0])
        return ir.Const(s[1:-1], self._loc(meta))

    @v_args(meta=True)
    def true(self, meta: Any, items: list) -> ir.Const:
        return ir.Const(True, self._loc(meta))

    @v_args(meta=True)
    def false(self, meta: Any, items: list) -> ir.Const:
        return ir.Const(False, self._loc(meta))

    @v_args(meta=True)
    def none(self, meta: Any, items: list) -> ir.Const:
        return ir.Const(None, self._loc(meta))

    @v_args(meta=True)
    def empty_tuple(self, meta: Any, items: list) -> ir.TupleExpr:
        return ir.TupleExpr((), self._loc(meta))

    @v_args(meta=True)
    def tuple(self, meta: Any, items: list) -> ir.TupleExpr:
        return ir.TupleExpr(tuple(i for i in items if i is not None), self._loc(meta))

    @v_args(meta=True)
    def list(self, meta: Any, items: list) -> ir.ListExpr:
        return ir.ListExpr(tuple(i for i in items if i is not None), self._loc(meta))


def _role_block(call: ir.Call, body: tuple, loc: ir.Loc) -> ir.RoleBlock:
    kw = dict(call.kwargs)
    args = list(call.args)
    name: Optional[str] = None
    if args and isinstance(args[0], ir.Const) and isinstance(args[0].value, str):
        name = args.pop(0).value
    if "name" in kw:
        n = kw.pop("name")
        if not (isinstance(n, ir.Const) and isinstance(n.value, str)):
            raise ConfigError("role name must be a string", n.loc)
        name = n.value
    if name is None:
        raise ConfigError('a role needs a name: with role("producer", warps=[0]):', loc)
    warps = kw.pop("warps", None) or (args.pop(0) if args else None)
    if warps is None:
        raise ConfigError(f"role {name!r} needs warps=[...]", loc,
                          misspelt_keyword("warps", kw))
    ctas = kw.pop("ctas", None)
    if args or kw:
        extra = ", ".join(list(kw) + [f"positional #{i}" for i in range(len(args))])
        raise ConfigError(f"role {name!r}: unexpected argument(s) {extra}; "
                          "expected role(name, warps=..., ctas=...)", loc,
                          did_you_mean(next(iter(kw), ""), ("warps", "ctas", "name")))
    return ir.RoleBlock(name, warps, ctas, body, loc)


def parse(text: str, filename: str = "<string>") -> ir.Kernel:
    """Parse the text of a ``.pipe`` file into a ``Kernel``; raise ``ConfigError``."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = _parser().parse(text)
    except _IndentProblem as e:
        _LOCAL.parser = None  # the indenter's state is left mid-file
        raise ConfigError(e.message, ir.Loc(filename, e.line, e.column)) from None
    except RecursionError:
        _LOCAL.parser = None
        raise ConfigError("the file nests too deeply to be parsed",
                          ir.Loc(filename, 1, 1)) from None
    except UnexpectedCharacters as e:
        raise ConfigError(
            f"unexpected character {text[e.pos_in_stream]!r}"
            + (f"; expected {_describe_expected(e.allowed)}" if e.allowed else ""),
            ir.Loc(filename, e.line, e.column)) from None
    except UnexpectedToken as e:
        tok = e.token
        what = "end of file" if tok.type == "$END" else (
            "end of line" if tok.type == "_NL" else
            "indentation" if tok.type == "_INDENT" else
            "end of block" if tok.type == "_DEDENT" else repr(str(tok)))
        line = tok.line if tok.line is not None else e.line
        col = tok.column if tok.column is not None else e.column
        if tok.type in ("_INDENT", "_DEDENT") and getattr(tok, "end_line", None):
            # the indenter borrows the position of the newline token before the indented
            # line; its end is where the offending line's first statement starts
            line, col = tok.end_line, tok.end_column
        raise ConfigError(f"unexpected {what}; expected {_describe_expected(e.expected)}",
                          ir.Loc(filename, line or 0, col or 0)) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark errors
        raise ConfigError(f"syntax error: {e}", ir.Loc(filename, e.line, e.column)) from None
    except ConfigError:
        raise
    try:
        kernel = _ToIR(filename).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, ConfigError):
            raise e.orig_exc from None
        if isinstance(e.orig_exc, RecursionError):
            raise ConfigError("the file nests too deeply to be read",
                              ir.Loc(filename, 1, 1)) from None
        raise
    except RecursionError:
        raise ConfigError("the file nests too deeply to be read",
                          ir.Loc(filename, 1, 1)) from None
    if isinstance(kernel, ir.Kernel):
        _check_expr_depth(kernel)
    if not isinstance(kernel, ir.Kernel):
        raise ConfigError("the file does not define a kernel (def NAME(...):)",
                          ir.Loc(filename, 1, 1))
    return ir.Kernel(kernel.name, kernel.params, kernel.body, kernel.loc, text)


_EXPR_TYPES = (ir.Const, ir.Name, ir.Attr, ir.Call, ir.BinOp, ir.UnaryOp, ir.Compare,
               ir.BoolOp, ir.IfExp, ir.TupleExpr, ir.ListExpr, ir.Subscript)


def _ir_children(node: Any) -> Iterator[Any]:
    for f in dataclasses.fields(node):
        if f.name == "loc":
            continue
        todo = [getattr(node, f.name)]
        while todo:
            v = todo.pop()
            if dataclasses.is_dataclass(v) and not isinstance(v, (type, ir.Loc)):
                yield v
            elif isinstance(v, (tuple, list)):
                todo.extend(v)


def _check_expr_depth(kernel: ir.Kernel) -> None:
    """Refuse an expression more than ``MAX_EXPR_DEPTH`` deep (iteratively: the compiler
    and the engines evaluate expressions recursively)."""
    stack: list[tuple[Any, int]] = [(kernel, 0)]
    while stack:
        node, depth = stack.pop()
        is_expr = isinstance(node, _EXPR_TYPES)
        for c in _ir_children(node):
            d = (depth + 1 if is_expr else 1) if isinstance(c, _EXPR_TYPES) else 0
            if d > MAX_EXPR_DEPTH:
                loc = getattr(c, "loc", None) or getattr(node, "loc", None)
                raise ConfigError(f"expression nested more than {MAX_EXPR_DEPTH} deep (each "
                                  "operator of a chain such as a + b + c counts as a level); "
                                  "split it with assignments", loc)
            stack.append((c, d))


def read_source(path: str | Path) -> str:
    """The text of a source file, refusing what cannot be one: something that is not a
    regular file (a FIFO or a device would block or never end), a file larger than
    ``MAX_FILE_BYTES``, or one that is not UTF-8.  Raises ConfigError."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror}", ir.Loc(str(p))) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{p} is a directory, not a file", ir.Loc(str(p)))
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{p} is not a regular file (a pipe, socket or device); pass the "
                          "path of a file", ir.Loc(str(p)))
    if st.st_size > MAX_FILE_BYTES:
        raise ConfigError(f"{p} is {st.st_size:,} bytes; source files are limited to "
                          f"{MAX_FILE_BYTES:,}", ir.Loc(str(p)))
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror}", ir.Loc(str(p))) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{p} is larger than {MAX_FILE_BYTES:,} bytes", ir.Loc(str(p)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(f"the file is not UTF-8 text (byte 0x{data[e.start]:02x})",
                          ir.Loc(str(p), line, col)) from None


def parse_file(path: str | Path) -> ir.Kernel:
    p = Path(path)
    return parse(read_source(p), str(p))
