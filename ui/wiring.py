"""Which event runs which handler, on which inputs and outputs, in which concurrency group."""
from __future__ import annotations

import functools
import inspect
import itertools
import json

import gradio as gr

from anatomy.exports import ExportLimits
from anatomy.settings import number

from .handlers import Handlers
from .layout import Channel, Page, Slot
from .values import Declared

# The rule: every model pass holds the model's slot (anatomy/slot.py: one pass at a time across every visitor, first
# come first served; a small CPU runs one pass well, two badly), and no other work does: anatomy/engine.py, the only
# calls into a model, holds it, and gives it up between the slices of long work (a translation's steps, attribution's
# and importance's batches), so that a short translation never waits for a whole explanation. An event whose handler
# runs a model pass (translate, inspect, a beam candidate, a link, the untrained twin, head importance, the softmax
# walk's q, k, v, heads off, the API) runs in MODEL, whose events wait for the slot in its threads, at most
# model_events() at once (the rest wait in Gradio's queue, which shows their place); no other event does, so drawing
# and view changes never wait for a translation (tokenizing alone is not a model pass). tests/test_wiring.py checks it.
# A model event makes what the page will show of a model with its Run (the twin and importance, for the open tab) and
# sends the Run's payload and the open tab's data with it, so that a translation is one request; what a tab opened
# later finds missing, the viewer asks of a model event (model_ask: make_twin, judge). The page's viewer
# (anatomy/viewer/host.js) draws the trace's views from its payload: a view change runs in the browser only, and the
# viewer asks for the softmax walk (walk), whose q, k, v need the model, and for the value norms (norms).
DEFAULT_MODEL_EVENTS = 8


def model_events() -> int:
    """Model events running at once (each waits for the model's slot in a thread of its own): $ANATOMY_MODEL_EVENTS,
    default 8."""
    return number("ANATOMY_MODEL_EVENTS", DEFAULT_MODEL_EVENTS, 1)


# The page's events are "private", out of /info and gradio_client (which refuses them); the page calls them all
# the same, as can any raw HTTP client: only the API's endpoints below are public. With
# concurrency_limit=model_events(), read when the page is wired.
MODEL = dict(concurrency_id="model", api_visibility="private")
# Drawing figures: no model, no shared limit.
DRAW = dict(concurrency_limit=None, api_visibility="private", show_progress="hidden")
# Slow-motion replays: a replay waits between frames without a thread, but each running event holds one of the
# queue's max_threads (40) slots, and each frame's payload is made in Python beside the model's run: at most REPLAYS
# replay at once (the rest wait their turn), so that they never hold every slot and a translation still runs at near
# its idle pace. tests/test_wiring.py checks it.
REPLAYS = 4
REPLAY = dict(concurrency_id="replay", concurrency_limit=REPLAYS, api_visibility="private",
              show_progress="hidden")


def exporting(limits: ExportLimits) -> tuple[dict, dict]:
    """The page's exports' groups: animations (each drawn in a worker process, anatomy/exports.py) and offline pages
    (written in the server's process), each a few at once, the rest waiting their turn in the queue (which holds no
    thread for them): six 1920×1080 animations at once took the server from 1 GB to 11.7 GB, each holding all its
    frames. docs/limits.md#exports; tests/test_abuse_exports.py checks it."""
    files = dict(api_visibility="private", show_progress="minimal")
    return (dict(concurrency_id="export", concurrency_limit=limits.animations, **files),
            dict(concurrency_id="page", concurrency_limit=limits.pages, **files))


# Each `data` value new, so that its .change fires even for data sent before (a view opened twice).
SENT = itertools.count(1)


def js(call: str) -> str:
    """A browser-side handler calling into ui/static/app.js."""
    return f"(...args) => window.anatomy.{call}"


def reading_view(p: Page, inputs: set, ask: str = "") -> dict:
    """An event's keywords for one that reads the viewer's view: the page fills that input in with it (controls.js),
    at the place Gradio gives it in a set of inputs (sorted by component id); an event that answers what the viewer
    asks (`ask`: model or draw) takes the first such ask with it."""
    at = sorted(inputs, key=lambda c: c._id).index(p.view)
    viewed = f"viewed({json.dumps(ask)})" if ask else "viewed()"
    return dict(js=f"(...args) => {{ args[{at}] = window.anatomy.{viewed}; return args; }}")


