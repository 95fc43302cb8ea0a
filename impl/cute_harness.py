"""The host program that runs a CuTe DSL kernel exported with ``export_to_c``.

``cute.compile(...).export_to_c(dir, name, prefix)`` writes an object (the kernel's
fatbin and the DSL's own host launcher: TMA descriptors, grid, cluster, shared-memory
attribute) and a header declaring ``cute_dsl_<prefix>_wrapper(module, args...)``.  This
module reads that header and writes a C++ ``main`` for it: allocate each tensor and load
its initial contents (files written here), point the kernel's ``pipeproof_trace``
global at a trace buffer (``impl/cute_trace.py``), launch ``runs`` times with a new
jitter seed each, and write every run's trace and, after the last run, each tensor.

A launch that does not finish within the time limit is reported (``HANG``) and the
process exits, which makes the driver destroy the context: the GPU is not left hung.
The machine that runs it needs ``nvcc`` and a GPU, not the DSL; the DSL's static
runtime library (``libcuda_dialect_runtime_static.a``, in the wheel) travels with the
object.
"""

from __future__ import annotations

import math
import os
import random
import re
import struct
from dataclasses import dataclass
from typing import Any

from ..model.errors import ConfigError


@dataclass(frozen=True)
class TensorArg:
    """One tensor argument of the exported function (from the fake tensor the entry
    passed to ``cute.compile``)."""

    name: str
    dtype: str          # the DSL's element type name: Float16, BFloat16, Float32, Int8, ...
    bits: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        if not self.shape:
            return 0
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(self.shape, self.stride))
        return max(1, math.ceil(span * self.bits / 8))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "bits": self.bits,
                "shape": list(self.shape), "stride": list(self.stride)}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "TensorArg":
        return TensorArg(d["name"], d["dtype"], d["bits"], tuple(d["shape"]),
                         tuple(d["stride"]))


def tensor_args(args: tuple, sig: Any) -> list[TensorArg]:
    """The tensor arguments of the host function ``cute.compile`` was called with."""
    names = list(sig.parameters) if sig is not None else [f"arg{i}" for i in range(len(args))]
    out = []
    for name, a in zip(names, args):
        if not (hasattr(a, "shape") and hasattr(a, "element_type")):
            continue
        shape, stride = tuple(a.shape), tuple(a.stride)
        if not all(isinstance(x, int) for x in shape + stride):
            raise ConfigError(
                f"tensor argument {name} has a shape or stride known only at run time "
                f"({shape}, {stride}): a conformance run needs the concrete problem size",
                hint="give the fake tensors concrete shapes in the entry")
        et = a.element_type
        out.append(TensorArg(name, getattr(et, "__name__", str(et)), int(et.width), shape,
                             stride))
    return out


# ---------------------------------------------------------------------------- data

def initial_bytes(t: TensorArg, seed: int) -> bytes:
    """Deterministic contents: small integers (exact in every float format), so that a
    GEMM's result can be checked exactly."""
    rng = random.Random(f"{seed}:{t.name}")
    n = t.nbytes * 8 // t.bits if t.bits else 0
    vals = [rng.randint(-2, 2) for _ in range(n)]
    d = t.dtype.lower()
    if d.startswith("float16"):
        return struct.pack(f"<{n}e", *vals)
    if d.startswith("bfloat16"):
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    if d.startswith("float32") or d == "tfloat32":
        return struct.pack(f"<{n}f", *vals)
    if d.startswith("float64"):
        return struct.pack(f"<{n}d", *vals)
    if d.startswith(("int", "uint")) and t.bits in (8, 16, 32, 64):
        fmt = {8: "b", 16: "h", 32: "i", 64: "q"}[t.bits]
        if d.startswith("uint"):
            fmt = fmt.upper()
            vals = [abs(v) for v in vals]
        return struct.pack(f"<{n}{fmt}", *vals)
    return bytes(t.nbytes)  # other formats (fp8, fp4, ...): zeros


def decode_values(t: TensorArg, raw: bytes) -> list[float]:
    d = t.dtype.lower()
    n = len(raw) * 8 // t.bits
    if d.startswith("float16"):
        return list(struct.unpack(f"<{n}e", raw[:2 * n]))
    if d.startswith("bfloat16"):
        return [struct.unpack("<f", b"\0\0" + raw[2 * i:2 * i + 2])[0] for i in range(n)]
    if d.startswith("float32"):
        return list(struct.unpack(f"<{n}f", raw[:4 * n]))
    raise ConfigError(f"decoding {t.dtype} is not supported")


# ---------------------------------------------------------------------------- header

@dataclass(frozen=True)
class Wrapper:
    prefix: str
    params: tuple[tuple[str, str], ...]   # (C type, name) after the module
    structs: dict


