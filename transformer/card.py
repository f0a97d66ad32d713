"""Write a checkpoint's model card: `python -m transformer.card checkpoints/NAME --length-penalty 0.6 1.0 1.4`.

Scores the checkpoint on the val split of every corpus it was trained on that has one (greedy,
and beam with each length penalty given), keeps the length penalty with the best mean BLEU
(written to config.json as the model's beam setting), and writes README.md with Hugging Face
Hub front matter, the scores, the data with its attributions, the recipe, the per-epoch log
and what the model is good and bad at.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from . import data
from .checkpoint import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, lineage
from .evaluate import score
from .explain import AGREEMENT_FILE, read_agreement
from .heads import HEADS_FILE, read_heads
from .translator import Translator


@dataclass(frozen=True)
class CorpusInfo:
    title: str  # how the card names it
    domain: str  # what its sentences are
    source: str  # where it comes from, its licence and the attribution it asks for
    hub_id: str = ""  # its Hugging Face dataset id, for the card's front matter


CORPORA = {
    "multi30k": CorpusInfo(
        "Multi30k", "image captions",
        "[Multi30k](https://github.com/multi30k/dataset) task 1 (Elliott et al., 2016): English image captions "
        "with German translations; research use, see its terms of use.", "multi30k"),
    "tatoeba": CorpusInfo(
        "Tatoeba", "everyday short sentences",
        "Tatoeba sentence pairs via the manythings.org Anki export (2018-05-13), CC-BY 2.0 FR. Attribution: "
        "[tatoeba.org](https://tatoeba.org) and [www.manythings.org/anki](https://www.manythings.org/anki)."),
    "newstest": CorpusInfo(
        "WMT newstest", "news",
        "WMT news test sets (statmt.org): news-test2008, newstest2009–2012 and 2015–2019 for training, "
        "newstest2013 for validation; published by WMT for research and evaluation."),
    "europarl-v7-head20k": CorpusInfo(
        "Europarl v7 (first 20k lines)", "European Parliament speeches",
        "[Europarl v7](https://www.statmt.org/europarl/) (Koehn, 2005), first 20k lines of the de–en pair; "
        "no known copyright restrictions."),
}


def corpus_info(name: str) -> CorpusInfo:
    return CORPORA.get(name, CorpusInfo(name, "unknown domain", f"`{name}` (no attribution on record)"))


def trained_corpora(meta: dict) -> list[dict]:
    """The corpora of the training mix as config.json records them; old checkpoints name only Multi30k."""
    return meta.get("training", {}).get("corpora") or [
        {"name": "multi30k", "weight": 1.0, "train_pairs": 29000, "pairs_per_epoch": 29000, "val_pairs": 1014}]


def epoch_table(metrics_log: str, corpora: list[str]) -> str:
    per_corpus = len(corpora) > 1
    head = ["epoch", "step", "train loss", "val loss", "val BLEU (greedy)", "val chrF",
            *(f"BLEU {c}" for c in corpora if per_corpus), "tokens/s", "minutes"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for line in metrics_log.splitlines():
        m = json.loads(line)
        cells = [m["epoch"], m["step"], f"{m['train_loss']:.3f}", f"{m['val_loss']:.3f}", f"{m['val_bleu']:.2f}",
                 f"{m.get('val_chrf', float('nan')):.2f}",
                 *(f"{m.get(f'val_bleu_{c}', float('nan')):.2f}" for c in corpora if per_corpus),
                 f"{m['tokens_per_s']:.0f}", f"{m['elapsed_s'] / 60:.1f}"]
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def score_table(results: dict) -> str:
    corpora = list(results["corpora"])
    rows = ["| decoding | " + " | ".join(f"{corpus_info(c).title} BLEU / chrF" for c in corpora) + " |",
            "|---|" + "---:|" * len(corpora)]
    for label, key in (("greedy", "greedy"), (f"beam {results['beam']}, length penalty {results['length_penalty']}",
                                              "beam")):
        rows.append(f"| {label} | " + " | ".join(
            f"{results['corpora'][c][key]['bleu']:.1f} / {results['corpora'][c][key]['chrf']:.1f}" for c in corpora)
            + " |")
    return "\n".join(rows)


def render(folder: Path, translator: Translator, results: dict) -> str:
    meta = translator.checkpoint.meta
    c = translator.config
    src, tgt = translator.checkpoint.source_lang, translator.checkpoint.target_lang
    training = meta.get("training", {})
    recipe = training.get("recipe", {})
    mix = trained_corpora(meta)
    names = [m["name"] for m in mix]
    metrics_log = (folder / "metrics.jsonl").read_text() if (folder / "metrics.jsonl").exists() else ""
    minutes = training.get("train_time_s", 0) / 60
    hub_ids = [corpus_info(n).hub_id for n in names if corpus_info(n).hub_id]
    titles = ", ".join(corpus_info(n).title for n in names)
    val_sizes = ", ".join(f"{corpus_info(n).title} {results['corpora'][n]['sentences']}" for n in results["corpora"])
    data_lines = "\n".join(
        f"- **{corpus_info(m['name']).title}** ({corpus_info(m['name']).domain}): {m['train_pairs']:,} training "
        f"pairs, {m['pairs_per_epoch']:,} drawn per epoch (weight {m['weight']:g}). {corpus_info(m['name']).source}"
        for m in mix)
    sweep = results.get("sweep", {})
    sweep_line = ("Length penalty chosen on val (mean beam BLEU over the corpora): " + ", ".join(
        f"{lp} → {bleu:.2f}" for lp, bleu in sweep.items()) + ".\n\n") if len(sweep) > 1 else ""
    return f"""---
