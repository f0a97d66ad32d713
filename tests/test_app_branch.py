"""The page's branch (issue 51 §1): a step's other piece or a typed word continues the shown translation in one model
event, shown beside the model's own; Back to the model's own restores the kept Run without a model pass."""
from __future__ import annotations

import json

import pytest

from anatomy import engine
from anatomy.inputs import View
from tests.app_fixtures import run_of
from ui.values import Branching, Inputs, Viewed


@pytest.fixture(scope="module")
def own(tiny):
    return run_of(tiny, max_new=6)


def _branch(tiny, run, **asked):
    return tiny.branch(Inputs(run=run, view=View(), branch=Branching(**asked)))


def test_a_step_s_other_piece_continues_the_translation_beside_the_model_s_own(tiny, own):
    p = tiny.page
    step = 1
    other = next(t.token for t in own.trace.top_k[step] if t.token != own.trace.output_tokens[step])
    out = _branch(tiny, own, step=step, piece=other)
    run = out[p.run]
    trace = run.trace
    assert trace.settings.mode == "branch" and trace.settings.parts_at == step
    assert trace.output_tokens[:step] == own.trace.output_tokens[:step] and trace.output_tokens[step] == other
    assert run.own is own and run.request.decoding.prefix == (*own.trace.output_ids[:step], trace.output_ids[step])
    payload = out[p.trace_data]
    assert payload["own"]["pieces"] == own.trace.output_tokens and payload["own"]["log_prob"] is not None
    assert list(payload["settings"]["prefix"]) == trace.output_tokens[:step + 1]
    # a branch of the branch still keeps the model's own; Back shows it again, drawn with no model pass
    again = _branch(tiny, run, step=0, word="Hunde")[p.run]
    assert again.own is own and again.trace.settings.prefix
    calls = []
    real = engine.translate
    engine.translate = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        back = tiny.back_to_own(Inputs(run=again, view=View()))
    finally:
        engine.translate = real
    assert back[p.run] is own and not calls and back[p.trace_data]["own"] is None
    assert back[p.trace_data]["translation"] == own.trace.text


def test_a_typed_word_is_forced_as_its_pieces_and_the_model_s_own_first_piece_gives_its_translation(tiny, own):
    p = tiny.page
    tok = tiny.registry.get("de-en").cpu.tokenizer
    run = _branch(tiny, own, step=0, word="  Hunde ")[p.run]
    pieces = tok.pieces(tok.encode_target("Hunde"))
    assert run.trace.output_tokens[:len(pieces)] == pieces
    same = _branch(tiny, own, step=0, piece=own.trace.output_tokens[0])[p.run]
    assert same.trace.output_tokens == own.trace.output_tokens and same.trace.settings.parts_at == 1


def test_a_branch_asks_for_a_translation_first_and_reads_the_viewer_s_json(tiny):
    import gradio as gr

    with pytest.raises(gr.Error, match="Translate a sentence first"):
        _branch(tiny, None, step=0, word="x")
    viewed = Viewed.of(json.dumps({"ask": "branch", "branch": {"step": 2, "piece": "▁Hund", "word": ""}}))
    assert viewed.branch == Branching(2, "▁Hund", "")
    for bad in ({"step": -1, "piece": "x"}, {"step": "2"}, {"step": True}, "x", None):
        assert Viewed.of(json.dumps({"branch": bad})).branch is None
