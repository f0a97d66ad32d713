"""Tokenizer ids and round trips; finding, reading and batching the data."""
from __future__ import annotations

import gzip
import random
import sys

import numpy as np
import pytest

from transformer import data
from transformer.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from transformer.tokenizer import Tokenizer

SENTENCES = ["Ein Mann fährt Fahrrad.", "A man rides a bike.", "Zwei Hunde spielen im Schnee.",
             "Two dogs play in the snow."] * 50


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(SENTENCES, vocab_size=80)


def test_special_ids_are_fixed(tokenizer):
    assert tokenizer.pieces([PAD_ID, UNK_ID, BOS_ID, EOS_ID]) == ["<pad>", "<unk>", "<s>", "</s>"]


def test_round_trip_and_pieces(tokenizer):
    for text in ("Ein Mann fährt Fahrrad.", "Two dogs play in the snow."):
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == text
        assert "".join(tokenizer.pieces(ids)).replace("▁", " ").strip() == text
        assert tokenizer.decode([BOS_ID, *ids, EOS_ID, PAD_ID]) == text


def test_save_load_is_the_same_vocabulary(tokenizer, tmp_path):
    tokenizer.save(tmp_path / "t.model")
    again = Tokenizer.load(tmp_path / "t.model")
    assert again.vocab_size == tokenizer.vocab_size
    assert again.encode("Zwei Hunde") == tokenizer.encode("Zwei Hunde")


def test_data_dir_order(tmp_path, monkeypatch, copy_data):
    monkeypatch.delenv("ANATOMY_DATA_DIR", raising=False)
    assert data.resolve_data_dir(copy_data) == copy_data
    monkeypatch.setenv("ANATOMY_DATA_DIR", str(copy_data))
    assert data.resolve_data_dir() == copy_data
    monkeypatch.delenv("ANATOMY_DATA_DIR")
    assert data.resolve_data_dir() in (data.SHARED_DATA_DIR, data.CACHE_DIR)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        data.resolve_data_dir(tmp_path / "nowhere")


def test_read_pairs_are_aligned(copy_data):
    src, tgt = data.read_pairs(copy_data, "val", "de", "en")
    assert len(src) == len(tgt) == 100 and src == tgt
    with pytest.raises(ValueError, match="unknown language"):
        data.read_lines(copy_data, "val", "xx")
    with pytest.raises(FileNotFoundError, match="val.fr.gz"):
        data.read_lines(copy_data, "val", "fr")


@pytest.mark.skipif(not data.SHARED_DATA_DIR.is_dir(), reason="needs the shared Multi30k copy")
def test_shared_multi30k_is_found_and_aligned():
    src, tgt = data.read_pairs(data.resolve_data_dir(), "val", "de", "en")
    assert len(src) == len(tgt) == 1014


def test_token_batches_cover_every_pair_once_within_budget():
    rng_lengths = [(i % 13) + 1 for i in range(500)]
    src = [[5] * n for n in rng_lengths]
    tgt = [[6] * ((n * 7) % 11 + 1) for n in rng_lengths]
    batches = data.token_batches([len(s) for s in src], [len(t) for t in tgt], max_tokens=100, seed=3)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        longest = max(max(len(src[i]), len(tgt[i])) + 1 for i in b)
        assert longest * len(b) <= 100
    assert batches != data.token_batches([len(s) for s in src], [len(t) for t in tgt], max_tokens=100,
                                         seed=4)  # reshuffled per epoch


def test_make_batch_shifts_target_and_pads():
    batch = data.make_batch([[7, 8], [9]], [[10, 11, 12], [13]])
    assert batch.src.tolist() == [[7, 8, EOS_ID], [9, EOS_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 10, 11, 12], [BOS_ID, 13, PAD_ID, PAD_ID]]
    assert batch.tgt_out.tolist() == [[10, 11, 12, EOS_ID], [13, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.n_tokens == 6


@pytest.mark.slow  # seconds: a corpus past the cache's memory budget
def test_the_token_cache_streams_a_corpus_larger_than_its_memory_budget_and_maps_it(tmp_path):
    import tracemalloc

    rng = random.Random(0)
    words = "red blue green cat dog bird tree house car man woman child runs jumps".split()
    lines = [" ".join(rng.choices(words, k=rng.randint(3, 9))) for _ in range(100_000)]
    corpus = tmp_path / "train.de.gz"
    with gzip.open(corpus, "wt", encoding="utf-8", compresslevel=1) as f:  # read back once: its size does not matter
        f.write("\n".join(lines) + "\n")
    tok = Tokenizer.train(lines[:2000], vocab_size=40)
    as_lists = sum(sys.getsizeof(ids) for ids in tok.encode_batch(lines[:1000])) * 100  # the lists, no ints
    budget = 4 * 1024 * 1024
    assert as_lists > budget

    tracemalloc.start()
    ids, counts = data.cached_token_ids([corpus], tok.encode_batch, tok.proto, 5, tmp_path / "cache", chunk=4000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < budget, peak
    assert isinstance(ids.flat, np.memmap) and counts == [100_000] and len(ids) == 100_000
    for i in (0, 4321, 99_999):
        assert ids[i] == tok.encode(lines[i])[:5]
        assert ids.lengths[i] == len(ids[i])

    def refuse(batch):
        raise AssertionError("the cache was tokenized again")

    again, _ = data.cached_token_ids([corpus], refuse, tok.proto, 5, tmp_path / "cache")
    assert again[4321] == ids[4321]
    fewer, counts = data.cached_token_ids([corpus], tok.encode_batch, tok.proto, 5, tmp_path / "cache", max_lines=10)
    assert counts == [10] and len(fewer) == 10  # other options: another cache
