"""Transformer Anatomy: a web app that shows the paper's Transformer translating, from inside.

`python app.py` serves it (on $GRADIO_SERVER_NAME:$GRADIO_SERVER_PORT, default 127.0.0.1:7860).

Models: every checkpoint folder under checkpoints/ (or $ANATOMY_CHECKPOINT_DIR), named by the
languages in its config.json, plus the Hub checkpoints in $ANATOMY_HUB_MODELS (comma-separated
hf://owner/name). A folder that cannot be loaded is skipped with a visible notice; with no usable
checkpoint at all, a random-init model of the same shape keeps the app usable, labelled "untrained".
$ANATOMY_THREADS sets torch's CPU threads (default 1, see set_threads).

This file is layout and wiring; the figures are in viz/ (pure: arrays and tokens -> go.Figure).
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
import tempfile
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
import gradio.utils
import numpy as np
import torch
from gradio.components.plot import PlotData

import viz
from transformer import Trace, Translator
from transformer.analysis import DEFINITIONS, trace_head_statistics
from transformer.architecture import paper_total, parameter_breakdown, tensor_shapes
from transformer.checkpoint import Checkpoint, CheckpointError, resolve
from transformer.config import EOS_ID, PRESETS, ModelConfig
from transformer.model import Transformer, sinusoidal_positional_encoding
from transformer.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parent
LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "cs": "Czech"}

MAX_CHARS = 500
MAX_BEAM = 8
MAX_NEW_TOKENS = 200
MAX_TOP_K = 10
MAX_SLOW = 2.0  # seconds per token in slow motion
# Requests that may wait for a free slot; the next visitor is told at once that the app is busy (Gradio's
# "This application is currently busy. Please try again."; gradio_client raises QueueError "Queue is full").
QUEUE_SIZE = max(1, int(os.environ.get("ANATOMY_QUEUE_SIZE") or 64))
# Trace downloads hold the visitor's text: each is deleted this many seconds after it is written (prune_traces).
# They are written inside Gradio's cache folder, which Gradio serves without a copy of its own. Gradio's
# gr.Blocks(delete_cache=...) would not do: it loses track of the files of a component that has received a
# gr.skip() or gr.update() in the session, as the download button does on every streamed token (Gradio 6.31).
TRACE_RETENTION = max(1, int(os.environ.get("ANATOMY_TRACE_RETENTION") or 900))
TRACES = Path(gradio.utils.get_upload_folder()) / "transformer-anatomy-traces"
# While streaming, text and pieces update every token; figures only once decoding has taken FIRST_FIGURES
# seconds (a short sentence is done before that: its figures come once, complete), then every FIGURE_INTERVAL.
# Text is sent at most every TEXT_INTERVAL seconds (several tokens at once only when decoding outpaces that).
FIRST_FIGURES = 0.4
FIGURE_INTERVAL = 0.3
TEXT_INTERVAL = 0.05
PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"],
               "toImageButtonOptions": {"format": "png", "scale": 3, "filename": "transformer-anatomy"}}

# Multi30k-style image captions, written for this app (not taken from the test sets).
EXAMPLES = {
    "de": ["Zwei Hunde spielen im Schnee.",
           "Ein Mann fährt mit dem Fahrrad eine Straße entlang.",
           "Eine Frau in einem roten Kleid singt auf einer Bühne.",
           "Kinder spielen Fußball auf einer grünen Wiese."],
    "en": ["Two dogs are playing in the snow.",
           "A man is riding a bicycle down the street.",
           "A woman in a red dress is singing on a stage.",
           "Children are playing soccer on a green field."],
    "fr": ["Deux chiens jouent dans la neige.", "Un homme fait du vélo dans la rue."],
    "cs": ["Dva psi si hrají ve sněhu.", "Muž jede na kole po ulici."],
}

KINDS = {  # kind -> (radio label, query axis title, key axis title)
    "cross": ("Cross-attention (decoder → encoder)", "query: decoder position (read ▸ produced)",
              "key: source piece"),
    "encoder": ("Encoder self-attention", "query: source piece", "key: source piece"),
    "decoder": ("Decoder masked self-attention", "query: decoder position (read ▸ produced)",
                "key: decoder input piece (read)"),
}
KIND_HELP = {
    "cross": "**Cross-attention.** Each row is one decoder position: it *reads* the previous output piece and "
             "*produces* the next one (`read ▸ produced`). The row shows which source pieces it drew on; in a "
             "trained model the upper layers look like an **alignment** between the sentences.",
    "encoder": "**Encoder self-attention.** Each source piece (row) mixes in information from every source piece "
               "(columns), in both directions. Heads specialise: some look at the next or previous piece, some at "
               "the end of the sentence.",
    "decoder": "**Decoder masked self-attention.** Position *t* may only look at positions ≤ *t*: the **grey** "
               "cells are hidden by the mask (they are not zero attention). This is what makes left-to-right "
               "generation possible.",
}
COMMON_HELP = ("\n\nQueries are rows, keys are columns; each row sums to 1 and every heatmap uses the same "
               "0–1 colour scale. The orange frame marks the step chosen under *Decoding steps*.")
MEAN_HEAD = "mean"
LAST_LAYER = 64  # views clamp layers to the model's count: the default view shows the last layer
CONFIDENCE = {"p ≥ 0.8": "#bfdbfe", "0.4 ≤ p < 0.8": "#fde68a", "p < 0.4": "#fecaca"}
CURRENT = "current step"
PIECE = "piece"


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------

@dataclass
class ModelEntry:
    key: str  # the direction id used by the UI and the API: "de-en", or "de-en-2" for a second one
    label: str
    source: str  # folder or hf:// id ("" for the untrained fallback)
    checkpoint: Checkpoint
    untrained: bool = False
    metrics: list[dict] = field(default_factory=list)  # metrics.jsonl records
    card: str = ""  # the checkpoint's model card (README.md), front matter removed
    translators: dict[str, Translator] = field(default_factory=dict, repr=False)  # by device type
    cache: dict = field(default_factory=dict, repr=False)  # static figures
    _twin: Translator | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def twin(self) -> Translator:
        """The same architecture and tokenizer with untrained (random-init) weights, built on first use."""
        with self._lock:
            if self._twin is None:
                ck = dataclasses.replace(self.checkpoint, model=untrained_model(self.config), id="untrained twin")
                self._twin = Translator(ck, torch.device("cpu"))
            return self._twin

    @property
    def source_lang(self) -> str:
        return self.checkpoint.source_lang

    @property
    def target_lang(self) -> str:
        return self.checkpoint.target_lang

    @property
    def config(self) -> ModelConfig:
        return self.checkpoint.config

    @property
    def cpu(self) -> Translator:
        return self.translators["cpu"]


def cuda_available() -> bool:
    return torch.cuda.is_available()


def device_choices() -> list[str]:
    return ["auto", "cpu"] + (["cuda"] if cuda_available() else [])


def _read_metrics(folder: Path | None) -> list[dict]:
    if folder is None or not (folder / "metrics.jsonl").is_file():
        return []
    records = []
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _read_card(folder: Path | None) -> str:
    """The model card of a checkpoint folder, without its Hub front matter (YAML between --- lines)."""
    path = folder / "README.md" if folder is not None else None
    if path is None or not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.match(r"---\n.*?\n---\n", text, flags=re.S)
    return text[match.end():].strip() if match else text.strip()


def checkpoint_dir() -> Path:
    return Path(os.environ.get("ANATOMY_CHECKPOINT_DIR") or ROOT / "checkpoints")


def default_sources() -> list[str]:
    folder = checkpoint_dir()
    local = [str(p) for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")] \
        if folder.is_dir() else []
    hub = [s.strip() for s in os.environ.get("ANATOMY_HUB_MODELS", "").split(",") if s.strip()]
    return local + hub


def _shown(source: str) -> str:
    """A path as the notices show it: relative to the repository when inside it."""
    try:
        return str(Path(source).resolve().relative_to(ROOT))
    except ValueError:
        return source


def _direction_label(src: str, tgt: str) -> str:
    return f"{LANGUAGE_NAMES.get(src, src)} → {LANGUAGE_NAMES.get(tgt, tgt)}"


def untrained_model(config: ModelConfig) -> Transformer:
    """A random-init model of this shape, as training starts from: the same weights on every call (seed 0),
    without touching the caller's random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Transformer(dataclasses.replace(config, dropout=0.0)).eval()


def random_checkpoints(sources: list[str]) -> tuple[list[Checkpoint], str]:
    """The untrained fallback: a random-init model of the shipped shape (the `small` preset) for
    de→en and en→de. Its tokenizer comes from any folder with a usable one, else it is trained on
    the example sentences (a tiny vocabulary)."""
    tokenizer, where = None, "the app's example sentences"
    for source in sources:
        path = Path(source) / "tokenizer.model"
        if path.is_file():
            try:
                tokenizer, where = Tokenizer.load(path), _shown(str(path))
                break
            except (RuntimeError, ValueError, OSError):
                continue
    if tokenizer is None:
        tokenizer = Tokenizer.train([s for group in EXAMPLES.values() for s in group] * 4, vocab_size=120)
    model = untrained_model(ModelConfig(**{**PRESETS["small"], "vocab_size": tokenizer.vocab_size, "max_len": 256}))
    config = model.config
    ckpts = [Checkpoint(model, tokenizer, s, t, "untrained", {"model": config.to_dict(), "source_lang": s,
                                                               "target_lang": t, "untrained": True})
             for s, t in (("de", "en"), ("en", "de"))]
    return ckpts, where


