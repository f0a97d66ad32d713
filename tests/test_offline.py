"""The offline page of a translation (anatomy/offline.py, anatomy/viewer/): its data (attention as uint8 within
1/510 of the trace's), the file (Plotly.js once, the data safe inside <script>, within the size budget), the command,
the page's button and /export_html; in Chromium with every network request refused: every view drawn, and the
values drawn for the chosen kind, layer, head and step are the trace's."""
from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import viz
from anatomy import attention_views, bundle, export, offline, payload, views
from anatomy.inputs import MAX_CHARS, View, clean_text
from tests.app_fixtures import SENTENCE, run_of, tiny_entry
from tests.browser import needs_chromium
from transformer import Trace, Translator
from transformer.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
STEPS = 9  # the tiny random model never ends early
# 20 words, for the size budget on the shipped model
TALK = ("Mein Bruder wohnt seit drei Jahren in Berlin und arbeitet dort als Lehrer an einer großen Schule nahe dem "
        "Bahnhof.")
MAX_BYTES = 6_000_000
HOSTILE = 'Zwei </script><script>alert(1)</script> <!-- Hunde --> "spielen" & im Schnee.'


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    return tiny_entry(tmp_path_factory.mktemp("offline-checkpoints"))


@pytest.fixture(scope="module")
def trace(entry):
    trace = entry.cpu.translate(SENTENCE, max_new_tokens=STEPS)
    assert len(trace.output_tokens) == STEPS
    return trace


def weights(kind: dict) -> np.ndarray:
    """A kind's attention as the page reads it, in its own units (0..scale)."""
    packed = kind["attention"]
    return np.frombuffer(base64.b64decode(packed["weights"]), dtype=np.uint8).reshape(packed["shape"])


def data_of(html: str) -> dict:
    """The data inside a written page: {"payload": the trace payload, "page": the page's own part}."""
    marker = '<script type="application/json" id="anatomy-data">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start:html.index("</script>", start)])


def test_attention_travels_as_uint8_within_1_510_of_the_trace(trace, entry):
    made = offline.payload(trace, entry, SENTENCE, [])
    data = made["payload"]
    assert data == payload.trace_payload(trace, entry, SENTENCE, [])  # the one payload every viewer reads
    assert {k["name"] for k in data["kinds"]} == {"cross", "encoder", "decoder"}
    for kind in data["kinds"]:
        exact = trace.attention(kind["name"]).weights
        assert kind["attention"]["shape"] == list(exact.shape) and kind["attention"]["scale"] == 255
        stored = weights(kind)
        assert np.array_equal(stored, payload.quantised(exact))
        assert np.abs(stored / 255 - exact).max() <= 1 / 510 + 1e-7
    assert len(data["top_k"]) == STEPS and all(len(row) == 5 for row in data["top_k"])
    # what the app's server sends the tabs, carried by the file
    assert len(made["tab"]["stats"]["rows"]) == sum(np.prod(trace.attention(k.name).weights.shape[:2]) for k in KINDS)
    assert made["positional"] == {"d_model": 32, "max_len": 64, "layout": "interleaved", "dims": [4, 5, 8, 12, 16],
                                  "source": trace.source_tokens}
    assert data["pieces"]["source"] == trace.source_tokens and data["pieces"]["output"] == trace.output_tokens


def test_the_page_says_what_made_it_and_which_heads_were_off(trace, entry):
    off = entry.cpu.translate(SENTENCE, max_new_tokens=STEPS, heads_off="cross:2.1")
    made = offline.payload(off, entry, SENTENCE, ["a notice"], View.of("decoder", 1, "2", True, step=3))
    data, page = made["payload"], made["page"]
    assert data["settings"]["heads_off"] == "cross:2.1" and data["settings"]["max_new_tokens"] == STEPS
    assert {k["name"]: k["off"] for k in data["kinds"]} == {"cross": [[2, 1]], "encoder": [], "decoder": []}
    assert data["model"]["checkpoint"] == off.checkpoint == "tiny-de-en"  # its folder by name, not path
    assert page["about"].startswith("German → English (de-en) · checkpoint ")
    assert "heads off: cross:2.1" in page["about"]
    assert page["view"] == {"kind": "decoder", "layer": 1, "head": "2", "step": 3, "merge": True, "plain": False,
                            "hide": False, "display": "heatmap", "query": 1}
    assert data["notices"] == ["a notice"] and "Validation" in made["tab"]["training_card"]
    assert "<table>" in made["tab"]["card"] and set(made["tab"]["figures"]) == {"architecture", "parameters",
                                                                                 "training"}


