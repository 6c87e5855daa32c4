"""A hello-world Starlette app: ``bare``, behind a no-op ASGI layer, and guarded.

The guard is added the documented way (``Middleware(StrictURLMiddleware)``),
so it sits where any pure-ASGI middleware would, inside Starlette's error
handling. ``noop`` puts a pass-through pure-ASGI layer in the same place: the
floor for any middleware.

    uvicorn bench.apps.starlette_hello:guarded --http httptools
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from urlguard.asgi import StrictURLMiddleware

HELLO = "Hello, world!"


async def orders(request: Request) -> PlainTextResponse:
    return PlainTextResponse(HELLO)


async def wiki(request: Request) -> PlainTextResponse:
    return PlainTextResponse(HELLO)


class NoopMiddleware:
    """A pure-ASGI layer that does nothing: the cost of being a middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def make_app(layer: str) -> Starlette:
    """The app with ``layer`` in front: ``"bare"``, ``"noop"`` or ``"guarded"``."""
    middleware = {
        "bare": [],
        "noop": [Middleware(NoopMiddleware)],
        "guarded": [Middleware(StrictURLMiddleware)],
    }[layer]
    routes = [
        Route("/api/v1/users/{user_id:int}/orders", orders),
        Route("/wiki/{title}", wiki),
    ]
    return Starlette(routes=routes, middleware=middleware)


bare = make_app("bare")
noop = make_app("noop")
guarded = make_app("guarded")
