"""A self-contained HTML report: verdict, configuration, an SVG timeline (one lane per
agent), the explanation, the trace as a table and the kernel source.

The page has no external resources (no fonts, scripts or styles from elsewhere), so it
opens from disk, from a CI artifact or an e-mail attachment.  The SVG has one
``<g class="lane" data-agent=...>`` per agent; each step is a ``rect`` on its agent's
lane (colour: wait / arrive / asynchronous copy / read or write of a stage / other) with
a tooltip giving the full label, source location and barrier changes; the violating
step is outlined in red with a vertical marker; for a deadlock every stuck warp's lane ends in a hatched ``STUCK`` bar
saying what it waits on.  A few lines of script link the SVG to the table (click a step)
and mark the document as rendered (``data-pipeproof-rendered``), which the browser test
reads.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Optional

from ..trace import Trace
from .lanes import Timeline, build
from .perfetto import _category
from .timeline import render as render_text_timeline

LABEL_W = 200
FIT_W = 1180        # the SVG fits this width when steps allow (12 px per step at least)
MIN_W = 760         # room for the violation label of short traces
LANE_H = 30
TOP = 46
COLORS = {"wait": "#4e79a7", "arrive": "#59a14f", "async copy": "#f28e2b",
          "data": "#b07aa1", "other": "#a0a0a0"}
LANE_BG = ("#f3f6fa", "#e6ecf4")
RED = "#d62728"


@dataclass
class Report:
    """Everything the page shows; ``from_result`` fills it from a ``CheckResult``."""

    title: str
    headline: str
    status: str
    trace: Optional[Trace] = None
    config: list[tuple[str, str]] = field(default_factory=list)
    reason: str = ""
    explanation: str = ""
    source: str = ""
    source_name: str = ""

    @classmethod
    def from_result(cls, result: Any, explanation: str = "",
                    source: Optional[str] = None) -> "Report":
        """Duck-typed over ``pipeproof.api.CheckResult`` (verdict, kernel, file, params,
        cluster, warps, engine)."""
        v = result.verdict
        ps = ", ".join(f"{k}={x}" for k, x in result.params.items())
        st = v.stats
        config = [("file", str(result.file)), ("kernel", f"{result.kernel}({ps})"),
                  ("cluster", "x".join(map(str, result.cluster))),
                  ("warps per CTA", str(result.warps)), ("engine", _engine(result))]
        if st.states:
            config.append(("explored", f"{st.states:,} states, {st.transitions:,} "
                                       f"transitions, depth {st.depth}, {st.seconds:.2f} s"))
        if source is None:
            try:
                with open(result.file) as f:
                    source = f.read()
            except OSError:
                source = ""
        return cls(f"pipeproof: {result.kernel}", v.headline(), v.status, v.trace, config,
                   v.reason if v.status != "SAFE" else "", explanation, source or "",
                   str(result.file))


def _engine(result: Any) -> str:
    """The engine that decided (as the CLI's ``engine ...`` line says), and the one asked
    for when that was a choice (``explicit (chosen by --engine auto)``)."""
    used = result.verdict.stats.engine or result.engine
    if used != result.engine and result.engine:
        return f"{used} (chosen by --engine {result.engine})"
    return used


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


# --------------------------------------------------------------------------- SVG


def svg_timeline(tl: Timeline) -> str:
    """The SVG: one lane per agent, steps left to right."""
    steps = max((r.step for r in tl.rows), default=0)
    if not tl.lanes:
        return ('<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="400" '
                'height="40"><text x="10" y="25">no counterexample: nothing to draw</text>'
                '</svg>')
    stuck_w = 8.0 + 7.5 * max((len(b.cell) for b in tl.blocked), default=0) + 60
    room = FIT_W - LABEL_W - 20 - (stuck_w if tl.blocked else 0)
    dx = max(12.0, min(36.0, room / max(steps + 1, 1)))
    width = max(MIN_W, int(LABEL_W + dx * (steps + 1) + (stuck_w if tl.blocked else 0) + 20))
    height = TOP + LANE_H * len(tl.lanes) + 16

    def x_of(step: float) -> float:
        return LABEL_W + dx * (step - 1)

    out = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="timeline, one lane per agent">',
           '<defs><pattern id="stuck" width="8" height="8" patternUnits="userSpaceOnUse" '
           f'patternTransform="rotate(45)"><rect width="8" height="8" fill="#fbe3e3"/>'
           f'<rect width="3" height="8" fill="{RED}" opacity="0.45"/></pattern>'
           '<marker id="arrowhead" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           f'fill="{RED}"/></marker></defs>']
    # axis
    tick = 1 if dx >= 30 else (5 if dx >= 12 else 10)
    out.append('<g class="axis">')
    out.append(f'<text x="8" y="{TOP - 26}" class="axis-title">step</text>')
    for s in range(1, steps + 1):
        if s == 1 or s % tick == 0:
            x = x_of(s) + dx / 2
            out.append(f'<text x="{x:.1f}" y="{TOP - 10}" text-anchor="middle">{s}</text>'
                       f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{TOP}" '
                       'stroke="#888"/>')
    out.append("</g>")
    # lanes
    for i, ln in enumerate(tl.lanes):
        y = TOP + i * LANE_H
        out.append(f'<g class="lane" data-agent="{_e(ln.key)}" data-role="{_e(ln.role)}" '
                   f'data-kind="{ln.kind}">')
        out.append(f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{LANE_H}" '
                   f'fill="{LANE_BG[i % 2]}"/>')
        out.append(f'<text class="lane-label" x="8" y="{y + LANE_H / 2 + 4:.1f}">'
                   f'{_e(ln.label)}</text>')
        for r in tl.rows:
            if r.lane != i:
                continue
            ev = r.event
            cat = _category(ev.op)
            tip = [f"step {r.step} - {ln.label}", ev.what]
            if ev.loc:
                tip.append(f"at {ev.loc}")
            for c in ev.changes:
                tip.append(c.render())
            if ev.violation:
                tip.append(ev.violation)
            cls = f"ev cat-{cat.replace(' ', '-')}" + (" violation" if r.violation else "")
            stroke = f' stroke="{RED}" stroke-width="3"' if r.violation else ""
            out.append(f'<rect class="{cls}" data-step="{r.step}" x="{x_of(r.step) + 1:.1f}" '
                       f'y="{y + 5}" width="{dx - 2:.1f}" height="{LANE_H - 10}" rx="3" '
                       f'fill="{COLORS[cat]}"{stroke}><title>{_e(chr(10).join(tip))}</title>'
                       '</rect>')
            label = _block_label(ev, dx)
            if label:  # the operation written on its block where it fits
                out.append(f'<text class="ev-label" x="{x_of(r.step) + dx / 2:.1f}" '
                           f'y="{y + LANE_H / 2 + 3.5:.1f}" text-anchor="middle">'
                           f'{_e(label)}</text>')
            if any(c.phase[0] != c.phase[1] for c in ev.changes):
                cx = x_of(r.step) + dx - 4
                out.append(f'<circle class="phase-done" cx="{cx:.1f}" cy="{y + 7}" r="3.5" '
                           'fill="#fff" stroke="#333" stroke-width="1.2"><title>a barrier '
                           'phase completed</title></circle>')
        for b in tl.blocked:
            if b.lane != i:
                continue
            x0 = x_of(steps + 1) + 2
            w = stuck_w
            out.append(f'<rect class="stuck" x="{x0:.1f}" y="{y + 4}" width="{w:.1f}" '
                       f'height="{LANE_H - 8}" fill="url(#stuck)" stroke="{RED}">'
                       f'<title>{_e(b.reason)}</title></rect>')
            out.append(f'<text class="stuck-label" x="{x0 + 4:.1f}" '
                       f'y="{y + LANE_H / 2 + 4:.1f}">STUCK: {_e(b.cell)}</text>')
        out.append("</g>")
    out.extend(_in_flight_arrow(tl, x_of, dx))
    vstep = tl.violation_step
    if vstep is not None:
        x = x_of(vstep) + dx / 2
        label = f"VIOLATED {tl.violated} at step {vstep}"
        est = 7.5 * len(label)          # monospace 12 px: about 7.2 px per character
        right = x + 6 + est <= width - 4
        out.append(f'<g class="violation-marker"><line x1="{x:.1f}" y1="{TOP - 4}" '
                   f'x2="{x:.1f}" y2="{height - 8}" stroke="{RED}" stroke-width="2" '
                   'stroke-dasharray="5,3"/>'
                   f'<text x="{x + 6 if right else x - 6:.1f}" y="{TOP - 30}" fill="{RED}" '
                   f'text-anchor="{"start" if right else "end"}" font-weight="bold">'
                   f'{_e(label)}</text></g>')
    elif tl.loop_start is not None:
        x = x_of(tl.loop_start)
        out.append(f'<g class="violation-marker loop-marker"><line x1="{x:.1f}" '
                   f'y1="{TOP - 4}" x2="{x:.1f}" y2="{height - 8}" stroke="{RED}" '
                   'stroke-width="2" stroke-dasharray="2,3"/>'
                   f'<text x="{max(LABEL_W, min(x - 60, width - 320)):.1f}" y="{TOP - 30}" '
                   f'fill="{RED}" font-weight="bold">{_e(tl.violated or "starvation")}: '
                   f'steps {tl.loop_start}..{steps} repeat for ever</text></g>')
    elif tl.blocked:
        x = x_of(steps + 1)
        out.append(f'<g class="violation-marker"><line x1="{x:.1f}" y1="{TOP - 4}" '
                   f'x2="{x:.1f}" y2="{height - 8}" stroke="{RED}" stroke-width="2"/>'
                   f'<text x="{max(LABEL_W, min(x - 60, width - 260)):.1f}" y="{TOP - 30}" '
                   f'fill="{RED}" font-weight="bold">{_e(tl.violated or "deadlock")} after '
                   f'step {steps}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


#: short names of operations for the blocks' labels (first match wins)
_SHORT = (("init", "init"), ("fence", "fence"), ("complete_tx", "tx"), ("tma_load", "tma"),
          ("tma_store", "store"), ("cp.async", "cp"), ("arrive.expect_tx", "arr+tx"),
          ("expect_tx", "tx+"), ("wait", "wait"), ("arrive", "arrive"), ("bar", "sync"),
          ("commit", "commit"))


def _block_label(ev: Any, dx: float) -> str:
    """A short name of the step's operation, cut to its block's width (about 6 px a
    character at the label's size); '' where fewer than three characters fit."""
    fit = int((dx - 4) // 6)
    op = ev.op or ""
    if op == "ghost":
        word = "read" if "read" in ev.what else "write"
    else:
        word = next((short for key, short in _SHORT if key in op), op.split(" ")[0])
    if fit < 3 or not word:
        return ""
    return word[:fit]


def _in_flight_arrow(tl: Timeline, x_of: Any, dx: float) -> list[str]:
    """An arrow from the step that issued a write still in flight to the violating step
    that meets it (``explain.in_flight_write``)."""
    from ..explain import in_flight_write
    from ..trace import Trace

    if tl.violation_step is None:
        return []
    w = in_flight_write(Trace(events=[r.event for r in tl.rows if r.step <= tl.violation_step],
                              detail=tl.detail))
    rows = {r.step: r for r in tl.rows}
    if w is None or w.step not in rows or tl.violation_step not in rows:
        return []
    a, b = rows[w.step], rows[tl.violation_step]
    x1, x2 = x_of(a.step) + dx / 2, x_of(b.step) + dx / 2
    y1 = TOP + a.lane * LANE_H + 5
    y2 = TOP + b.lane * LANE_H + (5 if b.lane == a.lane else LANE_H / 2)
    lift = min(LANE_H * 0.9, TOP - 8) if b.lane == a.lane else 0
    mid = (x1 + x2) / 2
    tip = f"the write issued at step {a.step} is still in flight at step {b.step}"
    return [f'<g class="in-flight"><path d="M{x1:.1f},{y1:.1f} Q{mid:.1f},'
            f'{min(y1, y2) - lift:.1f} {x2:.1f},{y2:.1f}" fill="none" stroke="{RED}" '
            'stroke-width="1.6" stroke-dasharray="4,2" marker-end="url(#arrowhead)">'
            f'<title>{_e(tip)}</title></path></g>']


def _legend() -> str:
    names = {"data": "read/write of a stage"}
    items = "".join(f'<span class="key"><span class="sw" style="background:{c}"></span>'
                    f'{_e(names.get(k, k))}</span>' for k, c in COLORS.items())
    return (f'<div class="legend">{items}<span class="key"><span class="sw ring"></span>'
            'barrier phase completed</span><span class="key"><span class="sw" '
            f'style="background:#fff;border:3px solid {RED}"></span>violating step</span>'
            '<span class="key"><span class="sw hatch"></span>stuck for ever</span></div>')


# --------------------------------------------------------------------------- page


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;
 color:#1d2330;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:26px 0 8px}
.verdict{display:inline-block;padding:6px 12px;border-radius:6px;font-weight:600;
 font-size:16px;margin:8px 0}
.verdict.VIOLATED{background:#fde2e2;color:#8b1111;border:1px solid #e8a1a1}
.verdict.SAFE,.verdict.PROVEN{background:#e0f4e4;color:#135a24;border:1px solid #9fd3ab}
.verdict.UNKNOWN{background:#fff3d6;color:#6b4a00;border:1px solid #e6c77a}
.reason{margin:4px 0 0;color:#444}
table.config{border-collapse:collapse}table.config td{padding:2px 14px 2px 0}
table.config td:first-child{color:#666}
.scroll{overflow-x:auto;border:1px solid #d6dce6;border-radius:6px;padding:4px}
svg.timeline text{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#222}
svg.timeline .lane-label{font-weight:600}
svg.timeline .axis text{fill:#666;font-size:10px}
svg.timeline .stuck-label{fill:#8b1111;font-weight:600}
svg.timeline text.ev-label{font:10px monospace;fill:#fff;pointer-events:none}
svg.timeline rect.ev{cursor:pointer}svg.timeline rect.ev:hover{opacity:.75}
.legend{margin:8px 0;color:#444}.key{margin-right:16px;white-space:nowrap}
.sw{display:inline-block;width:14px;height:12px;border-radius:3px;margin-right:5px;
 vertical-align:-1px}
.sw.ring{border:1.5px solid #333;border-radius:50%;width:8px;height:8px;background:#fff}
.sw.hatch{background:repeating-linear-gradient(45deg,#fbe3e3 0 4px,#e7a0a0 4px 6px);
 border:1px solid #d62728}
.explain{max-width:900px;background:#f6f8fb;border-left:4px solid #4e79a7;padding:8px 12px}
.stuck-list li{margin:3px 0}
table.steps{border-collapse:collapse;font:12px ui-monospace,Menlo,Consolas,monospace}
table.steps th{text-align:left;background:#eef2f7;position:sticky;top:0}
table.steps td,table.steps th{padding:2px 8px;border-bottom:1px solid #e3e7ee;
 vertical-align:top}
table.steps tr.violation td{background:#fde2e2}
table.steps tr.hl td{background:#fff3c4}
pre{background:#f6f8fb;padding:10px;border-radius:6px;overflow-x:auto;font-size:12px}
pre.src .ln{color:#999;user-select:none}pre.src .hit{background:#fde2e2;display:inline-block;
 width:100%}
"""

_JS = """
(function(){
  var svg=document.querySelector('svg.timeline');
  var lanes=svg?svg.querySelectorAll('g.lane').length:0;
  document.querySelectorAll('rect.ev').forEach(function(r){
    r.addEventListener('click',function(){
      var row=document.getElementById('step-'+r.getAttribute('data-step'));
      if(!row)return;
      document.querySelectorAll('tr.hl').forEach(function(x){x.classList.remove('hl');});
      row.classList.add('hl');row.scrollIntoView({block:'center'});
    });
  });
  document.documentElement.setAttribute('data-pipeproof-rendered', String(lanes));
})();
"""


def render_html(report: Report) -> str:
    """The complete page (a string)."""
    tl = build(report.trace) if report.trace is not None else Timeline([], [])
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{_e(report.title)}</title>",
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{_e(report.title)}</h1>",
             f'<div class="verdict {_e(report.status)}" id="verdict">{_e(report.headline)}</div>']
    if report.reason:
        parts.append(f'<p class="reason">{_e(report.reason)}</p>')
    parts.append('<h2>Configuration</h2><table class="config">')
    for k, v in report.config:
        parts.append(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>")
    parts.append("</table>")
    if report.trace is not None:
        parts.append(f"<h2>Timeline ({len(tl.rows)} steps, {len(tl.lanes)} agents)</h2>")
        parts.append(_legend())
        parts.append(f'<div class="scroll">{svg_timeline(tl)}</div>')
        if report.explanation:
            parts.append(f'<h2>In words</h2><p class="explain">{_e(report.explanation)}</p>')
        if tl.blocked:
            parts.append('<h2>Why it can never complete</h2><ul class="stuck-list">')
            parts.extend(f"<li>{_e(b.reason)}</li>" for b in tl.blocked)
            parts.append("</ul>")
        parts.append(_steps_table(tl))
        parts.append("<h2>Text timeline</h2><pre>"
                     f"{_e(render_text_timeline(tl, 200))}</pre>")
    else:
        parts.append("<p>No counterexample: the verdict has no trace.</p>")
    if report.source:
        parts.append(_source(report, tl))
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts) + "\n"


def _steps_table(tl: Timeline) -> str:
    rows = ['<h2>Trace</h2><table class="steps"><thead><tr><th>step</th><th>agent</th>'
            "<th>operation</th><th>stage</th><th>parity</th><th>barrier state</th>"
            "<th>source</th></tr></thead><tbody>"]
    for r in tl.rows:
        ev = r.event
        ln = tl.lanes[r.lane]
        cls = ' class="violation"' if r.violation else ""
        what = ev.what + (f"  <-- {ev.violation}" if ev.violation else "")
        rows.append(f'<tr id="step-{r.step}"{cls}><td>{r.step}</td><td>{_e(ln.label)}</td>'
                    f"<td>{_e(what)}</td><td>{'' if ev.stage is None else ev.stage}</td>"
                    f"<td>{'' if ev.parity is None else ev.parity}</td>"
                    f"<td>{_e('; '.join(c.render() for c in ev.changes))}</td>"
                    f"<td>{_e(ev.loc)}</td></tr>")
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _source(report: Report, tl: Timeline) -> str:
    hits: set[int] = set()
    for r in tl.rows:
        if r.violation and r.event.loc:
            try:
                hits.add(int(r.event.loc.rsplit(":", 2)[-2]))
            except (ValueError, IndexError):
                pass
    lines = report.source.splitlines()
    w = len(str(len(lines)))
    body = []
    for i, text in enumerate(lines, 1):
        row = f'<span class="ln">{i:>{w}}</span>  {_e(text)}'
        body.append(f'<span class="hit">{row}</span>' if i in hits else row)
    return (f"<h2>Source: {_e(report.source_name)}</h2><pre class=\"src\">"
            + "\n".join(body) + "</pre>")


def write_html(report: Report, path: str) -> None:
    with open(path, "w") as f:
        f.write(render_html(report))
