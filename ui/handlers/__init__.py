"""What each event does. Handlers return dicts keyed by component (a component left out is left as it is).

Three kinds of event (see wiring.py for the rule): the model's (their passes one at a time across visitors, in the
model's slot: translate, inspect, a beam candidate, a link, the untrained twin, head importance, the softmax walk, the
API), sending a Run to the page
(show: its trace payload, which the page's viewer draws, outside the model's slot; switching heads off sends its
Run in the same event), and slow-motion replays (replay, a bounded group of their own). A view change is drawn in
the browser and reaches no handler. Direction, text and settings of what is on screen come from the Run, never from
the controls, which may have changed since.
"""
from __future__ import annotations

from anatomy.exports import Exporter, ExportLimits
from anatomy.registry import ModelRegistry

from ..layout import Page
from .asks import Asking
from .files import Files
from .model import Translating
from .shown import Showing


class Handlers(Translating, Asking, Showing, Files):
    """Every handler of the page, by concern (each part in a module of its own). Each handler that reads the page takes
    one `values`: Gradio's dict keyed by component (its inputs are a set of components, see wiring.py), or Inputs from
    tests and scripts; Inputs.of types it once, on entry."""

    def __init__(self, registry: ModelRegistry, page: Page):
        self.registry = registry
        self.page = page
        self.exporter = Exporter(ExportLimits.from_env())
