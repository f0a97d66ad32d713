"""Checkpoint folders: config.json, model.safetensors, tokenizer.model, metrics.jsonl.

Weights only ever travel as safetensors (no pickle), except a MarianMT folder's pytorch_model.bin, read as plain
tensors (`transformer.marian`). A local folder or `hf://owner/name` on the Hugging Face Hub; the prefix is required
so a local path is never taken for a Hub id.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from . import marian
from .config import SPECIAL_IDS, ModelConfig
from .decoding import Decoding
from .model import Transformer
from .tokenizer import Tokenizer

HF_PREFIX = "hf://"
FILES = ("config.json", "model.safetensors", "tokenizer.model")
# What a Hub download fetches: our files, or a MarianMT folder's (pytorch_model.bin only when it has no safetensors).
HUB_PATTERNS = [*FILES, *marian.TOKENIZER_FILES, "tokenizer_config.json", "generation_config.json", "metrics.jsonl",
                "README.md", "heads.json"]
# For a checkpoint whose card chose nothing. Chosen on Multi30k val: beam 5 with length penalty 1.4 gave +2.1 BLEU
# over greedy for de->en (37.9 -> 40.0) and +1.2 for en->de (35.8 -> 37.0).
DEFAULT_BEAM = 5
DEFAULT_LENGTH_PENALTY = 1.4


class CheckpointError(ValueError):
    """A checkpoint that cannot be used, with a message naming the file and the fix."""


@dataclass
class Checkpoint:
    model: Transformer
    tokenizer: Tokenizer | marian.MarianTokenizer
    source_lang: str
    target_lang: str
    id: str  # the folder or hf:// id it was loaded from
    meta: dict = field(default_factory=dict)  # the whole config.json

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    @property
    def decoding(self) -> Decoding:
        """How this model translates unless told otherwise: what its model card chose on val (config.json
        "decoding", written by `python -m transformer.card`), else the defaults."""
        chosen = self.meta.get("decoding") or {}
        return Decoding(beam_size=int(chosen.get("beam_size", DEFAULT_BEAM)),
                        length_penalty=float(chosen.get("length_penalty", DEFAULT_LENGTH_PENALTY)))


def lineage(meta: dict) -> list[dict]:
    """The training runs behind a checkpoint's weights, oldest first: the runs it was warm-started from
    (config.json training.earlier) and its own, each in brief."""
    training = meta.get("training") or {}
    recipe = training.get("recipe") or {}
    own = {key: recipe.get(key) for key in ("init_from", "seed", "lr", "warmup", "schedule")}
    own.update({key: training.get(key) for key in ("epochs", "steps", "train_time_s", "target_tokens", "device",
                                                   "device_name")})
    own["val_bleu"] = (meta.get("metrics") or {}).get("val_bleu")
    return [*training.get("earlier", []), own]


def resolve(path_or_id: str | Path, patterns: list[str] = HUB_PATTERNS, *, local_files_only: bool = False) -> Path:
    """A local folder for `path_or_id`, downloading the files of `hf://owner/name[@revision]` that match first
    (with local_files_only, its folder in the Hugging Face cache as it is, with no network access)."""
    text = str(path_or_id)
    if not text.startswith(HF_PREFIX):
        path = Path(text).expanduser()
        if not path.is_dir():
            raise CheckpointError(f"checkpoint folder {path} does not exist "
                                  f"(give a folder with {', '.join(FILES)}, or hf://owner/name)")
        return path
    from huggingface_hub import snapshot_download

    repo_id, _, revision = text[len(HF_PREFIX):].partition("@")
    if repo_id.count("/") != 1:
        raise CheckpointError(f"{text!r} is not of the form hf://owner/name[@revision]")
    try:
        return Path(snapshot_download(repo_id, revision=revision or None,
                                      allow_patterns=patterns, local_files_only=local_files_only))
    except Exception as err:  # offline, missing repo, auth: all mean "cannot fetch"
        what = f"find {repo_id} in the Hugging Face cache" if local_files_only \
            else f"fetch {repo_id} from the Hugging Face Hub"
        raise CheckpointError(f"could not {what}: {err}") from err


def load(path_or_id: str | Path, device: str | torch.device = "cpu", *, local_files_only: bool = False) -> Checkpoint:
    folder = resolve(path_or_id, local_files_only=local_files_only)
    if marian.is_marian_folder(folder):
        return load_marian(folder, str(path_or_id), device, local_files_only=local_files_only)
    for name in FILES:
        if not (folder / name).is_file():
            raise CheckpointError(f"{folder / name} is missing; a checkpoint folder needs {', '.join(FILES)}")
    try:
        meta = json.loads((folder / "config.json").read_text())
        config = ModelConfig.from_dict(meta["model"])
        langs = meta.get("source_lang", "?"), meta.get("target_lang", "?")
        if not all(isinstance(lang, str) and lang for lang in langs):  # the app names every model by them
            raise ValueError(f"source_lang and target_lang must be language codes, not {langs}")
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise CheckpointError(f"{folder / 'config.json'} is not a valid checkpoint config: {err}") from err
    try:
        tokenizer = Tokenizer.load(folder / "tokenizer.model")
    except (RuntimeError, ValueError, OSError) as err:
        raise CheckpointError(f"{folder / 'tokenizer.model'} is not a usable SentencePiece model: {err}") from err
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{folder / 'tokenizer.model'} has {tokenizer.vocab_size} pieces but config.json "
                              f"says vocab_size={config.vocab_size}: the tokenizer belongs to another model")
    try:
        state = load_file(folder / "model.safetensors")
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{folder / 'model.safetensors'} cannot be read ({err}); "
                              "it is truncated or corrupt: download or copy it again") from err
    model = Transformer(config)
    check_state_dict(model, state, folder / "model.safetensors")
    model.load_state_dict({k: v.float() for k, v in state.items()})
    model.to(device).eval()
    return Checkpoint(model, tokenizer, *langs, str(path_or_id), meta)


def load_marian(folder: Path, source: str, device: str | torch.device = "cpu", *,
                local_files_only: bool = False) -> Checkpoint:
    """A MarianMT folder (e.g. hf://Helsinki-NLP/opus-mt-de-en) as a Checkpoint of our Transformer."""
    if source.startswith(HF_PREFIX) and not any((folder / f).is_file() for f in marian.WEIGHT_FILES):
        folder = resolve(source, ["pytorch_model.bin"],  # many opus-mt repos ship only this file
                         local_files_only=local_files_only)
    try:
        model, tokenizer, meta = marian.load_folder(folder, source)
    except (marian.MarianError, RuntimeError, OSError) as err:
        raise CheckpointError(f"{source}: {err}") from err
    return Checkpoint(model.to(device), tokenizer, meta["source_lang"], meta["target_lang"], source, meta)


def check_state_dict(model: Transformer, state: dict, where: Path | str) -> None:
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in state.items()}
    if expected == found:
        return
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    wrong = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
    parts = [f"{len(missing)} missing (e.g. {missing[:3]})" if missing else "",
             f"{len(unexpected)} unexpected (e.g. {unexpected[:3]})" if unexpected else "",
             "shape mismatch: " + ", ".join(f"{k} {found[k]} vs config {expected[k]}" for k in wrong[:3])
             if wrong else ""]
    raise CheckpointError(f"{where} does not match config.json: " + "; ".join(p for p in parts if p)
                          + ". The weights and config.json come from different models.")


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save(folder: str | Path, model: Transformer, tokenizer: Tokenizer, *, source_lang: str, target_lang: str,
         domain: str | None = None, training: dict | None = None, metrics: dict | None = None, metrics_log: str = "",
         dtype: torch.dtype = torch.float16) -> Path:
    """Write a checkpoint folder atomically: a crash mid-save leaves the previous one intact."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    meta = {"model": model.config.to_dict(), "source_lang": source_lang, "target_lang": target_lang,
            **({"domain": domain} if domain else {}), "special_ids": SPECIAL_IDS,
            "weights_dtype": str(dtype).removeprefix("torch."), "training": training or {}, "metrics": metrics or {}}
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    tmp.chmod(0o755)
    try:
        state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
        save_file(state, tmp / "model.safetensors")
        (tmp / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
        tokenizer.save(tmp / "tokenizer.model")
        (tmp / "metrics.jsonl").write_text(metrics_log)
        if (folder / "README.md").exists():  # the model card outlives retraining
            shutil.copy2(folder / "README.md", tmp / "README.md")
        for path in tmp.iterdir():
            path.chmod(0o644)  # safetensors writes 0600; a checkpoint is meant to be shared
        old = folder.with_name(f".{folder.name}.old")
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def write_metrics_log(folder: str | Path, metrics_log: str) -> None:
    """Refresh metrics.jsonl of an existing checkpoint (epochs that did not beat it still count)."""
    folder = Path(folder)
    if folder.is_dir():
        _atomic_write_text(folder / "metrics.jsonl", metrics_log)
