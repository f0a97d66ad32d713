"""The browser viewer (anatomy/viewer/, plain ES modules) as one classic script, for pages that must hold everything
in one file (the offline page, a notebook's output) and for the app's own script.

Each module becomes a function scope that returns its exports, and each `import {a, b as c} from "./m.js"` a
destructuring of that module's exports: modules keep their own names, as in the browser. The modules use only that
import form and `export` before a function, const, let or class.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

VIEWER = Path(__file__).resolve().parent / "viewer"
_IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"\./([\w-]+)\.js";[ \t]*$', flags=re.M)
_EXPORT = re.compile(r"^export\s+((?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*))", flags=re.M)
_ANY_MODULE_SYNTAX = re.compile(r"^\s*(import|export)\b", flags=re.M)
# Comments on lines of their own (JSDoc blocks, `//` lines): for the reader of the source, not for the page that
# carries the bundle (a third of its size). A block ends at its first `*/`: a line that opens with a JSDoc cast
# (`/** @type {T} */ (x).y = ...`) is code. No code line of the viewer starts with `//`.
_COMMENT_LINES = re.compile(r"^[ \t]*(?:/\*\*(?:[^*]|\*(?!/))*\*/|//[^\n]*)[ \t]*\n", flags=re.M)


def _name(module: str) -> str:
    return "viewer_" + re.sub(r"\W", "_", module)


def _wrapped(module: str, text: str, order: list[str], seen: set[str]) -> None:
    """`module` after the modules it imports, each once, in `order`."""
    if module in seen:
        return
    seen.add(module)
    parts = []

    def imported(match: re.Match) -> str:
        source = match.group(2)
        _wrapped(source, (VIEWER / f"{source}.js").read_text(encoding="utf-8"), order, seen)
        names = [n.strip().replace(" as ", ": ") for n in match.group(1).split(",") if n.strip()]
        return f"const {{{', '.join(names)}}} = {_name(source)};"

    body = _IMPORT.sub(imported, _COMMENT_LINES.sub("", text))
    exports = [m.group(2) for m in _EXPORT.finditer(body)]
    body = _EXPORT.sub(r"\1", body)
    if _ANY_MODULE_SYNTAX.search(body):
        raise ValueError(f"anatomy/viewer/{module}.js: an import or export this bundler does not read")
    parts.append(f"const {_name(module)} = (() => {{\n\"use strict\";\n{body}\n"
                 f"return {{{', '.join(exports)}}};\n}})();")
    order.append("\n".join(parts))


# the viewer page's stylesheets, as every host puts them in its page (the app unscoped, as a style element)
STYLES = ("page.css", "controls.css", "tabs.css", "tour.css")


def style(*own: str) -> str:
    """The viewer page's CSS as one text, after a host's `own` sheets (of VIEWER); without the comments, which are
    for the reader of the source (the CSS holds no string with a comment's marks)."""
    text = "\n".join((VIEWER / name).read_text(encoding="utf-8") for name in own + STYLES)
    return re.sub(r"/\*.*?\*/[ \t]*\n?", "", text, flags=re.S)


@lru_cache(maxsize=None)
def script(*entries: str) -> str:
    """The modules `entries` (file names in anatomy/viewer/, without .js, or a host's own module by its path) and
    every module they import, as one classic script that defines `viewer_<entry>` (the entry's exports; a path's:
    `viewer_<its stem>`) for each: a module that several of them import is in it once, shared."""
    order: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        path = Path(entry) if entry.endswith(".js") else VIEWER / f"{entry}.js"
        _wrapped(path.stem, path.read_text(encoding="utf-8"), order, seen)
    return "// The viewer's modules (anatomy/viewer/), bundled by anatomy/bundle.py\n" + "\n".join(order) + "\n"
