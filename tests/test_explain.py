"""Issue 36's explanations: the logit lens (each decoder layer's stream through the output projection) and the
attribution of each produced piece (transformer/explain.py), in the Why this word tab."""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch

from anatomy import engine
from anatomy.inputs import View
from anatomy.run import Explained
from tests import viewer
from tests.app_fixtures import run_of
from tests.viewer import needs_node
from transformer import Translator, checkpoint
from transformer.explain import METHODS, attribute, attributions
from transformer.pieces import word_groups
from transformer.translator import decoder_input
from ui.values import Inputs, PageSettings, Tab
from viz.text import label

ROOT = Path(__file__).resolve().parent.parent

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
def test_the_why_tab_draws_what_its_model_event_made(tiny):
    """Opening Why this word makes the shown translation's explanation (explain, a model event, once per
    translation); the tab sends it and the viewer draws it: the attribution at the step (each bar a source or prefix
    piece's part, merged words their pieces' sum, occlusion per word), every step's source share, and the logit
    lens at the step and over the whole translation, the last layer's top piece at each step the model's own
    choice (the greedy trace's top 1)."""
    p = tiny.page
    run = run_of(tiny, max_new=6)
    made = tiny.explain_trace(Inputs(run=run, tab=Tab.WHY))
    assert isinstance(made, Explained) and made.of is run.trace and set(made.attributions) == set(METHODS)
    assert tiny.explain_trace(Inputs(run=run, explained=made, tab=Tab.WHY)) == gr.skip()
    assert tiny.explain_trace(Inputs(run=run)) == gr.skip()  # another tab open: nothing to make
    data = tiny.tab_view(Inputs(run=run, explained=made, tab=Tab.WHY, settings=PageSettings(key="de-en")))
    part = data[p.explain_data]
    L, T = tiny.registry.get("de-en").config.n_decoder_layers, len(run.trace.output_ids)
    lens = part["lens"]
    assert lens["layers"] == L and len(lens["tokens"][0]) == T and len(lens["probs"][L - 1][0]) == 5
    assert len(json.dumps(part)) < 300_000
    trace_payload = tiny.show(Inputs(run=run))[p.trace_data]
    step = 3
    drawn = viewer.drawn(trace_payload, [View.of("cross", 1, "mean", False, step)], explain=part)[0]
    one, whole = drawn["lens-step"], drawn["lens-all"]
    assert [str(t) for t in one["layout"]["yaxis"]["ticktext"]] == [f"layer {li + 1}" for li in range(L)]
    top = run.trace.top_k[step - 1][0].token  # the model's own first choice at the step
    assert strip(one["data"][0]["text"][L - 1][0]) == label(top, 14)
    assert f"Logit lens at step {step}" in viewer.title(one) and whole["layout"]["shapes"][0]["x0"] == step - 1.5
    assert [strip(whole["data"][0]["text"][L - 1][t]) for t in range(T)] == \
        [label(run.trace.top_k[t][0].token, 10) for t in range(T)]
    assert one["layout"]["meta"]["export"] == f"de-en_step{step}_logit-lens"

    ig = made.attributions["ig"]
    why = drawn["why-step"]
    S = len(run.trace.source_tokens)
    expected = [*ig.source[step - 1], *ig.prefix[step - 1][:step]]  # every source piece, then the prefix read
    np.testing.assert_allclose(why["data"][0]["y"], expected, atol=1e-4)
    assert len(why["layout"]["xaxis"]["ticktext"]) == S + step
    assert viewer.title(why).startswith(f"Why “{label(run.trace.output_tokens[step - 1], 16)}” at step {step}?")
    assert "integrated gradients" in viewer.title(why) and why["layout"]["meta"]["export"] == f"de-en_step{step}_why_ig"
    shares = drawn["why-shares"]["data"]
    np.testing.assert_allclose(np.add(shares[0]["y"], shares[1]["y"]), 100.0, atol=0.02)
    np.testing.assert_allclose(np.array(shares[0]["y"]) / 100, ig.shares()[:, 0], atol=1e-4)
    every = drawn["why-all"]["data"][0]["z"]
    assert len(every) == T and every[0][S + 2] is None  # step 1 reads only <s>: the pieces after are masked
    row = np.concatenate([ig.source[step - 1], ig.prefix[step - 1][:step]])
    np.testing.assert_allclose(every[step - 1][:S], ig.source[step - 1] / np.abs(row).max(), atol=1e-3)

    words = viewer.drawn(trace_payload, [View.of("cross", 1, "mean", True, step, hide=True)], explain=part,
                         method="occlusion")[0]["why-step"]
    occlusion = made.attributions["occlusion"]
    kept = [w for w, pieces in enumerate(occlusion.words) if run.trace.source_tokens[pieces[0]] != "</s>"]
    np.testing.assert_allclose(words["data"][0]["y"], occlusion.source[step - 1][kept], atol=1e-4)
    assert "source words only" in viewer.title(words)
    agree = drawn["why-agree"]  # asks for the value norms first
    assert agree["asksNorms"]
    norms = tiny.weigh(Inputs(run=run))[p.norms_data]
    agree = viewer.drawn(trace_payload, [View.of("cross", 1, "mean", False, step)], explain=part,
                         norms=norms)[0]["why-agree"]
    from anatomy.payload import quantised
    from transformer.explain import spearman

    src = run.trace.source_tokens
    words = [w for w in word_groups(src) if not all(src[j] in ("<s>", "</s>", "<pad>", "<unk>") for j in w)]
    ig_words = [round(sum(part["methods"]["ig"]["source"][step - 1][j] for j in w), 6) for w in words]
    alpha = quantised(run.trace.cross_attn).astype(float) / 255  # as the payload carries it
    n = np.array(norms["kinds"]["cross"])
    moved = alpha * n[:, :, None, :]
    moved = moved / moved.sum(-1, keepdims=True)
    for trace_index, weights in enumerate((alpha, moved)):
        want = [spearman([round(weights[li, :, step - 1][:, w].mean(0).sum(), 6) for w in words], ig_words)
                for li in range(L)]
        np.testing.assert_allclose(agree["data"][trace_index]["y"], want, atol=1e-6)
    assert "Does attention agree?" in viewer.title(agree)
    assert f"over the {len(words)} source words" in viewer.title(agree)

    merged = viewer.drawn(trace_payload, [View.of("cross", 1, "mean", True, step)], explain=part,
                          method="grad")[0]["why-step"]
    grad, groups = made.attributions["grad"], word_groups(run.trace.source_tokens)
    np.testing.assert_allclose(merged["data"][0]["y"][:len(groups)],
                               [grad.source[step - 1][g].sum() for g in groups], atol=2e-4)