def test_the_file_holds_plotly_once_and_the_data_inside_script_safely(trace, entry, tmp_path):
    """Text that would end a <script> or open a comment stays data; the page names its model without JavaScript."""
    written = offline.write(trace, entry, HOSTILE, [HOSTILE], tmp_path / "page.html")
    html = written.path.read_text(encoding="utf-8")
    plotly_js = offline.PLOTLY_JS.read_text(encoding="utf-8")
    assert html.count(plotly_js[:200]) == 1 and html.count("<script") == html.count("</script>") == 3
    assert "</script" not in bundle.script("offline")
    assert "</script><script>alert" not in html and "<!-- Hunde" not in html
    data = data_of(html)
    assert data == json.loads(json.dumps(offline.payload(trace, entry, HOSTILE, [HOSTILE])))
    assert data["payload"]["text"] == HOSTILE and data["payload"]["notices"] == [HOSTILE]
    about = html.split('<p id="about">')[1].split("</p>")[0]
    assert about == offline.about(trace, entry).replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    assert "checkpoint " in about and "top-k 5" in about
    # the tiny model's data, the viewer's page and figures add ~272 KB to Plotly.js: the script without its comment
    # lines ~147 KB (the app's own viewer: page.js, host.js, boxes.js, the tabs, the tour, screen.js, the link
    # reader, a pair's compare.js, a branch's branch.js, the translation's result.js), the tabs' and explorer's HTML
    # ~24 KB, the tabs' data ~52 KB (the architecture, parameters and training figures ~47 KB of it)
    assert written.size == written.path.stat().st_size <= len(plotly_js.encode()) + 280_000


