"""The guided tour: stops through the Transformer on the visitor's own translation, each picked from that trace's own
numbers (docs/tour.md). Pure: a trace, the model's facts and what the model passes of `engine.tour_extras` found go
in, typed stops come out; the browser (anatomy/viewer/tour.js) shows them and sets the viewer at each.

Every number and piece a stop's text names is in its `claims`, which tests/test_tour.py recomputes from the trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from transformer import Trace
from transformer.analysis import HIDDEN_PIECES, HeadStats, trace_head_statistics
from transformer.config import ModelConfig
from transformer.explain import Attribution
from transformer.head_mask import HeadRef
from transformer.heads import CorpusImportance
from transformer.kinds import by_name
from transformer.pieces import SPACE_MARK, SPECIAL, word_groups

from .run import Ablation

MAX_WORDS = 80  # a stop's text, at most
# Tabs and places on the page, by the ids both hosts give them (ui/values.py Tab; offline.html's sections map them)
TABS = ("heads", "stats", "predictions", "why", "importance", "positional", "architecture")
TARGETS = ("source-box", "pe", "heatmap", "step-topk", "candidates-box", "why-step", "architecture")


@dataclass(frozen=True)
class StopView:
    """What a stop sets the viewer to: the tab below the explorer, the attention view and its step (from 1)."""

    tab: str  # one of TABS
    kind: str  # encoder, decoder or cross
    layer: int  # from 1
    head: str  # "mean" or a head from 1
    step: int  # from 1
    display: str = "heatmap"


@dataclass(frozen=True)
class Stop:
    """One stop of the tour."""

    key: str  # what it shows, stable across sentences: "pieces", "positional-head", ...
    title: str
    text: str  # 2-4 sentences, at most MAX_WORDS words, every number and piece from the trace
    view: StopView
    target: str  # the place on the page to look at (one of TARGETS)
    paper: str = ""  # the paper's section, when one applies
    equation: str = ""  # plain text
    claims: Mapping[str, object] = field(default_factory=dict)  # what the text states, for the tests


@dataclass(frozen=True)
class ModelFacts:
    """What the tour says of the model beside the trace (from its config and its folder)."""

    d_model: int
    n_heads: int
    d_ff: int
    vocab_size: int
    encoder_layers: int
    decoder_layers: int
    untrained: bool = False
    important: HeadRef | None = None  # the most important head over a corpus (heads.json), when the folder has one
    important_of: str = ""  # that corpus's name and size, in words


def facts_of(config: ModelConfig, untrained: bool = False, heads: CorpusImportance | None = None) -> ModelFacts:
    """A model's facts from its config and its corpus head importance (heads.json; None without one)."""
    important = heads.by_importance.order[-1] if heads is not None and heads.by_importance.order else None
    return ModelFacts(config.d_model, config.n_heads, config.d_ff, config.vocab_size, config.n_encoder_layers,
                      config.n_decoder_layers, untrained, important,
                      f"{heads.sentences} {heads.corpus} {heads.split} sentences" if heads is not None else "")


@dataclass(frozen=True)
class TourExtras:
    """What the stops that need a model pass need, made by engine.tour_extras in the model's slot."""

    # the largest decoder self-attention weight above the diagonal when the output is read in one teacher-forced
    # pass (engine.above_diagonal); None when nothing was decoded
    above: float | None
    step: int  # the why stop's step, from 1
    attribution: Attribution | None  # integrated gradients of that step's piece
    ablated: Trace | None  # the translation with ModelFacts.important off
    ablation: Ablation | None  # the shown pieces' log p with every head on and with it off


@dataclass(frozen=True)
class Tour:
    of: Trace
    stops: tuple[Stop, ...]
    left_out: tuple[str, ...]  # the stops this trace or model cannot make, each with why


