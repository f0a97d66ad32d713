"""What the decoder wanted to say next: top-k probabilities per step."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import PROBABILITY_SCALE, base_layout, cell_height, empty_figure, json_figure
from .text import label, labels, positioned

MISS_COLOR = "#dc2626"


def topk_table(output_tokens: Sequence[str], pieces: Sequence[Sequence[str]], probs: Sequence[Sequence[float]], *,
               title: str | None = None) -> go.Figure:
    """Rows: decoder steps (counted from 1), labelled with the token that was emitted (or forced) there.
    Columns: the model's k most likely next pieces (`pieces[t]`, with `probs[t]`), coloured by probability, the
    emitted one in bold. A row label in red means the emitted token was not among the model's top k (a forced or
    beam-search token the model did not rank highly).
    """
    T = len(pieces)
    if T == 0:
        return empty_figure("No decoder steps to show")
    if len(output_tokens) != T or len(probs) != T:
        raise ValueError(f"{len(output_tokens)} output tokens and {len(probs)} rows of probabilities for {T} steps "
                         "of top-k")
    k = max(len(row) for row in pieces)
    z = np.full((T, k), np.nan, dtype=np.float32)
    text = [[""] * k for _ in range(T)]
    hover = [[""] * k for _ in range(T)]
    row_labels = []
    for t, (out, row, row_probs) in enumerate(zip(output_tokens, pieces, probs)):
        hit = False
        for r, (piece, p) in enumerate(zip(row, row_probs, strict=True)):
            z[t, r] = p
            lab = label(piece, 16)
            chosen = piece == out
            hit |= chosen
            text[t][r] = f"<b>{lab}</b>" if chosen else lab
            hover[t][r] = f"step {t + 1}: {label(piece)}<br>p = {p:.3f}" + ("<br>(emitted)" if chosen else "")
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


def topk_bars(pieces: Sequence[str], probs: Sequence[float], *, chosen: str | None = None,
              title: str | None = None) -> go.Figure:
    """One step's k most likely next pieces, with their probabilities, as horizontal bars; the chosen one in
    orange."""
    if not pieces:
        return empty_figure("No prediction yet", height=300)
    if len(probs) != len(pieces):
        raise ValueError(f"{len(probs)} probabilities for {len(pieces)} pieces")
    toks = list(pieces)
    probs = np.asarray(probs, dtype=np.float32)
    colors = ["#ea580c" if chosen is not None and t == chosen else "#9333ea" for t in toks]
    data = [dict(type="bar", x=probs, y=np.arange(len(toks)), orientation="h", marker=dict(color=colors),
                 text=[f"{p:.2f}" for p in probs], textposition="outside", cliponaxis=False,
                 hovertext=positioned(toks), hovertemplate="%{hovertext}<br>p = %{x:.3f}<extra></extra>")]
    layout = dict(yaxis=dict(tickmode="array", tickvals=list(range(len(toks))), ticktext=labels(toks),
                             autorange="reversed"),
                  xaxis=dict(range=[0, 1.12], title=dict(text="probability"), showgrid=True, gridcolor="#f3f4f6"))
    return json_figure(data, layout, 300, title=title, margin=dict(l=110, r=30))