@pytest.mark.slow  # seconds: the command, run for each bad input
def test_the_command_writes_the_page_and_answers_bad_input_as_the_page_does(entry, tmp_path, monkeypatch, capsys,
                                                                             tiny):
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(Path(entry.source).parent))
    monkeypatch.delenv("ANATOMY_HUB_MODELS", raising=False)
    out = tmp_path / "talk.html"
    assert export.main(["html", SENTENCE, "--direction", "de-en", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"{out}: ") and " MB, in " in printed.out
    data = data_of(out.read_text(encoding="utf-8"))["payload"]
    assert data["text"] == SENTENCE and data["model"]["key"] == "de-en"
    assert data["settings"]["beam_size"] == entry.decoding.beam_size  # the model's own decoding
    huge = "Zwei Hunde spielen im Schnee. " * 40
    assert export.main(["html", huge, "--direction", "de-en", "--out", str(out)]) == 0
    page_notice = run_of(tiny, huge, max_new=5).notices[0]  # what the page says of the same text
    assert page_notice == clean_text(huge)[1][0] and f"{MAX_CHARS} characters" in page_notice
    assert f"note: {page_notice}" in capsys.readouterr().err
    assert data_of(out.read_text(encoding="utf-8"))["payload"]["notices"][0] == page_notice
    for args, error in ((["--direction", "xx-yy"], "Unknown direction 'xx-yy'"),
                        (["--out", str(tmp_path / "a.htm")], "--out must end in .html, not 'a.htm'")):
        assert export.main(["html", SENTENCE, "--direction", "de-en", "--out", str(out), *args]) == 2
        assert error in capsys.readouterr().err
    assert export.main(["html", " \n ", "--direction", "de-en", "--out", str(out)]) == 2
    assert "Nothing to translate: text is empty." in capsys.readouterr().err


def test_download_page_writes_the_shown_translation_at_the_shown_view(tiny, monkeypatch):
    p = tiny.page
    run = run_of(tiny, max_new=5)
    monkeypatch.setattr(Translator, "translate", lambda *args, **kwargs: pytest.fail("the model ran"))
    values = {p.run: run, p.view: json.dumps({"kind": "encoder", "layer": 2, "head": "1", "merge": False,
                                              "plain": True, "hide": True, "step": 2, "query": 3})}
    made = tiny.page_html(values)[p.offline.file]
    path = Path(made["value"])
    assert made["visible"] and path.name == "de-en_translation.html"
    data = data_of(path.read_text(encoding="utf-8"))
    assert data["payload"]["pieces"]["output"] == run.trace.output_tokens
    assert data["payload"]["notices"] == list(run.notices)
    assert data["page"]["view"] == {"kind": "encoder", "layer": 2, "head": "1", "step": 2, "merge": False,
                                    "plain": True, "hide": True, "display": "heatmap", "query": 3}
    with pytest.raises(gr.Error, match="Translate a sentence first"):
        tiny.page_html({**values, p.run: None})


def test_the_export_html_endpoint_answers_every_bad_argument_with_a_notice(tiny):
    fn = next(f for f in tiny.demo.fns.values() if f.api_name == "export_html")
    # the client's keyword arguments (the endpoint has no components of its own)
    assert [p["parameter_name"] for p in tiny.demo.get_api_info()["named_endpoints"]["/export_html"]["parameters"]] \
        == ["text", "direction"]

    def call(text, direction="de-en"):
        return asyncio.run(tiny.demo.process_api(fn, [text, direction]))["data"]

    made, notice = call(SENTENCE)
    assert Path(made["path"]).name == made["orig_name"] == "de-en_translation.html"
    assert notice.startswith("Decoding stopped at the length limit")  # the tiny random model never ends
    assert data_of(Path(made["path"]).read_text(encoding="utf-8"))["payload"]["notices"] == [notice]
    made, notice = call("Zwei Hunde. " * 60)
    assert made is not None and notice.startswith(f"The text was longer than {MAX_CHARS} characters")
    for text, direction, said in ((SENTENCE, "fr-en", "Unknown direction 'fr-en'"),
                                  ([SENTENCE], "de-en", "text must be a string, got ['"),
                                  ("  ", "de-en", "Nothing to translate: text is empty."),
                                  (SENTENCE, None, "Unknown direction None")):
        made, notice = call(text, direction)
        assert made is None and notice.startswith(said)


def test_the_page_template_travels_with_the_space():
    from transformer import hub

    shipped = {path for path, _ in hub.plan(ROOT, hub.SPACE_PATTERNS)}
    viewer = {p.relative_to(ROOT).as_posix() for p in bundle.VIEWER.rglob("*") if p.is_file()}
    assert offline.PLOTLY_JS.relative_to(ROOT).as_posix() in viewer
    assert {"anatomy/viewer/offline.html", "anatomy/viewer/page.js", "anatomy/viewer/offline.js",
            "anatomy/viewer/offline.css", "anatomy/offline.py", "anatomy/layout.py", "anatomy/prose.py",
            "anatomy/bundle.py"} | viewer <= shipped


# ---- in Chromium, with the network refused ----

# The figures of each tab (the heads tab is open with the page)
FIGURES = {"heads": ("heatmap", "step-cross", "step-self", "step-topk", "grid"), "stats": ("summary",),
           "predictions": ("topk-table",), "positional": ("pe", "pe-curves", "pe-similarity", "pe-rows"),
           "architecture": ("architecture", "parameters"), "training": ("training",)}
HEATMAPS = {"heatmap": 1, "grid": None, "summary": None, "topk-table": 1, "pe": 1, "pe-similarity": 1, "pe-rows": 1}


def open_offline(browser, path: Path, query: str = ""):
    """The page from disk in a context with the network off, every request but file:// refused and recorded."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    page = context.new_page()
    page.errors, page.refused = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))

    def route(request_route):
        if request_route.request.url.startswith("file://"):
            request_route.continue_()
        else:
            page.refused.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.goto(path.as_uri() + query)
    page.wait_for_function("document.body.dataset.ready", timeout=60_000)
    assert page.evaluate("document.body.dataset.ready") == "1" and not page.errors, page.errors
    return page


def plot(elem_id: str) -> str:
    """The figure div of a box, in JavaScript."""
    return f"document.querySelector('#{elem_id} .anatomy-plot')"


def open_tab(page, tab: str) -> None:
    page.click(f"#anatomy-tabs [role=tab][data-tab={tab}]")


def until_title(page, fragment: str, elem_id: str = "heatmap", end: bool = False) -> None:
    """Wait until the figure's title has `fragment` (at its end)."""
    test = "endsWith" if end else "includes"
    page.wait_for_function(f"([f]) => ({plot(elem_id)}.layout?.title?.text || '').{test}(f)", arg=[fragment])


def z_of(page, elem_id: str = "heatmap") -> np.ndarray:
    return np.array(page.evaluate(f"{plot(elem_id)}.data[0].z"), dtype=float)


def title_of(page, elem_id: str = "heatmap") -> str:
    return page.evaluate(f"{plot(elem_id)}.layout.title.text")


def set_step(page, step: int) -> None:
    page.eval_on_selector("#step", f"s => {{ s.value = {step}; s.dispatchEvent(new Event('input')); }}")


@needs_chromium
def test_offline_every_view_draws_and_the_controls_draw_the_trace_s_values(browser, trace, entry, tmp_path):
    path = offline.write(trace, entry, SENTENCE, [], tmp_path / "page.html").path
    page = open_offline(browser, path)
    L, H, T = views.shape(trace, "cross")
    for tab, figures in FIGURES.items():
        open_tab(page, tab)
        for elem_id in figures:
            page.wait_for_selector(f"#{elem_id} .main-svg")
            n = HEATMAPS.get(elem_id, 0)
            images = page.locator(f"#{elem_id} .heatmaplayer image").count()
            assert images == n if n is not None else images >= 4, elem_id
        if tab == "stats":
            assert page.locator("#head-stats tbody tr").count() == sum(
                np.prod(trace.attention(k.name).weights.shape[:2]) for k in KINDS)
    open_tab(page, "heads")
    page.wait_for_function(f"document.querySelectorAll('#grid .heatmaplayer image').length === {L * H}")
    assert page.locator("#source-pieces .chip").all_inner_texts() == trace.source_tokens
    # the default view: cross-attention, the last layer, the mean of its heads, the last step framed (the viewer
    # computes in float32: within 1e-6)
    q = payload.quantised(trace.cross_attn) / 255
    assert np.abs(z_of(page) - q[-1].mean(0)).max() < 1e-6
    assert title_of(page) == f"Cross-attention · layer {L}, mean of {H} heads"
    for kind, layer, head in (("encoder", 2, "1"), ("encoder", 1, "2"), ("decoder", 2, "2"), ("decoder", 1, "mean")):
        for control, value in (("#kind", kind), ("#layer", str(layer)), ("#head", head)):
            page.select_option(control, value)
        until_title(page, f"layer {layer}, " + ("mean of 2 heads" if head == "mean" else f"head {head}"), end=True)
        exact = payload.quantised(trace.attention(kind).weights) / 255
        want = exact[layer - 1].mean(0) if head == "mean" else exact[layer - 1, int(head) - 1]
        z = z_of(page)
        if kind == "decoder":  # the mask's cells are drawn grey: no value
            hidden = np.triu(np.ones_like(want, dtype=bool), 1)
            assert np.isnan(z[hidden]).all()
            z, want = z[~hidden], want[~hidden]
        assert np.abs(z - want).max() < 1e-6, (kind, layer, head)
    # the step slider: its cross-attention row, the frame on its row
    page.select_option("#kind", "cross")
    until_title(page, "Cross-attention")
    set_step(page, 3)
    page.wait_for_function(f"{plot('heatmap')}.layout.shapes[0].y0 === 1.5")
    until_title(page, "Step 3", "step-cross")
    bars = np.array(page.evaluate(f"{plot('step-cross')}.data[0].y"), dtype=float)
    assert np.abs(bars - q[0].mean(0)[2]).max() < 1e-6  # layer 1 (chosen above), step 3
    # hover: the cell under the pointer says its pieces and weight
    cells = page.locator("#heatmap .nsewdrag").first
    cells.scroll_into_view_if_needed()
    box = cells.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.9)
    page.wait_for_selector("#heatmap .hoverlayer .hovertext")
    assert "\u2192" in page.locator("#heatmap .hoverlayer .hovertext").text_content()
    # lines: queries left, keys right, each line's opacity its weight (in tenths); the pointer off the figure, else
    # Plotly hovers again where it is after drawing, and the piece there keeps only its lines
    page.mouse.move(0, 0)
    page.select_option("#display", "lines")
    page.wait_for_function(f"{plot('heatmap')}.data.some(t => t.meta === 'lines')")
    lines = page.evaluate(f"{plot('heatmap')}.data.filter(t => t.meta === 'lines')"
                          ".map(t => [t.opacity, t.x.slice(0, 2)])")
    assert lines and all(0 < o <= 1 and x == [0, 1] for o, x in lines)
    # words and special tokens hidden: the app's own matrix and labels (attention_views.matrix) of the stored values
    stored = dataclasses.replace(trace, **{k.trace_field: payload.quantised(trace.attention(k.name).weights) / 255
                                           for k in KINDS})
    for control, value in (("#display", "heatmap"), ("#merge", True), ("#hide", True)):
        page.check(control) if value is True else page.select_option(control, value)
    shown = attention_views.matrix(stored, View.of("cross", 1, "mean", True, hide=True))
    page.wait_for_function(f"([ticks]) => JSON.stringify({plot('heatmap')}.layout.yaxis.ticktext) === ticks",
                           arg=[json.dumps(viz.query_labels(shown.queries), ensure_ascii=False,
                                           separators=(",", ":"))])
    assert np.abs(z_of(page) - shown.weights).max() < 1e-6
    page.evaluate("document.activeElement.blur()")  # the keys step outside the controls, as in the app
    page.keyboard.press(".")  # the next head
    until_title(page, "Cross-attention · layer 1, head 1 · words")
    assert not page.errors and not page.refused, (page.errors, page.refused)
    page.context.close()


