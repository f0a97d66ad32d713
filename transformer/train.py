"""Train a translation model: `python -m transformer.train --src de --tgt en --out checkpoints/NAME`.

On one corpus (`--data-dir`, Multi30k by default) or on a weighted mix (`--corpus NAME[:W]`,
repeated). Resumable: the run directory (default runs/NAME, never committed) holds the
optimizer, EMA, RNG and position within the epoch, saved atomically every few minutes and
after each epoch. Only the best model on val BLEU (its EMA weights; the mean over the
corpora that have a val split) is written to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import sacrebleu
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from . import checkpoint, data
from .config import PAD_ID, PRESETS, ModelConfig
from .device import pick_device
from .model import Transformer
from .search import greedy
from .tokenizer import Tokenizer


def parse_duration(text: str) -> float:
    """'85m', '2h', '90s', '1h30m' or plain seconds -> seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"bad duration {text!r}; use e.g. 85m, 2h, 1h30m, 300s")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m transformer.train", description=__doc__.split("\n")[0])
    p.add_argument("--src", required=True, choices=data.LANGUAGES)
    p.add_argument("--tgt", required=True, choices=data.LANGUAGES)
    p.add_argument("--corpus", action="append", metavar="NAME[:W]",
                   help="a corpus of the mix (repeatable): a folder under the data root, or a path; W "
                        "(default 1) draws round(W·N) of its N training pairs each epoch")
    p.add_argument("--data-root", help="folder of corpora for --corpus (default: $ANATOMY_DATA_ROOT, "
                                       "../shared/data)")
    p.add_argument("--data-dir", help="without --corpus: one folder with {split}.{lang}.gz (default: "
                                      "$ANATOMY_DATA_DIR, ../shared/data/multi30k, else downloaded)")
    p.add_argument("--domain", help="what the model is for, shown in the app (e.g. 'everyday')")
    p.add_argument("--out", required=True, help="checkpoint folder to write, e.g. checkpoints/multi30k-de-en")
    p.add_argument("--run-dir", help="resume state folder (default runs/<name of --out>)")
    p.add_argument("--init-from", metavar="CHECKPOINT", help="start from this checkpoint's weights and tokenizer "
                   "(a fresh optimizer and schedule); the model options must describe the same model")
    p.add_argument("--preset", choices=sorted(PRESETS), default="small")
    p.add_argument("--d-model", type=int)
    p.add_argument("--n-heads", type=int)
    p.add_argument("--d-ff", type=int)
    p.add_argument("--layers", type=int, help="encoder and decoder layers each")
    p.add_argument("--dropout", type=float)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint SentencePiece vocabulary")
    p.add_argument("--time-budget", type=parse_duration, help="stop after this much training, e.g. 85m; "
                                                              "the learning rate decays to 0 over it")
    p.add_argument("--epochs", type=int, default=10, help="epochs when no --time-budget (else the most)")
    p.add_argument("--max-tokens", type=int, help="padded tokens per batch and device (default 2500)")
    p.add_argument("--tokens-per-batch", type=int, help="non-pad target tokens per optimizer step, summed over "
                   "devices and --accumulate micro-batches (the paper: 25000); instead of --max-tokens")
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step on each device")
    p.add_argument("--schedule", choices=("linear", "paper"), default="linear",
                   help="linear: warmup to --lr, then linear decay to 0 at the end; paper: "
                   "d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) (--lr unused)")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                   help="autocast dtype; auto: bf16 on GPUs and CPUs that run it natively, else fp32 (fp16 adds a "
                        "gradient scaler)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model for training")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=400, help="linear warmup steps")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="gradient norm clip")
    p.add_argument("--ema-decay", type=float, default=0.998, help="EMA of weights; 0 disables")
    p.add_argument("--save-every", type=parse_duration, default=300.0, help="resume-state interval")
    p.add_argument("--cache-dir", default=os.environ.get("ANATOMY_TOKEN_CACHE", str(data.CACHE_DIR.parent / "tokens")),
                   help="where the training text is tokenized to, once per machine, and memory-mapped from "
                   "(default $ANATOMY_TOKEN_CACHE, else ~/.cache/transformer-anatomy/tokens)")
    p.add_argument("--max-train-pairs", type=int, help="use only the first N training pairs of each corpus")
    p.add_argument("--max-val-pairs", type=int, help="use only the first N val pairs of each corpus")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p


