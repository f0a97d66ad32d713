"""Train a translation model: `python -m transformer.train --src de --tgt en --out checkpoints/NAME`.

On one corpus (`--data-dir`, Multi30k by default) or on a weighted mix (`--corpus NAME[:W]`,
repeated). Resumable: the run directory (default runs/NAME, never committed) holds the
optimizer, EMA, RNG and position within the epoch, saved atomically every few minutes and
after each epoch. Only the best model on val BLEU (its EMA weights; the mean over the
corpora that have a val split) is written to --out.

This module holds the command line, the learning-rate schedule and the loop (`Run`); the loop's parts are
train_data (corpora, tokenizer, token ids, val sets, each epoch's steps), train_step (one optimizer step: autocast,
DDP, accumulation, clipping, EMA), train_eval (validation, metrics.jsonl, the best checkpoint), train_state (the
weights, the position, state.pt) and train_ranks (torchrun's processes).
"""
from __future__ import annotations

import argparse
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from . import data
from .checkpoint import Checkpoint, lineage
from .config import PRESETS, ModelConfig
from .train_data import DEFAULT_MAX_TOKENS, TrainingData, load_tokenizer, read_vals, resolve_corpora
from .train_eval import EpochStats, Evaluation
from .train_ranks import Ranks, join_ranks, say
from .train_state import Position, RunState, Weights, load_start, stop_signals
from .train_step import Trainer, autocast_dtype, native_bf16
from .translator import Translator

# The names other modules and tests import from transformer.train.
__all__ = ["main", "build_parser", "parse_duration", "parse_count", "model_config", "learning_rate", "Ranks",
           "join_ranks", "native_bf16", "autocast_dtype", "resolve_corpora", "stop_signals"]

PROGRESS_EVERY = 50  # steps between progress lines under --no-progress
BUDGET_EPOCHS = 10_000  # with a time or token budget, the budget ends the run, not the epoch count


def parse_duration(text: str) -> float:
    """'85m', '2h', '90s', '1h30m' or plain seconds -> seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"bad duration {text!r}; use e.g. 85m, 2h, 1h30m, 300s")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def parse_count(text: str) -> int:
    """'29M', '500k', '1.5G' or a plain number -> a count."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([kMG]?)", text)
    if not found:
        raise argparse.ArgumentTypeError(f"bad count {text!r}; use e.g. 29M, 500k, 120000")
    return round(float(found.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[found.group(2)])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m transformer.train", description=__doc__.split("\n")[0])
    p.add_argument("--src", required=True, choices=data.LANGUAGES)
    p.add_argument("--tgt", required=True, choices=data.LANGUAGES)
    p.add_argument("--corpus", action="append", metavar="NAME[:W]",
                   help="a corpus of the mix (repeatable): a folder under the data root, or a path; W "
                        "(default 1) draws round(W·N) of its N training pairs each epoch")
    p.add_argument("--data-root", help="folder of corpora for --corpus (default: $ANATOMY_DATA_ROOT, "
                                       "../shared/data)")
    p.add_argument("--data-dir", help="without --corpus: one folder with {split}.{lang}.gz (default: "
                                      "$ANATOMY_DATA_DIR, ../shared/data/multi30k, else downloaded)")
    p.add_argument("--domain", help="what the model is for, shown in the app (e.g. 'everyday')")
    p.add_argument("--out", required=True, help="checkpoint folder to write, e.g. checkpoints/multi30k-de-en")
    p.add_argument("--run-dir", help="resume state folder (default runs/<name of --out>)")
    p.add_argument("--init-from", metavar="CHECKPOINT", help="start from this checkpoint's weights and tokenizer "
                   "(a fresh optimizer and schedule); the model options must describe the same model")
    p.add_argument("--preset", choices=sorted(PRESETS), default="small")
    p.add_argument("--d-model", type=int)
    p.add_argument("--n-heads", type=int)
    p.add_argument("--d-ff", type=int)
    p.add_argument("--layers", type=int, help="encoder and decoder layers each")
    p.add_argument("--dropout", type=float)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint SentencePiece vocabulary")
    p.add_argument("--time-budget", type=parse_duration, help="stop after this much training, e.g. 85m; "
                                                              "the learning rate decays to 0 over it")
    p.add_argument("--token-budget", type=parse_count, help="stop after this many target tokens (non-pad, EOS "
                   "included) in this run, e.g. 29M; the learning rate decays to 0 over them: a schedule that "
                   "does not depend on what else shares the machine")
    p.add_argument("--epochs", type=int, default=10, help="epochs when no budget is given (else the most)")
    p.add_argument("--max-tokens", type=int, help=f"padded tokens per batch and device (default {DEFAULT_MAX_TOKENS})")
    p.add_argument("--tokens-per-batch", type=int, help="non-pad target tokens per optimizer step, summed over "
                   "devices and --accumulate micro-batches (the paper: 25000); instead of --max-tokens")
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step on each device")
    p.add_argument("--schedule", choices=("linear", "paper"), default="linear",
                   help="linear: warmup to --lr, then linear decay to 0 at the end; paper: "
                   "d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) (--lr unused)")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                   help="autocast dtype; auto: bf16 on GPUs and CPUs that run it natively, else fp32 (fp16 adds a "
                        "gradient scaler)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model for training")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=400, help="linear warmup steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="gradient norm clip")
    p.add_argument("--ema-decay", type=float, default=0.998, help="EMA of weights; 0 disables")
    p.add_argument("--save-every", type=parse_duration, default=300.0, help="resume-state interval")
    p.add_argument("--cache-dir", default=os.environ.get("ANATOMY_TOKEN_CACHE", str(data.CACHE_DIR.parent / "tokens")),
                   help="where the training text is tokenized to, once per machine, and memory-mapped from "
                   "(default $ANATOMY_TOKEN_CACHE, else ~/.cache/transformer-anatomy/tokens)")
    p.add_argument("--max-train-pairs", type=int, help="use only the first N training pairs of each corpus")
    p.add_argument("--max-val-pairs", type=int, help="use only the first N val pairs of each corpus")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p


