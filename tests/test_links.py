"""A model whose encoder is deeper than its decoder (each attention kind its own layers on the page, in links, the
API and the offline page); what a link's values become, and every value it drops or changes named with the
model's real range; an empty text answered with a calm hint."""
from __future__ import annotations

import html
import json
import re
import urllib.parse

import pytest

import app
from anatomy import offline
from anatomy.inputs import View, parse_link
from anatomy.run import StopSignal
from tests.app_fixtures import SENTENCE, configs, make_checkpoint, run_of, show, translate
from ui.values import Inputs, PageSettings, Tab

ENCODER_LAYERS, DECODER_LAYERS, HEADS = 3, 2, 2


class Req:
    def __init__(self, query: str):
        self.query_params = dict(urllib.parse.parse_qsl(query.lstrip("?"), keep_blank_values=True))


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """The app's Handlers on one tiny de-en model with a 3-layer encoder and a 2-layer decoder."""
    folder = make_checkpoint(tmp_path_factory.mktemp("uneven") / "tiny-de-en", n_encoder_layers=ENCODER_LAYERS,
                             n_decoder_layers=DECODER_LAYERS, n_heads=HEADS)
    return app.create_app([str(folder)]).anatomy


# ---- unequal encoder and decoder depths ------------------------------------------------------------------------

def test_each_kind_keeps_its_own_layers_after_a_translation(uneven):
    p = uneven.page
    run = run_of(uneven, max_new=4)
    assert run.trace.encoder_self_attn.shape[0] == ENCODER_LAYERS and run.trace.cross_attn.shape[0] == DECODER_LAYERS
    drawn = show(uneven, run, "encoder", ENCODER_LAYERS)[-1]
    assert drawn[p.trace_data]["opens_at"]["layer"] == ENCODER_LAYERS
    layers = {k["name"]: k["attention"]["shape"][0] for k in drawn[p.trace_data]["kinds"]}  # the viewer's
    assert layers == {"cross": DECODER_LAYERS, "encoder": ENCODER_LAYERS, "decoder": DECODER_LAYERS}
    # the open tab and a link to the view keep the encoder's top layer too
    top = View.of("encoder", ENCODER_LAYERS, "1", False)
    assert f"layer={ENCODER_LAYERS}" in uneven.share(Inputs(run=run, view=top))
    # the decoder's kinds stop at its own depth
    cross = show(uneven, run, "cross", ENCODER_LAYERS)[-1]
    assert cross[p.trace_data]["opens_at"]["layer"] == DECODER_LAYERS


def test_the_viewer_offers_each_kind_its_own_layers_and_the_statistics_name_them(uneven):
    """Before a translation the view controls offer the chosen model's layers per kind (the explorer's data-offer;
    anatomy/viewer/controls.js fits the view to them: tests/js/controls.test.mjs); the head statistics, whose rows
    open their head, list each kind's own layers."""
    offer = json.loads(html.unescape(re.search(r'data-offer="([^"]*)"', uneven.page.explorer.value).group(1)))
    assert {k["name"]: k["layers"] for k in offer["shape"]["kinds"]} == {
        "cross": DECODER_LAYERS, "encoder": ENCODER_LAYERS, "decoder": DECODER_LAYERS}
    run = run_of(uneven, max_new=3)
    rows = uneven.tab_view(Inputs(run=run, tab=Tab.STATS, settings=PageSettings(key="de-en"),
                                  view=View()))[uneven.page.tab_data]["stats"]["rows"]
    assert max(r[1] for r in rows if r[0] == "encoder self-attention") == ENCODER_LAYERS
    assert max(r[1] for r in rows if r[0] == "cross-attention") == DECODER_LAYERS


def test_a_link_opens_each_kinds_own_layers(uneven):
    p = uneven.page
    loaded = uneven.load_link(Req(f"?text={SENTENCE}&view=encoder&layer={ENCODER_LAYERS}&max=3"))
    assert (loaded[p.view_set]["kind"], loaded[p.view_set]["layer"]) == ("encoder", ENCODER_LAYERS)
    assert loaded[p.link].notices == ()
    run = uneven.translate_link(Inputs(signal=StopSignal(), link=loaded[p.link]))[p.run]
    drawn = show(uneven, run, "encoder", ENCODER_LAYERS)[-1]
    assert drawn[p.trace_data]["opens_at"]["layer"] == ENCODER_LAYERS
    cross = parse_link({"text": SENTENCE, "layer": str(ENCODER_LAYERS)}, configs(uneven))
    assert cross.view.layer == DECODER_LAYERS
    assert f"layer={ENCODER_LAYERS} (allowed: 1 to {DECODER_LAYERS}" in cross.notices[0]


