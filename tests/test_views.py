"""The views beyond the attention explorer: head statistics, links to a view, trained vs untrained; one name per
attention kind; steps counted from 1; token text escaped everywhere it is shown."""
from __future__ import annotations

import dataclasses
import json
import urllib.parse
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import app
import viz
from anatomy import attention_views, head_views, views
from anatomy.inputs import MAX_CHARS, Request, View, build_link, parse_link
from anatomy.run import StopSignal
from tests import viewer
from tests.app_fixtures import CONFIGS, drawn, run_of, show
from tests.viewer import needs_node, title
from transformer.analysis import trace_head_statistics
from transformer.checkpoint import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY
from transformer.kinds import CROSS, DECODER, KINDS
from ui.values import Inputs, PageSettings, Tab


def cells(figure: dict) -> np.ndarray:
    """The cells of a heatmap the viewer drew."""
    return np.array(figure["data"][0]["z"], dtype=float)


class Req:
    def __init__(self, query: str):
        self.query_params = dict(urllib.parse.parse_qsl(query.lstrip("?")))


def test_head_statistics_table_opens_the_picked_head(tiny):
    p = tiny.page
    run = run_of(tiny, max_new=6)
    c = tiny.registry.get("de-en").config
    stats = tiny.tab_view(Inputs(run=run, tab=Tab.STATS, settings=PageSettings(key="de-en"),
                                 view=View.of("cross", 1, "mean", False)))[p.tab_data]["stats"]
    rows = stats["rows"]
    assert len(rows) == (c.n_encoder_layers + 2 * c.n_decoder_layers) * c.n_heads
    assert stats["headers"][:3] == ["attention", "layer", "head"]
    cross = [r for r in rows if r[0] == "cross-attention"]
    assert len(cross) == c.n_decoder_layers * c.n_heads and all(-1 <= r[-1] <= 1 for r in cross)
    # a row names its head by the kind's label, which the payload gives the viewer with the kind's name
    # (anatomy/viewer/tabs.js opens the clicked row's head)
    labels = {k["name"]: k["label"] for k in show(tiny, run)[-1][p.trace_data]["kinds"]}
    assert {r[0] for r in rows} == set(labels.values()) and labels["decoder"] == "decoder masked self-attention"


@pytest.mark.slow  # node draws
@needs_node
def test_one_name_per_attention_kind_everywhere(tiny):
    """transformer.kinds is the one source of the kinds: the radio offers each by its name and label, links keep
    each, and figure titles, step panels, table and help use its label."""
    run = run_of(tiny, max_new=4)
    choices = views.kind_choices()
    assert sorted((label.lower(), kind) for label, kind in choices) == sorted((k.label, k.name) for k in KINDS)
    assert [View.of(kind, 1, "1", False).kind for _, kind in choices] == [kind for _, kind in choices]
    pages = page_of(tiny, run, *[View.of(kind.name, 1, "mean", False) for kind in KINDS])
    for kind, out in zip(KINDS, pages):
        name = kind.label
        assert title(out["heatmap"]).lower().startswith(name) and title(out["summary"]).lower().startswith(name)
        assert attention_views.kind_help(kind.name).lower().startswith(f"**{name}.**")
    step_titles = [title(out["step-cross"]), title(out["step-self"])]
    assert CROSS.label in step_titles[0] and DECODER.label in step_titles[1]
    rows = head_views.head_table(run.trace)[1]
    assert {r[0] for r in rows} == {k.label for k in KINDS}
    names = {"encoder-decoder attention", "Cross-attention (decoder"}
    assert not [n for n in names if n in attention_views.kind_help("cross") + head_views.stats_help()]


@pytest.mark.slow  # node draws
@needs_node
def test_steps_count_from_one_everywhere(tiny):
    run = run_of(tiny, max_new=4)
    first = page_of(tiny, run, View.of("cross", 1, "mean", False, 1))[0]
    table = first["topk-table"]
    assert table["layout"]["yaxis"]["ticktext"][0].startswith("1 ")
    assert table["data"][0]["customdata"][0][0].startswith("step 1:")
    grid = first["grid"]
    assert grid["data"][0]["y"][0].startswith("1 ") and grid["data"][0]["x"][0].startswith("1 ")
    assert title(first["step-topk"]).startswith("Step 1:") and len(first["partial"]) == 1


