"""Symbolic parameters (``--param K=LO..HI`` left symbolic, ``model.program.ParamSplit``).

The property that matters: a symbolic check says, for every value of the range, what
the check of that value alone says -- VIOLATED exactly for the values whose own check
is VIOLATED, and SAFE/PROVEN for the rest.  It is tested on generated configurations and
mutants of every class (tests/generators.py; their trip count ``k_tiles`` is the
range), with both engines, against the explicit engine run value by value; and on the
bundled bug examples.  Partial-order reduction and the unreduced graph must agree on the
symbolic systems, whose split steps are new transitions for the reduction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generators as G
from pipeproof.api import check_file, check_source
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.compile import compile_kernel
from pipeproof.model.errors import ConfigError, Unsupported
from pipeproof.model.lang.parser import parse, parse_file
from pipeproof.model.program import ParamSplit
from pipeproof.model.system import System
from test_bmc_hypothesis import SETTINGS
from helpers import NO_DEADLINE

EXAMPLES = str(Path(__file__).resolve().parent.parent / "examples")  # any working directory


def _by_value(source: str, name: str, values: range) -> dict[int, str]:
    """Each value's own verdict (explicit engine with its reductions, which
    tests/test_por.py and test_reduction_hypothesis.py hold to the unreduced graph)."""
    out = {}
    for x in values:
        r = check_source(source, {name: x}, engine="explicit", timeout=NO_DEADLINE, jobs=1)
        out[x] = r.status
    return out


def _symbolic_statuses(r: Any, name: str, values: range) -> dict[int, str]:
    """The status the symbolic answer gives each value (from its groups)."""
    groups = r.verdict.stats.extra["parameter_groups"]
    out: dict[int, str] = {}
    for g in groups:
        text = g["values"]
        assert text.startswith(f"{name}=")
        for part in text[len(name) + 1:].split(","):
            lo, _, hi = part.partition("..")
            for x in range(int(lo), int(hi or lo) + 1):
                assert x not in out, f"value {x} in two groups"
                out[x] = g["status"]
    assert set(out) == set(values), (out, values)
    return out


def _same_as_by_value(source: str, engine: str, hi: int, what: str,
                      name: str = "k_tiles") -> None:
    values = range(1, hi + 1)
    try:
        r = check_source(source, {name: values}, engine=engine,
                         timeout=30 if engine == "bmc" else 120, jobs=1)
    except ConfigError:
        return
    if "parameter_groups" not in r.verdict.stats.extra:
        # the parameter is used where a value must be static: checked value by value
        assert name in r.verdict.stats.extra.get("parameters_by_value", {}), what
        return
    sym = _symbolic_statuses(r, name, values)
    ref = _by_value(source, name, values)
    norm = lambda s: "ok" if s in ("SAFE", "PROVEN") else s  # noqa: E731
    # BMC may give up (UNKNOWN: no certificate and an unfinished unrolling, as on
    # clusters); whatever it decides must be each value's own answer
    assert engine == "bmc" or "UNKNOWN" not in sym.values(), (what, sym)
    decided = {x for x, s in sym.items() if s != "UNKNOWN"}
    assert {x: norm(sym[x]) for x in decided} == {x: norm(ref[x]) for x in decided}, \
        f"{what}\nsymbolic {sym}\nby value {ref}\n--- source ---\n{source}"


#: the range parameter: the trip count (conditions) or the stage count (barrier arrays,
#: pipeline states and ``it % stages`` arithmetic: each value compiled on its own path)
RANGED = st.sampled_from(["k_tiles", "k_tiles", "stages"])


@settings(max_examples=8, **SETTINGS)
@given(G.programs(), st.sampled_from(["explicit", "explicit", "bmc"]), st.integers(2, 3),
       RANGED)
def test_symbolic_range_matches_each_value_on_valid_programs(prog: G.Program, engine: str,
                                                             hi: int, name: str) -> None:
    _same_as_by_value(prog.source, engine, hi, prog.describe(), name)


@settings(max_examples=12, **SETTINGS)
@given(G.mutants(), st.sampled_from(["explicit", "explicit", "bmc"]), st.integers(2, 3),
       RANGED)
def test_symbolic_range_matches_each_value_on_mutants(prog: G.Program, engine: str,
                                                      hi: int, name: str) -> None:
    _same_as_by_value(prog.source, engine, hi, prog.describe(), name)


@settings(max_examples=8, **SETTINGS)
@given(st.one_of(G.programs(), G.mutants()), st.integers(2, 3), RANGED)
def test_partial_order_reduction_on_symbolic_systems(prog: G.Program, hi: int,
                                                     name: str) -> None:
    """The split steps conflict with one another in the reduction's footprints; a
    reduction that ignored them would miss values (a different verdict or length)."""
    try:
        c = compile_kernel(parse(prog.source), symbolic={name: range(1, hi + 1)})
    except (ConfigError, Unsupported):
        return
    full = check_explicit(System(c), reduce=False, timeout=NO_DEADLINE)
    red = check_explicit(System(c), reduce=True, por=True, timeout=NO_DEADLINE)
    assert (red.status, red.prop) == (full.status, full.prop) or \
        "starvation" in (red.prop, full.prop), prog.describe()
    if full.status == "VIOLATED" and full.prop != "starvation":
        assert len(red.trace) == len(full.trace), prog.describe()


@settings(max_examples=8, **SETTINGS)
@given(st.one_of(G.programs(), G.mutants()), st.integers(2, 3), RANGED)
def test_one_value_of_a_symbolic_system_is_that_values_system(prog: G.Program, hi: int,
                                                              name: str) -> None:
    """The symbolic system started with one value possible is, state for state, the
    system compiled for that value: no split is a step there (each is decided when a
    warp reaches it), so the unreduced searches agree on the verdict, the shortest
    counterexample's length and the number of states."""
    try:
        c = compile_kernel(parse(prog.source), symbolic={name: range(1, hi + 1)})
    except (ConfigError, Unsupported):
        return
    for i, (value,) in enumerate(c.param_points):
        try:
            ref_c = compile_kernel(parse(prog.source), {name: value})
        except ConfigError:
            continue
        one = check_explicit(System(c, param_init=[i]), reduce=False, timeout=NO_DEADLINE)
        ref = check_explicit(System(ref_c), reduce=False, timeout=NO_DEADLINE)
        what = f"{name}={value}\n{prog.describe()}"
        assert (one.status, one.prop) == (ref.status, ref.prop), what
        assert one.stats.states == ref.stats.states, what
        if ref.status == "VIOLATED" and ref.prop != "starvation":
            assert len(one.trace) == len(ref.trace), what


