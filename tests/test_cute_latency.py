"""bench/bench_cute_latency.py (issue 25 item 3): everything but the GPU run.

The CuTe DSL twins compile and become ``raw_bench`` jobs next to pipeproof's ``bare``
latency jobs; the runner's ``raw_bench`` path passes each kernel parameter as the PTX
declares it (checked on a fake driver); the report's per-k-tile cost is the marginal
one and its ratio is pipeproof's over the DSL's.
"""

from __future__ import annotations

import ctypes
import json
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import bench_cute_latency as B  # noqa: E402

sys.path.pop(0)


def test_param_types_read_the_ptx_signature():
    ptx = (".visible .entry k_0(\n\t.param .u32 k_0_param_0,\n"
           "\t.param .align 8 .b8 k_0_param_1[8],\n\t.param .align 8 .b8 k_0_param_2[16]\n)\n{")
    assert B.entry_name(ptx) == "k_0"
    assert B.param_types(ptx, "k_0") == ["u32", "u64", "b16"]
    assert B.launch_args(["u32", "u64", "b16"], 99) == \
        [["u32", 99], ["u64", f"ptr:{B.PTR_BYTES}"], ["b16", 0]]
    with pytest.raises(RuntimeError):
        B.launch_args(["u64"], 1)
    with pytest.raises(RuntimeError):
        B.param_types(".visible .entry k(\n\t.param .f32 x\n)", "k")


class _FakeDriver:
    """Enough of cuda.bindings.driver for Gpu.launch / event_ms: records each launch's
    parameter bytes as the kernel would see them."""

    def __init__(self, size_of: dict[int, int]):
        self.launches: list[list[bytes]] = []
        self.size_of = size_of  # parameter index -> bytes
        self.CUlaunchAttributeID = types.SimpleNamespace(
            CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION=4)
        self.now = 0.0

    class CUlaunchConfig:
        pass

    class CUlaunchAttribute:
        def __init__(self) -> None:
            dim = types.SimpleNamespace(x=0, y=0, z=0)
            self.value = types.SimpleNamespace(clusterDim=dim)

    def cuLaunchKernelEx(self, cfg, fn, ptrs, extra):
        arr = ctypes.cast(ptrs, ctypes.POINTER(ctypes.c_void_p))
        got = [ctypes.string_at(arr[i], n) for i, n in sorted(self.size_of.items())]
        self.launches.append(got)
        self.last_cfg = cfg
        return (0,)

    def cuEventCreate(self, flags):
        return (0, object())

    def cuEventRecord(self, e, s):
        return (0,)

    def cuEventSynchronize(self, e):
        return (0,)

    def cuEventElapsedTime(self, a, b):
        return (0, 1.5)

    def cuStreamQuery(self, s):
        return (0,)


def test_raw_bench_passes_each_parameter_as_declared(tmp_path):
    from pipeproof.impl import gpu_runner as R

    d = _FakeDriver({0: 4, 1: 8, 2: 16})
    gpu = object.__new__(R.Gpu)
    gpu.d, gpu.stream = d, 0
    loaded, allocs = [], []
    gpu.load = lambda path, entry, smem, cs: loaded.append((path, entry, smem, cs)) or "fn"
    gpu.alloc = lambda n: allocs.append(n) or 0x7000_0000_1000
    gpu.zero = lambda p, n: None
    job = {"name": "j", "kind": "raw_bench", "binary": "k.cubin", "entry": "kern",
           "args": [["u32", 65536], ["u64", "ptr:4096"], ["b16", 0]], "grid": [1, 1, 1],
           "block": 64, "cluster": [1, 1, 1], "smem": 1152, "reps": 3, "warmup": 2}
    res = R.run_raw_bench(gpu, str(tmp_path), job, str(tmp_path))
    assert res == {"status": "ok", "ms": [1.5, 1.5, 1.5]}
    assert loaded == [(str(tmp_path / "k.cubin"), "kern", 1152, 1)] and allocs == [4096]
    assert len(d.launches) == 5  # 2 warm-up + 3 timed
    k, ptr, atom = d.launches[-1]
    assert int.from_bytes(k, "little") == 65536
    assert int.from_bytes(ptr, "little") == 0x7000_0000_1000 and atom == bytes(16)
    assert d.last_cfg.sharedMemBytes == 1152 and d.last_cfg.blockDimX == 64


def _write(out: Path, name: str, ms: list[float], timing=None, status="ok", device="H100"):
    d = {"name": name, "status": status, "device": device, "ms": ms}
    if timing is not None:
        d["timing"] = timing
    (out / f"{name}.json").write_text(json.dumps(d))


