"""The first answer (issue 24 item 4): a counterexample found with a reduction is shown
as soon as it is found (``on_found``), while a search proves it shortest; ``--no-confirm``
skips that search.  The final verdict never depends on whether the first answer was
shown, and the first answer is always a real counterexample of the same kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeproof.api import check_file
from pipeproof.checker.portfolio import _Forked, _race
from pipeproof.checker.verdict import UNKNOWN, VIOLATED, Verdict
from pipeproof.cli import FirstAnswer, ProgressLine, build_parser, main
from helpers import NO_DEADLINE

BUGS = Path(__file__).resolve().parent.parent / "examples" / "bugs"


def _key(r: Any) -> str:
    return json.dumps([r.verdict.prop, r.verdict.trace.to_json()], sort_keys=True,
                      default=str)


def test_explicit_engine_shows_the_reduced_counterexample_before_confirming() -> None:
    """s2-bug: partial-order reduction finds the overwrite at once; the unreduced
    search then finds none shorter, so the final answer is the counterexample shown."""
    shown: list[Any] = []
    r = check_file(BUGS / "s2-bug.pipe", engine="explicit", on_found=shown.append,
                   confirm_timeout=NO_DEADLINE)
    assert len(shown) == 1
    first = shown[0]
    assert first.status == VIOLATED and first.prop == r.prop == "overwrite-before-release"
    assert "now proving that no counterexample is shorter" in first.render_text()
    assert "confirm_timeout=0 skips this" in first.render_text()
    assert r.verdict.stats.extra["shortest"] is True
    assert _key(first) == _key(r)
    assert "confirming" not in r.verdict.stats.extra
    assert "shorter counterexample" not in r.render_text()


def test_no_confirm_skips_the_search_and_says_so() -> None:
    shown: list[Any] = []
    r = check_file(BUGS / "s2-bug.pipe", engine="explicit", on_found=shown.append,
                   confirm_timeout=0.0)
    assert shown == []  # nothing is shown early: the answer is final at once
    v = r.verdict
    assert v.status == VIOLATED and v.stats.extra["confirm_skipped"] is True
    assert v.stats.extra["shortest"] is False
    text = r.render_text()
    assert "not confirmed shortest (confirm_timeout=0" in text
    assert "a shorter counterexample may exist" in text


def test_no_first_answer_for_counterexamples_found_shortest() -> None:
    """Breadth-first without a reduction: the first counterexample is a shortest one."""
    shown: list[Any] = []
    r = check_file(BUGS / "s2-bug.pipe", engine="explicit", reduce=False,
                   on_found=shown.append)
    assert r.status == VIOLATED and shown == []


def test_cli_prints_the_counterexample_once_then_the_confirmation(capsys: Any) -> None:
    rc = main(["check", str(BUGS / "s2-bug.pipe"), "--engine", "explicit",
               "--confirm-timeout", "300", "--width", "100"])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.count("VIOLATED overwrite-before-release") == 1
    assert out.count("Counterexample (") == 1
    assert out.index("now proving") < out.index("Counterexample (") \
        < out.index("Confirmed")
    assert "no counterexample is shorter than these 13 steps" in out


def test_cli_no_confirm(capsys: Any) -> None:
    rc = main(["check", str(BUGS / "s2-bug.pipe"), "--engine", "explicit", "--no-confirm"])
    out = capsys.readouterr().out
    assert rc == 1 and out.count("Counterexample (") == 1
    assert "not confirmed shortest (--no-confirm" in out and "Confirmed" not in out
    rc = main(["check", str(BUGS / "s2-bug.pipe"), "--no-confirm", "--confirm-timeout", "5"])
    assert rc == 2
    assert "--no-confirm and --confirm-timeout exclude each other" in capsys.readouterr().err


def test_cli_json_prints_one_document(capsys: Any) -> None:
    rc = main(["check", str(BUGS / "s2-bug.pipe"), "--engine", "explicit", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["property"] == "overwrite-before-release"


def test_a_replacing_counterexample_is_printed_whole(capsys: Any) -> None:
    """When the confirming search ends with another counterexample (shorter, or of a
    property first in the catalogue), the output says so and prints it whole."""
    args = build_parser().parse_args(["check", "x", "--width", "100"])
    first = FirstAnswer(args, None)
    a = check_file(BUGS / "s2-bug.pipe", engine="explicit")
    b = check_file(BUGS / "p6-bug.pipe", engine="explicit")
    first(a)
    first.finish(b)
    out = capsys.readouterr().out
    assert out.count("Counterexample (") == 2
    assert "it replaces the one above" in out
    assert out.rindex(b.verdict.headline()) > out.index("it replaces the one above")


def test_progress_line_while_confirming() -> None:
    class Tty:
        buf = ""

        def write(self, s: str) -> None:
            self.buf += s

        def flush(self) -> None:
            pass

    s = Tty()
    p = ProgressLine(s)
    p(1_234, 17, 3.2, confirm=44)
    assert "proving that no counterexample is shorter: depth 17 of 44" in s.buf
    assert "1,234 states" in s.buf and "--no-confirm skips this" in s.buf


def _cert_unknown(gate: Any, notify: Any) -> Verdict:
    return Verdict(UNKNOWN, reason="no certificate (test)")


def _explicit_found_then_final(gate: Any, notify: Any) -> Verdict:
    notify(Verdict(VIOLATED, "deadlock", "first", depth=9))
    gate.wait(60)  # the parent opens the gate after the race: the found one comes first
    return Verdict(VIOLATED, "deadlock", "final", depth=7)


def test_race_hands_on_the_explicit_engines_first_answer_once() -> None:
    """--engine auto with two processes: a counterexample the forked explicit engine
    sends before its answer reaches ``on_found`` exactly once, before the answer."""
    import time

    seen: list[str] = []
    expl = _Forked(_explicit_found_then_final, "explicit engine")
    try:
        cert = _Forked(_cert_unknown, "BMC certificate")
        try:
            v, e = _race(cert, expl, time.perf_counter(), 60.0,
                         lambda f: seen.append(f.reason))
        finally:
            cert.cancel()
        assert v.status == UNKNOWN
        expl.gate.set()
        # e: the explicit answer, where it came during the race (a slow certificate)
        final = e or expl.wait_result(60.0, lambda f: seen.append(f.reason))
    finally:
        expl.cancel()
    assert final is not None and final.reason == "final"
    assert seen == ["first"]


@pytest.mark.parametrize("flag", ["--no-confirm"])
def test_no_confirm_is_a_user_option(flag: str) -> None:
    """--no-confirm is listed with the limits, not under advanced engine tuning."""
    text = build_parser()._subparsers._group_actions[0].choices["check"].format_help()
    assert flag in text
    assert text.index(flag) < text.index("advanced engine tuning")


def test_a_counterexample_sent_before_a_lost_answer_stands() -> None:
    """The forked explicit engine sent a counterexample, then its process ended without
    an answer: the verdict is that counterexample (not confirmed shortest), never the
    UNKNOWN or a later stage's bounded SAFE."""
    from pipeproof.checker.portfolio import keep_found

    found = Verdict(VIOLATED, "deadlock", "first", depth=9)
    found.stats.extra["confirming"] = 20.0
    lost = Verdict(UNKNOWN, reason="the explicit engine's process ended without an answer")
    v = keep_found(lost, found)
    assert v.status == VIOLATED and v.stats.extra["shortest"] is False
    assert "confirming" not in v.stats.extra
    assert "ended without an answer" in v.stats.extra["confirm_stopped"]
    final = Verdict(VIOLATED, "deadlock", "final", depth=7)
    assert keep_found(final, found) is final
    assert keep_found(lost, None) is lost
