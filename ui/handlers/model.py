"""The model's events that make a Run: translate (streamed), a link's, Inspect, a beam candidate, heads off; Stop and
the tour.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from typing import TYPE_CHECKING, Callable

import gradio as gr

import viz
from anatomy import compare, engine, tour, views
from anatomy.inputs import MAX_NEW_TOKENS, Request, View, build_link, clean_text, heads_off, link_prefix, page_request
from anatomy.layout import markdown_html
from anatomy.payload import tour_payload
from anatomy.run import Ablation, Explained, Judged, Pair, Run, Twin
from anatomy.tour import Tour
from transformer import Trace, Translator
from transformer.pieces import piece_text

from ..layout import placeholder
from ..values import Inputs, PageSettings, Tab

if TYPE_CHECKING:
    from anatomy.registry import ModelRegistry

    from ..layout import Page

# While streaming, the text and chips are sent at most every TEXT_INTERVAL seconds (several pieces at once only
# when decoding outpaces that); figures are drawn once the trace is complete, outside the model's slot.
TEXT_INTERVAL = 0.05
# The values of the page's trigger (replay), each new: a gr.State's .change fires only on a changed value (a view
# opened twice carries one too, so that the viewer opens it again).
ASKED = itertools.count(1)


def _second(request: Request) -> Request:
    """The request a compared sentence is translated with (Translating._paired)."""
    return dataclasses.replace(request.decoded(slow=0.0, prefix=()), text=request.compare, compare="", notices=())


def opened(view: View) -> dict:
    """A view for the viewer to open (view_set): the fields its controls hold; a step of None leaves the step."""
    fields = {name: value for name, value in dataclasses.asdict(view).items() if name != "step" or value is not None}
    return {**fields, "asked": next(ASKED)}


class Translating:
    """The model's events that make a Run: a part of ui.handlers.Handlers, which holds the registry and the page."""

    registry: ModelRegistry
    page: Page

    def _request(self, settings: PageSettings) -> tuple[Request | None, str]:
        """What the page's settings ask for, or for an empty text None and a calm hint (not an error: nothing went
        wrong); an unknown direction is refused with a message."""
        asked = dataclasses.asdict(settings)
        off = asked.pop("heads_off")
        request, notices = page_request(**asked)
        if not request.text:
            entry = self.registry.get(settings.key if settings.key in self.registry.entries else None)
            return None, viz.escape(" ".join([*notices, f"{placeholder(entry)}, then click Translate."]))
        if settings.key not in self.registry.entries:
            raise gr.Error(f"Unknown direction {settings.key!r}; choose one of: {', '.join(self.registry.entries)}.")
        return self._with_heads_off(request, off), ""

    def _with_heads_off(self, request: Request, off) -> Request:
        """The request with the heads `off` names switched off, checked against its model (anatomy.inputs.heads_off);
        a notice for any that were ignored."""
        checked, notices = heads_off(off, self.registry.get(request.key).config)
        return dataclasses.replace(request.decoded(heads_off=checked), notices=(*request.notices, *notices))

    @staticmethod
    def _ablation(translator: Translator, request: Request, original: Trace | None = None,
                  before: Ablation | None = None) -> Ablation | None:
        """With heads off, what they change against `original` (the same request with every head on; translated
        here when not given; `before`: the shown run's, whose all-heads numbers it reuses). None with every head
        on."""
        if not request.decoding.heads_off:
            return None
        if original is None:
            original = engine.translate(translator, request.decoded(heads_off="", slow=0.0))
        return engine.ablation(translator, request, original, before)

    def _made(self, request: Request, trace: Trace, showing: str, i: Inputs, *, start: float,
              notices: list[str] | tuple[str, ...] = (), **run) -> dict:
        """The outputs of a model event: the new Run (its notices after the request's own), what the page `i`
        shows needs of a model for it, made here in the model's slot (the untrained twin's trace when its tab is
        open, head importance when its tab is; the softmax walk is asked for by the viewer: `walk`), and what the
        page shows of the Run (`_page_of`)."""
        p, entry = self.page, self.registry.get(request.key)
        pair, opens = self._paired(request, trace, i.run)
        new = Run(request, trace, showing, tuple(views.run_notices(entry, trace, [*request.notices, *notices])),
                  time.perf_counter() - start, pair=pair, opens=opens, **run)
        out = {p.run: new}
        if i.tab == Tab.COMPARE:
            out[p.twin] = self._twin(new)
        if i.tab == Tab.IMPORTANCE:
            out[p.judged] = self._judged(new, i.judged)
        return {**out, **self._page_of(i, out)}

    def _paired(self, request: Request, trace: Trace, shown: Run | None) -> tuple[Pair | None, View | None]:
        """The second sentence of a request that compares (Compare with…), translated in the same event by the same
        model with the same settings and heads (not in slow motion: it is shown whole beside the first), and the
        view an example pair opens at (the registry's PAIRS: its pronoun's encoder row where it differs most). The
        `shown` Run's second translation is kept when it was asked the same (a branch, a beam candidate, Inspect)."""
        if not request.compare:
            return None, None
        # a branch's forced pieces are the first sentence's: the second is the model's own
        asked = _second(request)
        if shown is not None and shown.pair is not None and _second(shown.request) == asked:
            second = shown.pair.trace
        else:
            translator, _ = self.registry.translator(request.key, request.device)
            second = engine.translate(translator, asked)
        words = next(((w, o) for a, b, w, o in self.registry.get(request.key).pairs
                      if (a, b) == (request.text, request.compare)), None)
        return Pair(request.compare, second), compare.opening(trace, second, *words) if words else None

    def _page_of(self, i: Inputs, made: dict) -> dict:
        """What the page shows of a model event's new Run, sent by the same event (as `show`, then the open tab as
        `tab_view`), so that a page sends the server nothing but the model's events; a slow-motion Run only starts
        its replay, whose own event sends its steps."""
        p, run = self.page, made[self.page.run]
        shown = self.show(dataclasses.replace(i, run=run))
        if run.replay:
            return shown
        opened = dataclasses.replace(i.view, step=run.step, query=min(i.view.query, len(run.trace.source_tokens)))
        settings = i.settings if i.settings.key in self.registry.entries else \
            dataclasses.replace(i.settings, key=run.request.key)
        tab = self.tab_view(dataclasses.replace(i, run=run, twin=made.get(p.twin, i.twin),
                                                judged=made.get(p.judged, i.judged),
                                                explained=made.get(p.explained, i.explained),
                                                view=opened, settings=settings))
        return {**shown, **(tab if tab != gr.skip() else {})}

    def _judged(self, run: Run, judged: Judged | None) -> Judged:
        """Head importance for the run: judged on its translation with every head on, by the model that made it
        (`judged` again when it is of that translation)."""
        own = run.ablation.original if run.ablation is not None else run.trace
        if judged is not None and judged.of is own:
            return judged
        return Judged(own, engine.importance(self.registry.get(run.request.key).maker(own), own))

    def _explained(self, run: Run, progress: Callable[[int, int], None] | None = None) -> Explained:
        return engine.explain(self.registry.get(run.request.key).maker(run.trace), run.trace, progress)

    def _toured(self, run: Run, toured: Tour | None) -> Tour:
        """The tour of the run's translation (`toured` again when it is of that translation), with its model passes
        made here."""
        if toured is not None and toured.of is run.trace:
            return toured
        entry = self.registry.get(run.request.key)
        facts = tour.facts_of(entry.config, entry.untrained, entry.corpus_heads())
        return tour.tour(run.trace, facts, engine.tour_extras(entry.maker(run.trace), run.request, run.trace, facts))

    def _tour_out(self, run: Run, toured: Tour, start: int) -> dict:
        """The outputs that open a tour at stop `start` (from 1) in the page."""
        query = build_link(run.request.decoded(heads_off=run.trace.settings.heads_off), View(),
                           run.trace.settings.prefix)
        return {self.page.toured: toured, self.page.tour_data: tour_payload(toured, query, start, next(ASKED))}

    def _twin(self, run: Run) -> Twin:
        twin_trace, own = engine.untrained(self.registry.get(run.request.key).twin(), run.trace, MAX_NEW_TOKENS)
        return Twin(run.trace, twin_trace, own)

    def translate_page(self, values: Inputs | dict):
        """Translate (settings, signal, tab): greedy decoding streams its text piece by piece; beam search and slow
        motion compute the whole trace first (slow motion is replayed by `replay`)."""
        p, i = self.page, Inputs.of(self.page, values)
        request, hint = self._request(i.settings)
        if request is None:  # the shown translation stays as it is
            yield {p.text_hint: gr.update(value=markdown_html(hint), visible=True)}
            return
        no_hint = {p.text_hint: gr.update(visible=False)}
        mark = i.signal.asked
        translator, device_notice = self.registry.translator(request.key, request.device)
        extra = [device_notice] if device_notice else []
        start = time.perf_counter()
        d = request.decoding
        if d.beam_size > 1 or d.slow > 0:
            yield {**no_hint, p.translation: "", p.out_chips: [],
                   p.run_info: f"Beam search with {d.beam_size} beams…" if d.beam_size > 1 else "Translating…"}
            trace = engine.translate(translator, request)
            showing = f"Beam search ({d.beam_size} beams), best candidate" if d.beam_size > 1 else "Greedy decoding"
            if d.slow > 0:
                showing = "Slow-motion replay" + (f" of beam search ({d.beam_size} beams)" if d.beam_size > 1 else "")
            yield self._made(request, trace, showing, i, start=start, notices=extra, replay=d.slow > 0,
                             stop_mark=mark, ablation=self._ablation(translator, request))
            return
        yield {**no_hint, p.src_chips: views.source_chips(engine.source_pieces(translator, request.text)),
               p.out_chips: [], p.translation: "", p.run_info: "Translating…"}
        produced, top_k_rows, written, last = [], [], "", 0.0
        for item in engine.stream(translator, request, lambda: i.signal.asked != mark):
            if isinstance(item, Trace):
                stopped = item.settings.stopped
                showing = f"Greedy decoding, stopped after {len(item.output_tokens)} pieces" if stopped \
                    else "Greedy decoding"
                yield self._made(request, item, showing, i, start=start, notices=extra, stop_mark=mark,
                                 ablation=self._ablation(translator, request))
                return
            produced.append(item.token)
            top_k_rows.append(item.top_k)
            written += piece_text(item.token, bool(written))  # the final text's detokenisation, a piece at a time
            now = time.perf_counter()
            if now - last >= TEXT_INTERVAL:
                last = now
                yield {p.translation: written, p.out_chips: views.output_chips(produced, top_k_rows)}

    def translate_link(self, values: Inputs | dict):
        """The translation a link asks for (the Link load_link parsed; signal, tab), whatever the controls say by
        now."""
        i = Inputs.of(self.page, values)
        link = i.link
        if link is None or not link.text:
            return gr.skip()
        key = link.key or self.registry.default_key
        translator, notice = self.registry.translator(key, "auto")
        prefix, refused = link_prefix(link.prefix, translator.prefix_ids)
        request = self._with_heads_off(Request(key, link.text, dataclasses.replace(link.decoding, prefix=prefix),
                                               notices=(*link.notices, *refused), compare=link.compare),
                                       link.decoding.heads_off)
        start = time.perf_counter()
        trace = engine.translate(translator, request)
        # a branch's link: the model's own translation too, in the same event, shown beside it as a click makes it
        plain = request.decoded(prefix=())
        own = Run(plain, engine.translate(translator, plain), "The model's own translation") if prefix else None
        later = link.translated_notices(views.steps(trace), len(trace.source_tokens))
        made = self._made(request, trace, "Branch from the link" if prefix else "Translation from the link", i,
                          start=start, notices=[*([notice] if notice else []), *later], stop_mark=i.signal.asked,
                          step=link.view.step, ablation=self._ablation(translator, request), own=own)
        run = made[self.page.run]
        return {**made, **(self._tour_out(run, self._toured(run, None), link.tour) if link.tour else {})}

    def start_tour(self, values: Inputs | dict):
        """Tour (run, toured): the guided tour of the shown translation from its first stop, its model passes (why
        one piece, the model's most important head off) made once per translation."""
        i = Inputs.of(self.page, values)
        if i.run is None:
            raise gr.Error("Translate a sentence first: the tour is about its translation.")
        if i.run.replay:
            raise gr.Error("The slow-motion replay is still running: start the tour once it has shown the whole "
                           "translation.")
        return self._tour_out(i.run, self._toured(i.run, i.toured), 1)

    def ablate(self, values: Inputs | dict):
        """The heads-off checkboxes changed (run, heads off, tab): the shown request translated again with those
        heads switched off, beside its translation with every head on. Before any translation, the checkboxes
        only wait for the next one."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None or run.replay:
            return gr.skip()
        request = self._with_heads_off(dataclasses.replace(run.request.decoded(slow=0.0), notices=()),
                                       i.settings.heads_off)
        if request.decoding.heads_off == run.request.decoding.heads_off:
            return gr.skip()
        # the all-heads translation of the same request, when the page already has it whole (one that was stopped
        # half-way is not: "Every head on again" would bring back the cut text)
        shown = run.trace.settings
        original = run.ablation.original if run.ablation is not None else \
            run.trace if not run.request.decoding.heads_off and shown.mode in ("greedy", "beam") and not shown.stopped \
            else None
        translator, notice = self.registry.translator(request.key, request.device)
        start = time.perf_counter()
        if request.decoding.heads_off:
            trace, showing = engine.translate(translator, request), "Heads switched off"
        else:
            trace = original or engine.translate(translator, request)
            showing = "Every head on again"
        return self._made(request, trace, showing, i, start=start, notices=[notice] if notice else [],
                          ablation=self._ablation(translator, request, original, run.ablation))

    @staticmethod
    def every_head_on() -> list[str]:
        return []

    @staticmethod
    def toggle_head(off, clicked):
        """A click on a head's thumbnail or map cell: that head (a HeadMask link item) off, or on again."""
        off, clicked = list(off or []), str(clicked or "")
        if not clicked:
            return gr.skip()
        return [item for item in off if item != clicked] if clicked in off else [*off, clicked]

    def branch(self, values: Inputs | dict):
        """A step's other piece, or a typed word (run, tab): the shown translation continued from it, its pieces
        before the step as they were, then the model's own decoding (greedy, or beam search from that prefix), by
        the model that made it, shown beside the model's own translation (kept for Back to the model's own)."""
        i = Inputs.of(self.page, values)
        run, asked = i.run, i.branch
        if run is None or run.replay:
            raise gr.Error("Translate a sentence first (and let a slow-motion replay end): a branch continues its "
                           "translation from another word.")
        if asked is None or not (asked.piece or asked.word.strip()):
            return gr.skip()
        translator = self.registry.get(run.request.key).maker(run.trace)
        step = min(asked.step, len(run.trace.output_ids))
        word, notices = clean_text(asked.word, "the word")
        try:
            chosen = translator.prefix_ids([asked.piece] if asked.piece else translator.tokenizer.encode_target(word))
        except ValueError as err:
            raise gr.Error(f"This model cannot write that: {err}.") from None
        if not chosen:
            raise gr.Error(f"{word!r} has no piece this model writes.")
        request = dataclasses.replace(run.request.decoded(slow=0.0, prefix=(*run.trace.output_ids[:step], *chosen)),
                                      notices=())
        start = time.perf_counter()
        trace = engine.translate(translator, request)
        forced = translator.tokenizer.decode(chosen)
        return self._made(request, trace, f"Branch: {forced!r} at step {step + 1}, then the model's own decoding",
                          i, start=start, notices=notices, own=run.own or run)

    def back_to_own(self, values: Inputs | dict):
        """Back to the model's own (run, tab): the translation a branch continued, shown again as it was kept
        (no model event: a stopped one stays stopped)."""
        i = Inputs.of(self.page, values)
        if i.run is None or i.run.own is None:
            return gr.skip()
        own = i.run.own
        return {self.page.run: own, **self._page_of(i, {self.page.run: own})}

    def force(self, values: Inputs | dict):
        """Inspect (run, forced, tab): the shown source teacher-forced through a typed translation, by the model
        that translated it."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None:
            raise gr.Error("Translate a sentence first: Inspect reads its source through your translation.")
        target, notices = clean_text(i.forced, "your translation")
        if not target:
            raise gr.Error("Type (or edit) a translation to inspect first.")
        request = run.request.decoded(slow=0.0)
        translator, notice = self.registry.translator(request.key, request.device)
        start = time.perf_counter()
        trace = engine.force(translator, request, target)
        return self._made(request, trace, "Your translation, teacher-forced (red rows in Predictions: pieces "
                          "outside the model's top k)", i, start=start,
                          notices=notices + ([notice] if notice else []))

    def candidate(self, values: Inputs | dict):
        """The beam candidate the viewer asks for (run, candidate, tab), teacher-forced through the model (and on the
        source) of the shown beam search."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None or not run.trace.candidates:
            return gr.skip()
        row = min(i.candidate, len(run.trace.candidates) - 1)
        translator, notice = self.registry.translator(run.request.key, run.request.device)
        start = time.perf_counter()
        trace = engine.candidate(translator, run.trace, row)
        request = run.request.decoded(slow=0.0)
        return self._made(request, trace, f"Beam candidate #{row + 1} (score {run.trace.candidates[row].score:.3f})",
                          i, start=start, notices=[notice] if notice else [])

    def stop(self, values: Inputs | dict) -> None:
        """Stop (signal): the running stream or replay ends at its next piece and shows what it has, labelled
        stopped."""
        Inputs.of(self.page, values).signal.asked += 1
