"""Which heads a translation needs: for one sentence, and (`python -m transformer.heads`) for a corpus.

For one sentence and the model's own translation of it (teacher-forced, so every head is judged on the same
output):
- ablation: the drop in log p(translation) when that head alone is switched off;
- gradient: |∂ log p / ∂ξ_h| at ξ = 1 (Michel, Levy and Neubig, 2019), one backward pass for every head;
- confidence: the head's mean largest attention weight over the sentence's queries (Voita et al., 2019), the end
  marker's query left out.

For a corpus, Michel et al.'s importance accumulates |∂ L / ∂ξ_h| over N val sentences (their references), and the
pruning curve removes heads one by one, least important first (and, as a control, in a random order), with val
BLEU (greedy) after each removal. The result goes to `heads.json` in the checkpoint folder.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from sacrebleu.metrics import BLEU

from . import data
from .analysis import HeadStats, trace_head_statistics
from .checkpoint import CheckpointError
from .config import ModelConfig
from .device import DEVICES
from .head_mask import HeadMask, HeadRef
from .kinds import KINDS, by_name
from .model import Encoded
from .translator import Trace, Translator, decoder_input

# Ablation rows per forward pass: bounds the memory of opus-mt's 144 heads.
_ROWS_PER_PASS = 64
# The statistics that name a role a head may play (the shares of its attention), for the confidence map's labels.
_ROLES = ("same", "previous", "next", "first", "eos", "monotonic")


@dataclass(frozen=True)
class HeadScores:
    """One number per head of each kind: (layers, heads) arrays, keyed as the kinds are."""

    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray

    def __getitem__(self, kind: str) -> np.ndarray:
        return getattr(self, by_name(kind).name)

    def ranked(self) -> list[tuple[HeadRef, float]]:
        """Every head with its score, largest first (the model's order among equals)."""
        heads = [(HeadRef(kind.name, layer + 1, head + 1), float(value)) for kind in KINDS
                 for (layer, head), value in np.ndenumerate(self[kind.name])]
        return sorted(heads, key=lambda item: -item[1])

    def to_dict(self) -> dict[str, list[list[float]]]:
        return {f.name: np.round(getattr(self, f.name), 6).tolist() for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadScores":
        return cls(**{f.name: np.asarray(data[f.name], dtype=np.float64) for f in fields(cls)})


@dataclass(frozen=True)
class SentenceImportance:
    """How much one translation needs each head (see the module docstring)."""

    log_prob: float  # log p(translation) with every head on
    ablation: HeadScores  # log p drop with that head off (negative: the translation got likelier)
    gradient: HeadScores  # |∂ log p / ∂ξ_h| at ξ = 1
    confidence: HeadScores  # mean largest attention weight, end-marker query left out
    roles: dict[HeadRef, tuple[str, float]]  # each head's largest role statistic, e.g. ("previous", 0.82)


def _one_off_masks(config, kind: str) -> torch.Tensor:
    """(L·h, L, h) gates: row r switches head r of `kind` off."""
    L = config.n_layers(kind)
    n = L * config.n_heads
    return (1 - torch.eye(n)).view(n, L, config.n_heads)


def ablation_log_probs(translator: Translator, source_ids: Sequence[int], output_ids: Sequence[int],
                       between: Callable[[], None] | None = None) -> tuple[float, HeadScores]:
    """log p(output | source) with every head on, and with each head alone switched off, teacher-forced: the
    heads in batches of rows, `between()` called between two batches (where a caller may let other work use the
    model).

    The decoder-side rows share one encoder pass (the encoder is whole in them).
    """
    model, config, device = translator.model, translator.config, translator.device
    h = config.n_heads
    src = torch.tensor([list(source_ids)], device=device)
    target_in = torch.tensor([decoder_input(list(output_ids), config.decoder_start_id)], device=device)
    target_out = torch.tensor(list(output_ids), device=device)
    ones = HeadMask.ones(config, device)
    enc_rows = _one_off_masks(config, "encoder").to(device)  # (E, L_enc, h)
    with torch.inference_mode():
        memory = [model.encode(src).memory]
        for start in range(0, len(enc_rows), _ROWS_PER_PASS):
            if between is not None:
                between()
            rows = enc_rows[start:start + _ROWS_PER_PASS]
            mask = HeadMask(rows, ones.decoder.expand(len(rows), -1, -1), ones.cross.expand(len(rows), -1, -1))
            memory.append(model.encode(src.expand(len(rows), -1), head_mask=mask).memory)
        memory = torch.cat(memory)  # (1 + E, S, d_model): row 0 has every head on
        # Rows of the decoder pass: the encoder-ablated memories with a whole decoder, then the whole encoder's
        # memory with each decoder and cross head off.
        dec_rows, cross_rows = (_one_off_masks(config, k).to(device) for k in ("decoder", "cross"))
        n_enc, n_dec = len(enc_rows), len(dec_rows)
        gates_dec = torch.cat([ones.decoder.expand(1 + n_enc, -1, -1), dec_rows, ones.decoder.expand(n_dec, -1, -1)])
        gates_cross = torch.cat([ones.cross.expand(1 + n_enc + n_dec, -1, -1), cross_rows])
        memory_row = torch.cat([torch.arange(1 + n_enc, device=device),
                                torch.zeros(n_dec + len(cross_rows), dtype=torch.long, device=device)])
        log_probs = []
        for start in range(0, len(memory_row), _ROWS_PER_PASS):
            if between is not None:
                between()
            part = slice(start, start + _ROWS_PER_PASS)
            n = len(memory_row[part])
            mask = HeadMask(ones.encoder.expand(n, -1, -1), gates_dec[part], gates_cross[part])
            logits = model.decode(target_in.expand(n, -1), Encoded(memory[memory_row[part]], None),
                                  head_mask=mask).logits  # (n, T, V)
            chosen = logits.gather(-1, target_out.expand(n, -1)[..., None])[..., 0]  # (n, T)
            # log p of the chosen pieces only: a float64 log-softmax over the whole vocabulary cost more than the pass
            log_probs.append((chosen - logits.logsumexp(-1)).double().sum(-1))
        totals = torch.cat(log_probs).cpu().numpy()  # (1 + E + D + C,)
    base, rest = totals[0], totals[1:]
    sizes = [n_enc, n_dec, len(cross_rows)]
    parts = np.split(rest, np.cumsum(sizes)[:-1])
    return float(base), HeadScores(*(p.reshape(-1, h) for p in parts))


def gradient_importance(translator: Translator, source_ids: Sequence[int], output_ids: Sequence[int]) -> HeadScores:
    """|∂ log p(output | source) / ∂ξ_h| at ξ = 1 for every head, from one backward pass."""
    model, config, device = translator.model, translator.config, translator.device
    src = torch.tensor([list(source_ids)], device=device)
    target_in = torch.tensor([decoder_input(list(output_ids), config.decoder_start_id)], device=device)
    target_out = torch.tensor([list(output_ids)], device=device)
    mask = HeadMask.ones(config, device).requires_grad_()
    with torch.enable_grad():
        logp = model(src, target_in, mask).float().log_softmax(-1)  # (1, T, V)
        total = logp.gather(-1, target_out[..., None]).sum()
        grads = torch.autograd.grad(total, [mask.encoder, mask.decoder, mask.cross])
    return HeadScores(*(g.abs().cpu().numpy().astype(np.float64) for g in grads))


def confidence(trace: Trace) -> HeadScores:
    """Each head's mean largest attention weight over the trace's queries, the end marker's query left out."""
    scores = []
    for kind in KINDS:
        maps = trace.attention(kind.name)
        weights = np.asarray(maps.weights, dtype=np.float64)  # (L, h, Tq, Tk)
        keep = [i for i in range(weights.shape[2]) if not _is_eos(trace, kind, i)] or list(range(weights.shape[2]))
        scores.append(weights[:, :, keep].max(-1).mean(-1) if keep else np.zeros(weights.shape[:2]))
    return HeadScores(*scores)


def _is_eos(trace: Trace, kind, i: int) -> bool:
    """Query i is the end marker: the source's last piece, or the decoder position that produced EOS."""
    ids = trace.source_ids if kind.queries == "source" else trace.output_ids
    return i < len(ids) and ids[i] == trace.eos_id


def roles(stats: Sequence[HeadStats]) -> dict[HeadRef, tuple[str, float]]:
    """Each head's largest role statistic (a share of its attention, or its monotonicity), e.g. ("previous", 0.82)."""
    out = {}
    for s in stats:
        values = [(name, getattr(s, name)) for name in _ROLES if getattr(s, name) is not None]
        out[HeadRef(s.kind, s.layer, s.head)] = max(values, key=lambda item: item[1])
    return out


def sentence_importance(translator: Translator, trace: Trace,
                        between: Callable[[], None] | None = None) -> SentenceImportance:
    """Ablation, gradient and confidence maps of every head for a trace's translation (of its own model); `between()`
    called between two passes."""
    base, ablated = ablation_log_probs(translator, trace.source_ids, trace.output_ids, between)
    drop = HeadScores(*(base - ablated[kind.name] for kind in KINDS))
    if between is not None:
        between()
    return SentenceImportance(base, drop, gradient_importance(translator, trace.source_ids, trace.output_ids),
                              confidence(trace), roles(trace_head_statistics(trace)))


# The corpus level: Michel et al.'s importance over val sentences, the pruning curves it orders, heads.json.

HEADS_FILE = "heads.json"
# Sentences per backward pass: the (B, T, vocab) log-softmax of a batch of long newstest sentences stays < 1 GB.
_IMPORTANCE_BATCH = 16
# A pruning curve ends once BLEU has stayed below this (and 1 below the full model's) for _ZERO_RUN removals in a
# row: by then the model writes nothing a reference shares, and each further greedy pass only costs time (degenerate
# outputs run to the length limit).
_NEAR_ZERO_BLEU = 0.5
_ZERO_RUN = 3


@dataclass(frozen=True)
class PruningCurve:
    """Val BLEU as heads are switched off one by one in `order`: bleu[k] with the first k off (bleu[0]: every head
    on). Shorter than len(order) + 1 when BLEU stayed near 0 and the rest was not computed."""

    order: list[HeadRef]
    bleu: list[float]

    @property
    def removable(self) -> int:
        """Heads removed before BLEU first drops ≥ 1 below the full model's (all computed, when it never does)."""
        first_drop = next((k for k, b in enumerate(self.bleu) if b <= self.bleu[0] - 1), len(self.bleu))
        return first_drop - 1

    def to_dict(self) -> dict:
        return {"order": [str(h) for h in self.order], "bleu": self.bleu, "removable": self.removable}

    @classmethod
    def from_dict(cls, data: dict) -> "PruningCurve":
        return cls(HeadMask.refs(",".join(data["order"])), [float(b) for b in data["bleu"]])


@dataclass(frozen=True)
class CorpusImportance:
    """Michel et al.'s importance of every head over the first `sentences` pairs of a corpus's split, and the
    pruning curves: least important first, and a random order as the control."""

    corpus: str
    split: str
    sentences: int
    raw: HeadScores  # Σ_x |∂ log p(reference_x | x) / ∂ξ_h| at ξ = 1
    normalized: HeadScores  # raw over its ℓ2 norm across the heads of the same layer and kind (Michel et al.)
    ranked_by: str  # "raw" or "normalized": which of the two orders by_importance
    by_importance: PruningCurve  # least important first
    random: PruningCurve
    seed: int  # the random order's
    signature: str  # sacreBLEU's, of every BLEU in the curves (greedy decoding)

    @property
    def full_bleu(self) -> float:
        return self.by_importance.bleu[0]

    @property
    def removable(self) -> int:
        """Heads that go, least important first, before val BLEU is 1 below the full model's."""
        return self.by_importance.removable

    def to_dict(self) -> dict:
        return {"corpus": self.corpus, "split": self.split, "sentences": self.sentences, "seed": self.seed,
                "signature": self.signature, "full_bleu": self.full_bleu, "removable": self.removable,
                "ranked_by": self.ranked_by,
                "importance": {"raw": self.raw.to_dict(), "normalized": self.normalized.to_dict()},
                "orders": {"importance": self.by_importance.to_dict(), "random": self.random.to_dict()}}

    @classmethod
    def from_dict(cls, data: dict) -> "CorpusImportance":
        return cls(data["corpus"], data["split"], int(data["sentences"]),
                   HeadScores.from_dict(data["importance"]["raw"]),
                   HeadScores.from_dict(data["importance"]["normalized"]), data["ranked_by"],
                   PruningCurve.from_dict(data["orders"]["importance"]),
                   PruningCurve.from_dict(data["orders"]["random"]), int(data["seed"]), data["signature"])


@dataclass(frozen=True)
class HeadsFile:
    """heads.json: one checkpoint's results, per corpus (in the order they were first computed)."""

    checkpoint: str  # the id it was computed from
    weights_sha256: str  # of its model.safetensors: results of other weights are stale
    corpora: dict[str, CorpusImportance]

    def to_dict(self) -> dict:
        return {"checkpoint": self.checkpoint, "weights_sha256": self.weights_sha256,
                "corpora": {name: result.to_dict() for name, result in self.corpora.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadsFile":
        return cls(data["checkpoint"], data["weights_sha256"],
                   {name: CorpusImportance.from_dict(r) for name, r in data["corpora"].items()})


def weights_sha256(folder: str | Path) -> str:
    return hashlib.sha256((Path(folder) / "model.safetensors").read_bytes()).hexdigest()


def read_heads(folder: str | Path) -> HeadsFile | None:
    """The heads.json of a checkpoint folder; None when there is none, or it belongs to other weights."""
    path = Path(folder) / HEADS_FILE
    if not path.is_file() or not (Path(folder) / "model.safetensors").is_file():
        return None
    heads = HeadsFile.from_dict(json.loads(path.read_text()))
    return heads if heads.weights_sha256 == weights_sha256(folder) else None


def corpus_importance(checkpoint_dir: str | Path, corpus: str | None = None) -> CorpusImportance | None:
    """A checkpoint folder's corpus importance from its heads.json: that of `corpus`, else the first one computed;
    None when there is none for these weights. Hashes the weights (~16 MB for a general model) on every call; a Hub
    model's folder is the one `checkpoint.resolve` downloads to (heads.json is among the files it fetches)."""
    heads = read_heads(checkpoint_dir)
    if heads is None or not heads.corpora:
        return None
    return heads.corpora.get(corpus) if corpus else next(iter(heads.corpora.values()))


def write_heads(folder: str | Path, checkpoint_id: str, result: CorpusImportance) -> HeadsFile:
    """Add (or replace) one corpus's result in the folder's heads.json, keeping the other corpora of the same
    weights."""
    folder = Path(folder)
    old = read_heads(folder)
    corpora = {**(old.corpora if old else {}), result.corpus: result}
    heads = HeadsFile(checkpoint_id, weights_sha256(folder), corpora)
    tmp = folder / f".{HEADS_FILE}.tmp"
    tmp.write_text(json.dumps(heads.to_dict(), indent=1) + "\n")
    os.replace(tmp, folder / HEADS_FILE)
    return heads


def reference_pairs(translator: Translator, sources: Sequence[str],
                    references: Sequence[str]) -> list[tuple[list[int], list[int]]]:
    """(source ids, reference output ids) as the model reads and would produce them: EOS-ended, within max_len."""
    config = translator.config
    return [(translator.encode_source(s)[0],
             translator.tokenizer.encode_target(r)[:config.max_len - 1] + [config.eos_id])
            for s, r in zip(sources, references)]


def corpus_gradient_importance(translator: Translator, pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
                               batch_size: int = _IMPORTANCE_BATCH) -> HeadScores:
    """Σ over the pairs of |∂ log p(output | source) / ∂ξ_h| at ξ = 1, teacher-forced: each sentence's own
    gradient (gradient_importance), from padded batches whose rows have gates of their own."""
    model, config, device = translator.model, translator.config, translator.device
    ones = HeadMask.ones(config, device)
    totals = [torch.zeros_like(g, dtype=torch.float64) for g in (ones.encoder, ones.decoder, ones.cross)]
    # Batches of similar lengths pad little.
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    for start in range(0, len(order), batch_size):
        rows = [pairs[i] for i in order[start:start + batch_size]]
        src = data.pad([list(s) for s, _ in rows], config.pad_id).to(device)  # (B, S)
        target_in = data.pad([decoder_input(list(o), config.decoder_start_id) for _, o in rows],
                             config.pad_id).to(device)  # (B, T)
        target_out = data.pad([list(o) for _, o in rows], config.pad_id).to(device)  # (B, T)
        real = torch.arange(target_out.size(1), device=device) < torch.tensor([len(o) for _, o in rows],
                                                                               device=device)[:, None]  # (B, T)
        B = len(rows)
        mask = HeadMask(*(g.expand(B, -1, -1).clone() for g in (ones.encoder, ones.decoder, ones.cross)))
        mask.requires_grad_()  # (B, layers, h) leaves: row b's gradient is sentence b's alone
        with torch.enable_grad():
            logp = model(src, target_in, mask).float().log_softmax(-1)  # (B, T, V)
            total = (logp.gather(-1, target_out[..., None])[..., 0] * real).sum()
            grads = torch.autograd.grad(total, [mask.encoder, mask.decoder, mask.cross])
        for acc, g in zip(totals, grads):
            acc += g.abs().sum(0).double()
    return HeadScores(*(t.cpu().numpy() for t in totals))


def layer_normalized(scores: HeadScores) -> HeadScores:
    """Each layer's scores (per kind) over their ℓ2 norm, as Michel et al. normalise before ranking across layers."""
    out = []
    for kind in KINDS:
        values = scores[kind.name]  # (layers, h)
        norm = np.linalg.norm(values, axis=1, keepdims=True)  # (layers, 1)
        out.append(np.divide(values, norm, out=np.zeros_like(values), where=norm > 0))
    return HeadScores(*out)


def importance_order(scores: HeadScores) -> list[HeadRef]:
    """Every head, least important first (the model's order among equals)."""
    return [head for head, _ in sorted(scores.ranked(), key=lambda item: item[1])]


def random_order(scores: HeadScores, seed: int) -> list[HeadRef]:
    """Every head of `scores`' shape in a random order, the same for the same seed."""
    heads = [HeadRef(kind.name, layer + 1, head + 1) for kind in KINDS
             for (layer, head), _ in np.ndenumerate(scores[kind.name])]
    random.Random(seed).shuffle(heads)
    return heads


def greedy_bleu(translator: Translator, sources: Sequence[str], references: Sequence[str], head_mask: HeadMask,
                batch_size: int = 64) -> tuple[float, str]:
    """sacreBLEU (as transformer.evaluate scores) of the greedy translations with `head_mask`, and its signature."""
    hyps = translator.translate_batch(list(sources), batch_size=batch_size, head_mask=head_mask)
    bleu = BLEU()
    return round(bleu.corpus_score(hyps, [list(references)]).score, 4), str(bleu.get_signature())


def pruned_bleu(order: Sequence[HeadRef], bleu_of: Callable[[HeadMask], float], config: ModelConfig,
                log: Callable[[str], None] = print, label: str = "") -> PruningCurve:
    """BLEU with the first k heads of `order` off, k = 0, 1, ...; ends early once BLEU stays near 0."""
    mask = HeadMask.ones(config)
    bleu = [bleu_of(mask)]
    for k, head in enumerate(order, 1):
        started = time.monotonic()
        mask = mask.off(head.kind, head.layer, head.head)
        bleu.append(bleu_of(mask))
        log(f"{label}{k}/{len(order)} heads off (last {head}): BLEU {bleu[-1]:.2f} "
            f"({time.monotonic() - started:.1f} s)")
        if len(bleu) > _ZERO_RUN and max(bleu[-_ZERO_RUN:]) < min(_NEAR_ZERO_BLEU, bleu[0] - 1):
            log(f"{label}BLEU below {_NEAR_ZERO_BLEU} for {_ZERO_RUN} removals: the curve ends here")
            break
    return PruningCurve(list(order), bleu)


def corpus_heads(translator: Translator, corpus: str, split: str, sources: Sequence[str],
                 references: Sequence[str], seed: int = 0, batch_size: int = 64, rank_by: str = "raw",
                 log: Callable[[str], None] = print) -> CorpusImportance:
    """Importance of every head over the pairs, and the pruning curves (greedy val BLEU): least important first by
    the `rank_by` importance ("raw" or "normalized"), and in a random order."""
    started = time.monotonic()
    raw = corpus_gradient_importance(translator, reference_pairs(translator, sources, references))
    normalized = layer_normalized(raw)
    log(f"importance over {len(sources)} sentences: {time.monotonic() - started:.1f} s")
    scored: dict[str, tuple[float, str]] = {}  # by the mask's link form: every head on (k = 0) is scored once

    def bleu_of(mask: HeadMask) -> float:
        if str(mask) not in scored:
            scored[str(mask)] = greedy_bleu(translator, sources, references, mask, batch_size)
        return scored[str(mask)][0]

    curves = [pruned_bleu(order, bleu_of, translator.config, log, f"{corpus} {name} order: ")
              for name, order in (("importance", importance_order(normalized if rank_by == "normalized" else raw)),
                                  ("random", random_order(raw, seed)))]
    signature = next(iter(scored.values()))[1]
    return CorpusImportance(corpus, split, len(sources), raw, normalized, rank_by, *curves, seed, signature)


def opened(checkpoint: Path, corpus: str, data_root: str | None,
           device: str = "cpu") -> tuple[Translator, data.CorpusSpec]:
    """A corpus command's checkpoint folder, loaded, and its corpus (`data.parse_corpus`); SystemExit saying why
    when either cannot be read."""
    try:
        if not checkpoint.is_dir():
            raise FileNotFoundError(f"checkpoint folder {checkpoint} does not exist")
        return Translator.from_checkpoint(checkpoint, device=device), data.parse_corpus(corpus, data_root)
    except (ValueError, FileNotFoundError, CheckpointError) as err:
        raise SystemExit(f"error: {err}") from None


def main(argv: list[str] | None = None) -> CorpusImportance:
    p = argparse.ArgumentParser(
        prog="python -m transformer.heads",
        description="Corpus head importance (Michel et al., 2019) and pruning curves, into CHECKPOINT/heads.json")
    p.add_argument("--checkpoint", required=True, type=Path, help="a checkpoint folder; heads.json is written there")
    p.add_argument("--corpus", required=True, metavar="NAME", help="a corpus under --data-root, or a path")
    p.add_argument("--data-root", help="folder of corpora (default: $ANATOMY_DATA_ROOT, ../shared/data)")
    p.add_argument("--split", default="val")
    p.add_argument("--sentences", type=int, default=500, help="the first N pairs of the split")
    p.add_argument("--seed", type=int, default=0, help="of the random removal order")
    p.add_argument("--rank-by", choices=("raw", "normalized"), default="raw",
                   help="the importance that orders removal: raw, or over each layer's ℓ2 norm as Michel et al. "
                        "(on the general models that lost 1 BLEU sooner)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per greedy batch")
    p.add_argument("--device", default="cpu", choices=DEVICES)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    translator, corpus = opened(args.checkpoint, args.corpus, args.data_root, args.device)
    ck = translator.checkpoint
    try:
        sources, references = data.read_pairs(corpus.path, args.split, ck.source_lang, ck.target_lang)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    n, c = min(args.sentences, len(sources)), translator.config
    print(f"{args.checkpoint} on {corpus.name} {args.split}: {n} sentences, "
          f"{c.n_heads * (c.n_encoder_layers + 2 * c.n_decoder_layers)} heads", flush=True)
    result = corpus_heads(translator, corpus.name, args.split, sources[:n], references[:n], args.seed,
                          args.batch_size, args.rank_by, lambda line: print(line, flush=True))
    heads = write_heads(args.checkpoint, ck.id, result)
    print(f"full model BLEU {result.full_bleu:.2f}; {result.removable} heads removable with < 1 BLEU lost "
          f"(random order: {result.random.removable}); wrote {args.checkpoint / HEADS_FILE} "
          f"({', '.join(heads.corpora)})", flush=True)
    return result


if __name__ == "__main__":
    main()
