"""Conformance of the user's real CuTe DSL kernel: compile it with trace sites, run the
exported object on the GPU with jitter, judge every trace with the model lifted from
the same compile.

Three steps, which may run on different machines:

1. ``prepare`` (needs the DSL, no GPU): one ``cute.compile`` of the user's entry with
   trace sites (``impl/cute_trace.py``); the clone the lifter reads carries the same
   site numbers.  ``export_to_c`` writes the kernel object and header; this module adds
   the generated harness (``impl/cute_harness.py``), the tensors' initial contents, the
   DSL's static runtime library, the captured module text and ``job.json``, and
   ``run.sh``, which builds the harness with ``nvcc`` and runs it.
2. ``run.sh OUTDIR`` on the GPU machine (needs ``nvcc`` and a GPU, not the DSL nor
   pipeproof): one trace file per launch.
3. ``judge`` (no DSL, no GPU): lifts the saved module text again (the programs, with
   each step's trace site) and replays every cluster's trace (``impl/replay.py``, its
   ``sited`` mode): ACCEPTED, or REJECTED at the first record the model cannot take.

``conform_cute`` does all three on a machine that has everything.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Union

from ..model.errors import ConfigError
from . import events as E
from .conform import JobReport
from .cute_harness import TensorArg, harness_cpp, read_header, tensor_args, write_inputs
from .cute_trace import Instrumenter
from .replay import ACCEPTED, REJECTED, Replayer

#: events per cluster the trace buffer holds
DEFAULT_CAP = 1 << 14
PREFIX = "ppk"


@dataclass(frozen=True)
class Prepared:
    dir: str
    sites: int
    clusters: int
    tensors: tuple[TensorArg, ...]
    notes: tuple[str, ...]


def runtime_library() -> str:
    """The DSL's static runtime library that an exported object links with."""
    import cutlass

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__))))
    for dirpath, _dirs, files in os.walk(root):
        if "libcuda_dialect_runtime_static.a" in files:
            return os.path.join(dirpath, "libcuda_dialect_runtime_static.a")
    raise ConfigError("nvidia-cutlass-dsl's libcuda_dialect_runtime_static.a was not found "
                      f"under {root}: its AOT export cannot be linked")


