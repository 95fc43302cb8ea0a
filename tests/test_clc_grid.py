"""A bounded grid (``launch(grid=...)``) bounds the CLC responses that name a tile.

A cluster can cancel at most the ``grid_clusters - 1`` clusters that have not started
(PTX ISA clusterlaunchcontrol.try_cancel), so the scheduler's later queries answer "no
more work", every warp's loop over responses ends, and the programs have no back edge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.api import check_source, compile_file
from pipeproof.cli import main
from pipeproof.model.compile import compile_kernel
from pipeproof.model.errors import ConfigError
from pipeproof.model.lang.parser import parse
from pipeproof.model.program import Fail, TmaLoad, back_edges

CLC = Path(__file__).resolve().parent.parent / "examples" / "textbook" / \
    "pipeline_clc_fetch_async.pipe"


def _with_grid(grid: str) -> str:
    return CLC.read_text().replace("launch(block=64, cluster=(2, 1, 1))",
                                   f"launch(block=64, cluster=(2, 1, 1), grid={grid})")


@pytest.mark.parametrize("clusters", [1, 2, 4])
def test_a_bounded_grid_unrolls_the_scheduler_and_the_workers(clusters: int) -> None:
    ck = compile_kernel(parse(_with_grid(f"({2 * clusters}, 1, 1)")), {})
    assert ck.info.grid_clusters == clusters
    for prog in ck.programs:
        assert not back_edges(prog.code), prog
    sched = [p for p in ck.programs if p.role == "sched"]
    assert len(sched) == 1
    queries = [i for i in sched[0].code if isinstance(i, TmaLoad) and i.kind == "clc"]
    # queries 0 .. clusters-2 may cancel a cluster; the next one cannot
    assert [q.may_succeed for q in queries] == [True] * (clusters - 1) + [False]
    r = check_source(_with_grid(f"({2 * clusters}, 1, 1)"), engine="explicit")
    assert r.status == "PROVEN", r.render_text()


def test_without_a_grid_the_loops_stay_cyclic() -> None:
    ck = compile_file(CLC)
    assert ck.info.grid_clusters is None
    assert any(back_edges(p.code) for p in ck.programs)


def test_the_static_no_more_work_is_a_checked_assumption() -> None:
    """Where the compiler turns a response read into a static "no more work", the
    branch on which the response is nevertheless valid leads to a role-misuse failure
    (it is unreachable when every warp reads each response once, in order)."""
    ck = compile_kernel(parse(_with_grid("(4, 1, 1)")), {})
    fails = [i for p in ck.programs for i in p.code if isinstance(i, Fail)]
    assert fails and all(f.prop == "role-misuse" and f.guard == "clc-grid" for f in fails)
    assert "must say 'no more work'" in fails[0].message


@pytest.mark.parametrize("grid,msg", [
    ("(3, 1, 1)", "not a multiple of the cluster"),
    ("(0, 1, 1)", "expected positive ints"),
    ("(2, 1, 1, 1)", "expected up to three"),
])
def test_a_bad_grid_is_a_config_error(tmp_path: Path, grid: str, msg: str,
                                      capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(")):
        compile_kernel(parse(_with_grid(grid)), {})
    f = tmp_path / "k.pipe"
    f.write_text(_with_grid(grid))
    assert main(["check", str(f)]) == 2
    assert msg in capsys.readouterr().err


_RELEASE = "clc.consumer_release(consumer)"


def _mutant(src: str, name: str) -> str:
    if name == "missing-worker-release":
        i = src.rfind(_RELEASE)  # the worker's release (the last one)
        return src[:i] + "pass" + src[i + len(_RELEASE):]
    if name == "missing-producer-tail":
        return src.replace("clc.producer_tail(producer)", "pass")
    return src


@pytest.mark.parametrize("clusters", [2, 3])
@pytest.mark.parametrize("name", ["correct", "missing-worker-release", "missing-producer-tail"])
def test_bounded_grid_reduction_agrees_with_the_full_interleaving(clusters: int,
                                                                  name: str) -> None:
    """With the grid bound the programs are acyclic, so the partial-order and symmetry
    reductions run: same verdict, property and counterexample length as the full
    interleaving graph."""
    s = _mutant(_with_grid(f"({2 * clusters}, 1, 1)"), name)
    a = check_source(s, engine="explicit", por=True)
    b = check_source(s, engine="explicit", por=False, reduce=False)
    assert (a.status, a.prop) == (b.status, b.prop)
    assert (a.status == "PROVEN") == (name == "correct")
    if a.status == "VIOLATED":
        assert a.verdict.depth == b.verdict.depth
