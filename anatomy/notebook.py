"""A translation drawn inside a notebook: `from anatomy import show; show("Ein Hund läuft im Park.", model="de-en")`.

The cell shows the offline page of the translation (anatomy.offline: every attention kind, layer and head, head
statistics, predictions, positional encoding, architecture, model card) in a sandboxed iframe whose srcdoc holds the
page: no server, nothing written to disk. Plotly.js (1.5 MB) comes as `show(..., plotly=)` says: inlined in each
frame (inline), sent once to the notebook's window and from there to each frame (shared), or from a CDN (cdn: jsDelivr).
`.save("x.html")` writes the whole page as `python -m anatomy.export html`.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import torch
from plotly.offline import get_plotlyjs_version

from transformer import Trace, Translator
from transformer.kinds import KINDS
from transformer.pieces import detokenize

from . import engine, offline, views
from .inputs import api_request
from .registry import ModelEntry, ModelRegistry
from .run import Explained, Norms, Pair

HEIGHT = 900  # px: the translation, the controls and the large heatmap in view; the rest scrolls inside the frame
# Scripts (Plotly, the page's own) and Plotly's "download as PNG"; no allow-same-origin: the page needs no storage
# or cookies of the notebook's origin, and without it cannot reach the notebook's window.
SANDBOX = "allow-scripts allow-downloads"
# A srcdoc document resolves relative URLs against the notebook's address, so a relative link in the page (a model
# card's, a "#heading") would load the notebook inside the frame; with this base it stays in the page.
BASE = '<base href="about:srcdoc">'
PLOTLY = ("inline", "shared", "cdn")  # where a cell's Plotly.js comes from (show's `plotly`)
PLOTLY_VERSION = get_plotlyjs_version()  # the plotly package's Plotly.js, the release inlined: every mode draws alike
# the npm package offline.PLOTLY_JS is, as jsDelivr serves its files: the same bytes, so its SRI hash is that file's
CDN = f"https://cdn.jsdelivr.net/npm/plotly.js-cartesian-dist-min@{PLOTLY_VERSION}/plotly-cartesian.min.js"
# What a frame says when its Plotly.js does not come: a shared frame's page waits for it, a cdn frame's page draws
# its texts and no figure.
SHARED_MISSING = ("Plotly.js has not come from this notebook's window, so the figures are not drawn: the first "
                  "show(..., plotly=\"shared\") cell of the kernel carries it, and its output is not on this page "
                  "(cleared, or the notebook reopened without it), or this front end gives each output a window of "
                  "its own (Colab). Run the notebook again from the top (Restart & Run All), or draw this cell with "
                  "plotly=\"inline\".")
CDN_MISSING = (f"Plotly.js could not be loaded from {CDN}, so the figures are not drawn: show(..., plotly=\"cdn\") "
               "needs a network; plotly=\"inline\" works offline.")
# The shared mode's two halves. Plotly.js never runs in the notebook's window (where classic Jupyter's and VS Code's
# AMD `define` would take its module in place of the global `Plotly`): the window keeps it as text and posts it to
# each frame that asks, which runs it as its own. The frame keeps its sandbox: a message is all that crosses.
# In the window (every shared cell's output; the carrier's adds the text): one listener a window, which answers at
# once or, until the text is there, when it comes.
WINDOW = """(() => {
  const shared = window.anatomyPlotlyShared = window.anatomyPlotlyShared || {sources: {}, waiting: []};
  const answer = (frame, version) =>
    frame.postMessage({anatomyPlotly: "js", version, source: shared.sources[version]}, "*");
  if (!shared.listening) {
    shared.listening = true;
    window.addEventListener("message", (e) => {
      const asked = e.data;
      if (!asked || asked.anatomyPlotly !== "ask" || !e.source) return;
      if (shared.sources[asked.version]) answer(e.source, asked.version);
      else if (!shared.waiting.some(([f, v]) => f === e.source && v === asked.version)) {
        shared.waiting.push([e.source, asked.version]);
      }
    });
  }
  /*SOURCE*/
  shared.waiting = shared.waiting.filter(([f, v]) => !(shared.sources[v] && (answer(f, v), true)));
})();"""
# In the frame: ask the window (again each second: the window's listener may start after the frame), run the text
# that comes, then let the page start (anatomy/viewer/offline.html waits for anatomyPlotlyReady); a note while none
# has come after a few seconds.
FRAME = """(() => {
  const version = /*VERSION*/, note = document.createElement("ul");
  note.className = "notices";
  note.appendChild(document.createElement("li")).textContent = /*MISSING*/;
  window.anatomyPlotlyReady = new Promise((resolve) => {
    const ask = () => parent.postMessage({anatomyPlotly: "ask", version}, "*");
    const asking = setInterval(ask, 1000), late = setTimeout(() => document.body.prepend(note), 5000);
    window.addEventListener("message", function answered(e) {
      const got = e.data;
      if (e.source !== parent || !got || got.anatomyPlotly !== "js" || got.version !== version) return;
      window.removeEventListener("message", answered);
      clearInterval(asking);
      clearTimeout(late);
      note.remove();
      document.head.appendChild(document.createElement("script")).textContent = got.source;
      resolve();
    });
    ask();
  });
})();"""


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
    plotly: str = "inline"  # where the cell's Plotly.js comes from: one of PLOTLY
    own: Trace | None = None  # a branch's (show(..., prefix=...)): the model's own translation, shown beside it
    pair: Pair | None = None  # a second sentence beside it (show(..., compare=))

    @property
    def translation(self) -> str:
        return self.trace.text

    def page(self, plotly_html: str | None = None) -> str:
        """The whole offline page, ~5 MB (Plotly.js inlined); with `plotly_html`, the HTML that brings Plotly.js
        instead (frame_plotly)."""
        return offline.page(offline.payload(self.trace, self.entry, self.text, list(self.notices),
                                            explained=self.explained, norms=self.norms, pair=self.pair,
                                            own=self.own), self.entry.config, plotly_html)

    def save(self, path: str | Path) -> Path:
        """The page written to `path` (.html), as `python -m anatomy.export html` writes it."""
        path = Path(path)
        if path.suffix.lower() != offline.SUFFIX:
            raise ValueError(f"the page is HTML: the file must end in {offline.SUFFIX}, not {path.name!r}")
        return offline.write(self.trace, self.entry, self.text, list(self.notices), path, explained=self.explained,
                             norms=self.norms, pair=self.pair, own=self.own).path

    def _repr_html_(self) -> str:
        # A fresh id per drawing: the same object shown in two cells gives two frames that never clash.
        frame = f"anatomy-{uuid.uuid4().hex}"
        title = html.escape(f"Transformer Anatomy: {self.entry.key}: {self.translation}", quote=True)
        window = f"<script>{shared_window(_CARRIER.carries())}</script>" if self.plotly == "shared" else ""
        page = self.page(None if self.plotly == "inline" else frame_plotly(self.plotly))
        # The cell in ASCII (character references, JS escapes): a host page read in another encoding than UTF-8
        # (a saved cell without <meta charset>, which Chromium guesses at) still gives the frame its words.
        iframe = (f'<iframe id="{frame}" title="{title}" sandbox="{SANDBOX}" style="width: 100%; '
                  f'height: {HEIGHT}px; border: 1px solid #ddd;" srcdoc="{html.escape(framed(page), quote=True)}">'
                  '</iframe>')
        return window + iframe.encode("ascii", "xmlcharrefreplace").decode("ascii")

    def __repr__(self) -> str:
        return f"Shown({self.entry.key}: {self.text!r} → {self.translation!r})"


def _script_text(value: str) -> str:
    """`value` as a JS string literal that can stand inside <script> (no "</script", no "<!--"), in ASCII."""
    return json.dumps(value).replace("<", "\\u003c")


@lru_cache(maxsize=2)
def shared_window(carry: bool) -> str:
    """The window's half of the shared mode (WINDOW), holding Plotly.js's text when `carry`."""
    source = f"shared.sources[{json.dumps(PLOTLY_VERSION)}] = {_script_text(offline.PLOTLY_JS.read_text('utf-8'))};"
    return WINDOW.replace("/*SOURCE*/", source if carry else "")


def frame_plotly(mode: str) -> str:
    """The HTML that brings Plotly.js into a frame's page: from the notebook's window (shared), or its CDN."""
    if mode == "shared":
        script = FRAME.replace("/*VERSION*/", json.dumps(PLOTLY_VERSION)).replace("/*MISSING*/",
                                                                                 _script_text(SHARED_MISSING))
        return f"<script>{script}</script>"
    # The integrity of the plotly package's own copy: the CDN's file of that version is the same bytes, and a
    # changed one is refused.
    digest = base64.b64encode(hashlib.sha256(offline.PLOTLY_JS.read_bytes()).digest()).decode()
    failed = ("const note = document.createElement('ul'); note.className = 'notices'; "
              f"note.appendChild(document.createElement('li')).textContent = {_script_text(CDN_MISSING)}; "
              "document.body.prepend(note)")
    return (f'<script src="{CDN}" integrity="sha256-{digest}" crossorigin="anonymous" '
            f'onerror="{html.escape(failed, quote=True)}"></script>')


class _Carrier:
    """Which drawing of the shared mode carries Plotly.js to the notebook's window: the kernel's first, and every
    later one of the same notebook cell (run again, its output replaces the one that carried it) when the front
    end names its cells (Jupyter Lab, Notebook 7, VS Code send a cellId)."""

    def __init__(self) -> None:
        self.cells: list[str | None] = []  # the carrier's cell, once there is one

    def carries(self) -> bool:
        cell = _cell()
        if not self.cells:
            self.cells.append(cell)
            return True
        return cell is not None and cell == self.cells[0]


_CARRIER = _Carrier()


def _cell() -> str | None:
    """The id of the notebook cell the kernel is running, when its front end sends one; None outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    get_parent = getattr(getattr(get_ipython(), "kernel", None), "get_parent", None)  # ipykernel 6 and later
    parent = get_parent("shell") if get_parent is not None else None
    return ((parent or {}).get("metadata") or {}).get("cellId")


