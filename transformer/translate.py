"""Translate text: `python -m transformer.translate --checkpoint DIR [TEXT ...]`.

With no TEXT, reads one sentence per line from stdin and writes exactly one translation
per line to stdout (an empty line gives an empty line).
"""
from __future__ import annotations

import argparse
import sys

import torch

from .checkpoint import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, CheckpointError
from .device import DEVICES
from .half import PRECISIONS
from .translator import Translator


def add_decoding_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, help="checkpoint folder or hf://owner/name")
    p.add_argument("--beam", type=int, help="beam size, 1 = greedy (default: the one the checkpoint's model card "
                                            f"chose, else {DEFAULT_BEAM})")
    p.add_argument("--length-penalty", type=float,
                   help="beam score = log-probability / length**penalty (default: the one the checkpoint's "
                        f"model card chose on val, else {DEFAULT_LENGTH_PENALTY})")
    p.add_argument("--max-new-tokens", type=int, help="default: 2 × source length + 10")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--precision", default="auto", choices=PRECISIONS,
                   help="how the linear layers read their weights (default: fp16 on an x86 CPU for weights that are "
                        "fp16 numbers already, as saved checkpoints are; else fp32)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)


def load_translator(args: argparse.Namespace) -> Translator:
    if args.beam is not None and args.beam < 1:
        raise SystemExit("--beam must be at least 1")
    torch.set_num_threads(args.threads)
    try:
        translator = Translator.from_checkpoint(args.checkpoint, device=args.device, precision=args.precision)
    except CheckpointError as err:
        raise SystemExit(f"error: {err}") from None
    decoding = translator.checkpoint.decoding
    args.beam = decoding.beam_size if args.beam is None else args.beam
    args.length_penalty = decoding.length_penalty if args.length_penalty is None else args.length_penalty
    return translator


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m transformer.translate", description=__doc__.split("\n")[0])
    add_decoding_args(p)
    p.add_argument("text", nargs="*", help="sentences to translate (default: stdin, one per line)")
    args = p.parse_args(argv)
    translator = load_translator(args)
    lines = args.text or sys.stdin.read().splitlines()
    outputs = translator.translate_batch([line.replace("\n", " ") for line in lines], beam_size=args.beam,
                                        max_new_tokens=args.max_new_tokens, length_penalty=args.length_penalty,
                                        batch_size=args.batch_size)
    sys.stdout.write("".join(o.replace("\n", " ") + "\n" for o in outputs))


if __name__ == "__main__":
    main()
