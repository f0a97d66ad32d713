"""Issue-6 views in a real browser: a link restores the exact view, presenter mode and its exports,
the head-statistics table opens a head, the trained-vs-untrained tab."""
from __future__ import annotations

import struct
import urllib.parse

import pytest

from anatomy import offline
from anatomy.inputs import clean_text
from tests.browser import TIMEOUT, choose, load_page, needs_chromium, wait_title

pytestmark = [needs_chromium, pytest.mark.slow]
SENTENCE = "Zwei Hunde spielen im Schnee."


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.errors, page.dialogs = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    context.close()


def shown_view(page) -> dict:
    """What the controls show: attention kind, layer, head, step, merge."""
    return page.evaluate("""() => ({
        kind: document.querySelector('select#kind').value,
        layer: document.querySelector('select#layer').value,
        head: document.querySelector('select#head').value,
        step: document.querySelector('input#step').value,
        merge: document.querySelector('input#merge').checked})""")


@pytest.fixture()
def key(shipped):
    return shipped.anatomy.registry.default_key


def test_a_link_restores_the_exact_view(page, url, key):
    query = urllib.parse.urlencode({"direction": key, "text": SENTENCE, "view": "decoder", "layer": 2,
                                    "head": 3, "step": 4, "merge": 0})
    page.add_init_script("""new MutationObserver((_, seen) => { if (document.querySelector('#source-text textarea')) {
        window.__sourceAt = performance.now(); seen.disconnect(); } }).observe(document, {childList: true,
                                                                                       subtree: true});""")
    page.goto(f"{url}?{query}", wait_until="domcontentloaded")
    wait_title(page, "heatmap", "Decoder masked self-attention · layer 2, head 3")
    wait_title(page, "step-topk", "Step 4:")
    assert shown_view(page) == {"kind": "decoder", "layer": "2", "head": "3", "step": "4", "merge": False}
    assert page.locator("#source-text textarea").input_value() == SENTENCE
    # Plotly.js asked for with the page's head (ui/__init__.py plotly_early), before Gradio drew the page, and once
    loaded = page.evaluate("""() => performance.getEntriesByType('resource').map(e => [e.name, e.startTime])""")
    plotly = [t for name, t in loaded if name.endswith(offline.PLOTLY_JS.name)]
    assert len(plotly) == 1 and page.locator(f"script[src$='{offline.PLOTLY_JS.name}']").count() == 1, loaded
    assert plotly[0] < page.evaluate("window.__sourceAt"), (plotly, page.evaluate("window.__sourceAt"))
    # one element per id: the viewer finds its boxes by id, and a Gradio component of the same id would take its data
    twice = page.evaluate("() => { const ids = Array.from(document.querySelectorAll('[id]:not([id=\"\"])'), e => e.id);"
                          " return [...new Set(ids.filter((x, i) => ids.indexOf(x) !== i))]; }")
    assert twice == [], twice

    # change the view, then ask for its link: the page's own address with every setting
    choose(page, "head", 1)
    wait_title(page, "heatmap", "layer 2, head 1")
    page.get_by_role("button", name="Link to this view").click()
    page.wait_for_function("document.querySelector('#share-url textarea').value.startsWith('http')")
    link = page.locator("#share-url textarea").input_value()
    assert link.startswith(url.rstrip("/")) and "head=1" in link and "step=4" in link and "view=decoder" in link

    page.goto(link, wait_until="domcontentloaded")
    wait_title(page, "heatmap", "Decoder masked self-attention · layer 2, head 1")
    assert shown_view(page) == {"kind": "decoder", "layer": "2", "head": "1", "step": "4", "merge": False}
    assert not page.errors and not page.dialogs, (page.errors, page.dialogs)


