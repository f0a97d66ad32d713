"""What the app adds to Gradio's server: over-long links shortened before Gradio reads them, failed requests that
never print what a visitor sent, a full queue's refusals answered before FastAPI reads them, uploads refused,
Gradio's monitoring off unless asked for, sessions forgotten soon after their page is closed, and glibc's allocator
kept to two arenas."""
from __future__ import annotations

import asyncio
import contextlib
import copy
import ctypes
import datetime
import inspect
import os
import re
import sys
import traceback

import gradio as gr
from gradio.blocks import Block, BlocksConfig
from gradio.exceptions import ComponentProcessingError
from gradio.route_utils import API_PREFIX
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from anatomy.inputs import MAX_QUERY, shorten_query
from anatomy.settings import number

JOIN = f"{API_PREFIX}/queue/join"
# The Gradio release whose internals SessionConfigs and Blocks.postprocess_data were written against (and tested
# equal to: tests/test_hardening.py); on any other, the app runs on Gradio's own code, slower but as Gradio meant it.
OVERRIDDEN_GRADIO = "6.31.0"


def overrides_apply() -> bool:
    """Whether the installed Gradio is the release the overrides below were written for."""
    return gr.__version__ == OVERRIDDEN_GRADIO
HEARTBEAT = f"{API_PREFIX}/heartbeat/"
# Gradio's routes that write what a visitor sends to disk: any file (kept in its upload folder, never deleted) and a
# screen recording (its temp folder)
UPLOADS = (f"{API_PREFIX}/upload", f"{API_PREFIX}/process_recording")


