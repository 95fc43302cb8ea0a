"""The .pipe parser's cached LALR tables (model/lang/parser.py ``_build_parser``): a parser
loaded from the cache parses every example to the same tree as one built from the grammar,
and a damaged or unwritable cache falls back to building the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lark import Token, Tree

from pipeproof.model.lang import parser as P

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").rglob("*.pipe"))
#: the largest example of each folder (lark parses 0.1-0.3 s a file on a loaded machine;
#: the whole set is the slow test below)
SAMPLE = [max((e for e in EXAMPLES if e.parent == d), key=lambda e: e.stat().st_size)
          for d in sorted({e.parent for e in EXAMPLES})]


def _norm(t: Any) -> Any:
    """A tree as plain tuples: rule names, token types and values, and every position
    (lark's own ``==`` compares tokens as strings only)."""
    if isinstance(t, Tree):
        m = None if t.meta.empty else (t.meta.line, t.meta.column, t.meta.end_line,
                                       t.meta.end_column)
        return (str(t.data), m, tuple(_norm(c) for c in t.children))
    if isinstance(t, Token):
        return (t.type, str(t), t.line, t.column, t.end_line, t.end_column)
    return t


def _parse_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: list[Path]) -> None:
    monkeypatch.setenv("PIPEPROOF_PARSER_CACHE", str(tmp_path))
    fresh = P._build_parser(cache=False)
    written = P._build_parser()  # builds the tables and writes the file
    (f,) = tmp_path.glob("pipe-*.lark")
    assert not list(tmp_path.glob("*.tmp"))
    loaded = P._build_parser()  # reads it
    for ex in files:
        text = ex.read_text()
        want = _norm(fresh.parse(text))
        assert _norm(written.parse(text)) == want, ex
        assert _norm(loaded.parse(text)) == want, ex


def test_cached_tables_parse_examples_alike(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(SAMPLE) >= 4
    _parse_alike(tmp_path, monkeypatch, SAMPLE)


@pytest.mark.slow
def test_cached_tables_parse_every_example_alike(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(EXAMPLES) > 20
    _parse_alike(tmp_path, monkeypatch, EXAMPLES)


def test_damaged_cache_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPEPROOF_PARSER_CACHE", str(tmp_path))
    P._build_parser()
    (f,) = tmp_path.glob("pipe-*.lark")
    f.write_bytes(f.read_bytes()[:200])  # cut short, as by a full disk
    text = EXAMPLES[0].read_text()
    assert _norm(P._build_parser().parse(text)) == _norm(P._build_parser(cache=False).parse(text))


def test_without_a_writable_cache_the_tables_are_built(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PIPEPROOF_PARSER_CACHE", str(blocker / "parser"))  # not a folder
    text = EXAMPLES[0].read_text()
    assert _norm(P._build_parser().parse(text)) == _norm(P._build_parser(cache=False).parse(text))
    monkeypatch.setenv("PIPEPROOF_PARSER_CACHE", "off")
    assert P.parser_cache_dir() is None
