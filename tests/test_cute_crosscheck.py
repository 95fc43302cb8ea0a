"""The cross-check of lifted pipeline calls with ``model/pipelines/``
(``frontend/cute/crosscheck.py``, ``pipeproof check kernel.py::entry --cross-check``).

Every test kernel of ``tests/cute_kernels/`` and its planted bugs must give zero
findings (a planted bug is the user's, not CUTLASS's or the model's), and a model with
a rule changed must give findings, at the user's line."""

from __future__ import annotations

import pytest

from cute_helpers import cases

cutlass = pytest.importorskip(
    "cutlass", reason="nvidia-cutlass-dsl is not installed (pip install 'pipeproof[cute]')")

from pipeproof.cli import main  # noqa: E402
from pipeproof.frontend.cute import crosscheck, lift_entry  # noqa: E402
from pipeproof.model.pipelines.pipeline_async import PipelineAsync  # noqa: E402
from pipeproof.model.pipelines.pipeline_tma_async import PipelineTmaAsync  # noqa: E402

#: quick to compile and lift, and between them every kind of call: create, TMA
#: acquire with expect_tx, per-lane-signalling release, tcgen05 commit, participants,
#: bulk-group store pipeline, cp.async arrive
FAST = {"pipeline_tma_async_participants", "pipeline_tma_umma", "pipeline_tma_store",
        "pipeline_cp_async"}
#: kernels without a pipeline whose calls carry a PipelineState
NOTHING_TO_COMPARE = {"named_barrier", "cp_async_groups", "pipeline_order"}

CASES = cases()


def _param(c):
    marks = () if c.name in FAST and not c.bug else (pytest.mark.slow,)
    return pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_no_findings(case):
    lifted = lift_entry(case.entry, {"bug": case.bug} if case.bug else {}, case.arch,
                        crosscheck=True)
    cc = lifted.crosscheck
    assert cc is not None
    assert not cc.findings, crosscheck.report(cc)
    if case.name in NOTHING_TO_COMPARE:
        assert cc.compared == 0
    else:
        assert cc.compared > 0


def _participants():
    c = next(c for c in CASES if c.name == "pipeline_tma_async_participants" and not c.bug)
    return c


def test_changed_rule_is_a_finding(monkeypatch):
    """A model whose PipelineTmaAsync.consumer_release arrives from every lane (the
    AsyncThread rule of PipelineAsync) instead of the signalling lanes: every release
    of the lifted kernel (CUTLASS: lane 0 arrives once) is a finding at its line."""
    c = _participants()
    crosscheck._model_effects.cache_clear()
    monkeypatch.setattr(PipelineTmaAsync, "m_consumer_release",
                        PipelineAsync.m_consumer_release)
    try:
        cc = lift_entry(c.entry, {}, c.arch, crosscheck=True).crosscheck
    finally:
        crosscheck._model_effects.cache_clear()
    assert cc.findings
    assert {f.method for f in cc.findings} == {"consumer_release"}
    f = cc.findings[0]
    assert f.loc.file.endswith("pipeline_tma_async_participants.py") and f.loc.line > 0
    assert any("x1" in x for x in f.lifted) and any("x32" in x for x in f.model)
    assert "pipeline_tma_async_participants.py:" in str(f)


def test_changed_configuration_is_a_finding(monkeypatch):
    """A model that counts one arrival more per group: every create's init counts
    differ (the lifted counts are CUTLASS's _get_thread_arrive_count)."""
    from pipeproof.model.pipelines import base

    c = _participants()
    real = base.arrive_count
    crosscheck._model_effects.cache_clear()
    monkeypatch.setattr(base, "arrive_count", lambda *a: real(*a) + 1)
    try:
        cc = lift_entry(c.entry, {}, c.arch, crosscheck=True).crosscheck
    finally:
        crosscheck._model_effects.cache_clear()
    assert {f.method for f in cc.findings} == {"create"}


def test_cli_flag(capsys):
    c = next(c for c in CASES if c.name == "pipeline_tma_store" and not c.bug)
    rc = main(["check", c.entry, "--cross-check", "--engine", "explicit"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "cross-check with model/pipelines:" in out and "0 finding(s)" in out


def test_cli_flag_refused_for_pipe_files(capsys):
    c = next(c for c in CASES if c.name == "pipeline_tma_store" and not c.bug)
    assert main(["check", c.twin, "--cross-check"]) == 2