def handled(p: Page, fn, reads: set | list | None, writes: list, ask: str = "") -> dict:
    """An event's fn, inputs and outputs for a handler that reads `reads` and writes `writes`, components, Slots of
    the visitor's Session and Channels of the viewer's data alike. The Session is read as one State (the handler
    reads its Slots as ui.values.Inputs does) and the Slots written are set on it; the Channels written go to the
    viewer in the one `data` JSON, by name: {"payload": ..., "tab": ..., "sent": n}, only those the handler returned.
    An event that reads the view has the page fill it in (reading_view)."""
    slots = [c for c in writes if isinstance(c, Slot)]
    if isinstance(reads, set):
        reads = {p.session if isinstance(c, Slot) else c for c in reads} | ({p.session} if slots else set())
    elif slots or any(isinstance(c, Slot) for c in reads or []):
        raise ValueError(f"{fn.__name__}: an event that reads or writes the Session takes its inputs as a set")
    outputs = list(dict.fromkeys(p.data if isinstance(c, Channel) else c for c in writes if not isinstance(c, Slot)))
    view = reading_view(p, reads, ask) if isinstance(reads, set) and p.view in reads else {}
    if not slots and p.data not in outputs and not isinstance(reads, set):
        return dict(fn=fn, inputs=reads, outputs=outputs, **view)

    def pack(values, out):
        if isinstance(out, dict) and out.get("__type__") == "update":  # gr.skip()
            return out
        if not isinstance(out, dict):
            if len(writes) != 1:
                return out
            out = {writes[0]: out}  # the one thing the event writes, returned as it is
        session = values[p.session] if slots else None
        kept, sent = {}, {}
        for key, value in out.items():
            if isinstance(key, Slot):
                if key in slots:  # what the handler made for another caller (a test, open_link) stays there
                    setattr(session, key.name, value)
            elif isinstance(key, Channel):
                sent[key.name] = key.sent(value) if key.sent else value
            else:
                kept[key] = value
        return {**kept, p.data: {**sent, "sent": next(SENT)}} if sent else kept

    def declared(args: tuple) -> tuple:  # what the event declared, all it may read (ui.values.Inputs.of)
        return (Declared(args[0]), *args[1:]) if isinstance(reads, set) else args

    # the same kind of callable as the handler's, with its signature (Gradio fills in gr.Request, gr.Progress, ...)
    if inspect.isasyncgenfunction(fn):
        async def packed(*args, **kwargs):
            async for out in fn(*declared(args), **kwargs):
                yield pack(args[0], out)
    elif inspect.isgeneratorfunction(fn):
        def packed(*args, **kwargs):
            for out in fn(*declared(args), **kwargs):
                yield pack(args[0], out)
    else:
        def packed(*args, **kwargs):
            return pack(args[0] if args else None, fn(*declared(args), **kwargs))
    return dict(fn=functools.wraps(fn)(packed), inputs=reads, outputs=outputs, **view)