class ModelRegistry:
    """The directions the app offers: each checkpoint loaded once, on the CPU (and on CUDA when asked)."""

    def __init__(self, entries: list[ModelEntry], notices: list[str]):
        if not entries:
            raise ValueError("a registry needs at least one model")
        self.entries = {e.key: e for e in entries}
        self.notices = notices

    @classmethod
    def discover(cls, sources: list[str] | None = None) -> "ModelRegistry":
        sources = default_sources() if sources is None else list(sources)
        loaded, notices = [], []
        for source in sources:
            try:
                translator = Translator.from_checkpoint(source, device="cpu")
            except CheckpointError as err:
                notices.append(f"Skipped `{_shown(source)}`: {err}")
                continue
            except Exception as err:  # a broken folder must never take the app down
                notices.append(f"Skipped `{_shown(source)}`: {type(err).__name__}: {err}")
                continue
            try:
                folder = resolve(source)
            except CheckpointError:
                folder = None
            loaded.append((source, translator, _read_metrics(folder), _read_card(folder)))
        entries = []
        for source, translator, metrics, card in loaded:
            ck = translator.checkpoint
            key, n = f"{ck.source_lang}-{ck.target_lang}", 2
            while key in {e.key for e in entries}:
                key, n = f"{ck.source_lang}-{ck.target_lang}-{n}", n + 1
            label = _direction_label(ck.source_lang, ck.target_lang)
            twins = [s for s, t, *_ in loaded if (t.checkpoint.source_lang, t.checkpoint.target_lang)
                     == (ck.source_lang, ck.target_lang)]
            if len(twins) > 1 or source.startswith("hf://"):
                label += f" ({source if source.startswith('hf://') else Path(source).name})"
            entries.append(ModelEntry(key, label, source, ck, metrics=metrics, card=card,
                                      translators={"cpu": translator}))
        if not entries:
            ckpts, where = random_checkpoints(sources)
            for ck in ckpts:
                entries.append(ModelEntry(f"{ck.source_lang}-{ck.target_lang}",
                                          _direction_label(ck.source_lang, ck.target_lang) + " · untrained",
                                          "", ck, untrained=True, translators={"cpu": Translator(ck, torch.device("cpu"))}))
            notices.append("No trained checkpoint was found, so the app runs an **untrained model** (random weights, "
                           f"the shipped layer sizes; tokenizer from {where}): its translations are gibberish, and the "
                           "figures show the machinery, not learned behaviour.")
        return cls(entries, notices)

    @property
    def default_key(self) -> str:
        return next(iter(self.entries))

    def choices(self) -> list[tuple[str, str]]:
        return [(e.label, e.key) for e in self.entries.values()]

    def get(self, key: str | None) -> ModelEntry:
        """The entry for a direction key; KeyError with the choices when unknown."""
        if not key:
            return self.entries[self.default_key]
        if key not in self.entries:
            raise KeyError(f"Unknown direction {key!r}; choose one of: {', '.join(self.entries)}.")
        return self.entries[key]

    def translator(self, key: str | None, device: str | None = "auto") -> tuple[Translator, str]:
        """The entry's translator on the asked device, and a notice when that device is not available."""
        entry = self.get(key)
        notice = ""
        wanted = (device or "auto").lower()
        if wanted not in ("auto", "cpu", "cuda"):
            wanted, notice = "auto", f"Unknown device {device!r}: using auto."
        use = "cuda" if wanted in ("auto", "cuda") and cuda_available() else "cpu"
        if wanted == "cuda" and use == "cpu":
            notice = "CUDA is not available on this machine: running on the CPU."
        if use not in entry.translators:
            ck = dataclasses.replace(entry.checkpoint, model=copy.deepcopy(entry.checkpoint.model))
            entry.translators[use] = Translator(ck, torch.device(use))
        return entry.translators[use], notice

    def fingerprint(self) -> str:
        """Changes whenever a served model's files or the figure code change (one examples cache for each)."""
        h = hashlib.sha256()
        for code in sorted([ROOT / "app.py", *(ROOT / "viz").glob("*.py")]):
            if code.is_file():
                h.update(code.read_bytes())
        for e in self.entries.values():
            h.update(f"{e.key}|{e.source}|{e.untrained}".encode())
            folder = Path(e.source) if e.source and not e.source.startswith("hf://") else None
            for name in ("config.json", "model.safetensors"):
                if folder is not None and (folder / name).is_file():
                    st = (folder / name).stat()
                    h.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# Views of a trace (figures via viz/)
# --------------------------------------------------------------------------------------------

def plot(fig) -> PlotData:
    """A figure for gr.Plot, with the Plotly config (PNG export at 3× scale, no logo)."""
    data = json.loads(fig.to_json())
    data["config"] = PLOT_CONFIG
    return PlotData(type="plotly", plot=json.dumps(data, separators=(",", ":")))


