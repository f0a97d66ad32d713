"""The model's anatomy on paper: parameter counts by the paper's formulas, tensor shapes per stage.

Everything here is computed from a `ModelConfig` alone; `measured_breakdown` is the one
function that reads a built model, so a test can hold the formulas against it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .config import ModelConfig

SHARED_EMBEDDING = "shared embedding (source, target, output)"
SOURCE_EMBEDDING = "source embedding"
TARGET_EMBEDDING = "target embedding"
OUTPUT_PROJECTION = "output projection"
ENCODER_SELF_ATTENTION = "encoder self-attention"
ENCODER_FFN = "encoder feed-forward"
ENCODER_NORMS = "encoder layer norms"
DECODER_SELF_ATTENTION = "decoder masked self-attention"
DECODER_CROSS_ATTENTION = "decoder cross-attention"
DECODER_FFN = "decoder feed-forward"
DECODER_NORMS = "decoder layer norms"
FINAL_NORMS = "final layer norms"
FINAL_LOGITS_BIAS = "final logits bias"

# Parameter-name prefix (layer index removed) -> component; the embedding depends on tying.
_GROUPS = {
    "tgt_embedding": TARGET_EMBEDDING, "output_projection": OUTPUT_PROJECTION,
    "encoder_layers.self_attn": ENCODER_SELF_ATTENTION, "encoder_layers.ffn": ENCODER_FFN,
    "encoder_layers.norms": ENCODER_NORMS, "decoder_layers.self_attn": DECODER_SELF_ATTENTION,
    "decoder_layers.cross_attn": DECODER_CROSS_ATTENTION, "decoder_layers.ffn": DECODER_FFN,
    "decoder_layers.norms": DECODER_NORMS, "encoder_norm": FINAL_NORMS, "decoder_norm": FINAL_NORMS,
}


@dataclass(frozen=True)
class Component:
    """One group of parameters: its formula in the paper's symbols and the count it gives."""

    name: str
    formula: str
    count: int
    section: str


@dataclass(frozen=True)
class Stage:
    """One tensor on the way from token ids to probabilities.

    `key` is a stable identifier (figures look stages up by it); `repeat` is N for the
    stages of a representative encoder or decoder layer, 1 elsewhere.
    """

    key: str
    name: str
    tensor: str
    shape: tuple[int, ...]
    symbolic: str
    note: str
    repeat: int = 1


def _layer_symbols(config: ModelConfig) -> tuple[str, str]:
    """'N' for both stacks when they are equally deep, as in the paper; otherwise N_enc, N_dec."""
    if config.n_encoder_layers == config.n_decoder_layers:
        return "N", "N"
    return "N_enc", "N_dec"


def parameter_breakdown(config: ModelConfig) -> list[Component]:
    """Parameters per component, each from its formula. Every linear map has a bias except the
    output projection; every LayerNorm has a gain and a bias of d_model each."""
    d, d_ff, V = config.d_model, config.d_ff, config.vocab_size
    n_enc, n_dec = config.n_encoder_layers, config.n_decoder_layers
    N_enc, N_dec = _layer_symbols(config)
    attention = "4·(d_model² + d_model)"  # W^Q, W^K, W^V, W^O (all heads), each d_model × d_model + bias
    attention_count = 4 * (d * d + d)
    ffn = "(2·d_model·d_ff + d_ff + d_model)"  # W_1, b_1, W_2, b_2
    ffn_count = 2 * d * d_ff + d_ff + d
    if config.tie_embeddings:
        embeddings = [Component(SHARED_EMBEDDING, "V·d_model", V * d, "§3.4")]
    else:
        embeddings = [Component(SOURCE_EMBEDDING, "V·d_model", V * d, "§3.4"),
                      Component(TARGET_EMBEDDING, "V·d_model", V * d, "§3.4"),
                      Component(OUTPUT_PROJECTION, "d_model·V", d * V, "§3.4")]
    components = embeddings + [
        Component(ENCODER_SELF_ATTENTION, f"{N_enc}·{attention}", n_enc * attention_count, "§3.2.2"),
        Component(ENCODER_FFN, f"{N_enc}·{ffn}", n_enc * ffn_count, "§3.3"),
        Component(ENCODER_NORMS, f"{N_enc}·2·(2·d_model)", n_enc * 2 * 2 * d, "§3.1"),
        Component(DECODER_SELF_ATTENTION, f"{N_dec}·{attention}", n_dec * attention_count, "§3.2.2"),
        Component(DECODER_CROSS_ATTENTION, f"{N_dec}·{attention}", n_dec * attention_count, "§3.2.2"),
        Component(DECODER_FFN, f"{N_dec}·{ffn}", n_dec * ffn_count, "§3.3"),
        Component(DECODER_NORMS, f"{N_dec}·3·(2·d_model)", n_dec * 3 * 2 * d, "§3.1"),
    ]
    if config.norm_first:
        components.append(Component(FINAL_NORMS, "2·(2·d_model)", 2 * 2 * d, "pre-LN, not in the paper"))
    return components


