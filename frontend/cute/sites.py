"""Trace sites: which ops of a captured module a conformance run records, and which
record each lifted instruction answers to.

The conformance compile (``impl/cute_trace.py``) numbers every traced op
(``sync_ops.traced_op_names``) and stores the number ``k`` on the op (attribute
``pipeproof.site``); it puts a record before the op (site ``2k``) and one after it (site
``2k+1``).  The lifter reads
the same attribute on the clone it interprets and gives each instruction it emits for
the op the record that stands for it: a wait-like step (it completes when the op
returns) the record after, any other step (a signal, an issue, an init) the record
before.  When one execution of an op makes several steps (an ``expect_tx`` by several
lanes, ``bar.sync``'s arrival and wait), only the first step of each kind gets the
record; the replay takes the others as soon as the warp reaches them.
"""

from __future__ import annotations

import re
from typing import Any

from ...model.program import NO_SITE, WAIT_STEPS

#: the discardable attribute that carries an op's site number
SITE_ATTR = "pipeproof.site"
#: the text every record's inline assembly starts with (the lifter skips those ops)
ASM_MARK = "// pipeproof trace site"

#: the kernel's return: its record (before it) stands for the warp's exit, so that the
#: replay sees when a CTA's warps left (a remote arrive after that is a violation)
RETURN_OPS = frozenset({"cuda.return", "gpu.return"})

#: steps that complete when their op returns: the record after the op stands for them
WAIT_LIKE = WAIT_STEPS


def op_site(op: Any) -> int:
    """The site number ``k`` an instrumented op carries, or ``NO_SITE``."""
    txt = op.attrs.get(SITE_ATTR)
    if not txt:
        return NO_SITE
    m = re.match(r"\s*(\d+)", txt)
    return int(m.group(1)) if m else NO_SITE


def record_for(k: int, cls: type) -> int:
    """The record that stands for a step of class ``cls`` made by the op with site ``k``."""
    return 2 * k + 1 if issubclass(cls, WAIT_LIKE) else 2 * k


def is_trace_record(op: Any) -> bool:
    """An ``llvm.inline_asm`` op that is one of pipeproof's own trace records."""
    return op.name == "llvm.inline_asm" and ASM_MARK in op.attrs.get("asm_string", "")
