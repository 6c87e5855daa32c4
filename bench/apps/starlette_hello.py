"""A hello-world Starlette app, bare, behind a no-op layer, or guarded: the
guard added the documented way, ``Middleware(StrictURLMiddleware)``, where
the no-op layer sits too.

    uvicorn bench.apps.starlette_hello:guarded --http httptools
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from urlguard.asgi import StrictURLMiddleware

HELLO = "Hello, world!"


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse(HELLO)


class NoopMiddleware:
    """A pure-ASGI layer that does nothing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def make_app(
    layer: str,
    parser: ModuleType | None = None,
    *,
    segment: bool = False,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The app with ``layer`` (``bare``, ``noop`` or ``guarded``) in front. The
    guard gets ``parser=`` only when one is given: older revisions, measured
    by bench.ab, have no such keyword. ``segment``: the wiki route declares
    ``{title:segment}`` (bench/segments.py); ``allowed_hosts``: the guard's allow-list."""
    options: dict[str, Any] = {} if parser is None else {"parser": parser}
    if allowed_hosts is not None:
        options["allowed_hosts"] = allowed_hosts
    middleware = {
        "bare": [],
        "noop": [Middleware(NoopMiddleware)],
        "guarded": [Middleware(StrictURLMiddleware, **options)],
    }[layer]
    if segment:
        import urlguard.integrations.starlette  # noqa: F401  # registers {name:segment}
    wiki = "/wiki/{title:segment}" if segment else "/wiki/{title}"
    routes = [Route("/api/v1/users/{user_id:int}/orders", hello), Route(wiki, hello)]
    return Starlette(routes=routes, middleware=middleware)


bare = make_app("bare")
noop = make_app("noop")
guarded = make_app("guarded")
