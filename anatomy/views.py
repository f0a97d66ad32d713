"""What every view of a trace shares: its parts (steps, a prefix, one attention kind as arrays), the kinds' names,
the output as chips and text, the page's choices and the notices of a run. Steps count from 1.

The views themselves, one module per family: attention_views (the explorer, its step panels and export names),
head_views (head statistics), architecture_views, training_views.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import viz
from transformer import TopK, Trace
from transformer.analysis import HIDDEN_PIECES
from transformer.head_mask import HeadMask
from transformer.kinds import by_name
from transformer.pieces import SILENT, SPACE_MARK, UNKNOWN, detokenize, word_groups

from .inputs import MEAN_HEAD, PAGE_KINDS, View
from .registry import LANGUAGE_NAMES, ModelEntry

CONFIDENCE = {"p ≥ 0.8": "#bfdbfe", "0.4 ≤ p < 0.8": "#fde68a", "p < 0.4": "#fecaca"}
PIECE = "piece"
EMPTY = "∅ (empty)"  # an empty translation, e.g. a beam candidate that is EOS at once


def name(kind: str) -> str:
    """The kind's label as a sentence or title starts it: "Cross-attention"."""
    text = by_name(kind).label
    return text[0].upper() + text[1:]


# ---- a trace and its parts ----

def off_in(heads_off: str, kind: str) -> set[tuple[int, int]]:
    """The (layer, head) pairs, from 1, of `kind` that a trace's (checked) `heads_off` switches off."""
    return {(ref.layer, ref.head) for ref in HeadMask.refs(heads_off) if ref.kind == kind}


def steps(trace: Trace) -> int:
    return len(trace.output_tokens)


def shape(trace: Trace, kind: str) -> tuple[int, int, int]:
    """The layers of `kind` (an encoder and a decoder may differ in depth), heads, decoding steps."""
    L, H = getattr(trace, by_name(kind).trace_field).shape[:2]
    return L, H, steps(trace)


def fitted(view: View, trace: Trace) -> View:
    """The view clamped to the trace: its kind's layers, its heads and steps."""
    return view.fit(*shape(trace, view.kind))


def prefix(trace: Trace, n: int) -> Trace:
    """The trace as it stood after its first n decoding steps (a slow-motion frame)."""
    n = max(0, min(n, steps(trace)))
    return dataclasses.replace(trace, target_tokens=trace.target_tokens[:n], output_tokens=trace.output_tokens[:n],
                               output_ids=trace.output_ids[:n], top_k=trace.top_k[:n], log_probs=trace.log_probs[:n],
                               decoder_self_attn=trace.decoder_self_attn[:, :, :n, :n],
                               cross_attn=trace.cross_attn[:, :, :n],
                               text=detokenize(trace.output_tokens[:n]))


def stopped(trace: Trace, n: int) -> Trace:
    """What Stop keeps of a slow-motion replay at step n: its first n steps, marked stopped (as a stopped stream
    is)."""
    kept = prefix(trace, n)
    return dataclasses.replace(kept, settings=dataclasses.replace(kept.settings, stopped=True))


def made_on(trace: Trace) -> str:
    """Where a trace was made: the device, and how its linear layers read their weights when not fp32."""
    s = trace.settings
    return s.device + ("" if s.precision == "fp32" else f", {s.precision} weights")


