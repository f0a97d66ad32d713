"""The page: every component in a `with gr.Blocks()` layout, returned as one typed Page. No events here."""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from anatomy import ablation_views, views
from anatomy import layout as viewer_layout
from anatomy.inputs import MAX_BEAM, MAX_NEW_TOKENS, MAX_SLOW, MAX_TOP_K
from anatomy.layout import explorer_html, markdown_html, share_html, tabs_html, tools_html
from anatomy.prose import INTRO
from anatomy.registry import ModelEntry, ModelRegistry, device_choices
from transformer import ModelConfig

from .values import ASKS, Session

# layer: the last; beam and length penalty: the model's own (Checkpoint.decoding)
DEFAULTS = {"max": 0, "k": 5, "slow": 0.0}


@dataclass(frozen=True)
class Channel:
    """One kind of data for the viewer, a key of the page's one `data` JSON: a handler returns it keyed by its
    Channel like a component, and the wiring packs an event's channels into `data` (wiring.py `handled`)."""

    name: str  # its key in `data`, as anatomy/viewer/page.js `data` reads it
    sent: Callable[[Any], Any] | None = None  # what the page gets of a handler's value (default: the value)


@dataclass(frozen=True)
class Slot:
    """One field of the visitor's Session (ui/values.py), held by the page's one gr.State: a handler reads it as
    ui.values.Inputs and returns it keyed by its Slot like a component; the wiring sets it on the Session."""

    name: str  # the Session's field


@dataclass
class Download:
    """A button whose click writes a file on the server, and the file component it writes into, whose link the page
    then clicks (app.js `save`): one click downloads the file."""

    button: gr.Button
    file: gr.File