def test_a_hostile_link_falls_back_to_defaults(page, url):
    hostile = ("?direction=javascript:alert(1)&text=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&view=%3Cscript%3E"
               "&layer=1e99&head=-1&step=NaN&beam=999&presenter=%22%3E%3Cb%3E")
    page.goto(url + hostile, wait_until="domcontentloaded")
    wait_title(page, "heatmap", "Cross-attention")  # the default kind; the text was translated as text
    view = shown_view(page)
    assert view["kind"] == "cross" and view["head"] == "1"  # head=-1: the nearest head, and the run info says so
    page.wait_for_function("document.querySelector('#run-info')?.innerText.includes('head=-1 (allowed: mean or 1')")
    assert page.locator("img[src=x]").count() == 0 and not page.dialogs
    assert page.locator("input[aria-label='number input for Beam size (1 = greedy)']").input_value() == "8"
    assert not page.errors, page.errors


def test_an_80k_character_link_opens_with_its_text_capped_and_says_so(page, url, key):
    """Gradio answered a URL over 64k characters with an HTTP 500: the server shortens the link first."""
    text = SENTENCE + " " + "Hunde spielen im Schnee. " * 3300
    page.goto(url + "?" + urllib.parse.urlencode({"direction": key, "text": text, "beam": "-5"}),
              wait_until="domcontentloaded")
    page.wait_for_function("document.querySelector('#run-info')?.innerText.includes('Translation from the link')")
    info = page.inner_text("#run-info")
    assert "This link was longer than 16,384 characters, so it was shortened" in info, info
    assert "beam=-5 (allowed: 1 to 8)" in info, info
    assert page.locator("#source-text textarea").input_value() == clean_text(text)[0]
    assert "shortened=1" in page.url and len(page.url) < 20_000
    assert not page.errors, page.errors


def png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_presenter_mode_and_export(page, url, key):
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    font = "document.querySelector('#heatmap .js-plotly-plot')._fullLayout.font.size"
    assert page.evaluate(font) == 12 and page.locator("#run-info").is_visible()
    width = "document.querySelector('#heatmap .js-plotly-plot')._fullLayout.width"
    normal_width = page.evaluate(width)

    page.get_by_label("Presenter mode").check()
    page.wait_for_function(f"{font} >= 18")
    assert page.evaluate("document.body.classList.contains('anatomy-presenter')")
    assert not page.locator("#run-info").is_visible() and page.locator("#share").is_visible()  # files stay
    assert page.locator("#heatmap").is_visible() and page.locator("#translation").is_visible()
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") \
        == "rgb(255, 255, 255)"
    # a figure that arrives while presenting is enlarged too (the view's controls: behind View settings)
    page.locator("#view-toggle").click()
    choose(page, "head", 1)
    wait_title(page, "heatmap", "head 1")
    page.wait_for_function(f"{font} >= 18")
    page.locator("#view-toggle").click()
    # the large view fills the first screen below its top (a projector shows all of it at once)
    page.wait_for_function("(() => { const r = document.querySelector('#heatmap .js-plotly-plot')"
                           ".getBoundingClientRect(); return r.bottom <= innerHeight && r.height >= 0.7 * innerHeight"
                           " && r.bottom >= innerHeight - 40; })()")

    shown = page.evaluate(width)
    page.get_by_text("Export a figure").click()
    with page.expect_download() as png:
        page.locator("#export-png").click()
    w, h = png_size(png.value.path())
    assert w >= 2 * shown and h > 0
    with page.expect_download() as svg:
        page.locator("#export-svg").click()
    with open(svg.value.path(), encoding="utf-8") as f:
        text = f.read()
    assert text.lstrip().startswith("<svg") and "head 1" in text

    page.get_by_label("Presenter mode").uncheck()
    page.wait_for_function(f"{font} === 12 && {width} === {normal_width}")
    assert page.locator("#run-info").is_visible()
    assert not page.errors, page.errors


