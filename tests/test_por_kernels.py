"""Stubborn-set reduction on multi-CTA programs: planted bugs in the bundled multicast
example and in the K1 kernel skeleton get the same verdict, property and (shortest)
counterexample length with the reduction as without it.

The reduction is what makes the 2x2-cluster and 2-CTA skeletons finish (thousands of
states instead of millions), so its commutation rules for exits, named barriers and
init visibility (checker/por/) are checked here on the programs they were made for,
not only on generated ones (tests/test_por.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from pipeproof.api import check_source
from helpers import NO_DEADLINE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MULTICAST = (EXAMPLES / "textbook" / "pipeline_tma_async_multicast.pipe").read_text()
K1 = (EXAMPLES / "kernels" / "k1_hopper_persistent_gemm.pipe").read_text()

#: (name, text to replace, replacement); None: the program as bundled
MULTICAST_MUTANTS = [
    ("as-bundled", None, None),
    ("consumer-count-1", "(cm + cn - 1) * consumer_warps", "(cm + cn - 2) * consumer_warps"),
    ("no-producer-tail", "        ab.producer_tail(state)\n", ""),
    ("tx-count+16", "tx_count=a_bytes + b_bytes,", "tx_count=a_bytes + b_bytes + 16,"),
    ("mask-mode-swapped", "mcast_mode=2)", "mcast_mode=1)"),
    ("no-consumer-release", "            ab.consumer_release(state)\n", ""),
    ("no-init-wait", "    pipeline_init_wait(cluster_shape_mn=(cm, cn))\n", ""),
    ("producer-starts-as-consumer",
     "make_pipeline_state(PipelineUserType.Producer, stages)",
     "make_pipeline_state(PipelineUserType.Consumer, stages)"),
    ("half-the-bytes", "bytes=a_bytes // cn", "bytes=a_bytes // cn // 2"),
]

K1_COUNT = "consumer_arrive_cnt = mcast_size * mma_warp_groups * num_warps_per_warp_group"
K1_MUTANTS = [
    ("as-bundled", None, None),
    ("consumer-count-x2", K1_COUNT, "consumer_arrive_cnt = 2 * mcast_size * mma_warp_groups"
                                    " * num_warps_per_warp_group"),
    ("consumer-count-1", K1_COUNT, K1_COUNT + " - 1"),
    ("no-producer-tail", "        mainloop_pipeline.producer_tail(mainloop_producer_state)\n",
     ""),
    ("no-epilogue-sync", "                epilog_sync_barrier.arrive_and_wait()\n", ""),
    ("no-proxy-fence", "                fence_proxy_async()\n", ""),
]


def _mutate(text: str, old: Optional[str], new: Optional[str]) -> str:
    if old is None:
        return text
    assert text.count(old) >= 1, f"mutation site {old!r} not found"
    return text.replace(old, new or "", 1)


def _key(v) -> tuple:
    return (v.status, v.prop, v.depth)


def _agree(src: str, params: dict, reference: dict) -> None:
    # the whole budget for confirming the shortest counterexample: lengths are compared
    red = check_source(src, params, timeout=NO_DEADLINE, max_states=2_000_000, por=True,
                       confirm_timeout=NO_DEADLINE, engine="explicit").verdict
    ref = check_source(src, params, timeout=NO_DEADLINE, max_states=2_000_000, engine="explicit",
                      **reference).verdict
    assert ref.status in ("PROVEN", "VIOLATED"), f"reference did not finish: {ref.reason}"
    assert _key(red) == _key(ref), (f"stubborn sets: {_key(red)}, reference "
                                    f"({reference}): {_key(ref)}")
    if red.status == "VIOLATED":
        assert red.trace is not None and len(red.trace) == red.depth


@pytest.mark.parametrize("cluster", [(1, 2), (2, 1)], ids=["1x2", "2x1"])
@pytest.mark.parametrize("name,old,new", MULTICAST_MUTANTS, ids=[m[0] for m in MULTICAST_MUTANTS])
def test_multicast_mutants_agree_with_the_full_interleaving(name: str, old: Optional[str],
                                                           new: Optional[str],
                                                           cluster: tuple) -> None:
    params = {"k_tiles": 1, "cm": cluster[0], "cn": cluster[1]}
    _agree(_mutate(MULTICAST, old, new), params, {"reduce": False})


@pytest.mark.parametrize("name,old,new", K1_MUTANTS, ids=[m[0] for m in K1_MUTANTS])
def test_k1_mutants_agree_with_the_step_reduction(name: str, old: Optional[str],
                                                  new: Optional[str]) -> None:
    """One CTA (the full interleaving of K1 takes 40-70 s per mutant: see the slow twin)."""
    _agree(_mutate(K1, old, new), {"cluster_m": 1, "cluster_n": 1}, {"por": False})


@pytest.mark.slow
@pytest.mark.parametrize("name,old,new", K1_MUTANTS, ids=[m[0] for m in K1_MUTANTS])
def test_k1_mutants_agree_with_the_full_interleaving(name: str, old: Optional[str],
                                                     new: Optional[str]) -> None:
    _agree(_mutate(K1, old, new), {"cluster_m": 1, "cluster_n": 1}, {"reduce": False})


#: one-CTA examples where ``--por auto`` turns the stubborn sets on (10 or more warps):
#: CTA-wide bar.sync, fences, async reads and barrier inits commute there
#: (checker/por/); the full interleaving of these does not finish in minutes, so the
#: reference is the step reduction with symmetry, itself checked against the full
#: interleaving in tests/test_reduction_hypothesis.py
ONE_CTA = ["bugs/p5-bug.pipe", "bugs/p5-fixed.pipe", "bugs/p10-bug.pipe",
           "bugs/p10-fixed.pipe", "textbook/flash_attention_extensions.pipe"]


@pytest.mark.parametrize("rel", ONE_CTA)
def test_one_cta_examples_agree_with_the_step_reduction(rel: str) -> None:
    _agree((EXAMPLES / rel).read_text(), {}, {"por": False})
