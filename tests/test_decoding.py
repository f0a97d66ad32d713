"""The decoding engine: KV cache, greedy, beam search and the Trace, checked by equivalences."""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
import torch

from transformer import DecodingSettings, ModelConfig, Step, Trace, Transformer, Translator
from transformer.config import BOS_ID, EOS_ID, PAD_ID
from transformer.data import pad, source_ids
from transformer.kinds import KINDS
from transformer.search import beam_search, greedy, output_limit

SENTENCES = ["red cat runs", "old man sits big house", "water cat young", "blue bird jumps tree car dog"]


@pytest.fixture(scope="module")
def translator(copy_checkpoint) -> Translator:
    return Translator.from_checkpoint(copy_checkpoint, device="cpu")


def _random_model(norm_first: bool) -> Transformer:
    torch.manual_seed(1)
    return Transformer(ModelConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                                   n_decoder_layers=2, norm_first=norm_first, max_len=40)).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_logits_equal_full_recompute_at_every_step(norm_first):
    model = _random_model(norm_first)
    src = torch.randint(4, 40, (3, 7))
    src[1, 5:] = PAD_ID
    tgt = torch.cat([torch.full((3, 1), BOS_ID), torch.randint(4, 40, (3, 9))], dim=1)
    with torch.no_grad():
        enc = model.encode(src)
        cache = model.new_cache(enc, tgt.size(1))
        for t in range(tgt.size(1)):
            step = model.decode(tgt[:, t:t + 1], enc, cache, need_weights=True)
            full = model.decode(tgt[:, :t + 1], enc, need_weights=True)
            assert torch.allclose(step.logits[:, 0], full.logits[:, t], atol=1e-5)
            for a, b in zip(step.self_attn + step.cross_attn, full.self_attn + full.cross_attn):
                assert torch.allclose(a[:, :, 0], b[:, :, t], atol=1e-6)
    assert cache.length == tgt.size(1)
    with pytest.raises(ValueError, match="KV cache holds"):
        model.decode(tgt[:, :1], enc, cache)


def test_cache_prefill_of_several_positions_equals_one_by_one():
    model = _random_model(False)
    src = torch.randint(4, 40, (2, 6))
    tgt = torch.randint(4, 40, (2, 8))
    with torch.no_grad():
        enc = model.encode(src)
        cache = model.new_cache(enc, 8)
        head = model.decode(tgt[:, :5], enc, cache).logits
        tail = model.decode(tgt[:, 5:], enc, cache).logits
        full = model.decode(tgt, enc).logits
    assert torch.allclose(torch.cat([head, tail], 1), full, atol=1e-5)


def test_cross_attention_keys_are_computed_once(monkeypatch):
    model = _random_model(False)
    calls = []
    layer = model.decoder_layers[0].cross_attn
    original = layer.key_value
    monkeypatch.setattr(layer, "key_value", lambda x: calls.append(x.shape) or original(x))
    greedy(model, torch.randint(4, 40, (2, 6)), max_new_tokens=10)
    assert len(calls) == 1


def test_greedy_copies_with_the_trained_model(translator):
    assert translator.translate_batch(SENTENCES) == SENTENCES


@pytest.mark.parametrize("model_kind", ["trained", "random"])
def test_beam_size_one_equals_greedy(translator, model_kind):
    model = translator.model if model_kind == "trained" else _random_model(True)
    src = torch.tensor([[5, 9, 12, 7, 3], [8, 6, 3, 0, 0], [11, 3, 0, 0, 0]])
    if model_kind == "trained":
        src = pad([source_ids(translator.tokenizer.encode(s)) for s in SENTENCES])
    greedy_ids = greedy(model, src, max_new_tokens=12)
    beam_ids = [[i for i in hyps[0].ids if i != EOS_ID] for hyps in beam_search(model, src, 1, max_new_tokens=12)]
    assert beam_ids == greedy_ids


class TwoPieces(Transformer):
    """A random model that can only say piece 4, piece 5 or EOS: few enough hypotheses to list them all."""

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        out = super().logits(y)
        out[..., :EOS_ID] = float("-inf")  # pad, unk, bos
        return out


