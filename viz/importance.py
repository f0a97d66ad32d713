"""Which heads a translation needs: per-head maps side by side, and the change a switched-off head makes.

The caller gives one (layers, heads) array per attention kind and measure, with the kinds' labels; a cell of a map
carries `head=KIND:LAYER.HEAD` as its customdata, which a click in the page reads (ui/static/app.js) to switch that
head off or on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np
import plotly.graph_objects as go

from .common import ATTENTION_STOPS, MASKED_COLOR, json_figure
from .text import escape

CLICK_PREFIX = "head="  # what app.js looks for in a clicked cell's customdata
PANEL = 34  # px per layer row of a map: two lines of cell text
GAP = 56  # px between kinds: room for the axis titles
TITLE = 24  # px above a kind's maps for their titles


@dataclass(frozen=True)
class Measure:
    """One column of maps: a name, what its colours mean, and its scale."""

    title: str  # "Ablation: drop in log p"
    colorscale: list | str
    zmin: float
    zmax: float
    fmt: str  # the cell text's number format, e.g. ".2f"


def importance_maps(kinds: Sequence[tuple[str, str]], measures: Sequence[Measure],
                    values: Sequence[Sequence[np.ndarray]], *, notes: Sequence[Sequence[np.ndarray]] | None = None,
                    off: Collection[str] = (), title: str | None = None) -> go.Figure:
    """kinds: (name, label) per row of maps; values[i][j]: kind i, measure j, (layers, heads). notes[i][j]: text
    beside each value (e.g. a head's role), or None. Heads in `off` ("cross:1.2") are drawn greyed and labelled."""
    if not kinds:
        return go.Figure()
    heights = [np.asarray(values[i][0]).shape[0] for i in range(len(kinds))]
    blocks = [TITLE + PANEL * L for L in heights]  # px: a kind's title above its maps
    plot = sum(blocks) + GAP * (len(kinds) - 1)
    top, bottom = (80 if title else 50), 40
    n_cols, col_gap = len(measures), 0.06
    width = (1 - col_gap * (n_cols - 1)) / n_cols
    data, layout, annotations, shapes = [], {}, [], []
    y = plot  # px from the bottom of the plotting area to the top of the next kind's block
    axis = dict(showgrid=False, zeroline=False, ticks="", showline=False, tickfont=dict(size=10), dtick=1)
    for i, ((kind, label), L) in enumerate(zip(kinds, heights)):
        panel_top, bottom_y = (y - TITLE) / plot, (y - TITLE - PANEL * L) / plot
        for j, measure in enumerate(measures):
            n = i * n_cols + j + 1
            name = "" if n == 1 else str(n)
            left = j * (width + col_gap)
            z = np.asarray(values[i][j], dtype=np.float64)
            H = z.shape[1]
            heads, layers = list(range(1, H + 1)), list(range(1, L + 1))
            text = [[f"{z[l, h]:{measure.fmt}}" + (f"<br>{escape(str(notes[i][j][l][h]))}" if notes and
                                                    notes[i][j] is not None else "")
                     for h in range(H)] for l in range(L)]
            keys = [[f"{CLICK_PREFIX}{kind}:{l + 1}.{h + 1}" for h in range(H)] for l in range(L)]
            data.append(dict(type="heatmap", z=z, x=heads, y=layers, text=text, texttemplate="%{text}",
                             textfont=dict(size=10), customdata=keys, xgap=1, ygap=1, zmin=measure.zmin,
                             zmax=measure.zmax, colorscale=measure.colorscale, showscale=False,
                             xaxis=f"x{name}", yaxis=f"y{name}",
                             hovertemplate=f"{escape(label)} layer %{{y}} head %{{x}}<br>{escape(measure.title)}: "
                                           f"%{{text}}<br>click: switch this head off/on<extra></extra>"))
            layout[f"xaxis{name}"] = dict(axis, domain=[left, left + width], anchor=f"y{name}",
                                          title=dict(text="head", standoff=2, font=dict(size=10)))
            layout[f"yaxis{name}"] = dict(axis, domain=[bottom_y, panel_top], anchor=f"x{name}",
                                          autorange="reversed", title=dict(text="layer", standoff=2,
                                                                           font=dict(size=10)) if j == 0 else None)
            annotations.append(dict(text=f"<b>{escape(label)}</b> · {escape(measure.title)}", x=left, y=panel_top,
                                    xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                                    font=dict(size=12)))
            for head in off:
                k, _, place = head.partition(":")
                l, _, h = place.partition(".")
                if k == kind and l.isdigit() and h.isdigit() and int(l) <= L and int(h) <= H:
                    shapes.append(dict(type="rect", xref=f"x{name}", yref=f"y{name}", x0=int(h) - 0.5,
                                       x1=int(h) + 0.5, y0=int(l) - 0.5, y1=int(l) + 0.5,
                                       fillcolor=MASKED_COLOR, opacity=0.6, line=dict(color="#52525b", width=2)))
                    annotations.append(dict(text="<b>OFF</b>", x=int(h) + 0.45, y=int(l) - 0.45, xref=f"x{name}",
                                            yref=f"y{name}", xanchor="right", yanchor="top", showarrow=False,
                                            font=dict(size=9, color="#18181b")))
        y -= blocks[i] + GAP
    layout["annotations"] = annotations
    layout["shapes"] = shapes
    return json_figure(data, layout, top + bottom + plot, title=title, margin=dict(l=50, r=20, t=top, b=bottom))


def log_prob_change(pieces: Sequence[str], before: np.ndarray, after: np.ndarray, *,
                    title: str | None = None) -> go.Figure:
    """Per output piece, the change in its log-probability when heads are switched off (after - before)."""
    delta = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    x = [f"{i} {escape(p)}" for i, p in enumerate(pieces, start=1)]
    colors = ["#dc2626" if d < 0 else "#2563eb" for d in delta]
    data = [dict(type="bar", x=x, y=delta, marker=dict(color=colors),
                 customdata=np.stack([before, after], -1),
                 hovertemplate="%{x}<br>log p %{customdata[0]:.2f} → %{customdata[1]:.2f} "
                               "(%{y:+.2f})<extra></extra>")]
    layout = dict(xaxis=dict(type="category", tickangle=-45, title=dict(text="output piece of the original "
                                                                              "translation")),
                  yaxis=dict(title=dict(text="Δ log p (heads off − all on)"), zeroline=True, zerolinecolor="#9ca3af"))
    return json_figure(data, layout, 300, title=title, margin=dict(l=60, r=20, t=40 if title else 20, b=90))


def attention_measure(title: str) -> Measure:
    """A measure on the attention colour scale, from 0 to 1 (e.g. confidence)."""
    return Measure(title, ATTENTION_STOPS, 0.0, 1.0, ".2f")
