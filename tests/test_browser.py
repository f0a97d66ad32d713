"""The app in a real browser (Debian chromium + the playwright package; never `playwright install`).

One page session on the app as shipped (the checkpoints under checkpoints/, or the labelled
untrained fallback): type, Translate, wait for the figures, then drive the layer, head, step and
attention-kind controls and check what is on screen.
"""
from __future__ import annotations

import contextlib
import threading
import time
import urllib.parse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.app_fixtures import SENTENCE, forgotten, short_grace
from tests.browser import TIMEOUT, choose, heatmap_count, load_page, needs_chromium, plot_text, slide, wait_title

pytestmark = [needs_chromium, pytest.mark.slow]
SENTENCES = {"de": "Zwei Hunde spielen im Schnee.", "en": "Two dogs are playing in the snow."}


@pytest.fixture(scope="module")
def page(browser, url):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.joins = []  # the events the page runs (Gradio's queue)
    page.on("request", lambda r: page.joins.append(r.url) if "/queue/join" in r.url else None)
    page.goto(url, wait_until="domcontentloaded")
    page.errors = errors
    yield page
    page.close()


def test_translate_and_explore(page, shipped):
    registry = shipped.anatomy.registry
    entry = registry.get(None)
    L, H = entry.config.n_decoder_layers, entry.config.n_heads
    # plotly is loaded with the page (placeholder figures), before the first click
    page.wait_for_selector("#heatmap [data-testid=plotly] .main-svg")
    # the plain address's page is the page as built: it runs no event, and says what to type
    page.wait_for_function("window.anatomy?.loaded")
    page.wait_for_timeout(500)
    source = page.get_by_label("Source text")
    assert page.joins == [] and source.get_attribute("placeholder").startswith("Type a"), page.joins
    source.fill(SENTENCES.get(entry.source_lang, SENTENCES["de"]))
    # the translation's progress, over the translation's box while it runs (ui/static/client.js), gone once done
    page.evaluate("window.__said = []; new MutationObserver(() => { const s = document.querySelector("
                  "'#result > .anatomy-status'); if (s) window.__said.push(s.textContent); })"
                  ".observe(document.body, {subtree: true, childList: true, characterData: true})")
    start = time.perf_counter()
    page.get_by_role("button", name="Translate", exact=True).click()
    page.wait_for_function("document.querySelector('#run-info').innerText.includes('source pieces')")
    wait_title(page, "heatmap", "Cross-attention")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    page.wait_for_selector("#step-topk .barlayer")
    elapsed = time.perf_counter() - start
    print(f"click to default view rendered: {elapsed:.2f} s")
    page.wait_for_function("!document.querySelector('.anatomy-pending, .anatomy-status')")
    said = page.evaluate("window.__said")
    assert said and all(s.startswith(("Waiting", "Working")) for s in said), said

    translation = page.locator("#translation textarea").input_value()
    assert translation.strip()
    trace_tokens = page.locator("#output-pieces").inner_text()
    assert "</s>" in trace_tokens or "length limit" in page.locator("#run-info").inner_text()
    assert "▁" in page.locator("#source-pieces").inner_text()  # pieces shown as pieces
    assert not page.locator("#pair-note").is_visible()  # one sentence: nothing says "sentence 1"

    # the large view: queries as rows, keys as columns, both axes titled so; token text escaped, not markup
    text = plot_text(page, "heatmap")
    # (few rows: the query title on two lines)
    assert "query: decoder position" in text and "(read ▸ produced)" in text and "key: source piece" in text
    assert "</s>" in text and "<s> ▸" in text
    assert heatmap_count(page, "heatmap") == 1
    # Plotly's camera button exports PNG at ≥ 2× scale
    assert page.locator("#heatmap .js-plotly-plot").evaluate("p => p._context.toImageButtonOptions.scale") >= 2
    # the decoding-step scrubber shows three plots for the last step
    for elem in ("step-cross", "step-self", "step-topk"):
        page.wait_for_selector(f"#{elem} [data-testid=plotly] .main-svg")
    # the all-heads grid (first tab) arrives by a follow-up event: one heatmap per layer × head
    page.wait_for_function(f"document.querySelectorAll('#grid .heatmaplayer image').length >= {L * H}")

    # head 2 of the current layer
    choose(page, "head", 2)
    wait_title(page, "heatmap", "head 2")
    wait_title(page, "step-cross", "head 2")

    # layer: its list
    target = 1 if L > 1 else L
    choose(page, "layer", target)
    wait_title(page, "heatmap", f"layer {target}, head 2")

    # step 1: the partial output is one piece and the step plots say so
    slide(page, "step", 1)
    wait_title(page, "step-topk", "Step 1:")
    assert page.locator("#partial").inner_text().count("\n") <= 2

    # encoder self-attention: source pieces on both axes
    choose(page, "kind", "encoder")
    wait_title(page, "heatmap", "Encoder self-attention")
    text = plot_text(page, "heatmap")
    assert "query: source piece" in text and "key: source piece" in text

    # decoder masked self-attention, merged into words
    choose(page, "kind", "decoder")
    wait_title(page, "heatmap", "Decoder masked self-attention")
    page.check("#merge")
    wait_title(page, "heatmap", "· words")

    # pick a head from the grid's list for the large view
    choose(page, "pick-head", "1:1")
    wait_title(page, "heatmap", "layer 1, head 1")

    # the positional-encoding tab follows the model's d_model
    page.get_by_role("tab", name="Positional encoding").click()
    wait_title(page, "pe", f"d_model = {entry.config.d_model}")
    assert heatmap_count(page, "pe") == 1 and heatmap_count(page, "pe-rows") == 1

    # a cached example (default settings): fills the inputs, shows its translation, and the view controls
    # keep working on it (its trace is rebuilt for this visitor)
    example = entry.examples[1]
    page.get_by_text(f"{entry.label}: {example[:24]}").click()  # long labels are shortened on screen
    page.wait_for_function(  # cached outputs, then the controls reset to the default view (last layer, mean)
        "([text, old, L]) => document.querySelector('#source-text textarea').value === text &&"
        " document.querySelector('#translation textarea').value !== old &&"
        " document.querySelector('select#layer').value === String(L) &&"
        " document.querySelector('select#head').value === 'mean'", arg=[example, translation, L])
    wait_title(page, "heatmap", f"layer {L}, mean")
    choose(page, "head", 1)
    wait_title(page, "heatmap", f"layer {L}, head 1")

    # beam search: the candidates with their scores; picking one shows its attention
    beam = page.locator("input[aria-label='number input for Beam size (1 = greedy)']")
    beam.fill("3")
    beam.blur()
    page.get_by_role("button", name="Translate", exact=True).click()
    page.wait_for_function("document.querySelector('#run-info').innerText.includes('Beam search (3 beams)')")
    page.wait_for_selector("#candidates tbody tr:nth-child(2)")
    assert "score" in page.locator("#candidates").inner_text()
    page.locator("#candidates tbody tr:nth-child(2) td:nth-child(2)").click()
    page.wait_for_function("document.querySelector('#run-info').innerText.includes('Beam candidate #2')")
    wait_title(page, "heatmap", "Cross-attention")

    assert not page.errors, page.errors


