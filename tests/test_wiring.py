"""The concurrency rule (ui/wiring.py), checked on the real wiring: every forward or backward pass of a model holds the
model's slot (anatomy/slot.py), an event whose handler runs one runs in the model's concurrency group, and no other
event does either (drawing and view changes never wait for a translation; tokenizing alone is not a model pass)."""
from __future__ import annotations

import asyncio
import dataclasses
import html
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import gradio as gr
import pytest
import torch
from gradio.helpers import special_args

from anatomy.inputs import DISPLAYS, parse_link
from anatomy.run import StopSignal
from anatomy.slot import SLOT
from tests.app_fixtures import SENTENCE, configs, run_of
from ui.handlers import Handlers
from ui.layout import Slot
from ui.values import Inputs, Session, Tab
from ui.wiring import handled, model_events

# the slot's tests time model events against each other on an otherwise idle machine: scripts/test.sh runs them alone
pytestmark = pytest.mark.solo


@dataclasses.dataclass
class Passes:
    """What calling a handler did with the models: forward passes, those made without holding the model's slot, and
    the times it took the slot."""

    made: int = 0
    unheld: int = 0
    turns: int = 0


def _passes(fn, args: list) -> Passes:
    """What calling the handler `fn` (as Gradio calls it, to its last yield) did with any torch module (every
    model's modules: ours, the untrained twin, a Hub model; a backward pass needs a forward one)."""
    seen = Passes()

    def forward(module, inputs):
        seen.made += 1
        seen.unheld += not SLOT.mine

    hook = torch.nn.modules.module.register_module_forward_pre_hook(forward)
    turns = SLOT.turns
    try:
        out = fn(*args)
        if inspect.isgenerator(out):
            for _ in out:
                pass
        elif inspect.isasyncgen(out):
            async def drain():
                async for _ in out:
                    pass
            asyncio.run(drain())
        elif inspect.iscoroutine(out):
            asyncio.run(out)
    except gr.Error:
        pass  # a refusal (no text, ...) is an answer too
    finally:
        hook.remove()
    seen.turns = SLOT.turns - turns
    return seen


# Every request carries the page's address (Gradio's page sends it with each event): a link with text.
ADDRESS = types.SimpleNamespace(query_params={"text": SENTENCE})


def _pages(tiny):
    """Page states that reach every branch of every handler: no run; a greedy run and a beam search (candidates),
    each with every tab open and with every display of the large view, one head switched off in the checkboxes;
    the source text, a link, a typed translation and the API's text filled in."""
    p = tiny.page
    link = parse_link({"text": SENTENCE}, configs(tiny))
    base = {c: getattr(c, "value", None) for c in tiny.demo.blocks.values()}
    base.update({p.text: SENTENCE, p.forced: SENTENCE,
                 p.direction: "de-en", p.link: link, p.signal: StopSignal(), p.heads_off: ["encoder:1.1"],
                 p.run: None, p.twin: None})
    yield base
    for run in (run_of(tiny, max_new=4), run_of(tiny, beam=2, max_new=4)):
        for tab in Tab:
            for ask in ("", "make", "contrast", "tab"):
                yield {**base, p.run: run, p.view: json.dumps({"tab": tab.value, "ask": ask})}
        for display in DISPLAYS:
            yield {**base, p.run: run, p.view: json.dumps({"display": display, "ask": "walk"})}
        for asked in ({"ask": "norms", "weights": "norm"}, {"ask": "toggle", "clicked": "cross:1.1"},
                      {"ask": "animation"}, {"ask": "share"}, {"ask": "candidate", "candidate": 1},
                      {"ask": "example", "example": 0}):
            yield {**base, p.run: run, p.view: json.dumps(asked)}


SESSION = {f.name for f in dataclasses.fields(Session)}


def _inputs(fn, page: dict) -> list:
    """The event's inputs from `page` as Gradio passes them: one dict keyed by component for a set of them (the
    Session made of the page's Slots)."""
    values = {c: page.get(c) for c in fn.inputs}
    for c in fn.inputs:
        if isinstance(c.value, Session):
            values[c] = Session(**{slot.name: page[slot] for slot in page
                                  if isinstance(slot, Slot) and slot.name in SESSION})
    return [values] if fn.inputs_as_dict else [values[c] for c in fn.inputs]


