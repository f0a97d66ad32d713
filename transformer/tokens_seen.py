"""Count the target tokens a checkpoint's weights were trained on, by replaying its runs' batch order:
`python -m transformer.tokens_seen checkpoints/NAME [--write]`.

Every run in config.json `training` (the runs it was warm-started from, `earlier`, and its own) that has no
`target_tokens` yet is replayed from its seed and step count: the epochs' draws from the mix and their
length-bucketed batches, exactly as `transformer.train` made them. The replay uses the checkpoint's own recipe
(corpora, weights, batch size) and tokenizer for every run, which is exact when the whole lineage shared them, as
the general models' runs did (`scripts/train-general.sh`). --write stores the counts and their totals
(`training.target_tokens_seen`, `training.train_hours_total`) in config.json; the weights are not touched.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .config import ModelConfig
from .tokenizer import Tokenizer
from .train import build_parser
from .train_data import TrainingData, resolve_corpora
from .train_eval import totals
from .train_ranks import Ranks


def replay(data: TrainingData, recipe: argparse.Namespace, seed: int, steps: int, parts: int) -> int:
    """Non-pad target tokens (with EOS) of a run's first `steps` steps."""
    args = argparse.Namespace(**{**vars(recipe), "seed": seed})
    tokens, epoch = 0, 0
    while steps > 0:
        batches = data.epoch_steps(args, epoch, parts)[:steps]
        tokens += sum(data.target_tokens(b) for b in batches)
        steps -= len(batches)
        epoch += 1
    return tokens


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m transformer.tokens_seen", description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", help="a checkpoint folder trained by transformer.train")
    p.add_argument("--data-root", help="folder of the recipe's corpora (default: $ANATOMY_DATA_ROOT, ../shared/data)")
    p.add_argument("--data-dir", help="the folder of a one-corpus recipe (no --corpus; default as transformer.train)")
    p.add_argument("--cache-dir", help="token cache (default: transformer.train's)")
    p.add_argument("--write", action="store_true", help="store the counts in the checkpoint's config.json")
    args = p.parse_args(argv)
    folder = Path(args.checkpoint)
    meta = json.loads((folder / "config.json").read_text())
    training = meta.get("training") or {}
    if "recipe" not in training:
        raise SystemExit(f"{folder}/config.json has no training recipe: not trained by transformer.train")
    flags = [f"--src={training['recipe']['src']}", f"--tgt={training['recipe']['tgt']}", "--out=-"]
    recipe = build_parser().parse_args(flags)
    vars(recipe).update(training["recipe"])
    recipe.data_root, recipe.data_dir = args.data_root, args.data_dir
    if args.cache_dir:
        recipe.cache_dir = args.cache_dir
    corpora = resolve_corpora(recipe)
    tokenizer = Tokenizer((folder / "tokenizer.model").read_bytes())
    data = TrainingData.load(recipe, corpora, [], tokenizer, ModelConfig.from_dict(meta["model"]).max_len, Ranks())
    parts = training.get("processes", 1) * recipe.accumulate
    runs = [*training.get("earlier", []), training]
    for run in runs:
        if run.get("target_tokens") is None:
            seed = run["seed"] if run is not training else recipe.seed
            run["target_tokens"] = replay(data, recipe, seed, run["steps"], parts)
        print(f"seed {run.get('seed', recipe.seed)}: {run['steps']} steps, {run['target_tokens']:,} target tokens")
    training.update(totals(training.get("earlier", []), training["target_tokens"], training["train_time_s"]))
    training.setdefault("autocast", "float32")  # before bf16, every CPU run was fp32
    print(f"in all: {training['target_tokens_seen']:,} target tokens, {training['train_hours_total']} hours")
    if args.write:
        (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return training


if __name__ == "__main__":
    main()
