"""The bug catalogue (examples/bugs/): every ``*-bug.pipe`` is VIOLATED with exactly the
property its header documents, every ``*-fixed.pipe`` is SAFE or PROVEN.

Header of each file (read here, documented in examples/bugs/README.md):

* ``# expect: VIOLATED <property>`` or ``# expect: SAFE``;
* ``# quick: name=value ...`` -- parameters used here to keep the suite fast;
* ``# needs: ...`` -- a model feature that is missing: the test is a strict xfail;
* ``# slow: ...`` -- too slow for the default run today: marked ``slow``;
* ``# memory-model: strict`` -- check with ``--memory-model strict`` (scope bugs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from pipeproof.api import check_file
from pipeproof.model.properties import ALL_PROPERTIES

BUGS = Path(__file__).resolve().parent.parent / "examples" / "bugs"
README = BUGS / "README.md"
FILES = sorted(BUGS.glob("*-bug.pipe")) + sorted(BUGS.glob("*-fixed.pipe"))

#: engine budget per file; every file of the catalogue finishes well within it
MAX_STATES = 400_000
TIMEOUT = 300.0


@dataclass(frozen=True)
class Header:
    status: str                 # "VIOLATED" or "SAFE"
    prop: Optional[str]
    quick: dict
    needs: str
    slow: str
    memory_model: str = "cutlass"


def parse_header(path: Path) -> Header:
    status, prop, quick, needs, slow, mm = None, None, {}, "", "", "cutlass"
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*expect:\s*(VIOLATED|SAFE)\s*(\S*)\s*$", line)
        if m:
            status, prop = m.group(1), m.group(2) or None
        m = re.match(r"#\s*quick:\s*(.*)$", line)
        if m:
            for kv in m.group(1).split():
                k, v = kv.split("=")
                quick[k] = int(v)
        m = re.match(r"#\s*needs:\s*(.*)$", line)
        if m:
            needs = m.group(1).strip()
        m = re.match(r"#\s*slow:\s*(.*)$", line)
        if m:
            slow = m.group(1).strip()
        m = re.match(r"#\s*memory-model:\s*(\S+)\s*$", line)
        if m:
            mm = m.group(1)
    if status is None:
        raise AssertionError(f"{path.name}: no '# expect:' line in the header")
    return Header(status, prop, quick, needs, slow, mm)


def _params() -> list:
    out = []
    for f in FILES:
        h = parse_header(f)
        marks = []
        if h.needs:
            marks.append(pytest.mark.xfail(strict=True, reason=f"model lacks: {h.needs}"))
        if h.slow:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(f, id=f.stem, marks=marks))
    return out


def test_catalogue_is_complete() -> None:
    """P1..P10 each have a bug and a fixed twin, and every bug has its twin."""
    stems = {f.stem for f in FILES}
    for i in range(1, 11):
        assert f"p{i}-bug" in stems and f"p{i}-fixed" in stems, f"P{i} is missing"
    for f in BUGS.glob("*-bug.pipe"):
        assert (BUGS / f.name.replace("-bug.pipe", "-fixed.pipe")).exists(), f.name


def test_headers_agree_with_readme() -> None:
    """The README row of each bug names the property its -bug.pipe header expects."""
    rows = {}
    for line in README.read_text().splitlines():
        m = re.match(r"\|\s*([PXST]\d+)\s*\|[^|]*\|\s*`([a-z-]+)`", line)
        if m:
            rows[m.group(1).lower()] = m.group(2)
    for f in BUGS.glob("*-bug.pipe"):
        bug_id = f.name.split("-")[0]
        h = parse_header(f)
        assert h.status == "VIOLATED", f"{f.name} must expect a violation"
        assert h.prop in ALL_PROPERTIES, f"{f.name}: unknown property {h.prop!r}"
        assert rows.get(bug_id) == h.prop, \
            f"{f.name} expects {h.prop} but README says {rows.get(bug_id)}"
    for f in BUGS.glob("*-fixed.pipe"):
        assert parse_header(f).status == "SAFE", f"{f.name} must expect SAFE"


@pytest.mark.parametrize("path", _params())
def test_bug_example(path: Path) -> None:
    h = parse_header(path)
    r = check_file(path, h.quick, max_states=MAX_STATES, timeout=TIMEOUT,
                   memory_model=h.memory_model, engine="explicit")
    v = r.verdict
    if h.status == "VIOLATED":
        assert v.status == "VIOLATED", f"{path.name}: {v.headline()} ({v.reason})"
        assert v.prop == h.prop, f"{path.name}: found {v.prop}, expected {h.prop}: {v.reason}"
        assert r.exit_code == 1
        assert v.trace is not None and len(v.trace) > 0
    else:
        assert v.status in ("SAFE", "PROVEN"), f"{path.name}: {v.headline()} {v.reason}"
        assert r.exit_code == 0