@dataclass
class Page:
    """Every component the handlers read or write, by one name each."""

    # the visitor's Session: its Slots
    session: gr.State  # ui.values.Session: what the server holds for this page
    run: Slot  # anatomy.run.Run | None: what the page shows
    twin: Slot  # anatomy.run.Twin | None
    signal: Slot  # anatomy.run.StopSignal, per visitor
    link: Slot  # anatomy.inputs.Link read from the page's address (open_link's, never kept)
    model_ask: gr.Button  # clicked by app.js: what the viewer asks of a model (Handlers.ask_model, its view's `ask`)
    draw_ask: gr.Button  # clicked by app.js: what the viewer asks the server to draw or write (Handlers.ask_draw)
    export_ask: gr.Button  # clicked by app.js: Export animation's file (Handlers.animate_page), a bounded group
    judged: Slot  # anatomy.run.Judged | None: head importance of the shown translation
    vectors: Slot  # anatomy.run.Vectors | None: the softmax walk's q, k, v of the shown translation
    explained: Slot  # anatomy.run.Explained | None: why the shown translation's pieces (Why this word tab)
    replay: gr.State  # a trigger (handlers.model.ASKED): a slow-motion Run is to be replayed
    # what the page's viewer draws (anatomy/viewer/host.js), never shown as such
    data: gr.JSON  # never shown: what an event sends the viewer, by Channel name (the channels below)
    trace_data: Channel  # the trace payload of what the page shows (a slow-motion frame's while it replays)
    twin_data: Channel  # the trace payload of the untrained twin, once the Trained vs untrained tab made it
    walk_data: Channel  # the softmax walk the server drew: {"view": for which view, "figure": Plotly JSON}
    norms: Slot  # anatomy.run.Norms | None: the shown translation's value norms, once a view asked for them
    norms_data: Channel  # for the viewer: those norms (anatomy.payload.norms_payload)
    toured: Slot  # anatomy.tour.Tour | None: the tour of the shown translation, once Tour made it
    tour_data: Channel  # for app.js: that tour's stops (anatomy.payload.tour_payload), and the stop to open
    tour_btn: gr.Button
    # header
    animation_file: gr.File  # Export animation's (the /animate endpoint's too)
    offline: Download  # Download page (HTML) (its file the /export_html endpoint's too)
    # settings
    direction: gr.Dropdown
    model_notices: gr.HTML  # skipped models, Hub models still loading (layout.markdown_html's)
    text: gr.Textbox
    compare: gr.Textbox  # Compare with…: a second sentence, translated in the same event and drawn beside the first
    text_hint: gr.HTML  # what to type, after Translate with nothing to translate (markdown_html's)
    beam: gr.Slider
    max_new: gr.Slider
    device: gr.Radio
    top_k: gr.Slider
    lp: gr.Slider
    slow: gr.Slider
    translate_btn: gr.Button
    stop_btn: gr.Button
    # result: the viewer draws it (anatomy/viewer/result.js) in `result` and `pieces`
    result: gr.HTML  # the translation, heads off's comparison and the run's notes (anatomy/layout.py)
    pieces: gr.HTML  # the source and output pieces and the beam candidates; after the large view on a phone
    translation: Channel  # the translation's text
    ablation: Channel  # heads off: the all-heads translation above the ablated one (HTML; "" when every head is on)
    run_info: Channel  # the run's notes (Markdown, sent as HTML)
    src_chips: Channel  # the source's pieces: [piece, "piece"] pairs
    out_chips: Channel  # the output's pieces: [piece, its probability's class] pairs (views.CONFIDENCE)
    candidates: Channel  # the beam candidates' rows (views.candidate_rows); a click on one asks "candidate"
    api_text: gr.Textbox  # never shown: the API's translation (/translate, /explain)
    forced: gr.Textbox
    force_btn: gr.Button
    trace: Download  # Download trace (JSON)
    link_data: Channel  # the query of a link to the shown view (Handlers.share): the viewer shows it with its address
    examples: gr.HTML | None  # the examples' buttons (examples_html); a click asks "example" (ui/static/app.js)
    example_items: tuple[tuple[str, str, str], ...]  # each example's text, direction and second sentence ("": none)
    example_ask: gr.Button  # clicked by app.js: an example clicked (Handlers.example), then translated
    # attention explorer
    explorer: gr.HTML  # the viewer's view controls, large view and the chosen attention's help (EXPLORER)
    view: gr.Textbox  # never shown: the viewer's view as JSON (anatomy/viewer/controls.js), filled in by each event
    view_set: Channel  # a view a handler opens in the viewer: {kind, layer, head, ...} (a link, a head picked below)
    heads_off_panel: gr.Accordion  # opened when a link switches heads off
    heads_off: gr.CheckboxGroup  # HeadMask link items ("cross:1.2") of the heads switched off
    reset_heads: gr.Button
    # the decoding steps and the tabs (the viewer's: anatomy/viewer/tabs.html, tabs.js)
    below: gr.HTML
    tab_data: Channel  # for the viewer: the open tab's tables, texts and server-drawn figures (Handlers._tab)
    explain_data: Channel  # for the viewer: why the shown translation's pieces (anatomy.payload.explain_payload)
    importance_data: Channel  # for the viewer: the maps' values, the heads-off changes, the corpus maps
    pe_data: Channel  # the chosen model's positional encoding, for the viewer: d_model, max_len, layout, dims, source
    notice: gr.Textbox  # never shown: an API endpoint's notice (the API's events have no components of their own)

    # What ui.values.Inputs reads, by its field names: the handlers get them typed, never by position.
    @property
    def settings(self) -> dict[str, gr.components.Component]:
        """The controls a translation is asked with, by ui.values.PageSettings field."""
        return dict(key=self.direction, text=self.text, beam=self.beam, max_new=self.max_new, device=self.device,
                    top_k=self.top_k, length_penalty=self.lp, slow=self.slow, heads_off=self.heads_off,
                    compare=self.compare)

    @property
    def slots(self) -> dict[str, Slot]:
        """The Session's Slots, by ui.values.Session field."""
        return dict(run=self.run, twin=self.twin, signal=self.signal, judged=self.judged, vectors=self.vectors,
                    explained=self.explained, norms=self.norms, toured=self.toured)

    @property
    def state(self) -> dict[str, gr.components.Component | Slot]:
        """The Session's Slots, the link and the Inspect text, by ui.values.Inputs field."""
        return dict(self.slots, link=self.link, forced=self.forced)


