"""The Plotly.js the pages carry (anatomy/offline.py PLOTLY_JS, the npm cartesian bundle): the plotly package's
release, and every trace type a figure of the viewer or the server draws is in it."""
from __future__ import annotations

import re
from pathlib import Path

import plotly
from plotly.offline import get_plotlyjs_version

from anatomy import offline

ROOT = Path(__file__).resolve().parents[1]
FULL = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"  # the package's whole bundle


def _traces(source: str) -> set[str]:
    """The trace types a Plotly.js bundle registers."""
    return set(re.findall(r'moduleType:"trace",name:"(\w+)"', source))


def test_the_bundle_is_the_plotly_package_s_release():
    head = offline.PLOTLY_JS.read_text(encoding="utf-8")[:300]
    assert re.search(r"plotly\.js \(cartesian - minified\) v(\S+)", head).group(1) == get_plotlyjs_version()
    assert offline.PLOTLY_JS.stat().st_size < FULL.stat().st_size / 2


def test_every_trace_type_the_figures_draw_is_in_the_bundle():
    shipped, every = _traces(offline.PLOTLY_JS.read_text(encoding="utf-8")), _traces(FULL.read_text(encoding="utf-8"))
    assert {"heatmap", "bar", "scatter"} <= shipped and "sunburst" not in shipped and "sunburst" in every
    # the server's figures (plotly.graph_objects' trace classes, as viz/ names them) and the viewer's (a trace's type)
    server = {name.lower() for path in (ROOT / "viz").glob("*.py")
              for name in re.findall(r"\bgo\.(\w+)\(", path.read_text(encoding="utf-8"))} - {"figure"}
    viewer = {name for path in (ROOT / "anatomy" / "viewer").glob("*.js")
              for name in re.findall(r'\btype: "(\w+)"', path.read_text(encoding="utf-8"))} & every
    assert server and viewer and server | viewer <= shipped, (server | viewer) - shipped
