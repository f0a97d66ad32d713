"""Translating text with everything a person may want to look at: the `Trace`."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from torch import Tensor

from . import checkpoint as ckpt
from .config import BOS_ID, EOS_ID
from .data import pad, source_ids
from .device import pick_device
from .model import Encoded, Transformer
from .search import beam_search, greedy, output_limit
from .tokenizer import Tokenizer

ATTENTION_FIELDS = ("encoder_self_attn", "decoder_self_attn", "cross_attn")


@dataclass
class Candidate:
    """One finished beam hypothesis."""

    text: str
    tokens: list[str]
    score: float  # log-probability / length**length_penalty
    log_prob: float


@dataclass
class Step:
    """One generated token and the attention rows that produced it."""

    index: int  # decoder position t (row t of the decoder attention)
    token: str
    token_id: int
    top_k: list[dict]  # [{"token", "id", "prob"}], most likely first
    decoder_self_attn: np.ndarray  # (layers, heads, t+1)
    cross_attn: np.ndarray  # (layers, heads, S)


@dataclass
class Trace:
    """A translation and every attention map of the pass that made it.

    Row t of the decoder attention is computed at target_tokens[t] and predicts
    output_tokens[t]; S = len(source_tokens), T = len(target_tokens) = len(output_tokens).
    """

    text: str
    source_tokens: list[str]  # encoder input pieces, EOS included
    target_tokens: list[str]  # decoder input: [BOS, y1, ..., yn]
    output_tokens: list[str]  # decoder output: [y1, ..., yn, EOS]
    encoder_self_attn: np.ndarray  # (layers, heads, S, S)
    decoder_self_attn: np.ndarray  # (layers, heads, T, T)
    cross_attn: np.ndarray  # (layers, heads, T, S)
    top_k: list[list[dict]]  # per decoder position, the k most likely next pieces
    candidates: list[Candidate] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    checkpoint: str = ""
    source_ids: list[int] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # e.g. the input was truncated

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ATTENTION_FIELDS:
            out[name] = out[name].tolist()
        out["candidates"] = [asdict(c) for c in self.candidates]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        data = dict(data)
        for name in ATTENTION_FIELDS:
            data[name] = np.asarray(data[name], dtype=np.float32)
        data["candidates"] = [Candidate(**c) for c in data.get("candidates", [])]
        return cls(**data)

    @property
    def cut_by_limit(self) -> bool:
        """The length limit stopped decoding before the model chose EOS."""
        return bool(self.output_ids) and self.output_ids[-1] != EOS_ID

    def without_final_eos(self) -> "Trace":
        """This trace minus its last decoder position: for output the length limit cut before any EOS
        (a teacher-forced pass always ends with one)."""
        T = len(self.output_tokens) - 1
        return replace(self, target_tokens=self.target_tokens[:T], output_tokens=self.output_tokens[:T],
                       output_ids=self.output_ids[:T], top_k=self.top_k[:T],
                       decoder_self_attn=self.decoder_self_attn[:, :, :T, :T], cross_attn=self.cross_attn[:, :, :T])

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))


def _top_k(probs: Tensor, k: int, tokenizer: Tokenizer) -> list[list[dict]]:
    """probs (T, V) -> per row the k most likely pieces."""
    values, ids = probs.topk(min(k, probs.size(-1)), dim=-1)
    pieces = tokenizer.pieces(ids.flatten().tolist())
    values, ids = values.tolist(), ids.tolist()
    k_ = len(ids[0]) if ids else 0
    return [[{"token": pieces[r * k_ + j], "id": ids[r][j], "prob": values[r][j]} for j in range(k_)]
            for r in range(len(ids))]


def _stack(per_layer: tuple[Tensor, ...]) -> np.ndarray:
    """Per-layer (1, h, ...) weights of one sentence -> (layers, h, ...) float32 array."""
    return torch.cat(per_layer, dim=0).float().cpu().numpy()


class Translator:
    """A loaded checkpoint that translates text and explains how."""

    def __init__(self, checkpoint: ckpt.Checkpoint, device: torch.device | None = None):
        self.checkpoint = checkpoint
        self.device = device or next(checkpoint.model.parameters()).device
        self.model: Transformer = checkpoint.model.to(self.device).eval()
        self.tokenizer: Tokenizer = checkpoint.tokenizer

    @classmethod
    def from_checkpoint(cls, path_or_id: str | Path, device: str = "auto") -> "Translator":
        dev = pick_device(device)
        return cls(ckpt.load(path_or_id, dev), dev)

    @property
    def config(self):
        return self.model.config

    def encode_source(self, text: str) -> tuple[list[int], list[str]]:
        """Source ids as the encoder sees them (EOS appended), truncated to max_len."""
        notices = []
        ids = source_ids(self.tokenizer.encode(text))
        if len(ids) > self.config.max_len:
            notices.append(f"The input was {len(ids)} tokens long; only the first {self.config.max_len} "
                           "were translated (the model's max_len).")
            ids = ids[:self.config.max_len - 1] + [EOS_ID]
        return ids, notices

    def _settings(self, **extra) -> dict:
        return {**extra, "device": str(self.device)}

    def _encode(self, ids: list[int]) -> Encoded:
        """The encoder pass of one sentence, with its attention."""
        with torch.inference_mode():
            return self.model.encode(torch.tensor([ids], device=self.device), need_weights=True)

    def steps(self, text: str, top_k: int = 5, max_new_tokens: int | None = None) -> Iterator[Step]:
        """Greedy decoding, yielding each token with its attention rows as soon as it exists."""
        src, _ = self.encode_source(text)
        yield from self._steps(src, top_k, max_new_tokens, self._encode(src))

    def _steps(self, src: list[int], top_k: int, max_new_tokens: int | None, encoded: Encoded) -> Iterator[Step]:
        # Each step runs in its own inference_mode block: a generator may be resumed on another
        # thread (Gradio does), and the mode must not leak into the caller between steps.
        with torch.inference_mode():
            limit = output_limit(self.model, len(src), max_new_tokens)
            cache = self.model.new_cache(encoded, limit)
            token = torch.tensor([[BOS_ID]], device=self.device)
        for t in range(limit):
            with torch.inference_mode():
                out = self.model.decode(token, encoded, cache, need_weights=True)
                probs = out.logits[0, -1].float().softmax(-1)  # (V,)
                next_id = int(probs.argmax())
                step = Step(index=t, token=self.tokenizer.pieces([next_id])[0], token_id=next_id,
                            top_k=_top_k(probs[None], top_k, self.tokenizer)[0],
                            decoder_self_attn=_stack(out.self_attn)[:, :, 0],  # (L, h, t+1)
                            cross_attn=_stack(out.cross_attn)[:, :, 0])  # (L, h, S)
                token = torch.tensor([[next_id]], device=self.device)
            yield step
            if next_id == EOS_ID:
                return

    def translate(self, text: str, beam_size: int = 1, max_new_tokens: int | None = None,
                  length_penalty: float = 1.0, top_k: int = 5) -> Trace:
        src, notices = self.encode_source(text)
        limit = output_limit(self.model, len(src), max_new_tokens)
        settings = self._settings(beam_size=beam_size, max_new_tokens=limit, length_penalty=length_penalty,
                                  top_k=top_k, mode="greedy" if beam_size == 1 else "beam")
        if beam_size == 1:
            encoded = self._encode(src)
            steps = list(self._steps(src, top_k, limit, encoded))
            return self._trace_from_steps(src, encoded, steps, settings, notices)
        with torch.inference_mode():
            hyps = beam_search(self.model, torch.tensor([src], device=self.device), beam_size, limit,
                               length_penalty)[0]
        candidates = [Candidate(self.tokenizer.decode(ids), self.tokenizer.pieces(ids), score, log_prob)
                      for ids, score, log_prob in hyps]
        trace = self.force_ids(src, hyps[0][0], top_k, settings, notices)
        if len(hyps[0][0]) >= limit:  # every step went to a piece: the limit cut it before EOS
            trace = trace.without_final_eos()
        trace.candidates = candidates
        return trace

    def _trace_from_steps(self, src: list[int], encoded: Encoded, steps: list[Step], settings: dict,
                          notices: list[str]) -> Trace:
        T, S = len(steps), len(src)
        L, h = self.config.n_decoder_layers, self.config.n_heads
        self_attn = np.zeros((L, h, T, T), dtype=np.float32)
        cross = np.zeros((L, h, T, S), dtype=np.float32)
        for s in steps:
            self_attn[:, :, s.index, :s.index + 1] = s.decoder_self_attn
            cross[:, :, s.index] = s.cross_attn
        out_ids = [s.token_id for s in steps]
        gen = [i for i in out_ids if i != EOS_ID]
        return Trace(text=self.tokenizer.decode(gen), source_tokens=self.tokenizer.pieces(src),
                     target_tokens=self.tokenizer.pieces([BOS_ID] + gen)[:T],
                     output_tokens=[s.token for s in steps], encoder_self_attn=_stack(encoded.self_attn),
                     decoder_self_attn=self_attn, cross_attn=cross, top_k=[s.top_k for s in steps],
                     settings=settings, checkpoint=self.checkpoint.id, source_ids=src, output_ids=out_ids,
                     notices=notices)

    def force(self, text: str, target_text: str, top_k: int = 5) -> Trace:
        """Teacher-forced pass over a given translation: its attention and what the model expected."""
        src, notices = self.encode_source(text)
        tgt = self.tokenizer.encode(target_text)[:self.config.max_len - 1]
        return self.force_ids(src, tgt, top_k, self._settings(mode="forced", top_k=top_k), notices)

    def force_ids(self, src: list[int], tgt: list[int], top_k: int, settings: dict, notices: list[str]) -> Trace:
        target_in, target_out = [BOS_ID] + tgt, tgt + [EOS_ID]
        with torch.inference_mode():
            encoded = self._encode(src)
            out = self.model.decode(torch.tensor([target_in], device=self.device), encoded, need_weights=True)
            probs = out.logits[0].float().softmax(-1)  # (T, V)
        return Trace(text=self.tokenizer.decode(tgt), source_tokens=self.tokenizer.pieces(src),
                     target_tokens=self.tokenizer.pieces(target_in), output_tokens=self.tokenizer.pieces(target_out),
                     encoder_self_attn=_stack(encoded.self_attn), decoder_self_attn=_stack(out.self_attn),
                     cross_attn=_stack(out.cross_attn), top_k=_top_k(probs, top_k, self.tokenizer),
                     settings=settings, checkpoint=self.checkpoint.id, source_ids=src, output_ids=target_out,
                     notices=notices)

    def translate_batch(self, texts: list[str], beam_size: int = 1, max_new_tokens: int | None = None,
                        length_penalty: float = 1.0, batch_size: int = 64) -> list[str]:
        """Plain translations of many sentences (no attention), batched by length."""
        srcs = [self.encode_source(t)[0] for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(srcs[i]))
        results = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            idx = [i for i in order[start:start + batch_size] if texts[i].strip()]
            if not idx:
                continue
            src = pad([srcs[i] for i in idx]).to(self.device)
            with torch.inference_mode():
                if beam_size == 1:
                    outs = greedy(self.model, src, max_new_tokens)
                else:
                    outs = [h[0][0] for h in beam_search(self.model, src, beam_size, max_new_tokens,
                                                         length_penalty)]
            for i, ids in zip(idx, outs):
                results[i] = self.tokenizer.decode(ids)
        return results
