"""Synchronisation ops of the captured IR and the model instruction each becomes.

Facts of the lowering that the IR does not show are stated where they are used, with
what they were checked against (the PTX the same ``cute.compile`` produces):

* ``cute.copy`` of a TMA atom issues one copy per warp, from an ``elect.sync``-chosen
  lane, whatever the active mask (the lowering guards the ``cp.async.bulk.tensor``
  with ``elect.sync``);
* a TMA load's bytes per destination CTA are the atom's ``copy_bits / 8`` divided by
  the CTAs ``tma_partition`` split the box over (multicast: each CTA loads its slice
  and multicasts it);
* a 2-CTA atom (``num_cta = 2``) completes its bytes on the pair leader's barrier
  (even rank), PTX ISA 9.7.9.25 ``.cta_group::2``;
* a TMA *store* is not elected: every lane the user's guard lets through issues it.
  The model keeps one store per warp: the lanes' stores read the same smem and are
  committed and waited for together (``cp.async.bulk.commit_group``/``wait_group``).

``tests/test_cute_lowering.py`` checks each of these against the PTX.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Optional

from ...model.program import (Arrival, Arrive, BulkCommit, BulkWaitRead, ClusterArrive,
                              WgmmaWait,
                              ClusterWait, CpAsync, CpAsyncArrive, CpAsyncCommit,
                              CpAsyncWaitGroup, Delivery, DynExpr, ExpectTx, FenceMbarInit,
                              BufRef, Fail, MbarInit, NamedBarrierOp, NamedWait, TmaLoad,
                              TmaStore, TryWait, UmmaCommit, Wait)
from ...model.properties import Prop
from .mlir_text import Op
from ...model.program import GhostEffect
from ...model.system import ANY_FILL

#: a CLC try_cancel response (PTX ISA 9.7.13.17)
CLC_RESPONSE_BYTES = 16
from .data_ops import copy_between
from .optable import op
from .values import OPAQUE, WARP, Atom, Dyn, Lanes, Ptr, View, lane, norm


def _first_lane(lf: Any, mask: Any) -> int:
    act = lf.active(mask)
    return act[0] if act else -1


@op("nvvm.mbarrier.init", "nvvm.mbarrier.init.shared")
def _init(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``mbarrier.init`` (PTX ISA 9.7.13.15.9): the expected arrival count of every phase."""
    p, cnt = lf.operands(o, env)[:2]
    lanes = lf.active(mask)
    if not lanes:
        return None
    p = lane(p, lanes[0])
    cnt = lane(cnt, lanes[0])
    if not isinstance(p, Ptr) or not isinstance(cnt, int):
        raise lf.error(o, f"mbarrier.init of an address or count not known statically "
                          f"({lf.where(o)})")
    if lf.phase == 1:
        lf.learn_init(p, cnt, o)
        return None
    ref = lf.barrier(p, o)
    if len(lanes) > 1:
        lf.notes.append(f"mbarrier.init by {len(lanes)} lanes at {lf.where(o)}")
    if ref.array not in lf.w.inits_done:
        # one MbarInit per array: the model initialises every stage of it at once; the
        # lifter checks the inits of one array come from one warp in one go
        lf.w.inits_done.add(ref.array)
        count = lf.bars[(p.alloc, p.off)].count
        lf.emit(lf.make(MbarInit, o, f"mbarrier.init {ref.array}[*] count={count}",
                        arrays=((ref.array, count),), cta=lf.w.cta))
    return None