def _two_pieces_model() -> Transformer:
    torch.manual_seed(3)
    return TwoPieces(ModelConfig(vocab_size=6, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2,
                                 n_decoder_layers=2, max_len=12)).eval()


def _forced_log_prob(model: Transformer, src: torch.Tensor, ids: list[int]) -> float:
    """log p(ids | src) by one teacher-forced pass (src (1, S))."""
    with torch.no_grad():
        logits = model.decode(torch.tensor([[BOS_ID] + ids[:-1]]), model.encode(src)).logits[0]
    return float(logits.float().log_softmax(-1)[torch.arange(len(ids)), ids].sum())


def _every_hypothesis(limit: int) -> list[list[int]]:
    """Every output beam search may return: EOS after 0..limit-1 pieces, or `limit` pieces cut by the limit."""
    finished = [list(p) + [EOS_ID] for n in range(limit) for p in itertools.product((4, 5), repeat=n)]
    return finished + [list(p) for p in itertools.product((4, 5), repeat=limit)]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_beam_wider_than_every_hypothesis_returns_the_exhaustive_ranking(limit):
    model = _two_pieces_model()
    src = torch.tensor([[4, 5, 5, 4, EOS_ID], [5, 4, EOS_ID, PAD_ID, PAD_ID]])
    everything = _every_hypothesis(limit)
    for length_penalty in (0.0, 0.6, 1.0, 2.0):
        for b, hyps in enumerate(beam_search(model, src, len(everything) + 1, limit, length_penalty)):
            alone = src[b:b + 1, :int((src[b] != PAD_ID).sum())]
            scored = [(ids, _forced_log_prob(model, alone, ids)) for ids in everything]
            expected = sorted(((ids, lp / len(ids) ** length_penalty) for ids, lp in scored), key=lambda h: -h[1])
            assert [h.ids for h in hyps] == [ids for ids, _ in expected]
            assert [h.score for h in hyps] == pytest.approx([score for _, score in expected], abs=1e-5)


def test_a_narrow_beam_reports_the_scores_of_its_hypotheses():
    model = _two_pieces_model()
    src = torch.tensor([[5, 5, 4, EOS_ID]])
    for length_penalty in (0.0, 1.0, 2.0):
        hyps = beam_search(model, src, 2, 3, length_penalty)[0]
        assert len(hyps) == 2
        for h in hyps:
            assert h.log_prob == pytest.approx(_forced_log_prob(model, src, h.ids), abs=1e-5)
            assert h.score == pytest.approx(h.log_prob / len(h.ids) ** length_penalty, abs=1e-6)
            assert h.ids[-1] == EOS_ID or len(h.ids) == 3
        assert hyps[0].score >= hyps[1].score


@pytest.mark.parametrize("model_kind", ["trained", "random"])
def test_padded_batch_greedy_equals_one_sentence_greedy(translator, model_kind):
    if model_kind == "trained":
        model, srcs = translator.model, [source_ids(translator.tokenizer.encode(s)) for s in SENTENCES]
    else:
        model, srcs = _random_model(False), [[5, 9, 12, 7, 3], [8, 6, 3], [11, 3], [20, 21, 22, 23, 24, 25, 3]]
    batched = greedy(model, pad(srcs), max_new_tokens=12)
    assert len({len(s) for s in srcs}) > 1 and len(batched) == len(srcs)
    for src, ids in zip(srcs, batched):
        assert greedy(model, torch.tensor([src]), max_new_tokens=12) == [ids]


def test_beam_search_batches_like_one_by_one(translator):
    srcs = [source_ids(translator.tokenizer.encode(s)) for s in SENTENCES]
    batched = beam_search(translator.model, pad(srcs), 3, max_new_tokens=15)
    for src, hyps in zip(srcs, batched):
        alone = beam_search(translator.model, torch.tensor([src]), 3, max_new_tokens=15)[0]
        assert [h.ids for h in hyps] == [h.ids for h in alone]
        assert [h.score for h in hyps] == pytest.approx([h.score for h in alone], abs=1e-4)


