"""The tiny value interface every transition function is written against.

One semantics, several interpreters (ARCHITECTURE.md): the transition functions of
``model/`` never branch on a state value with Python ``if``.  They call ``V.ite``,
``V.and_`` and friends on an interpreter object ``V``.  ``CONCRETE`` below evaluates
them on Python ints and bools (explicit-state search, replay of GPU traces);
``pipeproof.checker.symbolic`` provides the same methods over z3 terms (bounded model
checking).  Arithmetic (``+``, ``-``, ``*``) is written with Python operators, which
both ints and z3 terms support; integer division, modulo and comparisons go through
``V`` because their spelling differs between the two.
"""

from __future__ import annotations

from typing import Any, Sequence


class Concrete:
    """Evaluate the semantics on Python ints and bools."""

    symbolic = False

    @staticmethod
    def ite(c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    @staticmethod
    def and_(*xs: Any) -> bool:
        for x in xs:
            if not x:
                return False
        return True

    @staticmethod
    def or_(*xs: Any) -> bool:
        for x in xs:
            if x:
                return True
        return False

    @staticmethod
    def not_(x: Any) -> bool:
        return not x

    @staticmethod
    def eq(a: Any, b: Any) -> bool:
        return a == b

    @staticmethod
    def ne(a: Any, b: Any) -> bool:
        return a != b

    @staticmethod
    def lt(a: Any, b: Any) -> bool:
        return a < b

    @staticmethod
    def le(a: Any, b: Any) -> bool:
        return a <= b

    @staticmethod
    def div(a: Any, b: Any) -> int:
        return a // b

    @staticmethod
    def mod(a: Any, b: Any) -> int:
        return a % b

    @staticmethod
    def select(seq: Sequence[Any], i: Any) -> Any:
        """``seq[i]`` for a value index ``i`` (the symbolic version builds an ite chain)."""
        return seq[i]

    @staticmethod
    def in_range(x: Any, lo: int, hi: int) -> bool:
        """``lo <= x < hi``."""
        return lo <= x < hi

    @staticmethod
    def is_true(x: Any) -> bool:
        """Concrete truth of a condition (only meaningful for the concrete interpreter)."""
        return bool(x)

    @staticmethod
    def const(x: Any) -> Any:
        return x


CONCRETE = Concrete()
