"""Re-checking the SMT-LIB files that ``pipeproof check --smt2 FILE`` writes.

``--smt2`` exports the query behind a BMC verdict: for an unbounded proof, the
certificate's obligations (``checker/certificate.py``: the set ``R`` contains the initial
state, is closed under every good step of the encoding, the warps' symmetry, and -- when
the verdict is PROVEN -- no state of ``R`` deadlocks or has a violating step), as one
query that is ``unsat`` when the proof holds; for the unrolling, the disjunction of every
violation and deadlock query up to the depth searched (``checker/bmc.py`` ``write_smt2``),
``sat`` when a counterexample exists.

``stamp`` prepends who made the file: the pipeproof version, the kernel and its
parameters, the source file with its SHA-256, the verdict and the answer the verdict
stands for (``; pipeproof-expect: unsat``; ``none`` where it claims nothing the query
can show: a search out of time, a starvation lasso, which the unrolling's query does
not contain).  ``recheck`` asks z3 again, independently of
the search that wrote the file, and compares: the answer with the expected one, the
source with its digest.  The file is SMT-LIB 2 as z3 prints it (``z3 FILE`` answers
the same query; other solvers were not tried).

What a re-check does *not* re-check: that the encoding is the model's transition
relation (it is obtained by running ``model/``'s transition functions over z3 terms,
``checker/symbolic.py``), and, for a reduced certificate, that its graph has no cycle
(checked by pipeproof when it was made; the header says so).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any, Optional

import z3

#: header lines of a stamp: ``; pipeproof-KEY: VALUE``
PREFIX = "; pipeproof-"


def source_digest(path: str) -> Optional[str]:
    """SHA-256 of the file's bytes, or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def stamp(path: str, *, version: str, kernel: str, params: dict[str, Any], source: str,
          headline: str, expect: str) -> None:
    """Prepend the provenance lines to the ``--smt2`` file at ``path``.  ``expect``: the
    answer the verdict stands for, as the engine that wrote the file says
    (``checker/bmc.py`` ``_smt2_expect``)."""
    with open(path) as f:
        body = f.read()
    digest = source_digest(source) if source else None
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    lines = [f"version: {version}", f"kernel: {kernel}({ps})",
             f"source: {source}" + (f" sha256={digest}" if digest else ""),
             f"verdict: {headline}", f"expect: {expect}"]
    with open(path, "w") as f:
        f.write("".join(f"{PREFIX}{line}\n" for line in lines) + body)


@dataclass(frozen=True)
class Recheck:
    """``answer``: z3's (``sat``, ``unsat`` or ``unknown``); ``expect``: the stamped
    answer (``none`` for an undecided search, None for a file without a stamp);
    ``claim``: what the file's header says the answer means; ``source_ok``: the source
    file still has the stamped digest (None when there is none to compare);
    ``seconds``: z3's time."""

    path: str
    answer: str
    expect: Optional[str]
    claim: str
    meta: dict[str, str]
    source_ok: Optional[bool]
    seconds: float

    @property
    def exit_code(self) -> int:
        """0: the answer is the expected one for the current source; 1: it is not (the
        proof or the counterexample does not hold); 3: undecided, nothing expected, or
        the source changed since the file was made."""
        if self.answer == "unknown" or self.expect in (None, "none") \
                or self.source_ok is False:
            return 3
        return 0 if self.answer == self.expect else 1

    def render(self) -> str:
        what = {0: "agrees with the verdict", 1: "CONTRADICTS the verdict",
                3: "undecided"}[self.exit_code]
        lines = [f"{self.path}: {self.answer} ({self.seconds:.2f} s) -- {what}"]
        if "kernel" in self.meta:
            lines.append(f"  {self.meta['kernel']}: {self.meta.get('verdict', '?')}")
        if self.claim:
            lines.append(f"  claim: {self.claim}")
        if self.expect in (None, "none"):
            lines.append("  nothing to compare with: "
                         + ("no pipeproof stamp" if self.expect is None
                            else "the search that wrote it ended undecided"))
        elif self.answer != "unknown" and self.answer != self.expect:
            lines.append(f"  expected {self.expect}")
        src = self.meta.get("source", "").partition(" sha256=")[0]
        if self.source_ok is False:
            lines.append(f"  the source changed since: {src} (run pipeproof check again)")
        elif self.source_ok is None and " sha256=" in self.meta.get("source", ""):
            lines.append(f"  source {src} not found here: not compared")
        return "\n".join(lines)


def read_header(path: str) -> tuple[dict[str, str], str]:
    """The stamp's fields and the header comment that says what the answer means."""
    meta: dict[str, str] = {}
    claim = ""
    with open(path) as f:
        for line in f:
            if not line.startswith(";"):
                break
            if line.startswith(PREFIX):
                key, _, value = line[len(PREFIX):].partition(":")
                meta[key.strip()] = value.strip()
            elif "unsat =" in line or "sat =" in line:
                claim = line.lstrip("; ").strip()
    return meta, claim


def recheck(path: str, timeout: float = 600.0) -> Recheck:
    """Solve the query in ``path`` with z3 and compare with its stamp.  Raises
    ``ValueError`` for a file that is not a pipeproof SMT-LIB query and ``OSError`` for
    one that cannot be read."""
    meta, claim = read_header(path)
    if not meta and not claim:
        raise ValueError("not an SMT-LIB file written by pipeproof check --smt2")
    s = z3.SolverFor("QF_BV")
    try:
        s.from_file(path)
    except z3.Z3Exception as e:
        raise ValueError(f"not readable as SMT-LIB 2: {e}") from None
    s.set("timeout", max(1, int(timeout * 1000)))
    t0 = time.perf_counter()
    answer = str(s.check())
    seconds = time.perf_counter() - t0
    source_ok: Optional[bool] = None
    src, _, digest = meta.get("source", "").partition(" sha256=")
    if digest:
        now = source_digest(src)
        # a source that is gone cannot be compared: the proof stands for the stamp
        source_ok = None if now is None and not os.path.exists(src) else now == digest
    return Recheck(path, answer, meta.get("expect"), claim, meta, source_ok, seconds)
