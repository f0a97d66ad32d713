"""Switching heads off in the app: the page, a link and the API carry the heads off, and the Head importance tab
measures what each head is for (transformer.heads computes it; these tests check the app shows what it computed)."""
from __future__ import annotations

import dataclasses
import json
import re

import gradio as gr
import numpy as np
import pytest

from anatomy import ablation_views, engine
from anatomy.inputs import View, build_link, heads_off, parse_link
from anatomy.run import StopSignal
from tests import viewer
from tests.app_fixtures import SENTENCE, configs, replayed, run_of, show
from tests.viewer import needs_node
from transformer import HeadMask
from transformer.heads import sentence_importance
from ui.values import Inputs, PageSettings, Tab

OFF = ("cross:2.1", "cross:2.2")  # every cross-attention head of the tiny models' last layer


def _ablate(h, run, off, **page):
    return h.ablate(Inputs(settings=PageSettings(key=run.request.key, heads_off=tuple(off)), run=run, **page))


def test_heads_off_are_checked_against_the_model_and_bad_ones_are_named(tiny):
    config = tiny.registry.get("de-en").config
    assert heads_off(["cross:2.2", "encoder:1.1", "cross:2.2"], config) == ("encoder:1.1,cross:2.2", [])
    checked, notices = heads_off("cross:9.1, decoder:1.2,,oops", config)
    assert checked == "decoder:1.2"
    assert "no cross:9.1" in notices[0] and "'oops' is not KIND:LAYER.HEAD" in notices[0]
    assert heads_off({"cross": 1}, config)[0] == "" and "must be a string" in heads_off(3, config)[1][0]


def test_switching_heads_off_translates_again_beside_the_all_heads_translation(tiny):
    run = run_of(tiny, SENTENCE)
    out = _ablate(tiny, run, OFF)
    ablated = out[tiny.page.run]
    assert ablated.request.decoding.heads_off == "cross:2.1,cross:2.2" == ablated.trace.settings.heads_off
    assert ablated.ablation.original is run.trace  # the page's own all-heads translation, not a new one
    translator = tiny.registry.translator("de-en", "cpu")[0]
    mask = HeadMask.parse(ablated.request.decoding.heads_off, translator.config)
    assert ablated.trace.output_ids == translator.translate(SENTENCE, heads_off=str(mask)).output_ids
    expected = translator.log_probs(run.trace.source_ids, run.trace.output_ids, mask)
    assert np.allclose(ablated.ablation.ablated_log_probs, expected)
    assert np.allclose(ablated.ablation.log_probs, translator.log_probs(run.trace.source_ids, run.trace.output_ids))
    page = show(tiny, ablated)[-1]
    html = page[tiny.page.ablation]  # the comparison's HTML: shown (none when every head is on)
    change = ablated.ablation.ablated_log_probs.sum() - ablated.ablation.log_probs.sum()
    assert "2 heads off" in html and f"{change:+.2f}" in html
    # the viewer is told which heads are off (test_switched_off_heads_are_drawn_as_off draws them)
    assert {k["name"]: k["off"] for k in page[tiny.page.trace_data]["kinds"]}["cross"] == [[2, 1], [2, 2]]
    # every head on again: the all-heads translation comes back without a model pass
    back = _ablate(tiny, ablated, [])[tiny.page.run]
    assert back.trace is run.trace and back.ablation is None and back.request.decoding.heads_off == ""
    assert _ablate(tiny, back, []) == gr.skip()  # unchanged heads: nothing to do
    assert show(tiny, back)[-1][tiny.page.ablation] == ""  # every head on: the comparison hidden


