"""The figure code on its own: arrays and tokens in, Plotly figures out."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import viz
from viz.attention import causal_mask

SRC = ["▁Zwei", "▁Hund", "e", "▁<b>", "▁spielen", ".", "</s>"]
TGT_READ = ["<s>", "▁Two", "▁dog", "s", "▁play", "."]
TGT_OUT = ["▁Two", "▁dog", "s", "▁play", ".", "</s>"]
QUERIES = list(zip(TGT_READ, TGT_OUT))


def rows(n_rows: int, n_cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(n_cols), size=n_rows).astype(np.float32)


def causal_rows(n: int, seed: int = 0) -> np.ndarray:
    w = np.random.default_rng(seed).random((n, n)).astype(np.float32) * ~causal_mask(n, n)
    return w / w.sum(-1, keepdims=True)


def fig_json(fig) -> str:
    return fig.to_json()


def test_escape_and_labels():
    assert viz.escape("<s>") == "&lt;s&gt;"
    assert viz.escape("a & b") == "a &amp; b"
    assert viz.label("</s>") == "&lt;/s&gt;"
    assert viz.label("x" * 40).endswith("…") and len(viz.label("x" * 40)) == 24
    assert viz.label("") == "∅"
    assert viz.query_label(("<s>", "▁A")) == "&lt;s&gt; ▸ ▁A"
    assert viz.positioned(["▁a", "▁a"]) == ["1 ▁a", "2 ▁a"]


def test_heatmap_axes_scale_hover_and_escaping():
    fig = viz.attention_heatmap(rows(len(QUERIES), len(SRC)), QUERIES, SRC, query_title="query: decoder position",
                                key_title="key: source piece", highlight_row=2)
    hm = fig.data[0]
    assert (hm.zmin, hm.zmax) == (0.0, 1.0)
    assert hm.colorscale[0][1] != hm.colorscale[-1][1]
    assert fig.layout.yaxis.title.text.startswith("query") and fig.layout.xaxis.title.text.startswith("key")
    assert list(fig.layout.xaxis.ticktext) == viz.labels(SRC)
    assert "▁&lt;b&gt;" in fig.layout.xaxis.ticktext and "</s>" not in fig.layout.xaxis.ticktext
    assert fig.layout.yaxis.ticktext[0] == "&lt;s&gt; ▸ ▁Two"
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top
    assert hm.text[0][0].startswith("&lt;s&gt; ▸ ▁Two → ▁Zwei: ")  # query → key: weight
    assert fig.layout.height and fig.layout.height >= 260
    assert len(fig.layout.shapes) == 1  # the highlighted step
    assert "<b>" not in fig_json(fig).replace("<b>query", "").replace("<b>key", "")


def test_heatmap_draws_masked_cells_as_masked_not_zero():
    n = len(TGT_READ)
    fig = viz.attention_heatmap(causal_rows(n), QUERIES, TGT_READ, causal=True)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[2, 5]) and not np.isnan(z[3, 3])
    assert fig.data[0].text[0][1].endswith(": masked")
    assert fig.layout.plot_bgcolor not in (None, "white")  # what shows through the masked cells
    assert any("mask" in a.text for a in fig.layout.annotations)


def test_heatmap_rejects_mismatched_tokens():
    with pytest.raises(ValueError, match="do not match"):
        viz.attention_heatmap(rows(3, 4), ["a", "b"], ["c", "d", "e", "f"])


def test_word_groups_and_merge_keep_rows_stochastic():
    groups = viz.word_groups(SRC)
    assert groups == [[0], [1, 2], [3], [4, 5], [6]]
    out_groups = viz.word_groups(TGT_OUT)
    w = rows(len(TGT_OUT), len(SRC))
    merged, hidden = viz.merge_attention(w, out_groups, groups)
    assert merged.shape == (len(out_groups), len(groups)) and hidden is None
    np.testing.assert_allclose(merged.sum(-1), 1.0, rtol=1e-5)
    # to a word: sum over its pieces; from a word: mean over its pieces
    assert math.isclose(merged[0, 1], w[0, 1] + w[0, 2], rel_tol=1e-5)
    assert math.isclose(merged[1, 0], (w[1, 0] + w[2, 0]) / 2, rel_tol=1e-5)


def test_merge_masks_a_word_only_when_all_its_pieces_are_masked():
    n = len(TGT_READ)
    g = viz.word_groups(TGT_READ)  # <s> | ▁Two | ▁dog s | ▁play .
    merged, hidden = viz.merge_attention(causal_rows(n), g, g, causal_mask(n, n))
    assert hidden.shape == (len(g), len(g))
    assert hidden[0, 1] and not hidden[2, 2] and not hidden[3, 2]
    np.testing.assert_allclose(merged.sum(-1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="partition"):
        viz.merge_attention(causal_rows(n), [[0]], g)


def test_attention_row_fixed_scale():
    fig = viz.attention_row(rows(1, len(SRC))[0], SRC, query=("<s>", "▁Two"), title="Step 1")
    assert tuple(fig.layout.yaxis.range) == (0, 1)
    assert fig.data[0].text[0].startswith("&lt;s&gt; ▸ ▁Two → ▁Zwei: ")
    with pytest.raises(ValueError):
        viz.attention_row([0.5, 0.5], SRC)


def test_grid_has_every_layer_and_head_on_one_scale():
    L, H = 3, 4
    w = np.stack([np.stack([rows(len(QUERIES), len(SRC), seed=l * H + h) for h in range(H)]) for l in range(L)])
    fig = viz.attention_grid(w, QUERIES, SRC)
    assert len(fig.data) == L * H
    assert {t.coloraxis for t in fig.data} == {"coloraxis"}
    # one scale: whole percents 0..100, labelled as weights 0..1
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 100)
    assert list(fig.layout.coloraxis.colorbar.ticktext) == ["0", "0.25", "0.5", "0.75", "1"]
    np.testing.assert_allclose(np.asarray(fig.data[5].z, dtype=float) / 100, w[1, 1], atol=0.006)
    titles = [a.text for a in fig.layout.annotations]
    assert "layer 1 · head 1" in titles and f"layer {L} · head {H}" in titles
    masked = viz.attention_grid(w[:, :, :, :len(QUERIES)], QUERIES, TGT_READ, causal=True)
    assert len(masked.data) == 2 * L * H  # each head plus its mask overlay
    overlay = masked.data[1]
    assert overlay.hoverinfo == "skip" and np.asarray(overlay.z)[0, 1] == 1 and np.asarray(overlay.z)[1, 0] == 0
    with pytest.raises(ValueError):
        viz.attention_grid(w[0], QUERIES, SRC)


def test_topk_bars_and_table():
    pieces, probs = ["▁dog", "<unk>"], [0.7, 0.2]
    fig = viz.topk_bars(pieces, probs, chosen="▁dog")
    assert list(fig.layout.yaxis.ticktext) == ["▁dog", "&lt;unk&gt;"]
    assert list(fig.data[0].x) == pytest.approx(probs)
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1]
    table = viz.topk_table(["▁dog", "▁cat"], [pieces, pieces], [probs, probs])
    labels = list(table.layout.yaxis.ticktext)
    assert "color" not in labels[0] and "color" in labels[1]  # ▁cat was not in the top k: red
    assert table.data[0].text[0][0] == "<b>▁dog</b>"
    np.testing.assert_allclose(table.data[0].z, [probs, probs])
    with pytest.raises(ValueError):
        viz.topk_table(["▁dog"], [pieces, pieces], [probs, probs])
    with pytest.raises(ValueError):
        viz.topk_table(["▁dog", "▁cat"], [pieces, pieces], [probs])
    with pytest.raises(ValueError):
        viz.topk_bars(pieces, probs[:1])


def test_positional_figures():
    from transformer.model import sinusoidal_positional_encoding

    pe = sinusoidal_positional_encoding(50, 32).numpy()
    dims = viz.default_dims(32)
    assert dims == [4, 5, 8, 12, 16]  # a sin/cos pair, then slower sines
    assert viz.default_dims(256) == [32, 33, 64, 96, 128]
    fig = viz.positional_encoding(pe, dims=[0, 1, 6])
    assert np.asarray(fig.data[0].z).shape == (50, 32)
    assert len(fig.data) == 1 + 3 and "sin" in fig.data[1].name and "cos" in fig.data[2].name
    with pytest.raises(ValueError, match="out of range"):
        viz.positional_encoding(pe, dims=[32])
    sim = np.asarray(viz.positional_similarity(pe).data[0].z)
    np.testing.assert_allclose(sim, sim.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(sim), 0.5, atol=1e-5)  # sin² + cos² over d/2 pairs, / d
    rows_fig = viz.positional_rows(pe, SRC)
    assert np.asarray(rows_fig.data[0].z).shape == (len(SRC), 32)
    assert "▁&lt;b&gt;" in " ".join(rows_fig.layout.yaxis.ticktext)


def test_model_figures():
    named = [("embedding.weight", 100), ("encoder_layers.0.self_attn.W_qkv.weight", 30),
             ("encoder_layers.0.norms.1.weight", 4), ("decoder_layers.1.cross_attn.W_o.bias", 6)]
    fig = viz.parameter_sunburst(named)
    values = dict(zip(fig.data[0].ids, fig.data[0].values))
    assert values["Transformer"] == 140
    assert values["Transformer/encoder/layer 1"] == 34
    assert "Transformer/decoder/layer 2/cross-attention/W_o" in values
    assert "No training log" in viz.training_curves([]).layout.annotations[0].text
    curves = viz.training_curves([{"epoch": 1, "train_loss": 5, "val_loss": 4, "val_bleu": 3.0},
                                  {"epoch": 2, "train_loss": 4, "val_loss": 3, "val_bleu": 9.5}])
    assert {t.name for t in curves.data} == {"train loss", "val loss", "val BLEU"}
    assert any("9.5" in a.text for a in curves.layout.annotations)
    assert curves.layout.xaxis.dtick == 1  # two epochs: ticks at whole epochs only
    assert viz.training_curves([{"epoch": e, "train_loss": 1.0} for e in range(1, 41)]).layout.xaxis.dtick == 4
    mixed = viz.training_curves([{"epoch": 1, "train_loss": 5, "val_bleu": 6.0, "val_bleu_tatoeba": 9.0,
                                  "val_bleu_newstest": 3.0}])
    by_name = {t.name: list(t.y) for t in mixed.data}
    assert by_name["BLEU tatoeba"] == [9.0] and by_name["BLEU newstest"] == [3.0]
    assert by_name["val BLEU (mean over corpora)"] == [6.0]


def test_figures_are_small_and_sized():
    """Every figure sets its own height (gr.Plot has none) and stays far below 500 KB of JSON."""
    L, H, T, S = 6, 8, 40, 40
    w = np.random.default_rng(1).dirichlet(np.ones(S), size=(L, H, T)).astype(np.float32)
    toks = [f"▁w{i}" for i in range(S)]
    figs = [viz.attention_heatmap(w[0, 0], toks, toks), viz.attention_grid(w, toks, toks),
            viz.attention_row(w[0, 0, 0], toks), viz.empty_figure("hello")]
    for fig in figs:
        assert fig.layout.height > 0
        assert len(fig_json(fig)) < 500_000
    assert json.loads(figs[0].to_json())["layout"]["template"]["layout"]["paper_bgcolor"] == "white"
