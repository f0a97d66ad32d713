"""The three kinds of attention in an encoder-decoder Transformer, defined once.

Everything else names a kind by its `name`, the string that the page's controls, links and the API carry, and
reads its label, sides and mask from here. A kind's queries and keys each come from one side of the translation:
the source (what the encoder reads) or the target (what the decoder reads).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Side = Literal["source", "target"]


@dataclass(frozen=True)
class AttentionKind:
    """One kind of attention: what it is called, where its queries and keys come from, where a Trace keeps it."""

    name: str  # in the page's controls, links and the API
    label: str  # in titles, tables and help
    queries: Side  # source pieces, or decoder positions (one per decoding step)
    keys: Side  # source pieces, or the pieces the decoder read
    causal: bool  # the decoder's mask hides the keys after each query
    trace_field: str  # the Trace attribute that holds its weights: (layers, heads, queries, keys)

    @property
    def self_attention(self) -> bool:
        """Queries and keys are the same pieces (square weights)."""
        return self.queries == self.keys


ENCODER = AttentionKind("encoder", "encoder self-attention", queries="source", keys="source", causal=False,
                        trace_field="encoder_self_attn")
DECODER = AttentionKind("decoder", "decoder masked self-attention", queries="target", keys="target", causal=True,
                        trace_field="decoder_self_attn")
CROSS = AttentionKind("cross", "cross-attention", queries="target", keys="source", causal=False,
                      trace_field="cross_attn")
# In the model's order, which the head statistics and their table follow.
KINDS = (ENCODER, DECODER, CROSS)


def by_name(name) -> AttentionKind:
    """The kind called `name` (any value: a visitor's may be anything); ValueError when there is none."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise ValueError(f"unknown attention kind {name!r}; expected one of {', '.join(k.name for k in KINDS)}")
