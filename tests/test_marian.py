"""opus-mt (MarianMT) models in our Transformer compute exactly what `transformers` computes: token ids, logits,
every attention map, greedy and beam outputs, parameter counts. Offline: a small random MarianMTModel configured
like opus-mt (tests/marian_fixtures.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from tests.marian_fixtures import SENTENCES, load_hf  # noqa: E402
from transformer import Translator, checkpoint  # noqa: E402
from transformer.architecture import FINAL_LOGITS_BIAS, fixed_tensors, tensor_shapes  # noqa: E402
from transformer.search import beam_search, greedy  # noqa: E402

MAX_NEW = 12


@pytest.fixture(scope="module")
def folder(opus_mt):
    return opus_mt


@pytest.fixture(scope="module")
def pair(folder):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    hf, hf_tok = load_hf(folder)
    yield hf, hf_tok, Translator.from_checkpoint(folder, device="cpu")
    torch.set_num_threads(threads)  # later tests compare with fresh processes, which use the default


def _batch(hf_tok, texts):
    enc = hf_tok(texts, padding=True, return_tensors="pt")
    return enc.input_ids, enc.attention_mask


def test_config_is_opus_mt_not_marian_defaults(pair):
    hf, _, ours = pair
    c, V = ours.config, hf.config.vocab_size
    assert hf.config.activation_function == "swish" and hf.config.scale_embedding
    assert (c.activation, c.pe_layout, c.final_logits_bias) == ("swish", "split", True)
    assert (c.pad_id, c.decoder_start_id, c.eos_id, c.suppress_ids) == (V - 1, V - 1, 0, (V - 1,))
    assert ours.checkpoint.source_lang == "de" and ours.checkpoint.target_lang == "en"


def test_token_ids_equal_marian_tokenizer(pair):
    _, hf_tok, ours = pair
    for text in SENTENCES + ["", "unbekannt ☃☃ Ωmega"]:
        ids, _ = ours.encode_source(text)
        assert ids == hf_tok(text).input_ids
        assert ids[-1] == 0  # EOS is 0
    assert hf_tok.unk_token_id in ours.encode_source("☃")[0]  # a character neither spm saw


def test_logits_and_every_attention_equal_with_padding(pair):
    hf, hf_tok, ours = pair
    src, src_mask = _batch(hf_tok, SENTENCES[:4])
    assert not bool(src_mask.all())  # the batch has padding
    V = hf.config.vocab_size
    tgt = torch.randint(2, V - 1, (4, 7))
    tgt[:, 0] = V - 1  # the decoder start is the pad id
    tgt_mask = torch.ones_like(tgt)
    tgt_mask[1, 5:] = tgt_mask[3, 3:] = 0
    tgt = tgt.masked_fill(tgt_mask == 0, V - 1)
    with torch.no_grad():
        out = hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=tgt, decoder_attention_mask=tgt_mask,
                 output_attentions=True)
        enc = ours.model.encode(src, need_weights=True, src_lengths=src_mask.sum(1))
        dec = ours.model.decode(tgt, enc, need_weights=True, tgt_lengths=tgt_mask.sum(1))
    real = tgt_mask.bool()
    assert (dec.logits - out.logits)[real].abs().max() < 1e-5
    L, h, S, T = 2, 4, src.size(1), tgt.size(1)
    for theirs, mine, shape in ((out.encoder_attentions, enc.self_attn, (4, h, S, S)),
                                (out.decoder_attentions, dec.self_attn, (4, h, T, T)),
                                (out.cross_attentions, dec.cross_attn, (4, h, T, S))):
        assert len(theirs) == len(mine) == L
        for a, b in zip(theirs, mine):
            assert a.shape == b.shape == shape
            assert (a - b).abs().max() < 1e-5


def test_greedy_ids_equal_generate(pair):
    hf, hf_tok, ours = pair
    src, src_mask = _batch(hf_tok, SENTENCES)
    with torch.no_grad():
        theirs = hf.generate(input_ids=src, attention_mask=src_mask, num_beams=1, do_sample=False,
                             max_new_tokens=MAX_NEW, forced_eos_token_id=None)
    mine = greedy(ours.model, src, MAX_NEW)
    for row, ids in zip(theirs.tolist(), mine):
        row = row[1:]
        assert ids == (row[:row.index(0)] if 0 in row else row)
    assert any(0 in row for row in theirs.tolist()) and any(len(ids) == MAX_NEW for ids in mine)


@pytest.mark.parametrize("alpha", [0.6, 1.0, 1.4])
def test_beam_ids_and_scores_equal_generate(pair, alpha):
    hf, hf_tok, ours = pair
    V, finished = hf.config.vocab_size, 0
    for text in SENTENCES:
        src, src_mask = _batch(hf_tok, [text])
        with torch.no_grad():
            theirs = hf.generate(input_ids=src, attention_mask=src_mask, num_beams=5, num_return_sequences=5,
                                 early_stopping=True, length_penalty=alpha, max_new_tokens=MAX_NEW,
                                 output_scores=True, return_dict_in_generate=True)
        hyps = beam_search(ours.model, src, 5, MAX_NEW, alpha)[0]
        assert len(hyps) == 5
        for row, score, hyp in zip(theirs.sequences.tolist(), theirs.sequences_scores.tolist(), hyps):
            row = row[1:]
            row = row[:row.index(0) + 1] if 0 in row else [i for i in row if i != V - 1]
            assert hyp.ids == row
            assert abs(hyp.score - score) < 1e-5
            finished += hyp.ids[-1] == 0
    assert finished  # both paths are exercised: hypotheses that chose EOS and ones cut by the limit


def test_parameter_count_is_transformers_minus_position_tables(pair):
    hf, _, ours = pair
    c = ours.config
    assert ours.model.num_parameters() == hf.num_parameters() - 2 * c.max_len * c.d_model
    bias = fixed_tensors(c)
    assert [(b.name, b.count) for b in bias] == [(FINAL_LOGITS_BIAS, c.vocab_size)]
    assert torch.equal(ours.model.final_logits_bias, hf.final_logits_bias[0])


def test_architecture_reports_swish(pair):
    stages = {s.key: s for s in tensor_shapes(pair[2].config, 5, 4)}
    assert "SiLU" in stages["encoder.ffn"].tensor and "swish" in stages["decoder.ffn"].note
    assert "+ b" in stages["logits"].tensor


def test_translator_traces_an_opus_mt_model(pair):
    _, _, ours = pair
    trace = ours.translate(SENTENCES[0], max_new_tokens=MAX_NEW)
    assert trace.source_ids[-1] == 0 and trace.target_tokens[0] == "<pad>"
    assert trace.cut_by_limit == (trace.output_ids[-1] != 0)
    beam = ours.translate(SENTENCES[0], beam_size=3, max_new_tokens=MAX_NEW)
    assert len(beam.candidates) == 3 and beam.decoder_self_attn.shape[2] == len(beam.output_ids)


def test_pytorch_model_bin_is_read_as_plain_tensors(folder, pair, tmp_path):
    copy = tmp_path / "bin"
    shutil.copytree(folder, copy)
    from safetensors.torch import load_file

    torch.save(load_file(copy / "model.safetensors"), copy / "pytorch_model.bin")
    (copy / "model.safetensors").unlink()
    model = checkpoint.load(copy).model
    src = torch.tensor([pair[2].encode_source(SENTENCES[0])[0]])
    assert greedy(model, src, MAX_NEW) == greedy(pair[2].model, src, MAX_NEW)
    (copy / "pytorch_model.bin").unlink()
    (copy / "tf_model.h5").write_bytes(b"")
    with pytest.raises(checkpoint.CheckpointError, match="no weights.*model.safetensors or pytorch_model.bin"):
        checkpoint.load(copy)


@pytest.mark.parametrize("change, message", [
    (dict(activation_function="gelu"), "activation_function='gelu'"),
    (dict(scale_embedding=False), "scale_embedding"),
    (dict(decoder_attention_heads=2), "head counts differ"),
])
def test_unsupported_configs_are_refused_clearly(folder, tmp_path, change, message):
    import json

    copy = tmp_path / "bad"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(checkpoint.CheckpointError, match=message):
        checkpoint.load(copy)


def test_multi_target_vocabulary_is_refused(folder, tmp_path):
    import json

    copy = tmp_path / "multi"
    shutil.copytree(folder, copy)
    vocab = json.loads((copy / "vocab.json").read_text())
    vocab[">>fra<<"] = vocab.pop(next(p for p in vocab if p not in ("</s>", "<unk>", "<pad>")))
    (copy / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(checkpoint.CheckpointError, match=">>lang<< prefix"):
        checkpoint.load(copy)


# --- export: our checkpoint -> a folder transformers loads with no code of ours ---

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from tests.app_fixtures import make_checkpoint
    from transformer import hub

    root = tmp_path_factory.mktemp("export")
    ours = make_checkpoint(root / "tiny-de-en", max_len=24)
    hub.main(["export-hf", str(ours), str(root / "hf")])
    return Translator.from_checkpoint(ours, device="cpu"), root / "hf"


def test_export_writes_every_id_explicitly(exported):
    import json

    ours, out = exported
    config = json.loads((out / "config.json").read_text())
    generation = json.loads((out / "generation_config.json").read_text())
    c = ours.config
    assert (config["pad_token_id"], config["eos_token_id"], config["decoder_start_token_id"]) == (0, 3, 2)
    assert config["forced_eos_token_id"] is None and generation["forced_eos_token_id"] is None
    assert (config["activation_function"], config["scale_embedding"], config["max_position_embeddings"]) == \
        ("relu", True, c.max_len)
    assert generation["decoder_start_token_id"] == 2 and generation["max_length"] == c.max_len
    assert "MarianMTModel.from_pretrained" in (out / "README.md").read_text()


def test_exported_model_translates_identically_in_transformers(exported):
    from transformers import MarianMTModel, MarianTokenizer

    ours, out = exported
    hf = MarianMTModel.from_pretrained(out).eval()
    hf_tok = MarianTokenizer.from_pretrained(out)
    texts = ["Zwei Hunde spielen im Schnee.", "Ein kleines Mädchen lacht ☃."]
    for text in texts:
        assert hf_tok(text).input_ids == ours.encode_source(text)[0]
    batch = hf_tok(texts, padding=True, return_tensors="pt")
    tgt = torch.tensor([[2, 10, 11, 12], [2, 13, 14, 15]])
    with torch.no_grad():
        theirs = hf(**batch, decoder_input_ids=tgt).logits
        encoded = ours.model.encode(batch.input_ids, src_lengths=batch.attention_mask.sum(1))
        mine = ours.model.decode(tgt, encoded).logits
        assert (theirs - mine).abs().max() < 1e-5
        generated = hf.generate(**batch)  # default arguments: the exported generation_config.json
    mine = greedy(ours.model, batch.input_ids, ours.config.max_len - 1)
    for row, ids in zip(generated.tolist(), mine):
        row = row[1:]
        assert ids == (row[:row.index(3)] if 3 in row else [i for i in row if i != 0])
    assert [hf_tok.decode(r, skip_special_tokens=True) for r in generated] == \
        [ours.tokenizer.decode(ids) for ids in mine]


def test_residual_permutation_is_an_exact_equivalence(exported):
    """The split-PE model built from the exported weights, read back by our loader, equals the original."""
    ours, out = exported
    back = checkpoint.load(out).model
    assert back.config.pe_layout == "split" and ours.config.pe_layout == "interleaved"
    src = torch.tensor([ours.encode_source("Zwei Hunde spielen im Schnee.")[0]])
    tgt = torch.tensor([[2, 5, 6, 7, 8]])
    with torch.no_grad():
        a = ours.model.decode(tgt, ours.model.encode(src)).logits
        b = back.decode(tgt, back.encode(src)).logits
    assert (a - b).abs().max() < 1e-5


@pytest.mark.parametrize("change, message", [(dict(norm_first=True), "pre-LN"),
                                             (dict(tie_embeddings=False), "untied embeddings")])
def test_export_refuses_what_marian_cannot_hold(tmp_path, change, message):
    from tests.app_fixtures import make_checkpoint
    from transformer import hub

    folder = make_checkpoint(tmp_path / "x", **change)
    with pytest.raises(SystemExit, match=message):
        hub.main(["export-hf", str(folder), str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_the_app_lists_an_opus_mt_model_and_survives_a_hub_failure(folder, tmp_path, monkeypatch):
    import huggingface_hub

    from anatomy.registry import ModelRegistry
    from tests.app_fixtures import make_checkpoint

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    shipped = make_checkpoint(tmp_path / "tiny-en-de", "en", "de")
    reg = ModelRegistry.discover([str(shipped), str(folder), "hf://Helsinki-NLP/opus-mt-fi-en"])
    labels = {e.key: e.label for e in reg.entries.values()}
    assert labels["en-de"] == "English → German"
    assert labels["de-en"] == "German → English (opus-mt, 47k parameters)"
    assert any("opus-mt-fi-en" in n and "could not fetch" in n for n in reg.notices)
    trace = reg.translator("de-en", "cpu")[0].translate(SENTENCES[1], max_new_tokens=4)
    assert trace.source_ids[-1] == 0


def hf_cache(root: Path, repo: str, files: dict[str, bytes]) -> Path:
    """A Hugging Face cache (HF_HUB_CACHE) holding `files` (name -> bytes) of `repo` at main, laid out as
    huggingface_hub lays it out: blobs by hash, snapshots/<commit>/NAME linking to them, refs/main."""
    import hashlib

    commit = hashlib.sha1(repo.encode()).hexdigest()
    repo_dir = root / f"models--{repo.replace('/', '--')}"
    (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "snapshots" / commit).mkdir(parents=True)
    for name, data in files.items():
        blob = repo_dir / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (repo_dir / "snapshots" / commit / name).symlink_to(f"../../blobs/{blob.name}")
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return root


def test_the_app_lists_what_the_space_preloaded_from_the_cache_alone(folder, tmp_path, monkeypatch):
    """What `push-space --with-opus-mt` sets up: a README whose front matter preloads two opus-mt repos, one of them
    in the Hugging Face cache (the files it names, the weights as pytorch_model.bin): that one is listed at once,
    labelled as a Hub opus-mt model, and translates as the folder does; the other is left out without a notice; and
    nothing is asked of the network."""
    import huggingface_hub
    from safetensors.torch import load_file

    from anatomy import registry
    from tests.app_fixtures import make_checkpoint
    from transformer import hub

    weights = tmp_path / "pytorch_model.bin"
    torch.save(load_file(folder / "model.safetensors"), weights)
    card = "---\nlanguage: [de, en]\n---\n# opus-mt-de-en\n* dataset: opus\n"
    files = {name: (weights if name == "pytorch_model.bin" else folder / name).read_bytes()
             for name in hub.OPUS_MT_FILES if name != "README.md"}
    cache = hf_cache(tmp_path / "hub", "Helsinki-NLP/opus-mt-de-en", {**files, "README.md": card.encode()})
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    snapshot_download = huggingface_hub.snapshot_download

    def cache_only(*args, **kwargs):
        assert kwargs.get("local_files_only"), "a preloaded model must not be downloaded"
        return snapshot_download(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cache_only)
    space = tmp_path / "space"
    make_checkpoint(space / "checkpoints" / "general-de-en", "de", "en")
    readme = hub.with_preloads((registry.ROOT / "README.md").read_text(encoding="utf-8"),
                               hub.opus_mt_preloads(check=False))
    (space / "README.md").write_text(readme, encoding="utf-8")
    monkeypatch.setattr(registry, "ROOT", space)
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(space / "checkpoints"))
    monkeypatch.delenv("ANATOMY_HUB_MODELS", raising=False)

    assert registry.preloaded_sources() == ["hf://Helsinki-NLP/opus-mt-de-en"]
    reg = registry.ModelRegistry.discover(hub_in_background=True)
    assert reg.pending == [] and reg.notices == []
    entry = reg.get("opus-mt-de-en")
    assert entry.source == "hf://Helsinki-NLP/opus-mt-de-en"
    assert entry.label == "German → English (opus-mt, Helsinki-NLP, 47k parameters)"
    assert entry.training_data == "opus"  # its preloaded model card
    assert list(reg.entries) == ["de-en", "opus-mt-de-en"]
    ours = Translator.from_checkpoint(folder, device="cpu").translate(SENTENCES[0], max_new_tokens=6)
    preloaded = reg.translator("opus-mt-de-en", "cpu")[0].translate(SENTENCES[0], max_new_tokens=6)
    assert preloaded.output_ids == ours.output_ids


# ---- the app's views of an opus-mt model ----

def test_the_untrained_twin_reads_every_source_piece_of_an_opus_mt_model(folder, monkeypatch):
    """Only opus-mt's own EOS (0) leaves the source the twin translates: id 3 is an ordinary piece there."""
    from anatomy import engine
    from anatomy.registry import ModelRegistry

    entry = ModelRegistry.discover([str(folder)]).get("de-en")
    trace = next(t for t in (entry.cpu.translate(s, max_new_tokens=3) for s in SENTENCES) if 3 in t.source_ids)
    twin = entry.twin()
    read = []
    translate = twin.translate
    monkeypatch.setattr(twin, "translate", lambda text, **kw: read.append(text) or translate(text, **kw))
    forced, _ = engine.untrained(twin, trace, 5)
    assert twin.encode_source(read[0])[0] == trace.source_ids
    assert forced.source_ids == trace.source_ids


