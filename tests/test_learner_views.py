"""Issue 15: the line view, one query's softmax walk, and special tokens hidden with rows renormalised."""
from __future__ import annotations

import dataclasses
import json

import gradio as gr
import numpy as np
import pytest

import viz
from anatomy import attention_views, engine, offline, payload, views
from anatomy.inputs import Request, View, build_link, parse_link
from tests import viewer
from tests.app_fixtures import CONFIGS, SENTENCE, replayed, run_of
from tests.viewer import needs_node
from transformer.analysis import HIDDEN_PIECES, head_statistics
from ui.values import Inputs, PageSettings

KINDS = ("encoder", "decoder", "cross")


@pytest.fixture(scope="module")
def run(tiny):
    return run_of(tiny, max_new=8)


# ---- special tokens hidden ----

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("merge", [False, True])
def test_hidden_special_tokens_leave_rows_that_sum_to_one(run, kind, merge):
    trace = run.trace
    a = views.arrays(trace, kind, hide=True)
    assert not HIDDEN_PIECES & set(a.keys)
    assert len(a.keys) == sum(k not in HIDDEN_PIECES for k in trace.attention(kind).keys)
    w, q, k, hidden = attention_views._shown(a, a.weights, merge)
    sums = w.sum(-1)  # (L, h, rows)
    empty = hidden.all(-1) if hidden is not None else np.zeros(sums.shape[-1], dtype=bool)
    assert np.allclose(sums[..., ~empty], 1, atol=1e-5) and np.allclose(sums[..., empty], 0)
    if kind == "decoder" and not merge:  # row 1 reads <s> and sees only it: kept, empty
        assert empty[0] and not empty[1:].any()
    elif kind != "decoder":
        assert not empty.any()
    # renormalising is dividing each row by its weight on the keys left: the ratios between keys stay
    full = trace.attention(kind)
    cols = [j for j, key in enumerate(full.keys) if key not in HIDDEN_PIECES]
    row = a.rows[-1]
    original = full.weights[0, 0, row, cols]
    assert np.allclose(a.weights[0, 0, -1] * original.sum(), original, atol=1e-6)


def test_hidden_special_tokens_drop_the_query_rows_of_special_pieces(run):
    trace = run.trace
    enc = views.arrays(trace, "encoder", hide=True)
    assert len(enc.queries) == len(trace.source_tokens) - 1 and "</s>" not in enc.queries
    cross = views.arrays(trace, "cross", hide=True)
    produced = [p for _, p in cross.queries]
    assert "</s>" not in produced and len(produced) == sum(p != "</s>" for p in trace.output_tokens)


@pytest.mark.slow  # node draws
@needs_node
def test_every_view_says_special_tokens_are_hidden(tiny, run):
    data = payload_of(tiny, run)
    for display in ("heatmap", "lines"):
        page = viewer.drawn(data, [View.of("decoder", 1, "1", False, 1, False, True, display)])[0]
        assert viewer.title(page["heatmap"]).endswith(attention_views.HIDE_TITLE)
        notes = [a["text"] for a in page["heatmap"]["layout"]["annotations"]]
        assert any("sees only hidden special tokens" in n for n in notes), notes
        assert viewer.title(page["grid"]).endswith(attention_views.HIDE_TITLE)
    # step 1 of the decoder sees only <s>: an empty panel that says why
    assert "sees only &lt;s&gt;, which is hidden" in json.dumps(page["step-self"])
    assert "special tokens hidden" in viewer.title(page["step-cross"])
    bars = page["step-cross"]["data"][0]
    assert "&lt;/s&gt;" not in bars["text"][-1] and abs(sum(bars["y"]) - 1) < 1e-5


def payload_of(h, run) -> dict:
    """The trace payload the page's viewer draws `run` from."""
    return h.show(Inputs(run=run))[h.page.trace_data]


def viz_numbers(values) -> list[float]:
    """A Plotly JSON array (a list, or typed array as base64)."""
    if isinstance(values, dict):
        import base64

        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return list(values)


def test_head_statistics_share_on_special_tokens():
    keys = ["<s>", "a", "b", "</s>"]
    w = np.array([[0.5, 0.2, 0.1, 0.2], [0.0, 0.5, 0.5, 0.0]])[None, None]
    (stats,) = head_statistics(w, "cross", keys)
    assert stats.special == pytest.approx((0.7 + 0.0) / 2)
    assert viz.STAT_LABELS["special"] in viz.head_table([stats], {"cross": "cross-attention"})[0]