def tour(trace: Trace, facts: ModelFacts, extras: TourExtras | None = None, *, asked: bool = True) -> Tour:
    """The tour of one translation. `extras` None: the stops that need a model pass are left out with a note
    (`asked`: whether they were asked for at all; the offline page's note says how to get them)."""
    t = _Trace(trace)
    stops, left = [], []
    for make in (_pieces, _positions, _positional_head, _wide_head, _parking, _start, _masked, _alignment, _unsure,
                 _why, _beam, _heads_off, _architecture):
        made = make(t, facts, extras)
        if isinstance(made, Stop):
            stops.append(made)
        elif made:
            left.append(made)
    if extras is None and not asked:
        left.append("The decoder's mask, Why this word and switching a head off need the model: start the tour in "
                    "the app.")
    return Tour(trace, tuple(stops), tuple(left))


def why_step(trace: Trace) -> int | None:
    """The step (from 1) the why stop explains: where the model was least sure. None when nothing was decoded."""
    return _Trace(trace).unsure()


# ---- what the stops read of a trace ----

class _Trace:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.stats = trace_head_statistics(trace)
        self.T = len(trace.output_tokens)

    def heads(self, kind: str) -> list[HeadStats]:
        return [s for s in self.stats if s.kind == kind]

    def positional(self) -> tuple[float, str, HeadStats] | None:
        """The encoder head with the largest share on the previous or next piece: (share, side, head); None for a
        one-piece source."""
        if len(self.trace.source_tokens) < 2:
            return None
        heads = self.heads("encoder")
        return max([(s.previous, "previous", s) for s in heads] + [(s.next, "next", s) for s in heads],
                   key=lambda x: x[0])

    def unsure(self) -> int | None:
        """The step whose most likely piece was least likely (special pieces left out), from 1."""
        rows = [(row[0].prob, t + 1) for t, row in enumerate(self.trace.top_k)
                if row and self.trace.output_tokens[t] not in SPECIAL]
        return min(rows)[1] if rows else None


def _word(piece: str) -> str:
    """A piece as the tour quotes it: its text without the word-start mark."""
    return f"“{piece.replace(SPACE_MARK, '') or piece}”"


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _head(s: HeadStats | HeadRef) -> str:
    return f"head {s.head} of layer {s.layer}"


def _no_steps(name: str) -> str:
    return f"{name}: nothing was decoded, so there is no step to show."


# ---- the stops, in the order of the data through the model ----

def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _forced(trace: Trace, step: int) -> bool:
    """Whether step `step` (from 1) of a branch was forced, not the model's own choice (settings.prefix)."""
    return step <= len(trace.settings.prefix)


def _pieces(t: _Trace, facts: ModelFacts, extras) -> Stop:
    src = t.trace.source_tokens
    # a word is a group of pieces with a letter or digit (punctuation after a word is a piece of its own kind)
    groups = [[i for i in g if src[i] not in SPECIAL and any(ch.isalnum() for ch in src[i])] for g in word_groups(src)]
    groups = [g for g in groups if g]
    split = [g for g in groups if len(g) > 1]
    longest = max(split, key=len) if split else None
    n = len(src) - sum(p in SPECIAL for p in src)
    text = f"The tokenizer cut your text into {_plural(n, 'piece')} and added the end piece </s>. "
    if longest:
        parts = " · ".join(_word(src[i]) for i in longest)
        text += (f"{_plural(len(split), 'word')} of {len(groups)} split: {_word(''.join(src[i] for i in longest))} "
                 f"became {parts}. The model's {facts.vocab_size:,} pieces were learnt from its training text, so a "
                 f"rare word is built from common parts.")
    else:
        each = "its one word is" if len(groups) == 1 else f"each of its {len(groups)} words is"
        text += (f"No word was split: {each} one of the model's {facts.vocab_size:,} pieces, learnt from its "
                 "training text.")
    if facts.untrained:
        text += " This model is untrained: what its heads do below is chance."
    return Stop("pieces", "Your sentence in pieces", text,
                StopView("heads", "encoder", facts.encoder_layers, "mean", 1),
                "source-box", "§5.1 (byte-pair encoding, a shared vocabulary)",
                claims={"pieces": n, "words": len(groups), "split": len(split),
                        "longest": [src[i] for i in longest] if longest else None, "vocab": facts.vocab_size})