class ShortLinks:
    """ASGI middleware: a query string over MAX_QUERY characters never reaches Gradio, which answers a URL over 64k
    with an HTTP 500 (httpx.InvalidURL while it builds the page's root URL). A page load is redirected to the
    shortened link, so the address bar (and every request the page makes with its query) is short; any other
    request goes on with the shortened query."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        short = shorten_query(query.decode("latin-1")) if len(query) > MAX_QUERY else None
        if short is None:
            await self.app(scope, receive, send)
        elif scope["method"] in ("GET", "HEAD"):
            await RedirectResponse("?" + short, status_code=307)(scope, receive, send)
        else:
            await self.app({**scope, "query_string": short.encode("latin-1")}, receive, send)


class QueueGate:
    """ASGI middleware: a request to join a full queue is refused as Gradio refuses it (HTTP 503, which the page shows
    as "This application is currently busy" and gradio_client raises as QueueError), before FastAPI parses it. Under
    overload refusals are most requests, and the Python each one runs on the event loop holds the GIL that the one
    model run needs between its torch calls: Gradio's own refusal (parsing, validation, a worker thread for its
    dependencies) slowed every served request."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == JOIN:
            queue = scope["app"].get_blocks()._queue  # Starlette puts Gradio's App there
            if queue.max_size is not None and len(queue) >= queue.max_size:
                detail = f"Queue is full. Max size is {queue.max_size} and size is {len(queue)}."
                await JSONResponse({"detail": detail}, status_code=503)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class NoUploads:
    """ASGI middleware: every upload is refused (HTTP 403) before Gradio reads it. The app takes no file from
    anyone (no component or endpoint reads one), and Gradio's /upload keeps any file of any size, unpruned, on the
    Space's disk."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") in UPLOADS:
            await PlainTextResponse("This app takes no uploads.", status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def monitoring() -> bool:
    """Whether Gradio's /monitoring pages are on: $ANATOMY_MONITORING=1; off by default, since anyone may read
    them (per-endpoint counts, and a request to /monitoring prints the dashboard's key to the log)."""
    return os.environ.get("ANATOMY_MONITORING", "").strip().lower() in ("1", "true", "yes")


class SessionConfigs(BlocksConfig):
    """Gradio's BlocksConfig, whose copies remember the configs of the page's own components. Gradio copies it for
    every new session and at once recomputes every component's config for that copy (`SessionState.__init__`):
    ~45 ms for a page of ~230 components (the page had that many; 57 now) on the event loop, at a visitor's first
    request. A component that no update has replaced in the session is the page's own, unchanged object, so its config
    is made once; each copy gets its own dicts, which Gradio changes in place (tests/test_hardening.py holds them
    equal to Gradio's)."""

    def __init__(self, root_block, made: dict | None = None):
        super().__init__(root_block)
        self._made = {} if made is None else made  # _id -> (the component, its config), shared by every copy

    def __copy__(self):
        new = SessionConfigs(self.root_block, self._made)
        new.__dict__.update(vars(super().__copy__()))  # Gradio's copy: the session's own blocks and events
        return new

    def config_for_block(self, _id, rendered_ids, block, renderable=None) -> dict:
        if rendered_ids or renderable is not None or self.root_block.blocks.get(_id) is not block:
            return BlocksConfig.config_for_block(_id, rendered_ids, block, renderable)
        made = self._made.get(_id)
        if made is None or made[0] is not block:
            made = self._made[_id] = (block, BlocksConfig.config_for_block(_id, [], block))
        config = dict(made[1])
        if "props" in config:
            config["props"] = dict(config["props"])
        return config


def _optional_tail(fn) -> int:
    """How many of `fn`'s last parameters default to None (0 for anything without a signature)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 0
    tail = 0
    for param in reversed(params):
        if param.default is not None:
            break
        tail += 1
    return tail


class Blocks(gr.Blocks):
    """gr.Blocks whose failed requests print nothing a visitor sent, whose sessions start without recomputing every
    component's config (SessionConfigs) and whose events postprocess only the outputs they name (those two only on
    OVERRIDDEN_GRADIO). Gradio prints the
    traceback of a failed request with its message, and some of its messages quote the values sent or made: too few
    values ("Received inputs: [...]"), a value no component could read or show (ComponentProcessingError), a value
    not among a Dropdown's choices (a gr.Error)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.overridden = overrides_apply()
        if not self.overridden:
            return
        configs = SessionConfigs(self)
        configs.__dict__.update(vars(self.default_config))
        self.default_config = configs

    def validate_inputs(self, block_fn, inputs) -> None:
        """Gradio's check, said without the values: the caller hears how many were missing. The handler's last
        parameters whose default is None may be left out (an endpoint's callers from before one was added, such as
        /translate's `prefix`): they reach it as None, its default."""
        missing = len(block_fn.inputs) - len(inputs)
        if 0 < missing <= _optional_tail(block_fn.fn):
            inputs.extend([None] * missing)
        elif missing > 0:
            raise gr.Error(f"This endpoint takes {len(block_fn.inputs)} values; the request sent {len(inputs)}.",
                           print_exception=False)

    async def postprocess_data(self, block_fn, predictions, state):
        """Gradio's, run on the outputs a handler named. Gradio fills every output left out of a returned dict with
        `gr.skip()`, then rebuilds that component and its config as for an update: ~1 ms an output, in the model's slot,
        and a translation's yields leave out 21 to 33 of its event's 37 outputs. What it sends is the same either way,
        and the session keeps a left-out component as it was (Gradio's rebuilt one has lost its value; else equal:
        tests/test_hardening.py)."""
        if not self.overridden or not isinstance(predictions, dict) or not predictions or \
                not all(isinstance(key, Block) for key in predictions):
            return await super().postprocess_data(block_fn, predictions, state)
        named = {key._id for key in predictions}
        kept = [i for i, block in enumerate(block_fn.outputs) if block._id in named]
        if len(kept) != len(predictions) or len(kept) == len(block_fn.outputs):  # Gradio's own checks and errors
            return await super().postprocess_data(block_fn, predictions, state)
        some = copy.copy(block_fn)
        some.outputs = [block_fn.outputs[i] for i in kept]
        made = await super().postprocess_data(some, predictions, state)
        out = [None if block.stateful else gr.skip() for block in block_fn.outputs]
        for i, value in zip(kept, made):
            out[i] = value
        return out

    async def process_api(self, *args, **kwargs):
        try:
            return await super().process_api(*args, **kwargs)
        except gr.Error as err:  # its message goes to the caller, who sent the values; not to the log
            err.print_exception = False
            raise
        except ComponentProcessingError as err:
            print("Traceback (most recent call last):\n" + "".join(traceback.format_tb(err.__traceback__))
                  + f"{type(err).__name__} (message not printed: it quotes the value)", file=sys.stderr, flush=True)
            raise gr.Error("A value sent or made could not be processed.", print_exception=False) from None


# ---- sessions: forgotten soon after their page is closed -------------------------------------------------------

SWEEP_S = 10
_heartbeats: dict[str, int] = {}  # session hash -> heartbeat streams open now


