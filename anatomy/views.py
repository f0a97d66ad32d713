"""What the page shows of a trace, as pure functions: (trace, view) -> Plotly figures, chips, table rows, markdown.

Figures come from viz/; this module decides which arrays, labels and titles they get. KINDS is the one place that
maps an attention kind to its weights, axes and help; viz.KIND_LABELS is its one name. Steps count from 1.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go

import viz
from transformer import HeadVectors, Trace
from transformer.analysis import DEFINITIONS, HIDDEN_PIECES, trace_head_statistics
from transformer.architecture import paper_total, parameter_breakdown, tensor_shapes
from transformer.config import ModelConfig
from transformer.model import sinusoidal_positional_encoding

from .inputs import MEAN_HEAD, View
from .registry import LANGUAGE_NAMES, ModelEntry, shown_path

CONFIDENCE = {"p ≥ 0.8": "#bfdbfe", "0.4 ≤ p < 0.8": "#fde68a", "p < 0.4": "#fecaca"}
CURRENT = "current step"
PIECE = "piece"
EMPTY = "∅ (empty)"  # an empty translation, e.g. a beam candidate that is EOS at once
DECODER_QUERY = "query: decoder position (read ▸ produced)"


def name(kind: str) -> str:
    """The kind's name as a sentence or title starts it: "Cross-attention"."""
    text = viz.KIND_LABELS[kind]
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class Arrays:
    """One attention kind of a trace, as the figures take it."""

    weights: np.ndarray  # (L, h, queries, keys)
    queries: list  # pieces, or (read, produced) pairs for decoder positions
    keys: list[str]
    causal: bool
    query_groups: list[list[int]]  # for merging pieces into words
    key_groups: list[list[int]]
    hidden: np.ndarray | None  # (queries, keys): cells a mask hides; None when none is
    rows: list[int]  # the trace's row of each query shown (hiding special tokens drops some)


def arrays(trace: Trace, kind: str, hide: bool = False) -> Arrays:
    """One attention kind of a trace, with the word groups that merging reads (Trace.attention maps the kind).

    With `hide`, the start, end and pad pieces leave the keys, and the query rows that read (encoder) or produce
    (decoder positions) one of them leave the rows; each row is renormalised over the keys left. A row that sees
    none of them (decoder row 1 sees only <s>) stays, all hidden."""
    maps = trace.attention(kind)
    Tq, Tk = len(maps.queries), len(maps.keys)
    hidden = viz.causal_mask(Tq, Tk) if maps.causal else None
    rows, cols, w = list(range(Tq)), list(range(Tk)), maps.weights
    if hide:
        rows, cols = _ordinary(maps.query_pieces), _ordinary(maps.keys)
        w = w[:, :, rows][:, :, :, cols]  # (L, h, rows, cols)
        if hidden is not None:
            hidden = hidden[np.ix_(rows, cols)]
            w = np.where(hidden, 0.0, w)
        w = _renormalised(w)
    pieces = [maps.query_pieces[i] for i in rows]
    keys = [maps.keys[j] for j in cols]
    return Arrays(w, [maps.queries[i] for i in rows], keys, maps.causal, viz.word_groups(pieces),
                  viz.word_groups(keys), hidden, rows)


def _ordinary(pieces: list[str]) -> list[int]:
    """The positions of the pieces that are not start, end or pad."""
    return [i for i, piece in enumerate(pieces) if piece not in HIDDEN_PIECES]


def _renormalised(w: np.ndarray) -> np.ndarray:
    """Each row (last axis) rescaled to sum to 1; a row with nothing left stays all zero."""
    total = w.sum(-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0).astype(np.float32)


HIDE_TITLE = " · special tokens hidden, rows renormalised"


@dataclass(frozen=True)
class Kind:
    query_title: str
    key_title: str
    help: str
    stepped: bool  # its rows are decoding steps (the step highlight and slow motion apply)


