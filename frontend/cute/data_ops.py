"""Data movement through shared memory, for the ghost buffer effects (``ghosts.py``):
thread loads and stores, non-TMA copies, MMA operand reads.  None of these synchronise;
they say which buffer a warp touches and when."""

from __future__ import annotations

import re
from typing import Any

from .mlir_text import Op
from .optable import op
from .tmem_ops import is_tmem_type, tmem_use
from .values import OPAQUE, Dyn, Lanes, Ptr, View, lane


def _access(lf: Any, o: Op, v: Any, mask: Any, write: bool, coord: Any = None) -> None:
    if not lf.active(mask):
        return
    p = v.ptr if isinstance(v, View) else v
    if isinstance(p, Lanes):
        p = next((x for x in p if isinstance(x, Ptr)), None)
    if not isinstance(p, Ptr) or p.space != "smem":
        return
    iv = lf.ghosts.view_interval(v, mask, coord)
    if iv is None:
        if write:
            lf.ghosts.untrack(p.alloc, f"{o.name} at {lf.where(o)}")
        return
    if lf.phase == 1:
        lf.ghosts.touch(iv, write)
    elif write:
        lf.ghosts.thread_write(iv, o)
    else:
        lf.ghosts.thread_read(iv, o)


@op("cute.memref.load")
def _load(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v = lf.val(env, o.operands[0], o)
    coord = lf.val(env, o.operands[1], o) if len(o.operands) > 1 else None
    _access(lf, o, v, mask, False, coord)
    p = v.ptr if isinstance(v, View) else v
    if isinstance(p, Ptr) and p.space == "rmem":
        return OPAQUE
    return Dyn(None, "a value loaded from memory")


@op("cute.memref.load_vec")
def _load_vec(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v = lf.val(env, o.operands[0], o)
    _access(lf, o, v, mask, False)
    p = v.ptr if isinstance(v, View) else None
    if isinstance(p, Ptr) and p.space == "rmem" and p.alloc in lf.w.rmem:
        return lf.w.rmem[p.alloc]  # a CLC response copied into registers
    return OPAQUE


@op("cute.memref.store")
def _store(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v = lf.val(env, o.operands[0], o)
    coord = lf.val(env, o.operands[1], o) if len(o.operands) > 2 else None
    _access(lf, o, v, mask, True, coord)
    return None


@op("cute.memref.store_vec")
def _store_vec(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v = lf.val(env, o.operands[1], o) if len(o.operands) > 1 else None
    _access(lf, o, v, mask, True)
    return None


def copy_between(lf: Any, o: Op, env: dict, mask: Any) -> None:
    """A copy that is neither TMA nor cp.async: a thread read of the source, a thread
    write of the destination, where they are shared memory."""
    if len(o.operands) < 3:
        return
    if any(is_tmem_type(t) for t in o.operand_types[1:3]):  # tcgen05.ld / tcgen05.st
        tmem_use(lf, o, mask, "tcgen05 copy")
    src = lf.val(env, o.operands[1], o)
    dst = lf.val(env, o.operands[2], o)
    _access(lf, o, src, mask, False)
    _access(lf, o, dst, mask, True)
    dp = dst.ptr if isinstance(dst, View) else None
    if isinstance(dp, Ptr) and dp.space == "rmem" and lf.active(mask):
        lf.w.rmem.pop(dp.alloc, None)
        resp = lf.ghosts.clc_response(lf.ghosts.view_interval(src, mask), o)
        if resp is not None:
            lf.w.rmem[dp.alloc] = resp


@op("cute.gemm")
def _gemm(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """wgmma (sm_90) / tcgen05.mma (sm_100): operands A and B are read from shared
    memory through the async proxy until the MMA completes."""
    if not lf.active(mask) or len(o.operands) < 4:
        return None
    tcgen05 = bool(re.search(r"sm100|tcgen05|umma", o.operand_types[0] if o.operand_types
                             else ""))
    if any(is_tmem_type(t) for t in o.operand_types[1:]):  # tcgen05.mma into tensor memory
        tmem_use(lf, o, mask, "tcgen05.mma")
    for h in o.operands[2:4]:
        v = lf.val(env, h, o)
        p = v.ptr if isinstance(v, View) else None
        if not isinstance(p, Ptr) or p.space != "smem":
            continue
        iv = lf.ghosts.view_interval(v, mask)
        if iv is None or iv[2] - iv[1] <= 16:
            # a descriptor view sliced to one MMA: its extent is not in the type; the
            # buffer (atom) holding its start address stands for it (phase 2 only, so
            # it does not cut the buffers the loads made)
            iv = (p.alloc, p.off, p.off + 1)
        elif lf.phase == 1:
            lf.ghosts.touch(iv, write=False)
        if lf.phase == 2:
            lf.ghosts.mma_read(iv, o, tcgen05)
    return None


@op("nvvm.wgmma.commit.group.sync.aligned")
def _wgmma_commit(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``wgmma.commit_group.sync.aligned`` (PTX ISA 9.7.15.7.2): the warp's wgmma reads so
    far join its warpgroup's next wgmma-group (a ghost effect: data races on only)."""
    if lf.active(mask) and lf.phase == 2 and lf.ghosts.enabled:
        lf.ghosts.wgmma_commit(o)
    return None


@op("llvm.store", "nvvm.stmatrix")
def _raw_store(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """Stores through a raw pointer: no extent the lifter can trust, so no race checks
    on that allocation (``Ghosts.untrack``)."""
    for h in o.operands:
        v = lf.val(env, h, o)
        p = lane(v, 0) if isinstance(v, Lanes) else v
        if isinstance(p, Ptr) and p.space == "smem":
            lf.ghosts.untrack(p.alloc, f"{o.name} at {lf.where(o)}")
    return None


@op("nvvm.ldmatrix")
def _raw_load(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    return OPAQUE
