"""The guarded target of a Django ``HttpRequest``, under WSGI or ASGI.

Wrap Django's handler, not a Django middleware: the raw target is only in
the WSGI environ or the ASGI scope, before Django builds its request.

    # wsgi.py
    from django.core.wsgi import get_wsgi_application
    from urlguard.wsgi import StrictURLMiddleware
    application = StrictURLMiddleware(get_wsgi_application())

    # asgi.py
    from django.core.asgi import get_asgi_application
    from urlguard.asgi import StrictURLMiddleware
    application = StrictURLMiddleware(get_asgi_application())

    # views.py
    from urlguard.integrations.django import get_target
    def echo(request, rest):
        return JsonResponse({"segments": list(get_target(request).segments)})

Importing this module registers the ``segment`` path converter: a
parameter that is exactly one segment of the guarded target, decoded, with
a ``%2F`` in it kept as ``/``. The route declares it; nothing else is
configured (no setting, no Django middleware):

    # urls.py
    import urlguard.integrations.django  # registers <segment:name>

    urlpatterns = [
        path("units/<segment:unit>", unit, name="unit"),  # /units/kg%2Fs -> "kg/s"
    ]                                                     # /units/kg/s does not match

``urlguard.integrations.django.reverse("unit", kwargs={"unit": "kg/s"})``
gives ``/units/kg%2Fs``. Django's own ``reverse`` and ``{% url %}`` keep
``/`` raw in what they build, so for a ``segment`` value holding ``/`` they
raise ``NoReverseMatch`` rather than build a URL that routes elsewhere.

How it works: a target with a ``/`` inside a segment reaches Django with a
routing view (``urlguard._segments``) beside the server's keys. The guard
finds Django's handler behind it and makes that handler resolve such a
request on the view instead of ``request.path_info`` (only the resolving:
``request.path_info``, ``PATH_INFO`` and the scope's ``path`` keep the
server's decoded path). The guard lets the ``%2F`` through only when
resolving the view hands every kept ``/`` to a ``segment`` parameter.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any, Final, NamedTuple

from django.core.handlers.asgi import ASGIHandler, ASGIRequest, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest
from django.urls import NoReverseMatch, Resolver404, URLResolver, get_resolver
from django.urls import register_converter as _register_converter
from django.urls import reverse as _django_reverse
from django.urls.converters import get_converters
from django.utils.functional import lazy

from .. import _segments
from .._errors import InvalidTarget
from .._target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = [
    "SegmentConverter",
    "TargetUnavailable",
    "get_target",
    "get_violation",
    "reverse",
    "reverse_lazy",
]


def _carrier(request: HttpRequest) -> Mapping[str, Any]:
    # ASGIRequest keeps the scope; WSGIRequest's META is the environ itself.
    scope = getattr(request, "scope", None)
    if isinstance(scope, Mapping):
        return scope
    meta: Mapping[str, Any] = request.META
    return meta


def get_target(request: HttpRequest) -> Target:
    """The :class:`~urlguard.Target` of this request; raises
    :class:`~urlguard.integrations.TargetUnavailable` when there is none."""
    return target_from(_carrier(request))


def get_violation(request: HttpRequest) -> InvalidTarget | None:
    """The rule this request broke, when report-only mode let it through."""
    return violation_from(_carrier(request))


# -- the segment converter ------------------------------------------------------

#: Set while a routing view is resolved: only a view holds a kept ``/``
#: (as ``_segments.SLASH``). On the server's path a U+0000 is a U+0000,
#: which a policy that allows it lets through without a view.
_ON_VIEW: ContextVar[bool] = ContextVar("urlguard_django_on_view", default=False)


class _Building:
    """What :func:`reverse` collects from the converter: each ``segment``
    value, encoded, behind a placeholder that Django's quoting leaves as it
    is (hex digits: unreserved, RFC 3986 §2.3) and that no other text of the
    URL holds (a fresh 128-bit nonce per call)."""

    __slots__ = ("encoded", "nonce")

    def __init__(self) -> None:
        self.nonce = secrets.token_hex(16)
        self.encoded: dict[str, str] = {}

    def hold(self, encoded: str) -> str:
        placeholder = f"{self.nonce}{len(self.encoded):08x}"
        self.encoded[placeholder] = encoded
        return placeholder

    def fill(self, url: str) -> str:
        # The path ends at the first '?' or '#' (RFC 3986 §3.3): Django's
        # quoting leaves neither raw in it, and the placeholders are only there.
        end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        path = url[:end]
        for placeholder, encoded in self.encoded.items():
            path = path.replace(placeholder, encoded)
        return path + url[end:]


_BUILDING: ContextVar[_Building | None] = ContextVar("urlguard_django_building", default=None)


class SegmentConverter:
    """``<segment:name>``: one segment of the guarded target, decoded.

    Matches one segment of the path Django resolves: for a target with a
    ``%2F``, the guard's routing view, where a kept ``/`` cannot end the
    segment; else ``request.path_info``, which is then the guarded target's
    segments joined by ``/``.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return _segments.decode(value) if _ON_VIEW.get() else value

    def to_url(self, value: object) -> str:
        encoded = _segments.url_text(value)  # refuses "", "." and ".."
        building = _BUILDING.get()
        if building is not None:
            return building.hold(encoded)
        text = str(value)
        if "/" in text:
            # Django's reverse quotes '%' and keeps '/' raw: it can only build
            # '/units/kg/s', which names two segments, never '/units/kg%2Fs'.
            raise NoReverseMatch(
                "a segment parameter holding '/' cannot be built by django.urls.reverse "
                "or {% url %}, which keep '/' raw; use urlguard.integrations.django.reverse"
            )
        return text


