"""The lifted programs as a ``CompiledKernel``: what ``model/compile.py`` produces from a
``.pipe`` skeleton, so ``System``, every engine, the renderers and replay take it as is."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...model.compile import CompiledKernel, KernelInfo
from ...model.errors import Unsupported
from ...model.pipelines.base import ArrayDecl, PipelineDecl
from ...model.program import (AgentProgram, Arrive, BufRef, Exit, MbarInit, TmaLoad,
                              TmaStore, TryWait, UmmaCommit, Wait)
from .interp import Lifter


def to_compiled(lf: Lifter, name: str, params: dict[str, Any], source: str) -> CompiledKernel:
    L = lf.launch
    arrays: dict[str, list] = {}
    for bi in lf.bars.values():
        arrays.setdefault(bi.array, []).append(bi)
    by_var: dict[str, list[ArrayDecl]] = {}
    for arr, bis in sorted(arrays.items()):
        var, _, part = arr.partition(".")
        counts = {b.count for b in bis}
        if len(counts) != 1:
            raise Unsupported(f"the barriers of {arr} are initialised with different "
                              f"counts {sorted(counts)}")
        by_var.setdefault(var, []).append(ArrayDecl(part or "bar", len(bis), counts.pop()))
    decls = [PipelineDecl(var=var, cls="lifted", stages=max(a.stages for a in ads),
                          arrays=tuple(ads), buffer=f"{var}.buf", sync="none")
             for var, ads in by_var.items()]
    # TMA-store sources: one buffer per smem field, its stages the offsets stored from
    offsets: dict[str, set[int]] = {}
    for w in lf.programs.values():
        for ins in w.code:
            if isinstance(ins, TmaStore):
                offsets.setdefault(ins.buf.buffer, set()).add(ins.buf.stage)
    remap = {}
    for buf, offs in sorted(offsets.items()):
        remap.update({(buf, o): i for i, o in enumerate(sorted(offs))})
        decls.append(PipelineDecl(var=buf, cls="tma_store", stages=len(offs), arrays=(),
                                  buffer=buf, sync="none"))
    programs = []
    for (cta, warp), w in sorted(lf.programs.items()):
        code = [replace(i, buf=BufRef(i.buf.cta, i.buf.buffer,
                                      remap[(i.buf.buffer, i.buf.stage)]))
                if isinstance(i, TmaStore) else i for i in w.code]
        code.append(Exit(label="exit"))
        programs.append(AgentProgram(cta=cta, warp=warp, role=role_name(w.sides, code),
                                     code=tuple(code), locals=tuple(w.locals)))
    info = KernelInfo(name=name, params=tuple(params.items()), block_threads=L.block,
                      cluster_shape=L.cluster, grid_clusters=None)
    return CompiledKernel(info=info, programs=tuple(programs), pipelines=tuple(decls),
                          named_barrier_ids=tuple(sorted(lf.named_ids)), source_file=source)


def role_name(sides: dict[str, str], code: list) -> str:
    """A warp's role, from the pipeline sides it takes (``ab producer``), else from what
    it does: the user wrote ``if warp_idx == ...``, not a role name."""
    if sides:
        parts = [f"{var} {side}" for var, side in sides.items()]
        return ", ".join(parts[:2]) + (", ..." if len(parts) > 2 else "")
    if any(isinstance(i, TmaLoad) for i in code):
        return "tma"
    if any(isinstance(i, UmmaCommit) for i in code):
        return "mma"
    if any(isinstance(i, (Wait, TryWait, Arrive)) for i in code):
        return "sync"
    if any(isinstance(i, MbarInit) for i in code):
        return "setup"
    return "idle"
