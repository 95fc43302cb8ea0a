"""``PipelineAsync``: AsyncThread producers and AsyncThread consumers
(``cutlass/pipeline/sm90.py``, research note 6.1), with FlashAttention's options
(``elect_one_commit``, ``syncwarp_before_commit``, ``elect_one_release``,
``syncwarp_before_release``; ``flash_attn/cute/pipeline.py``, research note 9).

Barriers: ``full[i]`` counts ``arrive_count(producer_group)``, ``empty[i]`` counts
``arrive_count(consumer_group)``; no tx.  ``producer_commit`` and ``consumer_release``
arrive once per calling *thread* (one per warp with FA's ``elect_one_*`` options),
locally or at the rank given as ``producer_mask``/``consumer_mask``.  ``create`` syncs
the CTA (``sync_threads``) unless ``defer_sync``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..pipeline_state import (PipelineStateVal, arrival_phase, fill_tag_for_acquire,
                              state_from_index_phase)
from ..program import BarRef
from .base import (ArrayDecl, PipelineBase, PipelineDecl, create_effects, emit_arrive,
                   emit_try_wait, emit_wait, group_count, release_effects, wait_effects,
                   wait_unless, write_begin_effects)


@dataclass(frozen=True)
class BarrierPtr:
    """``producer_get_barrier(state)`` / ``consumer_get_barrier(state)`` / ``handle.barrier``."""

    bar: BarRef


@dataclass(frozen=True)
class PipelineAsync(PipelineBase):
    producer_dst: Optional[int] = None
    consumer_dst: Optional[int] = None
    elect_one_commit: bool = False
    elect_one_release: bool = False

    CLASS = "PipelineAsync"
    SYNC = "cta"

    # ------------------------------------------------------------------ create

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineAsync":
        num_stages = cx.need_int(kw, "num_stages", minimum=1)
        producer = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        consumer = group_count(cx, cx.need(kw, "consumer_group"), "consumer_group")
        decl = cx.register(PipelineDecl(var, cls.CLASS, num_stages, (
            ArrayDecl("full", num_stages, producer), ArrayDecl("empty", num_stages, consumer)),
            f"{var}.buf", cls.SYNC))
        pmask = cx.optional_rank(kw, "producer_mask")
        cmask = cx.optional_rank(kw, "consumer_mask")
        obj = cls(decl, cx.cta, pmask, cmask, bool(kw.pop("elect_one_commit", False)),
                  bool(kw.pop("elect_one_release", False)))
        kw.pop("syncwarp_before_commit", None)
        kw.pop("syncwarp_before_release", None)
        defer = bool(kw.pop("defer_sync", False))
        kw.pop("barrier_storage", None)
        kw.pop("name", None)
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        create_effects(cx, decl, defer)
        return obj

    # ------------------------------------------------------------------ producer side

    def own_write_bufs(self, cx: Any, stage: int) -> tuple:
        """Stage buffers a thread-writing producer owns between acquire and commit."""
        return (self.buf(stage),)

    def m_producer_acquire(self, cx: Any, state: Any, try_acquire_token: Any = None) -> None:
        st = self.check_state(cx, state, "producer_acquire")
        post = write_begin_effects(cx, self.own_write_bufs(cx, st.index),
                                   fill_tag_for_acquire(st))
        wait_unless(cx, try_acquire_token, self.bar("empty", st.index), st,
                    f"{self.decl.var}.producer_acquire({st.describe()}): wait empty", post)

    def m_producer_try_acquire(self, cx: Any, state: Any) -> Any:
        st = self.check_state(cx, state, "producer_try_acquire")
        return emit_try_wait(cx, self.bar("empty", st.index), st,
                             f"{self.decl.var}.producer_try_acquire({st.describe()})")

    def commit_lanes(self, cx: Any) -> int:
        if self.elect_one_commit:
            # FA: ``with elect_one(): parent.producer_commit`` -- an election of its own
            from .base import elected

            return 1 if elected(cx, f"{self.decl.var}.producer_commit (elect_one_commit)") else 0
        return len(cx.lanes)

    def m_producer_commit(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_commit")
        dst = self.producer_dst
        n = self.commit_lanes(cx)
        if n == 0:
            return
        emit_arrive(cx, [(self.bar("full", st.index, dst), n, 0)],
                    f"{self.decl.var}.producer_commit({st.describe()}): arrive full"
                    + (f" @cta{dst}" if dst is not None else ""),
                    phase=arrival_phase(st, "producer"))

    def m_producer_tail(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "producer_tail")
        for _ in range(self.decl.stages):
            emit_wait(cx, self.bar("empty", st.index), st,
                      f"{self.decl.var}.producer_tail: wait empty ({st.describe()})")
            st = st.advance()
        cx.set_arg(0, st)

    def m_producer_get_barrier(self, cx: Any, state: Any) -> BarrierPtr:
        st = self.check_state(cx, state, "producer_get_barrier")
        return BarrierPtr(self.bar("full", st.index))

    # ------------------------------------------------------------------ consumer side

    def read_bufs(self, cx: Any, stage: int) -> tuple:
        """Stage buffers a consumer owns between wait and release."""
        return (self.buf(stage),)

    def m_consumer_wait(self, cx: Any, state: Any, try_wait_token: Any = None) -> None:
        st = self.check_state(cx, state, "consumer_wait")
        post = wait_effects(cx, self, self.read_bufs(cx, st.index), st)
        wait_unless(cx, try_wait_token, self.bar("full", st.index), st,
                    f"{self.decl.var}.consumer_wait({st.describe()}): wait full", post)

    def m_consumer_try_wait(self, cx: Any, state: Any) -> Any:
        st = self.check_state(cx, state, "consumer_try_wait")
        return emit_try_wait(cx, self.bar("full", st.index), st,
                             f"{self.decl.var}.consumer_try_wait({st.describe()})")

    def m_consumer_test_wait(self, cx: Any, state: Any) -> Any:
        st = self.check_state(cx, state, "consumer_test_wait")
        return emit_try_wait(cx, self.bar("full", st.index), st,
                             f"{self.decl.var}.consumer_test_wait({st.describe()})", test=True)

    def release_lanes(self, cx: Any) -> int:
        if self.elect_one_release:
            from .base import elected

            return 1 if elected(cx, f"{self.decl.var}.consumer_release (elect_one_release)") else 0
        return len(cx.lanes)

    def m_consumer_release(self, cx: Any, state: Any) -> None:
        st = self.check_state(cx, state, "consumer_release")
        dst = self.consumer_dst
        pre = release_effects(cx, self.read_bufs(cx, st.index))
        n = self.release_lanes(cx)
        if n == 0:
            return
        emit_arrive(cx, [(self.bar("empty", st.index, dst), n, 0)],
                    f"{self.decl.var}.consumer_release({st.describe()}): arrive empty"
                    + (f" @cta{dst}" if dst is not None else ""), pre,
                    phase=arrival_phase(st, "consumer"))

    def m_consumer_get_barrier(self, cx: Any, state: Any) -> BarrierPtr:
        st = self.check_state(cx, state, "consumer_get_barrier")
        return BarrierPtr(self.bar("empty", st.index))

    # ------------------------------------------------------------------ participants

    def m_make_producer(self, cx: Any) -> Any:
        from .participants import PipelineProducer

        return PipelineProducer(self, self.make_state("Producer", cx))

    def m_make_consumer(self, cx: Any) -> Any:
        from .participants import PipelineConsumer

        return PipelineConsumer(self, self.make_state("Consumer", cx))

    def m_make_participants(self, cx: Any) -> tuple:
        return (self.m_make_producer(cx), self.m_make_consumer(cx))

    # ------------------------------------------------------------------ FlashAttention mixin

    def _ip_state(self, index: Any, phase: Any, cx: Any) -> PipelineStateVal:
        if not isinstance(index, int) or not isinstance(phase, int):
            cx.unsupported("*_w_index_phase with an index or phase that depends on run-time "
                           "data")
        if not 0 <= index < self.decl.stages:
            cx.error(f"stage index {index} outside [0, {self.decl.stages})")
        return state_from_index_phase(self.decl.stages, index, phase)

    def m_producer_acquire_w_index_phase(self, cx: Any, index: Any, phase: Any,
                                         try_acquire_token: Any = None, **kw: Any) -> None:
        self.m_producer_acquire(cx, self._ip_state(index, phase, cx), try_acquire_token, **kw)

    def m_producer_commit_w_index(self, cx: Any, index: Any) -> None:
        self.m_producer_commit(cx, self._ip_state(index, 0, cx))

    def m_consumer_wait_w_index_phase(self, cx: Any, index: Any, phase: Any,
                                      try_wait_token: Any = None) -> None:
        self.m_consumer_wait(cx, self._ip_state(index, phase, cx), try_wait_token)

    def m_consumer_release_w_index(self, cx: Any, index: Any) -> None:
        self.m_consumer_release(cx, self._ip_state(index, 0, cx))
