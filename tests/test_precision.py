"""Inference with fp16 weights (transformer/half.py): the same translations and attention as fp32, on the same
weights, and never in training; the shipped models' val sample translated the same."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from transformer import ModelConfig, Transformer, Translator
from transformer import device as device_module
from transformer.config import BOS_ID, PAD_ID
from transformer.device import pick_precision
from transformer.half import fp16_available
from transformer.model import Linear
from transformer.search import beam_search, greedy

ROOT = Path(__file__).resolve().parents[1]
fp16_here = pytest.mark.skipif(not fp16_available(torch.device("cpu")), reason="fbgemm's fp16 GEMM needs an x86 CPU")


def _model(seed: int = 1, rounded: bool = True) -> Transformer:
    """A random model; `rounded`: its weights made fp16 numbers, as a saved checkpoint's are."""
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(vocab_size=60, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                                    n_decoder_layers=2, max_len=40)).eval()
    if rounded:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.half().float())
    return model


def _pair() -> tuple[Transformer, Transformer]:
    fp32 = _model()
    fp16 = copy.deepcopy(fp32)
    fp16.set_precision("fp16")
    return fp32, fp16


def _sources() -> torch.Tensor:
    torch.manual_seed(5)
    src = torch.randint(4, 60, (4, 9))
    src[1, 6:] = PAD_ID
    return src


@fp16_here
def test_fp16_weights_give_the_same_logits_attention_and_translations():
    fp32, fp16 = _pair()
    src = _sources()
    tgt = torch.cat([torch.full((4, 1), BOS_ID), torch.randint(4, 60, (4, 7))], dim=1)
    with torch.inference_mode():
        a, b = (m.decode(tgt, m.encode(src, need_weights=True), need_weights=True) for m in (fp32, fp16))
        ea, eb = (m.encode(src, need_weights=True) for m in (fp32, fp16))
        assert (a.logits - b.logits).abs().max() < 1e-4 * a.logits.abs().max()
        for x, y in zip(a.self_attn + a.cross_attn + ea.self_attn, b.self_attn + b.cross_attn + eb.self_attn):
            assert (x - y).abs().max() < 1e-5
        assert greedy(fp32, src) == greedy(fp16, src)
        for x, y in zip(beam_search(fp32, src, 4), beam_search(fp16, src, 4)):
            assert [h.ids for h in x] == [h.ids for h in y]
    # It is the fp16 kernel that runs: a weight that is no fp16 number (changed in place, so packed again) is read
    # rounded.
    layer, x = fp16.decoder_layers[0].ffn.W_1, torch.randn(3, 32)
    with torch.no_grad():
        layer.weight.add_(1e-4)
    with torch.inference_mode():
        rounded = torch.nn.functional.linear(x, layer.weight.half().float(), layer.bias)
        assert (layer(x) - rounded).abs().max() < 1e-5
        assert (layer(x) - torch.nn.functional.linear(x, layer.weight, layer.bias)).abs().max() > 1e-5


@fp16_here
def test_fp16_cached_decoding_equals_full_recompute():
    _, model = _pair()
    src, T = _sources(), 8
    tgt = torch.cat([torch.full((4, 1), BOS_ID), torch.randint(4, 60, (4, T - 1))], dim=1)
    with torch.inference_mode():
        enc = model.encode(src)
        full = model.decode(tgt, enc).logits
        cache = model.new_cache(enc, T)
        steps = torch.cat([model.decode(tgt[:, t:t + 1], enc, cache).logits for t in range(T)], dim=1)
    assert (full - steps).abs().max() < 1e-4


@fp16_here
def test_a_weight_changed_after_packing_is_read_again():
    """Packing happens on first use; new weights (a state dict, a training step) are packed again, never stale."""
    _, model = _pair()
    other = _model(seed=2)
    src = _sources()
    with torch.inference_mode():
        before = greedy(model, src)
    model.load_state_dict(other.state_dict())
    other.set_precision("fp16")
    with torch.inference_mode():
        assert greedy(model, src) == greedy(other, src) != before
        x = torch.randn(2, 1, 32)
        assert torch.equal(model.logits(x), other.logits(x))


@fp16_here
def test_training_is_fp32_whatever_the_inference_precision():
    fp32, fp16 = _pair()
    src = _sources()
    tgt = torch.cat([torch.full((4, 1), BOS_ID), torch.randint(4, 60, (4, 6))], dim=1)
    logits = fp16(src, tgt)  # grad enabled, as in training: F.linear on the fp32 weights
    assert torch.equal(fp32(src, tgt), logits) and logits.requires_grad
    assert fp16.precision == "fp16" and callable(fp16.half)  # nn.Module.half is not shadowed by the setting