def model_config(args: argparse.Namespace, vocab_size: int) -> ModelConfig:
    fields = {**ModelConfig().to_dict(), **PRESETS[args.preset], "vocab_size": vocab_size,
              "max_len": args.max_len, "norm_first": args.norm_first}
    for name, value in (("d_model", args.d_model), ("n_heads", args.n_heads), ("d_ff", args.d_ff),
                        ("n_encoder_layers", args.layers), ("n_decoder_layers", args.layers),
                        ("dropout", args.dropout)):
        if value is not None:
            fields[name] = value
    return ModelConfig.from_dict(fields)


def learning_rate(args: argparse.Namespace, step: int, progress: float, d_model: int = 512) -> float:
    """linear: warmup, then linear decay to 0 at the end of the budget (progress in [0, 1]); paper: eq. 3 of the
    paper, from step 1."""
    if args.schedule == "paper":
        n = step + 1
        return d_model ** -0.5 * min(n ** -0.5, n * args.warmup ** -1.5)
    return args.lr * min(1.0, (step + 1) / args.warmup) * max(0.0, 1.0 - progress)


@dataclass(frozen=True)
class Ranks:
    """This process's place in a data-parallel run (torchrun's environment); one process: rank 0 of 1."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: list[float]) -> list[float]:
        """The values summed over ranks (a no-op alone)."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t)
        return t.tolist()

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def share(self, value):
        """Rank 0's value, on every rank."""
        if self.world == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def join_ranks(requested: str) -> tuple[Ranks, torch.device]:
    """Under torchrun: join the process group (NCCL when each process has a GPU, else gloo); alone: nothing."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = pick_device(requested)
    if world == 1:
        return Ranks(), device
    ranks = Ranks(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    if device.type == "cuda":
        device = torch.device("cuda", ranks.local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return ranks, device


def native_bf16(device: torch.device) -> bool:
    """Whether this device computes bf16 in hardware; on a CPU without AVX512-BF16/AMX, torch emulates it
    (slower than fp32)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.cpu._is_avx512_bf16_supported() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "auto":
        return torch.bfloat16 if native_bf16(device) else None
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@torch.inference_mode()
def validate(model: Transformer, tokenizer: Tokenizer, src_ids: list[list[int]], tgt_ids: list[list[int]],
             references: list[str], device: torch.device, batch_size: int = 100) -> dict:
    model.eval()
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    hyps: list[str] = [""] * len(src_ids)
    total_loss, total_tokens = 0.0, 0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = data.make_batch([src_ids[i] for i in idx], [tgt_ids[i] for i in idx])
        src, tgt_in, tgt_out = batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)
        logits = model(src, tgt_in)
        total_loss += float(F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID,
                                            reduction="sum"))
        total_tokens += batch.n_tokens
        for i, ids in zip(idx, greedy(model, src)):
            hyps[i] = tokenizer.decode(ids)
    bleu = sacrebleu.corpus_bleu(hyps, [references])
    chrf = sacrebleu.corpus_chrf(hyps, [references])
    return {"val_loss": total_loss / total_tokens, "val_bleu": bleu.score, "val_chrf": chrf.score,
            "sample": hyps[0]}


def say(message: str) -> None:
    """Progress, from rank 0 only."""
    if int(os.environ.get("RANK", "0")) == 0:
        print(message, flush=True)


