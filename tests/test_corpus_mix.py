"""Training on a weighted mix of corpora: the draw, the command line, one vocabulary, per-corpus metrics,
and the single-corpus command unchanged."""
from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections import Counter
from pathlib import Path

import pytest
import torch

from transformer import data, train
from transformer.tokenizer import Tokenizer

from .conftest import TINY_MODEL_ARGS, write_corpus


def test_draw_respects_weights_and_sees_every_corpus():
    sizes, weights = [1000, 300, 50], [0.25, 1.0, 2.5]
    drawn = data.draw_mix(sizes, weights, random.Random(0))
    per_corpus = Counter(0 if i < 1000 else 1 if i < 1300 else 2 for i in drawn)
    assert per_corpus == {0: 250, 1: 300, 2: 125}
    first = [i for i in drawn if i < 1000]
    assert len(set(first)) == 250  # a subset: no pair twice
    counts = Counter(i for i in drawn if i >= 1300)
    assert set(counts) == set(range(1300, 1350)) and sorted(Counter(counts.values()).items()) == [(2, 25), (3, 25)]
    assert sorted(i for i in drawn if 1000 <= i < 1300) == list(range(1000, 1300))


def test_a_fresh_subset_each_epoch_and_the_same_one_on_resume():
    a = data.draw_mix([1000], [0.3], random.Random(1))
    b = data.draw_mix([1000], [0.3], random.Random(2))
    assert a == data.draw_mix([1000], [0.3], random.Random(1))
    assert len(set(a) & set(b)) < 200


def test_weight_one_draws_the_corpus_in_order():
    assert data.draw_mix([7, 3], [1.0, 1.0], random.Random(0)) == list(range(10))


@pytest.fixture
def root(tmp_path) -> Path:
    write_corpus(tmp_path / "alpha", n_train=60, n_val=5, seed=1)
    for lang in ("de", "en"):
        (write_corpus(tmp_path / "beta", n_train=40, seed=2) / f"val.{lang}.gz").unlink()
    return tmp_path


def test_corpus_names_resolve_under_the_root_or_as_paths(root, monkeypatch):
    spec = data.parse_corpus("alpha:0.5", root)
    assert (spec.name, spec.path, spec.weight) == ("alpha", root / "alpha", 0.5)
    assert data.parse_corpus(str(root / "beta"), "/nowhere").path == root / "beta"
    monkeypatch.setenv("ANATOMY_DATA_ROOT", str(root))
    assert data.parse_corpus("beta").path == root / "beta"
    assert data.resolve_data_root() == root
    monkeypatch.delenv("ANATOMY_DATA_ROOT")
    assert data.resolve_data_root() == data.SHARED_DATA_ROOT


@pytest.mark.parametrize("text, message", [("alpha:abc", "must be a number"), ("alpha:0", "positive"),
                                           ("alpha:-1", "positive"), ("alpha:nan", "positive"),
                                           (":2", "give NAME"), ("gamma", "alpha, beta")])
