"""`from anatomy import show` (anatomy/notebook.py): the offline page of a translation inline in a notebook, as an
iframe whose srcdoc holds the whole page. On a tiny model: what the cell's HTML holds, .save, the errors, and that
`import anatomy` stays free. Then a real notebook on the shipped de→en model, run by a Jupyter kernel (nbclient),
written by nbconvert and opened in Chromium with every request but the file refused: the page inside the frame
draws the trace's attention.

ANATOMY_NOTEBOOK_SCREENSHOT=assets/notebook.png on the last test also takes docs/notebooks.md's picture."""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from anatomy import notebook, offline
from anatomy.registry import ModelRegistry
from tests.app_fixtures import SENTENCE, make_checkpoint
from tests.browser import needs_chromium
from tests.test_offline import entry, trace  # noqa: F401 (the offline page's fixtures: a tiny model's trace)
from transformer import Trace
from transformer.pieces import detokenize

ROOT = Path(__file__).resolve().parents[1]
GERMAN = "Ein Hund läuft im Park."


@pytest.fixture
def tiny_registry(entry, monkeypatch):
    """The tiny model as the only model show() knows by key."""
    monkeypatch.setattr(notebook, "registry", lambda: ModelRegistry([entry], []))


def attributes(cell_html: str) -> dict[str, str]:
    """The iframe's attributes, unescaped: the whole of the cell's HTML is one iframe."""
    assert re.fullmatch(r'<iframe [^>]*></iframe>', cell_html, flags=re.S)
    return {k: html.unescape(v) for k, v in re.findall(r'(\w+)="([^"]*)"', cell_html)}


def test_the_cell_is_an_iframe_whose_srcdoc_is_the_whole_offline_page(trace, entry):
    shown = notebook.show(trace, entry)
    assert (shown.trace, shown.entry, shown.translation) == (trace, entry, trace.text)
    assert shown.text == detokenize(trace.source_tokens) and repr(shown).startswith("Shown(de-en: ")
    frame = attributes(shown._repr_html_())
    page = offline.page(offline.payload(trace, entry, shown.text, list(shown.notices)), entry.config)
    assert frame["srcdoc"] == notebook.framed(page)
    # the <base> keeps the page's relative links in the frame, and is all that is added
    assert frame["srcdoc"].replace(notebook.BASE, "", 1) == page and "<head>" + notebook.BASE in frame["srcdoc"]
    assert frame["sandbox"] == "allow-scripts allow-downloads"
    assert "width: 100%" in frame["style"] and f"height: {notebook.HEIGHT}px" in frame["style"]
    assert frame["title"] == f"Transformer Anatomy: de-en: {trace.text}"
    # the same page the command writes (the payload as anatomy.offline makes it: no more, no less)
    assert shown.page() == page


def test_every_drawing_has_its_own_frame_id(trace, entry):
    a, b = notebook.show(trace, entry), notebook.show(trace, entry)
    ids = [attributes(s._repr_html_())["id"] for s in (a, b, a)]
    assert len(set(ids)) == 3 and len({a, b}) == 2 and all(re.fullmatch(r"anatomy-[0-9a-f]{32}", i) for i in ids)


def test_show_translates_a_text_with_the_model_s_own_decoding(entry, tiny_registry):
    shown = notebook.show(SENTENCE, model="de-en")
    assert shown.entry is entry and shown.text == SENTENCE
    assert shown.trace.settings.direction == "de-en" and shown.trace.settings.beam_size == entry.decoding.beam_size
    assert shown.translation == shown.trace.text
    assert notebook.show(SENTENCE).entry is entry  # no model: the first
    assert notebook.show(shown.trace).entry is entry  # a trace made by show names its model
    assert any("length limit" in n for n in shown.notices)  # as the page says it (views.run_notices)


def test_show_can_explain_and_the_page_carries_it(trace, entry, tiny_registry, tmp_path):
    """show(..., explain=True): Why this word and the value norms, made by the model, go into the cell's page and
    the saved file (a text or a trace alike)."""
    import json

    for source in (SENTENCE, trace):
        shown = notebook.show(source, entry, explain=True)
        assert shown.explained.of is shown.trace and shown.norms.of is shown.trace
        data = json.loads(html.unescape(re.search(r'id="anatomy-data">(.*?)</script>', shown.page(), re.S).group(1)))
        assert data["explain"]["of"][2:] == [shown.trace.source_tokens, shown.trace.output_tokens]
        assert data["norms"] is not None
        assert shown.save(tmp_path / "why.html").read_text(encoding="utf-8") == shown.page()
    assert notebook.show(trace, entry).explained is None  # only when asked: it costs model passes


def test_save_writes_the_page_the_command_writes(trace, entry, tmp_path):
    shown = notebook.show(trace, entry)
    path = shown.save(tmp_path / "talk" / "de-en.html")
    assert path == tmp_path / "talk" / "de-en.html"
    assert path.read_text(encoding="utf-8") == shown.page()
    with pytest.raises(ValueError, match=r"must end in \.html, not 'x\.htm'"):
        shown.save(tmp_path / "x.htm")


