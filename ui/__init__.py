"""The Gradio app: layout (the page), values (what an event reads, typed), handlers (what events do), wiring (which
event runs which handler), server (what the app adds to Gradio's server).

create_app() builds it (loading the models); launch_options() are the theme, CSS and JavaScript that
`demo.launch(...)` takes; start() does what launching needs besides (malloc's arenas, the trace pruner, torch's
threads, the animations' worker processes).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import gradio as gr
import torch

from anatomy import bundle, offline, views
from anatomy.registry import ModelRegistry
from anatomy.settings import number

from . import server, traces
from .figures import PLOT_CONFIG
from .handlers import Handlers
from .layout import build_page
from .wiring import wire

STATIC = Path(__file__).resolve().parent / "static"
# Requests that may wait for a free slot; the next visitor is told at once that the app is busy (Gradio's
# "This application is currently busy. Please try again."; gradio_client raises QueueError "Queue is full").
DEFAULT_QUEUE_SIZE = 64


def queue_size() -> int:
    return number("ANATOMY_QUEUE_SIZE", DEFAULT_QUEUE_SIZE, 1)


def create_app(sources: list[str] | None = None) -> gr.Blocks:
    """The app on these checkpoint folders / hf:// ids (default: registry.default_sources()); the hf:// ones load
    in the background. The demo's `anatomy` attribute is its Handlers (the registry and the page's components),
    for tests and scripts."""
    registry = ModelRegistry.discover(sources, hub_in_background=True)
    with server.Blocks(title="Transformer Anatomy") as demo:
        page = build_page(registry)
        handlers = Handlers(registry, page)
        wire(page, handlers, demo)
    # Queue positions every 2 s, not Gradio's "auto": a message to every waiting request each time one starts, up
    # to 64 JSON messages per translation, took the event loop (and the GIL) from the model run under load.
    demo.queue(default_concurrency_limit=2, max_size=queue_size(), status_update_rate=2)
    demo.anatomy = handlers
    return demo


def _light_only(theme: gr.themes.Base) -> gr.themes.Base:
    """The page always uses the light palette: the figures are drawn for it (white paper, dark text)."""
    for name in [n for n in vars(theme) if n.endswith("_dark")]:
        delattr(theme, name)
    return theme


def page_script() -> str:
    """The page's JavaScript: the viewer's page (anatomy/viewer/page.js and what it imports) as one script, its CSS
    (bundle.style: as the offline file has it) as a style element of the page, then ui/static/app.js given the page
    maker and the page's look. Plotly.js comes from the plotly package (launch_options allows that one file)."""
    options = {"look": offline.look(), "config": PLOT_CONFIG, "plotly": plotly_src(), "confidence": views.CONFIDENCE}
    # Gradio scopes the CSS of css_paths to its container, where an @media rule never matches (the tour's panel
    # would not move to the bottom of a phone's screen) and a body class's rule no longer outranks its own
    css = bundle.style()
    return ("() => {\n" + bundle.script("page") +
            "document.head.appendChild(Object.assign(document.createElement('style'), "
            f"{{id: 'anatomy-tour-css', textContent: {json.dumps(css)}}}));\n"
            f"({(STATIC / 'app.js').read_text(encoding='utf-8')})(viewer_page, {json.dumps(options)});\n}}")


def plotly_src() -> str:
    """Plotly.js's address on the page: the plotly package's own file, the one file the app serves besides Gradio's."""
    return f"gradio_api/file={offline.PLOTLY_JS}"


def plotly_early() -> str:
    """The page's head: a link with text opens on its figures, so its Plotly.js (1.5 MB, ~0.8 s of evaluating here)
    loads with the page and is parsed in the gaps while Gradio's own scripts arrive, not after them (host.js waits
    for this script rather than adding another). Any other page loads it once idle (app.js `opened`)."""
    return ("<script>if (new URLSearchParams(location.search).get('text')) document.head.appendChild("
            f"Object.assign(document.createElement('script'), {{src: {json.dumps(plotly_src())}, async: true}}));"
            "</script>")


def launch_options() -> dict:
    """What demo.launch(...) takes besides the server settings: theme, CSS, JavaScript, footer, the one file it
    serves besides its own (Plotly.js), the server's middleware and what it runs beside, Gradio's monitoring (see
    server.py)."""
    return dict(theme=_light_only(gr.themes.Soft(primary_hue="blue", secondary_hue="orange", neutral_hue="slate")),
                css_paths=[STATIC / "app.css"], js=page_script(), head=plotly_early(),
                allowed_paths=[str(offline.PLOTLY_JS)],
                footer_links=["api", "settings"],
                app_kwargs={"middleware": server.MIDDLEWARE, "lifespan": server.lifespan},
                enable_monitoring=server.monitoring())


def set_threads() -> None:
    """Decoding one sentence with a small model is a chain of tiny matmuls: one intra-op thread is as fast
    as several on an idle CPU and far faster on a busy one (no spinning threads fighting for cores).
    $ANATOMY_THREADS overrides it."""
    try:
        torch.set_num_threads(max(1, int(os.environ.get("ANATOMY_THREADS") or 1)))
    except ValueError:
        torch.set_num_threads(1)


def start(demo: gr.Blocks) -> None:
    """Besides launching `demo` (create_app's): malloc's arenas, the trace-file pruner, torch's thread count, and its
    animations drawn in worker processes."""
    server.bound_malloc()
    traces.start_pruning()
    set_threads()
    demo.anatomy.exporter.start()