license: apache-2.0
language:
- {src}
- {tgt}
tags:
- translation
- transformer
- attention-is-all-you-need
- from-scratch
{"datasets:" + "".join(f"{chr(10)}- {h}" for h in hub_ids) + chr(10) if hub_ids else ""}metrics:
- bleu
- chrf
pipeline_tag: translation
library_name: transformer-anatomy
---

# {folder.name}: {data.LANGUAGE_NAMES.get(src, src)} → {data.LANGUAGE_NAMES.get(tgt, tgt)} Transformer ({titles})

The encoder–decoder Transformer of *Attention Is All You Need* (Vaswani et al., 2017), written
from torch primitives in the Transformer Anatomy project and trained from scratch on {titles}.
{f"Domain: **{meta['domain']}**. " if meta.get("domain") else ""}It ships with the Transformer Anatomy app.

## Scores on val ({val_sizes} sentences)

sacreBLEU, detokenized, cased, 13a tokenizer (`{results['signature']}`):

{score_table(results)}

{sweep_line}The app and `python -m transformer.translate` use beam {results['beam']} with length penalty
{results['length_penalty']} for this model unless told otherwise.

## Model

- {'Pre-LN (a final LayerNorm after each stack)' if c.norm_first else 'Post-LN, as in the paper'}; d_model {c.d_model}, {c.n_heads} heads
  (d_k {c.d_k}), d_ff {c.d_ff}, {c.n_encoder_layers} encoder + {c.n_decoder_layers} decoder layers,
  dropout {c.dropout}, sinusoidal positions up to {c.max_len} tokens.
- One joint {src}+{tgt} SentencePiece unigram vocabulary of {c.vocab_size} pieces, learnt on the training mix; source
  embedding, target embedding and pre-softmax projection share one matrix (§3.4).
- {translator.model.num_parameters():,} parameters; weights stored in fp16, loaded as fp32.

## Data

{data_lines}

Trained on the `train` splits only; the checkpoint was selected on `val` BLEU (the mean over the corpora
that have a val split); test sets were never used.

## Training

- Label smoothing {recipe.get('label_smoothing')}, AdamW (β 0.9, 0.98, weight decay
  {recipe.get('weight_decay')}), peak learning rate {recipe.get('lr')} after {recipe.get('warmup')}
  warmup steps, then linear decay to zero; batches of ~{recipe.get('max_tokens')}
  tokens bucketed by length; gradient clip {recipe.get('clip')}; the shipped weights are an EMA
  (decay {recipe.get('ema_decay')}) of the training weights.
- Selected after epoch {training.get('epochs')} ({training.get('steps')} steps, {minutes:.0f} minutes of
  training on {hardware(training)});
  the table is the whole run, including resumed continuations. tokens/s depends on what else shared the
  machine (the two directions trained side by side).
{precision_line(training)}
{runs_table(lineage(meta))}

{epoch_table(metrics_log, [m['name'] for m in mix if m.get('val_pairs')])}

## Use

```python
from transformer import Translator
translator = Translator.from_checkpoint("{folder.as_posix()}")
print(translator.translate("{results['example_source']}", beam_size={results['beam']},
                           length_penalty={results['length_penalty']}).text)
# {results['example_output']}
```

