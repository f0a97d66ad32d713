"""Issue 15 in a real browser: the line view (hover and touch keep one piece's lines; readable on a phone), the
softmax walk, and special tokens hidden, for every attention kind, restored by a link."""
from __future__ import annotations

import urllib.parse

import pytest

from tests.browser import TIMEOUT, choose, needs_chromium, plot_text, wait_title

pytestmark = [needs_chromium, pytest.mark.slow]
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."  # 14–15 pieces for the shipped de-en models
KIND_NAMES = {"encoder": "Encoder self-attention", "decoder": "Decoder masked self-attention",
              "cross": "Cross-attention"}
GD = "document.querySelector('#heatmap .js-plotly-plot')"


def open_page(browser, url, query: dict, **context):
    ctx = browser.new_context(**{"viewport": {"width": 1600, "height": 1000}, "accept_downloads": True, **context})
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(f"{url}?{urllib.parse.urlencode(query)}", wait_until="domcontentloaded")
    return page


@pytest.fixture()
def key(shipped):
    return shipped.anatomy.registry.default_key


def label_boxes(page, meta: str) -> list[dict]:
    """The drawn label texts of the line view's queries or keys, with their boxes and font sizes."""
    return page.evaluate(f"""meta => {{ const gd = {GD};
        const uid = gd._fullData.find(t => t.meta === meta).uid;
        return Array.from(gd.querySelector('.scatterlayer .trace' + uid).querySelectorAll('.textpoint text'))
            .map(t => {{ const r = t.getBoundingClientRect();
                         return {{x: r.x, y: r.y, w: r.width, h: r.height, text: t.textContent,
                                  size: parseFloat(getComputedStyle(t).fontSize)}}; }}); }}""", meta)


def marker(page, meta: str, index: int) -> tuple[float, float]:
    """Where the line view draws the marker of a query or key piece, in page coordinates."""
    return tuple(page.evaluate(f"""([meta, i]) => {{ const gd = {GD};
        const uid = gd._fullData.find(t => t.meta === meta).uid;
        const r = gd.querySelector('.scatterlayer .trace' + uid).querySelectorAll('.point')[i]
                    .getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2]; }}""", [meta, index]))


def lines_shown(page) -> list[tuple[int, int]]:
    """The (query row, key row) of every line the figure draws now."""
    return [tuple(s) for s in page.evaluate(f"""() => {{ const out = [];
        {GD}.data.filter(t => t.meta === 'lines').forEach(t => {{
            for (let s = 0; s + 1 < t.y.length; s += 3) out.push([-t.y[s], -t.y[s + 1]]); }});
        return out; }}""")]


def wait_lines(page, n: int) -> None:
    page.wait_for_function(f"{GD}.data.filter(t => t.meta === 'lines').reduce((n, t) => n + t.y.length, 0)"
                           f" === {3 * n}")


def test_line_view_keeps_the_lines_of_the_piece_under_the_pointer(browser, url, key):
    page = open_page(browser, url, {"text": SENTENCE, "direction": key, "view": "encoder", "display": "lines",
                                    "head": 1})
    wait_title(page, "heatmap", "Encoder self-attention · layer")
    for kind, name in KIND_NAMES.items():
        choose(page, "kind", kind)
        wait_title(page, "heatmap", f"{name} · layer")
        wait_title(page, "heatmap", "head 1 · lines")
        every = lines_shown(page)
        assert every and page.evaluate(f"{GD}.data.filter(t => t.meta === 'lines').length") >= 1
        # point at the third key: only lines that end there stay
        page.mouse.move(*marker(page, "keys", 2))
        page.wait_for_function(f"{GD}.dataset.kept === 'keys:2'")
        wait_lines(page, sum(j == 2 for _, j in every))
        kept = lines_shown(page)
        assert kept == [(i, j) for i, j in every if j == 2] and len(kept) < len(every)
        page.mouse.move(*marker(page, "queries", 1))
        page.wait_for_function(f"{GD}.dataset.kept === 'queries:1'")
        wait_lines(page, sum(i == 1 for i, _ in every))
        assert lines_shown(page) == [(i, j) for i, j in every if i == 1]
        page.mouse.move(5, 5)  # off the figure: every line again
        page.wait_for_function(f"{GD}.dataset.kept === ''")
        wait_lines(page, len(every))
        assert sorted(lines_shown(page)) == sorted(every)
    # the mean of heads: every head in its colour; a click on a head in the legend hides its lines
    choose(page, "head", "mean")
    wait_title(page, "heatmap", "all ")
    page.locator("#heatmap .legend .traces").filter(has_text="head 2").click()
    page.wait_for_function(f"{GD}._fullData.filter(t => t.legendgroup === 'head 2')"
                           ".every(t => t.visible === 'legendonly')")
    assert page.evaluate(f"{GD}._fullData.filter(t => t.meta === 'lines' && t.legendgroup === 'head 1')"
                         ".every(t => t.visible === true)")
    # presenter mode: the labels in large type too
    page.get_by_label("Presenter mode").check()
    page.wait_for_function(f"{GD}._fullData.find(t => t.meta === 'keys').textfont.size >= 19")
    assert not page.errors, page.errors


