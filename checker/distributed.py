"""The explicit engine's search spread over Dask workers (issue 26 item 3).

``check_distributed`` is ``explicit.check_explicit``'s breadth-first search with the state
space partitioned by hash: each of ``P`` partitions (a Dask actor on one worker process,
or a plain object in this process when no client is given) owns the states whose stable
hash maps to it, stores them as the explicit engine does (``Explorer``'s packed states,
the component intern table local to the partition), and expands its part of the
frontier with ``Explorer.successors`` -- the model's own transition functions; no rule is
written again here.  One level at a time: every partition expands its frontier, keeps
the successors it owns and sends the others, as tuples of component values (component
numbers are local to a process), to their owners through the client; then the client
looks at the level's candidate violations.

Soundness, as in the single-process engine:

* PROVEN only when every partition has expanded every state it owns and the frontier is
  empty everywhere (the whole reachable state space, up to the same reductions); a state
  or time limit makes the answer UNKNOWN.
* A violation is reported only at the end of a level, the shortest one with the first
  property of the catalogue among those of that length (``properties.PRIORITY``), so the
  verdict does not depend on the number of partitions or on which worker answers first.
  Its step list is rebuilt from parent links (partition, index) and replayed through the
  concrete model (``Explorer.replay``) into the same ``Trace`` every engine returns.
* Warp symmetry sorts interchangeable warps by the *value* of their components (their
  ``repr``), not by component numbers, which differ from process to process; the number
  of classes -- hence the state count -- is the explicit engine's.
* With the partial-order reduction (``por.stubborn_sets``) the reduced counterexample is
  shortened and confirmed shortest by an unreduced search bounded to its length, exactly
  as ``check_explicit`` does.  The full stubborn-set computation chooses seeds by how
  often they won before (per partition), so its reduced state count may differ from the
  single process's; verdicts do not.
* Where some warp loops for ever, the starvation analysis needs the whole graph: the
  partitions record every edge and the client gathers states and edges at the end and
  runs the explicit engine's analysis (``explicit._find_starvation``) -- the memory of one
  machine again, for that case only.

The frontier exchange goes through the client (a star), which is simple and right for a
``LocalCluster``; on a real multi-host cluster it is the bottleneck to remove next.
Dask is optional (``pip install pipeproof[dask]``): ``DaskUnavailable`` says so.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..model.errors import option
from ..model.program import is_acyclic
from ..model.system import System
from .errors import SetupTimeout
from .explicit import (CONFIRM_TIMEOUT, _find_starvation, confirmed, drop_needless_steps,
                       por_auto, report_graph_lasso, unconfirmed)
from .por import stubborn_sets
from .properties import DEADLOCK_MSG, PRIORITY
from .statespace import Explorer, symmetric_groups
from .verdict import PROVEN, UNKNOWN, VIOLATED, Stats, Verdict, state_limit_reason

#: with a Dask client, levels run in the client process until one would hold this many
#: states (``check_distributed``'s ``warm_states``)
WARM_STATES = 1000

#: a global state id: (partition, index in that partition)
Gid = tuple[int, int]


class DaskUnavailable(RuntimeError):
    """Dask (``dask[distributed]``) is not installed, or the scheduler cannot be reached."""


def require_dask() -> Any:
    """The ``distributed`` module, or ``DaskUnavailable`` with what to install."""
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable(f"{option('dask')} needs Dask, which is not installed: "
                              "pip install 'pipeproof[dask]' (dask[distributed])") from None
    return distributed


def connect(address: Optional[str] = None) -> Any:
    """A Dask client: ``None`` or ``local`` -- a ``LocalCluster`` of one single-threaded
    worker process per CPU; ``local:N`` -- N worker processes; anything else -- the
    address of a running scheduler (``tcp://host:8786``)."""
    distributed = require_dask()
    addr = address or "local"
    if addr == "local" or addr.startswith("local:"):
        n: Optional[int] = None
        if addr.startswith("local:"):
            try:
                n = int(addr.split(":", 1)[1])
            except ValueError:
                n = 0
            if n < 1:
                raise DaskUnavailable(f"{option('dask', addr)}: local:N needs N >= 1 "
                                      "workers")
        import os

        n = n or max(os.cpu_count() or 1, 1)
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
        # a loaded machine may register a worker after the client connects: a search
        # started then would use fewer partitions than asked for
        try:
            client.wait_for_workers(n, timeout=600)
        except TimeoutError:
            close(client)
            raise DaskUnavailable(f"{option('dask', addr)}: {n} local worker processes "
                                  "did not start within 600 s") from None
        return client
    try:
        return distributed.Client(addr, timeout=20)
    except (OSError, TimeoutError, ValueError) as e:
        raise DaskUnavailable(f"{option('dask', addr)}: cannot reach the Dask scheduler "
                              f"({e})") from None


def close(client: Any) -> None:
    """Close a client from ``connect`` and the local cluster it started, if any."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


class PortableExplorer(Explorer):
    """``Explorer`` whose symmetry representative does not depend on the process: warps
    of a symmetric group are sorted, and the states renamed by CTAs compared, by the
    ``repr`` of their component tuples instead of by component numbers (interned in
    visiting order, so different in every partition).  Any total order on the components gives one representative per class,
    so the state count is the explicit engine's; the client replays with this class too,
    so the steps' warp positions mean the same thing everywhere."""

    def _keys(self) -> list[str]:
        keys: list[str] = self.__dict__.setdefault("_ckeys", [])
        table = self.packer.table
        while len(keys) < len(table):
            keys.append(repr(table[len(keys)]))
        return keys

    def _component_keys(self) -> list[str]:
        return self._keys()

    # ----------------------------------------------------------- process-free states

    def portable(self, st: tuple) -> tuple:
        """The state as component values (component numbers are this process's)."""
        table = self.packer.table
        return tuple([table[c] for c in st])

    def local(self, comps: tuple) -> tuple:
        intern = self.packer.intern
        return tuple([intern(c) for c in comps])

    def owner(self, st: tuple, parts: int) -> int:
        """Which partition owns ``st``: a hash of its components' ``repr`` (Python's
        own hash of strings changes from process to process)."""
        if parts == 1:
            return 0
        hs: list[int] = self.__dict__.setdefault("_chash", [])
        table = self.packer.table
        while len(hs) < len(table):
            hs.append(zlib.crc32(repr(table[len(hs)]).encode()))
        h = 0
        for c in st:
            h = (h * 1_000_003 ^ hs[c]) & 0xFFFFFFFFFFFF
        return h % parts


def make_explorer(system: System, symmetry: bool, por: Optional[bool],
                  deadline: float) -> PortableExplorer:
    """The explorer every partition and the client use (``por=None``: no reduction
    besides symmetry; else ``stubborn_sets(full=por)``)."""
    red = None if por is None else stubborn_sets(full=por, deadline=deadline)
    return PortableExplorer(system, symmetry=symmetry, reduction=red, cta_symmetry=symmetry)


class Partition:
    """The states one worker owns, their parent links and its part of the frontier.

    A Dask actor (``client.submit(Partition, ..., actor=True)``) or a plain object."""

    def __init__(self, system: System, me: int, parts: int, symmetry: bool,
                 por: Optional[bool], deadline: float, graph: bool,
                 ex: Optional[PortableExplorer] = None):
        # ``ex``: an explorer shared by the partitions of one process (the client's
        # first levels); a worker's partition builds its own
        self.ex = ex if ex is not None else make_explorer(system, symmetry, por, deadline)
        self.me, self.parts = me, parts
        self.index: dict[tuple, int] = {}
        self.states: list[tuple] = []
        #: per state: (parent partition, parent index, step); (-1, -1, None) for the root
        self.parent: list[tuple[int, int, Any]] = []
        self.frontier: list[int] = []
        self.next: list[int] = []
        #: with ``graph``: every edge into a state of this partition, (src gid, dst, actor)
        self.edges: Optional[list[tuple[int, int, int, tuple]]] = [] if graph else None
        self.received = 0

    def ready(self) -> bool:
        return True

    def initial(self) -> tuple:
        """The initial state (portable) and the partition that owns it."""
        return self.ex.owner(self.ex.orbit_key(self.ex.initial), self.parts), \
            self.ex.portable(self.ex.initial)

    def _add(self, st: tuple, src: tuple[int, int], step: Any) -> None:
        k = self.ex.orbit_key(st)
        i = self.index.get(k)
        if i is None:
            i = self.index[k] = len(self.states)
            self.states.append(st)
            self.parent.append((src[0], src[1], step))
            self.next.append(i)
        if self.edges is not None and src[0] >= 0:
            self.edges.append((src[0], src[1], i, _actor(step)))

    def seed(self, comps: tuple) -> None:
        """The initial state: the first level's frontier."""
        self._add(self.ex.local(comps), (-1, -1), None)

    def level(self, inbox: list[tuple[int, list]], depth: int, depth_limit: Optional[int],
              deadline: float
              ) -> tuple[dict[int, list], list[tuple], int, bool, int, int, int]:
        """One level in one call (one round trip): take the states other partitions sent
        (``receive``), make the next level the frontier (``advance``) and expand it
        (``expand``).  Returns ``expand``'s answer plus the states owned, the size of the
        frontier expanded and the next level's states found here so far."""
        self.receive(inbox)
        owned, front = self.advance()
        out, cands, transitions, complete = self.expand(depth, depth_limit, deadline)
        return out, cands, transitions, complete, len(self.states), front, len(self.next)

    def dump(self) -> tuple:
        """Everything this partition holds, process-free (``load`` takes it)."""
        return ([self.ex.portable(st) for st in self.states], self.parent, self.frontier,
                self.next, self.edges, self.received)

    def load(self, dumped: tuple) -> int:
        """Take over a partition of another process (same index, same owner function:
        every state keeps its index, so parent links stay valid)."""
        comps, self.parent, self.frontier, self.next, self.edges, self.received = dumped
        local = self.ex.local
        self.states = [local(c) for c in comps]
        key = self.ex.orbit_key
        self.index = {key(st): i for i, st in enumerate(self.states)}
        return len(self.states)

    def expand(self, depth: int, depth_limit: Optional[int], deadline: float
               ) -> tuple[dict[int, list], list[tuple], int, bool]:
        """Expand this partition's frontier (states of depth ``depth``).  Returns the
        successors other partitions own (per owner: (portable state, parent index,
        step)), the candidate violations (length, rank, gid, last step or None for a
        deadlock, violation), the transitions taken, and False if ``deadline`` passed
        before the whole frontier was expanded."""
        ex, me, parts = self.ex, self.me, self.parts
        out: dict[int, list] = {}
        cands: list[tuple] = []
        transitions = 0
        expand = depth_limit is None or depth < depth_limit
        for k, si in enumerate(self.frontier):
            if k % 64 == 0 and time.time() > deadline:
                return out, cands, transitions, False
            state = self.states[si]
            any_succ = False
            for step, nxt, viol in (ex.successors(state) if expand else ()):
                any_succ = True
                transitions += 1
                if viol is not None:
                    cands.append((depth + 1, PRIORITY.get(viol[0], 99), (me, si), step, viol))
                    continue
                o = ex.owner(ex.orbit_key(nxt), parts)
                if o == me:
                    self._add(nxt, (me, si), step)
                else:
                    out.setdefault(o, []).append((ex.portable(nxt), si, step))
            if expand and not any_succ and not ex.all_done(state):
                cands.append((depth, PRIORITY.get("deadlock", 99), (me, si), None,
                              ("deadlock", DEADLOCK_MSG)))
        return out, cands, transitions, True

    def receive(self, batches: list[tuple[int, list]]) -> int:
        """Successors from other partitions: (sender, [(portable, parent index, step)])."""
        n0 = len(self.states)
        local = self.ex.local
        for src, items in batches:
            for comps, pi, step in items:
                self._add(local(comps), (src, pi), step)
            self.received += len(items)
        return len(self.states) - n0

    def advance(self) -> tuple[int, int]:
        """The next level becomes the frontier; returns (states owned, frontier size)."""
        self.frontier, self.next = self.next, []
        return len(self.states), len(self.frontier)

    def link(self, i: int) -> tuple[int, int, Any]:
        return self.parent[i]

    def state(self, i: int) -> tuple:
        return self.ex.portable(self.states[i])

    def counts(self) -> tuple[int, int]:
        return len(self.states), self.received

    def graph(self) -> tuple[list[tuple], list[tuple[int, int, int, tuple]]]:
        """Every state (portable) and every edge into them (``graph``)."""
        return [self.ex.portable(s) for s in self.states], list(self.edges or [])


def _actor(step: Any) -> tuple:
    return ("a", step[1]) if step[0] == "a" else ("e", step[1])


@dataclass(frozen=True)
class _Call:
    """A call on an in-process partition, answered at once (``.result()`` as an actor's)."""

    value: Any

    def result(self) -> Any:
        return self.value


class _InProcess:
    """A partition in this process with the call interface of a Dask actor."""

    def __init__(self, part: Partition):
        self._p = part

    def __getattr__(self, name: str) -> Callable[..., _Call]:
        fn = getattr(self._p, name)
        return lambda *a: _Call(fn(*a))


def check_distributed(system: System, client: Any = None, partitions: Optional[int] = None,
                      max_states: int = 2_000_000, timeout: float = 600.0,
                      progress: Optional[Callable[[int, int, float], None]] = None,
                      reduce: bool = True, por: Optional[bool] = None,
                      confirm_timeout: float = CONFIRM_TIMEOUT,
                      warm_states: int = WARM_STATES) -> Verdict:
    """Exhaustive breadth-first search, hash-partitioned (module docstring).

    ``client``: a Dask client (``connect``); one partition per worker (``partitions``
    overrides), each an actor on its worker.  Without a client, ``partitions`` plain
    partitions in this process (default 1): the same algorithm, for tests and as the
    single-process reference.  ``reduce``, ``por`` and ``confirm_timeout``: as
    ``check_explicit``'s, with the same verdicts.  ``warm_states`` (with a client): the
    first levels run in this process, partitioned the same way, until a level would
    hold this many states; then the partitions move to the workers, state for state (a
    level costs a round trip to every worker, which small levels do not repay; 0: on
    the workers from the first level)."""
    t0 = time.perf_counter()
    if por is None:
        por = por_auto(system)
    deadline = time.time() + timeout
    cyclic = not all(is_acyclic(ag.program.code) for ag in system.agents)
    symmetry = reduce
    if cyclic and symmetric_groups(system):
        # the starvation search follows each warp along cycles: no permuted warps
        symmetry = False
    # the reductions of check_explicit: none where some warp loops (Explorer)
    reduction = por if (reduce and not cyclic) else None
    # the client's explorer only replays: no reduction to prepare
    ex = make_explorer(system, symmetry, None, deadline)
    if client is not None:
        # ``nthreads`` asks the scheduler now; ``scheduler_info`` is the client's copy,
        # refreshed every few seconds, and misses a worker that registered since
        nparts = partitions or max(len(client.nthreads()), 1)
    else:
        nparts = partitions or 1
    try:
        v = _search(system, client, nparts, symmetry, reduction, ex, deadline, warm_states,
                    max_states, None, progress, t0, timeout)
    except SetupTimeout as e:
        return _unknown(f"timeout after {timeout:.0f} s while preparing {e}", t0)
    except Exception as e:  # noqa: BLE001 -- only a lost worker or connection, see _lost
        if not _lost(e):
            raise
        return _unknown(f"a Dask worker or the connection to it was lost ({e})", t0)
    if v.status == VIOLATED and reduction is not None and v.prop != "starvation":
        # as check_explicit: drop needless steps, then confirm with an unreduced search
        # bounded to the counterexample's length
        v = drop_needless_steps(system, v)
        if confirm_timeout <= 0:
            return unconfirmed(v, t0)
        budget = min(max(timeout - (time.perf_counter() - t0), 1.0), confirm_timeout)
        try:
            w = _search(system, client, nparts, symmetry, None, ex, time.time() + budget,
                        warm_states, max_states, v.depth, None, time.perf_counter(), budget)
        except Exception as e:  # noqa: BLE001 -- as above
            if not _lost(e):
                raise
            w = _unknown(f"a Dask worker or the connection to it was lost ({e})", t0)
        return confirmed(v, w, t0)
    v.stats.seconds = time.perf_counter() - t0
    return v


def _search(system: System, client: Any, nparts: int, symmetry: bool, por: Optional[bool],
            ex: PortableExplorer, deadline: float, warm_states: int, max_states: int,
            depth_limit: Optional[int], progress: Optional[Callable[[int, int, float], None]],
            t0: float, timeout: float) -> Verdict:
    """One search, its partitions released at the end whatever happens."""
    search = _Search(system, client, nparts, symmetry, por, ex, deadline, warm_states)
    try:
        return search.run(max_states, depth_limit, progress, t0, timeout)
    finally:
        search.release()


def _lost(e: BaseException) -> bool:
    """A Dask worker died or a connection broke (not a bug of ours: UNKNOWN)."""
    return (isinstance(e, (OSError, TimeoutError)) or
            type(e).__name__ in ("KilledWorker", "CommClosedError", "CancelledError",
                                 "FutureCancelledError"))


def _unknown(reason: str, t0: float) -> Verdict:
    st = Stats(engine="distributed")
    st.seconds = time.perf_counter() - t0
    return Verdict(UNKNOWN, reason=reason, stats=st, depth=0)


class _Search:
    """One level-synchronous search over ``nparts`` partitions."""

    def __init__(self, system: System, client: Any, nparts: int, symmetry: bool,
                 por: Optional[bool], ex: PortableExplorer, deadline: float,
                 warm_states: int = 0):
        self.sys, self.ex, self.nparts = system, ex, nparts
        self.graph = ex.cyclic
        self.futures: list[Any] = []
        self.remote: list[Any] = []
        self.warm_states = warm_states
        args = (nparts, symmetry, por, deadline, self.graph)
        if client is None:
            self.parts: list[Any] = [_InProcess(Partition(system, i, *args))
                                     for i in range(nparts)]
            return
        workers = list(client.scheduler_info()["workers"])
        if not workers:
            raise DaskUnavailable("the Dask scheduler has no workers")
        # held until the search ends: the actors may still be starting (a released
        # dependency cancels them); never shared with another search's (hash=False)
        self.sys_future = client.scatter(system, broadcast=True, hash=False)
        # the actors start on the workers while the client runs the first levels
        self.futures = [client.submit(Partition, self.sys_future, i, *args, actor=True,
                                      workers=[workers[i % len(workers)]], pure=False)
                        for i in range(nparts)]
        if warm_states > 0:
            shared = make_explorer(system, symmetry, por, deadline)
            self.parts = [_InProcess(Partition(system, i, *args, ex=shared))
                          for i in range(nparts)]
        else:
            self.parts = self._actors()

    def _actors(self) -> list[Any]:
        if not self.remote:
            self.remote = [f.result() for f in self.futures]
            for p in self.remote:
                p.ready().result()
        return self.remote

    def _move_to_workers(self) -> None:
        """The client's partitions move to the workers' actors, state for state."""
        remote = self._actors()
        calls = [r.load(p.dump().result()) for r, p in zip(remote, self.parts)]
        for c in calls:
            c.result()
        self.parts = remote

    def release(self) -> None:
        for f in self.futures:
            f.release()
        if self.futures:
            self.sys_future.release()
        self.futures = []
        self.parts = []
        self.remote = []

    def path(self, gid: Gid) -> list:
        steps = []
        p, i = gid
        while True:
            pp, pi, step = self.parts[p].link(i).result()
            if pp < 0:
                break
            steps.append(step)
            p, i = pp, pi
        steps.reverse()
        return steps

    def run(self, max_states: int, depth_limit: Optional[int],
            progress: Optional[Callable[[int, int, float], None]], t0: float,
            timeout: float) -> Verdict:
        ex, parts, n = self.ex, self.parts, self.nparts
        stats = Stats(engine="distributed")
        stats.extra["partitions"] = n
        if self.futures:
            stats.extra["levels_in_client"] = 0 if self.parts is self.remote else None
        owner, init = parts[0].initial().result()
        parts[owner].seed(init).result()
        counts = [0] * n
        deadline = time.time() + max(timeout - (time.perf_counter() - t0), 0.0)
        depth = 0
        max_depth = 0
        transitions = 0
        sent = 0

        def finish(v: Verdict) -> Verdict:
            if self.futures and stats.extra.get("levels_in_client") is None:
                # never more than warm_states states a level: the workers were not needed
                stats.extra["levels_in_client"] = max_depth + 1
            stats.states = sum(counts)
            stats.transitions = transitions
            stats.depth = max_depth
            stats.seconds = time.perf_counter() - t0
            stats.extra["states_per_partition"] = list(counts)
            stats.extra["states_sent"] = sent
            stats.extra["symmetric_groups"] = [len(g) for g in ex.groups]
            if ex.cta_perms:
                stats.extra["cta_automorphisms"] = len(ex.cta_perms) + 1
            v.stats = stats
            return v

        inbox: list[list[tuple[int, list]]] = [[] for _ in range(n)]
        while True:
            # level ``depth``: every partition takes what was sent to it and expands
            calls = [p.level(inbox[i], depth, depth_limit, deadline)
                     for i, p in enumerate(parts)]
            results = [c.result() for c in calls]
            counts = [r[4] for r in results]
            if not any(r[5] for r in results):
                break  # nothing at this depth: every reachable state was expanded
            max_depth = depth
            complete = all(r[3] for r in results)
            transitions += sum(r[2] for r in results)
            cands = [c for r in results for c in r[1]]
            if cands:
                # the level is finished everywhere: a shortest violation, first in the
                # catalogue among equals; ties broken by gid, never by arrival order.  A
                # deadlock (length = depth) is shortest even in an unfinished level (a
                # shorter violation would have ended the level before); another one is
                # a real run but perhaps not a shortest
                length, _rank, gid, step, viol = min(cands, key=lambda c: c[:3])
                v = self._report(gid, step, viol)
                if not (complete or length <= depth):
                    v.stats.extra["shortest"] = False
                return finish(v)
            if not complete:
                return finish(Verdict(UNKNOWN, reason=f"timeout after {timeout:.0f} s with "
                                      f"{sum(counts)} states explored to depth {max_depth}",
                                      depth=max_depth))
            inbox = [[] for _ in range(n)]
            for src, r in enumerate(results):
                for dst, items in r[0].items():
                    inbox[dst].append((src, items))
                    sent += len(items)
            if parts is not self.remote and self.futures:
                # the next level's size, at most: what stays and what is sent
                coming = sum(r[6] for r in results) + sum(
                    len(items) for box in inbox for _src, items in box)
                if coming >= self.warm_states:
                    self._move_to_workers()
                    parts = self.parts
                    stats.extra["levels_in_client"] = depth + 1
                    stats.extra["states_moved"] = sum(counts)
            total = sum(counts)
            if total > max_states:
                return finish(Verdict(UNKNOWN, reason=state_limit_reason(
                    max_states, depth + 1), depth=depth + 1))
            if progress is not None:
                progress(total, max_depth, time.perf_counter() - t0)
            depth += 1
        if depth_limit is not None:
            return finish(Verdict(PROVEN, depth=max_depth, bounded=True))
        if self.graph:
            v = self._starvation(counts)
            if v is not None:
                stats.extra.update(v.stats.extra)
                return finish(v)
        return finish(Verdict(PROVEN, depth=max_depth, bounded=False))

    def _report(self, gid: Gid, step: Any, viol: tuple) -> Verdict:
        ex = self.ex
        steps = self.path(gid)
        if step is None:  # a deadlock in state gid
            stuck = ex.local(self.parts[gid[0]].state(gid[1]).result())
            trace = ex.replay(steps, None, stuck_state=stuck)
            trace.violated, trace.detail = viol
        else:
            steps.append(step)
            trace = ex.replay(steps, viol)
        return Verdict(VIOLATED, viol[0], trace.detail or viol[1], trace, depth=len(steps))

    def _starvation(self, counts: list[int]) -> Optional[Verdict]:
        """The explicit engine's starvation analysis over the gathered graph."""
        ex = self.ex
        gathered = [p.graph() for p in self.parts]
        offset = [0] * self.nparts
        for p in range(1, self.nparts):
            offset[p] = offset[p - 1] + counts[p - 1]
        states: list[tuple] = []
        for comps, _edges in [g.result() for g in gathered]:
            states.extend(ex.local(c) for c in comps)
        succ: list[list[tuple[int, Any]]] = [[] for _ in states]
        for p, g in enumerate(gathered):
            for sp, si, di, actor in g.result()[1]:
                succ[offset[sp] + si].append((offset[p] + di, actor))
        lasso = _find_starvation(ex, states, succ)
        if lasso is None:
            return None
        entry, cycle_steps = lasso
        p = next(q for q in range(self.nparts)
                 if offset[q] <= entry < offset[q] + counts[q])
        return report_graph_lasso(ex, self.path((p, entry - offset[p])), cycle_steps)


__all__ = ["check_distributed", "connect", "close", "require_dask", "DaskUnavailable",
           "PortableExplorer", "Partition"]
