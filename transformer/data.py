"""Parallel text: finding corpora, reading them, mixing them by weight, and batching by a token budget."""
from __future__ import annotations

import gzip
import hashlib
import itertools
import math
import os
import random
import urllib.request
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from .config import BOS_ID, EOS_ID, PAD_ID

# Public source of Multi30k (Elliott et al., 2016), task 1 raw text.
MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{split}.{lang}.gz"
LANGUAGES = ("en", "de", "fr", "cs")
# ISO 639-1 (and a few 639-3) names: the Multi30k languages and those of the Helsinki-NLP opus-mt models.
LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "cs": "Czech", "af": "Afrikaans", "ar": "Arabic",
    "az": "Azerbaijani", "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cy": "Welsh",
    "da": "Danish", "el": "Greek", "eo": "Esperanto", "es": "Spanish", "et": "Estonian", "eu": "Basque",
    "fa": "Persian", "fi": "Finnish", "ga": "Irish", "gl": "Galician", "gu": "Gujarati", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian", "is": "Icelandic",
    "it": "Italian", "ja": "Japanese", "ka": "Georgian", "kk": "Kazakh", "ko": "Korean", "la": "Latin",
    "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam", "mr": "Marathi", "ms": "Malay",
    "mt": "Maltese", "nl": "Dutch", "no": "Norwegian", "nb": "Norwegian Bokmål", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian",
    "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "xh": "Xhosa",
    "zh": "Chinese", "zu": "Zulu", "ceb": "Cebuano", "tvl": "Tuvaluan", "mul": "many languages",
}
SHARED_DATA_ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_DATA_DIR = SHARED_DATA_ROOT / "multi30k"
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "transformer-anatomy" / "multi30k"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """--data-dir, then $ANATOMY_DATA_DIR, then ../shared/data/multi30k, else the download cache."""
    for candidate in (data_dir, os.environ.get("ANATOMY_DATA_DIR")):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_dir():
                raise FileNotFoundError(f"data directory {path} does not exist")
            return path
    return SHARED_DATA_DIR if SHARED_DATA_DIR.is_dir() else CACHE_DIR


