"""Names of everything that can go wrong, in the user's words.

Each transition function of the model returns, next to the successor state, a list of
``Check(condition, prop, detail)``: ``condition`` is a value of the value interface that
is true exactly when the step goes wrong.  Engines evaluate it (concretely or as a z3
term); they never decide on their own what is a violation.

The catalogue with longer explanations and sources lives in ``spec/properties.md``.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Prop:
    """Property identifiers (stable strings: they appear in verdicts, JSON and tests)."""

    # data races on stage buffers (ghost state, spec/semantics.md "buffers")
    READ_BEFORE_FULL = "read-before-full"
    OVERWRITE_BEFORE_RELEASE = "overwrite-before-release"
    # mbarrier undefined behaviour (PTX ISA 9.7.13.15 mbarrier)
    USE_BEFORE_INIT = "use-before-init"
    DOUBLE_INIT = "double-init"
    ARRIVAL_OVERFLOW = "arrival-overflow"
    TX_OVERFLOW = "tx-overflow"
    COUNT_OUT_OF_RANGE = "count-out-of-range"
    ARRIVE_DROP_TO_ZERO = "arrive-drop-to-zero"
    UNSPECIFIED_EXPECT_TX = "unspecified-expect-tx"
    STALE_PARITY = "stale-parity"
    PHASE_OVERRUN = "phase-overrun"
    REMOTE_WAIT = "remote-wait"
    # liveness
    DEADLOCK = "deadlock"
    STARVATION = "starvation"
    # lifetime of CTAs and asynchronous work
    DANGLING_ARRIVE_AT_EXIT = "dangling-arrive-at-exit"
    REMOTE_OP_TO_EXITED_CTA = "remote-op-to-exited-cta"
    MASK_OUTSIDE_CLUSTER = "mask-outside-cluster"
    # other barriers
    NAMED_BARRIER_MISUSE = "named-barrier-misuse"
    CLUSTER_BARRIER_MISUSE = "cluster-barrier-misuse"
    # API discipline
    ROLE_MISUSE = "role-misuse"
    ELECT_MISUSE = "elect-misuse"
    MISSING_PROXY_FENCE = "missing-proxy-fence"
    # tensor memory allocation protocol (PTX ISA tcgen05.alloc/dealloc/relinquish_alloc_permit)
    TMEM_MISUSE = "tmem-misuse"
    # global memory between CTAs of the grid (PTX ISA memory consistency model, gpu scope)
    GMEM_RACE = "gmem-race"
    # memory scopes (only with --memory-model strict: spec/primitives.md "memory scopes")
    INSUFFICIENT_SCOPE = "insufficient-scope"


ALL_PROPERTIES: tuple[str, ...] = tuple(
    v for k, v in vars(Prop).items() if not k.startswith("_") and isinstance(v, str)
)


#: a property's place in the catalogue (its rank when one step violates several)
CATALOGUE_RANK: dict[str, int] = {p: i for i, p in enumerate(ALL_PROPERTIES)}


def ranked(checks: list) -> list:
    """``checks`` with the properties first in the catalogue first (stable): a step that
    violates several properties is named by the one first in the catalogue, whatever
    the order an instruction lists its destinations in -- so that renaming the CTAs of
    a cluster (``checker/cta_symmetry.py``), which reorders a multicast's destinations,
    names the same property."""
    if len(checks) < 2:
        return checks
    return sorted(checks, key=lambda c: CATALOGUE_RANK.get(c.prop, len(CATALOGUE_RANK)))


class Check(NamedTuple):
    """``condition`` true means the step violates ``prop``; ``detail`` says how, in words."""

    condition: Any
    prop: str
    detail: str


def add_check(checks: list, condition: Any, prop: str, detail: Any) -> None:
    """Append a check unless its condition is the concrete value False.

    ``detail`` may be a string or a function returning one; it is only evaluated when
    the check is kept, so the explicit engine formats no message for steps that are fine.
    """
    if condition is False:
        return
    checks.append(Check(condition, prop, detail() if callable(detail) else detail))
