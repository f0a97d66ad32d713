"""The only calls into the Translator: load, translate (whole or streamed), teacher-force, the untrained twin.

Kept in one small module so that a change of the Translator's API is a change here only. Every trace made here
carries its direction key in `trace.settings["direction"]`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator

import torch

from transformer import Step, Trace, Translator
from transformer.checkpoint import Checkpoint
from transformer.config import EOS_ID

from .inputs import Request


def load(source: str) -> Translator:
    """A checkpoint folder or hf:// id, on the CPU (raises CheckpointError or anything a broken folder causes)."""
    return Translator.from_checkpoint(source, device="cpu")


def on_device(checkpoint: Checkpoint, device: str) -> Translator:
    return Translator(checkpoint, torch.device(device))


def output_limit(source_pieces: int, max_new: int | None) -> int:
    """New pieces allowed: the request's limit, else 1.5·S + 10 for S source pieces. No reference translation
    in 20,000 Multi30k training pairs or its validation set (de→en and en→de) is longer than that, and it bounds
    the work a degenerate input buys: a 500-character repeated word took 2·S + 10 = 212 decoding steps (the
    Translator's own default), now 161. The Translator caps it again at the model's max_len."""
    return max_new if max_new is not None else math.ceil(1.5 * source_pieces) + 10


def source_pieces(translator: Translator, text: str) -> list[str]:
    return translator.tokenizer.pieces(translator.encode_source(text)[0])


def _settings(translator: Translator, request: Request, mode: str, **extra) -> dict:
    return {"direction": request.key, "mode": mode, "device": str(translator.device), "top_k": request.top_k,
            **extra}


def _tagged(trace: Trace, settings: dict) -> Trace:
    return dataclasses.replace(trace, settings={**trace.settings, **settings})


def translate(translator: Translator, request: Request) -> Trace:
    """The whole trace of a request: greedy (beam 1) or beam search with its candidates."""
    limit = output_limit(len(translator.encode_source(request.text)[0]), request.max_new)
    trace = translator.translate(request.text, beam_size=request.beam, max_new_tokens=limit,
                                 length_penalty=request.length_penalty, top_k=request.top_k)
    return _tagged(trace, {"direction": request.key})


def stream(translator: Translator, request: Request, stopped: Callable[[], bool]) -> Iterator[Step | Trace]:
    """Greedy decoding, one Step per piece as soon as it exists; the last item is the finished Trace. When
    `stopped()` turns true between two pieces, decoding ends there and the Trace holds the pieces so far."""
    src, notices = translator.encode_source(request.text)
    ids, halted = [], False
    limit = output_limit(len(src), request.max_new)
    for step in translator.steps(request.text, top_k=request.top_k, max_new_tokens=limit):
        ids.append(step.token_id)
        yield step
        if stopped() and step.token_id != EOS_ID:
            halted = True
            break
    gen = [i for i in ids if i != EOS_ID]
    mode = "greedy, stopped" if halted else "greedy"
    trace = translator.force_ids(src, gen, request.top_k, _settings(translator, request, mode, beam_size=1,
                                                                    max_new_tokens=limit), notices)
    if not ids or ids[-1] != EOS_ID:  # the limit (or Stop) cut it: keep what was generated, not a forced EOS
        trace = trace.without_final_eos()
    yield trace


def force(translator: Translator, request: Request, target: str) -> Trace:
    """Teacher-forced pass over a given translation."""
    return _tagged(translator.force(request.text, target, top_k=request.top_k), {"direction": request.key})


def candidate(translator: Translator, trace: Trace, row: int) -> Trace:
    """Beam candidate `row` of a trace, teacher-forced through the model that made the trace; the candidates
    stay attached so that another one can be picked."""
    cand = trace.candidates[row]
    ids = [translator.tokenizer.sp.piece_to_id(p) for p in cand.tokens]
    new = translator.force_ids(list(trace.source_ids), ids, trace.settings.get("top_k", 5),
                               {**trace.settings, "mode": "beam candidate", "candidate": row + 1},
                               list(trace.notices))
    new.candidates = trace.candidates
    return new


def untrained(twin: Translator, trace: Trace, max_new: int) -> tuple[Trace, str]:
    """The trace's output teacher-forced through the untrained twin (same pieces, so the attention maps line up
    cell by cell), and what the twin writes on its own."""
    out = [i for i in trace.output_ids if i != EOS_ID]
    forced = twin.force_ids(list(trace.source_ids), out, 1, {**trace.settings, "mode": "forced", "top_k": 1}, [])
    if trace.cut_by_limit:
        forced = forced.without_final_eos()
    source = twin.tokenizer.decode([i for i in trace.source_ids if i != EOS_ID])
    own = twin.translate(source, max_new_tokens=min(len(trace.output_tokens) + 10, max_new), top_k=1)
    return forced, own.text or f"nothing: its first piece is {own.output_tokens[0] if own.output_tokens else '–'}"
