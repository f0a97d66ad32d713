"""`from anatomy import show` (anatomy/notebook.py): the offline page of a translation inline in a notebook, as an
iframe whose srcdoc holds the whole page. On a tiny model: what the cell's HTML holds, .save, the errors, and that
`import anatomy` stays free. Then a real notebook on the shipped de→en model, run by a Jupyter kernel (nbclient),
written by nbconvert and opened in Chromium with every request but the file refused: the page inside the frame
draws the trace's attention.

ANATOMY_NOTEBOOK_SCREENSHOT=assets/notebook.png on the last test also takes docs/notebooks.md's picture."""
from __future__ import annotations

import copy
import html
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from anatomy import notebook, offline
from anatomy.registry import ModelRegistry
from tests.app_fixtures import SENTENCE, make_checkpoint
from tests.browser import ARGS, CHROMIUM, needs_chromium
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
    cell = shown._repr_html_()
    frame = attributes(cell)
    # ASCII, the page's own words as character references: read the same in any encoding the host page is read in
    assert cell.isascii() and not frame["srcdoc"].isascii()
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


def test_show_with_a_prefix_shows_the_branch_beside_the_model_s_own(entry, tiny_registry):
    """show(text, prefix=...): the branch (its first pieces forced, then the model's own decoding), its page
    carrying the model's own translation beside it; a branch's trace reads as any trace."""
    own = notebook.show(SENTENCE, model="de-en")
    forced = [own.trace.top_k[0][1].token]
    shown = notebook.show(SENTENCE, model="de-en", prefix=forced)
    assert shown.trace.settings.mode == "branch" and shown.trace.output_tokens[0] == forced[0]
    assert shown.own.output_tokens == own.trace.output_tokens
    data = json.loads(re.search(r'id="anatomy-data">(.*?)</script>', shown.page(), re.S).group(1))
    assert data["payload"]["own"]["pieces"] == own.trace.output_tokens
    assert data["payload"]["settings"]["prefix"] == forced
    assert notebook.show(shown.trace).trace.settings.mode == "branch"
    with pytest.raises(ValueError, match="not in this model's vocabulary"):
        notebook.show(SENTENCE, model="de-en", prefix=["no such piece"])


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


def test_plotly_shared_sends_plotly_js_to_the_notebook_s_window_once(trace, entry, monkeypatch):
    """show(..., plotly="shared"): the kernel's first such drawing puts Plotly.js's text in the notebook's window
    (a script beside the frame), later ones only ask for it; every frame runs it as its own, in its sandbox."""
    monkeypatch.setattr(notebook, "_CARRIER", notebook._Carrier())
    cells = iter(["cell-a", "cell-b", "cell-a", None])
    monkeypatch.setattr(notebook, "_cell", lambda: next(cells))
    plotly_js = offline.PLOTLY_JS.read_text(encoding="utf-8")
    shown = notebook.show(trace, entry, plotly="shared")
    first, second, again, unnamed = (shown._repr_html_() for _ in range(4))
    for cell, carries in ((first, True), (second, False), (again, True), (unnamed, False)):
        window, frame_html = re.fullmatch(r"<script>(.*?)</script>(<iframe .*)", cell, flags=re.S).groups()
        # the window's script holds the text (escaped for a JS string) only in the carrier's cell: cell-a, run again
        assert (len(window) > len(plotly_js)) is carries and "anatomyPlotlyShared" in window
        assert window == notebook.shared_window(carries) and "</script" not in window and "<!--" not in window
        assert cell.isascii()  # Plotly.js's few non-ASCII characters as \u escapes
        frame = attributes(frame_html)
        assert frame["sandbox"] == notebook.SANDBOX  # still isolated: a posted message is all that crosses
        srcdoc = frame["srcdoc"]
        assert plotly_js[:200] not in srcdoc and notebook.frame_plotly("shared") in srcdoc
        assert srcdoc == notebook.framed(shown.page(notebook.frame_plotly("shared")))
    assert len(second.encode()) < 500_000 and len(first.encode()) > len(plotly_js.encode())
    assert shown.page() == notebook.show(trace, entry).page()  # .page() and .save() stay the whole page


def test_the_carrier_is_known_by_the_cell_id_the_front_end_sends(monkeypatch):
    import types

    import IPython

    parent = {"metadata": {"cellId": "cell-a"}}
    kernel = types.SimpleNamespace(get_parent=lambda channel: parent if channel == "shell" else {})
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=kernel))
    assert notebook._cell() == "cell-a"
    parent = {"metadata": {}}  # nbclient, classic Notebook: no id, so only the kernel's first drawing carries
    assert notebook._cell() is None
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # not in a kernel
    assert notebook._cell() is None


