"""Figures as gr.Plot values: the Plotly config every figure on the page shares."""
from __future__ import annotations

import json

import plotly.graph_objects as go
from gradio.components.plot import PlotData

PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"],
               "toImageButtonOptions": {"format": "png", "scale": 3, "filename": "transformer-anatomy"}}


def plot(fig: go.Figure, name: str | None = None) -> PlotData:
    """A figure for gr.Plot, with the Plotly config (PNG export at 3× scale, no logo); `name` is the file name
    the page's export gives it (layout.meta.export, read by app.js)."""
    data = json.loads(fig.to_json())
    data["config"] = PLOT_CONFIG
    if name:
        data["layout"]["meta"] = {"export": name}
    return PlotData(type="plotly", plot=json.dumps(data, separators=(",", ":")))
