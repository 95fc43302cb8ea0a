"""The distributed mode (issue 26 item 3, ``checker/distributed.py``): differential tests
against the single-process explicit engine.

* The hash-partitioned search with partitions in this process (no Dask needed): on
  textbook, bug and liveness examples its verdict, property and counterexample length
  equal ``check_explicit``'s for 1 and 3 partitions, and where it proves, the state
  count too (one state per class of symmetric warps, whatever the process).
* On a ``LocalCluster`` of 2 worker processes (skipped where Dask is not installed):
  the partitioned search over actors, a ``--param`` range as one task per value and
  ``check_many`` give the single-process answers.
* Without Dask: ``--dask`` is a clear message and exit code 2, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pipeproof.api import check_file, check_many, compile_file
from pipeproof.checker.distributed import check_distributed
from pipeproof.checker.explicit import check_explicit
from pipeproof.checker.statespace import Explorer
from pipeproof.cli import main
from pipeproof.model.system import System
from helpers import NO_DEADLINE

EX = Path(__file__).resolve().parent.parent / "examples"

#: small examples (each well under a second in one process): PROVEN, a deadlock, other
#: safety violations, starvation and its absence (whole-graph analysis), warp symmetry
#: (p2: three interchangeable consumers) and a two-CTA cluster (stubborn sets, por=auto)
CASES = [
    "textbook/pipeline_async.pipe",
    "textbook/pipeline_tma_async.pipe",
    "textbook/pipeline_tma_umma.pipe",
    "textbook/pipeline_tma_async_multicast.pipe",
    "textbook/stream_k_fixup.pipe",
    "bugs/p1-bug.pipe",
    "bugs/p2-bug.pipe",
    "bugs/p2-fixed.pipe",
    "bugs/p6-bug.pipe",
    "bugs/g2-bug.pipe",
    "bugs/g4-bug.pipe",
    "bugs/l1-fixed.pipe",
    "liveness/persistent_consumer_stops_releasing.pipe",
    "liveness/persistent_consumer_releases.pipe",
]


def _system(rel: str) -> System:
    return System(compile_file(EX / rel))


def _same(got, want) -> None:
    assert (got.status, got.prop, got.depth) == (want.status, want.prop, want.depth), \
        (got.status, got.prop, got.depth, got.reason, want.status, want.prop, want.depth)
    if want.status == "PROVEN":
        assert got.stats.states == want.stats.states
    if want.trace is not None:
        assert got.trace is not None and len(got.trace.steps) == len(want.trace.steps)
        assert got.trace.violated == want.trace.violated


@pytest.mark.parametrize("rel", CASES)
def test_partitioned_search_equals_explicit(rel: str) -> None:
    want = check_explicit(_system(rel), max_states=50_000, timeout=NO_DEADLINE)
    assert want.status in ("PROVEN", "VIOLATED")
    for parts in (1, 3):
        got = check_distributed(_system(rel), partitions=parts, max_states=50_000,
                                timeout=NO_DEADLINE)
        _same(got, want)
        assert got.stats.engine == "distributed"
        assert sum(got.stats.extra["states_per_partition"]) <= got.stats.states
    if parts > 1 and want.status == "PROVEN" and want.stats.states > 30:
        # the hash spreads the states: no partition holds them all
        assert max(got.stats.extra["states_per_partition"]) < got.stats.states


def test_counterexample_replays_on_the_concrete_model() -> None:
    """A counterexample assembled from three partitions' parent links is a run of the
    unreduced model that ends in the reported violation."""
    system = _system("bugs/p6-bug.pipe")
    v = check_distributed(system, partitions=3, max_states=50_000, timeout=NO_DEADLINE)
    assert v.status == "VIOLATED" and v.trace is not None
    ex = Explorer(system, symmetry=False)
    state = ex.initial
    last = None
    for step in v.trace.steps:
        nxt = [(n, viol) for s, n, viol in ex._all_successors(state) if s == step]
        assert nxt, step
        state, last = nxt[0]
    assert last is not None and last[0] == v.prop


def test_symmetry_representative_is_process_independent() -> None:
    """Two explorers that intern components in different orders pick the same
    representative (the partitions exchange states by value)."""
    from pipeproof.checker.distributed import PortableExplorer

    system = _system("bugs/p2-fixed.pipe")
    a = PortableExplorer(system)
    b = PortableExplorer(system)
    assert a.groups
    # b interns a few other components first: its numbers differ from a's
    for comp in list(a.packer.table)[::-1]:
        b.packer.intern(comp + (None,))
    seen = [a.initial]
    for _ in range(4):
        nxt = []
        for st in seen:
            for _step, n, _v in a.successors(st):
                nxt.append(n)
        seen = nxt[:40]
        for st in seen:
            pa = a.portable(st)
            pb = b.portable(b.canon(b.local(pa)))
            assert pa == pb
            assert a.owner(st, 5) == b.owner(b.local(pa), 5)


def test_state_limit_is_unknown() -> None:
    v = check_distributed(_system("bugs/p2-fixed.pipe"), partitions=2, max_states=50,
                          timeout=NO_DEADLINE)
    assert v.status == "UNKNOWN" and "state limit" in v.reason


def test_without_dask_a_message_and_exit_2(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    rc = main(["check", str(EX / "bugs/p2-bug.pipe"), "--dask", "local:2"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "pip install 'pipeproof[dask]'" in err and "Traceback" not in err


def test_dask_option_refuses_other_engines_and_jobs(capsys) -> None:
    f = str(EX / "bugs/p2-bug.pipe")
    assert main(["check", f, "--dask", "local:2", "--engine", "bmc"]) == 2
    assert "--engine bmc" in capsys.readouterr().err
    assert main(["check", f, "--dask", "local:2", "--jobs", "2"]) == 2
    assert "exclude each other" in capsys.readouterr().err


# --------------------------------------------------------------------------- on Dask


#: few and small: every level is a round trip to the workers
DASK_CASES = ["textbook/pipeline_async.pipe", "bugs/p2-bug.pipe",
              "liveness/persistent_consumer_stops_releasing.pipe"]


def test_on_a_local_dask_cluster() -> None:
    """One test, one cluster of 2 worker processes (a test per check would start one
    cluster per pytest-xdist worker)."""
    pytest.importorskip("distributed", reason="Dask is optional: pip install "
                        "'pipeproof[dask]'")
    from pipeproof.checker.distributed import close, connect

    client = connect("local:2")
    try:
        # connect returns once both workers have registered (not when the first has)
        assert len(client.nthreads()) == 2
        _partitioned_search_equals_one_process(client)
        _param_range_and_many_kernels(client)
        _command_line_on_a_scheduler_address(client.scheduler.address)
    finally:
        close(client)


def _partitioned_search_equals_one_process(client) -> None:
    """On the workers from the first level (``warm_states=0``), and after the first
    levels in the client (a level of 2 states moves the partitions to the workers)."""
    for rel in DASK_CASES:
        want = check_explicit(_system(rel), max_states=50_000, timeout=NO_DEADLINE)
        for warm in (0, 2):
            got = check_distributed(_system(rel), client=client, max_states=50_000,
                                    timeout=NO_DEADLINE, warm_states=warm)
            _same(got, want)
            assert got.stats.extra["partitions"] == 2
            moved_at = got.stats.extra["levels_in_client"]
            assert moved_at == 0 if warm == 0 else 0 < moved_at < got.stats.depth, \
                (rel, warm, moved_at, got.stats.depth)


def _param_range_and_many_kernels(client) -> None:
    """A range: one task per value, the answer of the values checked in this process;
    several kernels: one task each, the results in order."""
    f = EX / "textbook/pipeline_async.pipe"
    params = {"stages": range(1, 3), "k_tiles": range(2, 4)}
    want = check_file(f, params, engine="explicit", timeout=NO_DEADLINE, symbolic_params=False,
                      jobs=1)
    got = check_file(f, params, engine="explicit", timeout=NO_DEADLINE, dask=client)
    assert (got.status, got.prop) == (want.status, want.prop) == ("PROVEN", None)
    assert got.verdict.stats.extra["parameter_values_checked"] == 4
    items = [(str(EX / "bugs/p2-bug.pipe"), None), (str(f), {"stages": 1})]
    many = check_many(items, dask=client, engine="explicit", timeout=NO_DEADLINE)
    one = check_many(items, engine="explicit", timeout=NO_DEADLINE)
    assert [(r.status, r.prop, r.verdict.depth) for r in many] == \
        [(r.status, r.prop, r.verdict.depth) for r in one]
    assert [r.status for r in many] == ["VIOLATED", "PROVEN"]


def _command_line_on_a_scheduler_address(address: str) -> None:
    """``--dask tcp://...``: a running scheduler, for one configuration and for a range
    (one process: value by value too); the answers are those of one process."""
    import contextlib
    import io
    import json

    f = str(EX / "bugs/p2-bug.pipe")
    for extra in ([], ["--param", "k_tiles=1..2"]):
        answers = []
        for how in (["--jobs", "1", "--param-values"], ["--dask", address]):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = main(["check", f, "--engine", "explicit", "--json", "--quiet",
                           *extra, *how])
            d = json.loads(buf.getvalue())
            answers.append((rc, d["status"], d["property"], d["depth"], d["params"]))
        assert answers[0] == answers[1], (extra, answers)
        assert answers[0][:3] == (1, "VIOLATED", "deadlock")