def wire(page: Page, h: Handlers, demo: gr.Blocks) -> None:
    p = page
    model = dict(MODEL, concurrency_limit=model_events())
    # Each event says what its handler reads and writes (`ours`, made by `handled`): inputs given as a set reach the
    # handler as one dict keyed by component, which it reads as ui.values.Inputs (no handler depends on the order of
    # its inputs); the view, filled in by the page, carries the open tab too.

    def ours(fn, reads, writes: list, ask: str = "") -> dict:
        return handled(p, fn, reads, writes, ask)

    # what a translation is asked with; the view (with the open tab) for the walk's q, k, v and the tab's data
    asked = {*p.settings.values(), p.signal, p.view}
    tab_inputs = {p.run, p.twin, p.judged, p.explained, p.direction, p.view}
    shown = [p.translation, p.ablation, p.run_info, p.src_chips, p.out_chips, p.candidates, p.forced, p.trace.file,
             p.offline.file, p.run, p.trace_data]
    tab_outputs = [p.tab_data, p.explain_data, p.importance_data, p.twin_data, p.pe_data]
    # a model event sends its Run, what the page shows of it and the open tab's data in one event (Handlers._made)
    made = list(dict.fromkeys([p.run, p.twin, p.judged, p.explained, p.vectors, p.run_info, *shown, p.replay,
                               *tab_outputs]))
    tab_view = dict(**ours(h.tab_view, tab_inputs, tab_outputs), **DRAW)

    def explained_after(event) -> None:
        event.then(None, js=js("explainIfOpen()"), show_progress="hidden", api_visibility="private")

    # a replay's Run is explained once it has played (Why this word skips a replaying Run)
    explained_after(p.replay.change(**ours(h.replay, {p.run, p.signal, p.vectors, p.view}, [*shown, p.vectors]),
                                    **REPLAY).then(**tab_view))
    ablate = {p.heads_off, p.vectors, *tab_inputs}
    # what a page's address sets
    loaded = [p.direction, p.model_notices, p.text, p.heads_off_panel, p.heads_off, p.beam, p.max_new, p.lp,
              p.view_set]
    # What the viewer asks (app.js `ask`, named in its view): of a model, the softmax walk, the value norms, what
    # the open tab shows of a model (when it opens, and Why this word of a new Run while its tab is open: seconds of
    # model passes, so an event of its own after the Run's, whose translation the page shows first; a closed tab adds
    # no event to a translation), Why this word's comparison, a clicked head off or on, an address's translation;
    # and drawn, a tab's contents, a link, an address's settings; and Export animation's file, in a group of its
    # own (exporting). Asked any number of times while one runs; a model's progress over the tabs.
    # A page load runs no model event unless its address has text, and then exactly one, its first: app.js `opened`
    # asks for the link's settings and translation (link) or for the settings alone (address).
    answers = [p.vectors, p.walk_data, p.norms, p.norms_data, p.heads_off, *made, *loaded, p.toured, p.tour_data]
    p.model_ask.click(**ours(h.ask_model, {*ablate, p.norms}, list(dict.fromkeys(answers)), "model"),
                      **model, show_progress_on=[p.below], trigger_mode="multiple").success(
        None, js=js("answered()"), show_progress="hidden", api_visibility="private")
    # drawn: Back to the model's own shows the kept Run again
    p.draw_ask.click(**ours(h.ask_draw, tab_inputs, list(dict.fromkeys([*tab_outputs, p.link_data, *loaded, *shown])),
                            "draw"),
                     **dict(DRAW, show_progress="minimal"), trigger_mode="multiple")

    streamed = list(dict.fromkeys([*made, p.translation, p.out_chips, p.src_chips, p.text_hint]))
    # its progress (the queue's place, the time) over the translation (the viewer draws it: result.js)
    translating = dict(model, show_progress_on=[p.result])
    explained_after(gr.on([p.translate_btn.click, p.text.submit], **ours(h.translate_page, asked, streamed),
                          **translating))
    p.stop_btn.click(**ours(h.stop, {p.signal}, []), concurrency_limit=None, api_visibility="private")
    explained_after(p.force_btn.click(**ours(h.force, {p.run, p.forced, p.judged, p.direction, p.view}, made),
                                      **translating))
    # an example: put in the form with its model's own settings, then translated as Translate does
    explained_after(p.example_ask.click(
        **ours(h.example, {p.view}, [p.text, p.direction, p.compare, p.beam, p.max_new, p.top_k, p.lp, p.slow,
                                     p.view_set], "example"),
        **DRAW).then(**ours(h.translate_page, asked, streamed), **translating))

    # The viewer draws on any change of its data (a view control is the viewer's own, drawn in the browser), opens a
    # view a handler names (a link, a head picked below) and shows the open tab's contents.
    p.data.change(None, [p.data], None, js=js("data(args[0])"), show_progress="hidden", api_visibility="private")

    p.direction.change(**ours(h.direction_changed, tab_inputs, [p.text, p.heads_off, *tab_outputs]), **DRAW)

    # Heads off: a checkbox, a click on a head (the viewer asks: toggle), or Reset translates the shown request again
    # with the heads now off; the progress shows where the model events show it (their one visible output)
    ablated = dict(model, **ours(h.ablate, ablate, made), show_progress_on=[p.result])
    explained_after(p.heads_off.input(**ablated))
    explained_after(p.reset_heads.click(h.every_head_on, None, [p.heads_off], **DRAW).then(**ablated))

    demo.load(None, js=js("opened()"), show_progress="hidden", api_visibility="private")

    # The tour of the shown translation (its model stops are model passes), opened by app.js from tour_data.
    p.tour_btn.click(**ours(h.start_tour, {p.run, p.toured}, [p.toured, p.tour_data]), **model)
    _files(p, h)
    _api(p, h, model)


def _files(p: Page, h: Handlers) -> None:
    """The files a visitor asks for: the trace, the offline page, the animation (Export animation's file, asked by the
    viewer), each in a group of its own (exporting)."""
    animations, pages = exporting(h.exporter.limits)
    p.export_ask.click(**handled(p, h.animate_page, {p.run, p.view}, [p.animation_file], "export"), **animations,
                       show_progress_on=[p.animation_file], trigger_mode="multiple")
    # The trace and page files are written on the server when asked (no model); app.js then clicks the file's link:
    # one click downloads it.
    traced = p.trace.button.click(**handled(p, h.trace_json, {p.run}, [p.trace.file]),
                                  **dict(DRAW, show_progress="minimal"))
    traced.success(None, None, None, js=js("save('trace-file')"))
    saved = p.offline.button.click(**handled(p, h.page_html, {p.run, p.explained, p.norms, p.toured, p.view},
                                             [p.offline.file]), **pages)
    saved.success(None, None, None, js=js("save('page-file')"))


def _api(p: Page, h: Handlers, model: dict) -> None:
    """The API: non-streaming endpoints without components of their own (none shown, none triggered by the page), on
    the page's: the text and direction as typed, any JSON value in the one JSON slot (preprocess=False: each value
    reaches the handler as sent, which answers a bad one with a notice), a file in the page's file; in the model's
    group."""
    slot = p.data
    api = dict(model, api_visibility="public", show_progress="hidden", preprocess=False)
    gr.on([], h.api_translate, [p.text, p.direction, slot, slot, slot, slot], [p.api_text, p.notice, slot],
          api_name="translate", **api)
    gr.on([], h.api_explain, [p.text, p.direction, slot], [p.api_text, p.notice, slot], api_name="explain",
          **api)
    # Translating and drawing in one call: the API has no page to draw on between them.
    gr.on([], h.api_animate, [p.text, p.direction, *[slot] * 10], [p.animation_file, p.notice], api_name="animate",
          **api)
    gr.on([], h.api_export_html, [p.text, p.direction], [p.offline.file, p.notice], api_name="export_html", **api)
