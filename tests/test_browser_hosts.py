"""One host (anatomy/viewer/page.js) for the app and the offline file: the same browser tests on both, each on the
same translation by the shipped model: the keys move the view, any figure exports by name, the figures keep their
size and labels through a resize and the tour, the tour's panel sits at the bottom of a phone's screen, presenter mode
keeps its large type beside the tour's panel, and a phone's page fits its screen (issue 50). Each layout is measured
from the page: boxes, scroll widths, font sizes."""
from __future__ import annotations

import re
import urllib.parse

import pytest

from anatomy import engine, offline, tour
from anatomy.inputs import Request
from tests.browser import TIMEOUT, choose, load_page, needs_chromium, slide, wait_title

pytestmark = needs_chromium
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
LONG = ("Die Regierung hat gestern angekündigt, dass die Steuern für kleine Unternehmen im nächsten Jahr sinken "
        "werden, obwohl viele Ökonomen davor warnen, dass das Defizit weiter steigen könnte.")
HOSTS = ["app", "offline"]
# The architecture figure's height, its boxes' labels (annotations): how many pairs of them overlap, and those whose
# text spills out of its box (the rect of the same name), their size and the page's scroll width
ARCHITECTURE = """() => {
  const gd = document.querySelector('#architecture .anatomy-plot');
  const boxes = Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.getBoundingClientRect());
  let overlaps = 0;
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
    if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
        Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2) overlaps += 1;
  }));
  const f = gd._fullLayout, g = gd.getBoundingClientRect(), rects = {}, spills = [];
  f.shapes.forEach(s => { if (s.type === 'rect' && s.name) rects[s.name] = {
    left: g.left + f.xaxis._offset + f.xaxis.l2p(s.x0), right: g.left + f.xaxis._offset + f.xaxis.l2p(s.x1),
    top: g.top + f.yaxis._offset + f.yaxis.l2p(s.y1), bottom: g.top + f.yaxis._offset + f.yaxis.l2p(s.y0)}; });
  gd.querySelectorAll('.annotation').forEach(el => {
    const a = f.annotations[Number(el.dataset.index)], r = rects[a.name];
    if (!r || !a.text || a.name.endsWith('.layer')) return;
    const t = el.querySelector('.annotation-text').getBoundingClientRect();
    if (Math.max(r.left - t.left, t.right - r.right, r.top - t.top, t.bottom - r.bottom) > 1) spills.push(a.name);
  });
  return {height: g.height, labels: boxes.length, overlaps, spills, size: f.annotations[0].font.size,
          scroll: document.documentElement.scrollWidth, width: window.innerWidth};
}"""
# Kept: the architecture at its size, its labels apart and each in its box, the page no wider than the window
KEPT = f"() => {{ const a = ({ARCHITECTURE})(); return a.height > 300 && a.labels > 5 && a.overlaps === 0 " \
       "&& !a.spills.length && a.scroll <= a.width; }"
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
    kept = KEPT
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
    # at the tour's architecture stop, beside the panel (a 500 px figure): its text in its boxes, the table below it
    page.set_viewport_size({"width": 900, "height": 900})
    page.click("#tour-start")
    page.wait_for_selector("#anatomy-tour")
    to_stop(page, "architecture")
    page.wait_for_timeout(500)
    page.wait_for_function(kept)
    assert page.evaluate("document.querySelector('#architecture-row').getBoundingClientRect().top >= "
                         "document.querySelector('#architecture .anatomy-plot').getBoundingClientRect().bottom - 1")
    assert not page.errors, page.errors


def assert_at_the_bottom(shown: dict) -> None:
    """The panel spans the screen's width at its bottom, below half its height, with its Next button on screen."""
    panel, button = shown["panel"], shown["next"]
    assert panel["left"] <= 1 and abs(panel["right"] - shown["width"]) <= 1, shown
    assert abs(panel["bottom"] - shown["height"]) <= 1 and panel["top"] > shown["height"] / 2, shown
    assert 0 <= button["top"] and button["bottom"] <= shown["height"] and button["right"] <= shown["width"], shown


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("touch", [True, False], ids=["phone", "window"])
def test_the_tour_panel_sits_at_the_bottom_of_a_phone(opened, host, touch):
    """On a phone (touch) and in a plain window as narrow."""
    page = opened(host, 390, 844, touch=touch, tour=1)
    page.wait_for_selector("#anatomy-tour .anatomy-tour-next")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
    assert_at_the_bottom(page.evaluate(PANEL))
    # the panel's buttons work there: Next goes to the second stop
    (page.tap if touch else page.click)("#anatomy-tour .anatomy-tour-next")
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
def test_the_tour_s_panel_never_scrolls_the_page_sideways(opened, host):
    page = opened(host, 1280, 800, tour=1)
    page.wait_for_selector("#anatomy-tour .anatomy-tour-next")
    page.wait_for_timeout(500)
    # the panel's room comes out of the page's width (the app's body is 100% wide: padding beside it overflowed)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.evaluate("document.querySelector('#anatomy-tour').getBoundingClientRect().left") >= \
        page.evaluate("document.querySelector('#heatmap').getBoundingClientRect().right")
    assert not page.errors, page.errors


