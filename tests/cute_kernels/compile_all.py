"""Compile every kernel in this folder: its entry with defaults, then with each bug.

    python tests/cute_kernels/compile_all.py [NAME ...]

Each module is imported by path; its ``ARCH`` constant sets ``CUTE_DSL_ARCH`` for it
(the DSL reads the variable once, when cutlass is imported, so the kernels of each arch
compile in their own child process; no GPU is needed).  Prints one line per
compile with the time it took, and exits 1 if any failed.  ``--ir DIR`` also keeps the
clean MLIR (after canonicalize + cse) of every compile in DIR (``CUTE_DSL_KEEP=ir``),
named ``cute_dsl_cutlass_NAME_host_<args>_clean.mlir``.
"""
import argparse
import importlib.util
import inspect
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def kernel_names():
    return sorted(
        f[:-3]
        for f in os.listdir(HERE)
        if f.endswith(".py") and f not in ("compile_all.py", "__init__.py")
    )


def load(name):
    spec = importlib.util.spec_from_file_location(f"cute_kernels_{name}", os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="kernels to compile (default: all)")
    ap.add_argument("--ir", metavar="DIR", help="keep the clean MLIR of each compile under DIR")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = args.names or kernel_names()
    if args.child:
        return compile_here(names, args.ir)
    # The DSL reads CUTE_DSL_ARCH once, when cutlass is imported: one process per arch.
    by_arch = {}
    for name in names:
        by_arch.setdefault(module_arch(name), []).append(name)
    rc = 0
    for arch, group in by_arch.items():
        env = dict(os.environ, CUTE_DSL_ARCH=arch)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", *group]
        if args.ir:
            cmd += ["--ir", os.path.abspath(args.ir)]
        rc |= subprocess.call(cmd, env=env)
    return rc


def compile_here(names, ir_dir=None):
    # the DSL reads these once, when cutlass is imported (as it does CUTE_DSL_ARCH);
    # the files are named after each host function (cute_dsl_cutlass_NAME_host_...)
    if ir_dir:
        os.makedirs(ir_dir, exist_ok=True)
        os.environ["CUTE_DSL_KEEP"] = "ir"
        os.environ["CUTE_DSL_DUMP_DIR"] = ir_dir
    failed = 0
    arch = os.environ.get("CUTE_DSL_ARCH")
    for name in names:
        mod = load(name)
        assert mod.ARCH == arch, f"{name}: ARCH {mod.ARCH} compiled under {arch}"
        entry = getattr(mod, name)
        defaults = {k: p.default for k, p in inspect.signature(entry).parameters.items()}
        for bug in [0] + list(getattr(mod, "BUGS", ())):
            kw = {"bug": bug} if bug else {}
            label = f"{name}({', '.join(f'{k}={v}' for k, v in {**defaults, **kw}.items())})"
            t = time.perf_counter()
            try:
                entry(**kw)
            except Exception:
                failed += 1
                print(f"FAIL {label} [{arch}]", flush=True)
                traceback.print_exc()
                continue
            print(f"ok   {label} [{arch}] {time.perf_counter() - t:.2f} s", flush=True)
    return 1 if failed else 0


def module_arch(name):
    # read ARCH without importing the module (importing cutlass fixes the arch)
    with open(os.path.join(HERE, name + ".py")) as f:
        for line in f:
            if line.startswith("ARCH"):
                return line.split("=", 1)[1].split("#")[0].strip().strip("\"'")
    return "sm_90a"


if __name__ == "__main__":
    sys.exit(main())
