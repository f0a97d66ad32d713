"""The guided tour (anatomy/tour.py): every stop's claims recomputed from the trace's own numbers, the stops a
trace or model cannot make left out with a note, the tour's payload, link and handlers."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch

from anatomy import engine, offline, tour
from anatomy.inputs import Request, parse_link
from anatomy.payload import tour_payload, trace_key
from anatomy.views import prefix
from tests.app_fixtures import run_of
from transformer import Decoding, Translator, checkpoint
from transformer import model as model_module
from transformer.explain import attribute
from transformer.heads import corpus_importance
from transformer.pieces import SPECIAL, word_groups
from ui.values import Inputs, Tab

ROOT = Path(__file__).resolve().parents[1]
SPECIALS = {"<s>", "</s>", "<pad>"}
SENTENCES = {"de-en": ["Ein kleiner Junge mit einem roten Hut spielt am Strand mit seinem Hund.",
                       "Die Regierung hat gestern angekündigt, dass die Steuern für kleine Unternehmen im nächsten "
                       "Jahr sinken werden, obwohl viele Ökonomen davor warnen."],
             "en-de": ["The weather was terrible, so we stayed at home and played cards."]}


def _sentences(text: str) -> int:
    return len([s for s in re.split(r"(?<=[.?!])\s+(?=[A-Z“])", text.strip()) if s])


def _head_ref(stop: tour.Stop) -> tuple[str, int, int]:
    return stop.view.kind, stop.view.layer, int(stop.view.head)


def check(t: tour.Tour, facts: tour.ModelFacts, translator: Translator, request: Request | None = None,
          extras: tour.TourExtras | None = None) -> None:
    """Each stop's claims against the trace's attention, top-k and candidates, recomputed here with numpy, and each
    claim as its text says it."""
    tr = t.of
    enc, dec, cross = (np.asarray(getattr(tr, f), dtype=np.float64)
                       for f in ("encoder_self_attn", "decoder_self_attn", "cross_attn"))
    T = len(tr.output_tokens)
    real_keys = [j for j, p in enumerate(tr.source_tokens) if p not in SPECIALS]
    for stop in t.stops:
        c, text = stop.claims, stop.text
        assert len(text.split()) <= tour.MAX_WORDS and 2 <= _sentences(text) <= 4, (stop.key, text)
        assert stop.view.tab in tour.TABS and stop.view.tab in {tab.value for tab in Tab}, stop
        assert stop.target in tour.TARGETS, stop
        assert 1 <= stop.view.step <= max(T, 1) and stop.view.kind in ("encoder", "decoder", "cross"), stop
        layers = facts.encoder_layers if stop.view.kind == "encoder" else facts.decoder_layers
        assert 1 <= stop.view.layer <= layers
        assert stop.view.head == "mean" or 1 <= int(stop.view.head) <= facts.n_heads
        if stop.key == "pieces":
            assert c["pieces"] == len([p for p in tr.source_tokens if p not in SPECIAL])
            assert f"{c['pieces']} pieces" in text and f"{facts.vocab_size:,}" in text
        elif stop.key == "positions":
            assert c["d_model"] == facts.d_model and tr.source_tokens[c["position"]] == c["last"]
            assert f"position {c['position']}" in text
        elif stop.key == "positional-head":
            prev = [np.diagonal(enc[li, h], -1).mean() for li in range(enc.shape[0]) for h in range(enc.shape[1])]
            nxt = [np.diagonal(enc[li, h], 1).mean() for li in range(enc.shape[0]) for h in range(enc.shape[1])]
            best = max(max(prev), max(nxt))
            side = "previous" if max(prev) >= max(nxt) else "next"
            k = int(np.argmax(prev if side == "previous" else nxt))
            assert (_head_ref(stop), c["side"]) == (("encoder", k // enc.shape[1] + 1, k % enc.shape[1] + 1), side)
            assert c["share"] == round(best, 2) and f"{100 * best:.0f} %" in text
        elif stop.key == "wide-head":
            entropy = -np.where(enc > 0, enc * np.log2(np.clip(enc, 1e-12, 1)), 0).sum(-1).mean(-1)  # (L, h)
            positional = next(s for s in t.stops if s.key == "positional-head")
            l0, h0 = positional.view.layer - 1, int(positional.view.head) - 1
            entropy[l0, h0] = -np.inf
            li, h = np.unravel_index(int(np.argmax(entropy)), entropy.shape)
            assert _head_ref(stop) == ("encoder", li + 1, h + 1) and f"{entropy[li, h]:.1f} bits" in text
        elif stop.key == "parking":
            eos = [j for j, p in enumerate(tr.source_tokens) if p == "</s>"]
            shares = {("encoder", li + 1, h + 1): enc[li, h][:, eos].sum(-1).mean()
                      for li in range(enc.shape[0]) for h in range(enc.shape[1])}
            shares.update({("cross", li + 1, h + 1): cross[li, h][:, eos].sum(-1).mean()
                           for li in range(cross.shape[0]) for h in range(cross.shape[1])})
            best = max(shares, key=shares.get)
            assert _head_ref(stop) == best and f"{100 * shares[best]:.0f} %" in text
        elif stop.key == "start":
            w = cross[-1, :, 0].mean(0)
            j = max(real_keys, key=lambda j: w[j])
            assert c["source"] == tr.source_tokens[j] and f"{100 * w[j]:.0f} %" in text
            assert c["wrote"] == tr.output_tokens[0] and stop.view.step == 1
        elif stop.key == "masked":
            # the whole output read at once: a decoded trace holds zeros above the diagonal whatever the mask does
            forced = translator.force_output(tr.source_ids, tr.output_ids, head_mask=engine.trace_mask(translator, tr))
            above = np.triu(np.asarray(forced.decoder_self_attn, dtype=np.float64), 1).max()
            assert c["above"] == above == 0.0 and "largest weight above the diagonal is 0," in text
            prev = dec[c["layer"] - 1, c["head"] - 1]
            assert c["previous"] == round(np.diagonal(prev, -1).mean(), 2)
            assert c["previous"] == round(max(np.diagonal(dec[li, h], -1).mean() for li in range(dec.shape[0])
                                              for h in range(dec.shape[1])), 2)
        elif stop.key == "alignment":
            mono = {}
            for li in range(cross.shape[0]):
                for h in range(cross.shape[1]):
                    expected = (cross[li, h] * np.arange(cross.shape[-1])).sum(-1)
                    mono[(li + 1, h + 1)] = np.corrcoef(np.arange(T), expected)[0, 1]
            rows = [i for i, p in enumerate(tr.output_tokens) if p not in SPECIALS]
            peak = {head: cross[head[0] - 1, head[1] - 1][rows][:, real_keys].max(-1).mean() for head in mono}
            best = max(mono, key=lambda head: max(mono[head], 0) * peak[head])
            assert _head_ref(stop) == ("cross", *best) and c["monotonic"] == round(mono[best], 2)
            assert c["peak"] == round(peak[best], 2) and f"{100 * peak[best]:.0f} %" in text
            w = cross[best[0] - 1, best[1] - 1, c["step"] - 1]
            assert c["weight"] == round(w[real_keys].max(), 2) and c["source"] == tr.source_tokens[
                real_keys[int(np.argmax(w[real_keys]))]]
            assert f"step {c['step']}" in text and f"{100 * w[real_keys].max():.0f} %" in text
        elif stop.key == "unsure":
            rows = [(row[0].prob, s + 1) for s, row in enumerate(tr.top_k) if tr.output_tokens[s] not in SPECIALS]
            p, step = min(rows)
            assert c["step"] == step == stop.view.step and f"p = {p:.2f}" in text
        elif stop.key == "why":
            a = attribute(translator, tr.source_ids, tr.output_ids, "ig", steps=[c["step"] - 1],
                          head_mask=engine.trace_mask(translator, tr))
            assert c["source_share"] == round(float(a.shares()[0, 0]), 2)
            words = [[i for i in g if tr.source_tokens[i] not in SPECIAL] for g in word_groups(tr.source_tokens)]
            parts = {"".join(tr.source_tokens[i] for i in g): a.source[0, g].sum() for g in words if g}
            assert c["word"] == (max(parts, key=parts.get) if max(parts.values()) > 0 else "")
            assert f"{100 * a.shares()[0, 0]:.0f} %" in text
        elif stop.key == "beam":
            a, b = tr.candidates[0].tokens, tr.candidates[1].tokens
            shared = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            assert c["shared"] == shared and c["finished"] == len(tr.candidates)
            assert f"{tr.candidates[0].score:.3f}" in text and f"{tr.candidates[1].score:.3f}" in text
        elif stop.key == "heads-off":
            assert (stop.view.kind, stop.view.layer, int(stop.view.head)) == (facts.important.kind,
                                                                                facts.important.layer,
                                                                                facts.important.head)
            off = engine.translate(translator, request.decoded(heads_off=str(facts.important)))
            assert c["ablated"] == off.text
            assert (off.text in text) == (off.text != tr.text)
        elif stop.key == "architecture":
            assert c["S"] == len(tr.source_tokens) and f"{c['S']} × {facts.d_model}" in text
        else:
            raise AssertionError(f"a stop this test does not check: {stop.key}")


@pytest.fixture(scope="module")
def shipped_models():
    models = {}
    for key in SENTENCES:
        folder = ROOT / "checkpoints" / f"general-{key}"
        translator = Translator(checkpoint.load(folder), torch.device("cpu"))
        facts = tour.facts_of(translator.config, False, corpus_importance(folder))
        models[key] = (translator, facts)
    return models


@pytest.mark.slow  # the shipped models, beam 5, three sentences
def test_every_stop_says_what_its_translation_s_numbers_say(shipped_models):
    for key, texts in SENTENCES.items():
        translator, facts = shipped_models[key]
        assert facts.important is not None  # heads.json ships with the general models
        for text in texts:
            request = Request(key, text, Decoding(beam_size=5, length_penalty=1.4), "cpu")
            trace = engine.translate(translator, request)
            extras = engine.tour_extras(translator, request, trace, facts)
            t = tour.tour(trace, facts, extras)
            assert [s.key for s in t.stops] == ["pieces", "positions", "positional-head", "wide-head", "parking",
                                                "start", "masked", "alignment", "unsure", "why", "beam", "heads-off",
                                                "architecture"] and not t.left_out
            check(t, facts, translator, request, extras)
            greedy = request.decoded(beam_size=1)
            plain = tour.tour(engine.translate(translator, greedy), facts, None, asked=False)
            # without a beam and the model's passes, still nine stops, and notes for the rest
            assert len(plain.stops) >= 9
            assert {"beam", "masked", "why", "heads-off"}.isdisjoint(s.key for s in plain.stops)
            assert any("greedily" in note for note in plain.left_out) and any("start the tour in the app" in note
                                                                              for note in plain.left_out)
            check(plain, facts, translator)


def _tiny(folders) -> tuple[Translator, tour.ModelFacts]:
    translator = Translator(checkpoint.load(folders / "tiny-de-en"), torch.device("cpu"))
    return translator, tour.facts_of(translator.config, True, None)


def test_an_untrained_model_s_tour_says_so_and_claims_only_what_its_trace_shows(folders):
    translator, facts = _tiny(folders)
    request = Request("de-en", "ein kleiner hund spielt", Decoding(beam_size=3, max_new_tokens=8), "cpu")
    trace = engine.translate(translator, request)
    extras = engine.tour_extras(translator, request, trace, facts)
    t = tour.tour(trace, facts, extras)
    assert "untrained" in t.stops[0].text
    assert "heads-off" not in {s.key for s in t.stops} and any("heads.json" in note for note in t.left_out)
    check(t, facts, translator, request, extras)


def test_a_branch_s_tour_says_which_pieces_were_forced(folders):
    """A branch (its first piece forced to the model's runner-up): the first step's stop says the branch forced it,
    the beam stop that beams were kept after the forced pieces; the claims still hold (check)."""
    translator, facts = _tiny(folders)
    plain = Request("de-en", "ein kleiner hund spielt", Decoding(beam_size=3, max_new_tokens=8), "cpu")
    own = engine.translate(translator, plain)
    runner_up = own.top_k[0][1].token
    request = plain.decoded(prefix=translator.prefix_ids([runner_up]))
    trace = engine.translate(translator, request)
    extras = engine.tour_extras(translator, request, trace, facts)
    t = tour.tour(trace, facts, extras)
    stops = {s.key: s for s in t.stops}
    assert f"this branch forces {tour._word(runner_up)} there" in stops["start"].text
    assert "at every step after this branch's 1 forced piece instead of one" in stops["beam"].text
    own_tour = {s.key: s for s in tour.tour(own, facts, None, asked=False).stops}
    assert "forces" not in own_tour["start"].text and "forced" not in own_tour["beam"].text
    check(t, facts, translator, request, extras)


def test_a_model_with_one_encoder_head_says_it_has_no_second_head_to_show(tmp_path):
    from tests.app_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "one-head", n_heads=1, n_encoder_layers=1)
    translator = Translator(checkpoint.load(folder), torch.device("cpu"))
    facts = tour.facts_of(translator.config, True, None)
    request = Request("de-en", "ein kleiner hund spielt", Decoding(max_new_tokens=8), "cpu")
    trace = engine.translate(translator, request)
    t = tour.tour(trace, facts, engine.tour_extras(translator, request, trace, facts))
    assert "wide-head" not in {s.key for s in t.stops} and "positional-head" in {s.key for s in t.stops}
    assert any("one encoder head" in note for note in t.left_out)
    assert any("greedily" in note for note in t.left_out)
    check(t, facts, translator, request)


def test_the_mask_stop_reads_the_whole_output_at_once_so_its_claim_can_fail(folders, monkeypatch):
    """A decoded trace holds zeros above the diagonal whatever the mask does; the stop reads the output in one
    teacher-forced pass, where a decoder whose mask let later pieces through puts weight on them."""
    translator, facts = _tiny(folders)
    request = Request("de-en", "ein kleiner hund spielt", Decoding(max_new_tokens=6), "cpu")
    trace = engine.translate(translator, request)

    def masked() -> tour.Stop:
        made = tour.tour(trace, facts, engine.tour_extras(translator, request, trace, facts))
        return next(s for s in made.stops if s.key == "masked")

    assert len(trace.output_ids) >= 2 and masked().claims["above"] == 0.0
    monkeypatch.setattr(model_module, "causal_mask",
                        lambda T, device: torch.ones(T, T, dtype=torch.bool, device=device))
    unmasked = masked()
    assert unmasked.claims["above"] > 0.01
    assert f"largest weight above the diagonal is {unmasked.claims['above']:.2g}," in unmasked.text
    # decoding with that mask still leaves zeros there: the trace alone could not tell
    assert np.triu(engine.translate(translator, request).decoder_self_attn, 1).max() == 0


def test_a_translation_with_nothing_decoded_skips_every_step_with_a_note(folders):
    translator, facts = _tiny(folders)
    request = Request("de-en", "hund", Decoding(max_new_tokens=1), "cpu")
    empty = prefix(engine.translate(translator, request), 0)  # as a Stop before the first piece leaves it
    t = tour.tour(empty, facts, engine.tour_extras(translator, request, empty, facts))
    keys = [s.key for s in t.stops]
    assert keys[:2] == ["pieces", "positions"] and keys[-1] == "architecture"
    assert not {"start", "masked", "alignment", "unsure", "why"} & set(keys)
    assert any("nothing was decoded" in note for note in t.left_out)
    assert all(s.view.step == 1 for s in t.stops)


def test_the_tour_payload_is_json_without_the_claims_and_says_what_it_is_of(folders):
    translator, facts = _tiny(folders)
    trace = engine.translate(translator, Request("de-en", "ein hund", Decoding(beam_size=2, max_new_tokens=6), "cpu"))
    t = tour.tour(trace, facts, None, asked=False)
    data = json.loads(json.dumps(tour_payload(t, "?direction=de-en&text=ein+hund", 3, 7)))
    assert data["of"] == json.loads(json.dumps(trace_key(trace))) and data["start"] == 3 and data["asked"] == 7
    assert [s["key"] for s in data["stops"]] == [s.key for s in t.stops]
    assert all("claims" not in s and set(s["view"]) == {"tab", "kind", "layer", "head", "step", "display"}
               for s in data["stops"])
    assert data["left_out"] == list(t.left_out)


def test_a_link_asks_for_a_tour_stop_and_says_what_it_could_not_use():
    from transformer.config import ModelConfig

    configs = {"de-en": ModelConfig(vocab_size=100)}
    assert parse_link({"text": "Hallo", "tour": "5"}, configs).tour == 5
    assert parse_link({"text": "Hallo"}, configs).tour is None
    far = parse_link({"text": "Hallo", "tour": "99"}, configs)
    assert far.tour == 20 and any("tour=99" in n for n in far.notices)
    bad = parse_link({"text": "Hallo", "tour": "x"}, configs)
    assert bad.tour is None and any("tour=x" in n for n in bad.notices)
    empty = parse_link({"tour": "2"}, configs)
    assert empty.tour is None and any("no translation to tour" in n for n in empty.notices)


def test_tour_starts_from_the_shown_translation_once_per_translation(tiny):
    p = tiny.page
    with pytest.raises(gr.Error, match="Translate a sentence first"):
        tiny.start_tour(Inputs())
    run = run_of(tiny, max_new=6)
    made = tiny.start_tour(Inputs(run=run))
    toured, data = made[p.toured], made[p.tour_data]
    assert toured.of is run.trace and data["start"] == 1 and len(data["stops"]) == len(toured.stops)
    assert data["query"].startswith("?") and "tour" not in data["query"]
    again = tiny.start_tour(Inputs(run=run, toured=toured))
    assert again[p.toured] is toured and again[p.tour_data]["asked"] != data["asked"]  # opens it again
    with pytest.raises(gr.Error, match="slow-motion replay is still running"):
        tiny.start_tour(Inputs(run=dataclasses.replace(run, replay=True)))


def test_the_offline_page_carries_the_tour_with_the_model_stops_only_when_the_app_made_them(tiny):
    run = run_of(tiny, max_new=6)
    entry = tiny.registry.get(run.request.key)
    page = offline.payload(run.trace, entry, run.request.text, [])
    assert page["tour"]["stops"] and any("start the tour in the app" in n for n in page["tour"]["left_out"])
    toured = tiny.start_tour(Inputs(run=run))[tiny.page.toured]
    with_model = offline.payload(run.trace, entry, run.request.text, [], toured=toured)
    assert [s["key"] for s in with_model["tour"]["stops"]] == [s.key for s in toured.stops]
    assert "why" in {s.key for s in toured.stops}