def test_a_contrast_explains_the_step_against_the_word_typed_or_the_runner_up(tiny):
    """Compare: a model event for the shown step; an empty word is the step's runner-up, a word its first piece; the
    piece written, or a word with no piece, is refused with a message."""
    run = run_of(tiny, max_new=6)
    view = View.of("cross", 1, "mean", False, 2)
    made = tiny.contrast(Inputs(run=run, view=view))
    c = made.contrast
    assert made.of is run.trace and c.step == 1 and c.asked == ""
    assert c.foil == next(x.token for x in run.trace.top_k[1] if x.id != run.trace.output_ids[1])
    assert set(c.attributions) == set(METHODS) and all(a.steps == (1,) for a in c.attributions.values())
    again = tiny.contrast(Inputs(run=run, view=view, explained=made, foil=c.foil.lstrip("\u2581") or c.foil))
    assert again.attributions is made.attributions  # the explanation of every step is kept
    # the written piece typed as a word (a step where it re-cuts to itself: the tiny model's pieces vary by machine)
    translator, trace = tiny.registry.translator("de-en", "cpu")[0], run.trace
    typed = [(t, token.lstrip("\u2581")) for t, token in enumerate(trace.output_tokens) if token.lstrip("\u2581")]
    t, written = next((t, w) for t, w in typed if engine.foil_piece(translator, trace, t, w) == trace.output_ids[t])
    with pytest.raises(gr.Error, match="piece the model wrote"):
        tiny.contrast(Inputs(run=run, view=View.of("cross", 1, "mean", False, t + 1), explained=made, foil=written))
    with pytest.raises(gr.Error, match="Translate a sentence first"):
        tiny.contrast(Inputs(view=view))


def test_the_word_to_compare_against_is_cleaned_as_text_is(tiny):
    """A lone surrogate in the typed word is removed (the tokenizer's C++ binding refused it with its own error)."""
    run = run_of(tiny, max_new=6)
    made = tiny.contrast(Inputs(run=run, view=View.of("cross", 1, "mean", False, 2), foil="\ud800Hund\x1b[0m"))
    assert made.contrast.asked == "Hund"


def strip(text: str) -> str:
    return text.replace("<b>", "").replace("</b>", "")


# Attribution (transformer/explain.py)

def _tiny_trace(folders, sentence: str = SENTENCE):
    translator = Translator(checkpoint.load(folders / "tiny-de-en"), torch.device("cpu"))
    return translator, translator.translate(sentence, beam_size=1, max_new_tokens=10)


def test_input_x_gradient_of_every_step_at_once_equals_one_backward_pass_per_step(folders):
    """The batched backward pass (one seed per step) against a plain backward pass of each step's log-probability."""
    translator, trace = _tiny_trace(folders)
    model, config = translator.model, translator.config
    got = attribute(translator, trace.source_ids, trace.output_ids, "grad")
    src = model.embedding(torch.tensor([trace.source_ids])).detach().requires_grad_()
    tgt_ids = decoder_input(list(trace.output_ids), config.decoder_start_id)
    tgt = model.embedding(torch.tensor([tgt_ids])).detach().requires_grad_()
    for t, out in enumerate(trace.output_ids):
        stream = model.embedded_streams(src, tgt)[-1]
        log_p = model.logits(stream)[0, t].log_softmax(-1)[out]
        g_src, g_tgt = torch.autograd.grad(log_p, (src, tgt))
        np.testing.assert_allclose(got.source[t], (src * g_src).sum(-1)[0].detach().numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.prefix[t], (tgt * g_tgt).sum(-1)[0].detach().numpy(), rtol=1e-4, atol=1e-6)
        assert got.score[t] == pytest.approx(float(log_p), abs=1e-5)
    assert np.all(got.prefix[np.triu_indices(len(tgt_ids), 1)] == 0)  # the mask hides later pieces
    one = attribute(translator, trace.source_ids, trace.output_ids, "grad", steps=[3])  # one seed: no batching
    np.testing.assert_allclose(one.source[0], got.source[3], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(one.prefix[0], got.prefix[3], rtol=1e-4, atol=1e-6)


def test_the_three_methods_at_once_equal_each_method_alone(folders):
    """Input × gradient rides on integrated gradients' passes (the input is one more point on the path): the shared
    passes give what each method gives alone, for some steps and against a foil too."""
    translator, trace = _tiny_trace(folders)
    words = word_groups(trace.source_tokens)
    for steps, foil in ((None, None), ([4, 1], trace.top_k[1][1].id)):
        both = attributions(translator, trace.source_ids, trace.output_ids, steps=steps, foil=foil, path_steps=8,
                            words=words)
        assert list(both) == list(METHODS)
        for method, got in both.items():
            alone = attribute(translator, trace.source_ids, trace.output_ids, method, steps=steps, foil=foil,
                              path_steps=8, words=words if method == "occlusion" else None)
            assert got.steps == alone.steps and got.path_steps == alone.path_steps and got.foil == foil
            for part in ("source", "prefix", "score", "baseline"):
                a, b = getattr(got, part), getattr(alone, part)
                assert (a is None) == (b is None), part
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{method} {part}")
    with pytest.raises(ValueError, match="unknown attribution method 'lime'"):
        attributions(translator, trace.source_ids, trace.output_ids, ("grad", "lime"))


def test_contrastive_attribution_is_the_difference_of_the_two_pieces_attributions(folders):
    """IG is linear in f: against a foil it is IG(produced) − IG(the foil in its place), on the same path."""
    translator, trace = _tiny_trace(folders)
    t = 1
    foil = trace.top_k[t][1].id
    against = attribute(translator, trace.source_ids, trace.output_ids, "ig", steps=[t], foil=foil, path_steps=8)
    produced = attribute(translator, trace.source_ids, trace.output_ids, "ig", steps=[t], path_steps=8)
    swapped = list(trace.output_ids)
    swapped[t] = foil
    other = attribute(translator, trace.source_ids, swapped, "ig", steps=[t], path_steps=8)
    np.testing.assert_allclose(against.source, produced.source - other.source, atol=1e-5)
    np.testing.assert_allclose(against.prefix, produced.prefix - other.prefix, atol=1e-5)
    assert against.score[0] == pytest.approx(produced.score[0] - other.score[0], abs=1e-5)
    assert against.foil == foil and against.steps == (t,)


def test_occlusion_equals_a_forward_pass_with_the_word_s_pieces_zeroed(folders):
    """Occluding word w is the same as giving its pieces an id whose embedding row is the baseline (zero): a pass
    through the model's own ids path, on a copy of the model with one spare row zeroed."""
    import copy

    translator, trace = _tiny_trace(folders, "Zwei große Hunde spielen im Schnee.")
    words = word_groups(trace.source_tokens)
    got = attribute(translator, trace.source_ids, trace.output_ids, "occlusion", words=words)
    assert got.source.shape == (len(trace.output_ids), len(words)) and got.prefix is None
    spare = max(set(range(translator.config.vocab_size)) - set(trace.source_ids) - set(trace.output_ids)
                - {translator.config.decoder_start_id})
    zeroed = copy.deepcopy(translator.model)
    # the source's table only: the target's and the output projection (tied to it) keep the trained row
    zeroed.tgt_embedding = copy.deepcopy(zeroed.embedding)
    zeroed.output_projection = torch.nn.Linear(translator.config.d_model, translator.config.vocab_size, bias=False)
    with torch.no_grad():
        zeroed.output_projection.weight.copy_(zeroed.embedding.weight)
        zeroed.embedding.weight[spare] = 0.0
    tgt = torch.tensor([decoder_input(list(trace.output_ids), translator.config.decoder_start_id)])

    def f(model, src_ids):
        with torch.no_grad():
            log_p = model(torch.tensor([src_ids]), tgt)[0].log_softmax(-1)
        return log_p[torch.arange(len(trace.output_ids)), torch.tensor(trace.output_ids)].numpy()

    full = f(translator.model, list(trace.source_ids))
    np.testing.assert_allclose(got.score, full, atol=1e-5)
    for w, pieces in enumerate(words):
        src = [spare if i in pieces else p for i, p in enumerate(trace.source_ids)]
        np.testing.assert_allclose(got.source[:, w], full - f(zeroed, src), atol=1e-5)


def test_attribution_refuses_what_it_cannot_explain(folders):
    translator, trace = _tiny_trace(folders)
    ids = (trace.source_ids, trace.output_ids)
    with pytest.raises(ValueError, match="unknown attribution method"):
        attribute(translator, *ids, "saliency")
    with pytest.raises(ValueError, match="steps must be among"):
        attribute(translator, *ids, "grad", steps=[len(trace.output_ids)])
    with pytest.raises(ValueError, match="foil"):
        attribute(translator, *ids, "grad", foil=-1)
    with pytest.raises(ValueError, match="each of the"):
        attribute(translator, *ids, "occlusion", words=[[0]])
    with pytest.raises(ValueError, match="no prefix share"):
        attribute(translator, *ids, "occlusion", words=[[i] for i in range(len(ids[0]))]).shares()


def test_attribution_of_an_opus_mt_model_is_complete(opus_mt):
    translator = Translator.from_checkpoint(opus_mt, device="cpu")
    trace = translator.translate("a b c", max_new_tokens=6)
    got = attribute(translator, trace.source_ids, trace.output_ids, "ig", path_steps=64)
    total = got.source.sum(1) + got.prefix.sum(1)
    np.testing.assert_allclose(total, got.score - got.baseline, rtol=0.05, atol=1e-3)
    np.testing.assert_allclose(got.shares().sum(1), 1.0)


def _val_pairs(n: int) -> list[str]:
    from transformer import data

    folder = data.SHARED_DATA_ROOT / "tatoeba"
    if not folder.is_dir():
        pytest.skip("needs ../shared/data/tatoeba")
    return data.read_lines(folder, "val", "de")[:n]


# Val sentences the statistical tests below run on: 10 give 115 pieces with |f(x) − f(baseline)| ≥ 0.1 and the
# same median error (0.9 %) and source shares as 20 did, in half the time.
VAL_SENTENCES = 10


@pytest.fixture(scope="module")
def general():
    folder = ROOT / "checkpoints" / "general-de-en"
    if not (folder / "model.safetensors").is_file():
        pytest.skip("general-de-en is not shipped here")
    translator = Translator.from_checkpoint(folder, device="cpu")
    return translator, [translator.translate(s) for s in _val_pairs(VAL_SENTENCES)]


@pytest.mark.slow  # a real checkpoint, 10 sentences
def test_integrated_gradients_are_complete_on_val_sentences(general):
    """Σ attributions = f(x) − f(baseline): the median relative error over the produced pieces of 10 val sentences
    with |f(x) − f(baseline)| ≥ 0.1 is ≤ 5 % at 32 steps."""
    translator, traces = general
    errors = []
    for trace in traces:
        got = attribute(translator, trace.source_ids, trace.output_ids, "ig", path_steps=32)
        gap = got.score - got.baseline
        total = got.source.sum(1) + got.prefix.sum(1)
        kept = np.abs(gap) >= 0.1
        errors += list(np.abs(total - gap)[kept] / np.abs(gap[kept]))
    assert len(errors) >= 100
    assert np.median(errors) <= 0.05


@pytest.mark.slow  # a real checkpoint, 10 sentences twice
def test_the_source_share_falls_when_the_source_is_nonsense(general):
    """Teacher-forced on the model's own translation of the real source, once with that source and once with as many
    repeated nonsense pieces: the mean source share falls by ≥ 15 points, and the shares sum to 1 at every step."""
    translator, traces = general
    nonsense = translator.tokenizer.encode("zzz")[0]  # ▁z
    real, fake = [], []
    for trace in traces:
        for source, into in ((trace.source_ids, real), ([nonsense] * (len(trace.source_ids) - 1)
                                                        + [trace.source_ids[-1]], fake)):
            shares = attribute(translator, source, trace.output_ids, "ig").shares()
            np.testing.assert_allclose(shares.sum(1), 1.0)
            into += list(shares[:, 0])
    assert np.mean(real) - np.mean(fake) >= 0.15, (np.mean(real), np.mean(fake))


# Attention weighted by what it moves (value norms) and rolled out

def test_value_norms_are_the_norm_of_each_key_s_value_through_its_head_s_part_of_W_o(folders):
    """Against the q, k, v of Translator.head_vectors (attention_inputs' pass) and W_o read from the model's state;
    a head switched off moves nothing."""
    from transformer import HeadMask
    from transformer.explain import value_norms

    translator, trace = _tiny_trace(folders)
    config, state = translator.config, translator.model.state_dict()
    norms = value_norms(translator, trace.source_ids, trace.output_ids)
    names = {"encoder": "encoder_layers.{}.self_attn", "decoder": "decoder_layers.{}.self_attn",
             "cross": "decoder_layers.{}.cross_attn"}
    for kind, name in names.items():
        for layer in range(config.n_layers(kind)):
            v = translator.head_vectors(trace, kind, layer + 1).v  # (h, T_k, d_k)
            W = state[name.format(layer) + ".W_o.weight"].numpy()  # (d_model, h·d_k)
            want = [[np.linalg.norm(W[:, h * config.d_k:(h + 1) * config.d_k] @ v[h, j]) for j in range(v.shape[1])]
                    for h in range(config.n_heads)]
            np.testing.assert_allclose(norms[kind][layer], want, rtol=1e-4, atol=1e-6)
    off = HeadMask.parse("cross:1.2", config)
    masked = value_norms(translator, trace.source_ids, trace.output_ids, off)
    assert np.all(masked.cross[0, 1] == 0) and np.all(masked.cross[0, 0] > 0)


@pytest.mark.slow  # node draws
@needs_node
def test_every_attention_view_draws_value_norm_weights_and_the_encoder_s_rollout(tiny):
    """The viewer weighs α by the norms the server sends (asked for once per translation): each head's row α_ij n_j
    renormalised; the encoder's rollout is ½A + ½I multiplied up the layers, rows summing to 1; a view that wants
    value norms it has not got asks for them."""
    p = tiny.page
    run = run_of(tiny, max_new=6)
    made = tiny.weigh(Inputs(run=run))
    assert made[p.norms].of is run.trace and tiny.weigh(Inputs(run=run, norms=made[p.norms]))[p.norms] is made[p.norms]
    norms, data = made[p.norms].norms, made[p.norms_data]
    payload = tiny.show(Inputs(run=run))[p.trace_data]
    trace = run.trace
    view = View.of("cross", 2, "1", False, 2)
    asked = viewer.drawn(payload, [view], weights="value-norm")[0]
    assert asked["heatmap"]["asksNorms"] and asked["grid"]["asksNorms"]
    assert asked["heatmap"]["layout"]["annotations"][0]["text"].startswith("Value-norm weights: asking the model")
    drawn = viewer.drawn(payload, [view, View.of("encoder", 2, "mean", False)], norms=data, weights="value-norm")
    alpha, n = trace.cross_attn[1, 0], norms.cross[1, 0]  # layer 2, head 1: (T, S), (S,)
    want = alpha * n / (alpha * n).sum(1, keepdims=True)
    np.testing.assert_allclose(drawn[0]["heatmap"]["data"][0]["z"], want, atol=0.01)
    assert "value-norm weights" in viewer.title(drawn[0]["heatmap"])
    np.testing.assert_allclose(drawn[0]["step-cross"]["data"][0]["y"], want[1], atol=0.01)

    rolled = viewer.drawn(payload, [View.of("encoder", 2, "1", False), View.of("cross", 1, "mean", False)],
                          weights="rollout")
    A = trace.encoder_self_attn.mean(1)  # (L, S, S)
    R = np.eye(A.shape[-1])
    for layer in range(2):
        R = (0.5 * A[layer] + 0.5 * np.eye(A.shape[-1])) @ R
    z = np.array(rolled[0]["heatmap"]["data"][0]["z"])
    np.testing.assert_allclose(z, R, atol=0.01)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-3)
    assert "rollout of layers 1–2" in viewer.title(rolled[0]["heatmap"])
    assert "rollout: encoder only" in viewer.title(rolled[1]["heatmap"])


