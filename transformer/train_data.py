"""The data pipeline of a training run: the corpora of the mix, their val sets, the tokenizer, the training text
as token ids, and each epoch's steps."""
from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, replace
from pathlib import Path

from . import checkpoint, data
from .tokenizer import Tokenizer
from .train_ranks import Ranks

# Seeds of an epoch's draws: seed · stride + epoch, so each (seed, epoch) draws its own pairs and batches.
MIX_SEED_STRIDE = 1_000_003
BATCH_SEED_STRIDE = 1000
DEFAULT_MAX_TOKENS = 2500  # padded tokens per batch and device, without --max-tokens or --tokens-per-batch


def mix_rng(seed: int, epoch: int) -> random.Random:
    """Draws an epoch's pairs from the mix."""
    return random.Random(seed * MIX_SEED_STRIDE + epoch)


def steps_of_epoch(args: argparse.Namespace, epoch: int, sizes: list[int], weights: list[float],
                   src_lengths: list[int], tgt_lengths: list[int], parts: int) -> list[list[int]]:
    """The steps of an epoch as index lists of the whole step (every rank's share): the same lists on any
    number of ranks, so a run resumes anywhere (and its token count can be replayed from its seed)."""
    drawn = data.draw_mix(sizes, weights, mix_rng(args.seed, epoch))
    seed = args.seed * BATCH_SEED_STRIDE + epoch
    s, t = [src_lengths[i] for i in drawn], [tgt_lengths[i] for i in drawn]
    batches = (data.target_token_batches(s, t, args.tokens_per_batch, seed) if args.tokens_per_batch
               else data.token_batches(s, t, (args.max_tokens or DEFAULT_MAX_TOKENS) * parts, seed))
    return [[drawn[i] for i in b] for b in batches]


def resolve_corpora(args: argparse.Namespace) -> list[data.CorpusSpec]:
    if not args.corpus:  # one corpus, read as before the mixes existed
        path = data.resolve_data_dir(args.data_dir)
        return [data.CorpusSpec(path.resolve().name, path)]
    if args.data_dir:
        raise SystemExit("give either --corpus (with --data-root) or --data-dir, not both")
    try:
        corpora = [data.parse_corpus(text, args.data_root) for text in args.corpus]
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise SystemExit(f"a corpus is named twice in {names}; give each once, with a weight")
    for c in corpora:
        if not c.has_split("train", args.src, args.tgt):
            raise SystemExit(f"error: {c.path} has no train.{args.src}.gz and train.{args.tgt}.gz")
    return corpora


@dataclass(frozen=True)
class ValSet:
    """A corpus's val pairs: the text, and once there is a tokenizer, the token ids the val loss reads."""

    name: str
    sources: list[str]
    references: list[str]
    src_ids: list[list[int]] | None = None
    tgt_ids: list[list[int]] | None = None

    def encoded(self, tokenizer: Tokenizer, limit: int) -> ValSet:
        return replace(self, src_ids=[s[:limit] for s in tokenizer.encode_batch(self.sources)],
                       tgt_ids=[t[:limit] for t in tokenizer.encode_batch(self.references)])


def read_vals(args: argparse.Namespace, corpora: list[data.CorpusSpec]) -> list[ValSet]:
    """The val sets the model is selected on: every corpus of a mix that has one (a lone corpus must)."""
    vals = []
    for corpus in corpora:
        if not args.corpus or corpus.has_split("val", args.src, args.tgt):
            vs, vt = data.read_pairs(corpus.path, "val", args.src, args.tgt)
            vals.append(ValSet(corpus.name, vs[:args.max_val_pairs or None], vt[:args.max_val_pairs or None]))
    if not vals:
        raise SystemExit("no corpus of the mix has a val split: nothing to select the model on")
    return vals


def load_tokenizer(args: argparse.Namespace, corpora: list[data.CorpusSpec], start: checkpoint.Checkpoint | None,
                   path: Path, ranks: Ranks) -> Tokenizer:
    """The run's tokenizer: the one it saved, else --init-from's, else learnt on rank 0 from the first epoch's
    draw of the mix (the same pairs the model trains on first); every rank gets rank 0's."""
    proto = None
    if ranks.main:
        if path.exists():
            proto = path.read_bytes()
        else:
            tokenizer = start.tokenizer if start is not None else _learn_tokenizer(args, corpora)
            tokenizer.save(path)
            proto = tokenizer.proto
    return Tokenizer(ranks.share(proto))


