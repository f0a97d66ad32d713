"""The figure code on its own: arrays and tokens in, Plotly figures out."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import viz
from anatomy.inputs import View
from tests import viewer
from tests.viewer import needs_node
from transformer.pieces import word_groups
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


def test_word_groups_and_merge_keep_rows_stochastic():
    groups = word_groups(SRC)
    assert groups == [[0], [1, 2], [3], [4, 5], [6]]
    out_groups = word_groups(TGT_OUT)
    w = rows(len(TGT_OUT), len(SRC))
    merged, hidden = viz.merge_attention(w, out_groups, groups)
    assert merged.shape == (len(out_groups), len(groups)) and hidden is None
    np.testing.assert_allclose(merged.sum(-1), 1.0, rtol=1e-5)
    # to a word: sum over its pieces; from a word: mean over its pieces
    assert math.isclose(merged[0, 1], w[0, 1] + w[0, 2], rel_tol=1e-5)
    assert math.isclose(merged[1, 0], (w[1, 0] + w[2, 0]) / 2, rel_tol=1e-5)


def test_merge_masks_a_word_only_when_all_its_pieces_are_masked():
    n = len(TGT_READ)
    g = word_groups(TGT_READ)  # <s> | ▁Two | ▁dog s | ▁play .
    merged, hidden = viz.merge_attention(causal_rows(n), g, g, causal_mask(n, n))
    assert hidden.shape == (len(g), len(g))
    assert hidden[0, 1] and not hidden[2, 2] and not hidden[3, 2]
    np.testing.assert_allclose(merged.sum(-1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="partition"):
        viz.merge_attention(causal_rows(n), [[0]], g)


def test_positional_default_dims():
    assert viz.default_dims(32) == [4, 5, 8, 12, 16]  # a sin/cos pair, then slower sines
    assert viz.default_dims(256) == [32, 33, 64, 96, 128]


@pytest.mark.slow  # node draws
@needs_node
@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_the_viewer_draws_the_model_s_own_positional_table(layout):
    """The viewer computes PE from the paper's formula in the model's own layout: the table, the chosen curves
    (sin or cos by the layout), the similarity of positions and the rows an input got, as the model adds them."""
    from transformer.model import sinusoidal_positional_encoding

    pe = sinusoidal_positional_encoding(50, 32, layout).numpy()
    positional = {"d_model": 32, "max_len": 50, "layout": layout, "dims": viz.default_dims(32), "source": SRC}
    shown, default = viewer.drawn(None, [View(), View()], positional=positional, dims=["1", "16", "99", "x"]), \
        viewer.drawn(None, [View()], positional=positional)[0]
    shown = shown[0]
    np.testing.assert_allclose(shown["pe"]["data"][0]["z"], pe, atol=1e-6)
    assert len(shown["pe"]["data"]) == 1
    curves = shown["pe-curves"]["data"]
    assert [c["name"].split(" (")[1].split(",")[0] for c in curves] == (
        ["cos", "sin"] if layout == "interleaved" else ["sin", "cos"])  # 99 and "x" are not dimensions
    np.testing.assert_allclose(curves[0]["y"], pe[:, 1], atol=1e-6)
    assert len(default["pe-curves"]["data"]) == len(viz.default_dims(32))
    sim = np.array(shown["pe-similarity"]["data"][0]["z"])
    np.testing.assert_allclose(sim, pe @ pe.T / 32, atol=1e-6)
    rows = shown["pe-rows"]
    np.testing.assert_allclose(rows["data"][0]["z"], pe[:len(SRC)], atol=1e-6)
    assert "▁&lt;b&gt;" in " ".join(rows["layout"]["yaxis"]["ticktext"])


def test_model_figures():
    named = [("embedding.weight", 100), ("encoder_layers.0.self_attn.W_qkv.weight", 30),
             ("encoder_layers.0.norms.1.weight", 4), ("decoder_layers.1.cross_attn.W_o.bias", 6)]
    fig = viz.parameter_icicle(named)
    width = {i: x for t in fig.data for i, x in zip(t.ids, t.x)}
    left = {i: b for t in fig.data for i, b in zip(t.ids, t.base)}
    assert sum(t.x[i] for t in fig.data[:1] for i in range(len(t.x))) == 140 == fig.layout.xaxis.range[1]
    assert width["Transformer/encoder/layer 1"] == 34 and width["Transformer/decoder/layer 2/cross-attention"] == 6
    assert width["Transformer/decoder/layer 2/cross-attention/W_o"] == 6
    # each component under its parent, its siblings side by side
    assert left["Transformer/encoder"] == 100 and left["Transformer/encoder/layer 1/self-attention"] == 100
    assert left["Transformer/encoder/layer 1/layer norm 2"] == 130 and left["Transformer/decoder"] == 134
    assert [t.name for t in fig.data] == ["part", "layer", "sublayer", "weight"]
    assert "No training log" in viz.training_curves([]).layout.annotations[0].text
    curves = viz.training_curves([{"epoch": 1, "train_loss": 5, "val_loss": 4, "val_bleu": 3.0},
                                  {"epoch": 2, "train_loss": 4, "val_loss": 3, "val_bleu": 9.5}])
    assert {t.name for t in curves.data} == {"train loss", "val loss", "val BLEU", "best BLEU 9.5 (epoch 2)"}
    best = [t for t in curves.data if t.name.startswith("best BLEU")]  # a marker, no note over the lines
    assert len(best) == 1 and list(best[0].x) == [2] and list(best[0].y) == [9.5] and "9.5" in best[0].name
    assert not any("BLEU" in a.text for a in curves.layout.annotations)  # subplot titles only
    assert curves.layout.xaxis.dtick == 1  # two epochs: ticks at whole epochs only
    assert viz.training_curves([{"epoch": e, "train_loss": 1.0} for e in range(1, 41)]).layout.xaxis.dtick == 4
    mixed = viz.training_curves([{"epoch": 1, "train_loss": 5, "val_bleu": 6.0, "val_bleu_tatoeba": 9.0,
                                  "val_bleu_newstest": 3.0}])
    by_name = {t.name: list(t.y) for t in mixed.data}
    assert by_name["BLEU tatoeba"] == [9.0] and by_name["BLEU newstest"] == [3.0]
    assert by_name["val BLEU (mean over corpora)"] == [6.0]


def test_figures_are_small_and_sized():
    """Every figure sets its own height (gr.Plot has none) and stays far below 500 KB of JSON."""
    toks = [f"▁w{i}" for i in range(40)]
    figs = [viz.parameter_icicle([(t, 10) for t in toks]), viz.empty_figure("hello")]
    for fig in figs:
        assert fig.layout.height > 0
        assert len(fig_json(fig)) < 500_000
    assert json.loads(figs[0].to_json())["layout"]["template"]["layout"]["paper_bgcolor"] == "white"
