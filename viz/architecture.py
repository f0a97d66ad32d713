"""The architecture: the paper's Figure 1 drawn with the current input's tensor shapes, and the
parameter table.

Both take the plain records of `transformer.architecture` (read by attribute, so nothing here
imports torch): stages with key, name, tensor, shape, symbolic, note, repeat; components with
name, formula, count, section.
"""
from __future__ import annotations

import html
import math
import re
from typing import Sequence

import plotly.graph_objects as go

from .common import base_layout
from .text import escape

# Fill and border per kind of box, after the colours of the paper's Figure 1.
PALETTE = {
    "io": ("#f3f4f6", "#9ca3af"), "embedding": ("#fce7f3", "#db2777"), "attention": ("#ffedd5", "#ea580c"),
    "norm": ("#fef9c3", "#ca8a04"), "ffn": ("#dbeafe", "#2563eb"), "linear": ("#ede9fe", "#7c3aed"),
    "softmax": ("#dcfce7", "#16a34a"), "memory": ("#ffffff", "#4b5563"),
}
FRAME = ("#f9fafb", "#d1d5db")
ARROW, RESIDUAL = "#374151", "#9ca3af"

# x runs 0..100 across the figure; y is in pixels at the figure's own type. Its text fits its boxes at a width the
# figure states (layout.meta.fit, FIT): the page scales the type, and the height with it, to the width it is drawn at.
ENCODER_X, DECODER_X = (8.0, 45.0), (55.0, 92.0)
# The stacks as their frames name them; in lower case, the prefix of their stages' keys and of their box ids.
ENCODER, DECODER = "Encoder", "Decoder"
GAP, LINE, FRAME_PAD, FRAME_TITLE = 22, 15, 12, 30
ONE_LINE = ("io", "norm")  # boxes whose title and shape share a line when it is short
BOX_FONT, NOTE_FONT = 11, 12  # the boxes' text, the frames' titles and the legend
LONGEST = 34  # characters in a line of a box: a longer one breaks (a label above its shape, else at spaces)
EM, BOLD_EM = 0.6, 0.68  # a character's width in em, regular and bold (above Chromium's widest lines: 0.57, 0.65)
LEGEND_SHARE = (DECODER_X[0] - ENCODER_X[0] + 2) / 100  # the legend's room: the left column's and its gap's


def _broken(line: str) -> list[str]:
    """A line of at most LONGEST characters, else broken at its spaces into lines of at most that many."""
    lines: list[str] = []
    for word in line.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= LONGEST:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def fit_width(annotations: Sequence[tuple[str, int, float]]) -> int:
    """The plot width (px) at which every line of these (text, font size, share of the width it may take) fits."""
    def ems(line: str) -> float:
        bold = "".join(re.findall(r"<b>(.*?)</b>", line))
        count = [len(html.unescape(re.sub(r"<[^>]*>", "", t))) for t in (line, bold)]
        return EM * (count[0] - count[1]) + BOLD_EM * count[1]
    return math.ceil(max(ems(line) * size / share for text, size, share in annotations for line in text.split("<br>")))


def shape_text(stage) -> str:
    """'(B, h, S, S) = (1, 8, 5, 5)': the paper's symbols, then this input's sizes."""
    return f"{stage.symbolic} = ({', '.join(str(n) for n in stage.shape)})"