@needs_chromium
def test_offline_why_this_word_and_value_norm_weights_travel_with_the_page(browser, trace, entry, tmp_path):
    """A page saved with Why this word and the value norms draws them with no server: the step's attribution follows
    the step slider, the method its select, and every view can show value-norm weights; a page saved without says
    how to get them, and offers no value-norm weights."""
    from anatomy import engine

    explained, norms = engine.explain(entry.cpu, trace), engine.value_norms(entry.cpu, trace)
    data = offline.payload(trace, entry, SENTENCE, [], explained=explained, norms=norms)
    assert data["explain"]["of"][3] == trace.output_tokens and data["norms"]["of"] == data["explain"]["of"]
    assert offline.payload(trace, entry, SENTENCE, [], explained=engine.explain(entry.cpu, views.prefix(trace, 3)))[
        "explain"] is None  # another trace's explanation is never saved with this one
    path = offline.write(trace, entry, SENTENCE, [], tmp_path / "why.html", explained=explained, norms=norms).path
    page = open_offline(browser, path)
    open_tab(page, "why")
    for elem_id in ("why-step", "why-shares", "why-agree", "why-all", "lens-step", "lens-all"):
        page.wait_for_selector(f"#{elem_id} .main-svg")
    until_title(page, f"Why “{trace.output_tokens[-1]}” at step {STEPS}?", "why-step")
    page.wait_for_function(f"{plot('why-agree')}.data.length === 2")  # α and value-norm
    set_step(page, 3)
    until_title(page, "at step 3", "why-step")
    ig = explained.attributions["ig"]
    bars = np.array(page.evaluate(f"{plot('why-step')}.data[0].y"), dtype=float)
    np.testing.assert_allclose(bars, [*ig.source[2], *ig.prefix[2][:3]], atol=1e-4)
    page.select_option("#why-method", "occlusion")
    until_title(page, "occlusion", "why-step")
    assert page.eval_on_selector_all("#weights option", "os => os.map(o => o.value)") == \
        ["attention", "value-norm", "rollout"]
    page.select_option("#weights", "value-norm")
    until_title(page, "value-norm weights")
    alpha, n = payload.quantised(trace.cross_attn)[-1].astype(float), norms.norms.cross[-1]
    want = (alpha * n[:, None, :] / (alpha * n[:, None, :]).sum(-1, keepdims=True)).mean(0)  # the last layer's mean
    assert np.abs(z_of(page) - want).max() < 2e-3
    assert not page.errors and not page.refused, (page.errors, page.refused)
    page.context.close()

    bare = open_offline(browser, offline.write(trace, entry, SENTENCE, [], tmp_path / "bare.html").path)
    open_tab(bare, "why")
    assert bare.is_hidden("#why-step") and "saved without Why this word" in bare.text_content("#why-none")
    assert bare.eval_on_selector_all("#weights option", "os => os.map(o => o.value)") == ["attention", "rollout"]
    bare.context.close()


