"""What the page shows, as one object: the Run (a finished or stopped translation and how it was asked for)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from transformer import HeadVectors, LogitLens, Trace
from transformer.explain import Attribution, ValueNorms
from transformer.heads import SentenceImportance

from .inputs import Request, View


@dataclass(frozen=True)
class Ablation:
    """Heads switched off, against the translation with every head on (engine.ablation)."""

    original: Trace  # the same request with every head on
    log_probs: np.ndarray  # (T,) log p of each of the original's output pieces, every head on
    ablated_log_probs: np.ndarray  # (T,) the same pieces read with the heads off (teacher-forced)


@dataclass(frozen=True)
class Pair:
    """A second sentence translated beside a Run's (Compare with…), by the same model and settings."""

    text: str  # cleaned, as translated
    trace: Trace


@dataclass(frozen=True)
class Run:
    """One translation on the page. Every handler reads direction, text and settings from here, never from
    controls that may have changed since it was made."""

    request: Request
    trace: Trace
    showing: str  # how it was made: "Greedy decoding", "Beam candidate #2 (score -0.4)", ...
    notices: tuple[str, ...] = ()  # plain text; the page escapes it
    elapsed: float | None = None  # seconds of model time
    step: int | None = None  # the decoding step to open at (a link's); None: the last
    replay: bool = False  # a slow-motion replay is still to be shown
    stop_mark: int = 0  # StopSignal.asked when it was asked for: a later Stop ends its replay
    ablation: Ablation | None = None  # when request.decoding.heads_off switches heads off
    own: Run | None = None  # a branch's: the model's own translation it continues, kept for Back to the model's own
    pair: Pair | None = None  # the sentence it is compared with, side by side
    opens: View | None = None  # the view it opens at, when not the page's (an example pair's: compare.opening)


@dataclass
class StopSignal:
    """Per visitor: Stop bumps `asked`; a running stream or replay sees the change between two pieces and ends
    there, keeping what it has. (Gradio's `cancels` would kill the event mid-way instead, leaving half-updated
    outputs and error badges.)"""

    asked: int = 0


@dataclass(frozen=True)
class Twin:
    """The untrained twin's view of one trace (for the Trained vs untrained tab)."""

    of: Trace  # the trained trace it was computed for
    trace: Trace
    own: str  # what the twin writes on its own


@dataclass(frozen=True)
class Judged:
    """Head importance (engine.importance) of one trace with every head on, for the Head importance tab."""

    of: Trace  # the all-heads trace it judged: the shown one, or its ablation's original
    importance: SentenceImportance


@dataclass(frozen=True)
class Norms:
    """The value norms of one trace (engine.value_norms), for the attention views' value-norm weights; made in the
    model's slot when a view first asks for them."""

    of: Trace
    norms: ValueNorms


@dataclass(frozen=True)
class Contrast:
    """One step of a trace explained against a foil (engine.contrast): why the piece it wrote and not the foil."""

    step: int  # from 0
    foil: str  # the foil's piece
    asked: str  # what the visitor typed; "" for the step's runner-up
    attributions: Mapping[str, Attribution]  # by method (transformer.explain.METHODS)


@dataclass(frozen=True)
class Explained:
    """Why the model wrote each piece of one trace (engine.explain), for the Why this word tab; made in the model's
    slot."""

    of: Trace
    lens: LogitLens
    attributions: Mapping[str, Attribution]  # every step's, by method (transformer.explain.METHODS)
    contrast: Contrast | None = None


@dataclass(frozen=True)
class Vectors:
    """The softmax walk's q, k, v of one trace (engine.head_vectors), by (kind, layer from 1); each made in the
    model's slot. A prefix of the trace (a slow-motion frame, a stopped replay) reads them cut to its length."""

    of: Trace
    by: Mapping[tuple[str, int], HeadVectors] = field(default_factory=dict)