def fixed_tensors(config: ModelConfig) -> list[Component]:
    """Tensors of the model that are not parameters (not trained, not in the totals): opus-mt's logits bias."""
    if not config.final_logits_bias:
        return []
    return [Component(FINAL_LOGITS_BIAS, "V", config.vocab_size, "opus-mt (Marian); a buffer, not in the paper")]


def activation_formula(config: ModelConfig) -> tuple[str, str]:
    """The FFN's hidden layer as a formula, and the network's name."""
    if config.activation == "swish":
        return "SiLU(xW₁ + b₁)", "swish (SiLU, x·σ(x); opus-mt's choice, the paper uses ReLU)"
    return "max(0, xW₁ + b₁)", "ReLU"


def _polynomial(terms: list[tuple[int, str, int]]) -> tuple[str, int]:
    """[(coefficient, symbol, value)] -> ('12·d_model² + 2·d_ff', its value); coefficient 1 is not written."""
    text = " + ".join(symbol if c == 1 else f"{c}·{symbol}" for c, symbol, _ in terms if c)
    return text, sum(c * value for c, _, value in terms)


def _layer_terms(config: ModelConfig, attentions: int, norms: int) -> list[tuple[int, str, int]]:
    """One layer with `attentions` attention blocks, one FFN and `norms` LayerNorms, collected by monomial."""
    d, d_ff = config.d_model, config.d_ff
    return [(4 * attentions, "d_model²", d * d), (2, "d_model·d_ff", d * d_ff), (1, "d_ff", d_ff),
            (4 * attentions + 1 + 2 * norms, "d_model", d)]


def paper_total(config: ModelConfig) -> Component:
    """The total in closed form, e.g. V·d_model + N·(12·d_model² + 4·d_model·d_ff + 2·d_ff + 24·d_model).

    Its count comes from the closed form, not from `parameter_breakdown`, so the two check each other.
    """
    d, V = config.d_model, config.vocab_size
    encoder, decoder = _layer_terms(config, 1, 2), _layer_terms(config, 2, 3)
    embeddings = 1 if config.tie_embeddings else 3
    parts = [_polynomial([(embeddings, "V·d_model", V * d)])]
    if config.n_encoder_layers == config.n_decoder_layers:
        text, value = _polynomial([(a + b, s, v) for (a, s, v), (b, _, _) in zip(encoder, decoder)])
        parts.append((f"N·({text})", config.n_encoder_layers * value))
    else:
        N_enc, N_dec = _layer_symbols(config)
        for symbol, n, terms in ((N_enc, config.n_encoder_layers, encoder), (N_dec, config.n_decoder_layers, decoder)):
            text, value = _polynomial(terms)
            parts.append((f"{symbol}·({text})", n * value))
    if config.norm_first:
        parts.append(_polynomial([(4, "d_model", d)]))
    return Component("total", " + ".join(t for t, _ in parts), sum(v for _, v in parts), "§3")


def measured_breakdown(model) -> dict[str, int]:
    """`model.named_parameters()` summed into `parameter_breakdown`'s component names."""
    embedding = SHARED_EMBEDDING if model.config.tie_embeddings else SOURCE_EMBEDDING
    counts: dict[str, int] = {}
    for name, parameter in model.named_parameters():
        parts = re.sub(r"\.\d+\.", ".", name).split(".")
        group = ".".join(parts[:2]) if parts[0].endswith("_layers") else parts[0]
        component = embedding if group == "embedding" else _GROUPS.get(group)
        if component is None:
            raise ValueError(f"parameter {name!r} belongs to no component of the paper's model")
        counts[component] = counts.get(component, 0) + parameter.numel()
    return counts


