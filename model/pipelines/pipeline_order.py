"""``PipelineOrder``: a token passed round-robin between ``length`` groups
(``cutlass/pipeline/sm90.py``; C++ ``OrderedSequenceBarrier``; research note 6.5).

``depth * length`` barriers, all counting ``arrive_count(producer_group)``; the barrier of
(stage ``d``, group ``g``) is at ``d * length + g``.  Each group holds its own
``PipelineState(depth)`` starting at phase 1 for group 0 (it holds the token) and 0 for
the others.  ``wait()`` waits on its own barrier; ``arrive()`` arrives -- every calling
thread, no election -- on the next group's barrier and advances the state.

``wait(state)`` / ``state = arrive(state)`` use (and advance) a state the caller keeps
instead, the form a run-time loop needs: CuTe DSL does not carry the object's own state
through ``range``/``cutlass.range`` loops (``model/compile.py`` ``_order_through_loop``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..mbarrier import PHASE_MOD
from ..pipeline_state import PipelineStateVal
from .base import ArrayDecl, PipelineBase, PipelineDecl, create_effects, emit_arrive, emit_wait, group_count


@dataclass(frozen=True)
class PipelineOrder(PipelineBase):
    length: int = 1
    group_id: int = 0
    state: PipelineStateVal = None  # type: ignore[assignment]

    CLASS = "PipelineOrder"

    @classmethod
    def create(cls, cx: Any, var: str, kw: dict) -> "PipelineOrder":
        depth = cx.need_int(kw, "depth", minimum=1)
        length = cx.need_int(kw, "length", minimum=1)
        group_id = cx.need_int(kw, "group_id", minimum=0)
        if group_id >= length:
            cx.error(f"group_id {group_id} is outside [0, length={length})")
        count = group_count(cx, cx.need(kw, "producer_group"), "producer_group")
        kw.pop("barrier_storage", None)
        kw.pop("name", None)
        defer = bool(kw.pop("defer_sync", False))
        cx.no_more_kwargs(kw, f"{cls.CLASS}.create")
        decl = cx.register(PipelineDecl(var, cls.CLASS, depth,
                                        (ArrayDecl("bar", depth * length, count),),
                                        f"{var}.none", "cta"))
        ghost = PHASE_MOD - 1 if group_id == 0 else 0
        state = PipelineStateVal(depth, 0, ghost, 0 if cx.track_count else None)
        obj = cls(decl, cx.cta, length, group_id, state)
        create_effects(cx, decl, defer)
        return obj

    def attribute(self, cx: Any, name: str) -> Any:
        if name == "state":
            return self.state
        if name == "group_id":
            return self.group_id
        return super().attribute(cx, name)

    def _state(self, cx: Any, state: Any, what: str) -> PipelineStateVal:
        return self.state if state is None else self.check_state(cx, state, what)

    def _note(self, cx: Any, state: Any) -> str:
        """Label note where the object's own state is used inside a run-time loop."""
        if state is not None:
            return ""
        for k, v in cx.env.items():
            if k.startswith("__order_entry_") and any(
                    isinstance(o, PipelineOrder) and o.decl == self.decl for _, o in v):
                return " [run-time loop: the state the object had at loop entry]"
        return ""

    def m_get_barrier_for_current_stage_idx(self, cx: Any, group_id: Any,
                                            state: Any = None) -> Any:
        from .pipeline_async import BarrierPtr

        st = self._state(cx, state, "get_barrier_for_current_stage_idx")
        return BarrierPtr(self.bar("bar", st.index * self.length + int(group_id)))

    def m_wait(self, cx: Any, state: Any = None) -> None:
        st = self._state(cx, state, "wait")
        emit_wait(cx, self.bar("bar", st.index * self.length + self.group_id), st,
                  f"{self.decl.var}.wait() group {self.group_id} ({st.describe()})"
                  + self._note(cx, state))

    def m_arrive(self, cx: Any, state: Any = None) -> Any:
        st = self._state(cx, state, "arrive")
        nxt = (self.group_id + 1) % self.length
        # the arrival belongs to the phase the next group waits for: group 0 (which
        # started holding the token, at phase -1) hands round r of the ring on after
        # waiting for phase r-1 of its own barrier; every other group after waiting for
        # phase r of its own
        phase = None
        if st.tracked:
            phase = (st.ghost + 1) % PHASE_MOD if self.group_id == 0 else st.ghost
        emit_arrive(cx, [(self.bar("bar", st.index * self.length + nxt), len(cx.lanes), 0)],
                    f"{self.decl.var}.arrive() group {self.group_id} -> group {nxt}"
                    + self._note(cx, state), phase=phase)
        if state is None:
            cx.set_self(replace(self, state=st.advance()))
            return None
        cx.set_arg(0, st.advance())  # the DSL advances the caller's state and returns it
        return st.advance()