def header_html() -> str:
    """The page's header: its title and introduction, and the viewer's tools (anatomy/layout.py tools_html)."""
    return ('<div id="header-row"><div id="header-title"><h1>Transformer Anatomy</h1>'
            f'<div class="anatomy-controls">{markdown_html(INTRO)}</div></div>'
            f'<div id="header-tools">{tools_html()}</div></div>')


def examples_html(labels: list[str]) -> str:
    """The examples, one button each (its index in Page.example_items): a click puts it in the form with the default
    settings and translates it (ui/static/app.js asks "example")."""
    buttons = "".join(f'<button type="button" class="anatomy-example" data-example="{i}">{html.escape(label)}</button>'
                      for i, label in enumerate(labels))
    return ('<div class="anatomy-controls"><span class="anatomy-label">Examples (default settings)</span>'
            f'<div class="anatomy-example-list">{buttons}</div></div>')


def placeholder(entry: ModelEntry) -> str:
    """The source text's placeholder for a model: what to type."""
    return f"Type {views.a_language(entry.source_lang)} sentence, e.g. {(entry.examples or [''])[0]}"


def _settings(registry: ModelRegistry) -> dict:
    """The controls a translation is asked with and its buttons, by Page field."""
    entry0 = registry.get(None)
    direction = gr.Dropdown(registry.choices(), value=registry.default_key, label="Direction",
                            elem_id="direction")
    # HTML made here from the notes' Markdown (markdown_html), as every note the handlers write: no gr.Markdown on
    # the page, whose renderer and code highlighter are ~30 KB of Gradio's scripts each page load would run
    model_notices = gr.HTML(markdown_html(registry.status()), visible=bool(registry.status()), elem_id="model-notices",
                            elem_classes=["anatomy-notice"])
    # No max_length: the browser would cut a long paste unseen; anatomy.inputs.clean_text cuts it to MAX_CHARS
    # and says so in the run info.
    text = gr.Textbox(label="Source text", lines=2, elem_id="source-text", placeholder=placeholder(entry0))
    # right after the text, in its form (issue 48: at most sixty components, forms counted); folded away in
    # presenter mode with the other settings, so that a single translation's first screen stays as it was
    compare = gr.Textbox(label="Compare with… (optional: a second sentence, drawn beside the first)", lines=1,
                         elem_id="compare-with", placeholder="e.g. the same sentence with one word changed",
                         elem_classes=["anatomy-controls"])
    # beside the boxes, not in the run info: drawing the shown translation again must not hide it
    text_hint = gr.HTML(visible=False, elem_id="text-hint", elem_classes=["anatomy-notice"])
    with gr.Row(elem_classes=["anatomy-controls"]):
        beam = gr.Slider(1, MAX_BEAM, value=entry0.decoding.beam_size, step=1, label="Beam size (1 = greedy)")
        max_new = gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULTS["max"], step=1,
                            label="Max new tokens (0 = automatic: 1.5 × source + 10)")
    with gr.Accordion("More settings", open=False, elem_classes=["anatomy-controls"]):
        device = gr.Radio(device_choices(), value="auto", label="Device",
                          info="cuda is offered only when this machine has a GPU")
        top_k = gr.Slider(1, MAX_TOP_K, value=DEFAULTS["k"], step=1, label="Top-k pieces to record per step")
        lp = gr.Slider(0.0, 3.0, value=entry0.decoding.length_penalty, step=0.1,
                       label="Length penalty α (beam score = log p / length^α)")
    # slow motion and Stop stay in presenter mode: they are for talks
    slow = gr.Slider(0.0, MAX_SLOW, value=DEFAULTS["slow"], step=0.1, elem_id="slow",
                     label="Slow motion: seconds per piece (0 = off; for talks)")
    with gr.Row():
        translate_btn = gr.Button("Translate", variant="primary", elem_id="translate", min_width=90)
        stop_btn = gr.Button("Stop", variant="stop", elem_id="stop", min_width=90)
        # the guided tour of the shown translation (anatomy/tour.py, viewer/tour.js): one row with the two
        # above, so that presenter mode's first screen keeps the translation
        tour_btn = gr.Button("Tour", elem_id="tour-start", min_width=90)
    return dict(direction=direction, model_notices=model_notices, text=text, compare=compare, text_hint=text_hint,
                beam=beam,
                max_new=max_new, device=device, top_k=top_k, lp=lp, slow=slow, translate_btn=translate_btn,
                stop_btn=stop_btn, tour_btn=tour_btn)


