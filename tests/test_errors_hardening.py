"""Issue 23: every traceback, hang, trusting recheck and silently accepted piece of
nonsense found by trying pipeproof as a new user would (and by mutating the examples)
is an error with a location and exit code 2 -- never a Python traceback, a hang, a
proof of a tampered file, or a verdict on a kernel that says something else than it
means.  One test per case; ``pipeproof.cli.main`` runs in process.  No test depends on
wall-clock time for its verdict: the checks that run a search bound it by states."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
import pytest

from pipeproof.cli import main
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"
ASYNC = (EX / "textbook/pipeline_async.pipe").read_text()
TMA_UMMA = (EX / "textbook/pipeline_tma_umma.pipe").read_text()
#: a bounded search: the verdict never depends on the machine's speed
BOUNDED = ("--engine", "explicit", "--max-states", "5000", "--jobs", "1", "-q")
LOC = re.compile(r"^\S+:\d+:\d+: error: ", re.M)


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def _edit(old: str, new: str, src: str = ASYNC) -> str:
    assert old in src, old
    return src.replace(old, new, 1)


def _check_text(tmp_path: Path, capsys: pytest.CaptureFixture, text: str,
                *extra: str, name: str = "k.pipe") -> tuple[int, str, str]:
    f = tmp_path / name
    f.write_text(text)
    return _run(capsys, "check", str(f), *BOUNDED, *extra)


def _error(tmp_path: Path, capsys: pytest.CaptureFixture, text: str, words: str,
           *extra: str, located: bool = True) -> str:
    rc, out, err = _check_text(tmp_path, capsys, text, *extra)
    assert rc == 2, (out, err)
    assert words in err, err
    if located:
        assert LOC.search(err), err
    assert "Builtin(" not in err and " at 0x" not in err and "<function" not in err
    return err


# --------------------------------------------------------------------------- tracebacks


def test_inconsistent_dedent(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _edit("            pipe.producer_commit(state)\n",
                 "            pipe.producer_commit(state)\n          state.advance()\n")
    err = _error(tmp_path, capsys, text, "inconsistent indentation")
    assert ":22:11: error:" in err


def test_a_file_that_is_not_utf8_check_and_emit(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    f = tmp_path / "latin1.pipe"
    f.write_bytes(ASYNC.encode() + b"# caf\xe9\n")
    for cmd in ("check", "emit"):
        rc, out, err = _run(capsys, cmd, str(f))
        assert rc == 2 and "not UTF-8" in err and LOC.search(err), err
        assert out == ""


@pytest.mark.parametrize("cls, call", [
    ("NamedBarrier", "NamedBarrier.create(barrier_id=1, num_threads=64)"),
    ("TmaStoreFence", "TmaStoreFence.create()"),
])
def test_create_on_a_directly_constructed_class(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                cls: str, call: str) -> None:
    text = _edit('    with role("producer"', f'    x = {call}\n    with role("producer"')
    _error(tmp_path, capsys, text, f"{cls} has no create(); construct it directly")


@pytest.mark.parametrize("call, words", [
    ("pipe.producer_acquire()", "missing a required argument: 'state'"),
    ("pipe.producer_acquire(state, state, state)", "too many arguments"),
    ("pipe.producer_acquire(state, bogus=1)", "unexpected keyword argument 'bogus'"),
])
def test_a_pipeline_method_with_wrong_arguments(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                call: str, words: str) -> None:
    text = _edit("pipe.producer_acquire(state)", call)
    err = _error(tmp_path, capsys, text, words)
    assert "PipelineAsync.producer_acquire(state, try_acquire_token=None)" in err


@pytest.mark.parametrize("token, shown", [('"x"', "'x'"), ("state", "a PipelineState"),
                                          ("pipe", "the pipeline pipe")])
def test_a_non_token_passed_to_consumer_wait(tmp_path: Path, capsys: pytest.CaptureFixture,
                                             token: str, shown: str) -> None:
    text = _edit("pipe.consumer_wait(state)", f"pipe.consumer_wait(state, {token})")
    err = _error(tmp_path, capsys, text, "the token must be")
    assert f"got {shown}" in err


@pytest.mark.parametrize("shape", ['(2, "a")', "(2, None)", "(2, (1, True))"])
def test_a_non_int_inside_cluster_shape_mn(tmp_path: Path, capsys: pytest.CaptureFixture,
                                           shape: str) -> None:
    text = _edit("pipeline_init_arrive(cluster_shape_mn=(2, 1))",
                 f"pipeline_init_arrive(cluster_shape_mn={shape})", TMA_UMMA)
    _error(tmp_path, capsys, text, "cluster_shape_mn")


def _before_launch(stmt: str) -> str:
    return _edit("    launch(", stmt + "    launch(")


def test_a_sum_of_1000_terms(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _before_launch("    x = " + " + ".join(["1"] * 1000) + "\n")
    _error(tmp_path, capsys, text, "expression nested more than 200 deep")


def test_1000_nested_brackets(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for inner in ("(" * 1000 + "1" + ")" * 1000, "min(" * 1000 + "1" + ", 1)" * 1000,
                  "(" * 1000 + "1," + ")," * 999 + ")"):
        _error(tmp_path, capsys, _before_launch(f"    x = {inner}\n"),
               "brackets nested more than 200 deep")


def test_300_nested_blocks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocks = "".join("    " * (i + 1) + "if True:\n" for i in range(300)) + "    " * 301 + "pass\n"
    _error(tmp_path, capsys, _before_launch(blocks), "blocks nested more than 100 deep")


def test_nesting_just_inside_the_limits_compiles() -> None:
    """The limits are not a crash further in: at them, parse and compile succeed."""
    from pipeproof.api import compile_kernel
    from pipeproof.model.lang.parser import parse

    blocks = "".join("    " * (i + 1) + "if True:\n" for i in range(99)) + "    " * 100 + "pass\n"
    for stmt in ("    x = " + "+".join(["1"] * 200) + "\n",
                 "    x = " + "min(" * 199 + "1" + ", 1)" * 199 + "\n", blocks):
        compile_kernel(parse(_before_launch(stmt), "k.pipe"))


def test_recheck_timeout_inf(tmp_path: Path, capsys: pytest.CaptureFixture,
                             proof: Path) -> None:
    for t in ("inf", "nan", "-1"):
        rc, out, err = _run(capsys, "recheck", str(proof), "--timeout", t)
        assert rc == 2 and "--timeout must be a finite positive number" in err, err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_as_input(capsys: pytest.CaptureFixture) -> None:
    for cmd in ("check", "emit"):
        rc, out, err = _run(capsys, cmd, "/dev/zero")
        assert rc == 2 and "is not a regular file" in err, err
    rc, out, err = _run(capsys, "recheck", "/dev/zero")  # reading it would never end
    assert rc == 2 and "not a pipeproof proof file: not a regular file" in err, err


def test_an_oversized_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from pipeproof.model.lang.parser import MAX_FILE_BYTES

    f = tmp_path / "big.pipe"
    with open(f, "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    rc, out, err = _run(capsys, "check", str(f))
    assert rc == 2 and "source files are limited to" in err, err


# --------------------------------------------------------------------------- hangs


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Opening a FIFO blocks until a writer comes: nothing may open it."""
    fifo = tmp_path / "in.pipe"
    os.mkfifo(fifo)
    for argv in (("check", str(fifo)), ("emit", str(fifo)), ("recheck", str(fifo))):
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and "not a regular file" in err, (argv, err)


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, err = _run(capsys, "check", str(tmp_path))
    assert rc == 2 and "is a directory" in err


