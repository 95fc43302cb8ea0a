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
from pipeproof.checker.native.build import UNIT, core_source, split_units  # noqa: E402
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
