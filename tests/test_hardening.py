"""Hostile or odd input, load and privacy. The page's handlers and the /translate API clean text the same way and
answer every bad input with a clear notice, never a stack trace; token text in the figures is escaped, never live
markup; a visitor over the queue's bound is told at once that the app is busy; visitors' text leaves nothing in
logs, output or files beyond the trace retention."""
from __future__ import annotations

import asyncio
import datetime
import http.client
import json
import logging
import os
import subprocess
import sys
import time
import types
import urllib.parse
from concurrent.futures import wait
from pathlib import Path

import gradio as gr
import httpx
import numpy as np
import pytest

from anatomy.inputs import (
    MAX_BEAM,
    MAX_CHARS,
    MAX_LP,
    MAX_NEW_TOKENS,
    MAX_QUERY,
    MAX_STEPS,
    clean_text,
    parse_link,
    shorten_query,
)
from anatomy.registry import ModelRegistry
from anatomy.run import StopSignal
from tests.app_fixtures import (
    CONFIGS,
    SENTENCE,
    SLOW_REQUEST,
    configs,
    drawn,
    forgotten,
    run_of,
    short_grace,
    show,
    translate,
)
from ui.values import Inputs

UNKNOWN = "piece(s) of the text are unknown to this model"
HOSTILE = '<a href="javascript:alert(1)">x</a>'


@pytest.mark.parametrize("text, direction, beam, max_new, translated, notice", [
    pytest.param(" \n\t\u3000 ", "de-en", 1, 4, False, "Nothing to translate", id="whitespace"),
    pytest.param("Hund " * 2000, "de-en", 1, 4, True, f"longer than {MAX_CHARS} characters", id="10k-chars"),
    pytest.param("Hunde 🐶🎉", "de-en", 1, 4, True, UNKNOWN, id="emoji"),
    pytest.param("\x1b[31mrot\x1b[0m", "de-en", 1, 4, True, "Control characters", id="ansi"),
    pytest.param("a\x00b\x07c\u200b", "de-en", 1, 4, True, "Control characters", id="control-chars"),
    pytest.param("\x1b[2J\x00", "de-en", 1, 4, False, "Nothing to translate", id="only-control"),
    pytest.param("你好世界", "de-en", 1, 4, True, UNKNOWN, id="cjk"),
    pytest.param("مرحبا بالعالم", "en-de", 1, 4, True, UNKNOWN, id="arabic"),
    pytest.param("<img src=x onerror=alert(1)>", "de-en", 1, 4, True, "", id="html"),
    pytest.param("?!...,;", "de-en", 1, 4, True, "", id="punctuation"),
    pytest.param("Zwei\nHunde\r\nspielen", "de-en", 1, 4, True, "", id="several-lines"),
    pytest.param("Hund", "de-en", 10**9, 4, False, "beam_size must be from 1 to", id="huge-beam"),
    pytest.param("Hund", "de-en", "lots", 4, False, "beam_size must be an integer", id="text-beam"),
    pytest.param("Hund", "de-en", 1, 0, False, "max_new_tokens must be from 1 to 200", id="zero-max"),
    pytest.param("Hund", "de-en", 1, 10**9, False, "max_new_tokens must be from 1 to", id="huge-max"),
    pytest.param("Hund", "de-en", 8, 200, True, "", id="longest-beam-and-length"),
    pytest.param("Hund", "de-en", 1, -5, False, "max_new_tokens must be from 1 to", id="negative-max"),
    pytest.param("Hund", "xx-yy", 1, 4, False, "Unknown direction 'xx-yy'", id="unknown-direction"),
    pytest.param("Hund", None, 1, 4, False, "Unknown direction", id="no-direction"),
])
def test_api_bad_input_gets_a_notice_and_never_raises(tiny, text, direction, beam, max_new, translated, notice):
    out, said, trace = tiny.api_translate(text, direction, beam, max_new)
    assert isinstance(out, str) and isinstance(said, str)
    assert notice in said
    if translated:
        assert trace is not None and trace["text"] == out
        assert len(trace["source_tokens"]) <= tiny.registry.get(direction).config.max_len
        assert all(ch not in "".join(trace["source_tokens"]) for ch in "\x1b\x00\x07\n\r")
        if max_new:
            assert len(trace["output_tokens"]) <= max_new
    else:
        assert out == "" and trace is None and said  # refused, and says why


# ---- the page: the same cleaning as the API, said in the run info ------------------------------------------

CONTROL = "Control characters and terminal escape codes were removed"
TOO_LONG = f"longer than {MAX_CHARS} characters"