{heads_section(folder)}{agreement_section(folder)}## Good at, bad at

{limits(names, src, tgt, results)}
"""


def card_scores(results: dict) -> dict:
    """The card's scores for config.json: beam (the card's decoding) and greedy, per corpus and their mean, on
    the val sentences scored."""
    scores = {"decoding": f"beam {results['beam']}, length penalty {results['length_penalty']}",
              "val_sentences": {n: r["sentences"] for n, r in results["corpora"].items()}}
    for key, prefix in (("beam", "val"), ("greedy", "val_greedy")):
        for metric in ("bleu", "chrf"):
            per = {n: round(r[key][metric], 2) for n, r in results["corpora"].items()}
            scores.update({f"{prefix}_{metric}_{n}": v for n, v in per.items()})
            scores[f"{prefix}_{metric}_mean"] = round(sum(per.values()) / len(per), 2)
    return scores


def precision_line(training: dict) -> str:
    """What ran: autocast dtype and compilation, and the target tokens seen over every run."""
    ran = {"bfloat16": "bf16 autocast (fp32 master weights, optimizer and EMA; fp32 loss and softmax)",
           "float16": "fp16 autocast with a gradient scaler"}.get(training.get("autocast", ""), "fp32")
    ran += ", torch.compile" if training.get("compiled") else ", eager (no torch.compile)"
    seen = training.get("target_tokens_seen")
    total = (f"; {seen / 1e6:.1f}M target tokens and {training['train_hours_total']:.1f} hours of training over "
             "every run" if seen else "")
    return f"- Last run: {ran}{total}."


def hardware(run: dict) -> str:
    """Where a run trained, in words (runs saved before devices were recorded ran on the CPU)."""
    if (run.get("device") or "cpu").startswith("cuda"):
        return f"one {run.get('device_name', 'GPU')}"
    threads = run.get("threads")
    return f"{threads} thread(s) of a 2-core CPU" if threads else "a 2-core CPU"


def runs_table(runs: list[dict]) -> str:
    """The runs behind the weights when there were several (each warm-started from the one before), else ""."""
    if len(runs) < 2:
        return ""
    rows = [f"| {i} | {'scratch' if not r['init_from'] else f'run {i - 1}'} | {r['seed']} | {r['lr']:g} | "
            f"{r['warmup']} | {r['epochs']} | {r['steps']} | {_millions(r.get('target_tokens'))} | "
            f"{r['train_time_s'] / 60:.0f} | {hardware(r)} | "
            f"{r['val_bleu']:.2f} |" for i, r in enumerate(runs, 1)]
    total = sum(r["train_time_s"] for r in runs) / 3600
    return (f"\nThe weights went through {len(runs)} runs, {total:.1f} hours of training in all: each run after the "
            "first starts from the best weights of the one before (the same tokenizer; a fresh optimizer, data order "
            "and learning-rate schedule). The recipe above and the epoch table below are the last run's.\n\n"
            "| run | from | seed | peak lr | warmup | epochs | steps | target tokens | minutes | on | val BLEU (greedy, "
            "mean) |\n|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def _millions(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:.2f}M"


def limits(names: list[str], src: str, tgt: str, results: dict) -> str:
    """What the scores say the model is good and bad at, in words a visitor can act on."""
    ranked = sorted(results["corpora"], key=lambda n: -results["corpora"][n]["beam"]["bleu"])
    best = ", ".join(f"{corpus_info(n).domain} ({results['corpora'][n]['beam']['bleu']:.0f} BLEU)" for n in ranked)
    seen = ", ".join(corpus_info(n).domain for n in names)
    return (f"It was trained on {seen}, and nothing else. On val it scores, best first: {best}. Short sentences "
            "like those it was trained on translate best. Long, technical or literary text, names and rare words "
            f"often come out wrong or are dropped; it knows only {data.LANGUAGE_NAMES.get(src, src)} as input "
            f"and writes only {data.LANGUAGE_NAMES.get(tgt, tgt)}. It is a small teaching model trained on a few hundred "
            "thousand sentence pairs, not a production translator.")


HEADS_HEADING = "## Which heads matter"
HEADS_FIGURE = "heads.png"  # drawn from heads.json by `python assets/pruning.py`
RANKINGS = {
    "raw": "by I_h as it is (the paper first divides each layer's importances by their ℓ2 norm; `heads.json` holds "
           "both, and `--rank-by normalized` ranks that way)",
    "normalized": "by I_h over the ℓ2 norm of its layer's importances (per attention kind), as in the paper",
}


def heads_section(folder: Path) -> str:
    """The card's pruning section from the folder's heads.json, ending in a blank line; "" when it has none for
    these weights."""
    heads = read_heads(folder)
    if heads is None or not heads.corpora:
        return ""
    results = list(heads.corpora.values())
    first = results[0]
    total = len(first.by_importance.order)
    half = total // 2
    rows = "\n".join(
        f"| {corpus_info(r.corpus).title} {r.split} | {r.sentences} | {r.full_bleu:.1f} | {r.removable} | "
        f"{r.random.removable} | {_bleu_at(r.by_importance.bleu, half)} / {_bleu_at(r.random.bleu, half)} |"
        for r in results)
    figure = (f"![Val BLEU as heads are removed, least important first and in a random order]({HEADS_FIGURE})\n\n"
              if (folder / HEADS_FIGURE).is_file() else "")
    order = first.by_importance.order
    return f"""{HEADS_HEADING}

