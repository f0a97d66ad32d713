"""Attention as lines (the head view of BertViz and Tensor2Tensor) and one query's softmax, stage by stage.

Line view: queries in a left column, keys in a right one, one line per weight with that weight as its opacity,
one colour per head. The page's app.js keeps only the lines of the piece under the pointer (or the tapped one):
it finds them by their end points, so every line trace is named LINES and holds segments [query, key, gap].
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import ATTENTION_SCALE, COLORS, DIVERGING_SCALE, MASKED_COLOR, base_layout, empty_figure
from .text import label, labels, query_label

LINES = "lines"  # meta of the line traces: app.js filters these
QUERIES, KEYS = "queries", "keys"  # meta of the label traces: hovering or tapping one keeps its lines
LINE_FONT = 13  # px: piece labels stay readable on a phone
LINE_LABEL = 12  # characters at most per label: two columns of them fit a 390 px screen
OPACITY_STEPS = 10  # lines are grouped by opacity (one trace each): a trace has one opacity
ROW = 26  # px per label row


def stage_titles(d_k: int) -> tuple[str, ...]:
    """The walk's stage columns, short enough for a phone."""
    return "q·k", f"÷√{d_k}", "mask", "soft-<br>max"


def head_colors(n_heads: int) -> list[str]:
    return [COLORS[h % len(COLORS)] for h in range(n_heads)]


