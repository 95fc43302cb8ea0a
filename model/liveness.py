"""Which variables a path of the flow graph may still read (structured compilation).

The compiler specialises the flow graph per warp and shares the code of two paths that
reach a join node with equal environments (``model/compile.py`` ``_Compiler._run``).
Under structured compilation a run-time loop leaves a different pipeline state on each
of its exits (one per copy of its body), so everything after it -- an epilogue, the
drain of the last stages -- is compiled once per exit even where no later statement
reads those states: the kernel's last tile, say, after which nothing reads the mainloop
state.  Dropping the variables no path from the join reads makes those copies one.

The analysis is the textbook backward one (a name is live at a node if some path from
it reads the name), over the flow graph with one refinement that matters here: a loop
over compile-time values whose current iteration is its last does not go round again,
so its back edge is replaced by its exit (``last``; the loop's test is still evaluated).  Definitions are not used to kill
liveness (a name assigned before it is read counts as live): coarser, never wrong.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Callable, Iterable

from . import ir
from .program import DynExpr, dyn_args


class Liveness:
    """Live names per flow-graph node, for each set of loops in their last iteration."""

    def __init__(self, nodes: list, names_in: Callable[[Any], frozenset]) -> None:
        self.nodes = nodes
        self.names_in = names_in
        #: loop head -> (its For, its increment node, its exit node, its body's nodes)
        self.loops: dict[int, tuple[ir.For, int, int, frozenset]] = {}
        for h, n in enumerate(nodes):
            if n.kind == "branch" and isinstance(n.cond, tuple) and n.cond[0] == "for":
                f = n.cond[1]
                incr = next(i for i, m in enumerate(nodes)
                            if m.loop is f and m.next == h and isinstance(m.stmt, ir.AugAssign))
                self.loops[h] = (f, incr, n.orelse, self._body(h, n.then, n.orelse))
        #: loops whose counter or bound the body may change: never taken as last
        self.unsteady = {h for h, (f, _i, _a, body) in self.loops.items()
                         if self._assigned(body, exclude=self.loops[h][1])
                         & ({f.var} | self.names_in((f.stop, f.step)))}
        self.around = [frozenset(h for h, lp in self.loops.items() if i in lp[3])
                       for i in range(len(nodes))]
        self._cache: dict[frozenset, list[frozenset]] = {}

    def _body(self, head: int, entry: int, after: int) -> frozenset:
        seen: set[int] = set()
        stack = [entry]
        while stack:
            i = stack.pop()
            if i < 0 or i in seen or i in (head, after):
                continue
            seen.add(i)
            n = self.nodes[i]
            if n.kind == "end":
                continue
            stack.extend((n.next, n.then, n.orelse))
        return frozenset(seen)

    def _assigned(self, body: Iterable[int], exclude: int) -> set:
        out: set = set()
        for i in body:
            s = self.nodes[i].stmt
            if i == exclude:
                continue
            if isinstance(s, ir.Assign):
                out |= set(s.targets)
            elif isinstance(s, ir.AugAssign):
                out.add(s.target)
        return out

    def uses(self, i: int) -> frozenset:
        n = self.nodes[i]
        if n.kind == "stmt":
            s = n.stmt
            extra = frozenset((s.target,)) if isinstance(s, ir.AugAssign) else frozenset()
            return self.names_in(s) | extra
        if n.kind == "branch":
            if isinstance(n.cond, tuple) and n.cond[0] == "for":
                f = n.cond[1]
                return frozenset((f.var,)) | self.names_in((f.stop, f.step))
            return self.names_in(n.cond)
        if n.kind == "role_enter":
            return self.names_in((n.role.warps, n.role.ctas))
        if n.kind == "elect_enter":
            return self.names_in(n.stmt)
        # ``order`` nodes read PipelineOrder objects only, which the compiler never drops
        return frozenset()

    def successors(self, i: int, last: frozenset) -> list[int]:
        n = self.nodes[i]
        for h in last:
            if self.loops[h][1] == i:  # the last iteration's increment leaves the loop
                return [self.loops[h][2]]
        return [t for t in (n.next, n.then, n.orelse) if t >= 0]

    def live(self, node: int, last: frozenset) -> frozenset:
        """Names some path from ``node`` may read, the loops ``last`` not going round."""
        table = self._cache.get(last)
        if table is None:
            table = self._solve(last)
            self._cache[last] = table
        return table[node]

    def _solve(self, last: frozenset) -> list[frozenset]:
        n = len(self.nodes)
        uses = [self.uses(i) for i in range(n)]
        for h in last:  # the increment still goes through the test that ends the loop
            uses[self.loops[h][1]] = uses[self.loops[h][1]] | uses[h]
        succ = [self.successors(i, last) for i in range(n)]
        live = [frozenset()] * n
        changed = True
        while changed:
            changed = False
            for i in reversed(range(n)):
                new = uses[i].union(*[live[s] for s in succ[i]])
                if new != live[i]:
                    live[i] = new
                    changed = True
        return live


def mentions_arg(v: Any, depth: int = 0) -> bool:
    """Might a compile-time value hold a run-time kernel argument somewhere inside?
    (``True`` when unsure: deeper than a few levels.)"""
    if depth > 8:
        return True
    if isinstance(v, DynExpr):
        return bool(dyn_args(v))
    if isinstance(v, (tuple, list, frozenset, set)):
        return any(mentions_arg(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(mentions_arg(x, depth + 1) for x in v.values())
    if is_dataclass(v) and not isinstance(v, type):
        return any(mentions_arg(getattr(v, f.name), depth + 1) for f in fields(v))
    return False
