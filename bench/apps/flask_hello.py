"""A hello-world Flask app, bare, behind a no-op layer, or guarded (the guard
wraps ``app.wsgi_app``, as the Flask integration documents).

    gunicorn --workers 1 bench.apps.flask_hello:guarded
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from flask import Flask

from urlguard.wsgi import StrictURLMiddleware

HELLO = "Hello, world!"


class NoopMiddleware:
    """A WSGI layer that does nothing."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return self.app(environ, start_response)


def make_app(
    layer: str,
    parser: ModuleType | None = None,
    *,
    segment: bool = False,
    allowed_hosts: list[str] | None = None,
) -> Flask:
    """The app with ``layer`` (``bare``, ``noop`` or ``guarded``) in front; the
    guard gets ``parser=`` only when one is given, as in starlette_hello.
    ``segment``: the wiki route declares ``<segment:title>`` (bench/segments.py);
    ``allowed_hosts``: the guard's allow-list."""
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

    options: dict[str, Any] = {} if parser is None else {"parser": parser}
    if allowed_hosts is not None:
        options["allowed_hosts"] = allowed_hosts
    if layer == "noop":
        app.wsgi_app = NoopMiddleware(app.wsgi_app)  # type: ignore[method-assign]
    elif layer == "guarded":
        app.wsgi_app = StrictURLMiddleware(app.wsgi_app, **options)  # type: ignore[method-assign]
    elif layer != "bare":
        raise ValueError(f"layer must be bare, noop or guarded, not {layer!r}")
    return app


bare = make_app("bare")
noop = make_app("noop")
guarded = make_app("guarded")
