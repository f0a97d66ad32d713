"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

Written from torch primitives. Names follow the paper: d_model, d_ff, d_k, h heads,
W_q/W_k/W_v (stacked as W_qkv), W_o, W_1/W_2. Attention weights are returned as values,
never stored on modules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import ModelConfig

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
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, h, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.float().softmax(dim=-1).to(v.dtype)  # fp32 softmax under autocast too
    return F.dropout(weights, dropout_p) @ v, weights


@dataclass
class DecoderCache:
    """Every decoder layer's keys and values during incremental decoding.

    Self-attention keys/values live in buffers preallocated for the whole output and grow by the new
    positions of each `Transformer.decode` call; cross-attention keys/values are computed once, from the
    encoder output, when the cache is made (`Transformer.new_cache`).
    """

    self_k: Tensor  # (L, B, h, max_T, d_k)
    self_v: Tensor  # (L, B, h, max_T, d_k)
    cross_k: Tensor  # (L, B, h, S, d_k)
    cross_v: Tensor  # (L, B, h, S, d_k)
    length: int = 0  # target positions every layer has stored

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store one layer's keys/values of the new positions; return that layer's keys/values so far."""
        end = self.length + k.size(2)
        if end > self.self_k.size(3):
            raise ValueError(f"KV cache holds {self.self_k.size(3)} positions; asked for {end}")
        self.self_k[layer, :, :, self.length:end] = k
        self.self_v[layer, :, :, self.length:end] = v
        return self.self_k[layer, :, :, :end], self.self_v[layer, :, :, :end]  # (B, h, end, d_k)

    def advance(self, n: int) -> None:
        """Every layer has stored the n new positions: the next update writes after them."""
        self.length += n

    def cross(self, layer: int) -> tuple[Tensor, Tensor]:
        return self.cross_k[layer], self.cross_v[layer]  # (B, h, S, d_k)

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows in `index` (beam search reorders and prunes hypotheses)."""
        self.self_k, self.self_v, self.cross_k, self.cross_v = (
            t.index_select(1, index) for t in (self.self_k, self.self_v, self.cross_k, self.cross_v))


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


@dataclass
class AttentionInputs:
    """What one attention module of one layer was given, per head, and what eq. 1 made of it (one sentence)."""

    q: Tensor  # (1, h, T_q, d_k)
    k: Tensor  # (1, h, T_k, d_k)
    v: Tensor  # (1, h, T_k, d_k)
    mask: Mask  # (T_q, T_k) for the decoder's self-attention, else None
    weights: Tensor  # (1, h, T_q, T_k)
    heads: Tensor  # (1, h, T_q, d_k): each head's output, before the heads are concatenated and W_o applied


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W_o (paper §3.2.2)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = config.d_model, config.n_heads, config.d_k
        # Rows [0, d), [d, 2d), [2d, 3d) are W_q, W_k, W_v for all heads at once: one matmul
        # for self-attention instead of three (the layout of torch's in_proj_weight).
        self.W_qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.W_o = nn.Linear(config.d_model, config.d_model)
        self.dropout = config.dropout

    def _split_heads(self, x: Tensor, parts: int) -> tuple[Tensor, ...]:
        B, T, _ = x.shape
        x = x.view(B, T, parts, self.n_heads, self.d_k)  # (B, T, parts, h, d_k)
        return x.permute(2, 0, 3, 1, 4).unbind(0)  # parts × (B, h, T, d_k)

    def query_key_value(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return self._split_heads(self.W_qkv(x), 3)

    def query(self, x: Tensor) -> Tensor:
        d = self.d_model
        return self._split_heads(F.linear(x, self.W_qkv.weight[:d], self.W_qkv.bias[:d]), 1)[0]

    def key_value(self, x: Tensor) -> tuple[Tensor, Tensor]:
        d = self.d_model
        return self._split_heads(F.linear(x, self.W_qkv.weight[d:], self.W_qkv.bias[d:]), 2)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Mask,
               need_weights: bool) -> tuple[Tensor, Tensor | None]:
        dropout_p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights,
                                                    dropout_p=dropout_p)
        B, h, T, d_k = out.shape
        out = out.transpose(1, 2).reshape(B, T, h * d_k)  # (B, T, d_model)
        return self.W_o(out), weights


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (paper eq. 2); with "swish", SiLU(x W_1 + b_1) W_2 + b_2."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.W_1 = nn.Linear(config.d_model, config.d_ff)
        self.W_2 = nn.Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.activation = F.silu if config.activation == "swish" else F.relu

    def forward(self, x: Tensor) -> Tensor:
        return self.W_2(self.dropout(self.activation(self.W_1(x))))


