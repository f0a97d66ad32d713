"""Training throughput of our Transformer vs torch.nn.Transformer at the same size, on this CPU, and of
data-parallel training with 1 and 2 processes, and of bf16 autocast (and, with --compile, torch.compile) against
eager fp32 at one thread.

Same batches (real Multi30k lengths), same embeddings/PE/projection in front and behind;
prints target tokens/s of each and the ratio ours/torch. Then `torchrun`s 1 and 2 processes (gloo, one thread
each, the same batch size per process, DDP as transformer.train uses it) and appends the total target tokens/s
across ranks and their ratio to the last line; then fp32_tok_s, bf16_tok_s, bf16_vs_fp32 (on the same batches; on
a CPU that only emulates bf16, its first few) and precision_auto (what `--precision auto` trains with here); with
--compile, compile_vs_eager (torch.compile against eager, both at that precision).
--quick: a tiny model (d_model 64, 1 + 1 layers), 3 steps of 200 tokens: a smoke test of the script, not a
measurement.
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

if not __package__:  # run as a file (python benchmarks/train_speed.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformer import data  # noqa: E402
from transformer.config import PAD_ID, PRESETS, ModelConfig  # noqa: E402
from transformer.model import Transformer  # noqa: E402
from transformer.tokenizer import Tokenizer  # noqa: E402
from transformer.train_step import autocast_dtype  # noqa: E402

WARMUP = 2  # steps left out of each timing: the first ones allocate and pick kernels
# Emulated bf16 (a CPU without AVX512-BF16/AMX) runs ~20x slower than fp32: this many steps (two timed) measure
# that within the benchmark's 10 minutes instead of all of them.
EMULATED_BF16_STEPS = WARMUP + 2
QUICK = dict(d_model=64, n_heads=4, d_ff=128, n_encoder_layers=1, n_decoder_layers=1)  # --quick's model


class TorchReference(nn.Module):
    """torch.nn.Transformer behind the same embedding, PE and tied projection as ours."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ours = Transformer(config)  # borrowed for embeddings and PE only
        self.core = nn.Transformer(config.d_model, config.n_heads, config.n_encoder_layers,
                                   config.n_decoder_layers, config.d_ff, config.dropout, batch_first=True,
                                   norm_first=config.norm_first)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        o = self.ours
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        out = self.core(o._embed(src, o.embedding), o._embed(tgt, o.embedding), tgt_mask=causal,
                        src_key_padding_mask=src == PAD_ID, tgt_key_padding_mask=tgt == PAD_ID,
                        memory_key_padding_mask=src == PAD_ID, tgt_is_causal=True)
        return o.logits(out)


def real_batches(max_tokens: int, n: int) -> tuple[list[data.Batch], int]:
    """The first n batches of Multi30k (4000 pairs, a vocabulary learnt on them) and the vocabulary size."""
    src_text, tgt_text = data.read_pairs(data.resolve_data_dir(), "train", "de", "en")
    src_text, tgt_text = src_text[:4000], tgt_text[:4000]
    tok = Tokenizer.train(src_text + tgt_text, vocab_size=8000)
    s, t = tok.encode_batch(src_text), tok.encode_batch(tgt_text)
    batches = data.token_batches([len(x) for x in s], [len(x) for x in t], max_tokens, seed=0)[:n]
    return [data.make_batch([s[i] for i in b], [t[i] for i in b]) for b in batches], tok.vocab_size


