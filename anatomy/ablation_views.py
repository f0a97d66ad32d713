"""Heads switched off: the controls' choices, the original and ablated translations side by side, the change in
log-probability, and the head-importance maps of one sentence (transformer.heads computes them)."""
from __future__ import annotations

import difflib
import html

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

import viz
from transformer.config import ModelConfig
from transformer.head_mask import HeadMask, HeadRef
from transformer.heads import CorpusImportance, SentenceImportance
from transformer.kinds import KINDS, by_name
from transformer.pieces import piece_texts
from viz.common import ATTENTION_SCALE

from .run import Ablation, Run
from .views import name

ROLE_NAMES = {"same": "same", "previous": "prev", "next": "next", "first": "first", "eos": "eos",
              "monotonic": "mono"}
LIST_LENGTH = 10
IMPORTANCE_HELP = (
    "Which heads does **this** translation need? Each head of each attention is judged three ways, on the "
    "translation of the sentence above with every head on, even while some are switched off (teacher-forced, so "
    "every head is judged on the same output): **ablation**, how much the log-probability of that translation "
    "drops when that head alone is switched off (Michel, Levy and Neubig, 2019: most heads can go, a few cannot); "
    "**gradient**, their cheap "
    "estimate of the same, |∂ log p / ∂ξ| for a gate ξ on the head's output, from one backward pass; and "
    "**confidence**, the head's mean largest attention weight (Voita et al., 2019: the heads that matter tend to "
    "be confident), with the role its head statistics suggest. Click a head to switch it off or on.")


def head_label(kind: str, layer: int, head: int) -> str:
    """One head as the page names it: "cross-attention L2 H3"."""
    return f"{by_name(kind).label} L{layer} H{head}"


def head_choices(config: ModelConfig) -> list[tuple[str, str]]:
    """Every head of a model, (label, HeadMask link item), in the model's order: the heads-off checkboxes, labelled
    short ("cross L2 H3", the kinds as links name them) so that a base model's 144 fit."""
    return [(f"{kind.name} L{layer} H{head}", f"{kind.name}:{layer}.{head}") for kind in KINDS
            for layer in range(1, config.n_layers(kind.name) + 1)
            for head in range(1, config.n_heads + 1)]


def off_items(heads_off: str) -> list[str]:
    """A (checked) link form's items, as the checkboxes hold them."""
    return [str(ref) for ref in HeadMask.refs(heads_off)]


def _marked(pieces: list[str], other: list[str], tag: str) -> str:
    """`pieces` as HTML text (transformer.pieces, the one detokenisation), the runs that differ from `other` wrapped
    in `tag`, the space before a run left outside it."""
    texts = piece_texts(pieces)
    out = []
    for op, i1, i2, _, _ in difflib.SequenceMatcher(a=pieces, b=other, autojunk=False).get_opcodes():
        text = "".join(texts[i1:i2])
        lead = text[:len(text) - len(text.lstrip())]
        text = html.escape(text[len(lead):])
        if text:
            out.append(lead + (text if op == "equal" else f"<{tag}>{text}</{tag}>"))
    return "".join(out).strip() or "∅"


def _pieces(trace) -> list[str]:
    """The output pieces without the end marker."""
    eos = trace.output_ids[-1:] == [trace.eos_id]
    return list(trace.output_tokens[:-1] if eos else trace.output_tokens)


def comparison_html(run: Run) -> str:
    """The all-heads and the ablated translation one above the other, the pieces that changed marked, and how much
    less likely the all-heads translation became with the heads off: overall and per piece."""
    a = run.ablation
    if a is None:
        return ""
    original, ablated = _pieces(a.original), _pieces(run.trace)
    before, after = float(a.log_probs.sum()), float(a.ablated_log_probs.sum())
    refs = HeadMask.refs(run.request.decoding.heads_off)
    heads = ", ".join(head_label(r.kind, r.layer, r.head) for r in refs)
    same = "the same translation" if original == ablated else "a different translation"
    delta = a.ablated_log_probs - a.log_probs
    per_piece = " ".join(
        f'<span title="log p {a.log_probs[i]:.2f} → {a.ablated_log_probs[i]:.2f}">{html.escape(piece)}'
        f'<sub style="color:{"#b91c1c" if delta[i] < -0.1 else "#6b7280"}">{delta[i]:+.2f}</sub></span>'
        for i, piece in enumerate(a.original.output_tokens))
    return (f'<div class="anatomy-ablation"><p><b>{len(refs)} head{"s" if len(refs) > 1 else ""} off</b> '
            f"({html.escape(heads)}): {same}.</p>"
            f"<p><b>All heads on:</b> {_marked(original, ablated, 'del')}<br>"
            f"<b>Heads off:</b> {_marked(ablated, original, 'mark')}</p>"
            f"<p>log p of the all-heads translation (teacher-forced): {before:.2f} → {after:.2f} "
            f"(<b>{after - before:+.2f}</b>); per piece: {per_piece}</p></div>")


def log_prob_changes(a: Ablation) -> dict:
    """Per piece of the all-heads translation, its log p with every head on and with the heads off, as the
    viewer draws them (figures.js `logProbChange`)."""
    return {"pieces": list(a.original.output_tokens), "before": np.asarray(a.log_probs, dtype=float).tolist(),
            "after": np.asarray(a.ablated_log_probs, dtype=float).tolist(),
            "title": "Heads off: change in log p of each piece of the all-heads translation (teacher-forced)"}


