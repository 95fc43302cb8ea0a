"""pipeproof: a model-checked reference implementation of the CUTLASS CuTe DSL
asynchronous pipelines.

    from pipeproof import check_file
    result = check_file("examples/textbook/pipeline_async.pipe")
    print(result.verdict.headline())
"""

from .version import __version__  # noqa: E402

from .api import (CheckResult, check_cute, check_file, check_kernel,  # noqa: E402
                  check_many, check_source, compile_file)

__all__ = ["__version__", "CheckResult", "check_cute", "check_file", "check_kernel",
           "check_many", "check_source", "compile_file"]

# The Python API (``pipeproof/dsl.py``): cutlass.pipeline's names, ``@cute.kernel`` and
# ``check(...)``.  Kernel names (PipelineTmaAsync, CooperativeGroup, tma_load, role, cute,
# ...) are traced values served by ``__getattr__`` so ``from pipeproof import X`` works.
from . import dsl as _dsl  # noqa: E402
from .dsl import (DslError, KernelDef, check, jit, kernel, load_pipe_as_python,  # noqa: E402,F401
                  python)

__all__ += [n for n in _dsl.EXPORTS if n not in __all__]


def __getattr__(name: str):  # noqa: ANN201
    try:
        return _dsl._NAMES[name]
    except KeyError:
        raise AttributeError(f"module 'pipeproof' has no attribute {name!r}") from None
