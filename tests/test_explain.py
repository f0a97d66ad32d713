"""Issue 36's explanations: the logit lens (each decoder layer's stream through the output projection)."""
from __future__ import annotations

import json

import gradio as gr
import numpy as np
import pytest
import torch

from anatomy.inputs import View
from anatomy.run import Lens
from tests import viewer
from tests.app_fixtures import run_of
from tests.viewer import needs_node
from transformer import Translator, checkpoint
from transformer.translator import decoder_input
from ui.values import Inputs, PageSettings, Tab
from viz.text import label

SENTENCE = "Zwei Hunde spielen im Schnee."


def own_prediction(translator: Translator, trace) -> tuple[np.ndarray, np.ndarray]:
    """The model's own next-piece probabilities at each step of a teacher-forced pass, top 5."""
    src = torch.tensor([list(trace.source_ids)])
    tgt = torch.tensor([decoder_input(list(trace.output_ids), translator.config.decoder_start_id)])
    with torch.inference_mode():
        logits = translator.model.decode(tgt, translator.model.encode(src)).logits[0].float()
    probs, ids = logits.softmax(-1).topk(5, dim=-1)
    return ids.numpy(), probs.numpy()


def check_lens(translator: Translator) -> None:
    trace = translator.translate(SENTENCE, beam_size=2, max_new_tokens=12)
    lens = translator.logit_lens(trace, k=5)
    L, T = translator.config.n_decoder_layers, len(trace.output_ids)
    assert lens.ids.shape == lens.probs.shape == (L, T, 5)
    assert lens.normed is (translator.model.decoder_norm is not None)
    assert len(lens.tokens) == L and all(len(layer) == T for layer in lens.tokens)
    assert lens.tokens[-1][0][0] == translator.tokenizer.pieces([lens.ids[-1, 0, 0]])[0]
    assert np.all(np.diff(lens.probs, axis=-1) <= 0) and np.all(lens.probs.sum(-1) <= 1 + 1e-5)
    ids, probs = own_prediction(translator, trace)
    # the last layer's row is the model's own prediction, exactly
    np.testing.assert_array_equal(lens.ids[-1], ids)
    np.testing.assert_allclose(lens.probs[-1], probs, rtol=1e-5, atol=1e-7)
    # an earlier layer reads a different stream: not the same distribution
    assert L < 2 or not np.allclose(lens.probs[0], lens.probs[-1])


def test_logit_lens_of_our_post_ln_model(folders):
    tiny = checkpoint.load(folders / "tiny-de-en")
    check_lens(Translator(tiny, torch.device("cpu")))


def test_logit_lens_of_a_pre_ln_model_reads_through_its_final_norm(tmp_path):
    from tests.app_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "pre-ln", norm_first=True)
    translator = Translator.from_checkpoint(folder, device="cpu")
    assert translator.model.decoder_norm is not None
    check_lens(translator)


def test_logit_lens_of_an_opus_mt_model(opus_mt):
    check_lens(Translator.from_checkpoint(opus_mt, device="cpu"))


def test_logit_lens_in_fp16_weights_matches_its_own_prediction(folders, tmp_path):
    tiny = checkpoint.load(folders / "tiny-de-en")
    folder = checkpoint.save(tmp_path / "fp16", tiny.model, tiny.tokenizer, source_lang="de", target_lang="en")
    translator = Translator.from_checkpoint(folder, device="cpu")
    if translator.precision != "fp16":
        pytest.skip("fp16 weights need fbgemm (x86)")
    check_lens(translator)


@pytest.mark.slow  # node draws
@needs_node
def test_the_predictions_tab_draws_the_lens_made_in_the_model_s_slot(tiny):
    """Opening Predictions makes the shown translation's lens (explain, a model event, once per translation); the tab
    sends it and the viewer draws it at the step and over the whole translation, the last layer's top piece at each
    step the model's own choice (the greedy trace's top 1)."""
    p = tiny.page
    run = run_of(tiny, max_new=6)
    made = tiny.explain(Inputs(run=run))
    assert isinstance(made, Lens) and made.of is run.trace
    assert tiny.explain(Inputs(run=run, lens=made)) == gr.skip()
    data = tiny.tab_view(Inputs(run=run, lens=made, tab=Tab.PREDICTIONS, settings=PageSettings(key="de-en")))
    part = data[p.lens_data]
    L, T = tiny.registry.get("de-en").config.n_decoder_layers, len(run.trace.output_ids)
    assert part["layers"] == L and len(part["tokens"][0]) == T and len(part["probs"][L - 1][0]) == 5
    assert len(json.dumps(part)) < 300_000
    trace_payload = tiny.show(Inputs(run=run))[p.trace_data]
    step = 2
    drawn = viewer.drawn(trace_payload, [View.of("cross", 1, "mean", False, step)], lens=part)[0]
    one, whole = drawn["lens-step"], drawn["lens-all"]
    assert [str(t) for t in one["layout"]["yaxis"]["ticktext"]] == [f"layer {l + 1}" for l in range(L)]
    top = run.trace.top_k[step - 1][0].token  # the model's own first choice at the step
    assert strip(one["data"][0]["text"][L - 1][0]) == label(top, 14)
    assert "Logit lens at step 2" in viewer.title(one) and whole["layout"]["shapes"][0]["x0"] == step - 1.5
    assert [strip(whole["data"][0]["text"][L - 1][t]) for t in range(T)] == \
        [label(run.trace.top_k[t][0].token, 10) for t in range(T)]
    assert one["layout"]["meta"]["export"] == f"de-en_step{step}_logit-lens"


def strip(text: str) -> str:
    return text.replace("<b>", "").replace("</b>", "")