def test_markup_in_the_source_stays_text(page):
    """An HTML/JS payload typed as the source is translated as text: no dialog, no live <img> anywhere."""
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    payload = "<img src=x onerror=alert(1)>"
    page.wait_for_selector("#heatmap [data-testid=plotly] .main-svg")
    page.get_by_label("Source text").fill(payload)
    page.get_by_role("button", name="Translate", exact=True).click()
    # the finished run's share link carries the new text; then the pieces and the figures are on the page
    page.wait_for_function("Array.from(document.querySelectorAll('#run-info a')).some(a => a.href.includes('onerror'))")
    wait_title(page, "heatmap", "Cross-attention")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    page.wait_for_timeout(300)  # let any handler that was going to fire, fire
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("img[src='x']").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert not dialogs, dialogs
    assert page.locator("#source-text textarea").input_value() == payload
    assert not page.errors, page.errors


def test_a_long_paste_is_cut_by_the_server_which_says_so(page):
    """600 characters pasted: the text box keeps them all (a maxlength would cut them unseen), and the run info says
    that only the first 500 were translated."""
    from anatomy.inputs import MAX_CHARS

    text = ("Zwei Hunde spielen im Schnee. " * 25)[:600]
    box = page.locator("#source-text textarea")
    box.fill("")
    box.focus()
    page.keyboard.insert_text(text)  # as a paste arrives: one input of the whole text
    assert len(box.input_value()) == 600
    page.get_by_role("button", name="Translate", exact=True).click()
    page.wait_for_function("document.querySelector('#run-info').innerText"
                           f".includes('longer than {MAX_CHARS} characters')")
    assert not page.errors, page.errors


