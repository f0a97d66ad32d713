"""What the app adds to Gradio's server: over-long links shortened before Gradio reads them, and failed requests that
never print what a visitor sent."""
from __future__ import annotations

import sys
import traceback

import gradio as gr
from gradio.exceptions import ComponentProcessingError
from starlette.middleware import Middleware
from starlette.responses import RedirectResponse

from anatomy.inputs import MAX_QUERY, shorten_query


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


MIDDLEWARE = [Middleware(ShortLinks)]


class Blocks(gr.Blocks):
    """gr.Blocks whose failed requests print nothing a visitor sent. Gradio prints the traceback of a failed request
    with its message, and some of its messages quote the values sent or made: too few values ("Received inputs:
    [...]"), a value no component could read or show (ComponentProcessingError), a value not among a Dropdown's
    choices (a gr.Error)."""

    def validate_inputs(self, block_fn, inputs) -> None:
        """Gradio's check, said without the values: the caller hears how many were missing."""
        if len(inputs) < len(block_fn.inputs):
            raise gr.Error(f"This endpoint takes {len(block_fn.inputs)} values; the request sent {len(inputs)}.",
                           print_exception=False)

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
