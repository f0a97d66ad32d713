"""Animated decoding's cost: a ~20-word sentence translated with the model's own decoding, then its animation
drawn and written as a 1280×720 GIF and MP4 (`python -m anatomy.export animate` after loading the model; the
command adds ~3 s of imports and loading). Seconds are the median of --repeats runs after a warm-up, on 1 thread.
The last line is machine-readable (mp4_s and mp4_mb are `na` without PyAV):
pieces=… translate_s=… gif_s=… gif_mb=… mp4_s=… mp4_mb=…

    python benchmarks/animate.py
    python -m benchmarks.animate --checkpoint checkpoints/general-en-de --layout heatmap
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

if not __package__:  # run as a file (python benchmarks/animate.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anatomy import engine, export  # noqa: E402
from anatomy.inputs import Request, View  # noqa: E402
from benchmarks.common import default_checkpoint, median_ms, sentence  # noqa: E402
from transformer import Translator  # noqa: E402
from viz.animation import LAYOUTS  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", type=Path, default=default_checkpoint())
    p.add_argument("--layout", choices=LAYOUTS, default=LAYOUTS[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    ck = translator.checkpoint
    own = ck.decoding
    request = Request("bench", sentence(ck.source_lang), own)
    trace = engine.translate(translator, request)
    animation = export.Animation(View(), args.layout)
    pieces = len(trace.output_tokens)
    print(f"{args.checkpoint} ({ck.source_lang}→{ck.target_lang}), beam {own.beam_size}: {pieces} pieces "
          f"[{trace.text}]; {args.layout} layout, 1280×720")
    translate_s = median_ms(lambda: engine.translate(translator, request), args.repeats) / 1000
    figures = {"pieces": str(pieces), "translate_s": f"{translate_s:.2f}"}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".gif", ".mp4"):
            name = suffix[1:]
            if suffix == ".mp4" and importlib.util.find_spec("av") is None:
                print("mp4: PyAV is not installed")
                figures.update({f"{name}_s": "na", f"{name}_mb": "na"})
                continue
            path = Path(tmp) / f"decoding{suffix}"
            took = median_ms(lambda: export.export(trace, animation, path), args.repeats) / 1000
            mb = path.stat().st_size / 1e6
            print(f"{name}: {pieces + 1} frames drawn and written in {took:.2f} s, {mb:.2f} MB")
            figures.update({f"{name}_s": f"{took:.2f}", f"{name}_mb": f"{mb:.3f}"})
    print(" ".join(f"{key}={value}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
