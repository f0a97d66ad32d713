"""The app's logic without Gradio: models (registry), what visitors send (inputs), figures of a trace and a model
(views, and one *_views module per family), and the only calls into the Translator (engine). Importing it loads no
model and starts no thread.

`from anatomy import show` draws a translation in a notebook (anatomy.notebook, imported on first use)."""

__all__ = ["show"]


def __getattr__(name: str):
    # `show` pulls in torch and the models' code: only when asked for, so that `import anatomy` stays free.
    if name == "show":
        from .notebook import show
        return show
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
