"""A Starlette app behind ``urlguard.asgi.StrictURLMiddleware`` that echoes the stored target.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.guarded_asgi:app

Every HTTP request that reaches the application, routed or not (an
absolute-form target or ``OPTIONS *`` matches no route), gets ``200`` (``405``
for ``CONNECT``) and JSON: ``segments`` and ``query`` decoded by urlguard, ``raw`` the target
urlguard read (latin-1, one character per byte; ``null`` when it stored none),
``host`` and ``port`` the request's host as urlguard validated it, and what
the server put in the scope (its ``host`` headers among them). ``/ws/...`` is a websocket that sends
the same JSON and closes. ``/files/`` keeps ``%2F`` in segments (a per-route
policy); everything else uses the strict default.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from e2e_apps.stored import stored
from urlguard.asgi import StrictURLMiddleware

METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT"]
# A 2xx to CONNECT would turn the connection into a tunnel (RFC 9110 §9.3.6):
# the app reports, but refuses to tunnel.
STATUS = {"CONNECT": 405}


def report(conn: HTTPConnection, *, routed: bool) -> dict[str, Any]:
    """What urlguard stored and what the server handed over, as JSON-able data."""
    scope = conn.scope
    target = scope.get("urlguard.target")
    raw_path = scope.get("raw_path")
    return {
        "app": "starlette",
        "routed": routed,
        **stored(target),
        "server": {
            "path": scope.get("path"),
            "raw_path": None if raw_path is None else raw_path.decode("latin-1"),
            "query_string": scope.get("query_string", b"").decode("latin-1"),
            "root_path": scope.get("root_path", ""),
            "host": [
                value.decode("latin-1") for name, value in scope["headers"] if name == b"host"
            ],
            "http_version": scope.get("http_version"),
        },
    }


async def echo(request: Request) -> Response:
    return JSONResponse(report(request, routed=True), STATUS.get(request.method, 200))


async def unrouted(request: Request, exc: Exception) -> Response:
    """No route matched (``*``, absolute-form on some servers): still report, with 200,
    so that "the application was reached" is visible; other HTTP errors stay as they are."""
    if isinstance(exc, HTTPException) and exc.status_code != 404:
        return Response(exc.detail, status_code=exc.status_code)
    return JSONResponse(report(request, routed=False), STATUS.get(request.method, 200))


async def ws_echo(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_json(report(websocket, routed=True))
    await websocket.close()


def echo_app(**guard: Any) -> Starlette:
    """The echo app behind a guard made with the options ``guard``."""
    made = Starlette(
        routes=[
            WebSocketRoute("/ws/{rest:path}", ws_echo),
            Route("/{rest:path}", echo, methods=METHODS),
        ],
        middleware=[Middleware(StrictURLMiddleware, **guard)],
        exception_handlers={404: unrouted},
    )
    # A request for the mount point itself has the route path "": answer it, no redirect to '/'.
    made.router.redirect_slashes = False
    return made


app = echo_app(routes={"/files/": {"encoded_slash": "keep"}})