def _column(stages: dict, stack: str, norm_first: bool) -> list[tuple]:
    """One stack's boxes, bottom to top: (box id, kind, title, [(label, stage)], inside the layer frame)."""
    encoder, side = stack == ENCODER, stack.lower()
    seq, word = ("source", "Input") if encoder else ("target", "Output")
    add = "Add" if norm_first else "Add & Norm"
    output = stages[f"{side}.output"]
    boxes = [(f"{seq}.ids", "io", f"{seq} ids {stages[f'{seq}.ids'].tensor}"
              + ("" if encoder else " (shifted right)"), [("", stages[f"{seq}.ids"])], False),
             (f"{seq}.input", "embedding", f"{word} embedding · √d_model + PE", [("", stages[f"{seq}.input"])],
              False)]
    if encoder:
        qkv = stages["encoder.qkv"]
        sublayers = [("self_attention", "attention", f"Multi-head self-attention (h = {qkv.shape[1]})",
                      [("Q, K, V", qkv), (stages["encoder.self_attention"].tensor, stages["encoder.self_attention"])])]
    else:
        self_attention, cross = stages["decoder.self_attention"], stages["decoder.cross_attention"]
        sublayers = [("self_attention", "attention", "Masked multi-head self-attention",
                      [(self_attention.tensor, self_attention)]),
                     ("cross_attention", "attention", "Multi-head cross-attention",
                      [("K, V from memory", stages["decoder.memory_kv"]), (cross.tensor, cross)])]
    ffn = stages[f"{side}.ffn"]
    sublayers.append(("ffn", "ffn", "Feed-forward", [(ffn.tensor, ffn)]))
    norm = "LayerNorm → " if norm_first else ""  # pre-LN normalises each sublayer's input
    for i, (name, kind, title, lines) in enumerate(sublayers, 1):
        boxes.append((f"{side}.{name}", kind, norm + title, lines, True))
        boxes.append((f"{side}.norm{i}", "norm", add, [("", output)], True))
    final = "Final LayerNorm → " if norm_first else ""
    if encoder:
        boxes.append(("memory", "memory", f"{final}Encoder memory",
                      [("", stages["memory"]), ("→ K, V of every decoder layer's cross-attention", None)], False))
    else:
        boxes += [("logits", "linear", f"{final}Linear  {stages['logits'].tensor}", [("logits", stages["logits"])],
                   False),
                  ("probabilities", "softmax", "Softmax", [("probabilities", stages["probabilities"])], False)]
    return boxes


def _arrow(fig: go.Figure, tail: tuple[float, float], tip: tuple[float, float], color: str = ARROW,
           name: str | None = None) -> None:
    fig.add_annotation(x=tip[0], y=tip[1], ax=tail[0], ay=tail[1], xref="x", yref="y", axref="x", ayref="y",
                       text="", showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.4, arrowcolor=color,
                       name=name)


def _polyline(fig: go.Figure, points: list[tuple[float, float]], color: str) -> None:
    path = "M " + " L ".join(f"{x},{y}" for x, y in points)
    fig.add_shape(type="path", path=path, line=dict(color=color, width=1.4), layer="above")


def _box_text(kind: str, title: str, lines: list) -> tuple[str, int]:
    """The box's label (lines of at most LONGEST characters) and its height in pixels."""
    shown = []
    for label, stage in lines:
        parts = [p for p in (label, "" if stage is None else shape_text(stage)) if p]
        joined = " ".join(parts)
        shown += [joined] if len(joined) <= LONGEST else [q for p in parts for q in _broken(p)]
    if kind in ONE_LINE and len(title) + 2 + len(shown[0]) <= LONGEST:
        return f"<b>{escape(title)}</b>  {escape(shown[0])}", 30
    text = [f"<b>{escape(t)}</b>" for t in _broken(title)] + [escape(t) for t in shown]
    return "<br>".join(text), 14 + LINE * len(text)


def _stack(boxes: list[tuple]) -> tuple[dict[str, tuple[float, float]], tuple[float, float]]:
    """Each box's (bottom, top) in pixels, stacked upwards, and the (bottom, top) of the layer frame."""
    spans: dict[str, tuple[float, float]] = {}
    y, frame_bottom, frame = 10.0, None, (0.0, 0.0)
    for box_id, kind, title, lines, framed in boxes:
        if framed and frame_bottom is None:
            frame_bottom = y
            y += FRAME_PAD
        elif not framed and frame_bottom is not None:
            frame = (frame_bottom, y - GAP + FRAME_TITLE)
            y, frame_bottom = frame[1] + GAP, None
        height = _box_text(kind, title, lines)[1]
        spans[box_id] = (y, y + height)
        y += height + GAP
    return spans, frame


