"""Cross-check: each lifted pipeline call against the reference semantics.

The lifter follows CUTLASS's real lowering of ``cutlass.pipeline`` methods (the IR the
DSL built from ``cutlass/pipeline/sm90.py``, ``sm100.py``, ``helpers.py``); the
``.pipe`` compiler produces instructions for the same methods from ``model/pipelines/``.
Where they differ, either CUTLASS changed or the model is wrong: a *finding*.

For every warp of the lifted kernel, the instructions one call of a library method
made (labelled by the lifter with the method on their call stack, the user's line and
the lanes that called it, ``Lifter.call_info``) are compared with what
``model/pipelines/`` makes for the same call: the same pipeline (its ``create``
arguments as the trace saw them, ``creates.py``), in the same CTA and warp, called by
the same lanes, at the same pipeline state.  The state is read off the lifted call
(the stage of its first barrier, the parity of its first wait): the cross-check
compares what a method does at a state, not how the user advances states.

Both sides are normalised to the protocol: instruction kind, barrier role (``full``,
``empty``, ...), stage and CTA, parity, arrival count and bytes, commit targets, bulk
group counts, ``mbarrier.init`` counts.  Not compared: ghost effects (the lifter derives
them from the accesses themselves), the synchronisation ``create`` runs after its inits
(``defer_sync``), TMA copies (the user's ``cute.copy``, not a pipeline method), and
``PipelineOrder``/``NamedBarrier``/``TmemAllocator`` calls (their state is internal to the
object, not a ``PipelineState``): these are listed as not compared.
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from ...model.compile import CompiledKernel, compile_agent
from ...model.errors import ConfigError, Unsupported
from ...model.ir import Loc
from ...model.lang.parser import parse
from ...model.program import (Arrive, BulkCommit, BulkWaitRead, CpAsyncArrive, ExpectTx,
                              Fail, MbarInit, NamedBarrierOp, NamedWait, TryWait,
                              UmmaCommit, Wait)
from .creates import CreateCall, MethodArgs

#: instructions a pipeline method makes that the cross-check compares
COMPARED = (Wait, TryWait, Arrive, ExpectTx, UmmaCommit, CpAsyncArrive, BulkCommit,
            BulkWaitRead, MbarInit, NamedBarrierOp, NamedWait, Fail)
#: participant methods (``PipelineProducer``/``PipelineConsumer`` and their handles,
#: ``cutlass/pipeline/sm90.py``) and the pipeline method each one calls
PARTICIPANT = {"acquire": "producer_acquire", "try_acquire": "producer_try_acquire",
               "tail": "producer_tail", "try_wait": "consumer_try_wait",
               "wait": "consumer_wait"}
#: classes whose calls carry no ``PipelineState`` (not compared)
STATELESS = ("PipelineOrder", "NamedBarrier", "TmemAllocator", "TmaStoreFence")


@dataclass(frozen=True)
class Finding:
    """One call whose lifted effects differ from the model's."""

    loc: Loc
    cta: int
    warp: int
    pipeline: str
    method: str
    lifted: tuple[str, ...]
    model: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.loc}: {self.pipeline}.{self.method} (cta{self.cta} warp{self.warp}):"
                f"\n    lifted (CUTLASS): {'; '.join(self.lifted) or '(nothing)'}"
                f"\n    model/pipelines:  {'; '.join(self.model) or '(nothing)'}")


@dataclass(frozen=True)
class CrossCheck:
    findings: tuple[Finding, ...]
    #: calls compared (per warp and iteration)
    compared: int
    #: what was not compared, and why (one line each)
    skipped: tuple[str, ...]
    #: calls compared per ``pipeline.method``
    methods: tuple[tuple[str, int], ...] = ()


# --------------------------------------------------------------------------- normal form


def _bar(b: Any) -> str:
    role = b.array.split(".", 1)[1] if "." in b.array else b.array
    return f"{role}[{b.stage}]@cta{b.cta}"


