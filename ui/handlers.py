"""What each event does. Handlers return dicts keyed by component (a component left out is left as it is).

Three kinds of event (see wiring.py for the rule): the model's (one at a time across visitors: translate, inspect, a
beam candidate, a link, the untrained twin, head importance, the softmax walk, the API), sending a Run to the page
(show: its trace payload, which the page's viewer draws, outside the model's slot; switching heads off sends its
Run in the same event), and slow-motion replays (replay, a bounded group of their own). A view change is drawn in
the browser and reaches no handler. Direction, text and settings of what is on screen come from the Run, never from
the controls, which may have changed since.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from typing import Callable, Mapping

import anyio

import gradio as gr

import viz
from anatomy import (ablation_views, architecture_views, attention_views, engine, export, head_views, offline,
                     tour, training_views, views)
from anatomy.inputs import (MAX_NEW_TOKENS, Request, View, api_request, build_link,
                            clean_text, heads_off, page_request, parse_link)
from anatomy.offline import markdown_html
from anatomy.payload import (attribution_payload, explain_payload, lens_payload, norms_payload, positional,
                             shares_payload, tour_payload, trace_payload)
from anatomy.registry import ModelRegistry
from anatomy.run import Ablation, Explained, Judged, Run, Twin, Vectors
from anatomy.tour import Tour
from transformer import HeadVectors, Trace, Translator
from transformer.explain import METHODS
from transformer.pieces import piece_text

from . import traces
from .figures import figure_json
from .layout import DEFAULTS, Page
from .values import Inputs, PageSettings, Tab

# While streaming, the text and chips are sent at most every TEXT_INTERVAL seconds (several pieces at once only
# when decoding outpaces that); figures are drawn once the trace is complete, outside the model's slot.
TEXT_INTERVAL = 0.05
# The values of the page's trigger (replay), each new: a gr.State's .change fires only on a changed value (a view
# opened twice carries one too, so that the viewer opens it again).
ASKS = itertools.count(1)


def opened(view: View) -> dict:
    """A view for the viewer to open (view_set): the fields its controls hold; a step of None leaves the step."""
    fields = {name: value for name, value in dataclasses.asdict(view).items() if name != "step" or value is not None}
    return {**fields, "asked": next(ASKS)}


class Handlers:
    """Each handler that reads the page takes one `values`: Gradio's dict keyed by component (its inputs are a set
    of components, see wiring.py), or Inputs from tests and scripts; Inputs.of types it once, on entry."""

    def __init__(self, registry: ModelRegistry, page: Page):
        self.registry = registry
        self.page = page

    # ---- the model's events: each makes a Run ----

    def _request(self, settings: PageSettings) -> tuple[Request | None, str]:
        """What the page's settings ask for, or for an empty text None and a calm hint (not an error: nothing went
        wrong); an unknown direction is refused with a message."""
        asked = dataclasses.asdict(settings)
        off = asked.pop("heads_off")
        request, notices = page_request(**asked)
        if not request.text:
            key = settings.key if settings.key in self.registry.entries else None
            return None, viz.escape(" ".join([*notices, f"{self._placeholder(key)}, then click Translate."]))
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
        new = Run(request, trace, showing, tuple(views.run_notices(entry, trace, [*request.notices, *notices])),
                  time.perf_counter() - start, **run)
        out = {p.run: new}
        if i.tab == Tab.COMPARE:
            out[p.twin] = self._twin(new)
        if i.tab == Tab.IMPORTANCE:
            out[p.judged] = self._judged(new, i.judged)
        return {**out, **self._page_of(i, out)}

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
        return Judged(own, engine.importance(self.registry.get(run.request.key).cpu, own))

    @staticmethod
    def _walk_key(trace: Trace, view: View) -> tuple[str, int] | None:
        """The (kind, layer) whose q, k, v the large view needs to draw `trace` as `view` asks; None when it shows
        no walk (or a walk with no query)."""
        if view.display != "walk":
            return None
        view = views.fitted(view, trace)
        if attention_views.walk_row(trace, view) < 0:
            return None
        return view.kind, view.layer

    def _vectors(self, run: Run, walk: tuple[str, int], vectors: Vectors | None) -> Vectors:
        """`vectors` (those of the run's trace) with the q, k, v of `walk` (kind, layer) added: a model pass."""
        by = dict(vectors.by) if vectors is not None and vectors.of is run.trace else {}
        by[walk] = engine.head_vectors(self.registry.get(run.request.key).cpu, run.trace, *walk)
        return Vectors(run.trace, by)

    def _explained(self, run: Run, progress: Callable[[int, int], None] | None = None) -> Explained:
        return engine.explain(self.registry.get(run.request.key).cpu, run.trace, progress)

    def _toured(self, run: Run, toured: Tour | None) -> Tour:
        """The tour of the run's translation (`toured` again when it is of that translation), with its model passes
        made here."""
        if toured is not None and toured.of is run.trace:
            return toured
        entry = self.registry.get(run.request.key)
        facts = tour.facts_of(entry.config, entry.untrained, entry.corpus_heads())
        return tour.tour(run.trace, facts, engine.tour_extras(entry.cpu, run.request, run.trace, facts))

    def _tour_out(self, run: Run, toured: Tour, start: int) -> dict:
        """The outputs that open a tour at stop `start` (from 1) in the page."""
        query = build_link(run.request.decoded(heads_off=run.trace.settings.heads_off), View())
        return {self.page.toured: toured, self.page.tour_data: tour_payload(toured, query, start, next(ASKS))}

    def _twin(self, run: Run) -> Twin:
        twin_trace, own = engine.untrained(self.registry.get(run.request.key).twin(), run.trace, MAX_NEW_TOKENS)
        return Twin(run.trace, twin_trace, own)

    def translate_page(self, values: Inputs | dict):
        """Translate (settings, signal, tab): greedy decoding streams its text piece by piece; beam search and slow
        motion compute the whole trace first (slow motion is replayed by `replay`)."""
        p, i = self.page, Inputs.of(self.page, values)
        request, hint = self._request(i.settings)
        if request is None:  # the shown translation stays as it is
            yield {p.text_hint: gr.update(value=hint, visible=True)}
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
        request = self._with_heads_off(Request(key, link.text, link.decoding, notices=link.notices),
                                       link.decoding.heads_off)
        translator, notice = self.registry.translator(key, "auto")
        start = time.perf_counter()
        trace = engine.translate(translator, request)
        later = link.translated_notices(views.steps(trace), len(trace.source_tokens))
        made = self._made(request, trace, "Translation from the link", i, start=start,
                          notices=[*([notice] if notice else []), *later], stop_mark=i.signal.asked,
                          step=link.view.step, ablation=self._ablation(translator, request))
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

    def candidate(self, values: Inputs | dict, evt: gr.SelectData):
        """A beam candidate (run, tab), teacher-forced through the model (and on the source) of the shown beam
        search."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None or not run.trace.candidates:
            return gr.skip()
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        row = min(max(int(index or 0), 0), len(run.trace.candidates) - 1)
        translator, notice = self.registry.translator(run.request.key, run.request.device)
        start = time.perf_counter()
        trace = engine.candidate(translator, run.trace, row)
        request = run.request.decoded(slow=0.0)
        return self._made(request, trace, f"Beam candidate #{row + 1} (score {run.trace.candidates[row].score:.3f})",
                          i, start=start, notices=[notice] if notice else [])

    def ask_model(self, values: Inputs | dict, request: gr.Request, progress=gr.Progress()):
        """What the viewer asks of a model, named by its view's `ask`: the softmax walk (walk), the value norms
        (norms), what the open tab shows of a model and then its contents (make), Why this word's comparison and
        then the tab (contrast), a clicked head off or on again and the translation with it (toggle), the settings
        and translation of the page's address (link: a page load's one model event)."""
        p, i = self.page, Inputs.of(self.page, values)
        if i.ask == "link":
            return self.open_link(i, request)
        if i.ask == "walk":
            return self.walk(i)
        if i.ask == "norms":
            return self.weigh(i)
        if i.ask in ("make", "contrast"):
            made = self.make_tab(i, progress) if i.ask == "make" else {p.explained: self.contrast(i)}
            made = {} if made == gr.skip() else made
            opened = dataclasses.replace(i, **{slot.name: value for slot, value in made.items()})
            shown = self.tab_view(opened)
            return {**made, **({} if shown == gr.skip() else shown)} or gr.skip()
        if i.ask == "toggle":
            off = self.toggle_head(i.settings.heads_off, i.clicked_head)
            if off == gr.skip():
                return off
            ablated = self.ablate(dataclasses.replace(i, settings=dataclasses.replace(i.settings,
                                                                                      heads_off=tuple(off))))
            return {p.heads_off: off, **({} if ablated == gr.skip() else ablated)}
        return gr.skip()

    def ask_draw(self, values: Inputs | dict, request: gr.Request):
        """What the viewer asks the server to draw or write, named by its view's `ask`: the open tab's contents
        (tab), Export animation's file (animation), a link to the view (share), the settings the page's address
        names (address: a page load without text)."""
        p, i = self.page, Inputs.of(self.page, values)
        if i.ask == "address":
            return self.load_link(request)
        if i.ask == "tab":
            return self.tab_view(i)
        if i.ask == "animation":
            return self.animate_page(i)
        if i.ask == "share":
            return {p.link_data: self.share(i)}
        return gr.skip()

    def make_tab(self, values: Inputs | dict, progress=gr.Progress()):
        """What the open tab shows of a model (run, twin, judged, explained, tab), when it opens or a translation
        comes to it: the untrained twin, head importance or why each piece, each once per translation."""
        p, i = self.page, Inputs.of(self.page, values)
        made = {Tab.COMPARE: (p.twin, self.make_twin), Tab.IMPORTANCE: (p.judged, self.judge),
                Tab.WHY: (p.explained, lambda i: self.explain_trace(i, progress))}.get(i.tab)
        if made is None:
            return gr.skip()
        state, make = made
        out = make(i)
        return out if out == gr.skip() else {state: out}

    def make_twin(self, values: Inputs | dict):
        """The untrained twin of the shown trace (run, twin), when the Trained vs untrained tab opens (once per
        trace)."""
        i = Inputs.of(self.page, values)
        if i.run is None or (i.twin is not None and i.twin.of is i.run.trace):
            return gr.skip()
        return self._twin(i.run)

    def explain_trace(self, values: Inputs | dict, progress=gr.Progress()):
        """Why the shown trace's pieces (run, explained, tab): the logit lens and every step's attributions, when the
        Why this word tab opens, or a new translation is shown while it is open (once per trace; seconds, so a model
        event of its own after the translation's, which the page shows first)."""
        i = Inputs.of(self.page, values)
        if i.tab != Tab.WHY or i.run is None or i.run.replay or \
                (i.explained is not None and i.explained.of is i.run.trace):
            return gr.skip()
        return self._explained(i.run, lambda done, steps: progress(
            done / steps, desc=f"Integrated gradients: {done} of {steps} steps"))

    def contrast(self, values: Inputs | dict):
        """The shown step explained against the word typed into Why this word, or the step's runner-up (run,
        explained, foil, view): the explanation with that contrast."""
        i = Inputs.of(self.page, values)
        if i.run is None or i.run.replay:
            raise gr.Error("Translate a sentence first: the comparison explains one of its pieces.")
        trace = i.run.trace
        if not trace.output_ids:
            raise gr.Error("Nothing was decoded: there is no piece to compare.")
        explained = i.explained if i.explained is not None and i.explained.of is trace else self._explained(i.run)
        translator = self.registry.get(i.run.request.key).cpu
        try:
            contrast = engine.contrast(translator, trace, views.fitted(i.view, trace).step - 1, str(i.foil or ""))
        except ValueError as err:
            raise gr.Error(f"{str(err)[0].upper()}{str(err)[1:]}.") from None
        return dataclasses.replace(explained, contrast=contrast)

    def judge(self, values: Inputs | dict):
        """Head importance of the shown trace (run, judged), when the Head importance tab opens (once per
        translation judged)."""
        i = Inputs.of(self.page, values)
        if i.run is None or i.run.replay:
            return gr.skip()
        judged = self._judged(i.run, i.judged)
        return gr.skip() if judged is i.judged else judged

    def walk(self, values: Inputs | dict):
        """The softmax walk of the view (run, vectors, view), which the page's viewer asks for when its large view
        shows one it has not got: q, k, v of its kind and layer made when not at hand (a model pass), and the
        query's q, each key's k and v, which the viewer walks through eq. 1 and draws."""
        p, i = self.page, Inputs.of(self.page, values)
        run = i.run
        if run is None or run.replay:
            return gr.skip()
        view = views.fitted(i.view, run.trace)
        view = dataclasses.replace(view, query=min(max(view.query, 1), max(len(run.trace.source_tokens), 1)))
        walk = self._walk_key(run.trace, view)
        if walk is None:
            return gr.skip()
        vectors = i.vectors if walk in self._walks(run, i.vectors) else self._vectors(run, walk, i.vectors)
        shown = attention_views.walk(run.trace, view, self._walks(run, vectors)[walk])
        return {p.vectors: vectors, p.walk_data: shown.to_json()}

    def weigh(self, values: Inputs | dict):
        """The value norms of the shown trace (run, norms), which the page's viewer asks for when a view shows
        value-norm weights it has not got: made once per trace (a model pass)."""
        p, i = self.page, Inputs.of(self.page, values)
        if i.run is None or i.run.replay:
            return gr.skip()
        norms = i.norms if i.norms is not None and i.norms.of is i.run.trace else \
            engine.value_norms(self.registry.get(i.run.request.key).cpu, i.run.trace)
        return {p.norms: norms, p.norms_data: norms_payload(norms)}

    def stop(self, values: Inputs | dict) -> None:
        """Stop (signal): the running stream or replay ends at its next piece and shows what it has, labelled
        stopped."""
        Inputs.of(self.page, values).signal.asked += 1

    # ---- drawing a Run (no model) ----

    def present(self, run: Run, view: View, upto: int | None = None) -> dict:
        """Everything the page shows of a run: text, chips, the controls fitted to it and its trace payload, which
        the page's viewer draws; with `upto`, only its first `upto` steps (a slow-motion frame)."""
        p = self.page
        trace = run.trace if upto is None else views.prefix(run.trace, upto)
        L, H, T = views.shape(trace, view.kind)
        view = view.fit(L, H, T if upto is None else max(upto, 1))
        out = {p.translation: trace.text, p.out_chips: views.output_chips(trace.output_tokens, trace.top_k),
               p.src_chips: views.source_chips(trace.source_tokens),
               # "hidden" keeps it in the page, so that showing it draws no new component
               p.ablation: gr.update(value=ablation_views.comparison_html(run),
                                     visible=True if run.ablation is not None else "hidden"),
               # the viewer opens the payload at its own step, layer and head (its controls fit it)
               p.trace_data: {**trace_payload(trace, self.registry.get(run.request.key), run.request.text,
                                              list(run.notices)),
                              "opens_at": {"layer": view.layer, "head": view.head, "step": view.step,
                                           "query": min(view.query, len(trace.source_tokens))}}}
        if upto is not None:
            out[p.run_info] = f"Replaying in slow motion: step {upto} of {views.steps(run.trace)}…"
            return out
        timing = f" in {run.elapsed:.2f} s" if run.elapsed is not None else ""
        info = [f"⚠️ {viz.escape(n)}" for n in run.notices]
        info.append(f"{viz.escape(run.showing)}: {len(trace.source_tokens)} source pieces → {T} output pieces"
                    f"{timing} on `{views.made_on(trace)}` · "
                    f"[link to this view]({build_link(run.request, view)})")
        # a page saved of the last translation is not one of this one
        out.update({p.run_info: "\n\n".join(info), p.forced: trace.text, p.download: traces.trace_file(trace),
                    p.offline.file: gr.update(value=None, visible=False),
                    p.candidates: gr.update(value=views.candidate_rows(trace), visible=bool(trace.candidates))})
        return out

    def show(self, values: Inputs | dict) -> dict:
        """Draw a new Run (run, vectors, view) at its step (the last, or a link's); a slow-motion one is replayed
        by `replay`, which this starts (replay)."""
        p, i = self.page, Inputs.of(self.page, values)
        run = i.run
        if run is None:
            return gr.skip()
        if run.replay:
            return {p.replay: next(ASKS), p.run_info: "Replaying in slow motion…"}
        return self.present(run, dataclasses.replace(i.view, step=run.step))

    async def replay(self, values: Inputs | dict):
        """A slow-motion Run (run, signal, vectors, view) drawn step by step, then whole at its step. Between two
        steps it waits without a thread (each frame is drawn on one). Stop ends the replay where it is: the page
        then shows those steps (and the Run becomes them, so later views and links agree)."""
        p, i = self.page, Inputs.of(self.page, values)
        run, signal, vectors = i.run, i.signal, i.vectors
        if run is None or not run.replay:
            yield gr.skip()
            return
        view = dataclasses.replace(i.view, step=run.step)
        T = views.steps(run.trace)
        for t in range(1, T + 1):
            if signal.asked != run.stop_mark:
                kept = views.stopped(run.trace, t - 1)
                run = dataclasses.replace(run, trace=kept, showing=f"{run.showing}, stopped at step {t - 1} of {T}")
                # the prefix reads the whole trace's vectors cut to its length (attention_views.walk)
                vectors = Vectors(kept, vectors.by) if vectors is not None and vectors.of is i.run.trace else None
                break
            yield await anyio.to_thread.run_sync(self.present, run, dataclasses.replace(view, step=t), t)
            await asyncio.sleep(run.request.decoding.slow)
        done = dataclasses.replace(run, replay=False)
        shown = await anyio.to_thread.run_sync(self.present, done, view)
        yield {**shown, p.run: done, p.vectors: vectors}

    # ---- view controls (the viewer draws a view change in the page; these set controls) ----

    @staticmethod
    def _walks(run: Run, vectors: Vectors | None) -> Mapping[tuple[str, int], HeadVectors]:
        """The walk's q, k, v at hand for the run's trace."""
        return vectors.by if vectors is not None and vectors.of is run.trace else {}

    # ---- tabs (computed when opened) ----

    def tab_view(self, values: Inputs | dict):
        """The open tab's contents (run, twin, judged, tab, direction, view): figures of the shown trace, or
        of the chosen model; after a slow-motion replay, not while it plays."""
        i = Inputs.of(self.page, values)
        if i.run is not None and i.run.replay:
            return gr.skip()
        key = i.settings.key if i.settings.key in self.registry.entries else self.registry.default_key
        if i.run is not None:
            i = dataclasses.replace(i, view=views.fitted(i.view, i.run.trace))
        return self._tab(i, key) or gr.skip()  # an empty dict would read as one value

    def _tab(self, i: Inputs, key: str) -> dict:
        """The figures of the tab `i` has open, for the model `key` (the view fitted to the shown trace, if any)."""
        p, tab, run, twin = self.page, i.tab, i.run, i.twin
        entry = self.registry.get(key)
        trace = run.trace if run is not None and not run.replay else None
        same = trace is not None and run.request.key == key  # the shown trace is of the chosen model
        # the all-heads grid and picker, the statistics' figure and the predictions are the viewer's (host.js, tabs.js)
        if tab == Tab.WHY and trace is not None:  # made in the model's slot (make_tab, _made); drawn by the viewer
            ready = i.explained is not None and i.explained.of is trace
            return {p.explain_data: explain_payload(i.explained) if ready else None}
        if tab == Tab.STATS and trace is not None:
            return {p.tab_data: {"stats": head_views.table_json(trace)}}
        if tab == Tab.IMPORTANCE and trace is not None:
            # judged on the translation with every head on, by the model that made it; the viewer draws the maps
            own = run.ablation.original if run.ablation is not None else trace
            corpus = self.registry.get(run.request.key).corpus_heads()
            ready = i.judged is not None and i.judged.of is own  # judged in the model's slot (make_tab, _made)
            listed = ablation_views.importance_list(i.judged.importance) if ready else \
                "Open this tab again to judge the heads of this translation."
            return {p.importance_data: {
                        "key": run.request.key,
                        "maps": ablation_views.importance_maps(i.judged.importance, run.request.decoding.heads_off)
                        if ready else None,
                        "changes": ablation_views.log_prob_changes(run.ablation) if run.ablation is not None else None,
                        "corpus": ablation_views.corpus_maps(corpus, run.request.decoding.heads_off)
                        if corpus else None},
                    p.tab_data: {"importance_list": markdown_html(listed),
                                 "figures": {"pruning": figure_json(ablation_views.pruning_figure(corpus),
                                                                    f"{run.request.key}_pruning")
                                             if corpus is not None else None}}}
        if tab == Tab.COMPARE and trace is not None:
            if twin is None or twin.of is not trace:
                return {p.twin_data: None, p.tab_data: {"compare": markdown_html(
                    "Open this tab again to compare this translation with the untrained model.")}}
            # the viewer draws both from the two payloads, as the view asks
            return {p.twin_data: trace_payload(twin.trace, self.registry.get(run.request.key), run.request.text),
                    p.tab_data: {"compare": markdown_html(self._compare_text(run, twin))}}
        if tab == Tab.POSITIONAL:  # the viewer computes the table from the paper's formula and draws it
            return {p.pe_data: positional(entry.config, trace.source_tokens if same else None)}
        if tab == Tab.ARCHITECTURE:
            if same:
                arch = architecture_views.architecture(entry.config, len(trace.source_tokens),
                                                       len(trace.target_tokens),
                                                       "Shapes for this translation (the whole output read at once, "
                                                       "as in training and in the final pass)")
            else:
                example = (entry.examples or [""])[0]
                arch = architecture_views.architecture(entry.config, len(engine.source_pieces(entry.cpu, example)),
                                                       1, f"Shapes for “{example}” at the first decoding step "
                                                       "(T = 1); translate to see yours")
            return {p.tab_data: {"card": markdown_html(architecture_views.architecture_markdown(entry)),
                                 "figures": {"architecture": figure_json(arch),
                                             "parameters": figure_json(architecture_views.parameters(entry))}}}
        if tab == Tab.TRAINING:
            return {p.tab_data: {"training_card": markdown_html(training_views.training_markdown(entry), images=True),
                                 "figures": {"training": figure_json(training_views.training_curves(entry))}}}
        return {}

    def _compare_text(self, run: Run, twin: Twin) -> str:
        note = ("⚠️ This direction itself runs an untrained model, so both sides are random. "
                if self.registry.get(run.request.key).untrained else "")
        return (f"{note}**Trained:** {viz.escape(run.trace.text) or views.EMPTY}  \n**Untrained, left to itself:** "
                f"{viz.escape(twin.own)}  \nSame architecture and tokenizer, weights as initialised before training "
                "(seed 0). Right: the trained translation teacher-forced through the untrained weights, so the cells "
                "line up. Untrained heads spread their attention almost evenly; training makes them pick."
                + (" The untrained twin has every head on: the heads switched off are off in the trained model only."
                   if run.request.decoding.heads_off else ""))

    def direction_changed(self, values: Inputs | dict):
        """A new Direction (direction, run, twin, tab, view): the source's placeholder, the model's heads, and the
        open tab if it shows the model."""
        p, i = self.page, Inputs.of(self.page, values)
        entry = self.registry.get(i.settings.key if i.settings.key in self.registry.entries else None)
        out = {p.text: gr.update(placeholder=self._placeholder(entry.key)),
               p.heads_off: gr.update(choices=ablation_views.head_choices(entry.config), value=[])}
        if i.tab.shows_model:
            out.update(self._tab(i, entry.key))
        return out

    def _placeholder(self, key) -> str:
        entry = self.registry.get(key)
        return f"Type a {views.language(entry.source_lang)} sentence, e.g. {(entry.examples or [''])[0]}"

    # ---- links ----

    def share(self, values: Inputs | dict) -> str:
        """The query string of a link to what is on screen (run, view); the page prefixes its own address."""
        i = Inputs.of(self.page, values)
        if i.run is None:
            raise gr.Error("Translate a sentence first: the link carries its text.")
        return build_link(i.run.request, views.fitted(i.view, i.run.trace))

    def open_link(self, values: Inputs | dict, request: gr.Request):
        """A page opened from a link with text: the controls the link sets and its translation, in one model event
        (the page's first), read as the page would show them after load_link."""
        loaded = self.load_link(request)
        link = loaded[self.page.link]
        i = Inputs.of(self.page, values)
        settings = dataclasses.replace(i.settings, key=link.key or self.registry.default_key)
        translated = self.translate_link(dataclasses.replace(i, link=link, view=link.view, settings=settings))
        return {**loaded, **(translated if translated != gr.skip() else {})}

    def load_link(self, request: gr.Request):
        """The page's address: the controls a link sets (anything malformed keeps its default), and the Link
        for translate_link. Its notices come with its translation; a link without text has none, so they pop up."""
        p = self.page
        link = parse_link(dict(request.query_params) if request is not None else {},
                          {key: e.config for key, e in self.registry.entries.items()}, self.registry.default_key,
                          {key: e.decoding for key, e in self.registry.entries.items()})
        if not link.text:
            for notice in link.notices:
                gr.Warning(viz.escape(notice))  # a toast renders HTML: the link's values are shown as text
        entry = self.registry.get(link.key)
        c, view = entry.config, link.view  # the view fitted to this model by parse_link
        d = link.decoding
        out = {p.link: link, p.beam: d.beam_size, p.max_new: d.max_new_tokens or 0, p.lp: d.length_penalty,
               p.view_set: {**opened(view), **({} if link.presenter is None else {"presenter": link.presenter})}}
        # Hub models join the registry in the background: each page load offers those loaded by then.
        status = self.registry.status()
        out[p.direction] = gr.update(choices=self.registry.choices(), value=link.key or self.registry.default_key)
        out[p.model_notices] = gr.update(value=status, visible=bool(status))
        # the placeholder says the page's load events are done (the browser tests wait for it)
        out[p.text] = gr.update(placeholder=self._placeholder(link.key), **({"value": link.text} if link.text else {}))
        off = ablation_views.off_items(d.heads_off)
        out[p.heads_off] = gr.update(choices=ablation_views.head_choices(c), value=off)
        if off:
            out[p.heads_off_panel] = gr.update(open=True)
        return out

    def example_settings(self, direction):
        """An example runs with the default settings and view (its model's own decoding): put the controls back
        to them."""
        p = self.page
        entry = self.registry.get(direction if direction in self.registry.entries else None)
        return {p.beam: entry.decoding.beam_size, p.max_new: DEFAULTS["max"], p.top_k: DEFAULTS["k"],
                p.lp: entry.decoding.length_penalty, p.slow: DEFAULTS["slow"], p.view_set: opened(View())}

    # ---- animations: Export animation, and Client(url).predict(text=..., api_name="/animate") ----

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
        suffix = a.suffix if a.suffix in export.FORMATS else export.FORMATS[0]
        done = export.export(i.run.trace, animation,
                             traces.animation_path(export.file_name(i.run.request.key, animation, suffix)))
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
            request, problem = api_request(text, direction, None, None,
                                           {key: e.decoding for key, e in self.registry.entries.items()})
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
            done = export.export(trace, animation, traces.animation_path(
                export.file_name(request.key, animation, f".{file_format}")))
            notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
            return str(done.path), " ".join([*notices, *([done.notice] if done.notice else [])])
        except Exception as err:  # the API never raises: it says what went wrong
            return None, f"Animation failed: {type(err).__name__}: {err}"

    # ---- the offline page: Download page (HTML), and Client(url).predict(text=..., api_name="/export_html") ----

    def page_html(self, values: Inputs | dict) -> dict:
        """Download page (HTML) (run, explained, norms, view): the shown translation as one HTML file that opens
        offline, drawn from its trace (no model), opening at the shown view, with Why this word and the value norms
        when the page made them."""
        i = Inputs.of(self.page, values)
        run = i.run
        if run is None:
            raise gr.Error("Translate a sentence first: the page shows its translation.")
        key = run.request.key
        written = offline.write(run.trace, self.registry.get(key), run.request.text, list(run.notices),
                                traces.animation_path(offline.file_name(key)), i.view, i.explained, i.norms,
                                i.toured)
        return {self.page.offline.file: gr.update(value=str(written.path), visible=True)}

    def api_export_html(self, text: str, direction: str = "de-en") -> tuple[str | None, str]:
        """Translate `text` in `direction` with the model's own decoding and write the translation as one HTML page
        that opens offline, with no server: its steps, every attention kind, layer and head, head statistics,
        predictions, positional encoding, architecture and model card.

        Returns (file, notice): the HTML file (None when nothing was made), and what went wrong or what to know
        (empty when all is well; the page shows it too).
        """
        try:
            request, problem = api_request(text, direction, None, None,
                                           {key: e.decoding for key, e in self.registry.entries.items()},
                                           {s.name: s.reason for s in self.registry.skipped})
            if request is None:
                return None, problem
            entry = self.registry.get(request.key)
            translator, notice = self.registry.translator(request.key, request.device)
            trace = engine.translate(translator, request)
            notices = views.run_notices(entry, trace, [*request.notices, *([notice] if notice else [])])
            written = offline.write(trace, entry, request.text, notices,
                                    traces.animation_path(offline.file_name(request.key)))
            return str(written.path), " ".join(notices)
        except Exception as err:  # the API never raises: it says what went wrong
            return None, f"Page failed: {type(err).__name__}: {err}"

    # ---- the API: Client(url).predict(text=..., direction="de-en", api_name="/translate") ----

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
            request, problem = api_request(text, direction, None, None,
                                           {key: e.decoding for key, e in self.registry.entries.items()},
                                           {s.name: s.reason for s in self.registry.skipped})
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
        except Exception as err:  # the API never raises: it says what went wrong
            return "", f"Explanation failed: {type(err).__name__}: {err}", None

    def api_translate(self, text: str, direction: str = "de-en", beam_size: int | None = None,
                      max_new_tokens: int | None = None, heads_off: str | None = None) -> tuple[str, str, dict | None]:
        """Translate `text` in `direction` (a model key: "de-en", "en-de", ...).

        Returns (translation, notice, trace). The notice is empty when all went well; otherwise it says what
        happened (bad input, unknown or skipped direction, truncation, untrained model), and the translation is
        empty or partial. beam_size: 1-8 (null: the model's own, as its card chose; the length penalty is always
        the model's own); max_new_tokens: 1-200 (null: automatic); both JSON numbers without a fraction. The
        trace is the Trace as JSON (see Trace.to_dict; attention as nested lists [layer][head][query][key];
        Trace.from_dict reads it back), or None when nothing was translated. heads_off: heads to switch off, as
        links name them ("cross:1.2,encoder:1.3"; null: none); any that the model does not have are ignored, with
        a notice.
        """
        try:
            request, problem = api_request(text, direction, beam_size, max_new_tokens,
                                           {key: e.decoding for key, e in self.registry.entries.items()},
                                           {s.name: s.reason for s in self.registry.skipped})
            if request is None:
                return "", problem, None
            request = self._with_heads_off(request, heads_off)
            translator, notice = self.registry.translator(request.key, request.device)
            trace = engine.translate(translator, request)
            notices = views.run_notices(self.registry.get(request.key), trace,
                                        [*request.notices, *([notice] if notice else [])])
            return trace.text, " ".join(notices), trace.to_dict()
        except Exception as err:  # the API never raises: it says what went wrong
            return "", f"Translation failed: {type(err).__name__}: {err}", None
