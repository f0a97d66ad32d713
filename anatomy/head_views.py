"""The head statistics tab: the table of every head and what each statistic means (transformer.analysis defines
them); the viewer draws the small multiples (anatomy/viewer/figures.js `summary`)."""
from __future__ import annotations

import viz
from transformer import Trace
from transformer.analysis import DEFINITIONS, trace_head_statistics
from transformer.kinds import KINDS

from .payload import finite


def head_table(trace: Trace) -> tuple[list[str], list[list]]:
    return viz.head_table(trace_head_statistics(trace), {kind.name: kind.label for kind in KINDS})


def table_json(trace: Trace) -> dict:
    """head_table as the viewer's table takes it (anatomy/viewer/tabs.js statsTable): a non-finite value is None."""
    headers, rows = head_table(trace)
    return {"headers": headers, "rows": [[finite(v) for v in row] for row in rows]}


def table_kind(label) -> str | None:
    """The name of the kind that head_table's rows call `label`; None for any other value."""
    return next((kind.name for kind in KINDS if kind.label == label), None)


def stats_help() -> str:
    return "**What the statistics mean** (each a mean over the head's query rows)\n\n" + "\n".join(
        f"- **{viz.STAT_LABELS[stat]}**: {viz.escape(text)}" for stat, text in DEFINITIONS.items())