def normalise(ins: Any) -> list[str]:
    """The protocol an instruction takes part in, one line per effect."""
    if isinstance(ins, (Wait, TryWait)):
        kind = "wait" if isinstance(ins, Wait) else ("test_wait" if ins.test else "try_wait")
        return [f"{kind} {_bar(ins.bar)} p{ins.parity & 1}"]
    if isinstance(ins, Arrive):
        return ["arrive " + ", ".join(
            f"{_bar(a.bar)} x{a.count}" + (f" +{a.tx}B" if a.tx else "")
            for a in sorted(ins.arrivals, key=lambda a: a.bar))]
    if isinstance(ins, ExpectTx):
        return [f"expect_tx {_bar(ins.bar)} +{ins.tx}B"]
    if isinstance(ins, UmmaCommit):
        return ["tcgen05.commit " + ", ".join(_bar(b) for b in sorted(ins.bars))]
    if isinstance(ins, CpAsyncArrive):
        return [f"cp.async.mbarrier.arrive{'.noinc' if ins.noinc else ''} {_bar(ins.bar)} "
                f"x{ins.count}"]
    if isinstance(ins, BulkCommit):
        return ["cp.async.bulk.commit_group"]
    if isinstance(ins, BulkWaitRead):
        return [f"cp.async.bulk.wait_group.read {ins.n}"]
    if isinstance(ins, MbarInit):
        return [f"mbarrier.init {a.split('.', 1)[-1]} count={c}" for a, c in ins.arrays]
    if isinstance(ins, NamedBarrierOp):
        return [f"bar.{'sync' if ins.sync else 'arrive'} {ins.id}, {ins.count}"]
    if isinstance(ins, NamedWait):
        return []
    if isinstance(ins, Fail):
        return [f"fail {ins.prop}"]
    return []


# --------------------------------------------------------------------------- the probe


@dataclass(frozen=True)
class Probe:
    """One call rebuilt as a ``.pipe`` kernel: ``create`` then the method at a state."""

    create: CreateCall
    var: str
    block: int
    cluster: tuple[int, int, int]
    cta: int
    warp: int
    method: str            # the pipeline method ("" for create)
    side: str              # Producer | Consumer
    advances: int
    elect_one: bool
    #: the call's arguments after the state, as ``.pipe`` text
    extra: tuple[str, ...] = ()
    defer_sync: bool = True

    def text(self) -> tuple[str, int, int]:
        """The kernel, the line of the create and the line of the method call."""
        lines = ["@cute.kernel", "def probe():",
                 f"    launch(block={self.block}, cluster={self.cluster})",
                 f"    {self.var} = {self.create.cls}.create("]
        lines += [f"        {k}={v}," for k, v in self.create.kwargs]
        lines += ["        defer_sync=True,"] if self.defer_sync else []
        lines += ["    )"]
        create_line = 4
        call_line = 0
        if self.method:
            lines.append(f"    state = make_pipeline_state(PipelineUserType.{self.side}, "
                         f"{self.var}.num_stages)")
            lines += ["    state.advance()"] * self.advances
            first = ("state",) if takes_state(self.create.cls, self.method) else ()
            call = f"{self.var}.{self.method}({', '.join(first + self.extra)})"
            if self.elect_one:
                lines.append("    with elect_one():")
                lines.append(f"        {call}")
            else:
                lines.append(f"    {call}")
            call_line = len(lines)
        return "\n".join(lines) + "\n", create_line, call_line


def model_effects(probe: Probe) -> tuple[str, ...]:
    """What ``model/pipelines/`` makes for the probe's call (``ConfigError`` /
    ``Unsupported`` when the model refuses the configuration or the call).  A class
    whose ``create`` runs no synchronisation (``PipelineTmaStore``) takes no
    ``defer_sync``."""
    try:
        return _model_effects(probe)
    except ConfigError as e:
        if "defer_sync" not in str(e):
            raise
    from dataclasses import replace

    return _model_effects(replace(probe, defer_sync=False))


def takes_state(cls: str, method: str) -> bool:
    """Whether the model's ``cls.method`` takes a ``PipelineState`` first (the methods
    of ``PipelineTmaStore`` take none)."""
    import inspect

    from ...model.pipelines.registry import PIPELINE_CLASSES

    for c in PIPELINE_CLASSES:
        if getattr(c, "CLASS", c.__name__) == cls:
            fn = getattr(c, "m_" + method, None)
            if fn is None:
                return True
            params = list(inspect.signature(fn).parameters)[2:]  # self, cx
            return bool(params) and params[0] == "state"
    return True


@lru_cache(maxsize=4096)
def _model_effects(probe: Probe) -> tuple[str, ...]:
    text, create_line, call_line = probe.text()
    prog = compile_agent(parse(text, "<cross-check>"), probe.cta, probe.warp)
    line = call_line or create_line
    out: list[str] = []
    for ins in prog.code:
        if ins.loc.line != line or not isinstance(ins, COMPARED):
            continue
        if not probe.method and not isinstance(ins, MbarInit):
            continue
        out += normalise(ins)
    return tuple(out)


