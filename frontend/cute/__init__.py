"""Check a real CuTe DSL kernel: lift the MLIR that ``cute.compile`` builds.

``lift_entry("kernel.py::entry", params)`` imports the user's file, calls ``entry``
(which calls ``cute.compile`` with fake tensors) under a hook that captures the module
before lowering (``capture.py``), reads its generic text (``mlir_text.py``), interprets
it for every warp of one cluster (``interp.py``, ``ops.py``, ``sync_ops.py``) and
returns the per-warp programs as a ``CompiledKernel`` (``lower.py``): the same object
the ``.pipe`` compiler produces, so every engine and renderer runs on it unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ...model.compile import CompiledKernel
from .capture import Capture, series
from .crosscheck import CrossCheck, cross_check
from .entry import call_entry, effective_params, parse_spec
from .interp import LiftError, Lifter, ScalarParams
from .lower import to_compiled
from .mlir_text import MlirSyntaxError, Module
from .symbolic import shape_values, split_params

__all__ = ["Lifted", "LiftError", "ScalarParams", "lift_entry", "lift_function", "lift_text"]


@dataclass(frozen=True)
class Lifted:
    compiled: CompiledKernel
    capture: Capture
    params: dict
    notes: tuple[str, ...]
    #: the cross-check with ``model/pipelines/`` (``crosscheck.py``), when asked for
    crosscheck: Optional[CrossCheck] = None


def library_roots() -> tuple[str, ...]:
    """Folders whose frames are not the user's: the DSL's package and pipeproof's."""
    roots = [os.path.dirname(os.path.abspath(__file__))]  # this front end (the capture hook)
    try:
        import cutlass

        roots.append(os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__))))
    except ImportError:
        pass
    return tuple(roots)


def lift_text(text: str, name: str, params: dict, source: str, dsl_version: str = "4.8",
              roots: Optional[tuple[str, ...]] = None, data_races: bool = True,
              cluster_index: int = 0, scalars: tuple = (),
              symbolic: Optional[ScalarParams] = None, shapes: tuple = (),
              shape_values: Optional[dict] = None) -> tuple[CompiledKernel, Lifter]:
    """``scalars``: ``Capture.scalars`` (run-time integer arguments get the values the
    entry compiled with); ``symbolic``: those that are symbolic parameters instead;
    ``shapes``: ``Capture.shapes`` (fake tensors' dynamic extents), ``shape_values``
    the named extents given one value each (``symbolic.py``)."""
    try:
        module = Module(text)
    except MlirSyntaxError as e:
        raise LiftError(f"cannot read the captured module: {e}") from None
    lf = Lifter(module, library_roots() if roots is None else roots,
                dsl_series=series(dsl_version), data_races=data_races,
                cluster_index=cluster_index, scalars=scalars, params=symbolic,
                shapes=shapes, shape_values=shape_values).run()
    return to_compiled(lf, name, params, source), lf


def lift_entry(spec_text: str, params: Optional[dict[str, Any]] = None,
               arch: str = "sm_90a", data_races: bool = True,
               crosscheck: bool = False) -> Lifted:
    """``crosscheck``: also compare every pipeline call with ``model/pipelines/``."""
    from .capture import prepare_environment
    from .entry import find_entry, load_module

    spec = parse_spec(spec_text)
    prepare_environment(arch)
    fn = find_entry(load_module(spec.path), spec)
    entry_params, extents = split_params(fn, dict(params or {}), spec.path)
    cap = call_entry(fn, entry_params, arch, spec.path)
    shown = dict(effective_params(fn, entry_params), **extents)
    values = shape_values(cap, extents, fn, spec.path)
    compiled, lf = lift_text(cap.text, fn.__name__, shown, spec.path, cap.dsl_version,
                             data_races=data_races, scalars=cap.scalars,
                             shapes=cap.shapes, shape_values=values)
    cc = cross_check(compiled, lf, cap.creates, cap.method_args) if crosscheck else None
    return Lifted(compiled, cap, shown, tuple(lf.notes), cc)


def lift_function(fn: Callable[..., Any], params: Optional[dict[str, Any]] = None,
                  arch: str = "sm_90a", data_races: bool = True,
                  crosscheck: bool = False) -> Lifted:
    import inspect

    from .capture import prepare_environment

    prepare_environment(arch)
    path = inspect.getsourcefile(fn) or "<entry>"
    entry_params, extents = split_params(fn, dict(params or {}), path)
    cap = call_entry(fn, entry_params, arch, path)
    shown = dict(effective_params(fn, entry_params), **extents)
    values = shape_values(cap, extents, fn, path)
    compiled, lf = lift_text(cap.text, fn.__name__, shown, path, cap.dsl_version,
                             data_races=data_races, scalars=cap.scalars,
                             shapes=cap.shapes, shape_values=values)
    cc = cross_check(compiled, lf, cap.creates, cap.method_args) if crosscheck else None
    return Lifted(compiled, cap, shown, tuple(lf.notes), cc)
