"""Which event runs which handler, on which inputs and outputs, in which concurrency group."""
from __future__ import annotations

import gradio as gr

from .handlers import Handlers
from .layout import Page

# The rule: an event whose handler runs a forward or backward pass of a model (translate, inspect, a beam candidate,
# a link, the untrained twin, head importance, the softmax walk's q, k, v, heads off, the API) runs in MODEL, one at
# a time across every visitor (a small CPU runs one model pass well, two badly); no other event does, so drawing and
# view changes never wait for a translation (tokenizing alone is not a model pass). tests/test_wiring.py checks it.
# A model event makes what the page will show of a model with its Run (the twin and importance, for the open tab) and
# sends the Run's payload and the open tab's data with it, so that a translation is one request; what a tab opened
# later finds missing, it asks of a model event (make_twin, judge). The page's viewer
# (anatomy/viewer/host.js) draws the trace's views from its payload: a view change runs in the browser only, and the
# viewer asks for the softmax walk (walk_btn), whose q, k, v need the model, and for the value norms (norms_btn).
MODEL = dict(concurrency_id="model", concurrency_limit=1, api_visibility="undocumented")
# Drawing figures: no model, no shared limit.
DRAW = dict(concurrency_limit=None, api_visibility="undocumented", show_progress="hidden")
# Slow-motion replays: a replay waits between frames without a thread, but each running event holds one of the
# queue's max_threads (40) slots, and each frame's payload is made in Python beside the model's run: at most REPLAYS
# replay at once (the rest wait their turn), so that they never hold every slot and a translation still runs at near
# its idle pace. tests/test_wiring.py checks it.
REPLAYS = 4
REPLAY = dict(concurrency_id="replay", concurrency_limit=REPLAYS, api_visibility="undocumented",
              show_progress="hidden")


def viewed(p: Page) -> list:
    """What the viewer draws from: the data the server sends, in the order ui/static/app.js `data` reads them."""
    return [p.trace_data, p.twin_data, p.walk_data, p.pe_data, p.importance_data, p.explain_data, p.norms_data]


def js(call: str) -> str:
    """A browser-side handler calling into ui/static/app.js."""
    return f"(...args) => window.anatomy.{call}"


def reading_view(p: Page, inputs: set) -> dict:
    """An event's keywords for one that reads the viewer's view: the page fills that input in with it (controls.js),
    at the place Gradio gives it in a set of inputs (sorted by component id)."""
    at = sorted(inputs, key=lambda c: c._id).index(p.view)
    return dict(js=f"(...args) => {{ args[{at}] = window.anatomy.viewed(); return args; }}")