@needs_chromium
def test_offline_what_needs_a_model_says_so_in_place_and_a_link_is_the_file_s_own(browser, trace, entry, tmp_path):
    """Head importance, the untrained twin, a comparison with another word and the animation say, where they would
    be, that they need the app; Link to this view is this file's address with the view, which opens it again."""
    path = offline.write(trace, entry, SENTENCE, [], tmp_path / "page.html").path
    page = open_offline(browser, path)
    for tab, place in (("importance", "#importance-list"), ("compare", "#compare-text")):
        open_tab(page, tab)
        page.wait_for_function(f"document.querySelector('{place}').textContent.includes(\"needs the app's model\")")
    page.click("summary:has-text('Export a figure or animation')")
    page.click("#export-animation summary")
    page.click("#animation-make")
    assert "The animation needs the app's model" in page.text_content("#animation-note")
    page.select_option("#kind", "encoder")
    page.select_option("#layer", "1")
    page.select_option("#head", "2")
    page.click("#share")
    link = page.input_value("#share-url textarea")
    assert link.startswith(path.as_uri() + "?") and "view=encoder" in link and "layer=1" in link and "head=2" in link
    again = open_offline(browser, path, link[len(path.as_uri()):])
    assert again.evaluate("[kind.value, layer.value, head.value]") == ["encoder", "1", "2"]
    assert not page.errors and not again.errors
    page.context.close()
    again.context.close()


