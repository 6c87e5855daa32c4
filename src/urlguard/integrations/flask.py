"""The guarded target of the current Flask request, and ``<segment:name>`` routes.

from flask import Flask
from urlguard.integrations.flask import get_target
from urlguard.wsgi import StrictURLMiddleware

app = Flask(__name__)
app.wsgi_app = StrictURLMiddleware(app.wsgi_app)

@app.get("/echo/<path:rest>")
def echo(rest):
    return {"segments": list(get_target().segments)}

A ``segment`` route parameter is exactly one segment of the guarded target,
decoded, with a ``%2F`` in it kept as ``/``. werkzeug keeps converters per
URL map, so an application registers it with one line, as any werkzeug
converter; a route that names it without that line fails at ``app.route``
(werkzeug's ``LookupError``). The route declares it; nothing else is
configured:

    from urlguard.integrations.flask import SegmentConverter

    app.url_map.converters["segment"] = SegmentConverter

    @app.get("/units/<segment:unit>")   # /units/kg%2Fs -> "kg/s"
    def unit(unit):                     # /units/kg/s does not match it
        return {"unit": unit}

``url_for("unit", unit="kg/s")`` gives ``/units/kg%2Fs``.
"""

from __future__ import annotations

import types
from collections.abc import Callable, MutableMapping
from contextvars import ContextVar
from typing import Any, Final

from flask import Flask, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter, Map, MapAdapter, RoutingException

from .. import _segments
from .._errors import InvalidTarget
from .._target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = ["SegmentConverter", "TargetUnavailable", "get_target", "get_violation"]


def get_target() -> Target:
    """The :class:`~urlguard.Target` of the current request (from
    ``flask.request.environ``); raises
    :class:`~urlguard.integrations.TargetUnavailable` when there is none."""
    return target_from(request.environ)


def get_violation() -> InvalidTarget | None:
    """The rule the current request broke, when report-only mode let it through."""
    return violation_from(request.environ)


class SegmentConverter(BaseConverter):
    """``<segment:name>``: one segment of the guarded target, decoded.

    Matches one segment of the path werkzeug routes on: with a ``%2F`` in
    the target, the guard's routing view, where a kept ``/`` cannot end the
    segment; else the server's decoded ``PATH_INFO``, which is then the
    guarded target's segments joined by ``/``.

        app.url_map.converters["segment"] = SegmentConverter
    """

    regex = "[^/]+"
    part_isolating = True

    def to_python(self, value: str) -> str:
        # Only text cut from a view stands for a kept '/' by U+0000; on the
        # server's path, under a policy that allows U+0000, it is itself.
        return _segments.decode(value) if _ON_VIEW.get() else value

    def to_url(self, value: Any) -> str:
        return _segments.url_text(value)


#: Marks a URL map that routes on the guard's view (see :func:`_route_on_views`).
_ROUTES_ON_VIEWS: Final = "_urlguard_routes_on_views"

#: Set while an adapter bound to a view matches it (see :func:`_match_on_view`).
_ON_VIEW: ContextVar[bool] = ContextVar("urlguard_flask_on_view", default=False)


def _match_on_view(match: Callable[..., Any]) -> Callable[..., Any]:
    """An adapter's ``match``, converting as on a view when it matches its
    own ``path_info`` (the view); a ``path_info`` passed in is not one."""

    def on_view(path_info: str | None = None, *args: Any, **kwargs: Any) -> Any:
        token = _ON_VIEW.set(path_info is None)
        try:
            return match(path_info, *args, **kwargs)
        finally:
            _ON_VIEW.reset(token)

    return on_view


