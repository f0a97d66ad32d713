"""Both hosts fit their figures with one module (anatomy/viewer/screen.js): the offline page's figures keep their
size and their labels apart through a resize and the tour, and the tour's panel lies at the bottom of a phone's
screen in the app as in the offline page."""
from __future__ import annotations

import urllib.parse

from anatomy import offline
from tests.app_fixtures import SENTENCE
from tests.browser import TIMEOUT, needs_chromium
from tests.test_offline import entry, trace  # noqa: F401 (the offline page's fixtures: a tiny model's trace)

pytestmark = needs_chromium
# The architecture figure's height and its boxes' labels (annotations): how many pairs of them overlap
ARCHITECTURE = """() => {
  const gd = document.getElementById('architecture-figure');
  const boxes = Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.getBoundingClientRect());
  let overlaps = 0;
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
    if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
        Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2) overlaps += 1;
  }));
  return {height: gd.getBoundingClientRect().height, labels: boxes.length, overlaps};
}"""
# The tour's panel and its Next button, as the screen shows them
PANEL = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                   right: r.right}; };
  return {panel: box(document.querySelector('#anatomy-tour')),
          next: box(document.querySelector('#anatomy-tour .anatomy-tour-next')),
          width: window.innerWidth, height: window.innerHeight};
}"""


def assert_at_the_bottom(shown: dict) -> None:
    """The panel spans the screen's width at its bottom, below half its height, with its Next button on screen."""
    panel, button = shown["panel"], shown["next"]
    assert panel["left"] <= 1 and abs(panel["right"] - shown["width"]) <= 1, shown
    assert abs(panel["bottom"] - shown["height"]) <= 1 and panel["top"] > shown["height"] / 2, shown
    assert 0 <= button["top"] and button["bottom"] <= shown["height"] and button["right"] <= shown["width"], shown


def open_offline(browser, trace, entry, folder, width: int, height: int, query: str = "") -> tuple:
    """The offline page of `trace` written to `folder` and opened at this size and query, drawn; the page errors
    it raises are collected in the list returned with it."""
    path = offline.write(trace, entry, SENTENCE, [], folder / "page.html").path
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri() + query)
    page.wait_for_function("document.body.dataset.ready === '1'")
    return page, errors


def test_the_offline_architecture_keeps_its_size_and_labels_through_a_resize_and_the_tour(browser, trace, entry,
                                                                                        tmp_path):
    page, errors = open_offline(browser, trace, entry, tmp_path, 900, 900)
    first = page.evaluate(ARCHITECTURE)
    assert first["height"] > 300 and first["labels"] > 5 and first["overlaps"] == 0, first
    kept = f"() => {{ const a = ({ARCHITECTURE})(); return a.height > 300 && a.overlaps === 0; }}"
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_timeout(500)  # Plotly's and the page's answers to the resize
    page.wait_for_function(kept)
    page.click("#tour-start")
    page.wait_for_selector("#anatomy-tour")
    page.wait_for_timeout(500)
    page.wait_for_function(kept)
    page.keyboard.press("Escape")
    page.wait_for_function("!document.querySelector('#anatomy-tour')")
    page.wait_for_timeout(500)
    page.wait_for_function(kept)
    width = page.evaluate("document.getElementById('architecture-figure')._fullLayout.width")
    assert width > 1100, width  # it fills the wider page again
    assert not errors, errors
    page.close()


def test_the_tour_panel_sits_at_the_bottom_of_a_phone_in_the_offline_page(browser, trace, entry, tmp_path):
    page, _ = open_offline(browser, trace, entry, tmp_path, 390, 844, "?tour=1")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
    page.wait_for_selector("#anatomy-tour .anatomy-tour-next")
    assert_at_the_bottom(page.evaluate(PANEL))
    page.close()


