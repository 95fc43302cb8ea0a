"""The explicit state space: successor generation over packed states, warp symmetry,
and the replay that turns a list of steps into a ``Trace``.

The bottom of ``checker/``: the explicit engine searches it, BMC samples it for ranges
and its certificate, and every engine's counterexample is described by ``replay``.
Reductions plug in from above (``reduction``: ``por.stubborn_sets``), so nothing here
knows of them.
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any, Callable, Iterator, Optional

from ..model.program import TmaLoad, is_acyclic, live_locals
from ..model.system import DONE, ConcreteState, System
from ..model.values import CONCRETE
from .concrete import first_violation
from .cta_symmetry import CtaPermutation, cta_automorphisms
from .packed import FlatState, PackedState, Packer
from .trace import Event, Trace, barrier_changes, env_fields, instr_fields

V = CONCRETE


def symmetric_groups(system: System) -> list[list[int]]:
    """Warps of one CTA with the same program (and no TMA/CLC loads, whose in-flight
    work is keyed by the issuing pc): renaming them maps runs to runs, keeping every
    property and every length.  Each group lists agent indices in increasing order.

    Warps that issue wgmma are interchangeable only within their warpgroup: a
    ``WgmmaWait`` waits for, and retires the groups of, the warps of its own warpgroup
    (``model/wgmma.py``), so swapping a warp with one of another warpgroup would change
    whose commits it waits for.  Within a warpgroup the rule treats every member alike
    (each member's wgmma state lives in its own component)."""
    if system.gbufs:
        # global regions keep per-warp bits and the completing warp's index outside the
        # warps' own components (System._gmem_layout): no renaming of warps
        return []
    by_key: dict[tuple, list[int]] = {}
    for ag in system.agents:
        code = ag.program.code
        if any(isinstance(i, TmaLoad) for i in code):
            continue
        wg = system.wgmma.group_of.get(ag.index)  # None: takes no part in wgmma
        by_key.setdefault((ag.cta, code, ag.program.locals, wg), []).append(ag.index)
    return [g for g in by_key.values() if len(g) > 1]


def dead_local_slots(system: System, a: int) -> dict[int, tuple[int, ...]]:
    """Warp ``a``'s pc -> the slots of its locals dead there (``model.program.live_locals``:
    no run from that pc reads them before writing them; every local once it has exited),
    the pcs with none left out: what ``Explorer.forget`` sets to 0, and the native
    engine's ``forget`` with stubborn sets (``native/ccode.py``)."""
    ag = system.agents[a]
    if not ag.locals:
        return {}
    out: dict[int, tuple[int, ...]] = {}
    for pc, live in enumerate(live_locals(ag.program.code)):
        dead = tuple(sorted(s for name, s in ag.locals.items() if name not in live))
        if dead:
            out[pc] = dead
    out[DONE] = tuple(sorted(ag.locals.values()))
    return out


class Explorer:
    """Successor generation over packed states.

    With ``symmetry``, warps of one CTA that run identical programs (and issue no TMA,
    whose in-flight deliveries name their issuer) are interchangeable: every state is
    replaced by the representative whose per-warp components are sorted, which divides
    the state space by up to n! for a group of n such warps.  Everything a warp owns --
    its pc, locals, barrier bookkeeping and queues -- lives in its own component, so the
    permutation is exact.

    With ``cta_symmetry`` too (and no warp that loops), states equal up to renaming
    identical CTAs of the cluster (``checker/cta_symmetry.py``) are one state of the
    search: it keys its visited set by ``orbit_key``.
    """

    def __init__(self, system: System, symmetry: bool = True,
                 reduction: Optional[Callable[["Explorer"], Any]] = None,
                 cta_symmetry: bool = False):
        self.sys = system
        flat = list(system.initial_state())
        S = ConcreteState(flat)
        for a in range(len(system.agents)):
            system.run_local(V, S, a, [])
        self.packer = Packer(system.layout.names, S.v)
        self.pc_slots = [ag.pc for ag in system.agents]
        self.agent_comp = [self.packer.where[ag.pc][0] for ag in system.agents]
        self.groups: list[list[int]] = symmetric_groups(system) if symmetry else []
        if symmetry:
            for g in self.groups:
                comps = [self.agent_comp[a] for a in g]
                assert len(set(comps)) == len(comps)
        self.comp_groups = [[self.agent_comp[a] for a in g] for g in self.groups]
        #: per warp with locals: (its component, the pc's offset in it, {pc: offsets of
        #: the locals dead there}) -- ``forget``; with the reductions only, so that the
        #: unreduced search stays the plain interleaving graph
        self.dead: list[tuple[int, int, dict]] = self._dead_locals() if symmetry else []
        #: ``forget`` by (warp component position, component id): the id with the dead
        #: locals at 0 (a component id names one tuple for the whole search)
        self._forgotten: dict = {}
        # does any warp's program loop (a back edge)?  Then runs may never end and the
        # engine must look for cycles nobody leaves, not only for deadlocks
        self.cyclic = not all(is_acyclic(ag.program.code) for ag in system.agents)
        #: the automorphisms renaming CTAs (``cta_symmetry``; not where some warp loops:
        #: the starvation search follows each warp along cycles), each as a permutation of
        #: the components and the pool's position -- ``_rename``
        self.cta_perms: list[CtaPermutation] = []
        self._cta_packed: list[tuple[Callable[[tuple], tuple], CtaPermutation, dict]] = []
        if symmetry and cta_symmetry and not self.cyclic:
            self._set_cta_perms(cta_automorphisms(system))
        self.initial = self.canon(self.packer.initial)
        #: the reducer whose ``reduce(state, successors)`` keeps a stubborn set
        #: (``por.stubborn_sets`` builds it); not where some warp loops: the reductions
        #: would not preserve livelocks
        self.reducer = None
        #: (state, its unpacked slot list) of the last expansion (``getter``)
        self._last_flat: Optional[tuple] = None
        if reduction is not None and not self.cyclic:
            self.reducer = reduction(self)

    def _set_cta_perms(self, perms: list[CtaPermutation]) -> None:
        """Keep ``perms`` if each maps whole components onto whole components, slot for
        slot (the layout keeps a CTA's objects and a warp's slots together): then a
        renaming permutes component numbers and changes only the pool's value."""
        p = self.packer
        packed = []
        for g in perms:
            comp_perm = []
            for ci, slots in enumerate(p.comp_slots):
                cj = p.comp_of_slot[g.slots[slots[0]]]
                if [g.slots[s] for s in slots] != p.comp_slots[cj]:
                    return  # not a component permutation: no CTA symmetry at all
                comp_perm.append(cj)
            inv = [0] * len(comp_perm)
            for ci, cj in enumerate(comp_perm):
                inv[cj] = ci
            packed.append((_gather(inv), g, {}))
        self.cta_perms = list(perms)
        self._cta_packed = packed
        self._pool_at = p.where[self.sys.pool]

    def _rename(self, take: Callable[[tuple], tuple], g: CtaPermutation, memo: dict,
                st: tuple) -> tuple:
        """The packed state ``st`` renamed by the automorphism ``g`` (``take`` gathers
        each component from its preimage's position; ``memo``: the pool's component
        number -> the renamed one's)."""
        out = take(st)
        pci, off = self._pool_at  # the pool's slot is no CTA's: its component stays
        cid = out[pci]
        new = memo.get(cid)
        if new is None:
            comp = self.packer.table[cid]
            new = cid
            if comp[off]:
                c = list(comp)
                c[off] = g.pool(comp[off])
                new = self.packer.intern(tuple(c))
            memo[cid] = new
        if new == cid:
            return out
        lst = list(out)
        lst[pci] = new
        return tuple(lst)

    def _component_keys(self) -> Optional[list]:
        """The order of component values in the representative: None for their numbers
        (``PortableExplorer``: an order that does not depend on the process)."""
        return None

    def _dead_locals(self) -> list[tuple[int, int, dict]]:
        out = []
        where = self.packer.where
        for ag in self.sys.agents:
            if not ag.locals:
                continue
            ci, pc_off = where[ag.pc]
            # a warp's locals live with its pc; one elsewhere is not forgotten
            by_pc = {pc: tuple(sorted(where[s][1] for s in slots if where[s][0] == ci))
                     for pc, slots in dead_local_slots(self.sys, ag.index).items()}
            out.append((ci, pc_off, by_pc))
        return out

    def forget(self, st: tuple) -> tuple:
        """``st`` with every warp's dead locals (``model.program.live_locals``: no run
        from its pc reads them before writing them) set to 0, their initial value.  A
        dead-variable reduction: states that differ only there have the same futures
        step for step (no check, no enabledness and no later value reads a dead
        local), so one stands for all (the try_wait tokens of a retried wait, for
        instance, are dead once their branch is passed)."""
        lst = None
        memo = self._forgotten
        for ci, pc_off, by_pc in self.dead:
            cid = st[ci]
            new = memo.get((ci, cid))
            if new is None:
                new = memo[(ci, cid)] = self._forget_component(cid, pc_off, by_pc)
            if new != cid:
                if lst is None:
                    lst = list(st)
                lst[ci] = new
        return st if lst is None else tuple(lst)

    def _forget_component(self, cid: int, pc_off: int, by_pc: dict) -> int:
        """A warp's component ``cid`` with its dead locals at 0 (``forget``)."""
        comp = self.packer.table[cid]
        offs = by_pc.get(comp[pc_off])
        if not offs or all(comp[o] == 0 for o in offs):
            return cid
        c = list(comp)
        for o in offs:
            c[o] = 0
        return self.packer.intern(tuple(c))

    def canon(self, st: tuple) -> tuple:
        """The representative of ``st`` under permutations of symmetric warps (after
        ``forget``): each group's warps sorted by component (``_component_keys``)."""
        if self.dead:
            st = self.forget(st)
        return self._sorted_warps(st)

    def orbit_key(self, st: tuple) -> tuple:
        """What the search keeps ``st`` (a ``canon`` state) under in its visited set: the
        least, in component order, of ``st`` and its renamings by the CTA automorphisms
        (each with its warps sorted again) -- the same for every state of an orbit,
        because the renamings are a whole group.  The search goes on from the state it
        reached first, not from the least one: the partial-order reduction's choices
        (lowest warp first) then follow one run, where a renamed state would make them
        jump from CTA to CTA (measured: NVIDIA's 2x2 Hopper GEMM, 3,689 states without
        CTA symmetry, over 215,000 when the least state was expanded instead)."""
        if not self._cta_packed:
            return st
        best = st
        for take, g, memo in self._cta_packed:
            img = self._sorted_warps(self._rename(take, g, memo, st))
            keys = self._component_keys()
            if (img < best) if keys is None else \
                    [keys[c] for c in img] < [keys[c] for c in best]:
                best = img
        return best

    def _sorted_warps(self, st: tuple) -> tuple:
        """``st`` with each group of symmetric warps sorted by component."""
        lst = None
        keys = self._component_keys() if self.comp_groups else None
        for g in self.comp_groups:
            vals = [st[c] for c in g]
            sv = sorted(vals) if keys is None else sorted(vals, key=keys.__getitem__)
            if sv != vals:
                if lst is None:
                    lst = list(st)
                for c, v in zip(g, sv):
                    lst[c] = v
        return st if lst is None else tuple(lst)

    def canon_perm(self, st: tuple) -> tuple[tuple, list[int]]:
        """``canon`` plus the permutation: warp position j of the result holds the warp
        that was at position ``perm[j]``."""
        if self.dead:
            st = self.forget(st)
        perm = list(range(len(self.sys.agents)))
        lst = list(st)
        keys = self._component_keys()
        for g in self.groups:
            comps = [self.agent_comp[a] for a in g]
            order = sorted(range(len(g)), key=(lambda j: st[comps[j]]) if keys is None
                           else (lambda j: keys[st[comps[j]]]))
            for j, src in enumerate(order):
                lst[comps[j]] = st[comps[src]]
                perm[g[j]] = g[src]
        return tuple(lst), perm

    def _real_step(self, step: tuple, who: list[int]) -> tuple:
        """A step of a canonical state, naming the real warp (``who``: canonical position
        -> real warp).  TMA items name their issuing warp, which is never permuted (warps
        that issue TMA/CLC loads are in no symmetric group); the other asynchronous items
        name the warp whose queue they drain."""
        if step[0] == "a":
            return ("a", who[step[1]], step[2])
        item = step[1]
        if item[0] == "tma":
            return step
        return ("e", (item[0], who[item[1]]) + tuple(item[2:]))

    def pc(self, state: tuple, a: int) -> int:
        ci, off = self.packer.where[self.pc_slots[a]]
        return self.packer.table[state[ci]][off]

    def getter(self, state: tuple) -> Callable[[int], Any]:
        """Slot reads of ``state``: indexing into its unpacked list where the last
        expansion made one (the reduction reads the state it just expanded), else
        through the packed components."""
        last = self._last_flat
        if last is not None and last[0] is state:
            return last[1].__getitem__
        return PackedState(self.packer, state).get

    def successors(self, state: tuple) -> list[tuple[tuple, tuple, Optional[tuple]]]:
        """The steps of a stubborn set of ``state`` (all steps without reduction).  With
        a reducer, every warp's enabled step is executed (its enabledness is the model's
        answer) but only the kept ones become states: on NVIDIA's 2x1 and 2x2 Hopper
        GEMMs the sets keep 7-12% of the steps, and making a state (copy, dead locals,
        warp order) is most of a step's cost."""
        if self.reducer is None:
            return list(self._all_successors(state))
        base = self.packer.unpack_list(state)
        self._last_flat = (state, base)  # the reducer reads the state through it
        steps: list = []
        for a in range(len(self.pc_slots)):
            steps.extend(self._agent_steps(state, base, a))
        # an asynchronous completion is always enabled and one step (``_env_steps``): it
        # is executed only where the stubborn set keeps it (a TMA delivery costs about
        # twice a warp's step, and the sets keep few)
        steps.extend((("e", item), None, None)
                     for item in self.sys.env_items_of(base.__getitem__))
        if len(steps) > 1:
            steps = self.reducer.reduce(state, steps)
        out = []
        for step, S, o in steps:
            if S is None:
                S = FlatState(self.packer, state, base)
                o = self.sys.exec_env(V, S, step[1])
            out.append((step, self.canon(S.freeze()), first_violation(o.checks)))
        return out

    def _all_successors(self, state: tuple) -> Iterator[tuple[tuple, tuple, Optional[tuple]]]:
        """Yield ``(step, next_state, violation)``; ``step`` identifies the transition:
        ``("a", agent, choice)`` or ``("e", item)``; ``violation`` is ``(prop, detail)``."""
        for step, S, out in self._steps(state):
            yield step, self.canon(S.freeze()), first_violation(out.checks)

    def take(self, state: tuple, step: tuple) -> Optional[tuple[tuple, Optional[tuple]]]:
        """``(next_state, violation)`` of ``step`` from ``state``, as ``_all_successors``
        yields it, or None where the step is not enabled there -- without running the
        other units' steps (replaying a run: ``shorten.counterexample_end``)."""
        last = self._last_flat
        if last is not None and last[0] is state:
            base = last[1]  # the state a previous take made: no unpacking
        else:
            base = self.packer.unpack_list(state)
            self._last_flat = (state, base)
        if step[0] == "a":
            got = next((x for x in self._agent_steps(state, base, step[1])
                        if x[0] == step), None)
        else:
            got = next((x for x in self._env_steps(state, base) if x[0] == step), None)
        if got is None:
            return None
        _, S, out = got
        frozen = S.freeze()
        nxt = self.canon(frozen)
        if nxt == frozen:
            # the step's own flat list is the next state's: a replay goes on from it
            self._last_flat = (nxt, S.v if S.v is not None else base)
        return nxt, first_violation(out.checks)

    def _steps(self, state: tuple) -> Iterator[tuple[tuple, Any, Any]]:
        """Yield ``(step, S, outcome)`` for each enabled step of ``state``: the step
        executed on its own copy-on-write accessor ``S``, not yet made a state."""
        base = self.packer.unpack_list(state)
        # never written: a step copies it first (FlatState)
        self._last_flat = (state, base)
        for a in range(len(self.pc_slots)):
            yield from self._agent_steps(state, base, a)
        yield from self._env_steps(state, base)

    def _agent_steps(self, state: tuple, base: list, a: int
                     ) -> Iterator[tuple[tuple, Any, Any]]:
        """Warp ``a``'s enabled steps (``_steps``): its choices in order, up to the first
        disabled one."""
        pc = base[self.pc_slots[a]]
        if pc == DONE:
            return
        sysm = self.sys
        for choice in range(sysm.agent_choices(a, pc)):
            S = FlatState(self.packer, state, base)
            out = sysm.exec_agent(V, S, a, pc, choice)
            if not out.enabled:
                break
            yield ("a", a, choice), S, out

    def _env_steps(self, state: tuple, base: list) -> Iterator[tuple[tuple, Any, Any]]:
        """The asynchronous completions' steps (``_steps``): every item in flight."""
        for item in self.sys.env_items_of(base.__getitem__):
            S = FlatState(self.packer, state, base)
            yield ("e", item), S, self.sys.exec_env(V, S, item)

    def _env_items(self, state: tuple) -> list[tuple]:
        return self.sys.env_items_of(PackedState(self.packer, state).get)

    def all_done(self, state: tuple) -> bool:
        return all(self.pc(state, a) == DONE for a in range(len(self.sys.agents)))

    # ------------------------------------------------------------------ replay

    def replay(self, steps: list[tuple], violation: Optional[tuple],
               stuck_state: Optional[tuple] = None) -> Trace:
        """Re-execute ``steps`` from the initial state and describe each one.

        Steps name warps by their position in the (canonical) state they were taken
        from; ``who`` follows the symmetry permutations so that every event names the warp
        that really acted.  (Renamings of CTAs need nothing here: the search keeps the
        state it reached, only its visited set is keyed by orbit -- ``orbit_key``.)"""
        sysm = self.sys
        state = self.initial
        who = list(range(len(sysm.agents)))
        step_who = who
        trace = Trace()
        for i, step in enumerate(steps, 1):
            S = PackedState(self.packer, state)
            before = self.packer.unpack(state)
            trace.steps.append(self._real_step(step, who))
            if step[0] == "a":
                _, a, choice = step
                pc = self.pc(state, a)
                ins = sysm.code(a)[pc]
                out = sysm.exec_agent(V, S, a, pc, choice)
                if not out.enabled:
                    raise RuntimeError(f"replay mismatch at step {i}: {step} is not enabled")
                ag = sysm.agents[who[a]]
                actor, role, cta, kind = ag.name, ag.role, ag.cta, "agent"
                loc = str(ins.loc) if ins.loc.line else ""
                what = out.what
                fields = instr_fields(ins)
            else:
                item = step[1]
                out = sysm.exec_env(V, S, item)
                actor, role, cta, kind = sysm.env_name(item), "async", None, "env"
                loc = ""
                fields = env_fields(sysm, item)
                what = out.what
            # the step's messages name warps by their positions in the state it was taken
            # from: rename them with that state's permutation, before the next one
            step_who = who
            state, perm = self.canon_perm(S.freeze())
            who = [who[p] for p in perm]
            after = self.packer.unpack(state)
            viol = first_violation(out.checks)
            ev_viol = None
            if i == len(steps) and violation is not None:
                if viol is None or viol[0] != violation[0]:
                    raise RuntimeError("replay mismatch: the last step does not violate "
                                       f"{violation[0]}")
                ev_viol = f"VIOLATED {viol[0]}: {_rename(viol[1], sysm, step_who)}"
            elif viol is not None:
                raise RuntimeError(f"replay mismatch: step {i} violates {viol[0]} early")
            trace.events.append(Event(i, actor, role, cta, _rename(what, sysm, step_who), loc,
                                      kind, barrier_changes(sysm.bar, before, after), ev_viol,
                                      **fields))
        if violation is not None:
            trace.violated, trace.detail = violation[0], _rename(violation[1], sysm, step_who)
        if stuck_state is not None:
            flat = self.packer.unpack(stuck_state)
            trace.blocked = [f"{sysm.agents[who[ag.index]].name} ({ag.role}) "
                             f"{_rename(sysm.blocked_reason(flat, ag.index), sysm, who)}"
                             for ag in sysm.agents if flat[ag.pc] != DONE]
        return trace


def _gather(idx: list[int]) -> Callable[[tuple], tuple]:
    """``f(t) == tuple(t[i] for i in idx)``, at C speed."""
    if len(idx) == 1:
        return lambda t, _i=idx[0]: (t[_i],)
    return itemgetter(*idx)


def _rename(text: str, sysm: System, who: list[int]) -> str:
    """Agent names inside a message refer to canonical positions; use the real warps."""
    if all(w == i for i, w in enumerate(who)):
        return text
    names = {ag.name: sysm.agents[who[ag.index]].name for ag in sysm.agents}
    return re.sub(r"cta\d+\.w\d+", lambda m: names.get(m.group(0), m.group(0)), text)

