"""Lift and check a third-party CuTe DSL kernel: quack-kernels' RMSNorm backward.

    python bench/bench_cute_thirdparty.py --deps DIR [--deps DIR ...] [--max-states N]

quack (PyPI ``quack-kernels``) is not in this repository and is not a dependency: pass
the folders that make it importable with ``--deps`` (e.g. an unpacked wheel and a
``pip install --target`` folder holding ``apache-tvm-ffi``). quack imports torch and
triton at module level but compiling a kernel needs neither: where they are missing,
``quack_imported()`` imports quack under stub modules and takes the stubs away again.

The kernel is ``quack.rmsnorm.RMSNormBackward`` on its TMA path (``use_tma=True``: a
``cutlass.pipeline.PipelineTmaAsync`` filled by warp 0 and drained by all 128 threads),
compiled for sm_90a with static fake tensors (M rows, N columns, bf16), one CTA in the
grid (``sm_count``), no cluster. The table goes to ``bench/results/cute_thirdparty.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import time
import types
from typing import Any, Callable, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------- stubs

#: What a few torch calls must answer while quack's modules are imported (sm_90a).
_OVERRIDES: dict[str, Callable[..., Any]] = {
    "torch.cuda.get_device_capability": lambda *a, **k: (9, 0),
    "torch.cuda.is_available": lambda *a, **k: False,
    "torch.compiler.is_compiling": lambda *a, **k: False,
}


class _StubMeta(type):
    """Every attribute of a stub is a class (so ``torch.device | None`` and
    ``isinstance`` work); calling one gives another, decorating a function keeps it."""

    def __getattr__(cls, a: str) -> Any:
        if a.startswith("__"):
            raise AttributeError(a)
        return _stub(f"{cls._qual}.{a}")

    def __call__(cls, *a: Any, **k: Any) -> Any:
        f = _OVERRIDES.get(cls._qual)
        if f is not None:
            return f(*a, **k)
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], _StubMeta):
            return _Decorated(a[0])
        return _stub(f"{cls._qual}()")

    def __getitem__(cls, k: Any) -> Any:
        return _stub(f"{cls._qual}[]")


class _Decorated:
    """A function under a stubbed decorator (``torch.library.custom_op``): it still
    runs; its other attributes (``register_fake``) are stubs."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.__wrapped__ = fn

    def __call__(self, *a: Any, **k: Any) -> Any:
        return self.__wrapped__(*a, **k)

    def __getattr__(self, a: str) -> Any:
        if a.startswith("__"):
            raise AttributeError(a)
        return _stub(f"decorated.{a}")


def _stub(qual: str) -> Any:
    return _StubMeta(qual.rsplit(".", 1)[-1], (), {"_qual": qual})


class _StubModule(types.ModuleType):
    def __getattr__(self, a: str) -> Any:
        if a.startswith("__"):
            raise AttributeError(a)
        return _stub(f"{self.__name__}.{a}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, tops: set[str]) -> None:
        self.tops = tops

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in self.tops:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        m = _StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module: Any) -> None:
        pass


@contextlib.contextmanager
def _stubbed(tops: set[str]) -> Iterator[None]:
    """Stub the top-level modules ``tops`` for the duration; afterwards neither the
    finder nor the stub modules remain (other code sees torch missing, as before)."""
    if not tops:
        yield
        return
    finder = _StubFinder(tops)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".")[0] in tops]:
            del sys.modules[name]


def add_deps(dirs: list[str]) -> None:
    for d in reversed(dirs):
        d = os.path.abspath(d)
        if d not in sys.path:
            sys.path.insert(0, d)


def quack_imported() -> Any:
    """Import ``quack.rmsnorm`` (torch and triton stubbed where missing); raise
    ImportError where quack or one of the deps it truly needs (apache-tvm-ffi) is not
    importable."""
    if "quack.rmsnorm" in sys.modules:
        return sys.modules["quack.rmsnorm"]
    if importlib.util.find_spec("quack") is None:
        raise ImportError("quack (PyPI quack-kernels) is not importable")
    missing = {m for m in ("torch", "triton") if importlib.util.find_spec(m) is None}
    import tvm_ffi  # noqa: F401  (first: it must see the real torch or none, not a stub)

    with _stubbed(missing):
        import quack.rmsnorm  # noqa: F401
    return sys.modules["quack.rmsnorm"]


def quack_version() -> str:
    import quack

    return getattr(quack, "__version__", "?")


# --------------------------------------------------------------------------- entries

def rmsnorm_bwd(M: int = 8, N: int = 256, sm_count: int = 1, stages: int = 2,
                threads: int = 128, tpr: int = 32, use_tma: bool = True) -> Any:
    """quack's RMSNorm backward (with dw partials, no bias/residual), compiled for the
    given static shapes; ``sm_count`` (the grid) is a constant of the compile."""
    import cutlass.cute as cute
    from cutlass import BFloat16, Float32, Int32
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    rms = quack_imported()
    from quack.rmsnorm_config import RmsNormBwdConfig

    cfg = RmsNormBwdConfig(num_threads=threads, threads_per_row=tpr, cluster_n=1,
                           reload_wdy=None, reload_x=None, use_tma=use_tma,
                           smem_stages=stages)
    op = rms.RMSNormBackward(BFloat16, N, dout_dtype=BFloat16, num_acc=1, config=cfg)
    assert op.USE_TMA == use_tma

    def t(dtype: Any, shape: tuple) -> Any:
        order = (1, 0) if len(shape) == 2 else (0,)
        return make_fake_compact_tensor(dtype, shape, stride_order=order, assumed_align=16)

    x, dout, dx = (t(BFloat16, (M, N)) for _ in range(3))
    w, rstd, dw = t(BFloat16, (N,)), t(Float32, (M,)), t(Float32, (sm_count, N))

    @cute.jit
    def host(x, w, dout, rstd, dx, dw, stream):  # type: ignore[no-untyped-def]
        # (no annotations: this module's are strings, which the DSL would evaluate)
        # mdResO, mMean, mdRes, mdB: None; sm_count a constant, so the grid is known
        op(x, w, dout, None, rstd, None, dx, dw, None, None, Int32(sm_count), stream)

    return cute.compile(host, x, w, dout, rstd, dx, dw, make_fake_stream())