@pytest.mark.parametrize("text, key, beam, max_new, says", [
    pytest.param("Hund " * 2000, "de-en", 1, 4, [TOO_LONG], id="10k-chars"),
    pytest.param("Hunde 🐶🎉", "de-en", 1, 4, [UNKNOWN], id="emoji"),
    pytest.param("\x1b[31mrot\x1b[0m", "de-en", 1, 4, [CONTROL], id="ansi"),
    pytest.param("a\x00b\x07c\u200b", "de-en", 1, 4, [CONTROL], id="control-chars"),
    pytest.param("你好世界", "de-en", 1, 4, [UNKNOWN], id="cjk"),
    pytest.param("مرحبا بالعالم", "en-de", 1, 4, [UNKNOWN], id="arabic"),
    pytest.param("<img src=x onerror=alert(1)>", "de-en", 1, 4, [], id="html"),
    pytest.param("?!...,;", "de-en", 1, 4, [], id="punctuation"),
    pytest.param("Zwei dogs spielen in the Schnee.", "de-en", 1, 4, [], id="mixed-languages"),
    pytest.param("Zwei Hunde.\nEin Mann\r\nfährt.\tJa.", "de-en", 1, 4, [], id="several-lines"),
    pytest.param("Hund", "de-en", 10**9, 4, ["Beam search (8 beams)"], id="huge-beam"),
    pytest.param("Hund", "de-en", 1, 10**9, ["length limit"], id="huge-max"),
    pytest.param("Hund", "de-en", 8, 200, ["Beam search (8 beams)"], id="longest-beam-and-length"),
    pytest.param("Hund", "de-en", "lots", -5, ["Greedy decoding"], id="nonsense-numbers"),
])
def test_page_translates_odd_input_and_says_what_it_changed(tiny, text, key, beam, max_new, says):
    run, out = drawn(tiny, text=text, key=key or "de-en", beam=beam, max_new=max_new)
    info, trace = out[tiny.page.run_info], run.trace
    assert all(s in info for s in says), info
    for notice in (CONTROL, TOO_LONG):  # said exactly when the text was changed so
        assert (notice in info) == (notice in says), info
    assert out[tiny.page.translation] == trace.text and "Traceback" not in info
    config = tiny.registry.get(key).config
    assert len(trace.source_tokens) <= config.max_len and len(trace.output_tokens) <= config.max_len
    assert (trace.settings.beam_size or 1) <= MAX_BEAM
    assert not any(ch in "".join(trace.source_tokens) for ch in "\x1b\x00\x07\n\r\t")
    assert "<img" not in info  # the text travels in the share link URL-encoded, never as markup


@pytest.mark.parametrize("text, message", [
    pytest.param("", "Type a German sentence, e.g.", id="empty"),
    pytest.param(None, "Type a German sentence, e.g.", id="none"),
    pytest.param(" \n\t\u3000 ", "Type a German sentence, e.g.", id="whitespace"),
    pytest.param("\x1b[2J\x00", CONTROL + " from the text. Type a German sentence", id="only-control"),
])
def test_page_answers_a_text_with_nothing_to_translate_with_a_hint(tiny, text, message):
    [out] = translate(tiny, text)
    assert message in out[tiny.page.text_hint]["value"]


def test_page_refuses_an_unknown_direction_with_a_clear_message(tiny):
    with pytest.raises(gr.Error) as refused:
        list(translate(tiny, "Hund", "xx-yy"))
    assert "Unknown direction 'xx-yy'; choose one of: de-en, en-de." in refused.value.message


def test_several_lines_are_translated_as_one_text(tiny):
    lines = run_of(tiny, "Zwei Hunde\nspielen im\r\n\n  Schnee.").trace
    one = run_of(tiny, SENTENCE).trace
    assert lines.source_tokens == one.source_tokens and lines.output_tokens == one.output_tokens


def _page(tiny, run) -> str:
    return show(tiny, run)[-1][tiny.page.run_info]


ROUTES = {  # every way a visitor's text reaches the model -> the notices the visitor reads
    "translate": lambda tiny, text: _page(tiny, run_of(tiny, text, max_new=3)),
    "beam": lambda tiny, text: _page(tiny, run_of(tiny, text, beam=3, max_new=3)),
    "slow motion": lambda tiny, text: _page(tiny, run_of(tiny, text, slow=0.1, max_new=3)),
    "inspect": lambda tiny, text: _page(tiny, tiny.force(Inputs(run=run_of(tiny, text, max_new=3),
                                                                forced="Two dogs."))[tiny.page.run]),
    "link": lambda tiny, text: _page(tiny, tiny.translate_link(Inputs(
        signal=StopSignal(), link=parse_link({"text": text, "max": "3"}, CONFIGS)))[tiny.page.run]),
    "api": lambda tiny, text: tiny.api_translate(text, "de-en", 1, 3)[1],
}


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_cleans_text_with_the_same_notices(tiny, route):
    text = "\x1b[1mZwei\x1b[0m Hunde\x07 " + "im Schnee " * 60
    clean, notices = clean_text(text)
    assert len(clean) == MAX_CHARS and [CONTROL in notices[0], TOO_LONG in notices[1]] == [True, True]
    said = ROUTES[route](tiny, text)
    assert all(n in said for n in notices), said


def test_inspect_cleans_the_typed_translation_too(tiny):
    run = run_of(tiny, SENTENCE, max_new=3)
    forced = tiny.force(Inputs(run=run, forced="\x1b[31mTwo\x1b[0m dogs " * 60))[tiny.page.run]
    info = _page(tiny, forced)
    assert CONTROL + " from your translation" in info
    assert f"Your translation was {TOO_LONG}" in info
    assert "\x1b" not in "".join(forced.trace.output_tokens)
    with pytest.raises(gr.Error, match="Type \\(or edit\\) a translation"):
        tiny.force(Inputs(run=run, forced="\x1b[0m\x00"))


SURROGATE = "Unpaired surrogates (halves of a character, which are not text) were removed"


def test_a_lone_surrogate_is_removed_with_a_notice_and_a_pair_is_its_character():
    """JSON can carry half of a surrogate pair ("\\ud800"), which the tokenizer's C++ binding refused with its own
    error."""
    assert clean_text("Ein \ud800 Haus\udc00") == ("Ein Haus", [f"{SURROGATE} from the text."])
    assert clean_text("Hund \ud83d\udc36") == ("Hund \U0001f436", [])  # a pair as two code points: the dog


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_translates_text_with_a_lone_surrogate(tiny, route):
    said = ROUTES[route](tiny, "Zwei \ud800Hunde")
    assert SURROGATE in said and "RuntimeError" not in said, said


