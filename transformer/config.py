"""The model's one configuration object, saved inside every checkpoint."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

# Fixed special-token ids shared by the tokenizer, the model's masks and decoding.
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
SPECIAL_IDS = {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID}
ACTIVATIONS = ("relu", "swish")
PE_LAYOUTS = ("interleaved", "split")
BEAM_LIMIT_RULES = ("live", "top_k")


@dataclass(frozen=True)
class ModelConfig:
    """Hyperparameters; the defaults are the paper's base model (Table 3)."""

    vocab_size: int = 37000
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    max_len: int = 512
    norm_first: bool = False  # False: the paper's post-LN; True: pre-LN with a final norm per stack
    tie_embeddings: bool = True  # paper §3.4: one matrix for both embeddings and the output projection
    # The fields below default to this project's own models; an opus-mt (Marian) checkpoint sets them.
    activation: str = "relu"  # the FFN's nonlinearity: "relu" (paper eq. 2) or "swish" (SiLU, x·σ(x), opus-mt)
    pe_layout: str = "interleaved"  # "interleaved": sin, cos alternate (paper §3.5); "split": all sines, then cosines
    final_logits_bias: bool = False  # a V-sized bias added to the logits (opus-mt; a buffer, not trained)
    pad_id: int = PAD_ID  # fills batches; never part of a sentence (opus-mt: V-1, also its decoder start)
    eos_id: int = EOS_ID  # ends every source and every output (opus-mt: 0)
    decoder_start_id: int = BOS_ID  # what the decoder reads at position 0 (opus-mt: its pad id; it has no BOS)
    suppress_ids: tuple[int, ...] = ()  # ids decoding never chooses (opus-mt's generation config bans its pad)
    # At the length limit a sentence's hypotheses are "live": its K live beams (ours), or "top_k": the K best
    # continuations of the last step, EOS or not (transformers' generate, which opus-mt models are judged by).
    beam_limit_rule: str = "live"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_encoder_layers",
                     "n_decoder_layers", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.d_model % 2:
            raise ValueError("d_model must be even for the sinusoidal positional encoding")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        for name, allowed in (("activation", ACTIVATIONS), ("pe_layout", PE_LAYOUTS),
                              ("beam_limit_rule", BEAM_LIMIT_RULES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"ModelConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        object.__setattr__(self, "suppress_ids", tuple(self.suppress_ids))  # JSON brings a list
        ids = {"pad_id": self.pad_id, "eos_id": self.eos_id, "decoder_start_id": self.decoder_start_id,
               **{f"suppress_ids[{i}]": v for i, v in enumerate(self.suppress_ids)}}
        for name, value in ids.items():
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < self.vocab_size:
                raise ValueError(f"ModelConfig.{name} must be an id below vocab_size={self.vocab_size}, got {value!r}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def n_layers(self, kind: str) -> int:
        """The layers of an attention kind (transformer.kinds): the encoder's stack for its self-attention, the
        decoder's for the other two; the two stacks may differ (an opus-mt model's may)."""
        return self.n_encoder_layers if kind == "encoder" else self.n_decoder_layers

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown ModelConfig fields: {sorted(unknown)}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> "ModelConfig":
        return cls.from_dict(json.loads(text))


PRESETS = {
    "small": dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3),
    "base": {},
}
