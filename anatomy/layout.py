"""The viewer's page, as HTML that every host lays out (the app's page, the offline file, a notebook's
frame): the view bar and controls with the large view (explorer_html), the decoding steps and the tabs
(tabs_html), the figure tools (tools_html) and Link to this view (share_html). anatomy/viewer/page.js makes them
work; a host adds only what it has besides (the app's settings and files, the offline file's translation)."""
from __future__ import annotations

import html
import json
from enum import StrEnum

from markdown_it import MarkdownIt

from transformer import ModelConfig

from . import ablation_views, attention_views, bundle, head_views, views
from .inputs import PAGE_KINDS
from .prose import HOW_TO_READ, LENS_HELP, METHOD_LABELS, WEIGHTS_CHOICES, WHY_HELP

# Commonmark with tables; raw HTML escaped, images left out (a page that must not reach the network has none); the
# app's page shows a model card's images (inlined as data: URIs by training_views).
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
_MARKDOWN_IMAGES = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown_html(text: str, images: bool = False) -> str:
    return (_MARKDOWN_IMAGES if images else _MARKDOWN).render(text)


class Tab(StrEnum):
    """The tabs below the explorer, by their id (anatomy/viewer/tabs.html's data-tab)."""

    HEADS = "heads"
    STATS = "stats"
    PREDICTIONS = "predictions"
    WHY = "why"
    IMPORTANCE = "importance"
    COMPARE = "compare"
    POSITIONAL = "positional"
    ARCHITECTURE = "architecture"
    TRAINING = "training"
    HELP = "help"

    @classmethod
    def of(cls, value) -> Tab:
        """The tab with this id; the first (All heads) for anything else."""
        return next((tab for tab in cls if tab == value), cls.HEADS)

    @property
    def label(self) -> str:
        """The tab's name on the page."""
        return _TAB_LABELS[self]

    @property
    def needs_model(self) -> bool:
        """It shows what a model makes for the shown translation (the app's Handlers.make_tab, in the model's
        slot; the offline file shows what it carries of it)."""
        return self in (Tab.COMPARE, Tab.IMPORTANCE, Tab.WHY)

    @property
    def shows_model(self) -> bool:
        """It shows the chosen model rather than the shown translation: a new Direction redraws it."""
        return self in (Tab.POSITIONAL, Tab.ARCHITECTURE, Tab.TRAINING)


_TAB_LABELS = {Tab.HEADS: "All heads", Tab.STATS: "Head statistics", Tab.PREDICTIONS: "Predictions",
               Tab.WHY: "Why this word", Tab.IMPORTANCE: "Head importance", Tab.COMPARE: "Trained vs untrained",
               Tab.POSITIONAL: "Positional encoding", Tab.ARCHITECTURE: "Architecture", Tab.TRAINING: "Training",
               Tab.HELP: "How to read this"}

# The figures the export control offers: (label, elem_id).
EXPORTS = [("Attention (large view: heatmap, lines or walk)", "heatmap"),
           ("Compared sentence (sentence 2)", "heatmap-second"), ("Difference of the two sentences", "pair-difference"),
           ("Step: cross-attention", "step-cross"),
           ("Step: masked self-attention", "step-self"), ("Step: next-piece probabilities", "step-topk"),
           ("All heads", "grid"), ("Head statistics", "summary"), ("Predictions", "topk-table"),
           ("Why this word: the step", "why-step"), ("Why this word: source shares", "why-shares"),
           ("Why this word: every step", "why-all"), ("Does attention agree?", "why-agree"),
           ("Logit lens at the step", "lens-step"), ("Logit lens over the translation", "lens-all"),
           ("Head importance", "importance"), ("Heads off: change in log p", "log-probs"),
           ("Head importance over a corpus", "corpus-importance"), ("Pruning curves", "pruning"),
           ("Trained", "compare-trained"), ("Untrained", "compare-untrained"), ("Positional encoding", "pe"),
           ("Positional encoding: chosen dimensions", "pe-curves"),
           ("Positional similarity", "pe-similarity"), ("Encodings of this input", "pe-rows"),
           ("Architecture", "architecture"), ("Parameters", "parameters"), ("Training curves", "training")]
