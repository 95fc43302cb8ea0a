"""Graph algorithms on finite state graphs (a leaf: nothing of the engines).

Both engines decide starvation on a state graph -- the explicit engine on its own, the BMC
certificate on the encoding's (``checker/evalgraph.py``) -- with the same three
functions: ``starving_component`` (the fair strongly connected component in which a warp
never gets past its wait), ``graph_path`` (a shortest path) and ``fair_cycle`` (the
closed walk that shows the starvation).  A graph is ``succ[v]``: the (target, actor)
pairs of state ``v``, actor ``("a", warp)`` or ``("e", item)``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..model.system import DONE

Edge = tuple[int, int, tuple]  # (source, target, actor) of a state graph


def sccs(nodes: list[int], adj: dict[int, list[int]]) -> list[list[int]]:
    """Strongly connected components of the graph ``adj`` restricted to ``nodes``
    (iterative Tarjan)."""
    inside = set(nodes)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            edges = adj.get(v, ())
            recurse = False
            while i < len(edges):
                w = edges[i]
                i += 1
                if w not in inside:
                    continue
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out


def starving_component(nag: int, pc: Callable[[int, int], int], polls: list[set[int]],
                       succ: list[list[tuple[int, Any]]], enabled: list[set]
                       ) -> Optional[tuple[int, int, set[int], set, set[int]]]:
    """The decision of ``explicit._find_starvation`` on any finite graph: states ``0..n-1``,
    ``succ[v]`` its (target, actor) pairs, ``enabled[v]`` the actors with a step there,
    ``pc(v, w)`` warp ``w``'s program counter in state ``v`` and ``polls[w]`` its polling
    pcs.  Returns (entry, starving warp, component, actors moving inside it, the states
    where the warp polls) for the fair component with the smallest entry, or None when
    no fair cycle starves a warp (the BMC certificate's graph uses it too,
    ``checker/certificate.py``)."""
    best: Optional[tuple] = None
    for w in range(nag):
        alive = [v for v in range(len(succ)) if pc(v, w) != DONE]
        if not alive:
            continue
        # w's moves that are polls (try_wait/try_acquire) stay: spinning is waiting
        wpoll = {v for v in alive if pc(v, w) in polls[w]}
        adj = {v: [t for t, a in succ[v] if a != ("a", w) or v in wpoll] for v in alive}
        work = sccs(alive, adj)
        while work:
            comp = work.pop()
            cset = set(comp)
            internal = {a for v in comp for t, a in succ[v]
                        if t in cset and (a != ("a", w) or v in wpoll)}
            if not internal:
                continue  # a single state without a self-loop: not a cycle
            # strong fairness of asynchronous completions
            unfair_env = {a for v in comp for a in enabled[v]
                          if a[0] == "e" and a not in internal}
            if unfair_env:
                keep = [v for v in comp if not (enabled[v] & unfair_env)]
                work.extend(sccs(keep, adj))
                continue
            # weak fairness of warps (w included: it must be blocked somewhere)
            if any(all(("a", a) in enabled[v] for v in comp)
                   for a in range(nag) if ("a", a) not in internal):
                continue
            entry = min(comp)
            if best is None or entry < best[0]:
                best = (entry, w, cset, internal, wpoll)
            break
    return best



def graph_path(succ: list[list[tuple[int, Any]]], src: int,
               goal: Callable[[int, int, tuple], bool],
               allowed: Callable[[int, int, tuple], bool]) -> tuple[list[Edge], int]:
    """Shortest edge path from ``src`` over ``allowed`` edges whose last edge satisfies
    ``goal(source, target, actor)`` (edges tried in ``succ`` order); returns (edges, end
    state)."""
    prev: dict[int, Edge] = {}
    frontier, seen = [src], {src}
    while frontier:
        nxt_frontier = []
        for u in frontier:
            for t, a in succ[u]:
                if not allowed(u, t, a):
                    continue
                if goal(u, t, a):
                    path = [(u, t, a)]
                    v = u
                    while v != src:
                        path.append(prev[v])
                        v = prev[v][0]
                    return path[::-1], t
                if t not in seen:
                    seen.add(t)
                    prev[t] = (u, t, a)
                    nxt_frontier.append(t)
        frontier = nxt_frontier
    raise AssertionError("no path in the graph")  # pragma: no cover


def fair_cycle(succ: list[list[tuple[int, Any]]], enabled: list[set], comp: tuple,
               nag: int) -> list[Edge]:
    """The closed walk through ``comp`` (``starving_component``'s answer) that shows the
    starvation: from the entry, inside the component and without a move of the starving
    warp ``w`` except polls, one move of every actor that moves inside, then, for every
    warp that does not, a state where it is disabled, then back to the entry -- a fair
    cycle.  Both engines build their lasso with it (the explicit engine on its graph,
    BMC on the certified one, ``evalgraph.graph_lasso``)."""
    entry, w, cset, internal, wpoll = comp

    def inside(u: int, t: int, a: tuple) -> bool:
        return t in cset and (a != ("a", w) or u in wpoll)

    targets: list[tuple[str, Any]] = [("edge", a) for a in sorted(internal, key=repr)]
    targets += [("off", a) for a in range(nag) if ("a", a) not in internal]
    edges: list[Edge] = []
    cur = entry
    for kind, what in targets + [("home", None)]:
        if kind == "off" and ("a", what) not in enabled[cur]:
            continue  # already where the warp is disabled
        if kind == "edge":
            goal = (lambda what: lambda u, t, a: a == what)(what)
        elif kind == "off":
            goal = (lambda what: lambda u, t, a: ("a", what) not in enabled[t])(what)
        else:
            goal = lambda u, t, a: t == entry  # noqa: E731
        path, cur = graph_path(succ, cur, goal, inside)
        edges += path
    return edges