# Tick and title sizes of a figure, and whether its title lies under Plotly's toolbar
TYPE = """(id) => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const size = (sel) => Math.min(...Array.from(gd.querySelectorAll(sel)).map(t => parseFloat(t.style.fontSize)));
  const t = gd.querySelector('.gtitle').getBoundingClientRect();
  const m = gd.querySelector('.modebar').getBoundingClientRect();
  const under = Math.min(t.right, m.right) - Math.max(t.left, m.left) > 1 &&
                Math.min(t.bottom, m.bottom) - Math.max(t.top, m.top) > 1;
  return {y: size('.ytick text'), x: size('.xtick text'), title: size('.gtitle'), under};
}"""
# The beam candidates' headers and numbers whose text is cut by its cell (result.js's table in every host; the
# candidates themselves wrap)
CUT = """() => Array.from(document.querySelectorAll('table#candidates th, table#candidates td:not(:nth-child(2))'))
  .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""


def to_stop(page, key: str) -> None:
    """The tour walked by key to its stop `key`."""
    for _ in range(20):
        if page.evaluate("document.querySelector('#anatomy-tour').dataset.key") == key:
            return
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(200)
    raise AssertionError(f"no stop {key}")


def presenter_architecture(opened, host):
    """A page in presenter mode at 1280×720 with its Architecture tab open and the figure kept."""
    page = opened(host, 1280, 720, presenter=1)
    page.click("#anatomy-tabs [role=tab][data-tab=architecture]")
    page.wait_for_selector("#architecture .annotation-text")
    page.wait_for_function(KEPT)
    return page


@pytest.mark.parametrize("host", HOSTS)
def test_a_figure_whose_box_narrows_unseen_is_fitted_again(opened, host):
    """A figure's box that narrows with no change of the page's classes, styles or window (here a stylesheet added to
    the head; on a page, a scrollbar, a transition beside it or a font arriving) is fitted to its new width: the
    architecture's text stays in its boxes."""
    page = presenter_architecture(opened, host)
    width = "document.querySelector('#architecture .anatomy-plot')._fullLayout.width"
    before = page.evaluate(width)
    page.evaluate("document.head.appendChild(Object.assign(document.createElement('style'), "
                  "{textContent: '#architecture { max-width: 600px; }'}))")
    page.wait_for_function(f"{width} <= 600 && {width} < {before}", timeout=5000)
    try:
        page.wait_for_function(KEPT, timeout=5000)
    except Exception:  # what the figure shows instead, said
        raise AssertionError(page.evaluate(ARCHITECTURE)) from None
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_a_figure_drawn_again_with_its_own_layout_keeps_its_type(opened, host):
    """The viewer hands a figure the server drew to Plotly as the same objects each time it draws it again; the fits
    change that layout in place, so reading it again as the figure's own sizes grew the architecture's type with each
    drawing (14.3 px, then 16.8 px in presenter mode's tour, its text out of three boxes)."""
    page = presenter_architecture(opened, host)
    size = "document.querySelector('#architecture .anatomy-plot')._fullLayout.annotations[0].font.size"
    first = page.evaluate(size)
    for _ in range(2):
        page.evaluate("() => { const gd = document.querySelector('#architecture .anatomy-plot');"
                      " return Plotly.react(gd, gd.data, gd.layout).then(() => null); }")
        page.wait_for_timeout(300)
    assert page.evaluate(size) == pytest.approx(first), (first, page.evaluate(ARCHITECTURE))
    page.wait_for_function(KEPT, timeout=5000)
    assert not page.errors, page.errors