@pytest.mark.slow  # seconds: a model of uneven stacks, through the API and an offline file
def test_the_api_and_the_offline_page_keep_each_kinds_layers(uneven, tmp_path):
    path, notice = uneven.api_animate(SENTENCE, "de-en", kind="encoder", layer=ENCODER_LAYERS, layout="heatmap")
    assert path and "layer" not in notice, notice
    path, notice = uneven.api_animate(SENTENCE, "de-en", kind="cross", layer=ENCODER_LAYERS)
    assert path is None and f"layer must be from 1 to {DECODER_LAYERS}" in notice, notice
    run = run_of(uneven, max_new=3)
    data = offline.payload(run.trace, uneven.registry.get("de-en"), SENTENCE, [],
                           View.of("encoder", ENCODER_LAYERS, "mean", False))
    assert data["page"]["view"]["layer"] == ENCODER_LAYERS
    assert {k["name"]: k["attention"]["shape"][0] for k in data["payload"]["kinds"]} == {
        "cross": DECODER_LAYERS, "encoder": ENCODER_LAYERS, "decoder": DECODER_LAYERS}


# ---- what a link's values become, in words --------------------------------------------------------------------

def test_a_link_names_every_value_it_changes_or_drops_with_the_models_real_range(uneven):
    shape = configs(uneven)
    link = parse_link({"text": "Hallo", "layer": "99", "head": "abc", "kind": "xyz", "layr": "2"}, shape)
    said = " ".join(link.notices)
    assert f"layer=99 (allowed: 1 to {DECODER_LAYERS}, this model's cross-attention layers)" in said, said
    assert f"head=abc (allowed: mean or 1 to {HEADS}, this model's heads)" in said
    assert "kind=xyz (did you mean view?)" in said and "layr=2 (did you mean layer?)" in said
    assert "64" not in said and link.view.layer == DECODER_LAYERS and link.view.head == "mean"
    encoder = parse_link({"text": "Hallo", "view": "encoder", "layer": "99", "head": "9"}, shape)
    assert f"layer=99 (allowed: 1 to {ENCODER_LAYERS}," in encoder.notices[0]
    assert f"head=9 (allowed: mean or 1 to {HEADS}" in encoder.notices[0]
    assert (encoder.view.layer, encoder.view.head) == (ENCODER_LAYERS, str(HEADS))
    bad = parse_link({"view": "xyz", "merge": "maybe", "display": "3d", "direction": "xx-yy"}, shape)
    assert all(s in bad.notices[0] for s in ("view=xyz (allowed: cross, encoder, decoder)", "merge=maybe",
                                             "display=3d", "direction=xx-yy (allowed: the models loaded now: de-en)"))
    # Gradio's own parameters are left alone, and values in range say nothing
    quiet = {"text": "Hallo", "view": "api", "__theme": "dark", "__sign": "x", "deep_link": "y", "lang": "python",
             "layer": "1", "head": "2", "step": "1", "beam": "2", "merge": "1"}
    assert parse_link(quiet, shape).notices == ()


def test_a_links_step_is_checked_against_its_translation(uneven):
    p = uneven.page
    link = uneven.load_link(Req(f"?text={SENTENCE}&step=1e12&query=0&max=3"))[p.link]
    assert link.notices == ()  # not known before translating
    run = uneven.translate_link(Inputs(signal=StopSignal(), link=link))[p.run]
    steps, pieces = len(run.trace.output_tokens), len(run.trace.source_tokens)
    info = show(uneven, run)[-1][p.run_info]
    assert f"step=1e12 (allowed: 1 to {steps}, its output pieces), query=0 (allowed: 1 to {pieces}" in info, info
    # without text there is no translation to step through: the step is dropped, and the toast says so
    with pytest.warns(UserWarning, match="step=5 was not used"):
        uneven.load_link(Req("?step=5&head=<b>x"))


# ---- an empty text ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   ", "\x1b[31m\x07"])
def test_an_empty_text_gets_a_calm_hint_not_an_error(uneven, text):
    p = uneven.page
    [out] = translate(uneven, text=text)  # no gr.Error: the page shows no error state
    assert set(out) == {p.text_hint} and out[p.text_hint]["visible"]  # nothing else changes: a shown run stays
    hint = out[p.text_hint]["value"]
    assert "Type a German sentence, e.g." in hint and "then click Translate" in hint
    assert not translate(uneven, text="Hallo")[0][p.text_hint]["visible"]  # a translation puts the hint away
    # the API answers with a notice, not an exception
    translation, notice, trace = uneven.api_translate(text, "de-en")
    assert (translation, trace) == ("", None) and notice.endswith("Nothing to translate: text is empty."), notice
