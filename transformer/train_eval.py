"""The end of each training epoch: the EMA weights scored on every val set (loss, and BLEU and chrF of their greedy
translations), the epoch's line in metrics.jsonl, and the checkpoint, when the mean val BLEU is the best yet."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F

from . import checkpoint, data
from .config import PAD_ID
from .train_data import TrainingData, ValSet
from .train_ranks import Ranks, say
from .train_state import Position
from .translator import Translator

VAL_BATCH_SIZE = 100  # sentences per batch, for the val loss and the translations alike
DIGITS = {"val_loss": 4, "val_bleu": 2, "val_chrf": 2}  # what metrics.jsonl keeps of each score
# Options that say where a run reads and writes, not how it trains: config.json's recipe leaves them out.
NOT_RECIPE = ("no_progress", "data_dir", "data_root", "out", "run_dir", "cache_dir")


@dataclass(frozen=True)
class Scores:
    """A model on one val set."""

    loss: float  # cross-entropy per target token (no label smoothing), teacher-forced
    bleu: float
    chrf: float
    hypotheses: list[str]  # greedy translations of the val sources

    def metrics(self) -> dict[str, float]:
        return {"val_loss": self.loss, "val_bleu": self.bleu, "val_chrf": self.chrf}


@torch.inference_mode()
def validate(translator: Translator, val: ValSet, batch_size: int = VAL_BATCH_SIZE) -> Scores:
    """The val loss, and BLEU and chrF of the translations `translator.translate_batch` makes (greedy)."""
    model, device = translator.model.eval(), translator.device
    order = sorted(range(len(val.src_ids)), key=lambda i: len(val.src_ids[i]))
    total_loss, total_tokens = 0.0, 0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = data.make_batch([val.src_ids[i] for i in idx], [val.tgt_ids[i] for i in idx])
        logits = model(batch.src.to(device), batch.tgt_in.to(device))
        total_loss += float(F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.to(device).flatten(),
                                            ignore_index=PAD_ID, reduction="sum"))
        total_tokens += batch.n_tokens
    hypotheses = translator.translate_batch(val.sources, batch_size=batch_size)
    return Scores(total_loss / total_tokens, sacrebleu.corpus_bleu(hypotheses, [val.references]).score,
                  sacrebleu.corpus_chrf(hypotheses, [val.references]).score, hypotheses)


def totals(earlier: list[dict], target_tokens: int | None, train_time_s: float) -> dict:
    """What all runs behind the weights add up to: target tokens (None while a run's count is unknown) and
    hours of training."""
    counts = [run.get("target_tokens") for run in earlier] + [target_tokens]
    hours = (sum(run.get("train_time_s") or 0.0 for run in earlier) + train_time_s) / 3600
    return {"target_tokens_seen": None if None in counts else sum(counts), "train_hours_total": round(hours, 2)}


@dataclass(frozen=True)
class EpochStats:
    """An epoch's training (since the resume, for a resumed epoch), summed over the ranks."""

    loss_sum: float
    tokens: int
    seconds: float
    rank_tokens: list[int]  # each rank's target tokens, to see the balance
    lr: float | None  # the last step's; None when the epoch had no step left to do
    out_of_time: bool  # the time or token budget ended it

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / max(self.seconds, 1e-9)


@dataclass(frozen=True)
class Evaluation:
    """Scores each epoch on rank 0 and keeps the best epoch's EMA weights as the checkpoint (--out)."""

    args: argparse.Namespace
    metrics_path: Path  # the run's metrics.jsonl, one line per epoch
    data: TrainingData
    translator: Translator  # over the EMA weights
    earlier: list[dict]  # the runs the weights were warm-started from (checkpoint.lineage); [] without --init-from
    autocast: str
    ranks: Ranks

    def end_epoch(self, stats: EpochStats, position: Position, n_steps: int) -> dict:
        """The epoch's metrics (the others wait at the next collective, with only their training loss); a new
        best val BLEU goes to `position` and to the checkpoint."""
        result = {"epoch": position.epoch + 1, "step": position.step,
                  "train_loss": round(stats.loss_sum / max(stats.tokens, 1), 4)}
        if not self.ranks.main:
            return result
        scores = {val.name: validate(self.translator, val) for val in self.data.vals}
        result.update(_val_metrics(scores))
        result.update({"lr": stats.lr, "tokens_per_s": round(stats.tokens_per_s, 1),
                       "elapsed_s": round(position.elapsed_s, 1)})
        if self.ranks.world > 1:
            result["tokens_by_rank"] = stats.rank_tokens
        if stats.out_of_time:
            result["partial_epoch"] = round(position.batch / n_steps, 3)
        metrics_log = self._log(result)
        say(json.dumps(result) + " | sample: " + next(iter(scores.values())).hypotheses[0])
        if result["val_bleu"] > position.best_bleu:
            position.best_bleu = result["val_bleu"]
            self._save(result, position, list(scores), metrics_log)
            say(f"saved {Path(self.args.out)} (val BLEU {result['val_bleu']})")
        else:
            checkpoint.write_metrics_log(Path(self.args.out), metrics_log)
        return result

    def _log(self, result: dict) -> str:
        """metrics.jsonl with the epoch's line; a run killed between this write and the state save repeats
        the epoch, so an epoch's earlier line is replaced."""
        previous = [line for line in self.metrics_path.read_text().splitlines()
                    if json.loads(line)["epoch"] != result["epoch"]]
        text = "".join(line + "\n" for line in [*previous, json.dumps(result)])
        self.metrics_path.write_text(text)
        return text

    def _save(self, result: dict, position: Position, val_names: list[str], metrics_log: str) -> None:
        args = self.args
        training = {"recipe": {k: v for k, v in vars(args).items() if k not in NOT_RECIPE},
                    "corpora": [asdict(share) for share in self.data.mix()],
                    "selected_on": "val BLEU (greedy)" + (
                        ", mean over " + ", ".join(val_names) if len(val_names) > 1 else ""),
                    "epochs": result["epoch"], "steps": position.step, "train_time_s": result["elapsed_s"],
                    "device": str(self.translator.device), **device_name(self.translator.device),
                    "threads": args.threads, "processes": self.ranks.world,
                    "autocast": self.autocast, "compiled": args.compile, "target_tokens": position.target_tokens,
                    **totals(self.earlier, position.target_tokens, position.elapsed_s),
                    **({"earlier": self.earlier} if self.earlier else {})}
        checkpoint.save(Path(args.out), self.translator.model, self.translator.tokenizer, source_lang=args.src,
                        target_lang=args.tgt, domain=args.domain, training=training,
                        metrics={k: v for k, v in result.items() if k == "epoch" or k.startswith("val_")},
                        metrics_log=metrics_log)


def device_name(device: torch.device) -> dict[str, str]:
    """The accelerator's model, for the card: a GPU's speed says more than the word "cuda"."""
    return {"device_name": torch.cuda.get_device_name(device)} if device.type == "cuda" else {}


def _val_metrics(scores: dict[str, Scores]) -> dict[str, float]:
    """The mean over the val sets (it selects the model) and, for a mix, each one's."""
    metrics = {key: round(sum(s.metrics()[key] for s in scores.values()) / len(scores), digits)
               for key, digits in DIGITS.items()}
    if len(scores) > 1:
        for name, s in scores.items():
            metrics.update({f"{key}_{name}": round(value, DIGITS[key]) for key, value in s.metrics().items()})
    return metrics
