"""Every pipeline class the model knows, by its CUTLASS name."""

from __future__ import annotations

from .named_barrier import NamedBarrier
from .pipeline_async import PipelineAsync
from .pipeline_order import PipelineOrder
from .pipeline_tma_async import PipelineTmaAsync
from .pipeline_tma_store import PipelineTmaStore
from .tma_store_fence import TmaStoreFence

#: classes built with ``Class.create(**kwargs)``
PIPELINE_CLASSES: list = [PipelineAsync, PipelineTmaAsync, PipelineTmaStore, PipelineOrder]
#: classes built with ``Class(...)``
CONSTRUCTED: list = [NamedBarrier, TmaStoreFence]


def register(cls: type) -> type:
    """Add a ``create``-style pipeline class (used by the class modules that follow)."""
    if cls not in PIPELINE_CLASSES:
        PIPELINE_CLASSES.append(cls)
    return cls


def _load_all() -> None:
    """Import the class modules that register themselves."""
    from . import (pipeline_async_umma, pipeline_clc_fetch_async,  # noqa: F401
                   pipeline_cp_async, pipeline_tma_multi_consumers_async, pipeline_tma_umma,
                   pipeline_umma_async)


_load_all()
