"""The models the app offers: discovery, keys and labels, the untrained fallback and twins, translators per device.

A model's key names it in links and the API: the first checkpoint of each language pair (checkpoint folders
sorted by name, then the Hub models) gets the pair, "de-en"; every other one its folder name ("multi30k-de-en",
or "name" for hf://owner/name). Its label is what the Direction menu shows: "German → English · everyday", and
for a MarianMT model its origin and size: "German → English (opus-mt, Helsinki-NLP, 74M parameters)".
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transformer import Trace, Translator, hub
from transformer.checkpoint import HF_PREFIX, Checkpoint, CheckpointError, Decoding, resolve
from transformer.config import PRESETS, ModelConfig
from transformer.data import LANGUAGE_NAMES
from transformer.heads import CorpusImportance, corpus_importance
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer

from . import engine

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger(__name__)

# Examples written for this app (not taken from any test set), by source language and the checkpoint's domain.
# The two "animal" sentences are the paper's most famous attention picture: in German the pronoun must follow
# its antecedent's gender (das Tier -> es, die Straße -> sie). The untrained fallback's tokenizer is trained on
# all of them when no checkpoint has a usable one.
EXAMPLES = {
    "de": {"everyday": ["Wie geht es dir?", "Das Wetter ist heute schön.",
                        "Die Aufmerksamkeit ist alles, was man braucht.",
                        "Ich habe gestern ein gutes Buch gelesen."],
           "image captions": ["Zwei Hunde spielen im Schnee.", "Ein Mann fährt mit dem Fahrrad eine Straße entlang.",
                              "Eine Frau in einem roten Kleid singt auf einer Bühne.",
                              "Kinder spielen Fußball auf einer grünen Wiese."]},
    "en": {"everyday": ["The animal didn't cross the street because it was too tired.",
                        "The animal didn't cross the street because it was too wide.",
                        "How are you?", "I love machine learning."],
           "image captions": ["Two dogs are playing in the snow.", "A man is riding a bicycle down the street.",
                              "A woman in a red dress is singing on a stage.",
                              "Children are playing soccer on a green field."]},
    "fr": {"image captions": ["Deux chiens jouent dans la neige.", "Un homme fait du vélo dans la rue."]},
    "cs": {"image captions": ["Dva psi si hrají ve sněhu.", "Muž jede na kole po ulici."]},
}


# Pairs of sentences drawn side by side (Compare with…), by source language: the well-known pair above in both
# directions, and the pronoun whose encoder self-attention row each opens at, in the first sentence and the second.
PAIRS = {
    "en": [("The animal didn't cross the street because it was too tired.",
            "The animal didn't cross the street because it was too wide.", "it", "it")],
    "de": [("Das Tier überquerte die Straße nicht, weil es zu müde war.",
            "Das Tier überquerte die Straße nicht, weil sie zu breit war.", "es", "sie")],
}


def examples_for(lang: str, domain: str | None) -> list[str]:
    """The examples that suit a model: its domain's, else its language's first set (none for other languages)."""
    sets = EXAMPLES.get(lang, {})
    return sets.get(domain or "", next(iter(sets.values()), []))


def cuda_available() -> bool:
    return torch.cuda.is_available()


def device_choices() -> list[str]:
    return ["auto", "cpu"] + (["cuda"] if cuda_available() else [])


@dataclass(eq=False)  # compared and hashed by identity: the figure caches are keyed by entry
class ModelEntry:
    key: str  # the id in links and the API
    label: str  # the Direction menu's text
    source: str  # folder or hf:// id ("" for the untrained fallback)
    checkpoint: Checkpoint
    untrained: bool = False
    metrics: list[dict] = field(default_factory=list)  # metrics.jsonl records
    card: str = ""  # the checkpoint's model card (README.md), front matter removed
    # the precision $ANATOMY_PRECISION asked for when the model loaded (auto, fp32, fp16), read once: a translator
    # made later for another device runs as the loaded one does, whatever the environment says by then
    precision: str = field(default_factory=engine.precision)
    # by device type and precision: the one each runs in, and the one asked for when that was "auto" (`translator`)
    _translators: dict[tuple[str, str], Translator] = field(default_factory=dict, repr=False)
    _twin: Translator | None = field(default=None, repr=False)
    _heads: tuple[CorpusImportance | None] | None = field(default=None, repr=False)  # (read once,)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        for (device, _), translator in list(self._translators.items()):
            self._translators.setdefault((device, self.precision), translator)

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
    def decoding(self) -> Decoding:
        return self.checkpoint.decoding

    @property
    def examples(self) -> list[str]:
        return examples_for(self.source_lang, self.checkpoint.meta.get("domain"))

    @property
    def pairs(self) -> list[tuple[str, str, str, str]]:
        """The example pairs of its source language (PAIRS): first, second, and the word each opens at."""
        return PAIRS.get(self.source_lang, [])

    @property
    def training_data(self) -> str:
        """What the model learnt from, as its config.json or model card says ("" when neither does): the corpora
        of our training runs, else an opus-mt card's `dataset:` line, else where a MarianMT model comes from."""
        meta = self.checkpoint.meta
        training = meta.get("training") or {}
        names = [c["name"] for c in training.get("corpora") or []
                 if isinstance(c, dict) and isinstance(c.get("name"), str)]
        if names:
            return ", ".join(names)
        if isinstance(training.get("data"), str) and training["data"].strip():
            return training["data"].strip()
        card = re.search(r"^\W*dataset:\s*(\S.*)$", self.card, flags=re.M | re.I)
        if card:
            return card.group(1).strip()
        return meta["origin"] if isinstance(meta.get("origin"), str) else ""

    @property
    def cpu(self) -> Translator:
        return self.translator("cpu")

    def translator(self, device: str, precision: str | None = None) -> Translator:
        """This model on "cpu" or "cuda" in `precision` (auto, fp32 or fp16; None: the entry's), copied to the device
        on first use: one translator per device and precision it runs in."""
        asked = self.precision if precision is None else precision
        with self._lock:
            if (device, asked) not in self._translators:
                ck = dataclasses.replace(self.checkpoint, model=_copy(self.checkpoint.model))
                made = engine.on_device(ck, device, asked)
                # "auto" (or fp16 where fbgemm is missing) resolves to a precision that may have a translator already
                self._translators[device, asked] = self._translators.setdefault((device, made.precision), made)
            return self._translators[device, asked]

    def maker(self, trace: Trace) -> Translator:
        """The translator that made `trace`: this model on the trace's device, in its precision, so that every view
        of a trace (its walk, importance, explanations, norms) is computed as the trace was. A trace made on CUDA
        is read on the CPU where there is none (a trace from a file)."""
        device = torch.device(trace.settings.device).type
        return self.translator("cuda" if device == "cuda" and cuda_available() else "cpu", trace.settings.precision)

    def corpus_heads(self) -> CorpusImportance | None:
        """The corpus head importance in this checkpoint folder's heads.json, for these weights (read once); None
        for a Hub model, the untrained fallback, or a folder without one."""
        with self._lock:
            if self._heads is None:
                local = self.source and not self.source.startswith(HF_PREFIX) and not self.untrained
                self._heads = (corpus_importance(self.source) if local else None,)
            return self._heads[0]

    def twin(self) -> Translator:
        """The same architecture and tokenizer with untrained (random-init) weights, built on first use."""
        with self._lock:
            if self._twin is None:
                ck = dataclasses.replace(self.checkpoint, model=untrained_model(self.config), id="untrained twin")
                self._twin = engine.on_device(ck, "cpu")
            return self._twin