def model_config(args: argparse.Namespace, vocab_size: int) -> ModelConfig:
    fields = {**ModelConfig().to_dict(), **PRESETS[args.preset], "vocab_size": vocab_size,
              "max_len": args.max_len, "norm_first": args.norm_first}
    for name, value in (("d_model", args.d_model), ("n_heads", args.n_heads), ("d_ff", args.d_ff),
                        ("n_encoder_layers", args.layers), ("n_decoder_layers", args.layers),
                        ("dropout", args.dropout)):
        if value is not None:
            fields[name] = value
    return ModelConfig.from_dict(fields)


def learning_rate(args: argparse.Namespace, step: int, progress: float, d_model: int = 512) -> float:
    """linear: warmup, then linear decay to 0 at the end of the budget (progress in [0, 1]); paper: eq. 3 of the
    paper, from step 1."""
    if args.schedule == "paper":
        n = step + 1
        return d_model ** -0.5 * min(n ** -0.5, n * args.warmup ** -1.5)
    return args.lr * min(1.0, (step + 1) / args.warmup) * max(0.0, 1.0 - progress)


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.src == args.tgt:
        raise SystemExit("--src and --tgt must differ")
    if args.max_tokens and args.tokens_per_batch:
        raise SystemExit("give either --max-tokens or --tokens-per-batch, not both")
    if args.accumulate < 1:
        raise SystemExit("--accumulate must be at least 1")
    if args.time_budget and args.token_budget:
        raise SystemExit("give either --time-budget or --token-budget, not both")
    torch.set_num_threads(args.threads)
    ranks, device = join_ranks(args.device)
    try:
        result = _train(args, ranks, device)
        # Gloo can abort a process that tears down while a peer still talks to it (rank 0 saving its state):
        # leave together.
        ranks.barrier()
        return result
    finally:
        if ranks.world > 1:
            dist.destroy_process_group()


def _train(args: argparse.Namespace, ranks: Ranks, device: torch.device) -> dict:
    out = Path(args.out)
    run_dir = Path(args.run_dir or Path("runs") / out.name)
    if ranks.main:
        run_dir.mkdir(parents=True, exist_ok=True)
    corpora = resolve_corpora(args)
    vals = read_vals(args, corpora)
    start = load_start(args)
    tokenizer = load_tokenizer(args, corpora, start, run_dir / "tokenizer.model", ranks)
    config = model_config(args, tokenizer.vocab_size)
    if start is not None and start.config != config:
        raise SystemExit(f"error: --init-from {args.init_from} holds {start.config}, but the options describe "
                         f"{config}; give the options it was trained with")
    pipeline = TrainingData.load(args, corpora, vals, tokenizer, config.max_len, ranks)
    weights = Weights.create(args, config, start, device)
    state = RunState(run_dir / "state.pt", ranks)
    position = state.resume(weights)
    if position is None and ranks.main:
        (run_dir / "metrics.jsonl").write_text("")
    trainer = Trainer(args, weights, pipeline, ranks, device)
    say(f"model: {weights.model.num_parameters():,} parameters, {config}")
    for share in pipeline.mix():
        say(f"corpus {share.name}: {share.train_pairs} train pairs × {share.weight:g} -> {share.pairs_per_epoch} "
            f"per epoch; {share.val_pairs} val pairs")
    say(f"device {device}, {ranks.world} process(es) × {args.accumulate} micro-batch(es) per step, "
        f"autocast {trainer.amp or 'off'}")
    translator = Translator(Checkpoint(weights.ema, tokenizer, args.src, args.tgt, str(out)), device)
    evaluation = Evaluation(args, run_dir / "metrics.jsonl", pipeline, translator,
                            lineage(start.meta) if start else [], trainer.autocast, ranks)
    run = Run(args, ranks, pipeline, trainer, state, evaluation, position or Position())
    with stop_signals() as stop_requested:  # a signal arrived: save the position and leave after this step
        return run.train(stop_requested)


