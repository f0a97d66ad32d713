"""One joint SentencePiece vocabulary over source and target text."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Iterable

import sentencepiece as spm

from .config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from .pieces import detokenize


class Tokenizer:
    """SentencePiece with fixed special ids: pad=0, unk=1, bos=2, eos=3."""

    def __init__(self, model_proto: bytes):
        self.proto = model_proto
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        expected = {PAD_ID: "<pad>", UNK_ID: "<unk>", BOS_ID: "<s>", EOS_ID: "</s>"}
        found = {i: self.sp.id_to_piece(i) for i in expected}
        if found != expected or self.sp.pad_id() != PAD_ID:
            raise ValueError(f"tokenizer special pieces {found} do not match the fixed ids {expected}")

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        return cls(Path(path).read_bytes())

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.proto)

    @classmethod
    def train(cls, sentences: Iterable[str], vocab_size: int = 8000, model_type: str = "unigram") -> "Tokenizer":
        buffer = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=buffer, vocab_size=vocab_size,
            model_type=model_type, character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID,
            bos_id=BOS_ID, eos_id=EOS_ID, input_sentence_size=2_000_000, shuffle_input_sentence=True,
            num_threads=2, minloglevel=2, hard_vocab_limit=False,
        )
        return cls(buffer.getvalue())

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def encode_target(self, text: str) -> list[int]:
        """Target-language text as the decoder produces it (one vocabulary serves both sides here)."""
        return self.sp.encode(text)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids` (transformer.pieces.detokenize: what SentencePiece's decode writes)."""
        return detokenize(self.pieces(ids))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """Printable piece for each id, specials included (for plot labels)."""
        return [self.sp.id_to_piece(int(i)) for i in ids]