# ANSI/VT100 escape sequences (colours, cursor moves) and OSC sequences, removed from visitors' text.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def clean_text(text, what: str = "the text") -> tuple[str, list[str]]:
    """A visitor's text as the model gets it, from the page and the API alike: terminal escapes and control
    characters removed, whitespace (newlines too) collapsed, cut to MAX_CHARS; a notice for each change.
    Empty when nothing is left (the caller refuses it)."""
    text = text if isinstance(text, str) else ""
    notices = []
    clean = _ANSI.sub("", text)
    clean = "".join(ch if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf") else " " for ch in clean)
    if clean != text:
        notices.append(f"Control characters and terminal escape codes were removed from {what}.")
    clean = " ".join(clean.split())
    if len(clean) > MAX_CHARS:
        clean = clean[:MAX_CHARS]
        notices.append(f"{what.capitalize()} was longer than {MAX_CHARS} characters: only the first "
                       f"{MAX_CHARS} were used.")
    return clean, notices


def _api_int(name: str, value, hi: int) -> tuple[int | None, str]:
    """An API argument as an integer in [1, hi], or None and the message that says why not."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None, f"{name} must be an integer from 1 to {hi}, got {value!r}."
    if not 1 <= number <= hi:
        return None, f"{name} must be from 1 to {hi}, got {number}."
    return number, ""


def _int(value, lo: int, hi: int, default: int | None = None) -> int:
    try:
        v = int(float(value))
    except (TypeError, ValueError):
        v = lo if default is None else default
    return max(lo, min(hi, v))


@dataclass
class View:
    kind: str = "cross"
    layer: int = LAST_LAYER
    head: str = MEAN_HEAD
    merge: bool = False
    step: int | None = None  # decoding step t (1-based); None: the last one

    @classmethod
    def of(cls, kind, layer, head, merge, step=None) -> "View":
        return cls(kind if kind in KINDS else "cross", _int(layer, 1, 64, 1),
                   MEAN_HEAD if str(head) == MEAN_HEAD else str(_int(head, 1, 64, 1)), _flag(merge),
                   None if step in (None, "") else _int(step, 1, 10_000))


def _flag(value) -> bool:
    """A checkbox value, or its spelling in a link ("1", "true", "0", …)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def pick(weights: np.ndarray, layer: int, head: str) -> tuple[np.ndarray, str]:
    """(L, h, ...) -> one layer's head (or the mean of its heads), and a caption."""
    L, H = weights.shape[:2]
    l = _int(layer, 1, L) - 1
    if head == MEAN_HEAD:
        return weights[l].mean(0), f"layer {l + 1}, mean of {H} heads"
    h = _int(head, 1, H) - 1
    return weights[l, h], f"layer {l + 1}, head {h + 1}"


def _decoder_queries(trace: Trace) -> list[tuple[str, str]]:
    return list(zip(trace.target_tokens, trace.output_tokens))


def kind_arrays(trace: Trace, kind: str):
    """weights (L,h,Tq,Tk), query tokens, key tokens, causal?, query groups, key groups (for word merging)."""
    if kind == "encoder":
        g = viz.word_groups(trace.source_tokens)
        return trace.encoder_self_attn, list(trace.source_tokens), list(trace.source_tokens), False, g, g
    if kind == "decoder":
        g = viz.word_groups(trace.target_tokens)
        return trace.decoder_self_attn, _decoder_queries(trace), list(trace.target_tokens), True, g, g
    return (trace.cross_attn, _decoder_queries(trace), list(trace.source_tokens), False,
            viz.word_groups(trace.output_tokens), viz.word_groups(trace.source_tokens))


def _merge_tokens(tokens: list, groups: list[list[int]]) -> list:
    if tokens and isinstance(tokens[0], tuple):
        reads, prods = [t[0] for t in tokens], [t[1] for t in tokens]
        return [(viz.word_text(reads, g), viz.word_text(prods, g)) for g in groups]
    return [viz.word_text(tokens, g) for g in groups]


def merged(weights: np.ndarray, q: list, k: list, causal: bool, qg, kg, merge: bool):
    """Weights/labels/hidden cells as shown: per piece, or per word when merging."""
    hidden = viz.causal_mask(len(q), len(k)) if causal else None
    if not merge:
        return weights, q, k, hidden
    w, hidden = viz.merge_attention(weights, qg, kg, hidden)
    return w, _merge_tokens(q, qg), _merge_tokens(k, kg), hidden


def heatmap_figure(trace: Trace, view: View, prefix: str = ""):
    weights, q, k, causal, qg, kg = kind_arrays(trace, view.kind)
    matrix, caption = pick(weights, view.layer, view.head)
    matrix, q, k, hidden = merged(matrix, q, k, causal, qg, kg, view.merge)
    highlight = None
    if view.kind != "encoder" and not view.merge:
        T = max(len(trace.output_tokens), 1)
        highlight = _int(view.step or T, 1, T) - 1
    _, qt, kt = KINDS[view.kind]
    title = (f"{prefix}: " if prefix else "") + f"{KINDS[view.kind][0]} · {caption}" + (" · words" if view.merge else "")
    return viz.attention_heatmap(matrix, q, k, query_title=qt, key_title=kt, hidden=hidden,
                                 highlight_row=highlight, title=title)


def grid_figure(trace: Trace, view: View):
    weights, q, k, causal, qg, kg = kind_arrays(trace, view.kind)
    w, q, k, hidden = merged(weights, q, k, causal, qg, kg, view.merge)
    return viz.attention_grid(w, q, k, hidden=hidden, title=f"{KINDS[view.kind][0]}: every layer × head")


def summary_figure(stats: list, kind: str):
    """The small multiples of one attention kind's head statistics."""
    return viz.head_multiples(stats, kind,
                              title=f"{KINDS[kind][0]}: what each head does (every statistic per layer × head)")


def step_figures(source_tokens, read, produced, cross_row, self_row, top_k, view: View, t: int):
    """Decoding step t: its cross-attention row over the source, its masked self-attention row over
    the pieces read so far, and its top-k next pieces.
    cross_row (L, h, S), self_row (L, h, t+1), read/produced: the pieces up to and including t."""
    cross, caption = pick(np.asarray(cross_row), view.layer, view.head)
    selfw, _ = pick(np.asarray(self_row), view.layer, view.head)
    src, tgt = list(source_tokens), list(read[:t + 1])
    if view.merge:
        sg, tg = viz.word_groups(src), viz.word_groups(tgt)
        cross = np.array([cross[g].sum() for g in sg], dtype=np.float32)
        selfw = np.array([selfw[g].sum() for g in tg], dtype=np.float32)
        src, tgt = [viz.word_text(src, g) for g in sg], [viz.word_text(tgt, g) for g in tg]
    query = (read[t], produced[t])
    f_cross = viz.attention_row(cross, src, query=query, key_title=KINDS["cross"][2],
                                title=f"Step {t + 1} cross-attention ({caption})")
    f_self = viz.attention_row(selfw, tgt, query=query, key_title=KINDS["decoder"][2], color="#21918c",
                               title=f"Step {t + 1} masked self-attention ({caption})")
    f_topk = viz.topk_bars(top_k, chosen=produced[t],
                           title=f"Step {t + 1}: next-piece probabilities → {viz.label(produced[t])}")
    return f_cross, f_self, f_topk


def trace_step_figures(trace: Trace, view: View):
    T = len(trace.output_tokens)
    if T == 0:
        e = plot(viz.empty_figure("No decoding step"))
        return e, e, e
    t = _int(view.step or T, 1, T) - 1
    figs = step_figures(trace.source_tokens, trace.target_tokens, trace.output_tokens, trace.cross_attn[:, :, t],
                        trace.decoder_self_attn[:, :, t, :t + 1], trace.top_k[t] if t < len(trace.top_k) else [],
                        view, t)
    return tuple(plot(f) for f in figs)


def token_prob(top_k: list[dict], token: str) -> float | None:
    for cand in top_k:
        if cand["token"] == token:
            return float(cand["prob"])
    return None


def confidence(p: float | None) -> str:
    if p is None or p < 0.4:
        return "p < 0.4"
    return "p ≥ 0.8" if p >= 0.8 else "0.4 ≤ p < 0.8"


def output_chips(produced: list[str], top_k: list[list[dict]]) -> list[tuple[str, str]]:
    return [(tok, confidence(token_prob(top_k[i] if i < len(top_k) else [], tok))) for i, tok in enumerate(produced)]


def partial_chips(produced: list[str], t: int) -> list[tuple[str, str]]:
    return [(tok, CURRENT if i == t else PIECE) for i, tok in enumerate(produced[:t + 1])]


def source_chips(pieces: list[str]) -> list[tuple[str, str]]:
    return [(p, PIECE) for p in pieces]


def model_figures(entry: ModelEntry, dims: list | None = None) -> tuple:
    c = entry.config
    key = ("pe", tuple(dims) if dims else None)
    if key not in entry.cache:
        pe = sinusoidal_positional_encoding(c.max_len, c.d_model).numpy()
        good = sorted({int(d) for d in dims or [] if str(d).lstrip("-").isdigit() and 0 <= int(d) < c.d_model})
        entry.cache[key] = plot(viz.positional_encoding(pe, dims=good or None,
                                                        title=f"Sinusoidal positional encoding (d_model = {c.d_model}, "
                                                              f"{c.max_len} positions)"))
    if "static" not in entry.cache:
        pe = sinusoidal_positional_encoding(c.max_len, c.d_model).numpy()
        named = [(n, p.numel()) for n, p in entry.checkpoint.model.named_parameters()]
        entry.cache["static"] = (plot(viz.positional_similarity(pe, title="PE(p) · PE(q) / d_model")),
                                 plot(viz.parameter_sunburst(named, title="Where the parameters are (click to zoom)")),
                                 plot(viz.training_curves(entry.metrics, title="Training")))
    return (entry.cache[key], *entry.cache["static"])


def pe_rows_figure(entry: ModelEntry, source_tokens: list[str]):
    c = entry.config
    pe = sinusoidal_positional_encoding(max(len(source_tokens), 1), c.d_model).numpy()
    return plot(viz.positional_rows(pe, source_tokens, title="The encodings added to this input's pieces"))


def architecture_markdown(entry: ModelEntry) -> str:
    """The loaded model's hyperparameters and its parameters per component, checked against the paper's formula."""
    c = entry.config
    lines = [f"### {entry.label} (`{entry.key}`)"]
    if entry.untrained:
        lines.append("> ⚠️ **Untrained: random weights.** Translations are gibberish and attention patterns are "
                     "arbitrary; they show the machinery, not what a trained model learns.")
    else:
        lines.append(f"Checkpoint `{_shown(entry.source)}`.")
    rows = [("layers N (encoder / decoder)", f"{c.n_encoder_layers} / {c.n_decoder_layers}"), ("d_model", c.d_model),
            ("heads h", f"{c.n_heads} (d_k = d_v = d_model / h = {c.d_k})"), ("d_ff", c.d_ff),
            ("vocabulary V (joint SentencePiece)", f"{c.vocab_size:,}"), ("max_len", c.max_len),
            ("dropout (training)", c.dropout), ("layer norm", "pre-LN" if c.norm_first else "post-LN, as in the paper"),
            ("embeddings", "tied: source, target and output (§3.4)" if c.tie_embeddings else "separate")]
    lines += ["", "| hyperparameter | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    lines += ["", "#### Parameters", viz.parameter_markdown(parameter_breakdown(c),
                                                             entry.checkpoint.model.num_parameters(),
                                                             closed_form=paper_total(c).formula)]
    return "\n".join(lines)


def training_markdown(entry: ModelEntry) -> str:
    """How the checkpoint was trained and scored (config.json), then its model card."""
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
        lines.append("**Multi30k validation** (greedy): " + ", ".join(p for p in parts if p) + ".")
    if training:
        bits = [f"{training['steps']:,} steps" if isinstance(training.get("steps"), int) else "",
                f"{training['train_time_s'] / 60:.0f} min" if isinstance(training.get("train_time_s"), (int, float))
                else "", f"on {training['device']}" if training.get("device") else "", str(training.get("data", ""))]
        if any(bits):
            lines.append("**Training**: " + ", ".join(b for b in bits if b) + ".")
    lines += ["", "---", "", entry.card or f"No model card (README.md) in `{_shown(entry.source)}`."]
    return "\n\n".join(lines)


def architecture_figure(entry: ModelEntry, source_len: int, target_len: int, caption: str) -> PlotData:
    c = entry.config
    return plot(viz.architecture_diagram(tensor_shapes(c, source_len, target_len), norm_first=c.norm_first,
                                         title=caption))


def trace_file(trace: Trace) -> str:
    """The trace as a JSON file for the download button, deleted TRACE_RETENTION seconds later."""
    TRACES.mkdir(parents=True, exist_ok=True)
    text = trace.to_json()
    path = TRACES / f"trace-{hashlib.sha1(text.encode()).hexdigest()[:16]}.json"
    path.write_text(text)
    _TRACE_WRITTEN.set()
    return str(path)


def prune_traces() -> float | None:
    """Delete the trace files older than TRACE_RETENTION; the seconds until the next one is due (None: none left)."""
    now, due = time.time(), []
    for path in TRACES.glob("trace-*.json"):
        try:
            age = now - path.stat().st_mtime
            if age >= TRACE_RETENTION:
                path.unlink()
            else:
                due.append(TRACE_RETENTION - age)
        except OSError:  # gone already (another app on the same temp folder pruned it)
            continue
    return min(due, default=None)


def _prune_traces_forever() -> None:
    # Sleeps until the oldest file is due or a new one is written, so an idle app keeps nobody's text, and a
    # restarted one deletes what the last run left.
    while True:
        _TRACE_WRITTEN.clear()
        _TRACE_WRITTEN.wait(prune_traces())


_TRACE_WRITTEN = threading.Event()
threading.Thread(target=_prune_traces_forever, name="prune-traces", daemon=True).start()


def share_query(key: str, text: str, beam, max_new, lp, view: View) -> str:
    """The query string of a link that restores this translation and view (App.on_load reads it back)."""
    params = {"direction": key, "text": clean_text(text)[0], "beam": _int(beam, 1, MAX_BEAM),
              "max": _int(max_new, 0, MAX_NEW_TOKENS), "lp": _lp(lp), "view": view.kind, "layer": view.layer,
              "head": view.head, "merge": int(view.merge)}
    if view.step is not None:
        params["step"] = view.step
    return "?" + urllib.parse.urlencode(params)


def _lp(value) -> float:
    """A length penalty in [0, 3], one decimal (the slider's grid); 1.0 when unreadable."""
    try:
        lp = float(value)
    except (TypeError, ValueError):
        return 1.0
    return round(min(max(lp, 0.0), 3.0), 1) if np.isfinite(lp) else 1.0


# --------------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------------

