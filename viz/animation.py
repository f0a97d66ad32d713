"""Decoding as pictures: frames drawn with Pillow from attention arrays, without a browser.

Knows nothing of the model: anatomy/export.py says what each frame shows (a `Frame`) and writes the pictures to a
GIF, an MP4 or PNGs. White presenter styling on a 16:9 slide: text ≥ 20 px at 720p (scaled with the height), the
attention on the page's fixed 0–1 viridis scale, masked cells grey, this step's row framed in orange and its piece
on the page's orange chip. Every frame of one animation shares one `Geometry`, so nothing moves between frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .common import ATTENTION_STOPS, MASKED_COLOR
from .text import readable

# Pillow's built-in font has no ü, ß, ▁ or →; DejaVu Sans has them all (assets/fonts/LICENSE).
FONT = Path(__file__).resolve().parents[1] / "assets" / "fonts" / "DejaVuSans.ttf"
LAYOUTS = ("bar", "heatmap")  # the step's row as bars over the keys; the matrix filling row by row
SIZES = {"1280x720": (1280, 720), "1920x1080": (1920, 1080)}
INK, MUTED, STEP_INK = "#111827", "#4b5563", "#c2410c"
RULE, GRID = "#9ca3af", "#e5e7eb"
CHIP, CURRENT, FRAME = "#e2e8f0", "#fdba74", "#f97316"  # the page's piece chips, its current piece, its step frame
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
MAX_CHARS = 16  # a label's characters; longer ones end in …
# Text sizes in px at 720p (× height / 720 on larger slides): all ≥ 20 px, readable on a projector.
TITLE_PX, TEXT_PX, SMALL_PX = 28, 22, 20
# Labels of 20 px stay legible 20 px apart (their ink is ~19 px tall); closer rows or keys are labelled in turn.
PITCH = 20


@dataclass(frozen=True)
class Frame:
    """What one frame shows. Rows and keys keep the whole animation's count in every frame; what is not produced
    or read yet is blank (a None label, a row past `filled`). Labels are pieces as they are: drawing makes them
    readable."""

    title: str  # what is shown: kind, layer and head, words, special tokens
    progress: str  # where decoding is: "step 3 of 12"
    layout: str  # one of LAYOUTS
    weights: np.ndarray  # (rows, keys) in [0, 1]; the bar layout has one row, this step's
    hidden: np.ndarray  # (rows, keys) bool: cells a mask hides (grey in the heatmap, no bar)
    rows: list  # row labels: pieces, words or (read, produced) pairs; None for a row not produced yet
    keys: list  # key labels: pieces or words; None for a key not read yet
    filled: int  # the heatmap's rows drawn so far
    current: int | None = None  # the heatmap's row of this step, framed
    source: list[str] | None = None  # the source pieces, above the panel when its keys are not them
    output: list[str] | None = None  # the translation so far, above the panel when its rows are not it
    newest: bool = False  # the output's last piece is this step's: on the orange chip
    bar_color: str = "#3b528b"


@dataclass(frozen=True)
class Geometry:
    """Where everything of an animation's frames lies, in pixels."""

    size: tuple[int, int]
    scale: float  # height / 720
    title_lines: int  # the most any frame's title needs
    progress_x: int  # where the progress text starts (right-aligned to the widest)
    chip_top: dict[str, int]  # the top of the "source" and "output" chip lines
    chip_lines: dict[str, int]  # the chip lines each may fill
    left: float  # the plot area: matrix (heatmap) or axes (bar, weight 0 at the bottom, 1 at the top)
    top: float
    cell_w: float  # one key's width
    cell_h: float  # one row's height (heatmap); the axes' height (bar)
    n_rows: int
    n_keys: int
    key_rotated: bool  # key labels run upwards (too wide to stand side by side)
    key_stride: int  # every key_stride-th key is labelled, when labels would overlap
    row_stride: int

    def cell(self, i: int, j: int) -> tuple[int, int, int, int]:
        """Cell (row i, key j) of the heatmap as drawn: left, top, right, bottom (inclusive)."""
        x0, y0 = round(self.left + j * self.cell_w), round(self.top + i * self.cell_h)
        return x0, y0, round(self.left + (j + 1) * self.cell_w) - 1, round(self.top + (i + 1) * self.cell_h) - 1

    def bar(self, j: int, weight: float) -> tuple[int, int, int, int]:
        """Key j's bar of height `weight` as drawn: left, top, right, bottom (inclusive, just above the baseline;
        top > bottom: no bar)."""
        baseline = round(self.top + self.cell_h)
        middle, half = self.left + (j + 0.5) * self.cell_w, 0.35 * self.cell_w
        return round(middle - half), round(baseline - weight * self.cell_h), round(middle + half) - 1, baseline - 1


