"""Names a ``.pipe`` kernel can use besides its own variables.

They mirror the CuTe DSL: module prefixes (``cute.``, ``cutlass.pipeline.``,
``cute.arch.``, ``cpasync.`` ...) are accepted and ignored, so code copied from a kernel
reads the same.  Each builtin is a function ``f(cx, args, kwargs)`` evaluated by the
compiler for one warp; functions with run-time effects emit instructions through ``cx``.

Ghost and asynchronous-hardware builtins (``tma_load``, ``tma_store``, ``cp_async``,
``clc_query``, ``read``, ``write``, ``tcgen05_mma``, ``wgmma``...) stand for the data
movement a kernel does between pipeline calls; they are what lets the model check that
no stage buffer is read before it is full or overwritten before it is released.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from .cluster import ClusterVMNK, Layout, MaskRangeError, mask_ranks, tiled_divide
from .groups import WARP_SIZE, Agent, CooperativeGroup
from .pipeline_state import (PipelineStateVal, PipelineUserType, fill_tag_for_acquire,
                             fill_tag_for_wait, make_pipeline_state, state_from_index_phase)
from .pipelines.base import (PipelineBase, elected, release_effects, release_point_effects,
                             write_begin_effects, write_end_effects)
from .pipelines.gmem import GmemBuffer, GmemFlags
from .pipelines.smem_buffer import SmemBuffer
from .pipelines.pipeline_async import BarrierPtr
from .program import (Arrive, Arrival, GmemFence, BarRef, BufRef, ClusterArrive, ClusterWait,
                      CompleteTx, CpAsync, CpAsyncCommit, CpAsyncWaitGroup, Delivery, ExpectTx, FenceMbarInit, GhostEffect,
                      WgmmaWait,
                      Nop, TmaLoad, TmaStore, Wait, DynExpr, dyn_locals)
from .properties import Prop
from . import wgmma as wgmma_rule

#: the fill tag of reads/writes named by a bare stage index (which fill is unknown)
ANY_FILL = -2


@dataclass(frozen=True)
class Module:
    """A module prefix such as ``cute.arch``: attribute lookup falls through to builtins."""

    path: str


@dataclass(frozen=True)
class Namespace:
    """An enum-like namespace: ``Agent``, ``PipelineUserType``, ``PipelineOp``."""

    name: str
    members: tuple[tuple[str, Any], ...]

    def get(self, attr: str) -> Any:
        for k, v in self.members:
            if k == attr:
                return v
        raise KeyError(attr)


@dataclass(frozen=True)
class Builtin:
    name: str
    fn: Callable[..., Any]

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Builtin) and other.name == self.name


@dataclass(frozen=True)
class PipelineClassRef:
    """A pipeline class name: ``PipelineTmaAsync.create(...)``."""

    cls: Any

    @property
    def name(self) -> str:
        return self.cls.CLASS


@dataclass(frozen=True)
class ElectOne:
    """The value of ``elect_one()``: used only as ``with elect_one():``."""


MODULE_ROOTS = ("cute", "cutlass", "pipeline", "cpasync", "tcgen05", "warpgroup", "arch",
                "utils", "nvgpu", "fa", "flash_attn", "sm90", "sm100", "core")


# --------------------------------------------------------------------------- helpers


def _args(cx: Any, args: tuple, kw: dict, names: tuple[str, ...], what: str,
          required: int = 0) -> list:
    """Bind positional and keyword arguments to ``names`` (missing ones are None)."""
    out: list = [None] * len(names)
    for i, a in enumerate(args):
        if i >= len(names):
            cx.error(f"{what} takes at most {len(names)} positional arguments")
        out[i] = a
    for k in list(kw):
        if k in names:
            out[names.index(k)] = kw.pop(k)
    cx.no_more_kwargs(kw, what, names)
    for i in range(required):
        if out[i] is None:
            cx.error(f"{what} needs argument {names[i]!r}")
    return out


def _state_arg(cx: Any, pipe: Any, x: Any, what: str) -> PipelineStateVal:
    from .pipelines.participants import Handle, PipelineConsumer, PipelineProducer

    if isinstance(x, Handle):
        return x.state
    if isinstance(x, (PipelineProducer, PipelineConsumer)):
        return x.state
    if isinstance(x, PipelineStateVal):
        return x
    if isinstance(x, int) and not isinstance(x, bool) and isinstance(pipe, PipelineBase):
        if not 0 <= x < pipe.decl.stages:
            cx.error(f"{what}: stage index {x} outside [0, {pipe.decl.stages})")
        return state_from_index_phase(pipe.decl.stages, x, 0)
    cx.error(f"{what} expects a pipeline state, handle or stage index, got {_show(x)}")


def _pipe_arg(cx: Any, x: Any, what: str) -> PipelineBase:
    if not isinstance(x, PipelineBase) or isinstance(x, GmemFlags):
        cx.error(f"{what} expects a pipeline as its first argument, got {_show(x)}")
    if isinstance(x, GmemBuffer) and what not in ("read", "write"):
        cx.error(f"{what}: gmem_buffer {x.decl.var} is global memory; only read/write "
                 "reach it in .pipe (TMA, cp.async and MMA steps take shared memory)")
    return x


def _mask_arg(cx: Any, mask: Any, what: str) -> Optional[int]:
    if mask is None:
        return None
    if not isinstance(mask, int) or isinstance(mask, bool):
        cx.error(f"{what}: the multicast mask must be a static int, got {_show(mask)}")
    if mask <= 0:
        cx.error(f"{what}: an empty multicast mask (0) sends the copy nowhere")
    if mask >> cx.kernel.cluster_size:
        bad = [r for r in mask_ranks(mask) if r >= cx.kernel.cluster_size]
        cx.error(f"{what}: multicast mask {mask:#x} selects CTA rank(s) "
                 f"{', '.join(map(str, bad))} outside the cluster of {cx.kernel.cluster_size}",
                 prop=Prop.MASK_OUTSIDE_CLUSTER)
    return mask


# --------------------------------------------------------------------------- values


def b_cooperative_group(cx: Any, args: tuple, kw: dict) -> CooperativeGroup:
    agent, size, _alignment = _args(cx, args, kw, ("agent", "size", "alignment"),
                                    "CooperativeGroup", 1)
    try:
        return CooperativeGroup(agent, 1 if size is None else size)
    except ValueError as e:
        cx.error(str(e))


def b_make_pipeline_state(cx: Any, args: tuple, kw: dict) -> PipelineStateVal:
    utype, stages = _args(cx, args, kw, ("type", "stages"), "make_pipeline_state", 2)
    if not isinstance(stages, int) or stages < 1:
        cx.error(f"make_pipeline_state: stages must be a static int >= 1, got {_show(stages)}")
    try:
        st = make_pipeline_state(utype, stages, cx.track_count)
    except ValueError as e:
        cx.error(str(e))
    # a state made afresh inside a loop (e.g. per persistent tile) restarts its phase bit
    # while the barriers go on: only its parity is meaningful to the model
    return st if not cx.in_loop else replace(st, tracked=False)


def b_pipeline_state(cx: Any, args: tuple, kw: dict) -> PipelineStateVal:
    stages, count, index, phase = _args(cx, args, kw, ("stages", "count", "index", "phase"),
                                        "PipelineState", 4)
    for n, v in (("stages", stages), ("count", count), ("index", index), ("phase", phase)):
        if not isinstance(v, int):
            cx.unsupported(f"PipelineState({n}=...) with a run-time value")
    return PipelineStateVal(stages, index, phase & 1, count if cx.track_count else None,
                            tracked=False)


def b_pipeline_state_simple(cx: Any, args: tuple, kw: dict) -> PipelineStateVal:
    """FlashAttention's ``PipelineStateSimple(stages, phase_index)``: one counter
    ``phase_index = stages * wraps + index``; ``phase`` is not reduced mod 2 in FA, only
    its parity reaches the barrier, which is all the model keeps."""
    stages, phase_index = _args(cx, args, kw, ("stages", "phase_index"), "PipelineStateSimple", 2)
    if not isinstance(stages, int) or stages < 1 or not isinstance(phase_index, int):
        cx.unsupported("PipelineStateSimple with run-time stages or phase_index")
    wraps, index = divmod(phase_index, stages)
    # FA's make_pipeline_state: Producer -> phase_index = stages (phase 1 = the fresh
    # barrier's "completed" phase -1), Consumer -> 0; other starting points keep parity only
    if phase_index == stages:
        st = make_pipeline_state(PipelineUserType.Producer, stages, cx.track_count, simple=True)
    elif phase_index == 0:
        st = make_pipeline_state(PipelineUserType.Consumer, stages, cx.track_count, simple=True)
    else:
        st = PipelineStateVal(stages, index, wraps & 1, 0 if cx.track_count else None,
                              tracked=False, simple=True)
    return st if not cx.in_loop else replace(st, tracked=False)


def b_make_layout(cx: Any, args: tuple, kw: dict) -> Layout:
    """``make_layout(shape, stride=None)``: CuTe's compact column-major default (size-1
    modes stride 0) or the user's stride, congruent with the shape."""
    shape, stride = _args(cx, args, kw, ("shape", "stride"), "make_layout", 1)
    for what, v in (("shape", shape), ("stride", stride)):
        if v is not None:
            for e in _flatten(v):
                if isinstance(e, DynExpr):
                    cx.unsupported(f"make_layout with a run-time {what}")
    if stride is not None and any(isinstance(e, int) and not isinstance(e, bool) and e < 0
                                  for e in _flatten(stride)):
        cx.unsupported(f"make_layout with a negative stride {_show(stride)}")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        return Layout(shape, stride)
    except (ValueError, TypeError) as e:
        cx.error(f"make_layout: {e}")


