"""Batched decoding over token ids: KV-cached greedy search and beam search."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch
from torch import Tensor

from .config import EOS_ID
from .head_mask import HeadMask
from .model import Encoded, Transformer


def output_limit(model: Transformer, src_len: int, max_new_tokens: int | None) -> int:
    """ceil(1.5·S) + 10 new tokens for S source tokens unless told otherwise, and never more than max_len - 1.

    Fewer than 0.2% of the training pairs of Tatoeba, Multi30k and newstest (either direction, in our pieces)
    have a longer reference (only misaligned Europarl pairs do, at 0.4%), and it bounds the work a degenerate
    input buys. The max_len cap: a trace reads the output back behind <s> (teacher forcing), and <s> + every new
    token must fit the model's max_len positions."""
    limit = math.ceil(1.5 * src_len) + 10 if max_new_tokens is None else max_new_tokens
    return max(1, min(limit, model.config.max_len - 1))


def cut_by_limit(output_ids: Sequence[int], eos_id: int = EOS_ID) -> bool:
    """The length limit stopped decoding before the model chose EOS.

    Output ids are what the decoder produced, so they end with EOS exactly when the model chose to stop.
    """
    return bool(output_ids) and output_ids[-1] != eos_id


def _suppress(scores: Tensor, model: Transformer) -> Tensor:
    """Scores (N, V) with the config's banned ids made impossible (after log_softmax in beam search, as
    transformers bans them); a copy, so the caller's logits stay as the model computed them."""
    if not model.config.suppress_ids:
        return scores
    scores = scores.clone()
    scores[:, list(model.config.suppress_ids)] = float("-inf")
    return scores


def own_choice(model: Transformer, logits: Tensor) -> Tensor:
    """The model's own most likely next piece (greedy decoding's choice) for logits (..., V)."""
    return _suppress(logits.reshape(-1, logits.size(-1)), model).argmax(-1).view(logits.shape[:-1])


def _forced(logp: Tensor, piece: int) -> Tensor:
    """Log-probabilities (N, V) where only `piece` is possible, at the model's own log p of it (suppressed or not:
    a forced piece is what was asked for)."""
    only = torch.full_like(logp, float("-inf"))
    only[:, piece] = logp[:, piece]
    return only


@dataclass
class GreedyStep:
    """Decoder position t of greedy decoding over a (B, S) batch."""

    index: int  # t
    ids: Tensor  # (B,) the next piece: the forced one, else the most likely; the pad id after EOS
    own: Tensor  # (B,) the model's own most likely next piece (= ids but at a forced step or after EOS)
    logits: Tensor  # (B, V) float32
    self_attn: Tensor | None  # (L, B, h, t+1) position t's masked self-attention row, per layer
    cross_attn: Tensor | None  # (L, B, h, S)