# ---- many visitors at once: a bounded queue ---------------------------------------------------------------

def _reaches(job, codes, timeout=20.0):
    deadline = time.monotonic() + timeout
    while job.status().code not in codes:
        assert time.monotonic() < deadline, f"the request stayed {job.status().code}, never {codes}"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.solo  # timed: scripts/test.sh runs it alone
def test_over_the_queue_bound_a_client_is_told_at_once_that_the_app_is_busy(served):
    """ANATOMY_MODEL_EVENTS=2, ANATOMY_QUEUE_SIZE=1: two requests run, one waits, the rest are refused at once;
    those that got in get exactly the answer a lone request gets. Sent in that order, each once the one before is
    where it should be (sent together, the queue may count them before its workers take the first two)."""
    from gradio_client import Client
    from gradio_client.utils import QueueError, Status

    client = Client(served.url, verbose=False)
    running = []
    for _ in range(2):  # the second once the first runs: sent together, the second may find the first still queued
        running.append(client.submit(**SLOW_REQUEST))
        _reaches(running[-1], {Status.PROCESSING, Status.ITERATING, Status.PROGRESS})
    waiting = client.submit(**SLOW_REQUEST)
    _reaches(waiting, {Status.IN_QUEUE})
    start = time.perf_counter()
    extra = [client.submit(**SLOW_REQUEST) for _ in range(2)]
    wait([j.future for j in extra], timeout=30)
    refused_after = time.perf_counter() - start
    refusals = []
    for job in extra:
        with pytest.raises(QueueError) as err:
            job.result(timeout=0)
        refusals.append(str(err.value))
    assert set(refusals) == {"Queue is full! Please try again."}
    assert refused_after < 1.0, "the refusal came only when the queue drained: a wait, not a clear answer"
    assert all(job.status().code != Status.FINISHED for job in running), "one ended before the test filled the queue"
    answers = [job.result(timeout=60) for job in running + [waiting]]
    alone = client.predict(**SLOW_REQUEST)
    for text, notice, trace in answers:
        assert (text, notice) == alone[:2] and trace["output_tokens"] == alone[2]["output_tokens"]
        np.testing.assert_allclose(trace["cross_attn"], alone[2]["cross_attn"], atol=1e-6)



@pytest.mark.slow
@pytest.mark.solo  # timed: scripts/test.sh runs it alone
def test_load_benchmark_runs_16_clients_that_all_get_the_answer_they_get_alone(folders):
    """benchmarks/load.py, small: its own server on the tiny checkpoints, 16 clients, 32 requests."""
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "benchmarks/load.py", "--checkpoints", str(folders), "--visitors-nice", "0",
                          "--clients", "16",
                          "--requests", "32", "--time-limit", "120"], cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    figures = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    assert [figures[k] for k in ("clients", "served", "refusals", "unserved", "errors", "mismatches")] == [
        "16", "32", "0", "0", "0", "0"]
    assert float(figures["served_per_s"]) > 0 and float(figures["p95_ms"]) >= float(figures["p50_ms"]) > 0


@pytest.mark.slow
@pytest.mark.solo  # timed: scripts/test.sh runs it alone
def test_load_benchmark_ratios_back_off_when_refused_and_serve_every_request(folders):
    """--ratios against one server that runs one model event at a time and whose queue holds one waiting request: the
    crowd of 4 is refused, backs off and asks again until every request is served, each with the answer it gets
    alone; the last line is the ratio."""
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "benchmarks/load.py", "--checkpoints", str(folders), "--visitors-nice", "0",
                          "--ratios", "2,4",
                          "--requests", "12", "--backoff", "0.05", "--time-limit", "120"], cwd=root,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "ANATOMY_QUEUE_SIZE": "1", "ANATOMY_MODEL_EVENTS": "1"})
    assert run.returncode == 0, run.stderr
    *crowds, last = [dict(pair.split("=") for pair in line.split()) for line in run.stdout.strip().splitlines()]
    assert [c["clients"] for c in crowds] == ["2", "4"] and list(last) == ["served_ratio_4"]
    for crowd in crowds:
        assert [crowd[k] for k in ("served", "unserved", "errors", "mismatches")] == ["12", "0", "0", "0"]
        assert float(crowd["p95_total_ms"]) >= float(crowd["p95_ms"]) > 0
    assert int(crowds[1]["refusals"]) > 0
    assert float(last["served_ratio_4"]) == pytest.approx(
        float(crowds[1]["served_per_s"]) / float(crowds[0]["served_per_s"]), abs=0.01)


def asgi_client(body: bytes):
    """An ASGI server's side of one request: (the messages sent back, send, receive)."""
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": body}

    return sent, send, receive


