"""The documentation's relative links resolve, and the README stays short.

Every relative Markdown link (``[text](path)``, ``[text](path#anchor)``, ``[text](#anchor)``)
in the user and contributor pages must name a file of the repository, and an ``#anchor``
in a Markdown target must be one of its headings (GitHub's slugs).  External links
(``https:``, ``mailto:``...) are not followed.  Links inside code blocks and code spans
are not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: the pages whose links are checked
PAGES = sorted({ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md",
                ROOT / "proofs" / "README.md",
                *ROOT.glob("docs/*.md"), *ROOT.glob("spec/*.md"),
                *ROOT.glob("examples/**/README.md")})

README_MAX_LINES = 160

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
#: [text](target) and ![alt](target); the target ends at whitespace or ')'
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with code spans blanked."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            out.append((n, _CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)))
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """Every link target of a Markdown file, with its line number."""
    out = []
    for n, line in _prose_lines(path.read_text(encoding="utf-8")):
        out += [(n, m.group(1)) for m in _LINK.finditer(line)]
        m = _REF_DEF.match(line)
        if m:
            out.append((n, m.group(1)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped
    (letters, digits, '_' and '-' kept), spaces to '-'."""
    s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    s = re.sub(r"<[^>]+>", "", s)                             # inline HTML
    s = s.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _unique(s: str, seen: dict[str, int]) -> str:
    if s in seen:
        seen[s] += 1
        return f"{s}-{seen[s]}"
    seen[s] = 0
    return s


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for a Markdown file's headings (a repeated heading gets
    -1, -2, ...); headings are read with their code spans intact."""
    seen: dict[str, int] = {}
    out = set()
    fence = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            out.add(_unique(slug(m.group(1)), seen))
    return out


def broken_links(path: Path) -> list[str]:
    """'file:line: target: why' for every relative link of ``path`` that does not resolve."""
    bad = []
    rel = path.relative_to(ROOT)
    for n, target in links(path):
        if _SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{rel}:{n}: {target}"
        if not dest.exists():
            bad.append(f"{where}: no such file")
            continue
        try:
            dest.relative_to(ROOT)
        except ValueError:
            bad.append(f"{where}: outside the repository")
            continue
        if anchor and dest.suffix == ".md":
            if anchor not in anchors(dest):
                bad.append(f"{where}: no heading with anchor #{anchor} in "
                           f"{dest.relative_to(ROOT)}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert page.exists()
    bad = broken_links(page)
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_readme_is_short() -> None:
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES})"


def test_every_page_is_reachable_from_the_readme() -> None:
    """Every checked page (and every Markdown file those link) can be reached from
    README.md by following relative links."""
    start = ROOT / "README.md"
    seen, todo = {start}, [start]
    while todo:
        page = todo.pop()
        for _, target in links(page):
            if _SCHEME.match(target):
                continue
            file_part = target.partition("#")[0]
            if not file_part:
                continue
            dest = (page.parent / file_part).resolve()
            if dest.suffix == ".md" and dest.exists() and dest not in seen:
                seen.add(dest)
                todo.append(dest)
    unreached = [str(p.relative_to(ROOT)) for p in PAGES if p.resolve() not in seen]
    assert not unreached, "not reachable from README.md: " + ", ".join(unreached)


def test_slugs() -> None:
    assert slug("10. `elect.sync` (`elect_one()`)") == "10-electsync-elect_one"
    assert slug("Verdicts and exit codes") == "verdicts-and-exit-codes"
    assert slug("F13: the Hopper FMHA example exits") == "f13-the-hopper-fmha-example-exits"
    assert slug("`read-before-full`") == "read-before-full"
    assert slug("Check your own CuTe DSL kernel") == "check-your-own-cute-dsl-kernel"
