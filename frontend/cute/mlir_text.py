"""A reader for MLIR's generic textual form with debug locations.

The CuTe DSL installs value casters on its MLIR Python bindings that build IR when a
value is merely compared or printed, so the lifter never walks the bindings: it reads
the text that ``Operation.get_asm(print_generic_op_form=True, enable_debug_info=True)``
prints.  Generic form is regular: every op is

    %r:2 = "dialect.op"(%a, %b) [^succ] <{properties}> ({regions}) {attrs}
           : (operand types) -> result types loc(#locN)

and ``#locN = loc(...)`` aliases at the end give file/line/column and, with
``CUTE_DSL_LOC_TRACEBACKS``, the whole Python call stack as nested ``callsite``s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


class MlirSyntaxError(ValueError):
    """The text is not the generic form this reader expects."""


@dataclass(frozen=True)
class Frame:
    """One Python frame of an op's location: function, file, line, column."""

    function: str
    file: str
    line: int
    column: int = 0


class Op:
    """One operation.  ``operands`` and ``results`` are SSA names (``%12``, ``%5#1``);
    ``attrs`` maps property and attribute names to their text; ``regions`` is a list of
    regions, each a list of ``Block``s."""

    __slots__ = ("name", "operands", "results", "operand_types", "result_types", "attrs",
                 "regions", "loc")

    def __init__(self, name: str) -> None:
        self.name = name
        self.operands: list[str] = []
        self.results: list[str] = []
        self.operand_types: list[str] = []
        self.result_types: list[str] = []
        self.attrs: dict[str, str] = {}
        self.regions: list[list[Block]] = []
        self.loc: Optional[str] = None

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass
class Block:
    args: list[str]
    ops: list[Op]


def skip(s: str, i: int) -> int:
    """The index just after the bracket group or string that starts at ``s[i]``."""
    if s[i] == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    stack = [_CLOSE[s[i]]]
    i += 1
    n = len(s)
    while stack:
        if i >= n:
            raise MlirSyntaxError("unbalanced brackets")
        c = s[i]
        if c == '"':
            i = skip(s, i)
            continue
        if c == "-" and i + 1 < n and s[i + 1] == ">":  # '->' is not a closing '>'
            i += 2
            continue
        if c in _CLOSE:
            stack.append(_CLOSE[c])
        elif c == stack[-1]:
            stack.pop()
        i += 1
    return i


def split_top(s: str, sep: str = ",") -> list[str]:
    """``s`` split at top-level ``sep`` (not inside brackets or strings)."""
    out, i, start = [], 0, 0
    while i < len(s):
        c = s[i]
        if c in _CLOSE or c == '"':
            i = skip(s, i)
            continue
        if c == sep:
            out.append(s[start:i].strip())
            start = i + 1
        i += 1
    tail = s[start:].strip()
    if tail:
        out.append(tail)
    return out