def framed(page: str) -> str:
    """The page as the iframe's srcdoc: its <head> opens with BASE (a page without one is drawn as it is)."""
    return re.sub(r"<head\b[^>]*>", lambda m: m.group(0) + BASE, page, count=1, flags=re.I)


def show(source: str | Trace, model: str | ModelEntry | None = None, explain: bool = False,
         plotly: str = "inline", compare: str | None = None, prefix: Sequence[str | int] = ()) -> Shown:
    """A text translated by `model` (a key of the shipped models such as "de-en", or a registry ModelEntry; None:
    the first model), or an existing Trace drawn as made by `model` (None: the model its direction names); with
    `explain`, Why this word too (attribution of every piece by three methods, the logit lens, the value norms:
    model passes, a few seconds for a 20-word sentence). `plotly`: where the cell's Plotly.js comes from: "inline"
    (in the cell, ~2.1 MB: works everywhere, offline), "shared" (the kernel's first such cell puts it in the
    notebook's window for the later ones, ~0.3 MB each: front ends that show every output in one window, such as
    Jupyter Lab, Notebook and VS Code, not Colab) or "cdn" (a small cell that loads it from its CDN: needs a
    network). `compare`: a second sentence, translated by the same model and drawn beside the first, with their
    difference (docs/app.md, Compare with…). `prefix`: a text's branch, its first output pieces forced (pieces such
    as "▁Hund", or ids), then the model's own decoding, shown beside the model's own translation."""
    if plotly not in PLOTLY:
        raise ValueError(f"plotly must be one of {', '.join(map(repr, PLOTLY))}, not {plotly!r}")
    if compare is not None and not isinstance(compare, str):
        raise TypeError(f"compare takes a text (str), not {type(compare).__name__}")
    if isinstance(source, Trace):
        if prefix:
            raise ValueError("prefix continues a text's translation: give the text, not a trace")
        entry = _entry(model if model is not None else source.settings.direction)
        _check_shape(source, entry)
        notices = views.run_notices(entry, source, list(source.notices))
        shown = Shown(source, entry, detokenize(source.source_tokens), tuple(notices), plotly=plotly,
                      pair=_translated(compare, entry)[0] if compare else None)
        return _explained(shown, entry.maker(source)) if explain else shown
    if not isinstance(source, str):
        raise TypeError(f"show() takes a text (str) or a transformer.Trace, not {type(source).__name__}")
    entry = _entry(model if model is not None else registry().default_key)
    first, notices, translator, own = _translated(source, entry, prefix)
    shown = Shown(first.trace, entry, first.text, tuple(notices), plotly=plotly,
                  pair=_translated(compare, entry)[0] if compare else None, own=own)
    return _explained(shown, translator) if explain else shown


def _translated(text: str, entry: ModelEntry, prefix: Sequence[str | int] = ()) -> tuple[Pair, list[str], Translator,
                                                                                       Trace | None]:
    """`text` translated by `entry`'s model with its own settings: the text as translated and its trace, the run's
    notices, the translator; with `prefix`, the branch that forces it, and the model's own translation."""
    models = ModelRegistry([entry], [])  # the registry's device choice and notice, for any entry
    request, problem = api_request(text, entry.key, None, None, {entry.key: entry.decoding})
    if request is None:
        raise ValueError(problem)
    translator, notice = models.translator(entry.key, request.device)
    # One sentence through a small model is a chain of tiny matmuls: one thread is fastest, as in the app; the
    # notebook's own setting is put back.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trace = engine.translate(translator, request)
        own = None
        if prefix:
            own, trace = trace, engine.translate(translator, request.decoded(prefix=translator.prefix_ids(prefix)))
    finally:
        torch.set_num_threads(threads)
    notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
    return Pair(request.text, trace), notices, translator, own


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
