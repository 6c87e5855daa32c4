"""A Flask app behind ``urlguard.wsgi.StrictURLMiddleware`` that echoes the stored target.

    gunicorn -b 127.0.0.1:8000 e2e_apps.guarded_wsgi:app

Every request that reaches the application, routed or not (``OPTIONS *``
matches no route), gets ``200`` (``405`` for ``CONNECT``) and JSON:
``segments`` and ``query`` decoded by urlguard, ``raw`` the target urlguard
read (latin-1, one character per byte; ``null`` when it stored none),
``host`` and ``port`` the request's host as urlguard validated it, and the
server's raw-target and Host keys. ``/files/`` keeps ``%2F`` in segments (a per-route
policy); everything else uses the strict default.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, jsonify, request

from e2e_apps.stored import stored
from urlguard.wsgi import StrictURLMiddleware

METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT"]
# A 2xx to CONNECT would turn the connection into a tunnel (RFC 9110 §9.3.6):
# the app reports, but refuses to tunnel.
STATUS = {"CONNECT": 405}


def report(*, routed: bool) -> dict[str, Any]:
    """What urlguard stored and what the server handed over, as JSON-able data."""
    environ = request.environ
    target = environ.get("urlguard.target")
    return {
        "app": "flask",
        "routed": routed,
        **stored(target),
        "server": {
            key: environ.get(key)
            for key in (
                "RAW_URI",
                "REQUEST_URI",
                "PATH_INFO",
                "QUERY_STRING",
                "SCRIPT_NAME",
                "HTTP_HOST",
                "SERVER_PROTOCOL",
            )
        },
    }


def echo(rest: str) -> tuple[Response, int]:
    return jsonify(report(routed=True)), STATUS.get(request.method, 200)


def unrouted(exc: Exception) -> tuple[Response, int]:
    """No route matched: still report, with 200, so "the application was reached" shows."""
    return jsonify(report(routed=False)), STATUS.get(request.method, 200)


def echo_app(**guard: Any) -> Flask:
    """The echo app behind a guard made with the options ``guard``."""
    made = Flask(__name__)
    # A request for the mount point itself has an empty PATH_INFO: answer it, no redirect to '/'.
    made.url_map.strict_slashes = False
    for rule, defaults in (("/", {"rest": ""}), ("/<path:rest>", None)):
        made.add_url_rule(
            rule,
            view_func=echo,
            defaults=defaults,
            methods=METHODS,
            provide_automatic_options=False,
        )
    made.register_error_handler(404, unrouted)
    made.wsgi_app = StrictURLMiddleware(made.wsgi_app, **guard)  # type: ignore[method-assign]
    return made


app = echo_app(routes={"/files/": {"encoded_slash": "keep"}})
