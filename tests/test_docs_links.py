"""Every relative link in the README and docs/ points at a file (and a heading) that exists, and
docs/README.md, the index, links every page in docs/.

The README is the front door and sends readers into docs/; a page moved or a
section renamed must not leave a dead link behind. Anchors are checked against
the headings of the target page, slugged the way GitHub does (lower case, spaces
to hyphens, punctuation other than hyphens and underscores dropped).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCED = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(_FENCED.pattern + r"|`[^`\n]*`", re.S | re.M)
_HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.M)


def links(page: Path) -> list[str]:
    """The link targets of a markdown page, outside code blocks and code spans."""
    return _LINK.findall(_CODE.sub("", page.read_text()))


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in _HEADING.findall(_FENCED.sub("", page.read_text()))}


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not ours to check
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            dead.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            dead.append(f"{target}: no such heading")
    return dead


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert dead_links(page) == []


def test_the_index_links_every_docs_page() -> None:
    index = DOCS / "README.md"
    linked = {(DOCS / target.partition("#")[0]).resolve() for target in links(index)}
    pages = {p.resolve() for p in DOCS.glob("*.md") if p != index}
    assert sorted(str(p.relative_to(REPO)) for p in pages - linked) == []


def test_the_checker_finds_a_dead_link_and_a_dead_anchor(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading, with `code`\n\n```\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-heading-with-code) ![pic](there.md) [gone](missing.md) [bad](there.md#not-a-heading)\n"
                    "`[in code](skipped.md)` [web](https://example.com/x.md) [here](#local)\n\n## Local\n")
    assert dead_links(page) == ["missing.md: no such file", "there.md#not-a-heading: no such heading"]
