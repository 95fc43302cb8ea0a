"""Interpret a captured kernel for every warp of one cluster and emit its program.

The kernel's structured IR (``scf.if/for/while``, ``arith``, ``nvvm`` special registers,
CuTe's pointer and layout ops) is evaluated warp by warp, 32 lanes in lock step, with
the launch's block and cluster shape: warp specialisation (``if warp_idx == 4``),
elections (``elect.sync``), stage indices, parities and multicast masks all fold to
constants for each warp.  What is left are the synchronisation ops, which become the
model's instructions (``model/program.py``) in the order the warp runs them, and the
values only the run can tell (try_wait tokens), which become the warp's locals and
``Branch``es.

Two passes: the first learns every ``mbarrier.init`` (address, count, the ``create``
call on its stack) so that barrier arrays can be named; the second emits.

Strict: an op with side effects that this front end does not know stops the lift with
``UNKNOWN unsupported op X at file:line`` (``ops.py``); a dropped op could hide the
arrival that a deadlock verdict depends on.
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from ...model.errors import Unsupported
from ...model.ir import Loc
from ...model.program import (NO_SITE, BarRef, Branch, BufRef, DynExpr, Exit, Fail, Instr,
                              Jump, Nop, ParamSplit, SetLocal)
from .mlir_text import Frame, Module, Op
from .sites import SITE_ATTR, is_trace_record, op_site, record_for
from .shapes import at_point, has_sym, merge
from .values import OPAQUE, WARP, Dyn, Lanes, Ptr, Shaped, Sym

#: ops a warp may evaluate before the lift gives up on it (a loop of a huge trip count)
MAX_OPS_PER_WARP = 2_000_000
#: paths of one warp through run-time branches that go on differently
MAX_PATHS = 256


@dataclass(frozen=True)
class ForkMarker:
    """Where a path took one side of a run-time branch (replaced by a ``Branch``)."""

    cond: Any
    decision: bool
    loc: Loc
    #: a split on symbolic parameters: where the condition holds over the parameter
    #: domain (a ``ParamSplit`` step, then a ``Branch`` on the side it took)
    mask: Optional[tuple] = None
    text: str = ""


def merge_paths(paths: list["WarpRun"]) -> "WarpRun":
    """One program from the paths of a warp: shared prefixes once, a ``Branch`` where
    they part (``cond`` true: the paths that took it).  Control targets inside a copied
    segment are moved with it (a fork never lies inside a Branch/Jump region)."""
    from ...model.program import Branch, Jump

    out: list = []

    def build(group: list[list], start: int) -> None:
        p0 = group[0]
        k = next((i for i in range(start, len(p0)) if isinstance(p0[i], ForkMarker)),
                 len(p0))
        shift = len(out) - start
        for ins in p0[start:k]:
            if isinstance(ins, Branch):
                ins = replace(ins, then=ins.then + shift, orelse=ins.orelse + shift)
            elif isinstance(ins, Jump):
                ins = replace(ins, target=ins.target + shift)
            out.append(ins)
        if k == len(p0):
            return
        mark = p0[k]
        yes = [p for p in group if p[k].decision]
        no = [p for p in group if not p[k].decision]
        cond, label = mark.cond, "if (run-time value)"
        if mark.mask is not None:  # model/compile.py's _emit_split, the same two steps
            out.append(ParamSplit(mask=mark.mask, text=mark.text, loc=mark.loc,
                                  label=f"if {mark.text}"))
            cond, label = DynExpr("within", (mark.mask,)), f"if {mark.text}"
        at = len(out)
        out.append(None)
        build(yes, k + 1)
        other = len(out)
        build(no, k + 1)
        out[at] = Branch(cond=cond, then=at + 1, orelse=other, loc=mark.loc, label=label)

    first = paths[0]
    build([p.code for p in paths], 0)
    merged = WarpRun(first.cta, first.warp, first.ctaid)
    merged.code = out
    merged.locals = list(dict.fromkeys(x for p in paths for x in p.locals))
    for p in paths:
        for k, v in p.sides.items():
            merged.sides.setdefault(k, v)
    return merged


class LiftError(Unsupported):
    """A construct the lifter cannot follow: the check ends UNKNOWN with the user's line."""


@dataclass(frozen=True)
class Launch:
    block: int
    cluster: tuple[int, int, int]
    grid: tuple[int, int, int]


@dataclass
class BarrierInfo:
    """One mbarrier the kernel initialises (the same smem address in every CTA)."""

    key: tuple[int, int]           # (allocation, byte offset)
    signature: str = ""
    pipeline: str = ""             # the user's variable (or the smem field)
    part: str = ""                 # full | empty | ...
    cls: str = ""                  # the pipeline class whose create() initialised it
    count: Optional[int] = None
    array: str = ""
    stage: int = 0


#: steps no trace record stands for: local control and ghost-only steps
LOCAL_STEPS = (Branch, Jump, SetLocal, Nop, Fail)


