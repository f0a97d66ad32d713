"""Transformer Anatomy: the Transformer of "Attention Is All You Need", from scratch."""
from .config import ModelConfig
from .model import Decoded, Encoded, LayerCache, Transformer
from .translator import Candidate, Step, Trace, Translator

__all__ = ["ModelConfig", "Transformer", "Encoded", "Decoded", "LayerCache", "Translator", "Trace", "Step",
           "Candidate"]