def _kept(translator: Translator) -> dict[tuple[str, str], Translator]:
    """A translator that engine.load or on_device made, as ModelEntry keeps it (its __post_init__ adds the precision
    asked for)."""
    return {(translator.device.type, translator.precision): translator}


def _copy(model: Transformer) -> Transformer:
    clone = Transformer(model.config)
    clone.load_state_dict(model.state_dict())
    return clone.eval()


def untrained_model(config: ModelConfig) -> Transformer:
    """A random-init model of this shape, as training starts from: the same weights on every call (seed 0),
    without touching the caller's random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Transformer(dataclasses.replace(config, dropout=0.0)).eval()


def direction_label(src: str, tgt: str) -> str:
    return f"{LANGUAGE_NAMES.get(src, src)} → {LANGUAGE_NAMES.get(tgt, tgt)}"


def source_name(source: str) -> str:
    """A source's own name: the folder's, or `name` of hf://owner/name[@revision]."""
    if source.startswith("hf://"):
        return source[len("hf://"):].split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return Path(source).name


def shown_name(source: str) -> str:
    """A source as the app's answers name it (notices, pages, traces): a folder by its name, never its path on this
    machine; an hf:// id as it is (public)."""
    return source if source.startswith("hf://") else source_name(source)


# An absolute path in a message: "/" not inside a word, a URL, an hf:// id or a relative path
_PATH = re.compile(r"(?<![\w:/.~-])/[^\s'\"`,;()<>\[\]]+")


