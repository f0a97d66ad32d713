"""The model's slot: one model pass at a time across every visitor of the process (a small CPU runs one pass well and
two badly), first come, first served. Long work gives the slot up between its slices (`between`) once it has held
it for the budget and someone waits, then takes its turn again at the back of the line: a short translation sent
during an explanation of a long text waits one slice, not the whole explanation.

The slot is handed over, not owned by a thread: a streamed translation holds it across its yields, and Gradio resumes
a generator on any of its worker threads (the holder `claim`s it on each). Only the thread the holder runs on gives it
up in `between`: a script or test calling the model directly beside a running app never hands over another's slot.
"""
from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import deque
from typing import Callable, Iterator, TypeVar

from .settings import number

T = TypeVar("T")

DEFAULT_BUDGET_S = 1.0


def budget_s() -> float:
    """Seconds a piece of work holds the slot while others wait: $ANATOMY_MODEL_SLICE, default 1."""
    return number("ANATOMY_MODEL_SLICE", DEFAULT_BUDGET_S, 0.0, float)


class ModelSlot:
    """A fair lock that is handed over in the order it was asked for."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._line: deque[threading.Event] = deque()  # those waiting, first come first
        self._held = False
        self._since = 0.0  # when the holder got the slot (time.monotonic)
        self._thread = 0  # the thread the holder runs on (threading.get_ident)
        self.turns = 0  # times the slot was taken (for tests)
        self.handovers = 0  # times `between` gave the slot to another (for tests and benchmarks)

    @property
    def held(self) -> bool:
        return self._held

    @property
    def waiting(self) -> int:
        return len(self._line)

    def _take(self) -> None:
        turn = threading.Event()
        with self._guard:
            self.turns += 1
            if not self._held:
                self._held, self._since, self._thread = True, time.monotonic(), threading.get_ident()
                return
            self._line.append(turn)
        turn.wait()  # the one before handed it over: still held, now ours
        self._since, self._thread = time.monotonic(), threading.get_ident()

    def _give(self) -> None:
        with self._guard:
            self._thread = 0
            if self._line:
                self._line.popleft().set()
            else:
                self._held = False

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """The slot for the work inside, once those who asked before have had it."""
        self._take()
        try:
            yield
        finally:
            self._give()

    def holding(self, fn: Callable[..., T]) -> Callable[..., T]:
        """`fn` run holding the slot; within work that holds it already, as it is."""
        @functools.wraps(fn)
        def held(*args, **kwargs):
            if self.mine:
                return fn(*args, **kwargs)
            with self.hold():
                return fn(*args, **kwargs)
        return held

    def through(self, items: Iterator[T]) -> Iterator[T]:
        """`items` made holding the slot, which stays held while the consumer has one (a stream of decoding steps
        sent to the page one by one): whichever thread resumes the stream runs the holder's work, and none while it
        waits to be resumed. The consumer makes no model call of its own while it holds an item (it would wait for
        itself): it closes the stream first."""
        if self.mine:
            yield from items
            return
        with self.hold():
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    return
                self._thread = 0
                yield item
                self._thread = threading.get_ident()

    @property
    def mine(self) -> bool:
        """Whether the slot is held by the work running on this thread."""
        return self._held and self._thread == threading.get_ident()

    def between(self) -> None:
        """Between two slices of the holder's work: when it has held the slot for the budget and another waits, the
        other goes first and the holder waits for its next turn. On any other thread (a script, a test calling the
        model directly), nothing."""
        if self.mine and self._line and time.monotonic() - self._since >= budget_s():
            with self._guard:
                self.handovers += 1
            self._give()
            self._take()


# The process's one slot: every model pass of the app holds it (ui/wiring.py), and anatomy/engine.py's long work
# gives it up between slices.
SLOT = ModelSlot()
