"""Two sentences side by side (Compare with…) in Chromium, on the app (its example pair clicked) and the offline
file (the command's --compare): the pair opens at the named view, both sentences' views and their translations fit
the first screen at 1280×720 in presenter mode, the step moves both to the same output word, and the difference
names the words that differ; a notebook cell's frame draws the pair too."""
from __future__ import annotations

import pytest

from anatomy import compare, engine, offline
from anatomy.inputs import Request
from anatomy.run import Pair
from tests.browser import TIMEOUT, choose, load_page, needs_chromium, slide, wait_title

pytestmark = needs_chromium
KEY = "de-en"
# Where the page's boxes are, each plot drawn, the window and the page's width; the framed row's hover text (the
# orange frame) of each sentence's plot
MEASURED = """() => {
  const box = (id) => { const r = document.getElementById(id).getBoundingClientRect();
                        return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, height: r.height}; };
  const framed = (id) => {
    const gd = document.querySelector('#' + id + ' .anatomy-plot'), frame = (gd.layout.shapes || [])[0];
    return frame ? gd.data[0].text[Math.round(frame.y0 + 0.5)][0] : null;
  };
  const drawn = (id) => !!document.querySelector('#' + id + ' .heatmaplayer image');
  return {first: box('heatmap'), second: box('heatmap-second'), texts: box('pair-texts'),
          drawn: [drawn('heatmap'), drawn('heatmap-second')], framed: [framed('heatmap'), framed('heatmap-second')],
          texts_text: document.getElementById('pair-texts').textContent, width: window.innerWidth,
          height: window.innerHeight, scroll: document.documentElement.scrollWidth};
}"""


@pytest.fixture(scope="module")
def example(shipped):
    entry = shipped.anatomy.registry.get(KEY)
    if entry.untrained:
        pytest.skip(f"checkpoints/general-{KEY} is not here")
    return entry, entry.pairs[0]


@pytest.fixture(scope="module")
def pair_file(example, tmp_path_factory):
    """The offline file of the example pair, as `python -m anatomy.export html --compare` writes it, opening where
    the app opens it."""
    entry, (first, second, word, other) = example
    traces = [engine.translate(entry.cpu, Request(KEY, text, entry.decoding, "cpu")) for text in (first, second)]
    opens = compare.opening(*traces, word, other)
    return offline.write(traces[0], entry, first, [], tmp_path_factory.mktemp("pair") / "pair.html", view=opens,
                         pair=Pair(second, traces[1])).path


@pytest.mark.parametrize("host", ["app", "offline"])
def test_a_pair_in_presenter_mode_fits_1280x720_and_steps_together(browser, request, example, host):
    entry, (first, second, word, other) = example
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        if host == "app":
            load_page(page, request.getfixturevalue("url"))
            page.locator("#examples button", has_text=f"Side by side, {entry.label}").first.click()
            page.wait_for_function("document.querySelector('#heatmap-second .heatmaplayer image')")
            page.locator("#presenter input").check()
        else:
            page.goto(request.getfixturevalue("pair_file").as_uri() + "?presenter=1")
            page.wait_for_function("document.body.dataset.ready === '1'")
        wait_title(page, "heatmap-second", "Sentence 2: Encoder self-attention")
        page.wait_for_timeout(800)  # presenter mode's fit has landed
        page.evaluate("window.scrollTo(0, 0)")
        m = page.evaluate(MEASURED)
        # both sentences' views, side by side, and both texts with their translations, on the first screen
        for part in ("first", "second", "texts"):
            assert m[part]["top"] >= 0 and m[part]["bottom"] <= m["height"] + 1, (part, m)
            assert m[part]["left"] >= 0 and m[part]["right"] <= m["width"], (part, m)
        assert m["first"]["right"] <= m["second"]["left"] and m["first"]["height"] > 300, m
        assert m["drawn"] == [True, True] and m["scroll"] <= m["width"], m
        assert first in m["texts_text"] and second in m["texts_text"]
        # the decoding steps and the tabs are the first sentence's, and say so
        note = page.locator("#pair-note")
        assert note.is_visible() and "sentence 1's" in note.text_content() and first in note.text_content()
        # opened at the pronoun's encoder row, in each sentence
        assert m["framed"][0].startswith(f"{word} \u2192") and m["framed"][1].startswith(f"{other} \u2192"), m
        # a step of cross-attention: the second sentence at the same output word
        page.keyboard.press("v")  # presenter mode's view controls
        choose(page, "kind", "cross")
        page.uncheck("input#merge")
        slide(page, "step", 1)
        page.wait_for_function("document.querySelector('#heatmap-second .anatomy-plot').layout.title.text"
                               ".includes('Cross-attention')")
        page.wait_for_timeout(300)
        framed = page.evaluate(MEASURED)["framed"]
        assert framed[0].split(" \u2192 ")[0] == framed[1].split(" \u2192 ")[0], framed  # <s> ▸ the same piece
        # their difference, the words that differ named
        choose(page, "kind", "encoder")
        page.check("input#merge")
        page.locator("#pair-difference").scroll_into_view_if_needed()
        wait_title(page, "pair-difference", "Sentence 2 \u2212 sentence 1")
        said = page.locator("#pair-difference .annotation-text").first.text_content()
        assert f"only in sentence 1: {word}" in said and f"only in sentence 2: {other}" in said, said
        assert not errors, errors
    finally:
        context.close()


def test_a_notebook_cell_draws_the_pair_in_its_frame(browser, example, monkeypatch, tmp_path):
    """show(text, compare=...) in a notebook: the cell's frame (srcdoc, the offline page) draws both sentences side
    by side and their difference. The notebook's page is read as windows-1252 here (a saved cell with no charset, whose
    encoding Chromium guesses): the cell's words still reach the frame."""
    from anatomy import notebook
    from anatomy.registry import ModelRegistry

    entry, (first, second, word, other) = example
    monkeypatch.setattr(notebook, "registry", lambda: ModelRegistry([entry], []))
    cell = tmp_path / "cell.html"
    cell.write_text('<!doctype html><html><head><meta charset="windows-1252"></head><body>'
                    f"{notebook.show(first, compare=second)._repr_html_()}</body></html>", encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(cell.as_uri())
        frame = page.locator("iframe").element_handle().content_frame()
        frame.wait_for_function("document.body.dataset.ready === '1'")
        frame.wait_for_function("document.querySelector('#heatmap-second .heatmaplayer image')")
        texts = frame.evaluate("document.getElementById('pair-texts').textContent")
        assert first in texts and second in texts
        frame.locator("#pair-difference").scroll_into_view_if_needed()
        frame.wait_for_function("Array.from(document.querySelectorAll('#pair-difference text'))"
                                ".some(t => t.textContent.includes('sentence 2:'))")
    finally:
        context.close()