@pytest.mark.slow  # node draws
@needs_node
def test_merged_words_label_decoder_positions_alike_in_cross_and_decoder_attention(tiny):
    run = run_of(tiny, max_new=8)
    pages = page_of(tiny, run, *[View(kind=k, merge=True) for k in ("cross", "decoder")])
    labels = [page["heatmap"]["layout"]["yaxis"]["ticktext"] for page in pages]
    assert labels[0] == labels[1]



def test_a_merged_decoder_row_reads_the_word_before_it_and_produces_its_own():
    """With Merge pieces into words a decoder row is "I ▸ didn't": not "I didn' ▸ didn't", whose read side joined
    the word before to the word's own first pieces."""
    produced = ["▁I", "▁didn", "'", "t", "▁like", "▁me", ".", "</s>"]
    rows = list(zip(["<s>", *produced[:-1]], produced))
    labels = attention_views.merge_labels(rows, views.word_groups(produced))
    assert labels == [("<s>", "I"), ("I", "didn't"), ("didn't", "like"), ("like", "me."), ("me.", "</s>")]
    assert attention_views.merge_labels(["▁I", "▁didn", "'", "t"], [[0], [1, 2, 3]]) == ["I", "didn't"]

def page_of(h, run, *shown: View, twin=None) -> list[dict]:
    """What the page's viewer draws of `run` in each view (tests/viewer.py)."""
    data = h.show(Inputs(run=run))[h.page.trace_data]
    return viewer.drawn(data, list(shown), twin=twin)


def test_unknown_pieces_and_tokens_are_escaped_in_markdown(tiny):
    p = tiny.page
    run, page = drawn(tiny, text="Hunde 🐶🎉", max_new=3)
    assert "<unk>" in run.trace.source_tokens
    info = page[p.run_info]
    assert ("(read as &lt;unk&gt;): its vocabulary holds only what its German and English training text "
            "contains.") in info
    assert "<unk>" not in info


def test_link_restores_the_exact_view(tiny):
    p = tiny.page
    run = run_of(tiny, key="en-de", text="Two dogs.", beam=3, max_new=6, lp=1.3)
    query = tiny.share(Inputs(run=run, view=View.of("decoder", 2, "2", True, 4)))
    assert len(query) < 200 and "javascript" not in query
    loaded = tiny.load_link(Req(query))
    link = loaded[p.link]
    assert (loaded[p.direction]["value"], loaded[p.text]["value"], loaded[p.beam], loaded[p.max_new], loaded[p.lp]) == (
        "en-de", "Two dogs.", 3, 6, 1.3)
    opened = loaded[p.view_set]
    assert (opened["kind"], opened["layer"], opened["head"], opened["merge"], opened["step"]) == (
        "decoder", 2, "2", True, 4)
    assert "presenter" not in loaded[p.view_set]  # a link without it leaves presenter mode as it is
    again = tiny.translate_link(Inputs(signal=StopSignal(), link=link))[p.run]
    assert again.request.key == "en-de" and again.request.decoding.beam_size == 3
    out = show(tiny, again, "decoder", 2, "2", True)[-1]
    opens = out[p.trace_data]["opens_at"]
    assert opens["step"] == 4  # the step from the link, not the last one
    assert (opens["layer"], opens["head"]) == (2, "2")
    assert "step=4" in out[p.run_info] and "view=decoder" in out[p.run_info]
    with pytest.raises(gr.Error):
        tiny.share(Inputs(view=View.of("cross", 1, "mean", False, 1)))


