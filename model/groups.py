"""``Agent`` and ``CooperativeGroup`` (``cutlass/pipeline/helpers.py``) and the arrival
count an mbarrier is initialised with (``_get_thread_arrive_count``).

The count is a number of *arrive operations*, not of threads: whether one logical
release produces one arrival per thread or one per warp is decided by the signalling of
the pipeline class (research note section 3).  That mismatch is the most common source
of pipeline hangs, which is why the model derives counts exactly as CUTLASS does and
lets the arrivals that really happen decide.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP_SIZE = 32


def _show(v: object) -> str:
    """A value in a message, as a .pipe author writes it (model/compile.py describe)."""
    from .describe import describe

    return describe(v)


class Agent:
    Thread = "Thread"
    Warp = "Warp"
    ThreadBlock = "ThreadBlock"
    ThreadBlockCluster = "ThreadBlockCluster"

    ALL = ("Thread", "Warp", "ThreadBlock", "ThreadBlockCluster")


@dataclass(frozen=True)
class CooperativeGroup:
    agent: str
    size: int = 1

    def __post_init__(self) -> None:
        if self.agent not in Agent.ALL:
            raise ValueError(f"unknown Agent {_show(self.agent)}")
        if not isinstance(self.size, int) or self.size <= 0:
            raise ValueError(f"CooperativeGroup size must be a positive int, got {_show(self.size)}")

    def __str__(self) -> str:
        return f"CooperativeGroup(Agent.{self.agent}, {self.size})"


def arrive_count(group: CooperativeGroup, block_threads: int, cluster_size: int) -> int:
    """``_get_thread_arrive_count``: Thread -> size, Warp -> 32*size, ThreadBlock ->
    size*blockDim, ThreadBlockCluster -> size*cluster_size*blockDim."""
    if group.agent == Agent.Thread:
        return group.size
    if group.agent == Agent.Warp:
        return group.size * WARP_SIZE
    if group.agent == Agent.ThreadBlock:
        return group.size * block_threads
    return group.size * cluster_size * block_threads
