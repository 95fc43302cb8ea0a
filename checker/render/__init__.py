"""Renderers of traces (counterexamples and GPU traces): a text timeline with one column
per agent, Chrome/Perfetto trace-event JSON, and a self-contained HTML report with an
SVG timeline.  They all lay out ``lanes.build(trace)``; none re-states the semantics."""

from .lanes import Timeline, build
from .timeline import render_timeline

__all__ = ["Timeline", "build", "render_timeline"]