def _positions(t: _Trace, facts: ModelFacts, extras) -> Stop:
    src, d = t.trace.source_tokens, facts.d_model
    last = max((i for i, p in enumerate(src) if p not in SPECIAL), default=len(src) - 1)
    text = (f"Each piece becomes a vector of {d} numbers, its embedding times √{d}, plus a positional encoding: "
            f"sines and cosines whose wavelengths grow from 2π to 10000·2π across the {d} dimensions. Attention "
            f"alone ignores order; this is how the model knows that {_word(src[0])} comes first (position 0) and "
            f"{_word(src[last])} is at position {last}.")
    return Stop("positions", "Embeddings and positions", text, StopView("positional", "encoder", 1, "mean", 1), "pe",
                "§3.4, §3.5",
                "PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))",
                claims={"d_model": d, "first": src[0], "last": src[last], "position": last})


def _positional_head(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    heads, best = t.heads("encoder"), t.positional()
    if best is None:
        return "The most positional head: a one-piece source has no neighbours to attend to."
    share, side, s = best
    text = (f"Encoder self-attention: every piece looks at every piece of the source. {_head(s).capitalize()} "
            f"sends {_pct(share)} of its weight to the {side} piece, the most positional of the "
            f"{len(heads)} encoder heads: it reads word order, from the positional encoding alone. Each row of the "
            f"heatmap is one piece's softmax over all of them.")
    return Stop("positional-head", "A head that reads word order", text,
                StopView("stats", "encoder", s.layer, str(s.head), 1), "heatmap", "§3.2.2 (multi-head attention)",
                "MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O",
                claims={"layer": s.layer, "head": s.head, "side": side, "share": round(share, 2)})


def _wide_head(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    heads = t.heads("encoder")
    positional = t.positional()
    if positional is None:
        return "A head that spreads its attention: a one-piece source has no neighbours to attend to."
    others = [s for s in heads if s is not positional[2]]
    if not others:
        return "A head that spreads its attention: this model has one encoder head, shown at the stop before."
    s = max(others, key=lambda x: x.entropy)
    sharp = min(heads, key=lambda x: x.entropy)
    S = len(t.trace.source_tokens)
    text = (f"{_head(s).capitalize()} spreads its attention wide: {s.entropy:.1f} bits on average, as if over "
            f"{2 ** s.entropy:.0f} equally weighted pieces of the {S}. The sharpest encoder head, {_head(sharp)}, has "
            f"{sharp.entropy:.1f} bits. A wide head gathers the whole sentence into each piece's vector; a sharp "
            f"one copies one neighbour.")
    return Stop("wide-head", "A head that spreads its attention", text,
                StopView("stats", "encoder", s.layer, str(s.head), 1), "heatmap",
                "§3.2.1 (scaled dot-product attention)",
                "Attention(Q, K, V) = softmax(Q K^T / √d_k) V",
                claims={"layer": s.layer, "head": s.head, "entropy": round(s.entropy, 1),
                        "equal": round(2 ** s.entropy), "sharp": [sharp.layer, sharp.head],
                        "sharp_entropy": round(sharp.entropy, 1)})


def _parking(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    heads = [s for s in t.stats if s.kind in ("encoder", "cross") and s.eos is not None]
    if not t.T or not heads:
        return "A head that parks its attention: no head here has the end piece </s> among its keys."
    s = max(heads, key=lambda x: x.eos)
    name = by_name(s.kind).label
    text = (f"Every softmax row sums to 1, so a head must put its weight somewhere even when it has nothing to "
            f"look for. {_head(s).capitalize()} of {name} puts {_pct(s.eos)} on the end piece </s> on average: a "
            f"place to park attention it does not need (value-norm weights, under the view, show how little it moves).")
    step = t.T if s.kind == "cross" else 1
    return Stop("parking", "A head that parks its attention", text,
                StopView("stats", s.kind, s.layer, str(s.head), step), "heatmap", "§3.2.1",
                claims={"kind": s.kind, "layer": s.layer, "head": s.head, "eos": round(s.eos, 2)})


def _start(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    if not t.T:
        return _no_steps("The decoder's first step")
    tr = t.trace
    w = np.asarray(tr.cross_attn[-1, :, 0], dtype=np.float64).mean(0)  # (S,): the last layer's mean, step 1
    keep = [j for j, p in enumerate(tr.source_tokens) if p not in HIDDEN_PIECES] or list(range(len(w)))
    j = max(keep, key=lambda j: w[j])
    p = tr.top_k[0][0].prob if tr.top_k and tr.top_k[0] else None
    wrote = tr.output_tokens[0]
    text = (f"The decoder writes one piece per step, reading the pieces it wrote so far. At step 1 it has only the "
            f"start piece <s>, so cross-attention to the source is all it can go on: the last layer's heads put "
            f"{_pct(w[j])} on {_word(tr.source_tokens[j])} on average, and "
            + (f"this branch forces {_word(wrote)} there (the model's own first choice: {_word(tr.top_k[0][0].token)})."
               if _forced(tr, 1) and tr.top_k and tr.top_k[0] and tr.top_k[0][0].token != wrote else
               f"the model writes {_word(wrote)}"
               + (f" with p = {p:.2f}." if p is not None and tr.top_k[0][0].token == wrote else ".")))
    return Stop("start", "The decoder's first step", text,
                StopView("heads", "cross", facts.decoder_layers, "mean", 1), "heatmap", "§3.1 (auto-regressive)",
                claims={"weight": round(float(w[j]), 2), "source": tr.source_tokens[j], "wrote": wrote,
                        "p": None if p is None else round(p, 2)})


def _masked(t: _Trace, facts: ModelFacts, extras: TourExtras | None) -> Stop | str | None:
    if t.T < 2:
        return "The decoder's mask: a one-step translation has no later piece to hide."
    if extras is None:
        return None  # said once, by the tour
    heads = t.heads("decoder")
    s = max(heads, key=lambda x: x.previous)
    step = (t.T + 1) // 2
    # from the whole output read at once, as in training: decoding itself never computes a weight on a later piece
    above = extras.above
    text = (f"Decoder self-attention is masked: at step {step}, writing {_word(t.trace.output_tokens[step - 1])}, "
            f"the decoder sees only the {step} pieces read so far, never later ones. Read in one pass, as in "
            f"training, your translation's largest weight above the diagonal is {above:.2g}, in any layer and head. "
            f"{_head(s).capitalize()} sends "
            f"{_pct(s.previous)} to the piece just before: the model learns from whole sentences, but must "
            f"write as it will at inference.")
    return Stop("masked", "The decoder's mask", text, StopView("heads", "decoder", s.layer, str(s.head), step),
                "heatmap", "§3.2.3 (masking: −∞ before the softmax)",
                "softmax(Q K^T / √d_k + M),  M_ij = −∞ for j > i",
                claims={"step": step, "wrote": t.trace.output_tokens[step - 1], "above": above, "layer": s.layer,
                        "head": s.head, "previous": round(s.previous, 2)})


def _alignment(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    if t.T < 2:
        return "The aligning cross-attention head: a one-step translation has nothing to align."
    tr = t.trace
    cross = np.asarray(tr.cross_attn, dtype=np.float64)  # (L, h, T, S)
    keep = [j for j, p in enumerate(tr.source_tokens) if p not in HIDDEN_PIECES] or list(range(cross.shape[-1]))
    rows = [i for i, p in enumerate(tr.output_tokens) if p not in SPECIAL] or list(range(cross.shape[2]))
    # aligning: each written piece looks at one source piece (its peak), and those move forward with the output
    peak = cross[:, :, rows][..., keep].max(-1).mean(-1)  # (L, h)
    heads = t.heads("cross")
    s = max(heads, key=lambda x: max(x.monotonic, 0.0) * peak[x.layer - 1, x.head - 1])
    w = cross[s.layer - 1, s.head - 1]  # (T, S)
    i = max(rows, key=lambda i: w[i, keep].max())
    j = keep[int(np.argmax(w[i, keep]))]
    sharp = peak[s.layer - 1, s.head - 1]
    text = (f"Cross-attention lets each step read the encoder's output. Of the {len(heads)} cross heads, "
            f"{_head(s)} aligns best: each piece it writes looks at one source piece ({_pct(sharp)} of its weight "
            f"on average), and those move forward with the translation (monotonic {s.monotonic:.2f}). At step "
            f"{i + 1}, writing {_word(tr.output_tokens[i])}, it puts {_pct(w[i, j])} on {_word(tr.source_tokens[j])}.")
    return Stop("alignment", "The head that aligns", text, StopView("heads", "cross", s.layer, str(s.head), i + 1),
                "heatmap", "§3.2.3 (encoder-decoder attention)",
                claims={"layer": s.layer, "head": s.head, "monotonic": round(s.monotonic, 2),
                        "peak": round(float(sharp), 2), "step": i + 1, "wrote": tr.output_tokens[i],
                        "source": tr.source_tokens[j], "weight": round(float(w[i, j]), 2)})


def _unsure(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    step = t.unsure()
    if step is None:
        return _no_steps("The least sure step")
    row = t.trace.top_k[step - 1]
    others = ", ".join(f"{_word(c.token)} {c.prob:.2f}" for c in row[1:3])
    text = (f"Each step ends in a softmax over all {facts.vocab_size:,} pieces. The model was least sure at step "
            f"{step}: its first choice, {_word(row[0].token)}, had p = {row[0].prob:.2f}"
            + (f", then {others}." if others else ".")
            + ((f" This branch forced {_word(t.trace.output_tokens[step - 1])} there." if _forced(t.trace, step)
                else f" It wrote {_word(t.trace.output_tokens[step - 1])}.")
               if row[0].token != t.trace.output_tokens[step - 1] else " Every other step was surer."))
    return Stop("unsure", "Where the model was least sure", text,
                StopView("predictions", "cross", facts.decoder_layers, "mean", step), "step-topk",
                "§3.4 (the output projection shares the embedding's weights)", "p = softmax(h W_E^T)",
                claims={"step": step, "top": [[c.token, round(c.prob, 2)] for c in row[:3]],
                        "wrote": t.trace.output_tokens[step - 1]})


def _why(t: _Trace, facts: ModelFacts, extras: TourExtras | None) -> Stop | str | None:
    if extras is None:
        return None  # said once, by the tour
    if extras.attribution is None:
        return _no_steps("Why this word")
    a, step, tr = extras.attribution, extras.step, t.trace
    source_share, _ = a.shares()[0]
    groups = [g for g in word_groups(tr.source_tokens) if tr.source_tokens[g[0]] not in SPECIAL]
    parts = [float(a.source[0, g].sum()) for g in groups]
    best = int(np.argmax(parts)) if parts else None
    # a word that raised it: none when every source word lowered it
    word = "".join(tr.source_tokens[i] for i in groups[best]) if best is not None and parts[best] > 0 else ""
    text = (f"Why {_word(tr.output_tokens[step - 1])} at step {step}? Integrated gradients split its log-probability "
            f"among the input pieces: {_pct(source_share)} of the evidence for it came from the source, the rest from "
            f"the pieces already written" + (f", and the source word that raised it most is {_word(word)}." if word
                                             else "."))
    return Stop("why", "Why this word", text, StopView("why", "cross", facts.decoder_layers, "mean", step), "why-step",
                "Sundararajan et al. 2017 (not in the paper)",
                "IG_i = (x_i − x'_i) · ∫₀¹ ∂f(x' + α(x − x'))/∂x_i dα",
                claims={"step": step, "wrote": tr.output_tokens[step - 1],
                        "source_share": round(float(source_share), 2),
                        "word": word})


def _beam(t: _Trace, facts: ModelFacts, extras) -> Stop | str:
    c = t.trace.candidates
    if len(c) < 2:
        return ("Beam search's candidates: this translation was decoded greedily (beam size 1), so there are none to "
                "compare: translate with a beam size above 1 for this stop.")
    a, b = c[0].tokens, c[1].tokens
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    alpha = t.trace.settings.length_penalty
    if k < min(len(a), len(b)):
        parted = (f"They share {_plural(k, 'piece')}, then part at step {k + 1}: " if k else
                  "They differ from the first piece: ") + f"{_word(a[k])} against {_word(b[k])}."
    else:
        parted = f"One is the other with {abs(len(a) - len(b))} more pieces at its end."
    forced = len(t.trace.settings.prefix)
    text = (f"Beam search kept {t.trace.settings.beam_size} candidates at every step"
            + (f" after this branch's {_plural(forced, 'forced piece')}" if forced else "")
            + " instead of one and finished "
            f"{len(c)}. {parted} The best scored {c[0].score:.3f}, the runner-up {c[1].score:.3f}: log p over "
            f"length^{alpha:g}, so that a short translation is not preferred only for being short.")
    step = min(k + 1, t.T) if t.T else 1
    return Stop("beam", "Where the candidates part", text,
                StopView("predictions", "cross", facts.decoder_layers, "mean", max(step, 1)), "candidates-box",
                "§6.1 (beam size 4, length penalty α = 0.6 in the paper)", "score = log p(y | x) / |y|^α",
                claims={"beams": t.trace.settings.beam_size, "finished": len(c), "shared": k,
                        "scores": [round(c[0].score, 3), round(c[1].score, 3)], "alpha": alpha})


def _heads_off(t: _Trace, facts: ModelFacts, extras: TourExtras | None) -> Stop | str | None:
    if facts.important is None:
        return ("Switching the most important head off: this model's folder has no head importance over a corpus "
                "(heads.json), so there is no head to pick.")
    if extras is None:
        return None
    h, tr = facts.important, t.trace
    name = by_name(h.kind).label
    text = f"Over {facts.important_of}, {_head(h)} of {name} mattered most. "
    drop = None
    if extras.ablation is not None and len(extras.ablation.log_probs):
        drop = float(np.mean(extras.ablation.log_probs - extras.ablation.ablated_log_probs))
    if extras.ablated is not None and extras.ablated.text != tr.text:
        text += f"Switched off, your sentence becomes “{extras.ablated.text}”."
    elif extras.ablated is not None:
        text += "Switched off, your translation stays the same"
        text += f", each piece's log p {'falling' if drop >= 0 else 'rising'} by {abs(drop):.3f} on average." \
            if drop is not None else "."
    text += " The view shows the head; switch heads off yourself under it."
    return Stop("heads-off", "Switching the most important head off", text,
                StopView("importance", h.kind, h.layer, str(h.head), max(t.T, 1)), "heatmap",
                "§6.2 (Table 3 (A): one head is 0.9 BLEU worse than 8)",
                claims={"kind": h.kind, "layer": h.layer, "head": h.head,
                        "ablated": None if extras.ablated is None else extras.ablated.text,
                        "drop": None if drop is None else round(drop, 3)})


def _architecture(t: _Trace, facts: ModelFacts, extras) -> Stop:
    S, T, d, h = len(t.trace.source_tokens), max(t.T, 1), facts.d_model, facts.n_heads
    text = (f"Your {S} source pieces went through the encoder as a matrix of {S} × {d}, {facts.encoder_layers} layers "
            f"of attention ({h} heads of d_k = {d // h}) and a feed-forward net ({d} → {facts.d_ff} → {d}). The "
            f"decoder ran {facts.decoder_layers} layers over {T} × {d}, and the output projection turned each row "
            f"into {facts.vocab_size:,} scores.")
    return Stop("architecture", "The whole model, at your sentence's sizes", text,
                StopView("architecture", "cross", facts.decoder_layers, "mean", max(t.T, 1)), "architecture",
                "§3.1, Figure 1", "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
                claims={"S": S, "T": T, "d_model": d, "heads": h, "d_k": d // h, "d_ff": facts.d_ff,
                        "layers": [facts.encoder_layers, facts.decoder_layers], "vocab": facts.vocab_size})