def test_head_statistics_open_a_head_and_untrained_twin(page, url, key, shipped):
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    page.get_by_role("tab", name="Head statistics").click()
    page.wait_for_selector("#head-stats tbody tr")
    page.wait_for_function("document.querySelectorAll('#summary .heatmaplayer image').length >= 4")
    # a row of the table: encoder self-attention, layer 1, head 2 -> the large view shows that head
    row = page.locator("#head-stats tbody tr").nth(1)
    assert row.locator("td").nth(0).inner_text().strip() == "encoder self-attention"
    assert row.locator("td").nth(2).inner_text().strip() == "2"
    cell = row.locator("td").nth(3)
    cell.scroll_into_view_if_needed()
    assert page.evaluate("document.querySelector('#heatmap').getBoundingClientRect().bottom") < 0  # far above
    cell.click()
    wait_title(page, "heatmap", "Encoder self-attention · layer 1, head 2")
    assert shown_view(page)["kind"] == "encoder"
    # the large view comes into sight (issue 35: feedback where the visitor looks)
    page.wait_for_function("(() => { const r = document.querySelector('#heatmap').getBoundingClientRect();"
                           " return r.top >= -2 && r.top < window.innerHeight / 2; })()")

    page.get_by_role("tab", name="Trained vs untrained").click()
    wait_title(page, "compare-untrained", "Untrained: Encoder self-attention · layer 1, head 2")
    wait_title(page, "compare-trained", "Trained: Encoder self-attention · layer 1, head 2")
    assert "left to itself" in page.locator("#compare-text").inner_text()

    page.get_by_role("tab", name="Architecture").click()
    wait_title(page, "architecture", "Shapes for this translation")
    from anatomy import engine

    S = len(engine.source_pieces(shipped.anatomy.registry.get(None).cpu, SENTENCE)) 
    assert f"S = {S} source pieces" in page.locator("#architecture").inner_text()
    assert "✓ equals the model's" in page.locator("#model-card").inner_text()
    page.get_by_role("tab", name="Training").click()
    page.wait_for_selector("#training .scatterlayer")
    assert "validation" in page.locator("#training-card").inner_text().lower()
    assert not page.errors, page.errors


def test_quick_clicks_leave_figures_that_match_the_controls(page, url, key, shipped):
    """Kind then head, clicked at once: the view events are answered in order, so the last one wins everywhere."""
    L = shipped.anatomy.registry.get(None).config.n_decoder_layers
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    page.get_by_role("tab", name="Trained vs untrained").click()
    wait_title(page, "compare-untrained", "Untrained: Cross-attention")
    choose(page, "kind", "encoder")
    choose(page, "head", 2)
    expected = f"Encoder self-attention · layer {L}, head 2"
    wait_title(page, "heatmap", expected)
    wait_title(page, "compare-untrained", expected)
    page.wait_for_timeout(1500)  # anything still on its way has arrived
    for elem in ("heatmap", "compare-trained", "compare-untrained"):
        wait_title(page, elem, expected)
    assert not page.errors, page.errors


def test_stop_during_slow_motion_leaves_a_consistent_page(page, url, key):
    """Stop mid-replay: text, slider, step panels and large view all show the steps so far, the run info says
    stopped, and no output turns into an error."""
    load_page(page, url)
    page.get_by_text("More settings").click()
    slow = page.locator("input[aria-label='number input for Slow motion: seconds per piece (0 = off; for talks)']")
    # 1.5 s a piece: under load, step 2 can show seconds late, and Stop must still come before the replay's end
    slow.fill("1.5")
    slow.blur()
    page.get_by_label("Source text").fill(SENTENCE)
    page.get_by_role("button", name="Translate", exact=True).click()
    wait_title(page, "step-topk", "Step 2:")
    page.get_by_role("button", name="Stop", exact=True).click()
    page.wait_for_function("document.querySelector('#run-info').innerText.includes('stopped at step')")
    info = page.locator("#run-info").inner_text()
    kept = int(info.split("stopped at step ")[1].split(" ")[0])
    page.wait_for_timeout(2000)  # a replay that went on would have drawn its next step by now
    assert page.locator("input#step").input_value() == str(kept)
    wait_title(page, "step-topk", f"Step {kept}:")
    rows = page.evaluate("Array.from(document.querySelectorAll('#heatmap .ytick text'))"
                         ".filter(t => t.textContent.includes('▸')).length")
    assert rows == kept  # decoder positions: one per step kept
    assert page.locator(".error, [data-testid=error]").count() == 0 and "Error" not in page.inner_text("body")
    assert not page.errors, page.errors