@pytest.mark.slow  # node draws
@needs_node
def test_switched_off_heads_are_drawn_as_off(tiny):
    """The grid greys the heads off and names each head for a click; the large view of their layer says so."""
    ablated = _ablate(tiny, run_of(tiny, SENTENCE), OFF)[tiny.page.run]
    page = viewer.drawn(show(tiny, ablated)[-1][tiny.page.trace_data], [View.of("cross", 2, "mean", False)])[0]
    titles = [a["text"] for a in page["grid"]["layout"]["annotations"]]
    assert [t for t in titles if "OFF" in t] == ["layer 2 · head 1 · <b>OFF</b>", "layer 2 · head 2 · <b>OFF</b>"]
    assert {t.get("meta") for t in page["grid"]["data"]} >= {"head=cross:1.1", "head=cross:2.2"}  # what a click names
    assert "heads 1, 2 off" in viewer.title(page["heatmap"])


@pytest.mark.parametrize("tab", [Tab.HEADS, Tab.COMPARE, Tab.IMPORTANCE])
def test_a_head_switched_off_is_sent_with_the_page_and_the_open_tab_in_its_own_event(tiny, tab):
    """ablate (one model event) sends the new Run as show sends it, and the open tab as tab_view does (reading the
    controls show set): the page sends nothing else."""
    run = run_of(tiny, SENTENCE)
    p, view = tiny.page, View.of("encoder", 9, "2", True, step=1, query=40)  # the new Run opens at its last step
    out = tiny.ablate(Inputs(settings=PageSettings(key="de-en", heads_off=OFF), run=run, tab=tab, view=view))
    new = out[p.run]
    shown = tiny.show(Inputs(run=new, view=dataclasses.replace(view, step=None), signal=StopSignal()))
    assert {c: out[c] for c in shown if c is not p.trace_data} == {c: v for c, v in shown.items()
                                                                  if c is not p.trace_data}
    assert out[p.trace_data]["pieces"] == shown[p.trace_data]["pieces"] and out[p.ablation]
    assert (p.twin_data in out) == (tab == Tab.COMPARE) and (p.importance_data in out) == (tab == Tab.IMPORTANCE)
    assert (p.tab_data in out) == (tab != Tab.HEADS)  # All heads is the viewer's own, from the payload
    assert out[p.trace_data]["opens_at"]["step"] == len(new.trace.output_tokens)
    assert tiny.ablate(Inputs(settings=PageSettings(key="de-en", heads_off=OFF), run=new, tab=tab,
                              view=view)) == gr.skip()  # unchanged heads: nothing to send


def test_translate_with_heads_off_shows_both_translations(tiny):
    settings = PageSettings("de-en", SENTENCE, 1, 0, "cpu", 5, 1.0, 0.0, ("cross:2.1", "bogus"))
    out = list(tiny.translate_page(Inputs(settings)))[-1]
    made = out[tiny.page.run]
    assert made.request.decoding.heads_off == "cross:2.1" and made.ablation is not None
    assert made.ablation.original.settings.heads_off == ""
    assert any("'bogus' is not KIND:LAYER.HEAD" in n for n in made.notices)


def test_a_link_carries_the_heads_off_and_a_bad_one_gets_a_notice(tiny):
    run = _ablate(tiny, run_of(tiny, SENTENCE), OFF)[tiny.page.run]
    link = build_link(run.request, View())
    assert link.endswith("&off=cross:2.1,cross:2.2")
    parsed = parse_link(dict(p.split("=", 1) for p in link[1:].split("&")), configs(tiny))
    assert parsed.decoding.heads_off == "cross:2.1,cross:2.2"
    bad = parse_link({"text": SENTENCE, "off": "cross:7.7,decoder:1.1"}, configs(tiny))
    made = tiny.translate_link(Inputs(link=bad))[tiny.page.run]
    assert made.request.decoding.heads_off == "decoder:1.1" and made.ablation is not None
    assert any("no cross:7.7" in n for n in made.notices)