@pytest.mark.parametrize("host", HOSTS)
def test_presenter_mode_keeps_its_large_type_beside_the_tour(opened, host):
    page = opened(host, 1280, 720, presenter=1)
    outside = page.evaluate(TYPE, "heatmap")
    assert outside["y"] >= 18, outside
    page.click("#tour-start")
    page.wait_for_selector("#anatomy-tour")
    to_stop(page, "positional-head")
    try:  # fitted once the panel's room is taken (seconds on a busy machine)
        page.wait_for_function(f"(t => t.y === {outside['y']} && !t.under)(({TYPE})('heatmap'))", timeout=15000)
    except Exception:
        pass  # the assertions below say what the page shows
    inside = page.evaluate(TYPE, "heatmap")
    assert inside["y"] == outside["y"] and inside["x"] >= 15 and inside["title"] == outside["title"], inside
    assert not inside["under"], inside
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # the beam's candidates: headers and numbers whole
    to_stop(page, "beam")
    try:
        page.wait_for_function(f"({CUT})().length === 0", timeout=15000)
    except Exception:
        pass
    assert page.evaluate(CUT) == []
    # the architecture's text in its boxes, larger than its own 11 px; its box at the window's top (in the app the
    # page below it was too short for that until its figure came from the server)
    to_stop(page, "architecture")
    page.wait_for_function("Math.abs(document.querySelector('#architecture').getBoundingClientRect().top) <= 2",
                           timeout=5000)
    try:
        page.wait_for_function(KEPT)
    except Exception:  # what the figure shows instead, said
        raise AssertionError(page.evaluate(ARCHITECTURE)) from None
    try:
        page.wait_for_function(f"({ARCHITECTURE})().size >= 1.25 * 11", timeout=15000)
    except Exception:
        pass
    assert page.evaluate(ARCHITECTURE)["size"] >= 1.25 * 11
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
    assert re.search(r"every \d+(nd|rd|th) column( and every \d+(nd|rd|th) row)? labelled, hover for the others",
                     narrow["title"]), narrow
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
@pytest.mark.parametrize("width,presenter", [(1280, 0), (900, 0), (1280, 1)])
def test_the_positional_encoding_s_colorbars_lie_beside_their_heatmaps(opened, host, width, presenter):
    page = opened(host, width, 800, **({"presenter": 1} if presenter else {}))
    page.click("#anatomy-tabs [role=tab][data-tab=positional]")
    for name in ("pe", "pe-similarity", "pe-rows"):
        page.wait_for_selector(f"#{name} .colorbar")
    page.wait_for_timeout(800)
    # each colorbar (bar and tick labels) right of its own heatmap and clear of every other figure's plot
    placed = page.evaluate("""() => ['pe', 'pe-curves', 'pe-similarity', 'pe-rows'].flatMap(id => {
      const gd = document.querySelector('#' + id + ' .js-plotly-plot'), bar = gd.querySelector('.colorbar');
      if (!bar) return [];
      const b = bar.getBoundingClientRect(), map = gd.querySelector('.heatmaplayer image').getBoundingClientRect();
      const others = Array.from(document.querySelectorAll('[data-tab=positional] .nsewdrag'))
        .filter(d => !gd.contains(d)).map(d => d.getBoundingClientRect())
        .filter(o => Math.min(o.right, b.right) - Math.max(o.left, b.left) > 1 &&
                     Math.min(o.bottom, b.bottom) - Math.max(o.top, b.top) > 1);
      return [[id, b.left >= map.right - 1, others.length]];
    })""")
    assert placed and all(right and not over for _, right, over in placed), placed
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


@pytest.mark.parametrize("host", HOSTS)
def test_a_phone_s_page_fits_its_screen(opened, host):
    page = opened(host, 390, 844, touch=True)
    shown = """() => {
      const figures = Array.from(document.querySelectorAll('[data-testid=plotly].js-plotly-plot'))
        .filter(gd => gd.offsetParent && gd.querySelector('.gtitle'));
      const under = figures.filter(gd => {
        const t = gd.querySelector('.gtitle').getBoundingClientRect(), m = gd.querySelector('.modebar');
        const b = m && m.getBoundingClientRect();
        return b && Math.min(t.right, b.right) - Math.max(t.left, b.left) > 1 &&
               Math.min(t.bottom, b.bottom) - Math.max(t.top, b.top) > 1;
      }).map(gd => gd.parentElement.id);
      return {scroll: document.documentElement.scrollWidth, figures: figures.length, under};
    }"""
    for tab in ("heads", "stats", "positional", "architecture"):
        page.click(f"#anatomy-tabs [role=tab][data-tab={tab}]")
        page.wait_for_timeout(1500)
        seen = page.evaluate(shown)
        assert seen["scroll"] <= 390 and seen["figures"] and not seen["under"], (tab, seen)
        if tab == "stats":
            # the statistics' numbers each inside its cell
            cells = page.evaluate("""() => Array.from(document.querySelectorAll('#summary .heatmaplayer .hm'))
              .map((hm, i) => {
                const gd = document.querySelector('#summary .js-plotly-plot');
                const cell = hm.querySelector('image').getBoundingClientRect().width / gd._fullData[i].z[0].length;
                return [cell, Math.max(...Array.from(hm.querySelectorAll('text'))
                                       .map(t => t.getBoundingClientRect().width))];
              })""")
            assert cells and all(text < cell for cell, text in cells), cells
    # the large view's row labels: a label of up to 13 characters shown whole, only longer ones cut
    labels = page.evaluate("""() => { const gd = document.querySelector('#heatmap .js-plotly-plot');
      const full = gd.anatomyBase.y, shown = gd._fullLayout.yaxis;
      return shown.tickvals.map((v, i) => [full.text[full.vals.indexOf(v)], shown.ticktext[i]]); }""")
    assert labels and all(cut == full for full, cut in labels if len(full) <= 13), labels
    assert not page.errors, page.errors


