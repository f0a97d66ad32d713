"""The Architecture tab's facts: parameter formulas against the built model, shapes against a real
forward pass, and the diagram and table that show them."""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from transformer import ModelConfig, Transformer
from transformer.architecture import (
    DECODER_CROSS_ATTENTION,
    ENCODER_SELF_ATTENTION,
    FINAL_NORMS,
    SHARED_EMBEDDING,
    measured_breakdown,
    paper_total,
    parameter_breakdown,
    tensor_shapes,
)
from transformer.config import PAD_ID, PRESETS
from viz.architecture import architecture_diagram, parameter_markdown

PAPER_V = 37000
TINY = dict(vocab_size=50, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("tie_embeddings", [True, False])
def test_every_component_formula_equals_the_built_model(preset, norm_first, tie_embeddings):
    config = ModelConfig(vocab_size=1000, norm_first=norm_first, tie_embeddings=tie_embeddings, **PRESETS[preset])
    with torch.device("meta"):  # shapes only: nothing is allocated or initialised
        model = Transformer(config)
    breakdown = parameter_breakdown(config)
    assert {c.name: c.count for c in breakdown} == measured_breakdown(model)
    assert sum(c.count for c in breakdown) == paper_total(config).count == model.num_parameters()
    assert (FINAL_NORMS in measured_breakdown(model)) is norm_first
    assert (SHARED_EMBEDDING in measured_breakdown(model)) is tie_embeddings


def test_unequal_stacks_write_N_enc_and_N_dec_and_still_match():
    config = ModelConfig(**{**TINY, "n_decoder_layers": 3}, norm_first=True, tie_embeddings=False)
    total = paper_total(config)
    assert total.formula == ("3·V·d_model + N_enc·(4·d_model² + 2·d_model·d_ff + d_ff + 9·d_model)"
                             " + N_dec·(8·d_model² + 2·d_model·d_ff + d_ff + 15·d_model) + 4·d_model")
    assert total.count == Transformer(config).num_parameters()
    names = {c.name: c.formula for c in parameter_breakdown(config)}
    assert names[ENCODER_SELF_ATTENTION].startswith("N_enc·") and names[DECODER_CROSS_ATTENTION].startswith("N_dec·")


def test_paper_base_model_total_in_closed_form():
    base = ModelConfig(vocab_size=PAPER_V)
    total = paper_total(base)
    assert total.count == 44_138_496 + 512 * PAPER_V == sum(c.count for c in parameter_breakdown(base))
    assert total.formula == "V·d_model + N·(12·d_model² + 4·d_model·d_ff + 2·d_ff + 24·d_model)"
    # With d_ff = 4·d_model and N = 6 the closed form is 168·d² + 192·d + V·d, for any d.
    for d in (64, 512):
        config = ModelConfig(vocab_size=PAPER_V, d_model=d, d_ff=4 * d)
        assert paper_total(config).count == 168 * d * d + 192 * d + PAPER_V * d
    assert paper_total(ModelConfig(vocab_size=PAPER_V, norm_first=True)).count == 44_140_544 + 512 * PAPER_V
    attention = {c.name: c for c in parameter_breakdown(base)}[ENCODER_SELF_ATTENTION]
    assert (attention.formula, attention.count, attention.section) == ("N·4·(d_model² + d_model)",
                                                                       6 * 4 * (512 * 512 + 512), "§3.2.2")


def test_a_parameter_outside_the_papers_components_is_not_silently_dropped():
    model = Transformer(ModelConfig(**TINY))
    model.extra_scale = nn.Parameter(torch.ones(3))
    with pytest.raises(ValueError, match="extra_scale"):
        measured_breakdown(model)


@pytest.mark.parametrize("norm_first", [False, True])
def test_shapes_are_the_shapes_of_a_real_forward_pass(norm_first):
    torch.manual_seed(0)
    config = ModelConfig(**TINY, norm_first=norm_first)
    model = Transformer(config).eval()
    B, S, T = 2, 5, 4
    stages = {s.key: s for s in tensor_shapes(config, S, T, batch=B)}
    src = torch.randint(4, config.vocab_size, (B, S))
    src[1, 3:] = PAD_ID  # padding keeps the padded length S
    tgt = torch.randint(4, config.vocab_size, (B, T))
    seen: dict[str, list[tuple[int, ...]]] = {}

    def record(key, take):
        return lambda module, args, out: seen.setdefault(key, []).append(tuple(take(args, out).shape))

    hooks = [model.embedding.register_forward_hook(record("embedding", lambda a, o: o))]
    for side, layers in (("encoder", model.encoder_layers), ("decoder", model.decoder_layers)):
        for layer in layers:
            hooks.append(layer.ffn.W_1.register_forward_hook(record(f"{side}.ffn", lambda a, o: o)))
            hooks.append(layer.self_attn.W_o.register_forward_hook(record(f"{side}.heads", lambda a, o: a[0])))
    with torch.no_grad():
        encoded = model.encode(src, need_weights=True)
        decoded = model.decode(tgt, encoded, need_weights=True)
        q, (k, v) = model.encoder_layers[0].self_attn.query_key_value(model._embed(src, model.embedding))
        cache = model.new_cache(encoded, T)
    for hook in hooks:
        hook.remove()

    assert seen["embedding"][0] == stages["source.embedding"].shape == stages["source.input"].shape
    assert seen["embedding"][1] == stages["target.input"].shape
    assert q.shape == k.shape == v.shape == stages["encoder.qkv"].shape
    assert seen["encoder.heads"] == [stages["encoder.heads"].shape] * config.n_encoder_layers
    assert seen["encoder.ffn"] == [stages["encoder.ffn"].shape] * config.n_encoder_layers
    assert seen["decoder.ffn"] == [stages["decoder.ffn"].shape] * config.n_decoder_layers
    assert tuple(encoded.memory.shape) == stages["memory"].shape == stages["encoder.output"].shape
    for key, weights in (("encoder.self_attention", encoded.self_attn), ("decoder.self_attention", decoded.self_attn),
                         ("decoder.cross_attention", decoded.cross_attn)):
        assert len(weights) == stages[key].repeat
        assert all(tuple(w.shape) == stages[key].shape for w in weights), key
    assert all(tuple(cross_k.shape) == stages["decoder.memory_kv"].shape for cross_k in cache.cross_k)
    assert tuple(decoded.logits.shape) == stages["logits"].shape == stages["probabilities"].shape
    assert stages["source.ids"].shape == tuple(src.shape) and stages["target.ids"].shape == tuple(tgt.shape)


def test_stage_shapes_read_as_their_symbols():
    config = ModelConfig(**TINY)
    for stage in tensor_shapes(config, 7, 3, batch=4):
        symbols = stage.symbolic.strip("()").split(", ")
        sizes = dict(B=4, S=7, T=3, h=2, d_k=16, d_model=32, d_ff=64, V=50)
        assert stage.shape == tuple(sizes[s] for s in symbols), stage.key
    cross = {s.key: s for s in tensor_shapes(config, 7, 3)}["decoder.cross_attention"]
    assert (cross.symbolic, cross.shape, cross.repeat) == ("(B, h, T, S)", (1, 2, 3, 7), 2)
    for bad in (dict(source_len=0, target_len=3), dict(source_len=3, target_len=True),
                dict(source_len=config.max_len + 1, target_len=3)):
        with pytest.raises(ValueError):
            tensor_shapes(config, **bad)


def _boxes(fig) -> dict[str, tuple[float, float, float, float]]:
    return {s.name: (s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes if s.type == "rect"}


def _labels(fig) -> dict[str, str]:
    return {a.name: a.text for a in fig.layout.annotations if not a.showarrow}


def test_diagram_has_figure_1s_boxes_with_this_inputs_shapes():
    config = ModelConfig(**TINY)
    fig = architecture_diagram(tensor_shapes(config, 5, 4, batch=2))
    boxes, labels = _boxes(fig), _labels(fig)
    expected = {"source.ids", "source.input", "encoder.self_attention", "encoder.norm1", "encoder.ffn", "encoder.norm2",
                "memory", "target.ids", "target.input", "decoder.self_attention", "decoder.norm1",
                "decoder.cross_attention", "decoder.norm2", "decoder.ffn", "decoder.norm3", "logits", "probabilities",
                "encoder.layer", "decoder.layer"}
    assert set(boxes) == expected
    assert "(B, h, S, S) = (2, 2, 5, 5)" in labels["encoder.self_attention"]
    assert "(B, h, S, d_k) = (2, 2, 5, 16)" in labels["encoder.self_attention"]
    assert "(B, h, T, T) = (2, 2, 4, 4)" in labels["decoder.self_attention"]
    assert "(B, h, T, S) = (2, 2, 4, 5)" in labels["decoder.cross_attention"]
    assert "(B, T, d_ff) = (2, 4, 64)" in labels["decoder.ffn"]
    assert "(B, S, d_model) = (2, 5, 32)" in labels["memory"]
    assert "(B, T, V) = (2, 4, 50)" in labels["logits"] and "(B, T, V) = (2, 4, 50)" in labels["probabilities"]
    assert "Add &amp; Norm" in labels["decoder.norm3"] and "× N = 2" in labels["decoder.layer"]
    assert "V = 50" in labels["legend"] and "S = 5" in labels["legend"]
    # Each label sits inside its box; the layer boxes sit inside their frame.
    for a in fig.layout.annotations:
        if a.name in boxes and not a.name.endswith(".layer"):
            x0, x1, y0, y1 = boxes[a.name]
            assert x0 < a.x < x1 and y0 < a.y < y1, a.name
    for side in ("encoder", "decoder"):
        fx0, fx1, fy0, fy1 = boxes[f"{side}.layer"]
        inside = [n for n in boxes if n.startswith(f"{side}.") and n != f"{side}.layer"]
        assert all(fx0 < boxes[n][0] and boxes[n][1] < fx1 and fy0 < boxes[n][2] and boxes[n][3] < fy1
                   for n in inside)
    assert fig.layout.height >= 600 and fig.layout.template.layout.paper_bgcolor == "white"
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False


def test_diagram_says_the_width_its_text_fits_and_its_lines_are_short():
    """Lines of at most LONGEST characters (a shape under its label), and layout.meta.fit: the plot width at which
    the widest line fits its box, which the page scales the type by (anatomy/viewer/screen.js boxed)."""
    from viz import architecture

    config = ModelConfig(vocab_size=32000, d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6,
                         n_decoder_layers=6, max_len=512)
    fig = architecture_diagram(tensor_shapes(config, 13, 14))
    lines = [re.sub(r"<[^>]*>", "", line) for a in fig.layout.annotations if a.name != "legend"
             for line in a.text.split("<br>") if a.text]
    assert lines and max(len(line) for line in lines) <= architecture.LONGEST
    labels = _labels(fig)
    assert "softmax(QKᵀ/√d_k + mask)<br>(B, h, T, T) = (1, 8, 14, 14)" in labels["decoder.self_attention"]
    width = fig.layout.meta["fit"]["width"]
    bold = max(len(re.sub(r"<[^>]*>", "", t)) for t in re.findall(r"<b>.*?</b>", "".join(
        a.text for a in fig.layout.annotations if a.name != "legend")))
    assert width >= architecture.BOLD_EM * architecture.BOX_FONT * bold / 0.37
    assert 500 < width < 800  # the page's own widths hold it at its type
    # the legend stays above the encoder's memory
    legend = next(a for a in fig.layout.annotations if a.name == "legend")
    memory = _boxes(fig)["memory"]
    assert legend.y - 15 * (legend.text.count("<br>") + 1) >= memory[3]


def test_diagram_arrows_flow_upwards_and_memory_feeds_cross_attention():
    fig = architecture_diagram(tensor_shapes(ModelConfig(**TINY), 5, 4, batch=2))
    boxes = _boxes(fig)
    arrows = {a.name: a for a in fig.layout.annotations if a.showarrow}
    flow = [a for name, a in arrows.items() if "->" in name and not name.startswith(("residual", "memory"))]
    assert len(flow) == 6 + 9  # encoder: ids → … → memory; decoder: ids → … → softmax
    for a in flow:
        below, above = a.name.split("->")
        assert a.ay == boxes[below][3] and a.y == boxes[above][2] and a.y > a.ay, a.name
    assert sum(name.startswith("residual->") for name in arrows) == 2 + 3  # one per sublayer
    cross = arrows["memory->decoder.cross_attention"]
    x0, _, y0, y1 = boxes["decoder.cross_attention"]
    assert cross.x == x0 and y0 < cross.y < y1 and cross.ax < cross.x  # enters from the encoder's side


def test_pre_ln_diagram_says_where_the_norms_are():
    fig = architecture_diagram(tensor_shapes(ModelConfig(**TINY, norm_first=True), 5, 4), norm_first=True,
                               title="Architecture")
    labels = _labels(fig)
    assert labels["encoder.norm1"].startswith("<b>Add</b>") and "LayerNorm → Feed-forward" in labels["encoder.ffn"]
    assert "Final LayerNorm" in labels["memory"] and "Final LayerNorm" in labels["logits"]
    assert "pre-LN" in labels["decoder.layer"] and fig.layout.title.text == "Architecture"


def test_parameter_table_totals_and_checks_against_the_model():
    config = ModelConfig(**TINY, norm_first=True)
    components, measured = parameter_breakdown(config), Transformer(config).num_parameters()
    table = parameter_markdown(components, measured, closed_form=paper_total(config).formula)
    lines = table.splitlines()
    assert len(lines) == 2 + len(components) + 1
    assert lines[0].startswith("| component | paper formula |")
    assert all(line.count("|") == 6 for line in lines)
    assert lines[-1].startswith(f"| **total** ✓ equals the model's {measured:,} |")
    assert f"**{measured:,}**" in lines[-1] and "`V·d_model + N·(" in lines[-1]
    shares = [float(m) for m in re.findall(r"\| ([\d.]+)% \|$", "\n".join(lines[2:-1]), re.M)]
    assert len(shares) == len(components) and sum(shares) == pytest.approx(100, abs=0.1 * len(shares))
    off = parameter_markdown(components, measured + 1024)
    assert f"✗ differs by 1,024 from the model's {measured + 1024:,}" in off and "✓" not in off


def test_parameter_table_marks_tiny_shares():
    table = parameter_markdown(parameter_breakdown(ModelConfig(vocab_size=PAPER_V, norm_first=True)), 1)
    final = next(line for line in table.splitlines() if line.startswith(f"| {FINAL_NORMS} "))
    assert final.endswith("| 2,048 | < 0.1% |")
