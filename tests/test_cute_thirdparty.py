"""A third-party CuTe DSL kernel: quack-kernels' RMSNorm backward (TMA path).

quack is not a dependency: the test is skipped unless it is importable (put the
unpacked ``quack-kernels`` wheel and ``apache-tvm-ffi`` on PYTHONPATH; torch and triton
are stubbed while quack is imported where they are missing). The kernel compiles and
lifts up to its row loop, where a branch on a coordinate read from an identity tensor
ends the check UNKNOWN at quack's line: this documents the front end's current limit
(``bench/results/cute_thirdparty.md``). When the lifter learns coordinate tensors, this
test fails and should then assert the verdict instead.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_cute_thirdparty", os.path.join(ROOT, "bench", "bench_cute_thirdparty.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quack_rmsnorm_bwd_tma_lift_stops_at_coordinate_branch():
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    why = ("quack-kernels is not importable (not a dependency; put it and "
           "apache-tvm-ffi on PYTHONPATH)")
    if importlib.util.find_spec("quack") is None:
        pytest.skip(why)
    bench = _bench()
    try:  # quack imports torch and triton at module level: stubbed where missing
        bench.quack_imported()
    except ImportError as e:
        pytest.skip(f"{why}: {e}")
    pytest.importorskip("quack", reason=why)  # imported now, under the stubs

    from pipeproof.api import check_compiled
    from pipeproof.frontend.cute import LiftError, lift_function

    def entry():
        return bench.rmsnorm_bwd(M=8, N=256, sm_count=1, stages=2, use_tma=True)

    try:
        lifted = lift_function(entry, {}, "sm_90a")
    except LiftError as e:
        msg = str(e)
        assert "a branch on a value pipeproof cannot evaluate" in msg, msg
        assert "quack/rmsnorm.py:1038" in msg, msg
        assert "if row < M" in msg, msg
        return
    # The lift went through: the limit is gone. Check it (bounded by states) and fail
    # so that this test is updated to assert the verdict.
    r = check_compiled(lifted.compiled, engine="explicit", max_states=200_000, jobs=1)
    pytest.fail(f"quack's RMSNorm backward now lifts; verdict {r.verdict.headline()}: "
                "update this test and bench/results/cute_thirdparty.md")
