"""Counterexamples that say why (issue 24 item 3): diagnoses computed from the model's
trace and the program, never guessed."""

from __future__ import annotations

import functools
from pathlib import Path

from pipeproof.api import CheckResult, check_file
from pipeproof.checker.explain import explain, tx_mismatch

ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def _check(rel: str) -> CheckResult:
    return check_file(ROOT / rel)


# --------------------------------------------------------------- tx_count mismatch


def test_tx_too_small_says_both_byte_counts_and_lines() -> None:
    """tx_count half the tile: 4096 B expected, 8192 B land (tx goes below zero)."""
    r = _check("tests/cute_kernels/pipeline_tma_async_bug1.pipe")
    assert r.verdict.prop == "deadlock"
    text = explain(r.verdict)
    assert ("ab.full[0]@cta0 expects 4096 B per phase (expect_tx by cta0.w0, line 23) but "
            "the TMA loads that complete on it bring 8192 B (8192 B, tma_load by cta0.w0, "
            "line 24): 4096 B too many") in text, text
    # the specific fix replaces the generic "wait on the full barrier" advice
    assert "tx_count (the expect_tx of a phase) equal the bytes" in text
    assert "every stage a consumer waits on must be committed" not in text


def test_tx_times_cluster_size_names_the_peer_loads() -> None:
    """P4: expect_tx = 16384 B x cluster size (65536 B); the pair brings 2 x 16384 B."""
    r = _check("examples/bugs/p4-bug.pipe")
    text = explain(r.verdict)
    assert "each expect 65536 B per phase (expect_tx by cta0.w0 and cta2.w0, line 42)" \
        in text, text
    assert ("bring 32768 B (2 x 16384 B, tma_load by cta0.w0, cta1.w0, cta2.w0 and "
            "cta3.w0, line 43): 32768 B are never delivered") in text, text
    d = tx_mismatch(r.verdict.trace, "ab.full[0]@cta0")
    assert d is not None and (d["expected"], d["landed"]) == (65536, 32768)
    assert d["load_by"] == ["cta0.w0", "cta1.w0"]


def test_no_tx_diagnosis_when_the_load_is_skipped() -> None:
    """P2: the producer skips the TMA load after producer_acquire: no bytes land at all,
    which is not a tx_count mistake -- say nothing about byte counts."""
    r = _check("examples/bugs/p2-bug.pipe")
    assert r.verdict.prop == "deadlock"
    assert "byte count mismatch" not in explain(r.verdict)


# --------------------------------------------------------------- multicast label


def test_multicast_load_labelled_per_destination() -> None:
    """A multicast tma_load(bytes=2048, mcast_mask over 2 CTAs) reads ``2048B x2``, not
    the 4096 B summed over its destinations."""
    from pipeproof.checker.render.lanes import cell_text

    r = _check("tests/cute_kernels/pipeline_tma_async_multicast_bug1.pipe")
    loads = [e for e in r.verdict.trace.events if e.op == "tma_load"]
    mc = [e for e in loads if ", " in e.barrier]
    assert mc, [e.what for e in loads]
    for e in mc:
        assert e.tx == 2048, (e.what, e.tx)
        assert cell_text(e).endswith("2048B x2"), cell_text(e)
    # each destination's complete_tx brings those bytes
    assert {e.tx for e in r.verdict.trace.events if e.op == "complete_tx"} == {2048}


# --------------------------------------------------------------- no cut numbers


def test_timeline_never_cuts_a_number() -> None:
    """Narrow cells shrink byte counts (32768B -> 32KB) and drop a number whole rather
    than print ``3276~``."""
    import re

    from pipeproof.checker.render.timeline import _cut, render_timeline

    assert _cut("complete_tx s0 32768B", 19) == "complete_tx s0 32KB"
    assert _cut("ab.full[0]: tx 32768->16384 /1", 20) == "ab.full[0]: tx~"
    assert _cut("tma_load s0 16384B", 13) == "tma_load s0 ~"
    r = _check("examples/bugs/p4-bug.pipe")
    for width in (100, 120, 160):
        text = render_timeline(r.verdict.trace, max_width=width, group="warp")
        for ln in text.splitlines():
            for cell in ln.split("|"):
                assert not re.search(r"\d~", cell), (width, ln)


# --------------------------------------------------------------- HTML engine


def test_html_report_names_the_engine_that_decided() -> None:
    from pipeproof.checker.render.html import Report

    # one stage after the other: racing, which engine answers first depends on the clock
    r = check_file(ROOT / "examples/bugs/p4-bug.pipe", jobs=1)
    assert r.engine == "auto" and r.verdict.stats.engine == "bmc"
    config = dict(Report.from_result(r).config)
    assert config["engine"] == "bmc (chosen by --engine auto)"
    r = check_file(ROOT / "examples/bugs/p4-bug.pipe", engine="explicit")
    assert dict(Report.from_result(r).config)["engine"] == "explicit"


# --------------------------------------------------------------- set-up steps


