"""The Python API (``pipeproof/dsl.py``): kernels written in Python with cutlass.pipeline's
names build the same IR as ``.pipe`` files, and tracing errors point at the user's line.

Two ways of showing IR equality:
* every ``examples/**/*.pipe`` file is *run as Python* through the API (the ``.pipe``
  language is a Python subset; ``load_pipe_as_python`` executes the file with the API's
  names, so every statement is recorded by the tracer, not by the parser) and its IR is
  compared with the parser's;
* ``tests/api_examples/*.py`` are idiomatic Python versions of examples (role functions,
  ``import pipeproof as pp``, participants and handles) compared with their ``.pipe`` twin.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

import pipeproof
from pipeproof.dsl import DslError, KernelDef, load_pipe_as_python
from pipeproof.model import ir
from pipeproof.model.lang.parser import parse, parse_file
from helpers import NO_DEADLINE

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PIPES = sorted(EXAMPLES.glob("**/*.pipe"))
API_EXAMPLES = sorted((Path(__file__).parent / "api_examples").glob("*.py"))


def _load_module(path: Path):
    name = f"_api_example_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _write_module(tmp_path: Path, text: str, name: str = "kmod"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return _load_module(path)


def _stmts(body) -> list:
    out = []
    for s in body:
        out.append(s)
        for f in ("body", "orelse"):
            out.extend(_stmts(getattr(s, f, ())))
    return out


# --------------------------------------------------------------------------- equality


@pytest.mark.parametrize("path", PIPES, ids=[str(p.relative_to(EXAMPLES)) for p in PIPES])
def test_pipe_file_run_as_python_builds_the_parsed_ir(path: Path) -> None:
    traced = load_pipe_as_python(path).ir
    parsed = parse_file(path)
    assert len(parsed.body) > 0
    assert traced == parsed
    # locations are not compared, but the tracer keeps real ones
    assert all(s.loc.line > 0 and s.loc.file == str(path) for s in _stmts(traced.body))


def test_there_are_pipe_examples() -> None:
    assert len(PIPES) >= 4


@pytest.mark.parametrize("path", API_EXAMPLES, ids=[p.stem for p in API_EXAMPLES])
def test_api_example_builds_its_pipe_twin(path: Path) -> None:
    mod = _load_module(path)
    assert isinstance(mod.KERNEL, KernelDef)
    assert mod.KERNEL.ir == parse_file(EXAMPLES / mod.PIPE)


def test_ir_equality_is_sensitive(tmp_path: Path) -> None:
    """Negative control: a one-literal change in the Python gives a different IR."""
    src = (EXAMPLES / "textbook" / "pipeline_tma_async.pipe").read_text()
    changed = tmp_path / "changed.pipe"
    changed.write_text(src.replace("tile_bytes = 8192", "tile_bytes = 8190"))
    assert load_pipe_as_python(changed).ir != parse_file(EXAMPLES / "textbook" /
                                                          "pipeline_tma_async.pipe")
    assert load_pipe_as_python(changed).ir == parse_file(changed)


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize("stem,expect", [("pipeline_tma_async", ("PROVEN", None)),
                                         ("pipeline_tma_umma", ("PROVEN", None)),
                                         ("p1_bug", ("VIOLATED", "deadlock"))])
def test_check_gives_the_pipe_verdict(stem: str, expect: tuple) -> None:
    mod = _load_module(Path(__file__).parent / "api_examples" / f"{stem}.py")
    result = pipeproof.check(mod.KERNEL, max_states=300_000, timeout=NO_DEADLINE, engine="explicit")
    assert (result.status, result.prop) == expect
    twin = pipeproof.check_file(EXAMPLES / mod.PIPE, max_states=300_000, timeout=NO_DEADLINE,
                                engine="explicit")
    assert (twin.status, twin.prop) == expect
    assert result.verdict.stats.states == twin.verdict.stats.states
    if result.status == "VIOLATED":
        # the counterexample points into the Python file
        locs = [e.loc for e in result.verdict.trace.events if e.loc]
        assert locs and all(loc.startswith(str(path_of(mod))) for loc in locs)


def path_of(mod) -> Path:
    return Path(mod.__file__)


def test_kernel_check_method_and_params(tmp_path: Path) -> None:
    mod = _load_module(Path(__file__).parent / "api_examples" / "pipeline_async.py")
    r = mod.KERNEL.check({"k_tiles": 2, "stages": 1})
    assert r.status == "PROVEN"
    assert r.params == {"stages": 1, "k_tiles": 2}
    with pytest.raises(TypeError, match="pipeproof kernel"):
        mod.KERNEL()


# --------------------------------------------------------------------------- semantics


def test_python_values_decide_if_and_range_constexpr(tmp_path: Path) -> None:
    mod = _write_module(tmp_path, """
        from pipeproof import cute, launch, write

        USE_B = False
        N = 3

        @cute.kernel
        def k(stages: int = 2):
            launch(block=64, cluster=(1, 1, 1))
            if USE_B:
                x = 1
            else:
                x = 2
            for i in range_constexpr(N):
                y = i * 2
            if stages > 1:
                z = 1
    """)
    body = mod.k.ir.body
    assigns = [s for s in body if isinstance(s, ir.Assign)]
    assert [(s.targets[0], s.value) for s in assigns[:4]] == [
        ("x", ir.Const(2)),
        ("y", ir.BinOp("*", ir.Const(0), ir.Const(2))),
        ("y", ir.BinOp("*", ir.Const(1), ir.Const(2))),
        ("y", ir.BinOp("*", ir.Const(2), ir.Const(2)))]
    staged_if = body[-1]
    assert isinstance(staged_if, ir.If)
    assert staged_if.cond == ir.Compare(">", ir.Name("stages"), ir.Const(1))


def test_helpers_inline_and_bind_effectful_arguments_once(tmp_path: Path) -> None:
    mod = _write_module(tmp_path, """
        from pipeproof import (Agent, CooperativeGroup, PipelineAsync, PipelineUserType, cute,
                               launch, make_pipeline_state, role)

        def twice(pipe, st):
            pipe.producer_acquire(st)
            pipe.producer_commit(st)

        def make(pipe):
            return pipe.make_producer()

        @cute.kernel
        def k(stages: int = 2):
            launch(block=64, cluster=(1, 1, 1))
            pipe = PipelineAsync.create(num_stages=stages,
                                        producer_group=CooperativeGroup(Agent.Thread, 32),
                                        consumer_group=CooperativeGroup(Agent.Thread, 32))
            with role("p", warps=[0]):
                twice(pipe, make_pipeline_state(PipelineUserType.Producer, stages))
                producer = make(pipe)
    """)
    rb = mod.k.ir.body[-1]
    assert isinstance(rb, ir.RoleBlock)
    want = parse(textwrap.dedent("""
        def k(stages: int = 2):
            with role("p", warps=[0]):
                st = make_pipeline_state(PipelineUserType.Producer, stages)
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                producer = pipe.make_producer()
    """)).body[0]
    assert rb == want


def test_traced_min_max_and_operators(tmp_path: Path) -> None:
    mod = _write_module(tmp_path, """
        from pipeproof import cute, launch

        @cute.kernel
        def k(a: int = 1, b: int = -2):
            launch(block=64, cluster=(1, 1, 1))
            x = min(a, b) + max(a, 4) * -3 // 2 % 5 << 1 | a ^ b & ~a
            y = a if a < b <= 3 else not b
            z = a in [1, 2] or a != b and -a == 2 - b
    """)
    src = textwrap.dedent("""
        def k(a: int = 1, b: int = -2):
            launch(block=64, cluster=(1, 1, 1))
            x = min(a, b) + max(a, 4) * -3 // 2 % 5 << 1 | a ^ b & ~a
            y = a if a < b <= 3 else not b
            z = a in [1, 2] or a != b and -a == 2 - b
    """)
    assert mod.k.ir == parse(src)
    assert builtins.min(1, 2) == 1    # nothing was patched


# --------------------------------------------------------------------------- errors


def test_unknown_method_names_the_line_and_suggests(tmp_path: Path) -> None:
    mod = _write_module(tmp_path, """
        from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, PipelineUserType,
                               cute, launch, make_pipeline_state, role)

        @cute.kernel
        def k(stages: int = 2):
            launch(block=64, cluster=(1, 1, 1))
            ab = PipelineTmaAsync.create(num_stages=stages,
                                         producer_group=CooperativeGroup(Agent.Thread, 1),
                                         consumer_group=CooperativeGroup(Agent.Thread, 1),
                                         tx_count=1024)
            with role("p", warps=[0]):
                state = make_pipeline_state(PipelineUserType.Producer, stages)
                ab.producer_aquire(state)
    """, "typo")
    with pytest.raises(DslError) as e:
        mod.k.ir
    assert e.value.loc.line == 14 and e.value.loc.file.endswith("typo.py")
    assert "no method 'producer_aquire'" in e.value.message
    assert "producer_acquire" in e.value.hint


@pytest.mark.parametrize("stmt,msg", [
    ("ab.producer_acquire(state, 1, 2, 3)", "too many positional arguments"),
    ("state.advance(2)", "takes no arguments"),
    ("state.advanc()", "PipelineState has no method"),
    ("p, c = ab.make_participants()\np.acquire_and_advanec()", "no method"),
    ("x = Agent.Threads", "Agent has no member"),
    ("ab = PipelineTmaAsync.create(4)", "keyword arguments only"),
    ("for i in [1, 2]:\n    pass", "range"),
    ("with role('x', warps=[1]) as r:\n    pass", "with ... as"),
    ("try:\n    pass\nexcept Exception:\n    pass", "Try statements"),
    ("a = b = 1", "chained assignment"),
    ("return 3", "cannot return a value"),
    ("undefined_name(1)", "not defined"),
])
def test_tracing_errors(tmp_path: Path, stmt: str, msg: str) -> None:
    template = textwrap.dedent("""
        from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, PipelineUserType,
                               cute, launch, make_pipeline_state, role)

        @cute.kernel
        def k(stages: int = 2):
            launch(block=64, cluster=(1, 1, 1))
            ab = PipelineTmaAsync.create(num_stages=stages,
                                         producer_group=CooperativeGroup(Agent.Thread, 1),
                                         consumer_group=CooperativeGroup(Agent.Thread, 1),
                                         tx_count=1024)
            state = make_pipeline_state(PipelineUserType.Producer, stages)
            STMT
    """)
    mod = _write_module(tmp_path, template.replace("STMT", stmt.replace("\n", "\n    ")),
                        "bad")
    with pytest.raises(DslError) as e:
        mod.k.ir
    assert msg in str(e.value)
    assert e.value.loc is not None and e.value.loc.line >= 12


def test_star_import_keeps_python_builtins() -> None:
    ns: dict = {}
    exec("from pipeproof import *", ns)
    for n in ("min", "max", "abs", "int", "bool", "len", "range"):
        assert n not in ns
    for n in ("PipelineTmaAsync", "CooperativeGroup", "Agent", "make_pipeline_state",
              "PipelineUserType", "NamedBarrier", "cute", "role", "launch", "check",
              "kernel", "tma_load", "read", "write", "PipelineProducer"):
        assert n in ns, n


def test_cutlass_pipeline_names_are_there() -> None:
    """Every name of cutlass.pipeline's __all__ that the model implements."""
    for n in ("Agent", "CooperativeGroup", "PipelineOp", "NamedBarrier", "TmaStoreFence",
              "PipelineUserType", "PipelineState", "PipelineAsync", "PipelineCpAsync",
              "PipelineTmaAsync", "PipelineTmaUmma", "PipelineAsyncUmma",
              "PipelineUmmaAsync", "PipelineClcFetchAsync", "PipelineTmaMultiConsumersAsync",
              "PipelineTmaStore", "PipelineOrder", "PipelineProducer", "PipelineConsumer",
              "make_pipeline_state", "pipeline_init_arrive", "pipeline_init_wait",
              "agent_sync"):
        assert getattr(pipeproof, n) is not None
    assert pipeproof.cutlass.pipeline.PipelineTmaAsync is not None


def test_closure_values_are_read_at_each_trace(tmp_path: Path) -> None:
    """Kernels from a factory: each sees its own closure value, even when an earlier
    kernel was garbage-collected (no cache keyed by object ids)."""
    import gc

    mod = _write_module(tmp_path, """
        from pipeproof import Agent, CooperativeGroup, cute, launch

        def make(n):
            @cute.kernel
            def k(stages: int = 2):
                launch(block=64, cluster=(1, 1, 1))
                g = CooperativeGroup(Agent.Thread, n)
            return k
    """, "factory")
    seen = []
    for n in (4, 128, 7):
        value = mod.make(n).ir.body[1].value
        seen.append(value.args[1])
        gc.collect()
    assert seen == [ir.Const(4), ir.Const(128), ir.Const(7)]
