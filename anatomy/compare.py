"""Two sentences side by side (docs/app.md, *Compare with…*): the words two translations share, matched in order as
a diff of the two word lists, the difference of a view over them, the pair as the payload carries it, and the view
a pair opens at.

The matching is one function here and one in the browser (anatomy/viewer/compare.js `matched`); tests hold them
equal on the same payloads, and the difference equal to the viewer's.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from transformer import Trace

from .attention_views import matrix
from .inputs import View
from .views import arrays, shape

SIDES = {"source": ("encoder", "key_words"), "output": ("cross", "query_words")}


def token_key(token) -> str:
    """What two labels are compared by: a decoder position's ("read", "written") by the word it writes."""
    return token[1] if isinstance(token, (list, tuple)) else token


def matched(a: list, b: list) -> list[tuple[int, int]]:
    """The positions (i in a, j in b) of a longest common subsequence of two label lists, in order (a diff of the
    lists); ties go to the earliest match in `a`, as compare.js breaks them."""
    a, b = [token_key(x) for x in a], [token_key(x) for x in b]
    n, m = len(a), len(b)
    after = np.zeros((n + 1, m + 1), dtype=np.int32)  # after[i, j]: the longest common subsequence of a[i:], b[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            after[i, j] = after[i + 1, j + 1] + 1 if a[i] == b[j] else max(after[i + 1, j], after[i, j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif after[i + 1, j] >= after[i, j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def counterpart(i: int, pairs: list[tuple[int, int]], n: int) -> int:
    """The second list's position for the first's `i` (n: the second's length, at least 1): its match, else as far
    past the last match before it as `i` is, never at or past the next match."""
    before, after = (-1, -1), (None, n)
    for a, b in pairs:
        if a == i:
            return b
        if a < i:
            before = (a, b)
        elif after[0] is None:
            after = (a, b)
    return max(0, min(before[1] + i - before[0], after[1] - 1, n - 1))


def side_words(payload: dict, side: str) -> list:
    """A trace payload's words of one side ("source" or "output"), every piece's, as its axes label them."""
    kind, field = SIDES[side]
    return next(k for k in payload["kinds"] if k["name"] == kind)["axes"]["all"][field]


def matching(first: dict, second: dict) -> dict:
    """The words two trace payloads share, by side: [i, j] pairs of word positions (docs/payload.md, `pair`)."""
    return {side: [list(p) for p in matched(side_words(first, side), side_words(second, side))] for side in SIDES}


def pair_field(first: dict, second: dict, text: str) -> dict:
    """The payload's `pair` (docs/payload.md): the second sentence's text and trace payload, and the matching."""
    return {"text": text, "second": second, "matching": matching(first, second)}


@dataclass(frozen=True)
class Difference:
    """A view's weights, second − first, over the words (or pieces) the two share."""

    weights: np.ndarray  # (shared queries, shared keys); NaN where a mask hides the cell in either
    queries: list  # the shared labels, as the first shows them
    keys: list
    rows: list[tuple[int, int]]  # the matched query positions (first's, second's) in the shown rows
    cols: list[tuple[int, int]]
    differ: dict  # {"queries" | "keys": (the first's unshared labels, the second's)}


def _unshared(labels: list, kept: set[int]) -> list[str]:
    return [str(token_key(x)) for i, x in enumerate(labels) if i not in kept]


def difference(first: Trace, second: Trace, view: View) -> Difference:
    """The view's weights as drawn (not renormalised again), second − first, over the labels the two share."""
    a, b = matrix(first, view), matrix(second, view)
    rows, cols = matched(a.queries, b.queries), matched(a.keys, b.keys)
    ra, rb = [r[0] for r in rows], [r[1] for r in rows]
    ca, cb = [c[0] for c in cols], [c[1] for c in cols]
    w = b.weights[np.ix_(rb, cb)] - a.weights[np.ix_(ra, ca)]
    if a.hidden is not None:
        w = np.where(a.hidden[np.ix_(ra, ca)] | b.hidden[np.ix_(rb, cb)], np.nan, w)
    differ = {"queries": (_unshared(a.queries, set(ra)), _unshared(b.queries, set(rb))),
              "keys": (_unshared(a.keys, set(ca)), _unshared(b.keys, set(cb)))}
    return Difference(w, [a.queries[i] for i in ra], [a.keys[j] for j in ca], rows, cols, differ)


def opening(first: Trace, second: Trace, word: str, other: str) -> View:
    """Where a pair opens to show one word's encoder self-attention (`word` in the first sentence, `other` in the
    second): the layer and head where that word's row, over the words the two share, differs most (L1), in words,
    with the row of `word` framed (`query`: its first source piece, from 1)."""
    base = View(kind="encoder", merge=True)
    a, b = matrix(first, base), matrix(second, base)
    row_a = [token_key(q) for q in a.queries].index(word)
    row_b = [token_key(q) for q in b.queries].index(other)
    layers, heads, _ = shape(first, "encoder")
    best = max(((layer, head) for layer in range(1, layers + 1) for head in range(1, heads + 1)),
               key=lambda lh: _row_change(first, second, replace(base, layer=lh[0], head=str(lh[1])), row_a, row_b))
    group = arrays(first, "encoder", False).query_groups[row_a]  # every piece shown: its positions are the trace's
    return replace(base, layer=best[0], head=str(best[1]), query=group[0] + 1)


def _row_change(first: Trace, second: Trace, view: View, row_a: int, row_b: int) -> float:
    a, b = matrix(first, view), matrix(second, view)
    cols = matched(a.keys, b.keys)
    return float(sum(abs(b.weights[row_b, j] - a.weights[row_a, i]) for i, j in cols))