def test_length_limit_stops_unfinished_hypotheses():
    model = _random_model(False)  # random weights rarely say EOS
    src = torch.randint(4, 40, (2, 5))
    assert all(len(ids) <= 6 for ids in greedy(model, src, max_new_tokens=6))
    for hyps in beam_search(model, src, 3, max_new_tokens=6):
        assert hyps and all(len(h.ids) <= 6 for h in hyps)
    assert output_limit(model, 5, None) == 18
    assert output_limit(model, 100, 7) == 7
    assert output_limit(model, 30, None) == 39  # <s> + 39 new tokens fill max_len
    assert output_limit(model, 5, 10_000) == 39


def test_trace_has_the_documented_shapes(translator):
    trace = translator.translate("red cat runs", top_k=3)
    S, T = len(trace.source_tokens), len(trace.target_tokens)
    L, h = translator.config.n_decoder_layers, translator.config.n_heads
    assert trace.source_tokens[-1] == "</s>" and trace.target_tokens[0] == "<s>"
    assert trace.output_tokens[-1] == "</s>" and trace.output_tokens[:-1] == trace.target_tokens[1:]
    assert len(trace.output_tokens) == T == len(trace.top_k)
    assert trace.encoder_self_attn.shape == (translator.config.n_encoder_layers, h, S, S)
    assert trace.decoder_self_attn.shape == (L, h, T, T)
    assert trace.cross_attn.shape == (L, h, T, S)
    assert all(a.dtype == np.float32 for a in (trace.encoder_self_attn, trace.decoder_self_attn, trace.cross_attn))
    assert all(len(k) == 3 for k in trace.top_k)
    assert trace.top_k[0][0].token == trace.output_tokens[0]
    assert trace.settings == DecodingSettings("greedy", 3, "cpu", beam_size=1,
                                              max_new_tokens=output_limit(translator.model, S, None),
                                              length_penalty=1.0,
                                              precision=translator.precision)
    assert trace.checkpoint == str(translator.checkpoint.id)


def test_trace_attention_equals_teacher_forced_pass(translator):
    for text in SENTENCES:
        trace = translator.translate(text)
        forced = translator.force(text, trace.text)
        assert forced.target_tokens == trace.target_tokens and forced.output_tokens == trace.output_tokens
        for name in ("encoder_self_attn", "decoder_self_attn", "cross_attn"):
            np.testing.assert_allclose(getattr(trace, name), getattr(forced, name), atol=1e-5)
        for a, b in zip(trace.top_k, forced.top_k):
            assert [x.id for x in a] == [x.id for x in b]


def test_trace_rows_sum_to_one_and_future_cells_are_zero(translator):
    trace = translator.translate("old man sits big house", beam_size=3)
    for name in ("encoder_self_attn", "decoder_self_attn", "cross_attn"):
        np.testing.assert_allclose(getattr(trace, name).sum(-1), 1.0, atol=1e-5)
    T = len(trace.target_tokens)
    future = np.triu(np.ones((T, T), dtype=bool), 1)
    assert np.all(trace.decoder_self_attn[:, :, future] == 0)


def test_stream_yields_each_step_then_the_trace_they_make(translator):
    *steps, trace = translator.stream("blue bird jumps", top_k=2)
    assert steps and all(isinstance(s, Step) for s in steps) and isinstance(trace, Trace)
    assert [s.index for s in steps] == list(range(len(trace.output_tokens)))
    assert [s.token for s in steps] == trace.output_tokens and [s.token_id for s in steps] == trace.output_ids
    assert steps[-1].token_id == EOS_ID and trace.text == "blue bird jumps"
    for s in steps:
        assert s.top_k == trace.top_k[s.index]
        assert s.decoder_self_attn.shape == (2, 4, s.index + 1)
        np.testing.assert_array_equal(s.decoder_self_attn, trace.decoder_self_attn[:, :, s.index, :s.index + 1])
        np.testing.assert_array_equal(s.cross_attn, trace.cross_attn[:, :, s.index])
    assert trace.to_json() == translator.translate("blue bird jumps", top_k=2).to_json()
    assert not torch.is_inference_mode_enabled()  # the generator does not leak inference mode