def prepare(entry: Union[str, Callable[..., Any]], params: Optional[dict[str, Any]],
            job_dir: str, arch: str = "sm_90a", runs: int = 200, jitter: int = 0x3FF0040,
            cap: int = DEFAULT_CAP, timeout_ms: float = 10000.0) -> Prepared:
    """Compile ``entry`` (``"file.py::fn"`` or the function) with trace sites and write
    a job folder for ``run.sh``.  ``jitter`` is the word ``prob | ns_mask << 16`` (0:
    none): by default a signal is delayed with probability 1/4 by up to 1023 ns."""
    import inspect

    from ..frontend.cute import lift_text
    from ..frontend.cute.capture import prepare_environment
    from ..frontend.cute.entry import (compile_entry, effective_params, find_entry,
                                       load_module, parse_spec)

    prepare_environment(arch)
    if isinstance(entry, str):
        spec = parse_spec(entry)
        fn = find_entry(load_module(spec.path), spec)
        path, name = spec.path, spec.function
    else:
        fn = entry
        path, name = inspect.getsourcefile(fn) or "<entry>", fn.__name__
        entry = f"{path}::{name}"
    params = dict(params or {})
    shown = effective_params(fn, params)
    ins = Instrumenter(lambda cap: lift_text(cap.text, fn.__name__, shown, path,
                                             cap.dsl_version))
    cap_, compiled = compile_entry(fn, params, arch, path, instrument=ins)
    if compiled is None or not hasattr(compiled, "export_to_c"):
        raise ConfigError(f"{name}() must return what cute.compile returns, to be "
                          "exported for the GPU run",
                          hint="return cute.compile(host_fn, *fake_args)")
    if ins.error is not None:
        raise ins.error
    ck, lf = ins.lifted
    table = ins.table
    seen = {"tensors": tensor_args(ins.args, ins.sig)}
    if not any(i.site >= 0 for p in ck.programs for i in p.code):
        raise ConfigError("the instrumented kernel has no trace site the model uses")
    os.makedirs(job_dir, exist_ok=True)
    try:
        compiled.export_to_c(file_path=job_dir, file_name="kernel", function_prefix=PREFIX)
    except Exception as e:  # noqa: BLE001  (the DSL's own error, shown as it is)
        hint = ""
        if not seen.get("tensors"):
            hint = ("nvidia-cutlass-dsl 4.8.1's export_to_c fails for a host function "
                    "without run-time arguments: give the host function a tensor")
        raise ConfigError(f"export_to_c failed: {type(e).__name__}: {e}", hint=hint) from None
    tensors = seen.get("tensors", [])
    # the same kernel without trace sites, for the overhead benchmark and as the
    # reference the user ships (a compile of its own: the instrumented one changed the
    # module's cache key, so nothing is shared)
    from ..frontend.cute.entry import bind_params

    plain = fn(**bind_params(fn, params, path))
    plain.export_to_c(file_path=job_dir, file_name="plain", function_prefix=PREFIX + "u")
    for hname, cname in (("kernel.h", "harness.cpp"), ("plain.h", "harness_plain.cpp")):
        header = open(os.path.join(job_dir, hname)).read()
        with open(os.path.join(job_dir, cname), "w") as f:
            f.write(harness_cpp(hname, read_header(header), tensors))
    write_inputs(job_dir, tensors)
    shutil.copy(runtime_library(), os.path.join(job_dir, "libcuda_dialect_runtime_static.a"))
    with open(os.path.join(job_dir, "capture.mlir"), "w") as f:
        f.write(cap_.text)
    gx, gy, gz = lf.launch.grid
    cx, cy, cz = lf.launch.cluster
    clusters = max(1, (gx // max(cx, 1)) * (gy // max(cy, 1)) * (gz // max(cz, 1)))
    job = {"entry": entry, "source": path, "function": fn.__name__, "params": shown,
           "arch": arch, "dsl_version": cap_.dsl_version, "runs": runs, "cap": cap,
           "clusters": clusters, "jitter": jitter, "timeout_ms": timeout_ms,
           "tensors": [t.to_json() for t in tensors], "sites": table.ops,
           "observed_sites": table.observed,
           "grid": list(lf.launch.grid), "cluster": list(lf.launch.cluster)}
    with open(os.path.join(job_dir, "job.json"), "w") as f:
        json.dump(job, f, indent=1)
    run_sh = os.path.join(job_dir, "run.sh")
    with open(run_sh, "w") as f:
        f.write(RUN_SH.format(runs=runs, cap=cap, clusters=clusters, jitter=jitter,
                              timeout=timeout_ms))
    os.chmod(run_sh, os.stat(run_sh).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return Prepared(job_dir, len(table.ops), clusters, tuple(tensors), tuple(lf.notes))


RUN_SH = r'''#!/bin/sh
# Build and run one exported CuTe DSL kernel with trace sites (written by pipeproof).
# usage: run.sh OUTDIR [RUNS] [traced|untraced|plain]     needs nvcc and an NVIDIA GPU
#   traced: record every run (default); untraced: the same binary, recording off;
#   plain: the kernel compiled without trace sites
# KILL_S (default 120): the harness process is killed after that many seconds
set -e
here=$(cd "$(dirname "$0")" && pwd)
if [ "$1" = --build ]; then out=$here; else out=${{1:-$here/results}}; fi
runs=${{2:-{runs}}}
mode=${{3:-traced}}
mkdir -p "$out"
for h in harness harness_plain; do
  obj=kernel.o; [ $h = harness_plain ] && obj=plain.o
  if [ ! -x "$here/$h" ]; then
    nvcc -O2 -std=c++17 -o "$here/$h" "$here/$h.cpp" "$here/$obj" \
      "$here/libcuda_dialect_runtime_static.a" > "$out/build.log" 2>&1 \
      || {{ cat "$out/build.log"; echo "BUILD FAILED"; exit 5; }}
  fi
done
[ "$1" = --build ] && exit 0
bin=harness; extra=""
[ "$mode" = untraced ] && extra=untraced
[ "$mode" = plain ] && {{ bin=harness_plain; extra=untraced; }}
cd "$here"
set +e
timeout -s KILL "${{KILL_S:-120}}" "$here/$bin" "$runs" {cap} {clusters} {jitter} {timeout} \
  "$here" "$out" $extra > "$out/harness_$mode.log" 2>&1
rc=$?
[ $rc = 137 ] && echo "KILLED after ${{KILL_S:-120}} s (process watchdog)" >> "$out/harness_$mode.log"
echo "rc $rc" >> "$out/harness_$mode.log"
tail -2 "$out/harness_$mode.log"
exit $rc
'''


# --------------------------------------------------------------------------- judge


TRACE_MAGIC = 0x52545050


def read_traces(path: str) -> Iterator[tuple[int, bool, list[tuple[int, int, int, list]]]]:
    """(run, hung, [(cluster, tickets, overflow, events) of each cluster that recorded])
    for every run in a harness's ``traces.bin``; a hung run holds the records the
    harness read while the launch hung."""
    import array

    words = array.array("I")
    with open(path, "rb") as f:
        words.frombytes(f.read())
    i = 0
    cw = E.CTRL_WORDS
    while i + 8 <= len(words):
        magic, run, clusters, cap, status = words[i:i + 5]
        if magic != TRACE_MAGIC:
            raise ConfigError(f"{path}: not a pipeproof trace file (bad record at word {i})")
        i += 8
        ctrl = words[i:i + clusters * cw]
        i += clusters * cw
        out = []
        for c in range(clusters):
            tickets = int(ctrl[c * cw + E.C_TICKET])
            n = min(tickets, cap)
            if n:
                evs = E.decode_events(words[i:i + 4 * n], n)
                out.append((c, tickets, int(ctrl[c * cw + E.C_OVERFLOW]), evs))
            i += 4 * n
        yield int(run), bool(status & 1), out


#: clusters of a launch whose traces are judged (each is lifted on its own)
MAX_CLUSTERS_JUDGED = 16


def judge(job_dir: str, results_dir: str, max_traces: Optional[int] = None,
          max_clusters: int = MAX_CLUSTERS_JUDGED) -> JobReport:
    """Replay every cluster's trace of every run in ``results_dir``, each through the
    model of that cluster (lifted with its ``%clusterid`` and ``%ctaid``: a persistent
    scheduler gives clusters different work); clusters from ``max_clusters`` on are
    left out, with a note."""
    from ..frontend.cute import lift_text

    job = json.load(open(os.path.join(job_dir, "job.json")))
    text = open(os.path.join(job_dir, "capture.mlir")).read()
    replayers: dict[int, Replayer] = {}

    def replayer(c: int) -> Replayer:
        if c not in replayers:
            ck, _lf = lift_text(text, job["function"], job["params"], job["source"],
                                job["dsl_version"], cluster_index=c)
            replayers[c] = Replayer(ck, pending_rule="ignore", sited=True)
        return replayers[c]

    skipped: set[int] = set()
    rep = JobReport(os.path.basename(os.path.normpath(job_dir)), job["entry"], "",
                    job["params"], "missing")
    log = os.path.join(results_dir, "harness_traced.log")
    if os.path.exists(log):
        lines = open(log).read().splitlines()
        rc = next((ln.split()[1] for ln in reversed(lines) if ln.startswith("rc ")), "?")
        hang = [ln for ln in lines if ln.startswith(("HANG", "ERROR"))]
        rep.runner_status = "ok" if rc == "0" else (hang[0] if hang else f"exit {rc}")
    dropped = merged = 0
    observed = frozenset(job.get("observed_sites", ()))
    path = os.path.join(results_dir, "traces.bin")
    runs = read_traces(path) if os.path.exists(path) else iter(())
    for run, hung, clusters in runs:
        rep.launches += 1
        for c, _tickets, overflow, evs in clusters:
            if max_traces is not None and rep.traces >= max_traces:
                break
            if c >= max_clusters:
                skipped.add(c)
                continue
            R = replayer(c)
            kept, merged_here = sited_events(evs, R.sites_of, R.agent_of, observed)
            merged += merged_here
            dropped += len(evs) - len(kept) - merged_here
            res = R.judge(kept, overflow=overflow, hung=hung)
            rep.traces += 1
            rep.counts[res.status] += 1
            rep.inferred += res.inferred
            rep.reordered += res.reordered
            if overflow:
                rep.overflow += 1
            if res.violation:
                rep.props[res.violation[0]] += 1
            if res.possible:
                rep.possible[res.possible[0]] += 1
            if res.status != ACCEPTED and len(rep.examples) < 3:
                txt = f"run {run} cluster {c}: {res.headline()}"
                if res.status == REJECTED:
                    txt += "\n" + res.state_text
                rep.examples.append(txt)
    if dropped:
        rep.notes.append(f"{dropped} records of ops that made no step in their warp "
                         "dropped (an op the lifter found inactive there)")
    if merged:
        rep.notes.append(f"{merged} records of lanes that diverged merged into their "
                         "warp's record")
    if skipped:
        rep.notes.append(f"the traces of {len(skipped)} clusters (from cluster {max_clusters} "
                         "on) were not judged")
    return rep


def sited_events(evs: list, known: list, agent_of: dict, observed: frozenset
                 ) -> tuple[list, int]:
    """The records of one cluster as the replay takes them: ``obs0`` the try_wait
    result (flag ``F_RESULT``) where the site records one; a record of a site for which
    the warp has no step dropped; a record of the same site by lanes disjoint from the
    previous record's of that warp (the warp diverged and met the op twice) merged into
    it.  Returns (events, records merged)."""
    out = []
    last: dict[tuple[int, int], tuple[int, int]] = {}
    merged = 0
    for e in evs:
        a = agent_of.get((e.cta, e.warp))
        mask = e.obs1 & 0xFFFFFFFF
        if a is not None and e.pc not in known[a]:
            continue
        key = (e.cta, e.warp)
        prev = last.get(key)
        if prev is not None and prev[0] == e.pc and not prev[1] & mask:
            last[key] = (e.pc, prev[1] | mask)
            merged += 1
            continue
        last[key] = (e.pc, mask)
        flags = E.F_RESULT if e.pc in observed else 0
        out.append(E.GpuEvent(e.ticket, e.kind, e.cta, e.warp, e.pc,
                              e.obs0 if flags else 0, flags))
    return out, merged


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None


def run_local(job_dir: str, out: str, runs: Optional[int] = None) -> int:
    cmd = [os.path.join(job_dir, "run.sh"), out] + ([str(runs)] if runs else [])
    return subprocess.run(cmd, check=False).returncode