def tensor_shapes(config: ModelConfig, source_len: int, target_len: int, batch: int = 1) -> list[Stage]:
    """The tensors of one forward pass for a (batch, source_len) input and (batch, target_len) target.

    Each encoder and decoder layer is listed once, with `repeat` = N: every layer has the same shapes.
    """
    for name, value in (("source_len", source_len), ("target_len", target_len), ("batch", batch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if max(source_len, target_len) > config.max_len:
        raise ValueError(f"sequences of {max(source_len, target_len)} tokens exceed max_len={config.max_len}")
    dims = dict(B=batch, S=source_len, T=target_len, h=config.n_heads, d_k=config.d_k, d_model=config.d_model,
                d_ff=config.d_ff, V=config.vocab_size)

    def stage(key: str, name: str, tensor: str, symbols: str, note: str, repeat: int = 1) -> Stage:
        names = symbols.split()
        return Stage(key, name, tensor, tuple(dims[s] for s in names), f"({', '.join(names)})", note, repeat)

    n_enc, n_dec = config.n_encoder_layers, config.n_decoder_layers
    residual = "x + Sublayer(LayerNorm(x))" if config.norm_first else "LayerNorm(x + Sublayer(x))"
    residual_note = ("pre-LN: the sublayer reads a normalised copy; the residual stream keeps d_model"
                     if config.norm_first else "residual connection, then LayerNorm (§3.1); shape in = shape out")
    final_norm = ", after the stack's final LayerNorm" if config.norm_first else ""
    target_table = "the shared embedding" if config.tie_embeddings else "the target embedding"
    ffn_formula, ffn_name = activation_formula(config)
    ffn_note = f"the same two-layer {ffn_name} network at every position (§3.3)"
    logits_bias = " + b" if config.final_logits_bias else ""
    return [
        stage("source.ids", "source token ids", "x", "B S", "one id per source piece, padded to S"),
        stage("source.embedding", "source embedding × √d_model", "Emb(x)·√d_model", "B S d_model",
              "a row of the embedding matrix per piece, scaled by √d_model (§3.4)"),
        stage("source.input", "+ positional encoding", "Emb(x)·√d_model + PE", "B S d_model",
              "sinusoids added, not concatenated, so the width stays d_model (§3.5)"),
        stage("encoder.qkv", "Q, K, V split into heads", "Q, K, V", "B h S d_k",
              "each of Q, K, V: h heads of d_k = d_model / h (§3.2.2)", n_enc),
        stage("encoder.self_attention", "self-attention weights", "softmax(QKᵀ/√d_k)", "B h S S",
              "every source position attends to every source position (§3.2.1)", n_enc),
        stage("encoder.heads", "heads concatenated", "Concat(head₁, …, headₕ)", "B S d_model",
              "h · d_k = d_model, then projected by W^O", n_enc),
        stage("encoder.ffn", "feed-forward hidden layer", ffn_formula, "B S d_ff", ffn_note, n_enc),
        stage("encoder.output", "encoder layer output", residual, "B S d_model", residual_note, n_enc),
        stage("memory", "encoder memory", "memory", "B S d_model",
              f"the last encoder layer's output{final_norm}; keys and values for every decoder layer"),
        stage("target.ids", "target token ids", "y", "B T",
              "the output shifted right: BOS, then the pieces produced so far"),
        stage("target.input", "decoder input", "Emb(y)·√d_model + PE", "B T d_model",
              f"looked up in {target_table}, scaled, positions added (§3.4, §3.5)"),
        stage("decoder.self_attention", "masked self-attention weights", "softmax(QKᵀ/√d_k + mask)", "B h T T",
              "position i attends only to positions ≤ i (§3.2.3)", n_dec),
        stage("decoder.memory_kv", "cross-attention K, V", "memory·W^K, memory·W^V", "B h S d_k",
              "each decoder layer projects the encoder memory into its own keys and values", n_dec),
        stage("decoder.cross_attention", "cross-attention weights", "softmax(QKᵀ/√d_k)", "B h T S",
              "queries from the decoder, keys and values from the encoder memory (§3.2.3)", n_dec),
        stage("decoder.ffn", "feed-forward hidden layer", ffn_formula, "B T d_ff", ffn_note, n_dec),
        stage("decoder.output", "decoder layer output", residual, "B T d_model", residual_note, n_dec),
        stage("logits", "logits", ("y·Eᵀ" if config.tie_embeddings else "y·W_out") + logits_bias, "B T V",
              ("the pre-softmax linear map shares the embedding matrix E (§3.4)" if config.tie_embeddings
               else "a separate output projection without bias")
              + ("; applied after the decoder's final LayerNorm" if config.norm_first else "")
              + ("; plus a fixed bias b of V values (opus-mt)" if config.final_logits_bias else "")),
        stage("probabilities", "next-token probabilities", "softmax(logits)", "B T V",
              "a distribution over the V pieces at each target position"),
    ]