def test_arrow_keys_on_the_step_slider_and_the_layer_key_redraw(page, url, key):
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}", wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    wait_title(page, "step-topk", "Step ")
    last = int(page.locator("input#step").input_value())
    page.locator("input#step").focus()
    page.keyboard.press("ArrowLeft")
    wait_title(page, "step-topk", f"Step {last - 1}:")
    # an arrow on the focused layer list moves the list itself (the browser's own key), not the step
    before = int(page.locator("select#layer").input_value())
    page.locator("select#layer").focus()
    page.keyboard.press("ArrowUp")
    assert int(page.locator("select#layer").input_value()) == before - 1
    wait_title(page, "heatmap", f"layer {before - 1},")
    assert page.locator("input#step").input_value() == str(last - 1)
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("]")  # the page's key for the layer above
    assert int(page.locator("select#layer").input_value()) == before
    wait_title(page, "heatmap", f"layer {before},")
    assert not page.errors, page.errors


def test_a_link_with_empty_values_opens_a_working_page(page, url):
    load_page(page, url + "?text=&layer=&head=&step=&beam=&direction=")
    page.get_by_label("Source text").fill(SENTENCE)
    page.get_by_role("button", name="Translate", exact=True).click()
    wait_title(page, "heatmap", "Cross-attention")
    page.goto(url + "?text=Hund&step=inf&layer=inf&beam=1e309", wait_until="domcontentloaded")
    wait_title(page, "heatmap", "Cross-attention")
    assert "Error" not in page.inner_text("body")
    assert not page.errors, page.errors


def test_a_view_change_draws_each_figure_once_already_fitted(page, url, key):
    """Gradio would draw a new figure, then draw it again after its resize, then app.js would fit it (narrow step
    panels, the large view above the fold) in a third drawing: one drawing, fitted, is all a view change costs; the
    large view (in the window) comes first, the step panels (below the fold) after it. A step change hands Plotly
    the large view's traces it has (the same objects): only the frame moves."""
    page.add_init_script("""(() => { window.__draws = [];
        const hook = () => document.querySelectorAll('.js-plotly-plot').forEach(gd => {
          if (gd.__counted || !gd.on) return;
          gd.__counted = true;
          const named = () => gd.closest('.anatomy-box[id]').id;  // the figure's box
          gd.on('plotly_afterplot', () => { if (gd.isConnected) window.__draws.push(named()); });
        });
        window.__empty = [];  // a figure drawn empty (a placeholder): its box
        new MutationObserver(() => { hook(); document.querySelectorAll('.js-plotly-plot').forEach(gd => {
          if (gd.layout && gd.layout.meta && gd.layout.meta.empty && !gd.__empty) {
            gd.__empty = true; window.__empty.push(gd.closest('.anatomy-box[id]').id); } }); })
          .observe(document, {childList: true, subtree: true}); })()""")
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}", wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    wait_title(page, "step-topk", "Step ")
    page.wait_for_timeout(1000)
    # a link's figures are drawn with its translation, never as placeholders first (app.js `held`)
    assert not set(page.evaluate("window.__empty")) & {"heatmap", "step-cross", "step-self", "step-topk"}, \
        page.evaluate("window.__empty")
    page.evaluate("window.__draws = []")
    choose(page, "head", 2)
    wait_title(page, "heatmap", "head 2")
    wait_title(page, "step-cross", "head 2")
    page.wait_for_timeout(1000)  # Gradio's resize comes 100 ms after a drawing; a fit right after it
    draws = page.evaluate("window.__draws")
    assert draws[0] == "heatmap" and sorted(draws[1:]) == ["step-cross", "step-self"]
    fitted = page.evaluate("""() => ['heatmap', 'step-cross'].map(id => {
        const gd = document.querySelector('#' + id + ' .js-plotly-plot');
        return {width: gd.parentElement.clientWidth, font: gd._fullLayout.font.size, height: gd._fullLayout.height,
                bottom: gd.getBoundingClientRect().bottom}; })""")
    large, step = fitted
    assert large["bottom"] <= 1000  # the large view ends above the fold (1000 px window)
    assert step["width"] < 560 and step["font"] == 10  # narrow: app.js's small type, from the first drawing on

    frame = "() => document.querySelector('#heatmap .js-plotly-plot').layout.shapes[0].y0"
    row = page.evaluate(frame)
    page.evaluate("window.__traces = document.querySelector('#heatmap .js-plotly-plot').data[0]")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowLeft")  # the page's key for the step before
    page.wait_for_function(f"({frame})() === {row - 1}")
    assert page.evaluate("document.querySelector('#heatmap .js-plotly-plot').data[0] === window.__traces")
    assert not page.errors, page.errors