def _measure(title: str, scale: str, zmin: float, zmax: float, legend: tuple[str, ...] = ()) -> dict:
    """One column of maps (figures.js `importanceMaps`): a name, its colour scale's stops and its range, and the
    lines under its name that say what its colours mean."""
    return {"title": title, "colorscale": pc.get_colorscale(scale), "zmin": zmin, "zmax": zmax,
            "legend": list(legend)}


# The ablation's two ways: its most saturated cell may be a head the translation is better off without (a rise in
# log p, a negative drop), which a reader takes for the most important one unless the map says which way is which.
ABLATION_LEGEND = ("red: log p drops without it (the head helps)", "blue: log p rises without it (better off)",
                   "white: no change")


def _maps(measures: list[dict], values: dict[str, list], heads_off: str, title: str,
          notes: dict[str, list] | None = None) -> dict:
    """Maps of head measures as the viewer draws them: one row per attention kind, one column per measure
    (values[kind]: a (layers, heads) array per measure; notes[kind]: text beside each cell of a measure, or None),
    the heads that are off greyed."""
    return {"title": title, "measures": measures, "off": off_items(heads_off),
            "kinds": [{"name": k.name, "label": name(k.name),
                       "values": [np.asarray(v, dtype=float).tolist() for v in values[k.name]],
                       "notes": (notes or {}).get(k.name, [None] * len(values[k.name]))} for k in KINDS]}


def importance_maps(imp: SentenceImportance, heads_off: str) -> dict:
    """Ablation, gradient and confidence maps, one row per attention kind; the heads that are off greyed."""
    kinds = [kind.name for kind in KINDS]
    roles = {k: [None, None, [[f"{ROLE_NAMES[imp.roles[ref][0]]} {imp.roles[ref][1]:.2f}" for ref in row]
                              for row in _refs_grid(imp, k)]] for k in kinds}
    # each measure on its own scale; the drop's diverges from white at 0 (symmetric: the same colour depth for the
    # same size either way), negative when a head's removal helps
    top = max(max(float(np.abs(imp.ablation[k]).max()) for k in kinds), 1e-3)
    grad_top = max(max(float(imp.gradient[k].max()) for k in kinds), 1e-3)
    measures = [_measure("ablation: drop in log p", "RdBu_r", -top, top, ABLATION_LEGEND),
                _measure("gradient: |∂ log p / ∂ξ|", "Oranges", 0.0, grad_top),
                _measure("confidence (mean max weight)", ATTENTION_SCALE, 0.0, 1.0)]
    return _maps(measures, {k: [imp.ablation[k], imp.gradient[k], imp.confidence[k]] for k in kinds}, heads_off,
                 f"Which heads this translation needs (log p {imp.log_prob:.2f} with every head on) · click a head to "
                 "switch it off or on", roles)


def _refs_grid(imp: SentenceImportance, kind: str) -> list[list[HeadRef]]:
    L, H = imp.confidence[kind].shape
    return [[HeadRef(kind, li + 1, h + 1) for h in range(H)] for li in range(L)]


def importance_list(imp: SentenceImportance, n: int = LIST_LENGTH) -> str:
    """The heads whose removal hurts this translation most, largest drop first, with the other two measures."""
    rows = ["| head | drop in log p | gradient | confidence | role |", "|---|---:|---:|---:|---|"]
    for ref, drop in imp.ablation.ranked()[:n]:
        role, value = imp.roles[ref]
        li, h = ref.layer - 1, ref.head - 1
        rows.append(f"| {head_label(ref.kind, ref.layer, ref.head)} | {drop:+.3f} | "
                    f"{imp.gradient[ref.kind][li, h]:.3f} | {imp.confidence[ref.kind][li, h]:.2f} | "
                    f"{role} {value:.2f} |")
    return "**Largest drops first** (switching that head alone off)\n\n" + "\n".join(rows)


def corpus_maps(corpus: CorpusImportance, heads_off: str) -> dict:
    """The model's own head importance over a corpus (its folder's heads.json), as its pruning order ranks it (raw,
    or normalised per layer as Michel et al. do), as maps the viewer draws."""
    scores = corpus.normalized if corpus.ranked_by == "normalized" else corpus.raw
    top = max(float(scores[k.name].max()) for k in KINDS)
    measure = _measure(f"importance over {corpus.sentences} {corpus.corpus} {corpus.split} sentences", "Oranges",
                       0.0, max(top, 1e-9))
    how = "normalised per layer" if corpus.ranked_by == "normalized" else "Σ |∂ log p / ∂ξ| over the sentences"
    return _maps([measure], {k.name: [scores[k.name]] for k in KINDS}, heads_off,
                 f"The model's heads over a corpus ({corpus.corpus}, {corpus.split}; {how})")


def pruning_figure(corpus: CorpusImportance) -> go.Figure:
    """The pruning curves: val BLEU as heads go, least important first and at random."""
    return viz.pruning_curve(corpus.by_importance.bleu, corpus.random.bleu, len(corpus.by_importance.order),
                             corpus.removable, title=f"Switching heads off one by one: {corpus.corpus} "
                                                     f"{corpus.split} BLEU (greedy)")