def test_init_steps_collapse_into_one_row() -> None:
    """P4's 28 set-up steps (mbarrier.init, fences, cluster arrive/wait in 4 CTAs) are one
    summary row of the text timeline; the numbered steps keep every one."""
    from pipeproof.checker.render.timeline import render_timeline
    from pipeproof.checker.trace import render_text

    r = _check("examples/bugs/p4-bug.pipe")
    text = render_timeline(r.verdict.trace, max_width=200, group="warp")
    rows = [ln for ln in text.splitlines() if ln[:6].strip()]
    assert any(ln.startswith(" 1-28 | set-up in CTAs 0-3: 28 steps") for ln in rows), text
    assert not any(ln.split("|")[0].strip() in {str(i) for i in range(1, 29)} for ln in rows)
    assert any(ln.split("|")[0].strip() == "29" for ln in rows)
    steps = render_text(r.verdict.trace)
    assert " 1. cta0.w1" in steps and "28. cta3.w1" in steps


# --------------------------------------------------------------- over-arrival


def test_over_arrival_names_the_surplus_warp_and_the_phase_it_was_meant_for() -> None:
    """X4: a consumer group counted once (count 1) whose two warps each release: the
    first completes the phase, the second is the surplus."""
    r = check_file(ROOT / "examples/bugs/x4-bug.pipe", jobs=1)  # one engine decides
    assert r.verdict.prop == "arrival-overflow"
    text = explain(r.verdict)
    last = r.verdict.trace.events[-1]
    first = next(e for e in r.verdict.trace.events
                 if e.op == last.op and e.actor != last.actor and e.barrier == last.barrier)
    assert (f"{last.barrier} counts 1 arrival per phase, and phase 0 got it from "
            f"{first.actor} (consumer) at step {first.step} (line 50); the arrive of "
            f"{last.actor} (consumer) at step {last.step} (line 50) was meant for that "
            "phase too and is the surplus: 2 warps of role consumer") in text, text
    assert "count every arriving warp" in text


def test_over_arrival_by_the_same_warp_twice() -> None:
    """O1: a run-time loop re-uses the entry state, so a warp arrives twice for one
    phase of PipelineOrder's barrier."""
    r = check_file(ROOT / "examples/bugs/o1-bug.pipe", jobs=1)
    assert r.verdict.prop == "arrival-overflow"
    text = explain(r.verdict)
    last = r.verdict.trace.events[-1]
    assert f"{last.barrier} counts 128 arrivals per phase" in text, text
    # which shortest counterexample the search returns is not fixed: either the surplus
    # warp itself arrived before, or others arrived twice and filled the phase
    assert (f"{last.actor} had arrived in that phase already" in text
            or "times in that phase (steps" in text), text
    assert "arrived twice for one phase" in text or "more than once for one phase" in text


# --------------------------------------------------------------- multicast left out


def test_multicast_mask_that_leaves_a_cta_out_blames_the_mask(tmp_path: Path) -> None:
    """The 2x2 multicast mainloop with the B loads' mask cut to CTAs 1-3: CTA 0's full
    barrier waits for 4096 B that no load sends it.  The diagnosis names the load whose
    copies reach the other CTAs but not CTA 0 -- not tx_count, not the local DMA warp."""
    src = (ROOT / "examples/textbook/pipeline_tma_async_multicast.pipe").read_text()
    old = "b_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=1)"
    assert old in src
    f = tmp_path / "mcast.pipe"
    f.write_text(src.replace(old, old + " & 0xE", 1))
    line = next(n for n, t in enumerate(src.splitlines(), 1) if "bytes=b_bytes" in t)
    r = check_file(f, {"k_tiles": 1}, engine="explicit", confirm_timeout=0)
    assert r.verdict.prop == "deadlock"
    text = explain(r.verdict)
    assert "The cause is a multicast that leaves a CTA out" in text, text
    assert f"ab.full[0]@cta0 gets no bytes from the tma_load at line {line} (" in text
    assert "cta0 is missing from its multicast masks" in text
    assert "byte count mismatch" not in text
    d = tx_mismatch(r.verdict.trace, "ab.full[0]@cta0")
    assert d is not None and d["expected"] - d["landed"] == 4096
    assert [x["line"] for x in d["left_out"]] == [str(line)]


# --------------------------------------------------------------- the write in flight


def test_html_report_draws_an_arrow_from_the_write_in_flight(tmp_path: Path) -> None:
    """X2: the wait for the second stage passes at once (fresh barrier, parity 1) and the
    read meets the multicast TMA load still in flight: the report's blocks are labelled
    and an arrow goes from that load to the violating step."""
    from pipeproof.checker.explain import in_flight_write
    from pipeproof.checker.render.html import Report, write_html

    r = check_file(ROOT / "examples/bugs/x2-bug.pipe", jobs=1)
    assert r.verdict.prop == "read-before-full"
    w = in_flight_write(r.verdict.trace)
    assert w is not None and w.op == "tma_load" and w.stage == 1 and w.pipeline == "dst"
    last = r.verdict.trace.events[-1]
    out = tmp_path / "r.html"
    write_html(Report.from_result(r, explain(r.verdict)), str(out))
    html = out.read_text()
    assert html.count('<g class="in-flight">') == 1
    assert (f"the write issued at step {w.step} is still in flight at step {last.step}"
            in html)
    assert '<text class="ev-label"' in html and ">tma</text>" in html


def test_no_arrow_without_a_write_in_flight() -> None:
    """P1 deadlocks: there is no write in flight to point at."""
    from pipeproof.checker.explain import in_flight_write

    assert in_flight_write(_check("examples/bugs/p1-bug.pipe").verdict.trace) is None
