"""Pruning curves: val BLEU as a model's heads are switched off one by one, least important first and in a random
order (transformer/heads.py computes them). As a Plotly figure for the page, and as a PNG for model cards and
docs/models.md, drawn with Pillow (no browser, no kaleido)."""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from .common import COLORS, base_layout
from .text import escape

IMPORTANCE_COLOR, RANDOM_COLOR = COLORS[0], COLORS[1]
THRESHOLD_COLOR = "#6b7280"
IMPORTANCE_LABEL, RANDOM_LABEL = "least important first", "random order"
THRESHOLD_LABEL = "1 BLEU below all heads on"


@dataclass(frozen=True)
class PruningPanel:
    """One pruning curve pair: bleu[k] with k heads off (bleu[0]: every head on); a curve may end early."""

    title: str
    by_importance: Sequence[float]
    random: Sequence[float]
    heads: int  # every head of the model: the x axis's end
    removable: int  # heads off, least important first, before BLEU is 1 below bleu[0]


def _removable_label(removable: int) -> str:
    return f"{removable} head{'s' * (removable != 1)} off, < 1 BLEU lost"


def pruning_curve(by_importance: Sequence[float], random: Sequence[float], heads: int, removable: int, *,
                  title: str | None = None, height: int = 340) -> go.Figure:
    """BLEU against heads removed, both orders, with the line 1 BLEU below the full model and the count of
    heads that go before BLEU crosses it."""
    fig = go.Figure()
    for name, bleu, color in ((IMPORTANCE_LABEL, by_importance, IMPORTANCE_COLOR),
                              (RANDOM_LABEL, random, RANDOM_COLOR)):
        fig.add_trace(go.Scatter(x=list(range(len(bleu))), y=list(bleu), mode="lines+markers", name=name,
                                 line=dict(color=color, width=2), marker=dict(size=4),
                                 hovertemplate=f"{escape(name)}: %{{x}} heads off, BLEU %{{y:.2f}}<extra></extra>"))
    full = by_importance[0]
    fig.add_hline(y=full - 1, line=dict(color=THRESHOLD_COLOR, dash="dash", width=1),
                  annotation_text=THRESHOLD_LABEL, annotation_position="top right",
                  annotation_font=dict(size=11, color=THRESHOLD_COLOR))
    fig.add_vline(x=removable, line=dict(color=IMPORTANCE_COLOR, dash="dot", width=1),
                  # on the side of the line with room for the label: left of a line near the left edge, it is cut
                  annotation_text=_removable_label(removable),
                  annotation_position="bottom right" if removable < heads / 2 else "bottom left",
                  annotation_font=dict(size=11, color=IMPORTANCE_COLOR))
    fig.update_xaxes(title="heads removed", range=[0, heads], dtick=_step(heads, 8))
    fig.update_yaxes(title="val BLEU (greedy)", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"))
    return base_layout(fig, height, title=title, margin=dict(t=70 if title else 40))


def _step(span: float, most: int) -> float:
    """A round tick step (1, 2 or 5 × 10^n) giving at most `most` steps over `span`."""
    magnitude = 10 ** math.floor(math.log10(max(span, 1e-9) / most))
    return next(m * magnitude for m in (1, 2, 5, 10) if span / (m * magnitude) <= most)


# The PNG: drawn at _SCALE × its size and scaled down, so lines and text come out anti-aliased.
_SCALE = 2
_PANEL_W, _PANEL_H, _LEGEND_ROW = 440, 260, 24
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 46, 14, 44, 40  # plot area inside a panel: room for ticks, title, axis title
_GRID, _AXIS, _TEXT = "#e5e7eb", "#9ca3af", "#1f2937"


def pruning_png(panels: Sequence[PruningPanel | None], columns: int = 2) -> bytes:
    """The panels on a grid, `columns` wide, under one legend (None leaves its cell empty): a small palette PNG."""
    from PIL import Image, ImageDraw

    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    width = columns * _PANEL_W
    legend = _legend_places(width)
    top = (max(row for row, _ in legend.values()) + 1) * _LEGEND_ROW + 10
    height = top + rows * _PANEL_H
    image = Image.new("RGB", (width * _SCALE, height * _SCALE), "white")
    draw = ImageDraw.Draw(image)
    _legend(draw, legend)
    for i, panel in enumerate(panels):
        if panel is not None:
            _panel(draw, panel, (i % columns) * _PANEL_W, top + (i // columns) * _PANEL_H)
    small = image.resize((width, height), Image.Resampling.LANCZOS).quantize(colors=64)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size * _SCALE)
    except TypeError:  # Pillow < 10.1 has only its small bitmap font
        return ImageFont.load_default()


def _s(*values: float) -> list[float]:
    return [v * _SCALE for v in values]


def _dashed(draw, start: tuple[float, float], end: tuple[float, float], color: str, dash: float = 5,
            gap: float = 4, width: float = 1) -> None:
    (x0, y0), (x1, y1) = start, end
    length = math.hypot(x1 - x0, y1 - y0)
    at = 0.0
    while at < length:
        a, b = at / length, min(at + dash, length) / length
        draw.line(_s(x0 + (x1 - x0) * a, y0 + (y1 - y0) * a, x0 + (x1 - x0) * b, y0 + (y1 - y0) * b), fill=color,
                  width=round(width * _SCALE))
        at += dash + gap


_LEGEND = ((IMPORTANCE_LABEL, IMPORTANCE_COLOR, False), (RANDOM_LABEL, RANDOM_COLOR, False),
           (THRESHOLD_LABEL, THRESHOLD_COLOR, True))  # label, colour, dashed


def _legend_places(width: float) -> dict[str, tuple[int, float]]:
    """(row, x) of each legend entry: in one row, wrapped where the figure is too narrow for it."""
    places, row, x = {}, 0, 12.0
    for label, _, _ in _LEGEND:
        size = 30 + _font(12).getlength(label) / _SCALE
        if x > 12 and x + size > width - 12:
            row, x = row + 1, 12.0
        places[label] = (row, x)
        x += size + 22
    return places


def _legend(draw, places: dict[str, tuple[int, float]]) -> None:
    for label, color, dashed in _LEGEND:
        row, x = places[label]
        y = 10 + (row + 0.5) * _LEGEND_ROW
        if dashed:
            _dashed(draw, (x, y), (x + 24, y), color)
        else:
            draw.line(_s(x, y, x + 24, y), fill=color, width=3 * _SCALE)
        draw.text(_s(x + 30, y), label, fill=_TEXT, font=_font(12), anchor="lm")


def _panel(draw, panel: PruningPanel, left: float, top: float) -> None:
    x0, x1 = left + _PAD_L, left + _PANEL_W - _PAD_R
    y0, y1 = top + _PAD_T, top + _PANEL_H - _PAD_B  # y1: the x axis
    curves = [list(panel.by_importance), list(panel.random)]
    y_step = _step(max(max(c) for c in curves if c), 5)
    y_max = y_step * math.ceil(max(max(c) for c in curves if c) / y_step + 1e-9)
    x_step = _step(panel.heads, 8)

    def at(k: float, bleu: float) -> tuple[float, float]:
        return x0 + (x1 - x0) * k / panel.heads, y1 - (y1 - y0) * bleu / y_max

    small, label = _font(11), _font(12)
    draw.text(_s(left + 12, top + 14), panel.title, fill=_TEXT, font=_font(13), anchor="lm")
    for i in range(round(y_max / y_step) + 1):
        _, y = at(0, i * y_step)
        draw.line(_s(x0, y, x1, y), fill=_GRID if i else _AXIS, width=_SCALE)
        draw.text(_s(x0 - 6, y), f"{i * y_step:g}", fill=_TEXT, font=small, anchor="rm")
    for i in range(math.floor(panel.heads / x_step) + 1):
        x, _ = at(i * x_step, 0)
        draw.line(_s(x, y1, x, y1 + 4), fill=_AXIS, width=_SCALE)
        draw.text(_s(x, y1 + 6), f"{i * x_step:g}", fill=_TEXT, font=small, anchor="mt")
    draw.text(_s((x0 + x1) / 2, y1 + 22), "heads removed", fill=_TEXT, font=label, anchor="mt")
    draw.text(_s(x0 - 6, y0 - 14), "BLEU", fill=_TEXT, font=small, anchor="rm")
    full = panel.by_importance[0]
    _dashed(draw, at(0, full - 1), at(panel.heads, full - 1), THRESHOLD_COLOR)
    x_cut, _ = at(panel.removable, 0)
    _dashed(draw, (x_cut, y0), (x_cut, y1), IMPORTANCE_COLOR, dash=2, gap=3)
    text = _removable_label(panel.removable)
    size = draw.textlength(text, font=small) / _SCALE
    right = x_cut + 5 + size < x1
    span = (x_cut, x_cut + 5 + size) if right else (x_cut - 5 - size, x_cut)
    # At the top or the bottom of the plot, whichever keeps farther from the lines under the text.
    under = [y for bleu in curves for k, b in enumerate(bleu) for x, y in [at(k, b)] if span[0] <= x <= span[1]]
    under.append(at(0, full - 1)[1])
    y = max((y0 + 8, y1 - 10), key=lambda y: min(abs(y - u) for u in under))
    draw.text(_s(x_cut + 5 if right else x_cut - 5, y), text, fill=IMPORTANCE_COLOR, font=small,
              anchor="lm" if right else "rm")
    for bleu, color, width in ((curves[1], RANDOM_COLOR, 2), (curves[0], IMPORTANCE_COLOR, 2.5)):
        points = [at(k, b) for k, b in enumerate(bleu)]
        draw.line([c for p in points for c in _s(*p)], fill=color, width=round(width * _SCALE), joint="curve")