def viridis(weights) -> np.ndarray:
    """Weights in [0, 1] as RGB (..., 3) uint8, interpolated linearly between the stops as Plotly does."""
    w = np.clip(np.nan_to_num(np.asarray(weights, dtype=np.float64)), 0.0, 1.0)
    stops = np.array([s for s, _ in ATTENTION_STOPS])
    rgb = np.array([_rgb(c) for _, c in ATTENTION_STOPS], dtype=np.float64)
    return np.stack([np.interp(w, stops, rgb[:, c]) for c in range(3)], axis=-1).round().astype(np.uint8)


def _rgb(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def palette() -> np.ndarray:
    """One palette (< 255 RGB colours) for every frame of a GIF: the viridis scale finely (the step panels' bar
    colours are viridis's too), the fixed colours, and the blends that anti-aliased text makes with its
    backgrounds. One palette keeps unchanged pixels unchanged from frame to frame: a small GIF."""
    colors = [tuple(c) for c in viridis(np.linspace(0, 1, 120))]
    fixed = ["#ffffff", INK, MUTED, STEP_INK, RULE, GRID, CHIP, CURRENT, FRAME, MASKED_COLOR]
    colors += [_rgb(c) for c in fixed]
    for fg, bg, n in ((INK, "#ffffff", 40), (INK, CHIP, 20), (INK, CURRENT, 20), (MUTED, "#ffffff", 16),
                      (STEP_INK, "#ffffff", 16), (FRAME, "#ffffff", 8)):
        a, b = np.array(_rgb(fg)), np.array(_rgb(bg))
        colors += [tuple(np.round(a + (b - a) * t).astype(int)) for t in np.linspace(0, 1, n + 2)[1:-1]]
    return np.array(colors, dtype=np.uint8)


def paletted(pictures: Iterable[Image.Image]) -> Iterator[Image.Image]:
    """RGB pictures as palette pictures of one shared palette (`palette`): each colour the palette has kept
    exactly (Pillow's own mapping takes white for a near-white), each other one its nearest (by RGB distance).
    Each as it comes: a writer that takes one at a time holds one picture, not the animation."""
    colors = palette()
    flat = colors.ravel().tolist()
    index = np.full(1 << 24, 255, dtype=np.uint8)  # by 0xRRGGBB; 255: not looked up yet (the palette has < 255)
    for picture in pictures:
        rgb = np.asarray(picture.convert("RGB"), dtype=np.int32)
        keys = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
        found = index[keys]
        new = np.unique(keys[found == 255])
        if new.size:
            wanted = np.stack([new >> 16, (new >> 8) & 255, new & 255], axis=-1)
            index[new] = ((wanted[:, None, :] - colors[None].astype(np.int32)) ** 2).sum(-1).argmin(-1)
            found = index[keys]
        image = Image.fromarray(found, "P")
        image.putpalette(flat)
        yield image


@lru_cache(maxsize=16)
def font(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONT), px)


def _width(text: str, px: int) -> float:
    return font(px).getlength(text)


