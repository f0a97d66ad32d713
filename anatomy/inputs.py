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
from transformer.config import ModelConfig
from transformer.head_mask import HeadMask
from transformer.kinds import CROSS, DECODER, ENCODER

MAX_CHARS = 500
MAX_BEAM = 8
MAX_NEW_TOKENS = 200
MAX_TOP_K = 10
MAX_SLOW = 2.0  # seconds per piece in slow motion
MAX_LP = 3.0
MAX_HEADS_OFF = 1000  # items of a heads-off list read (opus-mt base has 144 heads)
MAX_LAYERS = 64  # views clamp layers and heads to the model's own counts later (View.fit)
MAX_STEPS = 10_000  # decoding steps and source pieces a link may name; views clamp them to the trace's own
# Characters of a link's query string read as they are, far more than build_link writes (500 characters of text
# are at most 6k, %-encoded); Gradio fails on a whole URL over 64k (httpx.InvalidURL), so longer ones are shortened
# first (shorten_query).
MAX_QUERY = 16_384
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
    # A control character (Cc) may stand between two words; a format character (Cf: zero-width joiners, soft
    # hyphens, direction marks) sits inside a word, which a space would split.
    clean = "".join(ch if ch.isspace() or unicodedata.category(ch) != "Cc" else " " for ch in clean
                    if unicodedata.category(ch) != "Cf")
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
    heads_off: str = ""  # the heads switched off, in HeadMask's link form (checked by `heads_off`); "": none


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


def heads_off(value, config: ModelConfig) -> tuple[str, list[str]]:
    """Heads to switch off, as a link or the API give them (HeadMask's link form, `cross:1.2,encoder:1.3`) or the
    page's checkboxes (a list of its items), checked against the model: its link form, and a notice naming the items
    that were ignored (not a head of this model, or malformed)."""
    if value is None or value == "":
        return "", []
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = list(value)
    elif isinstance(value, str):
        items = value.split(",")
    else:
        return "", [f"heads_off must be a string such as 'cross:1.2,encoder:1.3', got {_show(value)}: every head "
                    "was left on."]
    mask, bad = HeadMask.ones(config), []
    for item in filter(None, (i.strip() for i in items[:MAX_HEADS_OFF])):
        try:
            for head in HeadMask.parse(item, config).heads_off():
                mask = mask.off(head.kind, head.layer, head.head)
        except ValueError as err:
            bad.append(str(err))
    notices = [f"Some heads to switch off were ignored: {'; '.join(bad[:3])}."] if bad else []
    if len(items) > MAX_HEADS_OFF:
        notices.append(f"Only the first {MAX_HEADS_OFF} heads to switch off were read.")
    return str(mask), notices


def api_int(name: str, value, hi: int, automatic: bool = False) -> tuple[int | None, str]:
    """An API argument as an integer in [1, hi], or None and the notice that says why not. Only JSON numbers
    without a fraction are read (5, 5.0; not "5", not 2.5): one rule, whatever the client's language; None
    means the default where `automatic` allows it."""
    if value is None and automatic:
        return None, ""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    none = " (or null for the default)" if automatic else ""
    if number is None:
        return None, f"{name} must be an integer from 1 to {hi}{none}, got {_show(value)}."
    if not 1 <= number <= hi:
        return None, f"{name} must be from 1 to {hi}{none}, got {_show(number)}."
    return number, ""


