"""Pieces as text: the one detokenisation of SentencePiece pieces (ours and opus-mt's alike), for the final text,
the streamed text, the ablation comparison and the word labels.

It writes what SentencePiece's decode writes: `▁` as a space, dropped at the very start; the start, end and pad
pieces as nothing; an unknown piece as ` ⁇ `. Piece by piece, so that a stream appends each piece's text as it
comes (`piece_text`) and ends with exactly the final text.
"""
from __future__ import annotations

from typing import Iterable, Sequence

SPACE_MARK = "\u2581"  # SentencePiece's "a word starts here"
SILENT = frozenset({"<s>", "</s>", "<pad>"})  # pieces that write nothing
UNKNOWN = "<unk>"
UNKNOWN_TEXT = " \u2047 "  # SentencePiece's rendering of an unknown piece
SPECIAL = SILENT | {UNKNOWN}  # each a word of its own, labelled by its name


def piece_text(piece: str, started: bool) -> str:
    """The text one piece adds; `started`: some text has been written before it (until then a leading ▁ is
    dropped, as SentencePiece drops the space it puts before the first word)."""
    if piece in SILENT:
        return ""
    if piece == UNKNOWN:
        return UNKNOWN_TEXT
    if not started and piece.startswith(SPACE_MARK):
        piece = piece[len(SPACE_MARK):]
    return piece.replace(SPACE_MARK, " ")


def piece_texts(pieces: Iterable[str]) -> list[str]:
    """What each piece writes, in order: their join is the text."""
    texts, started = [], False
    for piece in pieces:
        texts.append(piece_text(piece, started))
        started = started or bool(texts[-1])
    return texts


def detokenize(pieces: Iterable[str]) -> str:
    """Pieces as text."""
    return "".join(piece_texts(pieces))


def word_label(pieces: Sequence[str]) -> str:
    """A word's pieces as one label: their text without the spaces around it; a special piece as its name."""
    if any(p in SPECIAL for p in pieces):  # e.g. a word's last piece followed by </s>: keep them apart
        return " ".join(p if p in SPECIAL else piece_text(p, True).strip() for p in pieces)
    return "".join(piece_text(p, True) for p in pieces).strip() or "".join(pieces)


def word_groups(pieces: Sequence[str]) -> list[list[int]]:
    """Positions grouped into words: a piece starting with ▁ (or a special piece) starts a new word."""
    groups: list[list[int]] = []
    prev_special = True
    for i, piece in enumerate(pieces):
        special = piece in SPECIAL
        if not groups or special or prev_special or piece.startswith(SPACE_MARK):
            groups.append([i])
        else:
            groups[-1].append(i)
        prev_special = special
    return groups
