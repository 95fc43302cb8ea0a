"""The native engine's build (``checker/native/build.py``): the generated C cut into
units and compiled as several files at once gives the same search as one file.

Differential: the same kernel compiled as one file and as three, each into a fresh
cache, against the explicit engine, state for state; and the split itself keeps every
unit once, in order, each file starting with the prelude.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("cffi", reason="the native engine needs cffi (pip install .[native])")
if not any(shutil.which(c) for c in ("cc", "gcc")):  # pragma: no cover
    pytest.skip("the native engine needs a C compiler", allow_module_level=True)

from generators import build_system  # noqa: E402

from pipeproof.checker.explicit import check_explicit  # noqa: E402
from pipeproof.checker.native import build  # noqa: E402
from pipeproof.checker.native.build import UNIT, core_source, loaded, split_units  # noqa: E402
from pipeproof.checker.native.ccode import generate  # noqa: E402
from pipeproof.checker.native.search import _Shape, check_native  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: several warps, a deadlock at depth > 1
EXAMPLE = "examples/bugs/p1-bug.pipe"


def test_split_keeps_every_unit_once_in_order() -> None:
    system = build_system((ROOT / EXAMPLE).read_text())
    src = generate(_Shape(system, []).encoding(), core_source()).source
    prelude, *units = src.split(UNIT + "\n")
    assert len(units) == len(system.agents) + 2  # the warps, the deliveries, the search
    for n in (1, 2, 3, len(units), len(units) + 5):
        files = split_units(src, n)
        assert 1 <= len(files) <= max(1, n)
        if n == 1:
            assert files == [src]
            continue
        assert all(f.startswith(prelude) for f in files)
        assert "".join(f[len(prelude):] for f in files) == "".join(units)


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_one_file_or_several_search_the_same(jobs: str, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PIPEPROOF_NATIVE_JOBS", jobs)
    monkeypatch.setenv("PIPEPROOF_NATIVE_CACHE", str(tmp_path))  # compiled here, now
    system = build_system((ROOT / EXAMPLE).read_text())
    v = check_native(system, max_states=3_000, timeout=1e6)
    w = check_explicit(system, max_states=3_000, timeout=1e6, reduce=False)
    assert list(tmp_path.glob("pp_*.so")), "nothing was compiled"
    assert (v.status, v.prop, v.stats.states, v.stats.transitions, v.depth) == \
        (w.status, w.prop, w.stats.states, w.stats.transitions, w.depth)


def test_the_same_kernel_prints_the_same_program(monkeypatch, tmp_path) -> None:
    # z3.simplify orders commutative operands by AST id, and ids depend on which terms
    # earlier work left alive: the encoding built again once the first is gone must
    # print the same C, and a second check of the kernel in this process compiles nothing
    system = build_system((ROOT / "examples/bugs/s3-bug.pipe").read_text())
    first = generate(_Shape(system, []).encoding(), core_source()).source
    assert generate(_Shape(system, []).encoding(), core_source()).source == first
    monkeypatch.setenv("PIPEPROOF_NATIVE_CACHE", str(tmp_path))
    compiled = []
    real = build._compile
    monkeypatch.setattr(build, "_compile", lambda *a: compiled.append(1) or real(*a))
    v = check_native(system, max_states=3_000, timeout=1e6)
    w = check_native(system, max_states=3_000, timeout=1e6)
    assert compiled == [1]
    assert (v.status, v.stats.states, v.depth) == (w.status, w.stats.states, w.depth)


def test_a_library_in_use_is_never_shared(monkeypatch, tmp_path) -> None:
    # the search's state is in the library's globals: a second user of the same source
    # while the first still reads its results gets its own copy; once both are done,
    # the loaded library is reused
    monkeypatch.setenv("PIPEPROOF_NATIVE_CACHE", str(tmp_path))
    system = build_system((ROOT / EXAMPLE).read_text())
    src = generate(_Shape(system, []).encoding(), core_source()).source
    with loaded(src) as (_ffi, a):
        assert a.pp_search(100_000, 1e6, 0, 99) == 1  # ST_FOUND: p1-bug deadlocks
        n = a.pp_nstates()
        with loaded(src) as (_ffi2, b):
            assert b is not a
            b.pp_search(3, 1e6, 0, 99)
            assert b.pp_nstates() < n
        assert a.pp_nstates() == n
        a.pp_free()
    with loaded(src) as (_ffi, c):
        assert c is a
    assert len(list(tmp_path.glob("pp_*.so"))) == 1  # the copy was not cached