def unpathed(text: str, source: str = "") -> str:
    """`text` naming no path on this machine: `source`'s folder by its name, any other absolute path by its last
    part."""
    if source and not source.startswith("hf://"):
        folders = {str(Path(source).resolve()), str(Path(source))}
        for folder in sorted((f for f in folders if "/" in f), key=len, reverse=True):  # never "." alone
            text = text.replace(folder, source_name(source))
    return _PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def checkpoint_dir() -> Path:
    return Path(os.environ.get("ANATOMY_CHECKPOINT_DIR") or ROOT / "checkpoints")


def default_sources(preloaded: list[str] | None = None) -> list[str]:
    """Checkpoint folders sorted by name, then the Hub models the Space preloaded (`preloaded`, default
    preloaded_sources()), then those of $ANATOMY_HUB_MODELS (comma-separated)."""
    folder = checkpoint_dir()
    local = [str(p) for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")] \
        if folder.is_dir() else []
    preloaded = preloaded_sources() if preloaded is None else preloaded
    named = [s.strip() for s in os.environ.get("ANATOMY_HUB_MODELS", "").split(",") if s.strip()]
    return local + preloaded + [s for s in named if s not in preloaded]


def preloaded_sources(readme: Path | None = None) -> list[str]:
    """hf:// ids of the repos that README.md (default: the one beside app.py) has Spaces preload
    (`preload_from_hub`, downloaded into the Hugging Face cache at build time; `push-space --with-opus-mt`
    writes it) and that are in this machine's cache. Looked up with no network access: one not in the cache,
    as anywhere but on the Space, is left out, said in the log."""
    try:
        text = (readme or ROOT / "README.md").read_text(encoding="utf-8")
    except OSError:
        return []
    entries = hub.preloads(text)
    if not entries:
        return []
    from huggingface_hub import snapshot_download

    found = []
    for entry in entries:
        try:
            snapshot_download(entry.repo, revision=entry.revision, local_files_only=True)
        except (OSError, ValueError) as err:  # not cached (LocalEntryNotFoundError), or not a repo id
            log.warning("%s is preloaded on the Space but not in the Hugging Face cache here, so it is not "
                        "listed (%s)", entry.source, type(err).__name__)
            continue
        found.append(entry.source)
    return found


def _read_metrics(folder: Path | None) -> list[dict]:
    if folder is None or not (folder / "metrics.jsonl").is_file():
        return []
    records = []
    for line in (folder / "metrics.jsonl").read_text(errors="replace").splitlines():  # a bad line is skipped
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


def random_checkpoints(sources: list[str]) -> tuple[list[Checkpoint], str]:
    """The untrained fallback: a random-init model of the shipped shape (the `small` preset) for de→en and
    en→de. Its tokenizer comes from any folder with a usable one, else it is trained on the example sentences."""
    tokenizer, where = None, "the app's example sentences"
    for source in sources:
        path = Path(source) / "tokenizer.model"
        if path.is_file():
            try:
                tokenizer, where = Tokenizer.load(path), f"`{shown_name(source)}/tokenizer.model`"
                break
            except (RuntimeError, ValueError, OSError):
                continue
    if tokenizer is None:
        tokenizer = Tokenizer.train([s for sets in EXAMPLES.values() for group in sets.values() for s in group]
                                    * 4, vocab_size=120)
    model = untrained_model(ModelConfig(**{**PRESETS["small"], "vocab_size": tokenizer.vocab_size, "max_len": 256}))
    config = model.config
    ckpts = [Checkpoint(model, tokenizer, s, t, "untrained", {"model": config.to_dict(), "source_lang": s,
                                                               "target_lang": t, "untrained": True})
             for s, t in (("de", "en"), ("en", "de"))]
    return ckpts, where


@dataclass(frozen=True)
class Skipped:
    """A source that could not be loaded, and why."""

    source: str
    reason: str  # as the error said it, paths and all: for the log of whoever runs the app

    @property
    def name(self) -> str:
        """What a caller would name it by: its folder's name, or `name` of hf://owner/name."""
        return source_name(self.source)

    @property
    def said(self) -> str:
        """The reason as the page and the API give it: no path on this machine (unpathed)."""
        return unpathed(self.reason, self.source)

    @property
    def notice(self) -> str:
        return f"Skipped `{shown_name(self.source)}`: {self.said}"

    @property
    def logged(self) -> str:
        return f"Skipped {self.source}: {self.reason}"


def _load(sources: list[str], cached: frozenset[str] = frozenset()
          ) -> tuple[list[tuple[str, Checkpoint]], list[tuple], list[Skipped]]:
    """(source, checkpoint), (translator, metrics, card) of each source that loads, and each other one skipped
    (said in the log too: whoever runs the app may not open its page). The hf:// ids in `cached` are read from
    the Hugging Face cache alone."""
    loaded, extras, skipped = [], [], []
    for source in sources:
        local = source in cached
        if source.startswith("hf://") and not local:  # a download can take a while: say so in the log
            print(f"Loading {source} from the Hugging Face Hub (once per process)", flush=True)
        try:
            translator = engine.load(source, shown_name(source), local_files_only=local)
        except Exception as err:  # a broken folder or a failed download must never take the app down
            skipped.append(Skipped(source, str(err) if isinstance(err, CheckpointError)
                                   else f"{type(err).__name__}: {err}"))
            log.warning(skipped[-1].logged)
            continue
        try:
            folder = resolve(source, local_files_only=local)
        except CheckpointError:
            folder = None
        loaded.append((source, translator.checkpoint))
        extras.append((translator, _read_metrics(folder), _read_card(folder)))
    return loaded, extras, skipped


def _count(n: int) -> str:
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


def name_models(loaded: list[tuple[str, Checkpoint]]) -> list[tuple[str, str]]:
    """(key, label) of each loaded (source, checkpoint), in discovery order (see the module docstring)."""
    pairs = [(ck.source_lang, ck.target_lang) for _, ck in loaded]
    bases = [direction_label(*pair) + (f" · {ck.meta['domain']}" if isinstance(ck.meta.get("domain"), str)
                                       and ck.meta["domain"].strip() else "")
             for pair, (_, ck) in zip(pairs, loaded)]
    named, keys = [], set()
    for i, (source, _) in enumerate(loaded):
        key = "-".join(pairs[i]) if pairs[i] not in pairs[:i] else source_name(source)
        base, n = key, 2
        while key in keys:  # two folders of the same name (or named like a pair): still one key each
            key, n = f"{base}-{n}", n + 1
        keys.add(key)
        label = bases[i]
        origin = loaded[i][1].meta.get("origin")
        if isinstance(origin, str):
            label += f" ({origin}, {_count(loaded[i][1].model.num_parameters())} parameters)"
        elif bases.count(label) > 1 or source.startswith("hf://"):
            label += f" ({source if source.startswith('hf://') else source_name(source)})"
        named.append((key, label))
    return named


class ModelRegistry:
    """The models the app offers, each loaded once on the CPU (and copied to CUDA when asked)."""

    def __init__(self, entries: list[ModelEntry], notices: list[str], skipped: tuple[Skipped, ...] = ()):
        if not entries:
            raise ValueError("a registry needs at least one model")
        self.entries = {e.key: e for e in entries}  # replaced, never changed in place: readers need no lock
        self.notices = notices
        self.skipped = skipped  # replaced too, as Hub models fail
        self.pending: list[str] = []  # Hub models still loading in the background
        self._lock = threading.Lock()

    @classmethod
    def discover(cls, sources: list[str] | None = None, *, hub_in_background: bool = False) -> "ModelRegistry":
        """The models of `sources` (default: default_sources()). With hub_in_background, hf:// models load on a
        thread started here and join the registry when ready (`pending` lists them meanwhile), so that a Space
        serves its shipped models at once. Those the Space preloaded load at once, from the cache."""
        preloaded = preloaded_sources()
        sources = default_sources(preloaded) if sources is None else list(sources)
        cached = frozenset(preloaded)
        later = [s for s in sources if s.startswith("hf://") and s not in cached] if hub_in_background else []
        loaded, extras, skipped = _load([s for s in sources if s not in later], cached)
        notices = [s.notice for s in skipped]
        entries = []
        for (key, label), (source, ck), (translator, metrics, card) in zip(name_models(loaded), loaded, extras):
            entries.append(ModelEntry(key, label, source, ck, metrics=metrics, card=card,
                                      _translators=_kept(translator)))
        if not entries:
            ckpts, where = random_checkpoints(sources)
            for ck in ckpts:
                entries.append(ModelEntry(f"{ck.source_lang}-{ck.target_lang}",
                                          direction_label(ck.source_lang, ck.target_lang) + " · untrained", "", ck,
                                          untrained=True, _translators=_kept(engine.on_device(ck, "cpu"))))
            if not later:
                notices.append("No trained checkpoint was found, so the app runs an **untrained model** (random "
                               f"weights, the shipped layer sizes; tokenizer from {where}): its translations are "
                               "gibberish, and the figures show the machinery, not learned behaviour.")
        registry = cls(entries, notices, tuple(skipped))
        if later:
            registry.pending = list(later)
            threading.Thread(target=registry._load_later, args=(later,), name="anatomy-hub", daemon=True).start()
        return registry

    def _load_later(self, sources: list[str]) -> None:
        """Each Hub model of `sources` in turn, joining the registry when loaded. Whatever goes wrong with one
        ends in a notice, and it leaves `pending` in every case: the page never says "Loading" for good."""
        for source in sources:
            skipped = []
            try:
                skipped = self._join(source)
            except Exception as err:  # a model the app cannot use must never leave the page waiting for it
                skipped = [Skipped(source, f"{type(err).__name__}: {err}")]
                log.exception(skipped[0].logged)
            finally:  # the notice with the end of `pending`, so that whoever sees the one sees the other
                with self._lock:
                    self.notices = [*self.notices, *(s.notice for s in skipped)]
                    self.skipped = (*self.skipped, *skipped)
                    self.pending = [s for s in self.pending if s != source]

    def _join(self, source: str) -> list[Skipped]:
        """One Hub model loaded and added to the registry; [] or why it was skipped."""
        loaded, extras, skipped = _load([source])
        if loaded:
            with self._lock:
                trained = [(e.source, e.checkpoint) for e in self.entries.values() if not e.untrained]
                key, label = name_models(trained + loaded)[-1]
                while key in self.entries:  # an untrained stand-in holds the pair's key
                    key += "-hub"
                translator, metrics, card = extras[0]
                entry = ModelEntry(key, label, source, loaded[0][1], metrics=metrics, card=card,
                                   _translators=_kept(translator))
                self.entries = {**self.entries, key: entry}
        return skipped

    def wait(self, timeout: float) -> bool:
        """Until no Hub model is loading (tests, scripts), for at most `timeout` seconds; False when some still is
        (a download can stall: every wait has a bound)."""
        deadline = time.monotonic() + timeout
        while self.pending:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def status(self) -> str:
        """The page's notice about its models: what was skipped or failed, and what is still loading."""
        lines = [f"⚠️ {n}" for n in self.notices]
        lines += [f"⏳ Loading `{s}` from the Hugging Face Hub in the background (once per process): reload the "
                  "page in a minute to choose it in Direction." for s in self.pending]
        return "\n\n".join(lines)

    @property
    def default_key(self) -> str:
        return next(iter(self.entries))

    def choices(self) -> list[tuple[str, str]]:
        return [(e.label, e.key) for e in self.entries.values()]

    def get(self, key: str | None) -> ModelEntry:
        """The entry for a key (the default one for None or ""); KeyError with the choices when unknown."""
        if not key:
            return self.entries[self.default_key]
        if key not in self.entries:
            raise KeyError(f"Unknown direction {key!r}; choose one of: {', '.join(self.entries)}.")
        return self.entries[key]

    def translator(self, key: str | None, device: str | None = "auto") -> tuple[Translator, str]:
        """The model on the asked device, and a notice when that device is not available."""
        entry = self.get(key)
        notice = ""
        wanted = (device or "auto").lower() if isinstance(device, str) else "auto"
        if wanted not in ("auto", "cpu", "cuda"):
            wanted, notice = "auto", f"Unknown device {device!r}: using auto."
        use = "cuda" if wanted in ("auto", "cuda") and cuda_available() else "cpu"
        if wanted == "cuda" and use == "cpu":
            notice = "CUDA is not available on this machine: running on the CPU."
        return entry.translator(use), notice
