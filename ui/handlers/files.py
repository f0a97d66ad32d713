"""Files of the shown translation (Download trace, Export animation, Download page) and the API (/translate,
/explain, /animate, /export_html), which translates first.
"""
from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING

import gradio as gr

from anatomy import engine, export, offline, views
from anatomy.inputs import Request, api_prefix, api_request
from anatomy.payload import attribution_payload, lens_payload, shares_payload
from transformer.explain import METHODS

from .. import traces
from ..values import Inputs

if TYPE_CHECKING:
    from anatomy.exports import Exporter
    from anatomy.registry import ModelRegistry

    from ..layout import Page

log = logging.getLogger(__name__)


class Files:
    """Files of the shown translation (Download trace, Export animation, Download page) and the API (/translate,
    /explain, /animate, /export_html), which translates first: a part of ui.handlers.Handlers, which holds the
    registry and the page."""

    registry: ModelRegistry
    page: Page
    exporter: Exporter

    def _api_request(self, text, direction, beam_size=None, max_new_tokens=None) -> tuple[Request | None, str]:
        """An API call's text and direction (and numbers) as a Request, or None and why not: one rule for every
        endpoint, a skipped model named with the reason it was skipped."""
        return api_request(text, direction, beam_size, max_new_tokens,
                           {key: e.decoding for key, e in self.registry.entries.items()},
                           {s.name: s.said for s in self.registry.skipped})

    @staticmethod
    def _failed(what: str, err: Exception) -> str:
        """The notice of an API call that failed on the server. The caller hears none of the error's text (it may
        name a path or a library's internals), the log all but its message (which may quote what was sent)."""
        log.error("%s failed: %s (message not logged: it may quote what was sent)\n%s", what, type(err).__name__,
                  "".join(traceback.format_tb(err.__traceback__)))
        return f"{what} failed: an error on the server, logged there."

    def trace_json(self, values: Inputs | dict) -> dict:
        """Download trace (JSON) (run): the shown translation's trace, as a JSON file of its own written now."""
        i = Inputs.of(self.page, values)
        if i.run is None:
            raise gr.Error("Translate a sentence first: the trace is its decoding.")
        return {self.page.trace.file: gr.update(value=traces.trace_file(i.run.trace), visible=True)}

    def animate_page(self, values: Inputs | dict) -> dict:
        """Export animation (run, view, animation settings): the shown translation's decoding, drawn from its trace
        (no model), as a file named after what it shows; an MP4 without PyAV comes as PNG frames, with a warning."""
        i = Inputs.of(self.page, values)
        if i.run is None:
            raise gr.Error("Translate a sentence first: the animation shows its decoding.")
        a = i.animation
        animation = export.Animation.of(i.view, a.layout, a.size, a.seconds)
        try:
            animation.check()
        except ValueError as err:
            raise gr.Error(f"{str(err)[0].upper()}{str(err)[1:]}.") from None
        refused = self.exporter.refusal(i.run.trace, animation)
        if refused:
            raise gr.Error(refused)
        suffix = a.suffix if a.suffix in export.FORMATS else export.FORMATS[0]
        with traces.new_file(export.file_name(i.run.request.key, animation, suffix)) as path:
            try:
                done = self.exporter.export(i.run.trace, animation, path)
            except RuntimeError as err:
                raise gr.Error(f"Animation failed: {err}.") from None
        if done.notice:
            gr.Warning(done.notice)
        return {self.page.animation_file: gr.update(value=str(done.path), visible=True)}

    def api_animate(self, text: str, direction: str = "de-en", kind: str | None = None, layer: int | None = None,
                    head: int | str | None = None, layout: str | None = None, size: str | None = None,
                    frame_seconds: float | None = None, file_format: str | None = None,
                    merge_words: bool | None = None, hide_special: bool | None = None,
                    hide_marker: bool | None = None) -> tuple[str | None, str]:
        """Translate `text` in `direction` with the model's own decoding and animate its decoding: one frame per
        generated piece (the first and last held), the source, the translation so far and that step's attention.

        Returns (file, notice): the GIF, MP4 or ZIP of PNG frames (None when nothing was made), and what went wrong
        or what to know (empty when all is well). kind: cross (default), encoder, decoder; layer: from 1 (null: the
        last); head: from 1 or "mean" (default); layout: bar (default) or heatmap; size: 1280x720 (default) or
        1920x1080; frame_seconds: 0.1-10 (default 0.8); file_format: gif (default), mp4, zip; merge_words,
        hide_special, hide_marker: true or false, as the page's checkboxes.
        """
        try:
            request, problem = self._api_request(text, direction)
            if request is None:
                return None, problem
            formats = [suffix[1:] for suffix in export.FORMATS]
            file_format = formats[0] if file_format is None else file_format
            if file_format not in formats:
                return None, f"file_format must be one of {', '.join(formats)}, got {file_format!r}."
            entry = self.registry.get(request.key)
            animation, problem = export.api_animation(kind, layer, head, layout, size, frame_seconds, merge_words,
                                                      hide_special, hide_marker, entry.config)
            if animation is None:
                return None, problem
            translator, notice = self.registry.translator(request.key, request.device)
            trace = engine.translate(translator, request)
            notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
            refused = self.exporter.refusal(trace, animation)
            if refused:
                return None, " ".join([*notices, refused])
            with traces.new_file(export.file_name(request.key, animation, f".{file_format}")) as path:
                done = self.exporter.export(trace, animation, path)
            return str(done.path), " ".join([*notices, *([done.notice] if done.notice else [])])
        except Exception as err:  # the API never raises: it says that something went wrong
            return None, self._failed("Animation", err)

    def page_html(self, values: Inputs | dict) -> dict:
        """Download page (HTML) (run, explained, norms, view): the shown translation as one HTML file that opens
        offline, drawn from its trace (no model), opening at the shown view, with Why this word and the value norms
        when the page made them, and the sentence it is compared with."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None:
            raise gr.Error("Translate a sentence first: the page shows its translation.")
        key = run.request.key
        with traces.new_file(offline.file_name(key)) as path:
            written = offline.write(run.trace, self.registry.get(key), run.request.text, list(run.notices), path,
                                    i.view, i.explained, i.norms, i.toured, run.pair,
                                    run.own.trace if run.own else None)
        return {self.page.offline.file: gr.update(value=str(written.path), visible=True)}

    def api_export_html(self, text: str, direction: str = "de-en") -> tuple[str | None, str]:
        """Translate `text` in `direction` with the model's own decoding and write the translation as one HTML page
        that opens offline, with no server: its steps, every attention kind, layer and head, head statistics,
        predictions, positional encoding, architecture and model card.

        Returns (file, notice): the HTML file (None when nothing was made), and what went wrong or what to know
        (empty when all is well; the page shows it too).
        """
        try:
            request, problem = self._api_request(text, direction)
            if request is None:
                return None, problem
            entry = self.registry.get(request.key)
            translator, notice = self.registry.translator(request.key, request.device)
            trace = engine.translate(translator, request)
            notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
            with traces.new_file(offline.file_name(request.key)) as path:
                written = offline.write(trace, entry, request.text, notices, path)
            return str(written.path), " ".join(notices)
        except Exception as err:  # the API never raises: it says that something went wrong
            return None, self._failed("Page", err)

    def api_explain(self, text: str, direction: str = "de-en",
                    attribution: str | None = None) -> tuple[str, str, dict | None]:
        """Translate `text` in `direction` with the model's own decoding and explain every piece of it: why the model
        wrote it, by `attribution` ("ig", the default: integrated gradients, 16 points from zero embeddings; "grad":
        input × gradient; "occlusion": each source word set to the baseline).

        Returns (translation, notice, explanation). The explanation (None when nothing was translated) holds the
        pieces (`source_pieces`, `decoder_input_pieces`, `output_pieces`), the method's parts of each step's
        log-probability (`source`: steps × source pieces, or × source words with `words` for occlusion; `prefix`:
        steps × decoder input pieces), `score` (each step's log p) and for integrated gradients `baseline` and
        `shares` (each step's source and prefix shares of the evidence), and the logit lens (`lens`).
        """
        try:
            attribution = "ig" if attribution is None else attribution
            if not isinstance(attribution, str) or attribution not in METHODS:
                return "", f"attribution must be one of {', '.join(METHODS)}; got {attribution!r}", None
            request, problem = self._api_request(text, direction)
            if request is None:
                return "", problem, None
            translator, notice = self.registry.translator(request.key, request.device)
            trace = engine.translate(translator, request)
            notices = views.run_notices(self.registry.get(request.key), trace,
                                        [*request.notices, *([notice] if notice else [])])
            if not trace.output_ids:
                return trace.text, " ".join([*notices, "Nothing was decoded: no piece to explain."]), None
            found = engine.attribution(translator, trace, attribution)
            out = {"source_pieces": list(trace.source_tokens), "decoder_input_pieces": list(trace.target_tokens),
                   "output_pieces": list(trace.output_tokens), "method": attribution, **attribution_payload(found),
                   "lens": lens_payload(engine.logit_lens(translator, trace))}
            if attribution == "ig":
                out["shares"] = shares_payload(found)
            return trace.text, " ".join(notices), out
        except Exception as err:  # the API never raises: it says that something went wrong
            return "", self._failed("Explanation", err), None

    def api_translate(self, text: str, direction: str = "de-en", beam_size: int | None = None,
                      max_new_tokens: int | None = None, heads_off: str | None = None,
                      prefix: list | None = None) -> tuple[str, str, dict | None]:
        """Translate `text` in `direction` (a model key: "de-en", "en-de", ...).

        Returns (translation, notice, trace). The notice is empty when all went well; otherwise it says what
        happened (bad input, unknown or skipped direction, truncation, untrained model), and the translation is
        empty or partial. beam_size: 1-8 (null: the model's own, as its card chose; the length penalty is always
        the model's own); max_new_tokens: 1-200 (null: automatic); both JSON numbers without a fraction. The
        trace is the Trace as JSON (see Trace.to_dict; attention as nested lists [layer][head][query][key];
        Trace.from_dict reads it back), or None when nothing was translated. heads_off: heads to switch off, as
        links name them ("cross:1.2,encoder:1.3"; null: none); any that the model does not have are ignored, with
        a notice. prefix: the output's first pieces, forced (a branch: then the model's own decoding), as a list of
        pieces (["▁Der", "▁Hund"]) or ids (null: none); a piece the model's vocabulary lacks gets a notice.
        """
        try:
            request, problem = self._api_request(text, direction, beam_size, max_new_tokens)
            if request is None:
                return "", problem, None
            request = self._with_heads_off(request, heads_off)
            translator, notice = self.registry.translator(request.key, request.device)
            forced, problem = api_prefix(prefix, translator.prefix_ids)
            if forced is None:
                return "", problem, None
            request = request.decoded(prefix=forced)
            trace = engine.translate(translator, request)
            notices = views.run_notices(self.registry.get(request.key), trace,
                                        [*request.notices, *([notice] if notice else [])])
            return trace.text, " ".join(notices), trace.to_dict()
        except Exception as err:  # the API never raises: it says that something went wrong
            return "", self._failed("Translation", err), None
