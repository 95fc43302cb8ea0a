"""Bad input gives a clear ``file:line:col: error: ...`` message and exit code 2; the
other verdicts give 0, 1 and 3 (ARCHITECTURE.md).  Runs ``pipeproof.cli.main`` in
process, and the installed ``pipeproof`` command once."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeproof.cli import main

import generators as G

ASYNC = textwrap.dedent("""
    @cute.kernel
    def k(stages: int = 2, k_tiles: int = 2, consumer_warp: int = 1):
        launch(block=64, cluster=(1, 1, 1))
        pipe = PipelineAsync.create(
            num_stages=stages,
            producer_group=CooperativeGroup(Agent.Thread, 32),
            consumer_group=CooperativeGroup(Agent.Thread, 32),
        )
        with role("producer", warps=[0]):
            state = make_pipeline_state(PipelineUserType.Producer, stages)
            for k in range(k_tiles):
                pipe.producer_acquire(state)
                write(pipe, state)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)
        with role("consumer", warps=[consumer_warp]):
            state = make_pipeline_state(PipelineUserType.Consumer, stages)
            for k in range(k_tiles):
                pipe.consumer_wait(state)
                read(pipe, state)
                pipe.consumer_release(state)
                state.advance()
""").lstrip("\n")

LOC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)


def run(tmp_path: Path, text: str, *args: str, name: str = "k.pipe",
        capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    f = tmp_path / name
    f.write_text(text)
    rc = main(["check", str(f), "--quiet", *args])
    out, errs = capsys.readouterr()
    return rc, out, errs


def located(errs: str, path: Path) -> tuple[int, int, str]:
    m = LOC.search(errs)
    assert m, errs
    assert m.group("file") == str(path)
    return int(m.group("line")), int(m.group("col")), m.group("msg")


def line_of(text: str, needle: str) -> int:
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln:
            return i
    raise AssertionError(needle)


# --------------------------------------------------------------------------- verdict codes


def test_safe_is_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run(tmp_path, ASYNC, capsys=capsys)
    assert rc == 0 and ("PROVEN" in out or "SAFE" in out)


def test_violated_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bug = ASYNC.replace("            pipe.consumer_release(state)\n", "")
    rc, out, _ = run(tmp_path, bug, capsys=capsys)
    assert rc == 1 and "VIOLATED deadlock" in out


def test_unknown_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run(tmp_path, ASYNC, "--max-states", "5", "--engine", "explicit",
                      capsys=capsys)
    assert rc == 3 and "UNKNOWN" in out


def test_unsupported_construct_is_exit_3(tmp_path: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    text = ASYNC.replace("        for k in range(k_tiles):\n            pipe.consumer_wait",
                         "        tok = pipe.consumer_try_wait(state)\n"
                         "        for k in range(tok):\n            pipe.consumer_wait")
    assert text != ASYNC
    rc, out, _ = run(tmp_path, text, capsys=capsys)
    assert rc == 3 and "UNKNOWN" in out and "unsupported" in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run(tmp_path, ASYNC, "--json", "-p", "k_tiles=3", capsys=capsys)
    d = json.loads(out)
    assert rc == 0 and d["status"] in ("PROVEN", "SAFE") and d["params"]["k_tiles"] == 3


# --------------------------------------------------------------------------- input errors


def test_zero_stages(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC, "--param", "stages=0", capsys=capsys)
    assert rc == 2
    line, col, msg = located(errs, tmp_path / "k.pipe")
    assert line == line_of(ASYNC, "PipelineAsync.create")
    assert "num_stages=0" in msg and "at least one stage" in msg
    assert "Traceback" not in errs


def test_zero_depth_pipeline_order(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = G.Config("PipelineOrder", stages=1, k_tiles=1)
    rc, _, errs = run(tmp_path, G.render(cfg, "zero_stages"), capsys=capsys)
    assert rc == 2 and "depth=0" in errs


def test_tx_count_beyond_the_mbarrier_range(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    cfg = G.Config("PipelineTmaAsync", stages=1, k_tiles=1)
    text = G.render(cfg, "tx_too_large")
    rc, _, errs = run(tmp_path, text, capsys=capsys)
    assert rc == 2
    line, _, msg = located(errs, tmp_path / "k.pipe")
    assert line == line_of(text, "PipelineTmaAsync.create")
    assert "tx_count=1048576" in msg and "2^20-1" in msg


def test_tx_count_at_the_limit_is_accepted(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    cfg = G.Config("PipelineTmaAsync", stages=1, k_tiles=1)
    text = G.render(cfg).replace("tx_count=4096", f"tx_count={(1 << 20) - 1}")
    rc, out, _ = run(tmp_path, text, capsys=capsys)
    assert rc == 1 and "deadlock" in out      # accepted, but the bytes never match


def test_mask_outside_the_cluster(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = G.Config("PipelineTmaAsync", stages=1, k_tiles=1, cluster=(2, 1))
    text = G.render(cfg, "mask_outside_cluster")
    rc, _, errs = run(tmp_path, text, capsys=capsys)
    assert rc == 2
    line, col, msg = located(errs, tmp_path / "k.pipe")
    assert line == line_of(text, "a_mask | 4")
    assert "outside the cluster" in msg and "mask-outside-cluster" in msg and "rank(s) 2" in msg


def test_role_on_a_warp_that_does_not_exist(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC, "-p", "consumer_warp=2", capsys=capsys)
    assert rc == 2
    line, _, msg = located(errs, tmp_path / "k.pipe")
    assert line == line_of(ASYNC, 'role("consumer"')
    assert "names warp 2" in msg and "2 warps" in msg


def test_role_on_a_cta_outside_the_cluster(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    text = ASYNC.replace('warps=[0])', 'warps=[0], ctas=[1])')
    rc, _, errs = run(tmp_path, text, capsys=capsys)
    assert rc == 2 and "names CTA 1" in errs


def test_unknown_parameter(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC, "--param", "stagse=3", capsys=capsys)
    assert rc == 2
    assert "no parameter 'stagse'" in errs and "stages, k_tiles, consumer_warp" in errs


def test_malformed_param(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC, "--param", "stages", capsys=capsys)
    assert rc == 2 and "NAME=VALUE" in errs
    rc, _, errs = run(tmp_path, ASYNC, "--param", "stages=two", capsys=capsys)
    assert rc == 2 and "not an integer" in errs


def test_empty_param_range(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC, "--param", "stages=4..2", capsys=capsys)
    assert rc == 2 and "the range is empty" in errs and "stages=2..4" in errs
    # the API says so too, where a range object comes from a script
    from pipeproof.api import check_source
    from pipeproof.model.errors import ConfigError

    with pytest.raises(ConfigError, match="stages: the range 4..3 is empty"):
        check_source(ASYNC, {"stages": range(4, 4)})


@pytest.mark.parametrize("args, words", [
    (("--depth", "-1"), "--depth must be at least 0, not -1"),
    (("--timeout", "0"), "--timeout must be a positive number of seconds, not 0"),
    (("--timeout", "-5"), "--timeout must be a positive number of seconds, not -5"),
    (("--max-states", "0"), "--max-states must be at least 1, not 0"),
    (("--confirm-timeout", "-1"), "--confirm-timeout must be at least 0, not -1"),
    (("--width", "0"), "--width must be at least 1, not 0"),
])
def test_limits_no_search_can_run_under(tmp_path: Path, capsys: pytest.CaptureFixture,
                                        args: tuple, words: str) -> None:
    rc, out, errs = run(tmp_path, ASYNC, *args, capsys=capsys)
    assert rc == 2 and words in errs and out == "", (args, errs)


@pytest.mark.parametrize("flag", ["--smt2", "--perfetto", "--html"])
def test_unwritable_output_is_refused_before_the_search(
        tmp_path: Path, capsys: pytest.CaptureFixture, flag: str) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "out.txt"
    rc, out, errs = run(tmp_path, ASYNC, "--engine", "bmc", flag, str(missing),
                        capsys=capsys)
    assert rc == 2 and f"{flag} {missing}: no directory" in errs and out == ""
    rc, out, errs = run(tmp_path, ASYNC, flag, str(tmp_path), capsys=capsys)
    assert rc == 2 and "is a directory" in errs and out == ""


def test_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = ASYNC.replace("state.advance()", "state.advance(", 1)
    rc, _, errs = run(tmp_path, text, capsys=capsys)
    assert rc == 2
    line, col, msg = located(errs, tmp_path / "k.pipe")
    # the open parenthesis joins the following lines; the error is where it cannot go on
    assert line_of(ASYNC, "state.advance()") <= line <= line_of(ASYNC, "state.advance()") + 2
    assert "expected" in msg


def test_unknown_name(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = ASYNC.replace("write(pipe, state)", "wirte(pipe, state)")
    rc, _, errs = run(tmp_path, text, capsys=capsys)
    assert rc == 2
    line, col, msg = located(errs, tmp_path / "k.pipe")
    assert line == line_of(text, "wirte(")
    assert "'wirte' is not defined" in msg


def test_unknown_method_and_keyword(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, errs = run(tmp_path, ASYNC.replace("pipe.producer_commit(state)",
                                              "pipe.producer_comit(state)"), capsys=capsys)
    assert rc == 2 and "producer_comit" in errs and "PipelineAsync" in errs
    rc, _, errs = run(tmp_path, ASYNC.replace("num_stages=stages,",
                                              "num_stages=stages, tx_cnt=3,"), capsys=capsys)
    assert rc == 2 and "unexpected keyword argument(s) tx_cnt" in errs


def test_launch_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for bad, words in (("block=48", "multiple of 32"),
                       ("block=64, cluster=(4, 4, 2)", "exceeds the hardware limit"),
                       ("block=64, threads=3", "no argument 'threads'")):
        text = ASYNC.replace("block=64, cluster=(1, 1, 1)", bad)
        rc, _, errs = run(tmp_path, text, capsys=capsys)
        assert rc == 2 and words in errs, (bad, errs)
    rc, _, errs = run(tmp_path, ASYNC.replace("    launch(block=64, cluster=(1, 1, 1))\n", ""),
                      capsys=capsys)
    assert rc == 2 and "launch(block=" in errs


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", str(tmp_path / "nope.pipe")])
    _, errs = capsys.readouterr()
    assert rc == 2 and "cannot read" in errs


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture) -> None:
    assert main([]) == 2
    assert main(["check"]) == 2
    assert main(["frobnicate"]) == 2
    capsys.readouterr()


def test_group_that_does_not_fit_the_cluster(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    text = ASYNC.replace("consumer_group=CooperativeGroup(Agent.Thread, 32)",
                         "consumer_group=CooperativeGroup(Agent.Thread, 4096)").replace(
        "            pipe.producer_tail(state)\n", "")
    rc, _, errs = run(tmp_path, text, "-p", "k_tiles=1", capsys=capsys)
    assert rc == 2, rc


@pytest.mark.skipif(shutil.which("pipeproof") is None, reason="console script not installed")
def test_console_command(tmp_path: Path) -> None:
    f = tmp_path / "k.pipe"
    f.write_text(ASYNC)
    ok = subprocess.run(["pipeproof", "check", str(f), "-q"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(["pipeproof", "check", str(f), "-q", "-p", "stages=0"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and f"{f}:" in bad.stderr and "Traceback" not in bad.stderr
    mod = subprocess.run([sys.executable, "-m", "pipeproof.cli", "check", str(f), "-q",
                          "-p", "consumer_warp=5"], capture_output=True, text=True)
    assert mod.returncode == 2 and "names warp 5" in mod.stderr


def test_output_into_a_closed_pipe_is_no_traceback(monkeypatch) -> None:
    """``pipeproof check F | head -1``: the reader goes away; exit 0, no traceback
    (BrokenPipeError is an OSError without a file name, caught before those)."""

    class Closed:
        def write(self, _: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    ex = Path(__file__).resolve().parent.parent / "examples/textbook/pipeline_async.pipe"
    assert main(["check", str(ex)]) == 0
