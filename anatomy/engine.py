"""The only calls into the Translator: load, translate (whole or streamed), teacher-force, the untrained twin.

Kept in one small module so that a change of the Translator's API is a change here only. Every trace made here
carries its direction key in `trace.settings.direction`. Every call that runs a model holds the model's slot
(anatomy/slot.py: one model pass at a time in the process, first come first served), and long work gives it up
between its passes (`SLOT.between`): a translation's steps, attribution's and importance's batches of rows.
"""
from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Callable, Iterator

import numpy as np
import torch

from transformer import HeadMask, HeadVectors, LogitLens, Step, Trace, Translator
from transformer import explain as explanation
from transformer.checkpoint import Checkpoint
from transformer.checkpoint import load as load_checkpoint
from transformer.explain import Attribution
from transformer.half import PRECISIONS
from transformer.heads import SentenceImportance, sentence_importance
from transformer.pieces import SPACE_MARK, detokenize, piece_texts, word_groups

from .inputs import Request
from .run import Ablation, Contrast, Explained, Norms
from .slot import SLOT
from .tour import ModelFacts, TourExtras, why_step


def load(source: str, name: str, local_files_only: bool = False) -> Translator:
    """A checkpoint folder or hf:// id, on the CPU, whose traces name it `name`; with local_files_only, an hf:// id
    from the Hugging Face cache alone (raises CheckpointError or anything a broken folder causes)."""
    checkpoint = load_checkpoint(source, "cpu", local_files_only=local_files_only)
    return on_device(dataclasses.replace(checkpoint, id=name), "cpu")


def precision() -> str:
    """The precision $ANATOMY_PRECISION asks for: auto, fp32 or fp16 (default auto:
    transformer.device.pick_precision)."""
    asked = (os.environ.get("ANATOMY_PRECISION") or "auto").lower()
    if asked not in PRECISIONS:
        warnings.warn(f"ANATOMY_PRECISION={asked!r} is none of {', '.join(PRECISIONS)}: using auto", stacklevel=3)
        return "auto"
    return asked


def on_device(checkpoint: Checkpoint, device: str, asked: str | None = None) -> Translator:
    """The checkpoint on `device`, in the precision `asked` (auto, fp32 or fp16; None: as $ANATOMY_PRECISION asks)."""
    return Translator(checkpoint, torch.device(device), precision() if asked is None else asked)


def source_pieces(translator: Translator, text: str) -> list[str]:
    return translator.tokenizer.pieces(translator.encode_source(text)[0])


def _tagged(trace: Trace, request: Request) -> Trace:
    return dataclasses.replace(trace, settings=dataclasses.replace(trace.settings, direction=request.key))


def head_mask(translator: Translator, request: Request) -> HeadMask | None:
    """The request's heads switched off (its `heads_off`, already checked against this model); None when none."""
    return _mask(translator, request.decoding.heads_off)


def trace_mask(translator: Translator, trace: Trace) -> HeadMask | None:
    """The heads that were off when `trace` was made (its `settings.heads_off`); None when none. Whatever is read
    again from a shown trace is read with these heads off, as the trace itself was."""
    return _mask(translator, trace.settings.heads_off)


def _mask(translator: Translator, heads_off: str) -> HeadMask | None:
    return HeadMask.parse(heads_off, translator.config) if heads_off else None


@SLOT.holding
def translate(translator: Translator, request: Request) -> Trace:
    """The whole trace of a request: greedy (beam 1) or beam search with its candidates."""
    return _tagged(translator.translate(request.text, request.decoding, between=SLOT.between), request)


@SLOT.holding
def ablation(translator: Translator, request: Request, original: Trace, before: Ablation | None = None) -> Ablation:
    """What switching the request's heads off does to `original`, the same request with every head on: the
    log-probability of each of its output pieces with every head on (`before`'s, when it has them for the same
    original) and with the heads off (teacher-forced; the two in one batched pass)."""
    source, output, mask = original.source_ids, original.output_ids, head_mask(translator, request)
    if before is not None and before.original is original:
        return Ablation(original, before.log_probs, translator.log_probs(source, output, mask))
    all_on, off = translator.log_probs_each(source, output, [None, mask])
    return Ablation(original, all_on, off)


@SLOT.holding
def importance(translator: Translator, trace: Trace) -> SentenceImportance:
    """How much the trace's translation needs each head of the model that made it (transformer.heads), judged
    with every head on whatever the trace had off (the page passes the all-heads original of an ablation)."""
    return sentence_importance(translator, trace, SLOT.between)


def stream(translator: Translator, request: Request, stopped: Callable[[], bool]) -> Iterator[Step | Trace]:
    """Greedy decoding, one Step per piece as soon as it exists; the last item is the finished Trace of the same
    pass. When `stopped()` turns true between two pieces, decoding ends there and the Trace holds the pieces so
    far (`settings.stopped`). The model's slot is held from the first step to the last, across the yields: the
    caller makes no other model call until it has the Trace."""
    steps = translator.stream(request.text, request.decoding, beam_size=1, stop=stopped, between=SLOT.between)
    held = SLOT.through(steps)
    for item in held:
        if isinstance(item, Trace):
            held.close()  # the slot given up before the caller goes on with the trace (and its own model calls)
            yield _tagged(item, request)
            return
        yield item


@SLOT.holding
def force(translator: Translator, request: Request, target: str) -> Trace:
    """Teacher-forced pass over a given translation."""
    return _tagged(translator.force(request.text, target, top_k=request.decoding.top_k,
                                    head_mask=head_mask(translator, request)), request)


@SLOT.holding
def candidate(translator: Translator, trace: Trace, row: int) -> Trace:
    """Beam candidate `row` of a trace, teacher-forced through the model that made the trace, with the heads that
    were off then; the candidates stay attached so that another one can be picked."""
    return translator.inspect_candidate(trace, row, head_mask=trace_mask(translator, trace))


@SLOT.holding
def untrained(twin: Translator, trace: Trace, max_new: int) -> tuple[Trace, str]:
    """The trace's output teacher-forced through the untrained twin (same pieces, so the attention maps line up
    cell by cell), and what the twin writes on its own; every head of the twin on, whatever the trace had off
    (the twin shows what training added, not what switching heads off takes away)."""
    forced = twin.force_output(list(trace.source_ids), list(trace.output_ids), top_k=1)
    # The model's own end marker (opus-mt: 0), not ours: id 3 is an ordinary piece there.
    source = twin.tokenizer.decode([i for i in trace.source_ids if i != twin.config.eos_id])
    own = twin.translate(source, max_new_tokens=min(len(trace.output_tokens) + 10, max_new), top_k=1,
                         between=SLOT.between)
    return forced, own.text or f"nothing: its first piece is {own.output_tokens[0] if own.output_tokens else '–'}"


@SLOT.holding
def head_vectors(translator: Translator, trace: Trace, kind: str, layer: int) -> HeadVectors:
    """The per-head q, k, v of one attention kind and layer (from 1) of a trace, from the model that made it with
    the heads that were off then."""
    return translator.head_vectors(trace, kind, layer, trace_mask(translator, trace))


@SLOT.holding
def explain(translator: Translator, trace: Trace,
            progress: Callable[[int, int], None] | None = None) -> Explained:
    """Why the model wrote each piece of a trace, from the model that made it with the heads that were off then:
    the logit lens (top 5) and every step's attribution by each method; `progress(done, steps)` as integrated
    gradients, the longest, goes."""
    return Explained(trace, logit_lens(translator, trace), attributions(translator, trace, progress=progress))


@SLOT.holding
def logit_lens(translator: Translator, trace: Trace) -> LogitLens:
    """What each decoder layer would predict at each step of a trace (top 5), from the model that made it with the
    heads that were off then."""
    return translator.logit_lens(trace, 5, trace_mask(translator, trace))


@SLOT.holding
def attribution(translator: Translator, trace: Trace, method: str, *, steps: list[int] | None = None,
                foil: int | None = None, progress: Callable[[int, int], None] | None = None) -> Attribution:
    """`method`'s attribution (transformer.explain.METHODS) of a trace's steps (all when None), from the model that
    made it with the heads that were off then; occlusion by the source's words as the views merge them."""
    return attributions(translator, trace, (method,), steps=steps, foil=foil, progress=progress)[method]


