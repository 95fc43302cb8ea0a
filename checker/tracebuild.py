"""The ``Trace`` of a counterexample given as steps of the unreduced model.

Every engine that finds its counterexample elsewhere than in the explicit state space
(BMC's models, the certificate's graph, lassos) describes it here, by the explicit
state space's own replay, so all traces read alike.
"""

from __future__ import annotations

from typing import Optional

from ..model.system import System
from .errors import InternalError
from .statespace import Explorer
from .trace import Trace


def build_trace(system: System, steps: list[tuple], violation: Optional[tuple],
                stuck: Optional[tuple] = None) -> Trace:
    """The ``Trace`` of a validated step list, built by the explicit engine's replay."""
    ex = Explorer(system, symmetry=False)
    stuck_packed = ex.packer.pack(list(stuck)) if stuck is not None else None
    try:
        return ex.replay(steps, violation, stuck_state=stuck_packed)
    except RuntimeError as e:
        raise InternalError(f"replay of the BMC counterexample failed: {e}") from e