def _wrap(text: str, px: int, width: float, sep: str = " \u00b7 ") -> list[str]:
    """`text` on lines no wider than `width`, broken after its parts (title parts are joined by " · "), a part too
    wide for a line after its words (a word too wide stands alone)."""
    lines: list[str] = []
    for part in text.split(sep):
        if lines and _width(lines[-1] + sep + part, px) <= width:
            lines[-1] += sep + part
        elif _width(part, px) <= width or sep == " ":
            lines.append(part)
        else:
            lines += _wrap(part, px, width, " ")
    return lines


def _chip_rows(pieces: list[str], px: int, width: float, pad: float, gap: float) -> list[list[str]]:
    """Chips flowed onto lines of `width`."""
    rows: list[list[str]] = [[]]
    used = 0.0
    for piece in pieces:
        w = _width(piece, px) + 2 * pad
        if rows[-1] and used + gap + w > width:
            rows.append([])
            used = 0.0
        used += (gap if rows[-1] else 0) + w
        rows[-1].append(piece)
    return rows


def geometry(frames: list[Frame], size: tuple[int, int]) -> Geometry:
    """The layout every frame of `frames` is drawn in: room for the longest title, chip lines and labels of any."""
    W, H = size
    s = H / 720
    pad, first = 24 * s, frames[0]
    progress_w = max(_width(f.progress, round(TEXT_PX * s)) for f in frames)
    title_w = W - 2 * pad - progress_w - 24 * s
    title_lines = max(len(_wrap(f.title, round(TITLE_PX * s), title_w)) for f in frames)
    y = pad + title_lines * 36 * s + 4 * s
    chip_top, chip_lines = {}, {}
    chip_w = W - 2 * pad - _caption_width(s)
    for name in ("source", "output"):
        lists = [getattr(f, name) for f in frames if getattr(f, name) is not None]
        if lists:
            need = max(len(_chip_rows(_chips(p), round(TEXT_PX * s), chip_w, 7 * s, 6 * s)) for p in lists)
            chip_top[name], chip_lines[name] = round(y), min(need, 2)
            y += chip_lines[name] * 40 * s + 6 * s
    y += 8 * s
    n_rows, n_keys = first.weights.shape
    key_px = round(SMALL_PX * s)
    keys = {label(k) for f in frames for k in f.keys} - {None}
    key_w = max((_width(k, key_px) for k in keys), default=0.0)
    line = 26 * s
    if first.layout == "heatmap":
        rows = {label(r) for f in frames for r in f.rows} - {None}
        row_w = max((_width(r, key_px) for r in rows), default=0.0) + 20 * s
        left = pad + row_w
        right = W - pad - 30 * s - _width("0.75", key_px) - 16 * s  # the colour bar and its ticks
        cell_w = min((right - left) / max(n_keys, 1), 90 * s)
    else:
        left = pad + _width("0.75", key_px) + 16 * s
        cell_w = min((W - pad - left) / max(n_keys, 1), 140 * s)
        y += 32 * s  # the weights written above the bars
    rotated = key_w + 8 * s > cell_w
    key_h = min(key_w, 0.3 * H) if rotated else line
    bottom = H - 16 * s - key_h - 8 * s
    if first.layout == "heatmap":
        cell_h = min((bottom - y) / max(n_rows, 1), 60 * s)
        row_stride = max(1, math.ceil(PITCH * s / cell_h - 1e-6))
    else:
        cell_h, row_stride = bottom - y, 1
    key_stride = max(1, math.ceil(PITCH * s / cell_w - 1e-6)) if rotated else 1
    return Geometry(size, s, title_lines, round(W - pad - progress_w), chip_top, chip_lines, left, y, cell_w,
                    cell_h, n_rows, n_keys, rotated, key_stride, row_stride)


def _caption_width(s: float) -> float:
    return max(_width(c, round(SMALL_PX * s)) for c in ("source", "translation")) + 16 * s


def _chips(pieces: list[str]) -> list[str]:
    return [readable(p, MAX_CHARS) for p in pieces]


