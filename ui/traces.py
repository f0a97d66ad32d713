"""Trace downloads, animations and offline pages: JSON files and folders in Gradio's upload folder, each deleted
TRACE_RETENTION seconds after it is written.

They hold the visitor's text, so they are kept no longer than that. Gradio serves files in its upload folder
without a copy of its own; its gr.Blocks(delete_cache=...) would not do: it loses track of the files of a
component that received a gr.skip() or gr.update() in the session (Gradio 6.31).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import threading
import time
from pathlib import Path

import gradio.utils

from transformer import Trace

_written = threading.Event()
_started = threading.Lock()
_thread: threading.Thread | None = None


def retention() -> int:
    """Seconds a trace file is kept: $ANATOMY_TRACE_RETENTION, default 900."""
    try:
        return max(1, int(os.environ.get("ANATOMY_TRACE_RETENTION") or 900))
    except ValueError:
        return 900


def folder() -> Path:
    return Path(gradio.utils.get_upload_folder()) / "transformer-anatomy-traces"


def trace_file(trace: Trace) -> str:
    """The trace as a JSON file for the download button."""
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    text = trace.to_json()
    path = where / f"trace-{hashlib.sha1(text.encode()).hexdigest()[:16]}.json"
    path.write_text(text)
    _written.set()
    return str(path)


def animation_path(name: str) -> Path:
    """Where to write an exported file (an animation, an offline page) called `name`: a folder of its own
    (visitors' files of the same name stay apart), deleted with the trace files."""
    where = folder() / f"animation-{secrets.token_hex(8)}"
    where.mkdir(parents=True)
    _written.set()
    return where / name


def prune() -> float | None:
    """Delete the trace files and animation folders older than the retention; the seconds until the next one is due
    (None: none left)."""
    now, keep, due = time.time(), retention(), []
    for path in [*folder().glob("trace-*.json"), *folder().glob("animation-*")]:
        try:
            age = now - path.stat().st_mtime
            if age < keep:
                due.append(keep - age)
            elif path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:  # gone already (another app on the same temp folder pruned it)
            continue
    return min(due, default=None)


def _prune_forever() -> None:
    # Sleeps until the oldest file is due or a new one is written, so an idle app keeps nobody's text, and a
    # restarted one deletes what the last run left.
    while True:
        _written.clear()
        _written.wait(prune())


def start_pruning() -> None:
    """Start the pruning thread (once per process; called at launch)."""
    global _thread
    with _started:
        if _thread is None:
            _thread = threading.Thread(target=_prune_forever, name="prune-traces", daemon=True)
            _thread.start()