def reverse(
    viewname: Any,
    urlconf: Any = None,
    args: Any = None,
    kwargs: Any = None,
    current_app: str | None = None,
    *,
    query: Any = None,
    fragment: str | None = None,
) -> str:
    """``django.urls.reverse``, with each ``segment`` value percent-encoded
    as one segment: ``/`` as ``%2F``, and ``%``, ``?``, ``#``, space and
    non-ASCII (UTF-8) escaped (``urlguard.encode_path_segment``).

    Everything else is Django's: namespaces, the script prefix, the other
    converters, ``query`` and ``fragment``; so is ``NoReverseMatch``.
    """
    building = _Building()
    token = _BUILDING.set(building)
    try:
        url: str = _django_reverse(
            viewname, urlconf, args, kwargs, current_app, query=query, fragment=fragment
        )
    finally:
        _BUILDING.reset(token)
    return building.fill(url)


#: :func:`reverse`, evaluated when the URL is first used as text (as
#: ``django.urls.reverse_lazy``: for ``success_url`` and other class attributes).
reverse_lazy: Any = lazy(reverse, str)


if not isinstance(get_converters().get("segment"), SegmentConverter):
    _register_converter(SegmentConverter, "segment")


# -- routing on the view ------------------------------------------------------------


def _taken(match: Any, kept: int) -> bool:
    """``match`` (a ``ResolverMatch`` of a routing view holding ``kept`` kept
    ``/``) hands every kept ``/`` to a ``segment`` parameter.

    No value may still hold ``SLASH``, and the ``segment`` values must hold
    ``kept`` slashes between them: a pattern that matched the kept ``/``
    without capturing it (``re_path(r"^files/")``) leaves no value holding
    it, and its view would read the lossy ``request.path_info``.
    """
    values = [*match.args, *match.kwargs.values()]
    if not _segments.claimed(values):
        return False
    # ResolverMatch.tried ends with the patterns that matched, outermost
    # first (include() resolvers, then the endpoint): their converters.
    converters: dict[str, object] = {}
    for pattern in (match.tried or [[]])[-1]:
        converters.update(getattr(pattern.pattern, "converters", None) or {})
    taken = sum(
        value.count("/")
        for name, value in match.kwargs.items()
        if isinstance(converters.get(name), SegmentConverter) and isinstance(value, str)
    )
    return taken == kept


