"""A translation as one versioned JSON value, the trace payload (schema `anatomy.trace/1.1`, docs/payload.md): what a
viewer in the browser (anatomy/viewer/) needs to draw every attention view of a Trace with no server.

Everything that turns pieces into words happens here, through transformer.pieces and anatomy.views, so the browser
never splits or joins pieces: each kind carries its axes twice, as shown and with the special tokens hidden, with
their word groups and word labels. Attention travels as uint8, round(w × SCALE), base64: each weight within
0.5 / SCALE (≈ 0.002) of the trace's.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import math

import numpy as np

import viz
from transformer import LogitLens, Trace
from transformer.analysis import trace_head_statistics
from transformer.explain import METHODS, Attribution
from transformer.kinds import KINDS, AttentionKind
from transformer.pieces import piece_texts

from . import compare, views
from .attention_views import KEY_TITLES, QUERY_TITLES, STEP_COLORS, merge_labels, stepped, word_labels
from .registry import ModelEntry, shown_name
from .run import Explained, Norms, Pair
from .tour import Tour

SCHEMA = "anatomy.trace/1.1"  # 1.1 added log_probs, log_prob, own and a branch's settings
SCALE = 255  # a weight w travels as round(w × SCALE): a uint8
ATTRIBUTION_DECIMALS = 4  # attributions are parts of a log-probability: 1e-4 is far below what a figure shows


def quantised(weights: np.ndarray) -> np.ndarray:
    """Attention weights as uint8: round(w × SCALE), w clipped to [0, 1]."""
    return np.rint(np.clip(np.asarray(weights, dtype=np.float32), 0.0, 1.0) * SCALE).astype(np.uint8)


def packed(weights: np.ndarray) -> dict:
    """(L, h, Tq, Tk) weights as the payload carries them: shape, scale and the uint8 bytes (C order) in base64."""
    data = np.ascontiguousarray(quantised(weights)).tobytes()
    return {"shape": list(weights.shape), "scale": SCALE, "weights": base64.b64encode(data).decode("ascii")}


def checkpoint_id(trace: Trace, entry: ModelEntry) -> str:
    """The checkpoint as the app names it: its folder's name (of a trace read from an older file too, which named
    its path), or its hf:// id."""
    source = trace.checkpoint or entry.source
    return shown_name(source) if source else "none (untrained: random init)"


def settings(trace: Trace) -> dict:
    """Every field of the trace's DecodingSettings, defaults included."""
    return {f.name: getattr(trace.settings, f.name) for f in dataclasses.fields(trace.settings)}


def top_k(trace: Trace) -> list[list[list]]:
    """Per decoding step, the k most likely next pieces as [piece, probability rounded to 4 places]."""
    return [[[c.token, round(float(c.prob), 4)] for c in row] for row in trace.top_k]


def finite(value):
    """A statistic as JSON takes it: None for a missing or non-finite number."""
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def _tokens(tokens: list) -> list:
    """Pieces or words as JSON takes them: (read, produced) pairs as lists."""
    return [list(t) if isinstance(t, tuple) else t for t in tokens]


def _axes(trace: Trace, kind: AttentionKind, hide: bool) -> dict:
    """One kind's rows and columns as views.arrays shows them (with `hide`, without the special tokens), with the
    word groups that merging reads and the words' labels."""
    a = views.arrays(trace, kind.name, hide)
    axes = {"rows": a.rows, "cols": a.cols, "queries": _tokens(a.queries), "keys": a.keys,
            "query_groups": a.query_groups, "key_groups": a.key_groups,
            "query_words": _tokens(merge_labels(a.queries, a.query_groups)),
            "key_words": merge_labels(a.keys, a.key_groups)}
    if kind.causal:
        # A decoding step sees the keys up to its own: its last word may be cut short ("Hun" of "Hund").
        axes["key_prefix_words"] = [word_labels(a.keys, [[j for j in g if j <= c]])[0]
                                    for g in a.key_groups for c in g]
    return axes


