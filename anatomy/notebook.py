"""A translation drawn inside a notebook: `from anatomy import show; show("Ein Hund läuft im Park.", model="de-en")`.

The cell shows the offline page of the translation (anatomy.offline: every attention kind, layer and head, head
statistics, predictions, positional encoding, architecture, model card) in an iframe whose srcdoc holds the whole
page, Plotly.js included: no server, no network, nothing written to disk. `.save("x.html")` writes the same page as
`python -m anatomy.export html`.
"""
from __future__ import annotations

import dataclasses
import html
import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from transformer import Trace
from transformer.kinds import KINDS
from transformer.pieces import detokenize

from . import engine, offline, views
from .inputs import api_request
from .registry import ModelEntry, ModelRegistry
from .run import Explained, Norms

HEIGHT = 900  # px: the translation, the controls and the large heatmap in view; the rest scrolls inside the frame
# Scripts (Plotly, the page's own) and Plotly's "download as PNG"; no allow-same-origin: the page needs no storage
# or cookies of the notebook's origin, and without it cannot reach the notebook's window.
SANDBOX = "allow-scripts allow-downloads"
# A srcdoc document resolves relative URLs against the notebook's address, so a relative link in the page (a model
# card's, a "#heading") would load the notebook inside the frame; with this base it stays in the page.
BASE = '<base href="about:srcdoc">'


@lru_cache(maxsize=1)
def registry() -> ModelRegistry:
    """The models under checkpoints/ (or ANATOMY_CHECKPOINT_DIR), loaded once per process."""
    return ModelRegistry.discover()


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a Trace's arrays have no ==
class Shown:
    """A translation as a notebook shows it: the offline page in an iframe (`_repr_html_`), or as a file (`save`)."""

    trace: Trace
    entry: ModelEntry
    text: str  # the source text, as translated
    notices: tuple[str, ...] = ()  # what the page says about the run (untrained model, cut input, ...)
    explained: Explained | None = None  # Why this word (show(..., explain=True))
    norms: Norms | None = None  # the value norms, made with it

    @property
    def translation(self) -> str:
        return self.trace.text

    def page(self) -> str:
        """The whole offline page, ~5 MB (Plotly.js inlined)."""
        return offline.page(offline.payload(self.trace, self.entry, self.text, list(self.notices),
                                            explained=self.explained, norms=self.norms), self.entry.config)

    def save(self, path: str | Path) -> Path:
        """The page written to `path` (.html), as `python -m anatomy.export html` writes it."""
        path = Path(path)
        if path.suffix.lower() != offline.SUFFIX:
            raise ValueError(f"the page is HTML: the file must end in {offline.SUFFIX}, not {path.name!r}")
        return offline.write(self.trace, self.entry, self.text, list(self.notices), path, explained=self.explained,
                             norms=self.norms).path

    def _repr_html_(self) -> str:
        # A fresh id per drawing: the same object shown in two cells gives two frames that never clash.
        frame = f"anatomy-{uuid.uuid4().hex}"
        title = html.escape(f"Transformer Anatomy: {self.entry.key}: {self.translation}", quote=True)
        return (f'<iframe id="{frame}" title="{title}" sandbox="{SANDBOX}" style="width: 100%; height: {HEIGHT}px; '
                f'border: 1px solid #ddd;" srcdoc="{html.escape(framed(self.page()), quote=True)}"></iframe>')

    def __repr__(self) -> str:
        return f"Shown({self.entry.key}: {self.text!r} → {self.translation!r})"


def framed(page: str) -> str:
    """The page as the iframe's srcdoc: its <head> opens with BASE (a page without one is drawn as it is)."""
    return re.sub(r"<head\b[^>]*>", lambda m: m.group(0) + BASE, page, count=1, flags=re.I)


def show(source: str | Trace, model: str | ModelEntry | None = None, explain: bool = False) -> Shown:
    """A text translated by `model` (a key of the shipped models such as "de-en", or a registry ModelEntry; None:
    the first model), or an existing Trace drawn as made by `model` (None: the model its direction names); with
    `explain`, Why this word too (attribution of every piece by three methods, the logit lens, the value norms:
    model passes, a few seconds for a 20-word sentence)."""
    if isinstance(source, Trace):
        entry = _entry(model if model is not None else source.settings.direction)
        _check_shape(source, entry)
        notices = views.run_notices(entry, source, list(source.notices))
        shown = Shown(source, entry, detokenize(source.source_tokens), tuple(notices))
        return _explained(shown, entry.maker(source)) if explain else shown
    if not isinstance(source, str):
        raise TypeError(f"show() takes a text (str) or a transformer.Trace, not {type(source).__name__}")
    entry = _entry(model if model is not None else registry().default_key)
    models = ModelRegistry([entry], [])  # the registry's device choice and notice, for any entry
    request, problem = api_request(source, entry.key, None, None, {entry.key: entry.decoding})
    if request is None:
        raise ValueError(problem)
    translator, notice = models.translator(entry.key, request.device)
    # One sentence through a small model is a chain of tiny matmuls: one thread is fastest, as in the app; the
    # notebook's own setting is put back.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trace = engine.translate(translator, request)
    finally:
        torch.set_num_threads(threads)
    notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
    shown = Shown(trace, entry, request.text, tuple(notices))
    return _explained(shown, translator) if explain else shown


def _explained(shown: Shown, translator) -> Shown:
    """`shown` with Why this word and the value norms, from the model that made its trace."""
    return dataclasses.replace(shown, explained=engine.explain(translator, shown.trace),
                               norms=engine.value_norms(translator, shown.trace))


def _entry(model) -> ModelEntry:
    if isinstance(model, ModelEntry):
        return model
    if model is None:  # a trace not made by the app: no direction to go by
        raise ValueError(f"this trace names no model: pass model=, one of {', '.join(registry().entries)}")
    if not isinstance(model, str):
        raise TypeError(f"model must be a model key (str) or a ModelEntry, not {type(model).__name__}")
    if model not in registry().entries:
        skipped = {s.name: s.reason for s in registry().skipped}
        why = f" (it could not be loaded: {skipped[model]})" if model in skipped else ""
        raise ValueError(f"unknown model {model!r}{why}; choose one of: {', '.join(registry().entries)}")
    return registry().entries[model]


def _check_shape(trace: Trace, entry: ModelEntry) -> None:
    """A trace drawn with another model's card and architecture would mislabel every figure: refuse it."""
    c = entry.config
    for kind in KINDS:
        got = getattr(trace, kind.trace_field).shape[:2]
        if tuple(got) != (c.n_layers(kind.name), c.n_heads):
            raise ValueError(f"the trace's {kind.label} has {got[0]} layers × {got[1]} heads, model "
                             f"{entry.key!r} {c.n_layers(kind.name)} × {c.n_heads}: pass the model that made it")