def attention_lines(weights, query_tokens: Sequence, key_tokens: Sequence[str], *, heads: Sequence[int],
                    hidden=None, title: str | None = None, note: str | None = None,
                    query_title: str = "query", key_title: str = "key", min_weight: float = 0.02) -> go.Figure:
    """weights (n, Tq, Tk) of the heads numbered `heads` (from 1), drawn over each other in their colours.

    hidden (Tq, Tk) marks cells a mask hides: they get no line. Weights below `min_weight` get no line either
    (they would be invisible).
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 3 or w.shape[0] != len(heads) or w.shape[1:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights of shape {w.shape} do not match {len(heads)} heads, {len(query_tokens)} "
                         f"queries and {len(key_tokens)} keys")
    _, Tq, Tk = w.shape
    if Tq == 0 or Tk == 0:
        return empty_figure("Nothing to show: no tokens")
    if hidden is not None:
        w = np.where(np.asarray(hidden, dtype=bool), 0.0, w)
    colors = head_colors(max(heads))
    fig = go.Figure()
    for n, head in enumerate(heads):
        level = np.ceil(np.clip(w[n], 0, 1) * OPACITY_STEPS).astype(int)  # (Tq, Tk): 1..10, 0 for none
        for step in range(1, OPACITY_STEPS + 1):
            qi, kj = np.nonzero((level == step) & (w[n] >= min_weight))
            if not len(qi):
                continue
            # plain lists, not typed arrays: app.js reads and filters the points of gd.data
            x = [0, 1, None] * len(qi)
            y = [c for i, j in zip(qi.tolist(), kj.tolist()) for c in (-i, -j, None)]
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color=colors[head - 1], width=2),
                                     opacity=step / OPACITY_STEPS, hoverinfo="skip", showlegend=False,
                                     meta=LINES, legendgroup=f"head {head}"))
    if len(heads) > 1:  # a legend entry per head colour; a click on it hides or shows that head's lines
        for head in heads:
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"head {head}", meta="legend",
                                     legendgroup=f"head {head}", line=dict(color=colors[head - 1], width=3)))
    q_full, k_full = [query_label(q) for q in query_tokens], labels(key_tokens)
    q_short = [query_label(q[1] if isinstance(q, tuple) else q, LINE_LABEL) for q in query_tokens]
    k_short = labels(key_tokens, LINE_LABEL)
    for meta, x, names, full, side in ((QUERIES, 0.0, q_short, q_full, "middle left"),
                                       (KEYS, 1.0, k_short, k_full, "middle right")):
        fig.add_trace(go.Scatter(
            x=np.full(len(names), x), y=-np.arange(len(names)), mode="markers+text", text=names,
            textposition=side, textfont=dict(size=LINE_FONT), customdata=full, meta=meta, showlegend=False,
            marker=dict(size=9, color="#94a3b8"), hovertemplate="%{customdata}<extra></extra>"))
    rows = max(Tq, Tk)
    fig.update_xaxes(visible=False, range=[-0.75, 1.75], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-rows + 0.5, 1.2], fixedrange=True)
    for x, text in ((0.0, query_title), (1.0, key_title)):
        fig.add_annotation(x=x, y=0.7, text=f"<b>{text}</b>", showarrow=False, font=dict(size=LINE_FONT),
                           xanchor="right" if x == 0 else "left")
    if note:  # under the legend
        fig.add_annotation(text=note, x=0, y=0, xref="paper", yref="paper", yanchor="top", xanchor="left",
                           showarrow=False, font=dict(size=12, color="#52525b"),
                           yshift=-34 if len(heads) > 1 else -4)
    fig.update_layout(hovermode="closest", hoverdistance=-1, dragmode=False, plot_bgcolor="white",
                      legend=dict(orientation="h", x=0, y=0, yanchor="top", font=dict(size=12), traceorder="normal"),
                      showlegend=len(heads) > 1)
    top, bottom = (50 if title else 20), 20 + (24 if note else 0) + (30 if len(heads) > 1 else 0)
    return base_layout(fig, top + bottom + ROW * (rows + 1), title=title,
                       margin=dict(l=10, r=10, t=top, b=bottom))


def softmax_walk(q, keys, values, visible, scores, scaled, weights, output, *, key_tokens: Sequence[str],
                 query: object, d_k: int, title: str | None = None, note: str | None = None) -> go.Figure:
    """One query's attention, stage by stage (paper eq. 1): q and each k_j, q·k_j, ÷√d_k, the mask (−∞ where
    it hides k_j), the softmax, and the output Σ_j softmax_j v_j beside each v_j.

    q (d_k,), keys and values (Tk, d_k), visible (Tk,) bool, scores and scaled (Tk,), weights (Tk,), output
    (d_k,): the caller computes them; this draws them. Every trace is named by its stage.
    """
    q, keys, values, output = (np.asarray(a, dtype=np.float64) for a in (q, keys, values, output))
    scores, scaled, weights = (np.asarray(a, dtype=np.float64) for a in (scores, scaled, weights))
    visible = np.asarray(visible, dtype=bool)
    Tk = len(key_tokens)
    if keys.shape != (Tk, d_k) or values.shape != (Tk, d_k) or q.shape != (d_k,) or output.shape != (d_k,):
        raise ValueError(f"q {q.shape}, keys {keys.shape}, values {values.shape}, output {output.shape} do not "
                         f"match {Tk} keys of size d_k = {d_k}")
    if Tk == 0:
        return empty_figure("Nothing to show: no keys")
    k_lab = [f"{j} {k}" for j, k in enumerate(labels(key_tokens), start=1)]
    dims = list(range(1, d_k + 1))
    q_lab = query_label(query)
    stage_w = 0.1  # room for a number even on a phone
    fig = make_subplots(rows=2, cols=6, shared_yaxes=False, horizontal_spacing=0.012, vertical_spacing=0.04,
                        column_widths=[0.3, stage_w, stage_w, stage_w, stage_w, 0.3],
                        row_heights=[1.6 / (Tk + 1.6), Tk / (Tk + 1.6)],
                        subplot_titles=[f"q ({q_lab})", "", "", "", "", "output Σ softmax_j · v_j",
                                        "k_j", *stage_titles(d_k), "v_j"])
    vmax = float(max(np.abs(q).max(), np.abs(keys).max(), np.abs(values).max(), np.abs(output).max(), 1e-6))
    vec = dict(coloraxis="coloraxis", xgap=0, ygap=1)
    fig.add_trace(go.Heatmap(z=q[None], x=dims, y=["q"], name="q", **vec,
                             hovertemplate="q, dim %{x}: %{z:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=keys, x=dims, y=k_lab, name="k", **vec,
                             hovertemplate="k of %{y}, dim %{x}: %{z:.4f}<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Heatmap(z=output[None], x=dims, y=["output"], name="output", **vec,
                             hovertemplate="output, dim %{x}: %{z:.4f}<extra></extra>"), row=1, col=6)
    fig.add_trace(go.Heatmap(z=values, x=dims, y=k_lab, name="v", **vec,
                             hovertemplate="v of %{y}, dim %{x}: %{z:.4f}<extra></extra>"), row=2, col=6)
    masked = np.where(visible, scaled, np.nan)
    smax = float(max(np.abs(scores[visible]).max(initial=0), 1e-6))
    # the numbers as printed (hover shows more digits)
    stages = (("q·k", scores, "coloraxis2", [f"{s:.1f}" for s in scores]),
              ("scaled", scaled, "coloraxis2", [f"{s:.2f}" for s in scaled]),
              ("masked", masked, "coloraxis2", [f"{s:.2f}" if v else "−∞" for s, v in zip(scaled, visible)]),
              ("softmax", weights, "coloraxis3", [f"{s:.2f}" for s in weights]))
    for col, (name, z, axis, text) in enumerate(stages, start=2):
        fig.add_trace(go.Heatmap(z=z[:, None], x=[name], y=k_lab, name=name, coloraxis=axis,
                                 text=np.array(text)[:, None], texttemplate="%{text}", textfont=dict(size=11),
                                 ygap=1, hoverongaps=True,
                                 hovertemplate=f"{name} for %{{y}}: "
                                               + ("%{text}" if name == "masked" else "%{z:.4f}") + "<extra></extra>"),
                      row=2, col=col)
    fig.update_xaxes(showticklabels=False, ticks="", showline=False)
    fig.update_yaxes(showticklabels=False, ticks="", showline=False, autorange="reversed", type="category")
    fig.update_yaxes(showticklabels=True, row=2, col=1, tickfont=dict(size=11))
    fig.update_yaxes(showticklabels=True, row=1, col=1, tickfont=dict(size=11))
    fig.update_layout(plot_bgcolor=MASKED_COLOR,
                      coloraxis=dict(colorscale=DIVERGING_SCALE, cmin=-vmax, cmax=vmax, showscale=False),
                      coloraxis2=dict(colorscale=DIVERGING_SCALE, cmin=-smax, cmax=smax, showscale=False),
                      coloraxis3=dict(colorscale=ATTENTION_SCALE, cmin=0, cmax=1, showscale=False))
    small = set(stage_titles(d_k))
    for ann in fig.layout.annotations:  # stage titles small enough for a phone's narrow columns
        ann.font = dict(size=10 if ann.text in small else 12)
    if note:
        fig.add_annotation(text=note, x=0, y=0, xref="paper", yref="paper", yanchor="top", xanchor="left",
                           yshift=-6, showarrow=False, font=dict(size=12, color="#52525b"))
    longest = min(max((len(k) for k in k_lab), default=4), 20)
    return base_layout(fig, 140 + 24 * (Tk + 2) + (24 if note else 0), title=title,
                       margin=dict(l=20 + 7 * longest, r=20, t=70 if title else 40, b=20 + (28 if note else 0)))

