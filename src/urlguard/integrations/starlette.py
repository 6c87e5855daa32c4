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

Importing this module registers the ``segment`` path convertor: a
parameter that is exactly one segment of the guarded target, decoded, with
a ``%2F`` in it kept as ``/``. The route declares it; nothing else is
configured:

    import urlguard.integrations.starlette  # registers {name:segment}

    async def unit(request):
        return JSONResponse({"unit": request.path_params["unit"]})

    Route("/units/{unit:segment}", unit)   # /units/kg%2Fs -> "kg/s"
                                           # /units/kg/s does not match it

``request.url_for("unit", unit="kg/s")`` gives ``/units/kg%2Fs``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, MutableMapping
from contextvars import ContextVar
from typing import Any

import starlette.routing
from starlette._utils import get_route_path as _starlette_route_path
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import HTTPConnection
from starlette.routing import Match, Route, WebSocketRoute

from .. import _segments
from .._errors import InvalidTarget
from .._target import Target
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

    Matches one segment of the path the router sees: with a ``%2F`` in the
    target, the guard's routing view, where a kept ``/`` cannot end the
    segment; else the server's decoded path, which is then the guarded
    target's segments joined by ``/``.
    """

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        # Only text cut from a view stands for a kept '/' by U+0000; on the
        # server's path, under a policy that allows U+0000, it is itself.
        return _segments.decode(value) if _on_view.get() else value

    def to_string(self, value: str) -> str:
        return _segments.url_text(value)


register_url_convertor("segment", SegmentConvertor())


class _StarletteRouter:
    """Starlette's and FastAPI's router, asked about segment routes by the guard."""

    # The guard may sit inside the application (add_middleware: Starlette
    # put itself at scope["app"]) or wrap it (then follow .app, as every
    # Starlette middleware stores it, down to the application).
    _DEPTH = 32

    def find(self, app: object, carrier: MutableMapping[str, Any]) -> object | None:
        for start in (carrier.get("app"), app):
            node = start
            for _ in range(self._DEPTH):
                if node is None:
                    break
                router = getattr(node, "router", None)
                if isinstance(router, starlette.routing.Router):
                    return router
                if isinstance(node, starlette.routing.Router):
                    return node
                node = getattr(node, "app", None)
        return None

    def declares(self, router: Any) -> bool:
        if any(_declares(route) for route in router.routes):
            _route_on_views()
            return True
        return False

    def claims(self, router: Any, carrier: MutableMapping[str, Any], view: str) -> bool:
        scope = dict(carrier)
        scope[_segments.VIEW_KEY] = view
        return _claims(router.routes, scope, {}, view.count(_segments.SLASH))


def _declares(route: Any) -> bool:
    convertors = getattr(route, "param_convertors", None) or {}
    if any(isinstance(c, SegmentConvertor) for c in convertors.values()):
        return True
    inner = getattr(route, "routes", None) or ()
    if not inner and callable(getattr(route, "effective_candidates", None)):
        inner = route.effective_candidates()  # a FastAPI included router
    return any(_declares(r) for r in inner)


def _claims(routes: Iterable[Any], scope: dict[str, Any], kinds: dict[str, Any], kept: int) -> bool:
    """Route ``scope`` as the router does (the first full match, else the
    first partial one), down through mounts and included routers, and check
    what it produced: every kept ``/`` went to a ``segment`` parameter.

    ``kinds`` maps each parameter name met on the way to its convertor;
    ``kept`` is the number of kept ``/`` in the view. Counting them in the
    ``segment`` parameters' values, not only looking for :data:`SLASH`
    elsewhere, makes this fail closed if some route read the server's path
    instead of the view (a ``segment`` value then holds no ``/`` at all).
    """
    partial = None
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return _claimed(route, {**scope, **child}, kinds, kept)
        if match is Match.PARTIAL and partial is None:
            partial = route, child
    if partial is not None:
        return _claimed(partial[0], {**scope, **partial[1]}, kinds, kept)
    return False  # no route: the %2F stays an encoded-slash


def _claimed(route: Any, scope: dict[str, Any], kinds: dict[str, Any], kept: int) -> bool:
    kinds = {**kinds, **(getattr(route, "param_convertors", None) or {})}
    if _segments.SLASH in scope.get("root_path", ""):
        return False  # a mount's own parameter took it: its root_path would hold it
    candidates = getattr(route, "effective_candidates", None)
    if callable(candidates):  # a FastAPI included router: its routes match below it
        return _claims(candidates(), scope, kinds, kept)
    if not isinstance(route, Route | WebSocketRoute) and not hasattr(route, "original_route"):
        routes = getattr(route, "routes", None)
        if routes:
            return _claims(routes, scope, kinds, kept)
        # A mounted application that is no router sees the server's path.
        return False
    params = scope.get("path_params") or {}
    if not _segments.claimed(params.values()):
        return False
    taken = sum(
        value.count("/")
        for name, value in params.items()
        if isinstance(kinds.get(name), SegmentConvertor) and isinstance(value, str)
    )
    return taken == kept


_ROUTING_MODULES = ("starlette.routing", "fastapi.routing")


#: Whether the route now matching cut its parameters from a view: every
#: route calls ``get_route_path`` right before converting what it matched.
_on_view: ContextVar[bool] = ContextVar("urlguard_on_view", default=False)


def _route_path(scope: MutableMapping[str, Any]) -> str:
    """Starlette's ``get_route_path``, on the guard's routing view when there is one."""
    view = scope.get(_segments.VIEW_KEY)
    _on_view.set(view is not None)
    if view is None:
        return _starlette_route_path(scope)
    return _starlette_route_path({"path": view, "root_path": scope.get("root_path", "")})


def _route_on_views() -> None:
    """Make Starlette's and FastAPI's routes match on the routing view where
    a scope holds one.

    Their routes read the path through ``get_route_path``, which each
    routing module imports by name; this is the one place to hand them the
    view (the server's ``path`` is never changed). Done when the guard first
    finds a router that declares a ``segment`` parameter, so that a process
    that has none routes exactly as before. If a route read the path some other way, ``claims``
    would find no ``segment`` value holding the kept ``/`` and refuse.
    """
    for name in _ROUTING_MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "get_route_path", None) is _starlette_route_path:
            setattr(module, "get_route_path", _route_path)  # noqa: B010


_segments.register(_StarletteRouter())