def test_translate_on_a_phone_brings_the_translation_and_the_large_view_into_sight(browser, url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    load_page(page, url)
    page.fill("#source-text textarea", SENTENCE)
    page.tap("#translate")
    page.wait_for_function("document.querySelector('#translation textarea').value.length > 3")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    page.wait_for_timeout(800)
    sight = page.evaluate("""() => ({translation: document.querySelector('#translation').getBoundingClientRect().top,
                                     view: document.querySelector('#heatmap').getBoundingClientRect().top,
                                     height: window.innerHeight})""")
    assert -1 <= sight["translation"] < sight["view"] < sight["height"], sight
    context.close()


@pytest.mark.parametrize("host", HOSTS)
def test_a_click_on_a_step_s_other_piece_continues_from_it(opened, host):
    """Issue 51 §1: at step 2, a click on the step's second most likely next piece continues the translation from
    it in the app (the branch beside the model's own, where they part marked; a typed word too; Back to the model's
    own restores it); the offline file says that needs the app."""
    page = opened(host, 1600, 1000)
    slide(page, "step", 2)
    wait_title(page, "step-topk", "Step 2:")
    picked, rows = page.evaluate("() => { const hit = document.querySelector('#step-topk .anatomy-plot').data[1];"
                                 " return [hit.hovertext[1], hit.x.length]; }")
    page.locator("#step-topk").scroll_into_view_if_needed()
    # the piece's row far right of its bar (p < 0.5): the whole row answers, as a tap on a thin bar needs
    row = page.locator("#step-topk .point path").nth(rows + 1).bounding_box()  # Plotly's drag layer takes the click
    page.mouse.click(row["x"] + row["width"] * 0.95, row["y"] + row["height"] / 2)
    if host == "offline":
        page.wait_for_function("!document.querySelector('#branch-note').hidden")
        assert "needs the app" in page.locator("#branch-note").inner_text()
        assert page.locator("#branch").is_hidden() and not page.errors, page.errors
        return
    own = page.locator("#translation textarea").input_value()
    page.wait_for_selector("#branch:not([hidden])")
    # asked from the step panels below, the branch and the large view under it are brought into sight (a box scrolled
    # to the top may sit half a pixel above it)
    sight = page.evaluate("() => ['branch', 'heatmap'].map(id => { const r = document.getElementById(id)"
                          ".getBoundingClientRect(); return r.top >= -1 && r.top < window.innerHeight; })")
    assert sight == [True, True], sight
    forced = page.locator("#branch-line .anatomy-branch-piece.forced")
    assert forced.count() == 2 and page.locator("#branch-line .anatomy-branch-piece.parts").count() == 1
    assert picked.split(" ", 1)[1] in forced.nth(1).get_attribute("title")
    assert page.locator("#branch-own").inner_text().startswith("Model's own") and "log p" in \
        page.locator("#branch-line").inner_text()
    page.wait_for_function("t => document.querySelector('#translation textarea').value !== t", arg=own)
    # a typed word at the shown step, then back to the model's own: its translation, no branch
    page.fill("#branch-word", "woman")
    page.press("#branch-word", "Enter")
    page.wait_for_function("Array.from(document.querySelectorAll('#branch-line .forced')).some("
                           "p => p.textContent.includes('wom'))")
    page.click("#branch-back")
    page.wait_for_selector("#branch", state="hidden")
    page.wait_for_function("t => document.querySelector('#translation textarea').value === t", arg=own)
    assert not page.errors, page.errors
