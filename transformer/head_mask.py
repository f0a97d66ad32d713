"""Switching heads off: one gate per head of each attention kind, applied to the head's output before W_o.

A gate of 1 leaves the head as trained, 0 removes it; values between scale it, as Michel, Levy and Neubig's
(2019) ξ_h, whose gradient at ξ = 1 estimates how much the head matters. The link and API form names the heads
that are off: `off=cross:1.2,encoder:1.3` (kind, then layer.head, both from 1).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import torch
from torch import Tensor

from .config import ModelConfig
from .kinds import KINDS, by_name


@dataclass(frozen=True)
class HeadRef:
    """One head of the model, as the page and links count: layer and head from 1."""

    kind: str  # an AttentionKind's name
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.kind}:{self.layer}.{self.head}"


@dataclass(frozen=True)
class HeadMask:
    """The gates of every head, per kind: (layers, heads), or (B, layers, heads) to give each batch row its own."""

    encoder: Tensor  # (n_encoder_layers, h) or (B, n_encoder_layers, h)
    decoder: Tensor  # (n_decoder_layers, h) or (B, n_decoder_layers, h)
    cross: Tensor  # (n_decoder_layers, h) or (B, n_decoder_layers, h)

    @classmethod
    def ones(cls, config: ModelConfig, device: torch.device | str | None = None) -> "HeadMask":
        h = config.n_heads
        return cls(torch.ones(config.n_encoder_layers, h, device=device),
                   torch.ones(config.n_decoder_layers, h, device=device),
                   torch.ones(config.n_decoder_layers, h, device=device))

    @classmethod
    def stack(cls, masks: Sequence[HeadMask | None], config: ModelConfig) -> HeadMask | None:
        """One mask whose batch row b is masks[b], a (layers, heads) mask or None (every head on); None when all
        are None."""
        if all(mask is None for mask in masks):
            return None
        rows = [cls.ones(config) if mask is None else mask for mask in masks]
        return cls(**{kind.name: torch.stack([row[kind.name] for row in rows]) for kind in KINDS})

    @staticmethod
    def refs(text: str) -> list[HeadRef]:
        """The heads the link form names, in its order, checked for form only; ValueError saying what is wrong."""
        out = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            kind, sep, place = item.partition(":")
            layer, dot, head = place.partition(".")
            if not (sep and dot and layer.isdigit() and head.isdigit()):
                raise ValueError(f"{item!r} is not KIND:LAYER.HEAD (e.g. cross:1.2)")
            out.append(HeadRef(kind.strip(), int(layer), int(head)))
        return out

    @classmethod
    def parse(cls, text: str, config: ModelConfig) -> "HeadMask":
        """The mask that switches off the heads named in the link form; ValueError saying what is wrong."""
        mask = cls.ones(config)
        for ref in cls.refs(text):
            mask = mask.off(ref.kind, ref.layer, ref.head)
        return mask

    def __getitem__(self, kind: str) -> Tensor:
        return getattr(self, by_name(kind).name)

    def set(self, kind: str, layer: int, head: int, gate: float) -> "HeadMask":
        """A copy with one gate changed; layer and head from 1."""
        gates = self[kind]
        layers, heads = gates.shape[-2:]
        if not (1 <= layer <= layers and 1 <= head <= heads):
            raise ValueError(f"{kind} has layers 1-{layers} and heads 1-{heads}; there is no {kind}:{layer}.{head}")
        gates = gates.clone()
        gates[..., layer - 1, head - 1] = gate
        return replace(self, **{by_name(kind).name: gates})

    def off(self, kind: str, layer: int, head: int) -> "HeadMask":
        return self.set(kind, layer, head, 0.0)

    def on(self, kind: str, layer: int, head: int) -> "HeadMask":
        return self.set(kind, layer, head, 1.0)

    def heads_off(self) -> list[HeadRef]:
        """The heads whose gate is not 1, in the model's order (a (layers, heads) mask)."""
        return [HeadRef(kind.name, layer + 1, head + 1) for kind in KINDS
                for layer, head in (self[kind.name] != 1).nonzero().tolist()]

    def __str__(self) -> str:
        """The link form: `cross:1.2,encoder:1.3` ("" when every head is on)."""
        return ",".join(map(str, self.heads_off()))

    def to(self, device: torch.device | str) -> "HeadMask":
        return HeadMask(self.encoder.to(device), self.decoder.to(device), self.cross.to(device))

    def requires_grad_(self) -> "HeadMask":
        for gates in (self.encoder, self.decoder, self.cross):
            gates.requires_grad_()
        return self

    @staticmethod
    def layer_gates(mask: "HeadMask | None", kind: str, layer: int) -> Tensor | None:
        """The gates of layer `layer` (from 0) as a head's output (B, h, T, d_k) broadcasts them; None when no mask."""
        if mask is None:
            return None
        return mask[kind][..., layer, :, None, None]  # (h, 1, 1) or (B, h, 1, 1)
