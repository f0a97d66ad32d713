"""What visitors send, made safe: text cleaning, the translation settings, the view, links and API arguments.

Every value from the page, a link or the API goes through here; anything malformed becomes a default (page,
link) or a notice (API), never an exception.
"""
from __future__ import annotations

import math
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Mapping

from transformer.checkpoint import Decoding
from transformer.kinds import CROSS, DECODER, ENCODER

MAX_CHARS = 500
MAX_BEAM = 8
MAX_NEW_TOKENS = 200
MAX_TOP_K = 10
MAX_SLOW = 2.0  # seconds per piece in slow motion
MAX_LP = 3.0
MAX_LAYERS = 64  # views clamp layers and heads to the model's own counts later (View.fit)
MEAN_HEAD = "mean"
PAGE_KINDS = (CROSS, ENCODER, DECODER)  # the attention kinds, in the order the page lists them
DISPLAYS = ("heatmap", "lines", "walk")  # how the large view draws one kind: a matrix, lines, one query's softmax

# ANSI/VT100 escape sequences (colours, cursor moves) and OSC sequences, removed from visitors' text.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def clean_text(text, what: str = "the text") -> tuple[str, list[str]]:
    """A visitor's text as the model gets it, from the page and the API alike: terminal escapes and control
    characters removed, whitespace (newlines too) collapsed, cut to MAX_CHARS; a notice for each change.
    Empty when nothing is left (the caller refuses it)."""
    text = text if isinstance(text, str) else ""
    notices = []
    clean = _ANSI.sub("", text)
    clean = "".join(ch if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf") else " " for ch in clean)
    if clean != text:
        notices.append(f"Control characters and terminal escape codes were removed from {what}.")
    clean = " ".join(clean.split())
    if len(clean) > MAX_CHARS:
        clean = clean[:MAX_CHARS]
        notices.append(f"{what.capitalize()} was longer than {MAX_CHARS} characters: only the first "
                       f"{MAX_CHARS} were used.")
    return clean, notices


def _finite(value) -> float | None:
    """A number or numeric string as a finite float; None for anything else (None, "", "abc", inf, nan, lists,
    booleans)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def to_int(value, lo: int, hi: int, default: int | None) -> int | None:
    """Any value as an integer in [lo, hi]: numbers and numeric strings are rounded down and clamped; anything
    else is `default`."""
    number = _finite(value)
    return default if number is None else max(lo, min(hi, int(number)))


def to_float(value, lo: float, hi: float, default: float | None, digits: int = 1) -> float | None:
    """Any value as a finite float in [lo, hi], rounded to the sliders' grid; `default` when unreadable."""
    number = _finite(value)
    return default if number is None else round(min(max(number, lo), hi), digits)


def to_flag(value) -> bool:
    """A checkbox value, or its spelling in a link ("1", "true", "0", ...)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


@dataclass(frozen=True)
class Request:
    """One translation, validated: what the model is asked, from the page, a link or the API."""

    key: str  # the model's direction key (registry)
    text: str  # cleaned (clean_text)
    beam: int = 1
    max_new: int | None = None  # None: automatic (engine.output_limit)
    device: str = "auto"
    top_k: int = 5
    length_penalty: float = 1.0
    slow: float = 0.0  # seconds per piece of a slow-motion replay; 0: none
    notices: tuple[str, ...] = ()  # what clean_text changed


def page_request(key: str, text, beam, max_new, device, top_k, length_penalty, slow) -> tuple[Request, list[str]]:
    """The page's controls as a Request (bad numbers become defaults), and the notices of the text cleaning.
    The caller refuses an empty text and an unknown key."""
    clean, notices = clean_text(text)
    limit = to_int(max_new, 0, MAX_NEW_TOKENS, 0)
    return Request(key, clean, to_int(beam, 1, MAX_BEAM, 1), limit or None,
                   device if device in ("auto", "cpu", "cuda") else "auto", to_int(top_k, 1, MAX_TOP_K, 5),
                   to_float(length_penalty, 0.0, MAX_LP, 1.0), to_float(slow, 0.0, MAX_SLOW, 0.0),
                   tuple(notices)), notices


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def api_int(name: str, value, hi: int, automatic: bool = False) -> tuple[int | None, str]:
    """An API argument as an integer in [1, hi], or None and the notice that says why not. Integers, integral
    floats and strings of an integer are read; None means the default where `automatic` allows it."""
    if value is None and automatic:
        return None, ""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,12}\s*", value):
        number = int(value)
    none = " (or null for the default)" if automatic else ""
    if number is None:
        return None, f"{name} must be an integer from 1 to {hi}{none}, got {_show(value)}."
    if not 1 <= number <= hi:
        return None, f"{name} must be from 1 to {hi}{none}, got {_show(number)}."
    return number, ""


def api_request(text, direction, beam_size, max_new_tokens, decodings: Mapping[str, Decoding]
                ) -> tuple[Request | None, str]:
    """The /translate arguments (any JSON values) as a Request, or None and the notice that says why not.
    `decodings`: each model key's own decoding, which a null beam_size and the length penalty take."""
    clean, notices = clean_text(text)
    if not clean:
        return None, " ".join(notices + ["Nothing to translate: text is empty."])
    if not isinstance(direction, str) or direction not in decodings:
        return None, f"Unknown direction {_show(direction)}; available: {', '.join(decodings)}."
    beam, problem = api_int("beam_size", beam_size, MAX_BEAM, automatic=True)
    limit, problem_max = api_int("max_new_tokens", max_new_tokens, MAX_NEW_TOKENS, automatic=True)
    if problem or problem_max:
        return None, " ".join(p for p in (problem, problem_max) if p)
    own = decodings[direction]
    return Request(direction, clean, beam or own.beam_size, limit, length_penalty=own.length_penalty,
                   notices=tuple(notices)), ""


@dataclass(frozen=True)
class View:
    """What the attention views show: kind, layer and head (or their mean), pieces or words, decoding step, special
    tokens hidden, how the large view draws it, and the encoder query of the softmax walk."""

    kind: str = CROSS.name  # an attention kind's name (transformer.kinds)
    layer: int = MAX_LAYERS  # clamped to the model's last layer: the default view shows the last layer
    head: str = MEAN_HEAD  # "mean" or "1", "2", ...
    merge: bool = False
    step: int | None = None  # decoding step t, counted from 1; None: the last one
    plain: bool = False  # piece labels without SentencePiece's ▁ marker
    hide: bool = False  # start, end and pad pieces hidden, rows renormalised over the keys left
    display: str = DISPLAYS[0]
    query: int = 1  # the source piece (from 1) whose encoder self-attention the softmax walk follows

    @classmethod
    def of(cls, kind, layer, head, merge, step=None, plain=False, hide=False, display=None, query=None) -> "View":
        """From control or link values; anything unreadable becomes the default."""
        head = str(head).strip()
        if not (head.isdigit() and 1 <= int(head) <= MAX_LAYERS):
            head = MEAN_HEAD
        kind = kind if any(kind == k.name for k in PAGE_KINDS) else CROSS.name
        return cls(kind, to_int(layer, 1, MAX_LAYERS, MAX_LAYERS), head, to_flag(merge),
                   to_int(step, 1, 10_000, 0) or None, to_flag(plain), to_flag(hide),
                   display if display in DISPLAYS else DISPLAYS[0], to_int(query, 1, 10_000, 1))

    def fit(self, layers: int, heads: int, steps: int) -> "View":
        """Clamped to a trace's layers, heads and steps (the step filled in: the last one when unset)."""
        head = self.head if self.head == MEAN_HEAD else str(min(int(self.head), heads))
        return replace(self, layer=min(self.layer, layers), head=head,
                       step=min(self.step or steps, max(steps, 1)))


@dataclass(frozen=True)
class Link:
    """What a link to the page restores: a translation and its view (build_link writes it, parse_link reads it)."""

    key: str | None = None  # None: the default direction
    text: str = ""
    beam: int | None = None  # None: the model's own (Checkpoint.decoding)
    max_new: int | None = None
    length_penalty: float | None = None  # None: the model's own
    view: View = field(default_factory=View)
    presenter: bool | None = None  # None: leave the page's setting
    notices: tuple[str, ...] = ()  # what clean_text changed in the text

    def decoded_as(self, own: Decoding) -> Link:
        """The settings the link leaves out taken from its model's own decoding."""
        return replace(self, beam=self.beam or own.beam_size,
                       length_penalty=own.length_penalty if self.length_penalty is None else self.length_penalty)


def build_link(request: Request, view: View) -> str:
    """The query string of a link that restores this translation and view."""
    params = {"direction": request.key, "text": request.text, "beam": request.beam, "max": request.max_new or 0,
              "lp": request.length_penalty, "view": view.kind, "layer": view.layer, "head": view.head,
              "merge": int(view.merge)}
    if view.step is not None:
        params["step"] = view.step
    if view.hide:
        params["hide"] = 1
    if view.display != DISPLAYS[0]:
        params["display"] = view.display
        params["query"] = view.query
    return "?" + urllib.parse.urlencode(params)


def parse_link(query: Mapping[str, str], keys) -> Link:
    """A link's query parameters as a Link: every missing, unknown or malformed value is the default."""
    q = {k: v for k, v in query.items() if isinstance(v, str)}
    max_new = to_int(q.get("max"), 0, MAX_NEW_TOKENS, 0)
    text, notices = clean_text(q.get("text", ""))
    return Link(key=q["direction"] if q.get("direction") in keys else None, text=text, notices=tuple(notices),
                beam=to_int(q.get("beam"), 1, MAX_BEAM, None), max_new=max_new or None,
                length_penalty=to_float(q.get("lp"), 0.0, MAX_LP, None),
                view=View.of(q.get("view"), q.get("layer"), q.get("head"), q.get("merge", ""), q.get("step"),
                                hide=q.get("hide", ""), display=q.get("display"), query=q.get("query")),
                presenter=to_flag(q["presenter"]) if "presenter" in q else None)
