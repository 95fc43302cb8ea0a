"""A small grammar-aware fuzz test (issue 23): mutations of the bundled examples -- a
line deleted or duplicated, a number changed to 0, -1 or 2**40, two tokens swapped,
the file cut short -- run through ``pipeproof.cli.main`` in process.  Every outcome
must be an exit code 0, 1, 2 or 3, without a traceback and without a Python repr in
the message.

The search is bounded by states and depth (``--max-states``, ``--depth``), never by
wall-clock time, so a slow machine cannot change an outcome.  The default run is a
fixed, derandomized set of inputs that finishes in well under a minute on a slow
2-core machine; ``pytest -m slow tests/test_fuzz_inputs.py`` runs a longer one."""

from __future__ import annotations

import io
import re
import tempfile
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.cli import main

EX = Path(__file__).resolve().parent.parent / "examples"
#: the small examples (the skeletons of examples/kernels take seconds to compile)
SOURCES = sorted(p for d in ("textbook", "bugs", "liveness")
                 for p in (EX / d).glob("*.pipe"))
TEXTS = {p.name: p.read_text() for p in SOURCES}
NAMES = sorted(TEXTS)

#: tokens as the .pipe lexer sees them, roughly: names, numbers, strings, operators
TOKEN = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F_]+|\d[\d_]*|\"[^\"\n]*\"|\*\*|//|<<|>>|"
                   r"[<>=!]=|[-+*/%&|^~<>=()\[\],.:@]")
NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?![\w.])")
BOUND = ["--engine", "explicit", "--max-states", "300", "--depth", "40", "--jobs", "1",
         "--por", "off", "-q"]
REPR = re.compile(r"<function |<class |<bound method | at 0x[0-9a-f]+|Builtin\(|"
                  r"PipelineClassRef\(")


def _mutate(text: str, kind: str, i: int, j: int, value: str) -> str:
    lines = text.splitlines(keepends=True)
    if not text:
        return text
    if kind == "delete":
        del lines[i % len(lines)]
        return "".join(lines)
    if kind == "duplicate":
        k = i % len(lines)
        lines.insert(k, lines[k])
        return "".join(lines)
    if kind == "number":
        nums = list(NUMBER.finditer(text))
        if not nums:
            return text
        m = nums[i % len(nums)]
        return text[:m.start()] + value + text[m.end():]
    if kind == "swap":
        toks = list(TOKEN.finditer(text))
        if not toks:
            return text
        a, b = sorted((toks[i % len(toks)], toks[j % len(toks)]), key=lambda m: m.start())
        if a.start() == b.start():
            return text
        return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group()
                + text[b.end():])
    if kind == "truncate":
        return text[: i % (len(text) + 1)]
    raise AssertionError(kind)


mutations = st.tuples(
    st.sampled_from(NAMES),
    st.lists(st.tuples(st.sampled_from(["delete", "duplicate", "number", "swap", "truncate"]),
                       st.integers(0, 10_000), st.integers(0, 10_000),
                       st.sampled_from(["0", "-1", "2**40", "1", "3"])),
             min_size=1, max_size=2))


def _run_one(workdir: Path, name: str, muts: list) -> None:
    text = TEXTS[name]
    for kind, i, j, value in muts:
        text = _mutate(text, kind, i, j, value)
    f = workdir / name
    f.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = main(["check", str(f), *BOUND])
    except BaseException:  # noqa: BLE001 - the point: nothing may escape main()
        pytest.fail(f"{name} {muts}: main() raised\n{traceback.format_exc()}\n--- input:\n"
                    f"{text}")
    text_out = out.getvalue() + err.getvalue()
    assert rc in (0, 1, 2, 3), (name, muts, rc, text_out)
    assert "Traceback" not in text_out, (name, muts, text_out)
    assert not REPR.search(text_out), (name, muts, text_out)
    if rc == 2:
        assert "error" in err.getvalue(), (name, muts, text_out)


_WORK = Path(tempfile.mkdtemp(prefix="pipeproof-fuzz-"))


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_mutated_examples_end_in_an_exit_code(m) -> None:
    name, muts = m
    _run_one(_WORK, name, muts)


@pytest.mark.slow
@settings(max_examples=2000, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_mutated_examples_end_in_an_exit_code_long(m) -> None:
    name, muts = m
    _run_one(_WORK, name, muts)


def test_the_mutations_do_what_they_say() -> None:
    t = "a = 1\nb = 22\n"
    assert _mutate(t, "delete", 0, 0, "") == "b = 22\n"
    assert _mutate(t, "duplicate", 1, 0, "") == "a = 1\nb = 22\nb = 22\n"
    assert _mutate(t, "number", 1, 0, "2**40") == "a = 1\nb = 2**40\n"
    assert _mutate(t, "swap", 0, 2, "") == "1 = a\nb = 22\n"
    assert _mutate(t, "truncate", 3, 0, "") == "a ="