def test_trip_count_is_one_system_with_splits() -> None:
    k = parse_file(f"{EXAMPLES}/textbook/pipeline_async.pipe")
    c = compile_kernel(k, symbolic={"k_tiles": range(1, 65)})
    splits = [ins for p in c.programs for ins in p.code if isinstance(ins, ParamSplit)]
    # one split per loop iteration that some value leaves: k < k_tiles for k = 1..63
    assert len(splits) == 2 * 63
    assert len(c.param_points) == 64
    r = check_file(f"{EXAMPLES}/textbook/pipeline_async.pipe", {"k_tiles": range(1, 65)},
                   engine="explicit", jobs=1)
    assert r.status == "PROVEN"
    assert r.params["k_tiles"] == "1..64"
    extra = r.verdict.stats.extra
    assert extra["symbolic_runs"] == 1 and extra["parameter_values_checked"] == 64
    # one state space for all 64 values: the runs share their prefixes, so it is far
    # smaller than the values' state spaces together (1,721 against 17,664)
    total = sum(check_file(f"{EXAMPLES}/textbook/pipeline_async.pipe", {"k_tiles": k},
                           engine="explicit", jobs=1).verdict.stats.states
                for k in range(1, 65))
    assert r.verdict.stats.states < total / 4


def test_bug_example_groups_each_value() -> None:
    """p6: k_iters=1 is safe, every larger value deadlocks; the answer names them."""
    path = f"{EXAMPLES}/bugs/p6-bug.pipe"
    r = check_file(path, {"k_iters": range(1, 9)}, jobs=1)
    assert r.status == "VIOLATED" and r.prop == "deadlock"
    sym = _symbolic_statuses(r, "k_iters", range(1, 9))
    ref = {x: check_file(path, {"k_iters": x}, jobs=1).status for x in range(1, 9)}
    assert sym == ref
    text = r.render_text()
    assert "symbolic parameter k_iters: 8 values in" in text
    assert "shown below" in text
    # the trace shows the splits with the values each side keeps
    assert any("k_iters: " in e.what and "(for k_iters=" in e.what
               for e in r.verdict.trace.events)