def api_request(text, direction, beam_size, max_new_tokens, decodings: Mapping[str, Decoding],
                skipped: Mapping[str, str] | None = None) -> tuple[Request | None, str]:
    """The /translate arguments (any JSON values) as a Request, or None and the notice that says why not.
    `decodings`: each model key's own decoding, which a null beam_size and the length penalty take; `skipped`:
    why each model that could not be loaded was skipped, by the name a caller would give it."""
    if not isinstance(text, str):
        return None, f"text must be a string, got {_show(text)}."
    clean, notices = clean_text(text)
    if not clean:
        return None, " ".join(notices + ["Nothing to translate: text is empty."])
    available = f"available: {', '.join(decodings)}."
    if not isinstance(direction, str) or direction not in decodings:
        if isinstance(direction, str) and direction in (skipped or {}):
            return None, f"The model {direction!r} was skipped, it could not be loaded: {skipped[direction]} " \
                         f"Directions {available}"
        return None, f"Unknown direction {_show(direction)}; {available}"
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
                   to_int(step, 1, MAX_STEPS, 0) or None, to_flag(plain), to_flag(hide),
                   display if display in DISPLAYS else DISPLAYS[0], to_int(query, 1, MAX_STEPS, 1))

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
    off: str = ""  # the heads to switch off as the link gives them (unchecked: `heads_off` checks them)

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
    # HeadMask's link form is made of characters a query may hold as they are: readable in the address bar
    off = f"&off={request.heads_off}" if request.heads_off else ""
    return "?" + urllib.parse.urlencode(params) + off


# A link's numbers and their ranges (max 0: automatic); a number outside is clamped, with a notice.
LINK_RANGES = {"beam": (1, MAX_BEAM), "max": (0, MAX_NEW_TOKENS), "lp": (0, MAX_LP), "layer": (1, MAX_LAYERS),
               "step": (1, MAX_STEPS), "query": (1, MAX_STEPS)}
SHORTENED = "shortened"  # the parameter shorten_query adds, so that the shortened link says so


def shorten_query(query: str) -> str | None:
    """A query string over MAX_QUERY characters made short enough, with SHORTENED set: its text cleaned and cut
    (clean_text), then the other parameters while they fit (last value wins, as in parse_link). None when the query
    is short enough as it is."""
    if len(query) <= MAX_QUERY:
        return None
    params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    short = [urllib.parse.urlencode({SHORTENED: 1, "text": clean_text(params.pop("text", ""))[0]})]
    size = len(short[0])
    for name, value in params.items():
        pair = urllib.parse.urlencode({name: value})
        if size + 1 + len(pair) <= MAX_QUERY and name != SHORTENED:
            short.append(pair)
            size += 1 + len(pair)
    return "&".join(short)


def _out_of_range(q: Mapping[str, str]) -> list[str]:
    """The notice for a link's numbers outside their ranges (an unreadable one is not a number: it just falls back
    to the default)."""
    outside = []
    for name, (lo, hi) in LINK_RANGES.items():
        number = _finite(q.get(name))
        if number is not None and not lo <= number <= hi:
            shown = q[name].strip()
            outside.append(f"{name}={shown if len(shown) <= 20 else shown[:19] + '…'} (allowed: {lo:g} to {hi:g})")
    return [f"Out of range in the link, so the nearest allowed value was used: {', '.join(outside)}."] \
        if outside else []


def parse_link(query: Mapping[str, str], keys) -> Link:
    """A link's query parameters as a Link: every missing, unknown or malformed value is the default; a number out
    of range is clamped, and the Link's notices say so (and that the link was shortened, if it was)."""
    q = {k: v for k, v in query.items() if isinstance(v, str)}
    max_new = to_int(q.get("max"), 0, MAX_NEW_TOKENS, 0)
    text, notices = clean_text(q.get("text", ""))
    if SHORTENED in q:
        notices.insert(0, f"This link was longer than {MAX_QUERY:,} characters, so it was shortened (its text "
                          f"cleaned and cut to at most {MAX_CHARS} characters).")
    notices += _out_of_range(q)
    return Link(key=q["direction"] if q.get("direction") in keys else None, text=text, notices=tuple(notices),
                beam=to_int(q.get("beam"), 1, MAX_BEAM, None), max_new=max_new or None,
                length_penalty=to_float(q.get("lp"), 0.0, MAX_LP, None),
                view=View.of(q.get("view"), q.get("layer"), q.get("head"), q.get("merge", ""), q.get("step"),
                                hide=q.get("hide", ""), display=q.get("display"), query=q.get("query")),
                presenter=to_flag(q["presenter"]) if "presenter" in q else None, off=q.get("off", ""))
