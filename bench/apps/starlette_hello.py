"""A hello-world Starlette app: ``bare``, behind a no-op ASGI layer, behind a
layer that stores an answer without judging, and guarded.

The guard is added the documented way (``Middleware(StrictURLMiddleware)``),
so it sits where any pure-ASGI middleware would, inside Starlette's error
handling. ``noop`` puts a pass-through pure-ASGI layer in the same place: the
floor for any middleware. ``stored`` (see ``bench.apps``) is the floor for a
guard.

    uvicorn bench.apps.starlette_hello:guarded --http httptools
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from urlguard import Target
from urlguard.asgi import StrictURLMiddleware

from . import first_sight

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


class StoredMiddleware:
    """Reads the raw target as the guard does and stores the ``Target`` parsed
    when it was first seen: the cost of a guard before any judging."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: dict[tuple[bytes, bytes], Target | None] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http" or kind == "websocket":
            key = (scope["raw_path"], scope["query_string"])
            try:
                target = self.seen[key]
            except KeyError:
                raw_path, query = key
                raw = raw_path + b"?" + query if query else raw_path
                target = self.seen[key] = first_sight(raw)
            if target is not None:
                scope["urlguard.target"] = target
        await self.app(scope, receive, send)


def make_app(layer: str, guard: type[StrictURLMiddleware] = StrictURLMiddleware) -> Starlette:
    """The app with ``layer`` in front: ``"bare"``, ``"noop"``, ``"stored"`` or
    ``"guarded"`` (by ``guard``: another version's middleware, for bench.adapters)."""
    middleware = {
        "bare": [],
        "noop": [Middleware(NoopMiddleware)],
        "stored": [Middleware(StoredMiddleware)],
        "guarded": [Middleware(guard)],
    }[layer]
    routes = [
        Route("/api/v1/users/{user_id:int}/orders", orders),
        Route("/wiki/{title}", wiki),
    ]
    return Starlette(routes=routes, middleware=middleware)


bare = make_app("bare")
noop = make_app("noop")
stored = make_app("stored")
guarded = make_app("guarded")
