"""Text timeline: a counterexample as columns, one per agent, rows in step order.

::

    step | cta0.w0 (dma)          | cta0.w1 (mma)        | async: TMA        | barrier state
    -----+------------------------+----------------------+-------------------+------------------
      13 | producer_acquire wait  |                      |                   |
         | s0 p1                  |                      |                   |
    ...

Every row is one step of one agent: the operation (pipeline method and PTX operation),
the stage and parity, and, on the right, the barrier state it changed (phase, pending
arrivals, tx bytes).  The step that violates the property is marked ``>>`` and ``!!``;
for a deadlock a last ``STUCK`` row says what every live warp waits on, followed by the
reason in words (which arrivals or bytes are missing and why nobody will provide them).
"""

from __future__ import annotations

import re
import shutil
import textwrap
from typing import Optional

from ..trace import Trace
from .lanes import Timeline, build, group_by_role

MIN_COL = 12
MAX_COL = 30


_BYTES = re.compile(r"\b(\d+)B\b")


def _kb(m: re.Match) -> str:
    n = int(m.group(1))
    return f"{n // 1024}KB" if n >= 1024 and n % 1024 == 0 else m.group(0)


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters.  Byte counts shrink first (``32768B``
    -> ``32KB``); what is cut off ends in ``~`` and never in the middle of a number
    (``3276~`` would read as a different number): the whole number goes."""
    if len(text) <= width:
        return text
    short = _BYTES.sub(_kb, text)
    if len(short) <= width:
        return short
    # whole words while they fit; a word with a digit is never cut (``3276~``), and a
    # number just before the cut keeps a space (``s0 ~``, not ``s0~``)
    out = ""
    for word in short.split(" "):
        sep = " " if out else ""
        if len(out) + len(sep) + len(word) + (2 if word[-1:].isdigit() else 1) <= width:
            out += sep + word
            continue
        if not any(ch.isdigit() for ch in word):
            room = width - len(out) - len(sep) - 1
            if room >= 2:
                out += sep + word[:room]
        break
    return (out + " ~" if out[-1:].isdigit() else out + "~")[:width] if out else "~"


def _fit(text: str, width: int) -> str:
    return _cut(text, width).ljust(width)


def default_width() -> int:
    return max(100, shutil.get_terminal_size((160, 40)).columns)


def render_timeline(trace: Trace, max_width: Optional[int] = None,
                    group: str = "auto") -> str:
    """The trace as a table of columns (one per agent).  ``max_width`` bounds the line
    length (default: the terminal's width, at least 100); cells are shortened with ``~``
    when the agents do not fit.  ``group``: ``warp`` (a column per warp), ``role`` (a
    column per CTA and role, cells name the warp) or ``auto`` (per role only when the
    warps do not fit at a readable width)."""
    tl = build(trace)
    return render(tl, max_width or default_width(), group)


def render(tl: Timeline, max_width: int = 160, group: str = "auto") -> str:
    if group == "role" or (group == "auto" and not _fits(tl, max_width)):
        tl = group_by_role(tl)
    return _render(tl, max_width)


def _fits(tl: Timeline, max_width: int, readable: int = 22) -> bool:
    """Do the per-warp columns fit ``max_width`` with cells of ``readable`` characters?"""
    step_w = max(5, len(str(len(tl.rows))) + 3)
    need = step_w + 2
    for i, ln in enumerate(tl.lanes):
        w = max([len(r.cell) for r in tl.rows if r.lane == i] + [len(ln.title), MIN_COL])
        need += min(w, readable) + 3
    return need <= max_width


def _render(tl: Timeline, max_width: int) -> str:
    n = len(tl.lanes)
    if n == 0:
        return "(empty trace)"
    step_w = max(5, len(str(len(tl.rows))) + 3)
    heads = [(ln.title, f"({ln.role})" if ln.kind == "agent" else "(async)") for ln in tl.lanes]
    if any(ln.kind == "env" for ln in tl.lanes):
        heads = [(("async: " + ln.title) if ln.kind == "env" else ln.title, h2)
                 for ln, (_, h2) in zip(tl.lanes, heads)]
    natural = []
    for i in range(n):
        w = max(len(heads[i][0]), len(heads[i][1]), MIN_COL)
        for r in tl.rows:
            if r.lane == i:
                w = max(w, len(r.cell) + (3 if r.violation else 0))
        for b in tl.blocked:
            if b.lane == i:
                w = max(w, len(b.cell))
        natural.append(w)
    state_natural = max([len(r.state) for r in tl.rows] + [len("barrier state")])
    def widths_at(cap: int) -> tuple[list[int], int]:
        ws = [min(w, cap) for w in natural]
        return ws, step_w + sum(w + 3 for w in ws) + 2

    # barrier state in its own column when it fits; otherwise on a line under the step
    want_state = min(state_natural, 48)
    inline = False
    for cap in range(MAX_COL, 19, -1):
        widths, fixed = widths_at(cap)
        if fixed + want_state <= max_width:
            inline = True
            break
    if not inline:
        for cap in range(MAX_COL, MIN_COL - 1, -1):
            widths, fixed = widths_at(cap)
            if fixed <= max_width:
                break
    state_w = max_width - fixed if inline else 0

    def line(first: str, cells: list[str], state: str) -> str:
        out = first.rjust(step_w) + " |"
        for c, w in zip(cells, widths):
            out += " " + _fit(c, w) + " |"
        return (out + " " + state).rstrip()

    def under(lane: int, text: str) -> str:
        """A continuation line: ``text`` starts in column ``lane`` and may run on."""
        out = " " * step_w + " |"
        for w in widths[:lane]:
            out += " " * (w + 2) + "|"
        if len(out) + 3 + len(text) > max_width:  # a lane on the right: pull it left
            out = out[: max(step_w + 2, max_width - len(text) - 3)]
        return out + "   " + _cut(text, max(max_width - len(out) - 3, 1))

    out = [line("step", [h[0] for h in heads], "barrier state" if inline else ""),
           line("", [h[1] for h in heads], "")]
    out.append("-" * step_w + "-+" + "+".join("-" * (w + 2) for w in widths) + "+" +
               ("-" * min(state_w + 1, 40) if inline else ""))
    k = _init_prefix(tl)
    if k:
        ops: list[str] = []
        for r in tl.rows[:k]:
            if r.event.op not in ops:
                ops.append(r.event.op)
        ctas = sorted({r.event.cta for r in tl.rows[:k] if r.event.cta is not None})
        where = ""
        if ctas:
            run = ctas == list(range(ctas[0], ctas[-1] + 1)) and len(ctas) > 2
            where = (f" in CTA{'s' if len(ctas) > 1 else ''} "
                     + (f"{ctas[0]}-{ctas[-1]}" if run else ", ".join(map(str, ctas))))
        text = (f"set-up{where}: {k} steps of barrier init, fences and syncs; --format "
                f"steps lists them ({', '.join(ops)})")
        first = f"1-{tl.rows[k - 1].step}"
        out.append(first.rjust(step_w) + " | "
                   + _cut(text, max(max_width - step_w - 3, 20)))
    for r in tl.rows[k:]:
        cells = [""] * n
        cells[r.lane] = ("!! " + r.cell) if r.violation else r.cell
        first = (">> " if r.violation else "") + str(r.step)
        if tl.loop_start is not None and r.step == tl.loop_start:
            first = "@" + first
        if inline:
            state = r.state
            if len(state) > state_w:
                state = _cut(state, state_w)
            out.append(line(first, cells, state))
        else:
            out.append(line(first, cells, ""))
            if r.state:
                out.append(under(r.lane, "-> " + r.state))
    if tl.blocked:
        cells = [""] * n
        for b in tl.blocked:
            cells[b.lane] = b.cell
        out.append(line("STUCK", cells, "no step enabled" if inline else ""))
    out.append("")
    out.extend(_footer(tl, max_width))
    return "\n".join(out).rstrip() + "\n"


#: what a kernel does before its pipelines run: barrier init, its fence, the syncs that
#: publish it (pipeline_init_arrive / pipeline_init_wait, sync_threads)
_INIT_OPS = ("mbarrier.init", "fence.mbarrier_init", "barrier.cluster.arrive",
             "barrier.cluster.arrive.relaxed", "barrier.cluster.wait")


def _init_prefix(tl: Timeline) -> int:
    """How many leading rows are set-up (``_INIT_OPS`` and CTA-wide bar.sync), none of
    them the violating step or a loop's start: the text timeline shows them as one
    summary row (``--format steps`` and ``--json`` keep every step).  0 when fewer than
    two, or when nothing but set-up happened."""
    k = 0
    for r in tl.rows:
        op = r.event.op
        if r.violation or (tl.loop_start is not None and r.step >= tl.loop_start):
            break
        if not (op in _INIT_OPS or op.startswith(("bar.sync 0", "bar.arrive 0"))):
            break
        k += 1
    return k if 2 <= k < len(tl.rows) else 0


def _footer(tl: Timeline, max_width: int) -> list[str]:
    lines = []
    wrap = max(60, min(max_width, 120))
    vstep = tl.violation_step
    if tl.loop_start is not None:
        lines.append(f"@ marks step {tl.loop_start}, where the loop that repeats for ever "
                     "starts.")
        if vstep is None and not tl.blocked:
            lines.extend(textwrap.wrap(f"{tl.violated or 'starvation'}: {tl.detail}", wrap))
    if vstep is not None:
        r = next(r for r in tl.rows if r.step == vstep)
        who = tl.lanes[r.lane].label
        lines.extend(textwrap.wrap(f">> step {vstep} ({who}) violates {tl.violated}: "
                                   f"{tl.detail}", wrap, subsequent_indent="   "))
        if r.event.loc:
            lines.append(f"   at {r.event.loc}")
    elif tl.blocked:
        lines.extend(textwrap.wrap(f"{tl.violated or 'deadlock'} after step "
                                   f"{tl.rows[-1].step if tl.rows else 0}: {tl.detail}",
                                   wrap))
        lines.append("Why it can never complete:")
        for text in _grouped_reasons([b.reason for b in tl.blocked]):
            lines.extend(textwrap.wrap(text, wrap, initial_indent="  ",
                                       subsequent_indent="      "))
    return lines


def _grouped_reasons(reasons: list[str]) -> list[str]:
    """Stuck warps with the same reason in one sentence: ``cta0.w0, cta0.w1 (consumer)
    wait on ...``."""
    groups: dict[str, list[str]] = {}
    for r in reasons:
        head, _, rest = r.partition(" (")
        role, _, why = rest.partition(") ")
        groups.setdefault(f"({role}) {why}", []).append(head)
    out = []
    for why, agents in groups.items():
        if len(agents) > 1 and why.split(") ", 1)[1].startswith("waits "):
            why = why.replace(") waits ", ") wait ", 1)
        out.append(f"{', '.join(agents)} {why}")
    return out