def label(token) -> str | None:
    """A key or row label as drawn: a piece or word cut to MAX_CHARS, a (read, produced) pair as `read ▸ produced`
    (each side shorter), None (not there yet) as it is."""
    if token is None:
        return None
    if isinstance(token, (tuple, list)):
        return f"{readable(token[0], 12)} \u25b8 {readable(token[1], 12)}"
    return readable(token, MAX_CHARS)


def draw(frame: Frame, g: Geometry) -> Image.Image:
    """One frame as an RGB picture."""
    s = g.scale
    image = Image.new("RGB", g.size, "white")
    d = ImageDraw.Draw(image)
    pad = 24 * s
    title_px = round(TITLE_PX * s)
    for n, text in enumerate(_wrap(frame.title, title_px, g.progress_x - pad - 24 * s)[:g.title_lines]):
        d.text((pad, pad + n * 36 * s), text, font=font(title_px), fill=INK)
    d.text((g.progress_x, pad + 4 * s), frame.progress, font=font(round(TEXT_PX * s)), fill=STEP_INK)
    if frame.source is not None:
        _chip_line(d, g, "source", "source", _chips(frame.source), newest=False)
    if frame.output is not None:
        _chip_line(d, g, "output", "translation", _chips(frame.output), newest=frame.newest)
    if frame.layout == "heatmap":
        _heatmap(image, d, frame, g)
    else:
        _bars(image, d, frame, g)
    return image


def _chip_line(d: ImageDraw.ImageDraw, g: Geometry, name: str, caption: str, pieces: list[str],
               newest: bool) -> None:
    """Pieces as the page's chips, on at most g.chip_lines[name] lines; the translation keeps its latest pieces
    when they would not fit (the newest on the orange chip), the source its first."""
    s = g.scale
    px, pad, gap, pitch = round(TEXT_PX * s), 7 * s, 6 * s, 40 * s
    left = 24 * s + _caption_width(s)
    width = g.size[0] - 24 * s - left
    top = g.chip_top[name]
    d.text((24 * s, top + 6 * s), caption, font=font(round(SMALL_PX * s)), fill=MUTED)
    shown, colors = list(pieces), [CHIP] * len(pieces)
    if newest and pieces:
        colors[-1] = CURRENT
    while len(_chip_rows(shown, px, width, pad, gap)) > g.chip_lines[name] and len(shown) > 1:
        if name == "output":
            shown, colors = ["…"] + shown[2:], [CHIP] + colors[2:]
        else:
            shown, colors = shown[:-2] + ["…"], colors[:-2] + [CHIP]
    k = 0
    for n, row in enumerate(_chip_rows(shown, px, width, pad, gap)):
        x = left
        for piece in row:
            w = _width(piece, px) + 2 * pad
            y = top + n * pitch
            d.rounded_rectangle((x, y, x + w, y + 32 * s), radius=6 * s, fill=colors[k])
            d.text((x + pad, y + 16 * s), piece, font=font(px), fill=INK, anchor="lm")
            x += w + gap
            k += 1


def _key_labels(image: Image.Image, d: ImageDraw.ImageDraw, frame: Frame, g: Geometry, top: float) -> None:
    px = round(SMALL_PX * g.scale)
    for j, key in enumerate(map(label, frame.keys)):
        if key is None or j % g.key_stride:
            continue
        middle = g.left + (j + 0.5) * g.cell_w
        if g.key_rotated:
            _upwards(image, key, px, middle, top)
        else:
            d.text((middle, top), key, font=font(px), fill=INK, anchor="mt")


def _upwards(image: Image.Image, text: str, px: int, middle: float, top: float) -> None:
    """Text running upwards, its end at `top`, centred on x = middle."""
    w = math.ceil(_width(text, px))
    mask = Image.new("L", (w + 2, px + 8))
    ImageDraw.Draw(mask).text((0, 2), text, font=font(px), fill=255)
    mask = mask.rotate(90, expand=True)
    image.paste(INK, (round(middle - mask.width / 2), round(top)), mask)


