"""Translating text with everything a person may want to look at: the `Trace`."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import orjson
import torch
from torch import Tensor

from . import checkpoint as ckpt
from .config import EOS_ID
from .data import pad
from .decoding import Decoding
from .device import pick_device, pick_precision
from .head_mask import HeadMask
from .kinds import KINDS, by_name
from .model import Encoded, Transformer
from .pieces import detokenize
from .search import beam_hypotheses, beam_search, cut_by_limit, greedy, greedy_steps, output_limit, own_choice
from .tokenizer import Tokenizer

ATTENTION_FIELDS = tuple(kind.trace_field for kind in KINDS)


@dataclass
class Candidate:
    """One finished beam hypothesis."""

    text: str
    tokens: list[str]  # the pieces of the text (no EOS)
    score: float  # log-probability / length**length_penalty
    log_prob: float
    ids: list[int]  # output ids as decoded: EOS included when the model chose it
    eos_id: int = EOS_ID  # the model's EOS id (opus-mt models use 0)

    @property
    def cut_by_limit(self) -> bool:
        return cut_by_limit(self.ids, self.eos_id)


@dataclass(frozen=True)
class TopK:
    """One of the k pieces the model found most likely at a decoder position."""

    token: str  # the piece
    id: int
    prob: float


@dataclass(frozen=True)
class DecodingSettings:
    """How a Trace was made. A trace's JSON holds only the fields that differ from their defaults: the keys it
    held when settings were a dict."""

    mode: str  # "greedy", "beam", "branch" (greedy or beam search after forced pieces), "forced" (or
    # force_output's mode), "beam candidate"
    top_k: int  # pieces recorded per decoder position
    device: str
    beam_size: int | None = None  # greedy and beam search only, with the next two
    max_new_tokens: int | None = None  # the length limit decoding ran under
    length_penalty: float | None = None
    stopped: bool = False  # a stop request ended greedy decoding (or a replay of it) before EOS or the limit
    candidate: int | None = None  # "beam candidate": which one (from 1)
    direction: str | None = None  # the app's direction key (anatomy.engine tags its traces)
    heads_off: str = ""  # the heads a HeadMask switched off, in its link form (cross:1.2,encoder:1.3)
    precision: str = "fp32"  # how the linear layers read their weights (transformer.device.pick_precision)
    prefix: tuple[str, ...] = ()  # a branch's forced pieces, the first of the output (Decoding.prefix)
    # a branch's first forced step (from 0) whose piece is not the model's own most likely one there: where greedy
    # decoding parts from the model's own translation; len(prefix) when every forced piece is the model's choice
    parts_at: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "prefix", tuple(self.prefix))  # JSON brings a list

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}


@dataclass
class Step:
    """One generated token and the attention rows that produced it."""

    index: int  # decoder position t (row t of the decoder attention)
    token: str
    token_id: int
    top_k: list[TopK]  # most likely first
    decoder_self_attn: np.ndarray  # (layers, heads, t+1)
    cross_attn: np.ndarray  # (layers, heads, S)
    log_prob: float  # the model's log p of `token` at this step (a forced piece's too)


@dataclass(frozen=True)
class AttentionMaps:
    """One attention kind of a Trace with its axes: what a heatmap or a head statistic reads."""

    kind: str  # the AttentionKind's name (transformer.kinds)
    weights: np.ndarray  # (layers, heads, Tq, Tk)
    queries: list  # source pieces (encoder), else (read, produced) piece pairs of the decoder positions
    keys: list[str]
    causal: bool  # the decoder's mask hides the keys after each query
    # The pieces whose words group the queries: a decoder position belongs to the word it produces, in both
    # decoder kinds (the keys group by `keys`).
    query_pieces: list[str]


@dataclass(frozen=True)
class HeadVectors:
    """The per-head queries, keys and values of one attention kind in one layer of a Trace (made on request by
    Translator.head_vectors), and what eq. 1 made of them."""

    kind: str  # the AttentionKind's name (transformer.kinds)
    layer: int  # counted from 1
    q: np.ndarray  # (h, Tq, d_k)
    k: np.ndarray  # (h, Tk, d_k)
    v: np.ndarray  # (h, Tk, d_k)
    visible: np.ndarray  # (Tq, Tk) bool: the keys the mask lets each query see
    weights: np.ndarray  # (h, Tq, Tk)
    heads: np.ndarray  # (h, Tq, d_k): each head's output before W_o


@dataclass(frozen=True)
class LogitLens:
    """What each decoder layer would predict at each step of a Trace (made on request by Translator.logit_lens): its
    stream read through the output projection (after the final norm where the model has one), top k. The last
    layer's row is the model's own prediction."""

    ids: np.ndarray  # (L, T, k) piece ids, most probable first; step t predicts output piece t
    tokens: tuple[tuple[tuple[str, ...], ...], ...]  # the same as pieces, (L, T, k)
    probs: np.ndarray  # (L, T, k)
    normed: bool  # whether a final layer norm came before the projection (pre-LN models); post-LN ones have none


@dataclass
class Trace:
    """A translation and every attention map of the pass that made it.

    Row t of the decoder attention is computed at target_tokens[t] and predicts
    output_tokens[t]; S = len(source_tokens), T = len(target_tokens) = len(output_tokens).
    """

    text: str
    source_tokens: list[str]  # encoder input pieces, EOS included
    target_tokens: list[str]  # decoder input: [BOS, y1, ..., yn]
    output_tokens: list[str]  # decoder output: [y1, ..., yn, EOS], no EOS when the length limit cut it
    encoder_self_attn: np.ndarray  # (layers, heads, S, S)
    decoder_self_attn: np.ndarray  # (layers, heads, T, T)
    cross_attn: np.ndarray  # (layers, heads, T, S)
    top_k: list[list[TopK]]  # per decoder position, the k most likely next pieces
    settings: DecodingSettings
    candidates: list[Candidate] = field(default_factory=list)
    checkpoint: str = ""
    source_ids: list[int] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # e.g. the input was truncated
    eos_id: int = EOS_ID  # the model's EOS id (opus-mt models use 0)
    # per output piece, the model's log p of it at its step (forced pieces too); empty in traces saved before it
    log_probs: list[float] = field(default_factory=list)

    @property
    def log_prob(self) -> float | None:
        """log p of the whole output (a branch's forced pieces included); None for a trace saved without it."""
        return float(sum(self.log_probs)) if len(self.log_probs) == len(self.output_ids) else None

    def _plain(self) -> dict:
        """The fields as JSON types, the attention arrays still numpy."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["top_k"] = [[asdict(c) for c in row] for row in self.top_k]
        out["settings"] = self.settings.to_dict()
        out["candidates"] = [asdict(c) for c in self.candidates]
        return out

    def to_dict(self) -> dict:
        out = self._plain()
        for name in ATTENTION_FIELDS:
            out[name] = out[name].tolist()
        return out

    def to_json(self) -> str:
        # orjson writes each float32 weight in its shortest exact form: a ninth of json.dumps's time on the page's
        # translation (the download link's file is written in the model's slot) and 40 % fewer bytes; weights are
        # probabilities and log-probs finite, so no NaN or infinity is ever written (orjson would write null)
        out = self._plain()
        for name in ATTENTION_FIELDS:  # a prefix of a trace holds slices, which orjson does not take
            out[name] = np.ascontiguousarray(out[name], dtype=np.float32)
        return orjson.dumps(out, option=orjson.OPT_SERIALIZE_NUMPY).decode()

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        data = dict(data)
        for name in ATTENTION_FIELDS:
            data[name] = np.asarray(data[name], dtype=np.float32)
        data["top_k"] = [[TopK(**c) for c in row] for row in data["top_k"]]
        data["settings"] = DecodingSettings(**data["settings"])
        data["candidates"] = [Candidate(**c) for c in data.get("candidates", [])]
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))

    @property
    def cut_by_limit(self) -> bool:
        """The length limit stopped decoding before the model chose EOS."""
        return cut_by_limit(self.output_ids, self.eos_id)

    def attention(self, kind: str) -> AttentionMaps:
        """The weights and axes of the attention kind called `kind` (transformer.kinds)."""
        spec = by_name(kind)
        if spec.queries == "source":
            queries, query_pieces = list(self.source_tokens), list(self.source_tokens)
        else:  # decoder positions: row t reads target t and produces output t
            queries, query_pieces = list(zip(self.target_tokens, self.output_tokens)), list(self.output_tokens)
        keys = list(self.source_tokens if spec.keys == "source" else self.target_tokens)
        return AttentionMaps(spec.name, getattr(self, spec.trace_field), queries, keys, spec.causal, query_pieces)


def _top_k(probs: Tensor, k: int, tokenizer: Tokenizer) -> list[list[TopK]]:
    """probs (T, V) -> per row the k most likely pieces."""
    values, ids = probs.topk(min(k, probs.size(-1)), dim=-1)
    pieces = tokenizer.pieces(ids.flatten().tolist())
    values, ids = values.tolist(), ids.tolist()
    k_ = len(ids[0]) if ids else 0
    return [[TopK(pieces[r * k_ + j], ids[r][j], values[r][j]) for j in range(k_)] for r in range(len(ids))]


def _stack(per_layer: tuple[Tensor, ...]) -> np.ndarray:
    """Per-layer (1, h, ...) weights of one sentence -> (layers, h, ...) float32 array."""
    return torch.cat(per_layer, dim=0).float().cpu().numpy()


def _parted(settings: DecodingSettings, output_ids: Sequence[int], own: Sequence[int]) -> DecodingSettings:
    """A branch's settings with `parts_at`: its first forced step whose piece is not the model's own choice there
    (`own`, one per step decoded)."""
    if not settings.prefix:
        return settings
    n = min(len(settings.prefix), len(output_ids))
    return replace(settings, parts_at=next((t for t in range(n) if output_ids[t] != own[t]), len(settings.prefix)))


def decoder_input(output_ids: list[int], start_id: int) -> list[int]:
    """What the decoder reads to produce `output_ids`: the same ids one position late, behind the start id (<s>)."""
    return [start_id] + output_ids[:-1]


class Translator:
    """A loaded checkpoint that translates text and explains how."""

    def __init__(self, checkpoint: ckpt.Checkpoint, device: torch.device | None = None, precision: str = "auto"):
        self.checkpoint = checkpoint
        self.device = device or next(checkpoint.model.parameters()).device
        self.model: Transformer = checkpoint.model.to(self.device).eval()
        self.precision = pick_precision(self.model, precision)
        self.tokenizer: Tokenizer = checkpoint.tokenizer

    @classmethod
    def from_checkpoint(cls, path_or_id: str | Path, device: str = "auto", precision: str = "auto") -> "Translator":
        dev = pick_device(device)
        return cls(ckpt.load(path_or_id, dev), dev, precision)

    @property
    def config(self):
        return self.model.config

    def encode_source(self, text: str) -> tuple[list[int], list[str]]:
        """Source ids as the encoder sees them (EOS appended), cut to max_len, with a notice when cut."""
        return self._cut(self.tokenizer.encode(text), "The input", "translated")

    def encode_target(self, text: str) -> tuple[list[int], list[str]]:
        """A typed translation's ids as the decoder would have produced them (EOS appended), cut to max_len (it
        reads them behind <s>, one position late), with a notice when cut."""
        return self._cut(self.tokenizer.encode_target(text), "The typed translation", "read")

    def _cut(self, ids: list[int], what: str, done: str) -> tuple[list[int], list[str]]:
        """`ids` and EOS, cut to the model's max_len (EOS kept at the end), and the notice of the cut, if any."""
        ids, most = ids + [self.config.eos_id], self.config.max_len
        if len(ids) <= most:
            return ids, []
        return ids[:most - 1] + [self.config.eos_id], [f"{what} was {len(ids)} tokens long; only the first {most} "
                                                        f"were {done} (the model's max_len)."]

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Each piece's id (the first id of a piece written by two)."""
        ids: dict[str, int] = {}
        for i, piece in enumerate(self.tokenizer.pieces(range(self.config.vocab_size))):
            ids.setdefault(piece, i)
        return ids

    def prefix_ids(self, prefix: Sequence[int | str]) -> tuple[int, ...]:
        """Forced output pieces as ids: an id as it is, a piece (a string: "▁Hund") by the vocabulary. A ValueError
        names a piece the vocabulary lacks, an id outside it, the pad piece (never part of a sentence), an end
        piece before the last, or more pieces than the model's max_len positions hold."""
        if isinstance(prefix, (str, bytes)):
            raise ValueError(f"prefix is a sequence of ids or pieces, not one string: {prefix!r}")
        ids, c = [], self.config
        for item in prefix:
            if isinstance(item, str):
                if item not in self.vocabulary:
                    raise ValueError(f"the piece {item!r} is not in this model's vocabulary")
                ids.append(self.vocabulary[item])
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool) and 0 <= item < c.vocab_size:
                ids.append(int(item))
            else:
                raise ValueError(f"a forced piece is a piece (a string) or an id from 0 to {c.vocab_size - 1}, "
                                 f"got {item!r}")
        if c.pad_id in ids:
            raise ValueError(f"the pad piece {self.tokenizer.pieces([c.pad_id])[0]!r} is never part of a "
                             "translation: it cannot be forced")
        if c.eos_id in ids[:-1]:
            raise ValueError(f"the end piece {self.tokenizer.pieces([c.eos_id])[0]!r} ends a translation: it can "
                             "only be the last forced piece")
        if len(ids) > c.max_len - 1:
            raise ValueError(f"{len(ids)} forced pieces: this model's output holds at most {c.max_len - 1}")
        return tuple(ids)

    def settings(self, mode: str, top_k: int, beam_size: int | None = None, max_new_tokens: int | None = None,
                 length_penalty: float | None = None, head_mask: HeadMask | None = None,
                 prefix: Sequence[int] = ()) -> DecodingSettings:
        """A trace's `settings`: how it was made, on this translator's device; with forced pieces, a branch."""
        return DecodingSettings("branch" if prefix else mode, top_k, str(self.device), beam_size, max_new_tokens,
                                length_penalty, heads_off="" if head_mask is None else str(head_mask),
                                precision=self.precision, prefix=tuple(self.tokenizer.pieces(prefix)))

    def _mask(self, head_mask: HeadMask | None) -> HeadMask | None:
        return None if head_mask is None else head_mask.to(self.device)

    def _encode(self, ids: list[int], head_mask: HeadMask | None = None) -> Encoded:
        """The encoder pass of one sentence, with its attention."""
        return self.model.encode(torch.tensor([ids], device=self.device), need_weights=True, head_mask=head_mask)

    @torch.inference_mode()
    def stream(self, text: str, decoding: Decoding | None = None, *, stop: Callable[[], bool] | None = None,
               between: Callable[[], None] | None = None, **changes) -> Iterator[Step | Trace]:
        """Translate `text` as `decoding` asks (default: greedy, every head on), with `changes` to its fields
        (`beam_size=5`, as Hugging Face's generate takes a GenerationConfig and keyword overrides); the last item is
        the finished Trace.

        Greedy decoding (beam_size 1) first yields each Step as soon as it exists, and builds the Trace from
        those steps. When `stop()` turns true between two steps, decoding ends there and the Trace holds the
        pieces so far (`settings.stopped`). Beam search yields only the Trace, whose attention is one
        teacher-forced decoder pass over the best hypothesis. `between()` is called between two decoding steps, greedy
        or beam (where a caller may let other work use the model). Either way the encoder runs once. Inference mode
        holds only while the generator computes: it may be resumed on another thread (Gradio does). The heads
        switched off (`heads_off`) are off in every pass.

        A `prefix` (ids, or pieces as strings: `prefix=["▁Der", "▁Hund"]`; a ValueError names a piece the
        vocabulary lacks, see `prefix_ids`) makes a branch: the output's first pieces are the prefix, forced on the
        same decoding path, then the model's own greedy decoding, or beam search whose hypotheses all start with it.
        Each forced piece's step records the model's own top-k and its log p of the forced piece; the trace's mode
        is "branch" and its settings name the forced pieces and where they part from the model's own choices.
        """
        d = replace(decoding or Decoding(), **changes)
        d = replace(d, prefix=self.prefix_ids(d.prefix))
        src, notices = self.encode_source(text)
        limit = max(output_limit(self.model, len(src), d.max_new_tokens), len(d.prefix))
        head_mask = self._mask(HeadMask.parse(d.heads_off, self.config) if d.heads_off else None)
        settings = self.settings("greedy" if d.beam_size == 1 else "beam", d.top_k, beam_size=d.beam_size,
                                 max_new_tokens=limit, length_penalty=d.length_penalty, head_mask=head_mask,
                                 prefix=d.prefix)
        encoded = self._encode(src, head_mask)
        if d.beam_size > 1:
            hyps = beam_hypotheses(self.model, encoded, d.beam_size, limit, d.length_penalty, head_mask, between,
                                   d.prefix)[0]
            trace = self._forced(src, hyps[0].ids, encoded, d.top_k, settings, notices, head_mask)
            trace.candidates = [Candidate(self.tokenizer.decode(h.ids),
                                          self.tokenizer.pieces(i for i in h.ids if i != self.config.eos_id),
                                          h.score, h.log_prob, h.ids, self.config.eos_id) for h in hyps]
            yield trace
            return
        steps, own = [], []
        for step, choice in self._greedy_steps(encoded, limit, d.top_k, head_mask, d.prefix):
            steps.append(step)
            own.append(choice)
            yield step
            if stop is not None and step.token_id != self.config.eos_id and stop():
                settings = replace(settings, stopped=True)
                break
            if between is not None:
                between()
        yield self._trace_from_steps(src, encoded, steps, _parted(settings, [s.token_id for s in steps], own),
                                     notices)

    def translate(self, text: str, decoding: Decoding | None = None, **changes) -> Trace:
        """The Trace of `text`: the last item of `stream`."""
        *_, trace = self.stream(text, decoding, **changes)
        return trace

    def _greedy_steps(self, encoded: Encoded, limit: int, top_k: int, head_mask: HeadMask | None,
                      prefix: Sequence[int]) -> Iterator[tuple[Step, int]]:
        """Each Step of greedy decoding after `prefix`, with the model's own choice at it."""
        for s in greedy_steps(self.model, encoded, limit, need_weights=True, head_mask=head_mask, prefix=prefix):
            token_id = int(s.ids[0])
            probs = s.logits[0].softmax(-1)  # (V,)
            yield Step(index=s.index, token=self.tokenizer.pieces([token_id])[0], token_id=token_id,
                       top_k=_top_k(probs[None], top_k, self.tokenizer)[0],
                       decoder_self_attn=s.self_attn[:, 0].float().cpu().numpy(),  # (L, h, t+1)
                       cross_attn=s.cross_attn[:, 0].float().cpu().numpy(),  # (L, h, S)
                       log_prob=float(s.logits[0].log_softmax(-1)[token_id])), int(s.own[0])

    def _trace_from_steps(self, src: list[int], encoded: Encoded, steps: list[Step],
                          settings: DecodingSettings, notices: list[str]) -> Trace:
        T, S = len(steps), len(src)
        L, h = self.config.n_decoder_layers, self.config.n_heads
        self_attn = np.zeros((L, h, T, T), dtype=np.float32)
        cross = np.zeros((L, h, T, S), dtype=np.float32)
        for s in steps:
            self_attn[:, :, s.index, :s.index + 1] = s.decoder_self_attn
            cross[:, :, s.index] = s.cross_attn
        return self._trace(src, [s.token_id for s in steps], encoded, self_attn, cross, [s.top_k for s in steps],
                           settings, notices, [s.log_prob for s in steps])

    def _forced(self, src: list[int], output_ids: list[int], encoded: Encoded, top_k: int,
                settings: DecodingSettings, notices: list[str], head_mask: HeadMask | None = None) -> Trace:
        """One teacher-forced decoder pass that reads `output_ids` as the decoder produced them."""
        target_in = torch.tensor([decoder_input(output_ids, self.config.decoder_start_id)], device=self.device)
        out = self.model.decode(target_in, encoded, need_weights=True, head_mask=head_mask)
        logits = out.logits[0].float()  # (T, V)
        written = torch.tensor(output_ids, dtype=torch.long, device=self.device)[:, None]  # (T, 1)
        log_probs = logits.log_softmax(-1).gather(-1, written)[:, 0]
        return self._trace(src, output_ids, encoded, _stack(out.self_attn), _stack(out.cross_attn),
                           _top_k(logits.softmax(-1), top_k, self.tokenizer),
                           _parted(settings, output_ids, own_choice(self.model, logits).tolist()), notices,
                           log_probs.tolist())

    def _trace(self, src: list[int], output_ids: list[int], encoded: Encoded, decoder_self_attn: np.ndarray,
               cross_attn: np.ndarray, top_k: list[list[TopK]], settings: DecodingSettings,
               notices: list[str], log_probs: list[float]) -> Trace:
        output_tokens = self.tokenizer.pieces(output_ids)
        return Trace(text=detokenize(output_tokens), source_tokens=self.tokenizer.pieces(src),
                     target_tokens=self.tokenizer.pieces(decoder_input(output_ids, self.config.decoder_start_id)),
                     output_tokens=output_tokens, encoder_self_attn=_stack(encoded.self_attn),
                     decoder_self_attn=decoder_self_attn, cross_attn=cross_attn, top_k=top_k, settings=settings,
                     checkpoint=self.checkpoint.id, source_ids=src, output_ids=output_ids, notices=notices,
                     eos_id=self.config.eos_id, log_probs=log_probs)

    @torch.inference_mode()
    def force(self, text: str, target_text: str, top_k: int = 5, head_mask: HeadMask | None = None) -> Trace:
        """Teacher-forced pass over a given translation: its attention and what the model expected."""
        src, notices = self.encode_source(text)
        output, cut = self.encode_target(target_text)
        head_mask = self._mask(head_mask)
        return self._forced(src, output, self._encode(src, head_mask), top_k,
                            self.settings("forced", top_k, head_mask=head_mask), notices + cut, head_mask)

    @torch.inference_mode()
    def force_output(self, source_ids: Sequence[int], output_ids: Sequence[int], top_k: int = 5,
                     mode: str = "forced", head_mask: HeadMask | None = None) -> Trace:
        """Teacher-forced pass over output ids as a decoder produced them (a Trace's or Candidate's `ids`,
        EOS included when it was chosen), e.g. another model's output read by this one."""
        src, head_mask = list(source_ids), self._mask(head_mask)
        return self._forced(src, list(output_ids), self._encode(src, head_mask), top_k,
                            self.settings(mode, top_k, head_mask=head_mask), [], head_mask)

    def log_probs(self, source_ids: Sequence[int], output_ids: Sequence[int],
                  head_mask: HeadMask | None = None) -> np.ndarray:
        """log p(output_ids[t] | source, output_ids[:t]) for each t, teacher-forced (float64, one per output id)."""
        return self.log_probs_each(source_ids, output_ids, [head_mask])[0]

    @torch.inference_mode()
    def log_probs_each(self, source_ids: Sequence[int], output_ids: Sequence[int],
                       head_masks: Sequence[HeadMask | None]) -> np.ndarray:
        """`log_probs` under each of `head_masks` (None: every head on), (len(head_masks), T): one batched pass,
        a row per mask."""
        n = len(head_masks)
        src = torch.tensor([list(source_ids)] * n, device=self.device)
        target_in = torch.tensor([decoder_input(list(output_ids), self.config.decoder_start_id)] * n,
                                 device=self.device)
        logits = self.model(src, target_in, self._mask(HeadMask.stack(head_masks, self.config))).double()
        chosen = torch.tensor([list(output_ids)] * n, device=self.device)[..., None]
        return logits.log_softmax(-1).gather(-1, chosen)[..., 0].cpu().numpy()  # (n, T)

    @torch.inference_mode()
    def inspect_candidate(self, trace: Trace, index: int, top_k: int | None = None,
                          head_mask: HeadMask | None = None) -> Trace:
        """The Trace of beam candidate `index` of `trace`, with the same candidates, settings and notices."""
        settings = replace(trace.settings, mode="beam candidate", candidate=index + 1,
                           top_k=trace.settings.top_k if top_k is None else top_k)
        src, head_mask = list(trace.source_ids), self._mask(head_mask)
        new = self._forced(src, list(trace.candidates[index].ids), self._encode(src, head_mask), settings.top_k,
                           settings, list(trace.notices), head_mask)
        new.candidates = trace.candidates
        return new

    @torch.inference_mode()
    def head_vectors(self, trace: Trace, kind: str, layer: int, head_mask: HeadMask | None = None) -> HeadVectors:
        """The per-head q, k, v of `kind` in layer `layer` (from 1) of a teacher-forced pass over the trace's ids:
        the numbers behind its attention maps, from the model's own modules."""
        src = torch.tensor([list(trace.source_ids)], device=self.device)
        tgt = torch.tensor([decoder_input(list(trace.output_ids), self.config.decoder_start_id)], device=self.device)
        got = self.model.attention_inputs(src, tgt, kind, layer - 1, self._mask(head_mask))
        q, k, v, weights, heads = (t[0].float().cpu().numpy() for t in (got.q, got.k, got.v, got.weights, got.heads))
        visible = np.ones(weights.shape[1:], dtype=bool) if got.mask is None else got.mask.cpu().numpy()
        return HeadVectors(kind, layer, q, k, v, visible, weights, heads)

    @torch.inference_mode()
    def logit_lens(self, trace: Trace, k: int = 5, head_mask: HeadMask | None = None) -> LogitLens:
        """The logit lens of a trace: a teacher-forced pass over its ids, each decoder layer's stream at each step
        through the output projection, top k."""
        src = torch.tensor([list(trace.source_ids)], device=self.device)
        tgt = torch.tensor([decoder_input(list(trace.output_ids), self.config.decoder_start_id)], device=self.device)
        streams = self.model.decoder_streams(src, tgt, self._mask(head_mask))
        logits = torch.cat([self.model.lens_logits(y) for y in streams]).float()  # (L, T, V)
        probs, ids = logits.softmax(-1).topk(min(k, logits.size(-1)), dim=-1)
        ids = ids.cpu().numpy()
        tokens = tuple(tuple(tuple(self.tokenizer.pieces(row)) for row in layer) for layer in ids)
        return LogitLens(ids, tokens, probs.cpu().numpy(), self.model.decoder_norm is not None)

    def translate_batch(self, texts: list[str], beam_size: int = 1, max_new_tokens: int | None = None,
                        length_penalty: float = 1.0, batch_size: int = 64,
                        head_mask: HeadMask | None = None) -> list[str]:
        """Plain translations of many sentences (no attention), batched by length."""
        srcs = [self.encode_source(t)[0] for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(srcs[i]))
        results = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            idx = [i for i in order[start:start + batch_size] if texts[i].strip()]
            if not idx:
                continue
            src = pad([srcs[i] for i in idx], self.config.pad_id).to(self.device)
            if beam_size == 1:
                outs = greedy(self.model, src, max_new_tokens, self._mask(head_mask))
            else:
                outs = [hyps[0].ids for hyps in beam_search(self.model, src, beam_size, max_new_tokens,
                                                            length_penalty, self._mask(head_mask))]
            for i, ids in zip(idx, outs):
                results[i] = self.tokenizer.decode(ids)
        return results
