"""One host (anatomy/viewer/page.js) for the app and the offline file: the same browser tests on both, each on the
same translation by the shipped model: the keys move the view, any figure exports by name, the figures keep their
size and labels through a resize and the tour, and the tour's panel sits at the bottom of a phone's screen."""
from __future__ import annotations

import urllib.parse

import pytest

from anatomy import engine, offline, tour
from anatomy.inputs import Request
from tests.browser import TIMEOUT, choose, needs_chromium, slide, wait_title

pytestmark = needs_chromium
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
LONG = ("Die Regierung hat gestern angekündigt, dass die Steuern für kleine Unternehmen im nächsten Jahr sinken "
        "werden, obwohl viele Ökonomen davor warnen, dass das Defizit weiter steigen könnte.")
HOSTS = ["app", "offline"]
# The architecture figure's height and its boxes' labels (annotations): how many pairs of them overlap
ARCHITECTURE = """() => {
  const gd = document.querySelector('#architecture .anatomy-plot');
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


@pytest.fixture(scope="module")
def key(shipped):
    return shipped.anatomy.registry.default_key


def saved(shipped, key, text, folder):
    """The offline file of `text` as the app saves it after a tour (its stops that need the model in it)."""
    entry = shipped.anatomy.registry.get(key)
    request = Request(key, text, entry.decoding, "cpu")
    trace = engine.translate(entry.cpu, request)
    facts = tour.facts_of(entry.config, entry.untrained, entry.corpus_heads())
    toured = tour.tour(trace, facts, engine.tour_extras(entry.cpu, request, trace, facts))
    return offline.write(trace, entry, text, [], folder / "page.html", toured=toured).path


@pytest.fixture(scope="module")
def page_file(shipped, key, tmp_path_factory):
    return saved(shipped, key, SENTENCE, tmp_path_factory.mktemp("hosts"))


@pytest.fixture(scope="module")
def long_file(shipped, key, tmp_path_factory):
    return saved(shipped, key, LONG, tmp_path_factory.mktemp("long"))


@pytest.fixture()
def opened(request, browser, shipped, key):
    """open(host, width, height, touch=False, text=SENTENCE, **query): the page of SENTENCE (or LONG) in that host,
    drawn; `page.errors` collects its errors. The app is asked for the text by a link, the offline file is of it."""
    contexts = []

    def open_page(host, width, height, touch=False, text=SENTENCE, **query):
        context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True,
                                      has_touch=touch, is_mobile=touch)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        if host == "app":
            url = request.getfixturevalue("url")
            page.goto(f"{url}?{urllib.parse.urlencode({'text': text, 'direction': key, **query})}",
                      wait_until="domcontentloaded")
        else:
            path = request.getfixturevalue("page_file" if text == SENTENCE else "long_file")
            page.goto(path.as_uri() + (f"?{urllib.parse.urlencode(query)}" if query else ""))
            page.wait_for_function("document.body.dataset.ready === '1'")
        page.wait_for_selector("#heatmap .heatmaplayer image")
        wait_title(page, "step-topk", "Step ")
        page.wait_for_timeout(500)  # the relayout of the last figure has landed
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.mark.parametrize("host", HOSTS)
def test_keys_move_step_layer_and_head(opened, shipped, host):
    L = shipped.anatomy.registry.get(None).config.n_decoder_layers
    page = opened(host, 1600, 1000)
    assert "← / →" in page.locator("#keys").inner_text()
    slide(page, "step", 2)
    wait_title(page, "step-cross", "Step 2 ·")
    frame = "document.querySelector('#heatmap .js-plotly-plot').layout.shapes[0].y0"
    page.wait_for_function(f"{frame} === 0.5")
    page.locator("h2").first.click()  # focus outside any field
    page.keyboard.press("ArrowRight")
    wait_title(page, "step-cross", "Step 3 ·")
    page.wait_for_function(f"{frame} === 1.5")  # the highlight moved one row down
    page.keyboard.press("[")
    wait_title(page, "heatmap", f"layer {L - 1}, mean")
    page.keyboard.press(".")
    wait_title(page, "heatmap", f"layer {L - 1}, head 1")
    # typing in a text field types
    page.click("#anatomy-tabs [role=tab][data-tab=positional]")
    page.locator("#pe-dims").press("ArrowLeft")
    page.wait_for_timeout(500)
    wait_title(page, "step-cross", "Step 3 ·")
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_export_any_figure_by_name(opened, shipped, key, host):
    L = shipped.anatomy.registry.get(None).config.n_decoder_layers
    page = opened(host, 1600, 1000)
    choose(page, "head", 2)
    wait_title(page, "heatmap", "head 2")
    page.get_by_text("Export a figure").click()
    with page.expect_download() as svg:
        page.locator("#export-svg").click()
    assert svg.value.suggested_filename == f"{key}_cross-attention_layer{L}_head2.svg"
    text = open(svg.value.path(), encoding="utf-8").read()
    assert text.lstrip().startswith("<svg") and "head 2" in text and "rgb(249, 115, 22)" not in text  # no frame
    page.get_by_label("Keep the orange step frame").check()
    with page.expect_download() as framed:
        page.locator("#export-svg").click()
    assert "rgb(249, 115, 22)" in open(framed.value.path(), encoding="utf-8").read()

    # another figure, as a 16:9 slide
    page.select_option("#export-figure", label="Step: next-piece probabilities")
    page.check("#export-wide")
    with page.expect_download() as png:
        page.locator("#export-png").click()
    steps = page.locator("input#step").input_value()
    assert png.value.suggested_filename == f"{key}_step{steps}_next-piece-probabilities_16x9.png"
    from tests.test_browser_views import png_size

    assert png_size(png.value.path()) == (1920, 1080)
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_the_architecture_keeps_its_size_and_labels_through_a_resize_and_the_tour(opened, host):
    page = opened(host, 900, 900)
    page.click("#anatomy-tabs [role=tab][data-tab=architecture]")
    page.wait_for_selector("#architecture .annotation-text")
    kept = f"() => {{ const a = ({ARCHITECTURE})(); return a.height > 300 && a.labels > 5 && a.overlaps === 0; }}"
    page.wait_for_function(kept)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_timeout(500)  # Plotly's and the page's answers to the resize
    page.wait_for_function(kept)
    page.click("#tour-start")
    page.wait_for_selector("#anatomy-tour")
    page.wait_for_timeout(500)
    page.keyboard.press("Escape")
    page.wait_for_function("!document.querySelector('#anatomy-tour')")
    page.click("#anatomy-tabs [role=tab][data-tab=architecture]")
    page.wait_for_timeout(500)
    page.wait_for_function(kept)
    # it fills the wider page again
    page.wait_for_function("document.querySelector('#architecture .anatomy-plot')._fullLayout.width > 700")
    assert not page.errors, page.errors


def assert_at_the_bottom(shown: dict) -> None:
    """The panel spans the screen's width at its bottom, below half its height, with its Next button on screen."""
    panel, button = shown["panel"], shown["next"]
    assert panel["left"] <= 1 and abs(panel["right"] - shown["width"]) <= 1, shown
    assert abs(panel["bottom"] - shown["height"]) <= 1 and panel["top"] > shown["height"] / 2, shown
    assert 0 <= button["top"] and button["bottom"] <= shown["height"] and button["right"] <= shown["width"], shown