KINDS: dict[str, Kind] = {
    "cross": Kind(DECODER_QUERY, "key: source piece", stepped=True, help=(
        "**Cross-attention.** Each row is one decoder position: it *reads* the previous output piece and "
        "*produces* the next one (`read ▸ produced`). The row shows which source pieces it drew on; in a trained "
        "model the upper layers look like an **alignment** between the sentences.")),
    "encoder": Kind("query: source piece", "key: source piece", stepped=False, help=(
        "**Encoder self-attention.** Each source piece (row) mixes in information from every source piece "
        "(columns), in both directions. Heads specialise: some look at the next or previous piece, some at the "
        "end of the sentence.")),
    "decoder": Kind(DECODER_QUERY, "key: decoder input piece (read)", stepped=True, help=(
        "**Decoder masked self-attention.** Position *t* may only look at positions ≤ *t*: the **grey** cells are "
        "hidden by the mask (they are not zero attention). This is what makes left-to-right generation possible.")),
}
COMMON_HELP = ("\n\nQueries are rows, keys are columns; each row sums to 1 and every heatmap uses the same 0–1 "
               "colour scale. The orange frame marks the step chosen under *Decoding steps* (counted from 1)."
               "\n\n**Show as**: *heatmap*; *lines* (queries left, keys right, a line per weight with that weight as "
               "its opacity, the heads of the mean in their own colours, a click on the legend hides a head; point "
               "at or tap a piece to keep only its lines); *softmax walk* (one query of one head through equation 1 "
               "with this translation's numbers: q, each k, q·k, ÷√d_k, the mask, the softmax, and the weighted sum "
               "of the values, the head's output before W_o; the query is the decoding step, or the *walk query* "
               "piece for encoder self-attention)."
               "\n\n**Hide special tokens** takes `<s>`, `</s>` and `<pad>` out of the keys and the rows and "
               "renormalises each row over the keys left, so that heads which park attention on `</s>` show what "
               "else they read.")


def kind_help(kind: str) -> str:
    return KINDS.get(kind, KINDS["cross"]).help + COMMON_HELP


def kind_choices() -> list[tuple[str, str]]:
    return [(name(kind), kind) for kind in KINDS]


def stats_help() -> str:
    return "**What the statistics mean** (each a mean over the head's query rows)\n\n" + "\n".join(
        f"- **{viz.STAT_LABELS[stat]}**: {viz.escape(text)}" for stat, text in DEFINITIONS.items())


# ---- a trace and its parts ----

def steps(trace: Trace) -> int:
    return len(trace.output_tokens)


def shape(trace: Trace) -> tuple[int, int, int]:
    """Layers, heads, decoding steps."""
    L, H = trace.cross_attn.shape[:2]
    return L, H, steps(trace)


def prefix(trace: Trace, n: int) -> Trace:
    """The trace as it stood after its first n decoding steps (slow motion, and what Stop keeps)."""
    n = max(0, min(n, steps(trace)))
    return dataclasses.replace(trace, target_tokens=trace.target_tokens[:n], output_tokens=trace.output_tokens[:n],
                               output_ids=trace.output_ids[:n], top_k=trace.top_k[:n],
                               decoder_self_attn=trace.decoder_self_attn[:, :, :n, :n],
                               cross_attn=trace.cross_attn[:, :, :n],
                               text=join(trace.output_tokens[:n]))


