"""Transformer Anatomy: the Transformer of "Attention Is All You Need", from scratch."""
from .config import ModelConfig
from .decoding import Decoding
from .head_mask import HeadMask, HeadRef
from .kinds import AttentionKind
from .model import Decoded, DecoderCache, Encoded, Transformer
from .translator import (
    AttentionMaps,
    Candidate,
    DecodingSettings,
    HeadVectors,
    LogitLens,
    Step,
    TopK,
    Trace,
    Translator,
)

__all__ = ["ModelConfig", "Transformer", "Encoded", "Decoded", "DecoderCache", "Translator", "Trace", "Step",
           "Candidate", "AttentionMaps", "AttentionKind", "HeadVectors", "LogitLens", "TopK", "DecodingSettings",
           "Decoding", "HeadMask", "HeadRef"]