def test_report_is_the_marginal_cost_and_its_ratio(tmp_path):
    dk = B.K_LONG - B.K_SHORT
    # pipeproof: 100 ns/k-tile + 7 us launch; the DSL: 95 ns/k-tile + 3 us launch
    for kind in B.KINDS:
        for s in B.STAGES:
            _write(tmp_path, f"bench__lat_{kind}_s{s}_bare", [0.007 + B.K_SHORT * 1e-4] * 3,
                   [1000, 1000 + 100 * B.K_SHORT, 1000, 900 + 100 * B.K_SHORT])
            _write(tmp_path, f"bench__lat_{kind}_s{s}_bare64k",
                   [0.007 + B.K_LONG * 1e-4, 9.0, 0.0], [5, 5 + 100 * B.K_LONG, 0, 0])
            _write(tmp_path, f"cute__lat_{kind}_s{s}_k{B.K_SHORT}",
                   [0.003 + B.K_SHORT * 0.95e-4] * 3)
            ck = 1.0 if (kind, s) == ("tma", 4) else 0.95
            _write(tmp_path, f"cute__lat_{kind}_s{s}_k{B.K_LONG}",
                   [0.003 + B.K_LONG * ck * 1e-4] * 3)
    res = B.report(str(tmp_path), str(tmp_path))
    assert not res["errors"] and res["device"] == "H100" and res["same_device_call"]
    rows = {(r["kernel"], r["stages"]): r for r in res["rows"]}
    assert len(rows) == 4
    r = rows[("async", 1)]
    assert r["pipeproof_ns"] == pytest.approx(100.0) and r["cute_ns"] == pytest.approx(95.0)
    assert r["ratio"] == pytest.approx(100 / 95) and r["within_bound"]
    assert r["pipeproof_globaltimer_ns"] == pytest.approx(100.0, rel=1e-3)
    t = rows[("tma", 4)]
    assert t["cute_ns"] == pytest.approx(100 * (B.K_LONG - B.K_SHORT * 0.95) / dk, rel=1e-3)
    md = B.markdown(res)
    assert "GPU: H100" in md and "| async | 1 | 100.0 | 95.0 | 1.053 | yes |" in md


def test_report_says_what_is_missing(tmp_path):
    _write(tmp_path, "bench__lat_async_s1_bare", [1.0])
    _write(tmp_path, "bench__lat_async_s1_bare64k", [2.0], status="hang")
    res = B.report(str(tmp_path), str(tmp_path), kinds=("async",))
    assert not res["rows"]
    assert res["errors"]["async_s1"]["pp_l"] == "hang"
    assert res["errors"]["async_s1"]["cu_s"] == "missing"
    assert "Not measured" in B.markdown(res)


def test_prepare_compiles_the_dsl_twins_into_runner_jobs(tmp_path):
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    (tmp_path / "index.json").write_text(json.dumps(
        {"jobs": [{"name": "bench__bw_other", "kind": "bench"}], "budget_s": 480}))
    names = B.prepare(str(tmp_path))
    idx = json.loads((tmp_path / "index.json").read_text())
    assert idx["budget_s"] == 480 and idx["jobs"][0]["name"] == "bench__bw_other"
    by = {j["name"]: j for j in idx["jobs"]}
    assert set(names) <= set(by)
    for kind in B.KINDS:
        for s in B.STAGES:
            assert f"bench__lat_{kind}_s{s}_bare" in by and f"bench__lat_{kind}_s{s}_bare64k" in by
            for k in (B.K_SHORT, B.K_LONG):
                j = by[f"cute__lat_{kind}_s{s}_k{k}"]
                assert j["kind"] == "raw_bench" and j["args"][0] == ["u32", k]
                assert j["block"] == 64  # the .pipe's launch(block=64), the DSL's .reqntid
                assert (tmp_path / j["binary"]).exists() and j["smem"] >= 16 * s
                ptx = (tmp_path / f"cute__lat_{kind}_s{s}.ptx").read_text()
                assert B.entry_name(ptx) == j["entry"]
                # a real loop over the run-time trip count, not an unrolled one
                assert '.pragma "nounroll"' in ptx
                if kind == "tma":
                    assert "cp.async.bulk.shared::cluster.global" in ptx
                    assert "mbarrier.arrive.expect_tx" in ptx


def _fake_gpu(R, d, name="FAKE GPU"):
    gpu = object.__new__(R.Gpu)
    gpu.d, gpu.stream, gpu.name = d, 0, name

    def load(path, entry, smem, cs):
        assert Path(path).exists() and entry, (path, entry)
        return "fn"

    gpu.load = load
    gpu.alloc = lambda n: 0x1000
    gpu.zero = lambda p, n: None
    return gpu


def test_prepared_dsl_jobs_run_through_the_runner(tmp_path, monkeypatch):
    """The index ``prepare`` writes, run by ``gpu_runner.run_many`` (one process, one
    context) on a fake driver: every DSL job ends ``ok`` with the kernel's k_tiles in its
    first parameter, and the report reads the results."""
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from pipeproof.impl import gpu_runner as R

    names = [n for n in B.prepare(str(tmp_path), kinds=("tma",)) if n.startswith("cute__")]
    d = _FakeDriver({0: 4, 1: 8, 2: 16})
    gpu = _fake_gpu(R, d)
    monkeypatch.setattr(R, "Gpu", lambda: gpu)
    out = tmp_path / "out"
    out.mkdir()
    assert R.run_many(str(tmp_path), names, str(out)) == 0
    for n in names:
        res = json.loads((out / f"{n}.json").read_text())
        assert res["status"] == "ok" and res["device"] == "FAKE GPU", res
    ks = sorted(int.from_bytes(launch[0], "little") for launch in d.launches)
    assert set(ks) == {B.K_SHORT, B.K_LONG}
