"""The viewer's bundler (anatomy/bundle.py): one classic script of several entries, run by Node as a page runs it."""
from __future__ import annotations

import subprocess

import pytest

from anatomy import bundle
from tests.viewer import NODE, needs_node

# Two entries that import the same module (one of them under another name), which counts its evaluations
MODULES = {
    "shared": 'globalThis.evaluated = (globalThis.evaluated || 0) + 1;\nexport const WORD = "shared";\n'
              "export function twice(x) {\n  return x + x;\n}\n",
    "first": 'import {WORD, twice} from "./shared.js";\n\nexport const first = () => twice(WORD);\n',
    "second": 'import {WORD as word} from "./shared.js";\n\nexport function second() {\n  return word.length;\n}\n',
}
PRINT = "console.log(JSON.stringify([viewer_first.first(), viewer_second.second(), globalThis.evaluated]));"


def _node(script: str) -> subprocess.CompletedProcess:
    # on stdin: the pages' bundle is longer than one argument may be (Linux: 128 KiB)
    return subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=60)


@pytest.fixture
def modules(tmp_path, monkeypatch):
    for name, text in MODULES.items():
        (tmp_path / f"{name}.js").write_text(text, encoding="utf-8")
    monkeypatch.setattr(bundle, "VIEWER", tmp_path)
    bundle.script.cache_clear()
    yield tmp_path
    bundle.script.cache_clear()


@pytest.mark.slow  # node runs the script
@needs_node
def test_one_bundle_of_two_entries_holds_the_module_they_share_once(modules):
    script = bundle.script("first", "second")
    assert script.count("const viewer_shared =") == 1
    ran = _node(script + PRINT)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == '["sharedshared",6,1]'
    # each entry bundled on its own and the two joined: the shared module declared twice, and the script dead
    joined = _node(bundle.script("first") + bundle.script("second") + PRINT)
    assert joined.returncode != 0 and "SyntaxError" in joined.stderr and "viewer_shared" in joined.stderr


@pytest.mark.slow  # node runs the script
@needs_node
def test_the_pages_entries_bundled_together_run():
    """The app's entry (page) and the offline file's (offline, which imports page): one script Node runs."""
    script = bundle.script("page", "offline")
    assert script.count("const viewer_page =") == 1
    ran = _node(script + "console.log(typeof viewer_page.createPage, typeof viewer_offline.showOffline);")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["function", "function"]


def test_a_line_that_starts_with_a_cast_keeps_its_code(tmp_path, monkeypatch):
    """Comment lines go, but a line that opens with a JSDoc cast (`/** @type {T} */ (x).y = ...`, for the type
    check) is code: it stays, and so does the code after it up to the next comment."""
    (tmp_path / "cast.js").write_text(
        "/** The one function. */\nexport function f(el) {\n  /** @type {Object} */ (el).value = 1;\n"
        "  return el;\n}\n\n/**\n * Another.\n */\nexport const g = 2;\n", encoding="utf-8")
    monkeypatch.setattr(bundle, "VIEWER", tmp_path)
    bundle.script.cache_clear()
    try:
        script = bundle.script("cast")
    finally:
        bundle.script.cache_clear()
    assert "/** @type {Object} */ (el).value = 1;\n  return el;\n}" in script
    assert "The one function" not in script and "Another" not in script and "return {f, g};" in script


def test_the_app_and_the_offline_file_carry_one_viewer_stylesheet():
    """The viewer page's CSS (page.css and its siblings) is one text in both hosts: the app's page (ui/document.py)
    holds it as it is, the offline file after its own sheet; no comment of the source goes with it."""
    from ui import document

    css = bundle.style()
    assert "#view-controls" in css and "#share-url" in css and ".anatomy-chip" in css and "/*" not in css
    page = document.document({"components": [], "dependencies": [], "layout": {"id": 0}}, "t", {})
    assert css in page
    own = bundle.style("offline.css")
    assert own.endswith(css) and "header, main" in own and "/*" not in own
    for host in ("ui/static/app.css", "anatomy/viewer/offline.css"):  # the viewer's own boxes are styled once
        text = (bundle.VIEWER.parent.parent / host).read_text(encoding="utf-8")
        assert "#view-controls {" not in text and ".anatomy-chips {" not in text, host
