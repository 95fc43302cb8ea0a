"""A GPU stand-in for tests: random executions of the model, written as GPU traces.

``simulate(ck, seed)`` runs the transition system with a random scheduler and records
what an emitted, instrumented kernel would record (``impl/events.py``): one event per
warp step with the same observations (pending count before a local arrive, try_wait
result, CLC validity), an event for each emulated ``tcgen05.commit`` firing, and STUCK
events when no warp can move.  Unobservable completions (TMA deliveries, cp.async
arrives, bulk groups) leave no event, as on the GPU.

``perturb`` then reproduces the one inaccuracy of tickets: a signal's ticket is taken
just *before* the signal lands, so a later event of another warp may carry a larger
ticket although it happened first.  The replay (``impl/replay.py``) must accept both.
"""

from __future__ import annotations

import random
from typing import Optional

from ..model.compile import CompiledKernel
from ..model.program import (Arrive, ClusterArrive, CompleteTx, CpAsyncArrive, Exit,
                             ExpectTx, GmemAtomic, GmemFence, GmemWait, MbarInit,
                             NamedBarrierOp, TmaLoad, TmemAlloc, TmemDealloc, TmemRelinquish,
                             TryWait, UmmaCommit)
from ..model.system import DONE, ConcreteState, System
from ..model.values import CONCRETE as V
from . import events as E
from .events import GpuEvent

SIGNALS = (Arrive, ExpectTx, CompleteTx, TmaLoad, CpAsyncArrive, UmmaCommit, ClusterArrive,
           NamedBarrierOp, Exit, MbarInit, GmemAtomic, GmemFence,
           # tcgen05.alloc/dealloc/relinquish_alloc_permit: ticket before the issue
           # (impl/emit_tmem.py)
           TmemAlloc, TmemDealloc, TmemRelinquish)


def simulate(ck: CompiledKernel, seed: int, observed_env: tuple[str, ...] = ("tcgen05",),
             max_steps: int = 200_000, env_bias: float = 0.3,
             sited: bool = False) -> list[GpuEvent]:
    """``sited``: record what a lifted CuTe DSL kernel's trace sites record
    (``impl/cute_trace.py``): an event only for a step with a site (``pc`` = the site),
    a try_wait's result, no pending counts, and no STUCK events (its waits have no
    watchdog)."""
    sysm = System(ck)
    rng = random.Random(seed)
    S = ConcreteState(sysm.initial_state())
    for a in range(len(sysm.agents)):
        sysm.run_local(V, S, a, [])
    evs: list[GpuEvent] = []

    def add(kind: int, a: int, pc: int, obs0: int = 0, flags: int = 0) -> None:
        ag = sysm.agents[a]
        evs.append(GpuEvent(len(evs), kind, ag.cta, ag.warp, pc, obs0, flags))

    for _ in range(max_steps):
        moves = []
        for ag in sysm.agents:
            pc = S.v[ag.pc]
            if pc == DONE:
                continue
            for choice in range(sysm.agent_choices(ag.index, pc)):
                T = ConcreteState(list(S.v))
                if sysm.exec_agent(V, T, ag.index, pc, choice).enabled:
                    moves.append(("a", ag.index, choice))
        env = sysm.env_items_of(S.get)
        if not moves and not env:
            break
        if env and (not moves or rng.random() < env_bias):
            it = rng.choice(env)
            sysm.exec_env(V, S, it)
            if sysm.env_name(it) in observed_env:
                add(E.K_ENV, it[1], it[2])
            continue
        _, a, choice = rng.choice(moves)
        ag = sysm.agents[a]
        pc = S.v[ag.pc]
        ins = sysm.code(a)[pc]
        obs, flags = 0, 0
        if sited:
            sysm.exec_agent(V, S, a, pc, choice)
            if ins.site >= 0:
                if isinstance(ins, TryWait):
                    obs, flags = int(bool(S.v[ag.locals[ins.dest]])), E.F_RESULT
                add(E.K_STEP, a, ins.site, obs, flags)
            continue
        if isinstance(ins, Arrive):
            for arr in ins.arrivals:
                if arr.bar in sysm.bar and arr.bar.cta == ag.cta and \
                        (arr.count > 0 or ins.drop):
                    obs, flags = S.v[sysm.bar[arr.bar] + 1], E.F_PENDING
                    break
        if isinstance(ins, TmaLoad) and ins.kind == "clc":
            obs, flags = choice, E.F_CHOICE
        if isinstance(ins, (GmemWait, GmemAtomic)) and \
                (isinstance(ins, GmemWait) or ins.op == "add"):
            # the flag's value: what the emitted atom returns / the spin's last load saw
            obs, flags = S.v[sysm.gflag[ins.flag]], E.F_FLAG
        sysm.exec_agent(V, S, a, pc, choice)
        if isinstance(ins, TryWait):
            obs, flags = int(bool(S.v[ag.locals[ins.dest]])), E.F_RESULT
        add(E.K_STEP, a, pc, obs, flags)
    for ag in sysm.agents:
        pc = S.v[ag.pc]
        if pc != DONE and not sited:
            add(E.K_STUCK, ag.index, pc)
    return evs


def perturb(ck: CompiledKernel, evs: list[GpuEvent], seed: int,
            prob: float = 0.3, sited: bool = False) -> list[GpuEvent]:
    """Swap adjacent events (x, y) of different warps when y is a signal: y's ticket was
    taken before x's, but its signal landed after x happened."""
    sysm = System(ck)
    agent_of = {(ag.cta, ag.warp): ag.index for ag in sysm.agents}
    rng = random.Random(seed)
    out = list(evs)
    for i in range(len(out) - 1):
        x, y = out[i], out[i + 1]
        if (x.cta, x.warp) == (y.cta, y.warp) or y.kind != E.K_STEP or x.kind == E.K_STUCK:
            continue
        code = sysm.code(agent_of[(y.cta, y.warp)])
        ins = next(i for i in code if i.site == y.pc) if sited else code[y.pc]
        if isinstance(ins, SIGNALS) and rng.random() < prob:
            out[i], out[i + 1] = y, x
    return [GpuEvent(t, e.kind, e.cta, e.warp, e.pc, e.obs0, e.obs1) for t, e in enumerate(out)]


def as_words(evs: list[GpuEvent]) -> list[int]:
    """Encode like the GPU does (index = ticket)."""
    out: list[int] = []
    for e in evs:
        out.extend(E.encode_event(e.kind, e.cta, e.warp, e.pc, e.obs0, e.obs1))
    return out


__all__ = ["simulate", "perturb", "as_words", "Optional"]
