"""The CuTe DSL front end (``frontend/cute``) on real kernels compiled by nvidia-cutlass-dsl.

Differential: every kernel of ``tests/cute_kernels/`` and every planted bug in it is
lifted from the MLIR ``cute.compile`` builds and checked; its ``.pipe`` twin is checked
too; the two verdicts (status and property) must agree (``cute_helpers.LIFTED_DIFFERS``
lists the documented exceptions).  Skipped, saying why, where the DSL is not installed.
"""

from __future__ import annotations

import json
import os

import pytest

from cute_helpers import LIFT_UNSUPPORTED, LIFTED_DIFFERS, cases

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.api import check_cute, check_file  # noqa: E402
from pipeproof.checker.verdict import VIOLATED  # noqa: E402
from pipeproof.cli import main  # noqa: E402
from pipeproof.frontend.cute import lift_entry  # noqa: E402
from pipeproof.model.errors import ConfigError, Unsupported  # noqa: E402
from helpers import NO_DEADLINE

#: a bound on the search instead of a time budget (CI machines are slow and shared)
LIMITS = dict(engine="explicit", jobs=1, max_states=400_000, timeout=NO_DEADLINE)
#: kernels whose violations take the explicit engine long with the default sizes
SLOW = {("pipeline_tma_async_multicast", 1), ("pipeline_tma_async_multicast", 2),
        ("pipeline_tma_async_multicast", 3), ("pipeline_tma_async_2x1", 2),
        ("pipeline_tma_async_2x1", 3),
        ("pipeline_umma_async", 1), ("pipeline_umma_async", 2), ("pipeline_umma_async", 3),
        ("pipeline_umma_async", 4), ("pipeline_tma_umma_2cta", 4)}

CASES = cases()


def _verdict(r):
    return ("VIOLATED" if r.status == VIOLATED else "SAFE", r.prop)


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if (c.name, c.bug) in SLOW
                          else []) for c in CASES])
def test_lifted_kernel_agrees_with_its_twin(case):
    if case.name in LIFT_UNSUPPORTED:
        with pytest.raises(Unsupported) as e:
            check_cute(case.entry, {"bug": case.bug}, arch=case.arch, **LIMITS)
        assert LIFT_UNSUPPORTED[case.name] in str(e.value)
        assert case.name + ".py:" in str(e.value)  # names the user's line
        return
    lifted = check_cute(case.entry, {"bug": case.bug}, arch=case.arch, **LIMITS)
    assert lifted.status != "UNKNOWN", lifted.verdict.reason
    expected = LIFTED_DIFFERS.get((case.name, case.bug))
    if expected is not None:
        assert _verdict(lifted) == (expected[0], expected[1]), expected[2]
        return
    twin = check_file(case.twin, **LIMITS)
    assert twin.status != "UNKNOWN", twin.verdict.reason
    assert _verdict(lifted) == _verdict(twin), (
        f"lifted {lifted.verdict.headline()} vs twin {twin.verdict.headline()}")
    if case.bug:
        assert lifted.status == VIOLATED  # a planted bug is found


def test_every_kernel_and_bug_is_collected():
    names = {c.name for c in CASES}
    assert {"pipeline_async", "pipeline_tma_async", "pipeline_tma_async_participants",
            "pipeline_tma_async_multicast", "pipeline_cp_async", "pipeline_clc_fetch_async",
            "pipeline_tma_umma_2cta"} <= names
    assert sum(1 for c in CASES if c.bug) >= 3 * len(names) - 3


# ------------------------------------------------------------------ the lifted programs

def test_names_and_lines_are_the_users():
    """Barrier arrays are named after the user's pipeline variable; instructions carry
    the pipeline method and the user's line."""
    c = next(c for c in CASES if c.name == "pipeline_async" and c.bug == 0)
    lifted = lift_entry(c.entry, {"k_tiles": 2})
    arrays = {f"{d.var}.{a.name}" for d in lifted.compiled.pipelines for a in d.arrays}
    assert arrays == {"pipe.full", "pipe.empty"}
    src = open(c.path).read().splitlines()
    labels = []
    for p in lifted.compiled.programs:
        for ins in p.code:
            if ins.loc.line:
                assert ins.loc.file.endswith("pipeline_async.py")
                labels.append((ins.label.split()[0], src[ins.loc.line - 1]))
    methods = {m for m, _ in labels}
    assert {"producer_acquire", "producer_commit", "consumer_wait", "consumer_release",
            "producer_tail"} <= methods
    for m, line in labels:
        if m in ("producer_acquire", "consumer_wait", "consumer_release"):
            assert m in line  # the line the label names calls that method