# Does attention agree with attribution?

def test_spearman_by_hand_and_against_scipy():
    from transformer.explain import spearman

    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties share their mean rank: ranks (1.5, 1.5, 3) against (1, 2, 3)
    assert spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(np.corrcoef([1.5, 1.5, 3], [1, 2, 3])[0, 1])
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1], [2]) is None
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 5, 12).astype(float), rng.normal(size=12)
        assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)


def test_agreement_over_a_corpus_is_written_beside_the_weights_and_read_back(folders, tmp_path):
    """`python -m transformer.explain` on a tiny model: ρ per cross-attention layer and head, in [-1, 1], kept in
    agreement.json for these weights only."""
    import shutil

    from tests.conftest import write_corpus
    from transformer import card
    from transformer.explain import AGREEMENT_FILE, main, read_agreement

    folder = Path(shutil.copytree(folders / "tiny-de-en", tmp_path / "model"))
    corpus = write_corpus(tmp_path / "corpus", n_train=5, n_val=6)
    result = main(["--checkpoint", str(folder), "--corpus", str(corpus), "--sentences", "4", "--path-steps", "4",
                   "--threads", "1"])
    config = checkpoint.load(folder).model.config
    assert result.attention.shape == result.value_norm.shape == (config.n_decoder_layers, config.n_heads)
    assert result.sentences == 4 and result.steps > 0
    for table in (result.attention, result.value_norm, result.layer_attention, result.layer_value_norm):
        assert np.all(np.abs(table) <= 1 + 1e-9)
    weights, layer, head, rho = result.best()
    assert weights in ("attention", "value-norm") and rho == max(result.attention.max(), result.value_norm.max())
    (back,) = read_agreement(folder)
    np.testing.assert_allclose(back.attention, result.attention, atol=1e-4)
    assert (folder / AGREEMENT_FILE).is_file()
    section = card.agreement_section(folder)
    assert section.startswith(card.AGREEMENT_HEADING)
    assert f"Agrees best: the {weights} weights of layer {layer}" in section
    written = card.with_section("# Card\n\n## Good at, bad at\n\nMuch.\n", card.AGREEMENT_HEADING, section)
    assert written.index(card.AGREEMENT_HEADING) < written.index("## Good at, bad at")
    assert card.with_section(written, card.AGREEMENT_HEADING, "") == "# Card\n\n## Good at, bad at\n\nMuch.\n"
    (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes() + b" ")
    assert read_agreement(folder) is None  # of other weights now
    with pytest.raises(SystemExit, match="does not exist"):
        main(["--checkpoint", str(tmp_path / "nowhere"), "--corpus", str(corpus)])


