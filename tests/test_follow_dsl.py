"""Where the model follows what CuTe DSL compiles rather than what a reading of the
source suggests (issue 22 item 8): neither a TMA store (``cute.copy`` of an S2G atom)
nor ``cute.arch.issue_clc_query`` elects a lane, so ``elect_one()`` around them is
legal, and every active lane of a warp that runs ``issue_clc_query`` issues a query.
(The tcgen05 commit's ``cta_group`` is tested with the emitter, ``tests/test_emit.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check

ROOT = Path(__file__).resolve().parent.parent
CLC = (ROOT / "examples" / "textbook" / "pipeline_clc_fetch_async.pipe").read_text()
QUERY = "            clc_query(clc, producer)\n"
STORE = (ROOT / "examples" / "textbook" / "pipeline_tma_store.pipe").read_text()


def _in_elect_one(src: str, line: str, new: str) -> str:
    assert src.count(line) == 1
    ind = line[:len(line) - len(line.lstrip())]
    return src.replace(line, f"{ind}with elect_one():\n{ind}    {new.strip()}\n")


# BMC on the whole-warp query (32 try_cancels) takes about a minute: the slow run only
@pytest.mark.parametrize("engine", ("explicit", pytest.param("bmc", marks=pytest.mark.slow)))
def test_clc_queries_elect_or_not(engine):
    # the scheduler's query (elects itself) and the raw one, both from an elected lane
    for src in (_in_elect_one(CLC, QUERY, QUERY),
                _in_elect_one(CLC, QUERY, QUERY.replace("clc_query", "issue_clc_query"))):
        assert check(src, engine=engine).status == "PROVEN"
    # the raw query from the whole warp: 32 try_cancel responses into one buffer
    r = check(CLC.replace(QUERY, QUERY.replace("clc_query", "issue_clc_query")), engine=engine)
    assert r.status == "VIOLATED"


def test_tma_store_inside_elect_one_is_legal():
    line = "                tma_store(store, buf)\n"
    src = _in_elect_one(STORE, line, line)
    assert check(src).status == "PROVEN"
    assert check(STORE).status == "PROVEN"  # every lane issues it: the same one step


ORDER = (ROOT / "examples" / "textbook" / "pipeline_order.pipe").read_text()
UNROLLED = "        for i in cutlass.range_constexpr(iterations):\n"


@pytest.mark.parametrize("engine", ("explicit", "bmc"))
def test_pipeline_order_state_is_not_carried_by_a_run_time_loop(engine):
    assert UNROLLED in ORDER
    assert check(ORDER, engine=engine).status == "PROVEN"
    runtime = ORDER.replace(UNROLLED, "        for i in range(iterations):\n")
    r = check(runtime, engine=engine)
    assert (r.status, r.prop) == ("VIOLATED", "arrival-overflow")
    explicit = ORDER.replace(UNROLLED + "            order.wait()\n            order.arrive()\n",
                             "        st = order.state.clone()\n"
                             "        for i in range(iterations):\n"
                             "            order.wait(st)\n"
                             "            st = order.arrive(st)\n")
    assert explicit != ORDER
    assert check(explicit, engine=engine).status == "PROVEN"


def test_after_a_run_time_loop_the_object_holds_one_pass_of_state():
    """Every iteration of a run-time loop waits with the entry parity; after the loop the
    object's state is the one a single traced pass of the body left (one advance)."""
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.lang.parser import parse
    from pipeproof.model.program import Wait

    src = """
@cute.kernel
def k(n: int = 3):
    launch(block=64, cluster=(1, 1, 1))
    order = PipelineOrder.create(depth=2, length=2, group_id=cute.arch.warp_idx(),
                                 producer_group=CooperativeGroup(Agent.Thread, 32))
    with role("g", warps=[0, 1]):
        for i in range(n):
            order.wait()
            order.arrive()
        order.wait()
"""
    ck = compile_kernel(parse(src), {})
    waits = [(w.bar.stage, w.parity) for w in ck.program(0, 0).code if isinstance(w, Wait)]
    # group 0: stage 0 parity 1 in each of the 3 iterations, then stage 1 after the loop
    assert waits == [(0, 1), (0, 1), (0, 1), (2, 1)]


def test_a_run_time_loop_without_an_iteration_over_pipeline_order_is_unknown():
    from pipeproof.model.errors import Unsupported

    zero = ORDER.replace(UNROLLED, "        for i in range(iterations - 2):\n")
    with pytest.raises(Unsupported, match="runs no full iteration"):
        check(zero)