def resolve_data_root(root: str | Path | None = None) -> Path:
    """--data-root, then $ANATOMY_DATA_ROOT, then ../shared/data: the folder that holds corpora by name."""
    for candidate in (root, os.environ.get("ANATOMY_DATA_ROOT")):
        if candidate:
            return Path(candidate).expanduser()
    return SHARED_DATA_ROOT


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus of a training mix."""

    name: str  # folder name; the suffix of its per-corpus metrics (val_bleu_<name>)
    path: Path  # folder of {split}.{lang}.gz files
    weight: float = 1.0  # training pairs drawn per epoch = round(weight · N)

    def has_split(self, split: str, *langs: str) -> bool:
        return all((self.path / f"{split}.{lang}.gz").is_file() for lang in langs)


def parse_corpus(text: str, root: str | Path | None = None) -> CorpusSpec:
    """`NAME[:W]`: NAME is a folder under the data root, or a path (it has a `/` or starts with `.` or `~`)."""
    name, weight = text, 1.0
    head, sep, tail = text.rpartition(":")
    if sep:
        try:
            weight = float(tail)
        except ValueError:
            raise ValueError(f"bad corpus {text!r}: the weight after ':' must be a number, e.g. newstest:0.5")
        name = head
        if not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"bad corpus {text!r}: the weight must be a positive number")
    if not name:
        raise ValueError(f"bad corpus {text!r}: give NAME or NAME:WEIGHT")
    base = resolve_data_root(root)
    path = Path(name).expanduser() if "/" in name or name.startswith((".", "~")) else base / name
    if not path.is_dir():
        here = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        raise FileNotFoundError(f"corpus folder {path} does not exist"
                                + (f"; {base} has {', '.join(here)}" if here else ""))
    return CorpusSpec(path.resolve().name, path, weight)


def draw_mix(sizes: list[int], weights: list[float], rng: random.Random) -> list[int]:
    """One epoch's pairs, as indices into the corpora laid end to end: round(w·N) of each corpus's N,
    whole copies plus a random remainder (a fresh random subset when w < 1)."""
    drawn, offset = [], 0
    for n, w in zip(sizes, weights):
        copies, rest = divmod(round(w * n), n) if n else (0, 0)
        drawn.extend(list(range(offset, offset + n)) * copies)
        drawn.extend(offset + i for i in sorted(rng.sample(range(n), rest)))
        offset += n
    return drawn


def ensure_file(data_dir: Path, split: str, lang: str) -> Path:
    path = data_dir / f"{split}.{lang}.gz"
    if path.exists():
        return path
    if data_dir != CACHE_DIR:
        raise FileNotFoundError(f"{path} not found (expected Multi30k files named {{split}}.{{lang}}.gz)")
    data_dir.mkdir(parents=True, exist_ok=True)
    url = MULTI30K_URL.format(split=split, lang=lang)
    tmp = path.with_suffix(".part")
    try:
        urllib.request.urlretrieve(url, tmp)
    except OSError as err:
        raise FileNotFoundError(f"could not download {url}: {err}; pass --data-dir with a local copy") from err
    tmp.replace(path)
    return path


def read_lines(data_dir: Path, split: str, lang: str) -> list[str]:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; Multi30k has {', '.join(LANGUAGES)}")
    with gzip.open(ensure_file(data_dir, split, lang), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_pairs(data_dir: Path, split: str, src: str, tgt: str) -> tuple[list[str], list[str]]:
    sources, targets = read_lines(data_dir, split, src), read_lines(data_dir, split, tgt)
    if len(sources) != len(targets):
        raise ValueError(f"{split}.{src} has {len(sources)} lines but {split}.{tgt} has {len(targets)}")
    return sources, targets


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) source ids + EOS, PAD-padded
    tgt_in: torch.Tensor  # (B, T) BOS + target ids
    tgt_out: torch.Tensor  # (B, T) target ids + EOS
    n_tokens: int  # non-pad target tokens


def source_ids(ids: list[int]) -> list[int]:
    return ids + [EOS_ID]


def pad(seqs: list[list[int]], pad_id: int = PAD_ID) -> torch.Tensor:
    out = torch.full((len(seqs), max(map(len, seqs))), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def make_batch(src: list[list[int]], tgt: list[list[int]]) -> Batch:
    tgt_out = pad([t + [EOS_ID] for t in tgt])
    return Batch(pad([source_ids(s) for s in src]), pad([[BOS_ID] + t for t in tgt]), tgt_out,
                 int((tgt_out != PAD_ID).sum()))


def token_batches(src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int,
                  seed: int) -> list[list[int]]:
    """Index lists of similar-length pairs, each padding to at most ~max_tokens, in shuffled order (lengths in
    tokens, without EOS/BOS)."""
    return _length_batches(src_lengths, tgt_lengths, seed, lambda longest, n, targets: longest * n > max_tokens)


def target_token_batches(src_lengths: Sequence[int], tgt_lengths: Sequence[int], tokens: int,
                         seed: int) -> list[list[int]]:
    """Index lists of similar-length pairs holding about `tokens` non-pad target tokens each (target + EOS), in
    shuffled order: the paper's batching (~25k target tokens per step), whatever the number of devices."""
    return _length_batches(src_lengths, tgt_lengths, seed, lambda longest, n, targets: targets > tokens)


