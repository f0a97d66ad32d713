"""Take the app's screenshots for the README and docs/ in headless Chromium: `python assets/screenshots.py`.

Serves the app in-process (ui.create_app) (the checkpoints under checkpoints/, or $ANATOMY_CHECKPOINT_DIR) with the
same theme and css as `python app.py`, drives the page like a visitor and writes PNGs into assets/
(or the folder given as the first argument), the tour's stops into tour/ there (`--tour`: only those). Needs
Debian `chromium` and the playwright package.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
SENTENCE = {"de": "Mein Bruder wohnt seit drei Jahren in Berlin.",
            "en": "My brother has lived in Berlin for three years."}


def wait_title(page, elem_id: str, fragment: str) -> None:
    page.wait_for_function(
        "([id, frag]) => { const p = document.querySelector('#' + id + ' [data-testid=plotly]');"
        " return p && Array.from(p.querySelectorAll('text')).some(t => t.textContent.includes(frag)); }",
        arg=[elem_id, fragment], timeout=120_000)


def settle(page, seconds: float = 0.8) -> None:
    page.mouse.move(5, 5)  # no hover labels in the pictures
    time.sleep(seconds)


def shoot(page, selector: str, path: Path) -> None:
    """Screenshot of one element, scrolled into view."""
    page.locator(selector).scroll_into_view_if_needed()
    settle(page)
    page.locator(selector).screenshot(path=path)
    print("wrote", path)


def shoot_span(page, top_selector: str, bottom_selector: str, path: Path, above: int, below: int) -> None:
    """Full-width screenshot from the top of one element to the bottom of another."""
    settle(page)
    top, bottom = page.locator(top_selector).bounding_box(), page.locator(bottom_selector).bounding_box()
    page.screenshot(path=path, full_page=True,
                    clip={"x": 0, "y": top["y"] + page.evaluate("window.scrollY") - above, "width": 1920,
                          "height": bottom["y"] + bottom["height"] - top["y"] + above + below})
    print("wrote", path)


def tour(browser, url: str, entry, out: Path) -> None:
    """Each stop of the tour of the example sentence in presenter mode on a 1280×720 projector: out/NN-key.png."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    query = {"text": SENTENCE.get(entry.source_lang, SENTENCE["de"]), "direction": entry.key, "presenter": 1,
             "tour": 1}
    page = browser.new_page(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    page.set_default_timeout(120_000)
    page.goto(f"{url}?{urllib.parse.urlencode(query)}", wait_until="domcontentloaded")
    page.wait_for_selector("#anatomy-tour")
    stops = page.evaluate("window.anatomy.tourData.stops.map(s => s.key)")
    for k, key in enumerate(stops, start=1):
        page.wait_for_function(f"document.querySelector('#anatomy-tour')?.dataset.stop === '{k}' && "
                               "document.querySelector('.anatomy-tour-target')")
        if key == "why":  # its tab's model event: every step's attribution
            wait_title(page, "why-step", "Why")
        settle(page, 1.5)
        page.screenshot(path=out / f"{k:02d}-{key}.png")
        print("wrote", out / f"{k:02d}-{key}.png")
        page.keyboard.press("ArrowRight")
    page.close()


def pair(browser, url: str, entry, out: Path) -> None:
    """The example pair side by side (Compare with…) in presenter mode on a 1280×720 projector: out/compare.png."""
    page = browser.new_page(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    page.set_default_timeout(120_000)
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#heatmap [data-testid=plotly] .main-svg")
    page.locator("#examples button", has_text=f"Side by side, {entry.label}").first.click()
    wait_title(page, "heatmap-second", "Sentence 2: Encoder self-attention")
    page.locator("#presenter input").check()
    page.wait_for_function("document.querySelector('#heatmap .js-plotly-plot')?._fullLayout.font.size >= 18")
    page.evaluate("window.scrollTo(0, 0)")
    settle(page, 1.5)
    page.screenshot(path=out / "compare.png")
    print("wrote", out / "compare.png")
    page.close()


def main(out: Path, only_tour: bool = False) -> None:
    from playwright.sync_api import sync_playwright

    import ui

    demo = ui.create_app()
    ui.start(demo)
    out.mkdir(parents=True, exist_ok=True)
    entry = demo.anatomy.registry.get(None)
    L = entry.config.n_decoder_layers
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=ARGS)
            tour(browser, url, entry, out / "tour")
            if only_tour:
                return
            if entry.pairs:
                pair(browser, url, entry, out)
            page = browser.new_page(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
            page.set_default_timeout(120_000)
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("#heatmap [data-testid=plotly] .main-svg")
            page.get_by_label("Source text").fill(SENTENCE.get(entry.source_lang, SENTENCE["de"]))
            page.get_by_role("button", name="Translate", exact=True).click()
            page.wait_for_function("document.querySelector('#run-info').innerText.includes('source pieces')")
            page.wait_for_function(f"document.querySelectorAll('#grid .heatmaplayer image').length >= {L}")
            # the large view on the last layer, where cross-attention looks most like an alignment
            page.select_option("select#layer", str(L))
            wait_title(page, "heatmap", f"layer {L}, mean")
            page.evaluate("window.scrollTo(0, 0)")
            settle(page)
            page.screenshot(path=out / "app.png")
            print("wrote", out / "app.png")

            shoot(page, "#heatmap", out / "cross-attention.png")

            page.eval_on_selector("input#step", "s => { s.value = 3; s.dispatchEvent(new Event('input')); }")
            wait_title(page, "step-topk", "Step 3:")
            page.locator("#steps-section").scroll_into_view_if_needed()
            shoot_span(page, "#steps-section", "#step-topk", out / "decoding-steps.png", above=10, below=20)

            page.select_option("select#kind", "decoder")
            page.check("input#merge")
            wait_title(page, "heatmap", "· words")
            shoot(page, "#heatmap", out / "decoder-self-attention-words.png")

            # why this word (issue 36): step 3's attribution in words, every piece's source share, the agreement
            page.get_by_role("tab", name="Why this word").click()
            wait_title(page, "why-step", "at step 3?")
            wait_title(page, "why-agree", "Does attention agree?")
            page.locator("#why-step").scroll_into_view_if_needed()
            shoot_span(page, "#why-step", "#why-agree", out / "why-this-word.png", above=10, below=10)
            page.get_by_role("tab", name="All heads").click()

            page.select_option("select#kind", "encoder")
            page.uncheck("input#merge")
            wait_title(page, "grid", "Encoder self-attention")
            shoot(page, "#grid", out / "all-heads.png")

            # the learner views (issue 15): lines, one query's softmax walk, special tokens hidden
            page.select_option("select#kind", "cross")
            page.select_option("select#display", "lines")
            wait_title(page, "heatmap", "Cross-attention · layer")
            wait_title(page, "heatmap", "· lines")
            shoot(page, "#heatmap", out / "lines.png")
            gd = "document.querySelector('#heatmap .js-plotly-plot')"
            box = page.evaluate(f"""() => {{ const gd = {gd}, uid = gd._fullData.find(t => t.meta === 'keys').uid;
                const r = gd.querySelector('.scatterlayer .trace' + uid).querySelectorAll('.point')[1]
                            .getBoundingClientRect();
                return [r.x + r.width / 2, r.y + r.height / 2]; }}""")
            page.mouse.move(*box)  # a key piece under the pointer keeps its lines
            page.wait_for_function(f"{gd}.dataset.kept === 'keys:1'")
            time.sleep(0.8)
            page.locator("#heatmap").screenshot(path=out / "lines-hover.png")
            print("wrote", out / "lines-hover.png")
            page.select_option("select#head", "2")
            page.select_option("select#display", "walk")
            wait_title(page, "heatmap", "step by step")
            shoot(page, "#heatmap", out / "softmax-walk.png")
            page.select_option("select#display", "heatmap")
            page.select_option("select#kind", "decoder")
            page.check("input#hide")
            wait_title(page, "heatmap", "Decoder masked self-attention · layer")
            wait_title(page, "heatmap", "special tokens hidden")
            shoot(page, "#heatmap", out / "special-tokens-hidden.png")
            page.uncheck("input#hide")
            page.select_option("select#head", "mean")
            page.select_option("select#kind", "encoder")
            wait_title(page, "heatmap", "Encoder self-attention · layer")
            wait_title(page, "heatmap", "mean of")

            page.get_by_role("tab", name="Positional encoding").click()
            page.wait_for_selector("#pe .heatmaplayer image")
            page.wait_for_selector("#pe-rows .heatmaplayer image")
            page.locator("#pe").scroll_into_view_if_needed()
            shoot_span(page, "#pe", "#pe-rows", out / "positional-encoding.png", above=10, below=10)

            page.get_by_role("tab", name="Head statistics").click()
            page.wait_for_selector("#summary .heatmaplayer image")
            page.wait_for_selector("#head-stats tbody tr")
            shoot_span(page, "#summary", "#head-stats", out / "head-statistics.png", above=10, below=10)

            page.select_option("select#kind", "cross")
            page.select_option("select#head", "1")
            wait_title(page, "heatmap", f"layer {L}, head 1")
            page.get_by_role("tab", name="Trained vs untrained").click()
            wait_title(page, "compare-untrained", f"layer {L}, head 1")
            shoot_span(page, "#compare-text", "#compare-untrained", out / "trained-vs-untrained.png", above=10,
                       below=10)

            page.get_by_role("tab", name="Architecture").click()
            wait_title(page, "architecture", "Shapes for this translation")
            shoot(page, "#architecture", out / "architecture.png")

            page.get_by_role("tab", name="Training").click()
            page.wait_for_selector("#training .scatterlayer")
            shoot(page, "#training", out / "training.png")

            # heads switched off by a link: both translations, the grid with the heads greyed, the importance maps
            off = f"cross:{L}.2,cross:{L}.4"
            query = {"text": SENTENCE.get(entry.source_lang, SENTENCE["de"]), "direction": entry.key, "off": off}
            ablated = browser.new_page(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
            ablated.set_default_timeout(120_000)
            ablated.goto(f"{url}?{urllib.parse.urlencode(query, safe=':,')}", wait_until="domcontentloaded")
            ablated.wait_for_function("(document.querySelector('#ablation') || {innerText: ''}).innerText"
                                      ".includes('heads off')")
            wait_title(ablated, "grid", "Cross-attention")
            shoot_span(ablated, "#translation", "#ablation", out / "heads-off.png", above=10, below=10)
            shoot(ablated, "#grid", out / "heads-off-grid.png")
            ablated.get_by_role("tab", name="Head importance").click()
            wait_title(ablated, "importance", "Which heads this translation needs")
            shoot(ablated, "#importance", out / "head-importance.png")
            if ablated.locator("#pruning").is_visible():
                wait_title(ablated, "pruning", "Switching heads off one by one")
                shoot_span(ablated, "#corpus-importance", "#pruning", out / "corpus-head-importance.png", above=10,
                           below=10)
            ablated.close()

            # a branch by a link: the model's own translation's second piece replaced by its runner-up there, then
            # the model's own decoding, beside the model's own translation
            text = SENTENCE.get(entry.source_lang, SENTENCE["de"])
            own = entry.cpu.translate(text, entry.decoding)
            runner_up = next(t.token for t in own.top_k[1] if t.token != own.output_tokens[1])
            query = {"text": text, "direction": entry.key, "prefix": json.dumps([own.output_tokens[0], runner_up])}
            branched = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
            branched.set_default_timeout(120_000)
            branched.goto(f"{url}?{urllib.parse.urlencode(query)}", wait_until="domcontentloaded")
            branched.wait_for_selector("#branch:not([hidden]) #branch-own .anatomy-branch-piece")
            branched.locator("#heatmap .heatmaplayer image").wait_for()
            settle(branched, 1.5)
            shoot_span(branched, "#branch", "#heatmap", out / "branch.png", above=10, below=10)
            branched.close()

            # presenter mode on a 1280×720 projector: the first screen, unscrolled (the stage)
            query = {"text": SENTENCE.get(entry.source_lang, SENTENCE["de"]), "direction": entry.key, "presenter": 1}
            link = f"{url}?{urllib.parse.urlencode(query)}"
            projector = browser.new_page(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
            projector.set_default_timeout(120_000)
            projector.goto(link, wait_until="domcontentloaded")
            projector.wait_for_function(
                "document.querySelector('#heatmap .js-plotly-plot')?._fullLayout.font.size >= 18")
            projector.locator("#heatmap .heatmaplayer image").wait_for()
            settle(projector, 1.5)
            projector.screenshot(path=out / "presenter.png")
            print("wrote", out / "presenter.png")

            # a phone: figures as wide as the screen
            phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)
            phone.set_default_timeout(120_000)
            phone.goto(link.replace("presenter=1", "presenter=0"), wait_until="domcontentloaded")
            phone.wait_for_function("document.querySelector('#heatmap .js-plotly-plot')?._fullLayout.font.size === 10")
            phone.locator("#heatmap .heatmaplayer image").wait_for()
            phone.locator("#heatmap").scroll_into_view_if_needed()
            settle(phone, 1.5)
            phone.screenshot(path=out / "phone.png")
            print("wrote", out / "phone.png")
            phone.goto(link.replace("presenter=1", "presenter=0") + "&view=encoder&display=lines",
                       wait_until="domcontentloaded")
            wait_title(phone, "heatmap", "· lines")
            phone.locator("#heatmap").scroll_into_view_if_needed()
            settle(phone, 1.5)
            phone.locator("#heatmap").screenshot(path=out / "phone-lines.png")
            print("wrote", out / "phone-lines.png")
            browser.close()
    finally:
        demo.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Take the app's screenshots for the README and docs/.")
    parser.add_argument("out", nargs="?", type=Path, default=Path(__file__).resolve().parent,
                        help="folder for the PNGs (default: assets/)")
    parser.add_argument("--tour", action="store_true", help="only the tour's stops (into tour/ in that folder)")
    args = parser.parse_args()
    main(args.out, only_tour=args.tour)