@pytest.mark.parametrize("stages", ["1025", str(2**20), str(2**40)])
def test_num_stages_above_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture,
                                    stages: str) -> None:
    err = _error(tmp_path, capsys, ASYNC, "pipeproof checks at most 1024 stages",
                 "--param", f"stages={stages}")
    assert "within 1 iterations" not in err


def test_num_stages_at_the_bound_compiles() -> None:
    from pipeproof.api import compile_file

    compile_file(EX / "textbook/pipeline_async.pipe", {"stages": 1024})


@pytest.mark.parametrize("expr, words", [
    ("10 ** 10 ** 10", "does not fit in 64 bits"),
    ("2 ** 64", "values must fit in 64 bits"),
    ("1 << 100", "does not fit in 64 bits"),
    ("2 ** -1", "a negative exponent"),
    ("1 << -1", "negative shift count"),
    ('"a" * 10 ** 9', "cannot apply *"),
    ("(1,) * 10 ** 9", "cannot apply *"),
    ("range(10 ** 12)", "elements; at most 4096"),
    ("9" * 200, "integer literal of 200 characters"),
    ("-launch", "cannot apply unary - to the builtin launch"),
])
def test_integers_and_sequences_are_bounded(tmp_path: Path, capsys: pytest.CaptureFixture,
                                            expr: str, words: str) -> None:
    _error(tmp_path, capsys, _before_launch(f"    x = {expr}\n"), words)