Head importance as Michel et al. (2019, *Are Sixteen Heads Really Better than One?*) define it:
I_h = Σ_x |∂ log p(y_x | x) / ∂ξ_h| at ξ = 1, where ξ_h gates head h's output (before W_o) and y_x is the
reference translation of the val sentence x, teacher-forced. The {total} heads are switched off one at a time,
least important first {RANKINGS[first.ranked_by]}, and, as a control, in a random order (seed {first.seed}), with
greedy val BLEU after each removal; a curve ends once BLEU stays below 0.5 for three removals in a row.

| val set | sentences | BLEU, all {total} heads | heads off with < 1 BLEU lost, least important first | random order | BLEU with {half} heads off: least important first / random |
|---|---:|---:|---:|---:|---:|
{rows}

{figure}Least important on {corpus_info(first.corpus).title}: {_head_list(order[:3])}; most important:
{_head_list(order[:-4:-1])} (`kind:layer.head`, as the app's links name heads). `{HEADS_FILE}` holds every importance (raw and normalised),
both orders and every BLEU; `python -m transformer.heads --checkpoint {folder.as_posix()} --corpus {first.corpus}`
recomputes them (`--sentences`, default 500).

"""


def _head_list(heads) -> str:
    return ", ".join(f"`{h}`" for h in heads)


def _bleu_at(bleu: list[float], k: int) -> str:
    """BLEU with k heads off, "~0" where the curve ended near 0 before k."""
    return f"{bleu[k]:.1f}" if k < len(bleu) else "~0"


def with_heads_section(card: str, section: str) -> str:
    """`card` with its pruning section replaced by `section` ("" drops it); one without gets it before "Good at,
    bad at"."""
    return with_section(card, HEADS_HEADING, section)


def with_section(card: str, heading: str, section: str) -> str:
    """`card` with the section under `heading` replaced by `section` ("" drops it); one without gets it before "Good
    at, bad at"."""
    start = card.find(heading)
    if start < 0:
        start = end = card.find("## Good at, bad at")
        if start < 0:
            return card.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    else:
        end = card.find("\n## ", start + len(heading))
        end = len(card) if end < 0 else end + 1
    return card[:start] + section + card[end:]


AGREEMENT_HEADING = "## Does attention agree with attribution?"


def agreement_section(folder: Path) -> str:
    """The card's section from the folder's agreement.json (`python -m transformer.explain`), ending in a blank
    line; "" when it has none for these weights."""
    found = read_agreement(folder)
    if not found:
        return ""
    parts = []
    for a in found:
        L, H = a.attention.shape
        head_cols = " | ".join(f"h{h + 1}" for h in range(H))
        rows = "\n".join(
            f"| {li + 1} | " + " | ".join(f"{x:.2f}" for x in a.attention[li]) + f" | {a.layer_attention[li]:.2f} | "
            + " | ".join(f"{x:.2f}" for x in a.value_norm[li]) + f" | {a.layer_value_norm[li]:.2f} |" for li in range(L))
        weights, layer, head, rho = a.best()
        parts.append(f"""On the model's own greedy translations of the first {a.sentences} {corpus_info(a.corpus).title}
{a.split} sentences ({a.steps} steps), Spearman's ρ between each cross-attention head's weights at a step and
integrated gradients ({a.path_steps} points, zero-embedding baseline) over the source words, special pieces left
out, averaged over the steps; α is the attention weights, value-norm α‖v W_o‖ (Kobayashi et al. 2020), "mean" the
mean of the layer's heads:

| layer | α {head_cols} | α mean | value-norm {head_cols} | value-norm mean |
|---|{"---:|" * (2 * H + 2)}
{rows}

Agrees best: the {weights} weights of layer {layer}, head {head} (ρ = {rho:.2f}).""")
    first = found[0]
    return (f"{AGREEMENT_HEADING}\n\n" + "\n\n".join(parts) + f"""

`{AGREEMENT_FILE}` holds every figure; `python -m transformer.explain --checkpoint {folder.as_posix()} --corpus
{first.corpus}` recomputes them (`--sentences`, default 200).

""")


def usage_example(sources: list[str]) -> str:
    """A short val sentence for the card's usage example: the kind of sentence the model is made for."""
    return next((s for s in sources if 4 <= len(s.split()) <= 10), sources[0])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m transformer.card", description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--data-root", help="folder of corpora (default: $ANATOMY_DATA_ROOT, ../shared/data)")
    p.add_argument("--data-dir", help="for a Multi30k-only checkpoint: its folder (default ../shared/data/multi30k)")
    p.add_argument("--beam", type=int, default=DEFAULT_BEAM)
    p.add_argument("--length-penalty", type=float, nargs="+", default=[DEFAULT_LENGTH_PENALTY],
                   help="one, or several to choose from on val")
    p.add_argument("--limit", type=int, help="only the first N val sentences of each corpus")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--heads-only", action="store_true",
                   help=f"only rewrite the card's sections from {HEADS_FILE} and {AGREEMENT_FILE} (no scoring)")
    args = p.parse_args(argv)
    if args.heads_only:
        card = args.checkpoint / "README.md"
        if not card.is_file():
            raise SystemExit(f"error: {card} does not exist; write the whole card first")
        card.write_text(with_section(with_heads_section(card.read_text(), heads_section(args.checkpoint)),
                                     AGREEMENT_HEADING, agreement_section(args.checkpoint)))
        print(f"wrote the pruning and agreement sections of {card}")
        return
    torch.set_num_threads(args.threads)
    translator = Translator.from_checkpoint(args.checkpoint, device="cpu")
    ck = translator.checkpoint
    sets = {}
    for m in trained_corpora(ck.meta):
        if not m.get("val_pairs"):
            continue
        folder = (data.resolve_data_dir(args.data_dir) if args.data_dir or "corpora" not in ck.meta.get("training", {})
                  else data.parse_corpus(m["name"], args.data_root).path)
        sources, references = data.read_pairs(folder, "val", ck.source_lang, ck.target_lang)
        sets[m["name"]] = (sources[:args.limit], references[:args.limit])
    results: dict = {"corpora": {n: {"sentences": len(s)} for n, (s, _) in sets.items()}, "beam": args.beam}
    beams: dict[float, dict] = {}
    for lp in [None, *args.length_penalty]:
        for name, (sources, references) in sets.items():
            bleu_score, chrf_score, bleu, _ = score(translator, sources, references, 1 if lp is None else args.beam,
                                                    lp or 1.0)
            entry = {"bleu": bleu_score.score, "chrf": chrf_score.score}
            if lp is None:
                results["corpora"][name]["greedy"] = entry
            else:
                beams.setdefault(lp, {})[name] = entry
            results["signature"] = str(bleu.get_signature())
            print(f"{name} {'greedy' if lp is None else f'beam {args.beam} lp {lp}'}: "
                  f"BLEU {bleu_score.score:.2f} chrF {chrf_score.score:.2f}", flush=True)
    results["sweep"] = {lp: sum(v["bleu"] for v in per.values()) / len(per) for lp, per in beams.items()}
    lp = max(results["sweep"], key=results["sweep"].get)
    results["length_penalty"] = lp
    for name in sets:
        results["corpora"][name]["beam"] = beams[lp][name]
    example = usage_example(next(iter(sets.values()))[0])
    results["example_source"] = example
    results["example_output"] = translator.translate(example, beam_size=args.beam, length_penalty=lp).text
    meta = json.loads((args.checkpoint / "config.json").read_text())
    meta["decoding"] = {"beam_size": args.beam, "length_penalty": lp}
    meta["card"] = card_scores(results)
    (args.checkpoint / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    (args.checkpoint / "README.md").write_text(render(args.checkpoint, translator, results))
    print(f"wrote {args.checkpoint / 'README.md'} (beam {args.beam}, length penalty {lp})")


if __name__ == "__main__":
    main()
