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


def test_no_suggestion_for_a_name_like_nothing(tmp_path, capsys):
    f = tmp_path / "k.pipe"
    f.write_text(SRC.replace("pipe.consumer_wait(state)", "pipe.xyzzy(state)", 1))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "xyzzy" in err and "did you mean" not in err
