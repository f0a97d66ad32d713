"""Presenter readiness in a real browser: the large view fits a projector (1280×720, 1920×1080) with readable,
non-overlapping labels; above the fold; phone width (keyboard stepping and export of any figure by name:
tests/test_browser_hosts.py, on the app and the offline file)."""
from __future__ import annotations

import urllib.parse

import pytest

from tests.browser import TIMEOUT, choose, needs_chromium, open_tab, wait_title

pytestmark = needs_chromium
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
BOXES = """sel => Array.from(document.querySelectorAll(sel)).map(e => {
    const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, w: b.width, h: b.height,
    font: parseFloat(getComputedStyle(e).fontSize), text: e.textContent}; })"""


def open_page(browser, url, key, width, height, presenter=False):
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    query = {"text": SENTENCE, "direction": key, **({"presenter": 1} if presenter else {})}
    page.goto(f"{url}?{urllib.parse.urlencode(query)}", wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    wait_title(page, "step-topk", "Step ")
    if presenter:
        page.wait_for_function("document.querySelector('#heatmap .js-plotly-plot')._fullLayout.font.size >= 18")
    page.wait_for_timeout(500)  # the relayout of the last figure has landed
    return page


@pytest.fixture()
def key(shipped):
    return shipped.anatomy.registry.default_key


def inside(box, width, height) -> bool:
    return box["x"] >= -1 and box["y"] >= -1 and box["x"] + box["w"] <= width + 1 and box["y"] + box["h"] <= height + 1


def overlap(a, b) -> bool:
    return a["x"] < b["x"] + b["w"] - 1 and b["x"] < a["x"] + a["w"] - 1 and a["y"] < b["y"] + b["h"] - 1 \
        and b["y"] < a["y"] + a["h"] - 1


@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_presenter_stage_fits_the_screen(browser, url, key, width, height):
    """The first screen, unscrolled, holds the source, the translation and the whole large view in large type."""
    page = open_page(browser, url, key, width, height, presenter=True)
    page.evaluate("window.scrollTo(0, 0)")
    for elem in ("#source-text textarea", "#translation textarea", "#heatmap"):
        box = page.evaluate(BOXES, elem)[0]
        assert inside(box, width, height), (elem, box)
    texts = {name: page.evaluate(BOXES, ", ".join(f"#heatmap {s}" for s in sels)) for name, sels in
             [("x", [".xtick text"]), ("y", [".ytick text"]),
              ("titles", [".gtitle", ".g-xtitle text", ".g-ytitle text"])]}
    assert len(texts["titles"]) == 3 and len(texts["x"]) >= 10 and len(texts["y"]) >= 10
    for name, boxes in texts.items():
        for box in boxes:
            assert inside(box, width, height), (name, box)
    for ticks in (texts["x"], texts["y"]):
        assert min(t["font"] for t in ticks) >= 18  # read from the back of a room
        for i, a in enumerate(ticks):
            for b in ticks[i + 1:]:
                assert not overlap(a, b), (a, b)
    # Stop, slow motion and the page's files stay for talks; the settings go; the view's controls are one key away
    assert page.locator("#stop").is_visible() and page.locator("#slow").is_visible()
    assert page.locator("#download-page").is_visible() and page.locator("#download").is_visible()
    assert not page.locator("#run-info").is_visible() and not page.locator("select#kind").is_visible()
    page.locator("h1").first.click()
    page.keyboard.press("v")
    choose(page, "kind", "encoder")
    wait_title(page, "heatmap", "Encoder self-attention · layer")
    page.locator("#view-toggle").click()  # and the button folds them again
    page.wait_for_function("!document.querySelector('select#kind').checkVisibility()")
    # the beam candidates: every column within the table, none cut, numbers on one line
    cells = page.evaluate(BOXES, "#candidates th, #candidates td")
    table = page.evaluate(BOXES, "#candidates")[0]
    assert cells and all(c["x"] + c["w"] <= table["x"] + table["w"] + 1 for c in cells), (table, cells)
    lines = page.evaluate("""() => Array.from(document.querySelectorAll('#candidates td:not(:nth-child(2))'))
      .map(td => { const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; })""")
    assert lines and all(n == 1 for n in lines), lines
    # every tab in one click: a wrapped bar, no overflow menu
    assert page.get_by_role("button", name="More tabs").count() == 0
    for tab in page.get_by_role("tab").all():
        box = tab.bounding_box()
        assert tab.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= width, (tab.inner_text(), box)
    # the step panels: one per row, titles within the screen's width
    for elem in ("step-cross", "step-self", "step-topk"):
        title = page.evaluate(BOXES, f"#{elem} .gtitle")[0]
        assert title["x"] + title["w"] <= width, title
    # numbers in table cells in large type, never broken inside
    page.get_by_role("tab", name="Predictions").click()
    page.wait_for_selector("#topk-table .heatmaplayer image")
    page.wait_for_function("Array.from(document.querySelectorAll('#topk-table .textpoint text'))"
                           ".every(t => parseFloat(getComputedStyle(t).fontSize) >= 16)")
    open_tab(page, "Architecture")
    page.wait_for_selector("#model-card td")
    lines = page.evaluate("""() => Array.from(document.querySelectorAll('#model-card td'))
        .filter(td => /^[0-9,]{5,}$/.test(td.textContent.trim())).map(td => {
            const r = document.createRange(); r.selectNodeContents(td);
            return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.bottom))).size; })""")
    assert lines and set(lines) == {1}, lines  # every long number on one line
    assert not page.errors, page.errors
    page.context.close()


def test_translation_and_heatmap_above_the_fold(browser, url, key):
    page = open_page(browser, url, key, 1600, 1000)
    page.evaluate("window.scrollTo(0, 0)")
    for elem in ("#translation", "#heatmap"):
        box = page.evaluate(BOXES, elem)[0]
        assert inside(box, 1600, 1000), (elem, box)
    # the export controls open over the page: nothing below them moves
    before = page.evaluate(BOXES, "#heatmap, #translation")
    page.get_by_text("Export a figure").click()
    page.locator("#export-png").wait_for()
    assert page.locator("#export-png").is_visible() and page.evaluate(BOXES, "#heatmap, #translation") == before
    page.get_by_text("Export animation").click()
    page.locator("#animation-make").wait_for()
    assert page.evaluate(BOXES, "#heatmap, #translation") == before
    page.get_by_text("Export a figure").click()
    # the beam candidates' columns all within the table
    cells = page.evaluate(BOXES, "#candidates th")
    table = page.evaluate(BOXES, "#candidates")[0]
    assert len(cells) == 5 and all(c["x"] + c["w"] <= table["x"] + table["w"] + 1 for c in cells), (table, cells)
    # no broken image on any tab (the model card's figure is inlined)
    for tab in page.get_by_role("tab").all():
        tab.click()
        if tab.inner_text() == "Training":
            page.locator("#training-card img").first.wait_for()
        page.wait_for_timeout(300)
        broken = page.evaluate("Array.from(document.querySelectorAll('img')).filter(i => i.complete"
                               " && i.offsetParent && !i.naturalWidth).map(i => i.alt || i.src.slice(0, 80))")
        assert not broken, (tab.inner_text(), broken)
    page.context.close()


def test_phone_heatmap_is_usable(browser, url, key):
    page = open_page(browser, url, key, 390, 844)
    page.wait_for_function("document.querySelector('#heatmap .js-plotly-plot')._fullLayout.font.size === 10")
    size = page.evaluate("document.querySelector('#heatmap .js-plotly-plot')._fullLayout._size")
    assert size["w"] >= 160, size  # was ~95 px with the desktop margins
    assert page.evaluate("document.documentElement.scrollWidth") <= 392  # no sideways scrolling
    # the large view within two screens of the translation; the view's controls in readable rows
    top = {e: page.evaluate(BOXES, e)[0]["y"] for e in ("#translation", "#heatmap")}
    assert top["#heatmap"] - top["#translation"] <= 2 * 844, top
    for elem in ("#merge", "#plain", "#hide"):  # each on one line, within the screen
        box = page.evaluate(BOXES, f"#view-controls label:has({elem})")[0]
        assert box["h"] < 2 * box["font"] and box["x"] >= 0 and box["x"] + box["w"] <= 392, (elem, box)
    page.context.close()