def heads_off(trace: Trace, kind: AttentionKind) -> list[list[int]]:
    """The [layer, head] pairs (from 1) of `kind` that the trace's head mask switched off, in order."""
    return [list(pair) for pair in sorted(views.off_in(trace.settings.heads_off, kind.name))]


def _kind(trace: Trace, kind: AttentionKind) -> dict:
    return {"name": kind.name, "label": kind.label, "title": views.name(kind.name), "queries": kind.queries,
            "keys": kind.keys, "causal": kind.causal, "stepped": stepped(kind),
            "query_title": QUERY_TITLES[kind.queries], "key_title": KEY_TITLES[kind.keys],
            "step_color": STEP_COLORS.get(kind), "off": heads_off(trace, kind),
            "attention": packed(trace.attention(kind.name).weights),
            "axes": {"all": _axes(trace, kind, False), "hidden": _axes(trace, kind, True)}}


def _model(trace: Trace, entry: ModelEntry) -> dict:
    c = entry.config
    return {"key": entry.key, "label": entry.label, "checkpoint": checkpoint_id(trace, entry),
            "source_lang": entry.source_lang, "target_lang": entry.target_lang, "untrained": entry.untrained,
            "layers": {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers},
            "heads": c.n_heads, "d_model": c.d_model}


def _log_probs(trace: Trace) -> dict:
    """Each output piece's log p and the output's (None when the trace was saved without them), 4 places."""
    return {"log_probs": [round(float(p), 4) for p in trace.log_probs],
            "log_prob": None if trace.log_prob is None else round(trace.log_prob, 4)}


def trace_payload(trace: Trace, entry: ModelEntry, text: str = "", notices: list[str] | None = None,
                  pair: Pair | None = None, own: Trace | None = None) -> dict:
    """The trace payload of `trace`, made by `entry`'s model (docs/payload.md): JSON values only. `text`: the
    source text as translated; `notices`: the run's, as the app shows them; `pair`: a second sentence beside it
    (its payload and the words the two share: `pair`); `own`: a branch's, the model's own translation it continues
    (its pieces and their log p, shown beside it)."""
    out = {
        "schema": SCHEMA,
        "model": _model(trace, entry),
        "settings": settings(trace),
        "text": text, "translation": trace.text, "cut_by_limit": trace.cut_by_limit, "notices": list(notices or []),
        "pieces": {"source": list(trace.source_tokens), "target": list(trace.target_tokens),
                   "output": list(trace.output_tokens)},
        "piece_texts": {"source": piece_texts(trace.source_tokens), "target": piece_texts(trace.target_tokens),
                        "output": piece_texts(trace.output_tokens)},
        "top_k": top_k(trace),
        **_log_probs(trace),
        "own": None if own is None else {"pieces": list(own.output_tokens),
                                         "piece_texts": piece_texts(own.output_tokens), **_log_probs(own)},
        "candidates": [{"text": c.text, "pieces": list(c.tokens), "score": round(c.score, 4),
                        "log_prob": round(c.log_prob, 4), "cut_by_limit": c.cut_by_limit} for c in trace.candidates],
        "kinds": [_kind(trace, kind) for kind in KINDS],
        "stats": [{k: finite(v) for k, v in dataclasses.asdict(s).items()} for s in trace_head_statistics(trace)],
    }
    if pair is not None:
        out["pair"] = compare.pair_field(out, trace_payload(pair.trace, entry, pair.text), pair.text)
    return out


def lens_payload(lens: LogitLens) -> dict:
    """The logit lens as the viewer draws it: per decoder layer and step the top pieces and their probabilities (3
    decimals); ~6.4 KB for 20 pieces, 3 layers and top 5."""
    return {"layers": int(lens.ids.shape[0]), "normed": lens.normed,
            "tokens": [[list(step) for step in layer] for layer in lens.tokens],
            "probs": np.round(lens.probs.astype(np.float64), 3).tolist()}


