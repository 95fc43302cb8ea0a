"""Capture the MLIR module that ``cute.compile`` builds, before any lowering.

The user's entry function calls ``cute.compile(...)`` (with fake tensors: no GPU is
needed).  The DSL traces the Python kernel into an MLIR module and hands it to
``BaseDSL.build_module`` (``cutlass/base_dsl/dsl.py``) before its pass pipeline lowers
it; a wrapper on that method clones the module, canonicalises the clone (constant
folding, CSE) with the DSL's own pass runner and prints it in generic form with debug
locations.  With ``loc_tracebacks`` set (``CUTE_DSL_LOC_TRACEBACKS``, DSL 4.7+) every
op's location is its whole Python call stack, so the lifter can name a barrier after
the pipeline ``create`` that built it and label every instruction with the pipeline
method and the user's line.

pipeproof imports the user's installed nvidia-cutlass-dsl and vendors none of it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ...model.errors import ConfigError, option

#: DSL releases whose IR this front end has been written and tested against; the op
#: tables (``ops.py``) are keyed by these
SUPPORTED = ("4.7", "4.8")
#: call-stack depth requested from the DSL
TRACEBACK_DEPTH = 32
ARCHS = ("sm_90a", "sm_100a")


@dataclass(frozen=True)
class Capture:
    """What one ``cute.compile`` produced: the module text, the DSL version and arch."""

    text: str
    dsl_version: str
    arch: str
    function: str
    #: every pipeline ``create(...)`` the trace called (``creates.py``): the
    #: configurations the cross-check rebuilds in ``model/pipelines/``
    creates: tuple = ()
    #: the extra arguments of every pipeline method call (``creates.MethodArgs``)
    method_args: tuple = ()
    #: the ``@cute.jit`` function's parameters as the host function's IR arguments:
    #: (name, how many IR arguments it became, its value where it is a run-time integer
    #: scalar such as ``cutlass.Int32(k)``, else None); empty where the count of IR
    #: arguments does not add up (then no run-time scalar is known)
    scalars: tuple = ()
    #: the dynamic extents of the fake tensors the ``@cute.jit`` function received:
    #: (host IR argument index, (``ShapeLeaf`` per ``?`` of its layout text, shape
    #: before stride)); a tensor whose ``?`` count does not add up is left out
    shapes: tuple = ()


@dataclass(frozen=True)
class ShapeLeaf:
    """One ``?`` of a fake tensor's layout: the ``cute.sym_int32/64`` it stands for,
    with its ``symbol`` (the name ``--param`` gives it a value by; None when it has
    none) and the ``divisibility`` the kernel was compiled to assume; ``where`` says
    which tensor and mode, for messages."""

    symbol: Optional[str]
    divisibility: int
    where: str


def dsl_version() -> str:
    """The installed nvidia-cutlass-dsl's version; ConfigError (exit 2) when absent."""
    try:
        import cutlass  # noqa: F401
    except ImportError as e:
        raise ConfigError(
            "checking a CuTe DSL kernel needs NVIDIA's CuTe DSL, which is not installed "
            f"({e})", hint="pip install 'pipeproof[cute]'  (installs nvidia-cutlass-dsl)"
        ) from None
    return str(getattr(cutlass, "__version__", "unknown"))