@dataclass
class WarpRun:
    """The state of one warp's interpretation."""

    cta: int
    warp: int
    ctaid: tuple[int, int, int]
    code: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    inits_done: set = field(default_factory=set)
    ops: int = 0
    sides: dict = field(default_factory=dict)   # pipeline var -> producer|consumer
    # ghost bookkeeping (ghosts.py): buffers this warp reads, writes, marked dirty
    held: set = field(default_factory=set)
    written: set = field(default_factory=set)
    dirty: set = field(default_factory=set)
    mma_held: set = field(default_factory=set)
    wgmma_open: set = field(default_factory=set)
    cp_pending: set = field(default_factory=set)
    # paths through run-time branches (Lifter.decide): decisions to replay, taken so far,
    # and the other sides still to run
    script: list = field(default_factory=list)
    taken: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    dyn_depth: int = 0           # inside a Branch/Jump region of ops.dynamic_if
    rmem: dict = field(default_factory=dict)   # register arrays holding a CLC response
    pending_clean: list = field(default_factory=list)  # fence.proxy.async effects
    clc_reads: int = 0
    clc_queries: int = 0
    # trace sites (sites.py): the records already given to a step of the op being
    # interpreted
    sites_given: set = field(default_factory=set)
    # the symbolic parameter points this path is still possible at (None: no domain)
    points: Optional[frozenset] = None
    # token local -> (op name, operand SSA names) of the try_wait that set it: a retry
    # of the same try_wait (sync_ops.retry_of) is the same token
    tok_op: dict = field(default_factory=dict)


