"""Tiny checkpoints for the app's tests (random weights, a small SentencePiece vocabulary), and
helpers to call the app's handlers (ui.handlers.Handlers).

Tests of the app must not depend on the trained checkpoints (they change while training
runs and may be missing), so they build their own in a temporary folder (the `folders` and
`tiny` fixtures in conftest.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import torch

from anatomy.inputs import View
from anatomy.registry import ModelEntry, ModelRegistry
from anatomy.run import Run, StopSignal
from transformer import checkpoint
from transformer.config import ModelConfig
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer
from ui.handlers import Handlers
from ui.values import Inputs, PageSettings, Tab

SENTENCES = [
    "Ein Mann fährt mit dem Fahrrad eine Straße entlang.", "Zwei Hunde spielen im Schnee.",
    "Eine Frau in einem roten Kleid singt auf einer Bühne.", "Kinder spielen Fußball auf einer grünen Wiese.",
    "A man is riding a bicycle down the street.", "Two dogs are playing in the snow.",
    "A woman in a red dress is singing on a stage.", "Children are playing soccer on a green field.",
    "Ein kleines Mädchen lacht.", "A little girl is laughing.", "<b>bold</b> & <br> tags",
]
TINY = dict(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64)
SENTENCE = "Zwei Hunde spielen im Schnee."
# The shape of a TINY de-en model, for reading links (anatomy.inputs.parse_link) without one
CONFIGS = {"de-en": ModelConfig(vocab_size=120, **TINY)}
# On the `served` app (conftest.py) this beam-8 request of 480 characters, which the shipped model repeats to the
# 200-piece limit, holds the model's slot ~1.6 s on an idle core (eight of the phrase: 61 pieces, 0.5 s, which a test
# on a busy machine outlasted before it filled the queue): long enough to fill the queue on purpose.
SLOW_REQUEST = dict(text="Zwei Hunde spielen im Schnee, " * 16, direction="de-en", beam_size=8, max_new_tokens=200,
                    api_name="/translate")
METRICS = [{"epoch": 1, "train_loss": 6.1, "val_loss": 5.2, "val_bleu": 1.5, "val_chrf": 12.0},
           {"epoch": 2, "train_loss": 4.9, "val_loss": 4.4, "val_bleu": 4.25, "val_chrf": 20.5}]


def make_tokenizer() -> Tokenizer:
    return Tokenizer.train(SENTENCES * 5, vocab_size=120)


def make_checkpoint(folder: Path, source_lang: str = "de", target_lang: str = "en", seed: int = 0,
                    tokenizer: Tokenizer | None = None, domain: str | None = None, decoding: dict | None = None,
                    **config) -> Path:
    """A TINY checkpoint (`config` overrides its sizes) with random weights; `decoding` as a model card writes it
    into config.json."""
    tokenizer = tokenizer or make_tokenizer()
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(vocab_size=tokenizer.vocab_size, **{**TINY, **config}))
    log = "".join(json.dumps(r) + "\n" for r in METRICS)
    checkpoint.save(folder, model, tokenizer, source_lang=source_lang, target_lang=target_lang, domain=domain,
                    training={"steps": 10, "train_time_s": 60.0, "device": "cpu"},
                    metrics={k: METRICS[-1][k] for k in ("epoch", "val_loss", "val_bleu", "val_chrf")},
                    metrics_log=log, dtype=torch.float32)
    if decoding:
        meta = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**meta, "decoding": decoding}, indent=2) + "\n")
    return folder


def tiny_entry(root: Path) -> ModelEntry:
    """The registry entry of a TINY de-en checkpoint made in `root`."""
    make_checkpoint(root / "tiny-de-en", "de", "en")
    return ModelRegistry.discover([str(root / "tiny-de-en")]).get("de-en")


def configs(h: Handlers) -> dict[str, ModelConfig]:
    """Each model's shape by key, as links are read against (anatomy.inputs.parse_link)."""
    return {key: e.config for key, e in h.registry.entries.items()}


def translate(h: Handlers, text=SENTENCE, key="de-en", beam=1, max_new=0, device="cpu", top_k=5, lp=1.0, slow=0.0,
              tab=Tab.HEADS, signal: StopSignal | None = None) -> list[dict]:
    """Handlers.translate_page's yields, with the controls of a fresh page (greedy, CPU)."""
    settings = PageSettings(key, text, beam, max_new, device, top_k, lp, slow)
    return list(h.translate_page(Inputs(settings, tab=tab, signal=signal or StopSignal())))


def run_of(h: Handlers, text=SENTENCE, key="de-en", **settings) -> Run:
    """The Run a Translate click makes."""
    return translate(h, text, key, **settings)[-1][h.page.run]


def show(h: Handlers, run: Run, kind="cross", layer=64, head="mean", merge=False,
         signal: StopSignal | None = None) -> list[dict]:
    """The page drawn for a run: what Handlers.show returns, or for a slow-motion run each frame of its replay."""
    page = Inputs(run=run, view=View.of(kind, layer, head, merge), signal=signal or StopSignal())
    return replayed(h, page) if run.replay else [h.show(page)]


def replayed(h: Handlers, page: Inputs, stop_after: int | None = None) -> list[dict]:
    """Each frame of Handlers.replay (an async generator) on `page`; with `stop_after`, Stop is clicked after that
    many frames."""
    async def frames() -> list[dict]:
        got = []
        async for frame in h.replay(page):
            got.append(frame)
            if len(got) == stop_after:
                h.stop(Inputs(signal=page.signal))
        return got
    return asyncio.run(frames())


def drawn(h: Handlers, **settings) -> tuple[Run, dict]:
    """Translate, then the page as drawn: the Run and the last yield of show."""
    run = run_of(h, **settings)
    return run, show(h, run)[-1]


@contextlib.contextmanager
def short_grace(tiny, monkeypatch):
    """The tiny app served on loopback, forgetting closed sessions after 1 s: (its URL, Gradio's sessions)."""
    import ui
    from ui import server

    monkeypatch.setenv("ANATOMY_SESSION_GRACE", "1")
    monkeypatch.setattr(server, "SWEEP_S", 0.2)
    _, url, _ = tiny.demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **ui.launch_options())
    try:
        yield url, tiny.demo.app.state_holder.session_data
    finally:
        tiny.demo.close()


def forgotten(sessions: dict, session: str, within_s: float = 15) -> bool:
    deadline = time.monotonic() + within_s
    while session in sessions and time.monotonic() < deadline:
        time.sleep(0.1)
    return session not in sessions
