"""What the benchmarks share: the repository root, the benchmark sentence, the default checkpoint,
`python app.py` started on a free loopback port, and a visitor's page talking to it (PageSession)."""
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
import uuid
from pathlib import Path

import httpx
from gradio_client.utils import apply_diff

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


class PageSession:
    """One visitor's page, talking to the server as the page's JavaScript does (over HTTP, by event id), in a
    session of its own (or `session`, a gradio_client Client's, whose heartbeat keeps it open): gradio_client refuses
    the page's events, which are private (ui/wiring.py)."""

    def __init__(self, url: str, session: str | None = None, timeout: float = 120):
        self.url = url.rstrip("/") + "/"
        self.session = session or uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=timeout)
        self.config = self.http.get(self.url + "config").json()
        self.components = {c["id"]: c for c in self.config["components"]}

    def on(self, elem_id: str, trigger: str = "click") -> str:
        """The api_name of the server event that the component `elem_id`'s `trigger` runs first."""
        [cid] = [c for c, component in self.components.items() if component["props"].get("elem_id") == elem_id]
        return next(d["api_name"] for d in self.config["dependencies"]
                    if [cid, trigger] in d["targets"] and d.get("backend_fn"))

    def values(self, event: str, sent: dict | None = None) -> list:
        """What a fresh page sends to `event` (its api_name): each input's value on a fresh page (None for
        gr.State: the server keeps those per session), but those `sent` names by elem_id or by the beginning of
        their label."""
        values = []
        for cid in self._event(event)["inputs"]:
            component = self.components[cid]
            props = component["props"]
            named = [value for name, value in (sent or {}).items()
                     if name == props.get("elem_id") or (props.get("label") or "").startswith(name)]
            values.append(None if component["type"] == "state" else named[0] if named else props.get("value"))
        return values

    def call(self, event: str, values: list | None = None) -> list:
        """Run `event` (its api_name) on `values` (default: what a fresh page sends) and wait for it; its outputs
        (a generator's last). Raises RuntimeError if it fails."""
        fn = self._event(event)
        joined = self.http.post(self.url + "gradio_api/queue/join", json={
            "data": self.values(event) if values is None else values, "fn_index": fn["id"],
            "session_hash": self.session, "event_data": None, "trigger_id": None})
        joined.raise_for_status()
        event_id, outputs = joined.json()["event_id"], None
        with self.http.stream("GET", self.url + "gradio_api/queue/data", params={"session_hash": self.session},
                              headers={"accept": "text/event-stream"}) as stream:
            for line in stream.iter_lines():
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if message.get("event_id") != event_id:
                    continue
                data = (message.get("output") or {}).get("data")
                if message["msg"] == "process_generating":  # each message after the first: diffs of the last
                    outputs = data if outputs is None else [apply_diff(o, d) for o, d in zip(outputs, data)]
                elif message["msg"] == "process_completed":
                    if not message.get("success"):
                        raise RuntimeError(f"{event} failed: {message.get('output')}")
                    return data if outputs is None else outputs
        raise RuntimeError(f"{event}: the stream closed before it finished")

    def close(self) -> None:
        self.http.close()

    def _event(self, name: str) -> dict:
        return next(d for d in self.config["dependencies"] if d.get("api_name") == name.strip("/"))
