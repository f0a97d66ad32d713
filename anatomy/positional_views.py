"""The positional encoding tab: the table the model adds, chosen dimensions as curves, PE·PE similarity and the rows
added to an input. Cached: they depend on the model's shape alone (pe_rows on the input's length too)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import plotly.graph_objects as go

import viz
from transformer.config import ModelConfig
from transformer.model import sinusoidal_positional_encoding


@lru_cache(maxsize=8)
def _pe(max_len: int, d_model: int, layout: str) -> np.ndarray:
    """The table the model adds, in its own layout (opus-mt's "split" puts its dimensions in another order)."""
    return sinusoidal_positional_encoding(max_len, d_model, layout).numpy()


@lru_cache(maxsize=32)
def pe_curves(config: ModelConfig, dims: tuple[int, ...]) -> go.Figure:
    good = sorted({d for d in dims if 0 <= d < config.d_model})
    order = ", all sines, then all cosines" if config.pe_layout == "split" else ""
    return viz.positional_encoding(_pe(config.max_len, config.d_model, config.pe_layout), dims=good or None,
                                   layout=config.pe_layout,
                                   title=f"Sinusoidal positional encoding (d_model = {config.d_model}, "
                                         f"{config.max_len} positions{order})")


@lru_cache(maxsize=8)
def pe_similarity(config: ModelConfig) -> go.Figure:
    return viz.positional_similarity(_pe(config.max_len, config.d_model, config.pe_layout),
                                     title="PE(p) · PE(q) / d_model")


def pe_rows(config: ModelConfig, source_tokens: list[str]) -> go.Figure:
    pe = _pe(config.max_len, config.d_model, config.pe_layout)[:max(len(source_tokens), 1)]
    return viz.positional_rows(pe, source_tokens, title="The encodings added to this input's pieces")
