"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

Written from torch primitives. Names follow the paper: d_model, d_ff, d_k, h heads,
W_q/W_k/W_v (stacked as W_qkv), W_o, W_1/W_2. Attention weights are returned as values,
never stored on modules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import islice

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import ModelConfig
from .half import HalfLinear, fp16_available
from .head_mask import HeadMask
from .kinds import CROSS, DECODER, ENCODER, by_name

Mask = Tensor | None  # bool, broadcastable to (B, h, T_q, T_k); True = may attend


def sinusoidal_positional_encoding(max_len: int, d_model: int, layout: str = "interleaved") -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    "split" (Marian's layout) puts the same sines in dimensions [0, d/2) and the cosines in [d/2, d):
    the paper's table with its dimensions permuted by `split_order`.
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = position / 10000.0 ** (two_i / d_model)  # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    if layout == "split":
        pe = pe[:, split_order(d_model)]
    return pe.float()


def split_order(d_model: int) -> Tensor:
    """Dimension j of the split layout is dimension split_order[j] of the interleaved one: 0, 2, 4, …, 1, 3, 5, …"""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def causal_mask(T: int, device: torch.device) -> Tensor:
    """(T, T) bool, True where query i may see key j (j <= i): the decoder's mask of eq. 1."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def lengths_mask(lengths: Tensor, T: int) -> Tensor:
    """(B,) lengths -> (B, T) bool, True at the first lengths[b] positions of row b."""
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def right_padded_lengths(ids: Tensor, pad_id: int, minimum: int = 0) -> Tensor:
    """(B, T) right-padded ids -> (B,) lengths: up to the last id that is not `pad_id`, at least `minimum`.

    Only trailing pads count, so a sequence may hold the pad id inside it (Marian's decoder starts with it).
    """
    real = ids != pad_id  # (B, T)
    T = ids.size(1)
    last = T - real.flip(1).int().argmax(1)  # (B,) one past the last real id; T when the row has none
    return torch.where(real.any(1), last, 0).clamp(min=minimum)


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Mask, *,
                                 need_weights: bool, dropout_p: float = 0.0) -> tuple[Tensor, Tensor | None]:
    """softmax(Q K^T / sqrt(d_k)) V (paper eq. 1), fused unless the weights are wanted."""
    if not need_weights:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None
    # in place on the new scores (~10 µs a call at decoding sizes); autograd needs neither of them
    scores = torch.matmul(q, k.transpose(-2, -1)).div_(math.sqrt(q.size(-1)))  # (B, h, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill_(~mask, float("-inf"))
    if scores.dtype == torch.float32:  # two no-op conversions cost ~4 µs, a tenth of a decoding step's attention
        weights = scores.softmax(dim=-1)
    else:
        weights = scores.float().softmax(dim=-1).to(v.dtype)  # fp32 softmax under autocast too
    return torch.matmul(F.dropout(weights, dropout_p) if dropout_p else weights, v), weights


@dataclass
class DecoderCache:
    """Every decoder layer's keys and values during incremental decoding.

    Self-attention keys/values live in buffers preallocated for the whole output and grow by the new
    positions of each `Transformer.decode` call; cross-attention keys/values are computed once, from the
    encoder output, when the cache is made (`Transformer.new_cache`).
    """

    self_kv: Tensor  # (L, 2, B, h, max_T, d_k): keys, then values
    cross_k: Tensor  # (L, B, h, S, d_k)
    cross_v: Tensor  # (L, B, h, S, d_k)
    length: int = 0  # target positions every layer has stored

    def update(self, layer: int, kv: Tensor) -> tuple[Tensor, Tensor]:
        """Store one layer's keys and values of the new positions, kv (2, B, h, n, d_k), in one copy; return that
        layer's keys/values so far."""
        end = self.length + kv.size(3)
        if end > self.self_kv.size(4):
            raise ValueError(f"KV cache holds {self.self_kv.size(4)} positions; asked for {end}")
        self.self_kv[layer, :, :, :, self.length:end] = kv
        k, v = self.self_kv[layer, :, :, :, :end].unbind(0)  # (B, h, end, d_k) each
        return k, v

    def advance(self, n: int) -> None:
        """Every layer has stored the n new positions: the next update writes after them."""
        self.length += n

    def cross(self, layer: int) -> tuple[Tensor, Tensor]:
        return self.cross_k[layer], self.cross_v[layer]  # (B, h, S, d_k)

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows in `index` (beam search reorders and prunes hypotheses): the positions stored so far.
        Cross-attention keys/values stay: beam search moves rows only among one sentence's beams, which share them."""
        n = self.length
        self.self_kv[..., :n, :] = self.self_kv[..., :n, :].index_select(2, index)


@dataclass
class Encoded:
    """What the encoder hands the decoder, plus its attention when asked for."""

    memory: Tensor  # (B, S, d_model)
    src_mask: Mask  # (B, 1, 1, S), None when no source position is padding
    self_attn: tuple[Tensor, ...] | None = None  # per layer (B, h, S, S)


@dataclass
class Decoded:
    """Next-token logits for each target position, plus attention when asked for."""

    logits: Tensor  # (B, T, vocab_size)
    self_attn: tuple[Tensor, ...] | None = None  # per layer (B, h, T, T_so_far)
    cross_attn: tuple[Tensor, ...] | None = None  # per layer (B, h, T, S)


@dataclass(frozen=True)
class Attention:
    """One attention sublayer of one layer at work: the per-head q, k, v it computed and what eq. 1 made of them."""

    q: Tensor  # (B, h, T_q, d_k)
    k: Tensor  # (B, h, T_k, d_k): with a cache, every position so far
    v: Tensor  # (B, h, T_k, d_k)
    mask: Mask  # as the layer was given it
    heads: Tensor  # (B, h, T_q, d_k): each head's output, before the heads are concatenated and W_o applied
    weights: Tensor | None  # (B, h, T_q, T_k), when asked for


class Linear(nn.Linear):
    """nn.Linear that can apply only some of its output rows (W_q alone, or W_k and W_v, of a stacked W_qkv), and
    whose inference reads its weight in fp16 while `fp16_weights` is set (`Transformer.set_precision`)."""

    fp16_weights = False  # not `half`: that is nn.Module's method

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(in_features, out_features)
        self._halves: dict[tuple[int, int] | None, HalfLinear] = {}  # a plain attribute: no state_dict entry

    def forward(self, x: Tensor, rows: tuple[int, int] | None = None) -> Tensor:
        # _parameters, not self.weight: nn.Module's __getattr__ costs ~2 µs a lookup, against ~15 µs for a whole
        # 256-wide layer at one row
        weight, bias = self._parameters["weight"], self._parameters["bias"]
        if self.fp16_weights and not torch.is_grad_enabled():
            half = self._halves.get(rows) or self._halves.setdefault(rows, HalfLinear(rows))
            return half(x, weight, bias)
        if rows is not None:
            weight, bias = weight[rows[0]:rows[1]], None if bias is None else bias[rows[0]:rows[1]]
        return F.linear(x, weight, bias)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W_o (paper §3.2.2)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = config.d_model, config.n_heads, config.d_k
        # Rows [0, d), [d, 2d), [2d, 3d) are W_q, W_k, W_v for all heads at once: one matmul
        # for self-attention instead of three (the layout of torch's in_proj_weight).
        self.W_qkv = Linear(config.d_model, 3 * config.d_model)
        self.W_o = Linear(config.d_model, config.d_model)
        self.dropout = config.dropout

    def _split_heads(self, x: Tensor, parts: int) -> Tensor:
        B, T, _ = x.shape
        x = x.view(B, T, parts, self.n_heads, self.d_k)  # (B, T, parts, h, d_k)
        return x.permute(2, 0, 3, 1, 4)  # (parts, B, h, T, d_k)

    def query_key_value(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """q (B, h, T, d_k) and k, v stacked, (2, B, h, T, d_k): a cache stores them in one copy."""
        qkv = self._split_heads(self.W_qkv(x), 3)
        return qkv[0], qkv[1:]

    def query(self, x: Tensor) -> Tensor:
        return self._split_heads(self.W_qkv(x, (0, self.d_model)), 1)[0]

    def key_value(self, x: Tensor) -> tuple[Tensor, Tensor]:
        k, v = self._split_heads(self.W_qkv(x, (self.d_model, 3 * self.d_model)), 2).unbind(0)
        return k, v

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Mask, need_weights: bool) -> Attention:
        """Eq. 1 for every head at once; `output` concatenates the heads and applies W_o."""
        dropout_p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights,
                                                      dropout_p=dropout_p)
        return Attention(q, k, v, mask, heads, weights)

    def output(self, attention: Attention, gates: Tensor | None = None) -> Tensor:
        """W_o over the concatenated heads, each scaled by its gate first (`HeadMask.layer_gates`) when given."""
        heads = attention.heads
        if gates is not None:
            heads = heads * gates.to(heads.dtype)
        B, h, T, d_k = heads.shape
        return self.W_o(heads.transpose(1, 2).reshape(B, T, h * d_k))  # (B, T, d_model)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (paper eq. 2); with "swish", SiLU(x W_1 + b_1) W_2 + b_2."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.W_1 = Linear(config.d_model, config.d_ff)
        self.W_2 = Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.activation = F.silu if config.activation == "swish" else F.relu

    def forward(self, x: Tensor) -> Tensor:
        h = self.activation(self.W_1(x))
        return self.W_2(self.dropout(h) if self.training else h)


class _Layer(nn.Module):
    """Residual wiring shared by both layer kinds.

    Post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))).
    Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, config: ModelConfig, n_sublayers: int):
        super().__init__()
        self.norm_first = config.norm_first
        self.norms = nn.ModuleList(nn.LayerNorm(config.d_model) for _ in range(n_sublayers))
        self._norms = tuple(self.norms)  # the same modules, unregistered: indexing a ModuleList costs ~2 µs
        self.dropout = nn.Dropout(config.dropout)

    def _norm(self, x: Tensor, i: int) -> Tensor:
        # F.layer_norm, not the module's call: ~8 µs less a call, ~70 µs a decoding step
        norm = self._norms[i]
        params = norm._parameters
        return F.layer_norm(x, norm.normalized_shape, params["weight"], params["bias"], norm.eps)

    def _in(self, x: Tensor, i: int) -> Tensor:
        return self._norm(x, i) if self.norm_first else x

    def _out(self, x: Tensor, sublayer_out: Tensor, i: int) -> Tensor:
        x = x + (self.dropout(sublayer_out) if self.training else sublayer_out)
        return x if self.norm_first else self._norm(x, i)

    def attention(self, x: Tensor, mask: Mask, need_weights: bool, cross: bool = False, memory: Tensor | None = None,
                  cache: DecoderCache | None = None, index: int = 0) -> Attention:
        """This layer's self-attention over x, the stream entering the layer, or (`cross`, decoder layers only) its
        cross-attention from x, the stream after the self-attention sublayer, to `memory`: every attention kind's
        q, k, v comes from here. With a cache, keys/values come from it (and new self-attention ones go into it,
        at slot `index`, this layer's place in the stack)."""
        if cross:
            q = self.cross_attn.query(self._in(x, 1))
            k, v = self.cross_attn.key_value(memory) if cache is None else cache.cross(index)
            return self.cross_attn.attend(q, k, v, mask, need_weights)
        q, kv = self.self_attn.query_key_value(self._in(x, 0))
        k, v = kv.unbind(0) if cache is None else cache.update(index, kv)
        return self.self_attn.attend(q, k, v, mask, need_weights)


class EncoderLayer(_Layer):
    def __init__(self, config: ModelConfig):
        super().__init__(config, n_sublayers=2)
        self.self_attn = MultiHeadAttention(config)
        self.ffn = PositionwiseFeedForward(config)

    def forward(self, x: Tensor, mask: Mask, need_weights: bool,
                gates: Tensor | None = None) -> tuple[Tensor, Attention]:
        attention = self.attention(x, mask, need_weights)
        x = self._out(x, self.self_attn.output(attention, gates), 0)
        x = self._out(x, self.ffn(self._in(x, 1)), 1)
        return x, attention


class DecoderLayer(_Layer):
    def __init__(self, config: ModelConfig):
        super().__init__(config, n_sublayers=3)
        self.self_attn = MultiHeadAttention(config)
        self.cross_attn = MultiHeadAttention(config)
        self.ffn = PositionwiseFeedForward(config)

    def forward(self, y: Tensor, memory: Tensor, self_mask: Mask, cross_mask: Mask, need_weights: bool,
                cache: DecoderCache | None = None, index: int = 0, self_gates: Tensor | None = None,
                cross_gates: Tensor | None = None) -> tuple[Tensor, Attention, Attention]:
        """`index` is this layer's place in the stack: its slot in the cache."""
        self_attention = self.attention(y, self_mask, need_weights, cache=cache, index=index)
        y = self._out(y, self.self_attn.output(self_attention, self_gates), 0)
        cross_attention = self.attention(y, cross_mask, need_weights, True, memory, cache, index)
        y = self._out(y, self.cross_attn.output(cross_attention, cross_gates), 1)
        y = self._out(y, self.ffn(self._in(y, 2)), 2)
        return y, self_attention, cross_attention


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        d, V = config.d_model, config.vocab_size
        # Tied (paper §3.4): `embedding` serves source, target and the pre-softmax projection.
        self.embedding = nn.Embedding(V, d)
        self.tgt_embedding = None if config.tie_embeddings else nn.Embedding(V, d)
        self.output_projection = None if config.tie_embeddings else nn.Linear(d, V, bias=False)
        pe = sinusoidal_positional_encoding(config.max_len, d, config.pe_layout)
        self.register_buffer("pe", pe, persistent=False)
        if config.final_logits_bias:
            self.register_buffer("final_logits_bias", torch.zeros(V))
        else:
            self.final_logits_bias = None
        self.dropout = nn.Dropout(config.dropout)
        self._logits_half = HalfLinear()  # the output projection's fp16 pack, while `fp16_weights` is set
        self.fp16_weights = False
        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        # Pre-LN leaves the residual stream unnormalised, so each stack ends with a LayerNorm.
        self.encoder_norm = nn.LayerNorm(d) if config.norm_first else None
        self.decoder_norm = nn.LayerNorm(d) if config.norm_first else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if "norm" in name:
                continue
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "embedding" in name:
                # N(0, 1/d_model): after the ×√d_model scale the embeddings have unit variance,
                # and the tied output projection starts with small logits.
                nn.init.normal_(p, std=self.config.d_model ** -0.5)
            else:
                nn.init.xavier_uniform_(p)

    def _embed(self, ids: Tensor, table: nn.Embedding, offset: int = 0) -> Tensor:
        return self._positioned(table(ids), offset)

    def _positioned(self, vectors: Tensor, offset: int = 0) -> Tensor:
        """Embedding rows (B, T, d_model) as the first layer reads them: × √d_model, plus the positional encoding."""
        T = vectors.size(1)
        if offset + T > self.config.max_len:
            raise ValueError(f"sequence of {offset + T} tokens exceeds max_len={self.config.max_len}")
        x = vectors * math.sqrt(self.config.d_model) + self.pe[offset:offset + T]
        return self.dropout(x) if self.training else x

    def logits(self, y: Tensor) -> Tensor:
        weight = self.embedding.weight if self.output_projection is None else self.output_projection.weight
        if self.fp16_weights and not torch.is_grad_enabled():
            return self._logits_half(y, weight, self.final_logits_bias)
        return F.linear(y, weight, self.final_logits_bias)

    @property
    def precision(self) -> str:
        return "fp16" if self.fp16_weights else "fp32"

    def set_precision(self, precision: str) -> None:
        """"fp16": inference (no grad) reads every linear layer's weight and the output projection's in fp16
        (transformer/half.py), where fbgemm runs; "fp32": as trained. Training is fp32 (or autocast) either way."""
        if precision not in ("fp32", "fp16"):
            raise ValueError(f"unknown precision {precision!r}; choose fp32 or fp16")
        if precision == "fp16" and not fp16_available(self.embedding.weight.device):
            raise ValueError(f"fp16 weights need fbgemm on an x86 CPU; this model is on "
                             f"{self.embedding.weight.device} with {torch.backends.quantized.supported_engines}")
        self.fp16_weights = precision == "fp16"
        for module in self.modules():
            if isinstance(module, Linear):
                module.fp16_weights = self.fp16_weights

    def encode(self, src_ids: Tensor, need_weights: bool = False, src_lengths: Tensor | None = None,
               head_mask: HeadMask | None = None) -> Encoded:
        """src_ids (B, S), right-padded; src_lengths (B,) or, when not given, up to the last non-pad id.
        `head_mask` gates the encoder's heads (its `encoder` part)."""
        S = src_ids.size(1)
        if src_lengths is None:
            src_lengths = right_padded_lengths(src_ids, self.config.pad_id)
        padded = not bool((src_lengths >= S).all())
        src_mask = lengths_mask(src_lengths, S)[:, None, None, :] if padded else None  # (B, 1, 1, S)
        x, attentions = self._encoder_stack(self._embed(src_ids, self.embedding), src_mask, need_weights,
                                            head_mask=head_mask)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return Encoded(x, src_mask, tuple(a.weights for a in attentions) if need_weights else None)

    def _encoder_stack(self, x: Tensor, mask: Mask, need_weights: bool, layers: int | None = None,
                       head_mask: HeadMask | None = None) -> tuple[Tensor, list[Attention]]:
        """The first `layers` encoder layers (all when None) over the embedded source: the stream after them, and
        each one's self-attention."""
        attentions = []
        for i, layer in enumerate(islice(self.encoder_layers, layers)):
            x, attention = layer(x, mask, need_weights, HeadMask.layer_gates(head_mask, ENCODER.name, i))
            attentions.append(attention)
        return x, attentions

    def new_cache(self, encoded: Encoded, max_len: int, beams: int = 1) -> DecoderCache:
        """An empty KV cache for up to `max_len` target positions of `beams` rows per sentence of `encoded`, which sit
        next to each other; cross K/V computed here, once per sentence (its beams share them)."""
        B = encoded.memory.size(0) * beams
        L, h, d_k = self.config.n_decoder_layers, self.config.n_heads, self.config.d_k
        memory_kv = [layer.cross_attn.key_value(encoded.memory) for layer in self.decoder_layers]
        cross_k, cross_v = (torch.stack(kv) for kv in zip(*memory_kv))  # (L, B / beams, h, S, d_k)
        if beams > 1:
            cross_k, cross_v = (t.repeat_interleave(beams, 1) for t in (cross_k, cross_v))  # (L, B, h, S, d_k)
        return DecoderCache(encoded.memory.new_empty(L, 2, B, h, max_len, d_k), cross_k, cross_v)

    def decode(self, tgt_ids: Tensor, encoded: Encoded, cache: DecoderCache | None = None,
               need_weights: bool = False, last_only: bool = False, tgt_lengths: Tensor | None = None,
               head_mask: HeadMask | None = None) -> Decoded:
        """Logits for target positions (only the last one with `last_only`).

        Without a cache, tgt_ids (B, T) is the whole right-padded prefix, tgt_lengths (B,) its lengths (when not
        given: up to the last non-pad id, at least the decoder start). With one, tgt_ids (B, n) are the next n
        positions, appended to the cache. `head_mask` gates the decoder's heads (its `decoder` and `cross` parts);
        `encoded` should come from `encode` under the same mask.
        """
        offset = 0 if cache is None else cache.length
        T = tgt_ids.size(1)
        if cache is None:
            if tgt_lengths is None:
                tgt_lengths = right_padded_lengths(tgt_ids, self.config.pad_id, minimum=1)
            causal = causal_mask(T, tgt_ids.device)  # (T, T)
            self_mask = causal & lengths_mask(tgt_lengths, T)[:, None, None, :]  # (B, 1, T, T)
        elif T == 1:
            self_mask = None  # one new query sees every cached position
        else:
            q_pos = torch.arange(offset, offset + T, device=tgt_ids.device)[:, None]
            self_mask = torch.arange(offset + T, device=tgt_ids.device)[None, :] <= q_pos  # (T, offset+T)
        y = self._embed(tgt_ids, self.tgt_embedding or self.embedding, offset)
        y, self_attn, cross_attn = self._decoder_stack(y, encoded.memory, self_mask, encoded.src_mask, need_weights,
                                                       cache, head_mask=head_mask)
        if cache is not None:
            cache.advance(T)
        if last_only:
            y = y[:, -1:]  # (B, 1, d_model)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        if need_weights:
            return Decoded(self.logits(y), tuple(a.weights for a in self_attn), tuple(a.weights for a in cross_attn))
        return Decoded(self.logits(y))

    def _decoder_stack(self, y: Tensor, memory: Tensor, self_mask: Mask, cross_mask: Mask, need_weights: bool,
                       cache: DecoderCache | None = None, layers: int | None = None,
                       head_mask: HeadMask | None = None,
                       streams: list[Tensor] | None = None) -> tuple[Tensor, list[Attention], list[Attention]]:
        """The first `layers` decoder layers (all when None) over the embedded target: the stream after them, and
        each one's self- and cross-attention; `streams`, when given, gets the stream after each layer."""
        self_attn, cross_attn = [], []
        for i, layer in enumerate(islice(self.decoder_layers, layers)):
            y, s, c = layer(y, memory, self_mask, cross_mask, need_weights, cache, i,
                            HeadMask.layer_gates(head_mask, DECODER.name, i),
                            HeadMask.layer_gates(head_mask, CROSS.name, i))
            self_attn.append(s)
            cross_attn.append(c)
            if streams is not None:
                streams.append(y)
        return y, self_attn, cross_attn

    def decoder_streams(self, src_ids: Tensor, tgt_ids: Tensor, head_mask: HeadMask | None = None) -> list[Tensor]:
        """The decoder's stream after each layer, (1, T, d_model) each, of a teacher-forced pass over one unpadded
        sentence pair (1, S), (1, T): what the logit lens reads."""
        return self.embedded_streams(self.embedding(src_ids), (self.tgt_embedding or self.embedding)(tgt_ids),
                                     head_mask)

    def embedded_streams(self, src_vectors: Tensor, tgt_vectors: Tensor,
                         head_mask: HeadMask | None = None) -> list[Tensor]:
        """`decoder_streams` of unpadded sentences given as their pieces' embedding rows, (B, S, d_model) and
        (B, T, d_model), before the ×√d_model scale and the positional encoding: what attributions differentiate."""
        streams: list[Tensor] = []
        self._teacher_forced(src_vectors, tgt_vectors, head_mask, streams)
        return streams

    def _teacher_forced(self, src_vectors: Tensor, tgt_vectors: Tensor, head_mask: HeadMask | None = None,
                        streams: list[Tensor] | None = None) -> dict[str, list[Attention]]:
        """Both stacks over unpadded sentences given as embedding rows (`embedded_streams`), without weights: every
        attention sublayer at work, by kind name; `streams`, when given, gets the decoder's stream after each layer."""
        x, encoder = self._encoder_stack(self._positioned(src_vectors), None, False, head_mask=head_mask)
        memory = x if self.encoder_norm is None else self.encoder_norm(x)
        _, decoder, cross = self._decoder_stack(self._positioned(tgt_vectors), memory,
                                                causal_mask(tgt_vectors.size(1), memory.device), None, False,
                                                head_mask=head_mask, streams=streams)
        return {ENCODER.name: encoder, DECODER.name: decoder, CROSS.name: cross}

    def lens_logits(self, stream: Tensor) -> Tensor:
        """Next-piece logits read off a decoder stream: through the final norm where the model has one (pre-LN), then
        the output projection, as `decode` reads the last layer's."""
        return self.logits(stream if self.decoder_norm is None else self.decoder_norm(stream))

    def attention_inputs(self, src_ids: Tensor, tgt_ids: Tensor, kind: str, layer: int,
                         head_mask: HeadMask | None = None) -> Attention:
        """The per-head q, k, v of the attention kind named `kind` in layer `layer` (from 0) of a
        teacher-forced pass over one unpadded sentence pair (1, S), (1, T), and what eq. 1 made of them: the
        stacks of `encode` and `decode` with weights (the pass a trace's maps come from), stopped after `layer`."""
        spec = by_name(kind)
        n_layers = len(self.encoder_layers if spec == ENCODER else self.decoder_layers)
        if not 0 <= layer < n_layers:
            raise ValueError(f"no {kind!r} attention in layer {layer} (from 0) of a {n_layers}-layer stack")
        # One unpadded sentence: no padding mask, only the decoder's causal one, (T, T).
        if spec == ENCODER:
            _, attentions = self._encoder_stack(self._embed(src_ids, self.embedding), None, True, layer + 1,
                                                head_mask)
            return attentions[layer]
        memory = self.encode(src_ids, need_weights=True, head_mask=head_mask).memory
        y = self._embed(tgt_ids, self.tgt_embedding or self.embedding)
        _, self_attn, cross_attn = self._decoder_stack(y, memory, causal_mask(tgt_ids.size(1), tgt_ids.device), None,
                                                       True, layers=layer + 1, head_mask=head_mask)
        return (self_attn if spec == DECODER else cross_attn)[layer]

    def attentions(self, src_ids: Tensor, tgt_ids: Tensor,
                   head_mask: HeadMask | None = None) -> dict[str, list[Attention]]:
        """Every attention sublayer at work in a teacher-forced pass over one unpadded sentence pair (1, S), (1, T),
        by kind name, a list of `Attention` (without weights) per layer: the q, k, v behind all the trace's maps."""
        return self._teacher_forced(self.embedding(src_ids), (self.tgt_embedding or self.embedding)(tgt_ids), head_mask)

    def output_projections(self, kind: str) -> list[Tensor]:
        """W_o of the attention kind named `kind`, per layer: (d_model, h·d_k), head h's columns h·d_k … (h+1)·d_k."""
        spec = by_name(kind)
        if spec == ENCODER:
            return [layer.self_attn.W_o.weight for layer in self.encoder_layers]
        return [(layer.self_attn if spec == DECODER else layer.cross_attn).W_o.weight for layer in self.decoder_layers]

    def forward(self, src_ids: Tensor, tgt_ids: Tensor, head_mask: HeadMask | None = None) -> Tensor:
        """Teacher-forced logits (B, T, vocab_size) for training."""
        return self.decode(tgt_ids, self.encode(src_ids, head_mask=head_mask), head_mask=head_mask).logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