@torch.inference_mode()
def greedy_steps(model: Transformer, encoded: Encoded, limit: int, need_weights: bool = False,
                 head_mask: HeadMask | None = None, prefix: Sequence[int] = ()) -> Iterator[GreedyStep]:
    """Greedy decoding, one step at a time, until every sentence has chosen EOS or `limit` steps are done; the
    first len(prefix) pieces of every sentence are `prefix`'s (forced, on the same cached path), the model's own
    choices after them.

    Inference mode holds only while a step computes: the generator may be resumed on another thread.
    """
    B, device, config = encoded.memory.size(0), encoded.memory.device, model.config
    cache = model.new_cache(encoded, limit)
    tokens = torch.full((B, 1), config.decoder_start_id, dtype=torch.long, device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    for t in range(limit):
        out = model.decode(tokens, encoded, cache, need_weights=need_weights, head_mask=head_mask)
        logits = out.logits[:, -1].float()  # (B, V)
        own = own_choice(model, logits)  # (B,)
        next_ids = (torch.full_like(own, prefix[t]) if t < len(prefix) else own).masked_fill(done, config.pad_id)
        self_attn = cross_attn = None
        if need_weights:
            self_attn = torch.stack([w[:, :, -1] for w in out.self_attn])  # (L, B, h, t+1)
            cross_attn = torch.stack([w[:, :, -1] for w in out.cross_attn])  # (L, B, h, S)
        yield GreedyStep(t, next_ids, own, logits, self_attn, cross_attn)
        done |= next_ids == config.eos_id
        if bool(done.all()):
            return
        tokens = next_ids[:, None]  # (B, 1)


@torch.inference_mode()
def greedy(model: Transformer, src_ids: Tensor, max_new_tokens: int | None = None,
           head_mask: HeadMask | None = None) -> list[list[int]]:
    """Most likely next token at each step, for a (B, S) batch; returns ids without EOS."""
    limit = output_limit(model, src_ids.size(1), max_new_tokens)
    encoded = model.encode(src_ids, head_mask=head_mask)
    steps = [step.ids for step in greedy_steps(model, encoded, limit, head_mask=head_mask)]
    out = torch.stack(steps, dim=1).tolist()  # (B, n)
    return [_strip(row, model.config.eos_id) for row in out]


def _strip(ids: list[int], eos_id: int) -> list[int]:
    """Ids up to (not including) EOS: after it come only the pads of a finished sentence."""
    return ids[:ids.index(eos_id)] if eos_id in ids else ids


@dataclass
class Hypothesis:
    """One finished beam: its output ids (EOS included when the model chose it, see `cut_by_limit`),
    score = log_prob / len(ids)**length_penalty."""

    ids: list[int]
    score: float
    log_prob: float

    @classmethod
    def of(cls, ids: list[int], log_prob: float, length_penalty: float) -> "Hypothesis":
        return cls(ids, log_prob / len(ids) ** length_penalty, log_prob)


@torch.inference_mode()
def beam_hypotheses(model: Transformer, encoded: Encoded, beam_size: int, limit: int, length_penalty: float = 1.0,
                    head_mask: HeadMask | None = None, between: Callable[[], None] | None = None,
                    prefix: Sequence[int] = ()) -> list[list[Hypothesis]]:
    """Beam search over an encoded (B, S) batch: per sentence, its finished hypotheses best first; `between()` is
    called between two steps (where a caller may let other work use the model). Every hypothesis starts with
    `prefix` (forced: while it lasts, one beam goes on, scored by the model's log p of each forced piece).

    A sentence stops when it has `beam_size` hypotheses that chose EOS. At the length limit, by the config's
    `beam_limit_rule`, its live beams become hypotheses too (cut by the limit), or ("top_k", transformers' rule)
    the continuations ranked below K of the last step do, EOS or not. Either way the best K are returned.
    """
    B, K, device, config = encoded.memory.size(0), beam_size, encoded.memory.device, model.config
    eos_id, top_k_rule = config.eos_id, config.beam_limit_rule == "top_k"
    # Each sentence's K beams sit next to each other: rows b*K .. b*K+K-1.
    cache = model.new_cache(encoded, limit, beams=K)
    encoded = Encoded(encoded.memory.repeat_interleave(K, 0),  # (B*K, S, d_model)
                      None if encoded.src_mask is None else encoded.src_mask.repeat_interleave(K, 0))
    tokens = torch.full((B * K, 1), config.decoder_start_id, dtype=torch.long, device=device)
    history = torch.empty((B * K, 0), dtype=torch.long, device=device)
    beam_scores = torch.full((B, K), float("-inf"), device=device)
    beam_scores[:, 0] = 0.0  # all beams start identical: expand only the first
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = [False] * B
    for t in range(limit):
        if between is not None and t:
            between()
        logits = model.decode(tokens, encoded, cache, head_mask=head_mask).logits[:, -1]
        logp = logits.float().log_softmax(-1)  # (B*K, V)
        logp = _forced(logp, prefix[t]) if t < len(prefix) else _suppress(logp, model)
        last = t == limit - 1
        V = logp.size(-1)
        candidates = (beam_scores[:, :, None] + logp.view(B, K, V)).view(B, K * V)  # (B, K*V)
        top_scores, top_idx = candidates.topk(min(2 * K, K * V), dim=1)  # (B, 2K)
        rows, next_tokens, next_scores = [], [], []
        for b, (scores_b, idx_b) in enumerate(zip(top_scores.tolist(), top_idx.tolist())):
            kept: list[tuple[int, int, float]] = []  # (row, token, score) of beams that go on
            for rank, (score, flat) in enumerate(zip(scores_b, idx_b)):
                if done[b] or len(kept) == K:
                    break
                row, token = b * K + flat // V, flat % V
                if last and top_k_rule:
                    if rank < K and score > float("-inf"):
                        finished[b].append(Hypothesis.of(history[row].tolist() + [token], score, length_penalty))
                elif token != eos_id:
                    kept.append((row, token, score))
                elif rank < K and score > float("-inf"):
                    finished[b].append(Hypothesis.of(history[row].tolist() + [eos_id], score, length_penalty))
            # no beam left to go on: a forced EOS, or fewer hypotheses than beams
            gone = all(score == float("-inf") for _, _, score in kept)
            done[b] = done[b] or len(finished[b]) >= K or (last and top_k_rule) or gone
            if done[b]:  # placeholders keep every tensor at (B*K) rows
                kept = [(b * K, config.pad_id, float("-inf"))] * K
            for row, token, score in kept:
                rows.append(row)
                next_tokens.append(token)
                next_scores.append(score)
        if all(done):
            break
        if rows != list(range(B * K)):  # most steps keep every beam in its row
            index = torch.tensor(rows, device=device)
            cache.reorder(index)
            history = history.index_select(0, index)
        tokens = torch.tensor(next_tokens, device=device)[:, None]  # (B*K, 1)
        history = torch.cat([history, tokens], dim=1)  # (B*K, t+1)
        beam_scores = torch.tensor(next_scores, device=device).view(B, K)
    else:
        # Out of length: the live beams are the hypotheses of unfinished sentences.
        for b in range(B):
            if not done[b]:
                for k in range(K):
                    score = float(beam_scores[b, k])
                    if score > float("-inf"):
                        finished[b].append(Hypothesis.of(history[b * K + k].tolist(), score, length_penalty))
    return [sorted(hyps, key=lambda h: -h.score)[:K] for hyps in finished]


@torch.inference_mode()
def beam_search(model: Transformer, src_ids: Tensor, beam_size: int, max_new_tokens: int | None = None,
                length_penalty: float = 1.0, head_mask: HeadMask | None = None) -> list[list[Hypothesis]]:
    """Beam search over a (B, S) batch of source ids (see `beam_hypotheses`)."""
    limit = output_limit(model, src_ids.size(1), max_new_tokens)
    return beam_hypotheses(model, model.encode(src_ids, head_mask=head_mask), beam_size, limit, length_penalty,
                           head_mask)
