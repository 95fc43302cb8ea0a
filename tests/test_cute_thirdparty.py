"""A third-party CuTe DSL kernel: quack-kernels' RMSNorm backward (TMA path).

quack is not a dependency: the test is skipped unless it is importable (put the
unpacked ``quack-kernels`` wheel and ``apache-tvm-ffi`` on PYTHONPATH; torch and triton
are stubbed while quack is imported where they are missing). The kernel's row
predication reads coordinates from an identity tensor partitioned per thread; the
lifter follows it (``frontend/cute/coords.py``) and the kernel is PROVEN in the three
configurations of ``bench/results/cute_thirdparty.md``.
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


@pytest.mark.parametrize("kw", [
    dict(M=8, N=256, use_tma=True),    # 32 threads per row, one box per row
    dict(M=4, N=1024, tpr=128, use_tma=True),  # one row per tile, four boxes per row
    dict(M=8, N=256, use_tma=False),   # the cp.async path
], ids=["tma-N256", "tma-N1024", "cp_async-N256"])
def test_quack_rmsnorm_bwd(kw):
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
    from pipeproof.frontend.cute import lift_function

    def entry():
        return bench.rmsnorm_bwd(sm_count=1, stages=2, **kw)

    # the row predication on identity-tensor coordinates is followed (coords.py)
    lifted = lift_function(entry, {}, "sm_90a")
    r = check_compiled(lifted.compiled, engine="explicit", max_states=200_000, jobs=1)
    assert r.verdict.status == "PROVEN", r.render_text()
