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
from transformer import Trace
from transformer.analysis import DEFINITIONS, trace_head_statistics
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


def arrays(trace: Trace, kind: str) -> Arrays:
    """One attention kind of a trace, with the word groups that merging reads (Trace.attention maps the kind)."""
    maps = trace.attention(kind)
    return Arrays(maps.weights, maps.queries, maps.keys, maps.causal, viz.word_groups(maps.query_pieces),
                  viz.word_groups(maps.keys))


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
               "colour scale. The orange frame marks the step chosen under *Decoding steps* (counted from 1).")


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
    hidden = viz.causal_mask(len(a.queries), len(a.keys)) if a.causal else None
    if not merge:
        if plain:
            return weights, viz.plain_labels(a.queries), viz.plain_labels(a.keys), hidden
        return weights, a.queries, a.keys, hidden
    w, hidden = viz.merge_attention(weights, a.query_groups, a.key_groups, hidden)
    return w, _merge_labels(a.queries, a.query_groups), _merge_labels(a.keys, a.key_groups), hidden


def heatmap(trace: Trace, view: View, prefix_title: str = "") -> go.Figure:
    """The large view: one layer's head (or mean) of one kind; the chosen step framed."""
    kind = KINDS[view.kind]
    a = arrays(trace, view.kind)
    matrix, caption = pick(a.weights, view.layer, view.head)
    matrix, q, k, hidden = _shown(a, matrix, view.merge, view.plain)
    highlight = None
    if kind.stepped and not view.merge and steps(trace):
        highlight = min(view.step or steps(trace), steps(trace)) - 1
    title = (f"{prefix_title}: " if prefix_title else "") + f"{name(view.kind)} · {caption}" + (
        " · words" if view.merge else "")
    return viz.attention_heatmap(matrix, q, k, query_title=kind.query_title, key_title=kind.key_title,
                                 hidden=hidden, highlight_row=highlight, title=title)


def grid(trace: Trace, view: View) -> go.Figure:
    a = arrays(trace, view.kind)
    w, q, k, hidden = _shown(a, a.weights, view.merge, view.plain)
    return viz.attention_grid(w, q, k, hidden=hidden, title=f"{name(view.kind)}: every layer × head")


def summary(trace: Trace, kind: str) -> go.Figure:
    return viz.head_multiples(trace_head_statistics(trace), kind,
                              title=f"{name(kind)}: what each head does (every statistic per layer × head)")


def head_table(trace: Trace) -> tuple[list[str], list[list]]:
    return viz.head_table(trace_head_statistics(trace))


def topk_table(trace: Trace) -> go.Figure:
    return viz.topk_table(trace.output_tokens, trace.top_k, title="Top-k next pieces at every step (bold: emitted)")


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
    return (viz.attention_row(cross, src, query=query, key_title=KINDS["cross"].key_title,
                              title=f"Step {t + 1} · {viz.KIND_LABELS['cross']} ({caption})"),
            viz.attention_row(selfw, tgt, query=query, key_title=KINDS["decoder"].key_title, color="#21918c",
                              title=f"Step {t + 1} · {viz.KIND_LABELS['decoder']} ({caption})"),
            viz.topk_bars(trace.top_k[t] if t < len(trace.top_k) else [], chosen=produced,
                          title=f"Step {t + 1}: next-piece probabilities → {viz.label(produced)}"))


def export_name(key: str, view: View, figure: str = "") -> str:
    """A figure's download name without extension: direction, step for the step panels, kind, layer, head
    (`de-en_cross-attention_layer3_head2`); `figure` names one that is not the large view ("step-topk", "grid",
    "trained", "untrained")."""
    kind = viz.KIND_LABELS[{"step-cross": "cross", "step-self": "decoder"}.get(figure, view.kind)].replace(" ", "-")
    head = "mean-of-heads" if view.head == MEAN_HEAD else f"head{view.head}"
    step = f"step{view.step}_" if figure.startswith("step") else ""
    if figure == "step-topk":
        return f"{key}_{step}next-piece-probabilities"
    if figure == "grid":
        return f"{key}_{kind}_all-heads" + ("_words" if view.merge else "")
    parts = [f"{key}_{step}{kind}", f"layer{view.layer}", head] + (["words"] if view.merge else []) + (
        [figure] if figure in ("trained", "untrained") else [])
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
