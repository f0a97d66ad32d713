"""Transformer Anatomy: the Transformer of "Attention Is All You Need", from scratch."""
from .config import ModelConfig
from .model import Decoded, DecoderCache, Encoded, Transformer
from .translator import ATTENTION_KINDS, AttentionMaps, Candidate, HeadVectors, Step, Trace, Translator

__all__ = ["ModelConfig", "Transformer", "Encoded", "Decoded", "DecoderCache", "Translator", "Trace", "Step",
           "Candidate", "AttentionMaps", "ATTENTION_KINDS", "HeadVectors"]