KEYS = ("Keys (outside text fields): ← / → decoding step, also from a list or a checkbox (a slider moves itself) · "
        "[ / ] layer · , / . head")
# Export animation's choices: (label, value) and the first chosen
ANIMATION_LAYOUTS = [("bars: the step's row", "bar"), ("heatmap, row by row", "heatmap")]
ANIMATION_SIZES = [("1280 × 720", "1280x720"), ("1920 × 1080", "1920x1080")]
ANIMATION_FORMATS = [("GIF", ".gif"), ("MP4 (H.264)", ".mp4")]


def _options(choices: list[tuple[str, str]]) -> str:
    return "".join(f'<option value="{html.escape(value)}">{html.escape(label)}</option>' for label, value in choices)


def tabs_html() -> str:
    """The decoding steps and the tabs (anatomy/viewer/tabs.html) with the tabs' names and their help."""
    buttons = "\n".join(f'    <button type="button" role="tab" data-tab="{tab.value}" '
                        f'{"data-model " if tab.needs_model else ""}'
                        f'aria-selected="{str(tab is Tab.HEADS).lower()}">{tab.label}</button>' for tab in Tab)
    filled = {"STATS_HELP": head_views.stats_help(), "WHY_HELP": WHY_HELP, "LENS_HELP": LENS_HELP,
              "IMPORTANCE_HELP": ablation_views.IMPORTANCE_HELP, "HOW_TO_READ": HOW_TO_READ}
    made = {"TABS": buttons, "METHODS": "".join(f'<option value="{name}">{label}</option>'
                                                   for name, label in METHOD_LABELS.items())}
    text = (bundle.VIEWER / "tabs.html").read_text(encoding="utf-8")
    for marker, value in filled.items():
        text = text.replace(f"<!--{marker}-->", markdown_html(value))
    for marker, value in made.items():
        text = text.replace(f"<!--{marker}-->", value)
    return text


def explorer_html(config: ModelConfig, asks: dict[str, tuple[str, ...]], walk: bool = True,
                  weights: list[tuple[str, str]] = WEIGHTS_CHOICES, settled: bool = False) -> str:
    """The explorer: anatomy/viewer/controls.js makes the view controls in #view-controls, offering before a
    translation what `data-offer` says (the model's kinds, the `weights`, each kind's help, whether the softmax
    walk is offered, the host's asks by kind, and whether a page at the host's plain address is this one as built:
    `settled`, nothing to ask the host); the large view (a pair's two sentences side by side, their texts above and
    their difference below: page.js shows them); the chosen kind's help."""
    offer = {"weights": [list(choice) for choice in weights], "asks": asks, "walk": walk, "settled": settled,
             "help": {k.name: markdown_html(attention_views.kind_help(k.name)) for k in PAGE_KINDS},
             "shape": {"kinds": [{"name": k.name, "title": views.name(k.name), "layers": config.n_layers(k.name),
                                  "heads": config.n_heads} for k in PAGE_KINDS],
                       "steps": 0, "source": [], "target": [], "output": []}}
    return ('<div id="branch" class="anatomy-branch" role="status" hidden><p id="branch-own"></p>'
            '<p id="branch-line"></p><button id="branch-back" type="button" class="anatomy-button">Back to the '
            "model's own</button></div>"
            f'<div id="view-bar"><button id="view-toggle" type="button">View settings (v)</button>'
            f'<span id="keys">{KEYS}</span></div>'
            f'<div id="view-controls" data-offer="{html.escape(json.dumps(offer))}"></div>'
            '<p id="pair-texts" hidden></p><div id="large-view">'
            '<div id="heatmap" class="anatomy-box"><div class="anatomy-plot" data-testid="plotly"></div></div>'
            '<div id="heatmap-second" class="anatomy-box" hidden><div class="anatomy-plot" data-testid="plotly"></div>'
            '</div></div>'
            '<div id="pair-difference" class="anatomy-box" hidden><div class="anatomy-plot" data-testid="plotly"></div>'
            '</div>'
            '<details class="anatomy-controls"><summary>What this attention shows</summary><div id="kind-help"></div>'
            '</details>')


