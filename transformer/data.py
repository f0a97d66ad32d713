"""Parallel text: finding corpora, reading them, mixing them by weight, and batching by a token budget."""
from __future__ import annotations

import gzip
import math
import os
import random
import urllib.request
from dataclasses import dataclass
from pathlib import Path

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


def _ensure_file(data_dir: Path, split: str, lang: str) -> Path:
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
    with gzip.open(_ensure_file(data_dir, split, lang), "rt", encoding="utf-8") as f:
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


def token_batches(src: list[list[int]], tgt: list[list[int]], max_tokens: int, seed: int) -> list[list[int]]:
    """Index lists of similar-length pairs, each padding to at most ~max_tokens, in shuffled order."""
    rng = random.Random(seed)
    lengths = [max(len(s), len(t)) + 1 for s, t in zip(src, tgt)]
    # Sort by length with random tie-breaking so each epoch groups pairs differently.
    order = sorted(range(len(src)), key=lambda i: (lengths[i], rng.random()))
    batches, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, lengths[i])
        if current and longest_if_added * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest_if_added = [], lengths[i]
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches
