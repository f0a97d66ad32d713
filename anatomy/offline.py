"""One translation as a single HTML page that works offline: what the app shows of it (the translation and its
steps, every attention kind × layer × head as the large view, the all-heads grid and lines, head statistics,
predictions, positional encoding, architecture and model card), drawn in the browser with no server and no network.

The file is anatomy/viewer/offline.html with the viewer's page as the app lays it out (anatomy/layout.py), its CSS,
Plotly.js, the page's data and the viewer (anatomy/viewer/, bundled by anatomy/bundle.py) inlined; the viewer's page
(page.js) with the file's host (offline.js) draws every figure from the data. The data is the trace payload
(anatomy/payload.py: attention as uint8, each weight within 1/510 of the trace's) and what the app's server sends
besides, made here: the positional encoding, the tabs' tables, texts and figures (Plotly JSON), Why this word and the
value norms when made, the tour; and the file's own part: the output's chips, the candidates, the view it opens
at, the page's colours.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import plotly.colors as pc

import viz
from transformer import DecodingSettings, ModelConfig, Trace
from viz.common import ATTENTION_STOPS, COLORS, DIVERGING_SCALE, MASKED_COLOR, PROBABILITY_SCALE, TEMPLATE_JSON
from viz.heads import PANELS, SIGNED

from . import architecture_views, attention_views, bundle, head_views, tour, training_views, views
from .inputs import DISPLAYS, View
from .layout import explorer_html, markdown_html, pieces_html, share_html, tabs_html, tools_html, translation_html
from .payload import checkpoint_id, explain_payload, norms_payload, positional, tour_payload, trace_payload
from .prose import WEIGHTS_CHOICES
from .registry import ModelEntry, shown_name
from .run import Explained, Norms, Pair
from .tour import Tour

# Plotly.js's cartesian bundle (npm plotly.js-cartesian-dist-min, MIT: anatomy/viewer/plotly/LICENSE), the plotly
# package's release: every trace type the viewer and viz/ draw (heatmap, bar, scatter) in a third of the full bundle's
# 4.8 MB, which a page took ~2 s to evaluate before its first figure (tests/test_plotly_bundle.py)
PLOTLY_JS = Path(__file__).resolve().parent / "viewer" / "plotly" / "plotly-cartesian.min.js"
SUFFIX = ".html"


@dataclass(frozen=True)
class Written:
    """A written page."""

    path: Path
    size: int  # bytes


def card_summary(entry: ModelEntry) -> str:
    """How the checkpoint was trained and scored, then its model card up to its second section: title,
    introduction and scores (the rest stays in the card, named by its path)."""
    head = training_views.training_summary(entry)
    if entry.untrained or not entry.card:
        return head
    sections = [m.start() for m in re.finditer(r"^## ", entry.card, flags=re.M)]
    card = entry.card[:sections[1]] if len(sections) > 1 else entry.card
    where = f"\n\nThe whole model card: `{shown_name(entry.source)}/README.md`." if entry.source else ""
    return f"{head}\n\n---\n\n{card.strip()}{where}"


def branch(s: DecodingSettings) -> str:
    """A branch's forced pieces, and the step (from 1) where they part from the model's own choices."""
    n = len(s.prefix)
    parted = f"parting from the model's own choice at step {s.parts_at + 1}" if s.parts_at is not None and \
        s.parts_at < n else "each the model's own choice"
    return f"branch: {n} forced piece{'s' if n > 1 else ''} ({' '.join(s.prefix)}), {parted}"


def about(trace: Trace, entry: ModelEntry) -> str:
    """What made the page, in one line: model, checkpoint and decoding settings."""
    s = trace.settings
    decoding = s.mode if s.beam_size is None else ("greedy" if s.beam_size == 1 else f"beam {s.beam_size}")
    parts = [f"{entry.label} ({entry.key})", f"checkpoint {checkpoint_id(trace, entry)}",
             decoding + (f", length penalty {s.length_penalty:g}" if s.length_penalty is not None and
                         (s.beam_size or 1) > 1 else ""),
             *([branch(s)] if s.prefix else []),
             *([f"max new tokens {s.max_new_tokens}"] if s.max_new_tokens is not None else []),
             f"top-k {s.top_k}", f"on {views.made_on(trace)}", f"heads off: {s.heads_off or 'none'}"]
    return ("Untrained model (random weights): " if entry.untrained else "") + " · ".join(parts)


def _figure(figure) -> dict:
    return json.loads(figure.to_json())


def look() -> dict:
    """What the viewer draws with besides a payload (figures.js `Look`): the template and colours, the title of
    hidden special tokens, the statistics' names. Plotly.js names some scales as Plotly for Python does not (its
    "RdBu" runs the other way): the stops."""
    return {"template": TEMPLATE_JSON, "attention": ATTENTION_STOPS, "diverging": pc.get_colorscale(DIVERGING_SCALE),
            "probability": pc.get_colorscale(PROBABILITY_SCALE), "masked": MASKED_COLOR, "heads": COLORS,
            "hide_title": attention_views.HIDE_TITLE,
            "stats": {"labels": viz.STAT_LABELS, "panels": list(PANELS), "signed": sorted(SIGNED)}}


def payload(trace: Trace, entry: ModelEntry, text: str, notices: list[str], view: View | None = None,
            explained: Explained | None = None, norms: Norms | None = None, toured: Tour | None = None,
            pair: Pair | None = None, own: Trace | None = None) -> dict:
    """Everything the page draws, as JSON values: the trace payload, and the page's own part. `text`: the source
    text as translated; `notices`: the run's, as the app shows them; `view`: the view the page opens at (the
    app's, when it downloads one); `explained`, `norms`: Why this word's explanation and the value norms, when made
    (each only if it is of this trace); `toured`: the app's tour of it, with the stops that need a model (else
    the tour without them); `pair`: a second sentence beside it (Compare with…); `own`: a branch's, the model's own
    translation it continues."""
    view = views.fitted(view or View(), trace)
    c = entry.config
    extras = {"explain": explain_payload(explained) if explained is not None and explained.of is trace else None,
              "norms": norms_payload(norms) if norms is not None and norms.of is trace else None,
              "tour": tour_payload(toured if toured is not None and toured.of is trace else tour.tour(
                  trace, tour.facts_of(c, entry.untrained, entry.corpus_heads()), asked=False))}
    return {"payload": trace_payload(trace, entry, text, notices, pair, own), **extras,
            "positional": positional(c, trace.source_tokens),
            # what the app's server sends for the tabs (ui/handlers/shown.py _tab), answered here from the file
            "tab": {"stats": head_views.table_json(trace),
                    "card": markdown_html(architecture_views.architecture_markdown(entry)),
                    "training_card": markdown_html(card_summary(entry)),
                    "figures": {"architecture": _figure(architecture_views.of_trace(c, trace)),
                                "parameters": _figure(architecture_views.parameters(entry)),
                                "training": _figure(training_views.training_curves(entry))}},
            "page": {
                "about": about(trace, entry),
                "chips": [list(chip) for chip in views.output_chips(trace.output_tokens, trace.top_k)],
                "confidence": views.CONFIDENCE,
                "candidates": views.candidate_rows(trace),
                "view": {"kind": view.kind, "layer": view.layer, "head": view.head, "step": view.step,
                         "merge": view.merge, "plain": view.plain, "hide": view.hide, "query": view.query,
                         "display": view.display if view.display in DISPLAYS[:2] else DISPLAYS[0]},
                "look": look()}}


@lru_cache(maxsize=1)
def _plotly() -> str:
    # Inline script data ends at the first "</script": the minified bundle has none, and "<\/" reads the same in JS.
    return PLOTLY_JS.read_text(encoding="utf-8").replace("</script", "<\\/script")


def data_json(data: dict) -> str:
    """The payload as a JS literal safe inside <script>: every "<" escaped (no "</script>", no "<!--")."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