def _same(value) -> object:
    """What tells two pages' values apart: a string by its text (each run's pages repeat the views), else the object."""
    return value if isinstance(value, str) else id(value)


@pytest.mark.slow  # a minute: every handler on ~80 page states
def test_every_model_pass_holds_the_model_s_slot_and_only_model_events_take_it(tiny):
    """Each Python handler the page and the API wire, called as Gradio calls it on page states that reach each of
    its branches; a torch forward hook tells which run a model. Every pass holds the model's slot; an event that
    makes one runs in the model's group (concurrency_id "model", model_events() at once), and every other one outside
    it and without taking the slot (drawing and view changes never wait for a translation)."""
    pages = list(_pages(tiny))
    outside, idle, unheld, taken, known = [], [], [], [], {}
    for fn in tiny.demo.fns.values():
        if not isinstance(getattr(inspect.unwrap(fn.fn or len), "__self__", None), Handlers):
            continue  # the browser's own (js=), or Gradio's (an example's click fills the inputs)
        target = tiny.demo.blocks.get(fn.targets[0][0]) if fn.targets else None
        event = gr.SelectData(target, {"index": 0, "value": "", "row_value": ["", 1, 1]})
        called = (fn.fn, tuple(c._id for c in fn.inputs))  # one handler on the same inputs: once
        if called not in known:
            # the pages that differ in what this event reads
            seen = {tuple(_same(page.get(c)) for c in fn.inputs): page for page in pages}.values()
            known[called] = [_passes(fn.fn, special_args(fn.fn, _inputs(fn, page), ADDRESS, event)[0])
                             for page in seen]
        passes = known[called]
        name = fn.name or getattr(fn.fn, "__name__", "?")
        in_group = fn.concurrency_id == "model" and fn.concurrency_limit == model_events()
        reached = any(p.made for p in passes)
        if reached and not in_group:
            outside.append(name)
        if in_group and not reached:
            idle.append(name)
        if any(p.unheld for p in passes):
            unheld.append(name)
        if any(p.turns and not p.made for p in passes):
            taken.append(name)
    assert sorted(set(unheld)) == [], "a model pass without the model's slot"
    assert sorted(set(outside)) == [], "a model pass outside the model's group"
    assert sorted(set(idle)) == [], "in the model's group without a model pass"
    assert sorted(set(taken)) == [], "the model's slot taken without a model pass"
    assert len(known) >= 15, "the handlers were not found"


def test_a_slow_motion_replay_waits_without_a_thread_in_a_group_of_its_own(tiny):
    """A replay waits between its frames in an async generator (no worker thread), in a group whose limit leaves
    most of the queue's slots (max_threads) to translations and drawing: replays beyond it wait their turn."""
    [replay] = [fn for fn in tiny.demo.fns.values() if getattr(fn.fn, "__wrapped__", None) == tiny.replay]
    assert inspect.isasyncgenfunction(replay.fn)
    assert replay.concurrency_id == "replay" and 1 <= replay.concurrency_limit <= tiny.demo.max_threads // 4


