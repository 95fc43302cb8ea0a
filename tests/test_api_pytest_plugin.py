"""The pytest plugin, as a kernel project uses it: a separate pytest run (the plugin is
found through its ``pytest11`` entry point, nothing is configured) over a small test
suite that asserts verdicts of ``.pipe`` files and of a Python API kernel."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
API = Path(__file__).parent / "api_examples"

SUITE = '''
import sys
import pytest
from pipeproof.pytest_plugin import assert_safe, assert_violated

sys.path.insert(0, {api!r})
from pipeline_async import KERNEL as async_kernel  # a Python API kernel

EX = {ex!r}

def test_safe_pipe(pipeproof_check):
    r = assert_safe(pipeproof_check(EX + "/textbook/pipeline_async.pipe"))
    assert r.status == "PROVEN"

def test_safe_python_kernel(pipeproof_check):
    assert_safe(pipeproof_check(async_kernel, {{"k_tiles": 2}}))

def test_known_bug_is_caught(pipeproof_check):
    assert_violated(pipeproof_check(EX + "/bugs/p1-bug.pipe"), "deadlock")

def test_assert_safe_fails_on_a_bug(pipeproof_check):
    assert_safe(pipeproof_check(EX + "/bugs/p1-bug.pipe"))

@pytest.mark.pipeproof(max_states=5, engine="explicit")
def test_unknown_is_not_safe(pipeproof_check):
    assert_safe(pipeproof_check(EX + "/textbook/pipeline_tma_async.pipe"))

def test_wrong_property_fails():
    assert_violated(EX + "/bugs/p1-bug.pipe", "read-before-full")
'''


def test_plugin_in_a_kernel_project(tmp_path: Path) -> None:
    (tmp_path / "test_kernels.py").write_text(
        textwrap.dedent(SUITE.format(api=str(API), ex=str(EX))))
    reports = tmp_path / "reports"
    cp = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
         f"--pipeproof-html={reports}", str(tmp_path / "test_kernels.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = cp.stdout + cp.stderr
    assert "3 failed, 3 passed" in out, out[-4000:]
    assert "FAILED test_kernels.py::test_assert_safe_fails_on_a_bug" in out
    assert "FAILED test_kernels.py::test_unknown_is_not_safe" in out
    assert "FAILED test_kernels.py::test_wrong_property_fails" in out
    # the failure message carries the counterexample as a timeline and in words
    assert "expected SAFE or PROVEN, got VIOLATED deadlock" in out
    assert "STUCK" in out and "What went wrong (deadlock)" in out
    assert "got UNKNOWN state limit" in out
    assert "expected VIOLATED read-before-full, got VIOLATED deadlock" in out
    # --pipeproof-html wrote a report for each check that was not safe
    written = sorted(p.name for p in reports.glob("*.html"))
    assert written == ["test_assert_safe_fails_on_a_bug.html", "test_known_bug_is_caught.html",
                       "test_unknown_is_not_safe.html"]
    assert "<svg" in (reports / "test_assert_safe_fails_on_a_bug.html").read_text()
