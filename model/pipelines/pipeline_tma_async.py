"""``PipelineTmaAsync``: a TMA producer feeding AsyncThread consumers -- the Hopper
mainloop (``cutlass/pipeline/sm90.py``, research note 6.3), with FlashAttention's
``extra_tx_count`` (research note 9).

Barriers: ``full[i]`` counts ``arrive_count(producer_group)`` (normally ``Thread(1)``) and
expects ``tx_count`` bytes per stage in *this* CTA; ``empty[i]`` counts the user's
consumer group, or with ``enable_multicast_signaling`` ``mcast_size * consumer_warps``.

``producer_acquire`` waits on ``empty`` and then one elected lane of each calling warp
arms ``full`` with ``arrive.expect_tx(tx_count)``; the TMA copy completes the bytes;
``producer_commit`` is a no-op.  ``consumer_release`` is called by every consumer thread,
but only the signalling lanes arrive (``init_empty_barrier_arrive_signal``): lane ``l <
cluster_size`` arrives on the empty barrier of CTA ``l`` when ``l`` shares this CTA's
multicast row or column -- in a cluster of one CTA, lane 0 arrives locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..cluster import ClusterVMNK, Layout, MaskRangeError
from ..errors import misspelt_keyword
from ..properties import Prop
from ..groups import WARP_SIZE
from ..mbarrier import MAXC
from ..program import BufRef
from ..pipeline_state import arrival_phase
from .base import (ArrayDecl, PipelineDecl, create_effects, elected, emit_arrive,
                   group_count, release_effects, wait_unless)
from .pipeline_async import PipelineAsync


def _show(v: object) -> str:
    """A value in a message, as a .pipe author writes it (model/compile.py describe)."""
    from ..describe import describe

    return describe(v)


def vmnk_of(cx: Any, kw: dict, key: str = "cta_layout_vmnk") -> ClusterVMNK:
    """The pipeline's ``cta_layout_vmnk``: checked against the launch's cluster."""
    lay = kw.pop(key, None)
    if lay is None:
        lay = Layout((1, 1, 1, 1))
    if not isinstance(lay, Layout):
        cx.error(f"{key} must be a layout (make_layout(...) or tiled_divide(...)), got {_show(lay)}")
    try:
        vmnk = ClusterVMNK.of(lay)
    except ValueError as e:
        cx.error(str(e))
    if vmnk.size != cx.kernel.cluster_size:
        cx.error(f"{key} has {vmnk.size} CTAs but the kernel is launched with a cluster of "
                 f"{cx.kernel.cluster_size}",
                 hint="build it from the launch's cluster shape, e.g. "
                      "make_layout((1, cluster_m, cluster_n, 1))")
    return vmnk


def cluster_mask(cx: Any, vmnk: ClusterVMNK, compute: Any, what: str) -> int:
    """A mask CUTLASS derives from ``cta_layout_vmnk`` (``compute()``), never wrapped
    around.  A rank the 16-bit mask cannot hold (negative, >= 16, or a layout whose
    cosize exceeds 16: the DSL refuses or drops it) is a configuration error tagged
    ``mask-outside-cluster``; a rank in [cluster size, 16) is kept: the signal sent to
    that CTA is reported as ``mask-outside-cluster`` when it happens
    (``System._bar_ref``), as the hardware would send it."""
    try:
        return compute()
    except MaskRangeError as e:
        cx.error(f"{what} computed from cta_layout_vmnk {_show(vmnk.layout.shape)}:"
                 f"{_show(vmnk.layout.stride)}: {e}", prop=Prop.MASK_OUTSIDE_CLUSTER)


def mcast_mode_of(cx: Any, kw: dict) -> tuple[int, int]:
    mode = kw.pop("mcast_mode_mn", (1, 1))
    if (not isinstance(mode, tuple) or len(mode) != 2
            or any(m not in (0, 1, True, False) for m in mode)):
        cx.error(f"mcast_mode_mn must be a pair of 0/1, got {_show(mode)}")
    mode = (int(mode[0]), int(mode[1]))
    if mode == (0, 0):
        cx.error("mcast_mode_mn (0, 0) is not allowed (CUTLASS asserts it)")
    return mode


def tx_count_of(cx: Any, kw: dict, key: str = "tx_count", default: Optional[int] = None) -> int:
    tx = kw.pop(key, default)
    if tx is None:
        cx.error(f"missing argument {key}=", misspelt_keyword(key, kw))
    if not isinstance(tx, int) or isinstance(tx, bool):
        cx.error(f"{key} must be an int number of bytes, got {_show(tx)}")
    if tx < 0 or tx > MAXC:
        cx.error(f"{key}={tx} is outside [0, 2^20-1]: an mbarrier tx-count cannot hold it")
    return tx


def multicast_consumer_count(cx: Any, vmnk: ClusterVMNK, mode: tuple[int, int],
                             group_threads: int) -> int:
    """``enable_multicast_signaling``: one arrival per consumer warp per multicast partner."""
    if group_threads % WARP_SIZE:
        cx.error("with enable_multicast_signaling the consumer group must be whole warps "
                 f"(got {group_threads} threads)")
    m_size = vmnk.N if mode[0] else 0
    n_size = vmnk.M if mode[1] else 0
    size = m_size + n_size - (1 if mode[0] and mode[1] else 0)
    return size * (group_threads // WARP_SIZE)


@dataclass(frozen=True)
class PipelineTmaAsync(PipelineAsync):
    tx_count: int = 0
    cluster_size: int = 1
    signal_dsts: tuple[int, ...] = ()  # destination rank of lane l (index), -1: no signal

    CLASS = "PipelineTmaAsync"
    SYNC = "cluster"
    CTA_GROUP = 1

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineTmaAsync":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        cgroup = cx.need(kw, "consumer_group")
        consumer = group_count(cx, cgroup, "consumer_group")
        tx = tx_count_of(cx, kw)
        vmnk = vmnk_of(cx, kw)
        mode = mcast_mode_of(cx, kw)
        if kw.pop("enable_multicast_signaling", False):
            consumer = multicast_consumer_count(cx, vmnk, mode, consumer)
        kw.pop("tidx", None)
        kw.pop("barrier_storage", None)
        kw.pop("name", None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer, tx), ArrayDecl("empty", num_stages, consumer)),
            f"{var}.buf", cls.SYNC))
        targets = set(vmnk.tma_empty_signal_targets(cx.cta, mode))
        dsts = tuple(lane if lane in targets else -1 for lane in range(min(vmnk.size, 32)))
        obj = cls(decl, cx.cta, None, None, False, False, tx, vmnk.size, dsts)
        create_effects(cx, decl, defer)
        return obj

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        return ()  # the TMA unit writes the stage, not the producer's threads

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None,
                           extra_tx_count: Any = 0) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty")
        if not elected(cx, f"{self.decl.var}.producer_acquire"):
            return
        tx = self.tx_count + cx.as_int(extra_tx_count, "extra_tx_count")
        emit_arrive(cx, [(self.bar("full", st.index), 1, tx)],
                    f"{self.decl.var}.producer_acquire({st.describe()}): "
                    f"arrive.expect_tx(full, {tx} B) by one elected lane",
                    phase=arrival_phase(st, "producer"))

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        self.check_state(cx, state, "producer_commit")  # a no-op: the TMA completes the bytes

    def m_consumer_release(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "consumer_release")
        pre = release_effects(cx, self.read_bufs(cx, st.index))
        arrivals = []
        for lane in cx.lanes:
            if lane < len(self.signal_dsts) and self.signal_dsts[lane] >= 0:
                dst = self.signal_dsts[lane] if self.cluster_size > 1 else self.cta
                arrivals.append((self.bar("empty", st.index, dst), 1, 0))
        if not arrivals:
            if pre:
                from ..program import Nop

                cx.emit(Nop(loc=cx.loc, label=f"{self.decl.var}.consumer_release: no "
                            "signalling lane is active", pre=pre))
            return
        dsts = sorted({a[0].cta for a in arrivals})
        emit_arrive(cx, arrivals, f"{self.decl.var}.consumer_release({st.describe()}): arrive "
                    f"empty at cta {', '.join(map(str, dsts))}", pre,
                    phase=arrival_phase(st, "consumer"))

    # ---- what a TMA copy into this pipeline does (used by the tma_load builtin)

    def tma_target_cta(self, issuing_cta: int, dest_cta: int) -> int:
        """CTA whose barrier a copy landing in ``dest_cta`` signals (cta_group::1: itself)."""
        return dest_cta

    def tma_dest_bufs(self, stage: int, dest_cta: int) -> BufRef:
        return self.buf(stage, dest_cta)
