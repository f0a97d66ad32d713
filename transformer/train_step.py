"""One optimizer step: the step's pairs dealt into micro-batches (ranks × --accumulate), each forward pass under
autocast and DDP (gradients synchronised on the last micro-batch only), then the gradient scaler, clipping, the
optimizer and the EMA."""
from __future__ import annotations

import argparse
import contextlib
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from .config import PAD_ID
from .train_data import TrainingData
from .train_ranks import Ranks
from .train_state import Weights

# Each step's dropout seed: seed · DROPOUT_SEED_STRIDE + step · STEP_SEED_STRIDE + rank. Seeded per step, a resumed
# run draws the dropout masks an unbroken one would; per rank, the ranks draw different ones.
DROPOUT_SEED_STRIDE = 1_000_003
STEP_SEED_STRIDE = 1009
# The EMA's decay ramps up as (1 + step) / (EMA_WARMUP + step) to --ema-decay: early weights, still far from
# where training goes, are soon forgotten.
EMA_WARMUP = 10


def native_bf16(device: torch.device) -> bool:
    """Whether this device computes bf16 in hardware; on a CPU without AVX512-BF16/AMX, torch emulates it
    (slower than fp32)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.cpu._is_avx512_bf16_supported() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "auto":
        return torch.bfloat16 if native_bf16(device) else None
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@dataclass(frozen=True)
class StepResult:
    """One optimizer step, summed over the ranks."""

    loss_sum: float  # label-smoothed cross-entropy summed over the step's target tokens
    tokens: int  # non-pad target tokens (EOS included) of the whole step
    seconds: float  # rank 0's time for the step: every rank then agrees on the schedule and on when to stop
    stop: bool  # a rank was asked to stop
    rank_tokens: list[int]  # each rank's share of `tokens`

    @property
    def loss(self) -> float:
        return self.loss_sum / self.tokens


class Trainer:
    """Trains the weights on this rank, one optimizer step at a time."""

    def __init__(self, args: argparse.Namespace, weights: Weights, data: TrainingData, ranks: Ranks,
                 device: torch.device):
        self.args, self.weights, self.data, self.ranks, self.device = args, weights, data, ranks, device
        net = weights.model
        if args.compile:
            net = torch.compile(net)
        if ranks.world > 1:
            net = DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
        self.net = net
        self.amp = autocast_dtype(args.precision, device)
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.amp == torch.float16)
        self.parts = ranks.world * args.accumulate  # micro-batches per step, over all ranks
        self._ema_params, self._model_params = list(weights.ema.parameters()), list(weights.model.parameters())

    @property
    def autocast(self) -> str:
        """The autocast dtype's name, float32 when off (as config.json's training.autocast)."""
        return str(self.amp or torch.float32).removeprefix("torch.")

    def step(self, index: int, pairs: list[int], lr: float, stop_requested: list[int]) -> StepResult:
        """Optimizer step `index` (from 0) over `pairs`, the whole step's pairs (every rank's), at learning rate
        `lr`; `stop_requested` is shared with the other ranks."""
        t0 = time.monotonic()
        args, ranks, optimizer = self.args, self.ranks, self.weights.optimizer
        shares = self.data.deal(pairs, self.parts)
        mine = shares[ranks.rank * args.accumulate:(ranks.rank + 1) * args.accumulate]
        # The loss of the step is its token sum over the whole step's non-pad target tokens (every rank knows
        # them), times the ranks that DDP's gradient mean divides by.
        n_tokens = self.data.target_tokens(pairs)
        for group in optimizer.param_groups:
            group["lr"] = lr
        torch.manual_seed(args.seed * DROPOUT_SEED_STRIDE + index * STEP_SEED_STRIDE + ranks.rank)
        optimizer.zero_grad(set_to_none=True)
        loss_sum, my_tokens = 0.0, 0
        for k, share in enumerate(mine):
            if not share:
                raise SystemExit(f"step {index} has {len(pairs)} pairs for {self.parts} micro-batches; give more "
                                 "tokens per batch or fewer --accumulate")
            summed, tokens = self._forward(share, sync=k == len(mine) - 1 or ranks.world == 1)
            self.scaler.scale(summed * (ranks.world / n_tokens)).backward()
            loss_sum += summed.item()
            my_tokens += tokens
        self._update(index)
        # One collective per step: the loss, whether any rank was asked to stop, rank 0's clock and each rank's
        # tokens.
        counts = [0.0] * ranks.world
        counts[ranks.rank] = my_tokens
        loss_sum, stops, seconds, *counts = ranks.sum([loss_sum, float(bool(stop_requested)),
                                                       time.monotonic() - t0 if ranks.main else 0.0, *counts])
        return StepResult(loss_sum, n_tokens, seconds, bool(stops), [int(c) for c in counts])

    def _forward(self, pairs: list[int], sync: bool) -> tuple[torch.Tensor, int]:
        """A micro-batch's label-smoothed loss summed over its target tokens, and their number; `sync`: DDP
        averages the gradients over the ranks in this micro-batch's backward pass."""
        batch, device, amp = self.data.batch(pairs), self.device, self.amp
        with (contextlib.nullcontext() if sync else self.net.no_sync()), \
                torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            logits = self.net(batch.src.to(device), batch.tgt_in.to(device))
            summed = F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.to(device).flatten(),
                                     ignore_index=PAD_ID, label_smoothing=self.args.label_smoothing, reduction="sum")
        return summed, batch.n_tokens

    def _update(self, index: int) -> None:
        """The optimizer step on the accumulated gradients (unscaled, clipped), then the EMA."""
        optimizer = self.weights.optimizer
        self.scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(self.weights.model.parameters(), self.args.clip)
        self.scaler.step(optimizer)
        self.scaler.update()
        if self.weights.has_ema:
            decay = min(self.args.ema_decay, (1 + index) / (EMA_WARMUP + index))
            torch._foreach_lerp_(self._ema_params, self._model_params, 1.0 - decay)
