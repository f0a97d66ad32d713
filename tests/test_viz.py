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
    figs = [viz.positional_rows(w[0, 0], toks), viz.empty_figure("hello")]
    for fig in figs:
        assert fig.layout.height > 0
        assert len(fig_json(fig)) < 500_000
    assert json.loads(figs[0].to_json())["layout"]["template"]["layout"]["paper_bgcolor"] == "white"