class Lifter:
    """``Lifter(module, library_roots).run()`` -> per-warp instruction lists."""

    def __init__(self, module: Module, library_roots: tuple[str, ...] = (),
                 dsl_series: str = "4.8", launch: Optional[Launch] = None,
                 max_ops: int = MAX_OPS_PER_WARP, data_races: bool = True,
                 cluster_index: int = 0, scalars: tuple = (),
                 params: Optional["ScalarParams"] = None, shapes: tuple = (),
                 shape_values: Optional[dict] = None) -> None:
        """``cluster_index``: which cluster of the grid to interpret (x fastest); its CTAs
        see their own ``%ctaid`` and ``%clusterid`` (a conformance judge lifts each
        cluster whose trace it replays).  ``scalars``: the ``@cute.jit`` function's
        parameters (``Capture.scalars``): a run-time integer argument the host passes
        to the kernel as it is has the value the entry compiled with.  ``params``:
        symbolic parameters, and each run-time argument's value at each of their
        points (``ScalarParams``); such an argument is a ``Sym``.  ``shapes``: the
        dynamic extents of fake tensor arguments (``Capture.shapes``); one named by a
        parameter (``ScalarParams.shapes``) has its value (a ``Sym`` over a range);
        ``shape_values``: named extents given one value each."""
        from . import data_ops, ops, sync_ops, tmem_ops  # noqa: F401  (registers handlers)
        from .optable import op_table

        self.m = module
        self.library_roots = tuple(os.path.abspath(r) for r in library_roots)
        # per source file / op location: frames are the same for every warp
        self._library: dict[str, bool] = {}
        self._user_frames: dict[Any, Optional[Frame]] = {}
        self._api_calls: dict[Any, str] = {}
        self.table, self.prefixes = op_table(dsl_series)
        self.max_ops = max_ops
        kernels = module.kernels()
        if not kernels:
            raise LiftError("the captured module has no kernel (does the entry launch a "
                            "@cute.kernel from its @cute.jit function?)")
        if len(kernels) > 1:
            names = ", ".join(k.attrs.get("sym_name", "?").strip('"') for k in kernels)
            raise LiftError(f"the captured module has {len(kernels)} kernels ({names}); "
                            "pipeproof checks one kernel at a time")
        self.kernel = kernels[0]
        self.kernel_name = self.kernel.attrs.get("sym_name", '"kernel"').strip('"')
        self.notes: list[str] = []  # before _launch, which may add one
        self._grid_from_host = ""  # the note _launch adds where the grid is not constant
        self.launch = launch or self._launch()
        self._cluster_index = cluster_index
        self.cluster_coord = self._cluster_coord(cluster_index)
        self.bars: dict[tuple[int, int], BarrierInfo] = {}
        self.allocs: dict[Any, tuple[int, str, list]] = {}  # ssa name -> (id, var, fields)
        self.alloc_fields: dict[int, tuple[str, list]] = {}
        self.named_ids: set[int] = set()
        #: trace sites (sites.py): op site -> the lane masks (bit i: lane i) that ran it
        self.site_lanes: dict[int, set[int]] = {}
        self.atom_split: dict[str, int] = {}
        from .ghosts import Ghosts

        self.ghosts = Ghosts(self, data_races)
        self.phase = 1
        self.discovering = False
        #: the lane mask the op being interpreted runs under, and the masks in force
        #: before each lane-dependent ``scf.if`` being interpreted (outermost first):
        #: the lanes that called a library method (``call_lanes``)
        self.cur_mask: Any = None
        self.mask_stack: list[tuple[Op, Any]] = []
        #: per emitted instruction (by identity; the instruction is kept alive here):
        #: the library method on its stack and the lanes that called it
        #: (``crosscheck.py`` rebuilds the same call in ``model/pipelines/``)
        self.call_info: dict[int, tuple[Instr, str, tuple[int, ...]]] = {}
        self._made: Optional[tuple[str, tuple[int, ...]]] = None
        self.w: WarpRun = WarpRun(0, 0, (0, 0, 0))
        self.programs: dict[tuple[int, int], WarpRun] = {}
        self.param_names: tuple[str, ...] = params.names if params else ()
        self.param_points: tuple[tuple[int, ...], ...] = params.points if params else ()
        self.kernel_args = self._kernel_args(scalars, params)
        self._shaped_args(shapes, params, shape_values or {})

    # ------------------------------------------------------------------ launch
    def _kernel_args(self, scalars: tuple, params: Optional["ScalarParams"]) -> dict:
        """The kernel's arguments whose value is known: a run-time integer parameter of
        the ``@cute.jit`` function that the host's launch passes to the kernel as it is
        (``cuda.launch_ex``'s operands after the launch configuration).  Its value is
        the one the entry compiled with, or a ``Sym`` over the parameter points."""
        host_vals: dict[int, Any] = {}
        names: dict[int, str] = {}
        j = 0
        for name, count, value in scalars:
            if count == 1 and value is not None:
                host_vals[j] = value
                names[j] = name
            j += count
        if params is not None:
            for name, vals in params.args.items():
                idx = next((k for k, n in names.items() if n == name), None)
                if idx is None:
                    raise LiftError(f"run-time argument {name!r}: not an integer parameter "
                                    "of the @cute.jit function that the kernel receives")
                host_vals[idx] = vals[0] if len(set(vals)) == 1 else Sym(tuple(vals))
        out: dict[int, Any] = {}
        self.arg_names: dict[int, str] = {}
        self.sym_names: dict[Sym, str] = {v: names[k] for k, v in host_vals.items()
                                          if isinstance(v, Sym)}
        callee = self.kernel_name
        for h in self.m.host_functions():
            if not h.regions or not h.regions[0]:
                continue
            hargs = h.regions[0][0].args
            for o in self.m_walk(h):
                if o.name not in ("cuda.launch_ex", "gpu.launch_func") or \
                        not o.attrs.get("callee", "").endswith(f"@{callee}"):
                    continue
                ops = o.operands[1:] if o.name == "cuda.launch_ex" else o.operands
                for k, x in enumerate(ops):
                    if x in hargs:
                        idx = hargs.index(x)
                        if idx in names:
                            self.arg_names[k] = names[idx]
                        if idx in host_vals:
                            out[k] = host_vals[idx]
                            if not isinstance(host_vals[idx], Sym) and idx in names:
                                self.notes.append(
                                    f"run-time argument {names[idx]} = {host_vals[idx]}: "
                                    "the value the entry passed to cute.compile")
        return out

    def _shaped_args(self, shapes: tuple, params: Optional["ScalarParams"],
                     shape_values: dict) -> None:
        """Fake tensor arguments with dynamic extents: a ``Shaped`` whose leaves are
        the extents' values (a named extent's value at each parameter point; else a
        ``Dyn`` saying why not).  The host function's pure shape arithmetic is
        followed from them (``shapes.host_values``: TMA tensors built from them, tile
        counts computed in the host), and each kernel argument that it leads to
        gets its value."""
        self.unvalued: list[str] = []
        #: the kernel has fake tensor arguments with dynamic extents: a few handlers
        #: (``cute.make_tile``) then give values they leave opaque elsewhere
        self.dynamic_extents = bool(shapes)
        if not shapes:
            return
        named = {k: (v,) for k, v in shape_values.items()}
        named.update(params.shapes if params is not None else {})
        host_leaves = dict(shapes)
        from .shapes import host_values

        for h in self.m.host_functions():
            if not h.regions or not h.regions[0]:
                continue
            hargs = h.regions[0][0].args
            start: dict[str, Any] = {}
            for j, leaves in host_leaves.items():
                if j < len(hargs):
                    start[hargs[j]] = Shaped(tuple(self._extent_value(lf, named)
                                                   for lf in leaves))
            got, grid = host_values(self, h, start, self.kernel_name)
            self.kernel_args.update(got)
            if grid is not None and self._grid_from_host:
                self._dynamic_grid(grid)
        for sym in dict.fromkeys(lf.symbol for leaves in host_leaves.values()
                                 for lf in leaves if lf.symbol in named):
            vals = tuple(named[sym])
            if len(set(vals)) == 1:
                self.notes.append(f"dynamic extent {sym} = {vals[0]}")
            else:
                self.sym_names.setdefault(Sym(vals), sym)

    def _dynamic_grid(self, grid: tuple) -> None:
        """The grid the host computes from the dynamic extents (a persistent kernel's
        ``min(tiles, max_active_clusters)``): one grid for every parameter point, or
        the lift stops (a range is then checked value by value)."""
        if all(isinstance(g, int) and g > 0 for g in grid):
            self.notes.remove(self._grid_from_host)
            self._grid_from_host = ""
            self.launch = replace(self.launch, grid=grid)
            self.cluster_coord = self._cluster_coord(self._cluster_index)
        elif any(has_sym(g) for g in grid):
            raise LiftError("the launch's grid depends on the dynamic extents' values "
                            f"({', '.join(self.param_names)}): one lift per value")

    def _extent_value(self, lf: Any, named: dict) -> Any:
        """The value of one ``?`` of a fake tensor (``capture.ShapeLeaf``)."""
        vals = named.get(lf.symbol) if lf.symbol else None
        if vals is not None:
            return vals[0] if len(set(vals)) == 1 else Sym(tuple(vals))
        self.unvalued.append(lf.symbol or lf.where)
        if lf.symbol:
            why = (f"the dynamic {lf.where} (cute.sym_int with symbol {lf.symbol!r}; give "
                   f"it a value: --param {lf.symbol}=VALUE or LO..HI)")
        elif lf.where.startswith("extent"):
            why = (f"the dynamic {lf.where} (a cute.sym_int without a symbol: name it, "
                   "cute.sym_int32(symbol='K'), and give it a value with --param K=...)")
        else:
            why = f"the dynamic {lf.where}"
        return Dyn(None, why)

    def unvalued_extents_hint(self) -> str:
        """For a message on a value the lifter could not compute: the kernel's dynamic
        extents that have no value (``_shaped_args``)."""
        syms = [s for s in dict.fromkeys(self.unvalued) if " " not in s]
        anon = [s for s in dict.fromkeys(self.unvalued) if " " in s and
                s.startswith("extent")]
        if syms:
            return (f"; the kernel has dynamic extents without a value ({', '.join(syms)}):"
                    f" give them one, --param {syms[0]}=VALUE or LO..HI")
        if anon:
            return (f"; the kernel has dynamic extents without a name ({anon[0]}): name "
                    "them, cute.sym_int32(symbol='K'), and give them a value with "
                    "--param K=...")
        return ""

    @staticmethod
    def m_walk(root: Op) -> list[Op]:
        ops, stack = [], [root]
        while stack:
            n = stack.pop()
            for reg in n.regions:
                for blk in reg:
                    for o in blk.ops:
                        ops.append(o)
                        stack.append(o)
        return ops

    def _launch(self) -> Launch:
        facts = self.kernel.attrs.get("cutlass_launch_facts", "")
        blk = re.search(r"exact_block_dim = array<i64: (\d+), (\d+), (\d+)>", facts) or \
            re.search(r"array<i32: (\d+), (\d+), (\d+)>", self.kernel.attrs.get("nvvm.reqntid", ""))
        if not blk:
            raise LiftError("the kernel's block size is not a constant in the IR "
                            "(launch it with a constant block=...)")
        block = int(blk.group(1)) * int(blk.group(2)) * int(blk.group(3))
        if block % WARP:
            raise LiftError(f"block of {block} threads is not a whole number of warps")
        clu = re.search(r"exact_cluster_dim = array<i64: (\d+), (\d+), (\d+)>", facts)
        cluster = tuple(int(clu.group(i)) for i in (1, 2, 3)) if clu else self._host_cluster()
        grd = re.search(r"exact_grid_dim = array<i64: (\d+), (\d+), (\d+)>", facts)
        grid = tuple(int(grd.group(i)) for i in (1, 2, 3)) if grd else self._host_grid()
        if grid is None:
            self._grid_from_host = ("the grid is not constant in the host code: checked "
                                    "as one cluster")
            self.notes.append(self._grid_from_host)
            grid = cluster
        return Launch(block, cluster, grid)  # type: ignore[arg-type]

    def _host_consts(self, host: Op) -> tuple[dict, list]:
        consts: dict[str, int] = {}
        ops = []
        stack = [host]
        while stack:
            n = stack.pop()
            for reg in n.regions:
                for blk in reg:
                    for o in blk.ops:
                        if o.name == "arith.constant":
                            m = re.match(r"(-?\d+)", o.attrs.get("value", ""))
                            if m:
                                consts[o.results[0]] = int(m.group(1))
                        ops.append(o)
                        stack.append(o)
        return consts, ops

    def _host_cluster(self) -> tuple[int, int, int]:
        for h in self.m.host_functions():
            consts, ops = self._host_consts(h)
            for o in ops:
                if o.name == "cuda.launch_cfg.cluster_dim":
                    vals = [consts.get(x) for x in o.operands[1:4]]
                    if all(v is not None for v in vals):
                        return tuple(vals)  # type: ignore[return-value]
        return (1, 1, 1)

    def _host_grid(self) -> Optional[tuple[int, int, int]]:
        for h in self.m.host_functions():
            consts, ops = self._host_consts(h)
            for o in ops:
                if o.name == "cuda.launch_cfg.create":
                    # blockDim x3, dynamic smem bytes, gridDim x3, stream
                    vals = [consts.get(x) for x in o.operands]
                    g = vals[4:7]
                    if len(g) == 3 and all(v is not None for v in g):
                        return tuple(g)  # type: ignore[return-value]
        return None

    def _cluster_coord(self, index: int) -> tuple[int, int, int]:
        (gx, gy, gz), (cx, cy, cz) = self.launch.grid, self.launch.cluster
        nx, ny, nz = max(1, gx // cx), max(1, gy // cy), max(1, gz // cz)
        if not 0 <= index < nx * ny * nz:
            raise LiftError(f"cluster {index}: the grid has {nx * ny * nz} clusters")
        return (index % nx, (index // nx) % ny, index // (nx * ny))

    @property
    def grid_clusters(self) -> int:
        """Clusters in the (static) grid: it bounds the CLC try_cancel calls that can
        succeed (PTX ISA clusterlaunchcontrol.try_cancel)."""
        gx, gy, gz = self.launch.grid
        return max(1, (gx * gy * gz) // self.cluster_size)

    @property
    def cluster_size(self) -> int:
        x, y, z = self.launch.cluster
        return x * y * z

    # ------------------------------------------------------------------ locations
    def frames(self, op: Op) -> tuple[Frame, ...]:
        return self.m.frames(op.loc)

    def is_library(self, path: str) -> bool:
        got = self._library.get(path)
        if got is None:
            if not path or path.startswith("<"):
                got = True
            else:
                p = os.path.abspath(path)
                got = any(p.startswith(r + os.sep) for r in self.library_roots)
            self._library[path] = got
        return got

    def user_frame(self, op: Op) -> Optional[Frame]:
        """The innermost frame in the user's code (not the DSL, not pipeproof)."""
        key = op.loc
        if key in self._user_frames:
            return self._user_frames[key]
        got = None
        for f in self.frames(op):
            if f.file and not self.is_library(f.file):
                got = f
                break
        self._user_frames[key] = got
        return got

    def api_call(self, op: Op) -> str:
        """The outermost ``cutlass.pipeline``/``cutlass.utils`` method on the op's stack,
        below the user's frame: the call the user wrote (``PipelineAsync.producer_commit``)."""
        got = self._api_calls.get(op.loc)
        if got is None:
            got = self._api_calls[op.loc] = self._api_call(op)
        return got

    def _api_call(self, op: Op) -> str:
        best = ""
        for f in self.frames(op):
            if f.file and not self.is_library(f.file):
                break
            if re.search(r"[/\\]cutlass[/\\](pipeline|utils)[/\\]", f.file) and \
                    "<locals>" not in f.function and "." in f.function:
                best = f.function
        return best

    def loc(self, op: Op) -> Loc:
        uf = self.user_frame(op)
        if uf is None:
            return Loc("<kernel>", 0, 0)
        return Loc(_display_path(uf.file), uf.line, uf.column + 1)

    def where(self, op: Op) -> str:
        uf = self.user_frame(op)
        if uf is None:
            return f"({op.name}, no user source line on its call stack)"
        src = linecache.getline(uf.file, uf.line).strip()
        return f"{_display_path(uf.file)}:{uf.line}" + (f": {src}" if src else "")

    def error(self, op: Op, message: str) -> LiftError:
        uf = self.user_frame(op)
        loc = Loc(_display_path(uf.file), uf.line, uf.column + 1) if uf else None
        return LiftError(message, loc)

    # ------------------------------------------------------------------ running
    def run(self) -> "Lifter":
        L = self.launch
        cx, cy, cz = L.cluster
        data_races = self.ghosts.enabled
        # a first pass learns where CLC responses land (every response reads "no more
        # work" in it), so that a warp reading a response before the scheduler warp's
        # try_cancel is interpreted still knows what it reads
        for phase, discovering in ((1, True), (1, False), (2, False)):
            self.phase = phase
            self.discovering = discovering
            if discovering and not any(o.name.startswith("nvvm.clusterlaunchcontrol.")
                                       for o in self.m.walk()):
                continue
            for rank in range(self.cluster_size):
                for warp in range(L.block // WARP):
                    kx, ky, kz = self.cluster_coord
                    ctaid = (kx * cx + rank % cx, ky * cy + (rank // cx) % cy,
                             kz * cz + rank // (cx * cy))
                    paths = self._run_paths(rank, warp, ctaid)
                    if phase == 2:
                        self.programs[(rank, warp)] = merge_paths(paths)
            if phase == 1 and not discovering:
                self._name_barriers()
                self.ghosts.finish_phase1()
                if not data_races:
                    self.notes.append("data races not checked (--data-races off): the "
                                      "barrier protocol only")
                for alloc, why in sorted(self.ghosts.untracked.items()):
                    name = self.alloc_fields.get(alloc, (f"smem{alloc}", []))[0]
                    self.notes.append(f"no data-race checks on shared memory {name}: an "
                                      f"access the lifter cannot locate ({why})")
        return self

    def _run_paths(self, rank: int, warp: int, ctaid: tuple) -> list[WarpRun]:
        """Every path of one warp through its run-time branches whose two sides go on
        differently (``decide``): the warp is run again from the start for each, the
        decisions so far replayed; ``merge_paths`` shares the common prefixes."""
        entry = self.kernel.regions[0][0]
        scripts: list[list[bool]] = [[]]
        paths: list[WarpRun] = []
        while scripts:
            if len(paths) >= MAX_PATHS:
                raise LiftError(f"cta{rank}.w{warp} has more than {MAX_PATHS} paths through "
                                "its run-time branches")
            self.w = WarpRun(rank, warp, ctaid, script=scripts.pop())
            if self.param_points:
                self.w.points = frozenset(range(len(self.param_points)))
            env: dict[str, Any] = {}
            args = [self.kernel_args[i] if i in self.kernel_args else
                    Dyn(None, f"kernel argument {self.arg_names.get(i, a)}")
                    for i, a in enumerate(entry.args)]
            self.exec_block(entry, env, args, Lanes([1] * WARP))
            if self.phase == 2:
                # the kernel's return: a traced op in a conformance compile (sites.py)
                k = op_site(entry.ops[-1]) if entry.ops else NO_SITE
                self.w.code.append(Exit(label="exit", site=NO_SITE if k == NO_SITE
                                        else record_for(k, Exit)))
            scripts.extend(self.w.pending)
            paths.append(self.w)
        return paths

    def decide(self, cond: Any, op: Op) -> bool:
        """A run-time condition after which the warp's two ways differ (a loop on a CLC
        response, a branch that leaves different values behind): this path takes one
        side, and the other side is a path of its own, run later."""
        return self._fork(op, ForkMarker(cond, True, self.loc(op)))

    def _fork(self, op: Op, mark: ForkMarker) -> bool:
        w = self.w
        if w.dyn_depth:
            raise self.error(op, "a run-time branch whose sides go on differently, inside "
                                 f"another run-time branch ({self.where(op)}): not supported")
        i = len(w.taken)
        if i < len(w.script):
            d = w.script[i]
        else:
            d = True
            w.pending.append(w.taken + [False])
        w.taken.append(d)
        if self.phase == 2:
            w.code.append(replace(mark, decision=d))
        return d

    # ------------------------------------------------------------------ symbolic values
    def decide_points(self, c: Any, op: Op, text: str = "") -> bool:
        """A condition over symbolic parameters (``c.vals[i]``: does it hold at point
        ``i``).  Where every point this path is still possible at decides it alike it
        is that; otherwise the path forks (a ``ParamSplit`` step, ``merge_paths``) and
        each side keeps the points it holds for, as ``model/compile.py`` does for a
        ``.pipe`` kernel."""
        if not isinstance(c, Sym):
            return bool(c)
        w = self.w
        pts = w.points if w.points is not None else frozenset(range(len(c.vals)))
        yes = frozenset(i for i in pts if c.vals[i])
        if yes == pts:
            return True
        if not yes:
            return False
        mask = tuple(bool(x) for x in c.vals)
        d = self._fork(op, ForkMarker(None, True, self.loc(op), mask,
                                      text or self.split_text(op)))
        w.points = yes if d else pts - yes
        return d

    def sym_text(self, v: Sym) -> str:
        """A ``Sym`` as the user named it: the ``@cute.jit`` argument it is, else
        a value computed from the symbolic parameters."""
        return self.sym_names.get(v, f"a value of {', '.join(self.param_names)}")

    def split_text(self, op: Op) -> str:
        """How a split reads in a trace: the user's source line."""
        uf = self.user_frame(op)
        src = linecache.getline(uf.file, uf.line).strip() if uf else ""
        names = ", ".join(self.param_names)
        return f"{src} ({names})" if src else f"a condition on {names}"

    def concrete(self, v: Any, op: Op) -> Any:
        """A ``Sym`` where a single value is needed: the path splits on its value
        (``K == 4``, then ``K == 5``, ...), as the ``.pipe`` compiler does where a warp
        needs a parameter's value.  In a tuple, leaf by leaf; a ``Shaped`` (a tensor
        with dynamic extents) is left to the op, which treats it as a run-time value
        unless it knows it (``shapes.py``)."""
        if isinstance(v, tuple) and not isinstance(v, Lanes) and has_sym(v):
            return tuple(self.concrete(x, op) for x in v)
        if not isinstance(v, Sym):
            return v
        w = self.w
        pts = sorted(w.points if w.points is not None else range(len(v.vals)))
        values = sorted({v.vals[i] for i in pts})
        names = ", ".join(self.param_names)
        for x in values[:-1]:
            if self.decide_points(Sym(tuple(int(y == x) for y in v.vals)), op,
                                  f"a value read at {self.where(op)} is {x} ({names})"):
                return x
        return values[-1]

    def restrict(self, v: Any) -> Any:
        """A ``Sym`` that this path's points give one value is that value (also inside
        a tuple or a ``Shaped``'s leaves)."""
        if isinstance(v, Sym) and self.w.points is not None:
            vals = {v.vals[i] for i in self.w.points}
            if len(vals) == 1:
                return vals.pop()
        elif isinstance(v, Shaped) and has_sym(v):
            return Shaped(tuple(self.restrict(x) for x in v.leaves))
        elif isinstance(v, tuple) and not isinstance(v, Lanes) and has_sym(v):
            return tuple(self.restrict(x) for x in v)
        return v

    @staticmethod
    def _has_sym(op: Op, env: dict) -> bool:
        return any(has_sym(env.get(h)) for h in op.operands)

    @staticmethod
    def pointwise_handler(fn: Any) -> Any:
        return lambda lf, op, env, mask: lf.pointwise(fn, op, env, mask)

    def pointwise(self, fn: Any, op: Op, env: dict, mask: Any) -> Any:
        """A pure integer op (``arith.*``) with ``Sym`` operands, point by point: a
        ``Sym`` of its results where they are integers, else (a per-lane or run-time
        result that differs between points) the operands' values split first."""
        syms = [h for h in dict.fromkeys(op.operands) if has_sym(env.get(h))]
        saved = {h: env[h] for h in syms}
        n = len(self.param_points)
        pts = sorted(self.w.points if self.w.points is not None else range(n))
        results: dict[int, Any] = {}
        try:
            for i in pts:
                for h in syms:
                    env[h] = at_point(saved[h], i)
                results[i] = fn(self, op, env, mask)
        finally:
            env.update(saved)
        outs = list(results.values())
        if all(r == outs[0] for r in outs):
            return outs[0]
        if len(op.results) == 1 and not any(isinstance(r, list) for r in outs):
            got = merge(results, n)  # ints, int tuples, Shaped: leaf by leaf
            if isinstance(got, Sym) and got not in self.sym_names:
                var = self.assigned_name(op)  # a counterexample's splits read
                if var:                       # "k_tiles > 3", not "a value of K > 3"
                    self.sym_names[got] = var
            if got is not None:
                return got
        for h in syms:
            env[h] = self.concrete(saved[h], op)
        return fn(self, op, env, mask)

    def exec_block(self, blk: Any, env: dict, args: list, mask: Any) -> Optional[list]:
        for a, v in zip(blk.args, args):
            env[a] = v
        for op in blk.ops:
            r = self.exec_op(op, env, mask)
            if r is not None:
                return r  # a terminator's operands
        return None

    def exec_op(self, op: Op, env: dict, mask: Any) -> Optional[list]:
        w = self.w
        w.ops += 1
        if w.ops > self.max_ops:
            raise self.error(op, f"cta{w.cta}.w{w.warp} evaluates more than {self.max_ops:,} "
                                 "ops (a loop with a very large trip count?): lower the "
                                 "problem size the entry compiles for")
        name = op.name
        if name in ("scf.yield", "scf.condition", "cuda.return", "gpu.return",
                    "func.return", "llvm.return"):
            return [self.val(env, h, op) for h in op.operands]
        if is_trace_record(op):
            return None  # pipeproof's own trace record (a conformance compile)
        fn = self.table.get(name)
        self.cur_mask = mask
        w.sites_given.clear()
        if self.phase == 2 and SITE_ATTR in op.attrs:  # the lanes that run a traced op
            k = op_site(op)
            bits = sum(1 << i for i in self.active(mask))
            if bits:
                self.site_lanes.setdefault(k, set()).add(bits)
        if fn is None:
            for prefix, f in self.prefixes:
                if name.startswith(prefix):
                    fn = f
                    break
        if self.param_points and name not in SYM_AWARE and self._has_sym(op, env):
            for h in op.operands:
                if h in env:
                    env[h] = self.restrict(env[h])
            if fn is not None and (name.startswith("arith.") or name in SHAPE_POINTWISE) \
                    and not op.regions and self._has_sym(op, env):
                fn = self.pointwise_handler(fn)
            else:
                for h in op.operands:  # any other use needs one value: split on it
                    if h in env:
                        env[h] = self.concrete(env[h], op)
        if fn is None:
            out = self.unknown_op(op)
        else:
            out = fn(self, op, env, mask)
        if op.results:
            if not isinstance(out, list):
                out = [out] * len(op.results) if len(op.results) > 1 else [out]
            for h, v in zip(op.results, out):
                env[h] = v
        return None

    def unknown_op(self, op: Op) -> Any:
        """An op no table knows: pure ops give an opaque value; an op that may touch
        synchronisation is an error (never silently dropped)."""
        if is_side_effecting(op.name):
            raise self.error(op, f"unsupported op {op.name}: pipeproof does not know what "
                                 f"it does to synchronisation ({self.where(op)})")
        if op.regions:
            raise self.error(op, f"unsupported op with regions {op.name} ({self.where(op)})")
        return OPAQUE

    def val(self, env: dict, h: str, op: Op) -> Any:
        try:
            return env[h]
        except KeyError:
            raise self.error(op, f"{op.name}: operand {h} is not defined here "
                                 "(unstructured control flow?)") from None

    def operands(self, op: Op, env: dict) -> list:
        return [self.val(env, h, op) for h in op.operands]

    @staticmethod
    def active(mask: Any) -> list[int]:
        if isinstance(mask, Lanes):
            return [i for i, x in enumerate(mask) if x]
        return list(range(WARP)) if mask else []

    # ------------------------------------------------------------------ emission
    def emit(self, instr: Optional[Instr]) -> int:
        if self.phase == 2:
            w = self.w
            if w.pending_clean and instr is not None and instr.is_sync:
                instr = replace(instr, pre=tuple(w.pending_clean) + instr.pre)
                w.pending_clean.clear()
            w.code.append(instr)
            if self._made is not None and instr is not None:
                self.call_info[id(instr)] = (instr,) + self._made
            self._made = None
        return len(self.w.code) - 1

    def make(self, cls: type, op: Op, what: str, **kw: Any) -> Instr:
        """An instruction labelled with the pipeline method and located at the user's line."""
        api = self.api_call(op)
        method = api.rsplit(".", 1)[-1] if api else ""
        label = f"{method} {what}" if method and not what.startswith(method) else what
        if self.phase == 2:
            self._made = (api, self.call_lanes(op, api))
        site = NO_SITE
        k = op_site(op)
        if k != NO_SITE and cls not in LOCAL_STEPS:
            rec = record_for(k, cls)
            if rec not in self.w.sites_given:
                self.w.sites_given.add(rec)
                site = rec
        return cls(loc=self.loc(op), label=label, site=site, **kw)

    def replaced(self, old: Instr, new: Instr) -> None:
        """``new`` stands where ``old`` was emitted (ghost effects added to it)."""
        info = self.call_info.pop(id(old), None)
        if info is not None:
            self.call_info[id(new)] = (new,) + info[1:]

    def call_lanes(self, op: Op, api: str) -> tuple[int, ...]:
        """The lanes that called the library method ``api`` the op belongs to: the mask
        before the first lane-dependent branch taken inside the same call (the library's
        own elections and lane predicates narrow the op's mask, not the caller's)."""
        if api:
            uf = self.user_frame(op)
            for o, m in self.mask_stack:
                if self.api_call(o) == api and self.user_frame(o) == uf:
                    return tuple(self.active(m))
        return tuple(self.active(self.cur_mask))

    def new_local(self, prefix: str) -> str:
        name = f"{prefix}{len(self.w.locals)}"
        self.w.locals.append(name)
        return name

    def note_side(self, op: Op, ref: BarRef) -> None:
        """Remember which side of which pipeline this warp is on (its role's name)."""
        api = self.api_call(op)
        m = re.search(r"\.(producer|consumer)_", api)
        if m:
            var = ref.array.split(".")[0]
            self.w.sides.setdefault(var, m.group(1))

    # ------------------------------------------------------------------ barriers
    def barrier(self, p: Any, op: Op) -> BarRef:
        """The model's name for the mbarrier at pointer ``p``."""
        if not isinstance(p, Ptr) or p.space != "smem":
            raise self.error(op, f"{op.name}: the mbarrier address is not known statically "
                                 f"({self.where(op)})")
        cta = self.w.cta if p.cta is None else p.cta
        if not 0 <= cta < self.cluster_size:
            raise self.error(op, f"{op.name}: CTA {cta} is outside the {self.cluster_size}-CTA "
                                 "cluster")
        if self.phase == 1:
            return BarRef(cta, "?", 0)
        bi = self.bars.get((p.alloc, p.off))
        if bi is None:
            raise self.error(op, f"{op.name} on shared memory that no mbarrier.init "
                                 f"initialises ({self.where(op)})")
        return BarRef(cta, bi.array, bi.stage)

    def learn_init(self, p: Ptr, count: int, op: Op) -> None:
        """Phase 1: an ``mbarrier.init`` at ``p``: what the user called it."""
        key = (p.alloc, p.off)
        api_frames = [f for f in self.frames(op)
                      if re.search(r"[/\\]cutlass[/\\](pipeline|utils)[/\\]", f.file)]
        create = next((f.function for f in reversed(api_frames)
                       if f.function.endswith((".create", ".__init__"))), "")
        cls = create.split(".")[0] if create else ""
        var = self.assigned_name(op)
        if not var:
            var = self.field_name(p) or "mbar"
        part = ""
        for f in api_frames:  # the library statement that built this barrier array
            txt = linecache.getline(f.file, f.line)
            if "full" in txt:
                part = "full"
            elif "empty" in txt:
                part = "empty"
            if part:
                break
        where = "|".join(f"{f.file}:{f.line}" for f in self.frames(op))
        bi = self.bars.setdefault(key, BarrierInfo(key))
        bi.signature = f"{var}|{cls}|{part}|{where}|{count}"
        bi.pipeline, bi.part, bi.cls = var, part, cls
        if bi.count is not None and bi.count != count:
            self.notes.append(f"the mbarrier at smem offset {p.off} is initialised with "
                              f"{bi.count} and with {count}")
        bi.count = count

    def store_buffer(self, v: Any) -> BufRef:
        """The smem a TMA store reads: ``store.<field>`` at its byte offset (``lower.py``
        numbers the offsets of one field as its stages)."""
        p = v.ptr if hasattr(v, "ptr") else v
        if not isinstance(p, Ptr) or p.space != "smem":
            return BufRef(self.w.cta, "store.smem", 0)
        return BufRef(self.w.cta, f"store.{self.field_name(p) or 'smem'}", p.off)

    def assigned_name(self, op: Op) -> str:
        """The variable the user's line assigns (``pipe = PipelineAsync.create(...)``)."""
        uf = self.user_frame(op)
        if uf is None:
            return ""
        m = re.match(r"\s*(?:self\.)?(\w+)\s*(?::[^=]*)?=(?!=)",
                     linecache.getline(uf.file, uf.line))
        return m.group(1) if m else ""

    def field_name(self, p: Ptr) -> str:
        name, fields = self.alloc_fields.get(p.alloc, ("", []))
        for f, sz, off in fields:
            if off <= p.off < off + sz:
                return f.removesuffix("_ptr").removesuffix("_array")
        return name

    def _name_barriers(self) -> None:
        """Group the barriers of one init site into an array, in address order, and
        name it ``<user variable>.<full|empty|...>``."""
        groups: dict[str, list[BarrierInfo]] = {}
        for bi in self.bars.values():
            groups.setdefault(bi.signature, []).append(bi)
        used: dict[str, int] = {}
        for sig in sorted(groups, key=lambda s: min(b.key for b in groups[s])):
            bis = sorted(groups[sig], key=lambda b: b.key)
            name = f"{bis[0].pipeline}.{bis[0].part or 'bar'}"
            if name in used:
                used[name] += 1
                name = f"{name}{used[name]}"
            else:
                used[name] = 0
            for i, b in enumerate(bis):
                b.array, b.stage = name, i


#: pure ops on integer tuples and layouts, evaluated point by point where an operand
#: holds a ``Sym`` (``Lifter.pointwise``; a dynamic extent on its way to a loop bound)
SHAPE_POINTWISE = frozenset({
    "cute.size", "cute.get", "cute.get_shape", "cute.get_stride", "cute.get_layout",
    "cute.get_leaves", "cute.get_scalars", "cute.to_int_tuple", "cute.make_int_tuple",
    "cute.make_shape", "cute.make_stride", "cute.tuple_add", "cute.tuple_mul",
    "cute.tuple_sub", "cute.tuple_div", "cute.ceil_div", "cute.local_tile",
    "cute.fast_divmod.create_divisor", "cute.fast_divmod.compute"})
#: ops that take a ``Sym`` operand as it is (the loop and branch handlers split on it)
SYM_AWARE = frozenset({"scf.for", "scf.if", "scf.while", "scf.yield", "scf.condition"})


@dataclass(frozen=True)
class ScalarParams:
    """Symbolic parameters of a lifted kernel: their names, the points of their domain
    (one per value combination) and, per run-time argument of the ``@cute.jit``
    function, its value at each point."""

    names: tuple[str, ...]
    points: tuple[tuple[int, ...], ...]
    args: dict
    #: per named dynamic extent of a fake tensor (``cute.sym_int32(symbol=...)``), its
    #: value at each point
    shapes: dict = field(default_factory=dict)


def is_side_effecting(name: str) -> bool:
    """Ops whose effect on synchronisation must be known (``nvvm.*`` but special
    registers, ``cute_nvgpu.arch.*``, inline assembly, LLVM intrinsics)."""
    if name.startswith("nvvm.read.ptx.sreg."):
        return False
    return name.startswith(("nvvm.", "cute_nvgpu.arch.", "llvm.inline_asm", "llvm.call",
                            "llvm.intr.", "gpu.barrier", "func.call", "cuda.call"))


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path
