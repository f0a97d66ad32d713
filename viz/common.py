"""Shared look of every figure: a small template, the colour scales, the frame."""
from __future__ import annotations

import plotly.colors as pc
import plotly.graph_objects as go

FONT = dict(family="Inter, system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=12, color="#1f2937")
ATTENTION_SCALE = "Viridis"  # perceptually uniform and colour-blind safe
ATTENTION_STOPS = pc.get_colorscale(ATTENTION_SCALE)  # its stops, for figures built without validation
MASKED_COLOR = "#d4d4d8"  # cells a mask hides
PROBABILITY_SCALE = "Purples"
DIVERGING_SCALE = "RdBu"
COLORS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#db2777"]

# Plotly's default template is ~6 KB of JSON sent with every figure; this one is a few hundred bytes.
# ticklabeloverflow "allow": the margins leave the token labels room, and Plotly's default check measures every
# label again per label drawn (half of a heatmap's drawing time in the browser).
AXIS = dict(showgrid=False, zeroline=False, linecolor="#d1d5db", ticks="outside", tickcolor="#d1d5db",
            ticklabeloverflow="allow")
TEMPLATE = go.layout.Template(layout=dict(
    font=FONT, paper_bgcolor="white", plot_bgcolor="white", colorway=COLORS,
    hoverlabel=dict(font=dict(family=FONT["family"], size=12)), xaxis=AXIS, yaxis=AXIS,
))

TEMPLATE_JSON = TEMPLATE.to_plotly_json()


def base_layout(fig: go.Figure, height: int, *, title: str | None = None, margin: dict | None = None) -> go.Figure:
    """The shared frame: height (gr.Plot has none of its own), margins, template; a title only when asked for."""
    margin = {"l": 60, "r": 20, "t": 40 if title else 20, "b": 40, **(margin or {})}
    frame = dict(template=TEMPLATE_JSON, height=int(height), margin=margin)
    if title:
        frame["title"] = dict(text=title, x=0.01, xanchor="left", font=dict(size=14))
    return fig.update_layout(frame, showlegend=fig.layout.showlegend)


def empty_figure(message: str, height: int = 260) -> go.Figure:
    """A blank figure with a centred message (the placeholder before anything was computed)."""
    from .text import escape

    fig = go.Figure()
    fig.add_annotation(text=escape(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=14, color="#6b7280"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return base_layout(fig, height)