@pytest.mark.parametrize("host", HOSTS)
def test_the_tour_panel_sits_at_the_bottom_of_a_phone(opened, host):
    page = opened(host, 390, 844, touch=True, tour=1)
    page.wait_for_selector("#anatomy-tour .anatomy-tour-next")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
    assert_at_the_bottom(page.evaluate(PANEL))
    # the panel's buttons work there: Next goes to the second stop
    page.tap("#anatomy-tour .anatomy-tour-next")
    page.wait_for_function("document.querySelector('#anatomy-tour')?.dataset.stop === '2'")
    assert_at_the_bottom(page.evaluate(PANEL))
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_the_arrows_move_the_step_from_a_list_or_a_checkbox(opened, host):
    """After a click on a list or a checkbox, ← / → move the decoding step (a browser moves a focused list with
    them on some systems only); a list keeps ↑ / ↓, a slider its arrows; the keys' hint says so."""
    page = opened(host, 1600, 1000)
    assert "from a list or a checkbox" in page.locator("#keys").inner_text()
    slide(page, "step", 2)
    wait_title(page, "step-cross", "Step 2 ·")
    choose(page, "head", 2)
    wait_title(page, "heatmap", "head 2")
    page.focus("select#head")
    page.keyboard.press("ArrowRight")
    wait_title(page, "step-cross", "Step 3 ·")
    assert page.locator("select#head").input_value() == "2"
    page.keyboard.press("ArrowDown")  # the list's own key
    page.wait_for_function("document.querySelector('select#head').value === '3'")
    page.focus("input#merge")
    page.keyboard.press("ArrowLeft")
    wait_title(page, "step-cross", "Step 2 ·")
    assert page.evaluate("document.activeElement.id") == "merge"
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_labels_left_out_for_room_are_said_on_the_figure(opened, host):
    """A long input's large view labels every second source piece or so in a small window: its title says so; a
    short one's labels every piece and says nothing."""
    shown = """() => { const gd = document.querySelector('#heatmap .js-plotly-plot');
      return {title: gd._fullLayout.title.text, labels: gd._fullLayout.xaxis.tickvals.length,
              pieces: gd.data[0].z[0].length}; }"""
    short = opened(host, 900, 900).evaluate(shown)
    assert short["labels"] == short["pieces"] and "labelled" not in short["title"], short
    page = opened(host, 900, 900, text=LONG)
    page.wait_for_function(f"({shown})().labels < ({shown})().pieces")
    narrow = page.evaluate(shown)
    assert "column labelled, hover for the others" in narrow["title"], narrow
    assert not page.errors, page.errors