def test_a_stopped_stream_ends_with_the_trace_of_the_pieces_so_far(translator):
    calls = []
    *steps, trace = translator.stream("old man sits big house", stop=lambda: calls.append(1) or len(calls) >= 2)
    full = translator.translate("old man sits big house")
    assert len(steps) == 2 and trace.output_ids == full.output_ids[:2] and trace.settings.stopped
    assert trace.text == translator.tokenizer.decode(full.output_ids[:2]) and trace.cut_by_limit
    np.testing.assert_array_equal(trace.cross_attn, full.cross_attn[:, :, :2])
    assert not full.settings.stopped and "stopped" not in full.to_dict()["settings"]


def test_beam_stream_yields_only_the_trace(translator):
    items = list(translator.stream(SENTENCES[1], beam_size=3, top_k=2))
    assert len(items) == 1 and isinstance(items[0], Trace) and items[0].settings.mode == "beam"
    assert items[0].to_json() == translator.translate(SENTENCES[1], beam_size=3, top_k=2).to_json()


@pytest.mark.parametrize("beam", [1, 3])
def test_a_translation_runs_the_encoder_once_and_teacher_forces_only_beam_output(translator, monkeypatch, beam):
    model, encodes, uncached_decodes = translator.model, [], []
    encode, decode = model.encode, model.decode
    monkeypatch.setattr(model, "encode", lambda *a, **k: encodes.append(1) or encode(*a, **k))
    monkeypatch.setattr(model, "decode", lambda tgt, enc, cache=None, **k:
                        uncached_decodes.append(cache is None) or decode(tgt, enc, cache, **k))
    trace = translator.translate(SENTENCES[0], beam_size=beam)
    assert trace.text == SENTENCES[0]
    assert len(encodes) == 1
    assert sum(uncached_decodes) == (0 if beam == 1 else 1)  # greedy builds its trace from its own steps


def test_candidates_carry_their_ids_and_open_as_traces(translator):
    trace = translator.translate(SENTENCES[1], beam_size=3, top_k=3)
    assert len(trace.candidates) == 3 and trace.output_ids == trace.candidates[0].ids
    for c in trace.candidates:
        assert translator.tokenizer.decode(c.ids) == c.text
        assert c.tokens == translator.tokenizer.pieces(c.ids[:-1]) and not c.cut_by_limit
    best = translator.inspect_candidate(trace, 0)
    for kind in KINDS:
        np.testing.assert_allclose(best.attention(kind.name).weights, trace.attention(kind.name).weights, atol=1e-6)
    other = translator.inspect_candidate(trace, 2)
    assert other.output_ids == trace.candidates[2].ids and other.text == trace.candidates[2].text
    assert other.candidates == trace.candidates and other.notices == trace.notices
    assert other.settings == replace(trace.settings, mode="beam candidate", candidate=3)
    assert len(other.top_k[0]) == 3 and len(translator.inspect_candidate(trace, 2, top_k=1).top_k[0]) == 1


def test_trace_attention_gives_each_kind_its_axes(translator):
    trace = translator.translate("old man sits big house")
    S, T = len(trace.source_tokens), len(trace.target_tokens)
    L, h = translator.config.n_decoder_layers, translator.config.n_heads
    positions = list(zip(trace.target_tokens, trace.output_tokens))
    assert positions[0] == ("<s>", trace.output_tokens[0]) and positions[-1][1] == "</s>"
    expected = {"encoder": ((L, h, S, S), trace.source_tokens, trace.source_tokens, False, trace.source_tokens),
                "decoder": ((L, h, T, T), positions, trace.target_tokens, True, trace.output_tokens),
                "cross": ((L, h, T, S), positions, trace.source_tokens, False, trace.output_tokens)}
    assert [kind.name for kind in KINDS] == list(expected)
    for kind, (shape, queries, keys, causal, query_pieces) in expected.items():
        maps = trace.attention(kind)
        assert maps.kind == kind and maps.weights.shape == shape
        assert (maps.queries, maps.keys, maps.causal, maps.query_pieces) == (queries, keys, causal, query_pieces)
    np.testing.assert_array_equal(trace.attention("cross").weights, trace.cross_attn)
    with pytest.raises(ValueError, match="unknown attention kind"):
        trace.attention("self")


