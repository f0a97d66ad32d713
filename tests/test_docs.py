"""The README and docs/: short README, links that resolve (here and on a Space), and the layers as
docs/architecture.md states them."""
from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from markdown_it import MarkdownIt

from transformer import hub

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_MARKDOWN = MarkdownIt("commonmark").enable("table")
PROJECT = {"transformer", "viz", "anatomy", "ui", "app", "benchmarks", "assets", "tests"}


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(c for c in heading.lower() if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    tokens = _MARKDOWN.parse(page.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            base = slug("".join(c.content for c in inline.children or []))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(f"{base}-{n}" if n else base)
    return found


def links(page: Path) -> list[str]:
    """Every link and image target of a markdown page (code spans and blocks are not links)."""
    out = []
    for token in _MARKDOWN.parse(page.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type == "link_open":
                out.append(child.attrs["href"])
            elif child.type == "image":
                out.append(child.attrs["src"])
    return out


def relative(page: Path) -> list[tuple[str, Path, str]]:
    """(link as written, the file it names, its anchor) of each relative link of a page."""
    out = []
    for target in links(page):
        url = urlparse(target)
        if url.scheme or url.netloc:
            continue
        path = (page.parent / unquote(url.path)).resolve() if url.path else page
        out.append((target, path, url.fragment))
    return out


def test_the_readme_is_short_and_the_docs_exist():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
    assert {p.name for p in PAGES} >= {"README.md", "architecture.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_names_a_file_and_heading_that_exist(page):
    checked = relative(page)
    assert checked, f"{page.name} links to nothing in the repository"
    for target, path, anchor in checked:
        assert path.is_file(), f"{page.relative_to(ROOT)}: {target} is not a file"
        if anchor:
            assert path.suffix == ".md" and anchor in anchors(path), \
                f"{page.relative_to(ROOT)}: {target} names no heading of {path.name}"


def test_every_linked_file_goes_to_the_space_with_the_pages():
    """push-space uploads the README, docs/ and every file they link to, so the links work on a Space's page."""
    sent = {ROOT / rel for rel, _ in hub.plan(ROOT, hub.SPACE_PATTERNS)}
    assert set(PAGES) <= sent
    for page in PAGES:
        for target, path, _ in relative(page):
            assert path in sent, f"{page.relative_to(ROOT)}: {target} is not uploaded by push-space"


def test_links_and_anchors_are_read_as_github_reads_them(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Use it in a talk\n## `peers.py`\n## Tests\n## Tests\nSee [x](a.md#tests-1), `[no](link)`, "
                    "![img](b.png) and [web](https://example.com).\n\n```\n[not](a link)\n```\n")
    assert anchors(page) == {"use-it-in-a-talk", "peerspy", "tests", "tests-1"}
    assert links(page) == ["a.md#tests-1", "b.png", "https://example.com"]
    assert [(t, p.name, a) for t, p, a in relative(page)] == [("a.md#tests-1", "a.md", "tests-1"),
                                                              ("b.png", "b.png", "")]


def layer_rules() -> dict[str, tuple[set[str] | None, set[str]]]:
    """docs/architecture.md's table of layers: folder or file -> (the project's packages it may import, None for
    any; the packages it never imports)."""
    rules = {}
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[a-z_]+(/|\.py)`", cells[0]):
            allowed = None if cells[2] == "any" else set(re.findall(r"`(\w+)`", cells[2]))
            rules[cells[0].strip("`").rstrip("/")] = (allowed, set(re.findall(r"`(\w+)`", cells[3])))
    return rules


def imported(path: Path) -> set[str]:
    """The top-level packages a file imports by absolute import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module]
    return {name.split(".")[0] for name in names}


def test_the_layers_import_what_the_architecture_page_says():
    rules = layer_rules()
    assert {"transformer", "viz", "anatomy", "ui", "app.py"} <= set(rules)
    for name, (allowed, never) in rules.items():
        where = ROOT / name
        files = [where] if where.is_file() else sorted(where.rglob("*.py"))
        assert files, name
        own = {name.removesuffix(".py")}
        for path in files:
            used = imported(path)
            if allowed is not None:
                assert used & PROJECT <= allowed | own, f"{path.relative_to(ROOT)} imports {used & PROJECT - own}"
            assert not used & never, f"{path.relative_to(ROOT)} imports {used & never}"