def test_bad_input_says_what_would_do(trace, entry, tiny_registry, tmp_path):
    with pytest.raises(ValueError, match=r"unknown model 'fr-en'; choose one of: de-en$"):
        notebook.show(SENTENCE, model="fr-en")
    with pytest.raises(ValueError, match="Nothing to translate: text is empty"):
        notebook.show("   ", model="de-en")
    with pytest.raises(TypeError, match=r"takes a text \(str\) or a transformer.Trace, not int"):
        notebook.show(42, model="de-en")
    with pytest.raises(TypeError, match=r"model must be a model key \(str\) or a ModelEntry, not float"):
        notebook.show(SENTENCE, model=1.5)
    with pytest.raises(ValueError, match=r"this trace names no model: pass model=, one of de-en"):
        notebook.show(trace)  # made by the Translator, not the app: no direction
    make_checkpoint(tmp_path / "wide", n_heads=4)
    wide = ModelRegistry.discover([str(tmp_path / "wide")]).get("de-en")
    with pytest.raises(ValueError, match=r"has 2 layers × 2 heads, model 'de-en' 2 × 4: pass the model that made"):
        notebook.show(trace, wide)


@pytest.mark.slow
def test_import_anatomy_imports_no_notebook_and_no_torch():
    code = ("import sys, anatomy; print('anatomy.notebook' in sys.modules, 'torch' in sys.modules); "
            "from anatomy import show; print('anatomy.notebook' in sys.modules, show.__module__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False", "True", "anatomy.notebook"], done.stderr
    assert "no attribute 'shw'" in subprocess.run([sys.executable, "-c", "import anatomy; anatomy.shw"], cwd=ROOT,
                                                  capture_output=True, text=True, timeout=120).stderr


# ---- a real notebook: Jupyter kernel, nbconvert, Chromium with the network refused ----

def executed_notebook(folder: Path) -> tuple[Path, Trace, float]:
    """A two-cell notebook run by a Jupyter kernel started in the repository root (as a notebook saved there runs),
    written as HTML by nbconvert: (the HTML file, the trace the cell drew, the seconds the kernel took)."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    saved = folder / "trace.json"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f'from anatomy import show\n\nshown = show("{GERMAN}", model="de-en")\nshown'),
        nbformat.v4.new_code_cell(f"_ = open({str(saved)!r}, 'w', encoding='utf-8').write(shown.trace.to_json())"),
    ])
    # the shipped checkpoints, whatever another test pointed the registry at
    env = {k: v for k, v in os.environ.items() if k not in ("ANATOMY_CHECKPOINT_DIR", "ANATOMY_HUB_MODELS")}
    start = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute(env=env)
    seconds = time.perf_counter() - start
    assert [o["output_type"] for o in nb.cells[0].outputs] == ["execute_result"], nb.cells[0].outputs
    body, _ = HTMLExporter().from_notebook_node(nb)
    out = folder / "notebook.html"
    out.write_text(body, encoding="utf-8")
    return out, Trace.from_json(saved.read_text(encoding="utf-8")), seconds


@pytest.mark.slow
@needs_chromium
def test_a_notebook_draws_the_page_inline_with_the_network_refused(browser, tmp_path):
    path, trace, seconds = executed_notebook(tmp_path)
    print(f"kernel ran the notebook in {seconds:.1f} s; its HTML is {path.stat().st_size / 1e6:.1f} MB")
    assert trace.text == "A dog runs in the park." and trace.settings.direction == "de-en"
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    refused = []

    def route(request_route):
        if request_route.request.url == path.as_uri():
            request_route.continue_()
        else:  # nbconvert's template asks CDNs for require.js and MathJax
            refused.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    frame_element = page.locator("iframe[id^='anatomy-']")
    assert frame_element.count() == 1 and frame_element.get_attribute("title").endswith(trace.text)
    frame = frame_element.element_handle().content_frame()
    frame.wait_for_function("document.body.dataset.ready", timeout=120_000)
    assert frame.evaluate("document.body.dataset.ready") == "1"
    assert frame.locator("#translation").text_content() == trace.text
    # the default view: cross-attention, the last layer, the mean of its heads
    z = np.array(frame.evaluate("document.querySelector('#heatmap .anatomy-plot').data[0].z"), dtype=float)
    want = trace.cross_attn[-1].mean(0)
    assert z.shape == want.shape and np.abs(z - want).max() <= 1 / 255
    assert frame.locator("#grid .heatmaplayer image").count() == trace.cross_attn.shape[0] * trace.cross_attn.shape[1]
    # the page in the frame asked for nothing: only nbconvert's own CDN assets were refused
    assert refused and all(url.startswith("https://cdnjs.cloudflare.com/") for url in refused), refused
    # the tabs work in the frame, and the frame has no address to link to: it says what to do instead
    frame.click("#anatomy-tabs [role=tab][data-tab=architecture]")
    frame.wait_for_selector("#architecture .main-svg")
    frame.click("#share")
    assert "no address" in frame.input_value("#share-url textarea") and page.url == path.as_uri()
    if shot := os.environ.get("ANATOMY_NOTEBOOK_SCREENSHOT"):
        # the cell and, in its frame, the attention explorer (scrolled inside the frame: the notebook stays put)
        frame.evaluate("window.scrollTo(0, document.getElementById('explorer').offsetTop - 8)")
        page.mouse.move(0, 0)
        page.wait_for_timeout(500)
        page.screenshot(path=shot)
    # the sandbox lets Plotly's "Download plot as a png" save its file
    frame.locator("#heatmap").hover()
    with page.expect_download() as download:
        frame.locator("#heatmap .modebar-btn[data-title^='Download']").click()
    assert download.value.suggested_filename.endswith(".png")
    context.close()
