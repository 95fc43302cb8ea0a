"""``PipelineProducer``, ``PipelineConsumer`` and their immutable handles
(``cutlass/pipeline/sm90.py``, research note 7).

A participant wraps a pipeline and a *mutable* ``PipelineState``; the model keeps it as
an immutable value that the compiler rebinds after each mutating call.  A handle holds a
clone of the state taken at acquire/wait time: ``handle.commit()``/``handle.release()``
act on that stage, whereas ``producer.commit()``/``consumer.release()`` without a handle
act on the participant's *current* state -- the next stage after ``*_and_advance``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..pipeline_state import PipelineStateVal
from ..errors import did_you_mean, methods_of
from .dispatch import call_method


class _Dispatch:
    """``obj.method(...)`` from .pipe code calls ``m_method``."""

    def call(self, cx: Any, name: str, args: tuple, kwargs: dict) -> Any:
        fn = getattr(self, "m_" + name, None)
        if fn is None:
            cx.error(f"{type(self).__name__} has no method {name}()",
                     did_you_mean(name, methods_of(self)))
        while args and args[-1] is None:
            args = args[:-1]
        return call_method(cx, type(self).__name__, name, fn, args, kwargs)


@dataclass(frozen=True)
class Handle(_Dispatch):
    """``ImmutableResourceHandle``: the pipeline and a clone of the state."""

    pipe: Any
    state: PipelineStateVal
    producer: bool

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "index":
            return self.state.index
        if name == "count":
            if self.state.count is None:
                cx.unsupported("handle.count inside a loop that never ends")
            return self.state.count
        if name == "phase":
            return self.state.phase
        if name == "barrier":
            side = "producer_get_barrier" if self.producer else "consumer_get_barrier"
            return self.pipe.call(cx, side, (self.state,), {})
        cx.error(f"a pipeline handle has no attribute {name!r}")

    def m_commit(self, cx: Any, **kw: Any) -> None:
        if not self.producer:
            cx.error("commit() is a producer-handle method; consumer handles have release()")
        self.pipe.call(cx, "producer_commit", (self.state,), kw)

    def m_release(self, cx: Any, **kw: Any) -> None:
        if self.producer:
            cx.error("release() is a consumer-handle method; producer handles have commit()")
        self.pipe.call(cx, "consumer_release", (self.state,), kw)

    def m_get_origin(self, cx: Any) -> Any:
        return self.pipe


@dataclass(frozen=True)
class PipelineProducer(_Dispatch):
    pipe: Any
    state: PipelineStateVal

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "state":
            return self.state
        cx.error(f"PipelineProducer has no attribute {name!r}")

    def m_acquire(self, cx: Any, try_acquire_token: Any = None, **kw: Any) -> Handle:
        self.pipe.call(cx, "producer_acquire", (self.state, try_acquire_token), kw)
        return Handle(self.pipe, self.state, True)

    def m_advance(self, cx: Any) -> None:
        cx.set_self(replace(self, state=self.state.advance()))

    def m_acquire_and_advance(self, cx: Any, try_acquire_token: Any = None, **kw: Any) -> Handle:
        h = self.m_acquire(cx, try_acquire_token, **kw)
        cx.set_self(replace(self, state=self.state.advance()))
        return h

    def m_try_acquire(self, cx: Any) -> Any:
        return self.pipe.call(cx, "producer_try_acquire", (self.state,), {})

    def m_commit(self, cx: Any, handle: Any = None, **kw: Any) -> None:
        if handle is not None:
            if not isinstance(handle, Handle) or not handle.producer:
                cx.error("producer.commit(handle) needs a handle from producer.acquire()")
            if handle.pipe.decl is not self.pipe.decl and handle.pipe.decl != self.pipe.decl:
                cx.error("the handle comes from a different pipeline")
            handle.m_commit(cx, **kw)
        else:
            self.pipe.call(cx, "producer_commit", (self.state,), kw)

    def m_tail(self, cx: Any) -> None:
        new_state = self.pipe.call_mutating(cx, "producer_tail", self.state)
        cx.set_self(replace(self, state=new_state))

    def m_reset(self, cx: Any) -> None:
        cx.set_self(replace(self, state=self.state.reset_count()))

    def m_clone(self, cx: Any) -> "PipelineProducer":
        return self

    def m_current_handle(self, cx: Any) -> Handle:
        return Handle(self.pipe, self.state, True)


@dataclass(frozen=True)
class PipelineConsumer(_Dispatch):
    pipe: Any
    state: PipelineStateVal

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "state":
            return self.state
        cx.error(f"PipelineConsumer has no attribute {name!r}")

    def m_wait(self, cx: Any, try_wait_token: Any = None, **kw: Any) -> Handle:
        self.pipe.call(cx, "consumer_wait", (self.state, try_wait_token), kw)
        return Handle(self.pipe, self.state, False)

    def m_advance(self, cx: Any) -> None:
        cx.set_self(replace(self, state=self.state.advance()))

    def m_wait_and_advance(self, cx: Any, try_wait_token: Any = None, **kw: Any) -> Handle:
        h = self.m_wait(cx, try_wait_token, **kw)
        cx.set_self(replace(self, state=self.state.advance()))
        return h

    def m_try_wait(self, cx: Any) -> Any:
        return self.pipe.call(cx, "consumer_try_wait", (self.state,), {})

    def m_release(self, cx: Any, handle: Any = None, **kw: Any) -> None:
        if handle is not None:
            if not isinstance(handle, Handle) or handle.producer:
                cx.error("consumer.release(handle) needs a handle from consumer.wait()")
            handle.m_release(cx, **kw)
        else:
            self.pipe.call(cx, "consumer_release", (self.state,), kw)

    def m_reset(self, cx: Any) -> None:
        cx.set_self(replace(self, state=self.state.reset_count()))

    def m_clone(self, cx: Any) -> "PipelineConsumer":
        return self

    def m_current_handle(self, cx: Any) -> Handle:
        return Handle(self.pipe, self.state, False)
