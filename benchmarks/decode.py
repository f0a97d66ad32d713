"""Decoding speed on this CPU: naive vs KV-cached greedy, attention capture, beam search.

Uses checkpoints/multi30k-de-en (or a random-init model of its config if absent). Every
variant generates exactly N tokens (EOS is masked out) so each does the same work. The
last line is machine-readable:
naive_ms=… cached_ms=… capture_ms=… beam5_ms=… tok_per_s=… speedup=… capture_overhead=…
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from transformer import Translator, data
from transformer.checkpoint import Checkpoint
from transformer.config import BOS_ID, EOS_ID, ModelConfig, PRESETS
from transformer.model import Transformer
from transformer.search import beam_search, greedy
from transformer.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("Ein kleiner Junge mit einem roten Hut spielt am Strand mit seinem Hund , während "
          "zwei Frauen auf einer Bank sitzen und zuschauen .")  # a typical ~20-word caption


class NoEOS(Transformer):
    """The same model with EOS made impossible, so every run generates exactly N tokens."""

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        out = super().logits(y)
        out[..., EOS_ID] = float("-inf")
        return out


def load(path: Path) -> tuple[Translator, bool]:
    if (path / "model.safetensors").exists():
        return Translator.from_checkpoint(path, device="cpu"), True
    sources, targets = data.read_pairs(data.resolve_data_dir(), "train", "de", "en")
    tok = Tokenizer.train(sources[:5000] + targets[:5000], vocab_size=8000)
    model = Transformer(ModelConfig(vocab_size=tok.vocab_size, max_len=256, **PRESETS["small"])).eval()
    return Translator(Checkpoint(model, tok, "de", "en", "random-init"), torch.device("cpu")), False


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


@torch.inference_mode()
def naive_greedy(model: Transformer, src: torch.Tensor, n: int) -> list[int]:
    """Encode once, then re-decode the whole prefix at every step (no cache), projecting only
    the last position to the vocabulary, as the seed articles' greedy_decode does."""
    encoded = model.encode(src)
    ys = torch.tensor([[BOS_ID]])
    for _ in range(n):
        next_id = model.decode(ys, encoded, last_only=True).logits[0, -1].argmax()
        ys = torch.cat([ys, next_id.view(1, 1)], dim=1)
    return ys[0, 1:].tolist()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", type=Path, default=ROOT / "checkpoints" / "multi30k-de-en")
    p.add_argument("--threads", type=int, default=1, help="1 is fastest for one sentence's tiny matrices")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    translator, trained = load(args.checkpoint)
    model = translator.model
    no_eos = NoEOS(model.config).eval()
    no_eos.load_state_dict(model.state_dict())
    capture = Translator(Checkpoint(no_eos, translator.tokenizer, "de", "en", "bench"), torch.device("cpu"))
    src_ids, _ = translator.encode_source(SOURCE)
    src = torch.tensor([src_ids])
    print(f"model: {'trained ' + str(args.checkpoint) if trained else 'random-init (no checkpoint)'}, "
          f"{model.num_parameters():,} parameters; source {len(SOURCE.split())} words = {len(src_ids)} tokens; "
          f"threads {args.threads}")
    assert naive_greedy(no_eos, src, 12) == greedy(no_eos, src, 12)[0]  # same tokens, different cost

    r = args.repeats
    n = 40
    naive = median_ms(lambda: naive_greedy(no_eos, src, n), r)
    cached = median_ms(lambda: greedy(no_eos, src, n), r)
    captured = median_ms(lambda: list(capture.steps(SOURCE, top_k=5, max_new_tokens=n)), r)
    beam5 = median_ms(lambda: beam_search(no_eos, src, 5, n), r)
    print(f"{n} tokens: naive {naive:.1f} ms, cached {cached:.1f} ms, cached+capture {captured:.1f} ms, "
          f"beam 5 {beam5:.1f} ms")
    for length in (20, 80, 160):
        a = median_ms(lambda: naive_greedy(no_eos, src, length), max(3, r // 2))
        b = median_ms(lambda: greedy(no_eos, src, length), max(3, r // 2))
        print(f"{length} tokens: naive {a:.1f} ms, cached {b:.1f} ms, speedup {a / b:.2f}")

    natural = median_ms(lambda: translator.translate(SOURCE), r)
    print(f"greedy with full capture, natural EOS ({len(translator.translate(SOURCE).output_tokens)} tokens): "
          f"{natural:.1f} ms  [{translator.translate(SOURCE).text}]")

    sources = data.read_lines(data.resolve_data_dir(), "val", "de")[:200]
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    outputs = translator.translate_batch(sources)
    seconds = time.perf_counter() - t0
    n_tokens = sum(len(translator.tokenizer.encode(o)) + 1 for o in outputs)
    tok_per_s = n_tokens / seconds
    print(f"batch: 200 val sentences, {n_tokens} target tokens in {seconds:.2f} s (2 threads)")
    print(f"naive_ms={naive:.1f} cached_ms={cached:.1f} capture_ms={captured:.1f} beam5_ms={beam5:.1f} "
          f"tok_per_s={tok_per_s:.1f} speedup={naive / cached:.2f} capture_overhead={captured / cached:.2f}")


if __name__ == "__main__":
    main()
