"""Token text made safe and readable for Plotly labels, hover text and annotations.

Plotly renders a subset of HTML in every text field (`<b>`, `<br>`, `<a href>` ...), so raw
token text such as the special piece `<s>` would vanish or, worse, become markup. Every
piece that reaches a figure goes through `label`.
"""
from __future__ import annotations

import html
from typing import Iterable

SPACE_MARK = "\u2581"  # SentencePiece's "a word starts here" marker
MAX_LABEL = 24


def escape(text: str) -> str:
    """Escape `&`, `<`, `>` so Plotly shows them literally (it decodes these entities)."""
    return html.escape(str(text), quote=False)


def readable(piece: str, max_chars: int = MAX_LABEL) -> str:
    """A piece as text to draw: control characters made visible, long ones cut (not escaped: for images)."""
    text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(piece))
    if not text:
        text = "\u2205"  # empty set sign: an empty piece is still a position
    if len(text) > max_chars:
        text = text[:max_chars - 1] + "\u2026"
    return text


def label(piece: str, max_chars: int = MAX_LABEL) -> str:
    """A piece as a figure label: readable, then escaped."""
    return escape(readable(piece, max_chars))


def labels(pieces: Iterable[str], max_chars: int = MAX_LABEL) -> list[str]:
    return [label(p, max_chars) for p in pieces]


def positioned(pieces: Iterable[str], max_chars: int = MAX_LABEL) -> list[str]:
    """Labels prefixed with their position counted from 1, `3 ▁dog`: unique even when a piece repeats."""
    return [f"{i} {label(p, max_chars)}" for i, p in enumerate(pieces, start=1)]


def query_label(token, max_chars: int = 14) -> str:
    """A query label: a piece, or for a decoder position the pair (what it read, what it produced)
    shown as `read ▸ produced`."""
    if isinstance(token, (tuple, list)) and len(token) == 2:
        return f"{label(token[0], max_chars)} \u25b8 {label(token[1], max_chars)}"
    return label(token)


def query_labels(tokens) -> list[str]:
    return [query_label(t) for t in tokens]