OUT = ("trace", "untrained", "pending", "translation", "notice", "src_chips", "out_chips", "candidates", "forced", "download",
       "step", "partial", "step_cross", "step_self", "step_topk", "layer", "head", "heat", "grid", "summary",
       "pick_head", "pe_rows", "topk_table")


# What a cached example restores from the cache: plain values only. Gradio 6.31's example cache keeps no
# gr.State (it comes back empty) and fails on any gr.update() of a prop ("'Slider' object has no attribute
# 'info'"). So after the cached outputs, App.on_example_state rebuilds the trace for this visitor (one
# greedy pass) and fits the slider ranges, head choices and candidates table to it (App.on_sync).
TAB_OUT = ("grid", "summary", "topk_table", "pe_rows", "stats", "arch")  # App.on_tabs

SYNCED = ("trace", "untrained", "pending", "candidates", "step", "layer", "head", "pick_head")
EXAMPLE_OUT = tuple(name for name in OUT if name not in SYNCED)


def pack(**values) -> tuple:
    """Handler outputs in OUT order; anything not given is left as it is (gr.skip())."""
    unknown = set(values) - set(OUT)
    if unknown:
        raise KeyError(f"not outputs: {sorted(unknown)}")
    return tuple(values.get(name, gr.skip()) for name in OUT)


def head_choices(n_heads: int) -> list[tuple[str, str]]:
    return [("mean of heads", MEAN_HEAD)] + [(str(h + 1), str(h + 1)) for h in range(n_heads)]


def grid_pick_choices(n_layers: int, n_heads: int) -> list[tuple[str, str]]:
    return [(f"layer {l + 1} · head {h + 1}", f"{l + 1}:{h + 1}") for l in range(n_layers) for h in range(n_heads)]


@dataclass
class Request:
    """One translation request from the UI, validated."""

    key: str
    text: str
    beam: int
    max_new: int  # 0 = automatic
    device: str
    top_k: int
    length_penalty: float
    slow: float
    notices: list[str] = field(default_factory=list)  # what clean_text changed in the text


