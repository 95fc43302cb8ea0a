"""Conformance on a real GPU (marked ``gpu``; skipped without an NVIDIA GPU + cuda-python).

Run on a Hopper machine:  ``pip install -e '.[test,gpu]' && python -m pytest -m gpu -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.impl.conform import conform_file, exit_code, render_report

ROOT = Path(__file__).resolve().parent.parent
#: textbook examples the PTX emitter does not emit yet (tensor-memory allocation:
#: tcgen05.alloc/dealloc/relinquish_alloc_permit raise Unsupported, spec/primitives.md 12;
#: global memory across a grid's clusters: gmem_flags/gmem_buffer, spec/primitives.md 13)
NOT_EMITTED = {"tmem_allocator", "split_k_serial", "stream_k_fixup"}
TEXTBOOK = sorted(p for p in (ROOT / "examples" / "textbook").glob("*.pipe")
                  if p.stem not in NOT_EMITTED)

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("path", TEXTBOOK, ids=lambda p: p.stem)
def test_textbook_conforms(path, tmp_path):
    rep = conform_file(str(path), {}, runs=50, clusters=4, workdir=str(tmp_path))
    assert exit_code(rep) == 0, render_report(rep)
    assert rep.traces == 200 and rep.counts["ACCEPTED"] == 200


@pytest.mark.parametrize("mutant", ["init-count+1", "missing-release", "consumer-parity"])
def test_mutants_are_caught(mutant, tmp_path):
    path = ROOT / "examples" / "textbook" / "pipeline_tma_async.pipe"
    rep = conform_file(str(path), {}, runs=10, clusters=2, mutant=mutant, workdir=str(tmp_path),
                       timeout_ms=5.0)
    assert rep.traces > 0 and rep.counts.get("REJECTED", 0) == 0, render_report(rep)
    assert rep.counts.get("DEADLOCK", 0) + rep.counts.get("VIOLATION", 0) > 0, render_report(rep)
