"""Per-head statistics of attention weights: what each head of each layer tends to do.

For one head, w is (queries × keys) with rows summing to 1; every statistic is a mean over query rows i:

- entropy:   H(w_i) = -Σ_j w_ij log2 w_ij, in bits.
- focus:     1 - H(w_i) / log2(visible keys of i), over rows that see more than one key (the decoder's masked
             self-attention sees keys 0..i, the other kinds every key); 1 when no row does.
- same:      w_ii (self-attention only).
- previous:  w_i,i-1 over rows i ≥ 1 (self-attention only).
- next:      w_i,i+1 over rows with a key i+1 (encoder only: the decoder's mask hides it).
- first:     w_i0 (the first source piece; "<s>" in the decoder).
- eos:       Σ_j w_ij over keys that are "</s>" (None when no key is).
- special:   Σ_j w_ij over keys that are the model's start, end or pad piece (HIDDEN_PIECES).
- monotonic: Pearson correlation of i and the expected key position Σ_j j·w_ij (encoder-decoder attention
             only; 0 when either is constant).

A statistic that does not apply to a kind is None; a mean over no rows (an empty sequence) is 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .kinds import KINDS, by_name
from .translator import Trace

EOS_PIECE = "</s>"
# The pieces a view may hide as structural (start, end, pad; not <unk>, which stands for text).
HIDDEN_PIECES = frozenset({"<s>", "</s>", "<pad>"})
# A spread of expected key positions below this is rounding noise, not alignment.
_CONSTANT = 1e-4

DEFINITIONS: dict[str, str] = {
    "entropy": "How spread out the head's attention is, in bits: 0 when every query looks at a single key, "
               "log2(n) when it spreads evenly over n keys.",
    "focus": "Entropy turned into a 0-1 score: 1 when each query looks at a single key, 0 when it spreads evenly "
             "over every key it is allowed to see.",
    "same": "Share of attention a position pays to itself.",
    "previous": "Share of attention a position pays to the position just before it.",
    "next": "Share of attention a position pays to the position just after it.",
    "first": "Share of attention on the first key: the first source piece, or <s> in the decoder.",
    "eos": "Share of attention on the end-of-sentence piece </s>, which heads often use as a place to park "
           "attention they do not need.",
    "special": "Share of attention on the start, end and pad pieces (<s>, </s>, <pad>): what 'Hide special "
               "tokens' takes away before it renormalises each row.",
    "monotonic": "How well the source positions a head reads move forward together with the target positions it "
                 "writes: 1 for a left-to-right alignment, -1 for a reversed one, 0 for none.",
}


@dataclass(frozen=True)
class HeadStats:
    """The statistics of one head (see the module docstring); None where a statistic does not apply."""

    kind: str  # the AttentionKind's name (transformer.kinds)
    layer: int  # 1-based
    head: int  # 1-based
    entropy: float
    focus: float
    same: float | None
    previous: float | None
    next: float | None
    first: float
    eos: float | None
    special: float
    monotonic: float | None


def _row_entropy(w: np.ndarray) -> np.ndarray:
    """Entropy in bits of each attention row: (..., Tk) -> (...); 0·log 0 counts as 0."""
    w = np.asarray(w, dtype=np.float64)
    return -np.where(w > 0, w * np.log2(np.clip(w, 1e-12, 1.0)), 0.0).sum(-1)


def _mean_rows(x: np.ndarray) -> np.ndarray:
    """Mean over the last axis (query rows); 0 where there are none."""
    return x.mean(-1) if x.shape[-1] else np.zeros(x.shape[:-1])


def _as_heads(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {w.shape}")
    return w


def _monotonic(w: np.ndarray) -> np.ndarray:
    """(L, h, Tq, Tk) -> (L, h): correlation of query index with expected key position."""
    Tq, Tk = w.shape[-2:]
    if Tq < 2 or Tk == 0:
        return np.zeros(w.shape[:2])
    expected = (w * np.arange(Tk)).sum(-1)  # (L, h, Tq)
    queries = np.arange(Tq) - (Tq - 1) / 2
    centred = expected - expected.mean(-1, keepdims=True)
    spread = np.sqrt((centred ** 2).sum(-1) * (queries ** 2).sum())
    constant = np.ptp(expected, axis=-1) <= _CONSTANT
    return np.where(constant, 0.0, (centred * queries).sum(-1) / np.where(constant, 1.0, spread))


def head_statistics(weights, kind: str, key_tokens: Sequence[str]) -> list[HeadStats]:
    """Statistics of every head of the attention kind called `kind`: weights (L, h, Tq, Tk), key_tokens the Tk key
    pieces."""
    spec = by_name(kind)
    w = _as_heads(weights)
    L, H, Tq, Tk = w.shape
    if len(key_tokens) != Tk:
        raise ValueError(f"weights have {Tk} keys but {len(key_tokens)} key tokens were given")
    self_attention = spec.self_attention
    if self_attention and Tq != Tk:
        raise ValueError(f"{kind} self-attention must be square, got {Tq} queries × {Tk} keys")

    entropy = _row_entropy(w)  # (L, h, Tq)
    visible = np.minimum(np.arange(1, Tq + 1), Tk) if spec.causal else np.full(Tq, Tk)
    # A row with a single visible key had no choice, so it says nothing about how the head chooses.
    choice = visible > 1
    if choice.any():
        focus = _mean_rows(np.clip(1 - entropy[..., choice] / np.log2(visible[choice]), 0.0, 1.0))
    else:
        focus = np.full((L, H), 1.0 if Tq and Tk else 0.0)

    def diagonal(offset: int) -> np.ndarray:
        return _mean_rows(np.diagonal(w, offset, axis1=2, axis2=3))

    eos_keys = [j for j, t in enumerate(key_tokens) if t == EOS_PIECE]
    special_keys = [j for j, t in enumerate(key_tokens) if t in HIDDEN_PIECES]
    stats = {
        "entropy": _mean_rows(entropy),
        "focus": focus,
        "same": diagonal(0) if self_attention else None,
        "previous": diagonal(-1) if self_attention else None,  # w[i, i-1]
        "next": diagonal(1) if self_attention and not spec.causal else None,  # w[i, i+1]
        "first": _mean_rows(w[..., 0]) if Tk else np.zeros((L, H)),
        "eos": _mean_rows(w[..., eos_keys].sum(-1)) if eos_keys else None,
        "special": _mean_rows(w[..., special_keys].sum(-1)),
        "monotonic": _monotonic(w) if not self_attention else None,
    }
    return [HeadStats(kind, li + 1, h + 1, **{k: None if v is None else float(v[li, h]) for k, v in stats.items()})
            for li in range(L) for h in range(H)]


def trace_head_statistics(trace: Trace) -> list[HeadStats]:
    """Every head of a Trace: encoder self-attention, decoder self-attention, then encoder-decoder attention."""
    stats = []
    for kind in KINDS:
        maps = trace.attention(kind.name)
        stats += head_statistics(maps.weights, kind.name, maps.keys)
    return stats
