"""What a visitor waits for: the served app driven by headless Chromium, from the click on Translate.

Starts `python app.py` on a free loopback port (every folder in --checkpoints, default checkpoints/), opens a
fresh 1600×1000 page per run and translates the benchmark sentence of benchmarks/common.py with the app's default
model (the first checkpoint folder by name: general-de-en of the shipped ones), with the page's default settings:
the model's own beam size and length penalty (beam 5 for the shipped models, so the first piece arrives with the
whole translation). The first click after the server starts is reported on its own (first_click_all_s); the
other page figures are medians over --runs warm clicks. A figure counts as drawn
when Plotly's `plotly_afterplot` fires on it with this translation's pieces as its labels (and the view's
layer, head and step in its title), never for a placeholder. Figures, in seconds unless named _ms:

  first_piece_s   click → the first translated piece in the Translation box
  heatmap_s       click → the main attention heatmap drawn
  all_s           click → every figure in view drawn: heatmap, the three decoding-step panels and the open
                  tab's (All heads)
  view_s          a layer, head or step change, by mouse and by keyboard (slider: focus + arrow key; head
                  radio: focus + Space) → the affected figures in the window redrawn (what the visitor sees; the
                  page draws those below the fold after them); median over all of them
  view_all_s      the same to every affected figure redrawn, in the window or not
  server_requests_per_view  the queue events a page sent to the server per such view change (the viewer draws
                  in the page: 0)
  ablate_s        a click on a head's checkbox under Switch heads off (ABLATED_HEAD) → the translation with that
                  head off (beside the all-heads one: when its text is in the page, timed in the page as the figures
                  are) and the main heatmap drawn; ablate_all_s: every figure in view
  branch_s        after that, a click on step 2's second most likely next piece (its bar) → the branch shown beside
                  the model's own (#branch, timed in the page; the page brings it into sight) and the main heatmap
                  below it redrawn with it, as ablate_s; one model event (issue 51: ≤ the model's time + 0.3 s);
                  branch_over_model_s: branch_s - capture_ms; branch_all_s: every figure of FIGURES redrawn
  server_ms       in-process: the translate handler, the drawing of its Run and the open tab, consumed to the last
                  output serialized to JSON (figures and the trace payload), 1 thread, median of 5 (see
                  app_translation: adapt it when ui/handlers/ changes)
  importance_ms   in-process: the Head importance tab for that translation (every head's ablation, gradient and
                  confidence, and the maps' values the page gets, serialized), 1 thread, median of 5
  capture_ms      decode.py's natural capture of the sentence with the model's own decoding (Translator.translate,
                  1 thread)
  crowdN_last_s   N raw-HTTP clients replay at once the queue events a page sent for one click (the
                  translation and the follow-up events it chains) → when the last one finished
  first_click_all_s  all_s of the first click after the server started
  payload_kb      the trace payload the page's viewer gets for the translation (anatomy/payload.py), as JSON
  ready_s         a fresh page of the plain address: navigation → ready, i.e. Translate (#translate) enabled and
                  nothing on the page that shows an event's progress (BUSY: ui/static/client.js marks a block
                  `.anatomy-pending` while an event shown over it runs; an event with show_progress="hidden" marks
                  none, so it does not count), staying so for READY_QUIET_S
  link_s          a fresh page of a link to the sentence (?text=…&direction=…): navigation → its translation in
                  the Translation box and the main heatmap drawn with it; presenter_link_s: the same link with
                  &presenter=1; tour_link_s: with &tour=3, navigation → the tour's panel (#anatomy-tour) shown.
                  Each a median over --runs fresh pages (the page figures above count from a click, these from
                  the navigation)
  link_over_model_s  link_s - capture_ms: the link's wait beyond the model's own time
  components      how many components the page has (len(config["components"]) of GET <url>/config)

The last line is machine-readable (wrapped here):
first_piece_s=… heatmap_s=… all_s=… view_s=… view_all_s=… ablate_s=… ablate_all_s=… branch_s=… branch_all_s=…
server_ms=… importance_ms=… capture_ms=… crowd16_last_s=… first_click_all_s=… server_requests_per_view=… payload_kb=…
ready_s=… link_s=… presenter_link_s=… tour_link_s=… link_over_model_s=… branch_over_model_s=… components=…
[baseline_…=… for each figure of the baseline, then all_s_vs_baseline=… view_s_vs_baseline=…
crowd16_last_s_vs_baseline=…: this run's figure over the baseline's]
--baseline REV runs the page.py of a git revision (its own, which knows its own page) on the same checkpoints in a
temporary worktree, after this run, in the same sitting.
A figure that cannot be measured (not drawn in time, a control that did not change, a failed visitor, handlers
that moved, a page never ready, a link that never shows its translation or tour) ends the run at once with the
reason and exit status 1: no figure is ever left out or guessed.

    python benchmarks/page.py
    python -m benchmarks.page --runs 7 --crowd 32
    python benchmarks/page.py --checkpoints my-checkpoints --runs 1 --crowd 2
    python benchmarks/page.py --runs 3 --baseline 58d6b15
"""
from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlencode

import httpx

if not __package__:  # run as a file (python benchmarks/page.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, median_ms, sentence, spawn_app, wait_for_app  # noqa: E402

if TYPE_CHECKING:
    from transformer.checkpoint import Decoding
    from ui.handlers import Handlers