@pytest.mark.solo  # timed: scripts/test.sh runs it alone
def test_a_visitor_over_the_queue_bound_is_told_the_app_is_busy(browser, served):
    """With ANATOMY_QUEUE_SIZE=1 kept full by API clients (two requests running, one waiting), Translate answers
    at once with Gradio's busy message, not a spinner that never ends."""
    from gradio_client import Client

    page = browser.new_page()
    page.set_default_timeout(TIMEOUT)
    client = Client(served.url, verbose=False)
    toast = page.locator("#anatomy-toasts .anatomy-toast").filter(has_text="currently busy")
    try:
        # A click can land in the instant a place is free: it is then served, and Gradio ignores further clicks
        # while it runs, so each try starts from a fresh page and an idle server.
        for _ in range(6):
            load_page_again_if_refused(page, served.url)
            page.get_by_label("Source text").fill(SENTENCES["de"])
            with full_queue(client):
                page.get_by_role("button", name="Translate", exact=True).click()
                try:
                    toast.first.wait_for(timeout=3_000)  # at once: 0.7-2.2 s here with the other core busy
                except PlaywrightTimeout:  # served: leave the page, so that it chains no more events
                    page.goto("about:blank")
                    continue
                # read now: the toast closes by itself while full_queue waits for its jobs on exit
                message = toast.first.inner_text(timeout=1_000)
                break
        else:
            pytest.fail("none of 6 clicks on a full queue was refused within 3 s")
        assert "This application is currently busy. Please try again." in message
    finally:
        page.close()


def load_page_again_if_refused(page, url: str) -> None:
    """load_page, again when the page's own load events were refused. ANATOMY_QUEUE_SIZE=1 counts an event that
    the server has not yet taken up as waiting, so on a busy machine the second of two load events sent at once
    can get the HTTP 503 of a full queue, and the page never becomes ready (seen with the other core busy)."""
    for _ in range(2):
        with contextlib.suppress(PlaywrightTimeout):
            load_page(page, url, timeout=20_000)  # 2-4 s when it works
            return
    load_page(page, url)


@contextlib.contextmanager
def full_queue(client):
    """API clients keep the served app's queue full (a request takes a second or more; a freed place is asked
    for again at once), and the server is idle again on exit."""
    from gradio_client.utils import QueueError

    from tests.app_fixtures import SLOW_REQUEST

    jobs, stop = [], threading.Event()

    def keep_the_queue_full():
        while not stop.is_set():
            jobs.append(client.submit(**SLOW_REQUEST))
            time.sleep(0.02)

    filler = threading.Thread(target=keep_the_queue_full, daemon=True)
    filler.start()
    try:
        time.sleep(0.5)
        yield
    finally:
        stop.set()
        filler.join()
        for job in jobs:  # leave the server idle for the next try or test
            job.exception(timeout=60)
        # and a page's click that was served: the model's slot goes first come first served, so a request sent now
        # is answered after the click's translation has had its first slice, which holds its whole one-sentence
        # translation (a full queue refuses even a page's load events)
        deadline = time.monotonic() + 120
        while True:
            try:
                client.predict(text="Hund", direction="de-en", max_new_tokens=1, api_name="/translate")
                break
            except QueueError:
                assert time.monotonic() < deadline, "the served app stayed busy"
                time.sleep(0.2)


def test_a_closed_browser_tab_is_forgotten_and_its_run_freed(tiny, browser, monkeypatch):
    """As a visitor leaves: Chromium opens a link that translates, the session holds the run; the tab is closed and
    the session, the run with it, is gone within seconds (a 1 s grace)."""
    with short_grace(tiny, monkeypatch) as (url, sessions):
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE})}", wait_until="domcontentloaded")
        deadline = time.monotonic() + 60
        with_run = []
        while not with_run and time.monotonic() < deadline:
            with_run = [s for s, data in list(sessions.items())
                        if getattr(data.state_data.get(tiny.page.session._id), "run", None)]
            time.sleep(0.1)
        assert len(with_run) == 1, "the link's translation never reached the session's state"
        time.sleep(2)  # past the grace: an open tab keeps its session
        assert with_run[0] in sessions
        context.close()
        assert forgotten(sessions, with_run[0])
