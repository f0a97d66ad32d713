"""Decoding speed on this CPU: naive vs KV-cached greedy, attention capture, beam search.

Uses --checkpoint (default checkpoints/general-de-en if present, else checkpoints/multi30k-de-en; a
random-init model of the small preset if the folder has no weights) on a ~20-word sentence in its source
language (benchmarks/common.py). Every variant generates exactly N tokens (EOS is masked out) so each does
the same work, except the natural_* figures: Translator.translate as the app runs it (natural EOS, full
attention capture, 1 thread), greedy as it streams (natural_capture_ms) and with the model's own beam size and
length penalty, a click's default (natural_beam_ms). Both also in fp32 on the same weights, their runs taken
in turn: capture_speedup and beam_speedup are fp32 ÷ the app's default precision (transformer.device.pick_precision);
--baseline REV times the code of a git revision too. --quick skips the length sweep and batches 50 sentences,
not 200. The last line is machine-readable (wrapped here):
naive_ms=… cached_ms=… capture_ms=… beam5_ms=… tok_per_s=… speedup=… capture_overhead=…
natural_capture_ms=… natural_beam_ms=… fp32_capture_ms=… fp32_beam_ms=… capture_speedup=… beam_speedup=…
[baseline_capture_ms=… baseline_beam_ms=… baseline_capture_speedup=… baseline_beam_speedup=…]

--check-precision translates the val splits of each shipped checkpoint (or of each --checkpoint) with its own
decoding in fp32 and in fp16, and passes when ≥ 97 % of the translations are the same and BLEU is within 0.3.

    python benchmarks/decode.py --quick
    python -m benchmarks.decode --checkpoint checkpoints/multi30k-en-de --baseline 6495599
    python -m benchmarks.decode --check-precision
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

if not __package__:  # run as a file (python benchmarks/decode.py): put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, default_checkpoint, languages, median_ms, sentence  # noqa: E402
from transformer import Translator, data  # noqa: E402
from transformer.checkpoint import Checkpoint  # noqa: E402
from transformer.checkpoint import load as load_checkpoint
from transformer.config import PRESETS, ModelConfig  # noqa: E402
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
    return natural_pair_ms([translator], text, repeats, beam_size, length_penalty)[0]


def natural_pair_ms(translators: list[Translator], text: str, repeats: int = 7, beam_size: int = 1,
                    length_penalty: float = 1.0) -> list[float]:
    """`natural_capture_ms` of each translator, their runs taken in turn, so that the machine's drift during the
    measurement (another tenant, a frequency change) falls on each of them alike."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        calls = [lambda t=t: t.translate(text, beam_size=beam_size, length_penalty=length_penalty)
                 for t in translators]
        times: list[list[float]] = [[] for _ in calls]
        for call in calls:
            call()  # warm-up (fp16 weights are packed on first use)
        for _ in range(repeats):
            for call, ts in zip(calls, times):
                start = time.perf_counter()
                call()
                ts.append(1000 * (time.perf_counter() - start))
        return [statistics.median(ts) for ts in times]
    finally:
        torch.set_num_threads(threads)


# the revision's own natural_capture_ms, so that both sides are timed as that revision timed itself
BASELINE_SCRIPT = """
import json, sys
from benchmarks.decode import natural_capture_ms
from transformer import Translator
t = Translator.from_checkpoint(sys.argv[1], device="cpu")
text, beam, lp, r = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print(json.dumps([natural_capture_ms(t, text, r), natural_capture_ms(t, text, r, beam, lp)]))
"""


def baseline_ms(rev: str, checkpoint: Path, text: str, beam_size: int, length_penalty: float,
                repeats: int) -> tuple[float, float]:
    """natural capture and beam ms of the code at git revision `rev` (a temporary worktree, another process),
    on the same checkpoint folder: how the page decoded before a change, measured in the same sitting."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            out = subprocess.run([sys.executable, "-c", BASELINE_SCRIPT, str(checkpoint.resolve()), text,
                                  str(beam_size), str(length_penalty), str(repeats)],
                                 cwd=tree, capture_output=True, text=True, check=True).stdout
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    greedy_ms, beam_ms = json.loads(out.strip().splitlines()[-1])
    return greedy_ms, beam_ms


def naive_greedy(model: Transformer, src: torch.Tensor, n: int) -> list[int]:
    """Encode once, then re-decode the whole prefix at every step (no cache), projecting only
    the last position to the vocabulary, as the seed articles' greedy_decode does."""
    encoded = model.encode(src)
    ys = torch.tensor([[model.config.decoder_start_id]])  # <s> for ours; opus-mt has none and starts from its pad
    for _ in range(n):
        next_id = model.decode(ys, encoded, last_only=True).logits[0, -1].argmax()
        ys = torch.cat([ys, next_id.view(1, 1)], dim=1)
    return ys[0, 1:].tolist()


