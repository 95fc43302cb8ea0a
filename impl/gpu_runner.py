"""Launch emitted kernels on a GPU and keep their raw trace buffers.

Standalone on purpose: it imports only numpy and cuda-python (``cuda.bindings.driver``),
so it runs on a GPU machine that has neither lark nor z3; decoding and replay through
the model happen elsewhere (``impl/conform.py``).

    python3 impl/gpu_runner.py JOBS_DIR OUT_DIR            # every job, one process each
    python3 impl/gpu_runner.py --job JOBS_DIR NAME OUT_DIR  # one job (internal)

``JOBS_DIR/index.json`` lists jobs.  A job names a cubin (or PTX) and a manifest written by
``impl/emit.py``, and says how many runs, clusters per launch, jitter and watchdog to use.
Each job runs in its own process with a time limit, so a kernel that faults (a sticky
CUDA error) or never ends costs that job only.

A job's ``clusters`` counts *instances*: copies of the grid the model checks as one
system, each with its own trace, control block and (``gmem_bytes``) global-memory block
of flags and region stamps, zeroed before every launch.  An instance is one cluster,
or ``grid_clusters`` clusters for a kernel that uses global memory or its place in the
grid; the launch is ``cuLaunchKernelEx`` of ``instances * grid_clusters`` clusters with
the kernel's cluster dimensions.  Spins on global flags wait for other clusters of the
instance, which must then be resident at the same time: ``resident_instances`` caps the
instances so that every CTA of the launch has an SM of its own (at most 4 clusters of
one CTA per instance are modelled, so a few instances fill far less than an H100's 132
SMs); a spin that still waits on a cluster the GPU never scheduled ends at the watchdog
as STUCK, and the replay rejects it (the model can move), never a silent pass.

Results: ``OUT_DIR/NAME.npz`` (events, control blocks, timings) and ``OUT_DIR/NAME.json``
(status, timings in ms).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

CTRL_WORDS = 16
EVENT_BYTES = 16


# --------------------------------------------------------------------------- CUDA helpers


def _driver() -> Any:
    try:
        from cuda.bindings import driver  # type: ignore
    except ImportError:  # older cuda-python
        from cuda import cuda as driver  # type: ignore
    return driver


class CudaError(RuntimeError):
    pass


def ck(res: Any) -> Any:
    """Unpack a cuda-python result tuple, raising on an error code."""
    if isinstance(res, tuple):
        err, rest = res[0], res[1:]
    else:
        err, rest = res, ()
    if int(err) != 0:
        drv = _driver()
        name = drv.cuGetErrorName(err)[1]
        raise CudaError(f"{name.decode() if isinstance(name, bytes) else name} ({int(err)})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


class Gpu:
    def __init__(self) -> None:
        self.d = d = _driver()
        ck(d.cuInit(0))
        self.dev = ck(d.cuDeviceGet(0))
        self.ctx = ck(d.cuDevicePrimaryCtxRetain(self.dev))
        ck(d.cuCtxSetCurrent(self.ctx))
        self.stream = ck(d.cuStreamCreate(0))
        name = ck(d.cuDeviceGetName(64, self.dev))
        self.name = name.split(b"\0")[0].decode() if isinstance(name, bytes) else str(name)
        A = d.CUdevice_attribute
        self.sms = ck(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                             self.dev))
        self.cc = (ck(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                             self.dev)),
                   ck(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                             self.dev)))

    def load(self, path: str, entry: str, smem: int, cluster_size: int) -> Any:
        d = self.d
        data = open(path, "rb").read()
        if path.endswith(".ptx"):
            data += b"\0"
        mod = ck(d.cuModuleLoadData(data))
        fn = ck(d.cuModuleGetFunction(mod, entry.encode()))
        FA = d.CUfunction_attribute
        ck(d.cuFuncSetAttribute(fn, FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))
        if cluster_size > 8:
            ck(d.cuFuncSetAttribute(fn, FA.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                    1))
        return fn

    def alloc(self, nbytes: int) -> int:
        return int(ck(self.d.cuMemAlloc(max(nbytes, 256))))

    def zero(self, ptr: int, nbytes: int) -> None:
        ck(self.d.cuMemsetD8Async(ptr, 0, nbytes, self.stream))

    def h2d(self, ptr: int, arr: np.ndarray) -> None:
        ck(self.d.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes))

    def d2h(self, arr: np.ndarray, ptr: int) -> None:
        ck(self.d.cuMemcpyDtoH(arr.ctypes.data, ptr, arr.nbytes))

    def launch(self, fn: Any, grid: tuple, block: int, smem: int, cluster: tuple,
               args: list[tuple[str, int]]) -> None:
        d = self.d
        cfg = d.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block, 1, 1
        cfg.sharedMemBytes = smem
        cfg.hStream = self.stream
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        cfg.attrs = [attr]
        cfg.numAttrs = 1
        # "u64", "u32", or "bN": an N-byte parameter (a struct passed by value, e.g. a
        # CuTe DSL kernel's copy atom), ``v`` its bytes as a little-endian integer
        holders = [ctypes.c_uint64(v) if t == "u64" else
                   (ctypes.c_uint8 * int(t[1:])).from_buffer_copy(v.to_bytes(int(t[1:]),
                                                                             "little"))
                   if t.startswith("b") else ctypes.c_uint32(v & 0xFFFFFFFF)
                   for t, v in args]
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
        ck(d.cuLaunchKernelEx(cfg, fn, ctypes.addressof(ptrs), 0))
        self._keep = (holders, ptrs)

    def wait(self, limit_s: float) -> bool:
        """Wait for the stream; False if it is still busy after ``limit_s``."""
        d = self.d
        t0 = time.time()
        while True:
            err = d.cuStreamQuery(self.stream)[0]
            if int(err) == 0:
                return True
            if int(err) != int(d.CUresult.CUDA_ERROR_NOT_READY):
                ck((err,))
            if time.time() - t0 > limit_s:
                return False
            time.sleep(0.0005)

    def event_ms(self, fn_launch: Any, reps: int) -> list[float]:
        d = self.d
        out = []
        for _ in range(reps):
            e0 = ck(d.cuEventCreate(0))
            e1 = ck(d.cuEventCreate(0))
            ck(d.cuEventRecord(e0, self.stream))
            fn_launch()
            ck(d.cuEventRecord(e1, self.stream))
            ck(d.cuEventSynchronize(e1))
            out.append(float(ck(d.cuEventElapsedTime(e0, e1))))
        return out


# --------------------------------------------------------------------------- jobs


def _src_image(man: dict) -> np.ndarray:
    words = np.zeros(man["src_bytes"] // 4, dtype=np.uint32)
    for off, w, v in man["src_stamps"]:
        words[off // 4 + w] = v
    return words


def resident_instances(man: dict, want: int, sms: int) -> int:
    """Instances per launch such that every CTA of the launch can be resident at once
    (one CTA per SM, the conservative bound), at least 1 and at most ``want``."""
    n = int(man.get("grid_clusters", 1))
    if n <= 1:  # one cluster per instance: no spin waits on another cluster
        return want
    return max(1, min(want, sms // (n * int(man["cluster_size"]))))


class Kernel:
    """An emitted kernel with its buffers, for ``clusters`` instances per launch (an
    instance: ``grid_clusters`` clusters, the grid the model checks as one system)."""

    def __init__(self, gpu: Gpu, jobs_dir: str, job: dict, clusters: int):
        self.gpu = gpu
        self.job = job
        self.man = man = json.load(open(os.path.join(jobs_dir, job["manifest"])))
        self.fn = gpu.load(os.path.join(jobs_dir, job["binary"]), man["entry"], man["smem"],
                           man["cluster_size"])
        self.G = clusters
        self.nclus = int(man.get("grid_clusters", 1))
        self.cap = int(job.get("cap", man["cap"]))
        cs, nw = man["cluster_size"], man["num_warps"]
        self.src_stride = (man["src_bytes"] + 255) // 256 * 256
        self.dst_stride = (man["dst_bytes"] + 255) // 256 * 256
        self.trace = gpu.alloc(clusters * self.cap * EVENT_BYTES) if man["trace"] else 0
        self.ctrl = gpu.alloc(clusters * CTRL_WORDS * 4)
        self.src = gpu.alloc(clusters * self.src_stride)
        self.dst = gpu.alloc(clusters * self.dst_stride)
        self.timing_n = clusters * self.nclus * cs * nw * 2
        self.timing = gpu.alloc(self.timing_n * 8)
        self.work = gpu.alloc(256)
        self.tmap = gpu.alloc(256)
        # global flags and region stamps of every instance (zero: flags at launch, and
        # a stamp no one wrote)
        self.gmem_stride = (int(man.get("gmem_bytes", 0)) + 255) // 256 * 256
        self.gmem = gpu.alloc(clusters * self.gmem_stride) if self.gmem_stride else 0
        img = _src_image(man)
        full = np.zeros(clusters * self.src_stride // 4, dtype=np.uint32)
        for g in range(clusters):
            full[g * self.src_stride // 4: g * self.src_stride // 4 + img.size] = img
        gpu.h2d(self.src, full)

    def reset(self) -> None:
        g = self.gpu
        if self.trace:
            g.zero(self.trace, self.G * self.cap * EVENT_BYTES)
        g.zero(self.ctrl, self.G * CTRL_WORDS * 4)
        g.zero(self.work, 256)
        g.zero(self.timing, self.timing_n * 8)
        if self.gmem:
            g.zero(self.gmem, self.G * self.gmem_stride)

    def run(self, seed: int, jit_prob: int, jit_mask: int, timeout_ns: int, grace_ns: int,
            num_tiles: int, reset: bool = True) -> None:
        g, man = self.gpu, self.man
        if reset:
            self.reset()
        vals = {"trace": self.trace, "ctrl": self.ctrl, "src": self.src, "dst": self.dst,
                "timing": self.timing, "work": self.work, "tmap": self.tmap,
                "src_stride": self.src_stride, "dst_stride": self.dst_stride,
                "timeout": timeout_ns, "grace": grace_ns, "seed": seed, "jit_prob": jit_prob,
                "jit_mask": jit_mask, "cap": self.cap, "num_tiles": num_tiles,
                "gmem": self.gmem, "gmem_stride": self.gmem_stride}
        # run-time kernel arguments (structured emission): the values the model's programs
        # were compiled with; a job may override them (benchmarks only: no replay)
        for n, v in dict(man.get("args", {}), **self.job.get("args", {})).items():
            vals["a_" + n] = v
        args = [(t, int(vals[n])) for n, t in man["params"]]
        cx, cy, cz = man["cluster"]
        g.launch(self.fn, (self.G * self.nclus * cx, cy, cz), man["block"], man["smem"],
                 (cx, cy, cz), args)

    def collect(self) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        ctrl = np.zeros(self.G * CTRL_WORDS, dtype=np.uint32)
        self.gpu.d2h(ctrl, self.ctrl)
        ctrl = ctrl.reshape(self.G, CTRL_WORDS)
        evs = []
        for c in range(self.G):
            n = int(min(ctrl[c, 0], self.cap))
            a = np.zeros(n * 4, dtype=np.uint32)
            if n and self.trace:
                self.gpu.d2h(a, self.trace + c * self.cap * EVENT_BYTES)
            evs.append(a)
        tim = np.zeros(self.timing_n, dtype=np.uint64)
        self.gpu.d2h(tim, self.timing)
        return ctrl, evs, tim


def run_conform(gpu: Gpu, jobs_dir: str, job: dict, out: str) -> dict:
    """``runs`` jittered launches of ``clusters`` clusters; keep every trace."""
    man = json.load(open(os.path.join(jobs_dir, job["manifest"])))
    k = Kernel(gpu, jobs_dir, job, resident_instances(man, job.get("clusters", 4), gpu.sms))
    rng = np.random.default_rng(job.get("seed", 1))
    all_ev, index, ctrls, tims, seeds, status = [], [], [], [], [], "ok"
    pos = 0
    t0 = time.time()
    for r in range(job["runs"]):
        seed = int(rng.integers(1, 2**31))
        # vary the schedule: jitter probability and range per run
        prob = int(job.get("jit_prob", rng.choice([0, 16, 64, 128, 255])))
        mask = int(job.get("jit_mask", rng.choice([255, 1023, 4095, 16383])))
        k.run(seed, prob, mask, job.get("timeout_ns", 20_000_000),
              job.get("grace_ns", 2_000_000), job.get("num_tiles", 3 * k.G))
        if not gpu.wait(job.get("hang_s", 20.0)):
            status = f"hang (kernel still running after {job.get('hang_s', 20.0)} s, run {r})"
            break
        ctrl, evs, tim = k.collect()
        for c, a in enumerate(evs):
            all_ev.append(a)
            index.append((r, c, pos, a.size // 4))
            pos += a.size // 4
        ctrls.append(ctrl)
        tims.append(tim)
        seeds.append((seed, prob, mask))
    res = {"status": status, "runs_done": len(ctrls), "clusters": k.G, "cap": k.cap,
           "seconds": time.time() - t0}
    np.savez_compressed(
        os.path.join(out, job["name"] + ".npz"),
        events=np.concatenate(all_ev) if all_ev else np.zeros(0, np.uint32),
        index=np.array(index, dtype=np.int64).reshape(-1, 4),
        ctrl=np.array(ctrls, dtype=np.uint32).reshape(-1, k.G, CTRL_WORDS),
        timing=np.array(tims, dtype=np.uint64), seeds=np.array(seeds, dtype=np.int64))
    return res


def run_bench(gpu: Gpu, jobs_dir: str, job: dict, out: str) -> dict:
    """Timed launches (CUDA events) plus in-kernel %globaltimer per warp."""
    G = job.get("clusters") or 0
    man = json.load(open(os.path.join(jobs_dir, job["manifest"])))
    if not G:  # fill the GPU: resident clusters
        d = gpu.d
        fn = gpu.load(os.path.join(jobs_dir, job["binary"]), man["entry"], man["smem"],
                      man["cluster_size"])
        per_sm = ck(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, man["block"],
                                                                   man["smem"]))
        G = max(1, per_sm * gpu.sms // (man["cluster_size"] * man.get("grid_clusters", 1)))
    k = Kernel(gpu, jobs_dir, job, G)
    nt = job.get("num_tiles", 3 * G)

    def launch() -> None:
        # buffers are not reset inside the timed region (1-CTA clusters need no reset:
        # no lingering; the ticket counter lives in shared memory)
        k.run(12345, 0, 0, job.get("timeout_ns", 200_000_000), job.get("grace_ns", 20_000_000),
              nt, reset=False)

    k.reset()
    for _ in range(job.get("warmup", 2)):
        launch()
        gpu.wait(60)
    ms = gpu.event_ms(launch, job.get("reps", 10))
    k.reset()
    launch()
    gpu.wait(60)
    ctrl, evs, tim = k.collect()
    res = {"status": "ok", "clusters": G, "ms": ms, "ctrl_errors": int(ctrl[:, 3].sum()),
           "ctrl_stuck": int(ctrl[:, 5].sum()), "timing": tim.tolist()[:4096],
           "events": int(sum(a.size // 4 for a in evs))}
    if job.get("copy_bytes"):
        res["copy_ms"] = _copy_ms(gpu, int(job["copy_bytes"]), job.get("reps", 10))
        res["copy_bytes"] = int(job["copy_bytes"])
    if job.get("copy_match_per_cluster"):
        # a copy that reads and writes as many bytes as the G clusters load: the same
        # launch and ramp-up overheads as the pipeline kernel
        n = int(job["copy_match_per_cluster"]) * G
        res["copy_match_ms"] = _copy_ms(gpu, n, job.get("reps", 10))
        res["copy_match_bytes"] = n
    return res


def _copy_ms(gpu: Gpu, n: int, reps: int) -> list:
    """CUDA-event times of ``cuMemcpyDtoDAsync`` of ``n`` bytes (after two warm-ups)."""
    a, b = gpu.alloc(n), gpu.alloc(n)
    gpu.zero(a, n)
    gpu.wait(10)
    d = gpu.d

    def cp() -> None:
        ck(d.cuMemcpyDtoDAsync(b, a, n, gpu.stream))

    for _ in range(2):
        cp()
    gpu.wait(10)
    return gpu.event_ms(cp, reps)


def run_litmus(gpu: Gpu, jobs_dir: str, job: dict, out: str) -> dict:
    """A hand-written PTX litmus kernel: ``out`` words of results, one launch per rep."""
    d = gpu.d
    fn = gpu.load(os.path.join(jobs_dir, job["binary"]), job["entry"], job.get("smem", 0),
                  job.get("cluster_size", 1))
    n = job["words"]
    buf = gpu.alloc(n * 4)
    reps = job.get("reps", 1)
    results = []
    for r in range(reps):
        gpu.zero(buf, n * 4)
        cl = tuple(job.get("cluster", (1, 1, 1)))
        args = [("u64", buf), ("u32", r), ("u64", job.get("timeout_ns", 50_000_000))]
        gpu.launch(fn, tuple(job.get("grid", cl)), job.get("block", 32), job.get("smem", 0),
                   cl, args)
        if not gpu.wait(job.get("hang_s", 10.0)):
            return {"status": "hang", "results": results}
        a = np.zeros(n, dtype=np.uint32)
        gpu.d2h(a, buf)
        results.append(a.tolist())
    del d
    return {"status": "ok", "results": results}


def run_raw_bench(gpu: Gpu, jobs_dir: str, job: dict, out: str) -> dict:
    """A kernel compiled elsewhere (a CuTe DSL kernel's PTX or cubin, ``bench/
    bench_cute_latency.py``): its own parameter list (``args``: ``[type, value]``, with
    ``"ptr:N"`` a zeroed device buffer of N bytes), dynamic shared memory set at launch;
    ``warmup`` untimed launches, then ``reps`` launches timed with CUDA events."""
    cl = tuple(job.get("cluster", (1, 1, 1)))
    cs = cl[0] * cl[1] * cl[2]
    smem = int(job.get("smem", 0))
    fn = gpu.load(os.path.join(jobs_dir, job["binary"]), job["entry"], smem, cs)
    args = []
    for t, v in job["args"]:
        if str(v).startswith("ptr:"):
            n = int(str(v)[4:])
            ptr = gpu.alloc(n)
            gpu.zero(ptr, n)
            args.append(("u64", ptr))
        else:
            args.append((t, int(v)))
    hang_s = float(job.get("hang_s", 20.0))

    def launch() -> None:
        gpu.launch(fn, tuple(job.get("grid", cl)), job.get("block", 32), smem, cl, args)

    for _ in range(job.get("warmup", 2)):
        launch()
        if not gpu.wait(hang_s):
            return {"status": f"hang (kernel still running after {hang_s} s)"}
    return {"status": "ok", "ms": gpu.event_ms(launch, job.get("reps", 10))}


KINDS = {"conform": run_conform, "bench": run_bench, "litmus": run_litmus,
         "raw_bench": run_raw_bench}


def _run_job(gpu: Any, jobs_dir: str, job: dict, out: str) -> dict:
    res: dict = {"name": job["name"]}
    t0 = time.time()
    try:
        res["device"] = gpu.name
        res.update(KINDS[job["kind"]](gpu, jobs_dir, job, out))
    except CudaError as e:
        res["status"] = f"cuda error: {e}"
    except Exception as e:  # noqa: BLE001 - reported in the job's result
        import traceback

        res["status"] = f"runner error: {type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()[-3000:]
    res["wall_s"] = round(time.time() - t0, 3)
    return res


def run_many(jobs_dir: str, names: list[str], out: str) -> int:
    """Run several jobs in this process (one CUDA context); stop at the first CUDA error
    (a sticky error poisons the context) so that the parent restarts a fresh process."""
    index = json.load(open(os.path.join(jobs_dir, os.environ.get("PP_INDEX", "index.json"))))
    by = {j["name"]: j for j in index["jobs"]}
    gpu = Gpu()
    for name in names:
        Path_tmp = os.path.join(out, name + ".started")
        open(Path_tmp, "w").close()
        res = _run_job(gpu, jobs_dir, by[name], out)
        json.dump(res, open(os.path.join(out, name + ".json"), "w"))
        os.remove(Path_tmp)
        print(f"[{name}] {res.get('status')} ({res['wall_s']} s)", flush=True)
        if str(res.get("status", "")).startswith(("cuda error", "hang")):
            os._exit(1)  # a poisoned context or a kernel still running: start afresh
    return 0


def run_all(jobs_dir: str, out: str, only: str = "") -> int:
    """Run every job: groups of ordinary jobs share a process; a job marked ``isolate``
    (a litmus that may hang) gets its own.  A process that dies or stops making progress
    is killed; its current job is marked and the rest continue in a new process."""
    index = json.load(open(os.path.join(jobs_dir, os.environ.get("PP_INDEX", "index.json"))))
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    budget = float(index.get("budget_s", 1e9))
    jobs = [j for j in index["jobs"] if not only or only in j["name"]]
    pending = [j for j in jobs if not j.get("isolate")]
    isolated = [j for j in jobs if j.get("isolate")]
    by = {j["name"]: j for j in jobs}

    def done(name: str) -> bool:
        return os.path.exists(os.path.join(out, name + ".json"))

    def launch(names: list[str]) -> None:
        if not names:
            return
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--many",
                                 jobs_dir, out] + names)
        while proc.poll() is None:
            time.sleep(0.2)
            cur = [n for n in names if os.path.exists(os.path.join(out, n + ".started"))]
            if cur:
                try:
                    st = os.path.getmtime(os.path.join(out, cur[0] + ".started"))
                except FileNotFoundError:  # the job just finished
                    continue
                limit = by[cur[0]].get("process_s", 120)
                if time.time() - st > limit:
                    proc.kill()
                    proc.wait()
                    json.dump({"name": cur[0], "status": f"killed after {limit} s (hang)"},
                              open(os.path.join(out, cur[0] + ".json"), "w"))
                    try:
                        os.remove(os.path.join(out, cur[0] + ".started"))
                    except FileNotFoundError:
                        pass
                    print(f"[{cur[0]}] killed after {limit} s", flush=True)
            if time.time() - t0 > budget:
                proc.kill()
                proc.wait()
                break
        for n in names:
            started = os.path.join(out, n + ".started")
            if os.path.exists(started):
                os.remove(started)
                json.dump({"name": n, "status": f"process died (exit {proc.returncode})"},
                          open(os.path.join(out, n + ".json"), "w"))

    for group in (pending, ):
        for _ in range(50):
            names = [j["name"] for j in group if not done(j["name"])]
            if not names or time.time() - t0 > budget:
                break
            launch(names)
    for j in isolated:
        if time.time() - t0 > budget:
            break
        launch([j["name"]])
    for j in jobs:
        if not done(j["name"]):
            json.dump({"name": j["name"], "status": "skipped (time budget)"},
                      open(os.path.join(out, j["name"] + ".json"), "w"))
    print(f"all jobs done in {time.time() - t0:.1f} s", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--many":
        return run_many(argv[1], argv[3:], argv[2])
    if len(argv) < 2:
        print(__doc__)
        return 2
    return run_all(argv[0], argv[1], argv[2] if len(argv) > 2 else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