def series(version: str) -> str:
    """``4.8.1`` -> ``4.8``."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else version


def check_version(version: str) -> str:
    s = series(version)
    if s not in SUPPORTED:
        raise ConfigError(
            f"nvidia-cutlass-dsl {version} is not supported (supported: "
            + ", ".join(f"{v}.x" for v in SUPPORTED) + ")",
            hint="pip install 'nvidia-cutlass-dsl>=4.7,<4.9'")
    return s


def prepare_environment(arch: str) -> None:
    """Settings the DSL reads when it is first imported: the target and call stacks."""
    if arch not in ARCHS:
        raise ConfigError(f"{option('arch', arch)}: expected one of {', '.join(ARCHS)}")
    os.environ["CUTE_DSL_ARCH"] = arch
    os.environ.setdefault("CUTE_DSL_LOC_TRACEBACKS", str(TRACEBACK_DEPTH))
    # the DSL (imported after the settings) before the user's file, which imports it:
    # a missing or unsupported DSL is said as such, not as the file's import error
    check_version(dsl_version())


def _configure_dsl(arch: str, keep_ptx: bool = False) -> None:
    """The same settings on a DSL that was imported before (the Python API)."""
    try:
        from cutlass.cutlass_dsl import CuTeDSL

        env = CuTeDSL._get_dsl().envar
        env.arch = arch
        if env.loc_tracebacks < TRACEBACK_DEPTH:
            env.loc_tracebacks = TRACEBACK_DEPTH
        if keep_ptx:
            import tempfile

            env.keep_ptx = True
            env.dump_dir = tempfile.mkdtemp(prefix="pipeproof-ptx-")  # not the cwd
    except Exception:  # older or newer DSLs: the environment variables still apply
        pass


class _Captured(Exception):
    """Raised by the hook to stop ``cute.compile`` once the module is captured."""


def capture(compile_fn: Callable[[], Any], arch: str, finish_compile: bool = False,
            keep_ptx: bool = False, instrument: Optional[Callable[..., Any]] = None
            ) -> tuple[list[Capture], Any]:
    """Run ``compile_fn()`` (which calls ``cute.compile``) and return the module of the
    first kernel build it makes, with its result.  Unless ``finish_compile``, the
    compile stops there: the check needs nothing the lowering makes, and a crash in
    the lowering (seen: a segfault on a mis-shaped TMEM fragment) cannot take the
    check down with it.  An exception from the DSL propagates after the hook is
    removed.

    ``instrument(module, args, sig, text=...)`` (conformance runs,
    ``impl/cute_trace.py``) may change the module in place: it is called before the
    capture (``text=None``) and again with the ``Capture`` before the DSL lowers the
    module.  The module's JIT cache key then changes too, so an uninstrumented compile
    of the same kernel in this process is never reused for it (nor it for one)."""
    version = dsl_version()
    check_version(version)
    from cutlass._mlir import ir
    from cutlass.base_dsl.dsl import BaseDSL

    _configure_dsl(arch, keep_ptx)
    got: list[Capture] = []

    def record(module: Any, function_name: str, dsl: Any, call: tuple = (),
               scalars: tuple = (), shapes: tuple = ()) -> None:
        if instrument is not None:
            with module.context:
                instrument(module, *call, text=None)
        clone = ir.Module.create(loc=module.operation.location)
        with module.context:
            ip = ir.InsertionPoint(clone.body)
            for op in module.body.operations:
                ip.insert(op.operation.clone())
        dsl.compiler_provider.compile(clone, "builtin.module(canonicalize,cse)")
        cap = Capture(clone.operation.get_asm(enable_debug_info=True,
                                              print_generic_op_form=True),
                      version, arch, str(function_name), tuple(rec.calls),
                      rec.method_args(), scalars, shapes)
        got.append(cap)
        if instrument is not None:  # second call: the captured text, before lowering
            with module.context:
                instrument(module, *call, text=cap)
        if not finish_compile:
            raise _Captured()

    # generate_original_ir runs on every compile, a cached one included (4.8);
    # build_module only on a JIT-cache miss, but exists in every release seen
    if hasattr(BaseDSL, "generate_original_ir"):
        name = "generate_original_ir"
        original = BaseDSL.generate_original_ir

        def hook(self: Any, ir_: Any, func: Any, body: Any, function_name: str,
                 *a: Any, **k: Any) -> Any:
            out = original(self, ir_, func, body, function_name, *a, **k)
            # (func_types, gpu_module_attrs, args, kwonlyargs, sig, ...)
            call = (a[2], a[4]) if len(a) > 4 else ((), None)
            with out[0].context:
                scalars = runtime_scalars(a[2], a[4], len(a[0])) if len(a) > 4 else ()
                shapes = runtime_shapes(a[2], a[4], a[0], scalars) if len(a) > 4 else ()
            record(out[0], function_name, self, call, scalars, shapes)
            if instrument is not None and isinstance(out, tuple) and len(out) > 1 \
                    and isinstance(out[1], str):
                out = (out[0], out[1] + "-pipeproof-trace") + tuple(out[2:])
            return out
    else:
        name = "build_module"
        original = BaseDSL.build_module

        def hook(self: Any, module: Any, function_name: str) -> Any:
            record(module, function_name, self, ((), None))
            return original(self, module, function_name)

    setattr(BaseDSL, name, hook)
    result = None
    import cutlass

    from .creates import CreateRecorder

    roots = (os.path.dirname(os.path.abspath(__file__)),
             os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__))))
    rec = CreateRecorder(roots)
    try:
        with rec:
            result = compile_fn()
    except _Captured:
        pass
    except Exception as e:  # the DSL may wrap the hook's exception in its own
        if not (got and _caused_by_capture(e)):
            raise
    finally:
        setattr(BaseDSL, name, original)
    return got, result


def runtime_scalars(args: Any, sig: Any, n_types: int) -> tuple:
    """Each positional parameter of the ``@cute.jit`` function as ``Capture.scalars``
    says: how many host IR arguments it became (the DSL's ``get_mlir_types``; none for
    a ``Constexpr``) and, for a run-time integer scalar (``cutlass.Int32(4)``, or an int
    where the parameter is annotated with an integer type), its value.  Empty when the
    counts do not add up to the host function's ``n_types`` arguments: the lifter then
    knows no run-time value rather than a wrong one."""
    try:
        from cutlass.base_dsl import typing as t

        out = []
        for (name, p), arg in zip(sig.parameters.items(), args):
            ann = p.annotation
            if ann is t.Constexpr or getattr(ann, "__origin__", None) is t.Constexpr:
                out.append((name, 0, None))
                continue
            if isinstance(ann, t.NumericMeta) and isinstance(arg, (bool, int, float)):
                # a plain number the DSL casts to the annotated type: one IR argument
                is_int = isinstance(arg, int) and not isinstance(arg, bool) and \
                    "Int" in ann.__name__
                out.append((name, 1, int(arg) if is_int else None))
                continue
            value = getattr(arg, "value", None) if isinstance(arg, t.Numeric) else None
            count = len(t.get_mlir_types(arg))
            is_int = isinstance(value, int) and not isinstance(value, bool) and \
                "Int" in type(arg).__name__
            out.append((name, count, value if is_int and count == 1 else None))
        if sum(c for _, c, _ in out) != n_types or len(out) != len(args):
            return ()
        return tuple(out)
    except Exception:  # another DSL release: no run-time scalar is known
        return ()


def runtime_shapes(args: Any, sig: Any, types: Any, scalars: tuple) -> tuple:
    """``Capture.shapes``: for each fake tensor argument (one host IR argument) whose
    layout has dynamic leaves, a ``ShapeLeaf`` per ``?`` of its type's layout text in
    the order the text prints them (the shape's leaves, then the stride's).  The
    DSL's ``SymInt`` leaves of ``shape`` and ``stride`` are listed in the same order;
    where their count differs from the ``?`` count nothing is recorded for the tensor
    (its extents then have no value, rather than a wrong one)."""
    if not scalars:
        return ()
    try:
        from cutlass.cute.typing import SymInt

        out = []
        j = 0
        for (name, count, _), arg in zip(scalars, args):
            shape, stride = getattr(arg, "shape", None), getattr(arg, "stride", None)
            if count == 1 and isinstance(shape, tuple) and isinstance(stride, tuple):
                leaves = []
                for part, what in ((shape, "extent"), (stride, "stride")):
                    for k, x in enumerate(_flat(part)):
                        if isinstance(x, SymInt):
                            leaves.append(ShapeLeaf(
                                x.symbol if what == "extent" else None,
                                int(x.divisibility), f"{what} of mode {k} of {name}"))
                text = str(types[j])
                lay = [q for q in re.findall(r'"([^"]*)"', text) if ":" in q]
                marks = lay[-1].count("?") if lay else -1
                if leaves and marks == len(leaves):
                    out.append((j, tuple(leaves)))
            j += count
        return tuple(out)
    except Exception:  # another DSL release: no dynamic extent is known
        return ()


def _flat(t: Any) -> list:
    if isinstance(t, (tuple, list)):
        return [y for x in t for y in _flat(x)]
    return [t]


def _caused_by_capture(e: BaseException) -> bool:
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, _Captured):
            return True
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen += 1
    return False


def compiled_ptx(compile_fn: Callable[[], Any], arch: str) -> tuple[Capture, str]:
    """The captured module and the PTX the same ``cute.compile`` lowers it to (the
    lowering facts the lifter relies on are checked against it in tests)."""
    caps, result = capture(compile_fn, arch, finish_compile=True, keep_ptx=True)
    ptx = getattr(result, "__ptx__", None)
    try:  # later compiles in this process keep no PTX; the dump folder goes
        import shutil

        from cutlass.cutlass_dsl import CuTeDSL

        env = CuTeDSL._get_dsl().envar
        env.keep_ptx = False
        if os.path.basename(str(env.dump_dir)).startswith("pipeproof-ptx-"):
            shutil.rmtree(env.dump_dir, ignore_errors=True)
    except Exception:
        pass
    if not caps or not ptx:
        raise ConfigError("the DSL produced no PTX for this entry (keep_ptx)")
    return caps[0], str(ptx)
