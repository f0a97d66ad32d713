"""What the viewer asks of the server (ask_model, ask_draw) and what a model makes for the shown Run when asked: the
untrained twin, head importance, why each piece, the softmax walk's q, k, v, the value norms.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Mapping

import gradio as gr

from anatomy import attention_views, engine, views
from anatomy.inputs import View, clean_text
from anatomy.payload import norms_payload
from anatomy.run import Run, Vectors
from transformer import HeadVectors, Trace

from ..values import ASKS, Inputs, Tab

if TYPE_CHECKING:
    from anatomy.registry import ModelRegistry

    from ..layout import Page


class Asking:
    """What the viewer asks of the server (ask_model, ask_draw) and what a model makes for the shown Run when asked: a
    part of ui.handlers.Handlers, which holds the registry and the page."""

    registry: ModelRegistry
    page: Page

    def ask_model(self, values: Inputs | dict, request: gr.Request, progress=gr.Progress()):
        """What the viewer asks of a model (ui/values.py ASKS["model"]), named by its view's `ask`."""
        return self._answer("model", Inputs.of(self.page, values), request, progress)

    def ask_draw(self, values: Inputs | dict, request: gr.Request):
        """What the viewer asks the server to draw or write (ASKS["draw"]), named by its view's `ask`."""
        return self._answer("draw", Inputs.of(self.page, values), request, None)

    def _answer(self, kind: str, i: Inputs, request: gr.Request, progress):
        """The answer to the view's ask, when it is one of `kind`'s (an ask of another kind is another event's)."""
        p = self.page
        answers = {
            # of a model
            "link": lambda: self.open_link(i, request),  # a page load's address with text: its one model event
            "walk": lambda: self.walk(i),  # the softmax walk's q, k, v
            "norms": lambda: self.weigh(i),  # the value norms
            "make": lambda: self._then_tab(i, self.make_tab(i, progress)),  # what the open tab shows of a model
            "contrast": lambda: self._then_tab(i, {p.explained: self.contrast(i)}),  # Why this word's comparison
            "toggle": lambda: self._toggled(i),  # a clicked head off or on again, and the translation with it
            "branch": lambda: self.branch(i),  # the translation continued from a step's other piece or a word
            "candidate": lambda: self.candidate(i),  # a beam candidate clicked in the table
            # drawn or written
            "address": lambda: self.load_link(request),  # a page load's address without text: its settings
            "tab": lambda: self.tab_view(i),  # the open tab's contents
            "share": lambda: {p.link_data: self.share(i)},  # a link to the view
            "own": lambda: self.back_to_own(i),  # a branch's model's own translation again, as it was kept
        }
        return answers[i.ask]() if i.ask in ASKS[kind] else gr.skip()

    def _then_tab(self, i: Inputs, made) -> dict:
        """What a model made for the open tab, and the tab's contents with it."""
        made = {} if made == gr.skip() else made
        opened = dataclasses.replace(i, **{slot.name: value for slot, value in made.items()})
        shown = self.tab_view(opened)
        return {**made, **({} if shown == gr.skip() else shown)} or gr.skip()

    def _toggled(self, i: Inputs):
        off = self.toggle_head(i.settings.heads_off, i.clicked_head)
        if off == gr.skip():
            return off
        ablated = self.ablate(dataclasses.replace(i, settings=dataclasses.replace(i.settings, heads_off=tuple(off))))
        return {self.page.heads_off: off, **({} if ablated == gr.skip() else ablated)}

    def make_tab(self, values: Inputs | dict, progress=gr.Progress()):
        """What the open tab shows of a model (run, twin, judged, explained, tab), when it opens or a translation
        comes to it: the untrained twin, head importance or why each piece, each once per translation."""
        p, i = self.page, Inputs.of(self.page, values)
        if not i.tab.needs_model:  # the one list of such tabs (anatomy/layout.py Tab): each has its maker here
            return gr.skip()
        state, make = {Tab.COMPARE: (p.twin, self.make_twin), Tab.IMPORTANCE: (p.judged, self.judge),
                       Tab.WHY: (p.explained, lambda i: self.explain_trace(i, progress))}[i.tab]
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
        # nothing decoded: no piece to explain (the viewer says so)
        if i.tab != Tab.WHY or i.run is None or i.run.replay or not i.run.trace.output_ids or \
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
        translator = self.registry.get(i.run.request.key).maker(trace)
        try:
            contrast = engine.contrast(translator, trace, views.fitted(i.view, trace).step - 1,
                                       clean_text(str(i.foil or ""))[0])
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
        by[walk] = engine.head_vectors(self.registry.get(run.request.key).maker(run.trace), run.trace, *walk)
        return Vectors(run.trace, by)

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
            engine.value_norms(self.registry.get(i.run.request.key).maker(i.run.trace), i.run.trace)
        return {p.norms: norms, p.norms_data: norms_payload(norms)}

    @staticmethod
    def _walks(run: Run, vectors: Vectors | None) -> Mapping[tuple[str, int], HeadVectors]:
        """The walk's q, k, v at hand for the run's trace."""
        return vectors.by if vectors is not None and vectors.of is run.trace else {}