def test_a_full_queue_refuses_a_join_before_gradio_reads_it():
    """ui.server.QueueGate answers a join with Gradio's 503 while the queue is full, and passes everything else on."""
    from ui.server import JOIN, QueueGate

    class Queue(list):  # Gradio's Queue: its length is the requests waiting
        max_size = 2

    passed, queue = [], Queue(["waiting", "waiting"])
    app = types.SimpleNamespace(get_blocks=lambda: types.SimpleNamespace(_queue=queue))
    sent, send, receive = asgi_client(b"{}")

    async def inner(scope, receive, send):
        passed.append(scope["path"])

    join = {"type": "http", "method": "POST", "path": JOIN, "query_string": b"", "headers": [], "app": app}
    asyncio.run(QueueGate(inner)(join, receive, send))
    asyncio.run(QueueGate(inner)({**join, "path": "/gradio_api/upload"}, receive, send))
    assert passed == ["/gradio_api/upload"] and sent[0]["status"] == 503
    assert json.loads(sent[1]["body"]) == {"detail": "Queue is full. Max size is 2 and size is 2."}
    queue.pop()
    asyncio.run(QueueGate(inner)(join, receive, send))
    assert passed == ["/gradio_api/upload", JOIN]


# ---- Gradio's work per event: what the page gets is Gradio's, made with less --------------------------------------

def _outputs_blocks():
    """A server.Blocks with one event whose outputs are of every sort the app's events have."""
    from ui import server

    with server.Blocks() as blocks:
        run = gr.State(None)
        text = gr.Textbox("old")
        step = gr.Slider(1, 5, value=2, step=1)
        head = gr.Radio(["mean", "1"], value="mean")
        data = gr.JSON(None)
        note = gr.Markdown("hidden", visible=False)
        button = gr.Button()
        button.click(lambda: None, None, [run, text, step, head, data, note])
    return blocks, (run, text, step, head, data, note)


@pytest.mark.parametrize("named", [(), (0,), (1,), (2, 3), (0, 4, 5), (1, 2, 3, 4, 5), (0, 1, 2, 3, 4, 5)])
def test_an_event_naming_some_outputs_sends_and_keeps_what_gradio_would(named):
    """ui.server.Blocks.postprocess_data postprocesses only the outputs a handler's dict names: what it sends and
    what the session keeps (its components' props and configs) equal Gradio's own postprocessing, which rebuilds
    every output left out as a gr.skip() update, but for the left-out outputs' values."""
    from gradio.state_holder import SessionState

    blocks, outs = _outputs_blocks()
    fn = blocks.default_config.fns[0]
    made = {}
    for how in ("ours", "gradio's"):
        values = [{"run": 1}, "new text", gr.update(maximum=9, value=7),
                  gr.update(choices=["mean", "1", "2"], value="2"), {"rows": [[0.25, 0.75]], "words": ["Ein", "Hund"]},
                  gr.update(value="shown", visible=True)]
        state = SessionState(blocks)  # each its own: Gradio takes the values out of the update dicts it is given
        predictions = {outs[i]: values[i] for i in named} if named else gr.skip()
        post = blocks.postprocess_data if how == "ours" else lambda *a: gr.Blocks.postprocess_data(blocks, *a)
        sent = asyncio.run(post(fn, predictions, state))
        made[how] = (sent, state.config_values, state.state_data.get(outs[0]._id))
    (sent, configs, run), (gradio_sent, gradio_configs, gradio_run) = made["ours"], made["gradio's"]
    assert sent == gradio_sent and len(sent) == len(outs) and run == gradio_run
    # Gradio's rebuilt copy of a left-out output loses its value in the session's config (it is made without one);
    # ours keeps the component as it was. Every other prop is the same, and so is a named output's value.
    def valueless(made: dict) -> dict:
        return {k: {**c, "props": {p: v for p, v in c.get("props", {}).items() if p != "value"}}
                for k, c in made.items()}

    assert valueless(configs) == valueless(gradio_configs)
    for i in named:
        assert configs[outs[i]._id] == gradio_configs[outs[i]._id]
    if 2 in named:  # an update reaches the session: the slider's new maximum is what its next input is checked by
        assert configs[outs[2]._id]["props"]["maximum"] == 9


def test_a_dict_naming_a_component_that_is_no_output_is_refused_as_gradio_refuses_it():
    blocks, outs = _outputs_blocks()
    with blocks:
        stranger = gr.Textbox()
    with pytest.raises(ValueError, match="not specified as output"):
        asyncio.run(blocks.postprocess_data(blocks.default_config.fns[0], {outs[1]: "x", stranger: "y"}, None))


def test_on_another_gradio_release_the_page_runs_on_gradio_s_own_code(monkeypatch):
    """ui.server's overrides reach into Gradio's internals: on any release but the one they were written for, a
    server.Blocks makes its sessions' configs and postprocesses its events with Gradio's own code."""
    from gradio.blocks import BlocksConfig
    from gradio.state_holder import SessionState

    from ui import server

    assert server.overrides_apply() == (gr.__version__ == server.OVERRIDDEN_GRADIO)
    ours, _ = _outputs_blocks()
    assert ours.overridden and isinstance(ours.default_config, server.SessionConfigs)
    monkeypatch.setattr(gr, "__version__", "6.32.0")
    blocks, outs = _outputs_blocks()
    assert not blocks.overridden and type(blocks.default_config) is BlocksConfig
    fn = blocks.default_config.fns[0]
    sent = {}
    for how, post in (("ours", blocks.postprocess_data),
                      ("gradio's", lambda *a: gr.Blocks.postprocess_data(blocks, *a))):
        state = SessionState(blocks)
        sent[how] = (asyncio.run(post(fn, {outs[1]: "new text"}, state)), state.config_values)
    assert sent["ours"] == sent["gradio's"]
    # Gradio's own rebuilds a left-out output: the session's Radio config has lost its value (ours keeps it)
    assert "value" not in sent["ours"][1][outs[3]._id]["props"]


