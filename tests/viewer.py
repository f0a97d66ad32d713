"""The app's viewer in the Python tests: the figures its boxes show (anatomy/viewer/boxes.js) for a payload and
views, computed by Node (tests/js/draw.mjs), as the page draws them."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from anatomy import offline
from anatomy.inputs import View

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/test.sh installs it)")


def as_view(view: View) -> dict:
    """A View as the page's controls give it to the viewer."""
    return {"kind": view.kind, "layer": view.layer, "head": view.head, "merge": view.merge, "step": view.step or 0,
            "plain": view.plain, "hide": view.hide, "display": view.display, "query": view.query}


def drawn(payload: dict | None, views: list[View], twin: dict | None = None, walk: dict | None = None,
          positional: dict | None = None, dims: list[str] | None = None,
          importance: dict | None = None, explain: dict | None = None, norms: dict | None = None,
          method: str = "ig", weights: str = "attention") -> list[dict]:
    """For each view: {box id: its figure ({data, layout}) as the page draws it, "partial": the output so far,
    "view": the view fitted}; the positional encoding's boxes with `positional` (and the chosen `dims`), the head
    importance's with `importance`, Why this word's with `explain` (by `method`); the attention views weighed by
    `weights`, with the value norms `norms`."""
    if NODE is None:
        pytest.skip("node is not installed")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "draw.json"
        path.write_text(json.dumps({"data": {"payload": payload, "twin": twin, "walk": walk, "positional": positional,
                                             "importance": importance, "explain": explain,
                                             "norms": norms},
                                    "look": offline.look(),
                                    "views": [dict(as_view(v), dims=dims, method=method, weights=weights)
                                              for v in views]}),
                        encoding="utf-8")
        done = subprocess.run([NODE, str(ROOT / "tests" / "js" / "draw.mjs"), str(path)], capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def title(figure: dict) -> str:
    return figure["layout"].get("title", {}).get("text", "")