def test_plotly_cdn_loads_the_package_s_plotly_js_from_its_address(trace, entry):
    cell = notebook.show(trace, entry, plotly="cdn")._repr_html_()
    srcdoc = attributes(cell)["srcdoc"]
    head = offline.PLOTLY_JS.read_text(encoding="utf-8")[:200]
    version = re.search(r"plotly\.js \(cartesian - minified\) v(\d+\.\d+\.\d+)", head).group(1)
    npm = f"https://cdn.jsdelivr.net/npm/plotly.js-cartesian-dist-min@{version}/plotly-cartesian.min.js"
    assert re.findall(r'<script src="([^"]*)"', srcdoc) == [npm]
    assert head not in srcdoc and len(cell.encode()) < 500_000


def test_an_unknown_plotly_mode_is_refused_before_any_work(trace, entry, tiny_registry):
    for source in (trace, SENTENCE):
        with pytest.raises(ValueError, match=r"plotly must be one of 'inline', 'shared', 'cdn', not 'offline'$"):
            notebook.show(source, entry, plotly="offline")


@pytest.mark.slow
def test_import_anatomy_imports_no_notebook_and_no_torch():
    code = ("import sys, anatomy; print('anatomy.notebook' in sys.modules, 'torch' in sys.modules); "
            "from anatomy import show; print('anatomy.notebook' in sys.modules, show.__module__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False", "True", "anatomy.notebook"], done.stderr
    assert "no attribute 'shw'" in subprocess.run([sys.executable, "-c", "import anatomy; anatomy.shw"], cwd=ROOT,
                                                  capture_output=True, text=True, timeout=120).stderr


# ---- a real notebook: Jupyter kernel, nbconvert, Chromium with the network refused ----

# The notebook's cells that draw: the first by the inline default, then the same trace shared twice and from the CDN.
INLINE, SHARED, SHARED_AGAIN, CDN = 0, 2, 3, 4


@dataclass
class Executed:
    nb: object  # the notebook as the kernel left it (nbformat.NotebookNode)
    html: Path  # written by nbconvert
    trace: Trace  # the one its cells drew
    seconds: float  # the kernel's run


def executed_notebook(folder: Path) -> Executed:
    """A notebook run by a Jupyter kernel started in the repository root (as a notebook saved there runs), written
    as HTML by nbconvert."""
    import nbformat
    from nbclient import NotebookClient

    saved = folder / "trace.json"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f'from anatomy import show\n\nshown = show("{GERMAN}", model="de-en")\nshown'),
        nbformat.v4.new_code_cell(f"_ = open({str(saved)!r}, 'w', encoding='utf-8').write(shown.trace.to_json())"),
        nbformat.v4.new_code_cell('show(shown.trace, plotly="shared")'),
        nbformat.v4.new_code_cell('show(shown.trace, plotly="shared")'),
        nbformat.v4.new_code_cell('show(shown.trace, plotly="cdn")'),
    ])
    # the shipped checkpoints, whatever another test pointed the registry at
    env = {k: v for k, v in os.environ.items() if k not in ("ANATOMY_CHECKPOINT_DIR", "ANATOMY_HUB_MODELS")}
    start = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute(env=env)
    seconds = time.perf_counter() - start
    for cell in (INLINE, SHARED, SHARED_AGAIN, CDN):
        assert [o["output_type"] for o in nb.cells[cell].outputs] == ["execute_result"], nb.cells[cell].outputs
    return Executed(nb, as_html(nb, folder / "notebook.html"), Trace.from_json(saved.read_text(encoding="utf-8")),
                    seconds)


def as_html(nb, path: Path) -> Path:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> Executed:
    return executed_notebook(tmp_path_factory.mktemp("notebook"))


def cell_bytes(nb, cell: int) -> int:
    return len(nb.cells[cell].outputs[0]["data"]["text/html"].encode())


@pytest.mark.slow
def test_a_second_shared_cell_is_small(executed):
    """The notebook stores ~2 MB for an inline cell and for the first shared one (Plotly.js), a few hundred KB for
    a later shared cell or a CDN one."""
    sizes = {name: cell_bytes(executed.nb, cell) for name, cell in
             (("inline", INLINE), ("shared", SHARED), ("shared again", SHARED_AGAIN), ("cdn", CDN))}
    print(f"cells' HTML in bytes: {sizes}")
    plotly_js = offline.PLOTLY_JS.stat().st_size
    assert sizes["inline"] > plotly_js and sizes["shared"] > plotly_js
    assert sizes["shared again"] <= 500_000 and sizes["cdn"] <= 500_000


@pytest.fixture(scope="module")
def no_network(browser):
    """Chromium that resolves no host name: nothing the page or its frames ask for reaches a network (Playwright's
    routes do not see the requests of a sandboxed frame)."""
    walled = browser.browser_type.launch(executable_path=CHROMIUM,
                                         args=[*ARGS, "--host-resolver-rules=MAP * ~NOTFOUND"])
    yield walled
    walled.close()


def asked(frame) -> list[str]:
    """What a frame's page asked the network for, answered or not."""
    return frame.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")


def refusing(browser, path: Path):
    """A page in Chromium that loads `path` and refuses every other request it makes: (context, page, refused
    URLs)."""
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
    # not "load": that waits for every frame's Plotly.js to run, seconds each on a busy machine; each test waits for
    # the frames it reads
    page.goto(path.as_uri(), wait_until="domcontentloaded")
    return context, page, refused


