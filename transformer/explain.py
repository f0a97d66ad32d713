"""Why did the model write this piece? Each produced piece of a translation attributed to the source pieces and the
decoder input pieces (the target prefix) it was made from, by three methods (docs/explain.md):

- input × gradient: e · ∂f/∂e, summed over the embedding's dimensions;
- integrated gradients (Sundararajan et al. 2017): (e − e') · the mean of ∂f/∂e at the midpoints of m equal parts
  of the straight path from the baseline e' to e; their sum over every piece is f(e) − f(e') up to the midpoint
  rule's error, which falls as 1/m²;
- occlusion: f(e) − f(e with one source word's pieces set to the baseline), teacher-forced on the same output.

f is the produced piece's log-probability at its step or, against a foil (Yin & Neubig 2022), log p(produced) −
log p(foil). e are the pieces' embedding rows, before the ×√d_model scale and the positional encoding; the baseline
e' is the zero vector for every piece, source and prefix alike, positions kept: as many pieces, saying nothing.
Gradients are taken in fp32 whatever precision the model decodes in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from .head_mask import HeadMask
from .model import Transformer
from .translator import Translator, decoder_input

METHODS = {"ig": "integrated gradients", "grad": "input × gradient", "occlusion": "occlusion"}
IG_STEPS = 16  # points on integrated gradients' path, unless asked otherwise
_BATCH = 256  # sequences in one batched backward pass, steps × points on the path, at most
_CHUNK = 8  # steps in one batched backward pass, at most


@dataclass(frozen=True)
class Attribution:
    """What each input piece contributed to f at some decoding steps of one translation, by one method."""

    method: str  # a key of METHODS
    steps: tuple[int, ...]  # the steps explained, from 0 (step t produces output piece t): the rows below
    source: np.ndarray  # (n, S) each source piece's part; occlusion: (n, W) each source word's (`words`)
    prefix: np.ndarray | None  # (n, T) each decoder input piece's part, 0 after the step (masked); occlusion: None
    score: np.ndarray  # (n,) f at each step
    baseline: np.ndarray | None  # (n,) f with every piece at the baseline (integrated gradients)
    foil: int | None = None  # the piece id f compares against
    words: tuple[tuple[int, ...], ...] | None = None  # occlusion: the source pieces of each word
    path_steps: int = 0  # integrated gradients: m

    def shares(self) -> np.ndarray:
        """(n, 2): the source's and the prefix's shares of the evidence for each step's piece, its positive
        attributions (what raised f), each row summing to 1 (half and half where nothing raised it)."""
        if self.prefix is None:
            raise ValueError(f"{METHODS[self.method]} attributes only the source: it has no prefix share")
        parts = np.stack([self.source.clip(min=0).sum(1), self.prefix.clip(min=0).sum(1)], axis=1)  # (n, 2)
        total = parts.sum(1, keepdims=True)
        return np.divide(parts, total, out=np.full_like(parts, 0.5), where=total > 0)


@dataclass(frozen=True)
class ValueNorms:
    """‖v_j W_o^h‖ for every layer, head and key j of each attention kind (Kobayashi et al. 2020): how far head h
    moves the stream when it attends to key j; α_ij times it, renormalised over j, are the value-norm weights."""

    encoder: np.ndarray  # (L_enc, h, S)
    decoder: np.ndarray  # (L_dec, h, T)
    cross: np.ndarray  # (L_dec, h, S)

    def __getitem__(self, kind: str) -> np.ndarray:
        return getattr(self, kind)


def value_norms(translator: Translator, source_ids: Sequence[int], output_ids: Sequence[int],
                head_mask: HeadMask | None = None) -> ValueNorms:
    """The value norms of a teacher-forced pass over one sentence pair; a head switched off moves nothing (0)."""
    model, config, device = translator.model, translator.config, translator.device
    mask = None if head_mask is None else head_mask.to(device)
    src = torch.tensor([list(source_ids)], device=device)
    tgt = torch.tensor([decoder_input(list(output_ids), config.decoder_start_id)], device=device)
    h, d_k = config.n_heads, config.d_k
    norms = {}
    with torch.inference_mode():
        for kind, attentions in model.attentions(src, tgt, mask).items():
            layers = []
            for layer, (a, W_o) in enumerate(zip(attentions, model.output_projections(kind))):
                W = W_o.float().view(config.d_model, h, d_k)  # (d_model, h, d_k): head h's columns of W_o
                moved = torch.einsum("htk,dhk->htd", a.v[0].float(), W)  # (h, T_k, d_model): v_j W_o^h
                norm = moved.norm(dim=-1)  # (h, T_k)
                if mask is not None:
                    norm = norm * mask[kind][layer][:, None].float()
                layers.append(norm)
            norms[kind] = torch.stack(layers).cpu().numpy().astype(np.float64)
    return ValueNorms(**norms)


def attribute(translator: Translator, source_ids: Sequence[int], output_ids: Sequence[int], method: str, *,
              steps: Sequence[int] | None = None, foil: int | None = None, path_steps: int = IG_STEPS,
              words: Sequence[Sequence[int]] | None = None, head_mask: HeadMask | None = None,
              progress: Callable[[int, int], None] | None = None) -> Attribution:
    """`method`'s attribution of the output pieces at `steps` (all when None) of a teacher-forced pass over one
    sentence pair; `words` (occlusion only): the source pieces of each word, each piece in one; `progress(done,
    steps)` after each batch of steps (the gradient methods)."""
    if method not in METHODS:
        raise ValueError(f"unknown attribution method {method!r}; choose one of {', '.join(METHODS)}")
    T = len(output_ids)
    steps = tuple(range(T)) if steps is None else tuple(int(t) for t in steps)
    if not steps or not all(0 <= t < T for t in steps):
        raise ValueError(f"steps must be among 0..{T - 1} of this {T}-piece output; got {list(steps)}")
    model, config = translator.model, translator.config
    if foil is not None and not 0 <= foil < config.vocab_size:
        raise ValueError(f"the foil must be a piece id below {config.vocab_size}; got {foil}")
    device, mask = translator.device, None if head_mask is None else head_mask.to(translator.device)
    src = torch.tensor([list(source_ids)], device=device)
    tgt = torch.tensor([decoder_input(list(output_ids), config.decoder_start_id)], device=device)
    produced = torch.tensor([list(output_ids)], device=device)  # (1, T)
    with torch.no_grad():
        e_src = model.embedding(src).float()  # (1, S, d_model)
        e_tgt = (model.tgt_embedding or model.embedding)(tgt).float()  # (1, T, d_model)
    if method == "occlusion":
        if words is None:
            raise ValueError("occlusion needs the source's words (the pieces of each)")
        return _occlusion(model, e_src, e_tgt, produced, foil, steps, words, mask)
    m = path_steps if method == "ig" else 1
    if m < 1:
        raise ValueError(f"integrated gradients needs at least 1 step on its path; got {m}")
    # input × gradient is the gradient at the input itself; integrated gradients the mean at the path's midpoints
    alphas = torch.ones(1, device=device) if method == "grad" else (torch.arange(m, device=device) + 0.5) / m
    source, prefix = [], []
    # steps in order, a few at a time: each batch's pass reads the prefix only up to its last step
    order = sorted(set(steps))
    chunk = max(1, min(_BATCH // m, _CHUNK))
    for start in range(0, len(order), chunk):
        part = order[start:start + chunk]
        end = part[-1] + 1
        g_src, g_tgt = _gradients(model, alphas[:, None, None] * e_src, alphas[:, None, None] * e_tgt[:, :end],
                                  produced, foil, part, mask)  # (n, m, S, d), (n, m, end, d)
        source.append((e_src * g_src.mean(1)).sum(-1))  # (n, S)
        prefix.append(torch.nn.functional.pad((e_tgt[:, :end] * g_tgt.mean(1)).sum(-1), (0, T - end)))  # (n, T)
        if progress is not None:
            progress(start + len(part), len(order))
    row = {t: i for i, t in enumerate(order)}
    rows = [row[t] for t in steps]
    ends = torch.stack([torch.zeros_like(alphas[0]), torch.ones_like(alphas[0])])  # the baseline, the input
    f = _scores(model, ends[:, None, None] * e_src, ends[:, None, None] * e_tgt[:, :max(steps) + 1], produced,
                foil, steps, mask).cpu().numpy().astype(np.float64)  # (2, n)
    prefix_parts = torch.cat(prefix)[rows].cpu().numpy().astype(np.float64)
    prefix_parts[np.arange(T)[None, :] > np.array(steps)[:, None]] = 0.0  # exactly: the mask hides them
    return Attribution(method, steps, torch.cat(source)[rows].cpu().numpy().astype(np.float64), prefix_parts,
                       f[1], f[0] if method == "ig" else None, foil, path_steps=m if method == "ig" else 0)


def _score(model: Transformer, stream: Tensor, produced: Tensor, foil: int | None, steps: Sequence[int]) -> Tensor:
    """f (B, n) at `steps` from the last decoder layer's stream (B, T, d_model): the output projection only there."""
    index = torch.tensor(steps, device=stream.device)
    log_p = model.lens_logits(stream[:, index]).float().log_softmax(-1)  # (B, n, V)
    f = log_p.gather(-1, produced[:, index].expand(stream.size(0), -1)[..., None])[..., 0]
    return f if foil is None else f - log_p[..., foil]


