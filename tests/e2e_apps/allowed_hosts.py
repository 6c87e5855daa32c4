"""The echo apps of guarded_asgi and guarded_wsgi behind a guard with an allow-list.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.allowed_hosts:asgi
    waitress-serve --listen 127.0.0.1:8000 e2e_apps.allowed_hosts:wsgi

``allowed_hosts`` is :data:`ALLOWED`: the loopback address the tests connect
to, and every name below ``example.com``. Any other valid host is
``host-not-allowed``; an invalid one is still ``bad-host``. Every request that
reaches an application gets the same JSON as in guarded_asgi and guarded_wsgi.
"""

from __future__ import annotations

from flask import Flask
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route, WebSocketRoute

from e2e_apps import guarded_asgi, guarded_wsgi
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

ALLOWED = ["127.0.0.1", "*.example.com"]

asgi = Starlette(
    routes=[
        WebSocketRoute("/ws/{rest:path}", guarded_asgi.ws_echo),
        Route("/{rest:path}", guarded_asgi.echo, methods=guarded_asgi.METHODS),
    ],
    middleware=[Middleware(ASGIGuard, allowed_hosts=ALLOWED)],
    exception_handlers={404: guarded_asgi.unrouted},
)
asgi.router.redirect_slashes = False

wsgi = Flask(__name__)
wsgi.url_map.strict_slashes = False
for rule, defaults in (("/", {"rest": ""}), ("/<path:rest>", None)):
    wsgi.add_url_rule(
        rule,
        view_func=guarded_wsgi.echo,
        defaults=defaults,
        methods=guarded_wsgi.METHODS,
        provide_automatic_options=False,
    )
wsgi.register_error_handler(404, guarded_wsgi.unrouted)
wsgi.wsgi_app = WSGIGuard(  # type: ignore[method-assign]
    wsgi.wsgi_app, allowed_hosts=ALLOWED
)
