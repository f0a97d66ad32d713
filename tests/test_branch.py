"""Continue the translation from another word (issue 51): a forced prefix, then the model's own decoding."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.test_decoding import _every_hypothesis, _forced_log_prob, _two_pieces_model
from tests.test_precision import fp16_here
from transformer import Decoding, HeadMask, Step, Trace, Translator
from transformer.config import EOS_ID
from transformer.search import beam_hypotheses

SENTENCE = "Zwei Hunde spielen im Schnee."
ATTENTION = ("encoder_self_attn", "decoder_self_attn", "cross_attn")


@pytest.fixture(scope="module")
def translator(folders) -> Translator:
    return Translator.from_checkpoint(folders / "tiny-de-en", device="cpu", precision="fp32")


def _assert_same_attention(a: Trace, b: Trace) -> None:
    for name in ATTENTION:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-5)


def test_a_greedy_branch_is_its_prefix_then_the_model_s_own_argmax_at_each_later_step(translator):
    own = translator.translate(SENTENCE)
    prefix = [*own.output_tokens[:2], own.top_k[2][1].token, "nde"]  # the runner-up at step 2
    branch = translator.translate(SENTENCE, prefix=prefix)
    assert branch.output_tokens[:4] == prefix and len(branch.output_ids) > 4
    assert branch.output_ids != own.output_ids
    forced = translator.force_output(branch.source_ids, branch.output_ids)
    for t in range(4, len(branch.output_ids)):  # the model's own decoding after the prefix
        assert branch.output_ids[t] == forced.top_k[t][0].id
    # every step's top-k is the model's own distribution there, forced steps too
    assert [[c.id for c in row] for row in branch.top_k] == [[c.id for c in row] for row in forced.top_k]
    s = branch.settings
    assert (s.mode, s.prefix, s.parts_at, s.beam_size) == ("branch", tuple(prefix), 2, 1)
    # each piece's log p, forced ones included, is the model's teacher-forced log p; the total includes them
    expected = translator.log_probs(branch.source_ids, branch.output_ids)
    np.testing.assert_allclose(branch.log_probs, expected, atol=1e-4)
    assert branch.log_prob == pytest.approx(float(expected.sum()), abs=1e-3)
    assert branch.log_probs[2] == pytest.approx(np.log(own.top_k[2][1].prob), abs=1e-5)


def test_a_branch_of_the_model_s_own_first_pieces_is_its_own_translation(translator):
    own = translator.translate(SENTENCE)
    for k in (1, 3, len(own.output_ids)):
        branch = translator.translate(SENTENCE, prefix=own.output_ids[:k])
        assert branch.output_ids == own.output_ids and branch.text == own.text
        assert branch.settings.parts_at == k == len(branch.settings.prefix)
        _assert_same_attention(branch, own)
        assert branch.top_k == own.top_k
        np.testing.assert_allclose(branch.log_probs, own.log_probs, atol=1e-6)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_branch_s_attention_equals_a_forced_pass_of_the_same_pieces(translator, beam):
    """The prefix's rows (forced, cached step by step for greedy decoding) and the rest, as one uncached pass."""
    prefix = ["nde", "iel", "▁i"]
    branch = translator.translate(SENTENCE, prefix=prefix, beam_size=beam)
    assert branch.output_tokens[:3] == prefix and branch.settings.mode == "branch"
    forced = translator.force_output(branch.source_ids, branch.output_ids)
    _assert_same_attention(branch, forced)
    np.testing.assert_allclose(branch.decoder_self_attn[:, :, :3], forced.decoder_self_attn[:, :, :3], atol=1e-6)


def test_a_beam_branch_starts_every_hypothesis_with_the_prefix(translator):
    prefix = translator.vocabulary["nde"], translator.vocabulary["hne"]
    branch = translator.translate(SENTENCE, beam_size=3, prefix=prefix)
    assert len(branch.candidates) == 3 and all(c.ids[:2] == list(prefix) for c in branch.candidates)
    assert branch.output_ids == branch.candidates[0].ids
    assert branch.settings.prefix == ("nde", "hne") and branch.settings.beam_size == 3
    assert branch.log_prob == pytest.approx(branch.candidates[0].log_prob, abs=1e-3)


