"""What Why this word costs: attribution and the logit lens of one translation, at 1 thread and at 2.

Translates the ~20-word benchmark sentence (benchmarks/common.py) with --checkpoint (default: the shipped de→en
model) and its own decoding, then times, as the app computes them (transformer/explain.py, anatomy/engine.py),
median of --repeats after a warm-up, in milliseconds unless named _s:

  grad_ms        input × gradient of one step (the middle one)
  ig_step_ms     integrated gradients of that step, --path-steps points on the path (default 16)
  occlusion_ms   occlusion of that step, every source word
  step_ms        the three at once, as Compare computes them (input × gradient rides on the integrated
                 gradients' passes): what one step costs
  ig_all_s       integrated gradients of every step at once (batched, as the tab computes it)
  explain_s      everything the tab's model event makes: every step by all three methods and the lens
  lens_ms        the logit lens of the whole translation

--profile prints the op table of ig_all (torch.profiler, self CPU time). The last line per thread count is
machine-readable:
grad_ms=… ig_step_ms=… occlusion_ms=… step_ms=… ig_all_s=… explain_s=… lens_ms=… pieces=… threads=…

    python benchmarks/explain.py
    python -m benchmarks.explain --threads 1 --profile
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

if not __package__:  # run as a file (python benchmarks/explain.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anatomy import engine  # noqa: E402
from benchmarks.common import default_checkpoint, languages, median_ms, sentence  # noqa: E402
from transformer import Translator  # noqa: E402
from transformer.explain import IG_STEPS, attribute, attributions  # noqa: E402
from transformer.pieces import word_groups  # noqa: E402


def measure(translator: Translator, text: str, repeats: int, path_steps: int, profile: bool) -> str:
    trace = translator.translate(text)
    ids = (trace.source_ids, trace.output_ids)
    step = [len(trace.output_ids) // 2]
    words = word_groups(trace.source_tokens)
    one = {"grad": lambda: attribute(translator, *ids, "grad", steps=step),
           "ig": lambda: attribute(translator, *ids, "ig", steps=step, path_steps=path_steps),
           "occlusion": lambda: attribute(translator, *ids, "occlusion", steps=step, words=words)}
    ms = {name: median_ms(fn, repeats) for name, fn in one.items()}
    step_ms = median_ms(lambda: attributions(translator, *ids, steps=step, path_steps=path_steps, words=words),
                        repeats)

    def ig_all():
        return attribute(translator, *ids, "ig", path_steps=path_steps)

    if profile:
        from torch.profiler import profile as profiled

        with profiled() as prof:
            ig_all()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    ig_all_s = median_ms(ig_all, max(1, repeats // 2)) / 1000
    explain_s = median_ms(lambda: engine.explain(translator, trace), max(1, repeats // 2)) / 1000
    lens_ms = median_ms(lambda: translator.logit_lens(trace), repeats)
    return (f"grad_ms={ms['grad']:.1f} ig_step_ms={ms['ig']:.1f} occlusion_ms={ms['occlusion']:.1f} "
            f"step_ms={step_ms:.1f} ig_all_s={ig_all_s:.3f} explain_s={explain_s:.3f} lens_ms={lens_ms:.1f} "
            f"pieces={len(trace.output_ids)} threads={torch.get_num_threads()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", type=Path, default=default_checkpoint())
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--path-steps", type=int, default=IG_STEPS, help="integrated gradients' points")
    parser.add_argument("--profile", action="store_true", help="print the op table of ig_all")
    args = parser.parse_args()
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    text = sentence(languages(args.checkpoint)[0])
    print(f"{args.checkpoint.name} ({translator.precision} decoding), {len(text.split())} words: {text}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(measure(translator, text, args.repeats, args.path_steps, args.profile), flush=True)


if __name__ == "__main__":
    main()
