"""Fuzz harness for the ``.pipe`` front end and the engines (issue 23 item 2).

Inputs come from two sources, both deterministic given ``--seed``:

* **grammar-aware generation** (``generate``): random kernels built from the
  productions of ``spec/pipe.lark`` -- imports, decorators, ``launch``, pipeline
  ``create`` calls with keyword arguments from CUTLASS's vocabulary, roles, ``for`` /
  ``if`` / ``while`` / ``with`` blocks, method calls, and expressions of every operator
  level (ifexp, or/and/not, comparisons, ``| ^ & << >> + - * // % / **``, unary, calls,
  subscripts, attributes, tuples, lists);
* **mutation of the bundled examples** (``mutate``): a line deleted, duplicated or
  re-indented; a token deleted, duplicated, swapped or replaced by another name of the
  vocabulary; a number set to a boundary value (0, -1, 2**31, 2**64, ``10**10**10``,
  ``True``...); deep nesting (1000 brackets, a sum of 1000 terms, 300 nested blocks);
  unicode and raw bytes (a BOM, a NUL, a zero-width space, invalid UTF-8); the file cut
  short.

Each input runs through ``pipeproof check`` (sometimes ``emit``) in a *worker process*
under a memory cap (``RLIMIT_AS``), with ``--timeout T`` and bounded states/depth.  The
parent classifies every outcome:

* ``ok``: exit 0/1/2/3 with a message (exit 2: ``error`` on stderr);
* ``traceback``: an exception escaped ``main()`` or "Traceback" was printed;
* ``bad-exit``: an exit code other than 0-3, or exit 2/3 without a message;
* ``hang``: no answer within ``T + SLACK`` seconds (the worker is killed);
* ``crash``: the worker died (a signal: out of memory past the cap, a segfault);
* ``disagreement``: on an input that compiles, ``--engine explicit`` and
  ``--engine bmc`` contradict each other (PROVEN against VIOLATED, or a shortest
  counterexample that BMC's bounded search misses).

Usage::

    python bench/fuzz_pipe.py --inputs 200 --seed 0          # what CI runs (tests/)
    python bench/fuzz_pipe.py --minutes 30 --seed 1 --out bench/results/fuzz.json
    python bench/fuzz_pipe.py --atheris --minutes 15 --out bench/results/fuzz_atheris.json

Failing inputs are written to ``--crashes DIR`` (default ``bench/results/fuzz-crashes``)
so that each becomes a regression test.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
#: seconds past --timeout before an answer counts as a hang (a loaded 2-core machine
#: needs a few seconds to start a check; the worker is already running)
SLACK = 10.0
MEM_MB = 3072
TIMEOUT = 5.0
#: the search is bounded by states and depth; --timeout is the guard the harness checks
BOUND = ["--max-states", "2000", "--jobs", "1", "-q"]
BMC_DEPTH = 10

# --------------------------------------------------------------------------- vocabulary

CLASSES = ["PipelineAsync", "PipelineCpAsync", "PipelineTmaAsync", "PipelineTmaUmma",
           "PipelineAsyncUmma", "PipelineUmmaAsync", "PipelineClcFetchAsync",
           "PipelineTmaMultiConsumersAsync", "PipelineTmaStore", "PipelineOrder",
           "NamedBarrier", "TmaStoreFence", "TmemAllocator"]
METHODS = ["producer_acquire", "producer_commit", "consumer_wait", "consumer_release",
           "producer_tail", "producer_try_acquire", "consumer_try_wait", "advance",
           "arrive", "wait", "arrive_and_wait", "sync", "make_participants",
           "acquire_and_advance", "wait_and_advance", "commit", "release", "tail",
           "allocate", "free", "relinquish_alloc_permit", "get_barrier"]
FUNCS = ["launch", "role", "make_pipeline_state", "CooperativeGroup", "write", "read",
         "tma_load", "tma_store", "tcgen05_mma", "fence_proxy_async", "elect_one",
         "warp_idx", "pipeline_init_arrive", "pipeline_init_wait", "cute.make_layout",
         "cluster_arrive", "cluster_wait", "cute.size", "range", "cutlass.range",
         "cutlass.range_constexpr", "len", "min", "max"]
KWARGS = ["num_stages", "producer_group", "consumer_group", "tx_count", "cta_layout_vmnk",
          "defer_sync", "warps", "block", "cluster", "barrier_id", "num_threads", "depth",
          "length", "group_id", "mcast_mode_mn", "is_leader_cta", "cta_group",
          "elect_one_commit", "elect_one_release", "extra_tx_count", "bogus", "stride"]
NAMES = ["pipe", "state", "stages", "k_tiles", "tiles", "k", "t", "i", "handle", "x",
         "Agent.Thread", "PipelineUserType.Producer", "PipelineUserType.Consumer",
         "cute", "cutlass", "True", "False", "None"] + CLASSES + METHODS
BOUNDARY = ["0", "1", "-1", "2", "3", "31", "32", "33", "127", "128", "255", "256",
            "1023", "1024", "4096", "65535", "65536", "2**20", "2**31", "2**31 - 1",
            "2**32", "2**63", "2**64", "-2**63", "10**10", "10**10**10", "2**2**10",
            "0x7fffffff", "0b1", "1_000_000", "True", "False", "None", "(1, 2)", "[]",
            '"x"', "k_tiles * 1000"]
UNICODE = ["\ufeff", "\x00", "\u200b", "\u00e9", "\U0001f600", "\r", "\t", "\x0c",
           "\u2028", "\\", "\"", "'", "#", ":", "\x1b[31m"]
BYTES = [b"\xff", b"\xfe\xff", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\x00\x00"]

TOKEN = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F_]+|\d[\d_]*|\"[^\"\n]*\"|\*\*|//|<<|>>|"
                   r"[<>=!]=|[-+*/%&|^~<>=()\[\],.:@]")
NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?![\w.])")


def small_examples() -> list[Path]:
    """The examples that check in a second (the kernel skeletons take longer)."""
    return sorted(p for d in ("textbook", "bugs", "liveness")
                  for p in (EX / d).glob("*.pipe"))


def atheris_seeds() -> list[Path]:
    """libFuzzer's seed corpus: the textbook examples (every pipeline class).  Each seed
    costs a full explicit + BMC check before fuzzing starts (about 6 s under
    instrumentation on the loaded 2-core machine), so the bug/fix pairs and the liveness
    examples are left to the worker mode."""
    return sorted((EX / "textbook").glob("*.pipe"))


# --------------------------------------------------------------------------- generation


class Gen:
    """Grammar-aware generator of ``.pipe`` kernels (spec/pipe.lark)."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def name(self) -> str:
        return self.r.choice(NAMES)

    def atom(self, d: int) -> str:
        r = self.r
        k = r.randrange(10)
        if k < 3:
            return r.choice(BOUNDARY[:16]) if r.random() < 0.8 else r.choice(BOUNDARY)
        if k < 6:
            return self.name()
        if k == 6:
            return '"' + r.choice(["producer", "consumer", "dma", "mma", "x"]) + '"'
        if k == 7:
            items = [self.expr(d + 1) for _ in range(r.randrange(4))]
            comma = "," if len(items) == 1 or (items and r.random() < 0.3) else ""
            return "(" + ", ".join(items) + comma + ")"
        if k == 8:
            return "[" + ", ".join(self.expr(d + 1) for _ in range(r.randrange(4))) + "]"
        return "(" + self.expr(d + 1) + ")"

    def call(self, d: int) -> str:
        r = self.r
        f = r.choice([r.choice(FUNCS), self.name() + "." + r.choice(METHODS),
                      r.choice(CLASSES) + ".create"])
        args = [self.expr(d + 1) for _ in range(r.randrange(3))]
        args += [f"{r.choice(KWARGS)}={self.expr(d + 1)}" for _ in range(r.randrange(4))]
        return f"{f}({', '.join(args)})"

    def sub(self, d: int) -> str:
        """An operand: bracketed where it is itself an operation (``a if b if c`` is
        no more .pipe than it is Python)."""
        e = self.expr(d + 1)
        return f"({e})" if " " in e else e

    def expr(self, d: int = 0) -> str:
        r = self.r
        if d > 4:
            return self.atom(d)
        k = r.randrange(12)
        if k < 4:
            return self.atom(d)
        if k < 6:
            return self.call(d)
        if k == 6:
            op = r.choice(["+", "-", "*", "//", "%", "/", "**", "<<", ">>", "|", "^", "&",
                           "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"])
            return f"{self.sub(d)} {op} {self.sub(d)}"
        if k == 7:
            return r.choice(["-", "+", "~", "not "]) + self.atom(d + 1)
        if k == 8:
            return f"{self.sub(d)} if {self.sub(d)} else {self.sub(d)}"
        if k == 9:
            return f"{self.atom(d + 1)}[{self.expr(d + 1)}]"
        if k == 10:
            return f"{self.atom(d + 1)}.{r.choice(METHODS + ['index', 'phase', 'count'])}"
        return f"cute.size({self.expr(d + 1)})"

    def stmt(self, ind: int, d: int) -> list[str]:
        r = self.r
        pad = "    " * ind
        k = r.randrange(14 if d < 3 else 8)
        if k < 3:
            return [pad + self.call(d)]
        if k < 5:
            return [pad + f"{r.choice(['x', 'state', 'handle', 'k', 'pipe'])} = "
                    f"{self.expr(d)}"]
        if k == 5:
            return [pad + r.choice(["pass", "break", "continue", "return",
                                    "state.advance()", "x += 1"])]
        if k == 6:
            return [pad + f"{self.name()}.{r.choice(METHODS)}(state)"]
        if k == 7:
            return [pad + f"{r.choice(['x', 'k', 'state', 'n'])} "
                    f"{r.choice(['+=', '-=', '//=', '<<=', '|='])} "
                    f"{self.expr(d)}"]
        head = r.choice([
            lambda: f"for {r.choice(['k', 't', 'i'])} in "
                    f"{r.choice(['range', 'cutlass.range', 'cutlass.range_constexpr'])}"
                    f"({self.expr(d + 2)}):",
            lambda: f"if {self.expr(d + 2)}:",
            lambda: f"while {self.expr(d + 2)}:",
            lambda: "with elect_one():",
            lambda: f"with role(\"r\", warps={self.atom(3)}):",
            lambda: f"with {self.call(d + 2)}:",
        ])()
        out = [pad + head]
        for _ in range(r.randrange(1, 4)):
            out += self.stmt(ind + 1, d + 1)
        if head.startswith("if") and r.random() < 0.3:
            out += [pad + "else:"] + self.stmt(ind + 1, d + 1)
        return out

    def kernel(self) -> str:
        r = self.r
        lines = []
        if r.random() < 0.3:
            lines.append(r.choice(["import cutlass", "import cutlass.cute as cute",
                                   "from cutlass.pipeline import *",
                                   "from cutlass.pipeline import PipelineAsync as P"]))
        params = ", ".join(f"{n}: int = {r.choice(BOUNDARY[:12])}"
                           for n in r.sample(["stages", "k_tiles", "tiles", "n"],
                                             r.randrange(4)))
        lines += [r.choice(["@cute.kernel", "@cute.jit", "@kernel"]), f"def k({params}):"]
        lines.append(f"    launch(block={r.choice(['32', '64', '128', '384', '0', '-32'])}"
                     f"{', cluster=' + self.atom(2) if r.random() < 0.5 else ''})")
        for _ in range(r.randrange(0, 3)):
            cls = r.choice(CLASSES)
            kws = [f"{kw}={self.expr(2)}" for kw in r.sample(KWARGS, r.randrange(5))]
            kws.insert(0, f"num_stages={r.choice(['stages', '1', '2', '4'])}")
            lines.append(f"    {r.choice(['pipe', 'store', 'order'])} = "
                         f"{cls}.create({', '.join(kws)})")
        for w in range(r.randrange(1, 4)):
            lines.append(f'    with role("r{w}", warps=[{w}]):')
            lines.append("        state = make_pipeline_state(PipelineUserType."
                         f"{r.choice(['Producer', 'Consumer'])}, {r.choice(['stages', '2'])})")
            for _ in range(r.randrange(1, 5)):
                lines += self.stmt(2, 0)
        return "\n".join(lines) + "\n"


