"""The head statistics tab: small multiples for one attention kind, the table of every head, what each statistic
means (transformer.analysis defines them)."""
from __future__ import annotations

import plotly.graph_objects as go

import viz
from transformer import Trace
from transformer.analysis import DEFINITIONS, trace_head_statistics
from transformer.kinds import KINDS, by_name

from .views import name


def summary(trace: Trace, kind: str) -> go.Figure:
    return viz.head_multiples(trace_head_statistics(trace), kind, by_name(kind).label,
                              title=f"{name(kind)}: what each head does (every statistic per layer × head)")


def head_table(trace: Trace) -> tuple[list[str], list[list]]:
    return viz.head_table(trace_head_statistics(trace), {kind.name: kind.label for kind in KINDS})


def table_kind(label) -> str | None:
    """The name of the kind that head_table's rows call `label`; None for any other value."""
    return next((kind.name for kind in KINDS if kind.label == label), None)


def stats_help() -> str:
    return "**What the statistics mean** (each a mean over the head's query rows)\n\n" + "\n".join(
        f"- **{viz.STAT_LABELS[stat]}**: {viz.escape(text)}" for stat, text in DEFINITIONS.items())
