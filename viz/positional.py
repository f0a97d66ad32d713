"""The positional encoding's curves chosen by default; the viewer draws it (anatomy/viewer/figures.js
`positional`) from the paper's formula (§3.5)."""
from __future__ import annotations


def default_dims(d_model: int) -> list[int]:
    """A sin/cos pair, then slower sines: wavelengths that stay apart over a few hundred positions."""
    evens = [2 * round(f * d_model / 2) for f in (1 / 8, 1 / 4, 3 / 8, 1 / 2)]
    picks = sorted({evens[0], evens[0] + 1, *evens[1:]})
    return [d for d in picks if 0 <= d < d_model]
