"""The Gradio app: layout (the page), values (what an event reads, typed), handlers (what events do), wiring (which
event runs which handler), server (what the app adds to Gradio's server).

create_app() builds it (loading the models); page_html() is its page (ui/document.py, served at the root in place
of Gradio's); launch_options() are what `demo.launch(...)` takes; start() does what launching needs besides
(malloc's arenas, the trace pruner, torch's threads, the animations' worker processes).
"""
from __future__ import annotations

import json
import os

import gradio as gr
import torch

from anatomy import offline, views
from anatomy.registry import ModelRegistry
from anatomy.settings import number

from . import document, server, traces
from .figures import PLOT_CONFIG
from .handlers import Handlers
from .layout import build_page
from .wiring import wire

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


def page_options() -> dict:
    """What app.js hands the viewer's page: its look, Plotly's config and Plotly.js's address, the pieces' colours."""
    return {"look": offline.look(), "config": PLOT_CONFIG, "plotly": plotly_src(), "confidence": views.CONFIDENCE}


def plotly_src() -> str:
    """Plotly.js's address on the page: the plotly package's own file, the one file the app serves besides Gradio's."""
    return f"gradio_api/file={offline.PLOTLY_JS}"


def plotly_early() -> str:
    """The page's head: a link with text opens on its figures, so its Plotly.js (1.5 MB, ~0.5 s of evaluating here)
    is fetched with the page, and run when the link's answer is shown (host.js adds the script then): run at once,
    its evaluation held the answer's text and the tour's panel back. Any other page loads it once idle (app.js
    `opened`)."""
    link = f"{{rel: 'preload', as: 'script', href: {json.dumps(plotly_src())}}}"
    return ("<script>if (new URLSearchParams(location.search).get('text')) document.head.appendChild("
            f"Object.assign(document.createElement('link'), {link}));</script>")


def page_html(demo: gr.Blocks) -> str:
    """The app's page (ui/document.py): the demo's blocks drawn as the page's own HTML, served at its root."""
    return document.document(demo.config, demo.title, page_options(), head=plotly_early())


def launch_options() -> dict:
    """What demo.launch(...) takes besides the server settings: the one file it serves besides its own (Plotly.js),
    the server's middleware (the page at its root among them) and what it runs beside, Gradio's monitoring (see
    server.py). Gradio's own page is never served, so it takes no theme, CSS or JavaScript."""
    return dict(allowed_paths=[str(offline.PLOTLY_JS)],
                app_kwargs={"middleware": server.middleware(page_html), "lifespan": server.lifespan},
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
