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

`python -m transformer.explain` measures, over a corpus's val sentences, how well each cross-attention head agrees
with integrated gradients on which source words matter (`corpus_agreement`, into agreement.json).
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from . import data
from .head_mask import HeadMask
from .heads import opened, weights_sha256
from .model import Transformer
from .pieces import SPECIAL, word_groups
from .translator import Translator, decoder_input

METHODS = {"ig": "integrated gradients", "grad": "input × gradient", "occlusion": "occlusion"}
IG_STEPS = 16  # points on integrated gradients' path, unless asked otherwise
_BATCH = 256  # sequences in one batched backward pass, steps × points on the path, at most
_CHUNK = 8  # steps in one batched backward pass, at most
# (steps × points on the path) × tokens of the pair in one batched backward pass, and rows × tokens in one occlusion
# pass, at most: a long input's passes stay short, so that a caller can let other work use the model between them
_TOKENS = 8192
_OCCLUSION_TOKENS = 16384


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
    return attributions(translator, source_ids, output_ids, (method,), steps=steps, foil=foil,
                        path_steps=path_steps, words=words, head_mask=head_mask, progress=progress)[method]


def attributions(translator: Translator, source_ids: Sequence[int], output_ids: Sequence[int],
                 methods: Sequence[str] = tuple(METHODS), *, steps: Sequence[int] | None = None,
                 foil: int | None = None, path_steps: int = IG_STEPS, words: Sequence[Sequence[int]] | None = None,
                 head_mask: HeadMask | None = None, progress: Callable[[int, int], None] | None = None,
                 between: Callable[[], None] | None = None) -> dict[str, Attribution]:
    """`attribute` by each of `methods`; input × gradient and integrated gradients share their passes (the input
    itself is one more point on the path). `between()` is called between two passes (where a caller may let other
    work use the model)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown attribution method {unknown[0] if unknown else None!r}; "
                         f"choose one of {', '.join(METHODS)}")
    T = len(output_ids)
    steps = tuple(range(T)) if steps is None else tuple(int(t) for t in steps)
    if not steps or not all(0 <= t < T for t in steps):
        raise ValueError(f"steps must be among 0..{T - 1} of this {T}-piece output; got {list(steps)}")
    model, config = translator.model, translator.config
    if foil is not None and not 0 <= foil < config.vocab_size:
        raise ValueError(f"the foil must be a piece id below {config.vocab_size}; got {foil}")
    if "occlusion" in methods and words is None:
        raise ValueError("occlusion needs the source's words (the pieces of each)")
    m = path_steps if "ig" in methods else 0
    if "ig" in methods and m < 1:
        raise ValueError(f"integrated gradients needs at least 1 step on its path; got {m}")
    device, mask = translator.device, None if head_mask is None else head_mask.to(translator.device)
    src = torch.tensor([list(source_ids)], device=device)
    tgt = torch.tensor([decoder_input(list(output_ids), config.decoder_start_id)], device=device)
    produced = torch.tensor([list(output_ids)], device=device)  # (1, T)
    with torch.no_grad():
        e_src = model.embedding(src).float()  # (1, S, d_model)
        e_tgt = (model.tgt_embedding or model.embedding)(tgt).float()  # (1, T, d_model)
    found = {}
    if "ig" in methods or "grad" in methods:
        found.update(_gradient_methods(model, e_src, e_tgt, produced, foil, steps, m, mask, progress, between))
    if "occlusion" in methods:
        found["occlusion"] = _occlusion(model, e_src, e_tgt, produced, foil, steps, words, mask, between)
    return {method: found[method] for method in methods}


def _gradient_methods(model: Transformer, e_src: Tensor, e_tgt: Tensor, produced: Tensor, foil: int | None,
                      steps: tuple[int, ...], m: int, mask: HeadMask | None,
                      progress: Callable[[int, int], None] | None,
                      between: Callable[[], None] | None) -> dict[str, Attribution]:
    """Input × gradient and, when m > 0, integrated gradients at m points, from one set of passes: the path's
    midpoints and the input (input × gradient's gradient, and f) are one batch."""
    T = produced.size(1)
    alphas = torch.cat([(torch.arange(m, device=e_src.device) + 0.5) / m, torch.ones(1, device=e_src.device)])
    parts: dict[str, tuple[list[Tensor], list[Tensor]]] = {"ig": ([], []), "grad": ([], [])}
    scores = []
    # steps in order, a few at a time: each batch's pass reads the prefix only up to its last step
    order = sorted(set(steps))
    chunk = max(1, min(_BATCH // (m + 1), _CHUNK, _TOKENS // ((m + 1) * (e_src.size(1) + e_tgt.size(1)))))
    for start in range(0, len(order), chunk):
        if between is not None and start:
            between()
        part = order[start:start + chunk]
        end = part[-1] + 1
        g_src, g_tgt, f = _gradients(model, alphas[:, None, None] * e_src, alphas[:, None, None] * e_tgt[:, :end],
                                     produced, foil, part, mask)  # (n, m + 1, S, d), (n, m + 1, end, d), (m + 1, n)
        for method, at in (("ig", slice(0, m)), ("grad", slice(m, m + 1)))[m == 0:]:
            parts[method][0].append((e_src * g_src[:, at].mean(1)).sum(-1))  # (n, S)
            parts[method][1].append(torch.nn.functional.pad((e_tgt[:, :end] * g_tgt[:, at].mean(1)).sum(-1),
                                                            (0, T - end)))  # (n, T)
        scores.append(f[-1])
        if progress is not None:
            progress(start + len(part), len(order))
    row = {t: i for i, t in enumerate(order)}
    rows = [row[t] for t in steps]
    score = torch.cat(scores)[rows].cpu().numpy().astype(np.float64)
    found = {}
    for method, (source, prefix) in list(parts.items())[m == 0:]:
        prefix_parts = torch.cat(prefix)[rows].cpu().numpy().astype(np.float64)
        prefix_parts[np.arange(T)[None, :] > np.array(steps)[:, None]] = 0.0  # exactly: the mask hides them
        baseline = None
        if method == "ig":  # every piece at the baseline: one more forward pass, no gradients needed there
            baseline = _scores(model, 0 * e_src, 0 * e_tgt[:, :max(steps) + 1], produced, foil, steps, mask)
            baseline = baseline[0].cpu().numpy().astype(np.float64)
        found[method] = Attribution(method, steps, torch.cat(source)[rows].cpu().numpy().astype(np.float64),
                                    prefix_parts, score, baseline, foil, path_steps=m if method == "ig" else 0)
    return found


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
               steps: Sequence[int], mask: HeadMask | None) -> tuple[Tensor, Tensor, Tensor]:
    """∂f_t/∂e at each of B inputs (e_src (B, S, d), e_tgt (B, T, d)) for each step t in `steps`: (n, B, S, d) and
    (n, B, T, d), and f (B, n), from one forward pass and one batched backward pass."""
    e_src, e_tgt = e_src.detach().requires_grad_(), e_tgt.detach().requires_grad_()
    with torch.enable_grad():
        stream = model.embedded_streams(e_src, e_tgt, mask)[-1]  # (B, T, d)
        end = stream.detach().requires_grad_()
        # f_t reads only stream position t, so one backward pass of Σ f gives every ∂f_t/∂stream_t at once
        f = _score(model, end, produced, foil, steps)  # (B, n)
        (d_end,) = torch.autograd.grad(f.sum(), end)  # (B, T, d)
        index, n = torch.tensor(steps, device=end.device), len(steps)
        seeds = end.new_zeros(n, *end.shape)  # (n, B, T, d): seed i is ∂f_t/∂stream at t = steps[i] only
        seeds[torch.arange(n), :, index] = d_end[:, index].transpose(0, 1)
        if n == 1:  # one seed: a plain backward pass (vmap's batching costs more than it saves here)
            g_src, g_tgt = (g[None] for g in torch.autograd.grad(stream, (e_src, e_tgt), seeds[0]))
        else:
            g_src, g_tgt = torch.autograd.grad(stream, (e_src, e_tgt), seeds, is_grads_batched=True)
    return g_src, g_tgt, f.detach()


def _occlusion(model: Transformer, e_src: Tensor, e_tgt: Tensor, produced: Tensor, foil: int | None,
               steps: tuple[int, ...], words: Sequence[Sequence[int]], mask: HeadMask | None,
               between: Callable[[], None] | None = None) -> Attribution:
    S = e_src.size(1)
    words = tuple(tuple(int(i) for i in w) for w in words)
    if sorted(i for w in words for i in w) != list(range(S)):
        raise ValueError(f"occlusion's words must hold each of the {S} source pieces once; got {list(words)}")
    occluded = e_src.repeat(len(words) + 1, 1, 1)  # (W + 1, S, d): the input, then each word at the baseline
    for w, pieces in enumerate(words):
        occluded[w + 1, list(pieces)] = 0.0
    prefix = e_tgt[:, :max(steps) + 1]
    rows = max(1, _OCCLUSION_TOKENS // (S + prefix.size(1)))
    parts = []
    for start in range(0, len(occluded), rows):
        if between is not None and start:
            between()
        part = occluded[start:start + rows]
        parts.append(_scores(model, part, prefix.expand(len(part), -1, -1), produced, foil, steps, mask))
    f = torch.cat(parts).cpu().numpy().astype(np.float64)  # (W + 1, n)
    return Attribution("occlusion", steps, (f[0][None, :] - f[1:]).T, None, f[0], None, foil, words)


# ---- does attention agree with attribution? ----

AGREEMENT_FILE = "agreement.json"  # beside heads.json in a checkpoint folder: `python -m transformer.explain`


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (tied values share their mean rank); None when either side is constant or has
    fewer than 2 values."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):  # ties: their mean rank
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


@dataclass(frozen=True)
class Agreement:
    """How well attention ranks the source words as integrated gradients does, at each step of the model's own
    translations: Spearman's ρ per cross-attention layer and head (and per layer, the mean of its heads), for the
    weights α and for the value-norm weights, each a mean over every step of every sentence."""

    corpus: str
    split: str
    sentences: int
    steps: int  # the steps whose ρ could be computed (≥ 2 source words, neither side constant)
    path_steps: int  # integrated gradients' points on its path
    attention: np.ndarray  # (L, h) mean ρ of α
    value_norm: np.ndarray  # (L, h) mean ρ of the value-norm weights
    layer_attention: np.ndarray  # (L,) mean ρ of the mean of each layer's heads
    layer_value_norm: np.ndarray  # (L,)

    def best(self) -> tuple[str, int, int, float]:
        """The weights ("attention" or "value-norm"), layer and head (from 1) that agree best, and their ρ."""
        weights = "attention" if self.attention.max() >= self.value_norm.max() else "value-norm"
        table = self.attention if weights == "attention" else self.value_norm
        layer, head = np.unravel_index(int(table.argmax()), table.shape)
        return weights, int(layer) + 1, int(head) + 1, float(table[layer, head])

    def to_dict(self) -> dict:
        out = {f: getattr(self, f) for f in ("corpus", "split", "sentences", "steps", "path_steps")}
        for f in ("attention", "value_norm", "layer_attention", "layer_value_norm"):
            out[f] = np.round(getattr(self, f), 4).tolist()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Agreement":
        arrays = ("attention", "value_norm", "layer_attention", "layer_value_norm")
        return cls(**{k: np.asarray(v, dtype=np.float64) if k in arrays else v for k, v in data.items()})


def sentence_agreement(trace, attribution: Attribution, norms: ValueNorms) -> list[tuple[np.ndarray, ...]]:
    """Per step of a trace: ρ between its integrated-gradients source attribution and each cross-attention layer's
    and head's weights over the source words (special pieces left out), as (α (L, h), value-norm (L, h), α of each
    layer's mean (L,), value-norm of each layer's mean (L,)), NaN where ρ is undefined."""
    words = [w for w in word_groups(trace.source_tokens) if not all(trace.source_tokens[j] in SPECIAL for j in w)]
    if len(words) < 2:
        return []
    sums = np.zeros((trace.cross_attn.shape[-1], len(words)))  # (S, W): a word's parts are its pieces' sum
    for w, pieces in enumerate(words):
        sums[pieces, w] = 1.0
    alpha = trace.cross_attn.astype(np.float64)  # (L, h, T, S)
    moved = alpha * norms.cross[:, :, None, :]  # α_ij n_j
    total = moved.sum(-1, keepdims=True)
    moved = np.divide(moved, total, out=np.zeros_like(moved), where=total > 0)  # each head's rows renormalised
    rows = []
    for r, t in enumerate(attribution.steps):
        ig = attribution.source[r] @ sums  # (W,)
        per_head = [np.array([[_rho(m[li, h, t] @ sums, ig) for h in range(m.shape[1])] for li in range(m.shape[0])])
                    for m in (alpha, moved)]
        per_layer = [np.array([_rho(m[li, :, t].mean(0) @ sums, ig) for li in range(m.shape[0])])
                     for m in (alpha, moved)]
        rows.append((*per_head, *per_layer))
    return rows


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    rho = spearman(a, b)
    return np.nan if rho is None else rho


def corpus_agreement(translator: Translator, sources: Sequence[str], corpus: str, split: str,
                     path_steps: int = IG_STEPS, log: Callable[[str], None] | None = None) -> Agreement:
    """Agreement over the model's own (greedy) translations of `sources`."""
    sums, counts, steps = None, None, 0
    for n, text in enumerate(sources, 1):
        trace = translator.translate(text)
        if not trace.output_ids:
            continue
        ig = attribute(translator, trace.source_ids, trace.output_ids, "ig", path_steps=path_steps)
        for row in sentence_agreement(trace, ig, value_norms(translator, trace.source_ids, trace.output_ids)):
            if sums is None:
                sums, counts = [np.zeros_like(x) for x in row], [np.zeros_like(x) for x in row]
            for total, count, x in zip(sums, counts, row):
                total += np.nan_to_num(x)
                count += ~np.isnan(x)
            steps += 1
        if log is not None and (n % 20 == 0 or n == len(sources)):
            log(f"{n}/{len(sources)} sentences, {steps} steps")
    if sums is None:
        raise ValueError("no step of these sentences had two source words to rank")
    means = [total / np.maximum(count, 1) for total, count in zip(sums, counts)]
    return Agreement(corpus, split, len(sources), steps, path_steps, *means)


def write_agreement(folder: str | Path, checkpoint_id: str, agreement: Agreement) -> Path:
    """Add (or replace) one corpus's agreement in the folder's agreement.json, for these weights."""
    folder, path = Path(folder), Path(folder) / AGREEMENT_FILE
    old = read_agreement(folder)
    corpora = {**({a.corpus: a for a in old} if old else {}), agreement.corpus: agreement}
    data = {"checkpoint": checkpoint_id, "weights_sha256": weights_sha256(folder),
            "corpora": {name: a.to_dict() for name, a in corpora.items()}}
    tmp = folder / f".{AGREEMENT_FILE}.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def read_agreement(folder: str | Path) -> list[Agreement] | None:
    """The agreement.json of a checkpoint folder, per corpus; None when there is none, or it is of other weights."""
    path = Path(folder) / AGREEMENT_FILE
    if not path.is_file() or not (Path(folder) / "model.safetensors").is_file():
        return None
    data = json.loads(path.read_text())
    if data.get("weights_sha256") != weights_sha256(folder):
        return None
    return [Agreement.from_dict(a) for a in data["corpora"].values()]


def main(argv: list[str] | None = None) -> Agreement:
    p = argparse.ArgumentParser(
        prog="python -m transformer.explain",
        description="Does attention agree with attribution? Spearman's rho between each cross-attention head's "
                    "weights (and value-norm weights) and integrated gradients over the source words, into "
                    f"CHECKPOINT/{AGREEMENT_FILE}")
    p.add_argument("--checkpoint", required=True, type=Path, help=f"a checkpoint folder; {AGREEMENT_FILE} goes there")
    p.add_argument("--corpus", required=True, metavar="NAME", help="a corpus under --data-root, or a path")
    p.add_argument("--data-root", help="folder of corpora (default: $ANATOMY_DATA_ROOT, ../shared/data)")
    p.add_argument("--split", default="val")
    p.add_argument("--sentences", type=int, default=200, help="the first N sentences of the split")
    p.add_argument("--path-steps", type=int, default=IG_STEPS, help="integrated gradients' points on its path")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    translator, corpus = opened(args.checkpoint, args.corpus, args.data_root)
    try:
        sources = data.read_lines(corpus.path, args.split, translator.checkpoint.source_lang)[:args.sentences]
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    print(f"{args.checkpoint} on {corpus.name} {args.split}: {len(sources)} sentences", flush=True)
    result = corpus_agreement(translator, sources, corpus.name, args.split, args.path_steps,
                              lambda line: print(line, flush=True))
    path = write_agreement(args.checkpoint, translator.checkpoint.id, result)
    weights, layer, head, rho = result.best()
    print(f"best: {weights} of cross-attention layer {layer} head {head}, mean rho {rho:.3f} over {result.steps} "
          f"steps; wrote {path}", flush=True)
    return result


if __name__ == "__main__":
    main()