def _flatten(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(_flatten(e))
        return out
    return [x]


def b_tiled_divide(cx: Any, args: tuple, kw: dict) -> Layout:
    layout, tiler = _args(cx, args, kw, ("layout", "tiler"), "tiled_divide", 2)
    if isinstance(tiler, int):
        tiler = (tiler,)
    try:
        return tiled_divide(layout, tuple(_flatten(tiler)))
    except (ValueError, AttributeError) as e:
        cx.error(f"tiled_divide: {e}")


def _show(v: Any) -> str:
    from .describe import describe

    return describe(v)


def b_size(cx: Any, args: tuple, kw: dict) -> int:
    """``cute.size(x, mode=[...])``: the size of a layout, shape or int; ``mode`` is a path
    into the (nested) shape: ``[i]`` is mode i, ``[i, j]`` sub-mode j of mode i (CuTe
    DSL ``cute.size``; checked against the installed DSL, finding F11 was wrong)."""
    (x, mode) = _args(cx, args, kw, ("a", "mode"), "size", 1)
    shape = x.shape if isinstance(x, Layout) else x
    if mode is not None:
        if not isinstance(mode, (tuple, list)) or not all(
                isinstance(m, int) and not isinstance(m, bool) for m in mode):
            cx.error(f"size(..., mode={_show(mode)}): mode must be a list of ints, a path "
                     f"into the shape such as mode=[0]")
        for m in mode:
            if not isinstance(shape, (tuple, list)) or not 0 <= m < len(shape):
                cx.error(f"size(): mode {_show(list(mode))} is not a mode of {_show(x)}")
            shape = shape[m]
    if isinstance(shape, (tuple, list)):
        n = 1
        for e in _flatten(shape):
            if isinstance(e, bool) or not isinstance(e, int):
                cx.error(f"size(): the shape {_show(x)} holds {_show(e)}, not an int")
            n *= e
        return n
    if isinstance(shape, int) and not isinstance(shape, bool):
        return shape
    cx.error(f"size() of {_show(x)}: expected a layout, a shape or an int")


def b_image_mask(cx: Any, args: tuple, kw: dict) -> int:
    layout, coord, mode = _args(cx, args, kw, ("layout", "coord", "mode"),
                                "make_layout_image_mask", 3)
    return _image_mask(cx, layout, coord, mode, "make_layout_image_mask")


def b_tma_multicast_mask(cx: Any, args: tuple, kw: dict) -> int:
    layout, coord, mode = _args(cx, args, kw, ("cta_layout_vmnk", "cta_coord_vmnk",
                                               "mcast_mode"), "create_tma_multicast_mask", 3)
    return _image_mask(cx, layout, coord, mode, "create_tma_multicast_mask")


def _image_mask(cx: Any, layout: Any, coord: Any, mode: Any, what: str) -> int:
    if not isinstance(layout, Layout):
        cx.error(f"{what}: first argument must be a layout")
    if isinstance(coord, list):
        coord = tuple(coord)
    if not isinstance(coord, tuple) or len(coord) != len(layout.shape) \
            or not all(isinstance(c, (int, tuple)) and not isinstance(c, bool)
                       for c in _flatten(coord)):
        cx.error(f"{what}: coordinate {_show(coord)} does not match layout shape "
                 f"{_show(layout.shape)}")
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode < len(layout.shape):
        cx.error(f"{what}: mode {_show(mode)} outside the layout's {len(layout.shape)} modes")
    try:
        return layout.image_mask(coord, mode)
    except MaskRangeError as e:
        cx.error(f"{what}: layout {_show(layout.shape)}:{_show(layout.stride)} at "
                 f"{_show(coord)}: {e}", prop=Prop.MASK_OUTSIDE_CLUSTER)
    except ValueError as e:
        cx.error(f"{what}: {e}")


def b_get_coord(cx: Any, layout: Layout, args: tuple, kw: dict, hier: bool = False) -> tuple:
    """``layout.get_flat_coord(rank)`` / ``get_hier_coord(rank)``: the layout's inverse
    (per mode ``(rank // stride) % shape``), strides honoured."""
    name = "get_hier_coord" if hier else "get_flat_coord"
    (rank,) = _args(cx, args, kw, ("rank",), name, 1)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < layout.size:
        cx.error(f"{name}: rank {_show(rank)} outside a layout of {layout.size} CTAs")
    return layout.hier_coord(rank) if hier else layout.coord(rank)


def b_warp_idx(cx: Any, args: tuple, kw: dict) -> int:
    _args(cx, args, kw, (), "warp_idx")
    return cx.warp


def b_identity(cx: Any, args: tuple, kw: dict) -> Any:
    (x,) = _args(cx, args, kw, ("x",), "make_warp_uniform", 1)
    return x


def b_block_idx_in_cluster(cx: Any, args: tuple, kw: dict) -> int:
    _args(cx, args, kw, (), "block_idx_in_cluster")
    return cx.cta


def b_cluster_idx(cx: Any, args: tuple, kw: dict) -> int:
    """The cluster's linear index in the grid (CuTe DSL ``cute.arch.cluster_idx()`` gives
    (x, y, z); ``.pipe`` gives x + gx * (y + gy * z) for a grid of gx * gy * gz clusters)."""
    _args(cx, args, kw, (), "cluster_idx")
    cx.compiler.uses_grid = True  # every cluster of the grid runs its own path
    return cx.cluster


def b_block_idx(cx: Any, args: tuple, kw: dict) -> int:
    """The CTA's linear index in the grid: ``cluster_idx() * cluster_size() +
    block_idx_in_cluster()`` (CuTe DSL ``cute.arch.block_idx()`` is (x, y, z))."""
    _args(cx, args, kw, (), "block_idx")
    cx.compiler.uses_grid = True
    return cx.cluster * cx.kernel.cluster_size + cx.cta


def b_num_clusters(cx: Any, args: tuple, kw: dict) -> int:
    """Clusters in the grid (``launch(grid=...)``; an error without a grid)."""
    _args(cx, args, kw, (), "num_clusters")
    if cx.kernel.grid_clusters is None:
        cx.error("num_clusters(): the kernel's launch(...) gives no grid= (the number of "
                 "clusters is unbounded)")
    return cx.kernel.grid_clusters


def b_gmem_flags(cx: Any, args: tuple, kw: dict) -> GmemFlags:
    """``gmem_flags(count=1)``: global-memory counters shared by the grid
    (``model/pipelines/gmem.py``), named after the variable it is assigned to."""
    (count,) = _args(cx, args, kw, ("count",), "gmem_flags")
    n = 1 if count is None else cx.as_int(count, "count")
    if n < 1:
        cx.error(f"gmem_flags(count={n}): at least one flag")
    var = cx.compiler.current_target or f"flags_{cx.loc.line}"
    return GmemFlags.declare(cx, var, n)


def b_gmem_buffer(cx: Any, args: tuple, kw: dict) -> GmemBuffer:
    """``gmem_buffer(stages=1)``: a global-memory data region shared by the grid (a
    split-K partial-sum workspace), named after the variable it is assigned to."""
    (stages,) = _args(cx, args, kw, ("stages",), "gmem_buffer")
    n = 1 if stages is None else cx.as_int(stages, "stages")
    if n < 1:
        cx.error(f"gmem_buffer(stages={n}): at least one stage")
    var = cx.compiler.current_target or f"gmem_{cx.loc.line}"
    return GmemBuffer.declare_global(cx, var, n)


def b_fence_acq_rel_gpu(cx: Any, args: tuple, kw: dict) -> None:
    """``fence.acq_rel.gpu`` (CuTe DSL ``cute.arch.fence_acq_rel_gpu()``): with relaxed
    flag loads before it an acquire, with relaxed flag updates after it a release
    (``model/pipelines/gmem.py``).  A release point of the warp."""
    _args(cx, args, kw, (), "fence_acq_rel_gpu")
    cx.emit(GmemFence(loc=cx.loc, label="fence.acq_rel.gpu", pre=release_point_effects(cx)))


def b_cluster_size(cx: Any, args: tuple, kw: dict) -> int:
    _args(cx, args, kw, (), "cluster_size")
    return cx.kernel.cluster_size


def b_elect_one(cx: Any, args: tuple, kw: dict) -> ElectOne:
    _args(cx, args, kw, (), "elect_one")
    return ElectOne()


def b_launch(cx: Any, args: tuple, kw: dict) -> None:
    kw.clear()
    return None


#: the most elements ``range(...)`` may give as a value (a list of warps or CTAs); a for
#: loop's trip count has its own limit (model/compile.py MAX_TRIP_COUNT)
MAX_RANGE_LEN = 4096


def _range(*a: Any) -> tuple:
    if any(isinstance(x, bool) or not isinstance(x, int) for x in a):
        raise TypeError("range() takes ints")
    r = range(*a)
    try:
        n = len(r)
    except OverflowError:
        n = MAX_RANGE_LEN + 1
    if n > MAX_RANGE_LEN:
        raise ValueError(f"{n if n <= 10**30 else 'too many'} elements; at most "
                         f"{MAX_RANGE_LEN} here")
    return tuple(r)


def _pyfn(name: str, f: Callable[..., Any]) -> Builtin:
    def fn(cx: Any, args: tuple, kw: dict) -> Any:
        if kw:
            cx.error(f"{name}() takes no keyword arguments")
        if name in ("min", "max") and len(args) == 2 and \
                any(isinstance(a, DynExpr) for a in args) and \
                all(isinstance(a, (int, DynExpr)) and not isinstance(a, bool) for a in args) \
                and not any(dyn_locals(a) for a in args):
            # min/max of a symbolic parameter: folded into parameter splits by the compiler
            wrap = [a if isinstance(a, DynExpr) else DynExpr("const", (a,)) for a in args]
            return DynExpr(name, tuple(wrap))
        if any(not isinstance(a, (int, bool, tuple)) for a in args):
            cx.unsupported(f"{name}() of a run-time value")
        try:
            return f(*args)
        except (TypeError, ValueError) as e:
            cx.error(f"{name}(): {e}")

    return Builtin(name, fn)


# --------------------------------------------------------------------------- synchronisation


def b_sync_threads(cx: Any, args: tuple, kw: dict) -> None:
    _args(cx, args, kw, (), "sync_threads")
    cx.named_barrier(0, None, True, True, "sync_threads() (bar.sync 0)")


def b_barrier(cx: Any, args: tuple, kw: dict) -> None:
    bid, n = _args(cx, args, kw, ("barrier_id", "number_of_threads"), "barrier")
    bid = 0 if bid is None else bid
    cx.named_barrier(cx.as_int(bid, "barrier_id"), None if n is None else cx.as_int(n, "number_of_threads"),
                     True, True, f"barrier(id={bid}, threads={n})")


def b_barrier_arrive(cx: Any, args: tuple, kw: dict) -> None:
    bid, n = _args(cx, args, kw, ("barrier_id", "number_of_threads"), "barrier_arrive", 2)
    cx.named_barrier(cx.as_int(bid, "barrier_id"), cx.as_int(n, "number_of_threads"), False,
                     True, f"barrier_arrive(id={bid}, threads={n})")


def _cluster_arrive(relaxed: bool) -> Callable[..., None]:
    def fn(cx: Any, args: tuple, kw: dict) -> None:
        _args(cx, args, kw, ("aligned",), "cluster_arrive")
        cx.emit(ClusterArrive(relaxed=relaxed, loc=cx.loc,
                              label="cluster_arrive_relaxed()" if relaxed else "cluster_arrive()",
                              pre=release_point_effects(cx)))
    return fn


def b_cluster_wait(cx: Any, args: tuple, kw: dict) -> None:
    _args(cx, args, kw, ("aligned",), "cluster_wait")
    cx.emit(ClusterWait(loc=cx.loc, label="cluster_wait()"))


def b_cluster_sync(cx: Any, args: tuple, kw: dict) -> None:
    _cluster_arrive(False)(cx, args, kw)
    b_cluster_wait(cx, (), {})


def b_mbarrier_init_fence(cx: Any, args: tuple, kw: dict) -> None:
    _args(cx, args, kw, (), "mbarrier_init_fence")
    cx.emit(FenceMbarInit(cta=cx.cta, loc=cx.loc,
                          label="mbarrier_init_fence() (fence.mbarrier_init.release.cluster)"))


def b_pipeline_init_arrive(cx: Any, args: tuple, kw: dict) -> None:
    """``pipeline_init_arrive``: the fence, then a cluster arrive only for clusters > 1."""
    shape, relaxed = _args(cx, args, kw, ("cluster_shape_mn", "is_relaxed"),
                           "pipeline_init_arrive")
    _shape_ints(cx, shape, "pipeline_init_arrive")
    b_mbarrier_init_fence(cx, (), {})
    if shape is not None and b_size(cx, (shape,), {}) > 1:
        _check_cluster_shape(cx, shape, "pipeline_init_arrive")
        _cluster_arrive(bool(relaxed))(cx, (), {})


def b_pipeline_init_wait(cx: Any, args: tuple, kw: dict) -> None:
    """``pipeline_init_wait``: ``sync_threads`` without a cluster, else ``cluster_wait``."""
    (shape,) = _args(cx, args, kw, ("cluster_shape_mn",), "pipeline_init_wait")
    _shape_ints(cx, shape, "pipeline_init_wait")
    if shape is None or b_size(cx, (shape,), {}) == 1:
        b_sync_threads(cx, (), {})
    else:
        _check_cluster_shape(cx, shape, "pipeline_init_wait")
        b_cluster_wait(cx, (), {})


def _shape_ints(cx: Any, shape: Any, what: str) -> None:
    """``cluster_shape_mn``: an int, a tuple of ints or a layout (None: absent)."""
    if shape is None or isinstance(shape, Layout):  # a Layout's shape is checked on build
        return
    for e in _flatten(shape):
        if isinstance(e, bool) or not isinstance(e, int) or e < 1:
            cx.error(f"{what}: cluster_shape_mn {_show(shape)} must hold positive ints, "
                     f"not {_show(e)}")


def _check_cluster_shape(cx: Any, shape: Any, what: str) -> None:
    size = b_size(cx, (shape,), {})
    if size != cx.kernel.cluster_size:
        cx.error(f"{what}: cluster_shape_mn {shape} has {size} CTAs but the kernel is "
                 f"launched with {cx.kernel.cluster_size}")


def b_agent_sync(cx: Any, args: tuple, kw: dict) -> None:
    group, relaxed = _args(cx, args, kw, ("group", "is_relaxed"), "agent_sync", 1)
    if group == Agent.ThreadBlock:
        b_sync_threads(cx, (), {})
    elif group == Agent.ThreadBlockCluster:
        _cluster_arrive(bool(relaxed))(cx, (), {})
        b_cluster_wait(cx, (), {})
    else:
        cx.error("agent_sync supports Agent.ThreadBlock and Agent.ThreadBlockCluster")


def b_fence_proxy_async(cx: Any, args: tuple, kw: dict) -> None:
    kw.clear()
    effects = cx.proxy_fence()
    cx.attach(effects, "fence.proxy.async.shared::cta")


# --------------------------------------------------------------------------- raw mbarrier ops


def _bar_arg(cx: Any, ptr: Any, what: str) -> BarRef:
    if not isinstance(ptr, BarrierPtr):
        cx.error(f"{what} expects an mbarrier pointer (producer_get_barrier(state), "
                 f"handle.barrier, ...), got {_show(ptr)}")
    return ptr.bar


def _peer(cx: Any, bar: BarRef, peer: Any, what: str) -> BarRef:
    if peer is None:
        return bar
    r = cx.as_int(peer, "peer_cta_rank_in_cluster")
    if not 0 <= r < cx.kernel.cluster_size:
        cx.error(f"{what}: peer CTA rank {r} is outside the cluster of {cx.kernel.cluster_size}",
                 prop=Prop.MASK_OUTSIDE_CLUSTER)
    return BarRef(r, bar.array, bar.stage)


def _scope_arg(cx: Any, scope: Any, what: str) -> str:
    """``scope="cta"|"cluster"``: the memory scope of the arrive's release (PTX
    ``mbarrier.arrive.release.{cta,cluster}``; a pipeproof extension of the CuTe DSL
    call, whose arrives are always ``.cta``)."""
    if scope is None:
        return "cta"
    if scope not in ("cta", "cluster"):
        cx.error(f"{what}: scope must be \"cta\" or \"cluster\", not {_show(scope)}")
    return scope


def b_mbarrier_arrive(cx: Any, args: tuple, kw: dict) -> None:
    ptr, peer, scope = _args(cx, args, kw, ("mbar_ptr", "peer_cta_rank_in_cluster", "scope"),
                             "mbarrier_arrive", 1)
    bar = _peer(cx, _bar_arg(cx, ptr, "mbarrier_arrive"), peer, "mbarrier_arrive")
    sc = _scope_arg(cx, scope, "mbarrier_arrive")
    cx.emit(Arrive(arrivals=(Arrival(bar, len(cx.lanes), 0),), loc=cx.loc, scope=sc,
                   label=f"mbarrier_arrive({bar}{', release.cluster' if sc == 'cluster' else ''})"
                         f" x{len(cx.lanes)} lanes",
                   pre=release_point_effects(cx)))


def b_mbarrier_arrive_and_expect_tx(cx: Any, args: tuple, kw: dict) -> None:
    ptr, nbytes, peer, scope = _args(cx, args, kw, ("mbar_ptr", "bytes",
                                                    "peer_cta_rank_in_cluster", "scope"),
                                     "mbarrier_arrive_and_expect_tx", 2)
    bar = _peer(cx, _bar_arg(cx, ptr, "mbarrier_arrive_and_expect_tx"), peer,
                "mbarrier_arrive_and_expect_tx")
    tx = cx.as_int(nbytes, "bytes")
    sc = _scope_arg(cx, scope, "mbarrier_arrive_and_expect_tx")
    cx.emit(Arrive(arrivals=(Arrival(bar, len(cx.lanes), tx * len(cx.lanes)),), loc=cx.loc,
                   scope=sc,
                   label=f"mbarrier_arrive_and_expect_tx({bar}, {tx} B) x{len(cx.lanes)} lanes",
                   pre=release_point_effects(cx)))


def b_mbarrier_expect_tx(cx: Any, args: tuple, kw: dict) -> None:
    ptr, nbytes, peer = _args(cx, args, kw, ("mbar_ptr", "bytes", "peer_cta_rank_in_cluster"),
                              "mbarrier_expect_tx", 2)
    bar = _peer(cx, _bar_arg(cx, ptr, "mbarrier_expect_tx"), peer, "mbarrier_expect_tx")
    tx = cx.as_int(nbytes, "bytes") * len(cx.lanes)
    cx.emit(ExpectTx(bar=bar, tx=tx, loc=cx.loc, label=f"mbarrier_expect_tx({bar}, {tx} B)"))


def b_mbarrier_complete_tx(cx: Any, args: tuple, kw: dict) -> None:
    ptr, nbytes, peer = _args(cx, args, kw, ("mbar_ptr", "bytes", "peer_cta_rank_in_cluster"),
                              "mbarrier_complete_tx", 2)
    bar = _peer(cx, _bar_arg(cx, ptr, "mbarrier_complete_tx"), peer, "mbarrier_complete_tx")
    tx = cx.as_int(nbytes, "bytes") * len(cx.lanes)
    cx.emit(CompleteTx(bar=bar, tx=tx, loc=cx.loc, label=f"mbarrier_complete_tx({bar}, {tx} B)"))


def b_mbarrier_wait(cx: Any, args: tuple, kw: dict) -> None:
    ptr, phase = _args(cx, args, kw, ("mbar_ptr", "phase"), "mbarrier_wait", 2)
    bar = _bar_arg(cx, ptr, "mbarrier_wait")
    if bar.cta != cx.cta:
        cx.fail(Prop.REMOTE_WAIT, "mbarrier waits only work on the CTA's own barriers")
        return
    p = cx.as_int(phase, "phase")
    cx.emit(Wait(bar=bar, parity=p & 1, ghost=None, loc=cx.loc,
                 label=f"mbarrier_wait({bar}, phase={p & 1})"))


# --------------------------------------------------------------------------- data movement


def b_tma_load(cx: Any, args: tuple, kw: dict) -> None:
    """A TMA load of ``bytes`` per destination CTA into the stage of ``state``.

    The copy is issued by one elected lane (``cute.copy`` of a TMA atom elects itself),
    lands in the stage buffer of every CTA of ``mcast_mask`` (or only this CTA), and
    completes ``bytes`` of tx on the barrier at the same offset in each destination --
    or, for a 2-CTA (``cta_group::2``) pipeline, on the pair leader's barrier.
    """
    pipe, state, nbytes, mask, bar_ptr = _args(
        cx, args, kw, ("pipeline", "state", "bytes", "mcast_mask", "tma_bar_ptr"),
        "tma_load", 3)
    pipe = _pipe_arg(cx, pipe, "tma_load")
    st = _state_arg(cx, pipe, state, "tma_load")
    nb = cx.as_int(nbytes, "bytes")
    if nb <= 0 or nb % 16:
        cx.error(f"tma_load: bytes={nb} must be a positive multiple of 16 (PTX ISA "
                 "cp.async.bulk size rule)")
    mask = _mask_arg(cx, mask, "tma_load")
    if not elected(cx, "tma_load (cute.copy of a TMA atom)"):
        return
    if not hasattr(pipe, "tma_target_cta"):
        cx.error(f"tma_load into a {pipe.decl.cls}: its producer is not a TMA load")
    if isinstance(pipe, SmemBuffer) and bar_ptr is None:
        cx.error(f"tma_load into smem_buffer {pipe.decl.var}: a region has no barrier of "
                 "its own; pass tma_bar_ptr= (a raw mbarrier, smem_mbarrier())")
    base = _bar_arg(cx, bar_ptr, "tma_load") if bar_ptr is not None else pipe.bar("full", st.index)
    dests = mask_ranks(mask) if mask is not None else (cx.cta,)
    tag = ANY_FILL if isinstance(state, int) else fill_tag_for_acquire(st)
    deliveries = []
    for r in dests:
        target = pipe.tma_target_cta(cx.cta, r)
        deliveries.append(Delivery(BarRef(target, base.array, base.stage), nb,
                                   pipe.buf(st.index, r), tag))
    cx.emit(TmaLoad(deliveries=tuple(deliveries), loc=cx.loc,
                    label=f"tma_load({pipe.decl.var} stage {st.index}, {nb} B"
                    + (f", mcast_mask={mask:#x}" if mask is not None else "") + ")",
                    pre=tuple(GhostEffect("async_write_begin", d.buf, tag) for d in deliveries)))


def b_tma_store(cx: Any, args: tuple, kw: dict) -> None:
    """A TMA store (``cute.copy`` of a shared-to-global TMA atom) from buffer ``index``.

    The DSL does not elect for it: every active lane issues the bulk copy, into its own
    bulk group (checked against ``cute.compile``'s PTX in ``tests/test_cute_lowering.py``).
    Inside ``elect_one()`` that is one store; outside, the warp's 32 identical stores read
    the same buffer and are committed and waited for together, so they are one step
    here (their global-memory writes are not modelled)."""
    pipe, index = _args(cx, args, kw, ("pipeline", "index"), "tma_store", 2)
    pipe = _pipe_arg(cx, pipe, "tma_store")
    i = cx.as_int(index, "index") % pipe.decl.stages
    buf = pipe.buf(i)
    # the issuing warp's own stores to the buffer are ordered before its store by program
    # order (and fence.proxy.async, which async_read checks); other warps' stores must
    # have been released by a barrier
    own = write_end_effects(cx, (buf,))
    cx.emit(TmaStore(buf=buf, loc=cx.loc, label=f"tma_store({pipe.decl.var} buffer {i})"
                     + ("" if len(cx.lanes) == 1 else f" x{len(cx.lanes)} lanes"),
                     pre=own + (GhostEffect("async_read", buf),)))


def _region_args(cx: Any, args: tuple, kw: dict, what: str) -> tuple[PipelineBase, Any]:
    """``(pipeline, state)``; a plain region's stage index may be left out (stage 0)."""
    pipe, state = _args(cx, args, kw, ("pipeline", "state"), what, 1)
    pipe = _pipe_arg(cx, pipe, what)
    if state is None:
        if not isinstance(pipe, SmemBuffer):
            cx.error(f"{what} needs argument 'state'")
        state = 0
    return pipe, state


def b_cp_async(cx: Any, args: tuple, kw: dict) -> None:
    """``cp.async`` copies by the active lanes into a stage: they complete at the warp's
    next ``cp.async.mbarrier.arrive`` (PipelineCpAsync's commit) or with the group the
    next ``cp_async_commit_group()`` closes."""
    pipe, state = _region_args(cx, args, kw, "cp_async")
    st = _state_arg(cx, pipe, state, "cp_async")
    buf = pipe.buf(st.index)
    tag = ANY_FILL if isinstance(state, int) else fill_tag_for_acquire(st)
    cx.add_cp_async_effect(GhostEffect("async_write_end", buf, tag))
    cx.emit(CpAsync(buf=buf, tag=tag, loc=cx.loc,
                    label=f"cp_async into {pipe.decl.var} stage {st.index} "
                    f"({len(cx.lanes)} lanes)", pre=(GhostEffect("async_write_begin", buf, tag),)))


def b_cp_async_commit_group(cx: Any, args: tuple, kw: dict) -> None:
    """``cp.async.commit_group`` (``cute.arch.cp_async_commit_group``): the warp's copies
    since its last commit form a group; their writes end when the group completes."""
    _args(cx, args, kw, (), "cp_async_commit_group")
    pending = tuple(sorted(cx.ghost.cp_async, key=lambda g: (g.buf, g.kind, g.tag)))
    cx.ghost = replace(cx.ghost, cp_async=frozenset())
    cx.emit(CpAsyncCommit(effects=pending, loc=cx.loc, label="cp_async_commit_group()"))


def b_cp_async_wait_group(cx: Any, args: tuple, kw: dict) -> None:
    """``cp.async.wait_group n`` (``cute.arch.cp_async_wait_group``): wait until at most
    ``n`` of the warp's most recent groups are pending."""
    (n,) = _args(cx, args, kw, ("n",), "cp_async_wait_group", 1)
    k = cx.as_int(n, "n")
    if k < 0:
        cx.error(f"cp_async_wait_group({k}): n must be at least 0")
    cx.emit(CpAsyncWaitGroup(n=k, loc=cx.loc, label=f"cp_async_wait_group({k})"))


def b_cp_async_wait_all(cx: Any, args: tuple, kw: dict) -> None:
    """``cp.async.wait_all``: a commit of the pending copies, then ``wait_group 0``."""
    _args(cx, args, kw, (), "cp_async_wait_all")
    b_cp_async_commit_group(cx, (), {})
    cx.emit(CpAsyncWaitGroup(n=0, loc=cx.loc, label="cp_async_wait_all()"))


def b_smem_buffer(cx: Any, args: tuple, kw: dict) -> SmemBuffer:
    """``smem_buffer(stages=1, alias=None)``: a plain shared-memory region
    (``model/pipelines/smem_buffer.py``), named after the variable it is assigned to."""
    stages, alias = _args(cx, args, kw, ("stages", "alias"), "smem_buffer")
    n = 1 if stages is None else cx.as_int(stages, "stages")
    if n < 1:
        cx.error(f"smem_buffer(stages={n}): at least one stage")
    var = cx.compiler.current_target or f"smem_{cx.loc.line}"
    return SmemBuffer.declare(cx, var, n, alias)


def b_read(cx: Any, args: tuple, kw: dict) -> None:
    """Ghost: the calling warp reads the stage now (must be complete, of the right fill).
    A plain region's read is held until the warp's next release (``smem_buffer.py``)."""
    pipe, state = _region_args(cx, args, kw, "read")
    st = _state_arg(cx, pipe, state, "read")
    if isinstance(pipe, SmemBuffer):
        _read_region(cx, pipe.buf(st.index), f"read({pipe.decl.var} stage {st.index})")
        return
    # a bare stage index says nothing about which fill is meant: check completeness only
    tag = ANY_FILL if isinstance(state, int) else fill_tag_for_wait(st)
    cx.attach(tuple(GhostEffect("read", b, tag) for b in pipe.read_bufs(cx, st.index)),
              f"read({pipe.decl.var} stage {st.index})")


def _read_region(cx: Any, buf: BufRef, label: str) -> None:
    """A thread read of a plain region: complete data, then held until the next release.
    Reading back the warp's own unreleased stores is ordered by program order."""
    if any(b == buf for b, _ in cx.ghost.writes) or buf in cx.ghost.reads:
        return
    cx.ghost = replace(cx.ghost, reads=cx.ghost.reads | {buf})
    cx.attach((GhostEffect("read", buf, ANY_FILL), GhostEffect("hold", buf)), label)


def b_write(cx: Any, args: tuple, kw: dict) -> None:
    """Ghost: the calling warp writes the stage with ordinary stores (generic proxy)."""
    pipe, state = _region_args(cx, args, kw, "write")
    st = _state_arg(cx, pipe, state, "write")
    bufs = (pipe.buf(st.index % pipe.decl.stages),)
    tag = ANY_FILL if isinstance(state, int) else fill_tag_for_acquire(st)
    own_reads = tuple(GhostEffect("unhold", b) for b in bufs if b in cx.ghost.reads)
    if own_reads:  # the warp's own earlier read comes first in program order
        cx.ghost = replace(cx.ghost, reads=cx.ghost.reads - set(bufs))
    effects = own_reads + write_begin_effects(cx, bufs, tag)
    effects += cx.mark_dirty(bufs)
    cx.attach(effects, f"write({pipe.decl.var} stage {st.index % pipe.decl.stages})")


def b_tcgen05_mma(cx: Any, args: tuple, kw: dict) -> None:
    """An asynchronous tcgen05 MMA reading a stage: its reads last until the next commit."""
    pipe, state = _args(cx, args, kw, ("pipeline", "state"), "tcgen05_mma", 2)
    pipe = _pipe_arg(cx, pipe, "tcgen05_mma")
    st = _state_arg(cx, pipe, state, "tcgen05_mma")
    tag = fill_tag_for_wait(st)
    bufs = pipe.read_bufs(cx, st.index)
    # the MMA reads shared memory through the async proxy: thread stores into it need
    # fence.proxy.async first (async_read checks that, and owns the buffer like hold)
    pre = tuple(GhostEffect("read", b, tag) for b in bufs)
    pre += tuple(GhostEffect("async_read", b) for b in bufs)
    cx.add_umma_effects(tuple(GhostEffect("unhold", b) for b in bufs))
    cx.attach(pre, f"tcgen05 MMA reads {pipe.decl.var} stage {st.index}")


def b_wgmma(cx: Any, args: tuple, kw: dict) -> None:
    """An asynchronous wgmma reading a stage, committed as one wgmma-group of the warp's
    warpgroup: its reads last until a ``wgmma_wait_group`` of any warp of the warpgroup
    retires the group (``model/wgmma.py``)."""
    pipe, state = _args(cx, args, kw, ("pipeline", "state"), "wgmma", 2)
    pipe = _pipe_arg(cx, pipe, "wgmma")
    st = _state_arg(cx, pipe, state, "wgmma")
    tag = fill_tag_for_wait(st)
    bufs = pipe.read_bufs(cx, st.index)
    # async proxy reads, like tcgen05; then wgmma.commit_group (one group per call)
    pre = tuple(e for b in bufs for e in wgmma_rule.read_effects(b, tag))
    cx.attach(pre + (wgmma_rule.commit_effect(cx.cta),),
              f"wgmma reads {pipe.decl.var} stage {st.index}")


def b_wgmma_wait_group(cx: Any, args: tuple, kw: dict) -> None:
    """``warpgroup.wait_group(n)``: ``wgmma.wait_group.sync.aligned n``, a step that waits
    for the warpgroup's groups (``model/wgmma.py``)."""
    (n,) = _args(cx, args, kw, ("group",), "wgmma_wait_group", 1)
    k = cx.as_int(n, "group")
    cx.emit(WgmmaWait(n=k, loc=cx.loc, label=f"warpgroup.wait_group({k})"))


def b_clc_query(cx: Any, args: tuple, kw: dict) -> None:
    """The tile scheduler's query for the next tile (``advance_to_next_work`` of the DSL's
    persistent tile scheduler: ``elect_one()`` around ``issue_clc_query``): one query,
    from the whole warp or from a lane the user already elected."""
    _clc_queries(cx, args, kw, "clc_query", 1)


def b_issue_clc_query(cx: Any, args: tuple, kw: dict) -> None:
    """``cute.arch.issue_clc_query``: ``clusterlaunchcontrol.try_cancel`` by every active
    lane (it does not elect; call it inside ``elect_one()``)."""
    _clc_queries(cx, args, kw, "issue_clc_query", len(cx.lanes))


def _clc_queries(cx: Any, args: tuple, kw: dict, what: str, n: int) -> None:
    pipe, state = _args(cx, args, kw, ("pipeline", "state"), what, 2)
    pipe = _pipe_arg(cx, pipe, what)
    if not hasattr(pipe, "clc_deliveries"):
        cx.error(f"{what} needs a PipelineClcFetchAsync")
    st = _state_arg(cx, pipe, state, what)
    for _ in range(n):
        _clc_query(cx, pipe, st)


def _clc_query(cx: Any, pipe: Any, st: Any) -> None:
    deliveries = pipe.clc_deliveries(cx, st)
    q = cx.clc_query_index(pipe)
    # a grid of n clusters has n - 1 others to cancel (None: unbounded)
    may_succeed = q is None or q < cx.kernel.grid_clusters - 1
    cx.emit(TmaLoad(deliveries=deliveries, kind="clc", loc=cx.loc, may_succeed=may_succeed,
                    label=f"clusterlaunchcontrol.try_cancel multicast ({pipe.decl.var} stage "
                    f"{st.index})" + ("" if may_succeed else
                                       " -- no cluster left in the grid: 'no more work'"),
                    pre=tuple(GhostEffect("async_write_begin", d.buf, d.tag) for d in deliveries)))


def b_clc_response_valid(cx: Any, args: tuple, kw: dict) -> Any:
    pipe, state = _args(cx, args, kw, ("pipeline", "state"), "clc_response_valid", 2)
    pipe = _pipe_arg(cx, pipe, "clc_response_valid")
    st = _state_arg(cx, pipe, state, "clc_response_valid")
    return cx.read_clc_response(pipe, st)


# --------------------------------------------------------------------------- raw mbarriers


def b_smem_mbarrier(cx: Any, args: tuple, kw: dict) -> Any:
    """``storage.<name>.data_ptr()`` of an ``Int64`` mbarrier field in shared memory.

    ``bar = smem_mbarrier()`` is one barrier; ``bars = smem_mbarrier(n)`` is an array of
    ``n`` (index it: ``bars[i]``, like ``cutlass.Array(...).subview(i)``).  Nothing is
    initialised: a kernel that allocates raw barriers runs ``mbarrier_init(ptr, count)``
    itself (one elected lane), then ``mbarrier_init_fence`` and a CTA/cluster barrier.
    The name is the variable the pointer is assigned to.
    """
    from .pipelines.base import ArrayDecl, PipelineDecl

    (num,) = _args(cx, args, kw, ("num",), "smem_mbarrier")
    n = 1 if num is None else cx.as_int(num, "num")
    if n < 1:
        cx.error(f"smem_mbarrier({n}): at least one barrier")
    var = cx.compiler.current_target or f"mbar_{cx.loc.line}"
    if num is None:
        arrays = (ArrayDecl("mbar", 1, 0),)
    else:
        arrays = tuple(ArrayDecl(str(i), 1, 0) for i in range(n))
    decl = cx.register(PipelineDecl(var, "mbarrier", 0, arrays, f"{var}.none", "none"))
    ptrs = tuple(BarrierPtr(BarRef(cx.cta, _raw_array_name(decl.var, a.name), 0))
                 for a in decl.arrays)
    return ptrs[0] if num is None else ptrs


def _raw_array_name(var: str, name: str) -> str:
    return f"{var}.{name}"  # the name model/system.py gives the array


def b_mbarrier_init(cx: Any, args: tuple, kw: dict) -> None:
    """``mbarrier_init(ptr, count)``: ``mbarrier.init`` by every executing lane (wrap it in
    ``elect_one()``: a second init of a valid barrier is undefined behaviour)."""
    from .program import MbarInit

    ptr, count = _args(cx, args, kw, ("mbar_ptr", "cnt"), "mbarrier_init", 2)
    bar = _bar_arg(cx, ptr, "mbarrier_init")
    if bar.cta != cx.cta:
        cx.error("mbarrier_init works on the CTA's own shared memory only")
    n = cx.as_int(count, "cnt")
    for i, _lane in enumerate(cx.lanes[:2]):  # a second lane's init is a double init
        cx.emit(MbarInit(arrays=((bar.array, n),), cta=cx.cta, loc=cx.loc,
                         label=f"mbarrier_init({bar}, {n})" + (" by another lane" if i else "")))


def b_tcgen05_commit(cx: Any, args: tuple, kw: dict) -> None:
    """``tcgen05.commit(mbar, mask=None, cta_group=...)`` (``cute.nvgpu.tcgen05.commit``):
    one deferred arrive on ``mbar`` -- in every CTA of ``mask``, or locally -- once the
    tcgen05 operations this thread issued earlier complete.  The raw DSL helper is not
    elected: every executing lane commits (use it inside ``elect_one()``)."""
    from .pipelines.base import emit_umma_commit

    ptr, mask, group = _args(cx, args, kw, ("mbar_ptr", "mask", "cta_group"),
                             "tcgen05_commit", 1)
    g = 1 if group is None else cx.as_int(group, "cta_group")
    if g not in (1, 2):
        cx.error(f"tcgen05_commit: cta_group must be 1 or 2, got {g}")
    bar = _bar_arg(cx, ptr, "tcgen05_commit")
    mask = _mask_arg(cx, mask, "tcgen05_commit")
    targets = mask_ranks(mask) if mask is not None else (bar.cta,)
    bars = tuple(BarRef(r, bar.array, bar.stage) for r in targets)
    for _ in cx.lanes:
        emit_umma_commit(cx, bars, f"tcgen05.commit -> {', '.join(map(str, bars))}",
                         cta_group=g)


def b_tcgen05_cp(cx: Any, args: tuple, kw: dict) -> None:
    """``tcgen05.cp`` (UTCCP, shared memory -> tensor memory) reading a stage; with
    ``cta_group=2`` it reads the stage in both CTAs of the pair.  Asynchronous like an
    MMA: the reads last until the next ``tcgen05.commit`` of this warp fires."""
    pipe, state, group = _args(cx, args, kw, ("pipeline", "state", "cta_group"),
                               "tcgen05_cp", 2)
    pipe = _pipe_arg(cx, pipe, "tcgen05_cp")
    st = _state_arg(cx, pipe, state, "tcgen05_cp")
    g = 1 if group is None else cx.as_int(group, "cta_group")
    if g not in (1, 2):
        cx.error(f"tcgen05_cp: cta_group must be 1 or 2, got {g}")
    if g == 2 and cx.kernel.cluster_size < 2:
        cx.error("tcgen05_cp(cta_group=2) needs a cluster with a CTA pair")
    bufs = tuple(sorted({pipe.buf(st.index), pipe.buf(st.index, cx.cta ^ 1)})) if g == 2 \
        else (pipe.buf(st.index),)
    tag = fill_tag_for_wait(st)
    # the MMA reads shared memory through the async proxy: thread stores into it need
    # fence.proxy.async first (async_read checks that, and owns the buffer like hold)
    pre = tuple(GhostEffect("read", b, tag) for b in bufs)
    pre += tuple(GhostEffect("async_read", b) for b in bufs)
    cx.add_umma_effects(tuple(GhostEffect("unhold", b) for b in bufs))
    cx.attach(pre, f"tcgen05.cp (cta_group::{g}) reads {pipe.decl.var} stage {st.index}")


# --------------------------------------------------------------------------- table


def _namespace(name: str, members: dict[str, Any]) -> Namespace:
    return Namespace(name, tuple(members.items()))


def builtins_table() -> dict[str, Any]:
    from .pipelines import registry

    table: dict[str, Any] = {
        "Agent": _namespace("Agent", {a: a for a in Agent.ALL}),
        "PipelineUserType": _namespace("PipelineUserType", {
            "Producer": PipelineUserType.Producer, "Consumer": PipelineUserType.Consumer,
            "ProducerConsumer": PipelineUserType.ProducerConsumer}),
        "PipelineOp": _namespace("PipelineOp", {
            n: n for n in ("AsyncThread", "TCGen05Mma", "TmaLoad", "ClcLoad", "TmaStore",
                           "Composite", "AsyncLoad")}),
        "WARP_SIZE": WARP_SIZE,
    }
    fns: dict[str, Callable[..., Any]] = {
        "CooperativeGroup": b_cooperative_group,
        "make_pipeline_state": b_make_pipeline_state,
        "PipelineState": b_pipeline_state,
        "PipelineStateSimple": b_pipeline_state_simple,
        "make_layout": b_make_layout,
        "tiled_divide": b_tiled_divide,
        "size": b_size,
        "make_layout_image_mask": b_image_mask,
        "create_tma_multicast_mask": b_tma_multicast_mask,
        "warp_idx": b_warp_idx,
        "make_warp_uniform": b_identity,
        "block_idx_in_cluster": b_block_idx_in_cluster,
        "cta_rank_in_cluster": b_block_idx_in_cluster,
        "cluster_size": b_cluster_size,
        "cluster_idx": b_cluster_idx,
        "block_idx": b_block_idx,
        "num_clusters": b_num_clusters,
        "gmem_flags": b_gmem_flags,
        "gmem_buffer": b_gmem_buffer,
        "fence_acq_rel_gpu": b_fence_acq_rel_gpu,
        "elect_one": b_elect_one,
        "launch": b_launch,
        "sync_threads": b_sync_threads,
        "barrier": b_barrier,
        "barrier_arrive": b_barrier_arrive,
        "cluster_arrive": _cluster_arrive(False),
        "cluster_arrive_relaxed": _cluster_arrive(True),
        "cluster_wait": b_cluster_wait,
        "cluster_sync": b_cluster_sync,
        "mbarrier_init_fence": b_mbarrier_init_fence,
        "pipeline_init_arrive": b_pipeline_init_arrive,
        "pipeline_init_wait": b_pipeline_init_wait,
        "agent_sync": b_agent_sync,
        "fence_proxy_async": b_fence_proxy_async,
        "fence_view_async_shared": b_fence_proxy_async,
        "mbarrier_arrive": b_mbarrier_arrive,
        "mbarrier_arrive_and_expect_tx": b_mbarrier_arrive_and_expect_tx,
        "mbarrier_expect_tx": b_mbarrier_expect_tx,
        "mbarrier_complete_tx": b_mbarrier_complete_tx,
        "mbarrier_wait": b_mbarrier_wait,
        "tma_load": b_tma_load,
        "tma_store": b_tma_store,
        "cp_async": b_cp_async,
        "cp_async_commit_group": b_cp_async_commit_group,
        "cp_async_wait_group": b_cp_async_wait_group,
        "cp_async_wait_all": b_cp_async_wait_all,
        "smem_buffer": b_smem_buffer,
        "read": b_read,
        "write": b_write,
        "tcgen05_mma": b_tcgen05_mma,
        "wgmma": b_wgmma,
        "wgmma_wait_group": b_wgmma_wait_group,
        "clc_query": b_clc_query,
        "issue_clc_query": b_issue_clc_query,
        "clc_response_valid": b_clc_response_valid,
        "smem_mbarrier": b_smem_mbarrier,
        "mbarrier_init": b_mbarrier_init,
        "tcgen05_commit": b_tcgen05_commit,
        "tcgen05_cp": b_tcgen05_cp,
    }
    for name, fn in fns.items():
        table[name] = Builtin(name, fn)
    for name, f in (("min", min), ("max", max), ("abs", abs), ("int", int), ("bool", bool),
                    ("len", len), ("range", _range)):
        table[name] = _pyfn(name, f)
    for cls in registry.PIPELINE_CLASSES:
        table[cls.CLASS] = PipelineClassRef(cls)
    for cls in registry.CONSTRUCTED:
        table[cls.CLASS] = PipelineClassRef(cls)
    return table


__all__ = ["Module", "Namespace", "Builtin", "PipelineClassRef", "ElectOne", "MODULE_ROOTS",
           "builtins_table", "ClusterVMNK", "release_effects", "replace", "Nop"]
