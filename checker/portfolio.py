"""The default engine (``--engine auto``): a quick explicit search, BMC first, the explicit
engine where BMC's certificate does not decide, BMC's unrolling where neither has.

The quick stage (``quick_search``) comes before all of them: the explicit engine, in this
process, bounded to ``QUICK_STATES`` states and ``QUICK_SECONDS`` seconds of CPU time.
Where it finishes -- PROVEN, or a counterexample confirmed shortest -- its verdict is the
answer and no other process starts; else the stages below run as they would without it.
On the small kernels of the SPIN benchmark the whole search takes 10-200 ms, while z3's
import, the certificate's encoding and the second process cost 0.5-1 s of CPU before
the certificate answers, and an explicit verdict waits out ``HEAD_START``
(``bench/results/spin.md``).  Its verdict is the explicit engine's, as sound as when
that engine decides in the race; the verdict, property and counterexample length are
those the certificate would give (``tests/test_portfolio_quick.py``), only the line
saying which engine decided differs.  Whether it finishes within ``QUICK_SECONDS`` can
depend on the machine's speed, as which racing stage decides does.  There is no quick
stage where the explicit engine runs with stubborn sets (clusters of several CTAs, CTAs
of ``POR_AUTO_WARPS`` warps or more): their preparation alone can take longer than the
budget, and in the race the explicit engine decides those kernels first anyway.

Why this order (``bench/results/bmc.md``, 47 runs of 30 s): BMC's certificate
(``checker/certificate.py``) decides 39 of them -- PROVEN without unrolling, or the
shortest counterexample from the certified states -- and it is a proof over the z3
encoding that does not trust the explicit engine's reductions.  Where the unreduced
enumeration behind it does not finish (multicast clusters, the kernel skeletons K1-K5,
p9) the unrolling decided one (p9-bug, not confirmed shortest) in 30 s, while the
explicit engine, with its symmetry and partial-order reductions, decides every one of
them (K3 in 29-45 s, the others in under 25 s).  And where
the explicit engine gives up (``--max-states``, ``--timeout``) on a state space too
large to enumerate, the unrolling may still find a shallow counterexample, so it gets
the time that is left.

Every stage is one of the engines, unchanged; the verdict is the first stage's that
decides (VIOLATED or PROVEN; a bounded SAFE of the unrolling too, at the end), with
``stats.extra["auto"]`` saying what each earlier stage answered and how long it took.

With ``jobs >= 2`` (the default where the process may use two CPUs and can fork) the
two first stages race, each in a forked process: BMC's certificate gets a head start of
``HEAD_START`` seconds -- an explicit verdict that comes sooner waits for it, so where
the certificate decides that fast (most textbook and bug examples) the answer is the
sequential one -- and after it the first of the two to decide wins; the certificate
stage is then stopped and its line says so.  Measured (``bench/results/bmc.md``): the
examples whose certificate takes 5-13 s (p4, p5, p10-fixed, pipeline_umma_async) and
those it cannot decide (multicast, K1, K2, K5, p9-fixed) answer in 2-4 s.  Which stage
decides can then depend on the machine's speed; the verdict, the property and the
counterexample length do not (``tests/test_portfolio.py``).  ``jobs=1`` keeps the
sequential order, one answer for every run.

Racing, the CPU the certificate leaves when it gives up goes to the native engine
(``checker/native/``: the explicit engine's search in C, with its warp and CTA symmetry
but none of its other reductions), alongside the explicit engine: the first of the two to decide
wins and the other is stopped.  Both verdicts are sound on their own (the native
engine's counterexamples are breadth-first, so shortest, and replayed on the concrete
model); where the explicit engine's partial-order reduction shrinks the state space
most (multi-CTA clusters) it answers first, where it is off (one CTA of fewer than 8
warps, ``POR_AFTER_QUICK_WARPS``) the native search's 20-500x states per second can.  Without cffi or a C
compiler, or with less than ``MIN_NATIVE_SECONDS`` left, there is no native stage and
``stats.extra["auto"]`` says why (``bench/results/scale.md``).  Where the explicit engine
runs with stubborn sets (clusters of several CTAs, CTAs of 8 or more warps) there is no
native stage either: measured, it decided none of those kernels first, and on a machine
whose CPUs are already busy it slowed the explicit engine down (``_explicit_por``).
There, ``SWARM_AFTER`` seconds into the race, the CPU the certificate left goes to random
runs (``checker/swarm.py``) beside the explicit engine: a violation too deep for the
breadth-first search (NVIDIA's lifted 2x2 Hopper GEMM with an exit race planted, 400-1,600
steps deep: no explicit verdict in 300 s, bench/results/swarm.md) is found by a run and
reported, replayed and marked perhaps not the shortest; the explicit engine is then
stopped, unless it already holds a counterexample of its own (it is confirming that none
is shorter), which is kept instead.  The random runs never prove anything: a PROVEN is
always the explicit engine's.  The delay keeps the shallow bugs to the explicit engine,
whose counterexamples are shortest.
"""