# The text of the heads-off comparison: none while it is hidden (every head on)
ABLATION = "(document.querySelector('#ablation') || {innerText: ''}).innerText"


def _click_middle(page, locator) -> None:
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_heads_switched_off_by_link_click_and_checkbox(page, url, key, shipped):
    """A link's off=, a click on an All-heads thumbnail and on a Head-importance cell switch heads off; the page
    shows both translations and greys the heads; Reset brings every head back."""
    query = urllib.parse.urlencode({"direction": key, "text": SENTENCE, "off": "cross:1.2,nope"})
    page.goto(f"{url}?{query}", wait_until="domcontentloaded")
    page.wait_for_function(f"{ABLATION}.includes('1 head off')", timeout=TIMEOUT)
    assert "'nope' is not KIND:LAYER.HEAD" in page.locator("#run-info").inner_text()
    assert page.locator("#heads-off input:checked").count() == 1  # the link's head, as a checkbox
    # a click on the first thumbnail (cross-attention, layer 1, head 1) switches that head off too
    page.wait_for_function("document.querySelectorAll('#grid .heatmaplayer image').length > 1")
    _click_middle(page, page.locator("#grid .heatmaplayer image").first)
    page.wait_for_function(f"{ABLATION}.includes('2 heads off')", timeout=TIMEOUT)
    wait_title(page, "grid", "Cross-attention")
    page.wait_for_function("Array.from(document.querySelectorAll('#grid text')).filter("
                           "t => t.textContent.includes('OFF')).length === 2")
    assert page.locator("#heads-off input:checked").count() == 2
    # Head importance: its maps; a click on a cell switches that head off
    page.get_by_role("tab", name="Head importance").click()
    wait_title(page, "importance", "Which heads this translation needs")
    _click_middle(page, page.locator("#importance .heatmaplayer image").first)  # encoder self-attention, ablation
    page.wait_for_function(f"{ABLATION}.includes('3 heads off')", timeout=TIMEOUT)
    assert "encoder L" in page.locator("#ablation").inner_text() or "encoder self-attention" in \
        page.locator("#ablation").inner_text()
    # far below the comparison: it comes to the bottom of the window too, with a way up to it
    echo = page.locator("#anatomy-echo")
    echo.wait_for()
    assert "3 heads off" in echo.inner_text() and "All heads on" in echo.inner_text()
    assert echo.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
    echo.get_by_role("button", name="Show beside the view").click()
    page.wait_for_function("(() => { const r = document.querySelector('#ablation').getBoundingClientRect();"
                           " return r.top >= -2 && r.top < innerHeight; })()")
    assert echo.count() == 0
    page.get_by_role("button", name="Switch every head back on").click()
    page.wait_for_function(f"{ABLATION}.trim() === ''", timeout=TIMEOUT)
    assert page.locator("#heads-off input:checked").count() == 0
    assert not page.errors


