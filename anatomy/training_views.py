"""The training tab: a checkpoint's curves (metrics.jsonl), its validation scores and recipe (config.json) and its
model card."""
from __future__ import annotations

import base64
import re
from functools import lru_cache
from pathlib import Path

import plotly.graph_objects as go

import viz
from transformer.checkpoint import HF_PREFIX

from .registry import ModelEntry, shown_name

FIGURE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")  # a Markdown image: ![alt](target)
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".svg": "image/svg+xml"}
MAX_INLINE = 512 * 1024  # bytes: a card's figure inlined into the page


@lru_cache(maxsize=16)
def training_curves(entry: ModelEntry) -> go.Figure:
    return viz.training_curves(entry.metrics, title="Training")


@lru_cache(maxsize=16)
def training_markdown(entry: ModelEntry) -> str:
    """How the checkpoint was trained and scored (config.json), then its model card."""
    if entry.untrained:
        return training_summary(entry)
    local = entry.source and not entry.source.startswith(HF_PREFIX)
    card = card_figures(entry.card, Path(entry.source) if local else None)
    return "\n\n".join([training_summary(entry), "", "---", "",
                        card or f"No model card (README.md) in `{shown_name(entry.source)}`."])


def card_figures(card: str, folder: Path | None) -> str:
    """A model card whose figures beside it (`![alt](heads.png)`) are inlined: the page serves no file of a
    checkpoint's folder, so a relative link would be a broken image. One that cannot be read is named in words."""
    def inline(m: re.Match) -> str:
        alt, target = m.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http(s)://, data: — the browser's to load
            return m.group(0)
        mime, path = IMAGE_TYPES.get(Path(target).suffix.lower()), folder / target if folder else None
        if mime and path and path.is_file() and path.stat().st_size <= MAX_INLINE:
            return f"![{alt}](data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')})"
        return f"*(figure not shown here: {alt}, `{target}` beside the model card)*"

    return FIGURE.sub(inline, card)


def training_summary(entry: ModelEntry) -> str:
    """How the checkpoint was trained and scored, as its config.json says."""
    if entry.untrained:
        return "This model is **untrained**: random weights, no training log and no model card."
    meta = entry.checkpoint.meta
    metrics, training = meta.get("metrics") or {}, meta.get("training") or {}
    lines = []
    if metrics:
        parts = [f"BLEU **{metrics['val_bleu']:.1f}**" if "val_bleu" in metrics else "",
                 f"chrF {metrics['val_chrf']:.1f}" if "val_chrf" in metrics else "",
                 f"loss {metrics['val_loss']:.3f}" if "val_loss" in metrics else "",
                 f"after epoch {metrics['epoch']}" if "epoch" in metrics else ""]
        per_corpus = [f"{k.removeprefix('val_bleu_')} {v:.1f}" for k, v in metrics.items() if k.startswith("val_bleu_")]
        where = f"mean over {', '.join(per_corpus)}" if per_corpus else "Multi30k"
        lines.append(f"**Validation** (greedy; {where}): " + ", ".join(p for p in parts if p) + ".")
    if training:
        corpora = training.get("corpora") or []
        data = ", ".join(f"{c['name']} ×{c['weight']:g}" for c in corpora if isinstance(c, dict) and "name" in c) \
            or str(training.get("data", ""))
        bits = [f"{training['steps']:,} steps" if isinstance(training.get("steps"), int) else "",
                f"{training['train_time_s'] / 60:.0f} min" if isinstance(training.get("train_time_s"), (int, float))
                else "", f"on {training['device']}" if training.get("device") else "", data]
        if any(bits):
            lines.append("**Training**: " + ", ".join(b for b in bits if b) + ".")
    return "\n\n".join(lines)
