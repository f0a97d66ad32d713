"""The offline file on the one host (anatomy/viewer/page.js): the app's presenter mode and line hover, and its own
address read as the app reads a link (tests/test_browser_hosts.py runs the keys, export, fitting and the tour on
both hosts)."""
from __future__ import annotations

from anatomy import offline
from tests.app_fixtures import SENTENCE
from tests.browser import TIMEOUT, needs_chromium
from tests.test_offline import entry, trace  # noqa: F401 (the offline page's fixtures: a tiny model's trace)

pytestmark = needs_chromium


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


def test_the_offline_page_has_the_app_s_presenter_mode_and_line_hover(browser, trace, entry, tmp_path):
    page, errors = open_offline(browser, trace, entry, tmp_path, 1280, 800)
    gd = "document.querySelector('#heatmap .anatomy-plot')"
    font = f"{gd}._fullLayout.font.size"
    size = page.evaluate(font)
    page.check("#presenter input")
    page.wait_for_function(f"([size]) => {font} === 1.5 * size", arg=[size])
    assert page.evaluate(f"{gd}._fullLayout.height") <= 800  # the window's height
    page.uncheck("#presenter input")
    page.wait_for_function(f"([size]) => {font} === size", arg=[size])
    # the line view: pointing at the first query's marker keeps only its lines
    page.select_option("#display", "lines")
    page.wait_for_function("document.querySelector('#heatmap .scatterlayer .point')")
    page.locator("#heatmap").scroll_into_view_if_needed()
    # the lines as drawn: (query row, key row) of each, a query's row at y = -row
    lines = page.evaluate("""() => document.querySelector('#heatmap .anatomy-plot').data.filter(t => t.meta === 'lines')
      .flatMap(t => Array.from({length: Math.floor(t.y.length / 3)}, (_, s) => [-t.y[3 * s], -t.y[3 * s + 1]]))""")
    point = page.evaluate("""() => { const gd = document.querySelector('#heatmap .anatomy-plot');
      const uid = gd._fullData.find(t => t.meta === 'queries').uid;
      const r = gd.querySelector('.scatterlayer .trace' + uid + ' .point').getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }""")
    page.mouse.move(*point)
    page.wait_for_function(f"{gd}.dataset.kept === 'queries:0'")
    segments = (f"{gd}.data.filter(t => t.meta === 'lines')"
                ".reduce((n, t) => n + t.x.filter(x => x !== null).length / 2, 0)")
    first = sum(query == 0 for query, _ in lines)
    assert 0 < first < len(lines)
    page.wait_for_function(f"{segments} === {first}")
    page.mouse.move(0, 0)
    page.wait_for_function(f"{gd}.dataset.kept === ''")
    assert not errors, errors
    page.close()


def test_the_offline_page_opens_at_the_view_its_address_names_as_the_app_reads_links(browser, trace, entry, tmp_path):
    """The offline file reads its own address as the app reads a link (anatomy/viewer/link.js): the view, presenter
    mode, and every value it changed or did not understand named among the page's notices."""
    page, errors = open_offline(browser, trace, entry, tmp_path, 1280, 900,
                                "?view=encoder&layer=1&head=2&step=3&merge=1&presenter=1&display=walk&head=9x")
    shown = page.evaluate("""() => ({kind: kind.value, layer: layer.value, head: head.value, step: step.value,
                                     merge: merge.checked, display: display.value,
                                     presenter: document.querySelector('#presenter input').checked,
                                     large: document.body.classList.contains('anatomy-presenter'),
                                     notices: document.getElementById('notices').textContent})""")
    assert {k: shown[k] for k in ("kind", "layer", "step", "merge", "display", "presenter")} == {
        "kind": "encoder", "layer": "1", "step": "3", "merge": True, "display": "heatmap", "presenter": True}
    assert shown["large"] and shown["head"] == "mean"  # head=9x is the last value given: not understood
    assert "Not understood in the link, so the default was used: head=9x (allowed: mean or 1 to" in shown["notices"]
    assert errors == []
