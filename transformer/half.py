"""Inference that reads the linear layers' weights in fp16, on x86 CPUs.

At the batch sizes of a page translation (1 greedy, 5 beams) the linear layers and the tied output projection are
bound by reading their weights (docs/benchmarks.md#profile_decodepy). fbgemm's fp16 GEMM reads half the bytes of
an fp32 one and multiplies and accumulates in fp32: activations, attention and softmax stay fp32, and only the
weights are rounded to fp16 (which changes nothing for checkpoints saved in fp16, as the shipped ones are).
"""
from __future__ import annotations

import warnings

import torch
from torch import Tensor

PRECISIONS = ("auto", "fp32", "fp16")


def fp16_available(device: torch.device) -> bool:
    """fbgemm's fp16 GEMM runs here: an x86 CPU, and a torch that still has it."""
    return (device.type == "cpu" and "fbgemm" in torch.backends.quantized.supported_engines
            and hasattr(torch, "fbgemm_linear_fp16_weight_fp32_activation"))


class HalfLinear:
    """y = x W[rows]^T + b[rows] with those rows of W packed in fp16 for fbgemm; packed again whenever W changes
    (training, a new state dict, another device), so it never runs stale weights."""

    def __init__(self, rows: tuple[int, int] | None = None) -> None:
        self.rows = rows
        self._weight: Tensor | None = None  # the parameter packed, and its version then
        self._version = -1
        self._packed: Tensor | None = None
        self._bias: Tensor | None = None

    def __call__(self, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        # a few µs a call matter here (a 256-wide layer takes ~16 µs): identity and version, no data_ptr calls
        if weight is not self._weight or weight._version != self._version:
            return self._pack(x, weight, bias)
        return torch.fbgemm_linear_fp16_weight_fp32_activation(x, self._packed, self._bias)

    def _pack(self, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        w = weight.detach()
        b = torch.zeros(w.size(0), device=w.device) if bias is None else bias.detach()
        if self.rows is not None:
            w, b = w[self.rows[0]:self.rows[1]], b[self.rows[0]:self.rows[1]]
        with warnings.catch_warnings():
            # Deprecated in torch, and warned once a process: the torch.ops.quantized wrapper of the same kernel
            # costs ~50 µs more a call than a whole 256-wide layer does here.
            warnings.filterwarnings("ignore", "fbgemm_", UserWarning)
            self._packed = torch.fbgemm_pack_gemm_matrix_fp16(w.float().contiguous())
            self._bias = b.float().contiguous()
            self._weight, self._version = weight, weight._version
            return torch.fbgemm_linear_fp16_weight_fp32_activation(x, self._packed, self._bias)
