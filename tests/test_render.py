"""Counterexamples people can read: text timeline, numbered steps, Perfetto JSON, HTML
(structure), ``--explain``, and the CLI options.  The browser test is
``test_render_browser.py``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from render_cases import agents_of, case_params, expected_prop, result_of, source_of

from pipeproof.checker.explain import explain
from pipeproof.checker.render.html import Report, render_html
from pipeproof.checker.render.lanes import build
from pipeproof.checker.render.perfetto import perfetto_events
from pipeproof.checker.render.timeline import render_timeline
from pipeproof.checker.trace import render_text
from pipeproof.cli import ProgressLine, main, want_progress

CASES = case_params()


@pytest.mark.parametrize("case", CASES)
def test_case_has_a_counterexample(case: str) -> None:
    """Every case gives a counterexample to render.  (Whether a bug example finds the
    property its ``# expect:`` line names is the bug catalogue's test; the mutants here
    must.)"""
    r = result_of(case)
    assert r.verdict.status == "VIOLATED", r.verdict.headline()
    if not case.startswith("bugs/"):
        assert r.verdict.prop == expected_prop(case)
    assert r.verdict.trace is not None and len(r.verdict.trace) > 0


# --------------------------------------------------------------------------- text


def _table_rows(text: str) -> tuple[list[str], list[str]]:
    lines = text.splitlines()
    header = lines[0]
    body = []
    for ln in lines[3:]:
        if not ln.strip():
            break
        body.append(ln)
    return [header, lines[1]], body


@pytest.mark.parametrize("case", CASES)
def test_timeline_one_column_per_agent(case: str) -> None:
    r = result_of(case)
    tr = r.verdict.trace
    text = render_timeline(tr, max_width=400, group="warp")
    (head, roles), body = _table_rows(text)
    agents = agents_of(r)
    cols = [c.strip() for c in head.split("|")[1:-1]]
    titles = {c for c in cols if c.startswith("cta")}
    assert titles == {a for a in agents if a.startswith("cta")}
    assert len(cols) == len(agents)
    # every step row has its operation in exactly one agent column, in step order
    steps = []
    for ln in body:
        cells = [c.strip() for c in ln.split("|")]
        first = cells[0]
        if not first:           # continuation line (barrier state under a step)
            continue
        if first == "STUCK":
            continue
        if re.fullmatch(r"1-\d+", first):   # the set-up steps' summary row
            steps.extend(range(1, int(first[2:]) + 1))
            continue
        steps.append(int(first.replace(">>", "").replace("@", "").strip()))
        filled = [c for c in cells[1:1 + len(cols)] if c]
        assert len(filled) == 1, ln
    assert steps == [e.step for e in tr.events]


@pytest.mark.parametrize("case", CASES)
def test_timeline_marks_violation_or_stuck(case: str) -> None:
    r = result_of(case)
    tr = r.verdict.trace
    text = render_timeline(tr, max_width=200, group="warp")
    if r.verdict.prop == "deadlock":
        stuck = [ln for ln in text.splitlines() if ln.startswith("STUCK")]
        assert len(stuck) == 1
        n = sum(1 for c in stuck[0].split("|")[1:] if c.strip().startswith(("wait", "bar",
                                                                              "cluster",
                                                                              "bulk")))
        assert n == len(tr.blocked)
        assert "Why it can never complete:" in text
        for b in tr.blocked:
            assert b.split(" ", 1)[0] in text
        assert re.search(r"missing\s+\d+\s+of\s+\d+\s+arrivals|bytes\s+of\s+tx|named\s+barrier|cluster",
                         text)
    elif tr.loop_start is not None:
        assert re.search(rf"^\s*@{tr.loop_start} \|", text, re.M)
        assert f"{r.verdict.prop}: " in text
        assert "STUCK" not in text and "never complete" not in text  # steps stay enabled
    else:
        marked = [ln for ln in text.splitlines() if ln.lstrip().startswith(">>")]
        last = tr.events[-1].step
        assert marked[0].lstrip().startswith(f">> {last}")
        assert "!! " in marked[0]
        assert f"violates {r.verdict.prop}" in text


def test_timeline_shows_stage_parity_and_barrier_state() -> None:
    tr = result_of("tma_async-no-release").verdict.trace
    text = render_timeline(tr, max_width=250)
    assert re.search(r"acquire wait s0 p1", text)
    assert re.search(r"acquire arrive\+tx s0 8192B", text)
    assert re.search(r"complete_tx s0 8192B", text)
    assert re.search(r"ab\.full\[0\]: phase 0->1 done, pending 0->1, tx 8192->0", text)


def test_narrow_timeline_groups_warps_by_role() -> None:
    tr = result_of("bugs/p1-bug.pipe").verdict.trace
    wide = render_timeline(tr, max_width=200)
    assert "cta0.w1" in wide.splitlines()[0]           # fits: one column per warp
    text = render_timeline(tr, max_width=110)
    head = text.splitlines()[0]
    assert "cta0 consumer" in head and "cta0.w1" not in head
    assert "(w0-w3)" in text.splitlines()[1]
    stuck = next(ln for ln in text.splitlines() if ln.startswith("STUCK"))
    assert "w0-w3 wait full[0] p0" in stuck
    assert re.search(r"^ 1-\d+ \| set-up in CTA 0", text, re.M)  # set-up: one row
    assert "cta0.w0, cta0.w1, cta0.w2, cta0.w3 (consumer) wait on ab.full[0]@cta0" in \
        text.replace("\n     ", "")
    assert render_timeline(tr, max_width=110, group="warp").splitlines()[0].count("cta0.w") == 5


def test_narrow_timeline_moves_barrier_state_under_the_step() -> None:
    tr = result_of("tma_async-no-release").verdict.trace
    text = render_timeline(tr, max_width=110)
    assert max(len(ln) for ln in text.splitlines() if "|" in ln) <= 110
    assert re.search(r"^\s+\|.*-> ab\.full\[0\]: ", text, re.M)


def test_numbered_steps_still_available() -> None:
    r = result_of("async-no-wait")
    steps = render_text(r.verdict.trace)
    assert re.match(r"\s*1\. cta0\.w\d", steps)
    assert r.render_text(fmt="steps").count("Counterexample (") == 1
    assert "step |" in r.render_text(fmt="timeline")


# --------------------------------------------------------------------------- explain


@pytest.mark.parametrize("case", CASES)
def test_explain_paragraph(case: str) -> None:
    r = result_of(case)
    text = explain(r.verdict)
    assert text.startswith(f"What went wrong ({r.verdict.prop})")
    assert "\n" not in text
    assert "Usual fix:" in text
    if r.verdict.prop == "deadlock":
        blocked = r.verdict.trace.blocked
        named = [b for b in blocked if b.split(" ", 1)[0] in text]
        assert named, text
        if len(named) < len(blocked):        # long lists end in "and N more stuck warps"
            m = re.search(r"and (\d+) more stuck warps", text)
            assert m and 0 < int(m.group(1)) < len(blocked), text
    else:
        assert f"step {r.verdict.trace.events[-1].step}" in text


# --------------------------------------------------------------------------- Perfetto


@pytest.mark.parametrize("case", CASES)
def test_perfetto_trace_events(case: str) -> None:
    r = result_of(case)
    tr = r.verdict.trace
    data = json.loads(json.dumps(perfetto_events(tr, {"kernel": r.kernel})))
    evs = data["traceEvents"]
    assert data["metadata"]["kernel"] == r.kernel
    for e in evs:
        assert e["ph"] in ("M", "X", "C", "i")
        assert isinstance(e["pid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], int) and e["ts"] >= 0
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
               if e["ph"] == "M" and e["name"] == "thread_name"}
    assert len(threads) == len(agents_of(r))          # one track per agent
    slices = [e for e in evs if e["ph"] == "X" and e.get("cat") != "deadlock"]
    assert [e["args"]["step"] for e in sorted(slices, key=lambda e: e["ts"])] == \
        [ev.step for ev in tr.events]
    for e in slices:
        assert (e["pid"], e["tid"]) in threads and e["dur"] > 0
    counters = [e for e in evs if e["ph"] == "C"]
    if any(ev.changes for ev in tr.events):
        assert counters, "barrier phases are counters"
    for c in counters:
        assert set(c["args"]) == {"phase", "pending", "tx"}
        assert all(isinstance(v, int) for v in c["args"].values())
    instants = [e for e in evs if e["ph"] == "i"]
    assert len(instants) == 1 and instants[0]["name"] == f"VIOLATED {r.verdict.prop}"
    if r.verdict.prop == "deadlock":
        stuck = [e for e in evs if e.get("cat") == "deadlock"]
        assert len(stuck) == len(tr.blocked)


# --------------------------------------------------------------------------- HTML


class _Svg(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.svgs = 0
        self.lanes: list[str] = []
        self.events: list[str] = []
        self.violations = 0
        self.stuck = 0
        self.scripts = 0
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "svg" and "timeline" in cls:
            self.svgs += 1
        if tag == "g" and cls == "lane":
            self.lanes.append(a["data-agent"])
        if tag == "rect" and cls.startswith("ev "):
            self.events.append(a["data-step"])
            if "violation" in cls.split():
                self.violations += 1
        if tag == "rect" and cls == "stuck":
            self.stuck += 1
        if tag == "script":
            self.scripts += 1
            if a.get("src"):
                self.external.append(a["src"])
        if tag in ("link", "img") and (a.get("href") or a.get("src")):
            self.external.append(a.get("href") or a.get("src"))


@pytest.mark.parametrize("case", CASES)
def test_html_report_structure(case: str) -> None:
    r = result_of(case)
    tr = r.verdict.trace
    page = render_html(Report.from_result(r, explain(r.verdict), source=source_of(case)))
    p = _Svg()
    p.feed(page)
    assert p.svgs == 1
    assert sorted(p.lanes) == sorted(agents_of(r))        # one lane per agent
    assert p.events == [str(e.step) for e in _by_lane(r)]
    assert not p.external, "the report must be self-contained"
    assert r.verdict.headline() in page
    assert f"{r.kernel}(" in page
    if r.verdict.prop == "deadlock":
        assert p.stuck == len(tr.blocked) and p.violations == 0
    elif tr.loop_start is not None:
        assert p.violations == 0 and "repeat for ever" in page
    else:
        assert p.violations == 1


def _by_lane(r):
    tl = build(r.verdict.trace)
    return [row.event for i in range(len(tl.lanes)) for row in tl.rows if row.lane == i]


def test_html_for_a_safe_verdict(tmp_path: Path, examples_dir: Path) -> None:
    out = tmp_path / "ok.html"
    code = main(["check", str(examples_dir / "textbook" / "pipeline_async.pipe"), "-q",
                 "--html", str(out), "--perfetto", str(tmp_path / "ok.json")])
    assert code == 0
    page = out.read_text()
    assert "PROVEN" in page or "SAFE" in page
    assert "No counterexample" in page
    assert json.loads((tmp_path / "ok.json").read_text())["traceEvents"] == []


# --------------------------------------------------------------------------- CLI


def test_cli_writes_every_format(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / "bug.pipe"
    src.write_text(source_of("tma_async-no-release"))
    code = main(["check", str(src), "--html", str(tmp_path / "r.html"), "--perfetto",
                 str(tmp_path / "r.json"), "--explain", "--width", "160"])
    out = capsys.readouterr()
    assert code == 1
    assert "VIOLATED deadlock" in out.out and "STUCK" in out.out
    assert "What went wrong (deadlock)" in out.out
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((tmp_path / "r.json").read_text())["traceEvents"]
    code = main(["check", str(src), "--format", "steps", "-q"])
    out = capsys.readouterr()
    assert code == 1 and "Stuck for ever:" in out.out and " 1. cta0." in out.out


# --------------------------------------------------------------------------- progress


class _Tty:
    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.buf = ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.buf += s

    def flush(self) -> None:
        pass


def test_progress_only_on_a_terminal() -> None:
    assert want_progress("auto", _Tty(True))
    assert not want_progress("auto", _Tty(False))
    assert not want_progress("auto", _Tty(True), quiet=True)
    assert not want_progress("auto", _Tty(True), json_out=True)
    assert want_progress("always", _Tty(False))
    assert not want_progress("never", _Tty(True))


def test_progress_line_reports_depth_states_elapsed() -> None:
    s = _Tty(True)
    p = ProgressLine(s)
    p(12_345, 17, 3.2)
    assert "depth 17" in s.buf and "12,345 states" in s.buf and "3 s elapsed" in s.buf
    p(99, 2, 4.0)
    p.close()
    assert s.buf.endswith("\r")


def test_piped_check_prints_no_progress(tmp_path: Path) -> None:
    src = tmp_path / "bug.pipe"
    src.write_text(source_of("async-no-wait"))
    cp = subprocess.run([sys.executable, "-m", "pipeproof.cli", "check", str(src),
                         "--progress", "auto"], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 1
    assert "checking:" not in cp.stderr and "\r" not in cp.stderr