class Module:
    """A parsed module: its top op, type/attribute aliases, locations, block arg types."""

    def __init__(self, text: str) -> None:
        self.aliases: dict[str, str] = {}
        self.locs: dict[str, str] = {}
        self.arg_types: dict[str, str] = {}
        self._frames: dict[str, tuple[Frame, ...]] = {}
        body = []
        for line in text.split("\n"):
            if line.startswith("#loc"):
                k, _, v = line.partition(" = ")
                self.locs[k] = v
            elif re.match(r"^[!#][\w.]+ = ", line):
                k, _, v = line.partition(" = ")
                self.aliases[k] = v
            else:
                body.append(line)
        self.s = "\n".join(body)
        self._alias_re = re.compile(r"([!#][\w.]+)")
        i = self._ws(0)
        if i >= len(self.s):
            raise MlirSyntaxError("empty module text")
        self.top, _ = self._op(i)

    # ---- types with aliases expanded
    def expand(self, t: str) -> str:
        for _ in range(8):
            n = self._alias_re.sub(lambda m: self.aliases.get(m.group(1), m.group(1)), t)
            if n == t:
                break
            t = n
        return t

    def _ws(self, i: int) -> int:
        s = self.s
        while i < len(s) and s[i] in " \t\n":
            i += 1
        return i

    def _op(self, i: int) -> tuple[Op, int]:
        s = self.s
        results: list[str] = []
        if s[i] == "%":
            j = s.index(" = ", i)
            for r in s[i:j].split(","):
                r = r.strip()
                if ":" in r:  # %r:3 -> %r#0, %r#1, %r#2
                    nm, k = r.split(":")
                    results.extend(f"{nm}#{x}" for x in range(int(k)))
                else:
                    results.append(r)
            i = j + 3
        if s[i] != '"':
            raise MlirSyntaxError(f"expected a quoted op name at {s[i:i + 40]!r} "
                                  "(is this the generic form?)")
        j = skip(s, i)
        op = Op(s[i + 1:j - 1])
        op.results = results
        i = j
        j = skip(s, i)
        op.operands = split_top(s[i + 1:j - 1])
        i = self._ws(j)
        if s[i] == "[":  # successors: unstructured control flow
            op.attrs["__successors__"] = s[i:skip(s, i)]
            i = self._ws(skip(s, i))
        if s.startswith("<{", i):
            j = skip(s, i)
            self._attrs(s[i + 2:j - 2], op.attrs)
            i = self._ws(j)
        if s[i] == "(":
            i += 1
            while True:
                i = self._ws(i)
                reg, i = self._region(i)
                op.regions.append(reg)
                i = self._ws(i)
                if s[i] == ",":
                    i += 1
                    continue
                i += 1
                break
            i = self._ws(i)
        if s[i] == "{":
            j = skip(s, i)
            self._attrs(s[i + 1:j - 1], op.attrs)
            i = self._ws(j)
        if s[i] != ":":
            raise MlirSyntaxError(f"{op.name}: expected ':' at {s[i:i + 40]!r}")
        i = self._ws(i + 1)
        j = skip(s, i)
        op.operand_types = [self.expand(t) for t in split_top(s[i + 1:j - 1])]
        i = self._ws(j)
        if not s.startswith("->", i):
            raise MlirSyntaxError(f"{op.name}: expected '->' at {s[i:i + 40]!r}")
        i = self._ws(i + 2)
        if s[i] == "(":
            j = skip(s, i)
            op.result_types = [self.expand(t) for t in split_top(s[i + 1:j - 1])]
        else:
            j = i
            while j < len(s) and not s.startswith(" loc(", j) and s[j] != "\n":
                j = skip(s, j) if (s[j] in _CLOSE or s[j] == '"') else j + 1
            t = s[i:j].strip()
            op.result_types = [self.expand(t)] if t else []
        i = j
        if s.startswith(" loc(", i):
            j = skip(s, i + 4)
            op.loc = s[i + 5:j - 1]
            i = j
        return op, i

    def _attrs(self, txt: str, out: dict[str, str]) -> None:
        for kv in split_top(txt):
            k, sep, v = kv.partition(" = ")
            out[k.strip()] = v.strip() if sep else "unit"

    def _region(self, i: int) -> tuple[list[Block], int]:
        s = self.s
        if s[i] != "{":
            raise MlirSyntaxError(f"expected a region at {s[i:i + 40]!r}")
        i += 1
        blocks: list[Block] = []
        args: list[str] = []
        ops: list[Op] = []
        while True:
            i = self._ws(i)
            if s[i] == "}":
                if ops or args or not blocks:
                    blocks.append(Block(args, ops))
                return blocks, i + 1
            if s[i] == "^":
                if ops or args:
                    blocks.append(Block(args, ops))
                j = s.index("(", i)
                k = skip(s, j)
                args = []
                for a in split_top(s[j + 1:k - 1]):
                    nm, _, ty = a.partition(":")
                    args.append(nm.strip())
                    self.arg_types[nm.strip()] = self.expand(
                        re.sub(r"\s+loc\(.*\)$", "", ty.strip()))
                ops = []
                i = s.index(":", k) + 1
                continue
            op, i = self._op(i)
            ops.append(op)

    # ---- walking
    def walk(self):
        """Every op, outermost first."""
        stack = [self.top]
        while stack:
            op = stack.pop()
            yield op
            for reg in reversed(op.regions):
                for blk in reversed(reg):
                    stack.extend(reversed(blk.ops))

    def kernels(self) -> list[Op]:
        return [o for o in self.walk() if o.name in ("cuda.kernel", "gpu.func", "llvm.func")
                and ("cute.kernel" in o.attrs or "gpu.kernel" in o.attrs
                     or o.name == "cuda.kernel")]

    def host_functions(self) -> list[Op]:
        return [o for o in self.walk() if o.name == "func.func"]

    # ---- locations: frames innermost first
    def frames(self, loc: Optional[str]) -> tuple[Frame, ...]:
        if not loc:
            return ()
        got = self._frames.get(loc)
        if got is None:
            got = tuple(self._loc_frames(self.locs.get(loc, loc), 0))
            self._frames[loc] = got
        return got

    def _loc_frames(self, t: str, depth: int) -> list[Frame]:
        if depth > 200:
            return []
        t = t.strip()
        if t.startswith("loc(") and t.endswith(")"):
            t = t[4:-1].strip()
        if t.startswith("#loc"):
            return list(self.frames(t))
        if t.startswith("callsite("):
            inner = t[len("callsite("):-1]
            j = 0
            while j < len(inner):
                c = inner[j]
                if c in _CLOSE or c == '"':
                    j = skip(inner, j)
                    continue
                if inner.startswith(" at ", j):
                    return (self._loc_frames(inner[:j], depth + 1)
                            + self._loc_frames(inner[j + 4:], depth + 1))
                j += 1
            return []
        m = re.match(r'"([^"]*)"\((.*)\)$', t, re.S)  # a named location: "fn"(inner)
        if m and m.group(1) and not m.group(1).startswith("/"):
            sub = self._loc_frames(m.group(2), depth + 1)
            if sub:
                return [Frame(m.group(1), sub[0].file, sub[0].line, sub[0].column)] + sub[1:]
            return [Frame(m.group(1), "", 0)]
        m = re.match(r'"([^"]+)":(\d+)(?::(\d+))?', t)
        if m:
            return [Frame("", m.group(1), int(m.group(2)), int(m.group(3) or 0))]
        if t.startswith("fused"):
            m = re.search(r"\[(.*)\]", t, re.S)
            if m:
                for part in split_top(m.group(1)):
                    f = self._loc_frames(part, depth + 1)
                    if f:
                        return f
        return []
