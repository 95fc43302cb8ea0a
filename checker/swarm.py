"""Random runs of the model (``--engine swarm``): violations too deep for breadth-first search.

A breadth-first search, reduced or not, must pass every state up to a violation's depth
before it reports it.  Where the violation is deep and many warps run in parallel before
it, that is out of reach: NVIDIA's lifted 2x2 Hopper GEMM without ``producer_tail`` (a
CTA exits while its peers' consumers still release into its empty barriers) keeps the
reduced search below depth 260 after 500,000 states, while the first violation is some
450 steps deep.  A single random run finds it in well under a second.

Each run starts at the initial state and takes steps of the unreduced interleaving graph
(``statespace.Explorer`` without reductions: every step is a step of the model), one at
random, each unit weighted by a factor drawn once per run from ``WEIGHTS`` -- swarm
verification (Holzmann, Joshi and Groce, "Swarm verification techniques", IEEE TSE
2011): runs where some warps are fast and others starved reach orders a uniform choice
almost never does.  A run ends at a violating step, at a deadlock (no step enabled and a
warp not exited), when every warp has exited, or at ``depth`` steps.

A violation or deadlock found is a run of the model: it is replayed through the concrete
model, its needless steps are dropped (``explicit.drop_needless_steps``), and it is
reported as not necessarily the shortest.  Finding none proves nothing: the answer is
then ``UNKNOWN`` with the number of runs, never ``PROVEN``.  Starvation is not looked
for.  Runs are reproducible: run ``i`` draws from ``random.Random(seed * 1_000_003 + i)``.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Optional

from ..model.errors import option
from ..model.system import System
from .properties import DEADLOCK_MSG
from .explicit import drop_needless_steps
from .statespace import Explorer
from .verdict import UNKNOWN, VIOLATED, Stats, Verdict

#: a unit's weight in one run, drawn uniformly from these: some units starved, most
#: even, some fast
WEIGHTS = (0.01, 0.1, 1.0, 1.0, 10.0)
#: default number of runs and steps a run
RUNS = 1000
DEPTH = 100_000


def _unit(step: tuple) -> tuple:
    """The unit a step belongs to: its warp, or the kind of asynchronous item."""
    return ("a", step[1]) if step[0] == "a" else ("e", step[1][0])


def check_swarm(system: System, runs: int = RUNS, depth: int = DEPTH, seed: int = 0,
                timeout: float = 600.0,
                progress: Optional[Callable[..., None]] = None) -> Verdict:
    """Up to ``runs`` random runs of at most ``depth`` steps each (module docstring);
    the first violation or deadlock found is the verdict, else ``UNKNOWN``."""
    t0 = time.perf_counter()
    ex = Explorer(system, symmetry=False)
    stats = Stats(engine="swarm")
    steps_taken = 0
    max_depth = 0
    done_runs = 0
    ended_at_depth = 0
    next_report = t0 + 1.0
    for i in range(runs):
        if time.perf_counter() - t0 > timeout:
            break
        rng = random.Random(seed * 1_000_003 + i)
        weights: dict = {}
        state = ex.initial
        path: list = []
        while len(path) < depth:
            if len(path) & 1023 == 1023 and time.perf_counter() - t0 > timeout:
                break  # a long run of a big kernel: the timeout ends it too
            succ = ex.successors(state)
            if not succ:
                if not ex.all_done(state):
                    return _report(system, ex, path, ("deadlock", DEADLOCK_MSG), state,
                                   stats, t0, i, steps_taken)
                break
            ws = []
            for s in succ:
                u = _unit(s[0])
                w = weights.get(u)
                if w is None:
                    w = weights[u] = rng.choice(WEIGHTS)
                ws.append(w)
            step, nxt, viol = rng.choices(succ, weights=ws)[0]
            path.append(step)
            steps_taken += 1
            if viol is not None:
                return _report(system, ex, path, viol, None, stats, t0, i, steps_taken)
            state = nxt
        else:
            ended_at_depth += 1
        done_runs += 1
        max_depth = max(max_depth, len(path))
        now = time.perf_counter()
        if progress is not None and now >= next_report:
            progress(steps_taken, max_depth, now - t0)
            next_report = now + 1.0
    stats.seconds = time.perf_counter() - t0
    stats.states = steps_taken + done_runs  # states visited, repeats counted
    stats.transitions = steps_taken
    stats.depth = max_depth
    stats.extra.update(runs=done_runs, seed=seed, runs_at_depth_bound=ended_at_depth)
    cut = "" if done_runs == runs else f" (of {runs}: timeout after {timeout:.0f} s)"
    bound = (f"; {ended_at_depth} stopped at the bound of {depth} steps"
             if ended_at_depth else "")
    proof = f"{option('engine', 'auto')} or {option('engine', 'explicit')}"
    return Verdict(UNKNOWN, reason=f"no violation or deadlock in {done_runs} random runs"
                   f"{cut}, the longest {max_depth} steps{bound}; random runs prove "
                   f"nothing (use {proof} for a proof)",
                   stats=stats, depth=max_depth)


def _report(system: System, ex: Explorer, path: list, viol: tuple, stuck: Any,
            stats: Stats, t0: float, run: int, steps_taken: int) -> Verdict:
    """The violating run, replayed through the concrete model, its needless steps
    dropped where they can be (a run of the model either way, perhaps not the
    shortest)."""
    trace = ex.replay(path, None if stuck is not None else viol, stuck_state=stuck)
    if stuck is not None:
        trace.violated, trace.detail = viol
    stats.states = steps_taken + run + 1  # states visited, repeats counted
    stats.transitions = steps_taken
    stats.depth = len(path)
    stats.extra.update(run=run, runs=run + 1, shortest=False, reduced_length=len(path))
    v = Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace, depth=len(path),
                stats=stats)
    v = drop_needless_steps(system, v)
    v.stats.seconds = time.perf_counter() - t0
    return v