# --------------------------------------------------------------------------- lifted calls


def _var_of(ins: Any) -> str:
    if isinstance(ins, (Wait, TryWait, ExpectTx, CpAsyncArrive)):
        return ins.bar.array.split(".")[0]
    if isinstance(ins, Arrive) and ins.arrivals:
        return ins.arrivals[0].bar.array.split(".")[0]
    if isinstance(ins, UmmaCommit) and ins.bars:
        return ins.bars[0].array.split(".")[0]
    if isinstance(ins, MbarInit) and ins.arrays:
        return ins.arrays[0][0].split(".")[0]
    return ""


def _first_bar(ins: Any) -> Any:
    if isinstance(ins, (Wait, TryWait, ExpectTx, CpAsyncArrive)):
        return ins.bar
    if isinstance(ins, Arrive) and ins.arrivals:
        return ins.arrivals[0].bar
    if isinstance(ins, UmmaCommit) and ins.bars:
        return ins.bars[0]
    return None


def method_of(api: str) -> tuple[str, str]:
    """``PipelineTmaAsync.producer_acquire`` -> (class, method); participants' methods
    as the pipeline method they call."""
    parts = api.split(".")
    cls, name = parts[0], parts[-1]
    if cls in ("PipelineProducer", "PipelineConsumer") or "Handle" in api:
        producer = "Producer" in api
        if name == "commit":
            name = "producer_commit"
        elif name == "release":
            name = "consumer_release"
        elif name.removesuffix("_and_advance") in PARTICIPANT:
            name = PARTICIPANT[name.removesuffix("_and_advance")]
        else:
            name = ("producer_" if producer else "consumer_") + name
    return cls, name


def assigned_name(c: CreateCall) -> str:
    m = re.match(r"\s*(?:self\.)?(\w+)\s*(?::[^=]*)?=(?!=)", linecache.getline(c.file, c.line))
    return m.group(1) if m else ""


def cross_check(compiled: CompiledKernel, lifter: Any, creates: tuple[CreateCall, ...],
                method_args: tuple[MethodArgs, ...] = ()) -> CrossCheck:
    """Compare every lifted pipeline call of every warp with the model's."""
    margs = {(m.file, m.line, m.method): m.args for m in method_args}
    by_var: dict[str, CreateCall] = {}
    by_cls: dict[str, list[str]] = {}
    # the lifter names a pipeline's barriers after the variable its create line assigns,
    # else after the storage field: the create whose line made the inits is the match
    at_line = {(os.path.abspath(c.file), c.line): c for c in creates}
    for prog in compiled.programs:
        for ins in prog.code:
            if isinstance(ins, MbarInit):
                c = at_line.get((os.path.abspath(ins.loc.file), ins.loc.line))
                if c is not None:
                    by_var.setdefault(_var_of(ins), c)
    for c in creates:
        v = next((k for k, x in by_var.items() if x is c), "") or assigned_name(c)
        if v:
            by_var.setdefault(v, c)
            by_cls.setdefault(c.cls, []).append(v)
    info = compiled.info
    findings: list[Finding] = []
    skipped: dict[str, None] = {}
    compared = 0
    per: dict[str, int] = {}
    for prog in compiled.programs:
        runs: list[tuple[str, tuple, Any, list]] = []  # (api, lanes, loc, instructions)
        for ins in prog.code:
            meta = lifter.call_info.get(id(ins))
            if meta is None or not meta[1] or not isinstance(ins, COMPARED):
                if isinstance(ins, COMPARED) or type(ins).__name__ in ("TmaLoad", "TmaStore"):
                    runs.append(("", (), None, []))  # a step of the user's own: a break
                continue
            _, api, lanes = meta
            if runs and runs[-1][0] == api and runs[-1][1] == lanes and \
                    runs[-1][2] == ins.loc:
                runs[-1][3].append(ins)
            else:
                runs.append((api, lanes, ins.loc, [ins]))
        for api, lanes, loc, instrs in runs:
            while instrs:
                n = _compare_call(prog, api, lanes, loc, instrs, info, by_var, by_cls,
                                  margs, findings, skipped)
                if n <= 0:
                    break
                compared += 1
                cls, name = method_of(api)
                var = _var_of(instrs[0]) or "/".join(by_cls.get(cls, ["?"]))
                key = f"{var}.{name}"
                per[key] = per.get(key, 0) + 1
                instrs = instrs[n:]
    return CrossCheck(tuple(findings), compared, tuple(skipped), tuple(sorted(per.items())))