@op("nvvm.fence.mbarrier.init", "nvvm.fence.mbarrier.init.release.cluster")
def _fence_init(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``fence.mbarrier_init.release.cluster`` (PTX ISA 9.7.13.4)."""
    if lf.active(mask):
        lf.emit(lf.make(FenceMbarInit, o, "fence.mbarrier_init", cta=lf.w.cta))
    return None


def _arrive(lf: Any, o: Op, env: dict, mask: Any, tx_operand: int = -1,
            count_operand: int = -1) -> Any:
    """``mbarrier.arrive{.expect_tx}`` by every active lane (PTX ISA 9.7.13.15.13); lanes
    on the same barrier are summed; a pointer into another CTA is a remote arrive."""
    vals = lf.operands(o, env)
    lanes = lf.active(mask)
    if not lanes or lf.phase == 1:
        return [Dyn(None, "an mbarrier state")] * len(o.results) if o.results else None
    acc: dict = {}
    for i in lanes:
        ref = lf.barrier(lane(vals[0], i), o)
        cnt = lane(vals[count_operand], i) if count_operand >= 0 else 1
        tx = lane(vals[tx_operand], i) if tx_operand >= 0 else 0
        if not isinstance(cnt, int) or not isinstance(tx, int):
            raise lf.error(o, f"{o.name} with a count or byte count not known statically "
                              f"({lf.where(o)})")
        c0, t0 = acc.get(ref, (0, 0))
        acc[ref] = (c0 + cnt, t0 + tx)
        lf.note_side(o, ref)
    arrivals = tuple(Arrival(r, c, t) for r, (c, t) in sorted(acc.items()))
    what = ", ".join(f"{_short(a.bar)}" + (f" x{a.count}" if a.count != 1 else "")
                     + (f" +{a.tx}B" if a.tx else "") for a in arrivals)
    scope = "cluster" if "cluster" in o.attrs.get("scope", "") else "cta"
    lf.emit(lf.make(Arrive, o, ("arrive.expect_tx " if tx_operand >= 0 else "arrive ") + what,
                    arrivals=arrivals, scope=scope, pre=lf.ghosts.release_effects()))
    return [Dyn(None, "an mbarrier state")] * len(o.results) if o.results else None


def _short(ref: Any) -> str:
    name = ref.array.rsplit(".", 1)[-1] if "." in ref.array else ref.array
    return f"{name}[{ref.stage}]" + (f"@cta{ref.cta}" if ref.cta else "")


def _segments(o: Op) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", o.attrs.get("operandSegmentSizes", ""))]


@op("nvvm.mbarrier.arrive", "nvvm.mbarrier.arrive.shared", "nvvm.mbarrier.arrive.nocomplete",
    "nvvm.mbarrier.arrive.shared.nocomplete")
def _plain_arrive(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    seg = _segments(o)
    # operands: addr, [count], [predicate]; the count is the second when present
    has_count = (seg[1] > 0) if len(seg) > 1 else (len(o.operands) > 1 and
                                                   o.operand_types[1].startswith("i"))
    return _arrive(lf, o, env, mask, count_operand=1 if has_count else -1)


@op("nvvm.mbarrier.arrive.expect_tx", "nvvm.mbarrier.arrive.expect_tx.shared")
def _arrive_expect_tx(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    return _arrive(lf, o, env, mask, tx_operand=1)


@op("nvvm.mbarrier.expect_tx", "nvvm.mbarrier.expect_tx.shared")
def _expect_tx(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """A bare ``mbarrier.expect_tx`` (PTX ISA 9.7.13.15.11): no arrival."""
    vals = lf.operands(o, env)
    lanes = lf.active(mask)
    if not lanes or lf.phase == 1:
        return None
    for i in lanes:
        ref = lf.barrier(lane(vals[0], i), o)
        tx = lane(vals[1], i)
        if not isinstance(tx, int):
            raise lf.error(o, f"expect_tx of a byte count not known statically ({lf.where(o)})")
        lf.emit(lf.make(ExpectTx, o, f"expect_tx {_short(ref)} +{tx}B", bar=ref, tx=tx))
    return None


@op("nvvm.mbarrier.txn")
def _txn(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    kind = re.search(r"mbar_txn_kind<(\w+)>", o.attrs.get("kind", ""))
    k = kind.group(1) if kind else "?"
    if k == "arrive":
        return _arrive(lf, o, env, mask)
    if k == "arrive_expect_tx":
        return _arrive(lf, o, env, mask, tx_operand=1)
    raise lf.error(o, f"unsupported op nvvm.mbarrier.txn kind {k} ({lf.where(o)})")


def _wait_target(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    lanes = lf.active(mask)
    refs = {lf.barrier(lane(vals[0], i), o) for i in lanes}
    pars = {lane(vals[1], i) for i in lanes}
    if len(refs) != 1 or len(pars) != 1:
        raise lf.error(o, f"the lanes of one warp wait on different barriers or parities "
                          f"({lf.where(o)})")
    parity = pars.pop()
    if not isinstance(parity, int):
        raise lf.error(o, f"a wait whose parity is known only at run time ({lf.where(o)})")
    return refs.pop(), parity & 1


@op("nvvm.mbarrier.try_wait.parity", "nvvm.mbarrier.try_wait.parity.shared")
def _blocking_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """CuTe's ``mbarrier_wait``: ``try_wait.parity`` retried until it succeeds (with no
    result, the op is the whole loop; PTX ISA 9.7.13.15.16)."""
    if not lf.active(mask) or lf.phase == 1:
        return Dyn(DynExpr("const", (1,))) if o.results else None
    ref, parity = _wait_target(lf, o, env, mask)
    lf.note_side(o, ref)
    if o.results:  # a single try returning the result: a token
        name = lf.new_local("tok")
        lf.emit(lf.make(TryWait, o, f"try_wait {_short(ref)} p{parity} -> {name}", bar=ref,
                        parity=parity, dest=name))
        return Dyn(DynExpr("local", (name,)))
    lf.emit(lf.make(Wait, o, f"wait {_short(ref)} p{parity}", bar=ref, parity=parity))
    return None


@op("nvvm.mbarrier.try_wait.parity.timelimit")
def _try_wait_timelimit(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``mbarrier.try_wait.parity`` with a suspend-time hint (PTX ISA 9.7.13.15.16): one
    potentially blocking test that returns whether the phase completed; the hint only
    bounds how long the thread may be suspended, so it is a ``TryWait`` like any other.
    (NVIDIA's Hopper FMHA example retries it, then spins on it in a ``while``.)"""
    if not o.results:
        raise lf.error(o, f"{o.name} without a result ({lf.where(o)})")
    if lf.phase == 1:
        return Dyn(DynExpr("local", ("?",)))
    if not lf.active(mask):
        return OPAQUE
    ref, parity = _wait_target(lf, o, env, mask)
    lf.note_side(o, ref)
    name = lf.new_local("tok")
    lf.emit(lf.make(TryWait, o, f"try_wait {_short(ref)} p{parity} -> {name}", bar=ref,
                    parity=parity, dest=name))
    lf.w.tok_op[name] = (o.name, tuple(o.operands))
    return Dyn(DynExpr("local", (name,)))