def test_stage_count_is_symbolic() -> None:
    """A stage count sizes the barrier arrays and fixes every pipeline state: each warp's
    path splits on it where it is first needed (``stages == 1``, then ``stages == 2``)
    and is compiled once per value after the split; the arrays have the largest size."""
    path = f"{EXAMPLES}/textbook/pipeline_async.pipe"
    c = compile_kernel(parse_file(path), symbolic={"stages": range(1, 4)})
    texts = {ins.text for p in c.programs for ins in p.code if isinstance(ins, ParamSplit)}
    assert texts == {"stages == 1", "stages == 2"}
    assert [d.stages for d in c.pipelines] == [3]
    r = check_file(path, {"stages": range(1, 4), "k_tiles": range(1, 5)}, jobs=1)
    assert r.status == "PROVEN"
    extra = r.verdict.stats.extra
    assert extra["symbolic_parameters"] == ["stages", "k_tiles"]
    assert extra["symbolic_runs"] == 1 and extra["parameter_values_checked"] == 12
    # --param-values (symbolic_params=False): every value on its own, same answer
    r2 = check_file(path, {"stages": range(1, 4), "k_tiles": range(1, 5)}, jobs=1,
                    symbolic_params=False)
    assert r2.status == "PROVEN" and r2.verdict.stats.extra["parameter_values_checked"] == 12


def test_a_split_is_a_step_only_where_it_narrows_the_values() -> None:
    """p7-bug: all six warps start with the splits on ``num_stages``.  A warp passes a
    split its values already decide with its previous step, and a split moves every
    other warp waiting at the same condition along: so the system restricted to one
    value is, state for state, that value's own, and a counterexample over the range
    takes each of its splits once (not once per warp, in every order)."""
    k = parse_file(f"{EXAMPLES}/bugs/p7-bug.pipe")
    c = compile_kernel(k, symbolic={"num_stages": range(1, 5)})
    one = check_explicit(System(c, param_init=[2]), reduce=False, timeout=NO_DEADLINE)
    ref = check_explicit(System(compile_kernel(k, {"num_stages": 3})), reduce=False,
                         timeout=NO_DEADLINE)
    assert ref.status == "VIOLATED"
    assert (one.status, one.prop, len(one.trace)) == (ref.status, ref.prop, len(ref.trace))
    assert one.stats.states == ref.stats.states
    full = check_explicit(System(c), reduce=False, timeout=NO_DEADLINE)
    assert full.status == "VIOLATED"
    splits = [e for e in full.trace.events if e.op == "param split"]
    assert 1 <= len(splits) <= 3, [e.what for e in splits]


def test_stage_count_bug_groups_each_value() -> None:
    """x2-bug's ``iters`` feeds its stage count: symbolic, and each value's verdict is
    the one its own check gives."""
    path = f"{EXAMPLES}/bugs/x2-bug.pipe"
    src = Path(path).read_text()
    r = check_file(path, {"iters": range(1, 5)}, jobs=1)
    assert r.verdict.stats.extra["symbolic_parameters"] == ["iters"]
    assert _symbolic_statuses(r, "iters", range(1, 5)) == _by_value(src, "iters", range(1, 5))
    # the step table names each split's side, not the instruction's class
    from pipeproof.checker.render.lanes import cell_text
    cells = [cell_text(e) for e in r.verdict.trace.events if e.op == "param split"]
    assert cells and all(c.startswith("iters == ") and c.endswith((": yes", ": no"))
                         for c in cells), cells
    assert "ParamSplit" not in r.render_text()


def test_launch_shape_falls_back_to_values_with_a_reason() -> None:
    """The launch (threads, cluster) is one for the whole system: a parameter it uses is
    checked value by value, and the answer says why."""
    src = ONLY_TWO_FAILS.replace("def only_two_fails(k_tiles: int = 1):",
                                 "def only_two_fails(k_tiles: int = 1, extra: int = 0):")
    src = src.replace("launch(block=64,", "launch(block=64 + 32 * extra,")
    r = check_source(src, {"extra": range(0, 2), "k_tiles": range(1, 3)}, jobs=1)
    # extra=0 first, with k_tiles still symbolic: only k_tiles=2 fails
    assert r.status == "VIOLATED" and r.params["extra"] == 0
    assert _symbolic_statuses(r, "k_tiles", range(1, 3)) == {1: "PROVEN", 2: "VIOLATED"}
    extra = r.verdict.stats.extra
    assert "the symbolic parameter extra" in extra["parameters_by_value"]["extra"]
    assert "checked value by value" in r.render_text()