def test_same_input_gives_the_same_output(translator):
    a, b = translator.translate("red dog sits", beam_size=2), translator.translate("red dog sits", beam_size=2)
    assert a.to_json() == b.to_json()


def test_trace_json_round_trip(translator):
    trace = translator.translate("green tree house", beam_size=2)
    again = Trace.from_json(trace.to_json())
    assert again.text == trace.text and again.candidates == trace.candidates
    assert again.top_k == trace.top_k and again.settings == trace.settings
    for name in ("encoder_self_attn", "decoder_self_attn", "cross_attn"):
        np.testing.assert_array_equal(getattr(again, name), getattr(trace, name))
    assert again.to_json() == trace.to_json()
    assert again.to_dict() == trace.to_dict()  # every weight exact


def test_json_of_a_prefix_of_a_trace(translator):
    """A slow-motion frame or a stopped replay is a trace whose arrays are slices of another's."""
    trace = translator.translate("green tree house", beam_size=2)
    T = 2
    cut = replace(trace, decoder_self_attn=trace.decoder_self_attn[:, :, :T, :T], cross_attn=trace.cross_attn[:, :, :T])
    assert not cut.cross_attn.flags.c_contiguous
    np.testing.assert_array_equal(Trace.from_json(cut.to_json()).decoder_self_attn,
                                  trace.decoder_self_attn[:, :, :T, :T])


def test_long_input_is_truncated_with_a_notice(translator):
    text = " ".join(["red cat"] * 100)
    trace = translator.translate(text, max_new_tokens=5)
    assert len(trace.source_tokens) == translator.config.max_len
    assert trace.notices and "first 64" in trace.notices[0]
    assert len(trace.output_tokens) <= 5


def test_empty_lines_translate_to_empty_lines(translator):
    got = translator.translate_batch(["red cat runs", "", "  ", "dog sits big"])
    assert got == ["red cat runs", "", "", "dog sits big"]


def test_same_output_across_processes(translator, copy_checkpoint):
    """A fresh process (a restarted app) gives the same translation and attention."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import sys; from transformer import Translator; "
            "t = Translator.from_checkpoint(sys.argv[1], device='cpu'); "
            "print(t.translate('old man sits big house', beam_size=3).to_json())")
    out = subprocess.run([sys.executable, "-c", code, str(copy_checkpoint)], cwd=root, capture_output=True,
                         text=True, check=True).stdout
    there = Trace.from_json(out)
    here = translator.translate("old man sits big house", beam_size=3)
    assert there.text == here.text and there.candidates == here.candidates
    np.testing.assert_array_equal(there.cross_attn, here.cross_attn)
    assert json.loads(out)["settings"] == json.loads(here.to_json())["settings"]


@pytest.mark.parametrize("beam", [1, 3])
def test_a_trace_cut_by_the_length_limit_ends_without_eos(translator, beam):
    trace = translator.translate(SENTENCES[3], beam_size=beam, max_new_tokens=2)
    assert len(trace.output_tokens) == 2 and "</s>" not in trace.output_tokens and trace.cut_by_limit
    T = len(trace.target_tokens)
    assert T == 2 and trace.cross_attn.shape[2] == T and trace.decoder_self_attn.shape[2:] == (T, T)
    assert len(trace.top_k) == T and len(trace.output_ids) == T
    full = translator.translate(SENTENCES[3], beam_size=beam)
    assert full.output_tokens[-1] == "</s>" and full.output_tokens[:2] == trace.output_tokens
    assert not full.cut_by_limit
    # read back as decoded, the cut output is teacher-forced without an EOS the model never chose
    again = translator.force_output(trace.source_ids, trace.output_ids, top_k=5)
    assert again.output_tokens == trace.output_tokens and again.settings.mode == "forced"
    np.testing.assert_allclose(again.cross_attn, trace.cross_attn, atol=1e-5)
    np.testing.assert_allclose(again.decoder_self_attn, trace.decoder_self_attn, atol=1e-5)
    if beam > 1:
        assert all(c.cut_by_limit and len(c.ids) == 2 for c in trace.candidates)
        assert translator.inspect_candidate(trace, 1).output_ids == trace.candidates[1].ids