@dataclass
class Run:
    """The training loop: epochs of optimizer steps, each epoch evaluated and saved, until the epochs or the
    time budget run out."""

    args: argparse.Namespace
    ranks: Ranks
    data: TrainingData
    trainer: Trainer
    state: RunState
    evaluation: Evaluation
    position: Position

    @property
    def max_epochs(self) -> int:
        return BUDGET_EPOCHS if self.args.time_budget or self.args.token_budget else self.args.epochs

    def out_of_time(self) -> bool:
        """The time or token budget is spent."""
        return self.progress(1) >= 1.0 if self.args.time_budget or self.args.token_budget else False

    def train(self, stop_requested: list[int]) -> dict:
        """Trains to the end; the last epoch's metrics."""
        pos, result = self.position, {}
        if self.args.token_budget and pos.target_tokens is None:
            raise SystemExit(f"{self.state.path} was saved before runs counted their tokens: use --time-budget")
        if self.out_of_time():
            say("the budget is already spent; give a larger --time-budget or --token-budget to go on")
        while pos.epoch < self.max_epochs and not self.out_of_time():
            steps = self.data.epoch_steps(self.args, pos.epoch, self.trainer.parts)
            stats = self.train_epoch(steps, stop_requested)
            result = self.evaluation.end_epoch(stats, pos, len(steps))
            pos.epoch += 1
            pos.batch = 0
            pos.best_bleu = self.ranks.share(pos.best_bleu)
            self.state.save(self.trainer.weights, pos)
            if stats.out_of_time:
                break
        return result

    def train_epoch(self, steps: list[list[int]], stop_requested: list[int]) -> EpochStats:
        """The epoch's steps from the position on; leaves the process when a signal asked it to stop."""
        args, pos = self.args, self.position
        loss_sum, tokens, seconds, rank_tokens, lr = 0.0, 0, 0.0, [0] * self.ranks.world, None
        self.trainer.net.train()
        bar = tqdm(total=len(steps), initial=pos.batch, disable=args.no_progress or not self.ranks.main,
                   desc=f"epoch {pos.epoch + 1}", dynamic_ncols=True)
        while pos.batch < len(steps):
            lr = learning_rate(args, pos.step, self.progress(len(steps)), self.trainer.weights.model.config.d_model)
            step = self.trainer.step(pos.step, steps[pos.batch], lr, stop_requested)
            pos.advance(step.seconds, step.tokens)
            loss_sum, tokens, seconds = loss_sum + step.loss_sum, tokens + step.tokens, seconds + step.seconds
            rank_tokens = [a + b for a, b in zip(rank_tokens, step.rank_tokens)]
            bar.update(1)
            bar.set_postfix(loss=f"{step.loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens / seconds:.0f}")
            if args.no_progress and pos.step % PROGRESS_EVERY == 0:
                say(f"epoch {pos.epoch + 1} batch {pos.batch}/{len(steps)} step {pos.step} loss {step.loss:.3f} "
                    f"lr {lr:.2e} tok/s {tokens / seconds:.0f}")
            if self.out_of_time():
                break
            if step.stop:
                bar.close()
                self.stop(stop_requested)
            if self.state.due(args.save_every):
                self.state.save(self.trainer.weights, pos)
        bar.close()
        return EpochStats(loss_sum, tokens, seconds, rank_tokens, lr, self.out_of_time())

    def progress(self, n_steps: int) -> float:
        """How far the learning-rate schedule is, in [0, 1]: by the clock or the tokens under a budget, else by
        steps."""
        if self.args.time_budget:
            return self.position.elapsed_s / self.args.time_budget
        if self.args.token_budget:
            return self.position.target_tokens / self.args.token_budget
        return self.position.step / (self.max_epochs * n_steps)

    def stop(self, stop_requested: list[int]) -> None:
        """Saves the position and leaves, as a process killed by the signal would (exit status 128 + signal)."""
        self.state.save(self.trainer.weights, self.position)
        signum = stop_requested[0] if stop_requested else signal.SIGTERM
        say(f"stopped by signal {signum} at step {self.position.step}; state saved to {self.state.path}; "
            "run the same command again to resume")
        raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