@needs_chromium
def test_offline_a_translation_with_no_step_still_draws(browser, trace, entry, tmp_path):
    """Nothing decoded (a trace stopped before its first piece): every figure says so instead of failing."""
    path = offline.write(views.prefix(trace, 0), entry, SENTENCE, [], tmp_path / "empty.html").path
    page = open_offline(browser, path)
    page.wait_for_function("document.querySelector('#step-cross').textContent.includes('No decoding step')")
    assert page.locator("#heatmap .heatmaplayer image").count() == 0  # cross-attention: no rows
    page.select_option("#kind", "encoder")
    page.wait_for_selector("#heatmap .heatmaplayer image")
    assert page.locator("#heatmap .heatmaplayer image").count() == 1 and page.is_disabled("#step")
    assert page.text_content("#why-none") == "Nothing was decoded: no piece to explain."  # as the app's tab says
    assert not page.errors and not page.refused
    page.context.close()


@pytest.mark.slow
@needs_chromium
def test_a_20_word_sentence_on_the_shipped_model_is_within_6_mb_and_works_offline(browser, tmp_path):
    """`python -m anatomy.export html ...` from the repository root, with the shipped de→en model."""
    out = tmp_path / "talk.html"
    env = {k: v for k, v in os.environ.items() if k not in ("ANATOMY_CHECKPOINT_DIR", "ANATOMY_HUB_MODELS")}
    assert len(TALK.split()) == 20
    done = subprocess.run([sys.executable, "-m", "anatomy.export", "html", TALK, "--direction", "de-en",
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size <= MAX_BYTES
    data = data_of(out.read_text(encoding="utf-8"))["payload"]
    assert data["model"]["checkpoint"] == "general-de-en" and data["settings"]["beam_size"] == 5
    page = open_offline(browser, out)
    assert page.locator("#grid .heatmaplayer image").count() == 12
    assert not page.refused
    page.context.close()


@needs_chromium
def test_download_page_in_the_app_saves_the_shown_translation(browser, url, shipped):
    """One click on the button downloads the page of the shown translation (the link's sentence)."""
    from tests import test_browser_presenter as presenter

    key = shipped.anatomy.registry.default_key
    page = presenter.open_page(browser, url, key, 1600, 1000)
    with page.expect_download() as download:
        page.locator("#download-page").click()
    assert download.value.suggested_filename == f"{key}_translation.html"
    saved = Path(download.value.path())
    data = data_of(saved.read_text(encoding="utf-8"))["payload"]
    assert saved.stat().st_size <= MAX_BYTES and data["text"] == presenter.SENTENCE and data["model"]["key"] == key
    assert not page.errors, page.errors
    page.context.close()


@needs_chromium
def test_download_trace_in_the_app_saves_the_shown_translation_s_trace(browser, url, shipped):
    """One click on Download trace downloads the trace of the shown translation, written by that click."""
    from tests import test_browser_presenter as presenter

    page = presenter.open_page(browser, url, shipped.anatomy.registry.default_key, 1600, 1000)
    with page.expect_download() as download:
        page.locator("#download").click()
    assert download.value.suggested_filename.startswith("trace-")
    trace = Trace.from_json(Path(download.value.path()).read_text(encoding="utf-8"))
    assert trace.settings.direction == shipped.anatomy.registry.default_key and trace.text
    assert not page.errors, page.errors
    page.context.close()


@pytest.mark.slow
def test_the_export_html_endpoint_sends_the_page_to_a_client(served, tmp_path):
    from gradio_client import Client

    client = Client(served.url, verbose=False, download_files=str(tmp_path))
    path, notice = client.predict(text=SENTENCE, direction="de-en", api_name="/export_html")
    assert Path(path).name == "de-en_translation.html" and "length limit" in notice
    assert data_of(Path(path).read_text(encoding="utf-8"))["payload"]["text"] == SENTENCE
