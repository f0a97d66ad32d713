"""What visitors send, made safe: text cleaning, the translation settings, the view, links and API arguments.

Every value from the page, a link or the API goes through here; anything malformed becomes a default (page), a
default or the nearest allowed value named in a notice (link), or a notice (API), never an exception.
"""
from __future__ import annotations

import difflib
import json
import math
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from transformer.config import ModelConfig
from transformer.decoding import Decoding
from transformer.head_mask import HeadMask
from transformer.kinds import CROSS, DECODER, ENCODER, by_name

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
    """A visitor's text as the model gets it, from the page and the API alike: unpaired surrogates, terminal escapes
    and control characters removed, whitespace (newlines too) collapsed, cut to MAX_CHARS; a notice for each change.
    Empty when nothing is left (the caller refuses it)."""
    text = text if isinstance(text, str) else ""
    notices = []
    # JSON may send half of a surrogate pair ("\ud800"), which no UTF-8 holds: the tokenizer's C++ binding refuses
    # the whole text. A pair that came as two code points is the character it encodes; a lone half is removed.
    paired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    whole = "".join(ch for ch in paired if unicodedata.category(ch) != "Cs")
    if whole != paired:
        notices.append(f"Unpaired surrogates (halves of a character, which are not text) were removed from {what}.")
    text = whole
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
    decoding: Decoding = Decoding()  # checked: numbers within the page's ranges, heads_off against the model
    device: str = "auto"
    notices: tuple[str, ...] = ()  # what clean_text changed
    compare: str = ""  # a second sentence translated beside it (Compare with…), cleaned; "" for none

    def decoded(self, **changes) -> Request:
        """This request with some of its decoding's fields changed."""
        return replace(self, decoding=replace(self.decoding, **changes))


def page_request(key: str, text, beam, max_new, device, top_k, length_penalty, slow,
                 compare="") -> tuple[Request, list[str]]:
    """The page's controls as a Request (bad numbers become defaults), and the notices of the text cleaning.
    The caller refuses an empty text and an unknown key, and checks the heads to switch off against the model."""
    clean, notices = clean_text(text)
    second, second_notices = clean_text(compare or "", "the sentence to compare with")
    notices += second_notices
    decoding = Decoding(beam_size=to_int(beam, 1, MAX_BEAM, 1),
                        length_penalty=to_float(length_penalty, 0.0, MAX_LP, 1.0),
                        max_new_tokens=to_int(max_new, 0, MAX_NEW_TOKENS, 0) or None,
                        top_k=to_int(top_k, 1, MAX_TOP_K, 5), slow=to_float(slow, 0.0, MAX_SLOW, 0.0))
    return Request(key, clean, decoding, device if device in ("auto", "cpu", "cuda") else "auto",
                   tuple(notices), second), notices


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


def api_prefix(value, ids_of: Callable[[Sequence], tuple[int, ...]]) -> tuple[tuple[int, ...] | None, str]:
    """The API's forced prefix (null, or a list of pieces or ids) as ids by `ids_of` (Translator.prefix_ids, which
    knows the model's vocabulary), or None and the notice that says why not."""
    if value is None:
        return (), ""
    if not isinstance(value, list):
        return None, f"prefix must be a list of pieces (strings) or ids (integers), or null, got {_show(value)}."
    try:
        return ids_of(value), ""
    except ValueError as err:
        return None, f"prefix: {err}."