# Every element this script touches, by the elem_ids of ui/layout.py: update here when the layout changes.
SELECTORS = {
    "source": "#source-text textarea",
    "translate": "#translate",
    "translation": "#translation textarea",
    # the viewer's view controls (anatomy/viewer/controls.js)
    "layer": "select#layer",
    "step_range": "input#step[type=range]",
    "head": "select#head",  # an option per choice; value: MEAN_HEAD or the head's number
    "heads_off_panel": "#heads-off-panel",  # the accordion: its summary opens it
    "heads_off": "#heads-off",  # the checkboxes, by label
    "ablation": "#ablation",  # the all-heads and ablated translations
    "tour": "#anatomy-tour",  # the guided tour's panel (anatomy/viewer/tour.js)
}
# What a visitor sees as work still under way: a block with an event's progress over it (ui/static/client.js).
BUSY = ".anatomy-pending"
READY_QUIET_S = 1.0  # how long the page must stay ready for the moment it became so to count (chained events)
# The head the benchmark switches off (HeadMask's link form), and its checkbox's label (anatomy/ablation_views.py).
ABLATED_HEAD, ABLATED_LABEL = "cross:1.1", "cross L1 H1"
# The Plotly divs (Gradio's gr.Plot puts a .js-plotly-plot inside its elem_id container).
FIGURES = {
    "heatmap": "#heatmap .js-plotly-plot",
    "step_cross": "#step-cross .js-plotly-plot",
    "step_self": "#step-self .js-plotly-plot",
    "step_topk": "#step-topk .js-plotly-plot",
    "grid": "#grid .js-plotly-plot",  # the open tab (All heads) on a fresh page
}
IN_VIEW = tuple(FIGURES)
PIECES = ("source_tokens", "target_tokens", "output_tokens")  # the Trace fields the figures label
AFFECTED = {  # the figures a view change redraws (ui/wiring.py: the view controls' .input events)
    "layer": ("heatmap", "step_cross", "step_self"),
    "head": ("heatmap", "step_cross", "step_self"),
    "step": ("heatmap", "step_cross", "step_self", "step_topk"),
}
MEAN_HEAD = "mean"  # the head radio's value for the mean of the heads
# What a figure's title says about the view it shows (anatomy/attention_views.py's titles), as regular expressions.
CAPTIONS = {"head": r"layer {layer}, head {head}\b", "mean": r"layer {layer}, mean of", "step": r"Step {step}\b"}
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]

# Installed in every page before the app's scripts: records the click on Translate, the last pointer or key
# press, the first non-empty translation, when the Translation box last changed and to what, since when the page
# has been ready (Translate enabled, nothing BUSY), when the tour's panel first showed, and each afterplot of a
# figure still in the page (Gradio re-renders into a new div and also redraws the detached old one: those do not
# count).
INIT_JS = """
(() => {
  const SEL = __SELECTORS__, FIGS = __FIGURES__, BUSY = __BUSY__;
  const B = window.__bench = {recs: [], click: null, input: null, firstPiece: null, ablated: null, box: '',
                              boxAt: null, readySince: null, tour: null, branched: null};
  const strings = a => Array.isArray(a) && a.length && typeof a[0] === 'string' ? a.slice() : null;
  function record(gd) {
    const t = performance.now();
    const key = gd.isConnected && Object.keys(FIGS).find(k => gd.matches(FIGS[k]));
    if (!key) return;
    const lay = gd.layout || {}, lists = [], trace = (gd.data || [])[0] || {};
    for (const [name, axis] of Object.entries(lay))
      if (/^[xy]axis\\d*$/.test(name) && axis && strings(axis.ticktext))
        lists.push({vals: Array.isArray(axis.tickvals) ? axis.tickvals.slice() : null, text: axis.ticktext.slice()});
    for (const a of [trace.x, trace.y]) if (strings(a)) lists.push({vals: null, text: a.slice()});
    const title = typeof lay.title === 'string' ? lay.title : (lay.title && lay.title.text) || '';
    B.recs.push({t, key, title, lists, rows: (lay.shapes || []).map(s => s.y0 + 0.5)});
  }
  function hook() {
    // the heads-off comparison, when it enters the page (timed here: a script waiting for it from outside runs
    // only once the figures drawn after it in the same task are done)
    const ablation = B.ablated === null && document.querySelector(SEL.ablation);
    if (ablation && ablation.textContent.includes('head off')) B.ablated = performance.now();
    const branch = B.branched === null && document.querySelector('#branch');
    if (branch && !branch.hidden && branch.textContent.includes('Branch')) B.branched = performance.now();
    document.querySelectorAll('.js-plotly-plot').forEach(gd => {
      if (!gd.__benchHooked && gd.on) { gd.__benchHooked = true; gd.on('plotly_afterplot', () => record(gd)); }
    });
  }
  new MutationObserver(hook).observe(document, {childList: true, subtree: true, attributes: true,
                                                attributeFilter: ['class', 'hidden']});
  document.addEventListener('click', e => {
    if (e.target.closest && e.target.closest(SEL.translate)) B.click = performance.now();
  }, true);
  for (const type of ['pointerdown', 'keydown'])
    document.addEventListener(type, () => B.input = performance.now(), true);
  // a choice in a list (the viewer's head and layer): the moment it is chosen (a list takes no pointerdown then)
  document.addEventListener('change', e => {
    if (e.target.matches && e.target.matches('select')) B.input = performance.now();
  }, true);
  (function poll() {
    // a textarea's value is no DOM mutation: look every frame
    const box = document.querySelector(SEL.translation);
    const now = performance.now();
    if (B.click !== null && B.firstPiece === null && box && box.value.trim()) B.firstPiece = now;
    if (box && box.value !== B.box) { B.box = box.value; B.boxAt = now; }
    const button = document.querySelector(SEL.translate);
    if (!button || button.disabled || document.querySelector(BUSY)) B.readySince = null;
    else if (B.readySince === null) B.readySince = now;
    const panel = B.tour === null && document.querySelector(SEL.tour);
    if (panel && panel.getClientRects().length) B.tour = now;
    requestAnimationFrame(poll);
  })();
})();
"""


