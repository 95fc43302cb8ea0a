"""The lifted programs as a ``CompiledKernel``: what ``model/compile.py`` produces from a
``.pipe`` skeleton, so ``System``, every engine, the renderers and replay take it as is."""

from __future__ import annotations

from typing import Any

from ...model.compile import CompiledKernel, KernelInfo
from ...model.errors import Unsupported
from ...model.pipelines.base import ArrayDecl, PipelineDecl
from ...model.program import (AgentProgram, Arrive, BufRef, MbarInit, TmaLoad,
                              TryWait, UmmaCommit, Wait)
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
    # shared-memory buffers (ghosts.py), and any buffer an instruction names
    stages = dict(lf.ghosts.declarations())
    for w in lf.programs.values():
        for ins in w.code:
            for b in referenced_buffers(ins):
                stages[b.buffer] = max(stages.get(b.buffer, 0), b.stage + 1)
    taken = {d.var for d in decls}
    for buf, n in sorted(stages.items()):
        decls.append(PipelineDecl(var=buf if buf not in taken else f"{buf}.smem", cls="smem",
                                  stages=n, arrays=(), buffer=buf, sync="none"))
    programs = []
    for (cta, warp), w in sorted(lf.programs.items()):
        code = list(w.code)  # every path ends in an Exit (interp.Lifter._run_paths)
        programs.append(AgentProgram(cta=cta, warp=warp, role=role_name(w.sides, code),
                                     code=tuple(code), locals=tuple(w.locals)))
    info = KernelInfo(name=name, params=tuple(params.items()), block_threads=L.block,
                      cluster_shape=L.cluster, grid_clusters=lf.grid_clusters)
    return CompiledKernel(info=info, programs=tuple(programs), pipelines=tuple(decls),
                          named_barrier_ids=tuple(sorted(lf.named_ids)), source_file=source,
                          param_names=lf.param_names, param_points=lf.param_points)


def referenced_buffers(ins: Any) -> list[BufRef]:
    out = [e.buf for e in ins.pre + ins.post]
    out += [e.buf for e in getattr(ins, "effects", ())]
    for name in ("buf",):
        b = getattr(ins, name, None)
        if isinstance(b, BufRef):
            out.append(b)
    for d in getattr(ins, "deliveries", ()):
        if d.buf is not None:
            out.append(d.buf)
    return out


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