def test_2_to_the_63_is_fine() -> None:
    from pipeproof.api import compile_kernel
    from pipeproof.model.lang.parser import parse

    compile_kernel(parse(_before_launch("    x = 2 ** 63 + (2 ** 63 - 1)\n"), "k.pipe"))


@pytest.mark.parametrize("k_tiles", [str(10**9), "4097"])
def test_trip_counts_above_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture,
                                     k_tiles: str) -> None:
    _error(tmp_path, capsys, ASYNC, "checks at most 4,096 iterations of one loop",
           "--param", f"k_tiles={k_tiles}")


def test_a_huge_param_value(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _error(tmp_path, capsys, ASYNC, "does not fit in 64 bits", "--param",
           f"k_tiles={10**30}", located=False)


# --------------------------------------------------------------------------- recheck


@pytest.fixture
def proof(tmp_path: Path, capsys: pytest.CaptureFixture) -> Path:
    out = tmp_path / "cert.smt2"
    rc, _, err = _run(capsys, "check", str(EX / "textbook/pipeline_async.pipe"),
                      "--engine", "bmc", "--smt2", str(out), "-q")
    assert rc == 0 and out.exists(), err
    return out


def _recheck(capsys: pytest.CaptureFixture, path: Path) -> tuple[int, str]:
    rc, out, err = _run(capsys, "recheck", str(path))
    return rc, out + err


def test_recheck_of_an_untouched_file_agrees(capsys: pytest.CaptureFixture,
                                             proof: Path) -> None:
    assert _recheck(capsys, proof)[0] == 0
    assert "; pipeproof-body: sha256=" in proof.read_text()


def test_recheck_refuses_an_appended_assert_false(capsys: pytest.CaptureFixture,
                                                  proof: Path) -> None:
    """(assert false) makes any query unsat: it used to 'agree' with a proof."""
    proof.write_text(proof.read_text() + "(assert false)\n")
    rc, text = _recheck(capsys, proof)
    assert rc == 2 and "modified after export" in text, text


def test_recheck_refuses_a_file_cut_down_to_its_stamp(capsys: pytest.CaptureFixture,
                                                      proof: Path) -> None:
    head = [ln for ln in proof.read_text().splitlines(keepends=True)
            if ln.startswith("; pipeproof-")]
    proof.write_text("".join(head))
    rc, text = _recheck(capsys, proof)
    assert rc == 2 and "modified after export" in text, text
    text_all = proof.read_text()
    proof.write_text(text_all[: len(text_all) // 2])
    rc, text = _recheck(capsys, proof)
    assert rc == 2 and ("not a pipeproof proof file" in text
                        or "modified after export" in text), text


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("expect: unsat", "expect: bogus"),
    lambda t: t.replace("expect: unsat", "expect: "),
    lambda t: "".join(ln for ln in t.splitlines(keepends=True)
                      if not ln.startswith("; pipeproof-body:")),
    lambda t: "".join(ln for ln in t.splitlines(keepends=True)
                      if not ln.startswith("; pipeproof-expect:")),
])
def test_recheck_refuses_a_bogus_stamp(capsys: pytest.CaptureFixture, proof: Path,
                                       edit) -> None:
    proof.write_text(edit(proof.read_text()))
    rc, text = _recheck(capsys, proof)
    assert rc == 2 and "not a pipeproof proof file" in text, text


def test_recheck_of_a_file_that_is_not_utf8(capsys: pytest.CaptureFixture,
                                            proof: Path) -> None:
    proof.write_bytes(proof.read_bytes() + b"; caf\xe9\n")
    rc, text = _recheck(capsys, proof)
    assert rc == 2 and "not a pipeproof proof file: not UTF-8" in text, text


def test_recheck_refuses_a_file_without_a_stamp(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    f = tmp_path / "plain.smt2"
    f.write_text("(assert false)\n(check-sat)\n")
    rc, text = _recheck(capsys, f)
    assert rc == 2 and "not a pipeproof proof file" in text


# --------------------------------------------------------------------------- nonsense


def test_launch_inside_a_role(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _edit("        pipe.producer_tail(state)\n",
                 "        pipe.producer_tail(state)\n        launch(block=64, cluster=(1, 1, 1))\n")
    _error(tmp_path, capsys, text, "launch(...) must be a statement at the top level")


def test_a_second_top_level_launch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _edit("    pipe = Pipe", "    launch(block=128, cluster=(1, 1, 1), bogus=1)\n"
                                    "    pipe = Pipe")
    err = _error(tmp_path, capsys, text, "launch(...) is called a second time")
    assert "first at line 8" in err


def test_launch_with_an_unknown_argument(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _edit("cluster=(1, 1, 1))", "cluster=(1, 1, 1), bogus=1)")
    _error(tmp_path, capsys, text, "launch() has no argument 'bogus'")


def test_launch_inside_an_expression(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _error(tmp_path, capsys, _before_launch("    x = [launch(block=64)]\n"),
           "launch(...) must be a statement at the top level")


@pytest.mark.parametrize("warps", ["range(-1)", "[]", "range(0)", "()"])
def test_a_role_with_no_warps(tmp_path: Path, capsys: pytest.CaptureFixture,
                              warps: str) -> None:
    _error(tmp_path, capsys, _edit("warps=[1]", f"warps={warps}"),
           "role 'consumer' names no warps")


def test_a_role_with_a_bool_warp(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _error(tmp_path, capsys, _edit("warps=[1]", "warps=[True]"),
           "role 'consumer' names warp True")


def test_a_repeated_param(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _error(tmp_path, capsys, ASYNC, "--param k_tiles is given twice", "--param", "k_tiles=2",
           "--param", "k_tiles=3", located=False)


def test_a_bool_where_a_trip_count_is_expected(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    _error(tmp_path, capsys, ASYNC, "range() stop must be an int, not True", "--param",
           "k_tiles=True")


@pytest.mark.parametrize("stmt", [
    "    x = launch + 1\n", "    x = launch[0]\n", "    x = launch.foo\n",
    "    x = PipelineAsync < 1\n", "    x = -PipelineAsync\n",
    "    x = make_layout((PipelineAsync, 1))\n",
])
def test_messages_show_no_python_reprs(tmp_path: Path, capsys: pytest.CaptureFixture,
                                       stmt: str) -> None:
    err = _error(tmp_path, capsys, _before_launch(stmt), "")
    assert "Builtin(" not in err and "PipelineClassRef(" not in err
    assert " at 0x" not in err and "<function" not in err and "<class" not in err


def test_no_repr_in_role_and_state_messages(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    text = _edit("make_pipeline_state(PipelineUserType.Consumer, stages)",
                 "make_pipeline_state(PipelineUserType.Consumer, launch)")
    err = _error(tmp_path, capsys, text, "the builtin launch")
    assert "Builtin(" not in err


def test_conform_checks_its_arguments_before_looking_for_a_gpu(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ok = str(EX / "textbook/pipeline_async.pipe")
    f = tmp_path / "bad.pipe"
    f.write_text(_edit("warps=[1]", "warps=[7]"))
    for argv, words in ((("conform", ok, "--runs", "0"), "--runs must be at least 1"),
                        (("conform", ok, "--clusters", "0"), "--clusters must be at least 1"),
                        (("conform", ok, "--timeout-ms", "inf"), "--timeout-ms must be"),
                        (("conform", ok, "--mutant", "nope"), "no such mutant"),
                        (("conform", ok, "--param", "nope=1"), "has no parameter 'nope'"),
                        (("conform", ok, "--param", "k_tiles=1..3"), "for one value"),
                        (("conform", str(f)), "names warp 7")):
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and words in err and "no GPU" not in out + err, (argv, err)


def _json_error(out: str) -> dict:
    obj = json.loads(out)
    assert obj["status"] == "ERROR" and set(obj["error"]) == {"message", "file", "line",
                                                              "column"}
    return obj["error"]


def test_json_on_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = tmp_path / "k.pipe"
    f.write_text(_edit("warps=[1]", "warps=[7]"))
    rc, out, err = _run(capsys, "check", str(f), "--json", *BOUNDED)
    assert rc == 2
    e = _json_error(out)
    assert "names warp 7" in e["message"]
    assert (e["file"], e["line"], e["column"]) == (str(f), 25, 5)


@pytest.mark.parametrize("argv", [
    ("--jobs", "0"), ("--timeout", "0"), ("--param", "nope=1"), ("--width", "0"),
    ("--smt2", "/no/such/dir/q.smt2"), ("--bogus-flag",),
])
def test_json_on_usage_errors(capsys: pytest.CaptureFixture, argv: tuple) -> None:
    rc, out, err = _run(capsys, "check", str(EX / "textbook/pipeline_async.pipe"), "--json",
                        *argv)
    assert rc == 2
    assert _json_error(out)["message"]


def test_json_on_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, err = _run(capsys, "check", str(tmp_path / "none.pipe"), "--json")
    assert rc == 2 and "cannot read" in _json_error(out)["message"]


def test_emit_assemble_without_output_fails_before_emitting(
        capsys: pytest.CaptureFixture) -> None:
    rc, out, err = _run(capsys, "emit", str(EX / "textbook/pipeline_async.pipe"),
                        "--assemble")
    assert rc == 2 and out == "" and "--assemble needs -o FILE" in err


@pytest.mark.parametrize("launch", ["launch(block=64, cluster=(PipelineAsync, 1, 1))",
                                    "launch(block=64, cluster=launch)",
                                    "launch(block=(launch, 2))"])
def test_launch_messages_show_no_python_reprs(tmp_path: Path, capsys: pytest.CaptureFixture,
                                              launch: str) -> None:
    err = _error(tmp_path, capsys, _edit("launch(block=64, cluster=(1, 1, 1))", launch),
                 "launch(")
    assert "PipelineClassRef(" not in err and "<class" not in err


def test_timeout_covers_compiling() -> None:
    """--timeout bounds the unrolling too (issue 23 item 3): a deadline that has passed
    by the compiler's first check (every 1,024 flow-graph steps) ends it with UNKNOWN,
    whatever the machine's speed; a generous one changes nothing."""
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.errors import CompileTimeout, Unsupported
    from pipeproof.model.lang.parser import parse_file

    k = parse_file(str(EX / "textbook" / "pipeline_async.pipe"))
    with pytest.raises(CompileTimeout, match="while compiling") as e:
        compile_kernel(k, {"k_tiles": 2000}, timeout=1e-9)
    assert isinstance(e.value, Unsupported)  # the command line: UNKNOWN, exit 3
    assert compile_kernel(k, {"k_tiles": 20}, timeout=NO_DEADLINE).programs


@pytest.mark.parametrize("arg", ["depth=0x7fffffff", "length=2**20"])
def test_pipeline_order_sizes_are_bounded(tmp_path: Path, capsys: pytest.CaptureFixture,
                                          arg: str) -> None:
    """Found by bench/fuzz_pipe.py: PipelineOrder.create(depth=0x7fffffff) kept the
    explicit engine busy for minutes past --timeout (depth * length barriers)."""
    src = (EX / "textbook/pipeline_order.pipe").read_text()
    key = arg.split("=")[0]
    text = re.sub(rf"\b{key}=\w+,", arg + ",", src, count=1)
    assert text != src
    err = _error(tmp_path, capsys, text, "pipeproof checks at most 1024")
    assert f"{key}=" in err