@SLOT.holding
def attributions(translator: Translator, trace: Trace, methods: tuple[str, ...] = tuple(explanation.METHODS), *,
                 steps: list[int] | None = None, foil: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Attribution]:
    """`attribution` by each of `methods`, the gradient methods from one set of passes (`progress` as they go)."""
    return explanation.attributions(translator, trace.source_ids, trace.output_ids, methods, steps=steps, foil=foil,
                                    words=word_groups(trace.source_tokens), head_mask=trace_mask(translator, trace),
                                    progress=progress, between=SLOT.between)


@SLOT.holding
def value_norms(translator: Translator, trace: Trace) -> Norms:
    """‖v W_o‖ of every head and key of a trace's three attention kinds, from the model that made it with the heads
    that were off then (a head off moves nothing)."""
    return Norms(trace, explanation.value_norms(translator, trace.source_ids, trace.output_ids,
                                                trace_mask(translator, trace)))


def foil_piece(translator: Translator, trace: Trace, step: int, word: str) -> int:
    """The piece that begins `word` at step `step` of the trace's output: the target text so far with the word
    after it (a space before it where the written piece starts a word), cut into pieces; where that text cuts the
    pieces before the step differently, the word's own first piece (a lone ▁ passed over)."""
    eos, before = translator.config.eos_id, list(trace.output_ids[:step])
    spaced = trace.output_tokens[step].startswith(SPACE_MARK) and any(piece_texts(trace.output_tokens[:step]))
    text = detokenize(trace.output_tokens[:step]) + (" " if spaced else "") + word
    ids = [i for i in translator.encode_target(text)[0] if i != eos]
    if ids[:step] == before and len(ids) > step:
        return ids[step]
    own = [i for i in translator.encode_target(word)[0] if i != eos]
    if not own:
        raise ValueError(f"“{word}” makes no piece for this model to compare against")
    pieces = translator.tokenizer.pieces(own)
    return own[1] if pieces[0] == SPACE_MARK and len(own) > 1 else own[0]


@SLOT.holding
def contrast(translator: Translator, trace: Trace, step: int, asked: str) -> Contrast:
    """Step `step` (from 0) of a trace explained against a foil by each method: the piece the model would write at
    this step to begin the word `asked` (`foil_piece`), or the step's most likely piece after the one written when
    `asked` is blank. ValueError, said for the page, when there is no such foil."""
    written = trace.output_ids[step]
    asked = asked.strip()
    if asked:
        foil = foil_piece(translator, trace, step, asked)
    else:
        foil = next((c.id for c in trace.top_k[step] if c.id != written), None)
        if foil is None:
            raise ValueError("this step recorded no other piece to compare against: type a word")
    if foil == written:
        raise ValueError(f"“{asked}” starts with the piece the model wrote, {trace.output_tokens[step]}: "
                         "type another word")
    return Contrast(step, translator.tokenizer.pieces([foil])[0], asked,
                    attributions(translator, trace, steps=[step], foil=foil))


@SLOT.holding
def above_diagonal(translator: Translator, trace: Trace) -> float:
    """The largest decoder self-attention weight on a later piece (above the diagonal), in any layer and head, when
    the trace's output is read in one teacher-forced pass, as in training: what the causal mask lets through. A
    decoded trace cannot show it: it holds zeros there by construction (each step's row is filled up to its step)."""
    forced = translator.force_output(trace.source_ids, trace.output_ids, top_k=1,
                                     head_mask=trace_mask(translator, trace))
    return float(np.triu(np.asarray(forced.decoder_self_attn, dtype=np.float64), 1).max())


@SLOT.holding
def tour_extras(translator: Translator, request: Request, trace: Trace, facts: ModelFacts) -> TourExtras:
    """The tour's model passes: the shown output read in one pass (what its mask lets through), integrated
    gradients of its why stop's piece, and the request translated again with the model's most important head off
    too, with the shown pieces' log p with every head on and with it off."""
    above = above_diagonal(translator, trace) if trace.output_ids else None
    step = why_step(trace)
    why = None if step is None else attribution(translator, trace, "ig", steps=[step - 1])
    ablated = ablated_by = None
    if facts.important is not None:
        off = ",".join(dict.fromkeys([*filter(None, request.decoding.heads_off.split(",")), str(facts.important)]))
        asked = request.decoded(heads_off=off, slow=0.0)
        ablated = translate(translator, asked)
        ablated_by = ablation(translator, asked, trace) if trace.output_ids else None
    return TourExtras(above, step or 0, why, ablated, ablated_by)
