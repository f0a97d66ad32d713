"""What the decoder wanted to say next: top-k probabilities per step."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import PROBABILITY_SCALE, base_layout, cell_height, empty_figure, json_figure
from .text import label, labels, positioned

MISS_COLOR = "#dc2626"


def topk_table(output_tokens: Sequence[str], top_k: Sequence[Sequence[dict]], *, title: str | None = None) -> go.Figure:
    """Rows: decoder steps (counted from 1), labelled with the token that was emitted (or forced) there.
    Columns: the model's k most likely next pieces, coloured by probability, the emitted one in bold.
    A row label in red means the emitted token was not among the model's top k (a forced or
    beam-search token the model did not rank highly).
    """
    T = len(top_k)
    if T == 0:
        return empty_figure("No decoder steps to show")
    if len(output_tokens) != T:
        raise ValueError(f"{len(output_tokens)} output tokens for {T} steps of top-k")
    k = max(len(row) for row in top_k)
    z = np.full((T, k), np.nan, dtype=np.float32)
    text = [[""] * k for _ in range(T)]
    hover = [[""] * k for _ in range(T)]
    row_labels = []
    for t, (out, row) in enumerate(zip(output_tokens, top_k)):
        hit = False
        for r, cand in enumerate(row):
            z[t, r] = float(cand["prob"])
            lab = label(cand["token"], 16)
            chosen = cand["token"] == out
            hit |= chosen
            text[t][r] = f"<b>{lab}</b>" if chosen else lab
            hover[t][r] = f"step {t + 1}: {label(cand['token'])}<br>p = {float(cand['prob']):.3f}" + (
                "<br>(emitted)" if chosen else "")
        name = f"{t + 1} {label(out, 16)}"
        row_labels.append(name if hit else f'<span style="color:{MISS_COLOR}">{name}</span>')
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"#{r + 1}" for r in range(k)], y=np.arange(T), text=text, customdata=hover,
        texttemplate="%{text}", textfont=dict(size=11), colorscale=PROBABILITY_SCALE, zmin=0.0, zmax=1.0,
        xgap=2, ygap=2, hoverongaps=False, hovertemplate="%{customdata}<extra></extra>",
        colorbar=dict(title=dict(text="probability"), thickness=12, len=0.8),
    ))
    fig.update_yaxes(tickmode="array", tickvals=list(range(T)), ticktext=row_labels, autorange="reversed",
                     title=dict(text="step · emitted token"))
    fig.update_xaxes(side="top", title=dict(text="rank"))
    return base_layout(fig, cell_height(T, per_row=26, extra=90), title=title, margin=dict(l=120, t=60))


def topk_bars(step_top_k: Sequence[dict], *, chosen: str | None = None, title: str | None = None) -> go.Figure:
    """One step's k most likely next pieces as horizontal bars; the chosen one in orange."""
    if not step_top_k:
        return empty_figure("No prediction yet", height=300)
    toks = [c["token"] for c in step_top_k]
    probs = np.asarray([float(c["prob"]) for c in step_top_k], dtype=np.float32)
    colors = ["#ea580c" if chosen is not None and t == chosen else "#9333ea" for t in toks]
    data = [dict(type="bar", x=probs, y=np.arange(len(toks)), orientation="h", marker=dict(color=colors),
                 text=[f"{p:.2f}" for p in probs], textposition="outside", cliponaxis=False,
                 hovertext=positioned(toks), hovertemplate="%{hovertext}<br>p = %{x:.3f}<extra></extra>")]
    layout = dict(yaxis=dict(tickmode="array", tickvals=list(range(len(toks))), ticktext=labels(toks),
                             autorange="reversed"),
                  xaxis=dict(range=[0, 1.12], title=dict(text="probability"), showgrid=True, gridcolor="#f3f4f6"))
    return json_figure(data, layout, 300, title=title, margin=dict(l=110, r=30))
