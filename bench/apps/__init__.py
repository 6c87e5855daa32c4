"""Hello-world Starlette and Flask apps for the benchmarks, the same handlers
behind each layer: bare, a no-op layer, or the guard, added the documented way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from flask import Flask
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from urlguard import InvalidTarget, asgi, wsgi
from urlguard._guard.allowed_hosts import HostCheck
from urlguard._url.host import Host
from urlguard._url.parser import PARSER
from urlguard._url.policy import DEFAULT_POLICY

HELLO = "Hello, world!"


class NoopASGI:
    """A pure-ASGI layer that does nothing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class NoopWSGI:
    """A WSGI layer that does nothing."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return self.app(environ, start_response)


class FloorASGI:
    """The least any guard does for a request that passes, with urlguard's own
    parser: one count, one Host verdict lookup, one parse, one store; a 400 for
    a target that breaks the default policy. Nothing decides around them: the
    gap from the no-op layer to this one is what checking costs at all, the gap
    from this one to the guard what the guard's decision costs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app, self.checked, self.hosts = app, 0, HostCheck(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.checked += 1
        host = PARSER.host_header(scope["headers"], self.hosts.known)
        if type(host) is not Host:
            host = self.hosts.verdict(host)
        try:
            scope["urlguard.target"] = PARSER.parse_split_target(
                scope["raw_path"], scope["query_string"], DEFAULT_POLICY, host
            )
        except InvalidTarget:
            await PlainTextResponse("400", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class FloorWSGI:
    """:class:`FloorASGI` for WSGI: the target and Host as gunicorn hands them
    over (ASCII ``str``), encoded once each."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app, self.checked, self.hosts = app, 0, HostCheck(None)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        self.checked += 1
        value = environ["HTTP_HOST"].encode("ascii")
        host = self.hosts.known.get(value) or self.hosts.verdict(value)
        try:
            environ["urlguard.target"] = PARSER.parse_target(
                environ["RAW_URI"].encode("ascii"), DEFAULT_POLICY, host
            )
        except InvalidTarget:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [b"400"]
        return self.app(environ, start_response)


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse(HELLO)


def starlette_app(layer: str, *, segment: bool = False, **guard: Any) -> Starlette:
    """The app behind ``layer`` (``bare``, ``noop`` or ``guarded`` with ``guard``'s options)."""
    middleware = {
        "bare": [],
        "noop": [Middleware(NoopASGI)],
        "floor": [Middleware(FloorASGI)],
        "guarded": [Middleware(asgi.StrictURLMiddleware, **guard)],
    }[layer]
    if segment:
        import urlguard.integrations.starlette  # noqa: F401  # registers {name:segment}
    wiki = "/wiki/{title:segment}" if segment else "/wiki/{title}"
    routes = [Route("/api/v1/users/{user_id:int}/orders", hello), Route(wiki, hello)]
    return Starlette(routes=routes, middleware=middleware)


def flask_app(layer: str, *, segment: bool = False, **guard: Any) -> Flask:
    """The same for Flask, the guard wrapping ``app.wsgi_app``."""
    app = Flask(f"hello_{layer}")
    if segment:
        from urlguard.integrations.flask import SegmentConverter

        app.url_map.converters["segment"] = SegmentConverter

    @app.get("/api/v1/users/<int:user_id>/orders")
    def orders(user_id: int) -> str:
        return HELLO

    @app.get("/wiki/<segment:title>" if segment else "/wiki/<title>")
    def wiki(title: str) -> str:
        return HELLO

    wrap = {
        "bare": None,
        "noop": NoopWSGI,
        "floor": FloorWSGI,
        "guarded": wsgi.StrictURLMiddleware,
    }[layer]
    if wrap is not None:
        app.wsgi_app = wrap(app.wsgi_app, **guard)  # type: ignore[method-assign]
    return app


# What the end-to-end part serves under uvicorn.
starlette_bare = starlette_app("bare")
starlette_guarded = starlette_app("guarded")
