"""Every pipeline class the model knows, by its CUTLASS name.  The class modules know
nothing of this list (imports go one way: registry -> classes)."""

from __future__ import annotations

from .named_barrier import NamedBarrier
from .pipeline_async import PipelineAsync
from .pipeline_async_umma import PipelineAsyncUmma
from .pipeline_clc_fetch_async import PipelineClcFetchAsync
from .pipeline_cp_async import PipelineCpAsync
from .pipeline_order import PipelineOrder
from .pipeline_tma_async import PipelineTmaAsync
from .pipeline_tma_multi_consumers_async import PipelineTmaMultiConsumersAsync
from .pipeline_tma_store import PipelineTmaStore
from .pipeline_tma_umma import PipelineTmaUmma
from .pipeline_umma_async import PipelineUmmaAsync
from .tma_store_fence import TmaStoreFence
from .tmem_allocator import TmemAllocator

#: classes built with ``Class.create(**kwargs)``
PIPELINE_CLASSES: list = [PipelineAsync, PipelineTmaAsync, PipelineTmaStore, PipelineOrder,
                          PipelineAsyncUmma, PipelineClcFetchAsync, PipelineCpAsync,
                          PipelineTmaUmma, PipelineTmaMultiConsumersAsync, PipelineUmmaAsync]
#: classes built with ``Class(...)``
CONSTRUCTED: list = [NamedBarrier, TmaStoreFence, TmemAllocator]