def _draw_column(fig: go.Figure, boxes: list[tuple], x: tuple[float, float], stack: str, repeat: int,
                 norm_first: bool, hover: list) -> dict[str, tuple[float, float]]:
    """Draw one stack, its layer boxes inside a frame marked × N; return each box's (bottom, top)."""
    x0, x1 = x
    centre = (x0 + x1) / 2
    spans, (frame_bottom, frame_top) = _stack(boxes)
    fig.add_shape(type="rect", x0=x0 - 4, x1=x1 + 4, y0=frame_bottom, y1=frame_top, layer="below",
                  fillcolor=FRAME[0], line=dict(color=FRAME[1], width=1, dash="dot"), name=f"{stack.lower()}.layer")
    pre = " (pre-LN)" if norm_first else ""
    fig.add_annotation(x=x0 - 3.5, y=frame_top - 4, text=f"<b>{stack} layer × N = {repeat}</b>{pre}",
                       xanchor="left", yanchor="top", showarrow=False, font=dict(size=NOTE_FONT, color="#4b5563"),
                       name=f"{stack.lower()}.layer")
    for box_id, kind, title, lines, _ in boxes:
        y0, y1 = spans[box_id]
        fill, border = PALETTE[kind]
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, fillcolor=fill, line=dict(color=border, width=1.5),
                      layer="below", name=box_id)
        fig.add_annotation(x=centre, y=(y0 + y1) / 2, text=_box_text(kind, title, lines)[0], showarrow=False,
                           font=dict(size=BOX_FONT), name=box_id)
        hover.append((centre, (y0 + y1) / 2, "<br>".join(
            f"<b>{escape(s.name)}</b>  {escape(s.tensor)}  {escape(shape_text(s))}<br>{escape(s.note)}"
            for _, s in lines if s is not None)))
    return spans


def _connect(fig: go.Figure, boxes: list[tuple], spans: dict, x: tuple[float, float]) -> None:
    """Arrows up the stack, and each sublayer's residual path from its input to its Add box."""
    x0, x1 = x
    centre = (x0 + x1) / 2
    outside, edge = (x0 - 2.2, x0) if x == ENCODER_X else (x1 + 2.2, x1)
    ids = [b[0] for b in boxes]
    for i in range(1, len(boxes)):
        tail, tip = spans[ids[i - 1]][1], spans[ids[i]][0]
        _arrow(fig, (centre, tail), (centre, tip), name=f"{ids[i - 1]}->{ids[i]}")
        if boxes[i][1] in ("attention", "ffn"):  # a sublayer; the box after it is its Add
            branch = tip - 8  # inside the layer frame even for the first sublayer
            add_y = sum(spans[ids[i + 1]]) / 2
            _polyline(fig, [(centre, branch), (outside, branch), (outside, add_y)], RESIDUAL)
            _arrow(fig, (outside, add_y), (edge, add_y), RESIDUAL, name=f"residual->{ids[i + 1]}")


def _legend(stages: dict) -> str:
    """What the symbols in the shapes stand for, with this input's and this model's sizes."""
    (B, S), T = stages["source.ids"].shape, stages["target.ids"].shape[1]
    _, h, _, d_k = stages["encoder.qkv"].shape
    return "<br>".join([
        f"<b>This input</b>: B = {B} in the batch,",
        f"S = {S} source pieces,",
        f"T = {T} target pieces",
        f"<b>This model</b>: d_model = {stages['source.input'].shape[2]},",
        f"h = {h} heads, d_k = d_model / h = {d_k},",
        f"d_ff = {stages['encoder.ffn'].shape[2]}, V = {stages['logits'].shape[2]}",
        "Hover a box for what each tensor is."])


