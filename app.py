"""Transformer Anatomy: a web app that shows the paper's Transformer translating, from inside.

`python app.py` serves it (on $GRADIO_SERVER_NAME:$GRADIO_SERVER_PORT, default 127.0.0.1:7860).

Models: every checkpoint folder under checkpoints/ (or $ANATOMY_CHECKPOINT_DIR), the Hub models this README's
front matter preloads on a Space (`preload_from_hub`, read from the Hugging Face cache), plus the Hub checkpoints in
$ANATOMY_HUB_MODELS (comma-separated hf://owner/name); see anatomy/registry.py for their keys and labels. A folder
that cannot be loaded is skipped with a notice (on the page and in the log); with no usable checkpoint at all, a
random-init model of the same shape keeps the app usable, labelled "untrained". $ANATOMY_THREADS sets torch's CPU
threads (default 1), $ANATOMY_QUEUE_SIZE the requests that may wait (64), $ANATOMY_TRACE_RETENTION how long trace
downloads are kept (900 s), $ANATOMY_FILES_MB how much they may hold in all (1024 MB), $ANATOMY_SESSION_GRACE how long a
closed page's session is kept (60 s), $ANATOMY_MONITORING=1 turns Gradio's /monitoring on (off); $ANATOMY_MODEL_SLICE
and $ANATOMY_MODEL_EVENTS share the model between visitors, $ANATOMY_EXPORTS, $ANATOMY_PAGE_EXPORTS and
$ANATOMY_EXPORT_MEGAPIXELS bound the exports (docs/limits.md).

The app: anatomy/ (models, inputs, figures of a trace; no Gradio), ui/ (layout, handlers, wiring), viz/ (figures).
"""
from __future__ import annotations

import gradio as gr


def create_app(sources: list[str] | None = None) -> gr.Blocks:
    """The app (models loaded) without serving it."""
    import ui  # here, not at the top: `import app` stays as cheap as importing gradio

    return ui.create_app(sources)


def main() -> None:
    import ui

    demo = ui.create_app()
    ui.start(demo)
    demo.launch(**ui.launch_options())


if __name__ == "__main__":
    main()
