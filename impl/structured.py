"""Which compiled programs the PTX emitter lowers: structured (loops stay loops) or unrolled.

The checker explores the fully unrolled programs (``model/compile.py``: every loop is
specialised iteration by iteration until its state repeats).  Emitting those makes code
size and ``ptxas`` time grow with the trip count.  For emission the kernel is compiled a
second time with the parameters that bound its run-time ``for`` loops passed as kernel
arguments (``compile_kernel(runtime=...)``): such a loop keeps its counter in a run-time
local, its condition becomes a ``Branch`` on ``counter < k_tiles``, and the loop closes
into a cycle once the pipeline states repeat (after ``4 * stages`` iterations, the period
of the model's ghost phase), exactly as a persistent ``while True`` loop does.  The
program size no longer depends on the trip count; the model runs these programs with the
trip count they were compiled with (``DynExpr("arg")``), so the GPU traces of a launch
with that value replay through them as before.

Three refinements keep the copies few (``model/compile.py``): a loop whose run-time trip
count has a compile-time bound (``range(min(k_pipe_mmas, k_tiles))``) is unrolled up to
the bound, a run-time test at each iteration, instead of closing into a cycle; a test of
kernel arguments alone is decided once per path (the prologue and the drain of the same
count agree); and at a loop head the variables no later statement reads are dropped
(``model/liveness.py``), so the exits of a run-time loop share the code after it once
their pipeline states are dead.  Together they took the Hopper persistent GEMM skeleton's
MMA warp from 1,743 instructions to 138.

The emitter then folds those copies back into one body with the pipeline state in
registers (``impl/fold.py``), where the copies differ only in stage index and phase.

Where the structured compilation is refused (a loop bound also needed at compile time, a
kernel that reads ``PipelineState.count``, a state that never repeats), the unrolled
programs are emitted and the reason is reported: never a silently different kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..model import ir
from ..model.compile import CompiledKernel, compile_kernel, loop_bound_params
from ..model.errors import ConfigError, Unsupported


@dataclass(frozen=True)
class Compiled:
    """The programs to emit and how they were compiled."""

    kernel: CompiledKernel
    #: the run-time kernel arguments (empty: unrolled)
    runtime: tuple[str, ...]
    #: why the unrolled programs are used ("" when structured, or nothing to roll)
    fallback: str = ""

    @property
    def structured(self) -> bool:
        return bool(self.runtime)

    def describe(self) -> str:
        if self.runtime:
            return f"structured: {', '.join(self.runtime)} passed at launch (loops stay loops)"
        if self.fallback:
            return f"unrolled ({self.fallback})"
        return "unrolled (no run-time loop bounded by a parameter)"


def compile_for_emission(kernel: ir.Kernel, params: Optional[dict[str, Any]] = None,
                         structured: bool = True,
                         timeout: Optional[float] = None) -> Compiled:
    """Compile ``kernel`` for the emitter: structured where supported, else unrolled.

    Errors of the kernel itself (raised by the unrolled compilation too) propagate."""
    params = dict(params or {})
    names = loop_bound_params(kernel) if structured else ()
    if names:
        # all loop bounds as kernel arguments; else each one alone (a stage count that
        # also bounds a prologue loop must stay a compile-time value)
        reason = ""
        for rt in [tuple(names)] + ([(n,) for n in names] if len(names) > 1 else []):
            try:
                ck = compile_kernel(kernel, params, runtime=rt, timeout=timeout)
                return Compiled(ck, rt)
            except (ConfigError, Unsupported) as e:
                reason = reason or f"structured emission not supported here: {_first_line(e)}"
            except Exception as e:  # noqa: BLE001 - a gap in the structured path must not
                # cost the user the unrolled kernel, which is what ran before; say so
                reason = reason or ("structured emission failed (internal error, please "
                                    f"report): {type(e).__name__}: {_first_line(e)}")
        return Compiled(compile_kernel(kernel, params, timeout=timeout), (), reason)
    return Compiled(compile_kernel(kernel, params, timeout=timeout), (),
                    "" if structured else "asked for")


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


__all__ = ["Compiled", "compile_for_emission"]