def test_pipeline_async_program_shape():
    """The lifted producer does what CUTLASS's PipelineAsync does: wait on the empty
    barrier with parity 1 first, 32 arrivals (one per thread) on full, then the tail
    waits on every stage (cutlass/pipeline/sm90.py)."""
    from pipeproof.model.program import Arrive, Wait

    c = next(c for c in CASES if c.name == "pipeline_async" and c.bug == 0)
    ck = lift_entry(c.entry, {"k_tiles": 3, "stages": 2}).compiled
    prod = ck.program(0, 0)
    sync = [(type(i).__name__, str(getattr(i, "bar", "")), getattr(i, "parity", None))
            for i in prod.code if isinstance(i, (Wait, Arrive))]
    waits = [s for s in sync if s[0] == "Wait"]
    assert waits[0][1:] == ("pipe.empty[0]@cta0", 1)
    assert waits[1][1:] == ("pipe.empty[1]@cta0", 1)
    assert waits[2][1:] == ("pipe.empty[0]@cta0", 0)
    arrives = [i for i in prod.code if isinstance(i, Arrive)]
    assert [a.arrivals[0].count for a in arrives] == [32, 32, 32]
    assert len(waits) == 3 + 2  # k_tiles acquires, then producer_tail's one per stage


def test_ghost_buffers_are_the_stages():
    """The TMA destination's stages are the buffers (the consumer warps' partial reads
    do not cut them), and each load lands whole in its stage's buffer."""
    from pipeproof.model.program import TmaLoad

    c = next(c for c in CASES if c.name == "pipeline_tma_async" and c.bug == 0)
    ck = lift_entry(c.entry).compiled
    bufs = {d.buffer: d.stages for d in ck.pipelines if d.cls == "smem"}
    assert bufs.get("sA") == 2, bufs
    loads = [i for p in ck.programs for i in p.code if isinstance(i, TmaLoad)]
    assert [(d.buf.buffer, d.buf.stage, d.bytes) for i in loads for d in i.deliveries] \
        == [("sA", k % 2, 8192) for k in range(3)]


# ------------------------------------------------------------------ parameters, engines

def test_params_reach_the_entry_and_are_reported():
    c = next(c for c in CASES if c.name == "pipeline_async" and c.bug == 0)
    r = check_cute(c.entry, {"k_tiles": 3, "stages": 3}, **LIMITS)
    assert r.params == {"stages": 3, "k_tiles": 3, "bug": 0}
    assert r.status == "PROVEN"


def test_param_range_is_checked_value_by_value():
    c = next(c for c in CASES if c.name == "pipeline_async")
    r = check_cute(c.entry, {"k_tiles": range(1, 4), "bug": 1}, **LIMITS)
    assert r.status == VIOLATED and r.prop == "deadlock"
    ok = check_cute(c.entry, {"k_tiles": range(1, 3)}, **LIMITS)
    assert ok.status == "PROVEN"
    assert ok.verdict.stats.extra["parameter_values_checked"] == 2


@pytest.mark.parametrize("bug", [0, 1, 3])
def test_bmc_agrees_with_explicit_on_lifted_kernels(bug):
    c = next(c for c in CASES if c.name == "pipeline_async")
    ex = check_cute(c.entry, {"bug": bug, "k_tiles": 2}, **LIMITS)
    bmc = check_cute(c.entry, {"bug": bug, "k_tiles": 2}, engine="bmc", jobs=1, depth=40,
                     timeout=NO_DEADLINE)
    assert (bmc.status == VIOLATED) == (ex.status == VIOLATED)
    assert bmc.prop == ex.prop
    if ex.status == VIOLATED:
        assert len(bmc.verdict.trace) == len(ex.verdict.trace)  # both shortest


