"""Warpgroup-collective completion of ``wgmma.mma_async`` (sm_90a).

What the PTX ISA says (9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions"):

* a warpgroup is four contiguous warps, the first of rank a multiple of 4 (9.7.15.1);
  its threads perform the MMA *collectively*: issue ``wgmma.mma_async``, commit the
  outstanding operations into a wgmma-group, wait for the group; "once the
  wgmma-group completes, all the wgmma.mma_async operations have been performed and
  completed";
* ``wgmma.commit_group`` (9.7.15.7.2) "creates a new wgmma-group per warpgroup" and
  batches into it the executing warp's uncommitted ``wgmma.mma_async`` operations: the
  k-th commit of each warp of the warpgroup adds that warp's share to the warpgroup's
  k-th group (all of them are ``.aligned``: every warp executes the same commits);
* ``wgmma.wait_group N`` (9.7.15.7.3) makes the executing thread wait until all but
  the N most recent wgmma-groups are complete.

So the rule: when a warp's ``wait_group N`` returns, the warpgroup's groups up to its
own commit count minus N are complete.  A group's MMAs are collective operations of all
four warps, so it cannot be complete before every warp of the warpgroup has issued and
committed its share: the wait blocks until they have.  From then on every warp's share
of those groups has finished reading shared memory -- not only the waiting warp's.
A sibling warp that has not issued its share yet keeps the waiting warp waiting; a
warp that releases a stage before *any* wait retires the group still races with the
MMA (its reads are held until a wait retires them).  Were the ISA read more weakly
(a warp's wait covering only its own share), this rule would hide a race.  CUTLASS's
own kernels rely on it (the non-persistent Hopper FMHA writes O over Q right after its
warp's ``wait_group``), and an H100 behaves so: in the litmus test
``impl/litmus_cuda/wgmma_warpgroup_wait.cu`` (spec/README.md HW-12) a warp's wait
returned only after the last warp of its warpgroup, delayed by up to 2.4 million
cycles, had issued its wgmma.

State, per warpgroup that issues wgmma in the model (its *members*: the warps of
``warp // 4`` in one CTA whose programs have a wgmma effect or ``WgmmaWait``):

* ``cm[w]``: groups member ``w`` committed that are not yet complete;
* ``due[w, b]``: 0, or the group (counted from the oldest not yet complete, 1-based)
  whose completion ends member ``w``'s reads of buffer ``b``.  While it is non-zero the
  warp holds one owner count of ``b`` (``rd``, as every reader does).

Both are relative to the completed groups, so the state stays finite in loops.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .program import BufRef, GhostEffect, WgmmaWait

#: ``GhostEffect.buf`` of a ``wgmma_commit``: only its CTA matters
WGMMA_GROUP = "wgmma-group"
WARPS_PER_WARPGROUP = 4


def commit_effect(cta: int) -> GhostEffect:
    """``wgmma.commit_group`` of the warp whose step carries it."""
    return GhostEffect("wgmma_commit", BufRef(cta, WGMMA_GROUP, 0))


def read_effects(buf: BufRef, tag: int) -> tuple[GhostEffect, ...]:
    """A wgmma's read of fill ``tag`` of ``buf``: the data must be there (``read``), and
    the async-proxy read lasts until its group completes (``wgmma_read``)."""
    return (GhostEffect("read", buf, tag), GhostEffect("wgmma_read", buf))


def warpgroup(warp: int) -> int:
    return warp // WARPS_PER_WARPGROUP


def _effects(code: Iterable[Any]) -> Iterable[GhostEffect]:
    for ins in code:
        yield from ins.pre
        yield from ins.post


def uses_wgmma(code: Iterable[Any]) -> bool:
    """Is a warp with this program a *member* of its warpgroup's wgmma (a wgmma read or
    commit, or a ``WgmmaWait``)?  The waits of a warpgroup wait for its members only."""
    code = tuple(code)
    return any(isinstance(i, WgmmaWait) for i in code) or any(
        e.kind in ("wgmma_read", "wgmma_commit") for e in _effects(code))


class WgmmaState:
    """Slot allocation of the rule and its transitions (concrete or symbolic values)."""

    def __init__(self, agents: list, alloc: Callable[[str, Any], int]) -> None:
        #: agent -> its warpgroup's key (cta, warpgroup)
        self.group_of: dict[int, tuple[int, int]] = {}
        self.members: dict[tuple[int, int], list[int]] = {}
        self.cm: dict[int, int] = {}
        self.due: dict[tuple[int, BufRef], int] = {}
        for ag in agents:
            code = ag.program.code
            if not uses_wgmma(code):
                continue
            reads = sorted({e.buf for e in _effects(code) if e.kind == "wgmma_read"})
            key = (ag.cta, warpgroup(ag.warp))
            self.group_of[ag.index] = key
            self.members.setdefault(key, []).append(ag.index)
            self.cm[ag.index] = alloc(f"{ag.name}.wgmma_groups", 0)
            for b in reads:
                self.due[(ag.index, b)] = alloc(f"{ag.name}.wgmma_reads.{b}", 0)

    def __bool__(self) -> bool:
        return bool(self.group_of)

    def siblings(self, a: int) -> list[int]:
        return self.members.get(self.group_of.get(a, (-1, -1)), [])

    def bufs_of(self, key: tuple[int, int]) -> list[tuple[int, BufRef]]:
        ms = set(self.members.get(key, []))
        return [(w, b) for (w, b) in self.due if w in ms]

    # ------------------------------------------------------------------ transitions

    def read(self, V: Any, S: Any, a: int, buf: BufRef, rd: int) -> None:
        """Warp ``a``'s wgmma reads ``buf`` until the group its next commit closes is
        complete: one owner count while any of its groups still reads it."""
        slot = self.due[(a, buf)]
        held = V.lt(0, S.get(slot))
        S.set(rd, V.ite(held, S.get(rd), S.get(rd) + 1))
        S.set(slot, S.get(self.cm[a]) + 1)

    def commit(self, V: Any, S: Any, a: int) -> None:
        S.set(self.cm[a], S.get(self.cm[a]) + 1)

    def retiring(self, V: Any, S: Any, a: int, ins: WgmmaWait) -> Any:
        """How many of the warpgroup's oldest groups the wait retires (0 or more)."""
        k = S.get(self.cm[a]) - ins.n
        return V.ite(V.lt(0, k), k, 0)

    def wait_enabled(self, V: Any, S: Any, a: int, ins: WgmmaWait) -> Any:
        """Every member has committed the groups the wait retires."""
        k = S.get(self.cm[a]) - ins.n
        out: Any = True
        for w in self.siblings(a):
            if w != a:
                out = V.and_(out, V.le(k, S.get(self.cm[w])))
        return out

    def wait(self, V: Any, S: Any, a: int, ins: WgmmaWait, buf_rd: Callable[[BufRef], int]
             ) -> None:
        """The wait passes: its groups are complete, for every member's share."""
        d = self.retiring(V, S, a, ins)
        key = self.group_of[a]
        for w in self.members[key]:
            S.set(self.cm[w], S.get(self.cm[w]) - d)
        for (w, b) in self.bufs_of(key):
            slot = self.due[(w, b)]
            due = S.get(slot)
            held = V.lt(0, due)
            done = V.and_(held, V.le(due, d))
            rd = buf_rd(b)
            S.set(rd, V.ite(done, S.get(rd) - 1, S.get(rd)))
            S.set(slot, V.ite(held, V.ite(done, 0, due - d), 0))

    def blocked_reason(self, state: tuple, a: int, ins: WgmmaWait, names: list[str]) -> str:
        k = state[self.cm[a]] - ins.n
        behind = [names[w] for w in self.siblings(a) if w != a and state[self.cm[w]] < k]
        return (f"waits for its warpgroup's wgmma-groups (wgmma.wait_group {ins.n}; "
                f"{state[self.cm[a]]} committed by it not yet complete)"
                + (f" -- {', '.join(behind)} of its warpgroup ha"
                   f"{'s' if len(behind) == 1 else 've'} not committed them yet"
                   if behind else ""))