def test_a_new_session_gets_gradio_s_configs_of_the_page_without_making_them_again(tiny, monkeypatch):
    """ui.server.SessionConfigs: a session's configs equal the ones Gradio makes for every component of the app's
    page; a second session makes none again; a change in one session's configs stays in that session."""
    from gradio.blocks import BlocksConfig
    from gradio.components.base import Component
    from gradio.state_holder import SessionState

    demo = tiny.demo
    gradio_s = {k: BlocksConfig.config_for_block(k, [], block) for k, block in demo.blocks.items()}
    first = SessionState(demo)
    assert first.config_values == gradio_s
    made = []
    monkeypatch.setattr(Component, "get_config", lambda self: made.append(self) or {})
    second = SessionState(demo)
    assert made == [] and second.config_values == gradio_s
    key = tiny.page.text._id
    first._update_value_in_config(key, "a visitor's text")
    assert first.config_values[key]["props"]["value"] == "a visitor's text"
    assert SessionState(demo).config_values[key] == second.config_values[key] == gradio_s[key]


# ---- many visitors over time: memory stays bounded ---------------------------------------------------------

def test_sessions_without_a_page_are_forgotten_after_the_grace_and_open_pages_kept():
    """ui.server.forget_sessions: a session idle past the grace with no heartbeat stream is forgotten, its gr.State
    values through their delete callback; one idle as long with its page open (a heartbeat stream), or idle for less,
    is kept."""
    from gradio.state_holder import StateHolder

    from ui import server

    deleted = []
    with gr.Blocks() as blocks:
        run = gr.State(None, delete_callback=deleted.append)
    holder = StateHolder()
    holder.set_blocks(blocks)
    queue = types.SimpleNamespace(pending_event_ids_session={})
    app = types.SimpleNamespace(state_holder=holder, get_blocks=lambda: types.SimpleNamespace(_queue=queue))
    for session in ("closed", "open", "recent"):
        holder[session][run._id] = f"run of {session}"
        queue.pending_event_ids_session[session] = set()
    idle = datetime.datetime.now() - datetime.timedelta(seconds=120)
    holder.time_last_used.update(closed=idle, open=idle)
    server._heartbeats["open"] = 1
    try:
        assert server.forget_sessions(app, grace=60) == 1
    finally:
        del server._heartbeats["open"]
    assert deleted == ["run of closed"]
    assert set(holder.session_data) == set(queue.pending_event_ids_session) == {"open", "recent"}
    assert holder.session_data["open"].state_data[run._id] == "run of open"


@pytest.mark.slow
def test_a_closed_page_is_forgotten_within_the_grace_and_an_open_one_kept(tiny, monkeypatch):
    """The app's server with a 1 s grace and 0.5 s heartbeats: two visitors translate through the page's event; the
    one who leaves (its heartbeat closes) is forgotten within seconds, its run with it; the one whose page stays
    open keeps its run however long it idles."""
    from gradio_client import Client

    from benchmarks.common import PageSession

    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.5")
    with short_grace(tiny, monkeypatch) as (url, sessions):
        leaving, staying = (Client(url, verbose=False, download_files=False) for _ in range(2))
        gone, kept = leaving.session_hash, staying.session_hash
        for client in (leaving, staying):  # the page's event, in the client's session (its heartbeat)
            page = PageSession(url, client.session_hash)
            event = page.on("translate")
            page.call(event, page.values(event, {"source-text": SENTENCE, "direction": "de-en"}))
        assert all(sessions[s].state_data[tiny.page.session._id].run is not None for s in (gone, kept))
        leaving.reset_session()  # a new visitor in its place: the page it had is closed
        assert forgotten(sessions, gone)
        time.sleep(2)
        assert sessions[kept].state_data[tiny.page.session._id].run is not None


def test_malloc_is_kept_to_two_arenas_unless_the_environment_says_otherwise(monkeypatch):
    import platform

    from ui.server import bound_malloc

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert bound_malloc() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert bound_malloc() is (platform.libc_ver()[0] == "glibc")


# ---- privacy: visitors' text is not logged, printed or kept ----------------------------------------------

SECRET = "Schneehunde lachen heimlich"  # letters the tiny vocabulary knows: its pieces spell it back


