"""The echo apps of guarded_asgi and guarded_wsgi under a policy that keeps separators.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.kept_separators:asgi
    waitress-serve --listen 127.0.0.1:8000 e2e_apps.kept_separators:wsgi

Application-wide, ``%2F`` and ``%5C`` stay in a decoded segment and a raw
``\\`` is accepted (``Policy.browser`` with ``\\`` added), so the parts a kept
separator makes inside a segment are judged (``dot-segment``,
``empty-segment``, ``drive-letter``); the route ``/admin/`` rejects ``%2F``
again. ``mounted`` is the ASGI app below a Starlette ``Mount("/m", ...)``.
Every request that reaches an application gets the same JSON as in
guarded_asgi and guarded_wsgi.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route, WebSocketRoute

from e2e_apps import guarded_asgi, guarded_wsgi
from urlguard import Policy
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

POLICY = Policy.browser(raw_path_extra="[]|\\", encoded_slash="keep", encoded_backslash="keep")
ROUTES: dict[str, Any] = {"/admin/": {"encoded_slash": "reject"}}

asgi = Starlette(
    routes=[
        WebSocketRoute("/ws/{rest:path}", guarded_asgi.ws_echo),
        Route("/{rest:path}", guarded_asgi.echo, methods=guarded_asgi.METHODS),
    ],
    middleware=[Middleware(ASGIGuard, policy=POLICY, routes=ROUTES)],
    exception_handlers={404: guarded_asgi.unrouted},
)
asgi.router.redirect_slashes = False

# Starlette's Mount hands the app below it the raw_path as sent and root_path
# "/m"; it routes on the decoded path, as the guard must judge it.
mounted = Starlette(routes=[Mount("/m", app=asgi)])

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
    wsgi.wsgi_app, policy=POLICY, routes=ROUTES
)