@pytest.mark.parametrize("prefix", [[4], [5, 4], [5, 5, 4], [4, EOS_ID]])
@pytest.mark.parametrize("limit", [3, 4])
def test_a_beam_branch_wider_than_every_hypothesis_returns_the_exhaustive_prefix_constrained_ranking(prefix, limit):
    model = _two_pieces_model()
    src = torch.tensor([[4, 5, 5, 4, EOS_ID]])
    if prefix[-1] == EOS_ID:
        everything = [prefix]
    else:
        everything = [prefix + rest for rest in _every_hypothesis(limit - len(prefix))]
    for length_penalty in (0.0, 1.0, 2.0):
        hyps = beam_hypotheses(model, model.encode(src), len(everything) + 1, limit, length_penalty,
                               prefix=prefix)[0]
        scored = [(ids, _forced_log_prob(model, src, ids)) for ids in everything]
        expected = sorted(((ids, lp / len(ids) ** length_penalty) for ids, lp in scored), key=lambda h: -h[1])
        assert [h.ids for h in hyps] == [ids for ids, _ in expected]
        assert [h.score for h in hyps] == pytest.approx([score for _, score in expected], abs=1e-5)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_forced_end_piece_ends_the_branch(translator, beam):
    branch = translator.translate(SENTENCE, prefix=["nde", "</s>"], beam_size=beam)
    assert branch.output_tokens == ["nde", "</s>"] and branch.text == "nde" and not branch.cut_by_limit


def test_heads_off_carry_into_the_branch(translator):
    prefix, off = ["nde", "▁i"], "decoder:2.2,cross:1.1"
    branch = translator.translate(SENTENCE, prefix=prefix, heads_off=off)
    mask = HeadMask.parse(off, translator.config)
    assert branch.settings.heads_off == off and branch.output_tokens[:2] == prefix
    forced = translator.force_output(branch.source_ids, branch.output_ids, head_mask=mask)
    _assert_same_attention(branch, forced)
    for t in range(2, len(branch.output_ids)):
        assert branch.output_ids[t] == forced.top_k[t][0].id
    on = translator.translate(SENTENCE, prefix=prefix)  # the heads off change what the model expects
    assert [c.prob for c in on.top_k[1]] != [c.prob for c in branch.top_k[1]]


@fp16_here
def test_precision_carries_into_the_branch(folders):
    fp16 = Translator.from_checkpoint(folders / "tiny-de-en", device="cpu", precision="fp16")
    branch = fp16.translate(SENTENCE, prefix=["nde"])
    assert branch.settings.precision == "fp16" and branch.settings.mode == "branch"
    np.testing.assert_allclose(branch.log_probs, fp16.log_probs(branch.source_ids, branch.output_ids), atol=1e-4)


def test_the_stream_of_a_branch_yields_its_forced_steps_first(translator):
    *steps, trace = translator.stream(SENTENCE, Decoding(top_k=3, prefix=(translator.vocabulary["hne"],)))
    assert all(isinstance(s, Step) for s in steps) and steps[0].token == "hne"
    assert [s.log_prob for s in steps] == trace.log_probs and trace.settings.prefix == ("hne",)
    assert len(steps[0].top_k) == 3


def test_a_branch_s_settings_survive_its_json(translator):
    branch = translator.translate(SENTENCE, prefix=["nde", "▁i"], beam_size=2)
    again = Trace.from_json(branch.to_json())
    assert again.settings == branch.settings and again.settings.prefix == ("nde", "▁i")
    assert again.log_probs == branch.log_probs and again.log_prob == branch.log_prob
    assert branch.to_dict()["settings"]["prefix"] == ("nde", "▁i")
    assert "prefix" not in translator.translate(SENTENCE).to_dict()["settings"]


def test_a_bad_forced_piece_is_a_clear_error(translator):
    with pytest.raises(ValueError, match="the piece '▁Xylophon' is not in this model's vocabulary"):
        translator.translate(SENTENCE, prefix=["nde", "▁Xylophon"])
    V = translator.config.vocab_size
    with pytest.raises(ValueError, match=f"an id from 0 to {V - 1}, got {V}"):
        translator.translate(SENTENCE, prefix=[V])
    with pytest.raises(ValueError, match="got True"):
        translator.translate(SENTENCE, prefix=[True])
    with pytest.raises(ValueError, match="only be the last forced piece"):
        translator.translate(SENTENCE, prefix=["</s>", "nde"])
    with pytest.raises(ValueError, match="pad piece '<pad>'"):
        translator.translate(SENTENCE, prefix=["<pad>"])
    with pytest.raises(ValueError, match="at most 63"):
        translator.translate(SENTENCE, prefix=["nde"] * 64)
    with pytest.raises(TypeError, match="not one string"):
        translator.translate(SENTENCE, prefix="nde")


def test_a_prefix_longer_than_the_length_limit_is_decoded_whole(translator):
    branch = translator.translate(SENTENCE, prefix=["nde"] * 5, max_new_tokens=3)
    assert branch.output_tokens == ["nde"] * 5 and branch.settings.max_new_tokens == 5 and branch.cut_by_limit


def test_a_slow_motion_frame_keeps_its_pieces_log_p(translator):
    from anatomy import views

    branch = translator.translate(SENTENCE, prefix=["nde", "hne"])
    frame = views.prefix(branch, 3)
    assert frame.log_probs == branch.log_probs[:3] and frame.log_prob == pytest.approx(sum(branch.log_probs[:3]))