def read_header(text: str) -> Wrapper:
    m = re.search(r"static inline int32_t cute_dsl_(\w+)_wrapper\(([^)]*)\)", text)
    if not m:
        raise ConfigError("the exported header declares no cute_dsl_*_wrapper function")
    params = []
    for p in m.group(2).split(","):
        p = p.strip()
        mm = re.match(r"(.*?)\s*\*?\s*(\w+)$", p)
        if not mm:
            raise ConfigError(f"cannot read the wrapper parameter '{p}'")
        params.append((p[:p.rfind(mm.group(2))].strip(), mm.group(2)))
    structs = {name: body for body, name in
               re.findall(r"typedef struct \{([^}]*)\}\s*(\w+);", text)}
    return Wrapper(m.group(1), tuple(params[1:]), structs)


def harness_cpp(header: str, w: Wrapper, tensors: list[TensorArg]) -> str:
    """The C++ main for one exported kernel (``header``: the file name to include)."""
    by_name = {t.name: t for t in tensors}
    decl, args = [], []
    for ctype, name in w.params:
        base = ctype.rstrip("*").strip()
        if base in w.structs:
            t = by_name.get(name)
            fields = [f.strip() for f in w.structs[base].split(";") if f.strip()]
            if t is None or fields != ["void *data"]:
                raise ConfigError(
                    f"the exported wrapper's argument {name} ({base}: {'; '.join(fields)}) "
                    "is not a tensor of static shape; conformance runs support those only")
            i = tensors.index(t)
            decl.append(f"  {base} {name} = {{dev[{i}]}};")
            args.append(f"&{name}")
        elif ctype in ("cudaStream_t", "CUstream"):
            args.append("stream")
        else:
            raise ConfigError(f"the exported wrapper takes {ctype} {name}: conformance runs "
                              "support tensor and stream arguments only")
    sizes = ", ".join(str(t.nbytes) for t in tensors) or "0"
    names = ", ".join(f'"{t.name}"' for t in tensors) or '""'
    p = w.prefix
    return _TEMPLATE.format(
        header=header, prefix=p, n=len(tensors), sizes=sizes, names=names,
        decl="\n".join(decl), call=", ".join(["&mod"] + args),
        has_stream="true" if "stream" in args else "false")


