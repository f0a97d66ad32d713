"""What the browser tests share: Debian chromium driven by playwright (never `playwright install`), the app
served in-process on loopback, and ways to wait for what a figure shows."""
from __future__ import annotations

import json
import os
import shutil

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed "
                                                                     "(scripts/test.sh installs it)")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TIMEOUT = 60_000


@pytest.fixture(scope="module")
def url(shipped):
    """The app on the shipped checkpoints (conftest.py's `shipped`), served on loopback."""
    import ui

    _, url, _ = shipped.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    yield url
    shipped.close()



@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def load_page(page, url: str, timeout: float | None = None) -> None:
    """Go to `url` and wait until the page shows what its address asks for (ui/static/app.js `loaded`: at once for
    a plain address, else once its load event has answered)."""
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("window.anatomy?.loaded && document.querySelector('#source-text textarea')",
                           timeout=timeout)


def plot_text(page, elem_id: str) -> str:
    """All text drawn in one plot (titles, tick labels, annotations)."""
    return page.locator(f"#{elem_id} [data-testid=plotly] svg").first.evaluate(
        "svg => Array.from(svg.closest('[data-testid=plotly]').querySelectorAll('text')).map(t => t.textContent)"
        ".join('\\n')")


def wait_title(page, elem_id: str, fragment: str) -> None:
    page.wait_for_function(
        "([id, frag]) => { const p = document.querySelector('#' + id + ' [data-testid=plotly]');"
        " return p && Array.from(p.querySelectorAll('text')).some(t => t.textContent.includes(frag)); }",
        arg=[elem_id, fragment])


def heatmap_count(page, elem_id: str) -> int:
    return page.locator(f"#{elem_id} .heatmaplayer image").count()


def open_tab(page, name: str) -> None:
    """Click the tab called `name`; on a narrow page in large type Gradio moves the last tabs into its "More tabs"
    menu, where a visitor finds them."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count():
        tab.click()
        return
    page.get_by_role("button", name="More tabs").click()
    page.locator(".overflow-dropdown button", has_text=name).click()


def view_of(page) -> dict:
    """The view the viewer's controls show (anatomy/viewer/controls.js, through app.js `viewed`)."""
    return json.loads(page.evaluate("window.anatomy.viewed()"))


def choose(page, control: str, value) -> None:
    """Choose `value` in one of the viewer's lists (kind, layer, head, display, weights, ...), as a visitor does."""
    page.select_option(f"select#{control}", str(value))


def slide(page, control: str, value: int) -> None:
    """Move one of the viewer's sliders (step, query) to `value`, as a drag does (its input event)."""
    page.eval_on_selector(f"input#{control}", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }",
                          value)