def generate(rng: random.Random) -> bytes:
    return Gen(rng).kernel().encode()


# --------------------------------------------------------------------------- mutation


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def mutate_text(text: str, rng: random.Random) -> str:
    """One grammar-aware mutation of ``text`` (see the module docstring)."""
    r = rng
    if not text:
        return text
    lines = _lines(text)
    toks = list(TOKEN.finditer(text))
    kind = r.choice(["del-line", "dup-line", "indent", "del-tok", "dup-tok", "swap-tok",
                     "name", "number", "number", "nest", "sum", "blocks", "unicode",
                     "truncate"])
    if kind == "del-line":
        del lines[r.randrange(len(lines))]
        return "".join(lines)
    if kind == "dup-line":
        k = r.randrange(len(lines))
        lines.insert(k, lines[k])
        return "".join(lines)
    if kind == "indent":
        k = r.randrange(len(lines))
        lines[k] = r.choice([" ", "  ", "\t", "    " * 3]) + lines[k] if r.random() < 0.6 \
            else lines[k].lstrip(" ")
        return "".join(lines)
    if kind == "truncate":
        return text[: r.randrange(len(text) + 1)]
    if kind == "unicode":
        k = r.randrange(len(text) + 1)
        return text[:k] + r.choice(UNICODE) + text[k:]
    if not toks:
        return text
    a = toks[r.randrange(len(toks))]
    if kind == "del-tok":
        return text[:a.start()] + text[a.end():]
    if kind == "dup-tok":
        return text[:a.end()] + " " + a.group() + text[a.end():]
    if kind == "swap-tok":
        b = toks[r.randrange(len(toks))]
        a, b = sorted((a, b), key=lambda m: m.start())
        if a.start() == b.start():
            return text
        return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group()
                + text[b.end():])
    if kind == "name":
        return text[:a.start()] + r.choice(NAMES + KWARGS + FUNCS) + text[a.end():]
    nums = list(NUMBER.finditer(text))
    if not nums:
        return text
    m = nums[r.randrange(len(nums))]
    if kind == "number":
        new = r.choice(BOUNDARY)
    elif kind == "nest":
        n = r.choice([10, 100, 300, 1000])
        new = "(" * n + m.group() + ")" * n
    elif kind == "sum":
        n = r.choice([10, 100, 1000])
        new = " + ".join([m.group()] + ["0"] * n)
    else:  # blocks: the number's line inside many nested ifs
        n = r.choice([20, 100, 300])
        k = text.count("\n", 0, m.start())
        line = lines[k]
        ind = len(line) - len(line.lstrip())
        nest = "".join(" " * (ind + 4 * j) + "if True:\n" for j in range(n))
        lines[k] = nest + " " * (4 * n) + line
        return "".join(lines)
    return text[:m.start()] + new + text[m.end():]


