"""What the benchmarks share: the repository root, the benchmark sentence, the default checkpoint and
`python app.py` started on a free loopback port."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
# A typical ~20-word Multi30k-style caption, by source language (the English one says the same, as long).
SENTENCES = {
    "de": "Ein kleiner Junge mit einem roten Hut spielt am Strand mit seinem Hund , während zwei Frauen auf einer "
          "Bank sitzen und zuschauen .",
    "en": "A small boy in a red hat plays on the beach with his dog , while two women sit on a bench and watch .",
}


def default_checkpoint() -> Path:
    """The shipped de→en model: general-de-en once it exists, else multi30k-de-en."""
    general = ROOT / "checkpoints" / "general-de-en"
    return general if general.is_dir() else ROOT / "checkpoints" / "multi30k-de-en"


def languages(checkpoint: Path) -> tuple[str, str]:
    """(source, target) language of a checkpoint folder, from its config.json; de→en when it has none."""
    try:
        config = json.loads((checkpoint / "config.json").read_text())
        return config["source_lang"], config["target_lang"]
    except (OSError, ValueError, KeyError):
        return "de", "en"


def sentence(source_lang: str) -> str:
    return SENTENCES.get(source_lang, SENTENCES["de"])


def median_ms(fn, repeats: int) -> float:
    """Median milliseconds of `repeats` calls of fn, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the server's process before app.py starts: SIGTERM when the benchmark dies, even by SIGKILL (a test's
    timeout), which skips its cleanup and left servers running. Linux only; elsewhere nothing."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except AttributeError:
        pass


def start_app(checkpoints: Path, log, timeout: float = 180, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """`python app.py` on a free loopback port (`env`: settings besides this process's environment); returns the
    process and its URL once it answers."""
    proc, url = spawn_app(checkpoints, log, env)
    wait_for_app(proc, url, log, timeout)
    return proc, url


def spawn_app(checkpoints: Path, log, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """`python app.py` on a free loopback port, just started (it takes seconds to answer: wait_for_app)."""
    port = free_port()
    env = {**os.environ, **(env or {}), "ANATOMY_CHECKPOINT_DIR": str(checkpoints), "GRADIO_SERVER_NAME": "127.0.0.1",
           "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=_die_with_parent)
    return proc, f"http://127.0.0.1:{port}/"


def wait_for_app(proc: subprocess.Popen, url: str, log, timeout: float = 180) -> None:
    """Returns once the app answers; stops it and raises if it ends or does not answer in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "config", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"app.py did not start (exit code {proc.poll()}); see {log.name}")