# A reduced-precision path is on by default only where it translates as fp32 does (issue 38's bar).
MIN_IDENTICAL = 0.97
MAX_BLEU_DELTA = 0.3


@dataclass(frozen=True)
class PrecisionCheck:
    """One checkpoint's val split of one corpus, translated with its own decoding in fp32 and in fp16."""

    checkpoint: str
    corpus: str
    sentences: int
    identical: float  # the share of sentences whose two translations are the same text
    bleu_fp32: float
    bleu_fp16: float

    @property
    def passed(self) -> bool:
        return self.identical >= MIN_IDENTICAL and abs(self.bleu_fp16 - self.bleu_fp32) <= MAX_BLEU_DELTA

    def line(self) -> str:
        return (f"{self.checkpoint} {self.corpus} val: {self.sentences} sentences, "
                f"identical {100 * self.identical:.2f} %, BLEU fp32 {self.bleu_fp32:.2f} fp16 {self.bleu_fp16:.2f} "
                f"(delta {self.bleu_fp16 - self.bleu_fp32:+.2f}) {'passed' if self.passed else 'FAILED'}")


def val_corpora(checkpoint: Checkpoint, data_root: Path | None = None) -> list[data.CorpusSpec]:
    """The corpora a checkpoint was trained on that have a val split in its languages (Multi30k for the older
    checkpoints, whose config lists none)."""
    names = (checkpoint.meta.get("training") or {}).get("recipe", {}).get("corpus") or ["multi30k"]
    specs = [data.parse_corpus(name, data_root) for name in names]
    return [c for c in specs if c.has_split("val", checkpoint.source_lang, checkpoint.target_lang)]


def check_precision(folder: Path, limit: int | None = None, data_root: Path | None = None,
                    batch_size: int = 64) -> Iterator[PrecisionCheck]:
    """fp32 against fp16 on the whole val split of each of the checkpoint's corpora (the first `limit` pairs), one
    corpus after another."""
    from sacrebleu.metrics import BLEU  # here: the timing needs no more than torch

    fp32, fp16 = (Translator(load_checkpoint(folder, "cpu"), torch.device("cpu"), p) for p in ("fp32", "fp16"))
    own = fp32.checkpoint.decoding
    for corpus in val_corpora(fp32.checkpoint, data_root):
        sources, references = data.read_pairs(corpus.path, "val", fp32.checkpoint.source_lang,
                                              fp32.checkpoint.target_lang)
        sources, references = sources[:limit], references[:limit]
        a, b = (t.translate_batch(sources, own.beam_size, length_penalty=own.length_penalty, batch_size=batch_size)
                for t in (fp32, fp16))
        yield PrecisionCheck(folder.name, corpus.name, len(sources), sum(x == y for x, y in zip(a, b)) / len(sources),
                             BLEU().corpus_score(a, [references]).score, BLEU().corpus_score(b, [references]).score)


