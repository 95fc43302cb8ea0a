"""Misspelt names get a "did you mean": a pipeline method, a keyword argument of one, a
builtin, a ``--param`` name (``model/errors.did_you_mean``); exit 2 with the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.cli import main

SRC = (Path(__file__).resolve().parent.parent / "examples" / "textbook" /
       "pipeline_async.pipe").read_text()


@pytest.mark.parametrize("old,new,expect", [
    ("pipe.consumer_wait(state)", "pipe.consumer_wiat(state)", "did you mean 'consumer_wait'?"),
    ("pipe.producer_acquire(state)", "pipe.producer_acquire(state, try_acquire_tokn=None)",
     "did you mean 'try_acquire_token'?"),
    ("make_pipeline_state(PipelineUserType.Producer, stages)",
     "make_pipline_state(PipelineUserType.Producer, stages)",
     "did you mean 'make_pipeline_state'?"),
    # enum members, PipelineState methods, launch()/role() and constructor keywords,
    # a misspelt parameter in the body
    ("Agent.Thread, 32),\n        consumer", "Agent.Thred, 32),\n        consumer",
     "did you mean 'Thread'?"),
    ("PipelineUserType.Producer", "PipelineUserType.Produce", "did you mean 'Producer'?"),
    ("state.advance()", "state.advanse()", "did you mean 'advance'?"),
    ("launch(block=64", "launch(blok=64", "did you mean 'block'?"),
    ('role("producer", warps=[0])', 'role("producer", warp=[0])',
     "warp= is no argument here; did you mean warps=?"),
    ('role("consumer", warps=[1])', 'role("consumer", warps=[1], cta=[0])',
     "did you mean 'ctas'?"),
    ("num_stages=stages", "num_stage=stages",
     "num_stage= is no argument here; did you mean num_stages=?"),
    ("range(k_tiles)", "range(k_tile)", "did you mean 'k_tiles'?"),
])
def test_misspelt_names(tmp_path, capsys, old, new, expect):
    assert old in SRC
    f = tmp_path / "k.pipe"
    f.write_text(SRC.replace(old, new, 1))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert expect in err, err
    assert "k.pipe:" in err


def test_misspelt_param(capsys):
    f = Path(__file__).resolve().parent.parent / "examples" / "textbook" / "pipeline_async.pipe"
    assert main(["check", str(f), "--param", "k_tile=3"]) == 2
    assert "did you mean 'k_tiles'?" in capsys.readouterr().err


TMA = (Path(__file__).resolve().parent.parent / "examples" / "textbook" /
       "pipeline_tma_async.pipe").read_text()


@pytest.mark.parametrize("old,new,expect", [
    ("bytes=", "byts=", "did you mean 'bytes'?"),                      # a builtin's keyword
    ("defer_sync=True", "defer_synk=True", "did you mean 'defer_sync'?"),  # create()'s
    ("tx_count=tile_bytes", "tx_cnt=tile_bytes",
     "tx_cnt= is no argument here; did you mean tx_count=?"),
])
def test_misspelt_keywords(tmp_path, capsys, old, new, expect):
    assert old in TMA
    f = tmp_path / "k.pipe"
    f.write_text(TMA.replace(old, new, 1))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert expect in err and "k.pipe:" in err, err


def test_no_suggestion_for_a_name_like_nothing(tmp_path, capsys):
    f = tmp_path / "k.pipe"
    f.write_text(SRC.replace("pipe.consumer_wait(state)", "pipe.xyzzy(state)", 1))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "xyzzy" in err and "did you mean" not in err