def configs() -> list[tuple[str, Callable[[], Any]]]:
    def cfg(**kw: Any) -> Callable[[], Any]:
        def entry() -> Any:
            return rmsnorm_bwd(**kw)
        entry.__name__ = "rmsnorm_bwd"
        return entry

    return [
        ("RMSNormBackward, TMA path (PipelineTmaAsync), M=8 N=256, 128 threads, "
         "32 per row, 2 stages, grid 1", cfg(M=8, N=256, use_tma=True)),
        ("RMSNormBackward, TMA path, M=4 N=1024, 128 threads, one row per tile, "
         "2 stages, grid 1", cfg(M=4, N=1024, tpr=128, use_tma=True)),
        ("RMSNormBackward, cp.async path (Hopper default), M=8 N=256, 2 stages, grid 1",
         cfg(M=8, N=256, use_tma=False)),
    ]


# --------------------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deps", action="append", default=[],
                    help="a folder to put on sys.path (quack, apache-tvm-ffi); repeatable")
    ap.add_argument("--max-states", type=int, default=400_000)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cute_thirdparty.md"))
    args = ap.parse_args()

    add_deps(args.deps)
    try:
        quack_imported()
    except ImportError as e:
        print(f"quack not importable ({e}); pass --deps", file=sys.stderr)
        return 2
    from pipeproof import __version__

    import cutlass

    rows = []
    sys.path.insert(0, HERE)
    from bench_cute_examples import lift_and_check

    for name, entry in configs():
        rows.append(lift_and_check(name, entry, "sm_90a", engine="explicit",
                                   max_states=args.max_states, timeout=args.timeout))

    def short(s: str) -> str:  # quack's path as the package names it, not this machine's
        i = s.find("/quack/")
        while i >= 0:
            j = s.rfind(" ", 0, i) + 1
            k = s.rfind("(", 0, i) + 1
            s = s[:max(j, k)] + s[i + 1:]
            i = s.find("/quack/", max(j, k) + 6)
        return s.replace("|", "\\|")

    with open(args.out, "w") as f:
        f.write("# A third-party CuTe DSL kernel: quack-kernels\n\n")
        f.write(f"pipeproof {__version__}, nvidia-cutlass-dsl {cutlass.__version__}, "
                f"quack-kernels {quack_version()} (PyPI; not in this repository), "
                f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, sm_90a, "
                f"explicit engine, --max-states {args.max_states:,}. torch and triton were "
                f"{'stubbed (not installed)' if importlib.util.find_spec('torch') is None else 'installed'}"
                f"; compiling needs neither. Written by `bench/bench_cute_thirdparty.py`.\n\n")
        f.write("| configuration | verdict | compile + lift (s) | check (s) | detail |\n")
        f.write("|---|---|---|---|---|\n")
        for name, verdict, ls, cs, detail in rows:
            f.write(f"| {name} | {verdict} | {ls:.1f} | {cs:.1f} | {short(detail)} |\n")
        f.write(NOTES)
    print(f"wrote {args.out}")
    return 0


NOTES = """
Notes.

- The row predication (`if row < M or tiler_mn[0] == 1:`, rmsnorm.py:1038; `if
  init_row < M:`, rmsnorm.py:959 on the cp.async path) reads a coordinate from an
  identity tensor (`cute.make_identity_tensor`) that the tiled copy partitions per
  thread (`cute.local_tile`, `cute.tiled.copy.partition_S` on a `!cute.coord_tensor`,
  `cute.slice`, `cute.deref_arith_tuple_iter`). The lifter evaluates it lane by lane
  (`frontend/cute/coords.py`): before, these rows ended UNKNOWN at that line.
- With N = 1024 the TMA box is 256 elements and one `cute.copy` moves a row of four
  boxes (source partition `((256,4),(1))`): the lifter counts the boxes
  (`sync_ops._tma_boxes`); the PTX of the same compile has 16 `cp.async.bulk.tensor`
  for the IR's 4 TMA `cute.copy` ops (4 and 4 with N = 256). Counting one box per copy
  had given a false `VIOLATED deadlock` (1 KiB of the 4 KiB `tx_count` delivered).
- The cp.async path (quack's default on Hopper) has no mbarrier pipeline; its
  `cp.async.commit_group`/`wait_group` groups are followed (docs/cute-frontend.md).
- One CTA in the grid and small M: the row loop runs M / (rows per tile) times per CTA;
  larger problems give the same per-iteration protocol with more unrolling.
"""


if __name__ == "__main__":
    sys.exit(main())
