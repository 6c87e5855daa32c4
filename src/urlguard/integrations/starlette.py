"""The guarded target of a Starlette ``Request`` or ``WebSocket``, and ``{name:segment}``.

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

Importing this module registers the ``segment`` path convertor (Starlette's
``register_url_convertor``): a parameter that is exactly one segment of the
guarded target, decoded, with a ``%2F`` in it kept as ``/``. Where the policy
keeps encoded slashes, the guard hands Starlette the routing path (the
decoded path with a kept ``/`` written ``%2F``, ``%`` written ``%25``), so a
``segment`` parameter matches one segment and undoes those two escapes,
while any other parameter sees the text ``%2F``:

    import urlguard.integrations.starlette  # registers {name:segment}

    async def unit(request):
        return JSONResponse({"unit": request.path_params["unit"]})

    app = Starlette(
        routes=[Route("/units/{unit:segment}", unit)],  # /units/kg%2Fs -> "kg/s"
        middleware=[Middleware(StrictURLMiddleware,     # /units/kg/s does not match
                               routes={"/units/": {"encoded_slash": "keep"}})],
    )

``request.url_for("unit", unit="kg/s")`` gives ``/units/kg%2Fs``; a value the
guard would refuse (``"/etc"``, ``"a/.."``) raises ``ValueError`` instead.
"""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import HTTPConnection

from .._guard import segments as _segments
from .._url.errors import InvalidTarget
from .._url.target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = ["SegmentConvertor", "TargetUnavailable", "get_target", "get_violation"]


def get_target(conn: HTTPConnection) -> Target:
    """The :class:`~urlguard.Target` of this request or websocket; raises
    :class:`~urlguard.integrations.TargetUnavailable` when there is none."""
    return target_from(conn.scope)


def get_violation(conn: HTTPConnection) -> InvalidTarget | None:
    """The rule this request broke, when report-only mode let it through."""
    return violation_from(conn.scope)


class SegmentConvertor(Convertor[str]):
    """``{name:segment}``: one segment of the guarded target, decoded.

    Matches one segment of the path Starlette routes on (the routing path
    when the target keeps a ``/``, else the server's decoded path) and
    undoes the routing path's escapes, ``%2F`` and ``%25``: the value is the
    segment urlguard validated.
    """

    regex = "[^/]+"

    # The function itself, not a method calling it: one call less per match.
    convert = staticmethod(_segments.decode)

    def to_string(self, value: str) -> str:
        return _segments.url_text(value)


register_url_convertor("segment", SegmentConvertor())