def test_the_explain_endpoint_returns_the_method_s_attribution_and_answers_bad_input_with_a_notice(tiny):
    """/explain: the translation, a notice and the explanation of every step by the method asked for."""
    text, notice, got = tiny.api_explain("Zwei Hunde spielen im Schnee.", "de-en", "ig")
    T, S = len(got["output_pieces"]), len(got["source_pieces"])
    assert text and got["method"] == "ig" and got["steps"] == list(range(T))
    assert np.array(got["source"]).shape == (T, S) and np.array(got["prefix"]).shape == (T, T)
    np.testing.assert_allclose(np.array(got["shares"]).sum(1), 1.0, atol=2e-4)
    assert got["lens"]["layers"] == tiny.registry.get("de-en").config.n_decoder_layers
    _, _, occluded = tiny.api_explain("Zwei Hunde spielen im Schnee.", "de-en", "occlusion")
    assert "prefix" not in occluded and "shares" not in occluded
    assert np.array(occluded["source"]).shape == (T, len(occluded["words"]))
    assert tiny.api_explain("Zwei Hunde.", "de-en", None)[2]["method"] == "ig"  # the default
    for bad in ("saliency", 3, ["ig"]):
        assert tiny.api_explain("Zwei Hunde.", "de-en", bad)[1].startswith("attribution must be one of ig, grad")
    assert tiny.api_explain("", "de-en")[1] and tiny.api_explain("", "de-en")[2] is None
    assert "unknown" in tiny.api_explain("Zwei Hunde.", "xx-yy")[1].lower()
