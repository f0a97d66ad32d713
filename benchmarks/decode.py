"""Decoding speed on this CPU: naive vs KV-cached greedy, attention capture, beam search.

Uses --checkpoint (default checkpoints/general-de-en if present, else checkpoints/multi30k-de-en; a
random-init model of the small preset if the folder has no weights) on a ~20-word sentence in its source
language (benchmarks/common.py). Every variant generates exactly N tokens (EOS is masked out) so each does
the same work, except the natural_* figures: Translator.translate as the app runs it (natural EOS, full
attention capture, 1 thread), greedy as it streams (natural_capture_ms) and with the model's own beam size and
length penalty, a click's default (natural_beam_ms). --quick skips the length sweep and batches 50 sentences,
not 200. The last line is machine-readable (wrapped here):
naive_ms=… cached_ms=… capture_ms=… beam5_ms=… tok_per_s=… speedup=… capture_overhead=…
natural_capture_ms=… natural_beam_ms=…

    python benchmarks/decode.py --quick
    python -m benchmarks.decode --checkpoint checkpoints/multi30k-en-de
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

if not __package__:  # run as a file (python benchmarks/decode.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import default_checkpoint, languages, median_ms, sentence  # noqa: E402
from transformer import Translator, data  # noqa: E402
from transformer.checkpoint import Checkpoint  # noqa: E402
from transformer.config import ModelConfig, PRESETS  # noqa: E402
from transformer.model import Transformer  # noqa: E402
from transformer.search import beam_search, greedy  # noqa: E402
from transformer.tokenizer import Tokenizer  # noqa: E402


class NoEOS(Transformer):
    """The same model with its EOS made impossible, so every run generates exactly N tokens. The ids its
    decoding never chooses (opus-mt's pad) are banned here too, so that naive_greedy, which reads the logits
    directly, chooses what the search does."""

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        out = super().logits(y)
        out[..., [self.config.eos_id, *self.config.suppress_ids]] = float("-inf")
        return out

    @classmethod
    def of(cls, model: Transformer) -> "NoEOS":
        """`model`'s weights in a NoEOS."""
        no_eos = cls(model.config).eval()
        no_eos.load_state_dict(model.state_dict())
        return no_eos


def load(path: Path) -> tuple[Translator, bool]:
    """The checkpoint on the CPU, or a random-init model of the small preset for its languages; and whether trained."""
    if (path / "model.safetensors").exists():
        return Translator.from_checkpoint(path, device="cpu"), True
    src, tgt = languages(path)
    sources, targets = data.read_pairs(data.resolve_data_dir(), "train", src, tgt)
    tok = Tokenizer.train(sources[:5000] + targets[:5000], vocab_size=8000)
    model = Transformer(ModelConfig(vocab_size=tok.vocab_size, max_len=256, **PRESETS["small"])).eval()
    return Translator(Checkpoint(model, tok, src, tgt, "random-init"), torch.device("cpu")), False


def natural_capture_ms(translator: Translator, text: str, repeats: int = 7, beam_size: int = 1,
                       length_penalty: float = 1.0) -> float:
    """Median ms of Translator.translate(text) as the app runs it: natural EOS, full attention capture, on
    1 thread (the app's default), after a warm-up; greedy unless a beam is given."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return median_ms(lambda: translator.translate(text, beam_size=beam_size, length_penalty=length_penalty),
                         repeats)
    finally:
        torch.set_num_threads(threads)


@torch.inference_mode()
def naive_greedy(model: Transformer, src: torch.Tensor, n: int) -> list[int]:
    """Encode once, then re-decode the whole prefix at every step (no cache), projecting only
    the last position to the vocabulary, as the seed articles' greedy_decode does."""
    encoded = model.encode(src)
    ys = torch.tensor([[model.config.decoder_start_id]])  # <s> for ours; opus-mt has none and starts from its pad
    for _ in range(n):
        next_id = model.decode(ys, encoded, last_only=True).logits[0, -1].argmax()
        ys = torch.cat([ys, next_id.view(1, 1)], dim=1)
    return ys[0, 1:].tolist()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", type=Path, default=default_checkpoint(),
                   help="checkpoint folder (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="1 is fastest for one sentence's tiny matrices")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per figure (natural_capture_ms: at least 7)")
    p.add_argument("--quick", action="store_true", help="skip the 20/80/160-token sweep; batch 50 sentences")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    translator, trained = load(args.checkpoint)
    ck = translator.checkpoint
    text = sentence(ck.source_lang)
    model = translator.model
    no_eos = NoEOS.of(model)
    capture = Translator(Checkpoint(no_eos, translator.tokenizer, ck.source_lang, ck.target_lang, "bench"),
                         torch.device("cpu"))
    src_ids, _ = translator.encode_source(text)
    src = torch.tensor([src_ids])
    print(f"model: {'trained ' + str(args.checkpoint) if trained else 'random-init (no checkpoint)'} "
          f"({ck.source_lang}→{ck.target_lang}), {model.num_parameters():,} parameters; "
          f"source {len(text.split())} words = {len(src_ids)} tokens; threads {args.threads}")
    assert naive_greedy(no_eos, src, 12) == greedy(no_eos, src, 12)[0]  # same tokens, different cost

    r = args.repeats
    n = 40
    naive = median_ms(lambda: naive_greedy(no_eos, src, n), r)
    cached = median_ms(lambda: greedy(no_eos, src, n), r)
    captured = median_ms(lambda: list(capture.stream(text, top_k=5, max_new_tokens=n)), r)
    beam5 = median_ms(lambda: beam_search(no_eos, src, 5, n), r)
    print(f"{n} tokens: naive {naive:.1f} ms, cached {cached:.1f} ms, cached+capture {captured:.1f} ms, "
          f"beam 5 {beam5:.1f} ms")
    for length in () if args.quick else (20, 80, 160):
        a = median_ms(lambda: naive_greedy(no_eos, src, length), max(3, r // 2))
        b = median_ms(lambda: greedy(no_eos, src, length), max(3, r // 2))
        print(f"{length} tokens: naive {a:.1f} ms, cached {b:.1f} ms, speedup {a / b:.2f}")

    natural = natural_capture_ms(translator, text, max(7, r))
    trace = translator.translate(text)
    print(f"greedy with full capture, natural EOS ({len(trace.output_tokens)} tokens, 1 thread): "
          f"{natural:.1f} ms  [{trace.text}]")
    own = ck.decoding
    natural_beam = natural_capture_ms(translator, text, max(7, r), own.beam_size, own.length_penalty)
    trace = translator.translate(text, beam_size=own.beam_size, length_penalty=own.length_penalty)
    print(f"the model's own decoding (beam {own.beam_size}, length penalty {own.length_penalty}) with full capture, "
          f"natural EOS ({len(trace.output_tokens)} tokens, 1 thread): {natural_beam:.1f} ms  [{trace.text}]")

    n_batch = 50 if args.quick else 200
    sources = data.read_lines(data.resolve_data_dir(), "val", ck.source_lang)[:n_batch]
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    outputs = translator.translate_batch(sources)
    seconds = time.perf_counter() - t0
    n_tokens = sum(len(translator.tokenizer.encode(o)) + 1 for o in outputs)
    tok_per_s = n_tokens / seconds
    print(f"batch: {len(sources)} val sentences, {n_tokens} target tokens in {seconds:.2f} s (2 threads)")
    print(f"naive_ms={naive:.1f} cached_ms={cached:.1f} capture_ms={captured:.1f} beam5_ms={beam5:.1f} "
          f"tok_per_s={tok_per_s:.1f} speedup={naive / cached:.2f} capture_overhead={captured / cached:.2f} "
          f"natural_capture_ms={natural:.1f} natural_beam_ms={natural_beam:.1f}")


if __name__ == "__main__":
    main()
