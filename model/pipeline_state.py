"""``PipelineState`` (``cutlass/pipeline/helpers.py``) and FlashAttention's
``PipelineStateSimple`` (``flash_attn/cute/pipeline.py``), as static values.

The compiler tracks pipeline states exactly (loops are unrolled until their state
repeats), so ``index``, ``phase`` and ``count`` are plain ints here.  Next to the visible
phase bit the model keeps a *ghost phase*: the number (mod 4) of the barrier phase this
state waits for.  A producer's state starts at ghost -1 (== 3 mod 4, parity 1: its first
wait on a fresh empty barrier returns at once), a consumer's at 0; ``advance`` adds one
at every wrap.  The ghost is what lets the model tell a waiter that is two phases behind
from one that is up to date, and which fill of a buffer a wait entitles its caller to
read.  States built from a bare (index, phase) pair -- FlashAttention's
``*_w_index_phase`` methods, ``PipelineState(stages, count, index, phase)`` -- have no
ghost (``tracked=False``); the model then compares parities only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from .mbarrier import PHASE_MOD
from .values import CONCRETE


def _show(v: object) -> str:
    """A value in a message, as a .pipe author writes it (model/compile.py describe)."""
    from .describe import describe

    return describe(v)


def advance_rule(V: Any, index: Any, ghost: Any, stages: Any, phases: int) -> tuple[Any, Any]:
    """One ``PipelineState.advance`` of (index, phase number), written against the value
    interface ``V`` (``model/values.py``) so that it runs on Python ints (the compiler's
    static states) and is lowered to PTX registers by the emitter (``impl/fold.py``:
    a loop whose body depends on the state only through index and phase keeps the state
    in registers, as CUTLASS does).  ``index + 1``; at ``stages`` it wraps to 0 and the
    phase number steps, modulo ``phases`` (``PHASE_MOD`` for the model's ghost phase, 2
    for a bare phase bit, whose step is the flip).  ``cutlass/pipeline/helpers.py``
    ``PipelineState.advance``."""
    nxt = index + 1
    wrap = V.eq(nxt, stages)
    return V.ite(wrap, 0, nxt), V.ite(wrap, V.mod(ghost + 1, phases), ghost)


class PipelineUserType:
    """``PipelineUserType`` of ``cutlass.pipeline``."""

    Producer = "Producer"
    Consumer = "Consumer"
    ProducerConsumer = "ProducerConsumer"


@dataclass(frozen=True)
class PipelineStateVal:
    """``PipelineState(stages, count, index, phase)`` with a ghost phase.

    ``ghost`` is the phase number mod 4 when ``tracked``; otherwise only its parity is
    meaningful.  ``count`` is None when the kernel never reads it (so that persistent
    loops reach a repeating state).  ``simple`` marks FlashAttention's
    ``PipelineStateSimple`` (its ``phase`` is not reduced mod 2).  ``user`` is the
    ``PipelineUserType`` it was made with (empty for states built from a bare index and
    phase); a ``ProducerConsumer`` state declares its warp a producer *and* consumer of
    the pipeline it is used on (``model/roles.py``).
    """

    stages: int
    index: int
    ghost: int
    count: Optional[int] = 0
    tracked: bool = True
    simple: bool = False
    user: str = ""

    @property
    def phase(self) -> int:
        """The phase bit used as the wait parity (``state.phase``)."""
        return self.ghost & 1

    def advance(self) -> "PipelineStateVal":
        """``index += 1``; at ``stages`` wrap to 0 and flip the phase (``count += 1``):
        ``advance_rule`` on Python ints."""
        index, ghost = advance_rule(CONCRETE, self.index, self.ghost, self.stages,
                                    PHASE_MOD if self.tracked else 2)
        count = None if self.count is None else self.count + 1
        return replace(self, index=index, ghost=ghost, count=count)

    def reverse(self) -> "PipelineStateVal":
        """``index -= 1``; at -1 wrap to ``stages - 1`` and flip the phase."""
        index = self.index - 1
        ghost = self.ghost
        if index == -1:
            index = self.stages - 1
            ghost = (ghost - 1) % PHASE_MOD if self.tracked else ghost ^ 1
        count = None if self.count is None else self.count - 1
        return replace(self, index=index, ghost=ghost, count=count)

    def reset_count(self) -> "PipelineStateVal":
        return replace(self, count=None if self.count is None else 0)

    def clone(self) -> "PipelineStateVal":
        return self

    def describe(self) -> str:
        return f"stage {self.index}, phase {self.phase}"


def make_pipeline_state(user_type: str, stages: int, track_count: bool = True,
                        simple: bool = False) -> PipelineStateVal:
    """``make_pipeline_state``: producers (and ProducerConsumer) start at phase 1."""
    if stages < 1:
        raise ValueError(f"num_stages must be at least 1, got {stages}")
    if user_type in (PipelineUserType.Producer, PipelineUserType.ProducerConsumer):
        ghost = PHASE_MOD - 1  # phase -1: the fresh barrier's "completed" phase
    elif user_type == PipelineUserType.Consumer:
        ghost = 0
    else:
        raise ValueError(f"unknown PipelineUserType {_show(user_type)}")
    return PipelineStateVal(stages, 0, ghost, 0 if track_count else None, True, simple,
                            user_type)


def state_from_index_phase(stages: int, index: int, phase: int,
                           count: Optional[int] = 0) -> PipelineStateVal:
    """A state built from a bare (index, phase): only the parity is known (no ghost)."""
    return PipelineStateVal(stages, index, phase & 1, count, tracked=False)


def arrival_phase(state: PipelineStateVal, side: str) -> Optional[int]:
    """The barrier phase (mod 4) an arrive made with this state belongs to, or None.

    A consumer (``side="consumer"``) waited for phase ``ghost`` of ``full`` and its
    release belongs to the same phase of ``empty``; a producer (``side="producer"``)
    waited for phase ``ghost`` of ``empty`` (its state starts at phase -1) and its
    ``arrive`` on ``full`` belongs to the next phase (the fill it writes, as
    ``fill_tag_for_acquire``).  Only for tracked states of the matching user type: a
    state of the other type, a ``ProducerConsumer`` state or one built from a bare
    (index, phase) says nothing certain about the arrival (``mbarrier.surplus_check``).
    """
    if not state.tracked:
        return None
    if side == "consumer" and state.user == PipelineUserType.Consumer:
        return state.ghost
    if side == "producer" and state.user == PipelineUserType.Producer:
        return (state.ghost + 1) % PHASE_MOD
    return None


def fill_tag_for_wait(state: PipelineStateVal) -> int:
    """The buffer fill a successful consumer wait with this state entitles it to read."""
    from .program import PARITY_TAG

    return state.ghost if state.tracked else PARITY_TAG + (state.ghost & 1)


def fill_tag_for_acquire(state: PipelineStateVal) -> int:
    """The buffer fill a producer writes after acquiring with this state (one phase later)."""
    from .program import PARITY_TAG

    if state.tracked:
        return (state.ghost + 1) % PHASE_MOD
    return PARITY_TAG + ((state.ghost & 1) ^ 1)