def _compare_call(prog: Any, api: str, lanes: tuple, loc: Any, instrs: list, info: Any,
                  by_var: dict, by_cls: dict, margs: dict, findings: list,
                  skipped: dict) -> int:
    """Compare the call starting at ``instrs[0]``; the number of instructions it took
    (0: not compared, the rest of the run is dropped)."""
    cls, method = method_of(api)
    if cls in STATELESS:
        skipped[f"{cls}.{method} at {loc} (its state is internal to the "
                "object)"] = None
        return 0
    if not (cls.startswith("Pipeline") or "Handle" in api):
        skipped[f"{api} at {loc} (a cutlass.utils helper, not a pipeline method)"] = None
        return 0
    var = _var_of(instrs[0])
    if not var:
        cands = by_cls.get(cls, [])
        var = cands[0] if len(cands) == 1 else ""
    create = by_var.get(var)
    if create is None:
        skipped[f"{api} at {loc} (no create() call found for it)"] = None
        return 0
    if create.unrendered:
        skipped[f"{var} = {create.cls}.create at {create.file}:{create.line} "
                f"({'; '.join(create.unrendered)})"] = None
        return 0
    is_create = method == "create"
    if is_create and not any(isinstance(i, MbarInit) for i in instrs):
        return -1  # a warp that only takes part in create()'s synchronisation
    if is_create:
        side, advances, elect = "Producer", 0, False
        m = ""
        warp = 0
    else:
        if len(lanes) not in (1, 32):
            skipped[f"{var}.{method} at {loc} (called by {len(lanes)} "
                    "lanes; the probe calls with a whole warp or one elected lane)"] = None
            return 0
        side = "Producer" if method.startswith("producer_") else "Consumer"
        wait = next((i for i in instrs if isinstance(i, (Wait, TryWait))), None)
        bar = wait.bar if wait is not None else _first_bar(instrs[0])
        stages = _stages(create)
        index = bar.stage if bar is not None else 0
        start = 1 if side == "Producer" else 0
        phase = (wait.parity & 1) if wait is not None else start
        advances = index + stages * ((phase ^ start) & 1)
        elect = len(lanes) == 1
        m = method
        warp = prog.warp
    extra: Optional[tuple[str, ...]] = ()
    if not is_create:
        extra = margs.get((os.path.abspath(loc.file), loc.line, method), ())
        if extra is None:
            skipped[f"{var}.{method} at {loc} (arguments known only at run "
                    "time, or different ones on one line)"] = None
            return 0
    probe = Probe(create, var, info.block_threads, tuple(info.cluster_shape), prog.cta, warp,
                  m, side, advances, elect, extra)
    try:
        want = model_effects(probe)
    except (ConfigError, Unsupported) as e:
        findings.append(Finding(loc, prog.cta, prog.warp, var, method,
                                tuple(x for i in instrs for x in normalise(i)),
                                (f"refused: {e}",)))
        return len(instrs)
    n = _take(instrs, len(want), is_create)
    got = tuple(x for i in instrs[:n] for x in normalise(i)
                if not is_create or isinstance(i, MbarInit))
    if is_create:
        got, want = tuple(sorted(got)), tuple(sorted(want))
    if got != want:
        findings.append(Finding(loc, prog.cta, prog.warp, var, method, got, want))
        return len(instrs)
    return n


def _take(instrs: list, want_lines: int, is_create: bool) -> int:
    """How many lifted instructions make up one call with ``want_lines`` effects."""
    if is_create:
        return len(instrs)
    n, lines = 0, 0
    while n < len(instrs) and lines < want_lines:
        lines += len(normalise(instrs[n]))
        n += 1
    return max(n, 1)


def _stages(c: CreateCall) -> int:
    for k, v in c.kwargs:
        if k == "num_stages":
            try:
                return int(v)
            except ValueError:
                return 1
    return 1


def report(cc: CrossCheck) -> str:
    head = (f"cross-check with model/pipelines: {cc.compared} pipeline call(s) compared, "
            f"{len(cc.findings)} finding(s)")
    if cc.methods:
        head += "\n  compared: " + ", ".join(f"{m} x{n}" for m, n in cc.methods)
    lines = [head] + [f"  {f}" for f in cc.findings]
    lines += [f"  not compared: {s}" for s in cc.skipped]
    return "\n".join(lines)