def _heatmap(image: Image.Image, d: ImageDraw.ImageDraw, frame: Frame, g: Geometry) -> None:
    if not (g.n_rows and g.n_keys):  # e.g. special tokens hidden from a translation that is only </s>
        return
    s = g.scale
    px = round(SMALL_PX * s)
    colors = viridis(frame.weights)
    masked = _rgb(MASKED_COLOR)
    for i in range(min(frame.filled, g.n_rows)):
        for j in range(g.n_keys):
            fill = masked if frame.hidden[i, j] else tuple(int(c) for c in colors[i, j])
            d.rectangle(g.cell(i, j), fill=fill)
    right, bottom = g.cell(g.n_rows - 1, g.n_keys - 1)[2:]
    d.rectangle((round(g.left) - 1, round(g.top) - 1, right + 1, bottom + 1), outline=GRID, width=1)
    for i, row in enumerate(map(label, frame.rows)):
        if row is None or (i % g.row_stride and i != frame.current):
            continue
        x0, y0, _, y1 = g.cell(i, 0)
        if i == frame.current:
            w = _width(row, px) + 12 * s
            d.rounded_rectangle((x0 - 10 * s - w, y0, x0 - 4 * s, y1), radius=4 * s, fill=CURRENT)
        d.text((x0 - 10 * s, (y0 + y1) / 2), row, font=font(px), fill=INK, anchor="rm")
    if frame.current is not None and frame.current < frame.filled:
        x0, y0 = g.cell(frame.current, 0)[:2]
        d.rectangle((x0 - 2 * s, y0 - 2 * s, right + 2 * s, g.cell(frame.current, 0)[3] + 2 * s), outline=FRAME,
                    width=max(3, round(3 * s)))
    _key_labels(image, d, frame, g, bottom + 8 * s)
    _colour_bar(d, g, right, bottom, masked=bool(frame.hidden[:frame.filled].any()))


def _colour_bar(d: ImageDraw.ImageDraw, g: Geometry, right: int, bottom: int, masked: bool) -> None:
    """The fixed 0–1 scale beside the matrix, and the grey of masked cells under it."""
    s = g.scale
    px = round(SMALL_PX * s)
    x0, x1 = right + 18 * s, right + 40 * s
    top, height = g.top, min(bottom - g.top, 320 * s)
    for y in range(round(height)):
        d.line((x0, top + y, x1, top + y), fill=tuple(int(c) for c in viridis(1 - y / max(height - 1, 1))))
    for tick in TICKS:
        y = top + (1 - tick) * (height - 1)
        d.text((x1 + 6 * s, y), f"{tick:g}", font=font(px), fill=MUTED, anchor="lm")
    if masked:
        y = top + height + 16 * s
        d.rectangle((x0, y, x1, y + 22 * s), fill=MASKED_COLOR)
        d.text((x0, y + 30 * s), "masked", font=font(px), fill=MUTED, anchor="lt")


def _bars(image: Image.Image, d: ImageDraw.ImageDraw, frame: Frame, g: Geometry) -> None:
    s = g.scale
    px = round(SMALL_PX * s)
    right = round(g.left + g.n_keys * g.cell_w)
    bottom = round(g.top + g.cell_h)
    for tick in TICKS:
        y = round(bottom - tick * g.cell_h)
        d.line((round(g.left), y, right, y), fill=GRID if tick else RULE, width=max(1, round(s)))
        d.text((g.left - 10 * s, y), f"{tick:g}", font=font(px), fill=MUTED, anchor="rm")
    values = _width("0.00", px) <= g.cell_w
    for j in range(g.n_keys):
        if frame.hidden[0, j]:
            continue
        weight = float(np.clip(frame.weights[0, j], 0.0, 1.0))
        x0, y0, x1, y1 = g.bar(j, weight)
        if y0 <= y1:
            d.rectangle((x0, y0, x1, y1), fill=frame.bar_color)
        if values and weight >= 0.05:
            d.text(((x0 + x1) / 2, y0 - 6 * s), f"{weight:.2f}", font=font(px), fill=INK, anchor="mb")
    _key_labels(image, d, frame, g, bottom + 8 * s)
