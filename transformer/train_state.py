"""What a training run changes and where it stands (the weights, the position), and how it resumes: state.pt in
the run directory, saved atomically every few minutes and after each epoch, and SIGTERM/SIGINT caught to save it."""
from __future__ import annotations

import argparse
import contextlib
import copy
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import torch

from . import checkpoint
from .config import ModelConfig
from .model import Transformer
from .train_ranks import Ranks, say

ADAM_BETAS = (0.9, 0.98)  # the paper's (section 5.3)
ADAM_EPS = 1e-9


@dataclass
class Position:
    """Where a run stands. state.pt holds it as a plain dict of these keys (to_dict/from_dict), so states saved
    before this class existed still resume."""

    epoch: int = 0  # epochs done
    batch: int = 0  # steps done in this epoch
    step: int = 0  # optimizer steps done
    elapsed_s: float = 0.0  # training time (rank 0's clock, not counting evaluation)
    best_bleu: float = -1.0  # the best epoch's mean val BLEU: the checkpoint's
    target_tokens: int | None = 0  # non-pad target tokens trained on; None: resumed from a state saved before
    # they were counted (transformer.tokens_seen replays them)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict) -> Position:
        return cls(**{"target_tokens": None, **saved})

    def advance(self, seconds: float, target_tokens: int) -> None:
        """One optimizer step done."""
        self.step += 1
        self.batch += 1
        self.elapsed_s += seconds
        if self.target_tokens is not None:
            self.target_tokens += target_tokens


@dataclass
class Weights:
    """What training changes: the model, its EMA (the model itself when --ema-decay is 0) and the optimizer."""

    model: Transformer
    ema: Transformer
    optimizer: torch.optim.Optimizer

    @classmethod
    def create(cls, args: argparse.Namespace, config: ModelConfig, start: checkpoint.Checkpoint | None,
               device: torch.device) -> Weights:
        torch.manual_seed(args.seed)  # the initial weights
        model = Transformer(config).to(device)
        if start is not None:
            model.load_state_dict(start.model.state_dict())
        ema = copy.deepcopy(model).requires_grad_(False) if args.ema_decay > 0 else model
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=ADAM_BETAS, eps=ADAM_EPS,
                                      weight_decay=args.weight_decay)
        return cls(model, ema, optimizer)

    @property
    def has_ema(self) -> bool:
        return self.ema is not self.model


def load_start(args: argparse.Namespace) -> checkpoint.Checkpoint | None:
    """--init-from's checkpoint (its weights and tokenizer start the run), checked to translate the same way."""
    if not args.init_from:
        return None
    try:
        start = checkpoint.load(args.init_from)
    except checkpoint.CheckpointError as err:
        raise SystemExit(f"error: --init-from: {err}") from None
    if (start.source_lang, start.target_lang) != (args.src, args.tgt):
        raise SystemExit(f"error: --init-from {args.init_from} translates {start.source_lang}->"
                         f"{start.target_lang}, not {args.src}->{args.tgt}")
    return start


class RunState:
    """state.pt: the weights, the optimizer and the position. Rank 0 writes it; rank 0 reads it and hands it to
    the others (a run may resume on another number of ranks, and other machines need not see rank 0's disk)."""

    def __init__(self, path: Path, ranks: Ranks):
        self.path, self.ranks = path, ranks
        self.saved_at = time.monotonic()

    def resume(self, weights: Weights) -> Position | None:
        """Loads the saved state into `weights` and returns its position; None when there is none."""
        state = self.ranks.share(torch.load(self.path, map_location="cpu", weights_only=True)
                                 if self.ranks.main and self.path.exists() else None)
        if state is None:
            return None
        # from_dict: configs saved before a field existed
        if ModelConfig.from_dict(state["config"]) != weights.model.config:
            raise SystemExit(f"{self.path} was saved for another model config; use a new --run-dir")
        weights.model.load_state_dict(state["model"])
        if weights.has_ema:
            weights.ema.load_state_dict(state["ema"])
        weights.optimizer.load_state_dict(state["optimizer"])
        position = Position.from_dict(state["position"])
        say(f"resumed from {self.path}: epoch {position.epoch + 1}, batch {position.batch}, step {position.step}"
            + (f" (saved by {state['world']} processes, now {self.ranks.world})"
               if state.get("world", 1) != self.ranks.world else ""))
        return position

    def save(self, weights: Weights, position: Position) -> None:
        if self.ranks.main:
            tmp = self.path.with_name(self.path.name + ".tmp")
            torch.save({"config": weights.model.config.to_dict(), "model": weights.model.state_dict(),
                        "ema": weights.ema.state_dict(), "optimizer": weights.optimizer.state_dict(),
                        "position": position.to_dict(), "world": self.ranks.world}, tmp)
            os.replace(tmp, self.path)
        self.saved_at = time.monotonic()

    def due(self, every_s: float) -> bool:
        return time.monotonic() - self.saved_at >= every_s


@contextlib.contextmanager
def stop_signals() -> Iterator[list[int]]:
    """SIGTERM and SIGINT are noted in the yielded list instead of killing; the old handlers come back after."""
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
