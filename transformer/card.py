"""Write a checkpoint's model card: `python -m transformer.card checkpoints/NAME --beam 5`.

Scores the checkpoint on Multi30k val (greedy and beam) and writes README.md with Hugging
Face Hub front matter, the recipe, the per-epoch log and the known limits.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from . import data
from .evaluate import score
from .translate import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY
from .translator import Translator

LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "cs": "Czech"}


def epoch_table(metrics_log: str) -> str:
    rows = ["| epoch | step | train loss | val loss | val BLEU (greedy) | val chrF | tokens/s | minutes |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for line in metrics_log.splitlines():
        m = json.loads(line)
        rows.append(f"| {m['epoch']} | {m['step']} | {m['train_loss']:.3f} | {m['val_loss']:.3f} | "
                    f"{m['val_bleu']:.2f} | {m.get('val_chrf', float('nan')):.2f} | {m['tokens_per_s']:.0f} | "
                    f"{m['elapsed_s'] / 60:.1f} |")
    return "\n".join(rows)


def render(folder: Path, translator: Translator, results: dict) -> str:
    meta = translator.checkpoint.meta
    c = translator.config
    src, tgt = translator.checkpoint.source_lang, translator.checkpoint.target_lang
    training = meta.get("training", {})
    recipe = training.get("recipe", {})
    metrics_log = (folder / "metrics.jsonl").read_text() if (folder / "metrics.jsonl").exists() else ""
    g, b = results["greedy"], results["beam"]
    minutes = training.get("train_time_s", 0) / 60
    return f"""---
license: apache-2.0
language:
- {src}
- {tgt}
tags:
- translation
- transformer
- attention-is-all-you-need
- multi30k
- from-scratch
datasets:
- multi30k
metrics:
- bleu
- chrf
pipeline_tag: translation
library_name: transformer-anatomy
---

# {folder.name}: {LANGUAGE_NAMES.get(src, src)} → {LANGUAGE_NAMES.get(tgt, tgt)} Transformer (Multi30k)

The encoder–decoder Transformer of *Attention Is All You Need* (Vaswani et al., 2017), written
from torch primitives in the Transformer Anatomy project and trained from scratch on Multi30k. It is the model the Transformer Anatomy app ships for {src}→{tgt}.

## Scores on Multi30k val (1014 sentences)

sacreBLEU, detokenized, cased, 13a tokenizer (`{results['signature']}`):

| decoding | BLEU | chrF |
|---|---:|---:|
| greedy | {g['bleu']:.1f} | {g['chrf']:.1f} |
| beam {b['beam']}, length penalty {b['length_penalty']} | {b['bleu']:.1f} | {b['chrf']:.1f} |

## Model

- {'Pre-LN (a final LayerNorm after each stack)' if c.norm_first else 'Post-LN, as in the paper'}; d_model {c.d_model}, {c.n_heads} heads
  (d_k {c.d_k}), d_ff {c.d_ff}, {c.n_encoder_layers} encoder + {c.n_decoder_layers} decoder layers,
  dropout {c.dropout}, sinusoidal positions up to {c.max_len} tokens.
- One joint {src}+{tgt} SentencePiece unigram vocabulary of {c.vocab_size} pieces; source
  embedding, target embedding and pre-softmax projection share one matrix (§3.4).
- {translator.model.num_parameters():,} parameters; weights stored in fp16, loaded as fp32.

## Data

[Multi30k](https://github.com/multi30k/dataset) task 1 (Elliott et al., 2016): 29,000 training
pairs of English image captions with German translations; see its terms of use there. Trained
on `train` only; the checkpoint was selected on `val` BLEU; test sets were never used.

## Training

- Label smoothing {recipe.get('label_smoothing')}, AdamW (β 0.9, 0.98, weight decay
  {recipe.get('weight_decay')}), peak learning rate {recipe.get('lr')} after {recipe.get('warmup')}
  warmup steps, then linear decay to zero over the time budget; batches of ~{recipe.get('max_tokens')}
  tokens bucketed by length; gradient clip {recipe.get('clip')}; the shipped weights are an EMA
  (decay {recipe.get('ema_decay')}) of the training weights.
- Selected after epoch {training.get('epochs')} ({training.get('steps')} steps, {minutes:.0f} minutes of
  training on {training.get('device', 'cpu')} ({training.get('threads')} of the 2 cores of a
  2-core machine)); the table is the whole run, including any resumed continuation. tokens/s depends on
  what else shared the machine (the de→en and en→de runs trained side by side).

{epoch_table(metrics_log)}

## Use

```python
from transformer import Translator
translator = Translator.from_checkpoint("{folder.as_posix()}")
print(translator.translate("{results['example_source']}", beam_size={b['beam']}).text)
# {results['example_output']}
```

## Limits

Multi30k is short, simple image captions ("A man in a blue shirt is standing on a ladder").
Long, technical, conversational or otherwise non-caption sentences translate poorly; names
and rare words are often dropped or replaced; the model knows only {LANGUAGE_NAMES.get(src, src)}
as input and produces only {LANGUAGE_NAMES.get(tgt, tgt)}. It is a teaching model, not a
production translator.
"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m transformer.card", description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--data-dir")
    p.add_argument("--beam", type=int, default=DEFAULT_BEAM)
    p.add_argument("--length-penalty", type=float, default=DEFAULT_LENGTH_PENALTY)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    ck = translator.checkpoint
    sources, references = data.read_pairs(data.resolve_data_dir(args.data_dir), "val", ck.source_lang,
                                          ck.target_lang)
    results: dict = {}
    for name, beam, lp in (("greedy", 1, 1.0), ("beam", args.beam, args.length_penalty)):
        bleu_score, chrf_score, bleu, _ = score(translator, sources, references, beam, lp)
        results[name] = {"bleu": bleu_score.score, "chrf": chrf_score.score, "beam": beam, "length_penalty": lp}
        results["signature"] = str(bleu.get_signature())
        print(f"{name}: BLEU {bleu_score.score:.2f} chrF {chrf_score.score:.2f}")
    results["example_source"] = sources[0]
    results["example_output"] = translator.translate(sources[0], beam_size=args.beam,
                                                     length_penalty=args.length_penalty).text
    (args.checkpoint / "README.md").write_text(render(args.checkpoint, translator, results))
    print(f"wrote {args.checkpoint / 'README.md'}")


if __name__ == "__main__":
    main()