def test_the_api_takes_heads_off_and_names_the_ones_it_ignored(tiny):
    text, notice, trace = tiny.api_translate(SENTENCE, "de-en", 1, None, "cross:2.1,cross:2.2")
    assert trace["settings"]["heads_off"] == "cross:2.1,cross:2.2" and "ignored" not in notice
    text, notice, trace = tiny.api_translate(SENTENCE, "de-en", 1, None, "cross:3.1")
    assert "no cross:3.1" in notice and "heads_off" not in trace["settings"]  # translated with every head on
    assert tiny.api_translate(SENTENCE, "de-en", 1, None, ["cross:2.1"])[2]["settings"]["heads_off"] == "cross:2.1"


def test_the_head_importance_tab_shows_the_measures_of_every_head(tiny):
    run = _ablate(tiny, run_of(tiny, SENTENCE), ["cross:1.2"])[tiny.page.run]
    # judged in the model's slot (the tab's opening, or a translation made with it open), once per all-heads trace
    judged = tiny.judge(Inputs(run=run))
    assert judged.of is run.ablation.original and tiny.judge(Inputs(run=run, judged=judged)) == gr.skip()
    assert _ablate(tiny, run, ["cross:2.1"], tab=Tab.IMPORTANCE, judged=judged)[tiny.page.judged] is judged
    out = tiny._tab(Inputs(run=run, judged=judged, tab=Tab.IMPORTANCE, view=View().fit(2, 2, 99)), "de-en")
    data = out[tiny.page.importance_data]  # what the page's viewer draws
    translator = tiny.registry.get("de-en").cpu
    expected = sentence_importance(translator, run.ablation.original)  # judged with every head on
    cross = next(k for k in data["maps"]["kinds"] if k["name"] == "cross")
    assert np.allclose(cross["values"][0], expected.ablation.cross)  # ablation, gradient, confidence
    assert np.allclose(cross["values"][2], expected.confidence.cross)
    assert [m["title"].split(":")[0] for m in data["maps"]["measures"]] == ["ablation", "gradient",
                                                                            "confidence (mean max weight)"]
    assert data["maps"]["off"] == ["cross:1.2"] and data["corpus"] is None
    # the drop's scale diverges from white at 0, and says which way a head helps (a head whose removal raised
    # log p is as deep a colour as one whose removal lowered it as much)
    ablation = data["maps"]["measures"][0]
    stops = dict((round(at, 3), color) for at, color in ablation["colorscale"])
    assert ablation["zmin"] == -ablation["zmax"] < 0 and stops[0.5] == "rgb(247,247,247)", ablation
    assert any(line.startswith("red:") and "helps" in line for line in ablation["legend"]), ablation["legend"]
    assert any(line.startswith("blue:") and "rises" in line for line in ablation["legend"]), ablation["legend"]
    assert np.allclose(np.subtract(data["changes"]["after"], data["changes"]["before"]),
                       run.ablation.ablated_log_probs - run.ablation.log_probs)
    top, drop = expected.ablation.ranked()[0]
    listed = out[tiny.page.tab_data]["importance_list"]  # HTML, from the list's markdown
    label = re.escape(ablation_views.head_label(top.kind, top.layer, top.head))
    assert re.search(rf"<td>{label}</td>\s*<td[^>]*>{re.escape(f'{drop:+.3f}')}</td>", listed)
    assert data["changes"] is not None  # the viewer shows the heads-off change in log p
    unjudged = tiny._tab(Inputs(run=run, tab=Tab.IMPORTANCE, view=View().fit(2, 2, 99)), "de-en")
    assert unjudged[tiny.page.importance_data]["maps"] is None


@pytest.mark.slow  # node draws
@needs_node
def test_the_viewer_draws_the_head_importance_maps_and_the_heads_off_changes(tiny):
    """Three maps per kind, each cell its value and naming its head for a click, the heads off greyed; the change
    in log p of each piece."""
    run = _ablate(tiny, run_of(tiny, SENTENCE), ["cross:1.2"])[tiny.page.run]
    judged = tiny.judge(Inputs(run=run))
    data = tiny._tab(Inputs(run=run, judged=judged, tab=Tab.IMPORTANCE, view=View().fit(2, 2, 99)),
                     "de-en")[tiny.page.importance_data]
    page = viewer.drawn(None, [View()], importance=data)[0]
    figure = page["importance"]
    assert len(figure["data"]) == 9  # 3 kinds × (ablation, gradient, confidence)
    maps = {(t["customdata"][0][0], t["hovertemplate"].split("<br>")[1].split(":")[0]): t for t in figure["data"]}
    ablation = next(t for (key, measure), t in maps.items() if key == "head=cross:1.1" and measure == "ablation")
    assert np.allclose(ablation["z"], judged.importance.ablation.cross)
    assert "OFF" in json.dumps(figure["layout"]["annotations"])  # cross:1.2 is off
    assert figure["layout"]["meta"]["export"] == "de-en_head-importance"
    bars = page["log-probs"]["data"][0]
    assert np.allclose(bars["y"], run.ablation.ablated_log_probs - run.ablation.log_probs)
    assert bars["x"][0].startswith("1 ")


def test_checkbox_choices_name_every_head_of_the_model(tiny):
    config = tiny.registry.get("de-en").config
    choices = ablation_views.head_choices(config)
    assert len(choices) == 3 * 2 * 2 and choices[0] == ("encoder L1 H1", "encoder:1.1")
    assert all(heads_off(value, config) == (value, []) for _, value in choices)


def test_the_tab_shows_the_corpus_importance_of_a_model_whose_folder_has_it(folders, tmp_path):
    import shutil

    import app
    from transformer.head_mask import HeadRef
    from transformer.heads import CorpusImportance, HeadScores, PruningCurve, write_heads

    folder = shutil.copytree(folders / "tiny-de-en", tmp_path / "tiny-de-en")
    ones = HeadScores(*(np.full((2, 2), 0.5) for _ in range(3)))
    order = [HeadRef(k, layer, head) for k in ("encoder", "decoder", "cross") for layer in (1, 2) for head in (1, 2)]
    bleu = [20.0 - k for k in range(len(order) + 1)]
    write_heads(folder, str(folder), CorpusImportance("tatoeba", "val", 7, ones, ones, "normalized",
                                                       PruningCurve(order, bleu), PruningCurve(order, bleu), 0,
                                                       "BLEU|test"))
    h = app.create_app([str(folder)]).anatomy
    run = run_of(h, SENTENCE)
    out = h._tab(Inputs(run=run, judged=h.judge(Inputs(run=run)), tab=Tab.IMPORTANCE, view=View().fit(2, 2, 99)),
                 "de-en")
    corpus = out[h.page.importance_data]["corpus"]
    assert corpus["measures"][0]["title"] == "importance over 7 tatoeba val sentences"
    assert all(np.allclose(k["values"][0], 0.5) for k in corpus["kinds"])
    curve = out[h.page.tab_data]["figures"]["pruning"]
    assert "0 heads off, < 1 BLEU lost" in json.dumps(curve["layout"])  # 1 BLEU lost with the first head


def test_without_heads_json_the_corpus_row_stays_hidden(tiny):
    out = tiny._tab(Inputs(run=run_of(tiny, SENTENCE), tab=Tab.IMPORTANCE, view=View().fit(2, 2, 99)), "de-en")
    assert out[tiny.page.importance_data]["corpus"] is None  # the viewer keeps the corpus row hidden
    assert out[tiny.page.tab_data]["figures"]["pruning"] is None


# Heads off that change the attention maps too: encoder:1.1 feeds encoder layer 2 and the memory that cross-attention
# reads (a head that is off still computes its own weights; what is above it changes).
OFF_BELOW = ("encoder:1.1", "cross:1.2")


def _probs(trace) -> np.ndarray:
    return np.array([[c.prob for c in row] for row in trace.top_k])


def _same(a, b) -> bool:
    return all(np.allclose(x, y, atol=1e-5) for x, y in ((a.encoder_self_attn, b.encoder_self_attn),
                                                          (a.cross_attn, b.cross_attn), (_probs(a), _probs(b))))


