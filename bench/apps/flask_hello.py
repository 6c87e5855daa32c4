"""A hello-world Flask app: ``bare``, behind a no-op WSGI layer, behind a layer
that stores an answer without judging, and guarded.

The guard wraps ``app.wsgi_app``, as the Flask integration documents;
``noop`` and ``stored`` (see ``bench.apps``) wrap it with their layer
instead. Each variant is its own Flask application, so the servers and the
in-process bench load them side by side.

    gunicorn --workers 1 --worker-class sync bench.apps.flask_hello:guarded
"""

from __future__ import annotations

from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from flask import Flask

from urlguard import Target
from urlguard.wsgi import StrictURLMiddleware

from . import first_sight

HELLO = "Hello, world!"


class NoopMiddleware:
    """A WSGI layer that does nothing: the cost of being a middleware."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return self.app(environ, start_response)


class StoredMiddleware:
    """Reads the raw target as the guard does and stores the ``Target`` parsed
    when it was first seen: the cost of a guard before any judging."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self.seen: dict[str, Target | None] = {}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        raw = environ.get("RAW_URI")
        if raw is not None:
            try:
                target = self.seen[raw]
            except KeyError:
                target = self.seen[raw] = first_sight(raw)
            if target is not None:
                environ["urlguard.target"] = target
        return self.app(environ, start_response)


def make_app(layer: str, guard: type[StrictURLMiddleware] = StrictURLMiddleware) -> Flask:
    """The app with ``layer`` in front: ``"bare"``, ``"noop"``, ``"stored"`` or
    ``"guarded"`` (by ``guard``: another version's middleware, for bench.adapters)."""
    app = Flask(f"hello_{layer}")

    @app.get("/api/v1/users/<int:user_id>/orders")
    def orders(user_id: int) -> str:
        return HELLO

    @app.get("/wiki/<title>")
    def wiki(title: str) -> str:
        return HELLO

    if layer == "noop":
        app.wsgi_app = NoopMiddleware(app.wsgi_app)  # type: ignore[method-assign]
    elif layer == "stored":
        app.wsgi_app = StoredMiddleware(app.wsgi_app)  # type: ignore[method-assign]
    elif layer == "guarded":
        app.wsgi_app = guard(app.wsgi_app)  # type: ignore[method-assign]
    elif layer != "bare":
        raise ValueError(f"layer must be bare, noop, stored or guarded, not {layer!r}")
    return app


bare = make_app("bare")
noop = make_app("noop")
stored = make_app("stored")
guarded = make_app("guarded")
