"""The views beyond the attention explorer: head statistics, links to a view, trained vs untrained."""
from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import app
from tests.app_fixtures import as_dict, final, translate
from transformer.analysis import trace_head_statistics


class Req:
    def __init__(self, query: str):
        self.query_params = dict(urllib.parse.parse_qsl(query.lstrip("?")))


def title(plot) -> str:
    return json.loads(plot.plot)["layout"]["title"]["text"]


def test_head_statistics_table_opens_the_picked_head(tiny):
    trace = final(translate(tiny, max_new=6))["trace"]
    c = tiny.registry.get("de-en").config
    stats = dict(zip(app.TAB_OUT, tiny.on_tabs(trace, "de-en", "cross", False)))["stats"]
    rows = stats["value"]
    assert len(rows) == (c.n_encoder_layers + 2 * c.n_decoder_layers) * c.n_heads
    assert stats["headers"][:3] == ["attention", "layer", "head"]
    cross = [r for r in rows if r[0] == "encoder-decoder attention"]
    assert len(cross) == c.n_decoder_layers * c.n_heads and all(-1 <= r[-1] <= 1 for r in cross)
    # a click on a row (the table may be sorted: the row's own values say which head it is)
    row = next(r for r in rows if r[0] == "decoder self-attention" and r[1] == 2 and r[2] == 1)
    kind, layer, head = tiny.on_stat_pick(gr.SelectData(None, {"index": [0, 3], "value": row[3], "row_value": row}))
    assert (kind, layer["value"], head["value"]) == ("decoder", 2, "1")
    assert all(v == gr.skip() for v in tiny.on_stat_pick(gr.SelectData(None, {"index": 0, "value": None})))
    heat, *_, summary = tiny.on_kind(trace, None, kind, layer["value"], head["value"], False, None)
    assert "layer 2, head 1" in title(heat) and "Decoder masked self-attention" in title(summary)


def test_link_restores_the_exact_view(tiny):
    trace = final(translate(tiny, max_new=6))["trace"]
    query = tiny.on_share("en-de", "Two dogs.", 3, 6, 1.3, "decoder", 2, "2", True, 4)
    assert len(query) < 200 and "javascript" not in query
    key, text, beam, max_new, lp, kind, layer, head, merge, presenter = tiny.on_load(Req(query))
    assert (key, text, beam, max_new, lp, kind, layer, head, merge) == ("en-de", "Two dogs.", 3, 6, 1.3, "decoder",
                                                                         2, "2", True)
    assert presenter == gr.skip()
    out = as_dict(tiny.on_load_translate(key, text, 1, max_new, "cpu", 5, lp, kind, layer, head, merge, Req(query)))
    assert out["step"]["value"] == 4  # the step from the link, not the last one
    assert "layer 2, head 2" in title(out["heat"]) and "words" in title(out["heat"])
    assert "Step 4" in title(out["step_cross"])
    # the run's own link carries the same view
    assert "step=4" in out["notice"] and "view=decoder" in out["notice"]
    with pytest.raises(gr.Error):
        tiny.on_share("de-en", "  ", 1, 0, 1.0, "cross", 1, "mean", False, 1)
    assert trace is not None


@pytest.mark.parametrize("query", [
    "direction=javascript:alert(1)&layer=abc&head=-3&beam=1e9&max=-5&lp=nan&view=<script>&merge=maybe&step=x",
    "layer=999999999999999999999&head=65&beam=&text=",
    "%ZZ&&&=&direction",
])
def test_hostile_links_fall_back_to_defaults(tiny, query):
    values = tiny.on_load(Req(query))
    key, text, beam, max_new, lp, kind, layer, head, merge, presenter = values
    assert key == gr.skip() and kind == gr.skip() and head == gr.skip() and text == gr.skip()
    assert beam in (gr.skip(), app.MAX_BEAM, 1) and max_new in (gr.skip(), 0)
    assert lp in (gr.skip(), 1.0) and layer in (gr.skip(), 1, 2) and merge in (gr.skip(), False)
    # nothing to translate: the page keeps its defaults
    assert all(v == gr.skip() for v in tiny.on_load_translate("de-en", "", 1, 0, "cpu", 5, 1.0, "cross", 1, "mean",
                                                               False, Req(query)))


def test_link_text_is_capped():
    query = app.share_query("de-en", "Hund " * 400, 1, 0, 1.0, app.View())
    text = dict(urllib.parse.parse_qsl(query[1:]))["text"]
    assert len(text) == app.MAX_CHARS and len(query) < 3 * app.MAX_CHARS


