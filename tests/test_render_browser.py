"""The HTML report in a real browser: headless Chromium opens every report, runs its
script, dumps the DOM and takes a screenshot.  The test checks that the page rendered
without console errors, that the SVG has one lane per agent, and that the screenshot
shows the timeline (the lane and step colours are on screen).

Chromium comes from Debian's ``chromium`` package; ``.ci/run`` installs it when missing.
The test is skipped only when it is not installed and the install was impossible
(``.ci/run`` then sets ``PIPEPROOF_CHROMIUM_UNAVAILABLE`` to the reason).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import functools
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from render_cases import agents_of, case_params, result_of, source_of

from pipeproof.checker.explain import explain
from pipeproof.checker.render.html import COLORS, LANE_BG, Report, write_html

CHROMIUM = next((p for p in (shutil.which(n) for n in
                             ("chromium", "chromium-browser", "google-chrome")) if p), None)
CASES = case_params()


def _need_chromium() -> str:
    if CHROMIUM is not None:
        return CHROMIUM
    why = os.environ.get("PIPEPROOF_CHROMIUM_UNAVAILABLE")
    if os.environ.get("CI") and not why:
        pytest.fail("chromium is missing although .ci/run installs it (apt-get install "
                    "chromium) and did not report that the install was impossible")
    pytest.skip("headless Chromium is not installed here and could not be installed "
                f"({why or 'install it with: apt-get install -y chromium'})")


@dataclass
class Shot:
    dom: str
    log: str
    png: Path
    returncode: int


def open_in_chromium(html: Path, png: Path, width: int = 1400, height: int = 1000,
                     scale: float = 0.5) -> Shot:
    """Open ``html``; dump the DOM after its scripts ran and save a screenshot of the
    ``width`` x ``height`` window (rendered at ``scale``: fewer pixels to decode)."""
    exe = _need_chromium()
    with tempfile.TemporaryDirectory() as profile:
        cp = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
             "--hide-scrollbars", f"--window-size={width},{height}",
             f"--force-device-scale-factor={scale}",
             "--enable-logging=stderr", "--v=0", f"--screenshot={png}", "--dump-dom",
             html.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    return Shot(cp.stdout, cp.stderr, png, cp.returncode)


# --------------------------------------------------------------------------- PNG


def read_png(path: Path) -> tuple[int, int, list[bytes], int]:
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG: (width, height, rows, channels)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    w = h = channels = 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in (2, 6), (depth, ctype)
            channels = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = w * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    i = 0
    for _ in range(h):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return w, h, rows, channels


def colour_counts(path: Path, colours: dict[str, str]) -> dict[str, int]:
    """How many pixels of each opaque ``#rrggbb`` colour the screenshot has."""
    w, h, rows, ch = read_png(path)
    data = b"".join(rows)
    out = {}
    for name, c in colours.items():
        pat = bytes.fromhex(c[1:]) + (b"\xff" if ch == 4 else b"")
        out[name] = data.count(pat)
    return out


# --------------------------------------------------------------------------- the test


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Shot, Path]]:
    """``shots(case)``: the report of ``case`` opened in Chromium (once per case)."""
    _need_chromium()
    out = tmp_path_factory.mktemp("reports")

    @functools.lru_cache(maxsize=None)
    def one(case: str) -> tuple[Shot, Path]:
        r = result_of(case)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", case)
        page = out / f"{name}.html"
        write_html(Report.from_result(r, explain(r.verdict), source=source_of(case)), str(page))
        return open_in_chromium(page, out / f"{name}.png"), page

    return one


@pytest.mark.parametrize("case", CASES)
def test_report_renders_in_chromium(case: str, shots: Callable) -> None:
    shot, page = shots(case)
    r = result_of(case)
    assert shot.returncode == 0, shot.log[-2000:]
    console = [ln for ln in shot.log.splitlines() if ":CONSOLE" in ln]
    assert not console, "the page logged to the console:\n" + "\n".join(console)
    # the page's script ran to its end and counted the lanes of the rendered SVG
    m = re.search(r'data-pipeproof-rendered="(\d+)"', shot.dom)
    assert m, "the report's script did not run"
    agents = agents_of(r)
    assert int(m.group(1)) == len(agents)
    lanes = re.findall(r'<g class="lane" data-agent="([^"]+)"', shot.dom)
    assert sorted(lanes) == sorted(agents)           # one lane per agent
    assert shot.png.exists() and shot.png.stat().st_size > 5_000


@pytest.mark.parametrize("case", CASES)
def test_screenshot_shows_the_timeline(case: str, shots: Callable) -> None:
    shot, _page = shots(case)
    r = result_of(case)
    used = {c for c in _categories(r)}
    counts = colour_counts(shot.png, {**{f"lane{i}": c for i, c in enumerate(LANE_BG)},
                                      **{k: COLORS[k] for k in used}})
    # lane stripes are wide: thousands of pixels each when the lanes are on screen
    assert counts["lane0"] > 2_000, counts
    if len(agents_of(r)) > 1:
        assert counts["lane1"] > 2_000, counts
    for k in used:
        assert counts[k] > 20, f"no {k} steps visible in the screenshot: {counts}"


def _categories(r) -> set[str]:
    from pipeproof.checker.render.perfetto import _category

    return {_category(e.op) for e in r.verdict.trace.events}