def test_a_link_or_api_call_without_decoding_settings_gets_the_models_own(tiny):
    p = tiny.page
    for key, beam, lp in (("en-de", 3, 0.6), ("de-en", DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY)):
        loaded = tiny.load_link(Req(f"direction={key}&text=Zwei+Hunde."))
        assert (loaded[p.beam], loaded[p.lp]) == (beam, lp)  # tiny-en-de's card chose beam 3, α 0.6
        request = tiny.translate_link(Inputs(signal=StopSignal(), link=loaded[p.link]))[p.run].request
        assert (request.decoding.beam_size, request.decoding.length_penalty) == (beam, lp)
        trace = tiny.api_translate("Zwei Hunde.", key, None, 4)[2]
        assert trace["settings"]["beam_size"] == beam and trace["settings"]["length_penalty"] == lp
    loaded = tiny.load_link(Req("direction=en-de&text=Zwei+Hunde.&beam=1&lp=1.2"))
    assert (loaded[p.beam], loaded[p.lp]) == (1, 1.2)  # a link's own settings win
    assert tiny.api_translate("Zwei Hunde.", "en-de", 2, 4)[2]["settings"]["beam_size"] == 2


HOSTILE_LINKS = [
    "direction=javascript:alert(1)&layer=abc&head=-3&beam=1e9&max=-5&lp=nan&view=<script>&merge=maybe&step=x",
    "layer=999999999999999999999&head=65&beam=&text=",
    "%ZZ&&&=&direction",
    "text=Hund&step=inf&layer=inf&beam=1e309&max=-inf&lp=inf&head=inf",
    "text=&layer=&head=&step=&beam=&max=&lp=&view=&merge=&presenter=&direction=",
]


@pytest.mark.parametrize("query", HOSTILE_LINKS)
def test_every_link_opens_a_working_page(tiny, query):
    p = tiny.page
    loaded = tiny.load_link(Req(query))
    link = loaded[p.link]
    assert loaded[p.direction]["value"] == "de-en"  # the default direction: a bad one is not taken
    opened = loaded[p.view_set]
    if not link.names_view:  # the view left to the page: the viewer's own, which parse_link's fits to the model
        assert set(opened) <= {"asked", "presenter"}, opened
        opened = dataclasses.asdict(link.view)
    assert opened["kind"] == "cross" and opened["head"] in ("mean", "1", "2")
    assert 1 <= loaded[p.beam] <= 8 and 0 <= loaded[p.max_new] <= 200 and 0 <= loaded[p.lp] <= 3
    assert 1 <= opened["layer"] <= 2
    made = tiny.translate_link(Inputs(signal=StopSignal(), link=link))
    if not link.text:
        assert made == gr.skip()  # nothing to translate: the page keeps its defaults
    else:
        out = show(tiny, made[p.run], opened["kind"], opened["layer"], opened["head"], opened["merge"])[-1]
        assert out[p.trace_data]["translation"] == out[p.translation] == made[p.run].trace.text


def test_link_text_is_capped_and_cleaned():
    query = build_link(Request("de-en", "Hund " * 100), View())
    text = dict(urllib.parse.parse_qsl(query[1:]))["text"]
    assert len(text) <= MAX_CHARS
    link = parse_link({"text": "\x1b[31mrot\x1b[0m " + "Hund " * 400}, CONFIGS)
    assert len(link.text) == MAX_CHARS and "\x1b" not in link.text


