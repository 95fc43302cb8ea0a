"""Memory scopes (``memory_model="strict"``, lesson 8): every engine interprets the same
scope rule of ``model/system.py`` -- full interleaving, symmetry + partial-order reduction,
and z3 BMC agree on verdict, property and counterexample length -- and the CLI takes the
option."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.explicit import check_explicit
from pipeproof.cli import main
from pipeproof.model.system import System

BUGS = Path(__file__).resolve().parent.parent / "examples" / "bugs"


def _system(name: str, mm: str = "strict") -> System:
    return System(compile_file(BUGS / name), memory_model=mm)


def test_engines_agree_on_the_scope_bug() -> None:
    full = check_explicit(_system("x3-bug.pipe"), reduce=False, timeout=120)
    red = check_explicit(_system("x3-bug.pipe"), reduce=True, por=True, timeout=120)
    bmc = check_bmc(_system("x3-bug.pipe"), depth=40, timeout=120)
    assert full.status == red.status == bmc.status == "VIOLATED"
    assert full.prop == red.prop == bmc.prop == "insufficient-scope"
    assert len(full.trace) == len(red.trace) == len(bmc.trace)
    # the last step is the leader's MMA reading the peer's stage
    assert "cta0.w1" in bmc.trace.events[-1].actor


def test_engines_agree_on_the_fix() -> None:
    full = check_explicit(_system("x3-fixed.pipe"), reduce=False, timeout=120)
    bmc = check_bmc(_system("x3-fixed.pipe"), depth=60, timeout=120)
    assert full.status == "PROVEN"
    assert bmc.status in ("PROVEN", "SAFE"), bmc.reason


def test_default_model_adds_no_state() -> None:
    """Without strict scopes the layout is unchanged (no cost for everyone else)."""
    a, b = _system("x3-bug.pipe", "cutlass"), _system("x3-bug.pipe", "strict")
    assert b.n - a.n == sum(len(v) for v in b.cta_only.values()) > 0
    assert not a.cta_only


@pytest.mark.parametrize("mm,code", [("strict", 1), ("cutlass", 0)])
def test_cli_memory_model(mm: str, code: int, capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", str(BUGS / "x3-bug.pipe"), "--memory-model", mm, "-q"])
    assert rc == code
    out = capsys.readouterr().out
    assert ("insufficient-scope" in out) == (mm == "strict")


def test_cli_rejects_an_unknown_memory_model(capsys: pytest.CaptureFixture) -> None:
    assert main(["check", str(BUGS / "x3-bug.pipe"), "--memory-model", "sc"]) == 2