def tools_html() -> str:
    """The viewer's tools: presenter mode, and one panel for both exports (a second one would push the large view
    below the fold at 1600×1000): a figure (PNG, SVG, drawn in the page) and the decoding's animation (the host
    makes it, or says where)."""
    from .export import HOLD, MIN_SECONDS  # here: anatomy/export.py imports offline.py, which imports this module

    return (
        '<div class="anatomy-header"><div><label id="presenter" class="anatomy-check">'
        '<input type="checkbox"> Presenter mode</label>'
        '<div id="presenter-info" class="anatomy-muted">Large type, figures fit the screen, white page: for talks</div>'
        '</div>'
        '<details id="export"><summary>Export a figure or animation</summary><div class="anatomy-export">'
        f'<label class="anatomy-field">Figure <select id="export-figure">{_options(EXPORTS)}</select></label>'
        '<label class="anatomy-check"><input id="export-frame" type="checkbox"> Keep the orange step frame</label>'
        '<label class="anatomy-check"><input id="export-wide" type="checkbox"> 16:9 slide (1920 × 1080, large type)'
        '</label><div class="anatomy-fields"><button id="export-png" type="button">PNG</button> '
        '<button id="export-svg" type="button">SVG</button></div>'
        '<p id="export-note" class="anatomy-muted" role="status" hidden></p>'
        '<details id="export-animation"><summary>Export animation (GIF / MP4)</summary>'
        '<label class="anatomy-field">Decoding, one frame per piece, as <select id="animation-layout">'
        f'{_options(ANIMATION_LAYOUTS)}</select></label>'
        f'<label class="anatomy-field">Size (16:9 slide) <select id="animation-size">{_options(ANIMATION_SIZES)}'
        '</select></label>'
        f'<label class="anatomy-field">Seconds per frame (first and last held {HOLD}×) <input id="animation-seconds" '
        f'type="number" min="{MIN_SECONDS}" max="3" step="0.1" value="0.8"></label>'
        f'<label class="anatomy-field">Format <select id="animation-format">{_options(ANIMATION_FORMATS)}</select>'
        '</label><div class="anatomy-fields"><button id="animation-make" type="button">Make the animation</button>'
        '</div><p id="animation-note" class="anatomy-muted" hidden></p></details></div></details></div>')


def translation_html() -> str:
    """The translation's box with Copy, heads off's comparison and the run's notes (anatomy/viewer/result.js draws
    them)."""
    return ('<div id="translation" class="anatomy-result"><label for="translation-text" class="anatomy-label">'
            'Translation</label><textarea id="translation-text" readonly rows="2"></textarea>'
            '<button type="button" class="anatomy-button anatomy-copy" title="Copy the translation">Copy</button>'
            '</div><div id="ablation" class="anatomy-result" hidden></div>'
            '<div id="run-info" class="anatomy-controls anatomy-result anatomy-prose"></div>')


def pieces_html() -> str:
    """What result.js draws of the translation's pieces: the source's, the output's and the beam candidates."""
    return ('<div id="source-box" class="anatomy-result"><span class="anatomy-label">Source pieces (what the encoder '
            'reads)</span>'
            '<div id="source-pieces" class="chips"></div></div>'
            '<div class="anatomy-result"><span class="anatomy-label">Output pieces, by the model\'s probability'
            '</span><div id="output-pieces" class="chips"></div><div id="confidence-legend" class="chips legend">'
            '</div></div>'
            '<div id="candidates-box" class="anatomy-result" hidden><span class="anatomy-label">Beam candidates'
            ' (click one to see its attention)</span><div class="anatomy-scroll"><table id="candidates"></table></div>'
            '<p id="candidates-note" class="anatomy-muted" hidden></p></div>')


def share_html() -> str:
    """Link to this view: the viewer's button, and the link it gets, with a copy button, over the page."""
    return ('<div id="share-box"><button id="share" type="button" class="anatomy-button">Link to this view</button>'
            '<div id="share-url" hidden><label>Link to this view (text, settings, attention, layer, head, step)'
            '<textarea readonly rows="3"></textarea></label><div class="anatomy-fields">'
            '<button type="button" class="anatomy-button" data-do="copy">Copy</button> '
            '<button type="button" class="anatomy-button" data-do="close">Close</button>'
            '</div></div></div>')
