"""Regenerate the pictures and outputs the README shows (docs/README-sections.md).

    python docs/make_screenshots.py

Checks examples/bugs/p1-bug.pipe, writes docs/report-p1-bug.html (the self-contained HTML
report) and docs/report-p1-bug.png (a headless Chromium screenshot of it), and prints the
text timeline.  Needs Debian's chromium (apt-get install -y chromium).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeproof import check_file
from pipeproof.checker.explain import explain
from pipeproof.checker.render.html import Report, write_html

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def main() -> int:
    bug = ROOT / "examples" / "bugs" / "p1-bug.pipe"
    result = check_file(bug)
    result.file = "examples/bugs/p1-bug.pipe"
    html = DOCS / "report-p1-bug.html"
    write_html(Report.from_result(result, explain(result.verdict), source=bug.read_text()),
               str(html))
    print(result.render_text(explain=True, fmt="timeline", width=110))
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("chromium not found: apt-get install -y chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", "--hide-scrollbars",
                        "--window-size=1300,900",
                        f"--screenshot={DOCS / 'report-p1-bug.png'}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {html} and {DOCS / 'report-p1-bug.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