def architecture_diagram(stages: Sequence, *, norm_first: bool = False, title: str | None = None) -> go.Figure:
    """The encoder-decoder data flow of Figure 1, each box labelled with its tensor shape for this input.

    `stages` come from `transformer.architecture.tensor_shapes`; one encoder and one decoder
    layer are drawn, framed as × N, and the encoder memory feeds the cross-attention of each.
    """
    by_key = {s.key: s for s in stages}
    fig = go.Figure()
    hover: list = []
    spans = {}
    for stack, x in ((ENCODER, ENCODER_X), (DECODER, DECODER_X)):
        boxes = _column(by_key, stack, norm_first)
        spans.update(_draw_column(fig, boxes, x, stack, by_key[f"{stack.lower()}.output"].repeat, norm_first, hover))
        _connect(fig, boxes, spans, x)
    # The memory is computed once and read by every decoder layer's cross-attention.
    memory_y = sum(spans["memory"]) / 2
    cross_y = sum(spans["decoder.cross_attention"]) / 2
    middle = (ENCODER_X[1] + DECODER_X[0]) / 2
    _polyline(fig, [(ENCODER_X[1], memory_y), (middle, memory_y), (middle, cross_y)], ARROW)
    _arrow(fig, (middle, cross_y), (DECODER_X[0], cross_y), name="memory->decoder.cross_attention")
    # Shapes take no hover, so an invisible marker at each box's centre carries its stages' notes.
    fig.add_trace(go.Scatter(x=[h[0] for h in hover], y=[h[1] for h in hover], hovertext=[h[2] for h in hover],
                             mode="markers", marker=dict(size=30, opacity=0), showlegend=False,
                             hoverlabel=dict(align="left"),
                             hovertemplate="%{hovertext}<extra></extra>"))
    legend = _legend(by_key)
    # above the encoder's memory, down to its top at most (a long legend raises the figure's top)
    top = max(max(end for _, end in spans.values()) + 10,
              spans["memory"][1] + 20 + LINE * (legend.count("<br>") + 1))
    fig.add_annotation(x=ENCODER_X[0] - 4, y=top - 10, xanchor="left", yanchor="top", align="left",
                       showarrow=False, font=dict(size=NOTE_FONT, color="#4b5563"), text=legend, name="legend")
    fig.update_xaxes(visible=False, range=[0, 100], fixedrange=True)
    fig.update_yaxes(visible=False, range=[0, top], fixedrange=True)
    margin = dict(l=10, r=10, b=10, t=40 if title else 10)
    box = (ENCODER_X[1] - ENCODER_X[0]) / 100
    fig.update_layout(meta={"fit": {"width": fit_width(
        [(a.text, a.font.size, LEGEND_SHARE if a.name == "legend" else box)
         for a in fig.layout.annotations if a.text])}})
    return base_layout(fig, top + margin["t"] + margin["b"], title=title, margin=margin)


def parameter_markdown(components: Sequence, measured_total: int, *, closed_form: str | None = None) -> str:
    """component | paper formula | § | count | share, then a total row checked against the model's count."""
    total = sum(c.count for c in components)
    rows = ["| component | paper formula | § | parameters | share |", "|---|---|---|---:|---:|"]
    for c in components:
        share = c.count / total if total else 0.0
        rows.append(f"| {c.name} | `{c.formula}` | {c.section} | {c.count:,} | "
                    f"{'< 0.1%' if 0 < share < 0.001 else f'{share:.1%}'} |")
    if total == measured_total:
        check = f"✓ equals the model's {measured_total:,}"
    else:
        check = f"✗ differs by {abs(total - measured_total):,} from the model's {measured_total:,}"
    formula = f"`{closed_form}`" if closed_form else "sum of the above"
    rows.append(f"| **total** {check} | {formula} | | **{total:,}** | 100% |")
    return "\n".join(rows)