def precision_main(folders: list[Path], limit: int | None) -> None:
    """Print each check and the summary line; exit 1 when one fails."""
    torch.set_num_threads(2)
    checks = []
    for folder in folders:
        for check in check_precision(folder, limit):
            print(check.line(), flush=True)
            checks.append(check)
    n = sum(c.sentences for c in checks)
    identical = sum(c.identical * c.sentences for c in checks) / max(1, n)
    worst = max(abs(c.bleu_fp16 - c.bleu_fp32) for c in checks)
    print(f"precision_sentences={n} precision_identical={identical:.4f} precision_max_bleu_delta={worst:.2f} "
          f"precision_passed={int(all(c.passed for c in checks))}")
    if not all(c.passed for c in checks):
        raise SystemExit(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", type=Path, action="append",
                   help=f"checkpoint folder (default: {default_checkpoint()}; with --check-precision, every folder "
                        "under checkpoints/); repeatable with --check-precision")
    p.add_argument("--check-precision", action="store_true",
                   help=f"translate each checkpoint's val splits in fp32 and fp16 with its own decoding: passes with "
                        f"≥ {MIN_IDENTICAL:.0%} identical and BLEU within {MAX_BLEU_DELTA}")
    p.add_argument("--limit", type=int, help="with --check-precision: the first N pairs of each val split")
    p.add_argument("--threads", type=int, default=1, help="1 is fastest for one sentence's tiny matrices")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per figure (natural_capture_ms: at least 7)")
    p.add_argument("--quick", action="store_true", help="skip the 20/80/160-token sweep; batch 50 sentences")
    p.add_argument("--baseline", metavar="REV",
                   help="also time the natural figures of the code at this git revision (e.g. the commit before a "
                        "change), in the same sitting: baseline_capture_speedup=, baseline_beam_speedup=")
    args = p.parse_args()
    if args.check_precision:
        folders = args.checkpoint or sorted(f for f in (ROOT / "checkpoints").iterdir()
                                            if (f / "model.safetensors").is_file())
        return precision_main(folders, args.limit)
    checkpoint = (args.checkpoint or [default_checkpoint()])[-1]
    torch.set_num_threads(args.threads)
    translator, trained = load(checkpoint)
    ck = translator.checkpoint
    text = sentence(ck.source_lang)
    model = translator.model
    no_eos = NoEOS.of(model)
    capture = Translator(Checkpoint(no_eos, translator.tokenizer, ck.source_lang, ck.target_lang, "bench"),
                         torch.device("cpu"))
    src_ids, _ = translator.encode_source(text)
    src = torch.tensor([src_ids])
    print(f"model: {'trained ' + str(checkpoint) if trained else 'random-init (no checkpoint)'} "
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

    # the app's path (its default precision) against the fp32 one, on the same weights
    same = Transformer(model.config).eval()
    same.load_state_dict(model.state_dict())
    fp32 = Translator(Checkpoint(same, translator.tokenizer, ck.source_lang, ck.target_lang, "fp32"),
                      torch.device("cpu"), "fp32")
    pair = [translator, fp32]
    natural, fp32_natural = natural_pair_ms(pair, text, max(7, r))
    trace = translator.translate(text)
    assert fp32.translate(text).text == trace.text
    print(f"greedy with full capture, natural EOS ({len(trace.output_tokens)} tokens, 1 thread): "
          f"{natural:.1f} ms in {translator.precision}, {fp32_natural:.1f} ms in fp32  [{trace.text}]")
    own = ck.decoding
    natural_beam, fp32_beam = natural_pair_ms(pair, text, max(7, r), own.beam_size, own.length_penalty)
    trace = translator.translate(text, beam_size=own.beam_size, length_penalty=own.length_penalty)
    print(f"the model's own decoding (beam {own.beam_size}, length penalty {own.length_penalty}) with full capture, "
          f"natural EOS ({len(trace.output_tokens)} tokens, 1 thread): {natural_beam:.1f} ms in "
          f"{translator.precision}, {fp32_beam:.1f} ms in fp32  [{trace.text}]")
    baseline = ""
    if args.baseline:
        old_greedy, old_beam = baseline_ms(args.baseline, checkpoint, text, own.beam_size, own.length_penalty,
                                           max(7, r))
        print(f"the code at {args.baseline}: greedy {old_greedy:.1f} ms, beam {old_beam:.1f} ms")
        baseline = (f" baseline_capture_ms={old_greedy:.1f} baseline_beam_ms={old_beam:.1f} "
                    f"baseline_capture_speedup={old_greedy / natural:.2f} "
                    f"baseline_beam_speedup={old_beam / natural_beam:.2f}")

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
          f"natural_capture_ms={natural:.1f} natural_beam_ms={natural_beam:.1f} "
          f"fp32_capture_ms={fp32_natural:.1f} fp32_beam_ms={fp32_beam:.1f} "
          f"capture_speedup={fp32_natural / natural:.2f} beam_speedup={fp32_beam / natural_beam:.2f}{baseline}")


if __name__ == "__main__":
    main()
