"""The table of op handlers: ``ops.py``, ``data_ops.py`` and ``sync_ops.py`` register
into it with ``@op(...)``; ``interp.py`` imports them and asks ``op_table(series)``
for one DSL release series.  ``ALIASES`` maps the op names another release prints to
the ones handled (measured: 4.7.1 and 4.8.1 print the same names for every op handled,
``bench/results/cute_dsl_versions.md``)."""

from __future__ import annotations

from typing import Any, Callable

Handler = Callable[[Any, Any, dict, Any], Any]
TABLE: dict[str, Handler] = {}
PREFIXES: list[tuple[str, Handler]] = []

ALIASES: dict[str, dict[str, str]] = {
    "4.7": {},
    "4.8": {},
}


def op(*names: str) -> Callable[[Handler], Handler]:
    """Register a handler for these op names (``name*``: every op with that prefix)."""
    def deco(f: Handler) -> Handler:
        for nm in names:
            if nm.endswith("*"):
                PREFIXES.append((nm[:-1], f))
            else:
                TABLE[nm] = f
        return f
    return deco


def op_table(series: str) -> tuple[dict[str, Handler], list[tuple[str, Handler]]]:
    table = dict(TABLE)
    for old, new in ALIASES.get(series, {}).items():
        table[old] = TABLE[new]
    return table, list(PREFIXES)