def language(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def join(pieces: list[str]) -> str:
    """Output pieces as text (what the tokenizer decodes them to, for pieces of a streamed translation)."""
    return "".join(p for p in pieces if p not in ("<s>", "</s>")).replace("\u2581", " ").strip()


def pick(weights: np.ndarray, layer: int, head: str) -> tuple[np.ndarray, str]:
    """(L, h, ...) -> one layer's head (or the mean of its heads), and a caption; layer and head counted from 1."""
    L, H = weights.shape[:2]
    l = min(max(layer, 1), L) - 1
    if head == MEAN_HEAD:
        return weights[l].mean(0), f"layer {l + 1}, mean of {H} heads"
    h = min(max(int(head), 1), H) - 1
    return weights[l, h], f"layer {l + 1}, head {h + 1}"


def _merge_labels(tokens: list, groups: list[list[int]]) -> list:
    if tokens and isinstance(tokens[0], tuple):
        reads, prods = [t[0] for t in tokens], [t[1] for t in tokens]
        return [(viz.word_text(reads, g), viz.word_text(prods, g)) for g in groups]
    return [viz.word_text(tokens, g) for g in groups]


def _shown(a: Arrays, weights: np.ndarray, merge: bool, plain: bool = False):
    """Weights, labels and hidden cells as shown: per piece (▁ hidden when plain), or per word when merging."""
    if not merge:
        if plain:
            return weights, viz.plain_labels(a.queries), viz.plain_labels(a.keys), a.hidden
        return weights, a.queries, a.keys, a.hidden
    w, hidden = viz.merge_attention(weights, a.query_groups, a.key_groups, a.hidden)
    return w, _merge_labels(a.queries, a.query_groups), _merge_labels(a.keys, a.key_groups), hidden


def _empty_note(hidden, queries, special_hidden: bool) -> str | None:
    """The note for rows that see no key once special tokens are hidden, or None."""
    if hidden is None or not special_hidden:
        return None
    empty = [viz.query_label(q) for q, row in zip(queries, hidden) if len(row) and row.all()]
    if not empty:
        return None
    return f"row {', '.join(empty)}: sees only hidden special tokens (empty) · grey: hidden"


def heatmap(trace: Trace, view: View, prefix_title: str = "") -> go.Figure:
    """The large view: one layer's head (or mean) of one kind; the chosen step framed."""
    kind = KINDS[view.kind]
    a = arrays(trace, view.kind, view.hide)
    matrix, caption = pick(a.weights, view.layer, view.head)
    matrix, q, k, hidden = _shown(a, matrix, view.merge, view.plain)
    highlight = None
    if kind.stepped and not view.merge and steps(trace):
        t = min(view.step or steps(trace), steps(trace)) - 1
        highlight = a.rows.index(t) if t in a.rows else None
    title = (f"{prefix_title}: " if prefix_title else "") + f"{name(view.kind)} · {caption}" + (
        " · words" if view.merge else "") + (HIDE_TITLE if view.hide else "")
    return viz.attention_heatmap(matrix, q, k, query_title=kind.query_title, key_title=kind.key_title,
                                 hidden=hidden, highlight_row=highlight, title=title,
                                 note=_empty_note(hidden, q, view.hide))


def grid(trace: Trace, view: View) -> go.Figure:
    a = arrays(trace, view.kind, view.hide)
    w, q, k, hidden = _shown(a, a.weights, view.merge, view.plain)
    return viz.attention_grid(w, q, k, hidden=hidden, title=f"{name(view.kind)}: every layer × head" + (
        HIDE_TITLE if view.hide else ""))


def lines(trace: Trace, view: View) -> go.Figure:
    """The line view of one layer: its chosen head, or every head over each other in its own colour."""
    kind = KINDS[view.kind]
    a = arrays(trace, view.kind, view.hide)
    L, H = a.weights.shape[:2]
    l = min(max(view.layer, 1), L) - 1
    heads = list(range(1, H + 1)) if view.head == MEAN_HEAD else [min(int(view.head), H)]
    w, q, k, hidden = _shown(a, a.weights[l, [h - 1 for h in heads]], view.merge, view.plain)  # (n, Tq, Tk)
    caption = f"layer {l + 1}, " + (f"all {H} heads" if len(heads) > 1 else f"head {heads[0]}")
    title = f"{name(view.kind)} · {caption} · lines" + (" · words" if view.merge else "") + (
        HIDE_TITLE if view.hide else "")
    # a decoder position is labelled by the piece it produces (its hover says what it read too)
    return viz.attention_lines(w, q, k, heads=heads, hidden=hidden, title=title,
                               note=_empty_note(hidden, q, view.hide),
                               query_title="produces" if kind.stepped else "query", key_title="key")


@dataclass(frozen=True)
class Walk:
    """One query of one head through eq. 1, every stage as the page shows it (Tk keys, d_k dimensions)."""

    kind: str
    layer: int  # from 1
    head: int  # from 1
    row: int  # the query's row in the trace's attention of this kind (from 0)
    query: object  # its label: a piece or (read, produced)
    keys: list[str]
    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (Tk, d_k)
    v: np.ndarray  # (Tk, d_k)
    visible: np.ndarray  # (Tk,) bool: the keys the mask lets this query see
    scores: np.ndarray  # (Tk,) q·k_j
    scaled: np.ndarray  # (Tk,) q·k_j / √d_k
    weights: np.ndarray  # (Tk,) softmax over the visible keys
    output: np.ndarray  # (d_k,) Σ_j weights_j v_j: the head's output for this query, before W_o


def walk_row(trace: Trace, view: View) -> int:
    """The trace row the softmax walk follows: the decoding step, or the walk query for the encoder (from 0)."""
    n = len(trace.source_tokens) if view.kind == "encoder" else steps(trace)
    return min(view.query if view.kind == "encoder" else (view.step or n), n) - 1


def walk(trace: Trace, view: View, vectors: HeadVectors) -> Walk:
    """The walk of the view's query row through the head's q, k and v (the mean of heads has no single q: head 1)."""
    H = vectors.q.shape[0]
    head = 1 if view.head == MEAN_HEAD else min(int(view.head), H)
    row = walk_row(trace, view)
    maps = trace.attention(view.kind)
    q, k, v = (a.astype(np.float64) for a in (vectors.q[head - 1, row], vectors.k[head - 1], vectors.v[head - 1]))
    visible = vectors.visible[row]
    scores = k @ q  # (Tk,)
    scaled = scores / np.sqrt(q.shape[-1])
    shifted = np.exp(np.where(visible, scaled - scaled[visible].max(), -np.inf))
    weights = shifted / shifted.sum()
    return Walk(view.kind, vectors.layer, head, row, maps.queries[row], list(maps.keys), q, k, v, visible, scores,
                scaled, weights, weights @ v)


def walk_figure(w: Walk, view: View) -> go.Figure:
    d_k = len(w.q)
    keys = viz.plain_labels(w.keys) if view.plain else w.keys
    query = viz.plain_labels([w.query])[0] if view.plain else w.query
    note = None
    if view.head == MEAN_HEAD:
        note = "The mean of heads has no single q: this is head 1. Choose a head above."
    elif view.hide or view.merge:
        note = "The walk is the model's own computation: every piece, special tokens included."
    return viz.softmax_walk(w.q, w.k, w.v, w.visible, w.scores, w.scaled, w.weights, w.output, key_tokens=keys,
                            query=query, d_k=d_k, note=note,
                            title=f"{name(w.kind)} · layer {w.layer}, head {w.head} · query "
                                  f"{viz.query_label(query)}: softmax(q·kᵀ / √{d_k}) · V, step by step")


def summary(trace: Trace, kind: str) -> go.Figure:
    return viz.head_multiples(trace_head_statistics(trace), kind,
                              title=f"{name(kind)}: what each head does (every statistic per layer × head)")


def head_table(trace: Trace) -> tuple[list[str], list[list]]:
    return viz.head_table(trace_head_statistics(trace))


def topk_table(trace: Trace) -> go.Figure:
    return viz.topk_table(trace.output_tokens, trace.top_k, title="Top-k next pieces at every step (bold: emitted)")


def _without_special(row: np.ndarray, keys: list[str]) -> tuple[np.ndarray, list[str]]:
    """One attention row without the special keys, renormalised over the keys left (all zero when none is)."""
    kept = _ordinary(keys)
    return _renormalised(row[kept]), [keys[j] for j in kept]


def step_figures(trace: Trace, view: View) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Decoding step t (view.step, from 1; the last when unset): its cross-attention row over the source, its
    masked self-attention row over the pieces read so far, and its top-k next pieces."""
    T = steps(trace)
    if T == 0:
        empty = viz.empty_figure("No decoding step", 300)
        return empty, empty, empty
    t = min(view.step or T, T) - 1
    cross, caption = pick(trace.cross_attn[:, :, t], view.layer, view.head)
    selfw, _ = pick(trace.decoder_self_attn[:, :, t, :t + 1], view.layer, view.head)
    src, tgt = list(trace.source_tokens), list(trace.target_tokens[:t + 1])
    if view.hide:
        cross, src = _without_special(cross, src)
        selfw, tgt = _without_special(selfw, tgt)
    if view.merge:
        sg, tg = viz.word_groups(src), viz.word_groups(tgt)
        cross = np.array([cross[g].sum() for g in sg], dtype=np.float32)
        selfw = np.array([selfw[g].sum() for g in tg], dtype=np.float32)
        src, tgt = [viz.word_text(src, g) for g in sg], [viz.word_text(tgt, g) for g in tg]
    elif view.plain:
        src, tgt = viz.plain_labels(src), viz.plain_labels(tgt)
    query = (trace.target_tokens[t], trace.output_tokens[t])
    if view.plain:
        query = viz.plain_labels([query])[0]
    produced = viz.plain_label(trace.output_tokens[t]) if view.plain else trace.output_tokens[t]
    hidden = " · special tokens hidden" if view.hide else ""
    titles = [f"Step {t + 1} · {viz.KIND_LABELS[kind]} ({caption}){hidden}" for kind in ("cross", "decoder")]
    return (viz.attention_row(cross, src, query=query, key_title=KINDS["cross"].key_title, title=titles[0])
            if src else viz.empty_figure(f"{titles[0]}: no key left to see", 300),
            viz.attention_row(selfw, tgt, query=query, key_title=KINDS["decoder"].key_title, color="#21918c",
                              title=titles[1])
            if tgt else viz.empty_figure(f"{titles[1]}: this step sees only <s>, which is hidden (empty row)", 300),
            viz.topk_bars(trace.top_k[t] if t < len(trace.top_k) else [], chosen=produced,
                          title=f"Step {t + 1}: next-piece probabilities → {viz.label(produced)}"))


def export_name(key: str, view: View, figure: str = "") -> str:
    """A figure's download name without extension: direction, step for the step panels, kind, layer, head
    (`de-en_cross-attention_layer3_head2`), how the large view draws it when not as a heatmap (`lines`,
    `walk-step4`), `no-special` when special tokens are hidden; `figure` names one that is not the large view
    ("step-topk", "grid", "trained", "untrained")."""
    kind = viz.KIND_LABELS[{"step-cross": "cross", "step-self": "decoder"}.get(figure, view.kind)].replace(" ", "-")
    head = "mean-of-heads" if view.head == MEAN_HEAD else f"head{view.head}"
    step = f"step{view.step}_" if figure.startswith("step") else ""
    special = ["no-special"] if view.hide and figure != "step-topk" else []
    if figure == "step-topk":
        return f"{key}_{step}next-piece-probabilities"
    if figure == "grid":
        return "_".join([f"{key}_{kind}_all-heads"] + (["words"] if view.merge else []) + special)
    display = []
    if not figure and view.display == "lines":
        display = ["lines"]
    elif not figure and view.display == "walk":
        head = "head1" if view.head == MEAN_HEAD else head
        where = f"query{view.query}" if view.kind == "encoder" else f"step{view.step}"
        return f"{key}_{kind}_layer{view.layer}_{head}_walk-{where}"
    parts = [f"{key}_{step}{kind}", f"layer{view.layer}", head] + (["words"] if view.merge else []) + display + (
        [figure] if figure in ("trained", "untrained") else []) + special
    return "_".join(parts)


# ---- chips and tables ----

def _prob(top_k: list[dict], token: str) -> float | None:
    return next((float(c["prob"]) for c in top_k if c["token"] == token), None)


def confidence(p: float | None) -> str:
    if p is None or p < 0.4:
        return "p < 0.4"
    return "p ≥ 0.8" if p >= 0.8 else "0.4 ≤ p < 0.8"


def output_chips(produced: list[str], top_k: list[list[dict]]) -> list[tuple[str, str]]:
    return [(tok, confidence(_prob(top_k[i] if i < len(top_k) else [], tok))) for i, tok in enumerate(produced)]


def partial_chips(produced: list[str], step: int) -> list[tuple[str, str]]:
    """The output up to step `step` (from 1), that step marked."""
    return [(tok, CURRENT if i == step - 1 else PIECE) for i, tok in enumerate(produced[:step])]


def source_chips(pieces: list[str]) -> list[tuple[str, str]]:
    return [(p, PIECE) for p in pieces]


def candidate_rows(trace: Trace) -> list[list]:
    """The beam candidates as table rows: #, text (EMPTY for none), score, log p, pieces with EOS."""
    return [[i + 1, c.text or EMPTY, round(c.score, 4), round(c.log_prob, 4), len(c.tokens) + 1]
            for i, c in enumerate(trace.candidates)]


def head_choices(n_heads: int) -> list[tuple[str, str]]:
    return [("mean of heads", MEAN_HEAD)] + [(str(h + 1), str(h + 1)) for h in range(n_heads)]


def grid_pick_choices(n_layers: int, n_heads: int) -> list[tuple[str, str]]:
    return [(f"layer {l + 1} · head {h + 1}", f"{l + 1}:{h + 1}") for l in range(n_layers) for h in range(n_heads)]


def run_notices(entry: ModelEntry, trace: Trace | None, extra: list[str]) -> list[str]:
    """What a visitor should know about a run, as plain text (the page escapes it)."""
    out = ["This model is untrained (random weights): its output is noise."] if entry.untrained else []
    out += extra
    if trace is not None:
        out += list(trace.notices)
        unknown = trace.source_tokens.count("<unk>")
        if unknown:
            out.append(f"{unknown} piece(s) of the text are unknown to this model (read as <unk>): its vocabulary "
                       "holds only what its German and English training text contains.")
        if trace.cut_by_limit and not trace.settings.get("stopped"):
            out.append("Decoding stopped at the length limit (max new tokens) before the end of the sentence.")
    return out


# ---- the model (cached: they depend on the model alone, or on its shape and the lengths) ----

@lru_cache(maxsize=8)
def _pe(max_len: int, d_model: int) -> np.ndarray:
    return sinusoidal_positional_encoding(max_len, d_model).numpy()


@lru_cache(maxsize=32)
def pe_curves(config: ModelConfig, dims: tuple[int, ...]) -> go.Figure:
    good = sorted({d for d in dims if 0 <= d < config.d_model})
    return viz.positional_encoding(_pe(config.max_len, config.d_model), dims=good or None,
                                   title=f"Sinusoidal positional encoding (d_model = {config.d_model}, "
                                         f"{config.max_len} positions)")


@lru_cache(maxsize=8)
def pe_similarity(config: ModelConfig) -> go.Figure:
    return viz.positional_similarity(_pe(config.max_len, config.d_model), title="PE(p) · PE(q) / d_model")


def pe_rows(config: ModelConfig, source_tokens: list[str]) -> go.Figure:
    pe = _pe(config.max_len, config.d_model)[:max(len(source_tokens), 1)]
    return viz.positional_rows(pe, source_tokens, title="The encodings added to this input's pieces")


@lru_cache(maxsize=64)
def architecture(config: ModelConfig, source_len: int, target_len: int, caption: str) -> go.Figure:
    return viz.architecture_diagram(tensor_shapes(config, source_len, target_len), norm_first=config.norm_first,
                                    title=caption)


@lru_cache(maxsize=16)
def parameters(entry: ModelEntry) -> go.Figure:
    named = [(n, p.numel()) for n, p in entry.checkpoint.model.named_parameters()]
    return viz.parameter_sunburst(named, title="Where the parameters are (click to zoom)")


@lru_cache(maxsize=16)
def training_curves(entry: ModelEntry) -> go.Figure:
    return viz.training_curves(entry.metrics, title="Training")


def architecture_markdown(entry: ModelEntry) -> str:
    """The model's hyperparameters and its parameters per component, checked against the paper's formula."""
    c = entry.config
    lines = [f"### {viz.escape(entry.label)} (`{entry.key}`)"]
    if entry.untrained:
        lines.append("> ⚠️ **Untrained: random weights.** Translations are gibberish and attention patterns are "
                     "arbitrary; they show the machinery, not what a trained model learns.")
    else:
        lines.append(f"Checkpoint `{shown_path(entry.source)}`.")
    rows = [("layers N (encoder / decoder)", f"{c.n_encoder_layers} / {c.n_decoder_layers}"), ("d_model", c.d_model),
            ("heads h", f"{c.n_heads} (d_k = d_v = d_model / h = {c.d_k})"), ("d_ff", c.d_ff),
            ("vocabulary V (joint SentencePiece)", f"{c.vocab_size:,}"), ("max_len", c.max_len),
            ("dropout (training)", c.dropout), ("layer norm", "pre-LN" if c.norm_first else "post-LN, as in the paper"),
            ("embeddings", "tied: source, target and output (§3.4)" if c.tie_embeddings else "separate")]
    lines += ["", "| hyperparameter | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    lines += ["", "#### Parameters", viz.parameter_markdown(parameter_breakdown(c),
                                                             entry.checkpoint.model.num_parameters(),
                                                             closed_form=paper_total(c).formula)]
    return "\n".join(lines)


