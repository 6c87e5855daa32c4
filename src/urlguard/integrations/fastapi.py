"""FastAPI dependencies for the guarded target.

    from fastapi import FastAPI
    from urlguard.asgi import StrictURLMiddleware
    from urlguard.integrations.fastapi import GuardedTarget

    app = FastAPI()
    app.add_middleware(StrictURLMiddleware)

    @app.get("/echo/{rest:path}")
    async def echo(target: GuardedTarget) -> dict[str, list[str]]:
        return {"segments": list(target.segments)}

Importing this module registers ``{name:segment}``, a path parameter that
is one segment of the guarded target, decoded (``/units/kg%2Fs`` gives
``"kg/s"``); see ``urlguard.integrations.starlette``. It is a ``str``
parameter: ``Path(...)`` validators and the OpenAPI schema apply.

``GuardedTarget`` raises :class:`~urlguard.integrations.TargetUnavailable`
(a 500: the application is misconfigured) when the middleware is missing.
In report-only mode, use ``OptionalTarget`` and ``Violation``: a request
that broke a rule reaches the handler with no target.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from .._url.errors import InvalidTarget
from .._url.target import Target
from . import TargetUnavailable, optional_target_from, target_from, violation_from
from . import starlette as _starlette  # noqa: F401  # registers the {name:segment} convertor

__all__ = [
    "GuardedTarget",
    "OptionalTarget",
    "TargetUnavailable",
    "Violation",
    "optional_target_dependency",
    "target_dependency",
    "violation_dependency",
]


# async: FastAPI runs plain-def dependencies in a thread pool.
async def target_dependency(conn: HTTPConnection) -> Target:
    """The :class:`~urlguard.Target` of the request or websocket."""
    return target_from(conn.scope)


async def optional_target_dependency(conn: HTTPConnection) -> Target | None:
    """The target, or ``None`` (report-only mode let a violation through)."""
    return optional_target_from(conn.scope)


async def violation_dependency(conn: HTTPConnection) -> InvalidTarget | None:
    """The rule the request broke when report-only mode let it through."""
    return violation_from(conn.scope)


GuardedTarget = Annotated[Target, Depends(target_dependency)]
OptionalTarget = Annotated[Target | None, Depends(optional_target_dependency)]
Violation = Annotated[InvalidTarget | None, Depends(violation_dependency)]
