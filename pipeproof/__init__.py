"""pipeproof: a model-checked reference implementation of the CUTLASS CuTe DSL
asynchronous pipelines.

    from pipeproof import check_file
    result = check_file("examples/textbook/pipeline_async.pipe")
    print(result.verdict.headline())
"""

from typing import Any

from .version import __version__  # noqa: E402

from .api import (CheckResult, check_cute, check_file, check_kernel,  # noqa: E402
                  check_many, check_source, compile_file)

_API = ["__version__", "CheckResult", "check_cute", "check_file", "check_kernel",
        "check_many", "check_source", "compile_file"]

# The Python API (``pipeproof/dsl.py``): cutlass.pipeline's names, ``@cute.kernel`` and
# ``check(...)``.  Kernel names (PipelineTmaAsync, CooperativeGroup, tma_load, role, cute,
# ...) are traced values served by ``__getattr__`` so ``from pipeproof import X`` works.
# It is imported on first use, not here: ``pipeproof check FILE.pipe`` does not need it
# (a tenth of the command's start-up, bench/results/spin.md).
_DSL_NAMES = ("DslError", "KernelDef", "check", "jit", "kernel", "load_pipe_as_python",
              "python")


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'pipeproof' has no attribute {name!r}")
    import importlib

    _dsl = importlib.import_module(f"{__name__}.dsl")  # not `from . import`: that asks here
    if name == "__all__":
        return _API + [n for n in _dsl.EXPORTS if n not in _API]
    if name in _DSL_NAMES:
        return getattr(_dsl, name)
    try:
        return _dsl._NAMES[name]
    except KeyError:
        raise AttributeError(f"module 'pipeproof' has no attribute {name!r}") from None
