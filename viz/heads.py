"""Per-head statistics as a table, and their names and panels for the viewer's small multiples
(anatomy/viewer/figures.js `summary`); transformer/analysis.py defines the statistics.

A record is anything with the attributes of `transformer.analysis.HeadStats`: kind (an attention kind's name),
1-based layer and head, and one attribute per statistic, None where it does not apply. The kinds' labels come from
the caller.
"""
from __future__ import annotations

from typing import Mapping, Sequence

STAT_LABELS = {"entropy": "entropy (bits)", "focus": "focus", "same": "same position", "previous": "previous position",
               "next": "next position", "first": "first token", "eos": "EOS",
               "special": "special tokens", "monotonic": "monotonic"}
# Entropy has no panel: focus is the same quantity on a 0-1 scale that compares across sentence lengths.
PANELS = ("focus", "monotonic", "same", "previous", "next", "first", "eos")
SIGNED = {"monotonic"}  # a correlation in [-1, 1]; every other panel is a share in [0, 1]
def head_table(stats: Sequence, labels: Mapping[str, str]) -> tuple[list[str], list[list]]:
    """Headers and rows for a table of every head: attention kind, layer, head, then each statistic to 3
    decimals (None where it does not apply). `labels` names each kind, in the order the rows take (then layer,
    head); a record of any other kind is an error."""
    order = {kind: i for i, kind in enumerate(labels)}
    for s in stats:
        if s.kind not in order:
            raise ValueError(f"unknown attention kind {s.kind!r}; expected one of {', '.join(labels)}")
    headers = ["attention", "layer", "head", *STAT_LABELS.values()]
    rows = [[labels[s.kind], s.layer, s.head,
             *(None if getattr(s, stat) is None else round(float(getattr(s, stat)), 3) for stat in STAT_LABELS)]
            for s in sorted(stats, key=lambda s: (order[s.kind], s.layer, s.head))]
    return headers, rows
