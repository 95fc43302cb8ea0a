"""The op-by-op comparison of a CuTe DSL kernel's PTX with pipeproof's emitted PTX (issue 25).

Three readings, the first that makes the two agree wins: role by role as emitted
(``ptx_sync.compare_roles``); the same with the code common to the end of every program
taken as code after the DSL's role dispatch; and, for DSL kernels whose warps and CTAs
share one code path, that path's predicates evaluated per program
(``ptx_onepath.compare_one_path``).  Where none agrees, the plain reading's differences
are reported.
"""

from __future__ import annotations

from .ptx_onepath import compare_one_path
from .ptx_sync import RoleDiff, compare_roles


def compare(cute_ptx: str, pipeproof_ptx: str) -> RoleDiff:
    """The first of the three readings (module docstring) under which the two agree;
    else the plain one, whose ``text()`` shows the differences."""
    plain = compare_roles(cute_ptx, pipeproof_ptx, False)
    if plain.equal:
        return plain
    tail = compare_roles(cute_ptx, pipeproof_ptx, True)
    if tail.equal:
        return tail
    one = compare_one_path(cute_ptx, pipeproof_ptx)
    return one if one is not None and one.equal else plain
