"""Stubborn sets for the native engine: the explicit engine's ``Reducer`` answering
``bfs.c``'s callback (``pp_set_reduce(2)``).

The native search evaluates every step of a state in C and hands the state (its keys)
and the steps (transition ids, in the explicit engine's order) to ``NativeStubborn``,
which decodes the keys into the concrete model's flat state and asks the very
``Reducer`` the explicit engine asks (``checker/por/reducer.py``, its closure in C where
``porwalk.c`` builds) which steps a stubborn set keeps.  One reduction, two searches:
the same states are expanded in the same order, so the two engines keep the same sets
state for state (``tests/test_native_por.py`` holds them to equal state counts).

What stays in Python per state is the decoding and the reducer's own reading of the
state (``Closure``, the settle records); the successors, the visited set and the search
are C's.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from ...model.system import System
from ..por.reducer import Reducer
from ..symbolic import Encoding
from .porwalk import closure_factory


class NativeStubborn:
    """The callback of ``bfs.c``'s stubborn-set mode: ``__call__(x, n, tids, keep)``
    sets ``keep[i]`` for the steps of a stubborn set of the state ``x``.

    ``bind(enc, steps)`` sets the encoding the keys come in and the steps the
    transition ids name (again after each restart with a wider encoding).  An exception
    inside the callback cannot pass through C: it is kept in ``error`` and the callback
    answers 1, which stops the search (``ST_POR``)."""

    def __init__(self, system: System, deadline: Optional[float] = None,
                 native_closure: bool = True):
        self.sys = system
        make = closure_factory() if native_closure else None
        self.reducer = Reducer(system, self, full=True, deadline=deadline, native=make)
        self.error: Optional[BaseException] = None
        self.calls = 0
        self.seconds = 0.0
        self._flat: list = []

    # the ``explorer`` a Reducer reads states through: only ``getter`` and ``sys``
    def getter(self, state: Any) -> Any:
        return self._flat.__getitem__

    def bind(self, enc: Encoding, steps: tuple, ffi: Any) -> None:
        """Decode the keys of ``enc`` (``Encoding.concrete_decoder``); ``steps``: the step
        of each transition id; ``ffi``: the library's (to read the keys at once).  The
        reducer's seed history starts again: a search after a restart keeps the sets a
        fresh explicit search would."""
        self.steps = steps
        self.reducer._hits.clear()
        self._unpack, self._nk = ffi.unpack, enc.nkeys
        self._decode = enc.concrete_decoder()

    def decode(self, x: Any) -> list:
        """The concrete flat state of the keys ``x`` (a C array)."""
        return self._decode(self._unpack(x, self._nk))

    def __call__(self, x: Any, n: int, tids: Any, keep: Any) -> int:
        try:
            t = time.perf_counter()
            self._flat = self.decode(x)
            steps = self.steps
            enabled = [(steps[tids[i]], i) for i in range(n)]
            for e in self.reducer.reduce(None, enabled):
                keep[e[1]] = 1
            self.calls += 1
            self.seconds += time.perf_counter() - t
            return 0
        except BaseException as e:  # nothing may raise through C
            self.error = e
            return 1

    def stats(self) -> dict:
        red = self.reducer
        out: dict = {"states": self.calls, "seconds": round(self.seconds, 3)}
        if red.native is not None:
            out.update(seeds=red.native_calls, fallbacks=red.native_fallbacks)
        return out