def _length_batches(src_lengths: Sequence[int], tgt_lengths: Sequence[int], seed: int,
                    over: Callable[[int, int, int], bool]) -> list[list[int]]:
    """Pairs sorted by length (ties broken at random, so each epoch groups them differently), cut where adding
    the next would put the batch `over` its budget, given the batch's longest pair (+1), its pairs and its
    target tokens (+1 each); the batches in shuffled order."""
    rng = random.Random(seed)
    lengths = [max(a, b) + 1 for a, b in zip(src_lengths, tgt_lengths)]
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], rng.random()))
    batches, current, longest, targets = [], [], 0, 0
    for i in order:
        if current and over(max(longest, lengths[i]), len(current) + 1, targets + tgt_lengths[i] + 1):
            batches.append(current)
            current, longest, targets = [], 0, 0
        current.append(i)
        longest, targets = max(longest, lengths[i]), targets + tgt_lengths[i] + 1
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def deal(batch: list[int], tgt_lengths: Sequence[int], parts: int) -> list[list[int]]:
    """One step's pairs dealt into `parts` disjoint micro-batches (ranks × accumulation) of similar target token
    counts: longest first, each to the part with the fewest tokens so far. A part may be empty when the batch
    has fewer pairs than parts."""
    shares: list[list[int]] = [[] for _ in range(parts)]
    counts = [0] * parts
    for i in sorted(batch, key=lambda i: -tgt_lengths[i]):
        p = counts.index(min(counts))
        shares[p].append(i)
        counts[p] += tgt_lengths[i] + 1
    return shares


class TokenIds:
    """The token ids of many sentences in one flat int32 array (memory-mapped from a cache file): sentence i is
    flat[start[i]:start[i + 1]]. Indexing gives a list, like the in-memory lists it stands in for."""

    def __init__(self, flat: np.ndarray, start: np.ndarray):
        self.flat, self.start = flat, start
        self.lengths = np.diff(start).tolist()  # Python ints: the batching sorts on them

    def __len__(self) -> int:
        return len(self.start) - 1

    def __getitem__(self, i: int) -> list[int]:
        return self.flat[self.start[i]:self.start[i + 1]].tolist()


def cached_token_ids(files: list[Path], encode: Callable[[list[str]], list[list[int]]], fingerprint: bytes,
                     limit: int, folder: Path, max_lines: int | None = None,
                     chunk: int = 20_000) -> tuple[TokenIds, list[int]]:
    """The ids of every line of `files` (gzip; the first `max_lines` of each), cut to `limit`, and each file's
    line count. Tokenized once, streaming `chunk` lines at a time, into `folder`; later calls map the cache.
    The cache's name covers the tokenizer (`fingerprint`), the files (path, size, time) and the options."""
    key = hashlib.sha256(fingerprint + repr(
        [(str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files] + [limit, max_lines]).encode())
    stem = folder / f"tokens-{key.hexdigest()[:20]}"
    ids_path, index_path = stem.with_suffix(".ids"), stem.with_suffix(".index.npy")
    if not index_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        lengths, counts = array("q"), []
        tmp = ids_path.with_name(ids_path.name + f".{os.getpid()}.tmp")
        with open(tmp, "wb") as out:
            for path in files:
                n = 0
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    while max_lines is None or n < max_lines:
                        lines = [line.rstrip("\n") for line in
                                 itertools.islice(f, chunk if max_lines is None else min(chunk, max_lines - n))]
                        if not lines:
                            break
                        for ids in encode(lines):
                            ids = ids[:limit]
                            out.write(np.asarray(ids, dtype=np.int32).tobytes())
                            lengths.append(len(ids))
                        n += len(lines)
                counts.append(n)
        start = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(lengths, dtype=np.int64), out=start[1:])
        os.replace(tmp, ids_path)
        tmp_index = index_path.with_name(f"{index_path.stem}.{os.getpid()}.tmp.npy")
        np.save(tmp_index, np.concatenate([np.asarray([len(counts)], dtype=np.int64),
                                           np.asarray(counts, dtype=np.int64), start]))
        os.replace(tmp_index, index_path)  # last: its presence says the cache is whole
    index = np.load(index_path)
    n_files = int(index[0])
    counts, start = index[1:1 + n_files].tolist(), index[1 + n_files:]
    flat = (np.memmap(ids_path, dtype=np.int32, mode="r") if start[-1] > 0 else np.zeros(0, dtype=np.int32))
    return TokenIds(flat, start), counts
