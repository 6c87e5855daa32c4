"""Starlette and FastAPI applications with ``segment`` route parameters, guarded.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.segment_routes:starlette_app
    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.segment_routes:fastapi_app

Both have the routes of the shared truth table (tests/segment_table.py),
each answering JSON ``{"route": name, **path_params}``, a mounted
sub-application for ``/sub``, and ``/ws/{room:segment}``, a websocket
sending ``{"room": ...}``; guarded by that table's policies. And
``default_app``: the same application under the default policy, which
refuses every ``%2F``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket

import urlguard.integrations.fastapi  # noqa: F401  # registers {name:segment}
from segment_table import with_table_policies
from urlguard.asgi import StrictURLMiddleware


def _answer(name: str) -> Any:
    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse({"route": name, **request.path_params})

    return endpoint


async def _room(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_json({"room": websocket.path_params["room"]})
    await websocket.close()


ROUTES = [
    ("/units/{unit:segment}", "units"),
    ("/units/{a}/{b}", "pair"),
    ("/repos/{owner:segment}/{name:segment}", "repo"),
    ("/files/{name:segment}/{rest:path}", "file"),
    ("/dirs/{name:segment}/", "dir"),
    ("/plain/{x}", "plain"),
    ("/split/{name}", "split"),
    ("/loose/{name:segment}", "loose"),
    ("/nul/{u:segment}", "nul"),
]


def starlette(routes: list[tuple[str, str]] = ROUTES, **guard: Any) -> Starlette:
    """The application, guarded with ``guard`` (by default: :data:`KEEP` and
    the shared table's per-route policies)."""
    with_table_policies(guard)
    sub = Starlette(routes=[Route("/s/{b:segment}", _answer("sub"))])
    return Starlette(
        routes=[
            *(Route(path, _answer(name), name=name) for path, name in routes),
            Mount("/sub", sub),
            WebSocketRoute("/ws/{room:segment}", _room),
        ],
        middleware=[Middleware(StrictURLMiddleware, **guard)],
    )


def fastapi(routes: list[tuple[str, str]] = ROUTES, **guard: Any) -> FastAPI:
    with_table_policies(guard)
    app = FastAPI()
    app.add_middleware(StrictURLMiddleware, **guard)
    router = APIRouter()
    for path, name in routes:
        # Added to an included router, so that FastAPI's own routing is used.
        router.add_api_route(path, _answer(name), name=name)
    app.include_router(router)
    sub = FastAPI()
    sub.add_api_route("/s/{b:segment}", _answer("sub"))
    app.mount("/sub", sub)
    app.add_api_websocket_route("/ws/{room:segment}", _room)
    return app


starlette_app = starlette()
fastapi_app = fastapi()
default_app = starlette(policy=None)