class App:
    def __init__(self, registry: ModelRegistry):
        self.registry = registry
        self.demo: gr.Blocks | None = None

    # ---- requests ----

    def request(self, key, text, beam, max_new, device, top_k, length_penalty, slow) -> Request:
        text, notices = clean_text(text)
        if not text:
            raise gr.Error(" ".join(notices + ["Type a sentence in Source text first."]))
        try:
            self.registry.get(key)
        except KeyError as err:
            raise gr.Error(str(err.args[0])) from None
        try:
            slow_s = float(slow or 0)
        except (TypeError, ValueError):
            slow_s = 0.0
        return Request(key or self.registry.default_key, text, _int(beam, 1, MAX_BEAM), _int(max_new, 0, MAX_NEW_TOKENS),
                       device or "auto", _int(top_k, 1, MAX_TOP_K, 5), _lp(length_penalty),
                       min(max(slow_s, 0.0), MAX_SLOW), notices)

    def compute(self, req: Request) -> tuple[Trace, list[str], float]:
        """The whole trace of one request (beam or greedy), with its notices and the time it took."""
        translator, device_notice = self.registry.translator(req.key, req.device)
        start = time.perf_counter()
        trace = translator.translate(req.text, beam_size=req.beam, max_new_tokens=req.max_new or None,
                                     length_penalty=req.length_penalty, top_k=req.top_k)
        return trace, self.notices(req, trace, device_notice), time.perf_counter() - start

    def notices(self, req: Request, trace: Trace | None, device_notice: str = "") -> list[str]:
        out = []
        if self.registry.get(req.key).untrained:
            out.append("This model is untrained (random weights): its output is noise.")
        if device_notice:
            out.append(device_notice)
        out += req.notices
        if trace is not None:
            out += list(trace.notices)
            unknown = trace.source_tokens.count("<unk>")
            if unknown:
                out.append(f"{unknown} piece(s) of the text are unknown to this model (read as <unk>): it knows "
                           "only German and English image captions.")
            if trace.cut_by_limit:
                out.append("Decoding stopped at the length limit (max new tokens) before the end of the sentence.")
        return out

    # ---- presenting a finished trace ----

    def present(self, trace: Trace, req: Request, view: View, notices: list[str], showing: str,
                elapsed: float | None) -> tuple:
        entry = self.registry.get(req.key)
        L, H = trace.cross_attn.shape[:2]
        T = len(trace.output_tokens)
        view = dataclasses.replace(view, layer=_int(view.layer, 1, L),
                                   head=view.head if view.head == MEAN_HEAD else str(_int(view.head, 1, H)),
                                   step=_int(view.step, 1, max(T, 1)) if view.step else max(T, 1))
        step_cross, step_self, step_topk = trace_step_figures(trace, view)
        timing = f" in {elapsed:.2f} s" if elapsed is not None else ""
        info = [f"⚠️ {n}" for n in notices]
        info.append(f"{showing}: {len(trace.source_tokens)} source pieces → {T} output pieces{timing} on "
                    f"`{trace.settings.get('device', 'cpu')}` · "
                    f"[link to this view]({share_query(entry.key, req.text, req.beam, req.max_new, req.length_penalty, view)})")
        return pack(
            trace=trace, untrained=None, pending=None, translation=trace.text, notice="\n\n".join(info),
            src_chips=source_chips(trace.source_tokens),
            out_chips=output_chips(trace.output_tokens, trace.top_k),
            candidates=gr.update(value=[[i + 1, c.text, round(c.score, 4), round(c.log_prob, 4), len(c.tokens) + 1]
                                        for i, c in enumerate(trace.candidates)], visible=bool(trace.candidates)),
            forced=trace.text, download=trace_file(trace),
            step=gr.update(maximum=max(T, 2), value=view.step), partial=partial_chips(trace.output_tokens, view.step - 1),
            step_cross=step_cross, step_self=step_self, step_topk=step_topk,
            layer=gr.update(maximum=max(L, 2), value=view.layer), head=gr.update(choices=head_choices(H), value=view.head),
            heat=plot(heatmap_figure(trace, view)), pick_head=gr.update(choices=grid_pick_choices(L, H), value=None))

    def tab_figures(self, trace: Trace, key: str, view: View) -> dict:
        """The views below the fold (all heads, head statistics, predictions, PE of the input), by TAB_OUT
        name: sent by a follow-up event so that the main view renders first."""
        try:
            entry = self.registry.get(key)
        except KeyError:
            entry = self.registry.get(None)
        stats = trace_head_statistics(trace)
        headers, rows = viz.head_table(stats)
        return dict(grid=plot(grid_figure(trace, view)), summary=plot(summary_figure(stats, view.kind)),
                    topk_table=plot(viz.topk_table(trace.output_tokens, trace.top_k,
                                                   title="Top-k next pieces at every step (bold: emitted)")),
                    pe_rows=pe_rows_figure(entry, trace.source_tokens),
                    stats=gr.update(value=rows, headers=headers),
                    arch=architecture_figure(entry, len(trace.source_tokens), len(trace.target_tokens),
                                             "Shapes for this translation (the whole output read at once, as in "
                                             "training and in the final pass)"))

    def on_tabs(self, trace, key, kind, merge):
        if trace is None:
            return (gr.skip(),) * len(TAB_OUT)
        figures = self.tab_figures(trace, key, View.of(kind, 1, MEAN_HEAD, merge))
        return tuple(figures[name] for name in TAB_OUT)

    def on_stat_pick(self, evt: gr.SelectData):
        """A row of the head-statistics table: open that head (kind, layer, head) in the large view."""
        row = list(evt.row_value or [])
        kinds = {label: kind for kind, label in viz.KIND_LABELS.items()}
        if len(row) < 3 or row[0] not in kinds:
            return gr.skip(), gr.skip(), gr.skip()
        return kinds[row[0]], gr.update(value=_int(row[1], 1, 64)), gr.update(value=str(_int(row[2], 1, 64)))

    # ---- Translate: streams tokens (or computes for a slow-motion replay) inside the model slot ----

    def on_translate(self, key, text, beam, max_new, device, top_k, length_penalty, slow, kind, layer, head, merge):
        req = self.request(key, text, beam, max_new, device, top_k, length_penalty, slow)
        view = View.of(kind, layer, head, merge)
        if req.slow > 0:
            trace, notices, elapsed = self.compute(req)
            yield pack(pending={"trace": trace, "req": req, "notices": notices, "elapsed": elapsed},
                       notice="Replaying in slow motion…", translation="", out_chips=[],
                       src_chips=source_chips(trace.source_tokens))
            return
        if req.beam > 1:
            yield pack(notice=f"Beam search with {req.beam} beams…", translation="", out_chips=[])
            trace, notices, elapsed = self.compute(req)
            yield self.present(trace, req, view, notices, f"Beam search ({req.beam} beams), best candidate", elapsed)
            return
        yield from self.stream(req, view)

    def stream(self, req: Request, view: View):
        """Greedy decoding, one piece at a time: text and chips every token, figures at most every
        FIGURE_INTERVAL seconds, and the complete views at the end."""
        translator, device_notice = self.registry.translator(req.key, req.device)
        src, _ = translator.encode_source(req.text)
        source_tokens = translator.tokenizer.pieces(src)
        ids, produced, read, top_k, cross_rows = [], [], ["<s>"], [], []
        start = last = last_text = time.perf_counter()
        yield pack(pending=None, src_chips=source_chips(source_tokens), out_chips=[], translation="",
                   notice="Translating…")
        for step in translator.steps(req.text, top_k=req.top_k, max_new_tokens=req.max_new or None):
            t = step.index
            ids.append(step.token_id)
            produced.append(step.token)
            top_k.append(step.top_k)
            cross_rows.append(step.cross_attn)
            text = translator.tokenizer.decode([i for i in ids if i != EOS_ID])
            values = dict(translation=text, out_chips=output_chips(produced, top_k),
                          step=gr.update(maximum=max(t + 1, 2), value=t + 1), partial=partial_chips(produced, t))
            now = time.perf_counter()
            if now - start >= FIRST_FIGURES and now - last >= FIGURE_INTERVAL:
                last = now
                figs = step_figures(source_tokens, read, produced, step.cross_attn, step.decoder_self_attn,
                                    step.top_k, view, t)
                values.update(step_cross=plot(figs[0]), step_self=plot(figs[1]), step_topk=plot(figs[2]))
                if view.kind == "cross":
                    rows, _ = pick(np.stack(cross_rows, axis=2), view.layer, view.head)  # (t+1, S)
                    values["heat"] = plot(viz.attention_heatmap(
                        rows, list(zip(read, produced)), source_tokens, query_title=KINDS["cross"][1],
                        key_title=KINDS["cross"][2], highlight_row=t, title="Cross-attention, as it is generated"))
            read.append(step.token)
            if "step_cross" in values or now - last_text >= TEXT_INTERVAL or step.token_id == EOS_ID:
                last_text = now
                yield pack(**values)
        elapsed = time.perf_counter() - start
        gen = [i for i in ids if i != EOS_ID]
        trace = translator.force_ids(src, gen, req.top_k, translator._settings(mode="greedy", top_k=req.top_k),
                                     translator.encode_source(req.text)[1])
        if ids and ids[-1] != EOS_ID:  # the limit cut it: keep what was generated, not a forced EOS
            trace = trace.without_final_eos()
        yield self.present(trace, req, view, self.notices(req, trace, device_notice), "Greedy decoding", elapsed)

    def on_replay(self, pending, kind, layer, head, merge):
        """Slow motion: replay a computed trace step by step, outside the model's concurrency slot."""
        if not pending:
            yield pack()  # nothing to replay: leave every output as it is (yielding nothing would clear them)
            return
        trace, req = pending["trace"], pending["req"]
        view = View.of(kind, layer, head, merge)
        T = len(trace.output_tokens)
        for t in range(T):
            view_t = dataclasses.replace(view, step=t + 1)
            step_cross, step_self, step_topk = trace_step_figures(trace, view_t)
            produced = trace.output_tokens[:t + 1]
            yield pack(translation=_join_pieces(produced), out_chips=output_chips(produced, trace.top_k),
                       step=gr.update(maximum=max(T, 2), value=t + 1), partial=partial_chips(trace.output_tokens, t),
                       step_cross=step_cross, step_self=step_self, step_topk=step_topk,
                       heat=plot(heatmap_figure(trace, view_t)) if view.kind != "encoder" else gr.skip())
            time.sleep(req.slow)
        showing = "Slow-motion replay" + (f" of beam search ({req.beam} beams)" if req.beam > 1 else "")
        yield self.present(trace, req, view, pending["notices"], showing, pending["elapsed"])

    # ---- other ways to get a trace ----

    def on_force(self, key, text, target, device, top_k, kind, layer, head, merge, beam, max_new):
        req = self.request(key, text, beam, max_new, device, top_k, 1.0, 0)
        target, target_notices = clean_text(target, "your translation")
        if not target:
            raise gr.Error("Type (or edit) a translation to inspect first.")
        req.notices += target_notices
        translator, device_notice = self.registry.translator(req.key, req.device)
        start = time.perf_counter()
        trace = translator.force(req.text, target, top_k=req.top_k)
        return self.present(trace, req, View.of(kind, layer, head, merge), self.notices(req, trace, device_notice),
                            "Your translation, teacher-forced (red rows in Predictions: pieces outside the model's top k)",
                            time.perf_counter() - start)

    def on_candidate(self, trace, key, text, device, top_k, kind, layer, head, merge, beam, max_new,
                     evt: gr.SelectData):
        if trace is None or not trace.candidates:
            return pack()
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        row = _int(row, 0, len(trace.candidates) - 1)
        cand = trace.candidates[row]
        req = self.request(key, text, beam, max_new, device, top_k, 1.0, 0)
        translator, device_notice = self.registry.translator(req.key, req.device)
        ids = [translator.tokenizer.sp.piece_to_id(p) for p in cand.tokens]
        new = translator.force_ids(list(trace.source_ids), ids, req.top_k,
                                   {**trace.settings, "mode": "beam candidate", "candidate": row + 1}, list(trace.notices))
        new.candidates = trace.candidates
        out = self.present(new, req, View.of(kind, layer, head, merge), self.notices(req, new, device_notice),
                           f"Beam candidate #{row + 1} (score {cand.score:.3f})", None)
        return out

    def on_example(self, text, key):
        """Examples use the default settings (and put the controls back to them), so they can be cached."""
        d = DEFAULTS
        req = self.request(key, text, d["beam"], d["max"], "cpu", d["k"], d["lp"], 0)
        trace, notices, elapsed = self.compute(req)
        out = dict(zip(OUT, self.present(trace, req, View(), notices, "Greedy decoding", elapsed)))
        out.update((name, value) for name, value in self.tab_figures(trace, key, View()).items() if name in OUT)
        return (*[out[name] for name in EXAMPLE_OUT], d["beam"], d["max"], d["k"], d["lp"], d["slow"], d["view"], d["merge"])

    def on_example_state(self, text, key):
        """After a cached example's outputs: its trace for this visitor's view controls (the cache cannot hold
        it), and the controls that depend on it (see on_sync)."""
        d = DEFAULTS
        req = self.request(key, text, d["beam"], d["max"], "cpu", d["k"], d["lp"], 0)
        trace = self.compute(req)[0]
        return (trace, *self.on_sync(trace))

    # ---- trained vs untrained ----

    def untrained_trace(self, trace: Trace, key: str) -> tuple[Trace, str]:
        """The trained model's output teacher-forced through its untrained twin (same pieces, so the
        attention maps line up cell by cell), and what the twin writes on its own."""
        twin = self.registry.get(key).twin()
        out = [i for i in trace.output_ids if i != EOS_ID]
        forced = twin.force_ids(list(trace.source_ids), out, 1, twin._settings(mode="forced", top_k=1), [])
        if trace.cut_by_limit:
            forced = forced.without_final_eos()
        source = twin.tokenizer.decode([i for i in trace.source_ids if i != EOS_ID])
        own = twin.translate(source, max_new_tokens=min(len(trace.output_tokens) + 10, MAX_NEW_TOKENS), top_k=1)
        return forced, own.text or f"nothing: its first piece is {own.output_tokens[0] if own.output_tokens else '–'}"

    def on_compare(self, trace, key, kind, layer, head, merge, step):
        if trace is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        try:
            entry = self.registry.get(key)
        except KeyError:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        untrained, own = self.untrained_trace(trace, entry.key)
        view = View.of(kind, layer, head, merge, step)
        note = ("⚠️ This direction itself runs an untrained model, so both sides are random. " if entry.untrained
                else "")
        text = (f"{note}**Trained:** {viz.escape(trace.text) or '∅'}  \n**Untrained, left to itself:** "
                f"{viz.escape(own)}  \nSame architecture and tokenizer, weights as initialised before training "
                "(seed 0). Right: the trained translation teacher-forced through the untrained weights, so the cells "
                "line up. Untrained heads spread their attention almost evenly; training makes them pick.")
        return untrained, *self.compare_figures(trace, untrained, view), text

    @staticmethod
    def compare_figures(trace: Trace, untrained: Trace | None, view: View) -> tuple:
        if untrained is None:
            return gr.skip(), gr.skip()
        return (plot(heatmap_figure(trace, view, prefix="Trained")),
                plot(heatmap_figure(untrained, view, prefix="Untrained")))

    # ---- view changes (no model involved) ----

    def on_heat(self, trace, untrained, kind, layer, head, merge, step):
        """Layer / head / merge changed: the large heatmap, the step rows and the trained-vs-untrained pair."""
        if trace is None:
            return (gr.skip(),) * 5
        view = View.of(kind, layer, head, merge, step)
        step_cross, step_self, _ = trace_step_figures(trace, view)
        return plot(heatmap_figure(trace, view)), step_cross, step_self, *self.compare_figures(trace, untrained, view)

    def on_kind(self, trace, untrained, kind, layer, head, merge, step):
        if trace is None:
            return (gr.skip(),) * 7
        view = View.of(kind, layer, head, merge, step)
        return (*self.on_heat(trace, untrained, kind, layer, head, merge, step), plot(grid_figure(trace, view)),
                plot(summary_figure(trace_head_statistics(trace), view.kind)))

    def on_step(self, trace, untrained, kind, layer, head, merge, step):
        if trace is None:
            return (gr.skip(),) * 7
        view = View.of(kind, layer, head, merge, step)
        t = _int(step, 1, max(len(trace.output_tokens), 1)) - 1
        step_cross, step_self, step_topk = trace_step_figures(trace, view)
        if view.kind == "encoder":  # its maps have no decoding step: leave them as they are
            maps = (gr.skip(),) * 3
        else:
            maps = (plot(heatmap_figure(trace, view)), *self.compare_figures(trace, untrained, view))
        return maps[0], step_cross, step_self, *maps[1:], partial_chips(trace.output_tokens, t), step_topk

    def on_sync(self, trace):
        """After a cached example: the controls that depend on the trace's shape, set to the default view the
        cached figures show (last layer, mean of heads, last step), and the candidates table hidden."""
        if trace is None:
            return (gr.skip(),) * 5
        L, H = trace.cross_attn.shape[:2]
        T = len(trace.output_tokens)
        return (gr.update(visible=bool(trace.candidates)), gr.update(maximum=max(T, 2), value=max(T, 1)),
                gr.update(maximum=max(L, 2), value=L), gr.update(choices=head_choices(H), value=MEAN_HEAD),
                gr.update(choices=grid_pick_choices(L, H), value=None))

    def on_pick_head(self, value):
        if not value or ":" not in str(value):
            return gr.skip(), gr.skip()
        l, h = str(value).split(":", 1)
        return gr.update(value=_int(l, 1, 64)), gr.update(value=str(_int(h, 1, 64)))

    def on_direction(self, key, dims):
        try:
            entry = self.registry.get(key)
        except KeyError:
            entry = self.registry.get(None)
        c = entry.config
        pe, sim, params, curves = model_figures(entry, dims)
        lang = LANGUAGE_NAMES.get(entry.source_lang, entry.source_lang)
        example = EXAMPLES.get(entry.source_lang, [""])[0]
        S = len(entry.cpu.encode_source(example)[0])
        arch = architecture_figure(entry, S, 1, f"Shapes for “{example}” at the first decoding step (T = 1); "
                                                "translate to see yours")
        return (architecture_markdown(entry), pe, sim, params, curves,
                gr.update(placeholder=f"Type a {lang} sentence, e.g. {example}"),
                gr.update(choices=[str(d) for d in range(c.d_model)]), training_markdown(entry), arch)

    def on_dims(self, key, dims):
        try:
            entry = self.registry.get(key)
        except KeyError:
            return gr.skip()
        return model_figures(entry, dims)[0]

    def on_load(self, request: gr.Request):
        """Restore the controls from a link (see share_query). Anything missing, malformed or out of range
        keeps its default; the text is capped at MAX_CHARS."""
        q = dict(request.query_params) if request is not None else {}
        s = gr.skip()

        def number(name, lo, hi):
            return _int(q[name], lo, hi, lo) if name in q else s

        key = q["direction"] if q.get("direction") in self.registry.entries else None
        c = self.registry.get(key).config  # the controls' ranges are this model's
        head = q.get("head", "")
        return (key or s,
                q["text"][:MAX_CHARS] if q.get("text") else s,
                number("beam", 1, MAX_BEAM), number("max", 0, MAX_NEW_TOKENS),
                _lp(q["lp"]) if "lp" in q else s,
                q["view"] if q.get("view") in KINDS else s,
                number("layer", 1, max(c.n_encoder_layers, c.n_decoder_layers)),
                head if head == MEAN_HEAD or (head.isdigit() and 1 <= int(head) <= c.n_heads) else s,
                _flag(q["merge"]) if "merge" in q else s,
                _flag(q["presenter"]) if "presenter" in q else s)

    def on_load_translate(self, key, text, beam, max_new, device, top_k, length_penalty, kind, layer, head, merge,
                          request: gr.Request):
        q = request.query_params if request is not None else {}
        if not q.get("text") or not (text or "").strip():
            return pack()
        req = self.request(key, text, beam, max_new, device, top_k, length_penalty, 0)
        trace, notices, elapsed = self.compute(req)
        return self.present(trace, req, View.of(kind, layer, head, merge, q.get("step")), notices,
                            "Translation from the link", elapsed)

    def on_share(self, key, text, beam, max_new, length_penalty, kind, layer, head, merge, step):
        """The query string of a link to what is on screen; the page prefixes its own address."""
        if not (text or "").strip():
            raise gr.Error("Translate a sentence first: the link carries its text.")
        key = key if key in self.registry.entries else self.registry.default_key
        return share_query(key, text, beam, max_new, length_penalty, View.of(kind, layer, head, merge, step))

    # ---- the API: Client(url).predict(text=..., direction="de-en", api_name="/translate") ----

    def api_translate(self, text: str, direction: str = "de-en", beam_size: int = 1,
                      max_new_tokens: int | None = None) -> tuple[str, str, dict | None]:
        """Translate `text` in `direction` ("de-en", "en-de": source-target language codes).

        Returns (translation, notice, trace). The notice is empty when all went well; otherwise it
        says what happened (bad input, unknown direction, truncation, untrained model), and the
        translation is empty or partial. The trace is the Trace as JSON (see Trace.to_dict; attention
        as nested lists [layer][head][query][key]; Trace.from_dict reads it back), or None when nothing was
        translated.
        """
        try:
            text, notices = clean_text(text)
            if not text:
                return "", " ".join(notices + ["Nothing to translate: text is empty."]), None
            if direction not in self.registry.entries:
                return "", f"Unknown direction {direction!r}; available: {', '.join(self.registry.entries)}.", None
            beam, problem = _api_int("beam_size", beam_size, MAX_BEAM)
            limit = None
            if not problem and max_new_tokens not in (None, "", 0):
                limit, problem = _api_int("max_new_tokens", max_new_tokens, MAX_NEW_TOKENS)
            if problem:
                return "", problem, None
            trace, notices, _ = self.compute(Request(direction, text, beam, limit or 0, "auto", 5, 1.0, 0.0, notices))
            return trace.text, " ".join(notices), trace.to_dict()
        except Exception as err:  # the API never raises: it says what went wrong
            return "", f"Translation failed: {type(err).__name__}: {err}", None