def test_linear_rows_are_a_slice_of_the_weight():
    layer = Linear(8, 24)
    x = torch.randn(2, 3, 8)
    want = torch.nn.functional.linear(x, layer.weight[8:], layer.bias[8:])
    assert torch.equal(layer(x, (8, 24)), want)
    if fp16_available(torch.device("cpu")):
        with torch.no_grad():
            layer.weight.copy_(layer.weight.half().float())
        layer.fp16_weights = True
        with torch.inference_mode():
            rows = torch.nn.functional.linear(x, layer.weight[8:], layer.bias[8:])
            assert (layer(x, (8, 24)) - rows).abs().max() < 1e-5
            assert layer(x, (0, 8)).shape == (2, 3, 8)


def test_auto_reads_fp16_only_weights_that_are_fp16_numbers(monkeypatch):
    assert pick_precision(_model(rounded=False)) == "fp32"  # fp16 would round these weights
    expected = "fp16" if fp16_available(torch.device("cpu")) else "fp32"
    assert pick_precision(_model()) == expected
    assert pick_precision(_model(), "fp32") == "fp32"
    with pytest.raises(ValueError, match="unknown precision 'bf16'"):
        pick_precision(_model(), "bf16")
    monkeypatch.setattr(device_module, "fp16_available", lambda device: False)  # an ARM CPU, or a GPU
    assert pick_precision(_model()) == "fp32"
    with pytest.warns(UserWarning, match="fp16 weights need fbgemm"):
        assert pick_precision(_model(), "fp16") == "fp32"


@fp16_here
def test_a_trace_says_its_precision_and_old_traces_read_as_fp32(folders, tmp_path):
    from transformer import Trace, checkpoint

    tiny = checkpoint.load(folders / "tiny-de-en")  # saved in fp32: auto keeps fp32
    assert Translator(tiny).precision == "fp32"
    folder = checkpoint.save(tmp_path / "fp16", tiny.model, tiny.tokenizer, source_lang="de", target_lang="en")
    translator = Translator.from_checkpoint(folder, device="cpu")  # saved in fp16, as by default: auto reads fp16
    trace = translator.translate("Zwei Hunde spielen im Schnee.")
    assert translator.precision == trace.settings.precision == "fp16"
    assert Trace.from_json(trace.to_json()).settings.precision == "fp16"
    old = trace.to_dict()
    del old["settings"]["precision"]  # a trace written before precision was recorded
    assert Trace.from_dict(old).settings.precision == "fp32"
    fp32 = Translator.from_checkpoint(folder, device="cpu", precision="fp32").translate("Zwei Hunde spielen im Schnee.")
    assert fp32.text == trace.text and "precision" not in fp32.to_dict()["settings"]


def _needs_val_splits(folder: Path) -> None:
    """Skip where the checkpoint's val splits are not here (a user's clone has no ../shared/data)."""
    from benchmarks.decode import val_corpora
    from transformer import checkpoint

    try:
        val_corpora(checkpoint.load(folder))
    except FileNotFoundError as missing:
        pytest.skip(f"needs the val splits in ../shared/data or $ANATOMY_DATA_ROOT: {missing}")


@fp16_here
@pytest.mark.slow  # a shipped checkpoint, translated on 75 sentences twice
@pytest.mark.parametrize("name", ["general-de-en"])
def test_a_shipped_model_translates_a_val_sample_the_same_in_fp16(name):
    """The precision check of `python -m benchmarks.decode --check-precision` on the first pairs of each val
    split the model was trained on (read from ../shared/data)."""
    from benchmarks.decode import check_precision

    folder = ROOT / "checkpoints" / name
    if not (folder / "model.safetensors").is_file():
        pytest.skip(f"{name} is not shipped here")
    _needs_val_splits(folder)
    checks = list(check_precision(folder, limit=25))
    assert len(checks) == 3 and all(c.sentences == 25 for c in checks)  # tatoeba, multi30k, newstest
    for check in checks:
        assert check.passed, check.line()