def test_translate_with_an_empty_box_shows_a_hint_and_no_error(page, url):
    """An empty text is not an error: a hint beside the box, no toast, no red badge left behind; with a translation
    shown, the hint stays up (drawing the shown translation again does not hide it) and the translation stays."""
    load_page(page, url)
    translate = page.get_by_role("button", name="Translate", exact=True)
    hint = "document.querySelector('#text-hint')?.innerText.includes('then click Translate')"
    translate.click()
    page.wait_for_function(hint)
    page.wait_for_timeout(500)  # a toast or an error badge would be up by now
    assert page.locator("[data-testid=toast-body], .error").count() == 0
    assert "Error" not in page.inner_text("body")
    page.get_by_label("Source text").fill(SENTENCE)
    translate.click()
    wait_title(page, "heatmap", "Cross-attention")
    assert not page.locator("#text-hint").is_visible()
    shown = page.input_value("#translation textarea")
    page.get_by_label("Source text").fill("")
    translate.click()
    page.wait_for_function(hint)
    page.wait_for_timeout(1_000)  # what the event chain draws after the model event is drawn by now
    assert page.evaluate(hint) and page.locator("#text-hint").is_visible()
    assert page.input_value("#translation textarea") == shown and shown
    assert page.locator("[data-testid=toast-body], .error").count() == 0
    assert not page.errors, page.errors