def _join_pieces(pieces: list[str]) -> str:
    return "".join(p for p in pieces if p not in ("<s>", "</s>")).replace("\u2581", " ").strip()


DEFAULTS = {"beam": 1, "max": 0, "k": 5, "lp": 1.0, "slow": 0.0, "view": "cross", "merge": False}  # layer: the last

INTRO = """Type a sentence and watch a from-scratch Transformer ([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762)),
trained on Multi30k image captions, translate it piece by piece. Then look inside: every attention head of the
encoder and the decoder, each decoding step's choices, and the positional encoding.
"""

HOW_TO_READ = """### How to read the figures
- **Pieces.** The model reads and writes SentencePiece *pieces*: `▁` starts a word, `</s>` ends the sentence and the
  decoder starts from `<s>`. *Merge pieces into words* sums the attention *to* a word's pieces and averages the
  attention *from* them, so rows still sum to 1.
- **Queries are rows, keys are columns.** Row *i* shows how query *i* spread its attention (the row sums to 1) over
  the keys. All heatmaps share one colour scale, 0 to 1.
- **Encoder self-attention**: every source piece looks at every source piece, in every layer.
- **Decoder masked self-attention**: decoder position *t* may look only at positions ≤ *t*; the grey cells are hidden
  by the mask (they are not zeros). This is what lets the decoder write left to right.
- **Cross-attention**: decoder position *t* looking at the encoder's output for each source piece. A decoder
  position is labelled `read ▸ produced`: it *reads* the previous output piece (`<s>` first) and *produces* the next
  one. In a trained model this is roughly an alignment between the two sentences.
- **Heads**: each layer has *h* heads attending independently (§3.2.2); *mean of heads* averages them. *All heads*
  shows every layer × head side by side; *Head statistics* measures what each one does (how focused it is, whether
  it looks at the previous piece or parks on `</s>`, how well cross-attention follows the word order), and a click
  on a row opens that head.
- **Trained vs untrained**: the same sentence through the same architecture before training (random weights): its
  heads spread their attention almost evenly. Everything the trained heads do was learned.
- **Architecture**: the paper's Figure 1 with the tensor shapes of your sentence, and where the parameters are.
- **Presenter mode** enlarges everything and hides the settings; *Link to this view* gives a link that reopens
  exactly what is on screen.
- **Decoding steps**: the slider picks step *t*: what had been produced up to then, where step *t* looked, and the
  probabilities of its candidates for the next piece.
- **Beam search** keeps the *beam size* best partial translations at each step; click a candidate to see its
  attention. Under *Inspect a translation*, the model is teacher-forced through any translation you type.
- **Positional encoding**: the Transformer has no recurrence; word order enters only through the sinusoids added to
  the embeddings (§3.5). Each pair of dimensions is a wave of its own wavelength (2π to 10000·2π); the dot product
  of two positions' encodings depends mostly on their distance.
"""

STATS_HELP = "**What the statistics mean** (each a mean over the head's query rows)\n\n" + "\n".join(
    f"- **{viz.STAT_LABELS[name]}**: {viz.escape(text)}" for name, text in DEFINITIONS.items())

CSS = """
.anatomy-notice { color: #92400e; }
#run-info p { margin: 0.15em 0; }
footer { margin-top: 1em; }
/* Presenter mode (PRESENTER_JS toggles the class): no settings, larger type, plain white page. */
body.anatomy-presenter {
  --body-background-fill: #ffffff; --background-fill-primary: #ffffff; --background-fill-secondary: #ffffff;
  --block-background-fill: #ffffff; --block-border-color: transparent; --block-shadow: none;
  --body-text-size: 20px; --block-label-text-size: 17px; --block-info-text-size: 16px;
  --input-text-size: 22px; --text-md: 20px; --text-lg: 22px; --section-header-text-size: 20px;
  background: #ffffff;
}
body.anatomy-presenter .gradio-container { max-width: 100% !important; background: #ffffff !important; }
body.anatomy-presenter .anatomy-controls, body.anatomy-presenter footer { display: none !important; }
"""

