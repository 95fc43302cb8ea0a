"""Errors of the engines themselves, never verdicts (a leaf: it imports nothing).

``InternalError`` is what every engine raises when its own answer does not survive the
replay through the concrete model (ARCHITECTURE.md: never report a verdict one is unsure
of); the command line turns it into ``UNKNOWN internal error``.
"""

from __future__ import annotations


class InternalError(RuntimeError):
    """A symbolic counterexample that the concrete model does not reproduce (a bug in
    an engine, never a verdict)."""



class Timeout(Exception):
    """The solver's deadline passed while the unrolling was at level ``depth`` (the BMC
    level loop and the chain's dependence queries raise it; ``bmc.check_bmc`` turns it
    into UNKNOWN)."""

    def __init__(self, depth: int):
        super().__init__(depth)
        self.depth = depth


class SetupTimeout(Exception):
    """The deadline passed while an engine prepared its search (the partial-order
    reduction's static footprints, ``checker/por/``: seconds on a program of thousands
    of instructions); the engine answers UNKNOWN."""
