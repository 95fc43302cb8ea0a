"""Fault injection: mutants of a correct configuration, at the instruction level.

A mutant rewrites the compiled programs (``model.compile.CompiledKernel``) the way a
typical bug would change the kernel, so the model and the GPU judge *the same* faulty
program: the model checks ``System(mutant)``, the emitter lowers the mutant to PTX.

Operators (each returns ``None`` where it does not apply):

* ``init-count+1``: the full barrier is initialised with one arrival too many (every CTA);
* ``missing-release``: one consumer warp skips its first release of a stage (its arrive,
  or its ``tcgen05.commit``, on an ``empty`` barrier);
* ``producer-parity``: the producer's pipeline state starts in phase 0 instead of 1 (all
  of its waits on ``empty`` barriers flip parity);
* ``consumer-parity``: a consumer's state starts in phase 1 (its waits on ``full`` flip);
* ``tx-mismatch``: every ``arrive.expect_tx`` on a full barrier expects 16 bytes more than
  the copies deliver;
* ``skipped-tail``: the producer of the last CTA of the cluster skips ``producer_tail``;
* ``relaxed-flag`` (global memory, spec/primitives.md 13): every release update of a
  global flag (``red``/``atom``/``st`` ``.release.gpu``) becomes ``.relaxed`` -- it
  publishes nothing (CUTLASS ``Semaphore::release`` stores with release semantics);
* ``flag-wait+1``: the first spin on a global flag waits for one more than it should;
* ``missing-flag-update``: the first flag update of the grid is dropped (its CTA never
  signals the tile).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..model.compile import CompiledKernel
from ..model.program import (AgentProgram, Arrival, Arrive, BarRef, GmemAtomic, GmemWait,
                             Instr, MbarInit, Nop, TryWait, UmmaCommit, Wait)


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    kernel: CompiledKernel


def _is(bar: BarRef, kind: str) -> bool:
    return bar.array.rsplit(".", 1)[-1] == kind


def _with_programs(ck: CompiledKernel, progs: list[AgentProgram]) -> CompiledKernel:
    return replace(ck, programs=tuple(progs))


def _map(ck: CompiledKernel, fn: Callable[[AgentProgram, int, Instr], Optional[Instr]],
         only: Optional[Callable[[AgentProgram], bool]] = None) -> tuple[CompiledKernel, int]:
    changed = 0
    progs = []
    for p in ck.programs:
        if only is not None and not only(p):
            progs.append(p)
            continue
        code = list(p.code)
        for pc, ins in enumerate(code):
            new = fn(p, pc, ins)
            if new is not None:
                code[pc] = new
                changed += 1
        progs.append(replace(p, code=tuple(code)))
    return _with_programs(ck, progs), changed


def _producers(ck: CompiledKernel) -> list[AgentProgram]:
    return [p for p in ck.programs
            if any(isinstance(i, (Wait, TryWait)) and _is(i.bar, "empty") for i in p.code)]


def _releases(ins: Instr) -> bool:
    if isinstance(ins, Arrive):
        return any(_is(a.bar, "empty") for a in ins.arrivals)
    if isinstance(ins, UmmaCommit):
        return any(_is(b, "empty") for b in ins.bars)
    return False


def init_count(ck: CompiledKernel) -> Optional[Mutant]:
    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if isinstance(ins, MbarInit) and any(n.endswith(".full") for n, _ in ins.arrays):
            arrays = tuple((n, c + 1 if n.endswith(".full") else c) for n, c in ins.arrays)
            return replace(ins, arrays=arrays, label="(mutant: init count +1) " + ins.label)
        return None
    m, n = _map(ck, fn)
    return Mutant("init-count+1", "full barriers initialised with one arrival too many",
                  m) if n else None


def missing_release(ck: CompiledKernel) -> Optional[Mutant]:
    target = next((p for p in ck.programs if any(_releases(i) for i in p.code)), None)
    if target is None:
        return None
    first = next(pc for pc, i in enumerate(target.code) if _releases(i))

    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if pc != first:
            return None
        post = ins.effects if isinstance(ins, UmmaCommit) else ()
        return Nop(loc=ins.loc, label="(mutant: release removed) " + ins.label, pre=ins.pre,
                   post=ins.post + post)
    m, _ = _map(ck, fn, lambda p: p is target)
    return Mutant("missing-release", f"{target.name} skips its first release ({target.role})",
                  m)


def _flip(kind: str, who: Callable[[AgentProgram], bool], name: str,
          desc: str) -> Callable[[CompiledKernel], Optional[Mutant]]:
    def op(ck: CompiledKernel) -> Optional[Mutant]:
        def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
            if isinstance(ins, (Wait, TryWait)) and _is(ins.bar, kind):
                g = None if ins.ghost is None else (ins.ghost + 1) % 4 \
                    if kind == "empty" else ins.ghost
                return replace(ins, parity=ins.parity ^ 1, ghost=g,
                               label=f"(mutant: parity flipped) {ins.label}")
            return None
        targets = [p for p in ck.programs if who(p) and any(
            isinstance(i, (Wait, TryWait)) and _is(i.bar, kind) for i in p.code)]
        if not targets:
            return None
        first = targets[0]
        m, n = _map(ck, fn, lambda p: p is first)
        return Mutant(name, f"{first.name} ({first.role}): {desc}", m) if n else None
    return op


producer_parity = _flip("empty", lambda p: True, "producer-parity",
                        "producer state starts in phase 0 instead of 1")
consumer_parity = _flip("full", lambda p: True, "consumer-parity",
                        "consumer state starts in phase 1 instead of 0")


def tx_mismatch(ck: CompiledKernel) -> Optional[Mutant]:
    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if isinstance(ins, Arrive) and any(a.tx > 0 and _is(a.bar, "full") for a in ins.arrivals):
            arr = tuple(Arrival(a.bar, a.count, a.tx + 16) if a.tx > 0 and _is(a.bar, "full")
                        else a for a in ins.arrivals)
            return replace(ins, arrivals=arr, label="(mutant: expect_tx +16 B) " + ins.label)
        return None
    m, n = _map(ck, fn)
    return Mutant("tx-mismatch", "arrive.expect_tx expects 16 bytes more than delivered",
                  m) if n else None


def skipped_tail(ck: CompiledKernel) -> Optional[Mutant]:
    last = ck.info.cluster_size - 1
    prods = [p for p in _producers(ck) if p.cta == last]
    if not prods:
        return None
    target = prods[0]

    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if isinstance(ins, (Wait, TryWait)) and "tail" in ins.label:
            return Nop(loc=ins.loc, label="(mutant: tail skipped) " + ins.label,
                       pre=ins.pre, post=ins.post)
        return None
    m, n = _map(ck, fn, lambda p: p is target)
    return Mutant("skipped-tail", f"{target.name} ({target.role}) skips producer_tail",
                  m) if n else None


def relaxed_flag(ck: CompiledKernel) -> Optional[Mutant]:
    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if isinstance(ins, GmemAtomic) and ins.sem == "release":
            return replace(ins, sem="relaxed",
                           label="(mutant: relaxed) " + ins.label.replace("release", "relaxed"))
        return None
    m, n = _map(ck, fn)
    return Mutant("relaxed-flag", "global flag updates are relaxed instead of release",
                  m) if n else None


def _first(ck: CompiledKernel, cls: type) -> Optional[tuple[AgentProgram, int]]:
    for p in ck.programs:
        for pc, ins in enumerate(p.code):
            if isinstance(ins, cls):
                return p, pc
    return None


def flag_wait_plus_one(ck: CompiledKernel) -> Optional[Mutant]:
    hit = _first(ck, GmemWait)
    if hit is None:
        return None
    target, first = hit

    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if pc != first:
            return None
        return replace(ins, value=ins.value + 1, label=f"(mutant: waits for {ins.value + 1}) "
                       + ins.label)
    m, _ = _map(ck, fn, lambda p: p is target)
    return Mutant("flag-wait+1", f"{target.name} ({target.role}) spins on its first global "
                  "flag for one more than it should", m)


def missing_flag_update(ck: CompiledKernel) -> Optional[Mutant]:
    hit = _first(ck, GmemAtomic)
    if hit is None:
        return None
    target, first = hit

    def fn(p: AgentProgram, pc: int, ins: Instr) -> Optional[Instr]:
        if pc != first:
            return None
        return Nop(loc=ins.loc, label="(mutant: flag update removed) " + ins.label,
                   pre=ins.pre, post=ins.post)
    m, _ = _map(ck, fn, lambda p: p is target)
    return Mutant("missing-flag-update", f"{target.name} ({target.role}) skips its first "
                  "global flag update", m)


OPERATORS: dict[str, Callable[[CompiledKernel], Optional[Mutant]]] = {
    "init-count+1": init_count,
    "missing-release": missing_release,
    "producer-parity": producer_parity,
    "consumer-parity": consumer_parity,
    "tx-mismatch": tx_mismatch,
    "skipped-tail": skipped_tail,
    "relaxed-flag": relaxed_flag,
    "flag-wait+1": flag_wait_plus_one,
    "missing-flag-update": missing_flag_update,
}


def mutants(ck: CompiledKernel) -> list[Mutant]:
    out = []
    for op in OPERATORS.values():
        m = op(ck)
        if m is not None:
            out.append(m)
    return out


def mutant(ck: CompiledKernel, name: str) -> Optional[Mutant]:
    return OPERATORS[name](ck)
