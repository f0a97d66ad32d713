"""Animations made for a server's visitors: each within a budget of pixels, drawn in worker processes.

Drawing an animation is seconds of Python (Pillow) per file. In the server's own process it would hold the GIL that
a translation needs between its torch calls: one 1920×1080 export beside a translation made that translation 9×
slower on a 2-core machine. In a worker process it takes a core and none of the server's GIL or memory; the file is
written one frame at a time (anatomy/export.py), so a worker holds one picture, not the animation.
"""
from __future__ import annotations

import multiprocessing
import os
import select
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from transformer import Trace

from . import export, views

NICE = 10  # a worker's CPU priority below the server's: on a busy CPU a translation gets ~10× its share


@dataclass(frozen=True)
class ExportLimits:
    """How much exporting a server allows (docs/limits.md#exports), from the environment."""

    animations: int = 1  # ANATOMY_EXPORTS: the page's animations drawn at once, each in a worker process
    pages: int = 1  # ANATOMY_PAGE_EXPORTS: the page's offline pages written at once (in the server's process)
    megapixels: float = 600.0  # ANATOMY_EXPORT_MEGAPIXELS: one animation's frames × width × height

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ExportLimits:
        """The settings, each its default when unset or unreadable."""
        def read(name: str, default, kind):
            try:
                return max(kind(env.get(name) or default), 1)
            except ValueError:
                return default
        return cls(read("ANATOMY_EXPORTS", cls.animations, int), read("ANATOMY_PAGE_EXPORTS", cls.pages, int),
                   read("ANATOMY_EXPORT_MEGAPIXELS", cls.megapixels, float))


def megapixels(trace: Trace, animation: export.Animation) -> float:
    """What an animation of `trace` draws: its frames (the opening one and one per step) × its picture's pixels."""
    width, height = animation.size
    return (views.steps(trace) + 1) * width * height / 1e6


def _drawn(trace: Trace, animation: export.Animation, path: Path) -> export.Exported:
    """In a worker: the animation written."""
    return export.export(trace, animation, path)


def _started(server: int) -> None:
    """In a worker, as it starts: it yields the CPU to the server's translations (a visitor waits for those; drawing
    can wait), and it ends when the server process does, however that ends: otherwise it would wait for work forever
    (it holds its queue's both ends) and keep the forkserver it came from (which it holds open)."""
    os.nice(NICE)
    try:
        ended = os.pidfd_open(server)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):  # no pidfd (not Linux ≥ 5.3): the server's exit (atexit) ends it
        return

    def wait() -> None:
        select.select([ended], [], [])
        os._exit(0)

    threading.Thread(target=wait, name="ends-with-server", daemon=True).start()


class Exporter:
    """Animations within ExportLimits' budget, drawn in `limits.animations` + 1 worker processes once started (one
    for the API's /animate, which draws in the model's slot and must not wait for the page's), else in the calling
    process (scripts, tests)."""

    def __init__(self, limits: ExportLimits):
        self.limits = limits
        self._started = False
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def refusal(self, trace: Trace, animation: export.Animation) -> str:
        """Why this animation is not drawn (past the budget), or "" when it is."""
        drawn = megapixels(trace, animation)
        if drawn <= self.limits.megapixels:
            return ""
        frames, (width, height) = views.steps(trace) + 1, animation.size
        smaller = min(export.anim.SIZES.values(), key=lambda size: size[0] * size[1])
        fits = frames * smaller[0] * smaller[1] / 1e6 <= self.limits.megapixels and smaller != animation.size
        return (f"This animation would be {frames} frames of {width} × {height} ({drawn:.0f} megapixels); this server "
                f"draws at most {self.limits.megapixels:g} megapixels a file: "
                + (f"choose {smaller[0]} × {smaller[1]}." if fits else "translate a shorter text."))

    def start(self) -> None:
        """Draw in worker processes from now on (called at launch); each starts with the first export that needs it,
        forked from one process that has imported the drawing code once."""
        self._started = True

    def export(self, trace: Trace, animation: export.Animation, path: Path) -> export.Exported:
        """The animation written to `path`, in a worker when started. RuntimeError when the worker died (it is
        replaced for the next export)."""
        if not self._started:
            return _drawn(trace, animation, path)
        pool = self._workers()
        try:
            return pool.submit(_drawn, trace, animation, path).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise RuntimeError("the process drawing it ended (out of memory?); try again") from None

    def _workers(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # forkserver: a worker forked from the threaded server itself could inherit a lock held by another
                # thread; spawned, it would import app.py (and Gradio) again
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["anatomy.export"])
                self._pool = ProcessPoolExecutor(self.limits.animations + 1, mp_context=context,
                                                 initializer=_started, initargs=(os.getpid(),))
            return self._pool
