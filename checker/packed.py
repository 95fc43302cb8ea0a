"""Compact concrete states for the explicit engine.

The model's state is a flat vector of slots (``model.system.StateLayout``).  Storing a
full tuple per visited state is too costly, so slots are grouped into *components* (one
warp, one barrier array of one CTA, one buffer ring of one CTA, ...); each distinct
component tuple is stored once and numbered, and a state is the tuple of its component
numbers.  Successors copy only the components a step changes (copy-on-write accessor),
and hashing a state touches a few dozen small ints.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Any

from ..model.system import QueueOps


def component_of(name: str) -> str:
    """Group a slot name into its component ("cta0.w4.pc" -> "cta0.w4")."""
    head = name.split(".", 1)[0]
    if name.startswith("cta") and ".w" in name:
        return ".".join(name.split(".")[:2])
    if "@cta" in name:
        # "ab.full[1]@cta0.phase" / "ab.full@cta0.ivis" / "ab.buf[0]@cta1.wip"
        base, rest = name.split("@cta", 1)
        cta = rest.split(".", 1)[0]
        arr = base.split("[", 1)[0]
        return f"{arr}@cta{cta}"
    return head


class Packer:
    """Slot <-> (component, offset) mapping and the component intern table."""

    def __init__(self, names: list[str], init: list[Any]):
        comps: dict[str, list[int]] = {}
        for i, n in enumerate(names):
            comps.setdefault(component_of(n), []).append(i)
        self.comp_names = list(comps)
        self.comp_slots = [comps[c] for c in self.comp_names]
        self.where: list[tuple[int, int]] = [(0, 0)] * len(names)
        for ci, slots in enumerate(self.comp_slots):
            for off, s in enumerate(slots):
                self.where[s] = (ci, off)
        self.table: list[tuple] = []
        self.ids: dict[tuple, int] = {}
        self.comp_of_slot = [w[0] for w in self.where]
        # when every component is a contiguous run of slots in slot order, unpacking is a
        # concatenation and packing a slice (the fast path)
        self.contiguous = all(
            slots == list(range(slots[0], slots[0] + len(slots))) for slots in self.comp_slots
        ) and [sl[0] for sl in self.comp_slots] == sorted(sl[0] for sl in self.comp_slots)
        self.bounds = [(sl[0], sl[0] + len(sl)) for sl in self.comp_slots]
        # otherwise: the components' values one after another, then put in slot order by
        # one itemgetter (both loops in C)
        concat = [s for slots in self.comp_slots for s in slots]
        at = [0] * len(names)
        for i, s in enumerate(concat):
            at[s] = i
        self._in_slot_order = itemgetter(*at) if len(at) > 1 else (lambda xs: tuple(xs))
        self.initial = self.pack(init)

    def intern(self, comp: tuple) -> int:
        i = self.ids.get(comp)
        if i is None:
            i = len(self.table)
            self.table.append(comp)
            self.ids[comp] = i
        return i

    def pack(self, flat: list[Any]) -> tuple:
        return tuple(self.intern(tuple(flat[s] for s in slots)) for slots in self.comp_slots)

    def unpack(self, state: tuple) -> tuple:
        return tuple(self.unpack_list(state))

    def unpack_list(self, state: tuple) -> list:
        table = self.table
        if self.contiguous:
            return list(chain.from_iterable([table[c] for c in state]))
        return list(self._in_slot_order(list(chain.from_iterable([table[c] for c in state]))))


class PackedState(QueueOps):
    """Copy-on-write accessor (the ``S`` of ``model.system``) over a packed state."""

    __slots__ = ("p", "state", "lists")

    def __init__(self, packer: Packer, state: tuple):
        self.p = packer
        self.state = state
        self.lists: dict[int, list] = {}

    def get(self, i: int) -> Any:
        ci, off = self.p.where[i]
        lst = self.lists.get(ci)
        if lst is not None:
            return lst[off]
        return self.p.table[self.state[ci]][off]

    def set(self, i: int, x: Any) -> None:
        ci, off = self.p.where[i]
        lst = self.lists.get(ci)
        if lst is None:
            lst = list(self.p.table[self.state[ci]])
            self.lists[ci] = lst
        lst[off] = x

    def freeze(self) -> tuple:
        if not self.lists:
            return self.state
        st = list(self.state)
        for ci, lst in self.lists.items():
            st[ci] = self.p.intern(tuple(lst))
        return tuple(st)


class FlatState(QueueOps):
    """Copy-on-write accessor over an unpacked state (one flat list shared by all the
    successors of a state; a step copies it on its first write)."""

    __slots__ = ("p", "state", "base", "v", "dirty")

    def __init__(self, packer: Packer, state: tuple, base: list):
        self.p = packer
        self.state = state
        self.base = base
        self.v: Any = None
        self.dirty: Any = None

    def get(self, i: int) -> Any:
        v = self.v
        return v[i] if v is not None else self.base[i]

    def set(self, i: int, x: Any) -> None:
        if self.v is None:
            self.v = self.base.copy()
            self.dirty = set()
        self.v[i] = x
        self.dirty.add(self.p.comp_of_slot[i])

    def freeze(self) -> tuple:
        if self.v is None:
            return self.state
        st = list(self.state)
        v = self.v
        p = self.p
        if p.contiguous:
            for ci in self.dirty:
                lo, hi = p.bounds[ci]
                st[ci] = p.intern(tuple(v[lo:hi]))
        else:
            slots = p.comp_slots
            for ci in self.dirty:
                st[ci] = p.intern(tuple([v[s] for s in slots[ci]]))
        return tuple(st)
