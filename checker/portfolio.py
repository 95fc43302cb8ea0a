"""The default engine (``--engine auto``): BMC first, the explicit engine where BMC's
certificate does not decide, BMC's unrolling where neither has.

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
explicit engine does not wait for the certificate: it starts at once in a forked
process, and its answer is used only if the certificate does not decide -- so the
verdict, the trace and the deciding stage are those of the sequential order, while on
kernels the certificate cannot decide the 6-7 s its unfinished enumeration costs are no
longer added to the explicit engine's time.
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
#: seconds past its own timeout that a racing explicit search gets to send its answer
RACE_GRACE = 5.0


def default_jobs() -> int:
    """2 where this process may run on two CPUs and fork (Linux), else 1."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
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


class _ExplicitRace:
    """``check_explicit`` in a forked process, started before the certificate stage.

    Its progress line stays silent until ``take()`` (the certificate has not decided),
    so two engines never write it at once; ``cancel()`` ends it."""

    def __init__(self, system: System, kwargs: dict[str, Any]):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self._recv, send = ctx.Pipe(duplex=False)
        self._shown = ctx.Event()
        self._proc = ctx.Process(target=self._child, args=(send, system, kwargs),
                                 daemon=True, name="pipeproof-explicit")
        self._proc.start()
        send.close()

    def _child(self, send: Any, system: System, kwargs: dict[str, Any]) -> None:
        from .explicit import check_explicit

        die_with_parent()

        progress = kwargs.pop("progress", None)
        shown = self._shown
        if progress is not None:
            kwargs["progress"] = lambda *a: progress(*a) if shown.is_set() else None
        try:
            msg: tuple = ("verdict", check_explicit(system, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the parent to raise
            try:
                pickle.loads(pickle.dumps(e))
            except Exception:  # an exception that does not survive pickling
                e = RuntimeError(f"the explicit engine failed: {e!r}")
            msg = ("error", e, traceback.format_exc())
        if shown.is_set() and hasattr(progress, "close"):
            progress.close()  # this process's copy of the line is the one on screen
        send.send(msg)
        send.close()

    def take(self, seconds: float) -> Verdict:
        """The explicit engine's verdict, waiting at most ``seconds`` (plus a grace)."""
        self._shown.set()
        try:
            if not self._recv.poll(max(seconds, 0.0) + RACE_GRACE):
                return Verdict(UNKNOWN, reason="timeout: the explicit engine did not "
                               "answer in time")
            msg = self._recv.recv()
        except EOFError:
            self._proc.join(1.0)
            return Verdict(UNKNOWN, reason="the explicit engine's process ended without "
                           f"an answer (exit code {self._proc.exitcode}; out of memory?)")
        finally:
            self.cancel()
        if msg[0] == "error":
            raise msg[1]
        return msg[1]

    def cancel(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()
        self._recv.close()


def check_auto(system: System, depth: int, timeout: float = 600.0,
               max_states: int = 3_000_000,
               progress: Optional[Callable[[int, int, float], None]] = None,
               reduce: bool = True, por: Optional[bool] = None,
               bmc_steps: str = "auto", confirm_timeout: Optional[float] = None,
               jobs: Optional[int] = None) -> Verdict:
    """BMC's certificate, then the explicit engine, then BMC's unrolling, sharing
    ``timeout`` (module docstring).  ``jobs``: 1 runs the stages one after another;
    2 or more also races the explicit engine against the certificate (None:
    ``default_jobs()``)."""
    from .bmc import check_bmc
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
        v.stats.extra["auto_jobs"] = 1 if race is None else 2
        v.stats.extra["auto_seconds"] = round(time.perf_counter() - t0, 2)
        return v

    explicit_kw = dict(max_states=max_states, progress=progress, reduce=reduce, por=por,
                       **conf)
    race: Optional[_ExplicitRace] = None
    if (default_jobs() if jobs is None else jobs) >= 2:
        race = _ExplicitRace(system, dict(explicit_kw, timeout=timeout))
    try:
        v = check_bmc(system, depth=depth, timeout=timeout, steps=bmc_steps,
                      certificate_only=True, max_states=max_states, **conf)
    except BaseException:
        if race is not None:
            race.cancel()
        raise
    if v.status in (VIOLATED, PROVEN):
        if race is not None:
            race.cancel()
        return done(v)
    note("bmc certificate", v)
    if race is not None:
        e = race.take(left())
    elif left() <= 0:
        return done(v)
    else:
        e = check_explicit(system, timeout=left(), **explicit_kw)
    if e.status != UNKNOWN:
        return done(e)
    note("explicit", e)
    if left() < MIN_UNROLL_SECONDS:
        return done(e)
    u = check_bmc(system, depth=depth, timeout=left(), steps=bmc_steps, certificate=False,
                  **conf)
    if u.status == UNKNOWN:
        # both searches stopped: the explicit engine's account of how far it got first
        note("bmc unrolling", u)
        e.reason = f"{e.reason}; BMC unrolling: {u.reason}"
        return done(e)
    return done(u)
