"""Shared fixtures: a synthetic copy-task corpus and a tiny model trained on it by the real CLI; tiny
random-weight checkpoints and the app built on them."""
from __future__ import annotations

import gzip
import random
import shutil
from pathlib import Path

import pytest
import torch

from transformer import train

WORDS = ("red blue green cat dog bird tree house car man woman child runs jumps sits big small old "
         "young water").split()
TINY_MODEL_ARGS = ["--d-model", "64", "--n-heads", "4", "--d-ff", "128", "--layers", "2", "--dropout", "0",
                   "--max-len", "64", "--vocab-size", "60", "--max-tokens", "400", "--lr", "3e-3",
                   "--warmup", "100", "--ema-decay", "0.99", "--threads", "2", "--no-progress"]


def write_corpus(folder: Path, n_train: int = 2000, n_val: int = 100, seed: int = 0) -> Path:
    """Copy task in Multi30k's file layout: the 'en' side repeats the 'de' side word for word."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("val", n_val)):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) for _ in range(n)]
        for lang in ("de", "en"):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="session")
def copy_data(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("copy-data"))


@pytest.fixture(scope="session")
def copy_checkpoint(copy_data, tmp_path_factory) -> Path:
    """A 170k-parameter model trained on the copy task for 8 short epochs (~15 s)."""
    root = tmp_path_factory.mktemp("copy-model")
    threads = torch.get_num_threads()
    train.main(["--src", "de", "--tgt", "en", "--data-dir", str(copy_data), "--out", str(root / "ckpt"),
                "--run-dir", str(root / "run"), "--epochs", "8", *TINY_MODEL_ARGS])
    torch.set_num_threads(threads)
    return root / "ckpt"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    """Tiny de-en and en-de checkpoints, and a copy of the first with a corrupt model.safetensors."""
    from tests.app_fixtures import make_checkpoint, make_tokenizer

    root = tmp_path_factory.mktemp("checkpoints")
    tok = make_tokenizer()
    make_checkpoint(root / "tiny-de-en", "de", "en", seed=0, tokenizer=tok)
    make_checkpoint(root / "tiny-en-de", "en", "de", seed=1, tokenizer=tok)
    broken = root / "broken"
    shutil.copytree(root / "tiny-de-en", broken)
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    return root


@pytest.fixture(scope="module")
def tiny(folders):
    """The app (its App: handlers, registry, demo) on the tiny checkpoints."""
    import app  # here, not at the top: building the shipped app is only for the tests that use it

    demo = app.create_app([str(folders / "tiny-de-en"), str(folders / "broken"), str(folders / "tiny-en-de")])
    return demo.anatomy
