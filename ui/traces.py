"""Files written for visitors: trace downloads, animations and offline pages, JSON files and folders in Gradio's
upload folder. Each is deleted TRACE_RETENTION seconds after it is written, and while they hold more than the cap
(FILES_MB) in all, the oldest go first.

They hold the visitor's text, so they are kept no longer than that; each has a random name, since anyone may fetch a
file in that folder by its name (a name made of the content would let anyone who guesses a visitor's sentence fetch
that visitor's trace). Gradio serves files in its upload folder without a copy of its own; its
gr.Blocks(delete_cache=...) would not do: it loses track of the files of a component that received a gr.skip() or
gr.update() in the session (Gradio 6.31).
"""
from __future__ import annotations

import contextlib
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import gradio.utils

from anatomy.settings import number
from transformer import Trace

_written = threading.Event()
_started = threading.Lock()
_thread: threading.Thread | None = None
_writing: set[Path] = set()  # files and folders being written
# The files and folders written, oldest first: when each was written and its bytes. Kept as they are written, so
# that keeping the cap costs no listing of the folder (1.2 s for 20,000 traces); a folder is listed once, for what
# an earlier run left.
_files: dict[Path, tuple[float, int]] = {}
_listed: set[Path] = set()
_lock = threading.Lock()  # all of the above


def retention() -> int:
    """Seconds a trace file is kept: $ANATOMY_TRACE_RETENTION, default 900."""
    return number("ANATOMY_TRACE_RETENTION", 900, 1)


def files_cap() -> int:
    """Bytes the files may hold in all: $ANATOMY_FILES_MB megabytes (a fraction allowed), default 1024."""
    return int(number("ANATOMY_FILES_MB", 1024.0, 0.0, float) * 1_000_000)


def folder() -> Path:
    return Path(gradio.utils.get_upload_folder()) / "transformer-anatomy-traces"


def trace_file(trace: Trace) -> str:
    """The trace as a JSON file of its own for the download: written under another name, then renamed, so that it
    is fetched whole or not at all."""
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"trace-{secrets.token_hex(16)}.json"
    partial = path.with_name(path.name + ".partial")
    with _being_written(path):
        partial.write_text(trace.to_json())
        partial.replace(path)
    return str(path)


@contextlib.contextmanager
def new_file(name: str) -> Iterator[Path]:
    """Where to write an exported file (an animation, an offline page) called `name`: a folder of its own
    (visitors' files of the same name stay apart), deleted with the trace files."""
    where = folder() / f"animation-{secrets.token_hex(16)}"
    where.mkdir(parents=True)
    with _being_written(where):
        yield where / name


@contextlib.contextmanager
def _being_written(path: Path) -> Iterator[None]:
    """While the file or folder `path` is written: neither counted nor deleted. Then it is counted and the cap kept,
    before its name goes out."""
    with _lock:
        _writing.add(path)
        _list(path.parent)
    try:
        yield
    finally:
        with _lock:
            _writing.discard(path)
            if path.exists():
                _count(path, time.time())
        prune()
        _written.set()


def _list(where: Path) -> None:
    """What an earlier run left in `where` (with _lock held), counted once, oldest first."""
    if where in _listed:
        return
    _listed.add(where)
    found = []
    for path in [*where.glob("trace-*"), *where.glob("animation-*")]:
        with contextlib.suppress(OSError):
            if path not in _writing:
                found.append((path.stat().st_mtime, path))
    for written, path in sorted(found):
        with contextlib.suppress(OSError):
            _count(path, written)


def _count(path: Path, written: float) -> None:
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
    _files.pop(path, None)
    _files[path] = (written, size)


def _delete(path: Path) -> None:
    with contextlib.suppress(OSError):  # gone already (another app on the same temp folder pruned it)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def prune() -> float | None:
    """Delete the files and folders older than the retention, then the oldest while they hold more than the cap
    (the newest is kept, so that its visitor gets it); the seconds until the next one is due (None: none left)."""
    now, keep, cap = time.time(), retention(), files_cap()
    with _lock:
        _list(folder())
        total = sum(size for _, size in _files.values())
        while _files:
            path, (written, size) = next(iter(_files.items()))
            if now - written < keep and (total <= cap or len(_files) == 1):
                return keep - (now - written)
            del _files[path]
            _delete(path)
            total -= size
    return None


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