def _learn_tokenizer(args: argparse.Namespace, corpora: list[data.CorpusSpec]) -> Tokenizer:
    texts = [data.read_pairs(c.path, "train", args.src, args.tgt) for c in corpora]
    texts = [(s[:args.max_train_pairs or None], t[:args.max_train_pairs or None]) for s, t in texts]
    train_src, train_tgt = sum((s for s, _ in texts), []), sum((t for _, t in texts), [])
    first = data.draw_mix([len(s) for s, _ in texts], [c.weight for c in corpora], mix_rng(args.seed, 0))
    return Tokenizer.train([train_src[i] for i in first] + [train_tgt[i] for i in first], vocab_size=args.vocab_size)


@dataclass(frozen=True)
class CorpusShare:
    """A corpus's part in the mix, as the checkpoint's training.corpora lists it."""

    name: str
    weight: float
    train_pairs: int
    pairs_per_epoch: int
    val_pairs: int


@dataclass(frozen=True)
class TrainingData:
    """The training pairs of every corpus, one index space (corpus after corpus), as memory-mapped token ids;
    and the val sets (encoded on rank 0, which alone evaluates)."""

    corpora: list[data.CorpusSpec]
    sizes: list[int]  # training pairs of each corpus
    src: data.TokenIds
    tgt: data.TokenIds
    vals: list[ValSet]

    @classmethod
    def load(cls, args: argparse.Namespace, corpora: list[data.CorpusSpec], vals: list[ValSet],
             tokenizer: Tokenizer, max_len: int, ranks: Ranks) -> TrainingData:
        limit = max_len - 1  # room for EOS / BOS
        src, src_counts = _token_ids(args, corpora, tokenizer, limit, args.src, ranks)
        tgt, tgt_counts = _token_ids(args, corpora, tokenizer, limit, args.tgt, ranks)
        for c, a, b in zip(corpora, src_counts, tgt_counts):
            if a != b:
                raise SystemExit(f"error: {c.path} has {a} train.{args.src} lines but {b} train.{args.tgt} lines")
        if ranks.main:
            vals = [v.encoded(tokenizer, limit) for v in vals]
        return cls(corpora, src_counts, src, tgt, vals)

    def epoch_steps(self, args: argparse.Namespace, epoch: int, parts: int) -> list[list[int]]:
        return steps_of_epoch(args, epoch, self.sizes, [c.weight for c in self.corpora], self.src.lengths,
                              self.tgt.lengths, parts)

    def target_tokens(self, pairs: list[int]) -> int:
        """Non-pad target tokens of these pairs (EOS included): what the loss is summed over."""
        return sum(self.tgt.lengths[i] + 1 for i in pairs)

    def deal(self, pairs: list[int], parts: int) -> list[list[int]]:
        return data.deal(pairs, self.tgt.lengths, parts)

    def batch(self, pairs: list[int]) -> data.Batch:
        return data.make_batch([self.src[i] for i in pairs], [self.tgt[i] for i in pairs])

    def mix(self) -> list[CorpusShare]:
        val_pairs = {v.name: len(v.references) for v in self.vals}
        return [CorpusShare(c.name, c.weight, n, round(c.weight * n), val_pairs.get(c.name, 0))
                for c, n in zip(self.corpora, self.sizes)]


def _token_ids(args: argparse.Namespace, corpora: list[data.CorpusSpec], tokenizer: Tokenizer, limit: int,
               lang: str, ranks: Ranks) -> tuple[data.TokenIds, list[int]]:
    """The training side in `lang`, tokenized once per machine into --cache-dir (the first process of each
    machine writes it, the others wait and map it); and each corpus's line count."""
    files = [data.ensure_file(c.path, "train", lang) for c in corpora]

    def build() -> tuple[data.TokenIds, list[int]]:
        return data.cached_token_ids(files, tokenizer.encode_batch, tokenizer.proto, limit,
                                     Path(args.cache_dir).expanduser(), args.max_train_pairs)
    if ranks.local_rank == 0:
        build()
    ranks.barrier()
    return build()
