"""Per-head statistics as small multiples and as a table; transformer/analysis.py defines the statistics.

A record is anything with the attributes of `transformer.analysis.HeadStats`: kind (an attention kind's name),
1-based layer and head, and one attribute per statistic, None where it does not apply. The kinds' labels come from
the caller.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import ATTENTION_SCALE, DIVERGING_SCALE, base_layout, empty_figure

STAT_LABELS = {"entropy": "entropy (bits)", "focus": "focus", "same": "same position", "previous": "previous position",
               "next": "next position", "first": "first token", "eos": "EOS",
               "special": "special tokens", "monotonic": "monotonic"}
# Entropy has no panel: focus is the same quantity on a 0-1 scale that compares across sentence lengths.
PANELS = ("focus", "monotonic", "same", "previous", "next", "first", "eos")
SIGNED = {"monotonic"}  # a correlation in [-1, 1]; every other panel is a share in [0, 1]
COLUMNS = 3  # at most, so that a ~1000 px page leaves each cell room for its value
PANEL_GAP = 64  # px between panel rows: room for the row's tick labels and the next row's titles


def head_multiples(stats: Sequence, kind: str, label: str, *, title: str | None = None) -> go.Figure:
    """One layers × heads panel per statistic that applies to `kind` (named `label`), each cell showing its
    value."""
    records = [s for s in stats if s.kind == kind]
    if not records:
        return empty_figure(f"No {label} heads to show")
    L, H = max(r.layer for r in records), max(r.head for r in records)
    panels = [p for p in PANELS if any(getattr(r, p) is not None for r in records)]
    n_rows = math.ceil(len(panels) / COLUMNS)
    n_cols = math.ceil(len(panels) / n_rows)  # balanced: four panels as 2 × 2, not 3 + 1
    panel = max(90, 26 * L)
    top, bottom = (70 if title else 40), 50
    height = n_rows * panel + (n_rows - 1) * PANEL_GAP + top + bottom
    fig = make_subplots(rows=n_rows, cols=n_cols, horizontal_spacing=0.07,
                        vertical_spacing=PANEL_GAP / (height - top - bottom) if n_rows > 1 else 0,
                        subplot_titles=[STAT_LABELS[p] for p in panels])
    heads, layers = list(range(1, H + 1)), list(range(1, L + 1))
    for k, stat in enumerate(panels):
        z = np.full((L, H), np.nan, dtype=np.float32)
        for r in records:
            if getattr(r, stat) is not None:
                z[r.layer - 1, r.head - 1] = getattr(r, stat)
        fig.add_trace(go.Heatmap(
            z=z, x=heads, y=layers, coloraxis="coloraxis2" if stat in SIGNED else "coloraxis", xgap=1, ygap=1,
            texttemplate="%{z:.2f}", textfont=dict(size=10), hoverongaps=False,
            hovertemplate=f"layer %{{y}}, head %{{x}}: {STAT_LABELS[stat]} %{{z:.2f}}<extra></extra>",
        ), row=k // n_cols + 1, col=k % n_cols + 1)
    fig.update_xaxes(dtick=1, ticks="", showline=False, tickfont=dict(size=10))
    fig.update_yaxes(dtick=1, ticks="", showline=False, tickfont=dict(size=10), autorange="reversed")
    fig.update_xaxes(title=dict(text="head", standoff=4), row=n_rows)
    fig.update_yaxes(title=dict(text="layer", standoff=4), col=1)
    signed = any(p in SIGNED for p in panels)
    placement = dict(len=0.45, yanchor="top", y=1) if signed else dict(len=0.8)
    fig.update_layout(coloraxis=dict(colorscale=ATTENTION_SCALE, cmin=0, cmax=1,
                                     colorbar=dict(title=dict(text="share, focus"), thickness=12,
                                                   **placement)))
    if signed:
        fig.update_layout(coloraxis2=dict(colorscale=DIVERGING_SCALE, cmin=-1, cmax=1,
                                          colorbar=dict(title=dict(text="correlation"), thickness=12, len=0.45,
                                                        yanchor="bottom", y=0)))
    for ann in fig.layout.annotations:
        ann.font = dict(size=12)
    return base_layout(fig, height, title=title, margin=dict(l=60, r=30, t=top, b=bottom))


def head_table(stats: Sequence, labels: Mapping[str, str]) -> tuple[list[str], list[list]]:
    """Headers and rows for a table of every head: attention kind, layer, head, then each statistic to 3
    decimals (None where it does not apply). `labels` names each kind, in the order the rows take (then layer,
    head); a record of any other kind is an error."""
    order = {kind: i for i, kind in enumerate(labels)}
    for s in stats:
        if s.kind not in order:
            raise ValueError(f"unknown attention kind {s.kind!r}; expected one of {', '.join(labels)}")
    headers = ["attention", "layer", "head", *STAT_LABELS.values()]
    rows = [[labels[s.kind], s.layer, s.head,
             *(None if getattr(s, stat) is None else round(float(getattr(s, stat)), 3) for stat in STAT_LABELS)]
            for s in sorted(stats, key=lambda s: (order[s.kind], s.layer, s.head))]
    return headers, rows
