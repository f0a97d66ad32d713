"""The architecture tab: Figure 1 with an input's tensor shapes, the hyperparameters, the parameters per component
against the paper's formula and as an icicle of its parts. The figures are cached: they depend on the model (and the
lengths)."""
from __future__ import annotations

from functools import lru_cache

import plotly.graph_objects as go

import viz
from transformer import Trace
from transformer.architecture import paper_total, parameter_breakdown, tensor_shapes
from transformer.config import ModelConfig

from .registry import ModelEntry, shown_name

TRACE_CAPTION = "Shapes for this translation (the whole output read at once, as in training and in the final pass)"


@lru_cache(maxsize=64)
def architecture(config: ModelConfig, source_len: int, target_len: int, caption: str) -> go.Figure:
    return viz.architecture_diagram(tensor_shapes(config, source_len, target_len), norm_first=config.norm_first,
                                    title=caption)


def of_trace(config: ModelConfig, trace: Trace) -> go.Figure:
    """Figure 1 with the shapes of a translation by a model of `config`. One stopped before its first piece is drawn
    as if at step 1: a tensor has no length 0."""
    return architecture(config, max(len(trace.source_tokens), 1), max(len(trace.target_tokens), 1), TRACE_CAPTION)


@lru_cache(maxsize=16)
def parameters(entry: ModelEntry) -> go.Figure:
    named = [(n, p.numel()) for n, p in entry.checkpoint.model.named_parameters()]
    return viz.parameter_icicle(named, title="Where the parameters are")


def architecture_markdown(entry: ModelEntry) -> str:
    """The model's hyperparameters and its parameters per component, checked against the paper's formula."""
    c = entry.config
    lines = [f"### {viz.escape(entry.label)} (`{entry.key}`)"]
    if entry.untrained:
        lines.append("> ⚠️ **Untrained: random weights.** Translations are gibberish and attention patterns are "
                     "arbitrary; they show the machinery, not what a trained model learns.")
    else:
        lines.append(f"Checkpoint `{shown_name(entry.source)}`.")
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