# A try_wait retried: ``t = try_wait(b, p); if not t: t = try_wait(b, p)`` and
# ``while not t: t = try_wait(b, p)`` (NVIDIA's Hopper FMHA example wraps every wait so).
# A failed try_wait has no effect but its result (PTX ISA 9.7.13.15.16), so the retry is
# the first attempt made later, and the spin that ends only on success is a blocking
# wait: every run of the retrying program is a run of the collapsed one with the failed
# attempts left out, and back.  Recognised on the IR's structure: the same op with the
# same operands (SSA values, so the same barrier and parity).

def _token_of(c: Any) -> str:
    e = getattr(c, "expr", None)
    return e.args[0] if e is not None and e.op == "local" else ""


def _retries(blk: Any, src: tuple) -> bool:
    """``blk`` is ``r = <the try_wait src>; yield r``."""
    ops = blk.ops if blk is not None else []
    return len(ops) == 2 and (ops[0].name, tuple(ops[0].operands)) == src and \
        ops[1].name == "scf.yield" and ops[1].operands == ops[0].results


def retry_of(lf: Any, o: Op, c: Any, then_blk: Any, else_blk: Any, env: dict) -> bool:
    """``scf.if`` on token ``c`` that yields true, else tries the same try_wait again."""
    src = lf.w.tok_op.get(_token_of(c))
    if src is None or len(o.results) != 1 or len(then_blk.ops) != 1:
        return False
    y = then_blk.ops[0]
    return y.name == "scf.yield" and len(y.operands) == 1 and \
        env.get(y.operands[0]) == 1 and _retries(else_blk, src)


def spin_of(o: Op, env: dict) -> Optional[tuple]:
    """``scf.while`` that starts false and runs ``t = <try_wait>`` while ``not t``: the
    try_wait's (name, operands)."""
    if len(o.regions) != 2 or len(o.operands) != 1 or env.get(o.operands[0]) != 0:
        return None
    before, after = o.regions[0][0], o.regions[1][0]
    if len(before.ops) != 2 or len(before.args) != 1 or len(after.ops) != 2:
        return None
    x, cnd = before.ops
    if x.name != "arith.xori" or before.args[0] not in x.operands or \
            cnd.name != "scf.condition" or cnd.operands != x.results:
        return None
    other = [h for h in x.operands if h != before.args[0]]
    if len(other) != 1 or env.get(other[0]) != 1:
        return None
    src = (after.ops[0].name, tuple(after.ops[0].operands))
    return src if src[0] in TRY_WAITS and _retries(after, src) else None


def wait_or_spin(lf: Any, o: Op, c: Any, then_blk: Any, else_blk: Any, env: dict,
                 mask: Any) -> bool:
    """``if t: pass else: <spin on the try_wait that set t>``, right after that try_wait:
    the try_wait becomes the blocking ``Wait`` it amounts to (then ``t`` is true)."""
    name = _token_of(c)
    src = lf.w.tok_op.get(name)
    if src is None or o.results or len(then_blk.ops) != 1 or else_blk is None or \
            len(else_blk.ops) != 2 or else_blk.ops[0].name != "scf.while" or \
            spin_of(else_blk.ops[0], env) != src:
        return False
    if lf.phase == 2:
        last = lf.w.code[-1] if lf.w.code else None
        # nothing between the try_wait and the spin (an access there, attached to the
        # try_wait, would start later with the wait: a narrower window)
        if not (isinstance(last, TryWait) and last.dest == name and not last.post):
            return False
        lf.w.code[-1] = Wait(bar=last.bar, parity=last.parity, ghost=last.ghost,
                             loc=last.loc, site=last.site, pre=last.pre, post=last.post,
                             label=last.label.replace("try_wait", "wait").split(" -> ")[0])
        lf.replaced(last, lf.w.code[-1])
    token = Dyn(DynExpr("local", (name,)))
    for k, v in list(env.items()):  # nothing sets the local now: its value is true
        if v == token:
            env[k] = 1
    return True


