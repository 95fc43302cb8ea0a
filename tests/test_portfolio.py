"""The default engine, ``auto`` (checker/portfolio.py): BMC's certificate where it
decides, the explicit engine where it does not, BMC's unrolling where neither has --
and the answer is always the one the engine that decided gives on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pipeproof.api import check_file
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.portfolio import check_auto
from pipeproof.cli import main
from pipeproof.model.errors import ConfigError

import generators as G
from helpers import NO_DEADLINE, undecided_certificate

EX = Path(__file__).resolve().parent.parent / "examples"
#: these tests are about the stages after the quick one (tests/test_portfolio_quick.py)
pytestmark = pytest.mark.usefixtures("no_quick_stage")


def test_certificate_decides_first() -> None:
    # one stage after the other (jobs=1): racing, a loaded machine may let the explicit
    # engine answer first, and which engine decides must not depend on wall-clock time
    r = check_file(EX / "textbook/pipeline_async.pipe", jobs=1)
    v = r.verdict
    assert r.engine == "auto" and v.status == "PROVEN" and not v.bounded
    assert v.stats.engine == "bmc" and v.stats.extra["auto"] == []
    assert v.stats.extra["certificate"]["problem_free"] is True
    text = r.render_text()
    assert "engine bmc (certificate)" in text and "(auto:" not in text


def test_explicit_engine_where_the_certificate_does_not_decide() -> None:
    """Multicast over a 2x2 cluster: the unreduced enumeration behind the certificate
    does not finish; the explicit engine (with its reductions) decides."""
    r = check_file(EX / "textbook/pipeline_tma_async_multicast.pipe", timeout=NO_DEADLINE, jobs=1)
    v = r.verdict
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    (stage,) = v.stats.extra["auto"]
    assert stage["stage"] == "bmc certificate" and stage["status"] == "UNKNOWN"
    assert "no certificate" in stage["reason"]
    text = r.render_text()
    assert "(auto: bmc certificate undecided after" in text
    assert "may decide it" not in text  # the hint is for --engine bmc only


def test_bmc_unknown_says_why_there_is_no_certificate_and_what_may_decide(
        monkeypatch: Any) -> None:
    """``--engine bmc`` out of time on the multicast example: the text names why the
    certificate was not built and points at the engine that decides it.  (The command
    line's phase shares, which the suite otherwise turns off: the enumeration's share
    ends long before its 100,000-state cap on any machine.)"""
    monkeypatch.setenv("PIPEPROOF_PHASE_BUDGETS", "1")
    r = check_file(EX / "textbook/pipeline_tma_async_multicast.pipe", engine="bmc",
                   timeout=6)
    assert r.status == "UNKNOWN"
    text = r.render_text()
    assert "(no certificate: the unreduced enumeration did not finish" in text
    # the Python API names keyword arguments (the command line: --engine explicit)
    assert "engine='explicit', or the default engine='auto', may decide it" in text


def test_unrolling_gets_the_time_the_explicit_engine_left() -> None:
    """--max-states bounds both enumerations (the certificate's and the explicit
    engine's); the unrolling, which enumerates nothing, then proves it."""
    r = check_file(EX / "textbook/pipeline_async.pipe", max_states=5, timeout=NO_DEADLINE)
    v = r.verdict
    assert v.status == "PROVEN" and v.stats.engine == "bmc"
    stages = v.stats.extra["auto"]
    # racing, the native engine ran beside the explicit one (or says why not)
    racing = ["native"] if v.stats.extra["auto_jobs"] == 2 else []
    assert [s["stage"] for s in stages] == ["bmc certificate", *racing, "explicit"]
    assert all("state limit" in s["reason"] or "not run" in s["reason"]
               for s in stages[1:])


def test_unknown_when_no_stage_decides(tmp_path: Path, capsys: Any) -> None:
    f = str(EX / "textbook/pipeline_async.pipe")
    rc = main(["check", f, "--max-states", "5", "--timeout", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 3 and out["status"] == "UNKNOWN" and out["engine"] == "auto"


def test_cli_default_is_auto(capsys: Any) -> None:
    # --jobs 1: the stages run in order, so which one answers cannot depend on the
    # machine's load (racing, the explicit engine may win the head start on a slow one)
    rc = main(["check", str(EX / "bugs/x2-bug.pipe"), "--json", "--jobs", "1"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["engine"] == "auto" and out["property"] == "read-before-full"
    assert out["stats"]["engine"] == "bmc"
    assert out["stats"]["counterexample_from"] == "certificate"


SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=25, **SETTINGS)
@given(G.mutants(include_config_errors=False))
def test_auto_agrees_with_the_explicit_engine(prog: G.Program) -> None:
    """Whichever stage decides, the verdict, property and counterexample length are the
    explicit engine's (its unreduced search; ties between properties of one length are
    broken by the catalogue in both)."""
    try:
        system = G.build_system(prog.source)
    except ConfigError:
        return
    e = check_explicit(system, max_states=200_000, timeout=NO_DEADLINE, reduce=False)
    if e.status == "UNKNOWN":
        return
    a = check_auto(G.build_system(prog.source), depth=60, timeout=NO_DEADLINE,
                   confirm_timeout=NO_DEADLINE)
    msg = f"{prog.describe()}\n explicit {e.headline()}\n auto {a.headline()} {a.reason}"
    assert a.status == e.status, msg
    assert a.prop == e.prop, msg
    if e.status == "VIOLATED" and e.prop != "starvation":
        assert len(a.trace) == len(e.trace), msg


def test_a_long_lasso_search_leaves_time_to_the_explicit_engine(monkeypatch: Any) -> None:
    """A certified graph with a starving cycle that cannot be turned into a lasso
    directly (as when the terms do not compile): BMC's lasso search gets a quarter of
    the time; past that the explicit engine decides (here the lasso search is made
    endless)."""
    import time

    from pipeproof.api import compile_file
    from pipeproof.checker import liveness
    from pipeproof.checker.certificate import Certificate
    from pipeproof.model.system import System

    monkeypatch.setattr(Certificate, "starving_lasso", lambda self, enc: None)

    def endless(system: Any, lu: Any, runner: Any, depth: int, check: Any, done: Any) -> Any:
        while True:
            check()  # raises once past the deadline
            time.sleep(0.05)

    monkeypatch.setattr(liveness, "find_lasso", endless)
    f = EX / "liveness/persistent_consumer_stops_releasing.pipe"
    v = check_auto(System(compile_file(f)), depth=60, timeout=40, jobs=1)
    assert v.status == "VIOLATED" and v.prop == "starvation" and v.stats.engine == "explicit"
    (stage,) = v.stats.extra["auto"]
    assert stage["stage"] == "bmc certificate" and "no starvation lasso" in stage["reason"]
    # (one after the other, the explicit engine's verdict within the 40 s shows that the
    # lasso search stopped at its share; no wall-clock assertion: a loaded machine)
    # racing, the explicit engine's lasso is taken once the certificate's head start is over
    v = check_auto(System(compile_file(f)), depth=60, timeout=40, jobs=2)
    assert v.status == "VIOLATED" and v.prop == "starvation" and v.stats.engine == "explicit"
    (stage,) = v.stats.extra["auto"]
    assert stage["reason"] == "stopped when the explicit engine decided first", stage


def test_internal_error_is_unknown_not_a_traceback(monkeypatch: Any, capsys: Any) -> None:
    """A counterexample the concrete model does not confirm is an internal error: exit
    3 with a message, never a verdict and never a traceback."""
    from pipeproof.checker import evalgraph

    monkeypatch.setattr(evalgraph.CompiledSteps, "first_check",
                        lambda self, c, row: "overwrite-before-release")
    # --jobs 1: racing, on a loaded machine the explicit engine may decide before the
    # certificate reaches the bad step (after its 2 s head start), and this test is
    # about the certificate's error
    rc = main(["check", str(EX / "bugs/x2-bug.pipe"), "-q", "--jobs", "1"])
    cap = capsys.readouterr()
    assert rc == 3 and cap.out.startswith("UNKNOWN internal error, no verdict:")
    assert "a bug in pipeproof" in cap.err and "Traceback" not in cap.err


# ------------------------------------------------------------------ racing (--jobs 2)


def test_racing_gives_the_sequential_answer() -> None:
    """jobs=2 starts the explicit engine at once; where the certificate does not decide
    its answer is the one the sequential order gives."""
    from pipeproof.api import compile_file
    from pipeproof.model.system import System

    f = EX / "textbook/pipeline_tma_async_multicast.pipe"
    got = {}
    for jobs in (1, 2):
        v = check_auto(System(compile_file(f)), depth=60, timeout=NO_DEADLINE, jobs=jobs)
        got[jobs] = v
        assert v.stats.extra["auto_jobs"] == jobs
    one, two = got[1], got[2]
    assert (one.status, one.depth, one.stats.states) == (two.status, two.depth,
                                                         two.stats.states)
    assert one.stats.engine == two.stats.engine == "explicit"
    assert [s["stage"] for s in one.stats.extra["auto"]] == \
        [s["stage"] for s in two.stats.extra["auto"]] == ["bmc certificate"]


def test_racing_explicit_engine_starts_before_the_certificate_gives_up(
        monkeypatch: Any) -> None:
    import time

    from pipeproof.checker import explicit
    from pipeproof.checker.verdict import Verdict

    # a 6 s certificate stage: the racing explicit engine must start well before it ends
    # (margins wide enough for a loaded machine's process start-up)
    undecided_certificate(monkeypatch, 6.0)
    real = explicit.check_explicit

    def stamped(system: Any, **kw: Any) -> Verdict:
        t = time.time()
        v = real(system, **kw)
        v.stats.extra["started_at"] = t
        return v

    monkeypatch.setattr(explicit, "check_explicit", stamped)
    t0 = time.time()
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=60, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    assert v.stats.extra["started_at"] < t0 + 5.0  # not after the 6 s certificate stage
    t1 = time.time()
    v1 = check_auto(G.build_system(_SMALL), depth=60, timeout=60, jobs=1)
    # one after the other: the explicit engine starts once the 6 s certificate stage ended
    assert v1.status == "PROVEN" and v1.stats.extra["started_at"] >= t1 + 6.0


_SMALL = (EX / "textbook/pipeline_async.pipe").read_text()


def test_racing_explicit_process_that_dies_is_unknown_not_a_hang(monkeypatch: Any) -> None:
    """The explicit engine's process ends without an answer (killed for memory, say):
    that stage is UNKNOWN and says so, and the unrolling still gets its turn."""
    import os

    from pipeproof.checker import explicit

    from pipeproof.checker import portfolio

    undecided_certificate(monkeypatch, 0.0)
    monkeypatch.setattr(explicit, "check_explicit", lambda system, **kw: os._exit(7))
    # no native stage beside it (it would decide: tests/test_portfolio_native.py)
    monkeypatch.setattr(portfolio, "native_unavailable", lambda: "off (test)")
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "bmc"
    stages = v.stats.extra["auto"]
    assert [s["stage"] for s in stages] == ["bmc certificate", "native", "explicit"]
    assert "ended without an answer (exit code 7" in stages[2]["reason"]


def test_racing_explicit_errors_reach_the_caller(monkeypatch: Any) -> None:
    import pytest

    from pipeproof.checker import explicit

    def bad(system: Any, **kw: Any) -> Any:
        raise ConfigError("a configuration error raised by the explicit engine")

    undecided_certificate(monkeypatch, 0.0)
    monkeypatch.setattr(explicit, "check_explicit", bad)
    with pytest.raises(ConfigError, match="raised by the explicit engine"):
        check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=2)


def test_cli_jobs_must_be_positive(capsys: Any) -> None:
    rc = main(["check", str(EX / "textbook/pipeline_async.pipe"), "--jobs", "0"])
    assert rc == 2 and "--jobs must be at least 1" in capsys.readouterr().err


def test_racing_certificate_keeps_its_head_start(monkeypatch: Any) -> None:
    """An explicit verdict that comes within the certificate's head start waits for it:
    where the certificate decides within it, the answer is the sequential order's.  (The
    head start is made long, so a loaded machine's slow certificate still decides
    within it: the test looks at the rule, not at the machine's speed.)"""
    from pipeproof.checker import portfolio

    monkeypatch.setattr(portfolio, "HEAD_START", 300.0)
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=2)
    assert v.status == "PROVEN" and v.stats.engine == "bmc" and v.stats.extra["auto"] == []
    assert v.stats.extra["auto_seconds"] < portfolio.HEAD_START


def test_racing_explicit_verdict_wins_after_the_head_start(monkeypatch: Any) -> None:
    """A certificate stage still busy after the head start is stopped as soon as the
    explicit engine has decided; the stage says so."""
    import time

    from pipeproof.checker.portfolio import HEAD_START

    undecided_certificate(monkeypatch, 60.0)
    t0 = time.perf_counter()
    v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE, jobs=2)
    took = time.perf_counter() - t0
    assert v.status == "PROVEN" and v.stats.engine == "explicit"
    (stage,) = v.stats.extra["auto"]
    assert stage["stage"] == "bmc certificate" and stage["status"] == "UNKNOWN"
    assert stage["reason"] == "stopped when the explicit engine decided first"
    # it waited out the head start but not the certificate's 60 s
    assert HEAD_START <= took < 60


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def test_racing_processes_end_with_a_killed_check() -> None:
    """kill -9 of a racing ``pipeproof check`` leaves no search running (the children
    ask the kernel for SIGKILL when their parent dies)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pytest

    from pipeproof.checker.portfolio import default_jobs

    if not Path("/proc/self/stat").exists() or default_jobs() < 2:
        pytest.skip("needs Linux /proc and two usable CPUs")
    f = str(EX / "kernels/k3_blackwell_persistent_gemm_clc.pipe")
    p = subprocess.Popen([sys.executable, "-c",
                          "import sys; from pipeproof.cli import main; sys.exit(main())",
                          "check", f, "-q", "--timeout", "120"], stdout=subprocess.DEVNULL)
    try:
        kids: list[int] = []
        t_end = time.time() + 30
        while len(kids) < 2 and time.time() < t_end:
            time.sleep(0.2)
            kids = _children(p.pid)
        assert len(kids) >= 2, "the two racing stages did not start"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    t_end = time.time() + 10
    while any(_running(k) for k in kids) and time.time() < t_end:
        time.sleep(0.2)
    alive = [k for k in kids if _running(k)]
    assert not alive, f"racing processes {alive} outlived their parent"


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_no_racing_by_default_beside_other_threads() -> None:
    import threading

    from pipeproof.checker.portfolio import default_jobs

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert default_jobs() == 1
        v = check_auto(G.build_system(_SMALL), depth=60, timeout=NO_DEADLINE)
        assert v.status == "PROVEN" and v.stats.extra["auto_jobs"] == 1
    finally:
        stop.set()
        t.join()