def test_trained_vs_untrained_side_by_side(tiny):
    trace = final(translate(tiny, key="en-de", max_new=6))["trace"]
    untrained, trained_fig, untrained_fig, text = tiny.on_compare(trace, "en-de", "cross", 2, "1", False, None)
    # same pieces on both sides, so the two maps line up cell by cell
    assert untrained.source_tokens == trace.source_tokens and untrained.target_tokens == trace.target_tokens
    assert untrained.cross_attn.shape == trace.cross_attn.shape
    assert not np.allclose(untrained.cross_attn, trace.cross_attn)  # en-de is seed 1, the twin seed 0
    assert title(trained_fig).startswith("Trained:") and title(untrained_fig).startswith("Untrained:")
    assert "Untrained, left to itself" in text
    # the view controls redraw both sides
    *_, cmp_trained, cmp_untrained = tiny.on_heat(trace, untrained, "encoder", 1, "2", False, None)
    assert "layer 1, head 2" in title(cmp_untrained) and title(cmp_trained).startswith("Trained:")
    # the twin is built once and is the same on every call
    assert tiny.registry.get("en-de").twin() is tiny.registry.get("en-de").twin()
    again, *_ = tiny.on_compare(trace, "en-de", "cross", 2, "1", False, None)
    np.testing.assert_array_equal(again.cross_attn, untrained.cross_attn)


def test_training_makes_heads_focus():
    """On the shipped model, trained cross-attention heads are far more focused than their untrained twins'."""
    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-de-en"
    entry_app = app.create_app([str(folder)]).anatomy
    trace = entry_app.compute(entry_app.request("de-en", "Ein brauner Hund rennt über eine grüne Wiese.", 1, 0,
                                                "cpu", 5, 1.0, 0))[0]
    untrained, _ = entry_app.untrained_trace(trace, "de-en")

    def focus(t, kind):
        return np.mean([s.focus for s in trace_head_statistics(t) if s.kind == kind])

    for kind in ("encoder", "cross"):
        assert focus(trace, kind) > focus(untrained, kind) + 0.15, kind


def test_architecture_view_follows_the_input(tiny):
    trace = final(translate(tiny, max_new=6))["trace"]
    entry = tiny.registry.get("de-en")
    c = entry.config
    arch = dict(zip(app.TAB_OUT, tiny.on_tabs(trace, "de-en", "cross", False)))["arch"]
    text = json.dumps([a.get("text", "") for a in json.loads(arch.plot)["layout"]["annotations"]])
    S, T = len(trace.source_tokens), len(trace.target_tokens)
    assert f"(B, h, T, S) = (1, {c.n_heads}, {T}, {S})" in text  # cross-attention weights of this input
    assert f"(B, T, V) = (1, {T}, {c.vocab_size})" in text
    card, *_, training, first = tiny.on_direction("de-en", [])
    assert "d_model" in card and f"✓ equals the model's {entry.checkpoint.model.num_parameters():,}" in card
    assert "(B, T, V) = (1, 1, " in json.dumps(json.loads(first.plot)["layout"]["annotations"])  # before translating


def test_training_view_shows_curves_and_the_model_card():
    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
    shipped = app.create_app([str(folder)]).anatomy
    _, _, _, _, curves, _, _, training, _ = shipped.on_direction("en-de", [])
    fig = json.loads(curves.plot)
    epochs = [json.loads(line)["epoch"] for line in (folder / "metrics.jsonl").read_text().splitlines()]
    bleu = next(t for t in fig["data"] if t["name"] == "val BLEU")
    assert len(bleu["x"]) == len(epochs) >= 10
    card = (folder / "README.md").read_text()
    assert "Scores on Multi30k val" in training and "pipeline_tag" not in training  # front matter left out
    assert card.split("---\n", 2)[2].strip()[:200] in training


def test_a_step_change_redraws_only_what_depends_on_the_step(tiny):
    trace = final(translate(tiny, max_new=6))["trace"]
    heat, step_cross, _, cmp_trained, cmp_untrained, partial, step_topk = tiny.on_step(
        trace, None, "encoder", 1, "mean", False, 2)
    assert heat == gr.skip() and cmp_trained == gr.skip() and cmp_untrained == gr.skip()
    assert "Step 2" in title(step_cross) and "Step 2" in title(step_topk) and len(partial) == 2
    heat, *_ = tiny.on_step(trace, None, "decoder", 1, "mean", False, 2)
    assert "Decoder masked self-attention" in title(heat)
