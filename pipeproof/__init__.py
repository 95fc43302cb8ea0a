"""pipeproof: a model-checked reference implementation of the CUTLASS CuTe DSL
asynchronous pipelines.

    from pipeproof import check_file
    result = check_file("examples/textbook/pipeline_async.pipe")
    print(result.verdict.headline())
"""

__version__ = "0.1.0"

from .api import CheckResult, check_file, check_kernel, check_source, compile_file  # noqa: E402

__all__ = ["__version__", "CheckResult", "check_file", "check_kernel", "check_source",
           "compile_file"]
