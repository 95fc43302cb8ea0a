"""--timeout holds to within one set-up phase (issue 23 items 2 and 4): a phase that
would start past the deadline is not started.  The tests give a deadline that has
passed before the engine starts (a timeout of a microsecond), so what they check -- which
phases ran -- does not depend on the machine's speed."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def _s1(stages: int) -> System:
    return System(compile_file(EX / "bugs/s1-bug.pipe", {"stages": stages}))


def test_the_por_setup_gives_up_past_its_deadline() -> None:
    """Found by bench/fuzz_pipe.py: s1-bug with stages=256 (1,074 instructions of
    unrolled prologue) spent over a minute in the partial-order reduction's set-up
    (``por.Footprints``, quadratic in straight-line code) with ``--timeout 5``.  The
    set-up checks the deadline per instruction; a passed one is UNKNOWN at once."""
    from pipeproof.checker.errors import SetupTimeout
    from pipeproof.checker.explicit import check_explicit
    from pipeproof.checker.por import Footprints

    system = _s1(256)
    with pytest.raises(SetupTimeout):
        Footprints(system, deadline=0.0)
    v = check_explicit(system, timeout=1e-9)
    assert v.status == "UNKNOWN" and "partial-order reduction" in v.reason, v.headline()


def test_the_symbolic_encoding_gives_up_past_its_deadline() -> None:
    """The same kernel's BMC built templates for minutes (a cp.async queue of 256
    entries in every one); the build checks the deadline per instruction."""
    from pipeproof.checker.errors import SetupTimeout
    from pipeproof.checker.symbolic import Encoding

    system = _s1(256)
    with pytest.raises(SetupTimeout):
        Encoding(system, deadline=0.0)
    v = check_bmc(system, depth=10, timeout=1e-6, max_states=200)
    assert v.status == "UNKNOWN" and "no level finished" in v.reason, v.headline()


def test_waits_from_is_computed_for_the_pcs_a_search_reaches() -> None:
    """The reachable waits of every pc were computed up front, a walk of the program per
    pc (O(n^2) on straight-line code); now on demand, for the pcs a search asks about:
    none at set-up, and at most one per warp and pc the bounded search reached."""
    from pipeproof.checker.explicit import check_explicit
    from pipeproof.checker.por import Footprints

    system = _s1(3)
    fp = Footprints(system)
    assert fp._waits_from == {}
    a, pc = 0, 0
    assert fp.waits_from(a, pc) == fp.waits_from(a, pc)
    assert all(isinstance(type(system.code(a)[p]).__name__, str) and
               type(system.code(a)[p]).__name__ == "Wait" for p in fp.waits_from(a, pc))
    # the verdict with the lazy walk is the one without the reduction
    v = check_explicit(system, max_states=20_000, timeout=1e9, por=True)
    w = check_explicit(system, max_states=20_000, timeout=1e9, reduce=False)
    assert (v.status, v.prop) == (w.status, w.prop)


def test_a_parameter_range_compiles_within_the_timeout() -> None:
    """``--param stages=1..256 --timeout 10`` was still compiling at 60 s: the trial
    compilations that decide which range parameters stay symbolic had no deadline.  A
    deadline passed before they start ends the check with UNKNOWN (not "checked value by
    value"), whatever the machine's speed."""
    from pipeproof.api import check_file
    from pipeproof.model.errors import CompileTimeout, Unsupported

    with pytest.raises(CompileTimeout) as e:  # the command line: UNKNOWN, exit 3
        check_file(EX / "textbook/pipeline_async.pipe", {"stages": range(1, 257)},
                   timeout=1e-9, jobs=1)
    assert isinstance(e.value, Unsupported)


@pytest.mark.parametrize("name,args", [
    # the certificate does not decide it, so the race waits past the head start
    ("textbook/pipeline_tma_async_multicast.pipe", ["--jobs", "2"]),
    ("textbook/pipeline_async.pipe", ["--param", "stages=1..2", "--engine", "native"])],
    ids=["auto-racing", "native"])
def test_an_infinite_timeout_is_no_limit(name: str, args: list, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture) -> None:
    """``--timeout inf`` means no limit: the racing portfolio's waits on its stages and
    the native engine's compiler run took the infinity to the operating system, whose
    waits refuse it (``OverflowError``, a traceback).  The suite itself runs with no
    wall-clock limit (``helpers.NO_DEADLINE``)."""
    from pipeproof.checker.portfolio import native_unavailable
    from pipeproof.cli import main

    if "native" in args and native_unavailable():
        pytest.skip(f"the native engine is unavailable here: {native_unavailable()}")
    monkeypatch.setenv("PIPEPROOF_NATIVE_CACHE", str(tmp_path))  # compile, not a cache hit
    rc = main(["check", str(EX / name), "--timeout", "inf", *args])
    out = capsys.readouterr().out
    assert rc == 0 and "PROVEN" in out, out
