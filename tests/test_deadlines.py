"""--timeout holds to within one set-up phase (issue 23 items 2 and 4): a phase that
would start past the deadline is not started.  The tests give a deadline that has
passed before the engine starts (a timeout of a microsecond), so what they check -- which
phases ran -- does not depend on the machine's speed."""

from __future__ import annotations

from pathlib import Path

from pipeproof.api import compile_file
from pipeproof.checker.bmc import check_bmc
from pipeproof.model.system import System

EX = Path(__file__).resolve().parent.parent / "examples"


def test_bmc_starts_no_setup_phase_past_its_deadline() -> None:
    """Found by bench/fuzz_pipe.py: ``check --engine bmc --timeout 5`` on l1-fixed ran for
    11-35 s on a loaded machine -- the reduced certificate, the level invariants and the
    chain unrolling each started after the deadline had passed."""
    system = System(compile_file(EX / "bugs/l1-fixed.pipe"))
    v = check_bmc(system, depth=10, timeout=1e-6, max_states=2000)
    assert v.status == "UNKNOWN" and "no level finished" in v.reason, v.headline()
    extra = v.stats.extra
    for phase in ("certificate", "invariants", "dependence", "chain_slots"):
        assert phase not in extra, (phase, extra)
