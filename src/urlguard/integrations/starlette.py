"""The guarded target of a Starlette ``Request`` or ``WebSocket``.

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from urlguard.asgi import StrictURLMiddleware
from urlguard.integrations.starlette import get_target

async def echo(request):
    return JSONResponse({"segments": list(get_target(request).segments)})

app = Starlette(routes=[Route("/echo/{rest:path}", echo)],
                middleware=[Middleware(StrictURLMiddleware)])
"""

from __future__ import annotations

from starlette.requests import HTTPConnection

from .._errors import InvalidTarget
from .._target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = ["TargetUnavailable", "get_target", "get_violation"]


def get_target(conn: HTTPConnection) -> Target:
    """The :class:`~urlguard.Target` of this request or websocket; raises
    :class:`~urlguard.integrations.TargetUnavailable` when there is none."""
    return target_from(conn.scope)


def get_violation(conn: HTTPConnection) -> InvalidTarget | None:
    """The rule this request broke, when report-only mode let it through."""
    return violation_from(conn.scope)