@pytest.mark.slow  # node draws
@needs_node
def test_trained_vs_untrained_side_by_side(tiny):
    p = tiny.page
    run = run_of(tiny, key="en-de", max_new=6)
    twin = tiny.make_twin(Inputs(run=run))
    # same pieces on both sides, so the two maps line up cell by cell
    assert twin.trace.source_tokens == run.trace.source_tokens and twin.trace.target_tokens == run.trace.target_tokens
    assert not np.allclose(twin.trace.cross_attn, run.trace.cross_attn)  # en-de is seed 1, the twin seed 0
    assert tiny.make_twin(Inputs(run=run, twin=twin)) == gr.skip()  # once per trace
    out = tiny.tab_view(Inputs(run=run, twin=twin, tab=Tab.COMPARE, settings=PageSettings(key="en-de"),
                               view=View.of("cross", 2, "1", False)))
    assert "Untrained, left to itself" in out[p.tab_data]["compare"]
    # each side draws its own model's weights of the chosen layer and head, and follows the view
    pages = page_of(tiny, run, View.of("cross", 2, "1", False), View.of("encoder", 1, "2", False),
                    twin=out[p.twin_data])
    for page, trained, untrained in ((pages[0], run.trace.cross_attn[1, 0], twin.trace.cross_attn[1, 0]),
                                     (pages[1], run.trace.encoder_self_attn[0, 1], twin.trace.encoder_self_attn[0, 1])):
        np.testing.assert_allclose(cells(page["compare-trained"]), trained, atol=0.5 / 255 + 1e-6)
        np.testing.assert_allclose(cells(page["compare-untrained"]), untrained, atol=0.5 / 255 + 1e-6)
        assert title(page["compare-untrained"]).startswith("Untrained: ")
    # the twin is made in the model's event when its tab is open, and only then
    assert p.twin in tiny.force(Inputs(run=run, tab=Tab.COMPARE, forced="Zwei Hunde"))
    assert p.twin not in tiny.force(Inputs(run=run, forced="Zwei"))
    assert tiny.registry.get("en-de").twin() is tiny.registry.get("en-de").twin()


@pytest.mark.slow  # a shipped checkpoint
def test_training_makes_heads_focus():
    """On the shipped model, trained cross-attention heads are far more focused than their untrained twins'."""
    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-de-en"
    h = app.create_app([str(folder)]).anatomy
    run = run_of(h, text="Ein brauner Hund rennt über eine grüne Wiese.")
    twin = h.make_twin(Inputs(run=run))

    def focus(t, kind):
        return np.mean([s.focus for s in trace_head_statistics(t) if s.kind == kind])

    for kind in ("encoder", "cross"):
        assert focus(run.trace, kind) > focus(twin.trace, kind) + 0.15, kind


def test_architecture_view_follows_the_input(tiny):
    p = tiny.page
    run = run_of(tiny, max_new=6)
    entry = tiny.registry.get("de-en")
    c = entry.config
    out = tiny.tab_view(Inputs(run=run, tab=Tab.ARCHITECTURE, settings=PageSettings(key="de-en"),
                               view=View.of("cross", 1, "mean", False)))
    shown = out[p.tab_data]  # the figures as Plotly JSON, the card as HTML, for the viewer
    text = json.dumps([a.get("text", "") for a in shown["figures"]["architecture"]["layout"]["annotations"]])
    S, T = len(run.trace.source_tokens), len(run.trace.target_tokens)
    assert f"(B, h, T, S) = (1, {c.n_heads}, {T}, {S})" in text  # cross-attention weights of this input
    assert f"(B, T, V) = (1, {T}, {c.vocab_size})" in text
    assert "d_model" in shown["card"] and shown["figures"]["parameters"]["data"]
    assert f"✓ equals the model's {entry.checkpoint.model.num_parameters():,}" in shown["card"]
    before = tiny.tab_view(Inputs(tab=Tab.ARCHITECTURE, settings=PageSettings(key="de-en"),
                                  view=View.of("cross", 1, "mean", False)))
    assert "(B, T, V) = (1, 1, " in json.dumps(before[p.tab_data]["figures"]["architecture"]["layout"]["annotations"])


def test_training_view_shows_curves_and_the_model_card(tmp_path):
    from tests.app_fixtures import METRICS, make_checkpoint

    folder = make_checkpoint(tmp_path / "captions-en-de", "en", "de", domain="image captions")
    (folder / "README.md").write_text("---\nlicense: apache-2.0\npipeline_tag: translation\n---\n\n"
                                      "# captions-en-de\n\nScores on Multi30k val: BLEU 4.25.\n")
    h = app.create_app([str(folder)]).anatomy
    out = h.tab_view(Inputs(tab=Tab.TRAINING, settings=PageSettings(key="en-de"),
                            view=View.of("cross", 1, "mean", False)))
    bleu = next(t for t in out[h.page.tab_data]["figures"]["training"]["data"] if t["name"] == "val BLEU")
    assert (list(bleu["x"]), list(bleu["y"])) == ([r["epoch"] for r in METRICS], [r["val_bleu"] for r in METRICS])
    training = out[h.page.tab_data]["training_card"]  # HTML, from the card's markdown
    assert "<h1>captions-en-de</h1>\n<p>Scores on Multi30k val: BLEU 4.25.</p>" in training
    assert "pipeline_tag" not in training  # the card's front matter is left out
    assert h.registry.choices() == [("English → German · image captions", "en-de")]