def _atomic_torch_save(obj: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.src == args.tgt:
        raise SystemExit("--src and --tgt must differ")
    if args.max_tokens and args.tokens_per_batch:
        raise SystemExit("give either --max-tokens or --tokens-per-batch, not both")
    if args.accumulate < 1:
        raise SystemExit("--accumulate must be at least 1")
    torch.set_num_threads(args.threads)
    ranks, device = join_ranks(args.device)
    try:
        result = _train(args, ranks, device)
        # Gloo can abort a process that tears down while a peer still talks to it (rank 0 saving its state):
        # leave together.
        ranks.barrier()
        return result
    finally:
        if ranks.world > 1:
            dist.destroy_process_group()


def _train(args: argparse.Namespace, ranks: Ranks, device: torch.device) -> dict:
    out = Path(args.out)
    run_dir = Path(args.run_dir or Path("runs") / out.name)
    if ranks.main:
        run_dir.mkdir(parents=True, exist_ok=True)
    corpora = resolve_corpora(args)

    vals: list[tuple[str, list[str], list[str]]] = []  # (name, sources, references) of corpora with val
    for corpus in corpora:
        if not args.corpus or corpus.has_split("val", args.src, args.tgt):
            vs, vt = data.read_pairs(corpus.path, "val", args.src, args.tgt)
            vals.append((corpus.name, vs[:args.max_val_pairs or None], vt[:args.max_val_pairs or None]))
    if not vals:
        raise SystemExit("no corpus of the mix has a val split: nothing to select the model on")
    weights = [c.weight for c in corpora]
    sizes: list[int] = []  # training pairs of each corpus

    def epoch_pairs(epoch: int) -> list[int]:
        return data.draw_mix(sizes, weights, mix_rng(args.seed, epoch))

    start = None
    if args.init_from:
        try:
            start = checkpoint.load(args.init_from)
        except checkpoint.CheckpointError as err:
            raise SystemExit(f"error: --init-from: {err}") from None
        if (start.source_lang, start.target_lang) != (args.src, args.tgt):
            raise SystemExit(f"error: --init-from {args.init_from} translates {start.source_lang}->"
                             f"{start.target_lang}, not {args.src}->{args.tgt}")
    tok_path = run_dir / "tokenizer.model"
    proto = None
    if ranks.main:
        if tok_path.exists():
            proto = tok_path.read_bytes()
        else:
            if start is not None:
                tokenizer = start.tokenizer
            else:
                texts = [data.read_pairs(c.path, "train", args.src, args.tgt) for c in corpora]
                texts = [(s[:args.max_train_pairs or None], t[:args.max_train_pairs or None]) for s, t in texts]
                train_src, train_tgt = sum((s for s, _ in texts), []), sum((t for _, t in texts), [])
                sizes[:] = [len(s) for s, _ in texts]
                first = epoch_pairs(0)  # the vocabulary is learnt from the same mix the model trains on
                tokenizer = Tokenizer.train([train_src[i] for i in first] + [train_tgt[i] for i in first],
                                            vocab_size=args.vocab_size)
                del texts, train_src, train_tgt
            tokenizer.save(tok_path)
            proto = tokenizer.proto
    tokenizer = Tokenizer(ranks.share(proto))
    config = model_config(args, tokenizer.vocab_size)
    if start is not None and start.config != config:
        raise SystemExit(f"error: --init-from {args.init_from} holds {start.config}, but the options describe "
                         f"{config}; give the options it was trained with")

    def encode_pairs(src: list[str], tgt: list[str]) -> tuple[list[list[int]], list[list[int]]]:
        limit = config.max_len - 1  # room for EOS / BOS
        return ([s[:limit] for s in tokenizer.encode_batch(src)], [t[:limit] for t in tokenizer.encode_batch(tgt)])

    def token_ids(lang: str) -> tuple[data.TokenIds, list[int]]:
        """The training side in `lang`, tokenized once per machine into --cache-dir (the first process of each
        machine writes it, the others wait and map it)."""
        files = [data.ensure_file(c.path, "train", lang) for c in corpora]

        def build() -> tuple[data.TokenIds, list[int]]:
            return data.cached_token_ids(files, tokenizer.encode_batch, tokenizer.proto, config.max_len - 1,
                                         Path(args.cache_dir).expanduser(), args.max_train_pairs)
        if ranks.local_rank == 0:
            build()
        ranks.barrier()
        return build()

    (train_s, src_counts), (train_t, tgt_counts) = token_ids(args.src), token_ids(args.tgt)
    for c, a, b in zip(corpora, src_counts, tgt_counts):
        if a != b:
            raise SystemExit(f"error: {c.path} has {a} train.{args.src} lines but {b} train.{args.tgt} lines")
    sizes[:] = src_counts
    val_sets = [(name, *encode_pairs(vs, vt), vt) for name, vs, vt in vals] if ranks.main else []

    torch.manual_seed(args.seed)
    model = Transformer(config).to(device)
    if start is not None:
        model.load_state_dict(start.model.state_dict())
    ema = copy.deepcopy(model).requires_grad_(False) if args.ema_decay > 0 else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9,
                                  weight_decay=args.weight_decay)
    state_path = run_dir / "state.pt"
    pos = {"epoch": 0, "batch": 0, "step": 0, "elapsed_s": 0.0, "best_bleu": -1.0, "target_tokens": 0}
    # Rank 0 reads the state and hands it to the others: a run may resume on another number of ranks, and
    # other machines need not see rank 0's disk.
    state = ranks.share(torch.load(state_path, map_location="cpu", weights_only=True)
                        if ranks.main and state_path.exists() else None)
    if state is not None:
        if ModelConfig.from_dict(state["config"]) != config:  # from_dict: configs saved before a field existed
            raise SystemExit(f"{state_path} was saved for another model config; use a new --run-dir")
        model.load_state_dict(state["model"])
        if ema is not model:
            ema.load_state_dict(state["ema"])
        optimizer.load_state_dict(state["optimizer"])
        pos = {"target_tokens": None, **state["position"]}  # None: saved before tokens were counted
        say(f"resumed from {state_path}: epoch {pos['epoch'] + 1}, batch {pos['batch']}, step {pos['step']}"
            + (f" (saved by {state['world']} processes, now {ranks.world})"
               if state.get("world", 1) != ranks.world else ""))
    earlier = checkpoint.lineage(start.meta) if start else []
    metrics_path = run_dir / "metrics.jsonl"
    if state is None and ranks.main:
        metrics_path.write_text("")
    net = model
    if args.compile:
        net = torch.compile(net)
    if ranks.world > 1:
        net = DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    amp = autocast_dtype(args.precision, device)
    scaler = torch.amp.GradScaler(device.type, enabled=amp == torch.float16)
    parts = ranks.world * args.accumulate

    say(f"model: {model.num_parameters():,} parameters, {config}")
    mix = [{"name": c.name, "weight": c.weight, "train_pairs": n, "pairs_per_epoch": round(c.weight * n),
            "val_pairs": next((len(v[2]) for v in vals if v[0] == c.name), 0)} for c, n in zip(corpora, sizes)]
    for m in mix:
        say(f"corpus {m['name']}: {m['train_pairs']} train pairs × {m['weight']:g} -> {m['pairs_per_epoch']} "
            f"per epoch; {m['val_pairs']} val pairs")
    say(f"device {device}, {ranks.world} process(es) × {args.accumulate} micro-batch(es) per step, "
        f"autocast {amp or 'off'}")
    recipe = {k: v for k, v in vars(args).items()
              if k not in ("no_progress", "data_dir", "data_root", "out", "run_dir", "cache_dir")}

    def save_state() -> None:
        if ranks.main:
            _atomic_torch_save({"config": config.to_dict(), "model": model.state_dict(),
                                "ema": ema.state_dict(), "optimizer": optimizer.state_dict(), "position": pos,
                                "world": ranks.world}, state_path)

    def epoch_batches(epoch: int) -> list[list[int]]:
        return steps_of_epoch(args, epoch, sizes, weights, train_s.lengths, train_t.lengths, parts)

    with stop_signals() as stop_requested:  # a signal arrived: save the position and leave after this step
        budget = args.time_budget
        max_epochs = args.epochs if budget is None else 10_000
        ema_params, model_params = list(ema.parameters()), list(model.parameters())
        last_save = time.monotonic()
        result: dict = {}
        if budget and pos["elapsed_s"] >= budget:
            say(f"the time budget ({budget:.0f} s) is already spent; give a larger --time-budget to go on")
        while pos["epoch"] < max_epochs and not (budget and pos["elapsed_s"] >= budget):
            batches = epoch_batches(pos["epoch"])
            epoch_loss, epoch_tokens, epoch_time = 0.0, 0, 0.0
            rank_tokens = [0] * ranks.world
            net.train()
            bar = tqdm(total=len(batches), initial=pos["batch"], disable=args.no_progress or not ranks.main,
                       desc=f"epoch {pos['epoch'] + 1}", dynamic_ncols=True)
            out_of_time = False
            while pos["batch"] < len(batches):
                t0 = time.monotonic()
                step_pairs = batches[pos["batch"]]
                shares = data.deal(step_pairs, train_t.lengths, parts)
                mine = shares[ranks.rank * args.accumulate:(ranks.rank + 1) * args.accumulate]
                # The loss of the step is its token sum over the whole step's non-pad target tokens (every
                # rank knows them), times the ranks that DDP's gradient mean divides by.
                n_tokens = sum(train_t.lengths[i] + 1 for i in step_pairs)
                progress = (pos["elapsed_s"] / budget if budget
                            else pos["step"] / (max_epochs * len(batches)))
                lr = learning_rate(args, pos["step"], progress, config.d_model)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                torch.manual_seed(args.seed * 1_000_003 + pos["step"] * 1009 + ranks.rank)  # dropout, resumable
                optimizer.zero_grad(set_to_none=True)
                loss_sum, my_tokens = 0.0, 0
                for k, share in enumerate(mine):
                    if not share:
                        raise SystemExit(f"step {pos['step']} has {len(step_pairs)} pairs for {parts} micro-batches;"
                                         " give more tokens per batch or fewer --accumulate")
                    batch = data.make_batch([train_s[i] for i in share], [train_t[i] for i in share])
                    sync = k == len(mine) - 1 or ranks.world == 1
                    with (contextlib.nullcontext() if sync else net.no_sync()), \
                            torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
                        logits = net(batch.src.to(device), batch.tgt_in.to(device))
                        summed = F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.to(device).flatten(),
                                                 ignore_index=PAD_ID, label_smoothing=args.label_smoothing,
                                                 reduction="sum")
                    scaler.scale(summed * (ranks.world / n_tokens)).backward()
                    loss_sum += summed.item()
                    my_tokens += batch.n_tokens
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                scaler.step(optimizer)
                scaler.update()
                if ema is not model:
                    decay = min(args.ema_decay, (1 + pos["step"]) / (10 + pos["step"]))
                    torch._foreach_lerp_(ema_params, model_params, 1.0 - decay)
                # One collective per step: the loss, whether any rank was asked to stop, rank 0's clock (every
                # rank then agrees on the schedule and on when to stop) and each rank's tokens.
                counts = [0.0] * ranks.world
                counts[ranks.rank] = my_tokens
                loss_sum, stops, dt, *counts = ranks.sum([loss_sum, float(bool(stop_requested)),
                                                          time.monotonic() - t0 if ranks.main else 0.0, *counts])
                rank_tokens = [a + int(b) for a, b in zip(rank_tokens, counts)]
                loss = loss_sum / n_tokens
                pos["step"] += 1
                pos["batch"] += 1
                pos["elapsed_s"] += dt
                if pos["target_tokens"] is not None:
                    pos["target_tokens"] += n_tokens
                epoch_time += dt
                epoch_loss += loss_sum
                epoch_tokens += n_tokens
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{epoch_tokens / epoch_time:.0f}")
                if args.no_progress and pos["step"] % 50 == 0:
                    say(f"epoch {pos['epoch'] + 1} batch {pos['batch']}/{len(batches)} step {pos['step']} "
                        f"loss {loss:.3f} lr {lr:.2e} tok/s {epoch_tokens / epoch_time:.0f}")
                if budget and pos["elapsed_s"] >= budget:
                    out_of_time = True
                    break
                if stops:
                    save_state()
                    bar.close()
                    signum = stop_requested[0] if stop_requested else signal.SIGTERM
                    say(f"stopped by signal {signum} at step {pos['step']}; state saved to {state_path}; "
                        "run the same command again to resume")
                    raise SystemExit(128 + signum)
                if time.monotonic() - last_save >= args.save_every:
                    save_state()
                    last_save = time.monotonic()
            bar.close()
            result = {"epoch": pos["epoch"] + 1, "step": pos["step"],
                      "train_loss": round(epoch_loss / max(epoch_tokens, 1), 4)}
            if ranks.main:  # the others wait at the next collective
                scores = {name: validate(ema, tokenizer, vs, vt, refs, device) for name, vs, vt, refs in val_sets}
                for key in ("val_loss", "val_bleu", "val_chrf"):  # the mean over corpora selects the model
                    result[key] = round(sum(s[key] for s in scores.values()) / len(scores),
                                        4 if key == "val_loss" else 2)
                if len(scores) > 1:
                    for name, sc in scores.items():
                        for key in ("val_loss", "val_bleu", "val_chrf"):
                            result[f"{key}_{name}"] = round(sc[key], 4 if key == "val_loss" else 2)
                result.update({"lr": lr, "tokens_per_s": round(epoch_tokens / max(epoch_time, 1e-9), 1),
                               "elapsed_s": round(pos["elapsed_s"], 1)})
                if ranks.world > 1:
                    result["tokens_by_rank"] = rank_tokens  # this epoch's (since a resume), to see the balance
                if out_of_time:
                    result["partial_epoch"] = round(pos["batch"] / len(batches), 3)
                # A run killed between this write and the state save repeats the epoch: keep one line each.
                previous = [line for line in metrics_path.read_text().splitlines()
                            if json.loads(line)["epoch"] != result["epoch"]]
                metrics_path.write_text("".join(line + "\n" for line in [*previous, json.dumps(result)]))
                say(json.dumps(result) + " | sample: " + next(iter(scores.values()))["sample"])
                metrics_log = metrics_path.read_text()
                if result["val_bleu"] > pos["best_bleu"]:
                    pos["best_bleu"] = result["val_bleu"]
                    checkpoint.save(out, ema, tokenizer, source_lang=args.src, target_lang=args.tgt,
                                    domain=args.domain,
                                    training={"recipe": recipe, "corpora": mix,
                                              "selected_on": "val BLEU (greedy)" + (
                                                  ", mean over " + ", ".join(scores) if len(scores) > 1 else ""),
                                              "epochs": result["epoch"],
                                              "steps": pos["step"], "train_time_s": result["elapsed_s"],
                                              "device": str(device), "threads": args.threads,
                                              "processes": ranks.world,
                                              "autocast": str(amp or torch.float32).removeprefix("torch."),
                                              "compiled": args.compile, "target_tokens": pos["target_tokens"],
                                              **totals(earlier, pos["target_tokens"], pos["elapsed_s"]),
                                              **({"earlier": earlier} if start else {})},
                                    metrics={k: v for k, v in result.items() if k == "epoch" or k.startswith("val_")},
                                    metrics_log=metrics_log)
                    say(f"saved {out} (val BLEU {result['val_bleu']})")
                else:
                    checkpoint.write_metrics_log(out, metrics_log)
            pos["epoch"] += 1
            pos["batch"] = 0
            pos["best_bleu"] = ranks.share(pos["best_bleu"])
            save_state()
            last_save = time.monotonic()
            if out_of_time:
                break
        return result


