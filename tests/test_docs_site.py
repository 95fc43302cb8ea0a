"""The documentation site (``mkdocs.yml``, ``docs/mkdocs_hooks.py``): every page of
``docs/`` and ``spec/`` is reachable from the README, and ``mkdocs build --strict`` --
which fails on a link to a missing file or a missing heading anchor -- succeeds.  The
build needs ``pip install -e '.[docs]'`` (the ``test`` extra has it too); without MkDocs
and its Material theme that test is skipped and says why."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _hooks():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "docs" / "mkdocs_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_every_page_is_reachable_from_the_readme() -> None:
    """Following Markdown links from README.md reaches every page of docs/ and spec/
    and every page the site is built from."""
    hooks = _hooks()
    seen: set[Path] = set()
    todo = [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for t in hooks.link_targets(page.read_text(encoding="utf-8")):
            dest = (page.parent / t).resolve()
            if dest.suffix == ".md" and dest.is_file():
                todo.append(dest)
    pages, _ = hooks.site_sources()
    wanted = {ROOT / p for p in pages} | set(ROOT.glob("docs/*.md")) | set(ROOT.glob("spec/*.md"))
    missing = sorted(str(p.relative_to(ROOT)) for p in wanted - seen)
    assert not missing, f"pages no link path from README.md reaches: {missing}"


def test_site_sources_follow_links_to_examples() -> None:
    """Files the pages link to (a .pipe example, the screenshot) are part of the site, so
    the links work there too."""
    pages, other = _hooks().site_sources()
    assert "README.md" in pages and "spec/language.md" in pages
    assert "examples/bugs/p1-bug.pipe" in other and "docs/report-p1-bug.png" in other


def test_site_builds_strictly(tmp_path: Path) -> None:
    for mod in ("mkdocs", "material", "pymdownx"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install -e '.[docs]'): the site "
                        "build is not checked")
    site = tmp_path / "site"
    cp = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                         "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                        capture_output=True, text=True, timeout=300, cwd=ROOT,
                        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert cp.returncode == 0, f"mkdocs build --strict failed:\n{cp.stdout}\n{cp.stderr}"
    assert (site / "index.html").is_file()
    for page in ("docs/output.html", "spec/language.html", "examples/bugs/index.html"):
        assert (site / page).is_file(), page
    assert (site / "examples" / "bugs" / "p1-bug.pipe").is_file()