def _scores(model: Transformer, e_src: Tensor, e_tgt: Tensor, produced: Tensor, foil: int | None,
            steps: Sequence[int], mask: HeadMask | None) -> Tensor:
    """f (B, n) at B inputs, in fp32 (grad mode: the path the gradients take, whatever the model decodes in)."""
    with torch.enable_grad():
        stream = model.embedded_streams(e_src, e_tgt, mask)[-1]
        return _score(model, stream, produced, foil, steps).detach()


def _gradients(model: Transformer, e_src: Tensor, e_tgt: Tensor, produced: Tensor, foil: int | None,
               steps: Sequence[int], mask: HeadMask | None) -> tuple[Tensor, Tensor]:
    """∂f_t/∂e at each of B inputs (e_src (B, S, d), e_tgt (B, T, d)) for each step t in `steps`: (n, B, S, d) and
    (n, B, T, d), from one forward pass and one batched backward pass."""
    e_src, e_tgt = e_src.detach().requires_grad_(), e_tgt.detach().requires_grad_()
    with torch.enable_grad():
        stream = model.embedded_streams(e_src, e_tgt, mask)[-1]  # (B, T, d)
        end = stream.detach().requires_grad_()
        # f_t reads only stream position t, so one backward pass of Σ f gives every ∂f_t/∂stream_t at once
        (d_end,) = torch.autograd.grad(_score(model, end, produced, foil, steps).sum(), end)  # (B, T, d)
        index, n = torch.tensor(steps, device=end.device), len(steps)
        seeds = end.new_zeros(n, *end.shape)  # (n, B, T, d): seed i is ∂f_t/∂stream at t = steps[i] only
        seeds[torch.arange(n), :, index] = d_end[:, index].transpose(0, 1)
        g_src, g_tgt = torch.autograd.grad(stream, (e_src, e_tgt), seeds, is_grads_batched=True)
    return g_src, g_tgt


def _occlusion(model: Transformer, e_src: Tensor, e_tgt: Tensor, produced: Tensor, foil: int | None,
               steps: tuple[int, ...], words: Sequence[Sequence[int]], mask: HeadMask | None) -> Attribution:
    S = e_src.size(1)
    words = tuple(tuple(int(i) for i in w) for w in words)
    if sorted(i for w in words for i in w) != list(range(S)):
        raise ValueError(f"occlusion's words must hold each of the {S} source pieces once; got {list(words)}")
    occluded = e_src.repeat(len(words) + 1, 1, 1)  # (W + 1, S, d): the input, then each word at the baseline
    for w, pieces in enumerate(words):
        occluded[w + 1, list(pieces)] = 0.0
    f = _scores(model, occluded, e_tgt[:, :max(steps) + 1].expand(len(words) + 1, -1, -1), produced, foil, steps,
                mask).cpu().numpy().astype(np.float64)  # (W + 1, n)
    return Attribution("occlusion", steps, (f[0][None, :] - f[1:]).T, None, f[0], None, foil, words)