@pytest.mark.slow  # node draws
@needs_node
def test_a_step_change_redraws_the_step_and_keeps_the_view(tiny):
    run = run_of(tiny, max_new=6)
    out, decoder = page_of(tiny, run, View.of("encoder", 1, "mean", False, 2), View.of("decoder", 1, "mean", False, 2))
    assert "Step 2" in title(out["step-cross"]) and "Step 2" in title(out["step-topk"]) and len(out["partial"]) == 2
    assert title(out["heatmap"]).startswith("Encoder self-attention")
    assert decoder["heatmap"]["layout"]["shapes"][0]["y0"] == 0.5  # the frame on row 2


@pytest.mark.slow  # node draws
@needs_node
def test_hide_marker_takes_the_piece_marker_out_of_every_attention_figure(tiny):
    """View(plain=True): no ▁ in the heatmap, grid or step panels; word starts bare, pieces inside a word after ·."""
    assert viz.plain_labels(["▁Schn", "ee", "</s>", "▁"]) == ["Schn", "·ee", "</s>", "␣"]
    assert viz.plain_labels([("<s>", "▁Two")]) == [("<s>", "Two")]
    run = run_of(tiny, max_new=6)
    kinds = [kind for _, kind in views.kind_choices()]
    pages = page_of(tiny, run, *[View(kind=kind) for kind in kinds], *[View(kind=kind, plain=True) for kind in kinds])
    for kind, marked, plain in zip(kinds, pages[:len(kinds)], pages[len(kinds):]):
        shown = json.dumps([plain[box] for box in ("heatmap", "grid", "step-cross", "step-self", "step-topk")],
                           ensure_ascii=False)
        assert "▁" not in shown
        if kind != "decoder":  # the random model's output may hold no ▁; the source pieces do
            assert "▁" in json.dumps(marked["heatmap"], ensure_ascii=False)
    assert View.of("cross", 1, "mean", False, None, "1").plain


def test_export_names_say_direction_kind_layer_head():
    view = View(kind="cross", layer=3, head="2", step=4)
    assert attention_views.export_name("de-en", view) == "de-en_cross-attention_layer3_head2"
    assert attention_views.export_name("de-en", View(kind="decoder", layer=1, merge=True)) == \
        "de-en_decoder-masked-self-attention_layer1_mean-of-heads_words"
    assert (attention_views.export_name("en-de", view, "step-self")
            == "en-de_step4_decoder-masked-self-attention_layer3_head2")
    assert attention_views.export_name("de-en", view, "step-topk") == "de-en_step4_next-piece-probabilities"
    assert attention_views.export_name("de-en", view, "untrained") == "de-en_cross-attention_layer3_head2_untrained"


def test_the_unknown_piece_notice_names_the_models_languages_and_corpora(tmp_path):
    from anatomy.registry import ModelRegistry
    from tests.app_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "mix-en-de", "en", "de")
    meta = json.loads((folder / "config.json").read_text())
    meta["training"]["corpora"] = [{"name": "tatoeba", "weight": 1.0}, {"name": "multi30k", "weight": 0.5}]
    (folder / "config.json").write_text(json.dumps(meta))
    entry = ModelRegistry.discover([str(folder)]).get("en-de")
    trace = entry.cpu.translate("Two dogs 🐶", max_new_tokens=2)
    assert "<unk>" in trace.source_tokens
    assert views.run_notices(entry, trace, [])[0].endswith(
        "its vocabulary holds only what its English and German training text contains: tatoeba, multi30k.")
