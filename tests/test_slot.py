"""The model's slot (anatomy/slot.py): handed over first come first served; long work gives it up between slices
once it has held it for the budget and another waits; a stream holds it across its yields, on whichever thread
resumes it; and a short translation sent during the longest work waits one slice, not the whole work, in the
process and through the served app's API."""
from __future__ import annotations

import threading
import time

import pytest

from anatomy import engine
from anatomy.inputs import Request
from anatomy.slot import ModelSlot
from transformer import Decoding

# its tests time one request against another on an otherwise idle machine: scripts/test.sh runs them alone
pytestmark = pytest.mark.solo


def _start(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def _until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_the_slot_is_handed_over_in_the_order_it_was_asked_for():
    slot, order = ModelSlot(), []

    def worker(n):
        with slot.hold():
            order.append(n)

    with slot.hold():
        threads = []
        for n in range(5):  # each in the line before the next asks
            threads.append(_start(lambda n=n: worker(n)))
            _until(lambda: slot.waiting == n + 1)
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4] and not slot.held


def test_between_hands_over_only_past_the_budget_and_only_to_one_that_waits(monkeypatch):
    monkeypatch.setenv("ANATOMY_MODEL_SLICE", "0.05")
    slot, order = ModelSlot(), []
    with slot.hold():
        slot.between()  # nobody waits: goes on
        assert slot.handovers == 0
        def other_work():
            with slot.hold():
                order.append("other")

        other = _start(other_work)
        _until(lambda: slot.waiting == 1)
        slot.between()  # within the budget: goes on
        assert slot.handovers == 0 and order == []
        time.sleep(0.06)
        slot.between()  # past it: the other goes first, then the holder again
        order.append("holder")
        assert slot.handovers == 1 and slot.mine
    other.join(5)
    assert order == ["other", "holder"]


def test_between_on_another_thread_never_hands_over_the_holder_s_slot(monkeypatch):
    monkeypatch.setenv("ANATOMY_MODEL_SLICE", "0")
    slot = ModelSlot()
    with slot.hold():
        def waiting_work():
            with slot.hold():
                pass

        waiter = _start(waiting_work)
        _until(lambda: slot.waiting == 1)
        outsider = _start(slot.between)  # a script calling the model beside the app
        outsider.join(5)
        assert slot.handovers == 0 and slot.waiting == 1 and slot.mine
    waiter.join(5)
    assert not slot.held


def test_a_stream_holds_the_slot_across_its_yields_and_only_while_resumed_is_it_the_thread_s():
    slot = ModelSlot()
    stream = slot.through(iter([1, 2]))
    assert next(stream) == 1
    assert slot.held and not slot.mine  # waiting to be resumed: no thread runs the holder's work
    got = []
    other = _start(lambda: got.append(next(stream)))  # Gradio resumes it on another worker
    other.join(5)
    assert got == [2] and slot.held
    assert list(stream) == [] and not slot.held


def test_an_abandoned_stream_gives_the_slot_up():
    slot = ModelSlot()
    stream = slot.through(iter([1, 2, 3]))
    next(stream)
    del stream  # a cancelled event's generator, closed
    assert not slot.held


def test_holding_within_held_work_does_not_wait_for_itself():
    slot = ModelSlot()
    inner = slot.holding(lambda: slot.mine)
    outer = slot.holding(lambda: inner() and slot.turns)
    assert outer() == 1 and not slot.held


def test_a_short_translation_sent_during_an_explanation_waits_one_slice_not_the_explanation(tiny, monkeypatch):
    """At a small scale: the tiny model's explanation of a long input (integrated gradients over many steps, held
    for ~1 s) and a one-piece translation sent while it runs, with slices of 50 ms."""
    monkeypatch.setenv("ANATOMY_MODEL_SLICE", "0.05")
    entry = tiny.registry.get("de-en")
    translator = entry.cpu
    long = engine.translate(translator, Request("de-en", "ein Haus " * 60, Decoding(max_new_tokens=120)))
    alone_start = time.perf_counter()
    engine.translate(translator, Request("de-en", "Haus", Decoding(max_new_tokens=1)))
    alone = time.perf_counter() - alone_start
    ended = {}

    def explain():
        engine.explain(translator, long)
        ended["explanation"] = time.perf_counter()

    worker = _start(explain)
    time.sleep(0.2)  # well inside the explanation
    assert not ended, "the explanation was too short for this test"
    start = time.perf_counter()
    engine.translate(translator, Request("de-en", "Haus", Decoding(max_new_tokens=1)))
    ended["translation"] = time.perf_counter()
    worker.join(300)
    # it went in between the explanation's slices, within the bound
    assert ended["translation"] < ended["explanation"], ended
    assert ended["translation"] - start <= 2 + alone, (ended["translation"] - start, alone)


def test_through_the_api_a_short_translation_sent_during_an_explanation_is_answered_before_it_ends(served):
    """The served app (tiny model, two model events at once, slices of 1 s): /explain of a long input, then a
    one-piece /translate while it runs: the translation is answered first, within 2 s of its own time."""
    from gradio_client import Client

    client = Client(served.url, verbose=False)
    short = dict(text="Haus", direction="de-en", max_new_tokens=1, api_name="/translate")
    start = time.perf_counter()
    client.predict(**short)
    alone = time.perf_counter() - start
    explaining = client.submit(text="ein Haus " * 30, direction="de-en", api_name="/explain")
    time.sleep(1.0)  # the explanation has the model
    assert not explaining.done(), "the explanation was too short for this test"
    start = time.perf_counter()
    translation, notice, _ = client.predict(**short)
    waited = time.perf_counter() - start
    assert not explaining.done(), "the translation waited for the whole explanation"
    assert translation and waited <= 2 + alone, (waited, alone)
    _, notice, explanation = explaining.result(timeout=600)
    assert explanation is not None, notice