# Presenter mode, in the browser (a talk must not wait on the server): toggles the page's class and scales
# every Plotly figure's fonts, margins and height by SCALE, re-applied whenever a figure is replaced.
PRESENTER_JS = """
(on) => {
  const A = window.anatomyPresenter || (window.anatomyPresenter = {
    scale: 1.5, on: false,
    base(gd) {
      const f = gd._fullLayout, m = f.margin;
      return {font: f.font.size, title: (f.title && f.title.font) ? f.title.font.size : f.font.size,
              height: f.height, l: m.l, r: m.r, t: m.t, b: m.b,
              notes: (f.annotations || []).map(a => a.font.size)};
    },
    fit(gd) {
      if (!gd._fullLayout || !window.Plotly || !gd.offsetParent) return;  // hidden (another tab): when shown
      if (gd.layout !== gd.anatomyLayout) { gd.anatomyLayout = gd.layout; gd.anatomyBase = A.base(gd); gd.anatomyScaled = false; }
      if (gd.anatomyScaled === A.on) return;
      gd.anatomyScaled = A.on;
      const b = gd.anatomyBase, k = A.on ? A.scale : 1, u = {autosize: true, width: null, 'font.size': b.font * k, 'title.font.size': b.title * k,
        height: Math.round(b.height * k), 'margin.l': b.l * k, 'margin.r': b.r * k, 'margin.t': b.t * k, 'margin.b': b.b * k};
      b.notes.forEach((size, i) => { u['annotations[' + i + '].font.size'] = size * k; });
      // width: null drops the width fixed at first draw, so the figure fills its container again (wider once
      // the settings are hidden)
      Plotly.relayout(gd, u).catch(() => {});
    },
    scan() {
      // the page's figures only, not the offscreen copies Plotly.toImage draws for an export
      document.querySelectorAll('.js-plotly-plot[data-testid=plotly]').forEach(gd => {
        if (!gd.anatomyHooked && gd.on) { gd.anatomyHooked = true; gd.on('plotly_afterplot', () => A.fit(gd)); }
        A.fit(gd);
      });
    },
  });
  A.on = !!on;
  document.body.classList.toggle('anatomy-presenter', A.on);
  if (!A.observer) {
    // new figures, and tabs coming into view (a class or style change), get the current mode
    A.observer = new MutationObserver(() => A.scan());
    A.observer.observe(document.body, {childList: true, subtree: true, attributes: true,
                                       attributeFilter: ['class', 'style']});
  }
  A.scan();
  window.dispatchEvent(new Event('resize'));
}
"""


def export_js(elem_id: str, fmt: str) -> str:
    """Download one figure as the browser draws it (presenter fonts included): PNG at 3× scale, or SVG."""
    return (f"() => {{ const gd = document.querySelector('#{elem_id} .js-plotly-plot');"
            f" if (gd && window.Plotly) Plotly.downloadImage(gd, {{format: '{fmt}', scale: 3,"
            f" filename: 'transformer-anatomy-{elem_id}'}}); }}")


# The page's own address + the query built on the server: a link that works behind any proxy or Space.
LINK_JS = "(q) => q ? window.location.origin + window.location.pathname + q : ''"


def _light_only(theme: gr.themes.Base) -> gr.themes.Base:
    """The page always uses the light palette: the figures are drawn for it (white paper, dark text)."""
    for name in [n for n in vars(theme) if n.endswith("_dark")]:
        delattr(theme, name)
    return theme


THEME = _light_only(gr.themes.Soft(primary_hue="blue", secondary_hue="orange", neutral_hue="slate"))
LAUNCH_KWARGS = dict(theme=THEME, css=CSS, footer_links=["api", "settings"])


