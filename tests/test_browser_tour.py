"""The tour in a real browser: every stop walked by keyboard for three sentences, the viewer's state at each checked
against the stop's spec, a link that opens stop 5, presenter mode at 1280×720, and the offline page's tour."""
from __future__ import annotations

import urllib.parse

import pytest

from anatomy import engine, offline, tour
from anatomy.inputs import Request
from tests.browser import TIMEOUT, needs_chromium, wait_title

pytestmark = needs_chromium
SENTENCES = [("de-en", "Zwei Hunde spielen im Schnee."),
             ("de-en", "Die Regierung hat gestern angekündigt, dass die Steuern für kleine Unternehmen im nächsten "
                       "Jahr sinken werden, obwohl viele Ökonomen davor warnen."),
             ("en-de", "The weather was terrible, so we stayed at home and played cards.")]
# The page's state a stop sets, as the controls show it
STATE = """() => ({
  stop: Number(document.querySelector('#anatomy-tour')?.dataset.stop || 0),
  kind: document.querySelector('select#kind')?.value,
  head: document.querySelector('select#head')?.value,
  layer: Number(document.querySelector('select#layer')?.value),
  step: Number(document.querySelector('input#step')?.value),
  display: document.querySelector('select#display')?.value,
  tab: Array.from(document.querySelectorAll('button[role=tab]'))
    .find(b => b.getAttribute('aria-selected') === 'true')?.textContent.trim(),
  target: document.querySelector('.anatomy-tour-target')?.id || null})"""
AT_STOP = f"""([k, want]) => {{ const s = ({STATE})();
  return s.stop === k && s.kind === want.kind && s.head === want.head && s.layer === want.layer &&
         s.step === want.step && s.display === want.display && s.tab === want.tab && s.target === want.target; }}"""


def open_page(browser, url, key, text, width=1600, height=1000, **query):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(f"{url}?{urllib.parse.urlencode({'text': text, 'direction': key, **query})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    return page


def wanted(page, k: int) -> dict:
    """Stop k's spec (from 1), as the page's tour data has it, in the controls' terms."""
    return page.evaluate("""([k]) => { const s = window.anatomy.tourData.stops[k - 1], v = s.view;
      const tabs = Array.from(document.querySelectorAll('button[role=tab]')).map(b => b.textContent.trim());
      return {kind: v.kind, head: String(v.head), layer: v.layer, step: v.step, display: v.display,
              tab: {heads: 'All heads', stats: 'Head statistics', predictions: 'Predictions', why: 'Why this word',
                    importance: 'Head importance', positional: 'Positional encoding',
                    architecture: 'Architecture'}[v.tab], target: s.target, key: s.key, tabs}; }""", [k])


def walk(page, start: int = 1) -> list[str]:
    """Every stop from `start` by the → key, each checked against its spec; the keys of the stops walked."""
    n = page.evaluate("window.anatomy.tourData.stops.length")
    keys = []
    for k in range(start, n + 1):
        want = wanted(page, k)
        assert want["tab"] in want["tabs"]
        try:
            page.wait_for_function(AT_STOP, arg=[k, want])
        except Exception as err:
            raise AssertionError(f"stop {k}: wanted {want}, the page shows {page.evaluate(STATE)}") from err
        keys.append(want["key"])
        page.keyboard.press("ArrowRight")
    return keys


@pytest.mark.parametrize("key,text", SENTENCES, ids=["short", "long", "en-de"])
def test_every_stop_sets_the_viewer_as_it_says(browser, url, key, text):
    page = open_page(browser, url, key, text)
    page.click("#tour-start")
    page.wait_for_selector("#anatomy-tour")
    keys = walk(page)
    assert len(keys) >= 10 and keys[0] == "pieces" and keys[-1] == "architecture"
    assert page.evaluate("window.anatomy.tourData.stops.length") == len(keys)
    # → on the last stop goes nowhere; Esc leaves, and the step keys move the step again
    assert page.evaluate("document.querySelector('#anatomy-tour').dataset.stop") == str(len(keys))
    page.keyboard.press("Escape")
    page.wait_for_function("!document.querySelector('#anatomy-tour') && !document.body.classList.contains("
                           "'anatomy-touring') && !document.querySelector('.anatomy-tour-target')")
    step = page.evaluate(f"({STATE})().step")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"({STATE})().step === {step - 1}")
    assert not page.errors
    page.context.close()


