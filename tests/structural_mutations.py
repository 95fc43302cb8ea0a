"""Structural mutations of generated ``.pipe`` kernels (issue 23 item 1).

The mutations that found the first BMC/explicit disagreement were not the bug-lesson
mutations of ``tests/generators.py`` (a count off by one, a wrong parity) but changes to
the *shape* of a kernel: an operation deleted (``tma_store`` gone, so a warp commits an
empty bulk group), a loop that runs no iteration, a release or a wait missing.  These
functions make such changes on source text, keeping it syntactically valid (a deleted
statement becomes ``pass``), so that most mutants still compile and reach both engines.

* ``delete_op(src, i)``: the ``i``-th operation of a role (a call statement, or an
  assignment from a call such as ``handle = consumer.wait_and_advance()``) becomes
  ``pass``;
* ``zero_trip(src, i)``: the ``i``-th loop's trip count becomes 0 (``range(0)``,
  ``cutlass.range_constexpr(0)``);
* ``empty_groups(src)``: every ``tma_store`` is deleted (each ``producer_commit`` then
  commits an empty bulk group); ``None`` where the kernel stores nothing.

Each returns ``None`` where it does not apply (no such operation or loop), so that a
strategy can pick another one.
"""

from __future__ import annotations

import re
from typing import Optional

#: a statement of a role body that does something: ``name(...)``, ``a.b(...)`` or
#: ``x = a.b(...)`` / ``x, y = a.b(...)``, on one line with balanced brackets
OP = re.compile(r"^(?P<indent>\s+)(?:[\w, ]+=\s*)?[A-Za-z_][\w.]*\(.*\)\s*$")
#: a loop's trip count: the argument of range(...)/range_constexpr(...) in a for header
LOOP = re.compile(r"^(?P<head>\s*for\s+\w+\s+in\s+(?:cutlass\.)?range(?:_constexpr)?\()"
                  r"(?P<arg>[^()]*)(?P<tail>\)\s*:\s*)$")


def _role_lines(lines: list[str]) -> list[int]:
    """Indices of the lines inside ``with role(...)`` blocks."""
    out: list[int] = []
    inside: Optional[int] = None  # indentation of the enclosing ``with role`` line
    for k, ln in enumerate(lines):
        if not ln.strip():
            continue
        ind = len(ln) - len(ln.lstrip())
        if inside is not None and ind <= inside:
            inside = None
        if inside is None and ln.lstrip().startswith("with role("):
            inside = ind
            continue
        if inside is not None:
            out.append(k)
    return out


def _balanced(s: str) -> bool:
    return s.count("(") == s.count(")") and s.count("[") == s.count("]")


def operations(src: str) -> list[int]:
    """Line indices of the operations ``delete_op`` may delete."""
    lines = src.splitlines()
    return [k for k in _role_lines(lines)
            if OP.match(lines[k]) and _balanced(lines[k])
            and not lines[k].lstrip().startswith(("for ", "if ", "with ", "while "))]


def delete_op(src: str, i: int) -> Optional[str]:
    ops = operations(src)
    if not ops:
        return None
    lines = src.splitlines()
    k = ops[i % len(ops)]
    m = OP.match(lines[k])
    assert m is not None
    lines[k] = m.group("indent") + "pass  # deleted: " + lines[k].strip()
    return "\n".join(lines) + "\n"


def loops(src: str) -> list[int]:
    return [k for k, ln in enumerate(src.splitlines()) if LOOP.match(ln)]


def zero_trip(src: str, i: int) -> Optional[str]:
    ks = loops(src)
    if not ks:
        return None
    lines = src.splitlines()
    k = ks[i % len(ks)]
    m = LOOP.match(lines[k])
    assert m is not None
    lines[k] = m.group("head") + "0" + m.group("tail")
    return "\n".join(lines) + "\n"


def empty_groups(src: str) -> Optional[str]:
    lines = src.splitlines()
    hit = False
    for k in _role_lines(lines):
        if lines[k].lstrip().startswith("tma_store("):
            ind = lines[k][: len(lines[k]) - len(lines[k].lstrip())]
            lines[k] = ind + "pass  # deleted: " + lines[k].strip()
            hit = True
    return "\n".join(lines) + "\n" if hit else None


def apply(src: str, kind: str, i: int) -> Optional[str]:
    if kind == "delete":
        return delete_op(src, i)
    if kind == "zero-trip":
        return zero_trip(src, i)
    if kind == "empty-groups":
        return empty_groups(src)
    raise ValueError(kind)


KINDS = ("delete", "zero-trip", "empty-groups")
