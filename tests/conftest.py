"""Shared fixtures: a synthetic copy-task corpus and a tiny model trained on it by the real CLI; tiny
random-weight checkpoints and the app built on them. And the two sets of tests: `slow` and `unit` (pytest.ini)."""
from __future__ import annotations

import contextlib
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest
import torch

from tests.browser import browser, url  # noqa: F401  (fixtures of the browser tests)
from transformer import checkpoint, train

# Training runs tokenize their corpora into this cache, not into the user's.
os.environ.setdefault("ANATOMY_TOKEN_CACHE", tempfile.mkdtemp(prefix="anatomy-token-cache-"))
os.environ.setdefault("ANATOMY_STRICT_INPUTS", "1")  # reading an undeclared input is an error (ui/values.py)

# A test that uses one of these is slow, whatever it says: a training run, Chromium, Chromium and a server,
# `python app.py`, the shipped checkpoints.
SLOW_FIXTURES = {"copy_checkpoint", "browser", "url", "served", "shipped"}
# The checkpoints the app ships (seconds to load each): a unit test that reads one fails (mark it slow).
SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`slow` on every test that uses a slow fixture, `unit` on every other test: `pytest -m unit` is the inner
    loop."""
    for item in items:
        if SLOW_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.unit)


@pytest.fixture(autouse=True)
def _unit_tests_stay_in_process(request, monkeypatch) -> Iterator[None]:
    """A unit test that starts a process or a server, trains or loads a shipped checkpoint fails at once (mark it
    slow instead), so that `pytest -m unit` stays fast as tests are added; and it runs on one thread."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return

    def refuse(what: str) -> Callable[..., None]:
        def fail(*args, **kwargs) -> None:
            pytest.fail(f"this unit test {what}: mark it @pytest.mark.slow", pytrace=False)
        return fail

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("starts a process"))
    monkeypatch.setattr(torch.Tensor, "backward", refuse("trains (Tensor.backward)"))
    read = checkpoint.load_file

    def read_unless_shipped(path, *args, **kwargs):
        if SHIPPED in Path(path).resolve().parents:
            refuse("loads a shipped checkpoint")()
        return read(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "load_file", read_unless_shipped)
    if "gradio" in sys.modules:
        monkeypatch.setattr(sys.modules["gradio"].Blocks, "launch", refuse("starts a server"))
    # Unit tests run tiny matrices, where a second thread only waits for the first (long, on a busy machine).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


WORDS = ("red blue green cat dog bird tree house car man woman child runs jumps sits big small old "
         "young water").split()
TINY_MODEL_ARGS = ["--d-model", "64", "--n-heads", "4", "--d-ff", "128", "--layers", "2", "--dropout", "0",
                   "--max-len", "64", "--vocab-size", "60", "--max-tokens", "400", "--lr", "3e-3",
                   "--warmup", "100", "--ema-decay", "0.99", "--threads", "2", "--no-progress"]


