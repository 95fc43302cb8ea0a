"""``NamedBarrier`` (``cutlass/pipeline/helpers.py``, research note 1.5) with
FlashAttention's ``arrive_w_index``/``arrive_and_wait_w_index`` (research note 9).

A named barrier is one of 16 hardware barriers of the CTA (PTX ISA ``bar``/``barrier``):
``num_threads`` counts the threads of *both* sides and must be a multiple of 32; the
hardware counts whole warps.  ``arrive`` (``bar.arrive``) does not block;
``arrive_and_wait``/``sync``/``wait``/``wait_unaligned`` are ``bar.sync`` (the DSL's
``wait`` warns and calls ``arrive_and_wait``; ``wait_unaligned`` emits the same barrier);
only ``arrive_unaligned`` emits the unaligned ``barrier.cta.arrive``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program import NamedBarrierOp, NamedWait
from ..errors import did_you_mean, methods_of
from .dispatch import call_method


@dataclass(frozen=True)
class NamedBarrier:
    barrier_id: int
    num_threads: int

    CLASS = "NamedBarrier"

    @classmethod
    def construct(cls, cx: Any, args: tuple, kw: dict) -> "NamedBarrier":
        names = ("barrier_id", "num_threads")
        vals = dict(zip(names, args))
        for k in list(kw):
            if k in names:
                vals[k] = kw.pop(k)
        cx.no_more_kwargs(kw, "NamedBarrier(...)")
        if set(vals) != set(names):
            cx.error("NamedBarrier needs barrier_id= and num_threads=")
        bid, n = vals["barrier_id"], vals["num_threads"]
        if not isinstance(bid, int) or not isinstance(n, int):
            cx.error("NamedBarrier barrier_id and num_threads must be static ints")
        return cls(bid, n)

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            cx.error(f"NamedBarrier has no method {name}()",
                     did_you_mean(name, methods_of(self)))
        return call_method(cx, "NamedBarrier", name, fn, args, kwargs)

    def attribute(self, cx: Any, name: str) -> Any:
        if name in ("barrier_id", "num_threads"):
            return getattr(self, name)
        cx.error(f"NamedBarrier has no attribute {name!r}")

    def _op(self, cx: Any, bid: int, sync: bool, aligned: bool, what: str) -> None:
        cx.named_barrier(bid, self.num_threads, sync, aligned,
                         f"NamedBarrier({bid}, {self.num_threads}).{what}")

    def m_arrive(self, cx: Any) -> None:
        self._op(cx, self.barrier_id, False, True, "arrive()")

    def m_arrive_unaligned(self, cx: Any) -> None:
        self._op(cx, self.barrier_id, False, False, "arrive_unaligned()")

    def m_arrive_and_wait(self, cx: Any) -> None:
        self._op(cx, self.barrier_id, True, True, "arrive_and_wait()")

    m_sync = m_arrive_and_wait
    m_wait = m_arrive_and_wait
    m_wait_unaligned = m_arrive_and_wait

    def m_arrive_w_index(self, cx: Any, index: Any) -> None:
        self._op(cx, self.barrier_id + cx.as_int(index, "index"), False, True,
                 f"arrive_w_index({index})")

    def m_arrive_and_wait_w_index(self, cx: Any, index: Any) -> None:
        self._op(cx, self.barrier_id + cx.as_int(index, "index"), True, True,
                 f"arrive_and_wait_w_index({index})")


__all__ = ["NamedBarrier", "NamedBarrierOp", "NamedWait"]