class MeasurementFailed(Exception):
    """A figure could not be measured; its message says which and why. It ends the run (exit status 1)."""


# --------------------------------------------------------------------------------------------
# Does a drawn figure show this translation, in this view?
# --------------------------------------------------------------------------------------------

def piece(text: str) -> str:
    """A piece as it appears inside a figure label (escaped; labels cut long pieces, so compare a prefix)."""
    return html.escape(text[:12], quote=False)


def covers(recorded: dict, expected: list[str]) -> bool:
    """A drawn axis's labels are these pieces: all of them, or (a long sentence, labels thinned to every k-th by
    anatomy/viewer/fit.js) every k-th from the first, each at its own piece's tick."""
    vals, text = recorded["vals"], recorded["text"]
    if vals is None or len(vals) == len(expected):
        return len(text) == len(expected) and all(piece(e) in r for e, r in zip(expected, text))
    k = vals[1] - vals[0] if len(vals) > 1 else len(expected)
    return (k > 1 and list(vals) == list(range(0, len(expected), k))
            and all(piece(expected[v]) in r for v, r in zip(vals, text)))


def wanted(trace: dict, figure: str, view: dict) -> dict:
    """What `figure` must show for this translation and view: label lists (one recorded list per entry, same
    length, piece by piece), the first label, title patterns and the highlighted heatmap row."""
    src, read, out = trace["source_tokens"], trace["target_tokens"], trace["output_tokens"]
    step, layer, head = view.get("step"), view.get("layer"), view.get("head")
    titles = []
    if layer is not None and figure in ("heatmap", "step_cross", "step_self"):
        titles.append(CAPTIONS["mean" if head == MEAN_HEAD else "head"].format(layer=layer, head=head))
    if step is not None and figure in ("step_cross", "step_self", "step_topk"):
        titles.append(CAPTIONS["step"].format(step=step))
    return {
        "lists": {"heatmap": [src, out], "grid": [src, out], "step_cross": [src],
                  "step_self": [read[:step or len(read)]]}.get(figure, []),
        "first": out[(step or len(out)) - 1] if figure == "step_topk" else None,
        "titles": titles,
        "row": step - 1 if figure == "heatmap" and step is not None else None,
    }


def shows(rec: dict, want: dict) -> bool:
    return (all(any(covers(r, e) for r in rec["lists"]) for e in want["lists"])
            and (want["first"] is None or any(r["text"] and piece(want["first"]) in r["text"][0] for r in rec["lists"]))
            and all(re.search(t, rec["title"]) for t in want["titles"])
            and (want["row"] is None or want["row"] in rec["rows"]))


