"""Pipeline roles: which side of a pipeline each warp is on (property ``role-misuse``).

CUTLASS C++ gives every thread a role when it builds a pipeline: ``Params::role`` of
``PipelineTmaAsync`` (and of every other class of ``include/cutlass/pipeline/
sm90_pipeline.hpp`` and ``sm100_pipeline.hpp``) is a ``ThreadCategory``
(``NonParticipant``, ``Producer``, ``Consumer``, ``ProducerConsumer``).  Every
producer-side method starts with ``detail::pipeline_check_is_producer(params_.role)``
and every consumer-side method with ``detail::pipeline_check_is_consumer(params_.role)``;
in a debug build (``NDEBUG`` undefined) a failed check executes ``brkpt`` and the kernel
traps.  NVIDIA/cutlass issue 2126 (bug P10, ``examples/bugs/p10-bug.pipe``) is such a
trap: the mainloop producer warp of the grouped GEMM called ``consumer_wait`` on the
pipeline it produces into.

CuTe DSL's ``cutlass.pipeline`` has no ``role`` argument, so the model infers a warp's
role on each pipeline from the calls the warp makes (``RoleUse``, filled by the compiler,
``model/compile.py``):

* **Sides.**  ``producer_acquire``, ``producer_try_acquire``, ``producer_commit``,
  ``producer_tail`` (and FlashAttention's ``producer_acquire_w_index_phase`` /
  ``producer_commit_w_index``) are producer-side; ``consumer_wait``,
  ``consumer_try_wait``, ``consumer_test_wait``, ``consumer_release`` (and
  ``consumer_wait_w_index_phase`` / ``consumer_release_w_index``) are consumer-side.  The
  participants API lowers to them (``PipelineProducer.acquire/try_acquire/commit/tail``,
  a producer handle's ``commit``; ``PipelineConsumer.wait/try_wait/release``, a consumer
  handle's ``release``), so it is classified the same way.
* **Not role-checked.**  ``producer_get_barrier`` / ``consumer_get_barrier`` (and
  ``handle.barrier``) only return a barrier pointer, as in CUTLASS: hand-written
  protocols legitimately wait on the other side's barrier with them (``p5``, ``p9``).
  ``make_participants`` / ``make_producer`` / ``make_consumer`` only build objects (CuTe
  DSL returns both participants to every warp).  ``PipelineOrder`` (``wait``/``arrive``
  by every group), ``NamedBarrier`` and ``TmaStoreFence`` have no sides;
  ``PipelineTmaStore`` has only a producer side.
* **Role.**  A warp that passes a state made with
  ``make_pipeline_state(PipelineUserType.ProducerConsumer, ...)`` to a method of a
  pipeline is a ``ProducerConsumer`` of that pipeline and may call both sides: this is
  the CLC scheduler warp, for which CUTLASS's sm100 kernels set
  ``clc_pipeline_params.role = ThreadCategory::ProducerConsumer``.  Otherwise the warp's
  role on the pipeline is the side of its first role-checked call on it in program order
  (CUTLASS fixes the role when the pipeline is built, before any call).
* **Misuse.**  Every call of the other side is ``role-misuse``: the compiler puts a
  ``Fail`` instruction right before it (the call itself follows, as in a release build),
  so every engine reports the violation when, and only when, the warp reaches that call,
  and the counterexample shows the warp getting there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .ir import Loc
from .pipeline_state import PipelineStateVal, PipelineUserType

PRODUCER = "producer"
CONSUMER = "consumer"

#: methods that return a barrier pointer only; CUTLASS does not check the role there
UNCHECKED = frozenset({"producer_get_barrier", "consumer_get_barrier"})

#: CUTLASS's check for each side (include/cutlass/pipeline/sm90_pipeline.hpp, detail::)
CUTLASS_CHECK = {PRODUCER: "pipeline_check_is_producer", CONSUMER: "pipeline_check_is_consumer"}


def method_side(name: str) -> Optional[str]:
    """The side of pipeline method ``name`` (``producer``/``consumer``), or None when
    CUTLASS does not check the caller's role there."""
    if name in UNCHECKED:
        return None
    if name.startswith("producer_"):
        return PRODUCER
    if name.startswith("consumer_"):
        return CONSUMER
    return None


@dataclass(frozen=True)
class RoleCall:
    """One role-checked call of a pipeline method by the compiled warp."""

    side: str
    method: str
    loc: Loc
    label: str


@dataclass
class RoleUse:
    """The role-checked calls one warp makes on one pipeline (in program order)."""

    pipeline: str
    calls: list[RoleCall] = field(default_factory=list)
    producer_consumer: bool = False

    def add(self, side: str, method: str, args: tuple, loc: Loc, label: str) -> None:
        if any(isinstance(a, PipelineStateVal) and a.user == PipelineUserType.ProducerConsumer
               for a in args):
            self.producer_consumer = True
        self.calls.append(RoleCall(side, method, loc, label))

    @property
    def home(self) -> Optional[RoleCall]:
        """The first role-checked call: it fixes the warp's role on this pipeline."""
        return self.calls[0] if self.calls else None

    def misused(self) -> bool:
        """Does the warp call both sides without being a ProducerConsumer?"""
        if self.producer_consumer or not self.calls:
            return False
        return any(c.side != self.calls[0].side for c in self.calls)


def misuse_message(pipeline: str, side: str, method: str, label: str, home: RoleCall) -> str:
    """The words of a ``role-misuse`` failure at a call of ``method`` (side ``side``) by a
    warp whose role on ``pipeline`` was fixed by ``home``.  The engines prefix it with the
    warp and its role (``cta0.w0 (producer): ...``)."""
    other = "produces into" if home.side == PRODUCER else "consumes from"
    where = f" at line {home.loc.line}" if home.loc.line > 0 else ""
    how = f" (through {label})" if label and method not in label else ""
    return (f"calls {method}{how} on pipeline {pipeline!r}, which it {other} "
            f"({home.method}{where}); CUTLASS's debug build traps here "
            f"({CUTLASS_CHECK[side]})")
