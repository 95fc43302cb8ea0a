"""The concrete model's steps over flat state tuples, without reductions.

The reference every engine's counterexample is replayed through before it is reported
(BMC's models, the explicit engine's lassos, the certificate's shortest problems): a
mismatch raises ``errors.InternalError``, never a verdict.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..model.system import DONE, ConcreteState, System
from ..model.values import CONCRETE
from .errors import InternalError


def first_violation(checks: list) -> Optional[tuple[str, str]]:
    """The first check whose (concrete) condition holds, as the explicit engine reports it."""
    for c in checks:
        if c.condition is True or (c.condition and not isinstance(c.condition, bool)):
            return (c.prop, c.detail)
    return None


class ConcreteRunner:
    """Steps of the concrete model over flat state tuples (validation of counterexamples).

    ``successors`` enumerates exactly the steps the explicit engine enumerates without
    reductions (``Explorer`` with symmetry and partial-order reduction off)."""

    def __init__(self, system: System):
        self.sys = system
        S = ConcreteState(system.initial_state())
        for a in range(len(system.agents)):
            system.run_local(CONCRETE, S, a, [])
        self.initial = S.freeze()

    def successors(self, flat: tuple) -> Iterator[tuple[tuple, tuple, Optional[tuple]]]:
        sysm = self.sys
        for ag in sysm.agents:
            pc = flat[ag.pc]
            if pc == DONE:
                continue
            for choice in range(sysm.agent_choices(ag.index, pc)):
                S = ConcreteState(flat)
                out = sysm.exec_agent(CONCRETE, S, ag.index, pc, choice)
                if not out.enabled:
                    break
                yield ("a", ag.index, choice), S.freeze(), first_violation(out.checks)
        for item in sysm.env_items(flat):
            S = ConcreteState(flat)
            out = sysm.exec_env(CONCRETE, S, item)
            yield ("e", item), S.freeze(), first_violation(out.checks)

    def step(self, flat: tuple, step: tuple) -> Optional[tuple[tuple, Optional[tuple]]]:
        """The successor by ``step`` (None when ``step`` is not enabled in ``flat``)."""
        for st, nxt, viol in self.successors(flat):
            if st == step:
                return nxt, viol
        return None

    def all_done(self, flat: tuple) -> bool:
        return self.sys.all_done(flat)

    def run(self, steps: list[tuple]) -> tuple[list[tuple], Optional[tuple]]:
        """States along ``steps`` (``states[i]`` before step ``i``) and the violation of
        the last step.  Raises ``InternalError`` if a step is not enabled or an earlier
        step already violates."""
        states = [self.initial]
        viol = None
        for i, step in enumerate(steps):
            if viol is not None:
                raise InternalError(f"step {i} violates {viol[0]} before the end")
            r = self.step(states[-1], step)
            if r is None:
                raise InternalError(f"step {i + 1} ({step}) is not enabled in the concrete "
                                    "model")
            nxt, viol = r
            states.append(nxt)
        return states, viol

