"""Symmetry over identical CTAs of a cluster.

A permutation ``sigma`` of a cluster's CTAs is an *automorphism* of the transition
system when renaming every CTA ``c`` to ``sigma(c)`` maps the kernel onto itself: warp
``w`` of CTA ``sigma(c)`` runs exactly the program of warp ``w`` of CTA ``c`` with every
CTA it names -- its barriers', its buffers', its multicast deliveries', an
``mbarrier.init``'s -- renamed (``model.program.map_ctas``).  Then renaming the state the
same way (each slot of CTA ``c`` to the same slot of CTA ``sigma(c)``, each warp of CTA
``c`` to the same warp of CTA ``sigma(c)``) maps runs to runs step for step: every rule
of ``model/system.py`` reads a CTA only through the instruction it executes or through
its own slots.  So the explicit engine may keep one state per orbit of the group of
automorphisms, with the same verdicts and the same run lengths (``Explorer``'s
``cta_symmetry``).  A 2x2 multicast cluster, where CTA (m, n) multicasts A along its row
and B along its column, has the four automorphisms that swap rows and/or columns.

The renaming of a state is a permutation of its slots, except for the values that name a
warp: only the TMA/CLC deliveries in flight (``System.pool``: ``(agent, pc, delivery,
choice)``) hold one.  Queues hold program counters, which the renaming keeps, and every
other slot holds counts, phases, tags or flags.  Where the model has state this module
does not know how to rename, there is no CTA symmetry (``cta_automorphisms`` says why):

* global memory (``System.gbufs``: the completing warp's index, the owning CTA);
* the strict memory model (per-CTA scope marks and per-warp acquisitions);
* a cta_group::2 pair whose pairing ``c ^ 1`` (``System.tmem_pair_of``) the permutation
  does not keep.

The search for automorphisms is exact: each candidate is checked program by program, and
``tests/test_cta_symmetry.py`` checks on every bundled cluster example that the renaming
maps the reachable graph onto itself, edge for edge.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, fields
from typing import Any, Iterator, Optional

from ..model.program import Arrival, BarRef, Delivery, GhostEffect, map_ctas
from ..model.system import BUFFER_LOCAL_EFFECTS, System

#: CTAs of a cluster up to which every permutation is tried; larger clusters try the
#: permutations of the cluster's rows times those of its columns
ALL_PERMUTATIONS_UP_TO = 4

#: a CTA in a slot name: the warp's ("cta0.w1.pc") or the object's ("ab.full[0]@cta0.phase")
_CTA = re.compile(r"(^|@)cta(\d+)(?=\.|$)")


@dataclass(frozen=True)
class CtaPermutation:
    """One automorphism: CTA ``c`` becomes ``sigma[c]``, warp ``a`` becomes
    ``agents[a]``, the value of slot ``i`` moves to slot ``slots[i]``, and delivery ``d``
    of the TMA/CLC load at ``pc`` of warp ``a`` becomes delivery ``perm[d]`` of the
    renamed load, for each ``((a, pc), perm)`` of ``deliveries`` (elsewhere ``d``)."""

    sigma: tuple[int, ...]
    agents: tuple[int, ...]
    slots: tuple[int, ...]
    deliveries: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_dmap", dict(self.deliveries))

    def apply_flat(self, system: System, flat: list) -> list:
        """The renamed state of a flat slot vector (a new list)."""
        out = [None] * len(flat)
        for i, x in enumerate(flat):
            out[self.slots[i]] = x
        out[system.pool] = self.pool(out[system.pool])
        return out

    def _item(self, item: tuple) -> tuple:
        a, pc, d = item[0], item[1], item[2]
        perm = self._dmap.get((a, pc))  # type: ignore[attr-defined]
        return (self.agents[a], pc, d if perm is None else perm[d]) + tuple(item[3:])

    def pool(self, items: tuple) -> tuple:
        """The deliveries in flight, renamed (kept sorted, as ``QueueOps.pool_add``)."""
        if not items:
            return items
        return tuple(sorted(self._item(it) for it in items))

    def step(self, step: tuple) -> tuple:
        """A step (``Explorer``'s ids) of a state, as the step of the renamed state."""
        if step[0] == "a":
            return ("a", self.agents[step[1]], step[2])
        item = step[1]
        if item[0] == "tma":
            return ("e", ("tma",) + self._item(item[1:]))
        return ("e", (item[0], self.agents[item[1]]) + tuple(item[2:]))


#: instruction fields whose items may come in another order after a renaming (a
#: multicast lists its destination CTAs in rank order): their items act on distinct
#: objects, so any order is the same step (``_match``; ``model.properties.ranked``
#: makes the property a step reports independent of it too)
_UNORDERED = ("deliveries", "arrivals", "bars", "effects", "pre", "post")


def _objects(item: Any) -> Optional[tuple]:
    """The barriers and buffers one item of an ``_UNORDERED`` field acts on (None: an
    item this module does not know, never reordered)."""
    if isinstance(item, Delivery):
        return (item.bar,) if item.buf is None else (item.bar, item.buf)
    if isinstance(item, Arrival):
        return (item.bar,)
    if isinstance(item, GhostEffect):
        # only effects on their own buffer's ghost alone commute (the model says which)
        return (item.buf,) if item.kind in BUFFER_LOCAL_EFFECTS else None
    if isinstance(item, BarRef):
        return (item,)
    return None


def _reorderable(xs: tuple, ys: tuple) -> bool:
    """``ys`` is ``xs`` in another order, and no two items act on one object."""
    if len(xs) != len(ys) or set(xs) != set(ys) or len(set(xs)) != len(xs):
        return False
    objs = [_objects(x) for x in xs]
    if any(o is None for o in objs):
        return False
    flat = [ob for o in objs for ob in o]  # type: ignore[union-attr]
    return len(set(flat)) == len(flat)


def _match(x: Any, y: Any) -> Optional[dict[str, tuple[int, ...]]]:
    """How the renamed instruction ``x`` is the instruction ``y``: {} when equal, the
    item permutation of each ``_UNORDERED`` field that differs only in order (item ``i``
    of ``x`` is item ``perm[i]`` of ``y``), or None when they differ."""
    if x == y:
        return {}
    if type(x) is not type(y) or not hasattr(x, "__dataclass_fields__"):
        return None
    perms: dict[str, tuple[int, ...]] = {}
    for f in fields(x):
        if not f.compare:
            continue
        vx, vy = getattr(x, f.name), getattr(y, f.name)
        if vx == vy:
            continue
        if f.name in _UNORDERED and isinstance(vx, tuple) and _reorderable(vx, vy):
            perms[f.name] = tuple(vy.index(i) for i in vx)
            continue
        return None
    return perms


def _candidates(system: System) -> Iterator[tuple[int, ...]]:
    """Permutations of the cluster's CTAs to try (not the identity)."""
    n = system.info.num_ctas
    ident = tuple(range(n))
    if n <= ALL_PERMUTATIONS_UP_TO:
        perms: Iterator[tuple[int, ...]] = itertools.permutations(range(n))
    else:
        # rank = x + X * y (CUDA's %cluster_ctarank order, x fastest): permute the x
        # coordinates and the y coordinates independently -- a group, so what survives
        # the check below is one too
        x, y, z = system.info.cluster_shape
        if z != 1 or x * y != n:
            return
        perms = (tuple(px[c % x] + x * py[c // x] for c in range(n))
                 for px in itertools.permutations(range(x))
                 for py in itertools.permutations(range(y)))
    for p in perms:
        if p != ident:
            yield p


def why_no_cta_symmetry(system: System) -> Optional[str]:
    """Why the model's state cannot be renamed by CTAs (None: it can)."""
    if system.info.num_ctas < 2:
        return "one CTA"
    if system.gbufs or system.info.clusters > 1:
        return "global memory (the owning CTA and the completing warp are state)"
    if system.strict_scopes:
        return "the strict memory model (per-CTA scope marks)"
    return None


def cta_automorphisms(system: System) -> list[CtaPermutation]:
    """Every automorphism of ``system`` among ``_candidates`` but the identity (a group
    with it); [] where there is none or ``why_no_cta_symmetry`` says no."""
    if why_no_cta_symmetry(system) is not None:
        return []
    by_place = {(ag.cta, ag.warp): ag.index for ag in system.agents}
    names = system.layout.names
    slot_of = {n: i for i, n in enumerate(names)}
    if len(slot_of) != len(names):
        return []
    out = []
    for sigma in _candidates(system):
        perm = _check(system, sigma, by_place, slot_of)
        if perm is not None:
            out.append(perm)
    return out


def _check(system: System, sigma: tuple[int, ...], by_place: dict,
           slot_of: dict) -> Optional[CtaPermutation]:
    """The permutation ``sigma`` as a ``CtaPermutation`` if it is an automorphism."""
    f = sigma.__getitem__
    if system.tmem_paired and any(sigma[c ^ 1] != sigma[c] ^ 1
                                  for c in range(len(sigma)) if c ^ 1 < len(sigma)):
        return None
    deliveries = []
    for ag in system.agents:
        b = by_place.get((sigma[ag.cta], ag.warp))
        if b is None:
            return None
        other = system.agents[b].program
        if (other.role, other.locals) != (ag.program.role, ag.program.locals) or \
                len(other.code) != len(ag.program.code):
            return None
        try:
            mapped = map_ctas(ag.program.code, f)
        except IndexError:  # names a CTA outside the cluster (a bug the check reports)
            return None
        for pc, (x, y) in enumerate(zip(mapped, other.code)):
            how = _match(x, y)
            if how is None:
                return None
            if "deliveries" in how:
                deliveries.append(((ag.index, pc), how["deliveries"]))
    return renaming(system, sigma, tuple(deliveries), by_place, slot_of)


def renaming(system: System, sigma: tuple[int, ...],
             deliveries: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = (),
             by_place: Optional[dict] = None, slot_of: Optional[dict] = None
             ) -> Optional[CtaPermutation]:
    """The renaming of warps and slots by ``sigma``, whether or not the programs agree
    (``cta_automorphisms`` checks that first; tests build wrong renamings with it): None
    where a warp or a slot has no image, or a slot of no CTA is one this module does not
    know to be CTA-free."""
    if by_place is None:
        by_place = {(ag.cta, ag.warp): ag.index for ag in system.agents}
    names = system.layout.names
    if slot_of is None:
        slot_of = {n: i for i, n in enumerate(names)}
    agents = []
    for ag in system.agents:
        b = by_place.get((sigma[ag.cta], ag.warp))
        if b is None:
            return None
        agents.append(b)
    init = system.layout.init
    # the slots of no CTA known to name no CTA or warp (but for the deliveries in flight,
    # ``CtaPermutation.pool``): the cluster barrier's generation, the pool, the parameters
    shared = {system.cluster_gen, system.pool, *system.param_bits}
    slots = []
    for i, name in enumerate(names):
        if not _CTA.search(name) and i not in shared:
            return None
        j = slot_of.get(_CTA.sub(lambda m: f"{m.group(1)}cta{sigma[int(m.group(2))]}", name))
        if j is None or init[j] != init[i]:
            return None
        slots.append(j)
    if len(set(slots)) != len(slots):
        return None
    return CtaPermutation(sigma, tuple(agents), tuple(slots), deliveries)
