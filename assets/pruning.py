"""Draw the pruning figures from heads.json: `python assets/pruning.py checkpoints/general-*`.

Writes each checkpoint's heads.png (its model card's figure: a panel per corpus in its heads.json) and
assets/pruning.png (docs/models.md's: a row per checkpoint), or the file given with --readme. Run it after
`python -m transformer.heads`, then `python -m transformer.card DIR --heads-only` to refresh the cards' text.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transformer.card import HEADS_FIGURE, corpus_info  # noqa: E402
from transformer.heads import read_heads  # noqa: E402
from viz.pruning import PruningPanel, pruning_png  # noqa: E402


def panels(folder: Path) -> list[PruningPanel]:
    """A panel per corpus of the checkpoint's heads.json (none when it has none for these weights)."""
    heads = read_heads(folder)
    return [PruningPanel(f"{folder.name}: {corpus_info(r.corpus).title} {r.split}, {r.sentences} sentences",
                         r.by_importance.bleu, r.random.bleu, len(r.by_importance.order), r.removable)
            for r in (heads.corpora.values() if heads else [])]


def write_figures(folders: list[Path], readme: Path) -> list[Path]:
    """Each folder's heads.png and docs/models.md's figure of them all; the paths written."""
    written, every = [], []
    for folder in folders:
        mine = panels(folder)
        if not mine:
            print(f"{folder} has no heads.json for its weights: run python -m transformer.heads first")
            continue
        (folder / HEADS_FIGURE).write_bytes(pruning_png(mine, columns=len(mine)))
        written.append(folder / HEADS_FIGURE)
        every.append(mine)
    if every:
        columns = max(len(p) for p in every)
        # A checkpoint with fewer corpora leaves the rest of its row empty, so each row is one checkpoint.
        grid = [panel for row in every for panel in row + [None] * (columns - len(row))]
        readme.write_bytes(pruning_png(grid, columns=columns))
        written.append(readme)
    return written


def main(argv: list[str] | None = None) -> list[Path]:
    p = argparse.ArgumentParser(prog="python assets/pruning.py", description=__doc__.split("\n")[0])
    p.add_argument("checkpoints", type=Path, nargs="+")
    p.add_argument("--readme", type=Path, default=ROOT / "assets" / "pruning.png", help="docs/models.md's figure")
    args = p.parse_args(argv)
    written = write_figures(args.checkpoints, args.readme)
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1000:.0f} kB)")
    return written


if __name__ == "__main__":
    main()
