"""Starvation: fair lasso-shaped runs in which some warp waits for ever (BMC).

For kernels with roles that never terminate (persistent ``while True`` loops, tile
schedulers) bounded safety is not the whole story: a warp may wait for ever while the
others keep running, with no deadlock (someone can always move) and no safety violation.
The BMC engine looks for a *lasso*: a run ``s_0 .. s_l .. s_k`` with ``s_k = s_l`` (the
loop ``s_l .. s_k`` can repeat for ever) such that

* some warp ``w`` that has not exited takes no step in the loop, or only polls
  (``try_wait``/``try_acquire`` steps) -- it waits for ever;
* the loop is *fair*: every environment agent (a TMA/CLC delivery, a tcgen05 commit, a
  cp.async completion, a bulk-store step -- one per static item) that is enabled
  somewhere in the loop acts in it (strong fairness: asynchronous hardware always
  completes), and every warp that is enabled in every state of the loop steps in it
  (weak fairness: a warp that can always run eventually runs).  Weak fairness makes
  ``w`` blocked in some state of the loop: it really waits.

The encoding is the classic one of Biere et al. (BMC of LTL with a loop-start variable):
one query per loop end ``k`` over the unrolling of ``checker/bmc.py``, whose steps are
already asserted.  A model is replayed through the concrete model (loop closure,
fairness, the starving warps) before it is reported (``Trace.loop_start`` marks the
first step of the loop).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import z3

from ..model.system import DONE, System
from .lasso import STARVATION, poll_pcs, report_lasso
from .verdict import Verdict

__all__ = ["STARVATION", "find_lasso"]


class _Aux:
    """Per-level facts of the unrolling: who moved, who was enabled."""

    def __init__(self, u: Any):
        self.u = u
        enc = u.enc
        trs = enc.transitions
        self.nag = u.nag
        self.en_tmpl = []
        for a in range(self.nag):
            lo, hi = enc.agent_range[a]
            gs = [trs[i].guard for i in range(lo, hi)]
            self.en_tmpl.append(z3.Or(*gs) if gs else z3.BoolVal(False))
        self.env_idx = [i for i, t in enumerate(trs) if t.agent is None]
        self.cache: dict[int, tuple] = {}

    def level(self, j: int) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        if j not in self.cache:
            u = self.u
            act = u.act(j)
            moved = [u.is_act(a, act) for a in range(self.nag)]
            en = [u.at(t, j) for t in self.en_tmpl]
            trs = u.enc.transitions
            fired = [u.is_act(u.actor_of[i], act) for i in self.env_idx]
            en_e = [u.at(trs[i].guard, j) for i in self.env_idx]
            self.cache[j] = (moved, en, fired, en_e)
        return self.cache[j]


def find_lasso(system: System, u: Any, runner: Any, depth: int,
               check: Callable[..., Any], done: Optional[list[int]] = None) -> Optional[Verdict]:
    """The shortest fair lasso (``k`` steps, ``k <= depth``) in which some warp starves;
    ``done`` collects each ``k`` ruled out (how far an interrupted search got)."""
    aux = _Aux(u)
    enc = u.enc
    solver = u.solver
    pck = [enc.key_of_slot[ag.pc] for ag in system.agents]
    for k in range(1, depth + 1):
        while u.asserted_steps < k:  # an unrolling of its own (chain-mode BMC)
            u.assert_step(u.asserted_steps)
        sk = u.state(k)
        lw = max(1, k.bit_length())
        Lv = z3.BitVec(f"loop@{k}", lw)
        levels = [aux.level(j) for j in range(k)]
        ins = [z3.ULE(Lv, z3.BitVecVal(j, lw)) for j in range(k)]
        closure = []
        for ell in range(k):
            sl = u.state(ell)
            eq = [sk[i] == sl[i] for i in u.changing if not sk[i].eq(sl[i])]
            closure.append(z3.And(Lv == z3.BitVecVal(ell, lw), *eq))
        cons = [z3.ULT(Lv, z3.BitVecVal(k, lw)), z3.Or(*closure)]
        for a in range(aux.nag):
            cons.append(z3.Or(*[z3.And(ins[j], z3.Or(levels[j][0][a], z3.Not(levels[j][1][a])))
                                for j in range(k)]))
        for e in range(len(aux.env_idx)):
            fired = z3.Or(*[z3.And(ins[j], levels[j][2][e]) for j in range(k)])
            never = z3.And(*[z3.Implies(ins[j], z3.Not(levels[j][3][e])) for j in range(k)])
            cons.append(z3.Or(fired, never))
        starve = []
        for a in range(aux.nag):
            w = enc.width[pck[a]]
            polls = poll_pcs(system, a)

            def progressed(j: int, a: int = a, w: int = w, polls: list = polls) -> Any:
                # a step that is not a poll (try_wait / try_acquire): spinning on a
                # poll that never succeeds is waiting, not progress
                pc = u.state(j)[pck[a]]
                return z3.And(levels[j][0][a],
                              *[pc != z3.BitVecVal(p, w) for p in polls])

            starve.append(z3.And(sk[pck[a]] != z3.BitVecVal(DONE, w),
                                 *[z3.Implies(ins[j], z3.Not(progressed(j)))
                                   for j in range(k)]))
        cons.append(z3.Or(*starve))
        q = u.literal(f"lasso{k}")
        solver.add(z3.Implies(q, z3.And(*cons)))
        if check(q) == z3.sat:
            m = solver.model()
            ell = m.eval(Lv, model_completion=True).as_long()
            steps = u.steps_from_model(m, k)
            return report_lasso(system, runner, steps, ell)
        if done is not None:
            done.append(k)
    return None