def frame_of(page, cell: int):
    """The page's frame element of the notebook's `cell` (the frames in the cells' order)."""
    return page.locator("iframe[id^='anatomy-']").nth([INLINE, SHARED, SHARED_AGAIN, CDN].index(cell))


def in_view(element):
    """The frame of an iframe element scrolled into view: Chromium runs no animation frame in a sandboxed frame out
    of view, and Playwright's waits poll on them."""
    element.scroll_into_view_if_needed()
    return element.element_handle().content_frame()


def drawn(frame, trace: Trace) -> None:
    """The frame's page is drawn, its large heatmap the trace's cross-attention (last layer, mean of heads)."""
    frame.wait_for_function("document.body.dataset.ready", timeout=120_000)
    assert frame.evaluate("document.body.dataset.ready") == "1"
    assert frame.locator("#translation textarea").input_value() == trace.text
    z = np.array(frame.evaluate("document.querySelector('#heatmap .anatomy-plot').data[0].z"), dtype=float)
    want = trace.cross_attn[-1].mean(0)
    assert z.shape == want.shape and np.abs(z - want).max() <= 1 / 255


@pytest.mark.slow
@needs_chromium
def test_a_notebook_draws_the_page_inline_with_the_network_refused(no_network, executed):
    path, trace = executed.html, executed.trace
    print(f"kernel ran the notebook in {executed.seconds:.1f} s; its HTML is {path.stat().st_size / 1e6:.1f} MB")
    assert trace.text == "A dog runs in the park." and trace.settings.direction == "de-en"
    context, page, refused = refusing(no_network, path)
    frame_element = frame_of(page, INLINE)
    assert page.locator("iframe[id^='anatomy-']").count() == 4 and frame_element.get_attribute("title").endswith(
        trace.text)
    frame = in_view(frame_element)
    drawn(frame, trace)
    assert frame.locator("#grid .heatmaplayer image").count() == trace.cross_attn.shape[0] * trace.cross_attn.shape[1]
    # the page in the frame asked for nothing: only nbconvert's own CDN assets were refused
    assert refused and all(url.startswith("https://cdnjs.cloudflare.com/") for url in refused), refused
    assert asked(frame) == []
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


@pytest.mark.slow
@needs_chromium
def test_shared_cells_draw_with_the_plotly_js_the_first_left_in_the_notebook_s_window(no_network, executed):
    """nbconvert's page holds every cell's output in one window, as Jupyter Lab, Notebook and VS Code show them: both
    shared frames draw, each running the Plotly.js text that the first one's script left in the window (where it
    never runs); that output cleared, the window keeps the text; the notebook opened again without it, a later
    shared frame says what to do. The cdn frame asks for the CDN's address alone, and refused, says so."""
    context, page, _ = refusing(no_network, executed.html)
    for cell in (SHARED, SHARED_AGAIN):
        frame = in_view(frame_of(page, cell))
        drawn(frame, executed.trace)
        assert frame.evaluate("typeof window.Plotly") == "object" and asked(frame) == []
    assert page.evaluate("[typeof window.Plotly, Object.keys(window.anatomyPlotlyShared.sources)]") == [
        "undefined", [notebook.PLOTLY_VERSION]]
    cdn = in_view(frame_of(page, CDN))
    cdn.wait_for_selector(".notices li:has-text('could not be loaded')")
    assert asked(cdn) == [notebook.CDN] and cdn.locator("#translation textarea").input_value() == executed.trace.text
    # the first shared cell's output cleared (its script and frame gone): a shared frame drawn again still draws
    again = frame_of(page, SHARED_AGAIN).element_handle()
    page.evaluate("(el) => { el.previousElementSibling.remove(); el.remove(); }",
                  frame_of(page, SHARED).element_handle())
    again.scroll_into_view_if_needed()
    again.content_frame().evaluate("document.body.dataset.before = '1'")
    again.evaluate("(el) => { el.srcdoc = el.srcdoc; }")
    again.content_frame().wait_for_function("!document.body.dataset.before && document.body.dataset.ready === '1'",
                                            timeout=60_000)
    context.close()
    # the notebook opened again after that output was cleared (its other drawings left out): no cell carries Plotly.js
    nb = copy.deepcopy(executed.nb)
    nb.cells = [nb.cells[SHARED], nb.cells[SHARED_AGAIN]]
    nb.cells[0].outputs = []
    context, page, _ = refusing(no_network, as_html(nb, executed.html.with_name("cleared.html")))
    frames = page.locator("iframe[id^='anatomy-']")
    assert frames.count() == 1
    later = in_view(frames.nth(0))
    later.wait_for_selector(".notices li:has-text('Restart & Run All')", timeout=30_000)
    assert later.evaluate("[typeof window.Plotly, document.body.dataset.ready || '']") == ["undefined", ""]
    context.close()
