"""What the page shows of a Run and of the chosen model (no model pass): the Run itself, its slow-motion replay, the
open tab, a new direction, links and an address's settings.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

import anyio
import gradio as gr

import viz
from anatomy import ablation_views, architecture_views, engine, head_views, training_views, views
from anatomy.inputs import View, build_link, parse_link
from anatomy.layout import markdown_html
from anatomy.payload import explain_payload, positional, trace_payload
from anatomy.run import Run, Twin, Vectors

from ..figures import figure_json
from ..layout import DEFAULTS, placeholder
from ..values import Inputs, Tab
from .model import ASKED, opened

if TYPE_CHECKING:
    from anatomy.registry import ModelRegistry

    from ..layout import Page


class Showing:
    """What the page shows of a Run and of the chosen model (no model pass): a part of ui.handlers.Handlers, which
    holds the registry and the page."""

    registry: ModelRegistry
    page: Page

    def present(self, run: Run, view: View, upto: int | None = None) -> dict:
        """Everything the page shows of a run: text, chips, the controls fitted to it and its trace payload, which
        the page's viewer draws; with `upto`, only its first `upto` steps (a slow-motion frame)."""
        p = self.page
        trace = run.trace if upto is None else views.prefix(run.trace, upto)
        opens = run.opens if upto is None else None
        if opens is not None:  # an example pair's own view
            view = dataclasses.replace(opens, step=view.step)
        L, H, T = views.shape(trace, view.kind)
        view = view.fit(L, H, T if upto is None else max(upto, 1))
        out = {p.translation: trace.text, p.out_chips: views.output_chips(trace.output_tokens, trace.top_k),
               p.src_chips: views.source_chips(trace.source_tokens),
               p.ablation: ablation_views.comparison_html(run),
               # the viewer opens the payload at its own step, layer and head (its controls fit it)
               p.trace_data: {**trace_payload(trace, self.registry.get(run.request.key), run.request.text,
                                              list(run.notices), run.pair, run.own.trace if run.own else None),
                              "opens_at": {"layer": view.layer, "head": view.head, "step": view.step,
                                           "query": min(view.query, len(trace.source_tokens)),
                                           **({"kind": view.kind, "merge": view.merge} if opens else {})}}}
        if upto is not None:
            out[p.run_info] = f"Replaying in slow motion: step {upto} of {views.steps(run.trace)}…"
            return out
        timing = f" in {run.elapsed:.2f} s" if run.elapsed is not None else ""
        info = [f"⚠️ {viz.escape(n)}" for n in run.notices]
        info.append(f"{viz.escape(run.showing)}: {len(trace.source_tokens)} source pieces → {T} output pieces"
                    f"{timing} on `{views.made_on(trace)}` · "
                    f"[link to this view]({build_link(run.request, view, run.trace.settings.prefix)})")
        # a trace or page saved of the last translation is not one of this one
        out.update({p.run_info: "\n\n".join(info), p.forced: trace.text,
                    p.trace.file: gr.update(value=None, visible=False),
                    p.offline.file: gr.update(value=None, visible=False),
                    p.candidates: views.candidate_rows(trace)})
        return out

    def show(self, values: Inputs | dict) -> dict:
        """Draw a new Run (run, vectors, view) at its step (the last, or a link's); a slow-motion one is replayed
        by `replay`, which this starts (replay)."""
        p, i = self.page, Inputs.of(self.page, values)
        run = i.run
        if run is None:
            return gr.skip()
        if run.replay:
            return {p.replay: next(ASKED), p.run_info: "Replaying in slow motion…"}
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
                # what the whole trace said of itself (cut by the length limit, ...) is said again of what was kept
                entry = self.registry.get(run.request.key)
                said = set(views.run_notices(entry, run.trace, []))
                run = dataclasses.replace(run, trace=kept, showing=f"{run.showing}, stopped at step {t - 1} of {T}",
                                          notices=tuple(views.run_notices(
                                              entry, kept, [n for n in run.notices if n not in said])))
                # the prefix reads the whole trace's vectors cut to its length (attention_views.walk)
                vectors = Vectors(kept, vectors.by) if vectors is not None and vectors.of is i.run.trace else None
                break
            yield await anyio.to_thread.run_sync(self.present, run, dataclasses.replace(view, step=t), t)
            await asyncio.sleep(run.request.decoding.slow)
        done = dataclasses.replace(run, replay=False)
        shown = await anyio.to_thread.run_sync(self.present, done, view)
        yield {**shown, p.run: done, p.vectors: vectors}

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
                arch = architecture_views.of_trace(entry.config, trace)
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
        out = {p.text: gr.update(placeholder=placeholder(entry)),
               p.heads_off: gr.update(choices=ablation_views.head_choices(entry.config), value=[])}
        if i.tab.shows_model:
            out.update(self._tab(i, entry.key))
        return out

    def share(self, values: Inputs | dict) -> str:
        """The query string of a link to what is on screen (run, view); the page prefixes its own address."""
        i = Inputs.of(self.page, values)
        if i.run is None:
            raise gr.Error("Translate a sentence first: the link carries its text.")
        return build_link(i.run.request, views.fitted(i.view, i.run.trace), i.run.trace.settings.prefix)

    def open_link(self, values: Inputs | dict, request: gr.Request):
        """A page opened from a link with text: the controls the link sets and its translation, in one model event
        (the page's first), read as the page would show them after load_link."""
        loaded = self.load_link(request)
        link = loaded[self.page.link]
        i = Inputs.of(self.page, values)
        settings = dataclasses.replace(i.settings, key=link.key or self.registry.default_key)
        translated = self.translate_link(dataclasses.replace(i, link=link, view=link.view, settings=settings))
        return loaded if translated == gr.skip() else {**loaded, **translated}

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
        # a link that names no part of the view leaves it to the page: a translation's own opening (an example
        # pair's opens_at) or the viewer's default
        opening = opened(view) if link.names_view else {"asked": next(ASKED)}
        out = {p.link: link, p.beam: d.beam_size, p.max_new: d.max_new_tokens or 0, p.lp: d.length_penalty,
               p.view_set: {**opening, **({} if link.presenter is None else {"presenter": link.presenter})}}
        # Hub models join the registry in the background: each page load offers those loaded by then.
        status = self.registry.status()
        out[p.direction] = gr.update(choices=self.registry.choices(), value=link.key or self.registry.default_key)
        out[p.model_notices] = gr.update(value=markdown_html(status), visible=bool(status))
        out[p.text] = gr.update(placeholder=placeholder(entry), **({"value": link.text} if link.text else {}))
        off = ablation_views.off_items(d.heads_off)
        out[p.heads_off] = gr.update(choices=ablation_views.head_choices(c), value=off)
        if off:
            out[p.heads_off_panel] = gr.update(open=True)
        return out

    def example(self, values: Inputs | dict):
        """An example clicked (its index in the page's list, from the view): its text, direction and second sentence
        in the form, with its model's own settings and the default view (example_settings); translated next."""
        p, i = self.page, Inputs.of(self.page, values)
        if i.example is None or i.example >= len(p.example_items):
            return gr.skip()
        text, key, compare = p.example_items[i.example]
        return {p.text: text, p.direction: key, p.compare: compare, **self.example_settings(key)}

    def example_settings(self, direction):
        """An example runs with the default settings and view (its model's own decoding): put the controls back
        to them."""
        p = self.page
        entry = self.registry.get(direction if direction in self.registry.entries else None)
        return {p.beam: entry.decoding.beam_size, p.max_new: DEFAULTS["max"], p.top_k: DEFAULTS["k"],
                p.lp: entry.decoding.length_penalty, p.slow: DEFAULTS["slow"], p.view_set: opened(View())}
