"""Figures for Transformer Anatomy: pure functions from arrays and token lists to Plotly figures.

Nothing here imports torch or gradio; every function takes NumPy arrays (or lists) and
returns a `plotly.graph_objects.Figure` with its height set. Token text is escaped
(Plotly renders a subset of HTML in labels).
"""
from .attention import causal_mask
from .common import empty_figure
from .model import parameter_icicle, training_curves
from .positional import default_dims
from .text import escape, label, labels, positioned, query_label, query_labels
from .words import merge_attention, plain_label, plain_labels

__all__ = ["causal_mask", "default_dims", "parameter_icicle", "training_curves", "empty_figure", "escape", "label",
           "labels", "positioned", "query_label", "query_labels", "merge_attention", "plain_label", "plain_labels"]

from .heads import STAT_LABELS, head_table  # noqa: E402

__all__ += ["head_table", "STAT_LABELS"]

from .architecture import architecture_diagram, parameter_markdown  # noqa: E402

__all__ += ["architecture_diagram", "parameter_markdown"]

from .pruning import PruningPanel, pruning_curve, pruning_png  # noqa: E402

__all__ += ["PruningPanel", "pruning_curve", "pruning_png"]