def language(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def a_language(code: str) -> str:
    """The language with its article, as a sentence reads it: "an English", "a German", "a Ukrainian"."""
    name = language(code)
    # a vowel sound takes "an"; a "U" said "you" (Ukrainian, Uyghur) does not
    vowel = name[:1].lower() in "aeiou" and not name.lower().startswith(("uk", "uni", "uy"))
    return f"{'an' if vowel else 'a'} {name}"


@dataclass(frozen=True)
class Arrays:
    """One attention kind of a trace, as the figures take it."""

    weights: np.ndarray  # (L, h, queries, keys)
    queries: list  # pieces, or (read, produced) pairs for decoder positions
    keys: list[str]
    causal: bool
    query_groups: list[list[int]]  # for merging pieces into words
    key_groups: list[list[int]]
    hidden: np.ndarray | None  # (queries, keys): cells a mask hides; None when none is
    rows: list[int]  # the trace's row of each query shown (hiding special tokens drops some)
    cols: list[int]  # the trace's column of each key shown


def arrays(trace: Trace, kind: str, hide: bool = False) -> Arrays:
    """One attention kind of a trace, with the word groups that merging reads (Trace.attention maps the kind).

    With `hide`, the start, end and pad pieces leave the keys, and the query rows that read (encoder) or produce
    (decoder positions) one of them leave the rows; each row is renormalised over the keys left. A row that sees
    none of them (decoder row 1 sees only <s>) stays, all hidden."""
    maps = trace.attention(kind)
    Tq, Tk = len(maps.queries), len(maps.keys)
    hidden = viz.causal_mask(Tq, Tk) if maps.causal else None
    rows, cols, w = list(range(Tq)), list(range(Tk)), maps.weights
    if hide:
        rows, cols = _ordinary(maps.query_pieces), _ordinary(maps.keys)
        w = w[:, :, rows][:, :, :, cols]  # (L, h, rows, cols)
        if hidden is not None:
            hidden = hidden[np.ix_(rows, cols)]
            w = np.where(hidden, 0.0, w)
        w = _renormalised(w)
    pieces = [maps.query_pieces[i] for i in rows]
    keys = [maps.keys[j] for j in cols]
    return Arrays(w, [maps.queries[i] for i in rows], keys, maps.causal, word_groups(pieces),
                  word_groups(keys), hidden, rows, cols)


def without_special(row: np.ndarray, keys: list[str]) -> tuple[np.ndarray, list[str]]:
    """One attention row without the special keys, renormalised over the keys left (all zero when none is)."""
    kept = _ordinary(keys)
    return _renormalised(row[kept]), [keys[j] for j in kept]


def _ordinary(pieces: list[str]) -> list[int]:
    """The positions of the pieces that are not start, end or pad."""
    return [i for i, piece in enumerate(pieces) if piece not in HIDDEN_PIECES]


def _renormalised(w: np.ndarray) -> np.ndarray:
    """Each row (last axis) rescaled to sum to 1; a row with nothing left stays all zero."""
    total = w.sum(-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0).astype(np.float32)


# ---- chips, tables, choices, notices ----

def _prob(top_k: list[TopK], token: str) -> float | None:
    return next((c.prob for c in top_k if c.token == token), None)


def confidence(p: float | None) -> str:
    if p is None or p < 0.4:
        return "p < 0.4"
    return "p ≥ 0.8" if p >= 0.8 else "0.4 ≤ p < 0.8"


def output_chips(produced: list[str], top_k: list[list[TopK]]) -> list[tuple[str, str]]:
    return [(tok, confidence(_prob(top_k[i] if i < len(top_k) else [], tok))) for i, tok in enumerate(produced)]


def source_chips(pieces: list[str]) -> list[tuple[str, str]]:
    return [(p, PIECE) for p in pieces]


def candidate_rows(trace: Trace) -> list[list]:
    """The beam candidates as table rows: #, text (EMPTY for none), score, log p, pieces with EOS."""
    return [[i + 1, c.text or EMPTY, round(c.score, 3), round(c.log_prob, 3), len(c.tokens) + 1]
            for i, c in enumerate(trace.candidates)]


def kind_choices() -> list[tuple[str, str]]:
    return [(name(kind.name), kind.name) for kind in PAGE_KINDS]


def head_choices(n_heads: int) -> list[tuple[str, str]]:
    return [("mean of heads", MEAN_HEAD)] + [(str(h + 1), str(h + 1)) for h in range(n_heads)]


def grid_pick_choices(n_layers: int, n_heads: int) -> list[tuple[str, str]]:
    return [(f"layer {li + 1} · head {h + 1}", f"{li + 1}:{h + 1}") for li in range(n_layers) for h in range(n_heads)]


def unreadable(source_tokens: list[str]) -> tuple[int, int]:
    """(unknown, read): the source pieces the model does not know (<unk>), of those that carry text (not the start,
    end or pad piece, nor a bare ▁ before a word the model does not know)."""
    read = [p for p in source_tokens if p not in SILENT and p != SPACE_MARK]
    return read.count(UNKNOWN), len(read)


def run_notices(entry: ModelEntry, trace: Trace | None, extra: list[str]) -> list[str]:
    """What a visitor should know about a run, as plain text (the page escapes it); first, when the model could
    not read the text (at least half of its pieces unknown), that the output is no translation of it."""
    out = ["This model is untrained (random weights): its output is noise."] if entry.untrained else []
    later = []
    if trace is not None:
        unknown, read = unreadable(trace.source_tokens)
        data = f": {entry.training_data}" if entry.training_data else ""
        vocabulary = (f"its vocabulary holds only what its {language(entry.source_lang)} and "
                      f"{language(entry.target_lang)} training text contains{data}.")
        if unknown and 2 * unknown >= read:
            out.append(f"The model could not read this text, so the output is no translation of it: {unknown} of the "
                       f"{read} piece(s) of the text are unknown to this model (read as <unk>): {vocabulary}")
        elif unknown:
            later.append(f"{unknown} piece(s) of the text are unknown to this model (read as <unk>): {vocabulary}")
    out += extra
    if trace is not None:
        out += list(trace.notices) + later
        if trace.cut_by_limit and not trace.settings.stopped:
            out.append("Decoding stopped at the length limit (max new tokens) before the end of the sentence.")
    return out