def wire(page: Page, h: Handlers, demo: gr.Blocks) -> None:
    p = page
    # Inputs given as a set reach the handler as one dict keyed by component, which it reads as ui.values.Inputs:
    # no handler depends on the order of its inputs.
    controls = {p.view}
    # what a translation is asked with; the view (with the open tab) for the walk's q, k, v and the tab's data
    asked = {*p.settings.values(), p.signal, *controls}
    tab_inputs = {p.run, p.twin, p.judged, p.explained, p.direction, *controls}
    shown = [p.translation, p.ablation, p.run_info, p.src_chips, p.out_chips, p.candidates, p.forced, p.download,
             p.offline.file, p.run, p.trace_data]
    tab_outputs = [p.tab_data, p.explain_data, p.importance_data, p.twin_data, p.pe_data]
    # a model event sends its Run, what the page shows of it and the open tab's data in one event (Handlers._made)
    made = list(dict.fromkeys([p.run, p.twin, p.judged, p.explained, p.vectors, p.run_info, *shown, p.replay,
                               *tab_outputs]))
    # a new Run opens at its own step (the last, or a link's), whatever the step slider says
    tab_view = dict(fn=h.tab_view, inputs=tab_inputs, outputs=tab_outputs, **DRAW, **reading_view(p, tab_inputs))

    replayed = {p.run, p.signal, p.vectors, *controls}
    p.replay.change(h.replay, replayed, [*shown, p.vectors], **REPLAY, **reading_view(p, replayed)).then(**tab_view)
    walked = {p.run, p.vectors, *controls}
    p.walk_btn.click(h.walk, walked, [p.vectors, p.walk_data], **MODEL, **reading_view(p, walked))
    p.norms_btn.click(h.weigh, {p.run, p.norms}, [p.norms, p.norms_data], **MODEL)

    # What the open tab shows of a model, when it opens, and Why this word of a new Run while its tab is open: seconds
    # of model passes, so an event of its own after the Run's (whose translation the page shows first), asked by the
    # viewer only while the tab is open (a closed tab adds no event to a translation), its progress over the tabs.
    # A tab that needs no model asks for its contents alone (tab_btn).
    making = {p.run, p.twin, p.judged, p.explained, *controls}
    p.make_btn.click(h.make_tab, making, [p.twin, p.judged, p.explained], **MODEL, show_progress_on=[p.below],
                     **reading_view(p, making)).then(**tab_view)
    p.tab_btn.click(**tab_view)

    def explained_after(event) -> None:
        event.then(None, js=js("explainIfOpen()"), show_progress="hidden", api_visibility="private")

    streamed = list(dict.fromkeys([*made, p.translation, p.out_chips, p.src_chips, p.text_hint]))
    explained_after(gr.on([p.translate_btn.click, p.text.submit], h.translate_page, asked, streamed, **MODEL,
                          **reading_view(p, asked)))
    p.stop_btn.click(h.stop, [p.signal], None, concurrency_limit=None, api_visibility="private")
    forced = {p.run, p.forced, p.judged, p.direction, *controls}
    explained_after(p.force_btn.click(h.force, forced, made, **MODEL, **reading_view(p, forced)))
    picked = {p.run, p.judged, p.direction, *controls}
    explained_after(p.candidates.select(h.candidate, picked, made, **MODEL, **reading_view(p, picked)))
    if p.examples is not None:
        explained_after(p.examples.load_input_event.then(
            h.example_settings, [p.direction], [p.beam, p.max_new, p.top_k, p.lp, p.slow, p.view_set], **DRAW).then(
            h.translate_page, asked, streamed, **MODEL, **reading_view(p, asked)))

    # The viewer draws on any change of its data (a view control is the viewer's own, drawn in the browser), and
    # opens a view a handler names (a link, a head picked below).
    drawn = viewed(p)
    gr.on([c.change for c in drawn], None, drawn, None, js=js("data(...args)"), show_progress="hidden",
          api_visibility="private")
    p.view_set.change(None, [p.view_set], None, js=js("open(args[0])"), show_progress="hidden",
                      api_visibility="private")
    p.tab_data.change(None, [p.tab_data], None, js=js("tabData(args[0])"), show_progress="hidden",
                      api_visibility="private")

    # Tabs (the viewer's): the viewer asks for a tab's contents when it opens (tab_btn), and for what it shows of a
    # model first (make_btn: the untrained twin, head importance, why each piece), in the model's slot, its progress
    # over the tabs
    # why the step's piece and not another: a model pass for the step
    contrasted = {p.run, p.explained, *controls}
    p.contrast_btn.click(h.contrast, contrasted, [p.explained], **MODEL, show_progress_on=[p.below],
                         **reading_view(p, contrasted)).then(**tab_view)

    p.direction.change(h.direction_changed, tab_inputs, [p.text, p.heads_off, *tab_outputs], **DRAW,
                       **reading_view(p, tab_inputs))

    # Heads off: a checkbox, a click on a head (app.js names it and clicks toggle_head), or Reset translates the
    # shown request again with the heads now off.
    ablate = {p.heads_off, p.vectors, *tab_inputs}
    # the progress shows where the model events show it (their one visible output), not on every figure
    ablated = dict(MODEL, outputs=made, show_progress_on=[p.run_info], **reading_view(p, ablate))
    explained_after(p.heads_off.input(h.ablate, ablate, **ablated))
    # a click far below the view: the comparison comes to where the visitor looks
    toggled = p.toggle_head.click(h.toggle_head, [p.heads_off, p.clicked_head], [p.heads_off], **DRAW,
                                  js="(off, clicked) => [off, window.anatomy.clickedHead]").then(h.ablate, ablate,
                                                                                                **ablated)
    toggled.success(None, js=js("echo('ablation')"))
    explained_after(toggled)
    explained_after(p.reset_heads.click(h.every_head_on, None, [p.heads_off], **DRAW).then(h.ablate, ablate,
                                                                                           **ablated))

    # A page load runs no model event unless its address has text, and then exactly one, its first: app.js
    # `opened` clicks link_btn (the link's settings and its translation) or address_btn (the settings alone).
    loaded = [p.link, p.direction, p.model_notices, p.text, p.heads_off_panel, p.heads_off, p.beam, p.max_new, p.lp,
              p.view_set]
    demo.load(None, js=js("opened()"), show_progress="hidden", api_visibility="private")
    p.address_btn.click(h.load_link, None, loaded, **DRAW)
    # the link's own view, not the viewer's (the link sets it)
    linked = {p.signal, p.judged, *controls}  # the viewer's open tab; the link's own view
    p.link_btn.click(h.open_link, linked, list(dict.fromkeys([*loaded, *made, p.toured, p.tour_data])), **MODEL,
                     **reading_view(p, linked))

    # The tour of the shown translation (its two model stops are model passes), opened by app.js from tour_data.
    p.tour_btn.click(h.start_tour, {p.run, p.toured}, [p.toured, p.tour_data], **MODEL)
    p.tour_data.change(None, [p.tour_data], None, js=js("tour(args[0])"), show_progress="hidden",
                       api_visibility="private")
    a = p.animation
    animated = {p.run, *controls}  # the view, with Export animation's settings
    a.button.click(h.animate_page, animated, [a.file], **dict(DRAW, show_progress="minimal"),
                   **reading_view(p, animated))
    # The page file is written on the server (no model); app.js then clicks its link: one click downloads it.
    written = {p.run, p.explained, p.norms, p.toured, *controls}
    saved = p.offline.button.click(h.page_html, written, [p.offline.file], **dict(DRAW, show_progress="minimal"),
                                   **reading_view(p, written))
    saved.success(None, None, None, js=js("save('page-file')"))
    shared = {p.run, *controls}
    p.share_btn.click(h.share, shared, [p.share_query], **DRAW, **reading_view(p, shared)).then(
        None, [p.share_query], [p.share_url], js=js("link(args[0])"))

    # The API: non-streaming endpoints without components of their own (none shown, none triggered by the page),
    # on the page's: the text and direction as typed, any JSON value in the one JSON slot (preprocess=False: each
    # value reaches the handler as sent, which answers a bad one with a notice), a file in the page's file.
    slot = p.trace_data
    api = dict(api_visibility="public", show_progress="hidden", concurrency_id="model", concurrency_limit=1,
               preprocess=False)
    gr.on([], h.api_translate, [p.text, p.direction, slot, slot, slot], [p.translation, p.notice, slot],
          api_name="translate", **api)
    gr.on([], h.api_explain, [p.text, p.direction, slot], [p.translation, p.notice, slot], api_name="explain",
          **api)
    # Translating and drawing in one call: the API has no page to draw on between them.
    gr.on([], h.api_animate, [p.text, p.direction, *[slot] * 10], [a.file, p.notice], api_name="animate", **api)
    gr.on([], h.api_export_html, [p.text, p.direction], [p.offline.file, p.notice], api_name="export_html", **api)
