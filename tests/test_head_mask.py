"""Head masks: switching heads off equals zeroing their slice of W_o's input by hand, in every decoding path."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tests.app_fixtures import SENTENCE, make_checkpoint
from transformer import HeadMask, HeadRef, ModelConfig, Trace, Transformer, Translator
from transformer.config import BOS_ID, EOS_ID, PAD_ID
from transformer.search import beam_search, greedy
from transformer.translator import decoder_input

KINDS = ("encoder", "decoder", "cross")


def _model(norm_first: bool = False) -> Transformer:
    torch.manual_seed(3)
    return Transformer(ModelConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                                   n_decoder_layers=3, norm_first=norm_first, max_len=40, dropout=0.0)).eval()


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(4)
    src = torch.randint(4, 40, (3, 7))
    src[1, 5:] = PAD_ID
    tgt = torch.cat([torch.full((3, 1), BOS_ID), torch.randint(4, 40, (3, 8))], dim=1)
    return src, tgt


def _sublayer(model: Transformer, kind: str, layer: int):
    if kind == "encoder":
        return model.encoder_layers[layer].self_attn
    return getattr(model.decoder_layers[layer], "self_attn" if kind == "decoder" else "cross_attn")


def _with_weights(model: Transformer, src, tgt, mask=None):
    encoded = model.encode(src, need_weights=True, head_mask=mask)
    decoded = model.decode(tgt, encoded, need_weights=True, head_mask=mask)
    return [encoded.memory, decoded.logits, *encoded.self_attn, *decoded.self_attn, *decoded.cross_attn]


@pytest.mark.parametrize("norm_first", [False, True])
def test_all_ones_mask_is_bit_identical_to_no_mask(norm_first):
    model, (src, tgt) = _model(norm_first), _batch()
    with torch.no_grad():
        plain, ones = _with_weights(model, src, tgt), _with_weights(model, src, tgt, HeadMask.ones(model.config))
    assert all(torch.equal(a, b) for a, b in zip(plain, ones))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm_first", [False, True])
def test_head_off_equals_zeroing_its_slice_of_the_W_o_input_by_hand(kind, norm_first):
    model, (src, tgt) = _model(norm_first), _batch()
    layer, head, d_k = 1, 2, model.config.d_k
    reference = copy.deepcopy(model)
    with torch.no_grad():
        # W_o's input is Concat(head_1..head_h): head h is columns [h·d_k, (h+1)·d_k) of W_o.
        _sublayer(reference, kind, layer).W_o.weight[:, head * d_k:(head + 1) * d_k] = 0
        masked = model(src, tgt, HeadMask.ones(model.config).off(kind, layer + 1, head + 1))
        expected, plain = reference(src, tgt), model(src, tgt)
    assert torch.allclose(masked, expected, atol=1e-5)
    assert not torch.allclose(masked, plain, atol=1e-3)  # the head did matter


def _random_mask(config: ModelConfig) -> HeadMask:
    torch.manual_seed(5)
    mask = HeadMask.ones(config).off("cross", 1, 2).off("encoder", 2, 4).off("decoder", 3, 1)
    return mask.set("cross", 2, 3, 0.4)


def test_cached_decoding_equals_uncached_with_a_mask():
    model, (src, tgt) = _model(), _batch()
    mask = _random_mask(model.config)
    with torch.no_grad():
        encoded = model.encode(src, head_mask=mask)
        cache = model.new_cache(encoded, tgt.size(1))
        full = model.decode(tgt, encoded, need_weights=True, head_mask=mask)
        for t in range(tgt.size(1)):
            step = model.decode(tgt[:, t:t + 1], encoded, cache, need_weights=True, head_mask=mask)
            assert torch.allclose(step.logits[:, 0], full.logits[:, t], atol=1e-5)
            for a, b in zip(step.cross_attn, full.cross_attn):
                assert torch.allclose(a[:, :, 0], b[:, :, t], atol=1e-6)


def test_beam_size_one_equals_greedy_with_a_mask_and_the_mask_changes_the_output():
    model, (src, _) = _model(), _batch()
    mask = _random_mask(model.config)
    masked = greedy(model, src, 12, mask)
    beam = [hyps[0].ids for hyps in beam_search(model, src, 1, 12, head_mask=mask)]
    assert [ids[:-1] if ids[-1] == EOS_ID else ids for ids in beam] == masked
    assert masked != greedy(model, src, 12)


def test_one_row_per_mask_equals_each_mask_alone():
    model, (src, tgt) = _model(), _batch()
    masks = [None, _random_mask(model.config), HeadMask.ones(model.config).off("cross", 3, 4)]
    batched = HeadMask.stack(masks, model.config)
    assert all(batched[kind].shape[0] == 3 for kind in KINDS)  # (3, layers, h) each
    assert HeadMask.stack([None, None], model.config) is None
    with torch.no_grad():
        together = model(src, tgt, batched)
        for row, mask in enumerate(masks):
            assert torch.allclose(together[row], model(src[row:row + 1], tgt[row:row + 1], mask)[0], atol=1e-5)


@pytest.mark.slow  # backward
def test_gradients_flow_to_float_gates_and_match_finite_differences():
    model, (src, tgt) = _model(), _batch()
    model = model.double()
    mask = HeadMask(*(g.double() for g in (HeadMask.ones(model.config)[k] for k in KINDS))).requires_grad_()

    def log_likelihood(m: HeadMask) -> torch.Tensor:
        logp = model(src, tgt[:, :-1], m).log_softmax(-1)
        return logp.gather(-1, tgt[:, 1:, None]).sum()

    log_likelihood(mask).backward()
    for kind in KINDS:
        assert mask[kind].grad is not None and bool((mask[kind].grad != 0).all())
    eps = 1e-6
    with torch.no_grad():
        up, down = (HeadMask(*(g.detach() for g in (mask[k] for k in KINDS))).set("cross", 2, 3, 1 + s)
                    for s in (eps, -eps))
        numeric = (log_likelihood(up) - log_likelihood(down)) / (2 * eps)
    assert float(mask.cross.grad[1, 2]) == pytest.approx(float(numeric), rel=1e-4)


def test_link_form_round_trips_and_bad_values_say_what_is_wrong():
    config = _model().config
    mask = HeadMask.parse("cross:1.2, encoder:2.4", config)
    assert mask.heads_off() == [HeadRef("encoder", 2, 4), HeadRef("cross", 1, 2)]
    assert str(mask) == "encoder:2.4,cross:1.2"
    assert HeadMask.parse(str(mask), config).heads_off() == mask.heads_off()
    assert str(HeadMask.parse("", config)) == "" and str(mask.on("cross", 1, 2).on("encoder", 2, 4)) == ""
    for bad, message in [("cross:4.1", "no cross:4.1"), ("attention:1.1", "unknown attention kind"),
                         ("cross:1", "KIND:LAYER.HEAD"), ("cross:a.b", "KIND:LAYER.HEAD"), ("cross:0.1", "no cross")]:
        with pytest.raises(ValueError, match=message):
            HeadMask.parse(bad, config)


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> Translator:
    folder = make_checkpoint(tmp_path_factory.mktemp("mask") / "tiny-de-en", n_heads=4)
    return Translator.from_checkpoint(folder, device="cpu")


@pytest.fixture(scope="module")
def marian(opus_mt) -> Translator:
    return Translator.from_checkpoint(opus_mt, device="cpu")


@pytest.mark.parametrize("which", ["ours", "marian"])
def test_every_translator_path_takes_a_mask(which, request):
    translator: Translator = request.getfixturevalue(which)
    config = translator.config
    ones = HeadMask.ones(config)
    plain, same = translator.translate(SENTENCE), translator.translate(SENTENCE, heads_off=str(ones))
    for field in ("encoder_self_attn", "decoder_self_attn", "cross_attn"):
        assert np.array_equal(getattr(plain, field), getattr(same, field))
    assert same.settings.heads_off == "" and same.output_ids == plain.output_ids
    # Every head of the last cross-attention layer off: the decoder no longer reads the source there.
    mask = ones
    for head in range(1, config.n_heads + 1):
        mask = mask.off("cross", config.n_decoder_layers, head)
    masked = translator.translate(SENTENCE, heads_off=str(mask))
    assert masked.settings.heads_off == str(mask)
    assert Trace.from_json(masked.to_json()).settings.heads_off == str(mask)
    forced = translator.force_output(masked.source_ids, masked.output_ids, head_mask=mask)
    assert np.allclose(forced.cross_attn, masked.cross_attn, atol=1e-5)  # greedy's rows = one forced pass
    beam = translator.translate(SENTENCE, beam_size=1, heads_off=str(mask))
    assert beam.output_ids == masked.output_ids
    lp_plain = translator.log_probs(plain.source_ids, plain.output_ids)
    lp_masked = translator.log_probs(plain.source_ids, plain.output_ids, head_mask=mask)
    assert lp_plain.shape == lp_masked.shape == (len(plain.output_ids),)
    assert not np.allclose(lp_plain, lp_masked)
    assert translator.translate_batch([SENTENCE], head_mask=mask) == [masked.text]
    vectors = translator.head_vectors(plain, "cross", config.n_decoder_layers, head_mask=mask)
    assert np.allclose(vectors.weights, plain.cross_attn[-1], atol=1e-5)  # gating comes after the weights


@pytest.mark.parametrize("which", ["ours", "marian"])
def test_log_probs_under_several_masks_in_one_pass_equal_each_mask_alone(which, request):
    """The heads-off comparison reads the all-heads and the ablated log p in one batch (anatomy.engine.ablation):
    each row is what a pass of its own gives, for a head of each kind off, and for every head on."""
    translator: Translator = request.getfixturevalue(which)
    config = translator.config
    plain = translator.translate(SENTENCE)
    src, out = plain.source_ids, plain.output_ids
    ones = HeadMask.ones(config)
    masks = [None, ones.off("encoder", 1, 2), ones.off("decoder", config.n_decoder_layers, 1),
             ones.off("cross", 1, 1).off("cross", config.n_decoder_layers, 2), _random_mask_of(config)]
    rows = translator.log_probs_each(src, out, masks)
    assert rows.shape == (len(masks), len(out)) and rows.dtype == np.float64
    for row, mask in zip(rows, masks):
        with torch.inference_mode():  # one sentence alone, as log_probs computed it before it batched
            target_in = torch.tensor([decoder_input(out, config.decoder_start_id)])
            logits = translator.model(torch.tensor([src]), target_in, mask)[0].double()
        alone = logits.log_softmax(-1).gather(-1, torch.tensor(out)[:, None])[:, 0].numpy()
        assert np.allclose(row, alone, rtol=0, atol=1e-6)
        assert np.allclose(row, translator.log_probs(src, out, mask), rtol=0, atol=1e-6)
    assert not np.allclose(rows[0], rows[-1])  # the heads did matter


def _random_mask_of(config: ModelConfig) -> HeadMask:
    """Heads of every kind off, and a gate between 0 and 1."""
    mask = HeadMask.ones(config).off("encoder", 1, 1).off("decoder", 1, 2).off("cross", config.n_decoder_layers, 1)
    return mask.set("cross", 1, 2, 0.4)