def link_prefix(pieces: Sequence[str], ids_of: Callable[[Sequence], tuple[int, ...]]) -> tuple[tuple[int, ...],
                                                                                               list[str]]:
    """A link's forced pieces (Link.prefix) as ids by `ids_of` (Translator.prefix_ids); when it refuses one, none
    and the notice that names it: the link then opens the model's own translation."""
    try:
        return ids_of(pieces), []
    except ValueError as err:
        return (), [f"The link's forced pieces were not used, so its translation is the model's own: {err}."]


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
    return Request(direction, clean, replace(own, beam_size=beam or own.beam_size, max_new_tokens=limit),
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
    # the model's own (Checkpoint.decoding) but for what the link sets: beam, max, lp, off (checked against the model)
    decoding: Decoding = Decoding()
    view: View = field(default_factory=View)  # fitted to the model's layers (of its kind) and heads
    presenter: bool | None = None  # None: leave the page's setting
    notices: tuple[str, ...] = ()  # what parse_link cleaned, changed, dropped or did not know, in words
    # (name, value) of the numbers whose range only the translation tells: its steps, its source pieces
    later: tuple[tuple[str, str], ...] = ()
    tour: int | None = None  # the tour's stop to open once translated (from 1); None: no tour
    # a branch's forced pieces, as the link names them; their ids (link_prefix) need the model's vocabulary
    prefix: tuple[str, ...] = ()
    compare: str = ""  # a second sentence to translate beside the text (Compare with…), cleaned
    names_view: bool = False  # whether the link names any part of the view (VIEW_PARAMS), or leaves it to the page

    def translated_notices(self, steps: int, pieces: int) -> list[str]:
        """The notice for a step or walk query outside its translation's steps or source pieces (known only once
        translated); empty when they are in range."""
        ranges = {"step": (steps, "its output pieces"), "query": (pieces, "its source pieces")}
        read = _Reader(dict(self.later))
        for name, (hi, what) in ranges.items():
            read.number(name, 1, max(hi, 1), f"1 to {max(hi, 1)}, {what}")
        return [f"Out of range for this translation, so the nearest allowed value was used: "
                f"{', '.join(read.outside)}."] if read.outside else []


def build_link(request: Request, view: View, prefix: Sequence[str] = ()) -> str:
    """The query string of a link that restores this translation and view; `prefix`: the request's forced pieces
    (a branch's, as its trace's settings name them), written as a JSON list, whatever they hold."""
    d = request.decoding
    if len(prefix) != len(d.prefix):
        raise ValueError(f"the request forces {len(d.prefix)} pieces; the link was given {len(prefix)}")
    params = {"direction": request.key, "text": request.text, "beam": d.beam_size, "max": d.max_new_tokens or 0,
              "lp": d.length_penalty, "view": view.kind, "layer": view.layer, "head": view.head,
              "merge": int(view.merge)}
    if view.step is not None:
        params["step"] = view.step
    if view.hide:
        params["hide"] = 1
    if view.display != DISPLAYS[0]:
        params["display"] = view.display
    if view.display != DISPLAYS[0] or request.compare:  # a pair frames the query's source row
        params["query"] = view.query
    if prefix:
        params["prefix"] = json.dumps(list(prefix), ensure_ascii=False, separators=(",", ":"))
    if request.compare:
        params["compare"] = request.compare
    # HeadMask's link form is made of characters a query may hold as they are: readable in the address bar
    off = f"&off={d.heads_off}" if d.heads_off else ""
    return "?" + urllib.parse.urlencode(params) + off


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


# What Gradio's own page reads from the address (its frontend, 6.x): every parameter starting with "__" (__theme;
# __sign on Spaces), these, and view=api, settings or api-recorder (its API and settings pages). A link leaves them
# alone.
GRADIO_PARAMS = ("deep_link", "page", "ui", "lang", "write_token")
GRADIO_VIEWS = ("api", "settings", "api-recorder")
LINK_PARAMS = ("direction", "text", "compare", "beam", "max", "lp", "view", "layer", "head", "merge", "step", "hide",
               "display", "query", "off", "prefix", "presenter", "tour", SHORTENED)
# those that name the view (a link with none of them opens at the page's own view: an example pair's, its pronoun's row)
VIEW_PARAMS = ("view", "layer", "head", "merge", "step", "hide", "display", "query")
MAX_TOUR = 20  # a link's tour stop, at most (the tour's own count clamps it further: viewer/tour.js)
# Names a visitor may guess for a link's parameter that difflib would not find: the API calls the view's kind `kind`
GUESSES = {"kind": "view", "attention": "view"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _number(text: str) -> float | None:
    """A link's number: any float spelling, ±inf too (clamped later); None for anything else and NaN."""
    try:
        number = float(text)
    except (ValueError, OverflowError):
        return None
    return None if math.isnan(number) else number


def _short(text: str) -> str:
    return text if len(text) <= 20 else text[:19] + "…"


class _Reader:
    """A link's parameters, each read against the values it allows; `outside` and `unread` say, as "name=value
    (allowed: ...)", which were changed to the nearest allowed value and which were not understood (the default
    used). An empty value counts as not given."""

    def __init__(self, q: Mapping[str, str]):
        self.q = q
        self.outside: list[str] = []
        self.unread: list[str] = []

    def given(self, name: str) -> str | None:
        return self.q.get(name, "").strip() or None

    def number(self, name: str, lo: float, hi: float, allowed: str = "", digits: int = 0) -> float | None:
        """A number clamped to [lo, hi] and rounded to `digits` (0: a whole number); None when not given or not a
        number."""
        raw = self.given(name)
        if raw is None:
            return None
        allowed = allowed or f"{lo:g} to {hi:g}"
        number = _number(raw)
        if number is None:
            self.unread.append(f"{name}={_short(raw)} (allowed: {allowed})")
            return None
        kept = round(min(max(number, lo), hi), digits)
        if kept != number:
            grid = f", in steps of {10 ** -digits:g}" if digits else ", whole numbers"
            self.outside.append(f"{name}={_short(raw)} (allowed: {allowed}{grid if lo <= number <= hi else ''})")
        return int(kept) if not digits else kept

    def choice(self, name: str, options, allowed: str = "", silent=()) -> str | None:
        """One of `options`; None when not given, not one of them, or one of `silent` (left alone)."""
        raw = self.given(name)
        if raw is None or raw in options or raw in silent:
            return raw if raw in options else None
        self.unread.append(f"{name}={_short(raw)} (allowed: {allowed or ', '.join(options)})")
        return None

    def flag(self, name: str) -> bool | None:
        raw = self.given(name)
        if raw is None or raw.lower() in (*_TRUE, *_FALSE):
            return None if raw is None else raw.lower() in _TRUE
        self.unread.append(f"{name}={_short(raw)} (allowed: 1 or 0)")
        return None


def _prefix(read: _Reader, most: int) -> tuple[str, ...]:
    """A link's forced pieces: a JSON list of at most `most` strings (the model's output positions); none, named as
    not understood, for anything else."""
    raw = read.given("prefix")
    if raw is None:
        return ()
    try:
        pieces = json.loads(raw)
    except ValueError:
        pieces = None
    if isinstance(pieces, list) and all(isinstance(p, str) for p in pieces) and len(pieces) <= most:
        return tuple(pieces)
    read.unread.append(f"prefix={_short(raw)} (allowed: a JSON list of at most {most} pieces, "
                       '["▁Der","▁Hund"])')
    return ()


def _unknown(q: Mapping[str, str]) -> list[str]:
    """The parameters that are neither a link's nor Gradio's, each with the nearest known name if there is one."""
    out = []
    for name, value in q.items():
        if name in LINK_PARAMS or name in GRADIO_PARAMS or name.startswith("__"):
            continue
        near = GUESSES.get(name.lower()) or next(iter(difflib.get_close_matches(name.lower(), LINK_PARAMS, 1)), None)
        out.append(f"{_short(name)}={_short(value)}" + (f" (did you mean {near}?)" if near else ""))
    return out


def parse_link(query: Mapping[str, str], configs: Mapping[str, ModelConfig], default: str | None = None,
               own: Mapping[str, Decoding] | None = None) -> Link:
    """A link's query parameters as a Link for the model it names (`configs`: each model's shape by key; `default`:
    the key of a link that names none, else the first; `own`: each model's own decoding, which the settings the
    link leaves out take, else Decoding's defaults). A value out of its range (the model's layers of the chosen
    kind, its heads) is clamped; a malformed one is the default; an unknown parameter is ignored: the Link's
    notices name each (and say that the link was shortened, if it was). The step and the walk query are checked
    once translated (Link.translated_notices)."""
    q = {k: v for k, v in query.items() if isinstance(k, str) and isinstance(v, str)}
    text, notices = clean_text(q.get("text", ""))
    compare, compare_notices = clean_text(q.get("compare", ""), "the sentence to compare with")
    notices += compare_notices
    if SHORTENED in q:
        notices.insert(0, f"This link was longer than {MAX_QUERY:,} characters, so it was shortened (its text "
                          f"cleaned and cut to at most {MAX_CHARS} characters).")
    read = _Reader(q)
    key = read.choice("direction", list(configs), f"the models loaded now: {', '.join(configs)}")
    chosen = key or default or next(iter(configs))
    config = configs[chosen]
    beam = read.number("beam", 1, MAX_BEAM)
    max_new = read.number("max", 0, MAX_NEW_TOKENS, f"0 to {MAX_NEW_TOKENS}, 0: automatic")
    length_penalty = read.number("lp", 0.0, MAX_LP, digits=1)
    kind = read.choice("view", [k.name for k in PAGE_KINDS], silent=GRADIO_VIEWS) or CROSS.name
    layers = config.n_layers(kind)
    layer = read.number("layer", 1, layers, f"1 to {layers}, this model's {by_name(kind).label} layers")
    head = MEAN_HEAD if read.given("head") == MEAN_HEAD else \
        read.number("head", 1, config.n_heads, f"{MEAN_HEAD} or 1 to {config.n_heads}, this model's heads")
    merge, hide, presenter = read.flag("merge"), read.flag("hide"), read.flag("presenter")
    tour = read.number("tour", 1, MAX_TOUR, f"1 to {MAX_TOUR}, a stop of the tour")
    display = read.choice("display", DISPLAYS)
    # the step and the walk query: numbers now, their range once translated (Link.translated_notices)
    later = {}
    for name, what in (("step", "output pieces"), ("query", "source pieces")):
        raw = read.given(name)
        if raw is not None and _number(raw) is None:
            read.unread.append(f"{name}={_short(raw)} (allowed: 1 to the translation's {what})")
        elif raw is not None:
            later[name] = raw
    step, walk = (int(round(min(max(_number(later[n]), 1), MAX_STEPS))) if n in later else None
                  for n in ("step", "query"))
    prefix = _prefix(read, config.max_len - 1)
    off, off_notices = heads_off(q.get("off", ""), config)
    if read.outside:
        notices.append(f"Out of range in the link, so the nearest allowed value was used: {', '.join(read.outside)}.")
    if read.unread:
        notices.append(f"Not understood in the link, so the default was used: {', '.join(read.unread)}.")
    if tour is not None and not text:
        notices.append(f"tour={_short(read.given('tour'))} was not used: a link without text opens no translation "
                       "to tour.")
    if step is not None and not text:
        notices.append(f"step={_short(read.given('step'))} was not used: a link without text opens no translation "
                       "to step through.")
    if prefix and not text:
        notices.append("prefix= was not used: a link without text opens no translation to continue.")
    unknown = _unknown(q)
    if unknown:
        notices.append(f"Not parameters of these links, so they were ignored: {', '.join(unknown)}. Links take "
                       f"{', '.join(LINK_PARAMS[:-1])}.")
    base = (own or {}).get(chosen, Decoding())
    decoding = replace(base, beam_size=beam or base.beam_size, max_new_tokens=max_new or None, heads_off=off,
                       length_penalty=base.length_penalty if length_penalty is None else length_penalty)
    return Link(key=key, text=text, notices=tuple(notices + off_notices), decoding=decoding,
                view=View(kind, layer or layers, str(head or MEAN_HEAD), bool(merge), step, False, bool(hide),
                          display or DISPLAYS[0], walk or 1),
                presenter=presenter, later=tuple(later.items()), tour=tour if text else None,
                prefix=prefix if text else (), compare=compare if text else "",
                names_view=any(read.given(name) is not None for name in VIEW_PARAMS))
