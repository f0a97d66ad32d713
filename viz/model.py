"""The model as a whole: where its parameters live, and how training went."""
from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import COLORS, base_layout, empty_figure
from .text import escape

_PRETTY = {
    "embedding": "shared embedding (src, tgt, output)", "tgt_embedding": "target embedding",
    "output_projection": "output projection", "self_attn": "self-attention", "cross_attn": "cross-attention",
    "ffn": "feed-forward", "norms": "layer norms", "encoder_norm": "final encoder norm",
    "decoder_norm": "final decoder norm",
}


def _group_path(name: str) -> list[str]:
    """decoder_layers.1.cross_attn.W_qkv.weight -> decoder / layer 2 / cross-attention / W_qkv."""
    parts = name.split(".")
    if parts and parts[-1] in ("weight", "bias"):
        parts = parts[:-1]
    out = []
    for i, part in enumerate(parts):
        if re.fullmatch(r"\d+", part):
            prev = parts[i - 1] if i else ""
            out.append(f"norm {int(part) + 1}" if prev == "norms" else f"layer {int(part) + 1}")
        else:
            out.append(_PRETTY.get(part, part.removesuffix("_layers")))  # a stack of layers goes by its own name
    # 'layer norms' / 'norm 2' reads better as one level.
    if len(out) >= 2 and out[-2] == "layer norms":
        out = out[:-2] + [f"layer {out[-1]}"]
    return out or [name]


# The rows of the parameters figure, by depth of a parameter's path under the root (viz._group_path)
ROWS = ("part", "layer", "sublayer", "weight")


def parameter_icicle(named_counts: Iterable[tuple[str, int]], *, root: str = "Transformer",
                     title: str | None = None) -> go.Figure:
    """Parameters by component, from `(parameter name, numel)` pairs (model.named_parameters()): an icicle of bars,
    a row per depth (ROWS), each component as wide as its parameters and under the one it is part of (bar traces:
    the page's Plotly.js is the cartesian bundle, which has no sunburst)."""
    totals: dict[tuple[str, ...], int] = {}
    for name, count in named_counts:
        path = (root, *_group_path(name))
        for depth in range(1, len(path) + 1):
            totals[path[:depth]] = totals.get(path[:depth], 0) + int(count)
    if not totals:
        return empty_figure("No parameters")
    groups = list(dict.fromkeys(p[1] for p in totals if len(p) > 1))  # top-level components, in order
    # each component starts where its parent's earlier children end (totals holds parents before their children)
    start, end = {}, {}
    for path, count in totals.items():
        start[path] = end.get(path[:-1], 0)
        end[path[:-1]] = start[path] + count
        end[path] = start[path]
    whole = totals[(root,)]
    fig = go.Figure()
    for depth, row in enumerate(ROWS, start=2):
        nodes = [p for p in totals if len(p) == depth]
        if not nodes:
            continue
        fig.add_trace(go.Bar(
            orientation="h", y=[row] * len(nodes), x=[totals[p] for p in nodes], base=[start[p] for p in nodes],
            ids=["/".join(p) for p in nodes], name=row, text=[escape(p[-1]) for p in nodes],
            textposition="inside", insidetextanchor="middle", textangle=0,
            # (a bar's hover x is where it ends, base included: its count comes as data)
            customdata=[[escape(" / ".join(p[1:])), totals[p], totals[p] / whole] for p in nodes],
            hovertemplate="%{customdata[0]}<br>%{customdata[1]:,} parameters<br>%{customdata[2]:.1%} of the model"
                          "<extra></extra>",
            marker=dict(color=[COLORS[groups.index(p[1]) % len(COLORS)] for p in nodes],
                        opacity=1.0 - 0.18 * (depth - 2), line=dict(color="white", width=1))))
    fig.update_layout(barmode="overlay", bargap=0.08, showlegend=False, uniformtext=dict(minsize=9, mode="hide"),
                      xaxis=dict(range=[0, whole], title=dict(text=f"parameters ({whole:,} in all)"),
                                 tickformat="~s"),
                      yaxis=dict(categoryorder="array", categoryarray=list(ROWS), autorange="reversed"))
    return base_layout(fig, 460, title=title, margin=dict(l=80, r=20, t=40 if title else 10, b=50))


def training_curves(records: Sequence[dict], *, title: str | None = None) -> go.Figure:
    """Per-epoch metrics.jsonl records: losses on the left, validation BLEU/chrF on the right."""
    rows = [r for r in records if isinstance(r, dict) and "epoch" in r]
    if not rows:
        return empty_figure("No training log for this model (metrics.jsonl is missing or empty)", height=320)
    epochs = [r["epoch"] for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["loss (per token)", "validation score"],
                        horizontal_spacing=0.12)
    for key, name, color in (("train_loss", "train loss", COLORS[0]), ("val_loss", "val loss", COLORS[1])):
        ys = [r.get(key) for r in rows]
        if any(y is not None for y in ys):
            fig.add_trace(go.Scatter(x=epochs, y=ys, name=name, mode="lines+markers", line=dict(color=color)),
                          row=1, col=1)
    corpora = sorted({k.removeprefix("val_bleu_") for r in rows for k in r if k.startswith("val_bleu_")})
    mean = " (mean over corpora)" if corpora else ""
    for key, name, color in (("val_bleu", "val BLEU" + mean, COLORS[2]), ("val_chrf", "val chrF" + mean, COLORS[3])):
        ys = [r.get(key) for r in rows]
        if any(y is not None for y in ys):
            fig.add_trace(go.Scatter(x=epochs, y=ys, name=name, mode="lines+markers", line=dict(color=color)),
                          row=1, col=2)
    for i, corpus in enumerate(corpora):  # a mix: each val corpus's BLEU, dashed beside the mean
        fig.add_trace(go.Scatter(x=epochs, y=[r.get(f"val_bleu_{corpus}") for r in rows], name=f"BLEU {corpus}",
                                 mode="lines+markers", line=dict(color=COLORS[(4 + i) % len(COLORS)], dash="dash")),
                      row=1, col=2)
    bleus = [(r.get("val_bleu"), r["epoch"]) for r in rows if r.get("val_bleu") is not None]
    if bleus:
        best, at = max(bleus)
        # a marker named in the legend: a note in the plot would cover the lines above the best point
        fig.add_trace(go.Scatter(x=[at], y=[best], name=f"best BLEU {best:.1f} (epoch {at})", mode="markers",
                                 marker=dict(symbol="star", size=14, color=COLORS[2],
                                             line=dict(color="#18181b", width=1))), row=1, col=2)
    # Epochs are whole numbers: ticks between them (1.2, 1.4, ...) would name epochs that never ran.
    fig.update_xaxes(title=dict(text="epoch"), showgrid=True, gridcolor="#f3f4f6", tick0=0,
                     dtick=max(1, math.ceil(max(epochs) / 10)))
    fig.update_yaxes(showgrid=True, gridcolor="#f3f4f6")
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.25))
    return base_layout(fig, 340, title=title, margin=dict(b=80, t=50 if not title else 70))
