"""The SPIN yardstick is checked: SPIN's verdict on the Promela that ``bench/spin_promela.py``
prints equals pipeproof's, and on a proven model SPIN stores exactly the states of the
native engine's unreduced search (the Promela is the same state space, not a look-alike).

Skipped where SPIN or a C compiler is absent (CI has no SPIN: ``apt-get install spin``)
or the native engine (cffi) is, which fixes the encoding's value ranges.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

pytestmark = [
    pytest.mark.skipif(shutil.which("spin") is None,
                       reason="SPIN is not installed (apt-get install spin); bench-only yardstick"),
    pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")),
                       reason="SPIN's pan.c needs a C compiler"),
]

#: correct and buggy, deadlock and a safety property; the larger two are slow (a C
#: compile of pan.c each, some seconds on a loaded 2-core machine)
CASES = [
    pytest.param("examples/textbook/pipeline_async.pipe", {"stages": 2, "k_tiles": 3},
                 id="pipeline_async"),
    pytest.param("examples/bugs/p2-bug.pipe", {}, id="p2-bug"),
    pytest.param("examples/textbook/pipeline_tma_async.pipe", {"stages": 2, "k_tiles": 2},
                 id="pipeline_tma_async", marks=pytest.mark.slow),
    pytest.param("examples/bugs/x4-bug.pipe", {}, id="x4-bug", marks=pytest.mark.slow),
]


def _spin(pml: str, tmp: Path) -> str:
    (tmp / "m.pml").write_text(pml)
    subprocess.run(["spin", "-a", "m.pml"], cwd=tmp, check=True, capture_output=True)
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-O0", "-DSAFETY", "-o", "pan", "pan.c"], cwd=tmp, check=True,
                   capture_output=True)
    r = subprocess.run(["./pan", "-m100000"], cwd=tmp, capture_output=True, text=True)
    return r.stdout + r.stderr


@pytest.mark.parametrize("rel,params", CASES)
def test_spin_agrees_with_pipeproof(rel: str, params: dict, tmp_path: Path) -> None:
    pytest.importorskip("cffi", reason="the native engine fixes the encoding's ranges")
    from bench_spin import build_system, spin_verdict
    from spin_promela import final_encoding, promela

    from pipeproof.checker.explicit import check_explicit

    system = build_system(ROOT / rel, params)
    want = check_explicit(system, max_states=200_000, timeout=NO_DEADLINE)
    assert want.status in ("PROVEN", "VIOLATED"), want.reason
    enc, ref = final_encoding(system)
    out = _spin(promela(enc, rel).source, tmp_path)
    status, prop = spin_verdict(out)
    assert status == want.status, out
    if want.status == "PROVEN":
        assert ref.complete
        stored = int(re.search(r"(\d+) states, stored", out).group(1))
        assert stored == ref.states, out
    else:
        # SPIN searches depth first: its first violation is some violation, not
        # necessarily the shortest; these examples have one property each
        assert prop == want.prop, out
