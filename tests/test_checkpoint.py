"""Checkpoint folders: round trip, clear errors for broken ones, Hub ids, atomic saves."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from transformer import checkpoint as ckpt
from transformer.tokenizer import Tokenizer


@pytest.fixture
def broken(copy_checkpoint, tmp_path) -> Path:
    folder = tmp_path / "ckpt"
    shutil.copytree(copy_checkpoint, folder)
    return folder


def test_round_trip_stores_half_precision_and_loads_float32(copy_checkpoint, tmp_path):
    loaded = ckpt.load(copy_checkpoint)
    meta = json.loads((copy_checkpoint / "config.json").read_text())
    assert set(meta) >= {"model", "source_lang", "target_lang", "special_ids", "training", "metrics"}
    assert meta["special_ids"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3}
    with safe_open(copy_checkpoint / "model.safetensors", "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    assert (copy_checkpoint / "metrics.jsonl").read_text().count("\n") == 8
    again = ckpt.save(tmp_path / "again", loaded.model, loaded.tokenizer, source_lang="de", target_lang="en")
    reloaded = ckpt.load(again)
    for (name, a), b in zip(loaded.model.state_dict().items(), reloaded.model.state_dict().values()):
        assert torch.equal(a, b), name  # fp16 values survive a second fp16 round trip exactly


def test_missing_folder_and_files_are_named(tmp_path, broken):
    with pytest.raises(ckpt.CheckpointError, match="does not exist"):
        ckpt.load(tmp_path / "nope")
    (broken / "tokenizer.model").unlink()
    with pytest.raises(ckpt.CheckpointError, match=re.escape(str(broken / "tokenizer.model")) + " is missing"):
        ckpt.load(broken)


def test_truncated_weights_are_reported(broken):
    path = broken / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ckpt.CheckpointError, match="model.safetensors.*truncated or corrupt"):
        ckpt.load(broken)


def test_config_that_does_not_match_the_weights_is_reported(broken):
    meta = json.loads((broken / "config.json").read_text())
    meta["model"]["d_ff"] = 96
    (broken / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ckpt.CheckpointError, match=r"does not match config.json.*W_1.weight"):
        ckpt.load(broken)


def test_tokenizer_of_another_model_is_reported(broken):
    Tokenizer.train(["alpha beta gamma delta"] * 20, vocab_size=30).save(broken / "tokenizer.model")
    with pytest.raises(ckpt.CheckpointError, match="tokenizer belongs to another model"):
        ckpt.load(broken)


@pytest.mark.parametrize("langs", [{"source_lang": 7}, {"target_lang": ""}, {"source_lang": ["de"]}])
def test_a_language_that_is_not_a_code_is_reported(broken, langs):
    meta = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**meta, **langs}))
    with pytest.raises(ckpt.CheckpointError, match="source_lang and target_lang must be language codes"):
        ckpt.load(broken)


def test_invalid_config_json_is_reported(broken):
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match="config.json is not a valid checkpoint config"):
        ckpt.load(broken)


def test_crash_during_save_leaves_the_previous_checkpoint_intact(broken, monkeypatch):
    loaded = ckpt.load(broken)
    before = (broken / "model.safetensors").read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(ckpt, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save(broken, loaded.model, loaded.tokenizer, source_lang="de", target_lang="en")
    assert (broken / "model.safetensors").read_bytes() == before
    assert ckpt.load(broken).source_lang == "de"
    assert [p.name for p in broken.parent.iterdir() if p.name.startswith(".")] == []


def test_hub_ids_load_through_huggingface_hub_offline(copy_checkpoint, tmp_path, monkeypatch):
    # Lay the files out as huggingface_hub's cache does after a download, then load offline.
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someone--copy-model"
    snapshot = repo / "snapshots" / commit
    shutil.copytree(copy_checkpoint, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    loaded = ckpt.load("hf://someone/copy-model")
    assert loaded.id == "hf://someone/copy-model" and loaded.config.d_model == 64
    with pytest.raises(ckpt.CheckpointError, match="could not fetch someone/absent"):
        ckpt.load("hf://someone/absent")
    with pytest.raises(ckpt.CheckpointError, match="not of the form"):
        ckpt.load("hf://no-owner")


def test_no_pickle_anywhere_in_the_package():
    for path in Path(ckpt.__file__).parent.glob("*.py"):
        text = path.read_text()
        assert "import pickle" not in text, path
        for call in re.findall(r"torch\.load\([^)]*\)", text):
            assert "weights_only=True" in call, (path, call)