# A label box's overlaps with its neighbours in one figure: rows by their boxes; slanted column labels by the distance
# across their slant (dx · sin(angle)), which must hold a label's height; and the query axis's title against the
# figure's title. Each overlap is named.
OVERLAPS = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot'), out = [];
  const boxes = sel => Array.from(gd.querySelectorAll(sel)).map(t => t.getBoundingClientRect())
    .filter(r => r.height > 0);
  const rows = boxes('.yaxislayer-above .ytick text').sort((a, b) => a.top - b.top);
  rows.slice(1).forEach((r, i) => { if (r.top < rows[i].bottom - 1) out.push('rows ' + i); });
  const xa = gd._fullLayout.xaxis, slant = Math.abs(Math.sin((xa.tickangle || 0) * Math.PI / 180));
  // a slanted label's anchor: the x of its translate (Plotly rotates each label about its tick)
  const at = t => +(/translate\(([-\d.e]+)/.exec(t.getAttribute('transform') || '') || [0, NaN])[1];
  const labels = Array.from(gd.querySelectorAll('.xaxislayer-above .xtick text'))
    .filter(t => t.getBoundingClientRect().height > 0);
  const cols = labels.map(t => ({x: at(t), box: t.getBoundingClientRect()})).sort((a, b) => a.box.left - b.box.left);
  cols.slice(1).forEach((c, i) => {
    const apart = slant > 0.2 ? Math.abs(c.x - cols[i].x) * slant >= 0.9 * xa.tickfont.size
      : c.box.left >= cols[i].box.right - 1;
    if (!apart) out.push('columns ' + i + ' ' + c.x + ' ' + cols[i].x);
  });
  const title = gd.querySelector('.g-gtitle text'), ytitle = gd.querySelector('.g-ytitle text');
  if (title && ytitle && ytitle.getBoundingClientRect().top < title.getBoundingClientRect().bottom) {
    out.push('titles');
  }
  if (title && title.getBoundingClientRect().right > gd.getBoundingClientRect().right + 1) out.push('title cut');
  return {out, rows: rows.length, cols: cols.length, font: gd._fullLayout.yaxis.tickfont.size,
          shown: gd._fullLayout.yaxis.tickvals ? gd._fullLayout.yaxis.tickvals.length : 0};
}"""
LONG = ("Als die beiden Freunde am frühen Morgen das kleine Dorf am Rande des Waldes erreichten, war der Markt auf "
        "dem Platz vor der alten Kirche schon voller Menschen, die Obst, Gemüse, Brot und Käse kauften, während "
        "Kinder zwischen den Ständen spielten und ein Musiker an der Ecke ein Lied sang, das alle kannten; später "
        "setzten sie sich in ein Café, tranken Kaffee, sprachen über die Reise, die vor ihnen lag, und beschlossen, "
        "am nächsten Tag früh weiterzufahren, um die Berge zu sehen. Es war schön.")


@pytest.mark.parametrize("text", ["Hallo!", "Der Mann, der gestern im Park saß, las ein Buch über Vögel, während "
                                  "seine Tochter mit dem Hund spielte.", LONG])
def test_labels_never_overlap_from_one_piece_to_the_longest_input(page, url, key, text):
    """Issue 35: the large view grows with its rows (beyond the fold, up to the window), its labels shrink down to
    10 px and are then thinned; the step panels' columns the same; a figure of few rows takes its axis title on two
    lines; a title wider than its figure takes more lines. On a desktop, a projector in presenter mode and a
    phone."""
    assert len(text) <= 500
    page.goto(f"{url}?{urllib.parse.urlencode({'text': text, 'direction': key})}", wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    wait_title(page, "step-self", "Step ")
    pieces = page.evaluate("document.querySelectorAll('#source-pieces .token, #source-pieces span').length")
    for width, height, presenter in ((1600, 1000, False), (1280, 720, True), (390, 844, False)):
        page.set_viewport_size({"width": width, "height": height})
        if presenter != page.locator("#presenter input").is_checked():
            page.locator("#presenter input").set_checked(presenter)
        page.wait_for_function(f"document.querySelector('#heatmap .js-plotly-plot')._fullLayout.font.size"
                               f" === {18 if presenter else 10 if width < 600 else 12}")
        page.wait_for_timeout(1500)  # the panels below the fold are drawn after the window
        for figure in ("heatmap", "step-cross", "step-self"):
            found = page.evaluate(OVERLAPS, figure)
            assert not found["out"], (width, figure, pieces, found)
            assert figure != "heatmap" or (found["rows"] and found["font"] >= 10), found
        view = page.evaluate("document.querySelector('#heatmap .js-plotly-plot').getBoundingClientRect().height")
        assert view <= height
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not page.errors, page.errors


def test_why_this_word_opens_with_its_tab_follows_the_step_and_compares(page, url, key):
    """Issue 36: opening Why this word makes the explanation (a model event, with its progress shown); the step, the
    method and words then redraw in the browser with no request; Compare explains the step against the typed word
    (a model event); its logit lens's last layer's top piece at the step is the piece emitted."""
    page.goto(f"{url}?{urllib.parse.urlencode({'text': SENTENCE, 'direction': key})}", wait_until="domcontentloaded")
    wait_title(page, "step-topk", "Step ")
    last = int(page.locator("input#step").input_value())
    page.get_by_role("tab", name="Why this word").click()
    wait_title(page, "why-step", f"at step {last}?")
    wait_title(page, "lens-step", f"Logit lens at step {last} ")
    wait_title(page, "lens-all", "Logit lens over the translation")
    wait_title(page, "why-shares", "Where each piece came from")
    wait_title(page, "why-all", "Integrated gradients of every step")
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/gradio_api/queue/join" in r.url else None)
    page.locator("h2").first.click()
    page.keyboard.press("ArrowLeft")
    wait_title(page, "why-step", f"at step {last - 1}?")
    wait_title(page, "lens-step", f"Logit lens at step {last - 1} ")
    rows = page.evaluate("document.querySelector('#lens-step .js-plotly-plot').data[0].text")
    assert rows and all(len(row) == 5 for row in rows)
    assert rows[-1][0].startswith("<b>")  # the last layer's first choice: the emitted piece
    page.select_option("#why-method", "occlusion")
    wait_title(page, "why-step", "occlusion")
    wait_title(page, "why-all", "Occlusion of every step")
    assert not requests, requests  # the step and the method: drawn in the browser alone
    page.locator("#why-foil").fill("cats")
    page.locator("#why-compare").click()
    wait_title(page, "why-step", "and not “")
    assert requests  # the comparison is a model event
    # a new translation with the tab open: its text first, then its explanation (a model event of its own)
    before = page.evaluate("document.querySelector('#translation textarea').value")
    page.get_by_label("Source text").fill("Ein Hund schläft.")
    page.get_by_role("button", name="Translate", exact=True).click()
    page.wait_for_function("b => document.querySelector('#translation textarea').value !== b", arg=before)
    wait_title(page, "lens-step", "Logit lens at step ")
    steps = int(page.locator("input#step").input_value())
    wait_title(page, "why-step", f"at step {steps}?")
    ticks = "document.querySelector('#why-step .js-plotly-plot').layout.xaxis.ticktext.join(' ')"
    assert "Hund" in page.evaluate(ticks)
    assert not page.errors, page.errors