# What the offline host (anatomy/viewer/offline.js) is asked, as the app's page offers its asks: all answered from
# the file, or with a note.
ASKS = {"model": ("walk", "norms", "make", "contrast", "toggle"), "draw": ("tab", "animation", "share")}


def page(data: dict, config: ModelConfig, plotly_html: str | None = None) -> str:
    """The page of `data` (a translation by a model of `config`): the template with its style, the viewer's page
    (anatomy/layout.py), Plotly.js, the data and the page script in place. `plotly_html`: the HTML that brings Plotly.js
    instead of inlining it (a notebook's frame: anatomy/notebook.py); it may set `window.anatomyPlotlyReady`, a
    promise the page waits for before it starts."""
    # The bundle is the repository's own code: no "</script" in it (tests/test_offline.py checks).
    style = bundle.style("offline.css")
    # value-norm weights only when the file carries the norms; the softmax walk needs the model
    weights = [w for w in WEIGHTS_CHOICES if data["norms"] is not None or w[1] != "value-norm"]
    plotly_html = f"<script>{_plotly()}</script>" if plotly_html is None else plotly_html
    parts = {"/*STYLE*/": style, "<!--PLOTLY-->": plotly_html,
             "/*DATA*/": data_json(data), "/*SCRIPT*/": bundle.script("offline"),
             "<!--ABOUT-->": html.escape(data["page"]["about"]), "<!--TOOLS-->": tools_html(),
             "<!--SHARE-->": share_html(), "<!--RESULT-->": translation_html(), "<!--PIECES-->": pieces_html(),
             "<!--EXPLORER-->": explorer_html(config, ASKS, False, weights), "<!--TABS-->": tabs_html()}
    template = (bundle.VIEWER / "offline.html").read_text(encoding="utf-8")
    # One pass: what goes in is never searched for markers again.
    return re.sub("|".join(map(re.escape, parts)), lambda m: parts[m.group(0)], template)


def file_name(key: str) -> str:
    return f"{key}_translation{SUFFIX}"


def write(trace: Trace, entry: ModelEntry, text: str, notices: list[str], path: Path,
          view: View | None = None, explained: Explained | None = None, norms: Norms | None = None,
          toured: Tour | None = None, pair: Pair | None = None, own: Trace | None = None) -> Written:
    """The page of a translation, written to `path` (with what `payload` takes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(payload(trace, entry, text, notices, view, explained, norms, toured, pair, own),
                         entry.config),
                    encoding="utf-8")
    return Written(path, path.stat().st_size)