@fp16_here
@pytest.mark.slow  # a shipped checkpoint
def test_a_trained_model_in_marian_format_translates_the_same_in_fp16(tmp_path):
    """The reduced path on a real trained model as an opus-mt folder: the shipped Multi30k model, exported."""
    from benchmarks.decode import check_precision
    from transformer import checkpoint, marian

    folder = ROOT / "checkpoints" / "multi30k-de-en"
    if not (folder / "model.safetensors").is_file():
        pytest.skip("multi30k-de-en is not shipped here")
    _needs_val_splits(folder)
    exported = marian.export(checkpoint.load(folder), tmp_path / "opus-mt-like")
    assert marian.is_marian_folder(exported)
    assert Translator.from_checkpoint(exported, device="cpu").precision == "fp16"  # its weights are fp16 numbers
    (check,) = check_precision(exported, limit=40)
    assert check.sentences == 40 and check.passed, check.line()


@fp16_here
def test_every_view_of_a_trace_is_computed_by_the_translator_that_made_it(tiny, monkeypatch):
    """The CPU in fp32 and in fp16 stand for two devices (a GPU that translates, the CPU copy the views once used):
    a trace made in fp16, where the entry's default is fp32, has its softmax walk, value norms, head importance,
    explanations, comparison and the tour's model stops made by its own fp16 translator, whose numbers the fp32
    one does not reproduce."""
    import dataclasses

    import numpy as np

    from anatomy import engine
    from anatomy.inputs import View
    from tests.app_fixtures import run_of
    from ui.values import Inputs, Tab

    entry = tiny.registry.get("de-en")
    fp32, fp16 = entry.translator("cpu", "fp32"), entry.translator("cpu", "fp16")
    assert (fp32.precision, fp16.precision) == ("fp32", "fp16") and entry.cpu is fp32  # auto: these weights in fp32
    assert entry.translator("cpu", "fp16") is fp16 and entry.translator("cpu", "auto") is fp32  # kept by both
    run = run_of(tiny, max_new=6)
    run = dataclasses.replace(run, trace=engine.translate(fp16, run.request))
    assert run.trace.settings.precision == "fp16" and entry.maker(run.trace) is fp16
    used = []
    for name in ("head_vectors", "value_norms", "importance", "explain", "contrast", "tour_extras"):
        def spy(translator, *args, _real=getattr(engine, name), _name=name, **kwargs):
            used.append((_name, translator))
            return _real(translator, *args, **kwargs)
        monkeypatch.setattr(engine, name, spy)
    view = View.of("decoder", 2, "1", False, 3, display="walk")
    vectors = tiny.walk(Inputs(run=run, view=view))[tiny.page.vectors].by["decoder", 2]
    tiny.weigh(Inputs(run=run))
    tiny.judge(Inputs(run=run))
    tiny.explain_trace(Inputs(run=run, tab=Tab.WHY), lambda *_, **__: None)
    tiny.contrast(Inputs(run=run, view=view))
    tiny.start_tour(Inputs(run=run))
    assert {name for name, _ in used} == {"head_vectors", "value_norms", "importance", "explain", "contrast",
                                          "tour_extras"}
    assert all(translator is fp16 for _, translator in used), [(n, t.precision) for n, t in used]
    # the walk is the trace's own: fp16's q, k, v, not the fp32 copy's
    own, other = fp16.head_vectors(run.trace, "decoder", 2), fp32.head_vectors(run.trace, "decoder", 2)
    assert np.array_equal(vectors.q, own.q) and not np.allclose(vectors.q, other.q, rtol=0, atol=1e-6)


def test_a_trace_from_a_device_this_machine_lacks_is_read_on_the_cpu(tiny, monkeypatch):
    import dataclasses

    from anatomy import registry

    entry = tiny.registry.get("de-en")
    trace = entry.cpu.translate("Zwei Hunde.", max_new_tokens=2)
    on_gpu = dataclasses.replace(trace, settings=dataclasses.replace(trace.settings, device="cuda:0"))
    monkeypatch.setattr(registry, "cuda_available", lambda: False)
    assert entry.maker(on_gpu) is entry.translator("cpu", "fp32")


def test_an_entry_reads_anatomy_precision_once_when_it_loads(folders, monkeypatch):
    """A translator made after the model loaded (another device, a trace's own) runs in the precision asked for at
    load, not in whatever $ANATOMY_PRECISION says by then."""
    from anatomy.registry import ModelRegistry

    monkeypatch.setenv("ANATOMY_PRECISION", "fp32")
    entry = ModelRegistry.discover([str(folders / "tiny-de-en")]).get("de-en")
    loaded = entry.cpu
    monkeypatch.setenv("ANATOMY_PRECISION", "fp16")
    assert entry.precision == "fp32" and entry.translator("cpu") is loaded and loaded.precision == "fp32"