def test_link_restores_hide_display_and_query():
    view = View.of("encoder", 2, "1", False, 3, hide=True, display="walk", query=4)
    link = build_link(Request("de-en", "Hund"), view)
    assert "hide=1" in link and "display=walk" in link and "query=4" in link
    import urllib.parse

    back = parse_link(dict(urllib.parse.parse_qsl(link[1:])), CONFIGS).view
    assert back == view
    assert View.of("cross", 1, "1", 0, display="<script>").display == "heatmap"


# ---- the softmax walk ----

@pytest.mark.slow  # node draws
@needs_node
@pytest.mark.parametrize("kind", KINDS)
def test_the_walk_recomputes_from_the_shown_q_k_v_to_the_trace(tiny, run, kind):
    """Every stage the viewer shows, recomputed from the shown q, k and v alone, equals the trace's attention row
    and the head's slice of the attention output before W_o."""
    trace = run.trace
    L = trace.attention(kind).weights.shape[0]
    view = View.of(kind, L, "2", False, step=3, display="walk", query=2)
    out = walked(tiny, run, view)
    vectors = out[tiny.page.vectors].by[(kind, L)]
    fig = viewer.drawn(payload_of(tiny, run), [view], walk=out[tiny.page.walk_data])[0]["heatmap"]
    shown = {t["name"]: np.array(t["z"], dtype=np.float64) for t in fig["data"]}
    q, k, v = shown["q"][0], shown["k"], shown["v"]
    d_k = len(q)
    scores = k @ q
    scaled = scores / np.sqrt(d_k)
    row = 1 if kind == "encoder" else 2
    visible = np.arange(len(k)) <= row if kind == "decoder" else np.ones(len(k), dtype=bool)
    masked = np.where(visible, scaled, -np.inf)
    softmax = np.exp(masked - masked.max()) / np.exp(masked - masked.max()).sum()
    out = softmax @ v
    assert np.allclose(shown["q·k"][:, 0], scores, atol=1e-5)
    assert np.allclose(shown["scaled"][:, 0], scaled, atol=1e-5)
    assert np.array_equal(np.isnan(shown["masked"][:, 0]), ~visible)
    assert np.allclose(shown["masked"][visible, 0], scaled[visible], atol=1e-5)
    assert np.allclose(shown["softmax"][:, 0], softmax, atol=1e-5)
    assert np.allclose(shown["output"][0], out, atol=1e-5)
    # ...equal to what the model computed: the trace's row (its own pass) and the head's output before W_o
    assert np.allclose(softmax, trace.attention(kind).weights[L - 1, 1, row], atol=1e-4)
    assert np.allclose(out, vectors.heads[1, row], atol=1e-4)
    assert viewer.title(fig).startswith(views.name(kind)) and "head 2" in viewer.title(fig)
    texts = [t["text"] for t in fig["data"] if t["name"] == "masked"][0]
    assert (np.array(texts)[:, 0] == "−∞").tolist() == (~visible).tolist()


def test_head_vectors_are_the_model_s_attention(tiny, run):
    """The per-head q, k, v on request reproduce every head's weights of the trace, for every layer."""
    translator = tiny.registry.get("de-en").cpu
    for kind in KINDS:
        maps = run.trace.attention(kind)
        for layer in range(1, maps.weights.shape[0] + 1):
            vec = engine.head_vectors(translator, run.trace, kind, layer)
            assert vec.q.shape[0] == maps.weights.shape[1] and vec.k.shape[1] == len(maps.keys)
            assert np.allclose(vec.weights, maps.weights[layer - 1], atol=1e-4)
    with pytest.raises(ValueError, match="no 'encoder' attention in layer 9"):
        translator.model.attention_inputs(*[__import__("torch").tensor([[5, 3]])] * 2, "encoder", 9)


def walked(h, run, view: View, vectors=None) -> dict:
    """The walk of `view` as the page gets it: the viewer finds it missing and clicks the hidden button, whose event
    (`walk`, in the model's slot) makes the q, k, v when not at hand and sends the query's."""
    out = h.walk(Inputs(run=run, view=view, vectors=vectors))
    walk, fitted = out[h.page.walk_data], views.fitted(view, run.trace)
    head = 1 if fitted.head == "mean" else int(fitted.head)
    assert (walk["kind"], walk["layer"], walk["head"], walk["row"]) == (
        fitted.kind, fitted.layer, head, attention_views.walk_row(run.trace, fitted))
    return out