def test_line_view_on_a_phone_reads_and_answers_taps(browser, url, key, shipped):
    from anatomy import engine

    n = len(engine.source_pieces(shipped.anatomy.registry.get(key).cpu, SENTENCE))
    assert n >= 14  # a column of 14 or more labels on a 390 px phone
    page = open_page(browser, url, {"text": SENTENCE, "direction": key, "view": "encoder", "display": "lines"},
                     viewport={"width": 390, "height": 844}, device_scale_factor=2, has_touch=True, is_mobile=True)
    wait_title(page, "heatmap", "· lines")
    page.locator("#heatmap").scroll_into_view_if_needed()
    page.wait_for_timeout(800)  # the narrow layout applied
    width = page.evaluate("document.querySelector('#heatmap').getBoundingClientRect()")
    for meta in ("queries", "keys"):
        boxes = label_boxes(page, meta)
        assert len(boxes) == n
        assert all(b["size"] >= 12 for b in boxes), boxes
        for a, b in zip(boxes, boxes[1:]):  # one under the other, apart
            assert a["y"] + a["h"] <= b["y"] + 0.5, (a, b)
        assert all(width["x"] - 0.5 <= b["x"] and b["x"] + b["w"] <= width["x"] + width["width"] + 0.5 for b in boxes)
    queries, keys = label_boxes(page, "queries"), label_boxes(page, "keys")
    assert max(b["x"] + b["w"] for b in queries) < min(b["x"] for b in keys)  # the two columns do not meet
    every = lines_shown(page)
    x, y = marker(page, "keys", 4)
    page.touchscreen.tap(x, y)
    page.wait_for_function(f"{GD}.dataset.kept === 'keys:4'")
    wait_lines(page, sum(j == 4 for _, j in every))
    assert lines_shown(page) == [(i, j) for i, j in every if j == 4]
    page.wait_for_timeout(700)  # a second tap, not a double tap
    page.touchscreen.tap(x, y)  # the same piece again: every line back

    page.wait_for_function(f"{GD}.dataset.kept === ''")
    assert not page.errors, page.errors


def test_softmax_walk_for_every_kind_and_its_export(browser, url, key):
    page = open_page(browser, url, {"text": SENTENCE, "direction": key, "view": "cross", "display": "walk",
                                    "head": 2, "step": 3, "query": 4})
    wait_title(page, "heatmap", "Cross-attention · layer")  # the link's own view first
    wait_title(page, "heatmap", "step by step")
    for kind, name in KIND_NAMES.items():
        choose(page, "kind", kind)
        wait_title(page, "heatmap", f"{name} · layer")
        wait_title(page, "heatmap", "step by step")
        stages = page.evaluate(f"""() => Object.fromEntries({GD}.data.map(t => [t.name,
            t.text ? t.text.map(r => r[0]) : null]))""")
        assert {"q", "k", "v", "q·k", "scaled", "masked", "softmax", "output"} <= set(stages)
        weights = [float(w) for w in stages["softmax"]]
        assert abs(sum(weights) - 1) < 0.01 * len(weights)
        masked = stages["masked"].count("−∞")
        # decoding step 3 sees 3 decoder pieces; encoder and cross see every source piece
        assert masked == (len(weights) - 3 if kind == "decoder" else 0)
        text = plot_text(page, "heatmap")
        query = text.split("q (", 1)[1].split(")", 1)[0]  # the query: source piece 4, or step 3's position
        assert ("▸" in query) == (kind != "encoder") and "head 2" in text, text
        if kind == "encoder":
            assert "4 " + query in text  # the fourth key is the query itself
    page.get_by_text("Export a figure").click()
    with page.expect_download() as png:
        page.locator("#export-png").click()
    name = png.value.suggested_filename
    assert name.startswith(f"{key}_cross-attention_layer") and name.endswith("_head2_walk-step3.png"), name
    assert not page.errors, page.errors


