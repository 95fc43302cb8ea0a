"""PTX litmus tests (impl/litmus.py): they assemble; on a GPU they give the recorded answers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from pipeproof.impl.litmus import EXPECTED, LITMUS, check


@pytest.mark.parametrize("lit", LITMUS, ids=lambda l: l.name)
def test_litmus_assembles(lit, tmp_path):
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed: PTX assembly not checked")
    p = tmp_path / "l.ptx"
    p.write_text(lit.build())
    r = subprocess.run(["ptxas", "-arch=sm_90a", str(p), "-o", str(tmp_path / "l.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_expectations_name_real_tests():
    names = {l.name for l in LITMUS}
    assert set(EXPECTED) <= names


def test_check_logic():
    assert check("fresh_parity", "ok", [[1, 0] + [0] * 10]) == ""
    assert "word 0" in check("fresh_parity", "ok", [[0, 0] + [0] * 10])
    assert check("over_arrival_1_2", "cuda error: CUDA_ERROR_LAUNCH_FAILED (719)", []) == ""
    assert check("over_arrival_1_2", "ok", [[0]]) != ""


@pytest.mark.gpu
def test_litmus_on_gpu(tmp_path):
    from pipeproof.impl.gpu_batch import litmus_jobs
    from pipeproof.impl.conform import RUNNER, write_index

    jobs_dir, out = tmp_path / "jobs", tmp_path / "out"
    jobs_dir.mkdir()
    write_index(str(jobs_dir), litmus_jobs(str(jobs_dir)))
    subprocess.run([sys.executable, str(RUNNER), str(jobs_dir), str(out)], check=True)
    bad = []
    for lit in LITMUS:
        d = json.loads((out / f"litmus__{lit.name}.json").read_text())
        why = check(lit.name, d.get("status", ""), d.get("results") or [])
        if why:
            bad.append(f"{lit.name}: {why}")
    assert not bad, bad