def test_what_is_read_again_from_a_trace_made_with_heads_off_keeps_those_heads_off(tiny):
    """A beam candidate, the softmax walk's q, k, v and Inspect of a trace made with heads off are computed with
    the same heads off; the untrained twin keeps every head on (by design, said on the page)."""
    p = tiny.page
    run = _ablate(tiny, run_of(tiny, SENTENCE, beam=3, max_new=8), OFF_BELOW)[p.run]
    assert run.trace.settings.heads_off == ",".join(OFF_BELOW) and len(run.trace.candidates) >= 2
    translator = tiny.registry.get("de-en").cpu
    mask = HeadMask.parse(run.trace.settings.heads_off, translator.config)
    ids = list(run.trace.candidates[1].ids)
    masked = translator.force_output(run.trace.source_ids, ids, head_mask=mask)
    assert not _same(masked, translator.force_output(run.trace.source_ids, ids))  # the heads off matter here
    picked = tiny.candidate(Inputs(run=run, candidate=1))[p.run]
    assert picked.trace.settings.heads_off == run.trace.settings.heads_off and _same(picked.trace, masked)
    # the walk's q, k, v reproduce the shown trace's weights in every layer of every kind
    for trace in (run.trace, picked.trace):
        for kind in ("encoder", "decoder", "cross"):
            maps = trace.attention(kind)
            for layer in range(1, maps.weights.shape[0] + 1):
                vectors = engine.head_vectors(translator, trace, kind, layer)
                assert np.allclose(vectors.weights, maps.weights[layer - 1], atol=1e-4), (kind, layer)
    forced = tiny.force(Inputs(run=run, forced=run.trace.candidates[1].text))[p.run].trace
    assert forced.settings.heads_off == run.trace.settings.heads_off
    assert _same(forced, translator.force_output(forced.source_ids, forced.output_ids, head_mask=mask))
    twin = tiny.make_twin(Inputs(run=run))
    assert twin.trace.settings.heads_off == "" and _same(
        twin.trace, tiny.registry.get("de-en").twin().force_output(run.trace.source_ids, run.trace.output_ids, top_k=1))
    compare = tiny._tab(Inputs(run=run, twin=twin, tab=Tab.COMPARE, view=View().fit(2, 2, 99)), "de-en")
    assert "The untrained twin has every head on" in compare[p.tab_data]["compare"]


def _stopped_stream(h):
    signal = StopSignal()
    stream = h.translate_page(Inputs(PageSettings("de-en", SENTENCE, 1, 8, "cpu", 5, 1.0), signal=signal))
    next(stream), next(stream)  # the source pieces, then the first piece
    h.stop(Inputs(signal=signal))
    return list(stream)[-1][h.page.run]


def _stopped_replay(h):
    signal = StopSignal()
    run = run_of(h, SENTENCE, max_new=8, slow=0.1, signal=signal)
    return replayed(h, Inputs(run=run, view=View.of("cross", 1, "mean", False), signal=signal),
                    stop_after=2)[-1][h.page.run]


@pytest.mark.parametrize("stop", [_stopped_stream, _stopped_replay], ids=["stream", "slow-motion replay"])
def test_a_stopped_translation_is_never_the_all_heads_baseline(tiny, stop):
    p = tiny.page
    full = run_of(tiny, SENTENCE, max_new=8).trace
    stopped = stop(tiny)
    assert 1 <= len(stopped.trace.output_ids) < len(full.output_ids) and stopped.trace.settings.stopped
    ablated = _ablate(tiny, stopped, OFF)[p.run]
    assert ablated.ablation.original.output_ids == full.output_ids and not ablated.ablation.original.settings.stopped
    back = _ablate(tiny, ablated, [])[p.run]  # every head on again: the whole translation, not the stopped one
    assert back.trace.output_ids == full.output_ids and back.trace.text == full.text
