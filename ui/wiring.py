"""Which event runs which handler, on which inputs and outputs, in which concurrency group."""
from __future__ import annotations

import functools
import inspect
import itertools

import gradio as gr

from .handlers import Handlers
from .layout import Channel, Page

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


# Each `data` value new, so that its .change fires even for data sent before (a view opened twice).
SENT = itertools.count(1)


def handled(p: Page, fn, outputs: list) -> dict:
    """An event's fn and outputs, its handler's Channels (returned like components) sent in the one `data` JSON, by
    their names: {"payload": ..., "tab": ..., "sent": n}, only those the handler returned."""
    if not any(isinstance(c, Channel) for c in outputs):
        return dict(fn=fn, outputs=outputs)

    def pack(out):
        if not isinstance(out, dict) or not any(isinstance(key, Channel) for key in out):
            return out
        sent = {key.name: value for key, value in out.items() if isinstance(key, Channel)}
        kept = {key: value for key, value in out.items() if not isinstance(key, Channel)}
        return {**kept, p.data: {**sent, "sent": next(SENT)}}

    # the same kind of callable as the handler's, with its signature (Gradio fills in gr.Request, gr.Progress, ...)
    if inspect.isasyncgenfunction(fn):
        async def packed(*args, **kwargs):
            async for out in fn(*args, **kwargs):
                yield pack(out)
    elif inspect.isgeneratorfunction(fn):
        def packed(*args, **kwargs):
            for out in fn(*args, **kwargs):
                yield pack(out)
    else:
        def packed(*args, **kwargs):
            return pack(fn(*args, **kwargs))
    return dict(fn=functools.wraps(fn)(packed),
                outputs=list(dict.fromkeys(p.data if isinstance(c, Channel) else c for c in outputs)))


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
    def ours(fn, outputs: list) -> dict:
        return handled(p, fn, outputs)

    tab_view = dict(inputs=tab_inputs, **ours(h.tab_view, tab_outputs), **DRAW, **reading_view(p, tab_inputs))

    replayed = {p.run, p.signal, p.vectors, *controls}
    p.replay.change(inputs=replayed, **ours(h.replay, [*shown, p.vectors]), **REPLAY,
                    **reading_view(p, replayed)).then(**tab_view)
    walked = {p.run, p.vectors, *controls}
    p.walk_btn.click(inputs=walked, **ours(h.walk, [p.vectors, p.walk_data]), **MODEL, **reading_view(p, walked))
    p.norms_btn.click(inputs={p.run, p.norms}, **ours(h.weigh, [p.norms, p.norms_data]), **MODEL)

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
    explained_after(gr.on([p.translate_btn.click, p.text.submit], inputs=asked, **ours(h.translate_page, streamed),
                          **MODEL,
                          **reading_view(p, asked)))
    p.stop_btn.click(h.stop, [p.signal], None, concurrency_limit=None, api_visibility="private")
    forced = {p.run, p.forced, p.judged, p.direction, *controls}
    explained_after(p.force_btn.click(inputs=forced, **ours(h.force, made), **MODEL, **reading_view(p, forced)))
    picked = {p.run, p.judged, p.direction, *controls}
    explained_after(p.candidates.select(inputs=picked, **ours(h.candidate, made), **MODEL, **reading_view(p, picked)))
    if p.examples is not None:
        explained_after(p.examples.load_input_event.then(
            inputs=[p.direction], **ours(h.example_settings, [p.beam, p.max_new, p.top_k, p.lp, p.slow, p.view_set]),
            **DRAW).then(inputs=asked, **ours(h.translate_page, streamed), **MODEL, **reading_view(p, asked)))

    # The viewer draws on any change of its data (a view control is the viewer's own, drawn in the browser), and
    # opens a view a handler names (a link, a head picked below).
    p.data.change(None, [p.data], None, js=js("data(args[0])"), show_progress="hidden", api_visibility="private")

    # Tabs (the viewer's): the viewer asks for a tab's contents when it opens (tab_btn), and for what it shows of a
    # model first (make_btn: the untrained twin, head importance, why each piece), in the model's slot, its progress
    # over the tabs
    # why the step's piece and not another: a model pass for the step
    contrasted = {p.run, p.explained, *controls}
    p.contrast_btn.click(h.contrast, contrasted, [p.explained], **MODEL, show_progress_on=[p.below],
                         **reading_view(p, contrasted)).then(**tab_view)

    p.direction.change(inputs=tab_inputs, **ours(h.direction_changed, [p.text, p.heads_off, *tab_outputs]), **DRAW,
                       **reading_view(p, tab_inputs))

    # Heads off: a checkbox, a click on a head (app.js names it and clicks toggle_head), or Reset translates the
    # shown request again with the heads now off.
    ablate = {p.heads_off, p.vectors, *tab_inputs}
    # the progress shows where the model events show it (their one visible output), not on every figure
    ablated = dict(MODEL, inputs=ablate, **ours(h.ablate, made), show_progress_on=[p.run_info],
                   **reading_view(p, ablate))
    explained_after(p.heads_off.input(**ablated))
    # a click far below the view: the comparison comes to where the visitor looks
    toggled = p.toggle_head.click(h.toggle_head, [p.heads_off, p.clicked_head], [p.heads_off], **DRAW,
                                  js="(off, clicked) => [off, window.anatomy.clickedHead]").then(**ablated)
    toggled.success(None, js=js("echo('ablation')"))
    explained_after(toggled)
    explained_after(p.reset_heads.click(h.every_head_on, None, [p.heads_off], **DRAW).then(**ablated))

    # A page load runs no model event unless its address has text, and then exactly one, its first: app.js
    # `opened` clicks link_btn (the link's settings and its translation) or address_btn (the settings alone).
    loaded = [p.link, p.direction, p.model_notices, p.text, p.heads_off_panel, p.heads_off, p.beam, p.max_new, p.lp,
              p.view_set]
    demo.load(None, js=js("opened()"), show_progress="hidden", api_visibility="private")
    p.address_btn.click(**ours(h.load_link, loaded), **DRAW)
    # the link's own view, not the viewer's (the link sets it)
    linked = {p.signal, p.judged, *controls}  # the viewer's open tab; the link's own view
    p.link_btn.click(inputs=linked, **ours(h.open_link, list(dict.fromkeys([*loaded, *made, p.toured, p.tour_data]))),
                     **MODEL,
                     **reading_view(p, linked))

    # The tour of the shown translation (its two model stops are model passes), opened by app.js from tour_data.
    p.tour_btn.click(inputs={p.run, p.toured}, **ours(h.start_tour, [p.toured, p.tour_data]), **MODEL)
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
    slot = p.data
    api = dict(api_visibility="public", show_progress="hidden", concurrency_id="model", concurrency_limit=1,
               preprocess=False)
    gr.on([], h.api_translate, [p.text, p.direction, slot, slot, slot], [p.translation, p.notice, slot],
          api_name="translate", **api)
    gr.on([], h.api_explain, [p.text, p.direction, slot], [p.translation, p.notice, slot], api_name="explain",
          **api)
    # Translating and drawing in one call: the API has no page to draw on between them.
    gr.on([], h.api_animate, [p.text, p.direction, *[slot] * 10], [a.file, p.notice], api_name="animate", **api)
    gr.on([], h.api_export_html, [p.text, p.direction], [p.offline.file, p.notice], api_name="export_html", **api)
