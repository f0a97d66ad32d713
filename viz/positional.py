"""The sinusoidal positional encoding of paper §3.5, seen three ways."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import COLORS, DIVERGING_SCALE, base_layout


def default_dims(d_model: int) -> list[int]:
    """A sin/cos pair, then slower sines: wavelengths that stay apart over a few hundred positions."""
    evens = [2 * round(f * d_model / 2) for f in (1 / 8, 1 / 4, 3 / 8, 1 / 2)]
    picks = sorted({evens[0], evens[0] + 1, *evens[1:]})
    return [d for d in picks if 0 <= d < d_model]


def wave(dim: int, d_model: int, layout: str = "interleaved") -> tuple[str, float]:
    """("sin" or "cos", wavelength) of PE column `dim`: sin in even dims and cos in odd ones ("interleaved", the
    paper's), or sines in the first half and cosines in the second ("split", Marian's)."""
    if layout == "split":
        half = d_model // 2
        kind, two_i = ("sin", 2 * dim) if dim < half else ("cos", 2 * (dim - half))
    else:
        kind, two_i = ("sin" if dim % 2 == 0 else "cos"), dim - dim % 2
    return kind, 2 * np.pi * 10000 ** (two_i / d_model)


def positional_encoding(pe, *, dims: Sequence[int] | None = None, title: str | None = None,
                        layout: str = "interleaved") -> go.Figure:
    """Left: PE as positions × dimensions (each column a wave of its own wavelength).
    Right: a few columns as curves over position, each labelled sin or cos as `layout` (see `wave`) puts it."""
    pe = np.asarray(pe, dtype=np.float32)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {pe.shape}")
    P, d = pe.shape
    dims = list(dims) if dims is not None else default_dims(d)
    bad = [x for x in dims if not 0 <= x < d]
    if bad:
        raise ValueError(f"dims {bad} out of range for d_model={d}")
    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.1,
                        subplot_titles=["PE(pos, i)", "selected dimensions"])
    fig.add_trace(go.Heatmap(z=pe, x=np.arange(d), y=np.arange(P), colorscale=DIVERGING_SCALE, zmin=-1, zmax=1,
                             hovertemplate="pos %{y}, dim %{x}<br>%{z:.3f}<extra></extra>",
                             colorbar=dict(thickness=10, len=0.8, x=0.52)), row=1, col=1)
    for n, dim in enumerate(dims):
        kind, wavelength = wave(dim, d, layout)
        fig.add_trace(go.Scatter(x=np.arange(P), y=pe[:, dim], mode="lines", line=dict(color=COLORS[n % len(COLORS)]),
                                 name=f"dim {dim} ({kind}, λ≈{wavelength:,.0f})",
                                 hovertemplate=f"dim {dim}<br>pos %{{x}}: %{{y:.3f}}<extra></extra>"),
                      row=1, col=2)
    fig.update_yaxes(autorange="reversed", title=dict(text="position"), row=1, col=1)
    fig.update_xaxes(title=dict(text="dimension i"), row=1, col=1)
    fig.update_xaxes(title=dict(text="position"), row=1, col=2)
    fig.update_yaxes(range=[-1.1, 1.1], row=1, col=2, showgrid=True, gridcolor="#f3f4f6")
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.18, x=0.55, font=dict(size=11)))
    return base_layout(fig, 430, title=title, margin=dict(t=40 if not title else 70, b=90))


def positional_similarity(pe, *, title: str | None = None) -> go.Figure:
    """PE(p)·PE(q)/d_model for every pair of positions: it depends (almost) only on p - q, the
    property the paper gives for choosing sinusoids (relative positions as linear functions)."""
    pe = np.asarray(pe, dtype=np.float64)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {pe.shape}")
    P, d = pe.shape
    sim = (pe @ pe.T / d).astype(np.float32)
    fig = go.Figure(go.Heatmap(z=sim, x=np.arange(P), y=np.arange(P), colorscale="Viridis",
                               hovertemplate="pos %{y} · pos %{x}<br>%{z:.3f}<extra></extra>",
                               colorbar=dict(thickness=10)))
    fig.update_yaxes(autorange="reversed", title=dict(text="position p"), scaleanchor="x")
    fig.update_xaxes(title=dict(text="position q"), constrain="domain")
    return base_layout(fig, 430, title=title)


def positional_rows(pe, tokens: Sequence[str], *, title: str | None = None) -> go.Figure:
    """The PE rows actually added to the input: one row per source piece (position 0, 1, ...)."""
    from .common import cell_height
    from .text import labels

    pe = np.asarray(pe, dtype=np.float32)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {pe.shape}")
    S = len(tokens)
    if S == 0:
        from .common import empty_figure
        return empty_figure("Translate a sentence to see the encodings of its positions")
    if S > pe.shape[0]:
        raise ValueError(f"{S} tokens but only {pe.shape[0]} positions of PE")
    rows = pe[:S]
    tick = [f"{i} {t}" for i, t in enumerate(labels(tokens))]
    fig = go.Figure(go.Heatmap(z=rows, x=np.arange(pe.shape[1]), y=np.arange(S), colorscale=DIVERGING_SCALE,
                               zmin=-1, zmax=1, hovertemplate="position %{y} · dim %{x}<br>PE = %{z:.3f}<extra></extra>",
                               colorbar=dict(thickness=10)))
    fig.update_yaxes(tickmode="array", tickvals=list(range(S)), ticktext=tick, autorange="reversed",
                     title=dict(text="source position · piece"))
    fig.update_xaxes(title=dict(text="dimension i"))
    return base_layout(fig, cell_height(S, per_row=20, extra=100), title=title, margin=dict(l=120))