def test_a_link_opens_stop_5_in_presenter_mode_beside_the_view(browser, url):
    key, text = SENTENCES[0]
    page = open_page(browser, url, key, text, 1280, 720, tour=5, presenter=1)
    page.wait_for_selector("#anatomy-tour")
    want = wanted(page, 5)
    page.wait_for_function(AT_STOP, arg=[5, want])
    assert page.evaluate("document.body.classList.contains('anatomy-presenter')")
    # the panel is beside the page, not over what the stop points at
    panel = page.locator("#anatomy-tour").bounding_box()
    target = page.locator(".anatomy-tour-target").bounding_box()
    assert target["x"] + target["width"] <= panel["x"] + 1 and panel["x"] + panel["width"] <= 1281
    link = page.locator("#anatomy-tour .anatomy-tour-link").get_attribute("href")
    assert "tour=5" in link and "presenter=1" in link and urllib.parse.quote_plus(text.split()[0]) in link
    # the buttons move too
    page.click("#anatomy-tour .anatomy-tour-next")
    page.wait_for_function(AT_STOP, arg=[6, wanted(page, 6)])
    page.click("#anatomy-tour .anatomy-tour-prev")
    page.wait_for_function(AT_STOP, arg=[5, want])
    assert not page.errors
    page.context.close()


WHY_TITLE = """() => Array.from(document.querySelectorAll('#why-step [data-testid=plotly] text'))
  .map(t => t.textContent).find(t => t.startsWith('Why ')) || ''"""


def test_a_link_to_the_why_stop_draws_what_walking_there_draws(browser, url):
    """Issue 50: a link to the Why this word stop (of a sentence long enough that its last step is far from the
    stop's) once drew the last step's explanation under a panel naming the stop's step."""
    key, text = "de-en", "Der kleine Junge spielt jeden Nachmittag mit seinem Hund im Garten."
    walked = open_page(browser, url, key, text)
    walked.click("#tour-start")
    walked.wait_for_selector("#anatomy-tour")
    k = walked.evaluate("window.anatomy.tourData.stops.findIndex(s => s.key === 'why') + 1")
    assert k > 1
    for stop in range(1, k):
        walked.wait_for_function(AT_STOP, arg=[stop, wanted(walked, stop)])
        walked.keyboard.press("ArrowRight")
    want = wanted(walked, k)
    walked.wait_for_function(AT_STOP, arg=[k, want])
    wait_title(walked, "why-step", f"at step {want['step']}?")
    title = walked.evaluate(WHY_TITLE)
    walked.context.close()
    linked = open_page(browser, url, key, text, tour=k)
    linked.wait_for_selector("#anatomy-tour")
    linked.wait_for_function(AT_STOP, arg=[k, want])
    wait_title(linked, "why-step", f"at step {want['step']}?")
    assert linked.evaluate(WHY_TITLE) == title and f"step {want['step']}" in title
    assert not linked.errors
    linked.context.close()


def test_the_offline_page_tours_from_its_file(browser, shipped, tmp_path):
    """The page saved after a tour holds its model stops: the tour runs from the file, with no server."""
    registry = shipped.anatomy.registry
    key, text = SENTENCES[0]
    entry = registry.get(key)
    request = Request(key, text, entry.decoding, "cpu")
    trace = engine.translate(entry.cpu, request)
    facts = tour.facts_of(entry.config, entry.untrained, entry.corpus_heads())
    toured = tour.tour(trace, facts, engine.tour_extras(entry.cpu, request, trace, facts))
    path = offline.write(trace, entry, text, [], tmp_path / "page.html", toured=toured).path
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{path.as_uri()}?tour=3")
    page.wait_for_function("document.body.dataset.ready === '1'")
    state = """() => ({stop: Number(document.querySelector('#anatomy-tour')?.dataset.stop || 0),
      kind: document.getElementById('kind').value, layer: Number(document.getElementById('layer').value),
      head: document.getElementById('head').value, step: Number(document.getElementById('step').value),
      target: document.querySelector('.anatomy-tour-target')?.id || null})"""
    for k, stop in enumerate(toured.stops[2:], start=3):
        v = stop.view
        want = {"stop": k, "kind": v.kind, "layer": v.layer, "head": v.head, "step": v.step, "target": stop.target}
        page.wait_for_function(f"([want]) => JSON.stringify(({state})()) === JSON.stringify(want)", arg=[want])
        page.keyboard.press("ArrowRight")
    assert "why" in {s.key for s in toured.stops}
    page.keyboard.press("Escape")
    page.wait_for_function("!document.querySelector('#anatomy-tour')")
    page.click("#tour-start")
    page.wait_for_function(f"({state})().stop === 1")
    assert not errors
    page.close()