def test_function_entry_api():
    import importlib.util

    c = next(c for c in CASES if c.name == "pipeline_async")
    spec = importlib.util.spec_from_file_location("pa_for_api", c.path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = check_cute(mod.pipeline_async, {"bug": 2, "k_tiles": 2}, **LIMITS)
    assert r.status == VIOLATED and r.prop == "deadlock"


# ------------------------------------------------------------------ the command line

def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_kernel_py(capsys):
    c = next(c for c in CASES if c.name == "pipeline_async")
    code, out, _ = _run(capsys, "check", f"{c.entry}", "--param", "bug=1", "--param",
                        "k_tiles=2", "--engine", "explicit", "--jobs", "1")
    assert code == 1
    assert "VIOLATED deadlock" in out
    assert "pipe.empty" in out or "empty[" in out


def test_cli_json_and_reports(capsys, tmp_path):
    c = next(c for c in CASES if c.name == "pipeline_async")
    html, perf = tmp_path / "r.html", tmp_path / "r.json"
    code, out, _ = _run(capsys, "check", c.entry, "--param", "bug=3", "--json", "--jobs",
                        "1", "--html", str(html), "--perfetto", str(perf))
    assert code == 1
    d = json.loads(out)
    assert d["status"] == "VIOLATED" and d["property"] == "read-before-full"
    assert d["file"].endswith("pipeline_async.py")
    assert html.read_text().count("read-before-full") >= 1
    assert json.loads(perf.read_text())


# ------------------------------------------------------------------ bad input

BAD_ENTRY = '''
import cutlass
import cutlass.cute as cute

@cute.kernel
def k():
    x = undefined_name + 1

@cute.jit
def host():
    k().launch(grid=(1, 1, 1), block=(32, 1, 1))

def compiles_badly():
    return cute.compile(host)

def does_not_compile():
    return 42

def needs(value):
    return cute.compile(host)
'''


@pytest.fixture
def bad_file(tmp_path):
    p = tmp_path / "bad_kernel.py"
    p.write_text(BAD_ENTRY)
    return str(p)


@pytest.mark.parametrize("spec, expect", [
    ("{f}::nope", "no function 'nope'"),
    ("{f}::does_not_compile", "returned without calling cute.compile"),
    ("{f}::compiles_badly", "undefined_name"),
    ("{f}::needs", "needs a value for 'value'"),
    ("missing_dir/none.py::x", "no such file"),
])
def test_bad_entries_are_exit_2_with_a_message(capsys, bad_file, spec, expect):
    code, out, err = _run(capsys, "check", spec.format(f=bad_file), "--jobs", "1")
    assert code == 2, out + err
    assert expect in err
    assert "Traceback" not in err + out


def test_dsl_error_points_at_the_users_line(capsys, bad_file):
    code, _, err = _run(capsys, "check", f"{bad_file}::compiles_badly")
    assert code == 2
    assert "bad_kernel.py:7" in err  # the line with undefined_name


def test_unknown_param_and_arch_misuse(capsys, bad_file):
    code, _, err = _run(capsys, "check", f"{bad_file}::compiles_badly", "--param", "x=1")
    assert code == 2 and "no parameter 'x'" in err
    code, _, err = _run(capsys, "check", os.path.join("examples", "textbook",
                                                      "pipeline_async.pipe"),
                        "--arch", "sm_100a")
    assert code == 2 and "--arch" in err


def test_lift_errors_are_unknown_not_tracebacks():
    """An op the lifter does not know is refused, naming the op (never dropped)."""
    from pipeproof.frontend.cute import lift_text

    c = next(c for c in CASES if c.name == "pipeline_async")
    from pipeproof.frontend.cute.entry import parse_spec, run_entry

    cap, _, _ = run_entry(parse_spec(c.entry), {"k_tiles": 1}, "sm_90a")
    text = cap.text.replace('"nvvm.mbarrier.arrive"(', '"nvvm.mbarrier.arrive.newfangled"(', 1)
    with pytest.raises(Unsupported) as e:
        lift_text(text, "k", {}, c.path, cap.dsl_version)
    assert "unsupported op nvvm.mbarrier.arrive.newfangled" in str(e.value)
    assert "pipeline_async.py:" in str(e.value)  # the user's line


def test_missing_dsl_is_a_config_error(monkeypatch):
    import sys

    from pipeproof.frontend.cute.capture import dsl_version

    monkeypatch.setitem(sys.modules, "cutlass", None)
    with pytest.raises(ConfigError) as e:
        dsl_version()
    assert "pipeproof[cute]" in e.value.render()


def test_unsupported_dsl_version_is_a_config_error():
    from pipeproof.frontend.cute.capture import check_version

    assert check_version("4.8.1") == "4.8"
    assert check_version("4.7.0") == "4.7"
    with pytest.raises(ConfigError):
        check_version("4.3.0")


def test_pytest_plugin_accepts_a_cute_entry(pipeproof_check):
    from pipeproof.pytest_plugin import assert_safe, assert_violated

    c = next(c for c in CASES if c.name == "pipeline_async")
    assert_safe(pipeproof_check(c.entry, {"k_tiles": 2}, engine="explicit", jobs=1))
    assert_violated(c.entry, "deadlock", {"k_tiles": 2, "bug": 1}, engine="explicit", jobs=1)


def test_persistent_clc_loop_is_lifted_with_the_grid_bound():
    """The scheduler and worker loops run while the CLC response is valid: each valid
    response is a path of its own; a grid of n clusters allows n - 1 (the n-th read is
    checked to say 'no more work'), so the paths end (ghosts.clc_response)."""
    from pipeproof.model.program import Branch, Fail, SetLocal, TmaLoad

    c = next(c for c in CASES if c.name == "pipeline_clc_fetch_async" and c.bug == 0)
    for n in (1, 3):
        ck = lift_entry(c.entry, {"clusters": n}, arch=c.arch).compiled
        code = [i for p in ck.programs for i in p.code]
        queries = [i for i in code if isinstance(i, TmaLoad) and i.kind == "clc"]
        reads = [i for i in code if isinstance(i, SetLocal)]
        assert ck.info.grid_clusters == n
        assert queries and reads
        assert sum(q.may_succeed for q in queries) > 0 if n > 1 else \
            not any(q.may_succeed for q in queries)
        assert any(isinstance(i, Fail) and i.guard == "clc-grid" for i in code)
        assert any(isinstance(i, Branch) for i in code) or n == 1