def mutate(rng: random.Random, sources: list[bytes]) -> bytes:
    data = rng.choice(sources)
    text = data.decode()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text = mutate_text(text, rng)
    out = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:  # raw bytes: not UTF-8
        k = rng.randrange(len(out) + 1)
        out = out[:k] + rng.choice(BYTES) + out[k:]
    return out


def case(rng: random.Random, sources: list[bytes]) -> tuple[str, bytes, list[str]]:
    """(origin, input bytes, extra arguments) of one fuzz case."""
    if rng.random() < 0.35:
        origin, data = "generated", generate(rng)
    else:
        origin, data = "mutated", mutate(rng, sources)
    extra: list[str] = []
    if rng.random() < 0.15:
        p = rng.choice(["stages", "k_tiles", "tiles", "n", "bogus"])
        extra += ["--param", f"{p}={rng.choice(['0', '1', '3', '-1', '2**20', 'x', '1..4', '1,2'])}"]
    return origin, data, extra


# --------------------------------------------------------------------------- worker


def set_memory_cap(mem_mb: int) -> None:
    """Cap this process's address space (``RLIMIT_AS``): a run that allocates past it
    gets a ``MemoryError`` inside ``main()``, which must report it (exit 3)."""
    import resource

    cap = mem_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_main(main: Any, f: Path, data: bytes, argv: list[str]) -> dict[str, Any]:
    """Run ``main(argv)`` in this process on ``data`` written to ``f`` (``{file}`` in
    ``argv``): exit code, the tails of its output, and the traceback of anything that
    escaped ``main()``."""
    f.write_bytes(data)
    argv = [a.replace("{file}", str(f)) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    tb = None
    rc: Any = None
    t0 = time.perf_counter()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = main(argv)
    except BaseException:  # noqa: BLE001 - the point: nothing may escape main()
        tb = traceback.format_exc()
    return {"rc": rc, "out": out.getvalue()[-4000:], "err": err.getvalue()[-4000:],
            "tb": tb, "seconds": time.perf_counter() - t0}


def worker(mem_mb: int) -> None:
    """Run requests from stdin in this process under an address-space cap: one JSON
    line in (``data`` base64, ``argv`` with ``{file}``), one JSON line out."""
    set_memory_cap(mem_mb)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    from pipeproof.cli import main

    tmp = Path(tempfile.mkdtemp(prefix="pipeproof-fuzz-"))
    out_stream = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        resp = run_main(main, tmp / "k.pipe", base64.b64decode(req["data"]), req["argv"])
        out_stream.write(json.dumps(resp) + "\n")
        out_stream.flush()


class Worker:
    def __init__(self, mem_mb: int):
        self.mem_mb = mem_mb
        self.p: Optional[subprocess.Popen] = None

    def start(self) -> None:
        self.p = subprocess.Popen([sys.executable, __file__, "--worker",
                                   "--mem-mb", str(self.mem_mb)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)

    def stop(self) -> None:
        if self.p is not None:
            self.p.kill()
            self.p.wait()
            self.p = None

    def run(self, data: bytes, argv: list[str], limit: float) -> dict[str, Any]:
        """The worker's answer, or ``{"hang": True}`` / ``{"died": code}``."""
        if self.p is None or self.p.poll() is not None:
            self.start()
        assert self.p is not None and self.p.stdin and self.p.stdout
        req = json.dumps({"data": base64.b64encode(data).decode(), "argv": argv})
        t0 = time.perf_counter()
        try:
            self.p.stdin.write(req + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            code = self.p.wait()
            self.p = None
            return {"died": code, "seconds": 0.0}
        ready, _, _ = select.select([self.p.stdout], [], [], limit)
        if not ready:
            self.stop()
            return {"hang": True, "seconds": time.perf_counter() - t0}
        line = self.p.stdout.readline()
        if not line:
            code = self.p.wait()
            self.p = None
            return {"died": code, "seconds": time.perf_counter() - t0}
        return json.loads(line)


# --------------------------------------------------------------------------- classification

REPR = re.compile(r"<function |<class |<bound method | at 0x[0-9a-f]+|Builtin\(")


def classify(resp: dict[str, Any], limit: Optional[float] = None) -> Optional[str]:
    """None when the outcome is acceptable, else the kind of failure (``limit``: the
    seconds past which an answer counts as a hang, for runs that were not killed)."""
    if resp.get("hang"):
        return "hang"
    if limit is not None and resp.get("seconds", 0.0) > limit:
        return "hang"
    if "died" in resp:
        return "crash"
    text = resp["out"] + resp["err"]
    if resp["tb"] is not None or "Traceback" in text:
        return "traceback"
    rc = resp["rc"]
    if rc not in (0, 1, 2, 3):
        return "bad-exit"
    if rc == 2 and "error" not in resp["err"] and '"error"' not in resp["out"]:
        return "bad-exit"
    if rc == 3 and "UNKNOWN" not in text and "out of memory" not in text:
        return "bad-exit"
    if REPR.search(text):
        return "python-repr"
    return None


def _verdict(resp: dict[str, Any]) -> Optional[dict[str, Any]]:
    if resp.get("rc") not in (0, 1, 3) or resp.get("tb"):
        return None
    try:
        return json.loads(resp["out"])
    except ValueError:
        return None


def disagreement(e: dict[str, Any], b: dict[str, Any]) -> Optional[str]:
    """A contradiction between the explicit engine's JSON verdict ``e`` and BMC's ``b``
    (both bounded; UNKNOWN contradicts nothing; starvation is compared only as a
    verdict, having no shortest length)."""
    es, bs = e.get("status"), b.get("status")
    ep, bp = e.get("property"), b.get("property")
    if "UNKNOWN" in (es, bs):
        return None
    if es == "PROVEN" and bs == "VIOLATED":
        return f"explicit PROVEN, bmc VIOLATED {bp}"
    if bs == "PROVEN" and es == "VIOLATED":
        return f"bmc PROVEN, explicit VIOLATED {ep}"
    if es == "VIOLATED" and ep != "starvation" and bs == "SAFE":
        shortest = e.get("stats", {}).get("shortest", True)
        if shortest and e.get("depth", 10**9) <= b.get("depth", 0):
            return (f"explicit VIOLATED {ep} in {e.get('depth')} steps, bmc SAFE to "
                    f"depth {b.get('depth')}")
    return None


@dataclass
class Tally:
    inputs: int = 0
    runs: int = 0
    differential: int = 0
    by_origin: dict[str, int] = field(default_factory=dict)
    by_exit: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    max_seconds: float = 0.0


def judge(run: Any, cmd: str, extra: list[str], timeout: float, differential: bool,
          t: Tally, origin: str, data: bytes, crashes: Optional[Path], tag: str,
          log: Any = None) -> Optional[str]:
    """Run one input through ``cmd`` (``check``: the explicit engine, then BMC where
    that gives a verdict; or ``emit``) with ``run(argv) -> response``, classify the
    outcome, count it in ``t`` and save a failure under ``crashes``; the failure's kind
    or None.  Both modes (worker process, libFuzzer in process) judge through this."""
    if cmd == "emit":
        argv = ["emit", "{file}", *extra]
    else:
        argv = ["check", "{file}", "--engine", "explicit", "--timeout", str(timeout),
                "--json", *BOUND, *extra]
    resp = run(argv)
    t.runs += 1
    t.max_seconds = max(t.max_seconds, resp.get("seconds", 0.0))
    bad = classify(resp, timeout + SLACK)
    key = str(resp.get("rc", "hang" if resp.get("hang") else "died"))
    t.by_exit[key] = t.by_exit.get(key, 0) + 1
    if bad is None and differential and cmd == "check":
        e = _verdict(resp)
        if e is not None and e.get("status") in ("PROVEN", "VIOLATED", "SAFE"):
            argv_b = ["check", "{file}", "--engine", "bmc", "--depth", str(BMC_DEPTH),
                      "--timeout", str(timeout), "--json", *BOUND, *extra]
            rb = run(argv_b)
            t.runs += 1
            t.differential += 1
            t.max_seconds = max(t.max_seconds, rb.get("seconds", 0.0))
            bad = classify(rb, timeout + SLACK)
            if bad is None:
                b = _verdict(rb)
                why = disagreement(e, b) if b is not None else None
                if why is not None:
                    bad, resp = "disagreement", dict(rb, why=why)
            else:
                resp, argv = rb, argv_b
    if bad is not None:
        rec = {"kind": bad, "origin": origin, "argv": argv, "input": t.inputs,
               "why": resp.get("why", ""), "tb": (resp.get("tb") or "")[-1500:],
               "out": (resp.get("out", "") + resp.get("err", ""))[-1500:]}
        t.failures.append(rec)
        if crashes is not None:
            crashes.mkdir(parents=True, exist_ok=True)
            stem = f"{bad}-{tag}"
            (crashes / f"{stem}.pipe").write_bytes(data)
            (crashes / f"{stem}.json").write_text(json.dumps(rec, indent=2))
        if log is not None:
            print(f"[{t.inputs}] {bad} ({origin}) {rec['why']}"
                  f"{rec['tb'][-300:] or rec['out'][-300:]}", file=log, flush=True)
    return bad


def fuzz(n_inputs: Optional[int], minutes: Optional[float], seed: int,
         timeout: float = TIMEOUT, mem_mb: int = MEM_MB,
         crashes: Optional[Path] = None, differential: bool = True,
         log: Any = None) -> Tally:
    """Run the harness for ``n_inputs`` inputs or ``minutes`` (whichever ends first);
    a failing input is saved under ``crashes``."""
    rng = random.Random(seed)
    sources = [p.read_bytes() for p in small_examples()]
    w = Worker(mem_mb)
    t = Tally()
    end = None if minutes is None else time.monotonic() + 60 * minutes
    limit = timeout + SLACK
    try:
        while (n_inputs is None or t.inputs < n_inputs) and \
                (end is None or time.monotonic() < end):
            origin, data, extra = case(rng, sources)
            t.inputs += 1
            t.by_origin[origin] = t.by_origin.get(origin, 0) + 1
            cmd = "emit" if rng.random() < 0.1 else "check"
            judge(lambda argv: w.run(data, argv, limit), cmd, extra, timeout, differential,
                  t, origin, data, crashes, f"{seed}-{t.inputs}", log)
            if log is not None and t.inputs % 100 == 0:
                print(f"{t.inputs} inputs, {t.differential} differential, "
                      f"{len(t.failures)} failures", file=log, flush=True)
    finally:
        w.stop()
    return t


# --------------------------------------------------------------------------- atheris


#: libFuzzer's own hang limit for one input (explicit + BMC + maybe emit, each bounded by
#: --timeout): past it libFuzzer writes a ``timeout-`` artifact and stops
def _hard_limit(timeout: float) -> int:
    return int(3 * timeout + SLACK)


def _dictionary() -> str:
    """A libFuzzer dictionary of the vocabulary (its byte mutations insert these)."""
    words = sorted(set(CLASSES + METHODS + KWARGS + BOUNDARY + ["with role(", "for ", " in ",
                                                               "range(", ":\n", "    ",
                                                               ".create(", "launch("]
                       + [f.split(".")[-1] for f in FUNCS]))
    def quote(w: str) -> str:  # libFuzzer's format: printable ASCII, else \xNN
        return "".join(chr(b) if 32 <= b < 127 and chr(b) not in '\\"' else f"\\x{b:02x}"
                       for b in w.encode())

    return "".join(f'"{quote(w_)}"\n' for w_ in words)


def atheris_child(args: argparse.Namespace, libfuzzer: list[str]) -> int:
    """The libFuzzer process: coverage-guided mutation of ``.pipe`` bytes (libFuzzer's
    byte mutations with the vocabulary as dictionary, and half the time one of
    ``mutate_text``'s grammar-aware mutations), each input judged in process exactly as
    the worker mode judges it (``judge``).  The tally goes to ``args.tally`` after every
    input, since libFuzzer ends the process itself."""
    try:
        import atheris  # type: ignore[import-not-found]
    except ImportError as e:
        print(f"fuzz_pipe: atheris does not import ({e}); pip install '.[fuzz]'",
              file=sys.stderr)
        return 2
    import importlib
    import pkgutil
    import zlib

    set_memory_cap(args.mem_mb)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    # instrument pipeproof only (lark, z3 and the standard library are not under test);
    # the engines are imported lazily by the CLI, so import every module here
    with atheris.instrument_imports(include=["pipeproof"]):
        from pipeproof.cli import main
        import pipeproof.checker
        import pipeproof.model

        for pkg in (pipeproof.model, pipeproof.checker):
            for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
                try:
                    importlib.import_module(m.name)
                except Exception:  # noqa: BLE001 - an optional module (cffi...) is absent
                    pass
    tmp = Path(tempfile.mkdtemp(prefix="pipeproof-atheris-"))
    f = tmp / "k.pipe"
    corpus = tmp / "corpus"
    corpus.mkdir()
    for p in atheris_seeds():
        (corpus / p.name).write_bytes(p.read_bytes())
    (tmp / "pipe.dict").write_text(_dictionary())
    crashes: Path = args.crashes
    crashes.mkdir(parents=True, exist_ok=True)
    t = Tally()
    mutations = {"grammar": 0, "bytes": 0}

    def save() -> None:
        tally = {"inputs": t.inputs, "runs": t.runs, "differential": t.differential,
                 "by_exit": t.by_exit, "max_seconds": round(t.max_seconds, 2),
                 "mutations": mutations, "failures": t.failures}
        args.tally.write_text(json.dumps(tally, indent=2) + "\n")

    def one(data: bytes) -> None:
        t.inputs += 1
        tag = f"atheris-{args.seed}-{t.inputs}"

        def run(argv: list[str]) -> dict[str, Any]:
            return run_main(main, f, data, argv)

        judge(run, "check", [], args.timeout, True, t, "libfuzzer", data, crashes, tag,
              sys.stderr)
        if zlib.crc32(data) % 10 == 0:  # one input in ten is emitted too, as in the worker
            judge(run, "emit", [], args.timeout, False, t, "libfuzzer", data, crashes,
                  tag + "-emit", sys.stderr)
        save()

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        r = random.Random(seed)
        if r.random() < 0.5:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text:
                mutations["grammar"] += 1
                return mutate_text(text, r).encode("utf-8", "surrogatepass")[:max_size]
        mutations["bytes"] += 1
        return atheris.Mutate(data, max_size)

    save()
    # libFuzzer keeps a SIGINT handler it finds installed (Python's, which would raise
    # KeyboardInterrupt inside a check): the default lets libFuzzer install its own, so
    # that the parent's SIGINT at the time limit ends the run with libFuzzer's statistics
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # libFuzzer takes -seed=0 as "random": seed + 1 keeps a run reproducible
    atheris.Setup([sys.argv[0], f"-seed={args.seed + 1}", f"-rss_limit_mb={args.mem_mb}",
                   f"-timeout={_hard_limit(args.timeout)}", "-max_len=65536",
                   f"-dict={tmp / 'pipe.dict'}", f"-artifact_prefix={crashes}/atheris-",
                   "-print_final_stats=1", *libfuzzer, str(corpus)],
                  one, custom_mutator=mutator)
    atheris.Fuzz()
    return 0


LIBFUZZER_STAT = re.compile(r"^#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)\s+cov: (\d+) ft: (\d+)"
                            r"(?: corp: (\d+)/)?", re.M)


def run_atheris(minutes: float, seed: int, timeout: float, mem_mb: int, crashes: Path,
                out: Optional[Path], libfuzzer: list[str]) -> int:
    """libFuzzer mode: run ``atheris_child`` for ``minutes`` in a child process (libFuzzer
    ends its process on a hang or at the end), then read its tally and artifacts.
    Exit 2 when atheris is not installed."""
    import importlib.util

    if importlib.util.find_spec("atheris") is None:
        print("fuzz_pipe: atheris is not installed: pip install '.[fuzz]' (libFuzzer for "
              "Python; wheels for CPython 3.8-3.11 on x86_64 Linux)", file=sys.stderr)
        return 2
    crashes.mkdir(parents=True, exist_ok=True)
    before = set(crashes.iterdir())
    tmp = Path(tempfile.mkdtemp(prefix="pipeproof-atheris-run-"))
    tally_f, log_f = tmp / "tally.json", tmp / "libfuzzer.log"
    cmd = [sys.executable, __file__, "--atheris-child", "--seed", str(seed), "--timeout",
           str(timeout), "--mem-mb", str(mem_mb), "--crashes", str(crashes), "--tally",
           str(tally_f), "--", f"-max_total_time={int(60 * minutes)}", *libfuzzer]
    t0 = time.monotonic()
    interrupted = False
    with open(log_f, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            # libFuzzer checks -max_total_time only after loading the seed corpus, so
            # the time is kept here: SIGINT makes libFuzzer stop and print its stats
            rc = p.wait(60 * minutes)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                rc = p.wait(2 * _hard_limit(timeout))
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            interrupted = True
    secs = time.monotonic() - t0
    text = log_f.read_text(errors="replace")
    if rc == 2 and not tally_f.exists():
        print(text[-2000:], file=sys.stderr)
        return 2
    tally = json.loads(tally_f.read_text()) if tally_f.exists() else {"failures": []}
    artifacts = sorted(str(x.name) for x in set(crashes.iterdir()) - before
                       if x.name.startswith("atheris-") and not x.suffix)
    stats = LIBFUZZER_STAT.findall(text)
    last = stats[-1] if stats else None
    units = re.search(r"stat::number_of_executed_units: (\d+)", text)
    kinds: dict[str, int] = {}
    for fl in tally["failures"]:
        kinds[fl["kind"]] = kinds.get(fl["kind"], 0) + 1
    slow_units = [a for a in artifacts if a.startswith("atheris-slow-unit-")]
    for a in artifacts:  # libFuzzer's own findings: timeout-, crash-, oom-, leak-
        if a in slow_units:  # -report_slow_units: a record, not a failure
            continue
        k = "libfuzzer-" + a.split("-")[1]
        kinds[k] = kinds.get(k, 0) + 1
    result = {"mode": "atheris", "seed": seed, "seconds": round(secs), "exit": rc,
              "stopped_at_time_limit": interrupted,
              "executed_units": int(units.group(1)) if units else None,
              "timeout": timeout, "mem_mb": mem_mb, "hard_limit_s": _hard_limit(timeout),
              "libfuzzer": {"execs": int(last[0]), "cov": int(last[1]), "ft": int(last[2]),
                            "corpus": int(last[3]) if last[3] else None} if last else None,
              "artifacts": artifacts, "slow_units": len(slow_units), "failure_kinds": kinds,
              **{k: v for k, v in tally.items()}}
    # libFuzzer exits 0 at -max_total_time, 72 (its -interrupted_exitcode) on SIGINT
    done = rc == 0 or (interrupted and rc == 72)
    if not done and not artifacts and not tally["failures"]:
        # libFuzzer stopped for a reason of its own: show it
        result["log_tail"] = text[-3000:]
    print(f"atheris seed {seed}: {tally.get('inputs', 0)} inputs, {tally.get('runs', 0)} runs "
          f"of which {tally.get('differential', 0)} explicit-vs-bmc pairs, in {secs:.0f} s; "
          f"exit codes {dict(sorted(tally.get('by_exit', {}).items()))}; libFuzzer "
          f"{result['libfuzzer']}; failures: {kinds or 'none'}")
    if out is not None:
        out.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if kinds or not done else 0


# --------------------------------------------------------------------------- command line


def render_md(t: Tally, seed: int, seconds: float, timeout: float, mem_mb: int) -> str:
    kinds: dict[str, int] = {}
    for f in t.failures:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    return (f"seed {seed}: {t.inputs} inputs ({', '.join(f'{k} {v}' for k, v in sorted(t.by_origin.items()))}), "
            f"{t.runs} runs of which {t.differential} explicit-vs-bmc pairs, in {seconds:.0f} s; "
            f"exit codes {dict(sorted(t.by_exit.items()))}; slowest run {t.max_seconds:.1f} s "
            f"(--timeout {timeout:g}, hang limit {timeout + SLACK:g} s, memory cap {mem_mb} MiB); "
            f"failures: {kinds or 'none'}")


def cli(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=None, help="stop after N inputs")
    ap.add_argument("--minutes", type=float, default=None, help="stop after M minutes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("--mem-mb", type=int, default=MEM_MB)
    ap.add_argument("--no-differential", action="store_true")
    ap.add_argument("--crashes", type=Path, default=ROOT / "bench/results/fuzz-crashes")
    ap.add_argument("--out", type=Path, default=None, help="write the tally as JSON")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--atheris", action="store_true",
                    help="libFuzzer mode for --minutes (default 10); arguments after -- go "
                         "to libFuzzer")
    ap.add_argument("--atheris-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tally", type=Path, help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args(argv)
    if args.worker:
        worker(args.mem_mb)
        return 0
    libfuzzer = [a for a in rest if a != "--"]
    if args.atheris_child:
        return atheris_child(args, libfuzzer)
    if args.atheris:
        return run_atheris(10.0 if args.minutes is None else args.minutes, args.seed,
                           args.timeout, args.mem_mb, args.crashes, args.out, libfuzzer)
    if rest:
        ap.error(f"unknown arguments: {' '.join(rest)}")
    if args.inputs is None and args.minutes is None:
        args.inputs = 200
    t0 = time.monotonic()
    t = fuzz(args.inputs, args.minutes, args.seed, args.timeout, args.mem_mb, args.crashes,
             not args.no_differential, log=sys.stderr)
    secs = time.monotonic() - t0
    print(render_md(t, args.seed, secs, args.timeout, args.mem_mb))
    if args.out is not None:
        args.out.write_text(json.dumps({"seed": args.seed, "seconds": round(secs),
                                        "inputs": t.inputs, "runs": t.runs,
                                        "differential": t.differential,
                                        "by_origin": t.by_origin, "by_exit": t.by_exit,
                                        "max_seconds": round(t.max_seconds, 2),
                                        "timeout": args.timeout, "mem_mb": args.mem_mb,
                                        "failures": t.failures}, indent=2) + "\n")
    return 1 if t.failures else 0


if __name__ == "__main__":
    sys.exit(cli())
