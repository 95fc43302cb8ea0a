"""The encoding's state graph, explored by evaluating its own compiled terms.

``checker/certificate.py`` decides closure and problems of an enumerated state set state
by state, and, when that set has problem states, the shortest counterexample is found
here by a breadth-first search over the same graph.  Both read the encoding's
transition templates (``symbolic.Encoding.transitions``: guard, ``Transition.good``,
updates, and the check conditions in the model's order) compiled to Python by
``checker/termeval.py`` -- the z3 terms the unrolling's relation is built from, not the
concrete model -- so what is found here is a run of the symbolic relation; the BMC
engine still replays it through the concrete model before it shows it.

Rows are tuples of unsigned key values (``Encoding.width`` bits each), as the compiled
terms read and write them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from .graphs import fair_cycle, graph_path
from .symbolic import Encoding
from .termeval import compile_functions


@dataclass(frozen=True)
class CompiledStep:
    """One transition template, compiled: ``fn(row)`` is None where the template is not
    enabled, else ``(True, good, *new values of keys)``."""

    index: int
    step: tuple                     # the explicit engine's step id ("a", w, choice) / ("e", it)
    actor: tuple                    # ("a", warp) or ("e", item)
    keys: tuple
    fn: Callable[[Any], Any]


class CompiledSteps:
    """Every transition template of ``enc`` compiled once, indexed by warp and program
    counter (a row has at most one instruction per warp enabled by its pc)."""

    def __init__(self, enc: Encoding):
        self.enc = enc
        trs = enc.transitions
        # per template: None where not enabled, else (True, good, *new values); and the
        # encoding's "every warp has exited" (a state with no step is a deadlock unless so)
        named = {f"t{t.index}": [[t.guard], [t.good(), *t.updates.values()]] for t in trs}
        named["all_done"] = [[enc.all_done()]]
        fns = compile_functions(enc.X, named)
        self._all_done = fns["all_done"]
        masks = [(1 << w) - 1 for w in enc.width]
        self.pc_keys = [enc.key_of_slot[ag.pc] for ag in enc.sys.agents]
        self.by_pc: dict[tuple[int, int], list[CompiledStep]] = {}
        self.env: list[CompiledStep] = []
        for t in trs:
            cs = CompiledStep(t.index, t.step, (t.step[0], t.step[1]), tuple(t.updates),
                              fns[f"t{t.index}"])
            if t.agent is None:
                self.env.append(cs)
            else:
                self.by_pc.setdefault((t.agent, t.pc & masks[self.pc_keys[t.agent]]),
                                      []).append(cs)
        self._checks: Optional[dict[int, Callable[[Any], Any]]] = None

    def candidates(self, row: tuple) -> list[CompiledStep]:
        return [c for a, k in enumerate(self.pc_keys)
                for c in self.by_pc.get((a, row[k]), ())] + self.env

    def successors(self, row: tuple) -> Iterator[tuple[CompiledStep, Optional[tuple]]]:
        """Every enabled template with its successor row, or None for a problem step
        (violates a check or leaves the encoding)."""
        for c in self.candidates(row):
            r = c.fn(row)
            if r is None:
                continue
            if not r[1]:
                yield c, None
                continue
            nxt = list(row)
            for k, v in zip(c.keys, r[2:]):
                nxt[k] = v
            yield c, tuple(nxt)

    def all_done(self, row: tuple) -> bool:
        """Every warp has exited (``Encoding.all_done``)."""
        return self._all_done(row) is not None

    def first_check(self, c: CompiledStep, row: tuple) -> Optional[str]:
        """The property of the first failing check of ``c`` in ``row``, in the model's
        order (how both engines name a violating step); None when none fails (the step
        only leaves the encoding).  Compiled on first use."""
        if self._checks is None:
            trs = self.enc.transitions
            named = {f"c{t.index}": [[t.guard], [cond for cond, _ in t.checks]]
                     for t in trs if t.checks}
            fns = compile_functions(self.enc.X, named) if named else {}
            self._checks = {int(n[1:]): f for n, f in fns.items()}
        fn = self._checks.get(c.index)
        r = fn(row) if fn is not None else None
        if r is None:
            return None
        props = [p for _, p in self.enc.transitions[c.index].checks]
        for hit, prop in zip(r[1:], props):  # r[0]: the guard's True
            if hit:
                return prop
        return None


@dataclass(frozen=True)
class Problem:
    """A shortest counterexample of the encoding: ``steps`` (the explicit engine's step
    ids) from the initial state; ``prop`` the property of the last step, or
    ``"deadlock"`` (then the run ends in a state with no step where some warp has not
    exited); ``None`` when the last step only leaves the encoding."""

    steps: tuple
    prop: Optional[str]


def shortest_problems(cs: CompiledSteps, init: tuple,
                      canon: Callable[[tuple], tuple] = lambda r: r,
                      deadline: float = float("inf")) -> Optional[list[Problem]]:
    """Breadth-first search of the encoding's graph from ``init`` for the problems of
    the least length ``L``: every deadlock reached by ``L`` steps and every problem step
    taken after ``L - 1`` (one per state and template; ``canon`` merges states equal up
    to interchangeable warps, which keeps lengths).  ``[]`` when no reachable state has
    a problem; None past ``deadline``."""
    parent: dict[tuple, Optional[tuple[tuple, tuple]]] = {canon(init): None}
    level = [init]  # actual rows (a path is replayed on them), one per class

    def path(row: tuple) -> list[tuple]:
        out: list[tuple] = []
        p = parent[canon(row)]
        while p is not None:
            row, step = p
            out.append(step)
            p = parent[canon(row)]
        return out[::-1]

    found: list[Problem] = []
    n = 0
    while level:
        nxt_level: list[tuple] = []
        bad_steps: list[Problem] = []
        for row in level:
            n += 1
            if n % 1024 == 0 and time.perf_counter() > deadline:
                return None
            enabled = False
            for c, nxt in cs.successors(row):
                enabled = True
                if nxt is None:
                    bad_steps.append(Problem(tuple(path(row)) + (c.step,),
                                             cs.first_check(c, row)))
                    continue
                key = canon(nxt)
                if key not in parent:
                    parent[key] = (row, c.step)
                    nxt_level.append(nxt)
            if not enabled and not cs.all_done(row):
                found.append(Problem(tuple(path(row)), "deadlock"))
        # deadlocks at this level and problem steps from the one before have one length
        if found:
            return found
        found = bad_steps
        level = nxt_level
    return found


def graph_lasso(cs: CompiledSteps, rows: list[tuple], succ: list[list[tuple[int, tuple]]],
                init: int, comp: tuple, nag: int) -> tuple[list[tuple], int]:
    """A starvation lasso on the encoding's state graph (``rows``, ``succ`` as
    ``certificate.check_by_evaluation`` builds it) through ``comp``, the fair component
    ``graphs.starving_component`` found: a shortest path from ``init`` to the
    component's entry, then the explicit engine's fair cycle (``graphs.fair_cycle``).
    Returns the step ids (named from the compiled steps) and the index of the loop's
    first step."""
    entry = comp[0]
    enabled = [{a for _t, a in edges} for edges in succ]

    def step_id(u: int, t: int, a: tuple) -> tuple:
        for c, nxt in cs.successors(rows[u]):
            if nxt == rows[t] and c.actor == a:
                return c.step
        raise AssertionError("a graph edge no compiled step takes")  # pragma: no cover

    prefix = [] if init == entry else graph_path(
        succ, init, lambda u, t, a: t == entry, lambda u, t, a: True)[0]
    cycle = fair_cycle(succ, enabled, comp, nag)
    return [step_id(*e) for e in prefix + cycle], len(prefix)