class _Layer(nn.Module):
    """Residual wiring shared by both layer kinds.

    Post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))).
    Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, config: ModelConfig, n_sublayers: int):
        super().__init__()
        self.norm_first = config.norm_first
        self.norms = nn.ModuleList(nn.LayerNorm(config.d_model) for _ in range(n_sublayers))
        self.dropout = nn.Dropout(config.dropout)

    def _in(self, x: Tensor, i: int) -> Tensor:
        return self.norms[i](x) if self.norm_first else x

    def _out(self, x: Tensor, sublayer_out: Tensor, i: int) -> Tensor:
        x = x + self.dropout(sublayer_out)
        return x if self.norm_first else self.norms[i](x)


class EncoderLayer(_Layer):
    def __init__(self, config: ModelConfig):
        super().__init__(config, n_sublayers=2)
        self.self_attn = MultiHeadAttention(config)
        self.ffn = PositionwiseFeedForward(config)

    def forward(self, x: Tensor, mask: Mask, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        h = self._in(x, 0)
        out, weights = self.self_attn.attend(*self.self_attn.query_key_value(h), mask, need_weights)
        x = self._out(x, out, 0)
        x = self._out(x, self.ffn(self._in(x, 1)), 1)
        return x, weights


class DecoderLayer(_Layer):
    def __init__(self, config: ModelConfig):
        super().__init__(config, n_sublayers=3)
        self.self_attn = MultiHeadAttention(config)
        self.cross_attn = MultiHeadAttention(config)
        self.ffn = PositionwiseFeedForward(config)

    def forward(self, y: Tensor, memory: Tensor, self_mask: Mask, cross_mask: Mask, need_weights: bool,
                cache: DecoderCache | None = None, index: int = 0) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """`index` is this layer's place in the stack: its slot in the cache."""
        h = self._in(y, 0)
        q, k, v = self.self_attn.query_key_value(h)
        if cache is not None:
            k, v = cache.update(index, k, v)
        out, self_weights = self.self_attn.attend(q, k, v, self_mask, need_weights)
        y = self._out(y, out, 0)

        h = self._in(y, 1)
        memory_kv = self.cross_attn.key_value(memory) if cache is None else cache.cross(index)
        out, cross_weights = self.cross_attn.attend(self.cross_attn.query(h), *memory_kv, cross_mask, need_weights)
        y = self._out(y, out, 1)
        y = self._out(y, self.ffn(self._in(y, 2)), 2)
        return y, self_weights, cross_weights

    def attention_qkv(self, y: Tensor, memory: Tensor, self_mask: Mask, cross: bool) -> tuple[Tensor, Tensor, Tensor]:
        """The q, k, v this layer's self-attention (or cross-attention) computes from its input y, as `forward`."""
        h = self._in(y, 0)
        q, k, v = self.self_attn.query_key_value(h)
        if not cross:
            return q, k, v
        y = self._out(y, self.self_attn.attend(q, k, v, self_mask, False)[0], 0)
        return (self.cross_attn.query(self._in(y, 1)), *self.cross_attn.key_value(memory))


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
        T = ids.size(1)
        if offset + T > self.config.max_len:
            raise ValueError(f"sequence of {offset + T} tokens exceeds max_len={self.config.max_len}")
        return self.dropout(table(ids) * math.sqrt(self.config.d_model) + self.pe[offset:offset + T])

    def logits(self, y: Tensor) -> Tensor:
        if self.output_projection is None:
            return F.linear(y, self.embedding.weight, self.final_logits_bias)
        return F.linear(y, self.output_projection.weight, self.final_logits_bias)

    def encode(self, src_ids: Tensor, need_weights: bool = False, src_lengths: Tensor | None = None) -> Encoded:
        """src_ids (B, S), right-padded; src_lengths (B,) or, when not given, up to the last non-pad id."""
        S = src_ids.size(1)
        if src_lengths is None:
            src_lengths = right_padded_lengths(src_ids, self.config.pad_id)
        padded = not bool((src_lengths >= S).all())
        src_mask = lengths_mask(src_lengths, S)[:, None, None, :] if padded else None  # (B, 1, 1, S)
        x = self._embed(src_ids, self.embedding)
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, src_mask, need_weights)
            weights.append(w)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return Encoded(x, src_mask, tuple(weights) if need_weights else None)

    def new_cache(self, encoded: Encoded, max_len: int) -> DecoderCache:
        """An empty KV cache for up to `max_len` target positions; cross K/V computed here, once."""
        B = encoded.memory.size(0)
        L, h, d_k = self.config.n_decoder_layers, self.config.n_heads, self.config.d_k
        memory_kv = [layer.cross_attn.key_value(encoded.memory) for layer in self.decoder_layers]
        cross_k, cross_v = (torch.stack(kv) for kv in zip(*memory_kv))  # (L, B, h, S, d_k)
        buf = encoded.memory.new_empty(2, L, B, h, max_len, d_k)
        return DecoderCache(buf[0], buf[1], cross_k, cross_v)

    def decode(self, tgt_ids: Tensor, encoded: Encoded, cache: DecoderCache | None = None,
               need_weights: bool = False, last_only: bool = False, tgt_lengths: Tensor | None = None) -> Decoded:
        """Logits for target positions (only the last one with `last_only`).

        Without a cache, tgt_ids (B, T) is the whole right-padded prefix, tgt_lengths (B,) its lengths (when not
        given: up to the last non-pad id, at least the decoder start). With one, tgt_ids (B, n) are the next n
        positions, appended to the cache.
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
        self_weights, cross_weights = [], []
        for i, layer in enumerate(self.decoder_layers):
            y, sw, cw = layer(y, encoded.memory, self_mask, encoded.src_mask, need_weights, cache, i)
            self_weights.append(sw)
            cross_weights.append(cw)
        if cache is not None:
            cache.advance(T)
        if last_only:
            y = y[:, -1:]  # (B, 1, d_model)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        if need_weights:
            return Decoded(self.logits(y), tuple(self_weights), tuple(cross_weights))
        return Decoded(self.logits(y))

    def attention_inputs(self, src_ids: Tensor, tgt_ids: Tensor, kind: str, layer: int) -> AttentionInputs:
        """The per-head q, k, v of attention `kind` ("encoder", "decoder", "cross") in layer `layer` (from 0) of a
        teacher-forced pass over one unpadded sentence pair (1, S), (1, T), each computed by the model's own
        modules, and eq. 1 applied to them by the same function the model uses."""
        n_layers = len(self.encoder_layers if kind == "encoder" else self.decoder_layers)
        if kind not in ("encoder", "decoder", "cross") or not 0 <= layer < n_layers:
            raise ValueError(f"no {kind!r} attention in layer {layer} (from 0) of a {n_layers}-layer stack")
        mask = None  # one unpadded sentence: every key is visible, except where the decoder's causal mask hides
        if kind == "encoder":
            x = self._embed(src_ids, self.embedding)
            for enc in self.encoder_layers[:layer]:
                x, _ = enc(x, None, False)
            q, k, v = self.encoder_layers[layer].self_attn.query_key_value(self.encoder_layers[layer]._in(x, 0))
        else:
            memory = self.encode(src_ids).memory
            T = tgt_ids.size(1)
            causal = causal_mask(T, tgt_ids.device)  # (T, T)
            y = self._embed(tgt_ids, self.tgt_embedding or self.embedding)
            for dec in self.decoder_layers[:layer]:
                y, _, _ = dec(y, memory, causal, None, False)
            q, k, v = self.decoder_layers[layer].attention_qkv(y, memory, causal, cross=kind == "cross")
            mask = causal if kind == "decoder" else None
        heads, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
        return AttentionInputs(q, k, v, mask, weights, heads)

    def forward(self, src_ids: Tensor, tgt_ids: Tensor) -> Tensor:
        """Teacher-forced logits (B, T, vocab_size) for training."""
        return self.decode(tgt_ids, self.encode(src_ids)).logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