def _resolve(resolver: Any, path: str) -> Any:
    """``resolver.resolve(path)`` with ``segment`` values decoded from the view."""
    token = _ON_VIEW.set(True)
    try:
        return resolver.resolve(path)
    finally:
        _ON_VIEW.reset(token)


class _ResolveOnView:
    """A Django handler's ``resolve_request``, resolving a request that holds
    a routing view on that view.

    Only the resolving changes: ``request.path_info`` is the view for the
    one call that resolves (so a ``request.urlconf`` set by a middleware is
    honoured as Django honours it) and is the server's decoded path again
    before any view or middleware runs on. A request without a view is
    resolved exactly as before.
    """

    __slots__ = ("resolve",)

    def __init__(self, resolve: Callable[[HttpRequest], Any]) -> None:
        self.resolve = resolve

    def __call__(self, request: HttpRequest) -> Any:
        view = _carrier(request).get(_segments.VIEW_KEY)
        if view is None:
            return self.resolve(request)
        path_info = request.path_info
        if isinstance(request, ASGIRequest) and request.script_name:
            # Django's own path_info under ASGI: the path below the script prefix.
            view = view.removeprefix(request.script_name)
        request.path_info = view
        token = _ON_VIEW.set(True)
        try:
            match = self.resolve(request)
        finally:
            _ON_VIEW.reset(token)
            request.path_info = path_info
        # The guard checked ROOT_URLCONF; a middleware may have chosen another
        # urlconf since. A route that does not take the kept '/' as a segment
        # finds nothing here, as on the server's path it would find another route.
        if not _taken(match, view.count(_segments.SLASH)):
            raise Resolver404({"path": path_info})
        return match


_INSTALL: Final = threading.Lock()


def _route_on_views(handler: BaseHandler) -> None:
    """Make ``handler`` (the one the guard wraps) resolve on routing views.

    Set on the handler instance, once, when the guard first finds segment
    routes behind it: other handlers in the process (a test client's), an
    application without segment routes and a process whose guard never
    meets a ``%2F`` resolve exactly as before.
    """
    if isinstance(vars(handler).get("resolve_request"), _ResolveOnView):
        return
    with _INSTALL:
        if not isinstance(vars(handler).get("resolve_request"), _ResolveOnView):
            setattr(handler, "resolve_request", _ResolveOnView(handler.resolve_request))  # noqa: B010


class _Resolving(NamedTuple):
    resolver: URLResolver
    #: ASGI: Django resolves below the script prefix (``root_path``).
    asgi: bool
    #: The handler the guard wraps: it resolves on views once there are segment routes.
    handler: BaseHandler


class _DjangoRouter:
    """Django's URL resolver, asked about segment routes by the guard."""

    # The guard wraps Django's handler, directly or through WSGI/ASGI
    # middleware that keeps what it wraps at .app or .application.
    _DEPTH = 32

    def find(self, app: object, carrier: MutableMapping[str, Any]) -> object | None:
        node = app
        for _ in range(self._DEPTH):
            if isinstance(node, BaseHandler):
                return _Resolving(get_resolver(), isinstance(node, ASGIHandler), node)
            inner = getattr(node, "app", None)
            node = inner if inner is not None else getattr(node, "application", None)
            if node is None:
                break
        return None

    def declares(self, router: Any) -> bool:
        if _declares(router.resolver.url_patterns):
            _route_on_views(router.handler)
            return True
        return False

    def claims(self, router: Any, carrier: MutableMapping[str, Any], view: str) -> bool:
        path = view
        if router.asgi:
            script = get_script_prefix(carrier)
            if script:
                path = view.removeprefix(script)
        try:
            match = _resolve(router.resolver, path)
        except Resolver404:
            return False  # no route: the %2F stays an encoded-slash
        return _taken(match, view.count(_segments.SLASH))


def _declares(patterns: Any) -> bool:
    for entry in patterns:
        converters = getattr(entry.pattern, "converters", None) or {}
        if any(isinstance(c, SegmentConverter) for c in converters.values()):
            return True
        if isinstance(entry, URLResolver) and _declares(entry.url_patterns):
            return True
    return False


_segments.register(_DjangoRouter())
