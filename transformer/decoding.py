"""How to decode one translation: one typed request, carried unchanged from the page's controls, a link, the API or a
script to the Translator (as Hugging Face's GenerationConfig). Where and in which precision a model runs are the
process's settings (transformer.device), not a request's."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decoding:
    """The defaults are plain greedy decoding of the whole sentence with every head on."""

    beam_size: int = 1  # 1: greedy; more: beam search over that many hypotheses
    length_penalty: float = 1.0  # beam score = log-probability / length**length_penalty (beam search only)
    # the output's length limit, forced pieces included (never fewer than them); None: ceil(1.5 × the source's
    # pieces) + 10 (search.output_limit), within max_len
    max_new_tokens: int | None = None
    top_k: int = 5  # the most likely pieces a trace records at each step
    heads_off: str = ""  # the heads switched off (zeroed before W_o), in HeadMask's link form: "cross:1.2,encoder:1.3"
    slow: float = 0.0  # seconds per piece when the page replays the decoding step by step; 0: shown at once
    # the output ids forced at the start of the output (a branch: "what if it had written this?"), then the model's
    # own decoding; every beam starts with them. Translator.translate and stream take pieces too (prefix=["▁Hund"])
    prefix: tuple[int, ...] = ()

    def __post_init__(self):
        if isinstance(self.prefix, (str, bytes)):  # tuple() would read it as one piece per character
            raise TypeError(f"prefix is a sequence of ids or pieces, not one string: {self.prefix!r}")
        object.__setattr__(self, "prefix", tuple(self.prefix))  # hashable and comparable, whatever came
