"""Batched decoding over token ids: KV-cached greedy search and beam search."""
from __future__ import annotations

import torch
from torch import Tensor

from .config import BOS_ID, EOS_ID, PAD_ID
from .model import Encoded, Transformer


def output_limit(model: Transformer, src_len: int, max_new_tokens: int | None) -> int:
    """2·S + 10 new tokens unless told otherwise, and never more than max_len - 1: a trace reads the output
    back behind <s> (teacher forcing), and <s> + every new token must fit the model's max_len positions."""
    limit = 2 * src_len + 10 if max_new_tokens is None else max_new_tokens
    return max(1, min(limit, model.config.max_len - 1))


@torch.inference_mode()
def greedy(model: Transformer, src_ids: Tensor, max_new_tokens: int | None = None) -> list[list[int]]:
    """Most likely next token at each step, for a (B, S) batch; returns ids without EOS."""
    encoded = model.encode(src_ids)
    limit = output_limit(model, src_ids.size(1), max_new_tokens)
    cache = model.new_cache(encoded, limit)
    B = src_ids.size(0)
    tokens = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src_ids.device)
    done = torch.zeros(B, dtype=torch.bool, device=src_ids.device)
    steps = []
    for _ in range(limit):
        next_ids = model.decode(tokens, encoded, cache).logits[:, -1].argmax(-1)  # (B,)
        next_ids = next_ids.masked_fill(done, PAD_ID)
        steps.append(next_ids)
        done |= next_ids == EOS_ID
        if bool(done.all()):
            break
        tokens = next_ids[:, None]  # (B, 1)
    out = torch.stack(steps, dim=1).tolist()  # (B, n)
    return [_strip(row) for row in out]


def _strip(ids: list[int]) -> list[int]:
    """Ids up to (not including) EOS or padding."""
    for i, t in enumerate(ids):
        if t in (EOS_ID, PAD_ID):
            return ids[:i]
    return ids


@torch.inference_mode()
def beam_search(model: Transformer, src_ids: Tensor, beam_size: int, max_new_tokens: int | None = None,
                length_penalty: float = 1.0) -> list[list[tuple[list[int], float, float]]]:
    """Beam search over a (B, S) batch.

    Returns, per sentence, its finished hypotheses best first as (ids without EOS, score,
    log-probability), score = log-probability / length**length_penalty (length counts EOS).
    A sentence stops when it has `beam_size` finished hypotheses or hits the length limit.
    """
    B, K = src_ids.size(0), beam_size
    encoded = model.encode(src_ids)
    # Each sentence's K beams sit next to each other: rows b*K .. b*K+K-1.
    encoded = Encoded(encoded.memory.repeat_interleave(K, 0),  # (B*K, S, d_model)
                      None if encoded.src_mask is None else encoded.src_mask.repeat_interleave(K, 0))
    limit = output_limit(model, src_ids.size(1), max_new_tokens)
    cache = model.new_cache(encoded, limit)
    device = src_ids.device
    tokens = torch.full((B * K, 1), BOS_ID, dtype=torch.long, device=device)
    history = torch.empty((B * K, 0), dtype=torch.long, device=device)
    beam_scores = torch.full((B, K), float("-inf"), device=device)
    beam_scores[:, 0] = 0.0  # all beams start identical: expand only the first
    finished: list[list[tuple[list[int], float, float]]] = [[] for _ in range(B)]
    done = [False] * B
    for t in range(limit):
        logp = model.decode(tokens, encoded, cache).logits[:, -1].float().log_softmax(-1)  # (B*K, V)
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
                if token != EOS_ID:
                    kept.append((row, token, score))
                elif rank < K and score > float("-inf"):
                    ids = history[row].tolist()
                    finished[b].append((ids, score / (len(ids) + 1) ** length_penalty, score))
            done[b] = done[b] or len(finished[b]) >= K
            if done[b]:  # placeholders keep every tensor at (B*K) rows
                kept = [(b * K, PAD_ID, float("-inf"))] * K
            for row, token, score in kept:
                rows.append(row)
                next_tokens.append(token)
                next_scores.append(score)
        if all(done):
            break
        index = torch.tensor(rows, device=device)
        cache.reorder(index)
        tokens = torch.tensor(next_tokens, device=device)[:, None]  # (B*K, 1)
        history = torch.cat([history.index_select(0, index), tokens], dim=1)  # (B*K, t+1)
        beam_scores = torch.tensor(next_scores, device=device).view(B, K)
    else:
        # Out of length: the live beams are the hypotheses of unfinished sentences.
        for b in range(B):
            if not done[b]:
                for k in range(K):
                    score = float(beam_scores[b, k])
                    if score > float("-inf"):
                        ids = history[b * K + k].tolist()
                        finished[b].append((ids, score / max(len(ids), 1) ** length_penalty, score))
    return [sorted(hyps, key=lambda h: -h[1])[:K] for hyps in finished]
