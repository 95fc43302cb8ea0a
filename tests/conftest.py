"""Shared fixtures.  GPU tests are marked ``gpu`` and skipped without a GPU."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

# BMC's phases get no wall-clock shares in tests (checker/bmc.py check_bmc): on a slow,
# shared CI machine a phase that runs late must not hand the verdict to another phase
os.environ.setdefault("PIPEPROOF_PHASE_BUDGETS", "0")
# nor may the default engine's random runs win a race against the explicit engine
# (checker/portfolio.py swarm_after); tests/test_portfolio_swarm.py starts them itself
os.environ.setdefault("PIPEPROOF_SWARM_AFTER", "inf")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _have_gpu() -> bool:
    try:
        from cuda.bindings import driver  # type: ignore
    except Exception:
        return False
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, n = driver.cuDeviceGetCount()
        return int(err) == 0 and n > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    if os.environ.get("PIPEPROOF_GPU") == "1" or _have_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU with cuda-python here (GPU tests run on a "
                                   "GPU machine: PIPEPROOF_GPU=1 pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture
def have_ptxas() -> bool:
    return shutil.which("ptxas") is not None


@pytest.fixture(scope="module")
def no_quick_stage() -> Any:
    """The default engine without its quick stage (``checker/portfolio.py``
    ``quick_search``): for tests of the stages after it, which use small examples that
    the quick stage would decide on its own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIPEPROOF_QUICK_STATES", "0")
        yield