def _result() -> dict:
    """What the page shows of a translation beside the viewer, and its files, by Page field."""
    # the viewer's own (anatomy/viewer/result.js draws them); the pieces a block of their own, which a phone's one
    # column puts after the large view
    result = gr.HTML(viewer_layout.translation_html(), elem_id="result", padding=False)
    pieces = gr.HTML(viewer_layout.pieces_html(), elem_id="result-pieces", padding=False)
    api_text = gr.Textbox(label="Translation", visible=False)
    with gr.Accordion("Inspect a translation (teacher forcing)", open=False, elem_id="inspect-panel",
                      elem_classes=["anatomy-controls"]):
        forced = gr.Textbox(label="Any translation of the source above: edit it, then Inspect", lines=2,
                            elem_id="forced")
        force_btn = gr.Button("Inspect", size="sm", elem_id="inspect")
    # kept in presenter mode: a talk hands out its page
    with gr.Row(elem_id="files-row"):
        # a Button, not a gr.DownloadButton: that one downloads the file it holds at the click, before the click's
        # event answers (Gradio 6.31), so it would need a trace written at every translation
        download = gr.Button("Download trace (JSON)", size="sm", elem_id="download")
        page_btn = gr.Button("Download page (HTML)", size="sm", elem_id="download-page")
        gr.HTML(share_html(), elem_id="share-view", padding=False)
    trace_file = gr.File(label="Trace of this translation (JSON)", visible=False, interactive=False,
                         elem_id="trace-file")
    page_file = gr.File(label="Page of this translation: one HTML file that opens offline", visible=False,
                        interactive=False, elem_id="page-file")
    # the file Export animation (in the header) makes
    animation_file = gr.File(label="Animation of the shown translation and view", interactive=False,
                             visible=False, elem_id="animation-file")
    return dict(result=result, pieces=pieces, api_text=api_text, forced=forced, force_btn=force_btn,
                trace=Download(download, trace_file), offline=Download(page_btn, page_file),
                animation_file=animation_file)