def _two_warps(name: str, stages: int, produce: str, consume: str) -> str:
    """A PipelineAsync kernel of one producer and one consumer warp, each looping
    ``k_tiles`` times around ``produce`` / ``consume`` (lines at the loop body's
    indentation, between the acquire/wait and the advance)."""
    def body(text: str) -> str:
        return "".join(f"            {x}\n" for x in text.strip("\n").splitlines())

    return f"""
@cute.kernel
def {name}(k_tiles: int = 1):
    launch(block=64, cluster=(1, 1, 1))
    pipe = PipelineAsync.create(num_stages={stages},
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32))
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, {stages})
        for k in range(k_tiles):
            pipe.producer_acquire(state)
{body(produce)}            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)
    with role("consumer", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, {stages})
        for k in range(k_tiles):
{body(consume)}            state.advance()
"""


MIXED = _two_warps("k", 2, "", """
token = pipe.consumer_try_wait(state)
pipe.consumer_wait(state, token)
if not token and k == k_tiles - 2:
    pass
else:
    pipe.consumer_release(state)
""")


def test_a_condition_mixing_a_parameter_with_run_time_data_splits_on_the_parameter() -> None:
    """``not token and k == k_tiles - 2``: the path splits on ``k == k_tiles - 2`` (the
    parameter's part) and the branch after it tests the token alone.  A consumer whose
    try_wait failed skips a release, so producer_tail hangs -- for k_tiles >= 2 only."""
    c = compile_kernel(parse(MIXED), symbolic={"k_tiles": range(1, 4)})
    assert any(isinstance(ins, ParamSplit) and "k_tiles" in ins.text
               for p in c.programs for ins in p.code)
    r = check_source(MIXED, {"k_tiles": range(1, 4)}, jobs=1)
    assert r.verdict.stats.extra["symbolic_parameters"] == ["k_tiles"]
    sym = _symbolic_statuses(r, "k_tiles", range(1, 4))
    assert sym == _by_value(MIXED, "k_tiles", range(1, 4))
    assert sym == {1: "PROVEN", 2: "VIOLATED", 3: "VIOLATED"}


ONLY_TWO_FAILS = _two_warps("only_two_fails", 1, "write(pipe, state)", """
pipe.consumer_wait(state)
read(pipe, state)
if k_tiles != 2:
    pipe.consumer_release(state)
""")


def test_a_bug_of_one_small_value_is_found() -> None:
    """Only k_tiles=2 deadlocks (its consumer never releases).  Both sides of every split
    must be explored: a check that followed the condition's side wherever some value
    allows it would only see the largest value's run and prove the range."""
    values = range(1, 6)
    ref = _by_value(ONLY_TWO_FAILS, "k_tiles", values)
    assert ref == {1: "PROVEN", 2: "VIOLATED", 3: "PROVEN", 4: "PROVEN", 5: "PROVEN"}
    for engine in ("explicit", "bmc", "auto"):
        r = check_source(ONLY_TWO_FAILS, {"k_tiles": values}, engine=engine, jobs=1,
                         timeout=NO_DEADLINE)
        assert r.status == "VIOLATED" and r.prop == "deadlock", engine
        assert _symbolic_statuses(r, "k_tiles", values) == ref, engine
        groups = r.verdict.stats.extra["parameter_groups"]
        assert groups[0]["values"] == "k_tiles=2" and len(groups) == 2, groups


def test_starvation_lassos_are_replayed_per_value() -> None:
    """A persistent kernel whose warm-up loop runs ``warm`` times before the consumer
    stops releasing: every value starves, each lasso is re-validated on the kernel
    compiled for its values (``lasso.report_lasso``), by both engines."""
    src = (Path(EXAMPLES) / "liveness/persistent_consumer_stops_releasing.pipe").read_text()
    src = src.replace("(stages: int = 2):", "(stages: int = 2, warm: int = 1):")
    warm = """for i in range(warm):
            pipe.{0}
            {1}(pipe, state)
            pipe.{2}
            state.advance()
        while True:"""
    src = src.replace("""state = make_pipeline_state(PipelineUserType.Producer, stages)
        while True:""", "state = make_pipeline_state(PipelineUserType.Producer, stages)\n        "
                      + warm.format("producer_acquire(state)", "write", "producer_commit(state)"))
    src = src.replace("""first_tile = True
        while True:""", "first_tile = True\n        "
                      + warm.format("consumer_wait(state)", "read", "consumer_release(state)"))
    assert src.count("range(warm)") == 2
    for engine in ("explicit", "bmc"):
        r = check_source(src, {"warm": range(1, 4)}, engine=engine, jobs=1, timeout=NO_DEADLINE)
        assert r.status == "VIOLATED" and r.prop == "starvation", engine
        assert _symbolic_statuses(r, "warm", range(1, 4)) == {1: "VIOLATED", 2: "VIOLATED",
                                                               3: "VIOLATED"}
        assert r.verdict.trace.loop_start is not None