def build_demo(registry: ModelRegistry) -> gr.Blocks:
    app = App(registry)
    entry0 = registry.get(None)
    c0 = entry0.config
    model_slot = dict(concurrency_id="model", concurrency_limit=1)
    ui = dict(api_visibility="undocumented")
    # View changes run one at a time, in the order they were asked: run side by side, a quick kind-then-head
    # click could be answered out of order and leave figures that do not match the controls.
    fast = dict(api_visibility="undocumented", show_progress="hidden", concurrency_id="views", concurrency_limit=1)
    empty = plot(viz.empty_figure("Translate a sentence to see this", 300))

    with gr.Blocks(title="Transformer Anatomy") as demo:
        with gr.Row(equal_height=False):
            with gr.Column(scale=4):
                gr.Markdown("# Transformer Anatomy")
                gr.Markdown(INTRO, elem_classes=["anatomy-controls"])
            with gr.Column(scale=1, min_width=330):
                presenter = gr.Checkbox(False, label="Presenter mode", elem_id="presenter",
                                        info="Large type, no settings, white page: for talks")
                with gr.Row():
                    png_btn = gr.Button("Attention PNG (3×)", size="sm", elem_id="export-png")
                    svg_btn = gr.Button("Attention SVG", size="sm", elem_id="export-svg")
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=320):
                direction = gr.Dropdown(registry.choices(), value=registry.default_key, label="Direction",
                                        elem_id="direction")
                if registry.notices:
                    gr.Markdown("\n\n".join(f"⚠️ {n}" for n in registry.notices), elem_id="model-notices",
                                elem_classes=["anatomy-notice"])
                text = gr.Textbox(label="Source text", lines=2, max_length=MAX_CHARS, elem_id="source-text",
                                  placeholder=f"e.g. {EXAMPLES.get(entry0.source_lang, [''])[0]}")
                with gr.Row(elem_classes=["anatomy-controls"]):
                    beam = gr.Slider(1, MAX_BEAM, value=DEFAULTS["beam"], step=1, label="Beam size (1 = greedy)")
                    max_new = gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULTS["max"], step=1,
                                        label="Max new tokens (0 = 2 × source + 10)")
                device = gr.Radio(device_choices(), value="auto", label="Device",
                                  info="cuda is offered only when this machine has a GPU", elem_classes=["anatomy-controls"])
                with gr.Accordion("More settings", open=False, elem_classes=["anatomy-controls"]):
                    top_k = gr.Slider(1, MAX_TOP_K, value=DEFAULTS["k"], step=1, label="Top-k pieces to record per step")
                    lp = gr.Slider(0.0, 3.0, value=DEFAULTS["lp"], step=0.1,
                                   label="Length penalty α (beam score = log p / length^α)")
                    slow = gr.Slider(0.0, MAX_SLOW, value=DEFAULTS["slow"], step=0.1,
                                     label="Slow motion: seconds per piece (0 = off; for talks)")
                with gr.Row():
                    translate_btn = gr.Button("Translate", variant="primary", elem_id="translate")
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="stop", elem_classes=["anatomy-controls"])
            with gr.Column(scale=3, min_width=320):
                translation = gr.Textbox(label="Translation", lines=2, interactive=False, buttons=["copy"],
                                         elem_id="translation")
                run_info = gr.Markdown(elem_id="run-info", elem_classes=["anatomy-controls"])
                src_chips = gr.HighlightedText(label="Source pieces (what the encoder reads)", show_legend=False,
                                               show_inline_category=False, combine_adjacent=False,
                                               color_map={PIECE: "#e2e8f0"},
                                               elem_id="source-pieces")
                out_chips = gr.HighlightedText(label="Output pieces, by the model's probability", show_legend=True,
                                               show_inline_category=False, combine_adjacent=False, color_map=CONFIDENCE, elem_id="output-pieces")
                candidates = gr.Dataframe(headers=["#", "candidate", "score", "log p", "pieces"],
                                          datatype=["number", "str", "number", "number", "number"],
                                          label="Beam candidates (click one to see its attention)", interactive=False,
                                          visible=False, wrap=True, elem_id="candidates")
                with gr.Accordion("Inspect a translation (teacher forcing)", open=False, elem_classes=["anatomy-controls"]):
                    forced = gr.Textbox(label="Any translation: edit it, then Inspect", lines=2, elem_id="forced")
                    force_btn = gr.Button("Inspect", size="sm")
                with gr.Row(elem_classes=["anatomy-controls"]):
                    download = gr.DownloadButton("Download trace (JSON)", size="sm", elem_id="download")
                    share_btn = gr.Button("Link to this view", size="sm", elem_id="share")
                share_url = gr.Textbox(label="Link to this view (text, settings, attention, layer, head, step)",
                                       interactive=False, buttons=["copy"], elem_id="share-url",
                                       elem_classes=["anatomy-controls"], placeholder="click Link to this view")
                share_query_box = gr.Textbox(visible=False)

        examples = [[s, e.key] for e in registry.entries.values() for s in EXAMPLES.get(e.source_lang, [])[:4]]

        gr.Markdown("## Decoding steps")
        with gr.Row():
            step = gr.Slider(1, 2, value=1, step=1, label="Step t", scale=1, min_width=240, elem_id="step")
            partial = gr.HighlightedText(label="Output up to step t", show_legend=False, show_inline_category=False,
                                         combine_adjacent=False,
                                         color_map={CURRENT: "#fdba74", PIECE: "#e2e8f0"}, scale=3, elem_id="partial")
        with gr.Row():
            step_cross = gr.Plot(empty, show_label=False, min_width=300, elem_id="step-cross")
            step_self = gr.Plot(empty, show_label=False, min_width=300, elem_id="step-self")
            step_topk = gr.Plot(empty, show_label=False, min_width=300, elem_id="step-topk")

        gr.Markdown("## Attention explorer")
        with gr.Row():
            kind = gr.Radio([(v[0], k) for k, v in KINDS.items()], value=DEFAULTS["view"], label="Attention",
                            scale=3, min_width=300, elem_id="kind")
            layer = gr.Slider(1, max(c0.n_encoder_layers, c0.n_decoder_layers, 2), value=c0.n_decoder_layers, step=1,
                              label="Layer",
                              scale=1, min_width=160, elem_id="layer")
            head = gr.Radio(head_choices(c0.n_heads), value=MEAN_HEAD, label="Head", scale=2, min_width=220,
                            elem_id="head")
            merge = gr.Checkbox(value=DEFAULTS["merge"], label="Merge pieces into words", scale=1, min_width=160,
                                elem_id="merge")
        with gr.Row(equal_height=False):
            heat = gr.Plot(empty, show_label=False, scale=4, min_width=360, elem_id="heatmap")
            kind_help = gr.Markdown(KIND_HELP["cross"] + COMMON_HELP, elem_id="kind-help", min_width=240,
                                    elem_classes=["anatomy-controls"])

        with gr.Tabs():
            with gr.Tab("All heads", id="heads"):
                pick_head = gr.Dropdown(grid_pick_choices(c0.n_decoder_layers, c0.n_heads), value=None,
                                        label="Open a head in the large view", elem_id="pick-head")
                grid = gr.Plot(empty, show_label=False, elem_id="grid")
            with gr.Tab("Head statistics", id="stats"):
                summary = gr.Plot(empty, show_label=False, elem_id="summary")
                stats = gr.Dataframe(headers=["attention", "layer", "head", *viz.STAT_LABELS.values()],
                                     datatype=["str", "number", "number"] + ["number"] * len(viz.STAT_LABELS),
                                     label="Every head of every attention (sort by a column; click a row to open "
                                           "that head above)", interactive=False, max_height=460,
                                     elem_id="head-stats")
                gr.Markdown(STATS_HELP, elem_id="stats-help")
            with gr.Tab("Predictions", id="predictions"):
                topk_table = gr.Plot(empty, show_label=False, elem_id="topk-table")
            with gr.Tab("Trained vs untrained", id="compare"):
                compare_text = gr.Markdown("Translate a sentence to compare the trained model with its untrained "
                                           "twin.", elem_id="compare-text")
                with gr.Row():
                    cmp_trained = gr.Plot(empty, show_label=False, min_width=320, elem_id="compare-trained")
                    cmp_untrained = gr.Plot(empty, show_label=False, min_width=320, elem_id="compare-untrained")
            with gr.Tab("Positional encoding", id="positional"):
                pe_dims = gr.Dropdown([str(d) for d in range(c0.d_model)],
                                      value=[str(d) for d in viz.default_dims(c0.d_model)], multiselect=True,
                                      label="Dimensions to plot as curves", elem_id="pe-dims")
                pe_plot = gr.Plot(show_label=False, elem_id="pe")
                with gr.Row():
                    pe_sim = gr.Plot(show_label=False, min_width=320, elem_id="pe-similarity")
                    pe_rows = gr.Plot(empty, show_label=False, min_width=320, elem_id="pe-rows")
            with gr.Tab("Architecture", id="architecture"):
                arch_plot = gr.Plot(show_label=False, elem_id="architecture")
                with gr.Row(equal_height=False):
                    card = gr.Markdown(elem_id="model-card", min_width=400)
                    params_plot = gr.Plot(show_label=False, min_width=320, elem_id="parameters")
            with gr.Tab("Training", id="training"):
                curves_plot = gr.Plot(show_label=False, elem_id="training")
                training_md = gr.Markdown(elem_id="training-card")
            with gr.Tab("How to read this", id="help"):
                gr.Markdown(HOW_TO_READ)

        trace_state = gr.State(None)
        untrained_state = gr.State(None)
        pending = gr.State(None)
        components = dict(trace=trace_state, untrained=untrained_state, pending=pending, translation=translation, notice=run_info,
                          src_chips=src_chips, out_chips=out_chips, candidates=candidates, forced=forced,
                          download=download, step=step, partial=partial, step_cross=step_cross, step_self=step_self,
                          step_topk=step_topk, layer=layer, head=head, heat=heat, grid=grid, summary=summary,
                          pick_head=pick_head, pe_rows=pe_rows, topk_table=topk_table, stats=stats, arch=arch_plot)
        outputs = [components[name] for name in OUT]
        view_inputs = [trace_state, untrained_state, kind, layer, head, merge, step]
        heat_outputs = [heat, step_cross, step_self, cmp_trained, cmp_untrained]
        tab_inputs, tab_outputs = [trace_state, direction, kind, merge], [components[n] for n in TAB_OUT]

        def then_tabs(event):
            """After anything that sets a new trace: the figures below the fold, then the untrained twin's
            (a model pass, so in the model slot)."""
            return event.then(app.on_tabs, tab_inputs, tab_outputs, **fast).then(
                app.on_compare, [trace_state, direction, kind, layer, head, merge, step],
                [untrained_state, cmp_trained, cmp_untrained, compare_text], **model_slot, **ui)

        with gr.Row(elem_classes=["anatomy-controls"]):
            if examples:
                gallery = gr.Examples(
                            examples, inputs=[text, direction],
                            outputs=[components[n] for n in EXAMPLE_OUT] + [beam, max_new, top_k, lp, slow, kind, merge],
                            fn=app.on_example,
                            cache_examples=True, cache_mode="lazy", label="Examples (default settings)",
                            examples_per_page=len(examples), api_visibility="undocumented",
                            example_labels=[f"{registry.get(k).label}: {s}" for s, k in examples])
                then_tabs(gallery.cache_event.then(app.on_example_state, [text, direction],
                                                   [trace_state, candidates, step, layer, head, pick_head],
                                                   **model_slot, **ui))

        translate_inputs = [direction, text, beam, max_new, device, top_k, lp, slow, kind, layer, head, merge]
        replay_kw = dict(concurrency_id="replay", concurrency_limit=None, **ui)  # outside the model slot
        cancel = []
        for trigger in (translate_btn.click, text.submit):
            run = trigger(app.on_translate, translate_inputs, outputs, **model_slot, **ui)
            replay = run.then(app.on_replay, [pending, kind, layer, head, merge], outputs, **replay_kw)
            cancel += [run, replay, then_tabs(replay)]
        stop_btn.click(None, None, None, cancels=cancel)
        then_tabs(force_btn.click(app.on_force, [direction, text, forced, device, top_k, kind, layer, head, merge, beam,
                                                 max_new], outputs, **model_slot, **ui))
        then_tabs(candidates.select(app.on_candidate, [trace_state, direction, text, device, top_k, kind, layer, head,
                                                       merge, beam, max_new], outputs, **model_slot, **ui))

        # .input (a visitor's own change), not .change: examples and links set these controls together with
        # figures already drawn for them, and must not trigger a redraw from half-updated controls.
        kind.change(lambda k: KIND_HELP.get(k, KIND_HELP["cross"]) + COMMON_HELP, kind, kind_help, **fast)
        kind.input(app.on_kind, view_inputs, heat_outputs + [grid, summary], **fast)
        merge.input(app.on_kind, view_inputs, heat_outputs + [grid, summary], **fast)
        layer.release(app.on_heat, view_inputs, heat_outputs, **fast)
        head.input(app.on_heat, view_inputs, heat_outputs, **fast)
        step.release(app.on_step, view_inputs, heat_outputs + [partial, step_topk], **fast)
        stats.select(app.on_stat_pick, None, [kind, layer, head], **fast).then(
            app.on_kind, view_inputs, heat_outputs + [grid, summary], **fast)
        pick_head.input(app.on_pick_head, [pick_head], [layer, head], **fast).then(
            app.on_heat, view_inputs, heat_outputs, **fast)
        direction_outputs = [card, pe_plot, pe_sim, params_plot, curves_plot, text, pe_dims, training_md, arch_plot]
        direction.change(app.on_direction, [direction, pe_dims], direction_outputs, **fast)
        pe_dims.change(app.on_dims, [direction, pe_dims], [pe_plot], **fast)

        demo.load(app.on_direction, [direction, pe_dims], direction_outputs, **fast)
        presenter.change(None, [presenter], None, js=PRESENTER_JS)
        png_btn.click(None, None, None, js=export_js("heatmap", "png"))
        svg_btn.click(None, None, None, js=export_js("heatmap", "svg"))
        share_btn.click(app.on_share, [direction, text, beam, max_new, lp, kind, layer, head, merge, step],
                        [share_query_box], **fast).then(None, [share_query_box], [share_url], js=LINK_JS)

        then_tabs(demo.load(app.on_load, None, [direction, text, beam, max_new, lp, kind, layer, head, merge, presenter],
                            **ui).then(
            app.on_load_translate, [direction, text, beam, max_new, device, top_k, lp, kind, layer, head, merge],
            outputs, **model_slot, **ui))

        # The API: a non-streaming endpoint with three outputs, on components the page never shows.
        with gr.Group(visible=False):
            api_text = gr.Textbox(label="text")
            api_direction = gr.Textbox(value=registry.default_key, label="direction")
            api_beam = gr.Number(value=1, precision=0, label="beam_size")
            api_max = gr.Number(value=None, precision=0, label="max_new_tokens")
            api_translation = gr.Textbox(label="translation")
            api_notice = gr.Textbox(label="notice")
            api_trace = gr.JSON(label="trace")
            api_button = gr.Button("api")
        api_button.click(app.api_translate, [api_text, api_direction, api_beam, api_max],
                         [api_translation, api_notice, api_trace], api_name="translate", api_visibility="public",
                         show_progress="hidden", **model_slot)

    demo.queue(default_concurrency_limit=2, max_size=QUEUE_SIZE)
    demo.anatomy = app  # the handlers and the registry, for tests and scripts
    app.demo = demo
    return demo


def set_threads() -> None:
    """Decoding one sentence with a small model is a chain of tiny matmuls: one intra-op thread is as fast
    as several on an idle CPU and far faster on a busy one (no spinning threads fighting for cores)."""
    torch.set_num_threads(max(1, int(os.environ.get("ANATOMY_THREADS") or 1)))


def create_app(sources: list[str] | None = None) -> gr.Blocks:
    registry = ModelRegistry.discover(sources)
    # Cached examples live in a temp dir, one folder per set of model files (never stale, never in the repo).
    base = _EXAMPLES_CACHE or str(Path(tempfile.gettempdir()) / "transformer-anatomy" / "examples")
    os.environ["GRADIO_EXAMPLES_CACHE"] = str(Path(base) / registry.fingerprint())
    return build_demo(registry)


_EXAMPLES_CACHE = os.environ.get("GRADIO_EXAMPLES_CACHE")
demo = create_app()

if __name__ == "__main__":
    set_threads()
    demo.launch(**LAUNCH_KWARGS)