def _rounded(values: np.ndarray) -> list:
    return np.round(np.asarray(values, dtype=np.float64), ATTRIBUTION_DECIMALS).tolist()


def attribution_payload(a: Attribution) -> dict:
    """One method's attribution as JSON values (docs/payload.md, `explain.methods`)."""
    out = {"label": METHODS[a.method], "steps": list(a.steps), "source": _rounded(a.source),
           "score": _rounded(a.score)}
    if a.prefix is not None:
        out["prefix"] = _rounded(a.prefix)
    if a.baseline is not None:
        out["baseline"], out["path_steps"] = _rounded(a.baseline), a.path_steps
    if a.words is not None:
        out["words"] = [list(w) for w in a.words]
    return out


def trace_key(trace: Trace) -> list:
    """What an optional part is of, as the viewer checks it against the payload it would draw with: the direction,
    the heads that were off, the source and output pieces (anything made from a trace depends on no more)."""
    return [trace.settings.direction or "", trace.settings.heads_off, list(trace.source_tokens),
            list(trace.output_tokens)]


def norms_payload(norms: Norms) -> dict:
    """The value norms as the viewer weighs attention with them (docs/payload.md, optional part `norms`): the trace
    they are of (`trace_key`), and per kind (L, h, T_k) ‖v_j W_o^h‖, 4 significant digits."""
    return {"of": trace_key(norms.of),
            "kinds": {kind.name: [[[float(f"{x:.4g}") for x in head] for head in layer]
                                  for layer in norms.norms[kind.name]] for kind in KINDS}}


def shares_payload(a: Attribution) -> list:
    """Each step's [source, prefix] shares of the evidence (`Attribution.shares`), 4 decimals."""
    return _rounded(a.shares())


def explain_payload(explained: Explained) -> dict:
    """Why each piece of a trace, as the viewer draws it (docs/payload.md, optional part `explain`): the trace it
    explains (`trace_key`), the logit lens, each method's attribution of every step (4 decimals), the source and
    prefix shares of each step from integrated gradients, and the contrast asked for, if any; 25 KB for 24 words."""
    c = explained.contrast
    return {"of": trace_key(explained.of), "lens": lens_payload(explained.lens),
            "methods": {name: attribution_payload(a) for name, a in explained.attributions.items()},
            "shares": shares_payload(explained.attributions["ig"]),
            "contrast": None if c is None else {
                "step": c.step, "foil": c.foil, "asked": c.asked,
                "methods": {name: attribution_payload(a) for name, a in c.attributions.items()}}}


def positional(config, source: list[str] | None = None) -> dict:
    """The positional encoding as the viewer draws it (figures.js `positional`, from the paper's formula): the
    model's width, table length and layout, the dimensions drawn as curves unless others are chosen, and the source
    pieces whose rows it shows (None: no translation of this model is shown)."""
    return {"d_model": config.d_model, "max_len": config.max_len, "layout": config.pe_layout,
            "dims": viz.default_dims(config.d_model), "source": None if source is None else list(source)}


def to_json(payload: dict) -> str:
    """The payload as compact JSON (no NaN: `finite` made every statistic a number or null)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def tour_payload(tour: Tour, query: str = "", start: int = 1, asked: int = 0) -> dict:
    """A tour for tour.js: its stops (what each says and sets; their claims stay here), the notes on the stops left
    out, the stop to open at (from 1), the query of a link to its translation (`&tour=K` opens stop K) and
    `asked`, which a new ask for the same tour changes (the page opens it again)."""
    stops = [{**{f.name: getattr(stop, f.name) for f in dataclasses.fields(stop) if f.name not in ("claims", "view")},
              "view": dataclasses.asdict(stop.view)} for stop in tour.stops]
    return {"of": trace_key(tour.of), "stops": stops, "left_out": list(tour.left_out), "start": start, "query": query,
            "asked": asked}
