"""Where a page translation's time goes, op by op: torch's profiler over Translator.translate as the app runs it
(full attention capture, 1 thread, the app's default precision unless --precision says otherwise), beam search
with the model's own beam size and length penalty and a greedy stream, on the ~20-word benchmark sentence of
--checkpoint (default: the shipped de→en model).

Prints, for each decoding, the ops that took the most self CPU time (share of the profiled time, calls, ms per
call); the last line is machine-readable:
beam_ms=… greedy_ms=… beam_linear_share=… greedy_linear_share=… beam_top_op=…

    python benchmarks/profile_decode.py
    python -m benchmarks.profile_decode --checkpoint checkpoints/general-en-de --rows 15
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

if not __package__:  # run as a file (python benchmarks/profile_decode.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import default_checkpoint, languages, sentence  # noqa: E402
from transformer import Translator  # noqa: E402
from transformer.half import PRECISIONS  # noqa: E402

# F.linear's kernels: fp32 (MKL) and fp16 weights (fbgemm, transformer/half.py)
LINEAR_OPS = ("aten::addmm", "aten::mm", "aten::linear", "aten::fbgemm_linear_fp16_weight_fp32_activation")


def profiled(decode, runs: int) -> tuple[float, list[tuple[str, float, int]]]:
    """Median wall ms of `runs` calls (after a warm-up), and each op's (name, self CPU ms per run, calls per run)
    over them, most time first."""
    decode()
    walls = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(runs):
            start = time.perf_counter()
            decode()
            walls.append((time.perf_counter() - start) * 1e3)
    ops = [(e.key, e.self_cpu_time_total / 1e3 / runs, e.count // runs) for e in prof.key_averages()]
    return sorted(walls)[len(walls) // 2], sorted(ops, key=lambda op: -op[1])


def table(title: str, wall_ms: float, ops: list[tuple[str, float, int]], rows: int) -> float:
    """Prints the top `rows` ops; returns the linear layers' share (LINEAR_OPS' own time)."""
    total = sum(ms for _, ms, _ in ops)
    print(f"\n{title}: {wall_ms:.1f} ms a run (profiled, op self time {total:.1f} ms)")
    print(f"{'op':<50} {'share':>6} {'ms':>8} {'calls':>6} {'us/call':>8}")
    for name, ms, calls in ops[:rows]:
        print(f"{name:<50} {ms / total:>6.1%} {ms:>8.2f} {calls:>6} {ms * 1e3 / max(calls, 1):>8.1f}")
    return sum(ms for name, ms, _ in ops if name in LINEAR_OPS) / total


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, default=default_checkpoint(), help="a checkpoint folder")
    p.add_argument("--threads", type=int, default=1, help="the app's default")
    p.add_argument("--runs", type=int, default=5, help="profiled runs per decoding")
    p.add_argument("--rows", type=int, default=12, help="ops per table")
    p.add_argument("--precision", choices=PRECISIONS, default="auto", help="how the linear layers read their weights")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu", precision=args.precision)
    text = sentence(languages(args.checkpoint)[0])
    own = translator.checkpoint.meta.get("decoding", {})
    beam, lp = int(own.get("beam_size", 5)), float(own.get("length_penalty", 1.0))
    print(f"{args.checkpoint} in {translator.precision} on {args.threads} thread(s), torch {torch.__version__}: "
          f"{text!r}")
    beam_ms, beam_ops = profiled(lambda: translator.translate(text, beam_size=beam, length_penalty=lp), args.runs)
    greedy_ms, greedy_ops = profiled(lambda: list(translator.stream(text)), args.runs)
    beam_linear = table(f"beam {beam}, length penalty {lp}, capture on", beam_ms, beam_ops, args.rows)
    greedy_linear = table("greedy stream, capture on", greedy_ms, greedy_ops, args.rows)
    print(f"beam_ms={beam_ms:.1f} greedy_ms={greedy_ms:.1f} beam_linear_share={beam_linear:.3f} "
          f"greedy_linear_share={greedy_linear:.3f} beam_top_op={beam_ops[0][0]}")


if __name__ == "__main__":
    main()