def test_the_walk_makes_q_k_v_in_the_model_s_slot_once(tiny, run):
    """q, k, v are made once per trace, kind and layer, and kept for the next walk of the same ones."""
    p = tiny.page
    view = View.of("decoder", 2, "1", False, 2, False, False, "walk")
    vectors = walked(tiny, run, view)[p.vectors]
    assert vectors.of is run.trace and set(vectors.by) == {("decoder", 2)}
    again = walked(tiny, run, dataclasses.replace(view, step=3), vectors)
    assert again[p.vectors] is vectors  # at hand: no model pass
    cross = walked(tiny, run, View.of("cross", 1, "1", False, 2, display="walk"), vectors)[p.vectors]
    assert set(cross.by) == {("decoder", 2), ("cross", 1)}
    assert tiny.walk(Inputs(run=run, view=dataclasses.replace(view, display="heatmap"))) == gr.skip()


@pytest.mark.slow  # node draws
@needs_node
def test_the_viewer_draws_the_walk_the_server_sent_for_its_view_only(tiny, run):
    """The walk of the view's query, kind, layer and head (head 1 for the mean, which says so); another step asks
    the server for its own; ▁ and words change the labels and the note, not the q, k, v."""
    view = View.of("decoder", 2, "1", False, 2, False, False, "walk")
    walk = walked(tiny, run, view)[tiny.page.walk_data]
    data = payload_of(tiny, run)
    same, other, plain = viewer.drawn(data, [view, dataclasses.replace(view, step=3),
                                             dataclasses.replace(view, plain=True, merge=True)], walk=walk)
    assert [t["name"] for t in same["heatmap"]["data"]] == ["q", "k", "output", "v", "q·k", "scaled", "masked",
                                                           "softmax"]
    assert same["heatmap"]["layout"]["meta"]["export"] == attention_views.export_name("de-en", same_view(same))
    assert "Computing q, k and v" in json.dumps(other["heatmap"]) and other["heatmap"]["asks"]
    assert "▁" not in json.dumps(plain["heatmap"]["layout"]["yaxis5"], ensure_ascii=False)
    assert any("model's own computation" in a["text"] for a in plain["heatmap"]["layout"]["annotations"])
    mean = View.of("cross", 1, "mean", False, 2, False, False, "walk")
    fig = viewer.drawn(data, [mean], walk=walked(tiny, run, mean)[tiny.page.walk_data])[0]["heatmap"]
    assert "head 1 (the mean of heads has no single q)" in viewer.title(fig)  # said in the title
    assert not any("no single q" in a["text"] for a in fig["layout"]["annotations"])


def same_view(page: dict) -> View:
    v = page["view"]
    return View.of(v["kind"], v["layer"], v["head"], v["merge"], v["step"], v["plain"], v["hide"], v["display"],
                   v["query"])


# ---- the line view ----

@pytest.mark.slow  # node draws
@needs_node
@pytest.mark.parametrize("kind", KINDS)
def test_the_line_view_draws_each_weight_with_its_opacity(tiny, run, kind):
    L, H, _ = views.shape(run.trace, kind)
    one, mean = viewer.drawn(payload_of(tiny, run), [View.of(kind, 1, "2", False, None, False, False, "lines"),
                                                     View.of(kind, 1, "mean", False, None, False, False, "lines")])
    fig = one["heatmap"]
    assert viewer.title(fig).endswith("layer 1, head 2 · lines")
    weights = payload.quantised(run.trace.attention(kind).weights[0, 1]) / 255  # as the payload carries them
    lines = [t for t in fig["data"] if t.get("meta") == "lines"]
    drawn = {}
    for t in lines:
        y = t["y"]
        for s in range(0, len(y), 3):
            drawn[(int(-y[s]), int(-y[s + 1]))] = t["opacity"]
    expected = {(i, j): w for (i, j), w in np.ndenumerate(weights) if w >= 0.02}
    assert drawn.keys() == expected.keys()
    assert all(abs(drawn[c] - w) <= 0.1 + 1e-6 for c, w in expected.items())
    assert {t["line"]["color"] for t in lines} == {offline.look()["heads"][1]}
    labels = {t["meta"]: t for t in fig["data"] if t.get("meta") in ("queries", "keys")}
    assert len(labels["keys"]["text"]) == weights.shape[1] and labels["keys"]["textfont"]["size"] >= 12
    # the mean of heads: every head over the others, each in its colour
    colours = {t["line"]["color"] for t in mean["heatmap"]["data"] if t.get("meta") == "lines"}
    assert colours == set(offline.look()["heads"][:H]) and f"all {H} heads" in viewer.title(mean["heatmap"])