def training_markdown(entry: ModelEntry) -> str:
    """How the checkpoint was trained and scored (config.json), then its model card."""
    if entry.untrained:
        return "This model is **untrained**: random weights, no training log and no model card."
    meta = entry.checkpoint.meta
    metrics, training = meta.get("metrics") or {}, meta.get("training") or {}
    lines = []
    if metrics:
        parts = [f"BLEU **{metrics['val_bleu']:.1f}**" if "val_bleu" in metrics else "",
                 f"chrF {metrics['val_chrf']:.1f}" if "val_chrf" in metrics else "",
                 f"loss {metrics['val_loss']:.3f}" if "val_loss" in metrics else "",
                 f"after epoch {metrics['epoch']}" if "epoch" in metrics else ""]
        per_corpus = [f"{k.removeprefix('val_bleu_')} {v:.1f}" for k, v in metrics.items() if k.startswith("val_bleu_")]
        where = f"mean over {', '.join(per_corpus)}" if per_corpus else "Multi30k"
        lines.append(f"**Validation** (greedy; {where}): " + ", ".join(p for p in parts if p) + ".")
    if training:
        corpora = training.get("corpora") or []
        data = ", ".join(f"{c['name']} ×{c['weight']:g}" for c in corpora if isinstance(c, dict) and "name" in c) \
            or str(training.get("data", ""))
        bits = [f"{training['steps']:,} steps" if isinstance(training.get("steps"), int) else "",
                f"{training['train_time_s'] / 60:.0f} min" if isinstance(training.get("train_time_s"), (int, float))
                else "", f"on {training['device']}" if training.get("device") else "", data]
        if any(bits):
            lines.append("**Training**: " + ", ".join(b for b in bits if b) + ".")
    lines += ["", "---", "", entry.card or f"No model card (README.md) in `{shown_path(entry.source)}`."]
    return "\n\n".join(lines)