def _explorer(config: ModelConfig, settled: bool) -> dict:
    """The viewer's large view with its controls, heads off, and the buttons the viewer asks the server with, by
    Page field; `settled`: a page at the plain address is this one as built (app.js `opened` asks for nothing)."""
    # the viewer's own: its view controls (anatomy/viewer/controls.js makes them in #view-controls; presenter
    # mode folds them away, the keys move the view, and View settings shows them), the large view and what
    # the chosen attention shows
    explorer = gr.HTML(explorer_html(config, ASKS, settled=settled), elem_id="explorer-view", padding=False)
    with gr.Accordion("Switch heads off", open=False, elem_id="heads-off-panel",
                      elem_classes=["anatomy-controls"]) as heads_off_panel:
        heads_off = gr.CheckboxGroup(ablation_views.head_choices(config), value=[], elem_id="heads-off",
                                     label="Heads off: each one's output is zeroed before W_o, and the "
                                           "sentence is translated again (a click on a head in All heads "
                                           "or Head importance does the same)")
        reset_heads = gr.Button("Switch every head back on", size="sm", elem_id="reset-heads")
    # app.js clicks these with what the viewer asks in the view; kept off screen, not hidden, so that they are
    # in the page to be clicked
    model_ask = gr.Button("model", elem_id="model-ask", elem_classes=["anatomy-offscreen"])
    draw_ask = gr.Button("draw", elem_id="draw-ask", elem_classes=["anatomy-offscreen"])
    export_ask = gr.Button("export", elem_id="export-ask", elem_classes=["anatomy-offscreen"])
    return dict(explorer=explorer, heads_off_panel=heads_off_panel, heads_off=heads_off, reset_heads=reset_heads,
                model_ask=model_ask, draw_ask=draw_ask, export_ask=export_ask)


def build_page(registry: ModelRegistry) -> Page:
    """The components, inside the caller's `with gr.Blocks()`."""
    gr.HTML(header_html(), elem_id="header-view", padding=False)
    # Settings and result beside the large attention view: a translation and its attention above the fold.
    with gr.Row(equal_height=False, elem_id="main-row"):
        with gr.Column(scale=2, min_width=320):
            settings = _settings(registry)
            result = _result()
        with gr.Column(scale=3, min_width=320, elem_id="explorer"):
            # no Hub model still loading: the directions and notices as built are what a page load would ask for
            explorer = _explorer(registry.get(None).config, settled=not registry.pending)

    # each model's examples, then its pairs (Compare with…: the second sentence drawn beside the first)
    items = tuple((s, e.key, "") for e in registry.entries.values() for s in e.examples) + \
        tuple((a, e.key, b) for e in registry.entries.values() for a, b, *_ in e.pairs)
    labels = [(f"Side by side, {registry.get(k).label}: {s} ⟷ {c}" if c else f"{registry.get(k).label}: {s}")
              for s, k, c in items]
    gallery = gr.HTML(examples_html(labels), elem_id="examples", padding=False) if items else None
    # app.js clicks it with the example the viewer asks for; off screen, as the viewer's other asks' buttons
    example_ask = gr.Button("example", elem_id="example-ask", elem_classes=["anatomy-offscreen"])

    # the viewer's own: the decoding steps and the tabs (anatomy/viewer/tabs.html; tabs.js, host.js draw them)
    below = gr.HTML(tabs_html(), elem_id="viewer-below", padding=False)

    # what the page's viewer draws and says, never shown
    data = gr.JSON(None, visible=False)
    # the viewer's view (controls.js), as JSON: an event that reads it has it filled in by the page (wiring.py)
    view = gr.Textbox(label="view", visible=False)
    notice = gr.Textbox(label="notice", visible=False)

    return Page(**settings, **result, **explorer, examples=gallery, example_items=items, example_ask=example_ask,
                below=below, data=data, view=view, notice=notice,
                session=gr.State(Session()), replay=gr.State(0),
                run=Slot("run"), twin=Slot("twin"), signal=Slot("signal"), link=Slot("link"), judged=Slot("judged"),
                vectors=Slot("vectors"), explained=Slot("explained"), norms=Slot("norms"), toured=Slot("toured"),
                trace_data=Channel("payload"), twin_data=Channel("twin"), walk_data=Channel("walk"),
                norms_data=Channel("norms"), tour_data=Channel("tour"), view_set=Channel("open"),
                link_data=Channel("link"), tab_data=Channel("tab"), explain_data=Channel("explain"),
                translation=Channel("translation"), ablation=Channel("ablation"),
                run_info=Channel("info", markdown_html), src_chips=Channel("source"), out_chips=Channel("output"),
                candidates=Channel("candidates"),
                importance_data=Channel("importance"), pe_data=Channel("positional"))
