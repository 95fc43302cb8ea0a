"""Re-checking the SMT-LIB files that ``pipeproof check --smt2 FILE`` writes.

``--smt2`` exports the query behind a BMC verdict: for an unbounded proof, the
certificate's obligations (``checker/certificate.py``: the set ``R`` contains the initial
state, is closed under every good step of the encoding, the warps' symmetry, and -- when
the verdict is PROVEN -- no state of ``R`` deadlocks or has a violating step), as one
query that is ``unsat`` when the proof holds; for the unrolling, the disjunction of every
violation and deadlock query up to the depth searched (``checker/bmc.py`` ``write_smt2``),
``sat`` when a counterexample exists.

``stamp`` prepends who made the file: the pipeproof version, the kernel and its
parameters, the source file with its SHA-256, the verdict, the answer the verdict
stands for (``; pipeproof-expect: unsat``; ``none`` where it claims nothing the query
can show: a search out of time, a starvation lasso, which the unrolling's query does
not contain), and the SHA-256 of the query itself (``; pipeproof-body: sha256=...``,
the bytes after the stamp).  ``recheck`` first verifies what it is given -- every
stamp field present, a known expected answer, the query's digest -- and refuses a file
that fails (``BadProofFile``: "not a pipeproof proof file" or "modified after
export", exit code 2), so that an appended ``(assert false)`` or a file cut short is
never taken for a proof or for a refuted one.  Then it asks z3 again, independently
of the search that wrote the file, and compares: the answer with the expected one,
the source with its digest.  The file is SMT-LIB 2 as z3 prints it (``z3 FILE`` answers
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
#: the fields every stamp has, in order
FIELDS = ("version", "kernel", "source", "verdict", "expect", "body")
#: the answers a stamp may expect
EXPECTS = ("sat", "unsat", "none")


class BadProofFile(ValueError):
    """A file ``recheck`` refuses: not a stamped pipeproof query, or one changed since
    ``pipeproof check --smt2`` wrote it."""


def body_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


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
    with open(path, encoding="utf-8", newline="") as f:
        body = f.read()
    digest = source_digest(source) if source else None
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    lines = [f"version: {version}", f"kernel: {kernel}({ps})",
             f"source: {source}" + (f" sha256={digest}" if digest else ""),
             f"verdict: {headline}", f"expect: {expect}",
             f"body: sha256={body_digest(body)}"]
    with open(path, "w", encoding="utf-8", newline="") as f:
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


def _read_text(path: str) -> str:
    """The file's text; a FIFO or device is refused before it is opened (opening a FIFO
    blocks), as is a file that is not UTF-8."""
    import stat as _stat

    st = os.stat(path)  # OSError: the caller reports it
    if not _stat.S_ISREG(st.st_mode):
        raise BadProofFile("not a pipeproof proof file: not a regular file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadProofFile("not a pipeproof proof file: not UTF-8 text") from None


def split_stamp(text: str) -> tuple[dict[str, str], str]:
    """The stamp's fields (its leading ``; pipeproof-KEY: VALUE`` lines) and the body
    after them."""
    meta: dict[str, str] = {}
    pos = 0
    while text.startswith(PREFIX, pos):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        key, _, value = text[pos + len(PREFIX):end].partition(":")
        meta[key.strip()] = value.strip()
        pos = end
    return meta, text[pos:]


def read_header(path: str) -> tuple[dict[str, str], str]:
    """The stamp's fields and the header comment that says what the answer means."""
    meta, body = split_stamp(_read_text(path))
    claim = ""
    for line in body.splitlines():
        if not line.startswith(";"):
            break
        if "unsat =" in line or "sat =" in line:
            claim = line.lstrip("; ").strip()
    return meta, claim


def verify(text: str) -> tuple[dict[str, str], str]:
    """The stamp's fields and the body of a stamped query, after checking that the
    file is one pipeproof wrote and that it is unchanged; ``BadProofFile`` otherwise."""
    meta, body = split_stamp(text)
    if not meta:
        raise BadProofFile("not a pipeproof proof file: no stamp (write one with "
                           "pipeproof check --engine bmc --smt2 FILE)")
    missing = [k for k in FIELDS if k not in meta]
    if missing:
        raise BadProofFile(f"not a pipeproof proof file: the stamp has no "
                           f"{', '.join(missing)} field"
                           + (" (made by an older pipeproof? export it again)"
                              if missing == ["body"] else ""))
    if meta["expect"] not in EXPECTS:
        raise BadProofFile(f"not a pipeproof proof file: expect: {meta['expect'][:40]!r} "
                           f"is not one of {', '.join(EXPECTS)}")
    digest = meta["body"].partition("sha256=")[2]
    if len(digest) != 64:
        raise BadProofFile("not a pipeproof proof file: the body field has no SHA-256")
    if body_digest(body) != digest:
        raise BadProofFile("modified after export: the query's SHA-256 is not the stamped "
                           "one (the file was edited, appended to or cut short)")
    if "(check-sat)" not in body:
        raise BadProofFile("not a pipeproof proof file: no (check-sat) in the query")
    return meta, body


def recheck(path: str, timeout: float = 600.0) -> Recheck:
    """Solve the query in ``path`` with z3 and compare with its stamp.  Raises
    ``BadProofFile`` (a ``ValueError``) for a file that is not a stamped pipeproof query
    or was changed after export, and ``OSError`` for one that cannot be read."""
    if not (0 < timeout < float("inf")):
        raise ValueError(f"timeout must be a finite positive number of seconds, not "
                         f"{timeout:g}")
    meta, body = verify(_read_text(path))
    claim = ""
    for line in body.splitlines():
        if not line.startswith(";"):
            break
        if "unsat =" in line or "sat =" in line:
            claim = line.lstrip("; ").strip()
    s = z3.SolverFor("QF_BV")
    try:
        s.from_string(body)
    except z3.Z3Exception as e:
        raise BadProofFile(f"not a pipeproof proof file: not readable as SMT-LIB 2: "
                           f"{e}") from None
    s.set("timeout", max(1, min(int(timeout * 1000), 2**32 - 1)))
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