def mix_rng(seed: int, epoch: int) -> random.Random:
    """Draws an epoch's pairs from the mix."""
    return random.Random(seed * 1_000_003 + epoch)


def steps_of_epoch(args: argparse.Namespace, epoch: int, sizes: list[int], weights: list[float],
                   src_lengths: list[int], tgt_lengths: list[int], parts: int) -> list[list[int]]:
    """The steps of an epoch as index lists of the whole step (every rank's share): the same lists on any
    number of ranks, so a run resumes anywhere (and its token count can be replayed from its seed)."""
    drawn = data.draw_mix(sizes, weights, mix_rng(args.seed, epoch))
    seed = args.seed * 1000 + epoch
    s, t = [src_lengths[i] for i in drawn], [tgt_lengths[i] for i in drawn]
    batches = (data.target_token_batches(s, t, args.tokens_per_batch, seed) if args.tokens_per_batch
               else data.token_batches(s, t, (args.max_tokens or 2500) * parts, seed))
    return [[drawn[i] for i in b] for b in batches]


def totals(earlier: list[dict], target_tokens: int | None, train_time_s: float) -> dict:
    """What all runs behind the weights add up to: target tokens (None while a run's count is unknown) and
    hours of training."""
    counts = [run.get("target_tokens") for run in earlier] + [target_tokens]
    hours = (sum(run.get("train_time_s") or 0.0 for run in earlier) + train_time_s) / 3600
    return {"target_tokens_seen": None if None in counts else sum(counts), "train_hours_total": round(hours, 2)}


def resolve_corpora(args: argparse.Namespace) -> list[data.CorpusSpec]:
    if not args.corpus:  # one corpus, read as before the mixes existed
        path = data.resolve_data_dir(args.data_dir)
        return [data.CorpusSpec(path.resolve().name, path)]
    if args.data_dir:
        raise SystemExit("give either --corpus (with --data-root) or --data-dir, not both")
    try:
        corpora = [data.parse_corpus(text, args.data_root) for text in args.corpus]
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise SystemExit(f"a corpus is named twice in {names}; give each once, with a weight")
    for c in corpora:
        if not c.has_split("train", args.src, args.tgt):
            raise SystemExit(f"error: {c.path} has no train.{args.src}.gz and train.{args.tgt}.gz")
    return corpora


@contextlib.contextmanager
def stop_signals() -> Iterator[list[int]]:
    """SIGTERM and SIGINT are noted in the yielded list instead of killing; the old handlers come back after."""
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    main()