def session_grace() -> float:
    """Seconds a session is kept with no page connected and no request: $ANATOMY_SESSION_GRACE, default 60."""
    return number("ANATOMY_SESSION_GRACE", 60.0, 0.0, float)


class Heartbeats:
    """ASGI middleware: counts the heartbeat streams open per session. Gradio's page (and gradio_client) keeps one
    open for as long as the tab (the client) is open, reconnecting when it drops."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(HEARTBEAT):
            await self.app(scope, receive, send)
            return
        session = path[len(HEARTBEAT):]
        _heartbeats[session] = _heartbeats.get(session, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            _heartbeats[session] -= 1
            if not _heartbeats[session]:
                del _heartbeats[session]


def forget_sessions(app, grace: float) -> int:
    """Forget every session that has had no heartbeat stream and no request for `grace` seconds: its gr.State values
    (through Gradio's delete callbacks) and Gradio's copy of the page's configuration. How many were forgotten.

    Gradio keeps a session's state an hour after its tab closed, and the session itself (~0.3 MB: a copy of every
    component's configuration, with the last value each event sent) until 10,000 newer ones push it out; each
    gradio_client Client and each page load is a session of its own."""
    holder, queue = app.state_holder, app.get_blocks()._queue
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=grace)
    gone = [s for s, used in list(holder.time_last_used.items()) if used <= cutoff and s not in _heartbeats]
    for session in gone:
        holder.delete_state(session)
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
        if not queue.pending_event_ids_session.get(session):  # Gradio keeps an empty set per session forever
            queue.pending_event_ids_session.pop(session, None)
    return len(gone)


@contextlib.asynccontextmanager
async def lifespan(app):
    """While the server runs: forget closed sessions every SWEEP_S seconds (on the event loop, where Gradio reads and
    writes them)."""
    async def sweep() -> None:
        while True:
            await asyncio.sleep(SWEEP_S)
            forget_sessions(app, session_grace())

    task = asyncio.create_task(sweep())
    try:
        yield
    finally:
        task.cancel()


# Gradio's own views of the app (its API's documentation, the API recorder, settings), which a Space's "Use via API"
# opens: left to Gradio's page (anatomy/viewer/link.js leaves them alone too)
GRADIO_VIEW = re.compile(r"(^|&)view=(api|settings|api-recorder)(&|$)")


class OwnPage:
    """ASGI middleware: the app's own page (ui/document.py, made by `page(blocks)` once) at the root, in place of
    Gradio's: the page draws itself and calls Gradio's queue (ui/static/client.js); Gradio's page and its scripts
    load only for Gradio's own views (GRADIO_VIEW)."""

    def __init__(self, app, page):
        self.app = app
        self.page = page
        self.made: tuple | None = None  # (the blocks, their page's bytes)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or scope["path"] not in ("/", "") or \
                GRADIO_VIEW.search(scope.get("query_string", b"").decode("latin-1")):
            await self.app(scope, receive, send)
            return
        blocks = scope["app"].get_blocks()
        if self.made is None or self.made[0] is not blocks:
            self.made = (blocks, self.page(blocks).encode("utf-8"))
        await Response(self.made[1], media_type="text/html; charset=utf-8",
                       headers={"Cache-Control": "no-store"})(scope, receive, send)


def middleware(page) -> list[Middleware]:
    """The app's middleware: the page at the root (`page(blocks)`, its HTML), then the guards above."""
    return [Middleware(ShortLinks), Middleware(OwnPage, page=page), Middleware(NoUploads), Middleware(QueueGate),
            Middleware(Heartbeats)]


# ---- memory ----------------------------------------------------------------------------------------------------

M_ARENA_MAX = -8  # glibc's malloc.h


def bound_malloc() -> bool:
    """Two malloc arenas (as MALLOC_ARENA_MAX=2 would) unless $MALLOC_ARENA_MAX says otherwise; whether it was set.
    glibc gives a thread that allocates while others do an arena of its own, up to 8 per core, and keeps what is freed
    in it: requests run in Gradio's worker threads, each decoding with torch, and RSS grew with every thread that had
    ever decoded. Called before the server starts its threads; a no-op outside glibc."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        return ctypes.CDLL(None).mallopt(M_ARENA_MAX, 2) == 1
    except AttributeError:  # not glibc
        return False