def _route_on_views(url_map: Map) -> None:
    """Make ``url_map`` match on the routing view where an environ holds one.

    Flask binds the map to each request's environ
    (``url_map.bind_to_environ``), and the adapter it gets back matches its
    ``path_info``, which werkzeug took from ``PATH_INFO``. Here, on this one
    map (so on this one application), the adapter's ``path_info`` becomes
    the view when the environ holds one; ``PATH_INFO`` itself is never
    changed, and a request without a view is bound exactly as before. Done
    when the guard first finds segment routes in the map, before its trial
    match, so that the guard's trial match and Flask's own match take the
    same path; an application without segment routes is never wrapped.
    (Two first requests at once may wrap it twice, to the same effect.)
    """
    if getattr(url_map, _ROUTES_ON_VIEWS, False):
        return
    bind: Callable[..., MapAdapter] = url_map.bind_to_environ

    def bind_to_environ(self: Map, environ: Any, *args: Any, **kwargs: Any) -> MapAdapter:
        adapter = bind(environ, *args, **kwargs)
        # Flask passes the environ; werkzeug also takes a request, as here.
        carrier = environ if isinstance(environ, dict) else environ.environ
        view = carrier.get(_segments.VIEW_KEY)
        if view is not None:
            adapter.path_info = view
            # Flask matches later (its request context), and werkzeug calls
            # the converters there: the flag must be set around that call.
            adapter.match = _match_on_view(adapter.match)  # type: ignore[method-assign]
        return adapter

    url_map.bind_to_environ = types.MethodType(bind_to_environ, url_map)  # type: ignore[method-assign]
    setattr(url_map, _ROUTES_ON_VIEWS, True)


class _FlaskRouter:
    """A Flask application's URL map, asked about segment routes by the guard."""

    # Wrapping middlewares store the application they wrap at .app (werkzeug's
    # ProxyFix, SharedDataMiddleware, ...); follow them this far at most.
    _DEPTH: Final = 32

    def find(self, app: object, carrier: MutableMapping[str, Any]) -> object | None:
        # Flask puts nothing in the environ before it routes: the application
        # is found from the guarded one, never from the carrier.
        node: object = app
        for _ in range(self._DEPTH):
            if isinstance(node, Flask):
                return node
            if isinstance(node, types.MethodType):  # app.wsgi_app, a bound method
                node = node.__self__
                continue
            if hasattr(node, "mounts"):
                # A dispatcher (werkzeug's DispatcherMiddleware) sends a path to
                # one of several applications, each below its own SCRIPT_NAME:
                # no one map routes what the guard saw. Guard each application.
                return None
            node = getattr(node, "app", None)
            if node is None:
                return None
        return None

    def declares(self, router: Any) -> bool:
        if any(_segment_names(rule._converters) for rule in router.url_map.iter_rules()):
            _route_on_views(router.url_map)
            return True
        return False

    def claims(self, router: Any, carrier: MutableMapping[str, Any], view: str) -> bool:
        """Match ``view`` as Flask will (its own URL adapter for this
        environ). A 404 or a 405 is not a claim, nor is a redirect: werkzeug
        builds its URL from the path it matched, where a kept ``/`` would go
        out as ``%00`` (RFC 3986 §2.1), not as the ``%2F`` it came as.

        Every kept ``/`` must be in a ``segment`` value: counting them, not
        only looking for :data:`~urlguard._segments.SLASH` in the others,
        fails closed if the map matched the server's path instead of the
        view (a ``segment`` value then holds no ``/`` at all)."""
        environ = dict(carrier)
        environ[_segments.VIEW_KEY] = view
        try:
            adapter = router.create_url_adapter(router.request_class(environ))
            if adapter is None:
                return False
            rule, args = adapter.match(return_rule=True)
        except (HTTPException, RoutingException):
            return False
        if not _segments.claimed(args.values()):
            return False
        taken = sum(
            value.count("/")
            for value in (args[name] for name in _segment_names(rule._converters))
            if isinstance(value, str)
        )
        return taken == view.count(_segments.SLASH)


def _segment_names(converters: dict[str, BaseConverter]) -> list[str]:
    return [
        name for name, converter in converters.items() if isinstance(converter, SegmentConverter)
    ]


_segments.register(_FlaskRouter())