# What Why this word's first figure says from now on, each new text once (a MutationObserver: nothing it says is missed)
WATCH_WHY = """() => { window.whySaid = [];
  const box = document.querySelector('#why-step');
  const read = () => { const t = Array.from(box.querySelectorAll('text')).map(e => e.textContent).join(' ');
                       if (t && window.whySaid[window.whySaid.length - 1] !== t) window.whySaid.push(t); };
  new MutationObserver(read).observe(box, {childList: true, subtree: true, characterData: true}); read(); }"""


@pytest.mark.parametrize("host", HOSTS)
def test_why_this_word_says_it_is_working_and_asks_for_no_click(opened, host):
    """While the tab's explanation is computed its figures say so (and where the progress shows), never "Open this
    tab again"; then they show it, with no click. The offline file without one says how to get it."""
    page = opened(host, 1600, 1000)
    page.evaluate(WATCH_WHY)
    page.click("#anatomy-tabs [role=tab][data-tab=why]")
    if host == "app":
        wait_title(page, "why-step", "Why “")
        said = page.evaluate("window.whySaid")
        assert any("Explaining this translation" in s and "progress" in s for s in said), said
    else:
        page.wait_for_selector("#why-none", state="visible")
        said = page.evaluate("window.whySaid")
    assert not any("again" in s for s in said), said
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_export_draws_a_figure_never_drawn_or_says_why_not(opened, key, host):
    """Export → Architecture → SVG before its tab was opened: the tab opens, the figure is drawn and exported; a
    figure this translation has none of says so."""
    page = opened(host, 1600, 1000)
    assert not page.locator("#architecture .js-plotly-plot").count()  # never drawn
    page.get_by_text("Export a figure").click()
    page.select_option("#export-figure", "architecture")
    with page.expect_download() as svg:
        page.locator("#export-svg").click()
    text = open(svg.value.path(), encoding="utf-8").read()
    assert text.lstrip().startswith("<svg") and "Encoder" in text, text[:300]
    assert page.locator("#export-note").is_hidden()
    # no heads are off: there is no change in log p to export
    page.select_option("#export-figure", "log-probs")
    page.locator("#export-png").click()
    page.wait_for_function("!document.querySelector('#export-note').hidden")
    assert "nothing to export" in page.locator("#export-note").inner_text()
    assert not page.errors, page.errors
