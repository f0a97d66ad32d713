"""Attention figures: one head as a heatmap, one query row as bars, every head at once.

Conventions (all figures): queries are rows, keys are columns; the colour scale is fixed to
[0, 1] so panels compare; cells hidden by a mask are drawn grey and say "masked", never 0.
Query labels may be pieces or, for decoder positions, (read, produced) pairs.
"""
from __future__ import annotations

from typing import Collection, Sequence

import numpy as np
import plotly.graph_objects as go

from .common import ATTENTION_STOPS, MASKED_COLOR, as_matrix, cell_height, empty_figure, json_figure
from .text import labels, query_label, query_labels

STEP_FRAME = "step-frame"  # the shape's name: the page's export leaves it out unless asked
COLORBAR = dict(title=dict(text="weight", side="right"), thickness=12, len=0.8, tickvals=[0, 0.25, 0.5, 0.75, 1])


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """True where the decoder's mask hides key j from query i (j > i)."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


def _check(weights: np.ndarray, query_tokens: Sequence, key_tokens: Sequence[str]) -> None:
    if weights.shape[-2:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights of shape {weights.shape} do not match {len(query_tokens)} query and "
                         f"{len(key_tokens)} key tokens")


def attention_heatmap(weights, query_tokens: Sequence, key_tokens: Sequence[str], *,
                      query_title: str = "query", key_title: str = "key", title: str | None = None,
                      hidden=None, causal: bool = False, highlight_row: int | None = None,
                      note: str | None = None) -> go.Figure:
    """A (queries × keys) attention matrix; row i says where query i looked.

    hidden (or causal=True for the decoder's triangular mask) marks cells a mask hides: they
    are drawn grey and hover as "masked" instead of as zero attention. `note` replaces the
    legend of the grey cells.
    """
    w = as_matrix(weights)
    _check(w, query_tokens, key_tokens)
    Tq, Tk = w.shape
    if Tq == 0 or Tk == 0:
        return empty_figure("Nothing to show: no tokens")
    if hidden is None and causal:
        hidden = causal_mask(Tq, Tk)
    z = w.copy()
    if hidden is not None:
        hidden = np.asarray(hidden, dtype=bool)
        z[hidden] = np.nan
    q_lab, k_lab = query_labels(query_tokens), labels(key_tokens)
    text = [[f"{q_lab[i]} \u2192 {k_lab[j]}: " + ("masked" if np.isnan(z[i, j]) else f"{z[i, j]:.3f}")
             for j in range(Tk)] for i in range(Tq)]
    data = [dict(type="heatmap", z=z, x=np.arange(Tk), y=np.arange(Tq), text=text, zmin=0.0, zmax=1.0,
                 colorscale=ATTENTION_STOPS, hoverongaps=True, hovertemplate="%{text}<extra></extra>",
                 colorbar=COLORBAR)]
    layout = dict(xaxis=dict(tickmode="array", tickvals=list(range(Tk)), ticktext=k_lab, tickangle=-50,
                             title=dict(text=key_title), showline=False),
                  yaxis=dict(tickmode="array", tickvals=list(range(Tq)), ticktext=q_lab, autorange="reversed",
                             title=dict(text=query_title), showline=False),
                  plot_bgcolor=MASKED_COLOR if hidden is not None else "white", annotations=[], shapes=[])
    if note or (hidden is not None and hidden.any()):
        layout["annotations"].append(dict(text=note or "grey: hidden by the mask", x=1, y=1, xref="paper",
                                          yref="paper", xanchor="right", yanchor="bottom", showarrow=False,
                                          font=dict(size=11, color="#52525b")))
    if highlight_row is not None and 0 <= highlight_row < Tq:
        layout["shapes"].append(dict(type="rect", x0=-0.5, x1=Tk - 0.5, y0=highlight_row - 0.5,
                                     y1=highlight_row + 0.5, line=dict(color="#f97316", width=3), name=STEP_FRAME))
    longest_k = min(max((len(k) for k in k_lab), default=4), 24)
    longest_q = min(max((len(q) for q in q_lab), default=4), 32)
    return json_figure(data, layout, cell_height(Tq, per_row=30, extra=110 + 6 * longest_k), title=title,
                       margin=dict(l=40 + 7 * longest_q, b=50 + 6 * longest_k))


def attention_row(row, key_tokens: Sequence[str], *, title: str | None = None, key_title: str = "key",
                  query: object = None, color: str = "#3b528b") -> go.Figure:
    """One query's attention over the keys as bars, on the fixed [0, 1] scale."""
    r = np.asarray(row, dtype=np.float32).reshape(-1)
    if len(r) != len(key_tokens):
        raise ValueError(f"{len(r)} weights for {len(key_tokens)} key tokens")
    k_lab = labels(key_tokens)
    q = query_label(query) if query is not None else "query"
    data = [dict(type="bar", x=np.arange(len(r)), y=r, marker=dict(color=color), textposition="none",
                 text=[f"{q} \u2192 {k}: {v:.3f}" for k, v in zip(k_lab, r)], hovertemplate="%{text}<extra></extra>")]
    layout = dict(xaxis=dict(tickmode="array", tickvals=list(range(len(r))), ticktext=k_lab, tickangle=-50,
                             title=dict(text=key_title)),
                  yaxis=dict(range=[0, 1], title=dict(text="weight"), showgrid=True, gridcolor="#f3f4f6"))
    longest = min(max((len(k) for k in k_lab), default=4), 24)
    return json_figure(data, layout, 300 + 5 * longest, title=title, margin=dict(b=50 + 6 * longest,
                                                                                 t=50 if title else 20))


def attention_grid(weights, query_tokens: Sequence, key_tokens: Sequence[str], *, causal: bool = False,
                   hidden=None, title: str | None = None, cell: int = 170, off: Collection[tuple[int, int]] = (),
                   click_kind: str | None = None) -> go.Figure:
    """Every layer (rows) × head (columns) of one attention kind, on one shared [0, 1] colour scale.

    `off`: the (layer, head) pairs, from 1, of heads switched off, greyed and labelled. With `click_kind`, each
    thumbnail names its head as `head=KIND:LAYER.HEAD` (its meta) for a click to read (ui/static/app.js).

    Weights travel as whole percents (uint8): a base-size model's 48 heads over 40 pieces stay
    near 200 KB of JSON instead of 500 KB; masked cells are painted over by a transparent/grey
    overlay (uint8 has no NaN).
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {w.shape}")
    _check(w, query_tokens, key_tokens)
    L, H, Tq, Tk = w.shape
    if Tq == 0 or Tk == 0:
        return empty_figure("Nothing to show: no tokens")
    if hidden is None and causal:
        hidden = causal_mask(Tq, Tk)
    # Unique category labels ("3 ▁dog", positions counted from 1) keep repeated pieces apart; only the hover
    # shows them.
    q_pos = [f"{i} {q}" for i, q in enumerate(query_labels(query_tokens), start=1)]
    k_pos = [f"{j} {k}" for j, k in enumerate(labels(key_tokens), start=1)]
    percent = np.rint(np.clip(w, 0.0, 1.0) * 100).astype(np.uint8)
    overlay = None if hidden is None else np.asarray(hidden, dtype=np.uint8)
    # make_subplots' domains and titles, written out: make_subplots validates each of them, slowly.
    h_gap, v_gap = 0.015, min(0.05, 0.3 / max(L, 1))
    width, height = (1 - h_gap * (H - 1)) / H, (1 - v_gap * (L - 1)) / L
    axis = dict(showticklabels=False, ticks="", type="category", showline=False)
    data, layout, titles, shapes = [], {}, [], []
    for l in range(L):
        top = 1 - l * (height + v_gap)
        for h in range(H):
            n = "" if l == 0 and h == 0 else str(l * H + h + 1)  # Plotly's axis names: x, x2, x3, ...
            left = h * (width + h_gap)
            layout[f"xaxis{n}"] = dict(axis, domain=[left, left + width], anchor=f"y{n}")
            layout[f"yaxis{n}"] = dict(axis, domain=[top - height, top], anchor=f"x{n}", autorange="reversed")
            is_off = (l + 1, h + 1) in off
            titles.append(dict(text=f"layer {l + 1} · head {h + 1}" + (" · <b>OFF</b>" if is_off else ""),
                               x=left + width / 2, y=top, xref="paper", yref="paper", xanchor="center",
                               yanchor="bottom", showarrow=False,
                               font=dict(size=11, color="#71717a" if is_off else None)))
            data.append(dict(type="heatmap", z=percent[l, h], x=k_pos, y=q_pos, coloraxis="coloraxis",
                             xaxis=f"x{n}", yaxis=f"y{n}",
                             meta=f"head={click_kind}:{l + 1}.{h + 1}" if click_kind else None,
                             hovertemplate=f"layer {l + 1} head {h + 1}" + (" (off)" if is_off else "") +
                                           "<br>%{y} \u2192 %{x}: %{z}%" +
                                           ("<br>click: switch this head off/on" if click_kind else "") +
                                           "<extra></extra>"))
            if is_off:  # the weights are still computed; only the head's output is zeroed
                shapes.append(dict(type="rect", xref=f"x{n} domain", yref=f"y{n} domain", x0=0, x1=1, y0=0, y1=1,
                                   fillcolor=MASKED_COLOR, opacity=0.7, line=dict(color="#52525b", width=2)))
            if overlay is not None:
                data.append(dict(type="heatmap", z=overlay, x=k_pos, y=q_pos, zmin=0, zmax=1, showscale=False,
                                 hoverinfo="skip", colorscale=[[0, "rgba(0,0,0,0)"], [1, MASKED_COLOR]],
                                 xaxis=f"x{n}", yaxis=f"y{n}"))
    layout["annotations"] = titles
    layout["shapes"] = shapes
    layout["coloraxis"] = dict(colorscale=ATTENTION_STOPS, cmin=0, cmax=100,
                               colorbar=dict(title=dict(text="weight"), thickness=12, len=0.6,
                                             tickvals=[0, 25, 50, 75, 100], ticktext=["0", "0.25", "0.5", "0.75", "1"]))
    return json_figure(data, layout, 50 + cell * L, title=title, margin=dict(l=20, r=20, t=50 if title else 30, b=20))
