"""Choosing where the model runs."""
from __future__ import annotations

import warnings

import torch

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
