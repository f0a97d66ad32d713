"""The decoder's causal mask, as the views and head statistics take it. The attention figures are the viewer's
(anatomy/viewer/figures.js)."""
from __future__ import annotations

import numpy as np


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """True where the decoder's mask hides key j from query i (j > i)."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)