def procs_worker(args: argparse.Namespace) -> None:
    """One torchrun process: DDP steps on its own batches; rank 0 prints the total target tokens/s."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    batches, vocab = real_batches(args.max_tokens, args.steps * world)
    torch.manual_seed(0)
    model = DistributedDataParallel(Transformer(model_config(vocab, args)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    mine = batches[rank::world]
    tokens, start = 0, 0.0
    for i, b in enumerate(mine):
        if i == 2:  # the first steps warm up
            dist.barrier()
            start, tokens = time.perf_counter(), 0
        loss = F.cross_entropy(model(b.src, b.tgt_in).flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tokens += b.n_tokens
    total = torch.tensor([float(tokens)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"procs{world}_tok_s={total.item() / (time.perf_counter() - start):.0f}", flush=True)
    dist.destroy_process_group()


def model_config(vocab_size: int, args: argparse.Namespace) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, max_len=256, **(QUICK if args.quick else PRESETS["small"]))


def procs_tok_s(n: int, args: argparse.Namespace) -> float:
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
                          str(Path(__file__).resolve()), "--procs-worker", "--steps", str(args.steps),
                          "--max-tokens", str(args.max_tokens), *(["--quick"] if args.quick else [])],
                         capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    found = re.search(rf"procs{n}_tok_s=(\d+)", out.stdout)
    if not found:
        raise SystemExit(f"the {n}-process run failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return float(found.group(1))


def step_times(model: nn.Module, batches: list[data.Batch], amp: torch.dtype | None = None) -> list[float]:
    """Seconds per target token of each full training step (forward, loss, backward, AdamW), one per batch."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    times = []
    for b in batches:
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=amp or torch.float32, enabled=amp is not None):
            logits = model(b.src, b.tgt_in)
        loss = F.cross_entropy(logits.float().flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD_ID)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) / b.n_tokens)
    return times


def rate(times: list[float], warmup: int = WARMUP) -> float:
    """Median target tokens/s of the steps after the first `warmup`."""
    return 1.0 / statistics.median(times[warmup:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--max-tokens", type=int, default=2500)
    p.add_argument("--compile", action="store_true",
                   help="also time torch.compile of the model at 1 thread, at --precision auto's precision "
                        "(compile_vs_eager=)")
    p.add_argument("--quick", action="store_true", help="a tiny model, 3 steps of 200 tokens: a smoke test")
    p.add_argument("--procs-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.steps, args.max_tokens = 3, 200  # the fewest steps a timing keeps after its 2 warm-up steps
    if args.procs_worker:
        return procs_worker(args)
    torch.set_num_threads(args.threads)
    batches, vocab = real_batches(args.max_tokens, args.steps)
    config = model_config(vocab, args)
    rates = {}
    for name, model in (("ours", Transformer(config)), ("torch", TorchReference(config))):
        rates[name] = rate(step_times(model, batches))
        print(f"{name}: {rates[name]:.0f} target tokens/s")
    procs = {n: procs_tok_s(n, args) for n in (1, 2)}
    # Precision at 1 thread, as the general models train: the same model, weights and batches.
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Transformer(config)
    start = copy.deepcopy(model.state_dict())
    auto_amp = autocast_dtype("auto", torch.device("cpu"))  # bf16 exactly where this CPU runs it natively
    auto = "bf16" if auto_amp == torch.bfloat16 else "fp32"
    n_bf16 = len(batches) if auto == "bf16" else min(len(batches), EMULATED_BF16_STEPS)
    times = {}
    for name, amp, timed in (("fp32", None, batches), ("bf16", torch.bfloat16, batches[:n_bf16])):
        model.load_state_dict(start)
        times[name] = step_times(model, timed, amp)
        print(f"1 thread, {name}: {rate(times[name]):.0f} target tokens/s over {len(timed) - WARMUP} steps")
    precision = {name: rate(t) for name, t in times.items()}
    bf16_vs_fp32 = precision["bf16"] / rate(times["fp32"][:n_bf16])  # on the same batches
    line = (f"threads={args.threads} ours_tok_s={rates['ours']:.0f} torch_tok_s={rates['torch']:.0f} "
            f"ratio={rates['ours'] / rates['torch']:.2f} procs1_tok_s={procs[1]:.0f} procs2_tok_s={procs[2]:.0f} "
            f"procs2_vs_1={procs[2] / procs[1]:.2f} fp32_tok_s={precision['fp32']:.0f} "
            f"bf16_tok_s={precision['bf16']:.0f} bf16_vs_fp32={bf16_vs_fp32:.2f} "
            f"precision_auto={auto}")
    if args.compile:
        model.load_state_dict(start)
        # Each new batch shape compiles anew until dynamic shapes kick in: time only after every shape was seen.
        compiled = torch.compile(model, dynamic=True)
        compiled_rate = rate(step_times(compiled, batches + batches, auto_amp), warmup=len(batches))
        print(f"1 thread, {auto}, compiled: {compiled_rate:.0f} target tokens/s")
        line += f" compile_tok_s={compiled_rate:.0f} compile_vs_eager={compiled_rate / precision[auto]:.2f}"
    print(line)


if __name__ == "__main__":
    main()