class Page:
    """One fresh page of the app, with the recorder installed."""

    def __init__(self, browser, url: str, timeout_s: float):
        self.context = browser.new_context(viewport={"width": 1600, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)  # for an element; a translation gets timeout_s
        self.timeout_s = timeout_s
        self.page.add_init_script(INIT_JS.replace("__SELECTORS__", json.dumps(SELECTORS))
                                  .replace("__FIGURES__", json.dumps(FIGURES)).replace("__BUSY__", json.dumps(BUSY)))
        self.recs: list[dict] = []
        self.joins: list[tuple[str, dict]] = []  # (url, body) of every queue event the page sends
        self.page.on("request", self._request)
        self.page.goto(url, wait_until="domcontentloaded")

    def _request(self, request) -> None:
        if request.method == "POST" and "/queue/join" in request.url:
            self.joins.append((request.url, request.post_data_json))

    def value(self, name: str) -> str:
        return self.page.locator(SELECTORS[name]).first.input_value()

    def bench(self, expression: str):
        return self.page.evaluate(f"window.__bench.{expression}")

    def drawn(self, trace: dict, figures, view: dict, since: float, timeout_s: float) -> dict[str, float]:
        """Page time at which each figure was first drawn after `since` showing this translation and view;
        the figures that were not by the timeout are missing."""
        todo = {f: wanted(trace, f, view) for f in figures}
        done: dict[str, float] = {}
        deadline = time.monotonic() + timeout_s
        while True:
            self.recs += self.bench(f"recs.slice({len(self.recs)})")
            for rec in self.recs:
                if rec["key"] in todo and rec["key"] not in done and rec["t"] > since and shows(rec, todo[rec["key"]]):
                    done[rec["key"]] = rec["t"]
            if len(done) == len(todo) or time.monotonic() > deadline:
                return done
            self.page.wait_for_timeout(50)

    def ready(self) -> float:
        """Page time (from the navigation) at which it became ready and then stayed so for READY_QUIET_S."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            since, now = self.page.evaluate("[window.__bench.readySince, performance.now()]")
            if since is not None and now - since >= READY_QUIET_S * 1000:
                return since
            self.page.wait_for_timeout(50)
        raise MeasurementFailed(f"not ready (Translate enabled, no progress shown: {BUSY}) within "
                                f"{self.timeout_s:.0f} s")

    def close(self) -> None:
        self.context.close()


def translate(page: Page, text: str, trace: dict, settle_s: float) -> dict:
    """Type, click Translate, wait for every figure in view; the times from the click, in seconds."""
    page.page.wait_for_selector(f"{FIGURES['heatmap']} .main-svg")  # placeholders drawn: plotly is loaded
    page.page.wait_for_timeout(settle_s * 1000)  # the load events are done
    page.page.locator(SELECTORS["source"]).fill(text)
    page.page.locator(SELECTORS["translate"]).click()
    click = page.bench("click")
    # the default view: the last layer, the mean of the heads, the last step
    view = {"layer": trace["layers"], "head": MEAN_HEAD, "step": len(trace["output_tokens"])}
    done = page.drawn(trace, IN_VIEW, view, click, page.timeout_s)
    missing = sorted(set(IN_VIEW) - set(done))
    if missing:
        raise MeasurementFailed(f"not drawn with this translation within {page.timeout_s:.0f} s: "
                                f"{', '.join(missing)}")
    first = page.bench("firstPiece")
    if first is None:
        raise MeasurementFailed("the Translation box stayed empty although every figure was drawn")
    return {"first_piece_s": (first - click) / 1000, "heatmap_s": (done["heatmap"] - click) / 1000,
            "all_s": (max(done.values()) - click) / 1000}


def current_view(page: Page) -> dict:
    """The view the viewer's controls show (app.js `viewed`)."""
    view = json.loads(page.page.evaluate("window.anatomy.viewed()"))
    return {"layer": int(view["layer"]), "head": str(view["head"]), "step": int(view["step"])}


def click_slider(page: Page, name: str, value: int) -> None:
    """A mouse click on a slider's track where `value` sits (the browser maps the point to a value)."""
    slider = page.page.locator(SELECTORS[name])
    slider.scroll_into_view_if_needed()  # a mouse click lands only on what is in the viewport
    box = slider.bounding_box()
    lo, hi = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    thumb = 16  # px: the range thumb's width; its centre travels from thumb/2 to width - thumb/2
    x = box["x"] + thumb / 2 + (value - lo) / max(hi - lo, 1) * (box["width"] - thumb)
    page.page.mouse.click(x, box["y"] + box["height"] / 2)


def view_changes(page: Page, trace: dict, timeout_s: float) -> dict[str, tuple[float, float]]:
    """Head, layer and step changed by mouse (a choice in the head's and layer's lists, a click on the step's
    track), then by keyboard (the page's keys: . head, [ / ] layer; an arrow key on the focused step slider);
    seconds until the affected figures in the window showed the new view, and until all of them did, by change."""
    times = {}
    view = current_view(page)
    L, T = view["layer"], view["step"]
    head_values = page.page.eval_on_selector_all(f"{SELECTORS['head']} option", "os => os.map(o => o.value)")
    heads = [h for h in head_values if h != MEAN_HEAD] or head_values

    def choose(name: str, value: str) -> None:
        select = page.page.locator(SELECTORS[name])
        select.scroll_into_view_if_needed()
        select.select_option(value)

    def head_by(device: str) -> Callable[[], None]:
        target = next(h for h in heads if h != current_view(page)["head"])
        if device == "mouse":
            return lambda: choose("head", target)
        # the page's key moves to the next head: from the mean, the first; from the last, back one
        key = "," if current_view(page)["head"] == heads[-1] else "."
        return lambda: (page.page.evaluate("document.activeElement?.blur()"), page.page.keyboard.press(key))

    def layer_by(device: str, target: int) -> Callable[[], None]:
        if device == "mouse":
            return lambda: choose("layer", str(target))
        key = "[" if target < current_view(page)["layer"] else "]"
        return lambda: (page.page.evaluate("document.activeElement?.blur()"), page.page.keyboard.press(key))

    def step_by(device: str, target: int) -> Callable[[], None]:
        if device == "mouse":
            return lambda: click_slider(page, "step_range", target)
        key = "ArrowLeft" if target < current_view(page)["step"] else "ArrowRight"
        return lambda: (page.page.locator(SELECTORS["step_range"]).focus(), page.page.keyboard.press(key))

    for device in ("mouse", "keyboard"):
        layer_now, step_now = current_view(page)["layer"], current_view(page)["step"]
        changes = [("head", head_by(device)),
                   ("layer", layer_by(device, 1 if layer_now != 1 else L)),
                   ("step", step_by(device, max(1, T // 2) if step_now == T else T))]
        for what, act in changes:
            before = current_view(page)
            act()
            since = page.bench("input")
            page.page.wait_for_timeout(50)  # the control has taken the new value
            view = current_view(page)
            if view == before:
                raise MeasurementFailed(f"{what} by {device}: the control did not change")
            seen = in_window(page, AFFECTED[what])
            done = page.drawn(trace, AFFECTED[what], view, since, timeout_s)
            missing = sorted(set(AFFECTED[what]) - set(done))
            if missing:
                raise MeasurementFailed(f"{what} by {device}: {', '.join(missing)} not redrawn within "
                                        f"{timeout_s:.0f} s (--view-timeout)")
            if not seen:
                raise MeasurementFailed(f"{what} by {device}: none of {', '.join(AFFECTED[what])} is in the window")
            times[f"{what}/{device}"] = ((max(done[f] for f in seen) - since) / 1000,
                                         (max(done.values()) - since) / 1000)
    return times


def in_window(page: Page, figures) -> list[str]:
    """The figures that show (some of) themselves in the window now."""
    return page.page.evaluate("""figs => Object.entries(figs).filter(([, sel]) => {
        const el = document.querySelector(sel), r = el && el.getBoundingClientRect();
        return r && r.bottom > 0 && r.top < window.innerHeight;
      }).map(([name]) => name)""", {f: FIGURES[f] for f in figures})


def ablate(page: Page, ablated: dict, timeout_s: float) -> dict[str, float]:
    """Switch ABLATED_HEAD off by its checkbox: seconds until the ablated translation is shown beside the
    all-heads one and the main heatmap shows it, and until every figure in view does."""
    panel = page.page.locator(SELECTORS["heads_off_panel"])
    panel.scroll_into_view_if_needed()
    panel.locator("summary").first.click()  # open the accordion
    box = page.page.locator(SELECTORS["heads_off"]).get_by_label(ABLATED_LABEL, exact=True)
    box.scroll_into_view_if_needed()
    page.page.wait_for_timeout(300)  # the accordion has opened
    # a new translation opens at its last step, in the same layer and head
    view = dict(current_view(page), step=len(ablated["output_tokens"]))
    box.click()
    since = page.bench("input")
    # the comparison is empty (and hidden) while every head is on
    page.page.wait_for_function("window.__bench.ablated !== null", timeout=timeout_s * 1000)
    shown = page.bench("ablated")
    done = page.drawn(ablated, IN_VIEW, view, since, timeout_s)
    missing = sorted(set(IN_VIEW) - set(done))
    if missing:
        raise MeasurementFailed(f"{ABLATED_HEAD} off: {', '.join(missing)} not redrawn with the ablated translation "
                                f"within {timeout_s:.0f} s (--view-timeout)")
    return {"ablate_s": (max(shown, done["heatmap"]) - since) / 1000,
            "ablate_all_s": (max(shown, *done.values()) - since) / 1000}


def branch(page: Page, timeout_s: float) -> dict[str, float]:
    """At step 2, a click on its second most likely next piece: seconds until the branch is shown beside the model's
    own and the main heatmap is redrawn after it; and until every figure is."""
    page.page.eval_on_selector(SELECTORS["step_range"], "s => { s.value = 2; s.dispatchEvent(new Event('input')); }")
    page.page.wait_for_function("document.querySelector('#step-topk .anatomy-plot')?.layout?.title?.text"
                                "?.startsWith('Step 2:')", timeout=timeout_s * 1000)
    page.page.locator("#step-topk").scroll_into_view_if_needed()
    page.page.wait_for_timeout(300)  # scrolled, and the figures below drawn
    bar = page.page.locator("#step-topk .point path").nth(1).bounding_box()
    page.page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    since = page.bench("input")
    page.page.wait_for_function("window.__bench.branched !== null", timeout=timeout_s * 1000)
    shown = page.bench("branched")
    deadline = time.monotonic() + timeout_s
    while True:
        page.recs += page.bench(f"recs.slice({len(page.recs)})")
        drawn = {}
        for r in page.recs:  # each figure's first drawing after the branch is shown
            if r["t"] > shown:
                drawn.setdefault(r["key"], r["t"])
        if all(f in drawn for f in IN_VIEW):
            if not in_window(page, ["heatmap"]):
                raise MeasurementFailed("the branch: the page did not bring it and the main heatmap into sight")
            return {"branch_s": (max(shown, drawn["heatmap"]) - since) / 1000,
                    "branch_all_s": (max(shown, *drawn.values()) - since) / 1000}
        if time.monotonic() > deadline:
            raise MeasurementFailed(f"the branch: {', '.join(f for f in IN_VIEW if f not in drawn)} not redrawn "
                                    f"within {timeout_s:.0f} s (--view-timeout)")
        page.page.wait_for_timeout(50)


def arrival(page: Page, trace: dict, text: str) -> float:
    """Seconds from the navigation until the page shows a link's translation: `text` in the Translation box and
    the main heatmap drawn with it in the default view."""
    page.page.wait_for_function("t => window.__bench.box.trim() === t", arg=text, timeout=page.timeout_s * 1000)
    shown = page.bench("boxAt")
    view = {"layer": trace["layers"], "head": MEAN_HEAD, "step": len(trace["output_tokens"])}  # see translate()
    done = page.drawn(trace, ["heatmap"], view, 0, page.timeout_s)
    if "heatmap" not in done:
        raise MeasurementFailed(f"the heatmap was not drawn with the link's translation within {page.timeout_s:.0f} s")
    return max(shown, done["heatmap"]) / 1000


def tour_shown(page: Page) -> float:
    """Seconds from the navigation until the tour's panel shows."""
    page.page.wait_for_function("window.__bench.tour !== null", timeout=page.timeout_s * 1000)
    return page.bench("tour") / 1000


def loads(args: argparse.Namespace, url: str, key: str, text: str, trace: dict,
          translation: str) -> dict[str, float]:
    """Medians over --runs fresh pages of each way in: the plain address until the page is ready (ready_s), and the
    links to the sentence's translation: plain (link_s), in presenter mode (presenter_link_s) and at the tour's
    third stop until its panel shows (tour_link_s)."""
    from playwright.sync_api import sync_playwright

    link = f"{url}?{urlencode({'text': text, 'direction': key})}"
    ways: dict[str, tuple[str, Callable[[Page], float]]] = {
        "ready_s": (url, lambda page: page.ready() / 1000),
        "link_s": (link, lambda page: arrival(page, trace, translation)),
        "presenter_link_s": (link + "&presenter=1", lambda page: arrival(page, trace, translation)),
        "tour_link_s": (link + "&tour=3", tour_shown),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=BROWSER_ARGS)
        for run in range(1, args.runs + 1):
            for name, (address, until) in ways.items():
                page = Page(browser, address, args.timeout)
                try:
                    times[name].append(until(page))
                except MeasurementFailed as err:
                    raise MeasurementFailed(f"{name}, page {run}: {err}") from err
                except Exception as err:  # e.g. a translation or tour panel that never came: no figure
                    raise MeasurementFailed(f"{name}, page {run}: {type(err).__name__}: {err}") from err
                finally:
                    page.close()
            print(f"loads {run}: " + ", ".join(f"{name} {t[-1]:.2f}" for name, t in times.items()) + " s")
        browser.close()
    return {name: statistics.median(t) for name, t in times.items()}


def components(url: str) -> int:
    """How many components the app's page has: len(config["components"]) of GET <url>/config."""
    try:
        return len(httpx.get(url.rstrip("/") + "/config", timeout=30).raise_for_status().json()["components"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:
        raise MeasurementFailed(f"components: {url}config gave no components ({type(err).__name__}: {err})") from err


# --------------------------------------------------------------------------------------------
# In-process measurements
# --------------------------------------------------------------------------------------------

def in_process_app(checkpoints: Path) -> Handlers:
    """The app's handlers on the checkpoints the server gets, built in this process as app.py builds them."""
    os.environ["ANATOMY_CHECKPOINT_DIR"] = str(checkpoints)  # what spawn_app gives the server
    with contextlib.redirect_stdout(sys.stderr):  # what the app prints while it builds is not a figure
        import ui
        return ui.create_app().anatomy


def app_translation(h: Handlers, key: str, own: Decoding) -> Callable[[str], int]:
    """The one place that calls the app's handlers (ui/handlers/): adapt it when they change.

    Returns a function that runs, as the page's Translate click does on the server, the translate handler to its
    last output (the Run, what the page shows of it and the open tab's data: All heads on a fresh page), and
    serializes every figure and the trace payload to JSON (returns the bytes, so nothing is optimised away)."""
    from gradio.components.plot import PlotData

    from anatomy.inputs import View
    from anatomy.run import StopSignal
    from ui.values import Inputs, PageSettings

    layer = h.registry.get(key).config.n_decoder_layers
    view = View.of("cross", layer, MEAN_HEAD, False)  # the default view: see translate()

    def run(text: str) -> int:
        settings = PageSettings(key=key, text=text, beam=own.beam_size, max_new=0, device="cpu", top_k=5,
                                length_penalty=own.length_penalty, slow=0.0)
        asked = Inputs(settings, view=view, signal=StopSignal())  # All heads: a fresh page's tab
        *_, made = h.translate_page(asked)  # the Run, what the page shows of it and the open tab's data
        outputs = list(made.values())
        payload = made.get(h.page.trace_data)
        return (sum(len(v.model_dump_json()) for v in outputs if isinstance(v, PlotData))
                + (len(json.dumps(payload)) if payload is not None else 0))

    return run


def server_ms(h: Handlers, key: str, text: str, own: Decoding, repeats: int = 5) -> float:
    """Median ms of app_translation's work on 1 thread, after a warm-up."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = app_translation(h, key, own)
        return median_ms(lambda: run(text), repeats)
    except Exception as err:  # a handler's changed signature or output: say where to adapt
        raise MeasurementFailed(f"server_ms: the handlers failed ({type(err).__name__}: {err}); "
                                "adapt app_translation") from err
    finally:
        torch.set_num_threads(threads)


def importance_ms(h: Handlers, key: str, text: str, own: Decoding, repeats: int = 5) -> float:
    """Median ms of the Head importance tab for the translation, in-process on 1 thread: every head's ablation,
    gradient and confidence, judged when the tab opens, and what the page gets of them serialized."""
    import torch
    from gradio.components.plot import PlotData

    from anatomy.inputs import View
    from ui.values import Inputs, PageSettings, Tab

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        settings = PageSettings(key=key, text=text, beam=own.beam_size, length_penalty=own.length_penalty)
        *_, made = h.translate_page(Inputs(settings))
        run = made[h.page.run]

        def opened() -> int:
            """The tab's two events: judge (in the model's slot), then tab_view sending what it judged (the maps'
            values for the page's viewer; for a revision before it, the figures)."""
            judged = h.judge(Inputs(settings, run=run))
            shown = h.tab_view(Inputs(settings, run=run, judged=judged, tab=Tab.IMPORTANCE, view=View()))
            data = shown.get(getattr(h.page, "importance_data", None)) or {}
            sent = sum(len(v.model_dump_json()) for v in shown.values() if isinstance(v, PlotData))
            sent += len(json.dumps(data["maps"])) if data.get("maps") else 0
            if not sent:
                raise MeasurementFailed("importance_ms: the Head importance tab sent no maps")
            return sent

        return median_ms(opened, repeats)
    except Exception as err:
        raise MeasurementFailed(f"importance_ms: the handlers failed ({type(err).__name__}: {err}); "
                                "adapt importance_ms") from err
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------
# Many visitors at once, at the protocol level
# --------------------------------------------------------------------------------------------

def replay(join_url: str, events: list[dict], start: threading.Barrier, timeout_s: float) -> float:
    """One visitor: the page's queue events in order, each sent when the one before has finished (as the
    page chains them), in a session of its own; perf_counter() when the last finished."""
    session = uuid.uuid4().hex[:11]
    data_url = join_url.split("/queue/join")[0] + "/queue/data"
    with httpx.Client(timeout=timeout_s, headers={"x-gradio-user": "app"}) as http:
        start.wait()
        for event in events:
            answer = http.post(join_url, json={**event, "session_hash": session})
            answer.raise_for_status()
            event_id = answer.json()["event_id"]
            with http.stream("GET", data_url, params={"session_hash": session},
                             headers={"accept": "text/event-stream"}) as stream:
                for line in stream.iter_lines():
                    message = json.loads(line[5:]) if line.startswith("data:") else {}
                    if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                        if not message.get("success"):
                            raise RuntimeError(f"event {event.get('fn_index')} failed: {message.get('output')}")
                        break
                else:
                    raise RuntimeError(f"event {event.get('fn_index')}: the stream closed before it finished")
    return time.perf_counter()


def crowd(join_url: str, events: list[dict], clients: int, timeout_s: float) -> float:
    """Seconds from a common start until the last of `clients` visitors replaying `events` finished."""
    start, results = threading.Barrier(clients + 1, timeout=timeout_s), []

    def visitor():
        try:
            results.append(replay(join_url, events, start, timeout_s))
        except Exception as err:  # counted below: one failure fails the figure
            results.append(err)

    threads = [threading.Thread(target=visitor) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:  # a visitor failed before the start: its error is in results
        pass
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise MeasurementFailed(f"crowd: {len(failed)} of {clients} visitors failed, e.g. "
                                f"{type(failed[0]).__name__}: {failed[0]}")
    return max(results) - t0


# --------------------------------------------------------------------------------------------

def check_served(url: str, text: str, key: str, local: dict) -> None:
    """The served translation (the /translate API) has the in-process one's pieces and layer count: the figures
    are checked against those pieces, and capture_ms and server_ms time that model."""
    from gradio_client import Client

    try:
        _, notice, trace = Client(url, verbose=False).predict(text=text, direction=key, api_name="/translate")
    except Exception as err:
        raise MeasurementFailed(f"/translate failed ({type(err).__name__}: {err})") from err
    if trace is None:
        raise MeasurementFailed(f"/translate gave no trace: {notice}")
    served = {f: trace[f] for f in PIECES} | {"layers": len(trace["cross_attn"])}
    if served != local:
        raise MeasurementFailed(f"the served {key} translation differs from the in-process one: the server "
                                "runs another model than the one timed here")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints",
                   help="folder of checkpoint folders to serve (ANATOMY_CHECKPOINT_DIR; default: %(default)s)")
    p.add_argument("--runs", type=int, default=5, help="warm clicks, each on a fresh page (default 5)")
    p.add_argument("--crowd", type=int, default=16, help="visitors at once for crowdN_last_s (default 16)")
    p.add_argument("--view-timeout", type=float, default=5.0,
                   help="seconds a view change may take before the run fails (default 5)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for a page or a translation")
    p.add_argument("--settle", type=float, default=1.0, help="seconds after the page's placeholders before typing")
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the browser (Debian's chromium)")
    p.add_argument("--baseline", metavar="REV",
                   help="also run the page.py of this git revision (e.g. the code before a change), in the same "
                        "sitting: its figures as baseline_…, and all_s, view_s and the crowd over its own")
    args = p.parse_args()
    if args.runs < 1 or args.crowd < 1:
        p.error("--runs and --crowd must be at least 1")
    try:
        line = measure(args)
        if args.baseline:
            line += compared(line, baseline(args.baseline, args), args.crowd)
        print(line)
    except MeasurementFailed as err:
        raise SystemExit(f"page.py: {err}") from err


def figures_of(line: str) -> dict[str, str]:
    """A last line's figures by name."""
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def baseline(rev: str, args: argparse.Namespace) -> dict[str, str]:
    """The figures of the code at git revision `rev`, by that revision's own page.py (its page has its own
    controls) in a temporary worktree, with this run's settings."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            done = subprocess.run([sys.executable, "benchmarks/page.py", "--checkpoints",
                                   str(args.checkpoints.resolve()), "--runs", str(args.runs), "--crowd",
                                   str(args.crowd), "--view-timeout", str(args.view_timeout), "--timeout",
                                   str(args.timeout), "--settle", str(args.settle), "--chromium", args.chromium],
                                  cwd=tree, capture_output=True, text=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise MeasurementFailed(f"the page.py of {rev} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    print(f"the code at {rev}: {lines[-1]}")
    return figures_of(lines[-1])


def compared(line: str, old: dict[str, str], crowd: int) -> str:
    """The baseline's figures and this run's over them, for what a change must not make worse."""
    new = figures_of(line)
    ratios = [f" {name}_vs_baseline={float(new[name]) / float(old[name]):.2f}"
              for name in ("all_s", "view_s", f"crowd{crowd}_last_s") if name in old and float(old[name]) > 0]
    return "".join(f" baseline_{name}={value}" for name, value in old.items()) + "".join(ratios)


def measure(args: argparse.Namespace) -> str:
    """Every figure, in the order the docstring lists them; the machine-readable last line."""
    from benchmarks.decode import natural_capture_ms

    with tempfile.NamedTemporaryFile("w", prefix="anatomy-page-", suffix=".log", delete=False) as log:
        proc, url = spawn_app(args.checkpoints, log)  # it boots while this process builds its own copy
        try:
            h = in_process_app(args.checkpoints)
            entry = h.registry.get(None)  # what a page opens with, here and on the server
            key, own, text = entry.key, entry.decoding, sentence(entry.source_lang)
            translator = entry.cpu
            local = translator.translate(text, own)
            expected = {f: getattr(local, f) for f in PIECES} | {"layers": local.cross_attn.shape[0]}
            off = translator.translate(text, own, heads_off=ABLATED_HEAD)
            ablated = {f: getattr(off, f) for f in PIECES} | {"layers": off.cross_attn.shape[0]}
            print(f"sentence ({key}, {len(text.split())} words, {len(local.source_tokens)} → "
                  f"{len(local.output_tokens)} pieces): {text}")
            wait_for_app(proc, url, log)
            print(f"app: {url} (log {log.name})")
            capture = natural_capture_ms(translator, text, beam_size=own.beam_size,
                                         length_penalty=own.length_penalty)
            server = server_ms(h, key, text, own)
            importance = importance_ms(h, key, text, own)
            print(f"in-process, 1 thread: capture {capture:.1f} ms, translate handler + figures {server:.1f} ms, "
                  f"head importance tab {importance:.1f} ms")
            first, warm, views, joins, per_view = browse(args, url, key, text, expected, ablated)
            arrivals = loads(args, url, key, text, expected, local.text)
            parts = components(url)
            payload = payload_kb(h, key, text, own)
            events = translation_events(joins, text)
            if not events:
                raise MeasurementFailed("crowd: the page sent no Translate event to replay")
            print(f"crowd: {args.crowd} visitors replay the events {[e['fn_index'] for e in events]} at once")
            crowd_s = crowd(joins[0][0], events, args.crowd, args.timeout)
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    figures = {name: statistics.median([w[name] for w in warm])
               for name in ("first_piece_s", "heatmap_s", "all_s", "ablate_s", "ablate_all_s", "branch_s",
                            "branch_all_s")}
    return (f"first_piece_s={figures['first_piece_s']:.2f} heatmap_s={figures['heatmap_s']:.2f} "
            f"all_s={figures['all_s']:.2f} view_s={statistics.median(v for v, _ in views):.2f} "
            f"view_all_s={statistics.median(a for _, a in views):.2f} "
            f"ablate_s={figures['ablate_s']:.2f} ablate_all_s={figures['ablate_all_s']:.2f} "
            f"branch_s={figures['branch_s']:.2f} branch_all_s={figures['branch_all_s']:.2f} server_ms={server:.1f} "
            f"importance_ms={importance:.1f} "
            f"capture_ms={capture:.1f} crowd{args.crowd}_last_s={crowd_s:.2f} first_click_all_s={first['all_s']:.2f} "
            f"server_requests_per_view={statistics.mean(per_view):.2f} payload_kb={payload:.1f} "
            + "".join(f"{name}={value:.2f} " for name, value in arrivals.items())
            + f"link_over_model_s={arrivals['link_s'] - capture / 1000:.2f} "
            f"branch_over_model_s={figures['branch_s'] - capture / 1000:.2f} components={parts}")


def browse(args: argparse.Namespace, url: str, key: str, text: str, expected: dict,
           ablated: dict) -> tuple[dict, list[dict], list[tuple[float, float]], list, list[float]]:
    """The first click, then --runs warm clicks with view changes and a head switched off, each on a fresh page:
    the first click's times, the warm clicks' times (with the head's), every view change's seconds, the queue
    events of the last warm page, and each warm page's queue events per view change."""
    from playwright.sync_api import sync_playwright

    first, warm, views, joins, per_view = {}, [], [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=BROWSER_ARGS)
        for run in range(args.runs + 1):
            page = Page(browser, f"{url}?direction={key}", args.timeout)
            try:
                times = translate(page, text, expected, args.settle)
                if run == 0:
                    first = times
                    check_served(url, text, key, expected)
                    print("first: " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()) + " s")
                    continue
                warm.append(times)
                page.page.wait_for_timeout(1000)  # the events the click chains have all been sent
                joins = list(page.joins)
                changed = view_changes(page, expected, args.view_timeout)
                page.page.wait_for_timeout(1000)  # any event a change sent has been sent
                per_view.append((len(page.joins) - len(joins)) / len(changed))
                views += changed.values()
                times.update(ablate(page, ablated, args.view_timeout))
                times.update(branch(page, args.view_timeout))
                print(f"warm {run}: " + ", ".join([f"{k} {v:.2f}" for k, v in times.items()]
                                                  + [f"{k} {v:.2f} (all {a:.2f})" for k, (v, a) in changed.items()])
                      + " s")
            except MeasurementFailed as err:
                raise MeasurementFailed(f"{'first click' if run == 0 else f'warm click {run}'}: {err}") from err
            except Exception as err:  # e.g. an element that is gone (see SELECTORS): the page cannot be measured
                raise MeasurementFailed(f"{'first click' if run == 0 else f'warm click {run}'}: "
                                        f"{type(err).__name__}: {err}") from err
            finally:
                page.close()
        browser.close()
    return first, warm, views, joins, per_view


def payload_kb(h: Handlers, key: str, text: str, own: Decoding) -> float:
    """KB of the trace payload that the page's viewer gets for the translation (0 for a revision without one)."""
    from anatomy.run import StopSignal
    from ui.values import Inputs, PageSettings

    if not hasattr(h.page, "trace_data"):
        return 0.0
    settings = PageSettings(key=key, text=text, beam=own.beam_size, length_penalty=own.length_penalty)
    *_, made = h.translate_page(Inputs(settings))
    shown = h.show(Inputs(settings, run=made[h.page.run], signal=StopSignal()))
    return len(json.dumps(shown[h.page.trace_data], ensure_ascii=False).encode("utf-8")) / 1000


def translation_events(joins: list[tuple[str, dict]], text: str) -> list[dict]:
    """The queue events a page sent from its Translate click on (the click's carries the text)."""
    bodies = [body for _, body in joins]
    starts = [i for i, body in enumerate(bodies) if text in (body.get("data") or [])]
    return bodies[starts[0]:] if starts else []


if __name__ == "__main__":
    main()