def spin_wait(lf: Any, try_op: Op, env: dict, mask: Any) -> None:
    """A spin on ``try_op`` (``spin_of``) on its own: the blocking wait."""
    if not lf.active(mask) or lf.phase == 1:
        return
    ref, parity = _wait_target(lf, try_op, env, mask)
    lf.note_side(try_op, ref)
    lf.emit(lf.make(Wait, try_op, f"wait {_short(ref)} p{parity}", bar=ref, parity=parity))


#: try_wait ops whose retries collapse
TRY_WAITS = ("nvvm.mbarrier.try_wait.parity.timelimit",)


@op("nvvm.mbarrier.wait.parity", "nvvm.mbarrier.test.wait.parity")
def _try_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """One ``try_wait``/``test_wait`` returning a token (CuTe's ``producer_try_acquire``,
    ``consumer_try_wait``); ``kind = wait`` blocks."""
    if lf.phase == 1:
        return Dyn(DynExpr("local", ("?",)))
    if not lf.active(mask):
        return OPAQUE
    ref, parity = _wait_target(lf, o, env, mask)
    lf.note_side(o, ref)
    kind = o.attrs.get("kind", "try")
    if "try" not in kind and "test" not in kind and "test" not in o.name:
        lf.emit(lf.make(Wait, o, f"wait {_short(ref)} p{parity}", bar=ref, parity=parity))
        return 1
    test = "test" in kind or "test" in o.name
    name = lf.new_local("tok")
    lf.emit(lf.make(TryWait, o, f"{'test' if test else 'try'}_wait {_short(ref)} p{parity} "
                                f"-> {name}", bar=ref, parity=parity, dest=name, test=test))
    return Dyn(DynExpr("local", (name,)))


@op("nvvm.barrier", "nvvm.barrier0", "nvvm.barrier.arrive", "nvvm.barrier.cta.arrive",
    "nvvm.bar.warp.sync")
