"""MkDocs hook that builds the documentation site from the repository as it is laid out.

The pages live where GitHub shows them (``README.md``, ``docs/``, ``spec/``,
``examples/**/README.md``, ``bench/``, ``proofs/``, ``CONTRIBUTING.md``) and link to each
other with repository-relative paths.  MkDocs wants one ``docs_dir`` beside its config
file, so this hook replaces the files MkDocs collected with the repository's own: every
page under its repository path (``README.md`` becomes the home page), and every other
file a page links to (a ``.pipe`` example, a kernel's source, a screenshot) copied as is.
A link to a file that does not exist is left alone, so that ``mkdocs build --strict``
reports it (the broken-link check; ``tests/test_docs_site.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: the pages of the site (globs relative to the repository root); pages they link to
#: are added too
PAGES = ("README.md", "CONTRIBUTING.md", "docs/*.md", "spec/*.md", "examples/**/README.md",
         "bench/README.md", "proofs/README.md")

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def link_targets(text: str) -> list[str]:
    """The relative link targets of a Markdown text (not in code blocks or spans),
    without their anchors."""
    out, fence = [], None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            fence = m.group(1) if fence is None else (None if m.group(1) == fence else fence)
            continue
        if fence is not None:
            continue
        line = _CODE_SPAN.sub("", line)
        for t in _LINK.findall(line):
            t = t.split("#", 1)[0]
            if t and not _SCHEME.match(t) and not t.startswith("/"):
                out.append(t)
    return out


def site_sources(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """(pages, other files): repository-relative paths of the Markdown pages (``PAGES``
    and every page they link to) and of the other files they link to."""
    pages: set[str] = set()
    other: set[str] = set()
    todo = [p for g in PAGES for p in root.glob(g)]
    while todo:
        page = todo.pop()
        rel = page.relative_to(root).as_posix()
        if rel in pages:
            continue
        pages.add(rel)
        for t in link_targets(page.read_text(encoding="utf-8")):
            dest = (page.parent / t).resolve()
            try:
                dest_rel = dest.relative_to(root).as_posix()
            except ValueError:
                continue  # outside the repository: MkDocs reports it
            if not dest.is_file():
                continue  # a folder, or missing: MkDocs reports a missing one
            if dest.suffix == ".md":
                todo.append(dest)
            else:
                other.add(dest_rel)
    return sorted(pages), sorted(other)


def on_files(files: Any, config: Any) -> Any:
    """Replace the files MkDocs found in ``docs_dir`` with the repository's pages and
    the files they link to, each at its repository path."""
    from mkdocs.structure.files import File, Files

    pages, other = site_sources()
    return Files([File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"])
                  for rel in pages + other])
