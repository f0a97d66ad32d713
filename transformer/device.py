"""Choosing where the model runs, and in which precision."""
from __future__ import annotations

import warnings

import torch

from .half import PRECISIONS, fp16_available
from .model import Transformer

DEVICES = ("auto", "cpu", "cuda")


def pick_device(requested: str = "auto") -> torch.device:
    """'auto' takes CUDA when present; 'cuda' without CUDA falls back to CPU with a warning."""
    if requested not in DEVICES:
        raise ValueError(f"unknown device {requested!r}; choose one of {', '.join(DEVICES)}")
    if requested == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if requested == "cuda":
        warnings.warn("CUDA was requested but is not available here: running on the CPU", stacklevel=2)
    return torch.device("cpu")


def pick_precision(model: Transformer, requested: str = "auto") -> str:
    """Set and return how `model` runs inference: "fp16" reads its weights in fp16 (transformer/half.py), "fp32" as
    trained. "auto" takes fp16 where fbgemm runs (an x86 CPU) and the weights are fp16 numbers already (every
    checkpoint we save is): then the same weights are read in half the bytes, and only the order of the sums
    changes. Weights that fp16 would round (a model trained here and not saved, an opus-mt download) stay fp32
    unless fp16 is asked for. The shipped models' check: `python -m benchmarks.decode --check-precision`."""
    if requested not in PRECISIONS:
        raise ValueError(f"unknown precision {requested!r}; choose one of {', '.join(PRECISIONS)}")
    weights = [p for p in model.parameters() if p.dim() == 2]  # the matrices the linear layers read
    here = fp16_available(weights[0].device)
    if requested == "auto":
        requested = "fp16" if here and all(torch.equal(w, w.half().float()) for w in weights) else "fp32"
    elif requested == "fp16" and not here:
        warnings.warn(f"fp16 weights need fbgemm on an x86 CPU, not {weights[0].device} here: running in fp32",
                      stacklevel=2)
        requested = "fp32"
    model.set_precision(requested)
    return requested