def test_hiding_special_tokens_everywhere_and_from_a_link(browser, url, key):
    page = open_page(browser, url, {"text": SENTENCE, "direction": key, "view": "decoder", "hide": 1, "head": 1,
                                    "step": 1})
    wait_title(page, "heatmap", "Decoder masked self-attention · layer")
    wait_title(page, "heatmap", "special tokens hidden, rows renormalised")
    assert page.locator("input#hide").is_checked()
    text = plot_text(page, "heatmap")
    assert "sees only hidden special tokens" in text
    ticks = page.evaluate("Array.from(document.querySelectorAll('#heatmap .xtick text')).map(t => t.textContent)")
    assert ticks and not {"<s>", "</s>", "<pad>"} & set(ticks)
    wait_title(page, "step-self", "which is hidden")  # step 1 sees only <s>
    for kind, name in KIND_NAMES.items():
        choose(page, "kind", kind)
        wait_title(page, "heatmap", f"{name} · layer")
        wait_title(page, "heatmap", "special tokens hidden")
        wait_title(page, "grid", "special tokens hidden")
        for display in ("lines", "heatmap"):
            choose(page, "display", display)
            wait_title(page, "heatmap", "special tokens hidden")
        labels = page.evaluate(f"Array.from({GD}.querySelectorAll('text')).map(t => t.textContent)")
        assert "</s>" not in labels
    page.locator("input#hide").uncheck()
    page.wait_for_function(f"!Array.from({GD}.querySelectorAll('text')).some(t => t.textContent.includes('hidden,'))")
    page.get_by_role("tab", name="Head statistics").click()
    page.wait_for_selector("#head-stats tbody tr")
    assert "special tokens" in page.locator("#head-stats").inner_text()
    assert not page.errors, page.errors


def test_the_app_draws_the_trace_s_values_for_every_kind_with_words_and_hiding_and_asks_the_server_nothing(
        browser, url, key, shipped):
    """The page's viewer, read back from the drawn heatmap: each kind at layer 1, head 2, step 2, words and special
    tokens on and off, against the Python views of the same translation (as the payload carries it, uint8); no view
    change sends anything to the server."""
    import dataclasses

    import numpy as np

    from anatomy import attention_views, payload
    from anatomy.inputs import View
    from transformer.kinds import KINDS

    entry = shipped.anatomy.registry.get(key)
    translator = shipped.anatomy.registry.translator(key, "auto")[0]
    trace = translator.translate(SENTENCE, beam_size=entry.decoding.beam_size,
                                 length_penalty=entry.decoding.length_penalty)
    stored = dataclasses.replace(trace, **{k.trace_field: payload.quantised(trace.attention(k.name).weights) / 255
                                           for k in KINDS})
    page = open_page(browser, url, {"text": SENTENCE, "direction": key, "layer": 1, "head": 2, "step": 2})
    wait_title(page, "heatmap", "layer 1, head 2")
    assert page.evaluate("document.querySelector('#translation textarea').value") == trace.text
    page.wait_for_timeout(1000)  # the events the translation chains (the open tab) are done
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/queue/join" in r.url else None)
    for kind, name in KIND_NAMES.items():
        choose(page, "kind", kind)
        for merge, hide in ((False, False), (True, False), (False, True), (True, True)):
            page.locator("input#merge").set_checked(merge)
            page.locator("input#hide").set_checked(hide)
            title = f"{name} · layer 1, head 2" + (" · words" if merge else "") + (" · special" if hide else "")
            page.wait_for_function(f"{GD}.layout.title.text.startsWith({title!r})"
                                   + ("" if hide else f" && !{GD}.layout.title.text.includes('special')"))
            want = attention_views.matrix(stored, View.of(kind, 1, "2", merge, 2, hide=hide)).weights
            z = np.array(page.evaluate(f"{GD}.data[0].z"), dtype=float)
            drawn = np.where(np.isnan(z), 0.0, z)  # a masked cell is drawn as no value
            assert drawn.shape == want.shape and np.abs(drawn - want).max() < 1e-6, (kind, merge, hide)
    kind_events = [u for u in asked]  # the kind's help and layer range: two events per kind change
    assert len(kind_events) <= 2 * len(KIND_NAMES), kind_events
    before = len(asked)
    choose(page, "head", 1)
    wait_title(page, "heatmap", "layer 1, head 1")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowLeft")  # the step
    wait_title(page, "step-cross", "Step 1 ")
    page.wait_for_timeout(500)
    assert len(asked) == before, asked[before:]  # a head or step change: drawn in the page only
    assert not page.errors, page.errors
    page.context.close()