REPLAYING = """
import sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from benchmarks.common import PageSession
from tests.test_wiring import SENTENCE

def translated(_):
    page = PageSession(sys.argv[1])
    event = page.on("translate")
    page.call(event, page.values(event, {"Source text": SENTENCE, "Beam size": 1, "Slow motion": 0.5,
                                         "Max new tokens": 12}))
    return page

with ThreadPoolExecutor(4) as pool:
    visitors = list(pool.map(translated, range(20)))
for page in visitors:  # what the page does when its Run is a slow-motion one
    threading.Thread(target=page.call, args=("replay",), daemon=True).start()
print("replaying", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_twenty_visitors_replaying_in_slow_motion_do_not_delay_a_21st_visitor_s_translation(tiny):
    """Issue 33: while 20 visitors replay a 12-piece translation at 0.5 s per piece, a 21st visitor's translation
    takes at most twice what it takes on the idle server (the mean of ten: one that waits for a slot counts). The
    server has as many slots as there are replays (max_threads=20; the deployed app has 40): replays that held a
    slot each for their whole run would leave none. The replaying visitors are another process, as browsers are.
    A second attempt, idle and busy measured again, is allowed: on a 2-core machine running the whole suite one
    pair of means has measured 2.5× where the test alone measures 1.2-1.7× (the defect it guards made it 10×)."""
    from gradio_client import Client

    import ui

    threads, torch_threads = tiny.demo.max_threads, torch.get_num_threads()
    ui.set_threads()  # one, as `python app.py` runs (this process may have been left with more)
    _, url, _ = tiny.demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, max_threads=20,
                                 **ui.launch_options())
    try:
        other = Client(url, verbose=False, download_files=False)

        def translation_s() -> float:
            start = time.perf_counter()
            other.predict(text=SENTENCE, direction="de-en", max_new_tokens=12, api_name="/translate")
            return time.perf_counter() - start

        def busy_and_idle() -> tuple[float, float]:
            idle = statistics.fmean(translation_s() for _ in range(10))
            visitors = subprocess.Popen([sys.executable, "-c", REPLAYING, url], stdout=subprocess.PIPE, text=True,
                                        cwd=Path(__file__).resolve().parents[1])
            try:
                assert visitors.stdout.readline().strip() == "replaying"
                time.sleep(1.0)  # the first replays under way
                start = time.monotonic()
                busy = statistics.fmean(translation_s() for _ in range(10))
                assert time.monotonic() - start < 6, "the first replays (12 × 0.5 s) ended before the translations " \
                                                     "were timed"
            finally:
                visitors.kill()
                visitors.wait()
            return busy, idle

        translation_s()  # warm
        tries, began = [], time.monotonic()
        for attempt in range(2):
            if attempt:  # the first attempt's replays (20, 4 at a time, 6 s each) have all ended: idle again
                time.sleep(max(0.0, began + 35 - time.monotonic()))
                began = time.monotonic()
            tries.append(busy_and_idle())
            if tries[-1][0] <= 2 * tries[-1][1]:
                break
        else:
            raise AssertionError("beside 20 replays, against the idle server: "
                                 + ", ".join(f"{b * 1000:.0f} ms against {i * 1000:.0f} ms" for b, i in tries))
    finally:
        tiny.demo.close()
        tiny.demo.max_threads = threads
        torch.set_num_threads(torch_threads)


def test_a_view_control_or_new_data_draws_in_the_browser_only(tiny):
    """The view controls are the viewer's (anatomy/viewer/controls.js, not components): a view change makes no
    request to the server (benchmarks/page.py counts them in Chromium). A change of the data the viewer draws from,
    of a view a handler opens or of the open tab's contents runs the viewer's JavaScript and no Python; an event
    that reads the view has the viewer fill it in."""
    p = tiny.page
    assert not any(hasattr(p, name) for name in ("kind", "layer", "head", "step", "display", "weights", "tab",
                                                 "pe_dims", "method", "pick_head"))
    draws = [fn for fn in tiny.demo.fns.values() if fn.js and "anatomy.data(" in fn.js]
    assert len(draws) == 1 and draws[0].fn is None
    assert [c._id for c in draws[0].inputs] == [p.data._id] and {t[0] for t in draws[0].targets} == {p.data._id}
    # no other JSON reaches the page: every channel a handler returns comes in `data`
    assert [c for c in tiny.demo.blocks.values() if isinstance(c, gr.JSON)] == [p.data]
    for fn in tiny.demo.fns.values():
        if p.view in fn.inputs:  # filled in at its place among the inputs, by the viewer
            assert fn.js and f"args[{fn.inputs.index(p.view)}] = window.anatomy.viewed(" in fn.js, fn.name
    # what the viewer asks goes with the event of its kind's button
    for button, kind in ((p.model_ask, "model"), (p.draw_ask, "draw"), (p.export_ask, "export")):
        [fn] = [fn for fn in tiny.demo.fns.values() if fn.targets and fn.targets[0][0] == button._id]
        assert f'window.anatomy.viewed("{kind}")' in fn.js and fn.trigger_mode == "multiple"


def _load_events(tiny) -> tuple[list, dict]:
    """The events a page load runs (Gradio's load triggers), and those of the buttons app.js `opened` clicks."""
    demo = tiny.demo
    loads = [fn for fn in demo.fns.values() if any(target[1] == "load" for target in fn.targets)]
    clicked = {tiny.page.model_ask._id: "model", tiny.page.draw_ask._id: "draw"}
    buttons = {clicked[fn.targets[0][0]]: fn for fn in demo.fns.values()
               if fn.targets and fn.targets[0][0] in clicked}
    return loads, buttons


def test_a_page_load_runs_no_model_event_unless_its_address_has_text_and_then_one(tiny):
    """A page load runs only the browser's `opened` (no request): it asks for the address's settings in the drawing
    group, or, for an address with text, the link's settings and translation in one event of the model's slot; a
    plain address asks nothing when the page as built is its page (no Hub model loading: tests/test_browser.py)."""
    loads, buttons = _load_events(tiny)
    assert [fn.fn for fn in loads] == [None] and "opened()" in loads[0].js
    assert "A.ask(text ? 'link' : 'address')" in (Path(__file__).parents[1] / "ui/static/app.js").read_text()
    offer = json.loads(html.unescape(tiny.page.explorer.value.split('data-offer="')[1].split('"')[0]))
    assert offer["settled"] is (not tiny.registry.pending) is True
    draw, model = buttons["draw"], buttons["model"]
    assert draw.concurrency_id != "model" and draw.fn.__wrapped__ == tiny.ask_draw
    assert (model.concurrency_id, model.concurrency_limit, model.fn.__wrapped__) == ("model", model_events(),
                                                                                     tiny.ask_model)
    # nothing chained after the link's but the browser's own: its translation is the page's one model event
    assert all(fn.fn is None for fn in tiny.demo.fns.values() if fn.trigger_after in (draw._id, model._id))
    p = tiny.page
    base = {c: getattr(c, "value", None) for c in tiny.demo.blocks.values()}
    base.update({p.signal: StopSignal(), p.view: json.dumps({"ask": "address"})})
    plain = types.SimpleNamespace(query_params={"view": "encoder", "layer": "1"})
    assert not _passes(tiny.ask_draw, special_args(draw.fn, _inputs(draw, base), plain)[0]).made
    assert tiny.ask_draw(_inputs(draw, base)[0], plain)[p.view_set]["kind"] == "encoder"
    out = tiny.ask_model(_inputs(model, {**base, p.view: json.dumps({"ask": "link"})})[0], types.SimpleNamespace(
        query_params={"text": SENTENCE, "view": "encoder", "layer": "1", "max": "3", "tour": "2"}))
    run = out[p.run]
    assert run.trace.output_tokens and run.request.decoding.max_new_tokens == 3
    assert out[p.view_set]["kind"] == "encoder" and out[p.tour_data]["start"] == 2
    assert out[p.text]["value"] == SENTENCE


def test_a_handler_s_slots_are_kept_in_the_session_and_its_channels_reach_the_viewer_in_one_new_value(tiny):
    """A handler returns Slots and Channels like components. The wiring reads the Session for the Slots an event
    reads or writes and keeps there those it writes (only those); it sends the Channels as one `data` value, by
    name, with a number that makes each value new (a view opened twice opens twice): from plain, generator and async
    handlers alike, with the handler's own signature (Gradio fills in gr.Request by it)."""
    p = tiny.page

    def plain(values, request: gr.Request):
        return {p.view_set: {"layer": 1}, p.forced: "a", p.run: "made", p.twin: "not kept"}

    def streamed(values):
        yield {p.forced: "a"}
        yield {p.trace_data: {"x": 1}, p.tab_data: None}

    async def replayed(values):
        yield {p.tour_data: {"stops": []}}

    made = handled(p, plain, {p.run, p.view}, [p.forced, p.view_set, p.run])
    assert made["inputs"] == {p.session, p.view} and made["outputs"] == [p.forced, p.data]
    assert "window.anatomy.viewed()" in made["js"]
    assert list(inspect.signature(made["fn"]).parameters) == ["values", "request"]
    session = Session()
    first, second = made["fn"]({p.session: session}, None), made["fn"]({p.session: session}, None)
    assert first[p.forced] == "a" and set(first) == {p.forced, p.data}
    assert first[p.data]["open"] == {"layer": 1} and set(first[p.data]) == {"open", "sent"}
    assert second[p.data]["sent"] > first[p.data]["sent"]
    assert session.run == "made" and session.twin is None
    steps = list(handled(p, streamed, {p.run}, [p.trace_data, p.tab_data, p.forced])["fn"]({}))
    assert steps[0] == {p.forced: "a"} and set(steps[1][p.data]) == {"payload", "tab", "sent"}
    fn = handled(p, replayed, {p.run}, [p.tour_data])["fn"]
    assert inspect.isasyncgenfunction(fn)

    async def drain():
        return [out async for out in fn({})]
    assert asyncio.run(drain())[0][p.data]["tour"] == {"stops": []}
    assert handled(p, plain, [p.text], [p.forced]) == dict(fn=plain, inputs=[p.text], outputs=[p.forced])
    # a Channel sends what the page draws of the handler's value: the run's notes, written in Markdown, as HTML
    noted = handled(p, lambda values: {p.run_info: "**b** <i>"}, {p.run}, [p.run_info])["fn"]({})
    assert noted[p.data]["info"].strip() == "<p><strong>b</strong> &lt;i&gt;</p>"
    with pytest.raises(ValueError, match="as a set"):
        handled(p, plain, [p.text], [p.run])


def test_the_page_holds_at_most_sixty_components_every_block_counted(shipped):
    """Issue 48: the served config's components (forms, rows, columns and States included) of the app on the
    shipped models; the viewer's controls, tabs and data are the page's own HTML and JSON."""
    count = len(shipped.get_config_file()["components"])
    print(f"components={count}")
    assert count <= 60


def test_reading_an_input_the_event_did_not_declare_is_an_error_in_tests(tiny):
    """In tests ($ANATOMY_STRICT_INPUTS, set by conftest.py), a handler that reads what its event does not declare
    fails and names it, where the app would read the default; every event's handler, on every branch the page states
    above reach, reads only what it declares (test_every_event_that_runs_a_model_pass...)."""
    p = tiny.page
    assert os.environ.get("ANATOMY_STRICT_INPUTS") == "1"

    def reads_the_run(values):
        return {p.forced: Inputs.of(p, values).run.trace.text}

    def reads_the_tab(values):
        return {p.forced: "why" if Inputs.of(p, values).tab == Tab.WHY else ""}

    with pytest.raises(TypeError, match="did not declare what 'run' is read from"):
        handled(p, reads_the_run, {p.view}, [p.forced])["fn"]({p.view: "{}"})
    with pytest.raises(TypeError, match="did not declare what 'tab' is read from"):
        handled(p, reads_the_tab, {p.text}, [p.forced])["fn"]({p.text: ""})
    assert handled(p, reads_the_tab, {p.view}, [p.forced])["fn"]({p.view: '{"tab": "why"}'}) == \
        {p.forced: "why"}
    # a test calling a handler itself passes what it likes; the rest is the default
    assert reads_the_tab({p.text: ""}) == {p.forced: ""}


def test_the_ui_layer_stays_in_small_parts():
    """Issue 48: no class of the UI layer over 25 methods of its own, no function (the page's layout and wiring
    included) over 90 lines."""
    import ast

    long, large = [], []
    for path in sorted((Path(__file__).resolve().parents[1] / "ui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 90:
                long.append(f"{path.name}:{node.name}")
            if isinstance(node, ast.ClassDef) and sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                                      for n in node.body) > 25:
                large.append(f"{path.name}:{node.name}")
    assert not long and not large, (long, large)
