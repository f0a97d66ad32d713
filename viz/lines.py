"""One query's softmax, stage by stage (the softmax walk). The line view is the viewer's
(anatomy/viewer/figures.js)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import ATTENTION_SCALE, DIVERGING_SCALE, MASKED_COLOR, base_layout, empty_figure
from .text import labels, query_label

def stage_titles(d_k: int) -> tuple[str, ...]:
    """The walk's stage columns, short enough for a phone."""
    return "q·k", f"÷√{d_k}", "mask", "soft-<br>max"



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