def test_export_names_say_how_the_large_view_is_drawn():
    assert attention_views.export_name("de-en", View.of("cross", 2, "1", 0, 3, display="lines")) == \
        "de-en_cross-attention_layer2_head1_lines"
    assert attention_views.export_name("de-en", View.of("encoder", 2, "mean", 0, 3, display="walk", query=4)) == \
        "de-en_encoder-self-attention_layer2_head1_walk-query4"
    assert attention_views.export_name("de-en", View.of("cross", 2, "1", 0, 3, hide=True)).endswith("_no-special")


@pytest.mark.parametrize("norm_first", [False, True])
def test_attention_inputs_match_the_model_s_own_pass(norm_first):
    """Post-LN and pre-LN: q, k, v of every layer and kind give the weights of a teacher-forced pass."""
    import torch

    from transformer.config import ModelConfig
    from transformer.model import Transformer

    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2,
                                    n_decoder_layers=2, dropout=0.0, max_len=32, norm_first=norm_first)).eval()
    src, tgt = torch.tensor([[5, 9, 7, 3]]), torch.tensor([[2, 11, 12]])
    with torch.no_grad():
        encoded = model.encode(src, need_weights=True)
        decoded = model.decode(tgt, encoded, need_weights=True)
        passes = {"encoder": encoded.self_attn, "decoder": decoded.self_attn, "cross": decoded.cross_attn}
        for kind, weights in passes.items():
            for layer, w in enumerate(weights):
                got = model.attention_inputs(src, tgt, kind, layer)
                assert torch.allclose(got.weights, w, atol=1e-5), (kind, layer)
                assert got.q.shape[-1] == 8 and got.heads.shape == got.q.shape


@pytest.mark.slow  # node draws
@needs_node
def test_every_view_draws_beam_search_and_slow_motion_frames(tiny):
    """A beam search's best candidate and each frame of a slow-motion replay, in lines and as a walk."""
    from anatomy.run import StopSignal

    p = tiny.page
    beam = run_of(tiny, beam=3, max_new=5)
    data = payload_of(tiny, beam)
    for kind in KINDS:
        lines = viewer.drawn(data, [View.of(kind, 2, "1", False, 2, False, True, "lines", 3)])[0]
        keys = next(t for t in lines["heatmap"]["data"] if t.get("meta") == "keys")["text"]
        assert keys == views.arrays(beam.trace, kind, hide=True).keys  # the best candidate's, specials hidden
        shown = View.of(kind, 2, "1", False, 2, False, True, "walk", 3)
        walk = viewer.drawn(data, [shown], walk=walked(tiny, beam, shown)[p.walk_data])[0]["heatmap"]
        # the query: walk query 3 of the encoder, else step 2 (what it read ▸ what it produced)
        queries = beam.trace.attention(kind).queries
        query = queries[2] if kind == "encoder" else " ▸ ".join(queries[1])
        assert f"q ({query})" in [a["text"] for a in walk["layout"]["annotations"]]
    walk = View.of("decoder", 1, "1", False, hide=True, display="walk", query=1)
    *_, made = tiny.translate_page(Inputs(PageSettings("de-en", SENTENCE, 1, 3, "cpu", 5, 1.0, 0.1), view=walk,
                                          signal=StopSignal()))
    slow = made[p.run]
    frames = replayed(tiny, Inputs(run=slow, view=walk, signal=StopSignal()))
    steps = [f[p.trace_data]["opens_at"]["step"] for f in frames[:-1]]
    assert steps == list(range(1, views.steps(slow.trace) + 1))
    # each frame's payload holds the steps so far, and the walk of each is the model's at that step
    assert [len(f[p.trace_data]["pieces"]["output"]) for f in frames] == [*steps, steps[-1]]
    queries = slow.trace.attention("decoder").queries  # (read, produced) of each step
    done = frames[-1][p.run]
    shown = [dataclasses.replace(walk, step=step) for step in steps]
    for step, view in zip(steps, shown):
        fig = viewer.drawn(payload_of(tiny, done), [view], walk=walked(tiny, done, view)[p.walk_data])[0]["heatmap"]
        assert f"query {viz.escape(queries[step - 1][0])} ▸ {viz.escape(queries[step - 1][1])}:" in viewer.title(fig)
