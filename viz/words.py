"""Merging SentencePiece pieces into words, for readable attention axes.

Attention *to* a word is the sum of the attention to its pieces (keys), attention *from* a
word is the mean over its pieces' rows (queries), so every merged row still sums to 1. Which pieces make a word is
transformer.pieces.word_groups, and a word's text transformer.pieces.word_label (the one detokenisation; viz imports
no model code: its callers pass the groups and labels).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .text import SPACE_MARK

SPECIALS = {"<s>", "</s>", "<pad>", "<unk>"}


def plain_label(piece: str) -> str:
    """A piece without SentencePiece's ▁: a word's first piece as the bare word, a piece inside a word after a
    middle dot ("▁Schn", "ee" -> "Schn", "·ee"), so word starts stay visible; a lone ▁ as ␣; special pieces
    unchanged."""
    if piece in SPECIALS:
        return piece
    if piece.startswith(SPACE_MARK):
        return piece[len(SPACE_MARK):] or "\u2423"
    return "\u00b7" + piece


def plain_labels(tokens: list) -> list:
    """plain_label on pieces, or on both sides of (read, produced) pairs."""
    if tokens and isinstance(tokens[0], tuple):
        return [(plain_label(r), plain_label(p)) for r, p in tokens]
    return [plain_label(t) for t in tokens]


def merge_attention(weights, query_groups: Sequence[Sequence[int]], key_groups: Sequence[Sequence[int]],
                    hidden=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(..., Tq, Tk) piece attention -> (..., Wq, Wk) word attention.

    `hidden` (Tq, Tk) marks cells a mask hides; a word cell is hidden only when all of its
    piece cells are. Returns (merged weights, merged hidden or None).
    """
    w = np.asarray(weights, dtype=np.float32)
    Tq, Tk = w.shape[-2:]
    qs = [i for g in query_groups for i in g]
    ks = [i for g in key_groups for i in g]
    if sorted(qs) != list(range(Tq)) or sorted(ks) != list(range(Tk)):
        raise ValueError("groups must partition the query and key positions")
    # No groups on a side (the decoder's first row with special tokens hidden has no key): an empty axis.
    key_sum = np.stack([w[..., list(g)].sum(-1) for g in key_groups], axis=-1) if key_groups else \
        np.zeros((*w.shape[:-1], 0), dtype=np.float32)  # (..., Tq, Wk)
    # A row that sees no key (all hidden) has no attention to average into its word.
    sees = np.ones(Tq, dtype=bool) if hidden is None else ~np.asarray(hidden, dtype=bool).all(-1)
    merged = np.stack([key_sum[..., [i for i in g if sees[i]] or list(g), :].mean(-2) for g in query_groups],
                      axis=-2) if query_groups else np.zeros((*w.shape[:-2], 0, len(key_groups)))  # (..., Wq, Wk)
    merged_hidden = None
    if hidden is not None:
        h = np.asarray(hidden, dtype=bool)
        merged_hidden = np.array([[h[np.ix_(list(gq), list(gk))].all() for gk in key_groups] for gq in query_groups],
                                 dtype=bool).reshape(len(query_groups), len(key_groups))
    return merged.astype(np.float32), merged_hidden