_TEMPLATE = r'''// Generated by pipeproof (impl/cute_harness.py): runs one exported CuTe DSL kernel.
// usage: harness RUNS CAP CLUSTERS JITTER TIMEOUT_MS INDIR OUTDIR [untraced]
#include "{header}"
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

static void die(const char *what, cudaError_t e) {{
  std::printf("ERROR %s: %s\n", what, cudaGetErrorString(e));
  std::fflush(stdout);
  _exit(4);
}}
#define CK(x) do {{ cudaError_t e_ = (x); if (e_ != cudaSuccess) die(#x, e_); }} while (0)

static std::vector<char> slurp(const std::string &path, size_t n) {{
  std::vector<char> b(n, 0);
  FILE *f = std::fopen(path.c_str(), "rb");
  if (f) {{ size_t got = std::fread(b.data(), 1, n, f); (void)got; std::fclose(f); }}
  return b;
}}

static void dump(const std::string &path, const void *p, size_t n) {{
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {{ std::printf("ERROR cannot write %s\n", path.c_str()); _exit(4); }}
  std::fwrite(p, 1, n, f);
  std::fclose(f);
}}

// one record per run: magic, run, clusters, cap, status (1: hung), 3 spare words; the
// control blocks; then each cluster's events up to its ticket count
static void write_run(FILE *f, int r, unsigned long long clusters, unsigned long long cap,
                      unsigned status, const unsigned *ctrl, const char *ev) {{
  unsigned hdr[8] = {{0x52545050u, (unsigned)r, (unsigned)clusters, (unsigned)cap, status, 0, 0, 0}};
  std::fwrite(hdr, 4, 8, f);
  std::fwrite(ctrl, 4, clusters * 16, f);
  for (unsigned long long c = 0; c < clusters; c++) {{
    unsigned t = ctrl[c * 16];
    size_t nev = t < cap ? t : cap;
    std::fwrite(ev + c * cap * 16, 16, nev, f);
  }}
  std::fflush(f);
}}

int main(int argc, char **argv) {{
  if (argc < 8) {{ std::printf("usage: %s RUNS CAP CLUSTERS JITTER TIMEOUT_MS INDIR OUTDIR [untraced]\n", argv[0]); return 2; }}
  int runs = std::atoi(argv[1]);
  unsigned long long cap = std::strtoull(argv[2], 0, 10), clusters = std::strtoull(argv[3], 0, 10);
  unsigned long long jitter = std::strtoull(argv[4], 0, 10);
  double timeout_ms = std::atof(argv[5]);
  std::string dir = argv[6], out = argv[7];
  bool traced = argc < 9;
  const int n = {n};
  const size_t sizes[] = {{{sizes}}};
  const char *names[] = {{{names}}};
  {prefix}_Kernel_Module_t mod;
  {prefix}_Kernel_Module_Load(&mod);
  std::printf("LOADED\n");
  std::fflush(stdout);
  CK(cudaGetLastError());
  void *glob = nullptr;
  size_t gsz = 0;
  if (cudaLibraryGetGlobal(&glob, &gsz, mod.module, "pipeproof_trace") != cudaSuccess) {{
    cudaGetLastError();
    glob = nullptr;  // a kernel compiled without trace sites
    if (traced) {{ std::printf("ERROR the kernel has no pipeproof_trace global\n"); return 4; }}
  }}
  // the wrapper's stream argument, or (it takes none) the default stream it launches on
  cudaStream_t stream = 0;
  if ({has_stream}) CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<void *> dev(n > 0 ? n : 1, nullptr);
  std::vector<std::vector<char>> init(n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {{
    CK(cudaMalloc(&dev[i], sizes[i]));
    init[i] = slurp(dir + "/in_" + names[i] + ".bin", sizes[i]);
  }}
{decl}
  // control blocks (tickets) in device memory; events in mapped host memory, readable
  // while a launch hangs
  size_t cbytes = clusters * 64, ebytes = clusters * cap * 16;
  void *tbuf = nullptr;
  CK(cudaMalloc(&tbuf, cbytes));
  char *ev_host = nullptr;
  void *ev_dev = nullptr;
  CK(cudaHostAlloc((void **)&ev_host, ebytes, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&ev_dev, ev_host, 0));
  std::vector<char> ctrl(cbytes);
  FILE *traces = std::fopen((out + "/traces.bin").c_str(), "wb");
  if (!traces) {{ std::printf("ERROR cannot write %s/traces.bin\n", out.c_str()); return 4; }}
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int r = 0; r < runs; r++) {{
    for (int i = 0; i < n; i++) CK(cudaMemcpy(dev[i], init[i].data(), sizes[i], cudaMemcpyHostToDevice));
    CK(cudaMemset(tbuf, 0, cbytes));
    std::memset(ev_host, 0, ebytes);
    unsigned long long g[8] = {{traced ? (unsigned long long)(uintptr_t)tbuf : 0ull,
                               cap | (clusters << 32), jitter, 2654435761ull * (r + 1),
                               (unsigned long long)(uintptr_t)ev_dev, 0, 0, 0}};
    if (glob) CK(cudaMemcpy(glob, g, sizeof g, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    if (r == 0) {{ std::printf("LAUNCH 0\n"); std::fflush(stdout); }}
    CK(cudaEventRecord(e0, stream));
    int rc = cute_dsl_{prefix}_wrapper({call});
    CK(cudaEventRecord(e1, stream));
    if (rc != 0) {{ std::printf("ERROR run %d: the launcher returned %d\n", r, rc); return 4; }}
    auto t0 = std::chrono::steady_clock::now();
    cudaError_t q;
    while ((q = cudaEventQuery(e1)) == cudaErrorNotReady) {{
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ms > timeout_ms) {{
        std::printf("HANG run %d: the kernel did not finish in %.0f ms\n", r, timeout_ms);
        // the tickets are out of reach (device memory, behind the hung kernel): each
        // cluster's events are the valid records from the start of its buffer
        if (traced) {{
          std::vector<unsigned> cw(clusters * 16, 0);
          for (unsigned long long c = 0; c < clusters; c++) {{
            volatile unsigned *e = (volatile unsigned *)(ev_host + c * cap * 16);
            unsigned t = 0;
            while (t < cap && (e[4 * t] & 0x80000000u)) t++;
            cw[c * 16] = t;
          }}
          write_run(traces, r, clusters, cap, 1, cw.data(), ev_host);
        }}
        std::fflush(stdout);
        _exit(3);  // the driver destroys the context: the GPU is not left hung
      }}
    }}
    if (q != cudaSuccess) die("kernel", q);
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaMemcpy(ctrl.data(), tbuf, cbytes, cudaMemcpyDeviceToHost));
    if (traced) write_run(traces, r, clusters, cap, 0, (const unsigned *)ctrl.data(), ev_host);
    std::printf("RUN %d ok %.4f ms\n", r, ms);
    std::fflush(stdout);
  }}
  for (int i = 0; i < n; i++) {{
    std::vector<char> res(sizes[i]);
    CK(cudaMemcpy(res.data(), dev[i], sizes[i], cudaMemcpyDeviceToHost));
    dump(out + "/out_" + names[i] + ".bin", res.data(), sizes[i]);
  }}
  std::fclose(traces);
  std::printf("DONE %d runs\n", runs);
  return 0;
}}
'''


def write_inputs(job_dir: str, tensors: list[TensorArg], seed: int = 1) -> None:
    for t in tensors:
        with open(os.path.join(job_dir, f"in_{t.name}.bin"), "wb") as f:
            f.write(initial_bytes(t, seed))