from __future__ import annotations

import os
import pickle
import time
import traceback
from typing import Any, Callable, Optional

from ..model.system import System
from .verdict import PROVEN, UNKNOWN, VIOLATED, Verdict

#: the unrolling runs after an undecided explicit search only with this much time left
MIN_UNROLL_SECONDS = 5.0
#: seconds past its own timeout that a racing stage gets to send its answer
RACE_GRACE = 5.0
#: racing: the native engine takes the certificate's CPU only with this much time left
MIN_NATIVE_SECONDS = 5.0
#: racing, where the explicit engine runs with stubborn sets: seconds into the race
#: before random runs take the CPU the certificate left (``_explicit_or_swarm``;
#: ``PIPEPROOF_SWARM_AFTER`` overrides it, ``inf``: none)
SWARM_AFTER = 5.0
#: ... and only with this much time left
MIN_SWARM_SECONDS = 5.0
#: racing (``jobs >= 2``): seconds BMC's certificate has to itself -- an explicit
#: verdict that comes sooner waits for them -- before the first of the two to decide wins
HEAD_START = 2.0
#: the longest single wait on a child process: the operating system's waits take no
#: infinite timeout (``--timeout inf``), so a longer one is waited out slice by slice
WAIT_SLICE = 3600.0


def _wait_slice(seconds: float) -> float:
    """``seconds`` clipped to [0, WAIT_SLICE] for one OS-level wait."""
    return min(max(seconds, 0.0), WAIT_SLICE)


#: the quick stage: states and seconds of CPU time of the explicit engine's search in
#: this process before any other stage starts (``quick_search``); 0 states: none
QUICK_STATES = 50_000
QUICK_SECONDS = 2.0


def quick_states_default() -> int:
    """``QUICK_STATES``, or ``PIPEPROOF_QUICK_STATES`` from the environment (the test
    suite sets 0 where it tests the later stages on small examples)."""
    v = os.environ.get("PIPEPROOF_QUICK_STATES", "").strip()
    return max(int(v), 0) if v.isdigit() else QUICK_STATES


def swarm_after() -> float:
    """``SWARM_AFTER``, or ``PIPEPROOF_SWARM_AFTER`` from the environment (the test suite
    sets ``inf``: where a random run may win the race, which engine answers, and the
    counterexample's length, would depend on the machine's speed; the tests of this
    stage set their own)."""
    v = os.environ.get("PIPEPROOF_SWARM_AFTER", "").strip()
    try:
        return float(v) if v else SWARM_AFTER
    except ValueError:
        return SWARM_AFTER


def default_jobs() -> int:
    """2 where this process may run on two CPUs and fork (Linux), else 1 -- also when
    it runs other threads: a forked child gets only the forking thread, and a lock
    another thread held (the allocator's, logging's) would stay held in it for ever."""
    import multiprocessing
    import threading

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return 2 if cpus >= 2 else 1


