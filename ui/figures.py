"""Figures the server draws, as the page's viewer draws them (Plotly JSON), and the Plotly config every figure on the
page shares."""
from __future__ import annotations

import json

import plotly.graph_objects as go

PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"],
               "toImageButtonOptions": {"format": "png", "scale": 3, "filename": "transformer-anatomy"}}


def figure_json(fig: go.Figure, name: str | None = None) -> dict:
    """A figure as Plotly JSON for the viewer (anatomy/viewer/host.js draws it with PLOT_CONFIG); `name` is the
    file name the page's export gives it (layout.meta.export)."""
    data = json.loads(fig.to_json())
    if name:  # beside what the figure says of itself there (viz/architecture.py: the width its text fits)
        meta = data["layout"].get("meta")
        data["layout"]["meta"] = {**(meta if isinstance(meta, dict) else {}), "export": name}
    return data