def test_bad_corpus_arguments_are_explained(root, text, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        data.parse_corpus(text, root)


def test_the_command_line_refuses_a_mix_it_cannot_train(root, tmp_path):
    base = ["--src", "de", "--tgt", "en", "--out", str(tmp_path / "o"), "--data-root", str(root)]
    with pytest.raises(SystemExit, match="named twice"):
        train.main([*base, "--corpus", "alpha", "--corpus", "alpha:2"])
    with pytest.raises(SystemExit, match="no corpus of the mix has a val split"):
        train.main([*base, "--corpus", "beta"])
    with pytest.raises(SystemExit, match="not both"):
        train.main([*base, "--corpus", "alpha", "--data-dir", str(root / "alpha")])
    with pytest.raises(SystemExit, match="does not exist"):
        train.main([*base, "--corpus", "gamma"])


def _write_lines(folder: Path, split: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for lang in ("de", "en"):
        with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


@pytest.mark.slow  # a training run
def test_a_mix_trains_one_vocabulary_and_reports_every_val_corpus(tmp_path):
    # Two corpora with disjoint words: the one joint vocabulary must hold both.
    rng = random.Random(0)
    for name, words in (("animals", "cat dog bird horse fish"), ("colours", "red blue green yellow black")):
        ws = words.split()
        for split, n in (("train", 300), ("val", 12)):
            _write_lines(tmp_path / name, split, [" ".join(rng.choice(ws) for _ in range(4)) for _ in range(n)])
    for lang in ("de", "en"):  # train only, like europarl
        (write_corpus(tmp_path / "copy", n_train=200, seed=3) / f"val.{lang}.gz").unlink()
    args = ["--src", "de", "--tgt", "en", "--data-root", str(tmp_path), "--corpus", "animals",
            "--corpus", "colours:0.5", "--corpus", "copy:0.2", "--out", str(tmp_path / "ckpt"),
            "--run-dir", str(tmp_path / "run"), "--epochs", "2", "--domain", "everyday", *TINY_MODEL_ARGS]
    args[args.index("--vocab-size") + 1] = "50"
    threads = torch.get_num_threads()
    train.main(args)
    torch.set_num_threads(threads)
    tok = Tokenizer.load(tmp_path / "ckpt" / "tokenizer.model")
    for word in ("horse", "yellow", "jumps"):
        assert tok.sp.unk_id() not in tok.encode(word), word
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in lines] == [1, 2]
    for m in lines:
        assert {"val_bleu_animals", "val_chrf_colours", "val_loss_animals"} <= set(m)
        assert not any(k.endswith("_copy") for k in m)
        assert m["val_bleu"] == pytest.approx((m["val_bleu_animals"] + m["val_bleu_colours"]) / 2, abs=0.01)
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert meta["domain"] == "everyday"
    assert [(c["name"], c["pairs_per_epoch"]) for c in meta["training"]["corpora"]] == [
        ("animals", 300), ("colours", 150), ("copy", 40)]
    assert "val_bleu_colours" in meta["metrics"]


def _first_steps(corpus: Path, root: Path, *how: str) -> tuple[str, dict]:
    args = ["--src", "de", "--tgt", "en", *how, "--out", str(root / "ckpt"), "--run-dir", str(root / "run"),
            "--epochs", "1", *TINY_MODEL_ARGS, "--precision", "fp32"]  # the pinned figures are fp32's
    args[args.index("--threads") + 1] = "1"
    args[args.index("--dropout") + 1] = "0.1"
    threads = torch.get_num_threads()
    train.main(args)
    torch.set_num_threads(threads)
    tok = hashlib.sha256((root / "run" / "tokenizer.model").read_bytes()).hexdigest()
    return tok, torch.load(root / "run" / "state.pt", weights_only=True)


@pytest.mark.slow  # a training run
def test_the_single_corpus_command_is_unchanged(tmp_path):
    """Same tokenizer and weights after the first steps as pinned (figures taken when dropout became seeded per
    step for data-parallel runs), and `--corpus PATH` is the same run as `--data-dir PATH`."""
    corpus = write_corpus(tmp_path / "corpus", n_train=300, n_val=10, seed=11)
    tok, state = _first_steps(corpus, tmp_path / "a", "--data-dir", str(corpus))
    assert tok == "6559618493807f5eb956843669d1f9c00598264700ee0b2282b148309ab5ddb8"
    assert state["position"]["step"] == 5
    abs_sum = sum(float(v.double().abs().sum()) for v in state["model"].values())
    assert abs_sum == pytest.approx(14980.274488071855, rel=1e-6)
    tok_b, state_b = _first_steps(corpus, tmp_path / "b", "--corpus", str(corpus))
    assert tok_b == tok
    assert all(torch.equal(state["model"][k], state_b["model"][k]) for k in state["model"])


@pytest.mark.slow  # a training run
def test_the_model_card_of_a_mix_scores_each_corpus_attributes_each_and_picks_a_length_penalty(tmp_path, capsys):
    from transformer import card

    for name, seed in (("tatoeba", 1), ("multi30k", 2)):
        write_corpus(tmp_path / "data" / name, n_train=400, n_val=20, seed=seed)
    for lang in ("de", "en"):
        (write_corpus(tmp_path / "data" / "europarl-v7-head20k", n_train=100, seed=3) / f"val.{lang}.gz").unlink()
    args = ["--src", "de", "--tgt", "en", "--data-root", str(tmp_path / "data"), "--corpus", "tatoeba",
            "--corpus", "multi30k:0.5", "--corpus", "europarl-v7-head20k:0.3", "--out", str(tmp_path / "general"),
            "--run-dir", str(tmp_path / "run"), "--epochs", "2", "--domain", "everyday", *TINY_MODEL_ARGS]
    threads = torch.get_num_threads()
    train.main(args)
    card.main([str(tmp_path / "general"), "--data-root", str(tmp_path / "data"), "--beam", "2",
               "--length-penalty", "0.6", "1.4", "--threads", "1"])
    torch.set_num_threads(threads)
    text = (tmp_path / "general" / "README.md").read_text()
    for attribution in ("tatoeba.org", "www.manythings.org/anki", "CC-BY 2.0 FR", "github.com/multi30k/dataset",
                        "Europarl v7", "weight 0.3"):
        assert attribution in text
    assert "| Tatoeba BLEU / chrF | Multi30k BLEU / chrF |" in text and "BLEU multi30k" in text
    out = capsys.readouterr().out
    sweep = {lp: [float(x.split("BLEU ")[1].split()[0]) for x in out.splitlines() if f"beam 2 lp {lp}:" in x]
             for lp in (0.6, 1.4)}
    chosen = max(sweep, key=lambda lp: sum(sweep[lp]) / 2)
    meta = json.loads((tmp_path / "general" / "config.json").read_text())
    assert meta["decoding"] == {"beam_size": 2, "length_penalty": chosen} and meta["domain"] == "everyday"
    assert "Length penalty chosen on val" in text and "Domain: **everyday**" in text


def test_the_card_says_where_each_run_trained():
    """Runs saved before devices were recorded ran on the CPU; a GPU run is named by its model."""
    from transformer import card
    from transformer.checkpoint import lineage

    old = {"init_from": None, "seed": 1, "lr": 1e-3, "warmup": 1000, "schedule": None, "epochs": 1, "steps": 799,
           "train_time_s": 5266.1, "val_bleu": 8.64, "target_tokens": 2_890_225}
    meta = {"training": {"recipe": {"init_from": "phase4/best", "seed": 5, "lr": 7e-4, "warmup": 150},
                         "epochs": 26, "steps": 6136, "train_time_s": 703.4, "target_tokens": 88_139_619,
                         "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "threads": 4, "earlier": [old]},
            "metrics": {"val_bleu": 32.18}}
    runs = lineage(meta)
    assert runs[-1]["device"] == "cuda" and runs[-1]["device_name"] == "NVIDIA H100 80GB HBM3"
    rows = [line for line in card.runs_table(runs).splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert "| 88 | a 2-core CPU | 8.64 |" in rows[0]
    assert "| 88.14M | 12 | one NVIDIA H100 80GB HBM3 | 32.18 |" in rows[1]
    assert card.hardware({"device": "cpu", "threads": 1}) == "1 thread(s) of a 2-core CPU"