def test_handlers_log_and_print_nothing_of_the_text(tiny, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    for text in (SECRET, f"\x1b[31m{SECRET}\x00 " * 30):
        _page(tiny, run_of(tiny, text, max_new=3))
        run = run_of(tiny, text, beam=2, max_new=3)
        _page(tiny, tiny.force(Inputs(run=run, forced=text))[tiny.page.run])
        assert tiny.api_translate(text, "de-en", 1, 3)[2] is not None
        assert "Unknown direction" in tiny.api_translate(text, "xx-yy")[1]
        with pytest.raises(gr.Error):
            list(translate(tiny, text, "xx-yy"))
    out, err = capfd.readouterr()
    for word in SECRET.split():
        assert word not in caplog.text and word not in out and word not in err


def _holding_the_text(folder) -> list:
    """Files under `folder` that hold SECRET: literally, or as the source pieces of a trace."""
    found = []
    for path in (p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if any(word.encode() in data for word in SECRET.split()):
            found.append(path)
        elif path.name.startswith("trace-"):
            pieces = "".join(json.loads(data)["source_tokens"]).replace("\u2581", " ")
            if SECRET in pieces:
                found.append(path)
    return found


@pytest.mark.slow
def test_the_server_keeps_no_text_beyond_the_trace_retention(served):
    """`python app.py` with ANATOMY_TRACE_RETENTION=2: the API, the page's Translate and a shared link leave
    nothing in the server's output, and the one file that holds it (the trace download) is gone after 2 s."""
    from gradio_client import Client

    from benchmarks.common import PageSession

    client = Client(served.url, verbose=False, download_files=False)
    assert client.predict(text=SECRET, direction="de-en", max_new_tokens=3, api_name="/translate")[2] is not None
    page = PageSession(served.url)
    translate = page.on("translate")
    page.call(translate, page.values(translate, {"source-text": SECRET, "direction": "de-en", "Beam size": 1,
                                                 "Max new tokens": 3}))
    [trace] = page.call(page.on("download"))  # Download trace: the file of the shown translation, written now
    assert trace["value"]["path"].endswith(".json")
    link = httpx.get(served.url, params={"direction": "de-en", "text": SECRET}, timeout=30)
    assert link.status_code == 200
    kept = _holding_the_text(served.tmp)
    assert [p.parent.name for p in kept] == ["transformer-anatomy-traces"], kept  # served as is: no copy
    deadline = time.monotonic() + 15
    while (kept := _holding_the_text(served.tmp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not kept, f"still there long after the 2 s retention: {kept}"
    output = "".join(served.output)
    assert "Running on local URL" in output  # the output is read
    for word in SECRET.split() + [urllib.parse.quote(SECRET), urllib.parse.quote_plus(SECRET)]:
        assert word not in output


JSON_VALUES = [None, True, False, 0, 1, -1, 3, 8, 9, 200, 201, 1.5, 1e300, -1e300, "", " ", "5", "abc", "de-en",
               "Zwei Hunde.", [], [5], ["de-en"], {}, {"beam": 2}]
GOOD = {"text": "Zwei Hunde spielen im Schnee.", "direction": "de-en", "beam_size": 1, "max_new_tokens": None,
        "prefix": None}


@pytest.mark.parametrize("argument", sorted(GOOD))
def test_every_json_value_of_every_api_argument_gets_a_result_or_a_notice(tiny, argument):
    """Each argument in turn takes every JSON type and edge value, the others stay good: the answer is a
    translation or a notice saying what was wrong, never an exception and never the catch-all failure."""
    for value in JSON_VALUES:
        text, notice, trace = tiny.api_translate(**{**GOOD, argument: value})
        assert isinstance(text, str) and isinstance(notice, str), (argument, value)
        assert "Translation failed" not in notice, (argument, value, notice)
        if trace is None:
            assert text == "" and notice, (argument, value)
        else:
            assert text == trace["text"], (argument, value)
    assert tiny.api_translate(**GOOD)[2] is not None


@pytest.mark.parametrize("beam, max_new, problem", [("five", None, "beam_size"), (0, None, "beam_size"),
                                                    (9, None, "beam_size"), (2, 0, "max_new_tokens"),
                                                    (2, 201, "max_new_tokens"), (2, "abc", "max_new_tokens"),
                                                    (2, [5], "max_new_tokens"), (True, None, "beam_size")])
def test_out_of_range_or_mistyped_numbers_are_refused_by_name(tiny, beam, max_new, problem):
    text, notice, trace = tiny.api_translate(GOOD["text"], "de-en", beam, max_new)
    assert (text, trace) == ("", None) and problem in notice


# ---- links, API values, invisible characters, skipped models --------------------------------------------------

def test_a_link_clamps_numbers_out_of_range_and_says_so(tiny):
    link = parse_link({"text": SENTENCE, "beam": "-5", "step": "1e12", "lp": "7", "max": "1e308"}, CONFIGS)
    d = link.decoding
    assert (d.beam_size, link.view.step, d.length_penalty, d.max_new_tokens) == (1, MAX_STEPS, MAX_LP, MAX_NEW_TOKENS)
    [notice] = link.notices
    for said in ("beam=-5 (allowed: 1 to 8)", "lp=7", "max=1e308"):
        assert said in notice, notice
    assert parse_link({"beam": "1e308"}, CONFIGS).decoding.beam_size == MAX_BEAM
    # in range: nothing to say
    assert parse_link({"text": "Hund", "beam": "3", "step": "2", "lp": "0.6", "max": "0", "layer": "1"},
                      CONFIGS).notices == ()
    # the notice comes with the link's translation, and the step's range with it; a link without text pops it up
    run = tiny.translate_link(Inputs(signal=StopSignal(), link=parse_link(
        {"text": SENTENCE, "beam": "1e308", "max": "3", "step": "1e12"}, configs(tiny))))[tiny.page.run]
    page = _page(tiny, run)
    assert "beam=1e308 (allowed: 1 to 8)" in page
    assert f"step=1e12 (allowed: 1 to {len(run.trace.output_tokens)}, its output pieces)" in page, page
    with pytest.warns(UserWarning, match=r"beam=-5 \(allowed: 1 to 8\)"):
        tiny.load_link(types.SimpleNamespace(query_params={"beam": "-5"}))


def test_an_over_long_link_is_shortened_to_one_that_says_so():
    assert shorten_query(urllib.parse.urlencode({"text": "Hund " * 100, "beam": 3})) is None
    text = "Zwei Hunde spielen im Schnee. " * 2700
    query = urllib.parse.urlencode({"direction": "de-en", "text": text, "beam": 3})
    assert len(query) > 80_000
    short = shorten_query(query)
    assert len(short) <= MAX_QUERY
    link = parse_link(dict(urllib.parse.parse_qsl(short)), CONFIGS)
    assert (link.key, link.decoding.beam_size, link.text) == ("de-en", 3, clean_text(text)[0])
    assert link.notices[0].startswith(f"This link was longer than {MAX_QUERY:,} characters, so it was shortened")
    # whatever the query holds, the shortened one is short: many long parameters, a text of invisible characters
    hostile = "&".join(f"p{i}={'x' * 300}" for i in range(1000)) + "&text=" + "%E2%80%8B" * 10_000 + "&shortened=0"
    assert len(shorten_query(hostile)) <= MAX_QUERY


def test_the_server_redirects_an_over_long_page_load_and_shortens_any_other_request():
    from ui.server import ShortLinks

    seen = []
    sent, send, receive = asgi_client(b"")

    async def app(scope, receive, send):
        seen.append(scope["query_string"])

    query = urllib.parse.urlencode({"text": "Hund " * 16_000})
    short = shorten_query(query)
    page = {"type": "http", "method": "GET", "path": "/", "query_string": query.encode(), "headers": []}
    asyncio.run(ShortLinks(app)(page, receive, send))
    assert not seen and sent[0]["status"] == 307 and dict(sent[0]["headers"])[b"location"] == f"?{short}".encode()
    asyncio.run(ShortLinks(app)({**page, "method": "POST"}, receive, send))
    asyncio.run(ShortLinks(app)({**page, "query_string": b"text=Hund"}, receive, send))
    assert seen == [short.encode(), b"text=Hund"]


@pytest.mark.slow
def test_an_80k_character_link_opens_the_page_not_a_server_error(served):
    """`python app.py` (its launch options): an 80k-character link is redirected to its shortened form, which
    opens the page; Gradio answered the long one with an HTTP 500 (httpx.InvalidURL: URL too long)."""
    address = urllib.parse.urlsplit(served.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    connection.request("GET", "/?" + urllib.parse.urlencode({"direction": "de-en", "text": "Hund " * 16_000}))
    answer = connection.getresponse()
    location = answer.getheader("location")
    answer.read()
    assert answer.status == 307 and location.startswith("?shortened=1&text=Hund+Hund")
    assert len(location) <= MAX_QUERY + 1
    assert httpx.get(served.url + location, timeout=30).status_code == 200


def _endpoint(tiny, name: str):
    return next(f for f in tiny.demo.fns.values() if f.api_name == name)


def _api(tiny, *values):
    """The /translate endpoint's answer through Gradio (its components' processing, its input check); the
    arguments left out are null."""
    fn = _endpoint(tiny, "translate")
    return asyncio.run(tiny.demo.process_api(fn, [*values, *[None] * (len(fn.inputs) - len(values))]))["data"]


@pytest.mark.parametrize("text", [[SENTENCE], {"text": SENTENCE}, 42, None])
def test_api_text_of_another_type_gets_a_notice_through_gradio(tiny, text):
    translation, notice, trace = _api(tiny, text, "de-en", 1, 3)
    assert (translation, trace) == ("", None) and notice.startswith("text must be a string, got ")


@pytest.mark.parametrize("beam, read", [(5, True), (5.0, True), ("5", False), (" 5 ", False), (2.5, False),
                                        ("2.5", False)])
def test_api_numbers_are_json_numbers_without_a_fraction(tiny, beam, read):
    translation, notice, trace = tiny.api_translate(SENTENCE, "de-en", beam, 3)
    assert (trace is not None) == read, notice
    if not read:
        assert notice.startswith("beam_size must be an integer from 1 to 8 (or null for the default), got")


def test_a_call_with_too_few_values_is_told_so_and_never_printed(tiny, capfd):
    fn = _endpoint(tiny, "translate")
    with pytest.raises(gr.Error) as refused:
        asyncio.run(tiny.demo.process_api(fn, [SECRET]))
    assert refused.value.message == f"This endpoint takes {len(fn.inputs)} values; the request sent 1."
    assert not refused.value.print_exception  # Gradio prints the traceback of an exception that asks for it
    # a page endpoint's value that its component refuses: Gradio's message quotes it, so it is not printed either
    fn = _endpoint(tiny, "translate_page")
    values = [SECRET if c is tiny.page.direction else getattr(c, "value", None) for c in fn.inputs]
    with pytest.raises(gr.Error) as refused:
        asyncio.run(tiny.demo.process_api(fn, values))
    assert not refused.value.print_exception
    # a value its component cannot read (Gradio's ComponentProcessingError quotes it): neither said nor printed
    values = [SECRET if c is tiny.page.beam else getattr(c, "value", None) for c in fn.inputs]
    with pytest.raises(gr.Error, match="A value sent or made could not be processed.") as refused:
        asyncio.run(tiny.demo.process_api(fn, values))
    assert not refused.value.print_exception
    out, err = capfd.readouterr()
    assert "ComponentProcessingError" in err and not any(word in out + err for word in SECRET.split())


@pytest.mark.slow
def test_the_server_prints_nothing_of_a_call_with_too_few_values(served):
    """A raw call with one value: a clear error to the caller, nothing of the value in the server's output
    (Gradio printed "Received inputs: [...]")."""
    start = len(served.output)
    event = httpx.post(served.url + "gradio_api/call/translate", json={"data": [SECRET]}, timeout=30).json()
    stream = httpx.get(f"{served.url}gradio_api/call/translate/{event['event_id']}", timeout=30).text
    time.sleep(0.5)  # the server's output, read by a thread
    output = "".join(served.output[start:])
    assert not any(word in output for word in SECRET.split()), output
    assert "event: error" in stream and "values; the request sent 1." in stream


def test_invisible_format_characters_are_deleted_not_read_as_spaces(tiny):
    assert clean_text("Hun\u200dde spie\u00adlen\u2060 im\u200b Schnee\ufeff.")[0] == "Hunde spielen im Schnee."
    joined = tiny.api_translate("Zwei Hun\u200dde.", "de-en", 1, 3)[2]
    assert joined["source_tokens"] == tiny.api_translate("Zwei Hunde.", "de-en", 1, 3)[2]["source_tokens"]


def test_a_skipped_model_is_logged_and_an_api_call_naming_it_hears_why(tiny, folders, caplog, monkeypatch):
    """The log names the folder by its path, for whoever runs the app; the page and the API by its name alone."""
    import huggingface_hub

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    caplog.set_level(logging.WARNING, logger="anatomy.registry")
    registry = ModelRegistry.discover([str(folders / "tiny-de-en"), str(folders / "broken"), "hf://owner/name"])
    broken = folders / "broken"
    assert [r.getMessage() for r in caplog.records] == [
        f"Skipped {broken}: {broken / 'model.safetensors'} cannot be read (Error while deserializing header: header "
        "too large); it is truncated or corrupt: download or copy it again",
        "Skipped hf://owner/name: could not fetch owner/name from the Hugging Face Hub: no network"]
    assert registry.notices == ["Skipped `broken`: broken/model.safetensors cannot be read (Error while deserializing "
                                "header: header too large); it is truncated or corrupt: download or copy it again",
                                "Skipped `hf://owner/name`: could not fetch owner/name from the Hugging Face Hub: "
                                "no network"]
    translation, notice, trace = tiny.api_translate(SENTENCE, "broken", 1, 3)
    assert (translation, trace) == ("", None)
    assert notice == "The model 'broken' was skipped, it could not be loaded: broken/model.safetensors cannot be " \
        "read (Error while deserializing header: header too large); it is truncated or corrupt: download or copy " \
        "it again Directions available: de-en, en-de."
    assert str(folders) not in tiny.registry.status()


def test_a_message_names_no_absolute_path_and_leaves_ids_and_urls_whole():
    from anatomy.registry import unpathed

    said = "no hf://owner/name (https://hf.co/owner/name): No such file: '/root/.cache/hub/x/model.safetensors'. 1/2"
    assert unpathed(said) == "no hf://owner/name (https://hf.co/owner/name): No such file: 'model.safetensors'. 1/2"
    assert unpathed("/srv/models/ckpt/config.json is not JSON", "/srv/models/ckpt") == "ckpt/config.json is not JSON"


def test_answers_name_a_checkpoint_by_its_folder_not_its_path(tiny, folders):
    """The trace (API, download, page payload) and the model's notes name the folder a model came from, not where
    it is on the server; a trace from an older file, which named the path, is shown by the folder too."""
    from anatomy import architecture_views, payload
    from transformer import Trace
    from ui import traces

    entry = tiny.registry.get("de-en")
    trace = Trace.from_dict(tiny.api_translate(SENTENCE, "de-en", 1, 3)[2])
    assert trace.checkpoint == "tiny-de-en"
    assert json.loads(Path(traces.trace_file(trace)).read_text())["checkpoint"] == "tiny-de-en"
    older = Trace.from_dict({**trace.to_dict(), "checkpoint": str(folders / "tiny-de-en")})
    for made in (trace, older):
        assert payload.trace_payload(made, entry)["model"]["checkpoint"] == "tiny-de-en"
    assert "Checkpoint `tiny-de-en`." in architecture_views.architecture_markdown(entry)


API = {"translate": lambda tiny, text, direction: tiny.api_translate(text, direction, 1, 3)[1],
       "explain": lambda tiny, text, direction: tiny.api_explain(text, direction, "grad")[1],
       "animate": lambda tiny, text, direction: tiny.api_animate(text, direction)[1],
       "export_html": lambda tiny, text, direction: tiny.api_export_html(text, direction)[1]}


@pytest.mark.parametrize("endpoint", API)
def test_every_endpoint_says_why_a_skipped_model_was_skipped(tiny, endpoint):
    notice = API[endpoint](tiny, SENTENCE, "broken")
    assert notice.startswith("The model 'broken' was skipped, it could not be loaded: ") and "model.safetensors" \
        in notice and notice.endswith("Directions available: de-en, en-de."), notice
    assert API[endpoint](tiny, SENTENCE, "nowhere").startswith("Unknown direction 'nowhere'; available: de-en, en-de.")


@pytest.mark.parametrize("endpoint", ["animate", "export_html"])
def test_an_endpoint_failing_on_the_server_says_so_without_the_error(tiny, endpoint, tmp_path, monkeypatch, caplog):
    """The folder its file goes to cannot be made (a file holds its place): the caller hears that it failed, not
    the error, which names a path on the server; the log names the error's type, not its message."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    (tmp_path / "transformer-anatomy-traces").write_text("in the way")
    caplog.set_level(logging.ERROR, logger="ui.handlers.files")
    notice = API[endpoint](tiny, SENTENCE, "de-en")
    assert notice.endswith(" failed: an error on the server, logged there."), notice
    assert str(tmp_path) not in notice and "Error" not in notice
    [logged] = caplog.records
    assert "NotADirectoryError" in logged.getMessage() and str(tmp_path) not in logged.getMessage()