def die_with_parent() -> None:
    """Linux: end this process when its parent dies (a killed ``pipeproof check`` leaves
    no search running for the rest of its timeout).  Best effort elsewhere."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


class _Forked:
    """``fn(gate, notify)`` in a forked process; its result (or exception) comes back
    pickled.

    ``gate``: an event the child may consult (the explicit engine's progress line stays
    silent until the parent sets it, so two engines never write it at once).
    ``notify(verdict)``: sends a counterexample found before the final answer (the
    explicit engine's ``on_found``); the parent keeps the latest in ``found``."""

    def __init__(self, fn: Callable[[Any, Any], Any], name: str):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self.name = name
        self.gate = ctx.Event()
        self.conn, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=self._child, args=(send, fn), daemon=True,
                                 name=f"pipeproof-{name}")
        self._proc.start()
        send.close()
        self.result: Optional[Verdict] = None
        self.found: Optional[Verdict] = None
        self._shown: Optional[Verdict] = None

    def _child(self, send: Any, fn: Callable[[Any, Any], Any]) -> None:
        die_with_parent()
        try:
            msg: tuple = ("verdict", fn(self.gate, lambda v: send.send(("found", v))))
        except BaseException as e:  # noqa: BLE001 - handed to the parent to raise
            try:
                pickle.loads(pickle.dumps(e))
            except Exception:  # an exception that does not survive pickling
                e = RuntimeError(f"the {self.name} failed: {e!r}")
            msg = ("error", e, traceback.format_exc())
        send.send(msg)
        send.close()

    def receive(self) -> Optional[Verdict]:
        """The next message, once ``conn`` is ready: the answer (None for a
        counterexample sent before it, kept in ``found``); an exception of the child is
        raised here."""
        try:
            msg = self.conn.recv()
            if msg[0] == "found":
                self.found = msg[1]
                return None
        except EOFError:
            self._proc.join(1.0)
            msg = ("verdict", Verdict(UNKNOWN, reason=f"the {self.name}'s process ended "
                                      f"without an answer (exit code {self._proc.exitcode}; "
                                      "out of memory?)"))
        self.cancel()
        if msg[0] == "error":
            raise msg[1]
        self.result = msg[1]
        return msg[1]

    def cancel(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()
        self.conn.close()


    def wait_result(self, seconds: float, on_found: Optional[Callable[[Verdict], None]]
                    ) -> Optional[Verdict]:
        """The answer within ``seconds`` (None if it does not come); a counterexample
        sent before it goes to ``on_found`` as it comes."""
        end = time.perf_counter() + seconds
        while self.result is None:
            self.deliver(on_found)
            if not self.conn.poll(_wait_slice(end - time.perf_counter())):
                if time.perf_counter() >= end:
                    return None
                continue
            self.receive()
        return self.result

    def deliver(self, on_found: Optional[Callable[[Verdict], None]]) -> None:
        """Hand the counterexample sent before the answer to ``on_found``, once, while
        the answer has not come."""
        if (on_found is not None and self.found is not None and self.found is not self._shown
                and self.result is None):
            self._shown = self.found
            on_found(self.found)


def keep_found(answer: Verdict, found: Optional[Verdict]) -> Verdict:
    """The explicit engine's answer -- or, where its process sent a counterexample (a
    replayed run) and then ended without a VIOLATED answer (killed, out of memory), that
    counterexample, marked not confirmed shortest: a real run is never dropped."""
    if answer.status == VIOLATED or found is None:
        return answer
    found.stats.extra.pop("confirming", None)
    found.stats.extra["shortest"] = False
    found.stats.extra["confirm_stopped"] = answer.reason
    return found


def quick_search(system: System, states: int, seconds: float, timeout: float,
                 kwargs: dict[str, Any]) -> tuple[Optional[Verdict], Verdict]:
    """The quick stage: the explicit engine, unchanged, in this process, bounded to
    ``states`` states and ``seconds`` of CPU time (its search and its confirming search
    together; ``timeout``: wall clock).  Its
    answer is final -- (verdict, it) -- only where the search was complete: PROVEN, or
    VIOLATED with a counterexample confirmed shortest (what the certificate would have
    given); else (None, its UNKNOWN or unconfirmed answer) and the other stages start
    as before.  Why: on a small kernel the whole search takes milliseconds, while
    starting the race costs z3's import and the certificate's encoding in a second
    process (bench/results/spin.md: 0.5-1 s of CPU, and the head start)."""
    from .explicit import check_explicit

    kw = dict(kwargs, progress=None, on_found=None)
    q = check_explicit(system, **dict(kw, max_states=min(states, kw["max_states"]),
                                      timeout=timeout, cpu_seconds=seconds))
    final = q.status == PROVEN or (q.status == VIOLATED
                                   and q.stats.extra.get("shortest") is not False)
    if final:
        q.stats.extra["quick"] = True
        return q, q
    return None, q


def _explicit_job(system: System, kwargs: dict[str, Any]) -> Callable[[Any, Any], Verdict]:
    def run(gate: Any, notify: Any) -> Verdict:
        from .explicit import check_explicit

        progress = kwargs.pop("progress", None)
        if progress is not None:
            kwargs["progress"] = lambda *a, **k: progress(*a, **k) if gate.is_set() else None
        # always sent: the parent keeps it where the process ends without an answer
        # (``keep_found``), and prefers it to the random runs' (``_explicit_or_swarm``);
        # the caller's ``on_found`` sees it only if there is one (``deliver``)
        kwargs.pop("on_found", None)
        kwargs["on_found"] = notify
        try:
            return check_explicit(system, **kwargs)
        finally:
            if gate.is_set() and hasattr(progress, "close"):
                progress.close()  # this process's copy of the line is the one on screen
    return run


def _native_job(system: System, max_states: int, timeout: float, symmetry: bool
                ) -> Callable[[Any, Any], Verdict]:
    def run(gate: Any, notify: Any) -> Verdict:
        from .native.search import check_native

        return check_native(system, max_states=max_states, timeout=timeout,
                            symmetry=symmetry)
    return run


def native_unavailable() -> Optional[str]:
    """Why the native stage cannot run here (no cffi, no C compiler), or None."""
    from .native.build import unavailable

    return unavailable()


def _first_decided(stages: list[_Forked], seconds: float,
                   on_found: Optional[Callable[[Verdict], None]]) -> Optional[_Forked]:
    """Wait up to ``seconds`` for the first of ``stages`` to decide (VIOLATED or
    PROVEN); None when none does (each one's answer, if any, is in its ``result``).
    A counterexample the first stage (the explicit engine) sends before its answer goes
    to ``on_found``."""
    from multiprocessing.connection import wait

    end = time.perf_counter() + seconds
    while True:
        stages[0].deliver(on_found)
        pending = [c for c in stages if c.result is None]
        if not pending:
            return None
        ready = wait([c.conn for c in pending], timeout=_wait_slice(end - time.perf_counter()))
        if not ready:
            if time.perf_counter() >= end:
                return None
            continue
        for c in pending:
            if c.conn in ready:
                c.receive()
        for c in stages:
            if c.result is not None and c.result.status in (VIOLATED, PROVEN):
                return c


def _race(cert: _Forked, expl: _Forked, t0: float, timeout: float,
          on_found: Optional[Callable[[Verdict], None]] = None,
          started: Optional[float] = None) -> tuple[Verdict, Optional[Verdict]]:
    """Wait for the two racing stages: the certificate's answer, and the explicit
    engine's when it decided first after ``HEAD_START`` (counted from ``started``, the
    race's start, default ``t0``; else None: the caller waits for it).  ``t0 + timeout``:
    the deadline.  A certificate stopped that way answers UNKNOWN, saying so.  A
    counterexample the explicit engine sends before its answer goes to ``on_found`` once
    the head start is over (if the certificate has not answered by then)."""
    from multiprocessing.connection import wait

    decided = (VIOLATED, PROVEN)
    head_end = (t0 if started is None else started) + HEAD_START
    while True:
        now = time.perf_counter()
        if now >= head_end:
            expl.gate.set()  # the explicit engine may show its progress from now on
            expl.deliver(on_found)
        pending = [c.conn for c in (cert, expl) if c.result is None]
        limit = t0 + timeout + RACE_GRACE - now
        if now < head_end:  # wake at its end: the gate, and an explicit verdict waiting
            limit = min(limit, head_end - now)
        ready = wait(pending, timeout=_wait_slice(limit))
        if cert.conn in ready:
            v = cert.receive()
            e = expl.result
            return v, (e if v.status not in decided and e is not None
                       and e.status in decided else None)
        if expl.conn in ready:
            expl.receive()
        now = time.perf_counter()
        if expl.result is not None and expl.result.status in decided and now >= head_end:
            cert.cancel()
            v = Verdict(UNKNOWN, reason="stopped when the explicit engine decided first")
            v.stats.seconds = now - t0
            return v, expl.result
        if not ready and now >= t0 + timeout + RACE_GRACE:
            cert.cancel()
            return Verdict(UNKNOWN, reason="timeout: BMC's certificate did not answer in "
                           "time"), None


def _explicit_por(system: System, por: Optional[bool]) -> bool:
    """Does the explicit engine run with stubborn sets (``explicit.check_explicit``'s
    choice for ``por=None``)?  There the native engine, which has no partial-order
    reduction, explores far more states and decided none of the measured kernels first
    (``bench/results/scale.md``), while on a loaded machine it takes CPU from the
    explicit engine: no native stage."""
    from .explicit import POR_AUTO_WARPS

    if por is not None:
        return por
    return system.info.num_ctas > 1 or len(system.agents) >= POR_AUTO_WARPS


#: after the quick stage, the explicit engine of the later stages also runs with stubborn
#: sets on one CTA of this many warps (below ``explicit.POR_AUTO_WARPS``): the small
#: kernels the quick stage decides keep its speed, and a kernel it did not decide is
#: large enough that the reduction pays (``bench/results/cute_examples.md``: NVIDIA's
#: Hopper GEMM 1x1, 8 warps, 73,646 states without it, 927 with it)
POR_AFTER_QUICK_WARPS = 8


def _stage_por(system: System, por: Optional[bool]) -> Optional[bool]:
    """``por`` for the explicit engine of the stages after the quick one."""
    if por is None and len(system.agents) >= POR_AFTER_QUICK_WARPS:
        return True
    return por


#: the random runs' scheduling priority below the explicit engine's (``os.nice``): on a
#: machine with other work they are the first to yield their CPU
SWARM_NICE = 5


def _swarm_job(system: System, timeout: float, seed: int) -> Callable[[Any, Any], Verdict]:
    def run(gate: Any, notify: Any) -> Verdict:
        from .swarm import check_swarm

        try:
            os.nice(SWARM_NICE)
        except (OSError, AttributeError):  # pragma: no cover - not POSIX
            pass
        return check_swarm(system, timeout=timeout, seed=seed)
    return run


def _explicit_or_swarm(system: System, expl: _Forked, started: float, left: float,
                       on_found: Optional[Callable[[Verdict], None]],
                       note: Callable[[str, Verdict], None], seed: int = 0) -> Verdict:
    """The racing explicit engine's answer (it runs with stubborn sets); or, where it has
    not decided ``swarm_after()`` seconds into the race (``started``), the first violation
    that random runs (``checker/swarm.py``), started then on the CPU the certificate
    left, find before it decides (module docstring).  A counterexample the explicit
    engine already holds (it is confirming that no shorter one exists) is kept over the
    random runs' longer one.  The stage that did not decide gets a line in ``note``."""
    end = time.perf_counter() + max(left, 0.0)
    if swarm_after() < float("inf"):
        won = _swarm_beside(system, expl, started, end, on_found, note, seed)
        if won is not None:
            return won
    e = expl.wait_result(max(end - time.perf_counter(), 0.0) + RACE_GRACE, on_found) or \
        Verdict(UNKNOWN, reason="timeout: the explicit engine did not answer in time")
    return keep_found(e, expl.found)


def _swarm_beside(system: System, expl: _Forked, started: float, end: float,
                  on_found: Optional[Callable[[Verdict], None]],
                  note: Callable[[str, Verdict], None], seed: int) -> Optional[Verdict]:
    """``_explicit_or_swarm``'s random runs: their violation where they find one before
    the explicit engine decides or holds a counterexample of its own (the explicit
    engine is then stopped), else None (the random runs have a line in ``note``)."""
    head = started + swarm_after() - time.perf_counter()
    if head > 0:
        expl.wait_result(min(head, max(end - time.perf_counter(), 0.0)), on_found)
    now = time.perf_counter()
    if expl.result is not None or expl.found is not None:
        return None
    if end - now < MIN_SWARM_SECONDS:
        note("swarm", Verdict(UNKNOWN, reason=f"not run: less than {MIN_SWARM_SECONDS:.0f} s "
                              "left"))
        return None
    sw = _Forked(_swarm_job(system, end - now, seed), "random runs")
    try:
        first = _first_decided([expl, sw], end - now + RACE_GRACE, on_found)
    finally:
        sw.cancel()
    if first is sw and expl.found is None:
        expl.cancel()
        v = Verdict(UNKNOWN, reason="stopped when the random runs found a violation first")
        v.stats.seconds = time.perf_counter() - started
        note("explicit", v)
        return sw.result
    r = sw.result
    if r is None or r.status != UNKNOWN:
        r = Verdict(UNKNOWN, reason=(
            "found a violation too; the explicit engine's own counterexample is kept"
            if r is not None else "stopped when the explicit engine decided first"
            if first is expl else "timeout: the random runs did not end in time"))
        r.stats.seconds = time.perf_counter() - now
    note("swarm", r)
    return None


def _explicit_or_native(system: System, expl: _Forked, left: float, max_states: int,
                        symmetry: bool, on_found: Optional[Callable[[Verdict], None]],
                        note: Callable[[str, Verdict], None]) -> Verdict:
    """The racing explicit engine's answer, or the native engine's where that one, started
    now on the CPU the certificate left, decides first (module docstring).  The stage
    that did not decide gets a line in ``note``."""
    why = None if left >= MIN_NATIVE_SECONDS else \
        f"less than {MIN_NATIVE_SECONDS:.0f} s left"
    why = why or native_unavailable()
    if why is not None:
        e = expl.wait_result(max(left, 0.0) + RACE_GRACE, on_found) or Verdict(
            UNKNOWN, reason="timeout: the explicit engine did not answer in time")
        note("native", Verdict(UNKNOWN, reason=f"not run: {why}"))
        return keep_found(e, expl.found)
    t0 = time.perf_counter()
    nat = _Forked(_native_job(system, max_states, left, symmetry), "native engine")
    try:
        first = _first_decided([expl, nat], left + RACE_GRACE, on_found)
    finally:
        nat.cancel()
    if first is nat:
        expl.cancel()
        v = Verdict(UNKNOWN, reason="stopped when the native engine decided first")
        v.stats.seconds = time.perf_counter() - t0
        note("explicit", v)
        return nat.result  # type: ignore[return-value]
    n = nat.result or Verdict(UNKNOWN, reason="stopped when the explicit engine decided "
                              "first" if first is expl else "timeout: the native engine "
                              "did not answer in time")
    if n.status != UNKNOWN:  # pragma: no cover - a decided native answer wins above
        raise AssertionError(n)
    if nat.result is None:
        n.stats.seconds = time.perf_counter() - t0
    note("native", n)
    e = expl.result or Verdict(UNKNOWN, reason="timeout: the explicit engine did not "
                               "answer in time")
    return keep_found(e, expl.found)


def check_auto(system: System, depth: Optional[int], timeout: float = 600.0,
               max_states: int = 3_000_000,
               progress: Optional[Callable[[int, int, float], None]] = None,
               reduce: bool = True, por: Optional[bool] = None,
               bmc_steps: str = "auto", confirm_timeout: Optional[float] = None,
               jobs: Optional[int] = None,
               on_found: Optional[Callable[[Verdict], None]] = None,
               quick_states: Optional[int] = None, seed: int = 0) -> Verdict:
    """The quick stage, then BMC's certificate, then the explicit engine, then BMC's
    unrolling, sharing ``timeout`` (module docstring).  ``quick_states``: the quick
    stage's bound (``quick_search``; None: ``quick_states_default()``, 0: no quick
    stage).  ``jobs``: 1 runs the stages one after another;
    2 or more races the first two in forked processes, the certificate with a head
    start of ``HEAD_START`` seconds (None: ``default_jobs()``).  ``on_found``: a
    counterexample found before the search that confirms it is shortest
    (``explicit.check_explicit``), as soon as it is this stage's to show.  ``depth``:
    BMC's bound (None: ``bmc.DEFAULT_DEPTH``).  ``seed``: of the random runs
    (``checker/swarm.py``).  BMC, and z3 with it, is imported only
    once a BMC stage starts (a fifth of a small check's start-up)."""
    from .explicit import check_explicit

    t0 = time.perf_counter()
    conf = {} if confirm_timeout is None else {"confirm_timeout": confirm_timeout}
    tried: list[dict[str, Any]] = []

    def left() -> float:
        return timeout - (time.perf_counter() - t0)

    def note(stage: str, v: Verdict) -> None:
        tried.append({"stage": stage, "status": v.status, "reason": v.reason or v.headline(),
                      "seconds": round(v.stats.seconds, 2)})

    def done(v: Verdict) -> Verdict:
        v.stats.extra["auto"] = tried
        v.stats.extra["auto_jobs"] = 2 if racing else 1
        v.stats.extra["auto_seconds"] = round(time.perf_counter() - t0, 2)
        return v

    explicit_kw = dict(max_states=max_states, progress=progress, reduce=reduce, por=por,
                       on_found=on_found, **conf)

    def bmc_depth() -> int:
        from .bmc import DEFAULT_DEPTH

        return DEFAULT_DEPTH if depth is None else depth

    def certificate(gate: Any = None, notify: Any = None) -> Verdict:
        from .bmc import check_bmc

        return check_bmc(system, depth=bmc_depth(), timeout=left(), steps=bmc_steps,
                         certificate_only=True, max_states=max_states, **conf)

    racing = (default_jobs() if jobs is None else jobs) >= 2
    quick = quick_states_default() if quick_states is None else quick_states
    if quick > 0 and not _explicit_por(system, por):
        final, q = quick_search(system, quick, QUICK_SECONDS, timeout, explicit_kw)
        if final is not None:
            done(final).stats.extra["auto_jobs"] = 1  # no other process was started
            return final
        note("explicit (quick)", q)
        if left() <= 0:
            return done(q)
    e: Optional[Verdict] = None
    por = _stage_por(system, por)
    explicit_kw["por"] = por
    if racing:
        from . import bmc  # noqa: F401  (z3 once, here: both forked stages have it)

        started = time.perf_counter()
        expl = _Forked(_explicit_job(system, dict(explicit_kw, timeout=left())),
                       "explicit engine")
        try:
            cert = _Forked(certificate, "BMC certificate")
            try:
                v, e = _race(cert, expl, t0, timeout, on_found, started)
            finally:
                cert.cancel()
            if v.status in (VIOLATED, PROVEN):
                return done(v)
            note("bmc certificate", v)
            if e is None:
                expl.gate.set()
                if reduce and _explicit_por(system, por):
                    e = _explicit_or_swarm(system, expl, started, left(), on_found, note,
                                           seed)
                else:
                    e = _explicit_or_native(system, expl, left(), max_states, reduce,
                                            on_found, note)
            else:
                e = keep_found(e, expl.found)
        finally:
            expl.cancel()
    else:
        v = certificate()
        if v.status in (VIOLATED, PROVEN):
            return done(v)
        note("bmc certificate", v)
        if left() <= 0:
            return done(v)
        e = check_explicit(system, timeout=left(), **explicit_kw)
    if e.status != UNKNOWN:
        return done(e)
    note("explicit", e)
    if left() < MIN_UNROLL_SECONDS:
        return done(e)
    from .bmc import check_bmc

    u = check_bmc(system, depth=bmc_depth(), timeout=left(), steps=bmc_steps,
                  certificate=False, on_found=on_found, **conf)
    if u.status == UNKNOWN:
        # both searches stopped: the explicit engine's account of how far it got first
        note("bmc unrolling", u)
        e.reason = f"{e.reason}; BMC unrolling: {u.reason}"
        return done(e)
    return done(u)