def test_the_tour_panel_sits_at_the_bottom_of_a_phone_in_the_app(browser, url, shipped):
    key = shipped.anatomy.registry.default_key
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}?{urllib.parse.urlencode({'text': 'Zwei Hunde spielen im Schnee.', 'direction': key, 'tour': 1})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("#anatomy-tour .anatomy-tour-next")
    assert_at_the_bottom(page.evaluate(PANEL))
    # the panel's buttons work there: Next goes to the second stop
    page.click("#anatomy-tour .anatomy-tour-next")
    page.wait_for_function("document.querySelector('#anatomy-tour')?.dataset.stop === '2'")
    assert_at_the_bottom(page.evaluate(PANEL))
    assert not errors, errors
    context.close()


def test_the_offline_page_has_the_app_s_presenter_mode_and_line_hover(browser, trace, entry, tmp_path):
    page, errors = open_offline(browser, trace, entry, tmp_path, 1280, 800)
    font = "document.getElementById('heatmap')._fullLayout.font.size"
    size = page.evaluate(font)
    page.check("#presenter")
    page.wait_for_function(f"([size]) => {font} === 1.5 * size", arg=[size])
    assert page.evaluate("document.getElementById('heatmap')._fullLayout.height") <= 800  # the window's height
    page.uncheck("#presenter")
    page.wait_for_function(f"([size]) => {font} === size", arg=[size])
    # the line view: pointing at the first query's marker keeps only its lines
    page.select_option("#display", "lines")
    page.wait_for_function("document.querySelector('#heatmap .scatterlayer .point')")
    page.locator("#heatmap").scroll_into_view_if_needed()
    # the lines as drawn: (query row, key row) of each, a query's row at y = -row
    lines = page.evaluate("""() => document.getElementById('heatmap').data.filter(t => t.meta === 'lines')
      .flatMap(t => Array.from({length: Math.floor(t.y.length / 3)}, (_, s) => [-t.y[3 * s], -t.y[3 * s + 1]]))""")
    point = page.evaluate("""() => { const gd = document.getElementById('heatmap');
      const uid = gd._fullData.find(t => t.meta === 'queries').uid;
      const r = gd.querySelector('.scatterlayer .trace' + uid + ' .point').getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }""")
    page.mouse.move(*point)
    page.wait_for_function("document.getElementById('heatmap').dataset.kept === 'queries:0'")
    segments = ("document.getElementById('heatmap').data.filter(t => t.meta === 'lines')"
                ".reduce((n, t) => n + t.x.filter(x => x !== null).length / 2, 0)")
    first = sum(query == 0 for query, _ in lines)
    assert 0 < first < len(lines)
    page.wait_for_function(f"{segments} === {first}")
    page.mouse.move(0, 0)
    page.wait_for_function("document.getElementById('heatmap').dataset.kept === ''")
    assert not errors, errors
    page.close()


def test_the_offline_page_opens_at_the_view_its_address_names_as_the_app_reads_links(browser, trace, entry, tmp_path):
    """The offline file reads its own address as the app reads a link (anatomy/viewer/link.js): the view, presenter
    mode, and every value it changed or did not understand named among the page's notices."""
    page, errors = open_offline(browser, trace, entry, tmp_path, 1280, 900,
                                "?view=encoder&layer=1&head=2&step=3&merge=1&presenter=1&display=walk&head=9x")
    shown = page.evaluate("""() => ({kind: kind.value, layer: layer.value, head: head.value, step: step.value,
                                     merge: merge.checked, display: display.value, presenter: presenter.checked,
                                     large: document.body.classList.contains('anatomy-presenter'),
                                     notices: document.getElementById('notices').textContent})""")
    assert {k: shown[k] for k in ("kind", "layer", "step", "merge", "display", "presenter")} == {
        "kind": "encoder", "layer": "1", "step": "3", "merge": True, "display": "heatmap", "presenter": True}
    assert shown["large"] and shown["head"] == "mean"  # head=9x is the last value given: not understood
    assert "Not understood in the link, so the default was used: head=9x (allowed: mean or 1 to" in shown["notices"]
    assert errors == []