def write_corpus(folder: Path, n_train: int = 2000, n_val: int = 100, seed: int = 0) -> Path:
    """Copy task in Multi30k's file layout: the 'en' side repeats the 'de' side word for word."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("val", n_val)):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) for _ in range(n)]
        for lang in ("de", "en"):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="session")
def copy_data(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("copy-data"))


@pytest.fixture(scope="session")
def copy_checkpoint(copy_data, tmp_path_factory) -> Path:
    """A 170k-parameter model trained on the copy task for 8 short epochs (~15 s)."""
    root = tmp_path_factory.mktemp("copy-model")
    threads = torch.get_num_threads()
    train.main(["--src", "de", "--tgt", "en", "--data-dir", str(copy_data), "--out", str(root / "ckpt"),
                "--run-dir", str(root / "run"), "--epochs", "8", *TINY_MODEL_ARGS])
    torch.set_num_threads(threads)
    return root / "ckpt"


@pytest.fixture(scope="session")
def opus_mt(tmp_path_factory) -> Path:
    """A tiny random opus-mt-like MarianMT folder (tests/marian_fixtures.py); needs `transformers`."""
    pytest.importorskip("transformers")
    from tests.marian_fixtures import make_marian

    return make_marian(tmp_path_factory.mktemp("opus-mt-de-en"))


@pytest.fixture(scope="session")
def folders(tmp_path_factory) -> Path:
    """Tiny de-en and en-de checkpoints, and a copy of the first with a corrupt model.safetensors (read only: made
    once for the whole run)."""
    from tests.app_fixtures import make_checkpoint, make_tokenizer

    root = tmp_path_factory.mktemp("checkpoints")
    tok = make_tokenizer()
    make_checkpoint(root / "tiny-de-en", "de", "en", seed=0, tokenizer=tok)
    make_checkpoint(root / "tiny-en-de", "en", "de", seed=1, tokenizer=tok,
                    decoding={"beam_size": 3, "length_penalty": 0.6})  # its card's choice; tiny-de-en has none
    broken = root / "broken"
    shutil.copytree(root / "tiny-de-en", broken)
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    return root


@pytest.fixture(scope="session")
def tiny(folders):
    """The app's Handlers (registry, page components) on the tiny checkpoints; `.demo` is the app. Built once for
    the whole run (a second each): a test changes it only through monkeypatch."""
    import app

    demo = app.create_app([str(folders / "tiny-de-en"), str(folders / "broken"), str(folders / "tiny-en-de")])
    demo.anatomy.demo = demo
    return demo.anatomy


@pytest.fixture(scope="session")
def shipped():
    """The app on the checkpoints under checkpoints/ (or the labelled untrained fallback), built once."""
    import app

    return app.create_app()


@dataclass
class Served:
    """A running `python app.py`: its URL, its temp dir (every file it writes), and its output so far."""

    url: str
    tmp: Path
    output: list[str]


@contextlib.contextmanager
def serve(root: Path, **settings: str) -> Iterator[Served]:
    """`python app.py` on loopback, configured by environment only: on the checkpoint folders in root/checkpoints
    (one tiny de-en model with max_len 256 when there is none), with a temp dir of its own (root/tmp) and `settings`
    (ANATOMY_... variables)."""
    from tests.app_fixtures import make_checkpoint

    if not (root / "checkpoints").exists():
        make_checkpoint(root / "checkpoints" / "tiny-de-en", "de", "en", max_len=256)
    (root / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("GRADIO_EXAMPLES_CACHE", "GRADIO_TEMP_DIR",
                                                             "GRADIO_SERVER_PORT", "ANATOMY_HUB_MODELS")}
    env.update(ANATOMY_CHECKPOINT_DIR=str(root / "checkpoints"), TMPDIR=str(root / "tmp"),
               GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               PYTHONUNBUFFERED="1", **settings)
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=Path(__file__).resolve().parents[1], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []

    def read():
        for line in proc.stdout:
            output.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while not (urls := [m.group(0) for line in output if (m := re.search(r"http://127\.0\.0\.1:\d+", line))]):
            assert proc.poll() is None and time.monotonic() < deadline, "app.py did not start:\n" + "".join(output)
            time.sleep(0.1)
        yield Served(urls[0] + "/", root / "tmp", output)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def served(tmp_path_factory) -> Iterator[Served]:
    """The app as deployed (`python app.py`, serve), with two model events at once (ANATOMY_MODEL_EVENTS), a queue
    of one waiting request (ANATOMY_QUEUE_SIZE) and traces kept 2 s (ANATOMY_TRACE_RETENTION)."""
    with serve(tmp_path_factory.mktemp("served"), ANATOMY_QUEUE_SIZE="1", ANATOMY_MODEL_EVENTS="2",
               ANATOMY_TRACE_RETENTION="2") as app:
        yield app