def _named_barrier(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``bar.sync``/``bar.arrive`` (PTX ISA 9.7.13.1); no id: ``__syncthreads``.

    ``nvvm.barrier.cta.arrive`` with ``aligned = false`` is the unaligned
    ``barrier.cta.arrive`` (CuTe DSL 4.8: ``NamedBarrier.arrive_unaligned``; its
    ``wait_unaligned`` emits ``nvvm.barrier``, an aligned ``bar.sync``, measured on the
    PTX).  An aligned barrier reached by part of a warp (a lane-dependent branch,
    ``elect_one``) is undefined behaviour ("all threads in CTA will execute the same
    barrier instruction"): a ``named-barrier-misuse`` step.  An unaligned one by part of a
    warp is refused: the PTX ISA counts a warp's arrival once its non-exited threads have
    executed a barrier instruction, which the model does not follow lane by lane."""
    if o.name == "nvvm.bar.warp.sync":
        return None  # warp-level: no inter-warp synchronisation
    vals = lf.operands(o, env)
    seg = _segments(o)
    bid, cnt = 0, None
    if vals:
        bid = vals[0]
        if len(vals) > 1 and (not seg or (len(seg) > 1 and seg[1])):
            cnt = vals[1]
    if not isinstance(bid, int) or not (cnt is None or isinstance(cnt, int)):
        raise lf.error(o, f"a named barrier whose id or count is not known statically "
                          f"({lf.where(o)})")
    sync = o.name not in ("nvvm.barrier.arrive", "nvvm.barrier.cta.arrive")
    # barrier.cta.arrive prints its flag as ``aligned = false`` (absent: unaligned too)
    aligned = o.name != "nvvm.barrier.cta.arrive" or \
        o.attrs.get("aligned", "false").strip() not in ("false", "0")
    lanes = lf.active(mask)
    if lanes and lf.phase == 2:
        lf.named_ids.add(bid)
        form = ("bar" if aligned else "barrier") + (".sync" if sync else ".arrive")
        what = f"{form} {bid}" + (f", {cnt}" if cnt else "")
        if len(lanes) < WARP:
            if not aligned:
                raise lf.error(o, f"unaligned {what} executed by {len(lanes)} of a warp's "
                                  f"{WARP} lanes ({lf.where(o)}): not modelled")
            lf.emit(lf.make(Fail, o, what + " by part of a warp",
                            prop=Prop.NAMED_BARRIER_MISUSE,
                            message=f"aligned {what} executed by {len(lanes)} of the warp's "
                                    f"{WARP} lanes (a lane-dependent branch or election): "
                                    "every thread must execute the same aligned barrier "
                                    "instruction (PTX ISA bar, barrier)"))
            return None
        lf.emit(lf.make(NamedBarrierOp, o, what, id=bid, count=cnt, sync=sync,
                        aligned=aligned, pre=lf.ghosts.release_effects()))
        if sync:
            lf.emit(lf.make(NamedWait, o, f"bar.sync {bid} (wait)", id=bid))
    return None


@op("nvvm.cluster.arrive", "nvvm.cluster.arrive.relaxed")
def _cluster_arrive(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``barrier.cluster.arrive`` (PTX ISA 9.7.13.2)."""
    if lf.active(mask) and lf.phase == 2:
        relaxed = "relaxed" in o.name or "relaxed" in o.attrs
        lf.emit(lf.make(ClusterArrive, o, "cluster.arrive" + (".relaxed" if relaxed else ""),
                        relaxed=relaxed, pre=() if relaxed else lf.ghosts.release_effects()))
    return None


@op("nvvm.cluster.wait")
def _cluster_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if lf.active(mask):
        lf.emit(lf.make(ClusterWait, o, "cluster.wait"))
    return None


@op("nvvm.cp.async.bulk.commit.group")
def _bulk_commit(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if lf.active(mask):
        lf.emit(lf.make(BulkCommit, o, "cp.async.bulk.commit_group"))
    return None


@op("nvvm.cp.async.bulk.wait_group")
def _bulk_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    if lf.active(mask):
        g = re.match(r"(\d+)", o.attrs.get("group", "0"))
        n = int(g.group(1)) if g else 0
        lf.emit(lf.make(BulkWaitRead, o, f"cp.async.bulk.wait_group.read {n}", n=n))
    return None


@op("nvvm.wgmma.wait.group.sync.aligned")
def _wgmma_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``wgmma.wait_group.sync.aligned N`` (PTX ISA 9.7.15.7.3): a step that waits for the
    warpgroup's wgmma-groups, which ends their shared-memory reads (``model/wgmma.py``).
    With data races off nothing reads them: no step."""
    if lf.active(mask) and lf.ghosts.enabled:
        g = re.match(r"(\d+)", o.attrs.get("group", "0"))
        n = int(g.group(1)) if g else 0
        lf.emit(lf.make(WgmmaWait, o, f"wgmma.wait_group {n}", n=n))
    return None


@op("nvvm.tcgen05.commit")
def _umma_commit(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``tcgen05.commit...mbarrier::arrive::one{.multicast::cluster}`` (PTX ISA 9.7.16.11):
    one arrival on each barrier once the warp's earlier tcgen05 ops complete."""
    vals = lf.operands(o, env)
    if lf.phase == 1 or not lf.active(mask):
        return None
    i = _first_lane(lf, mask)
    p = lane(vals[0], i)
    m = lane(vals[1], i) if len(vals) > 1 else None
    if m is not None and not isinstance(m, int):
        raise lf.error(o, f"tcgen05.commit with a multicast mask not known statically "
                          f"({lf.where(o)})")
    if m is None:
        bars = [lf.barrier(p, o)]
    else:
        bars = [lf.barrier(replace(p, cta=c), o) for c in range(16) if m >> c & 1]
    for b in bars:
        lf.note_side(o, b)
    lf.emit(lf.make(UmmaCommit, o, "tcgen05.commit -> " + ", ".join(map(_short, bars)),
                    bars=tuple(bars), effects=lf.ghosts.umma_commit_effects()))
    return None


def _smem_field(lf: Any, v: Any) -> str:
    p = v.ptr if isinstance(v, View) else v
    if isinstance(p, Ptr) and p.space == "smem":
        return lf.field_name(p) or f"smem+{p.off}"
    return "smem"


@op("cute.copy")
def _copy(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``cute.copy``: a TMA atom becomes ``TmaLoad``/``TmaStore``; other copies move data
    between registers and memory and do not synchronise."""
    atom = lf.val(env, o.operands[0], o)
    if "simt_async_copy" in (o.operand_types[0] if o.operand_types else ""):
        return _cp_async_copy(lf, o, env, mask)
    if not isinstance(atom, Atom) or atom.kind == "other":
        copy_between(lf, o, env, mask)
        return None
    if not lf.active(mask):
        return None
    i = _first_lane(lf, mask)  # one elected issue per warp (see the module docstring)
    if atom.kind == "tma_load":
        nbytes = atom.bits // 8 // max(1, atom.split) * _tma_boxes(o)
        dst = lf.val(env, o.operands[2], o) if len(o.operands) > 2 else None
        dp = dst.ptr if isinstance(dst, View) else None
        iv = (dp.alloc, dp.off, dp.off + nbytes) \
            if isinstance(dp, Ptr) and dp.space == "smem" else None
        if lf.phase == 1:
            lf.ghosts.touch(iv)
            return None
        bar = lane(atom.bar, i)
        mm = lane(atom.mcast, i) if atom.mcast is not None else None
        if not isinstance(bar, Ptr):
            raise lf.error(o, f"a TMA load whose barrier is not known statically "
                              f"({lf.where(o)})")
        if mm is not None and not isinstance(mm, int):
            raise lf.error(o, f"a TMA multicast mask not known statically ({lf.where(o)})")
        dests = [c for c in range(16) if mm >> c & 1] if mm else [lf.w.cta]
        dels = []
        pre = []
        for d in dests:
            target = d & ~1 if atom.num_cta == 2 else d
            ref = lf.barrier(replace(bar, cta=target), o)
            lf.note_side(o, ref)
            parts = lf.ghosts.bufs(iv, d) if iv is not None and iv[0] not in \
                lf.ghosts.untracked else []
            if not parts:
                dels.append(Delivery(ref, nbytes, None))
                continue
            # the box lands in pieces, one per buffer it covers (bytes in each)
            left = nbytes
            for k, (b, n) in enumerate(parts):
                n = left if k == len(parts) - 1 else min(n, left)
                left -= n
                dels.append(Delivery(ref, n, b, ANY_FILL))
                pre.append(GhostEffect("async_write_begin", b, ANY_FILL))
        lf.emit(lf.make(TmaLoad, o, f"TMA load {nbytes}B -> "
                        + ", ".join(sorted({_short(d.bar) for d in dels}))
                        + f" ({_smem_field(lf, dst)})", deliveries=tuple(dels),
                        pre=tuple(pre)))
        return None
    src = lf.val(env, o.operands[1], o) if len(o.operands) > 1 else None
    sp = src.ptr if isinstance(src, View) else None
    iv = lf.ghosts.view_interval(src, mask)
    if iv is None and isinstance(sp, Ptr) and sp.space == "smem":
        iv = (sp.alloc, sp.off, sp.off + atom.bits // 8)
    if lf.phase == 1:
        lf.ghosts.touch(iv, write=False)
        return None
    parts = lf.ghosts.bufs(iv, lf.w.cta) if iv is not None and iv[0] not in \
        lf.ghosts.untracked else []
    if not parts:
        # a source the ghost effects do not follow (its allocation is untracked, see
        # the notes): the store still takes part in the bulk-group protocol, on a
        # buffer of its own that nothing else touches (no race checks on it)
        parts = [(BufRef(lf.w.cta, "untracked smem", 0), 0)]
    for b, _ in parts:  # one bulk copy per buffer the source covers, in one group
        own = lf.ghosts.own_write_end((b,))
        lf.emit(lf.make(TmaStore, o, f"TMA store from {b.buffer}[{b.stage}]", buf=b,
                        pre=own + (GhostEffect("async_read", b),)))
    return None


def _tma_boxes(o: Op) -> int:
    """How many boxes one ``cute.copy`` of a TMA atom moves: the source partition's
    first mode may hold several of the atom's boxes (quack's RMSNorm: a 1024-element
    row, ``((256,4),(1))``, for a 256-element box), and CuTe's copy issues the atom
    once per box, each completing its bytes on the same barrier.  1 where the types
    do not tell (the atom's box is then the whole source)."""
    from .values import layout_of, size

    m = re.search(r"tma_load<\s*[a-zA-Z]*(\d+)", o.operand_types[0] if o.operand_types else "")
    bits = re.search(r"copy_bits = (\d+)", o.operand_types[0] if o.operand_types else "")
    lay = layout_of(o.operand_types[1]) if len(o.operand_types) > 1 else None
    if not m or not bits or lay is None:
        return 1
    try:
        elems = size(lay[0])
    except (TypeError, ValueError):
        return 1
    if not isinstance(elems, int) or elems <= 0:
        return 1
    total = elems * int(m.group(1))
    box = int(bits.group(1))
    return total // box if box and total % box == 0 and total > box else 1


def _cp_async_copy(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``cp.async`` by the active lanes (PTX ISA 9.7.9.3): completes asynchronously, in
    order with the warp's other cp.async ops; ``cp.async.mbarrier.arrive`` waits for it."""
    if not lf.active(mask):
        return None
    dst = lf.val(env, o.operands[2], o) if len(o.operands) > 2 else None
    iv = lf.ghosts.view_interval(dst, mask)
    dp = dst.ptr if isinstance(dst, View) else None
    dp = lane(dp, lf.active(mask)[0]) if isinstance(dp, Lanes) else dp
    if iv is None and isinstance(dp, Ptr) and dp.space == "smem":
        lf.ghosts.untrack(dp.alloc, f"cp.async at {lf.where(o)}")
    if lf.phase == 1:
        lf.ghosts.touch(iv)
        return None
    parts = [b for b, _ in lf.ghosts.bufs(iv, lf.w.cta)] \
        if iv is not None and iv[0] not in lf.ghosts.untracked else []
    pre = tuple(GhostEffect("async_write_begin", b, ANY_FILL) for b in parts
                if b not in lf.w.cp_pending)
    lf.w.cp_pending.update(parts)
    lf.emit(lf.make(CpAsync, o, f"cp.async -> {_smem_field(lf, dst)} "
                    f"({len(lf.active(mask))} lanes)",
                    buf=parts[0] if parts else BufRef(lf.w.cta, "cp.async", 0), pre=pre))
    return None


@op("nvvm.cp.async.mbarrier.arrive", "nvvm.cp.async.mbarrier.arrive.shared")
def _cp_async_arrive(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``cp.async.mbarrier.arrive{.noinc}`` (PTX ISA 9.7.9.4): one arrival per active lane,
    deferred until the lane's earlier cp.async copies complete."""
    lanes = lf.active(mask)
    if not lanes or lf.phase == 1:
        return None
    vals = lf.operands(o, env)
    refs = {lf.barrier(lane(vals[0], i), o) for i in lanes}
    if len(refs) != 1:
        raise lf.error(o, f"the lanes of one warp arrive on different barriers "
                          f"({lf.where(o)})")
    ref = refs.pop()
    lf.note_side(o, ref)
    noinc = "noinc = true" in " ".join(f"{k} = {v}" for k, v in o.attrs.items()) or \
        o.attrs.get("noinc") == "unit"
    effects = tuple(GhostEffect("async_write_end", b, ANY_FILL) for b in sorted(lf.w.cp_pending))
    lf.w.cp_pending.clear()
    lf.emit(lf.make(CpAsyncArrive, o, f"cp.async.mbarrier.arrive{'.noinc' if noinc else ''} "
                    f"{_short(ref)} x{len(lanes)}", bar=ref, count=len(lanes), noinc=noinc,
                    effects=effects))
    return None


@op("nvvm.cp.async.commit.group")
def _cp_async_commit(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``cp.async.commit_group`` (PTX ISA "cp.async.commit_group"): the warp's copies
    since its last commit (or arrive) form a group; their writes end when it completes.
    Groups are per thread: the lanes of a warp commit together, as one group here."""
    if not lf.active(mask) or lf.phase == 1:
        return None
    effects = tuple(GhostEffect("async_write_end", b, ANY_FILL) for b in sorted(lf.w.cp_pending))
    lf.w.cp_pending.clear()
    lf.emit(lf.make(CpAsyncCommit, o, "cp.async.commit_group", effects=effects))
    return None


@op("nvvm.cp.async.wait.group")
def _cp_async_wait(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``cp.async.wait_group n`` (PTX ISA "cp.async.wait_group"): wait until at most the
    ``n`` most recent groups of the warp are pending."""
    if not lf.active(mask) or lf.phase == 1:
        return None
    g = re.match(r"(\d+)", o.attrs.get("n", "0"))
    n = int(g.group(1)) if g else 0
    lf.emit(lf.make(CpAsyncWaitGroup, o, f"cp.async.wait_group {n}", n=n))
    return None


@op("nvvm.mapa", "nvvm.mapa.shared.cluster")
def _mapa(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``mapa``: the same shared-memory address in CTA ``rank`` of the cluster."""
    p, r = lf.operands(o, env)[:2]

    def one(pp: Any, rr: Any) -> Any:
        if not isinstance(pp, Ptr) or not isinstance(rr, int):
            return OPAQUE
        return replace(pp, cta=rr)
    if isinstance(r, Lanes) or isinstance(p, Lanes):
        return norm(Lanes(one(lane(p, i), lane(r, i)) for i in range(32)))
    return one(p, r)


@op("nvvm.clusterlaunchcontrol.try.cancel")
def _clc_try_cancel(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``clusterlaunchcontrol.try_cancel.async...{.multicast::cluster::all}`` (PTX ISA
    9.7.13.17): a 16-byte response lands asynchronously in every CTA's buffer (this
    CTA's alone without multicast), completing tx on the barrier at the same offset.
    A grid of n clusters lets at most n - 1 of one scheduler's calls succeed."""
    vals = lf.operands(o, env)
    lanes = lf.active(mask)
    if not lanes:
        return None
    resp, bar = lane(vals[0], lanes[0]), lane(vals[1], lanes[0])
    if not isinstance(resp, Ptr) or resp.space != "smem":
        raise lf.error(o, f"a CLC response buffer not known statically ({lf.where(o)})")
    iv = (resp.alloc, resp.off, resp.off + CLC_RESPONSE_BYTES)
    multicast = "multicast" in o.attrs
    for _ in lanes:
        q = lf.w.clc_queries
        lf.w.clc_queries += 1
        if lf.phase == 1:
            lf.ghosts.touch(iv, write=True, force=True)
            lf.ghosts.clc.add(iv)
            continue
        dests = range(lf.cluster_size) if multicast else [lf.w.cta]
        dels, pre = [], []
        for d in dests:
            ref = lf.barrier(replace(bar, cta=d), o)
            parts = lf.ghosts.bufs(iv, d)
            if not parts:
                raise lf.error(o, f"the CLC response buffer is not tracked ({lf.where(o)})")
            b = parts[0][0]
            dels.append(Delivery(ref, CLC_RESPONSE_BYTES, b, ANY_FILL))
            pre.append(GhostEffect("async_write_begin", b, ANY_FILL))
        may = q < lf.grid_clusters - 1
        lf.emit(lf.make(TmaLoad, o, "clusterlaunchcontrol.try_cancel"
                        + (" multicast" if multicast else "")
                        + ("" if may else " (no cluster left in the grid: 'no more work')"),
                        deliveries=tuple(dels), kind="clc", may_succeed=may, pre=tuple(pre)))
    return None


@op("nvvm.clusterlaunchcontrol.query.cancel")
def _clc_query(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """Decode a response: ``is_canceled`` is the response's validity (a local of the
    warp's program, ``ghosts.clc_response``); the first CTA's coordinates address the
    tile's global memory and do not synchronise."""
    v = lf.val(env, o.operands[0], o)
    if "is_canceled" in o.attrs.get("query_type", ""):
        if isinstance(v, (Dyn, int)):
            return v
        raise lf.error(o, f"a CLC response that does not come from a try_cancel buffer "
                          f"({lf.where(o)})")
    return OPAQUE


@op("nvvm.fence.proxy")
def _fence_proxy(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``fence.proxy.async.shared::cta`` (PTX ISA 9.7.13.4.1): the warp's earlier
    generic-proxy stores to shared memory become visible to the async proxy."""
    kind = o.attrs.get("kind", "")
    if lf.active(mask) and lf.phase == 2 and ("async" in kind or not kind):
        lf.ghosts.fence_proxy(o)
    return None


# ops that are known and do not take part in the barrier protocol this front end models
# (fences between proxies, MMA issue and its own group waits, register moves,
# prefetches, printing; TMEM allocation is tmem_ops.py); each is named, so anything
# else with side effects is refused (``interp.is_side_effecting``)
@op("nvvm.fence.proxy.acquire", "nvvm.fence.proxy.release",
    "nvvm.wgmma.fence.aligned", "nvvm.wgmma.mma_async", "nvvm.setmaxregister",
    "nvvm.tcgen05.wait", "nvvm.tcgen05.ld",
    "nvvm.tcgen05.st", "nvvm.tcgen05.mma", "nvvm.tcgen05.fence",
    "nvvm.prefetch.tensormap", "nvvm.cp.async.bulk.tensor.prefetch",
    "cute_nvgpu.prefetch_tma_desc", "cute_nvgpu.arch.get_dyn_smem_size",
    "cute_nvgpu.arch.sm100.tmem_load", "cute.print", "nvvm.griddepcontrol.wait",
    "nvvm.griddepcontrol.launch.dependents")
def _no_sync_effect(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    n = len(o.results)
    return [OPAQUE] * n if n > 1 else (OPAQUE if n else None)


def traced_op_names() -> frozenset[str]:
    """The ops a conformance run records (``impl/cute_trace.py``, ``sites.py``): those
    this module handles (every op the lifter turns into a synchronisation step), and the
    kernel's return (its record stands for the exit)."""
    from .optable import TABLE
    from .sites import RETURN_OPS

    from .tmem_ops import TRACED

    return frozenset(n for n, f in TABLE.items() if f.__module__ == __name__) | TRACED | \
        RETURN_OPS