@pytest.mark.slow  # node draws
def test_the_positional_encoding_tab_shows_the_models_own_split_table(pair):
    """opus-mt adds all sines, then all cosines: the tab draws that table, the rows this input got and the right
    sin/cos names."""
    import numpy as np

    from anatomy.inputs import View
    from anatomy.payload import positional
    from tests import viewer

    _, _, ours = pair
    c, pe = ours.config, ours.model.pe.numpy()
    trace = ours.translate(SENTENCES[0], max_new_tokens=2)
    shown = viewer.drawn(None, [View()], positional=positional(c, trace.source_tokens),
                         dims=["1", str(c.d_model // 2 + 1)])[0]
    np.testing.assert_allclose(shown["pe-rows"]["data"][0]["z"], pe[:len(trace.source_tokens)], atol=1e-6)
    np.testing.assert_allclose(shown["pe"]["data"][0]["z"], pe, atol=1e-6)
    curves = shown["pe-curves"]["data"]
    assert [t["name"].split(" (")[1].split(",")[0] for t in curves] == ["sin", "cos"]
    dim_1 = np.sin(np.arange(c.max_len) / 10000 ** (2 / c.d_model))  # split: dim 1 is the second sine
    np.testing.assert_allclose(curves[0]["y"], dim_1, atol=1e-6)


OPUS_CARD = "# opus-mt-de-en\n\n* source languages: de\n*  dataset: opus\n* model: transformer-align\n"


@pytest.mark.parametrize("card, data", [("", "opus-mt"), (OPUS_CARD, "opus")])
def test_the_unknown_piece_notice_names_the_models_languages_and_data(folder, tmp_path, card, data):
    from anatomy import views
    from anatomy.registry import ModelRegistry

    copy = shutil.copytree(folder, tmp_path / "opus-mt-de-en")
    if card:
        (copy / "README.md").write_text(card)
    entry = ModelRegistry.discover([str(copy)]).get("de-en")
    trace = entry.cpu.translate(SENTENCES[-1], max_new_tokens=2)  # ☃ and Ω: characters the vocabulary never saw
    unknown = trace.source_tokens.count("<unk>")
    assert unknown and views.run_notices(entry, trace, [])[0] == (
        f"{unknown} piece(s) of the text are unknown to this model (read as <unk>): its vocabulary holds only what its "
        f"German and English training text contains: {data}.")
