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

Importing this module registers the ``segment`` path converter (Django's
``register_converter``): a parameter that is exactly one segment of the
guarded target, decoded, with a ``%2F`` in it kept as ``/``. Where the policy
keeps encoded slashes, the guard hands Django the routing path (``PATH_INFO``
or the scope's ``path`` with a kept ``/`` written ``%2F``, ``%`` written
``%25``), so a ``segment`` parameter matches one segment and undoes those two
escapes, while any other parameter, and ``request.path``, see the text ``%2F``:

    # urls.py
    import urlguard.integrations.django  # registers <segment:name>

    urlpatterns = [
        path("units/<segment:unit>", unit, name="unit"),  # /units/kg%2Fs -> "kg/s"
    ]                                                     # /units/kg/s does not match

    # wsgi.py
    application = StrictURLMiddleware(
        get_wsgi_application(), routes={"/units/": {"encoded_slash": "keep"}}
    )

``urlguard.integrations.django.reverse("unit", kwargs={"unit": "kg/s"})``
gives ``/units/kg%2Fs``. Django's own ``reverse`` and ``{% url %}`` keep
``/`` raw in what they build, so for a ``segment`` value holding ``/`` they
raise ``NoReverseMatch`` rather than build a URL that routes elsewhere; a
value the guard would refuse (``"/etc"``, ``"a/.."``) is ``ValueError`` from
urlguard's ``reverse`` and ``NoReverseMatch`` from Django's.

Django's ``APPEND_SLASH`` redirect escapes the path's ``%`` once more, so
from a routing path it would send ``/units/x%2Fy`` to ``/units/x%252Fy/``
(which the guard refuses as double encoding). :class:`CommonMiddleware`, in
place of Django's in ``MIDDLEWARE``, keeps the ``%2F``: ``/units/x%2Fy/``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.urls import NoReverseMatch
from django.urls import register_converter as _register_converter
from django.urls import reverse as _django_reverse
from django.utils.functional import lazy

from .._guard import segments as _segments
from .._url.errors import InvalidTarget
from .._url.target import Target
from . import TargetUnavailable, optional_target_from, target_from, violation_from

__all__ = [
    "CommonMiddleware",
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


class _Building:
    """What :func:`reverse` collects from the converter: each ``segment``
    value, encoded, behind a placeholder that Django's quoting leaves as it
    is (hex digits: unreserved, RFC 3986 §2.3) and that no other text of the
    URL holds (a fresh 128-bit nonce per call); and the ``ValueError`` of a
    value the guard would refuse, which Django's ``reverse`` turns into
    ``NoReverseMatch``."""

    __slots__ = ("encoded", "error", "nonce")

    def __init__(self) -> None:
        self.nonce = secrets.token_hex(16)
        self.encoded: dict[str, str] = {}
        self.error: ValueError | None = None

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

    Matches one segment of the path Django resolves (the routing path when
    the target keeps a ``/``, else the server's decoded path) and undoes the
    routing path's escapes, ``%2F`` and ``%25``: the value is the segment
    urlguard validated.
    """

    regex = "[^/]+"

    # The function itself, not a method calling it: one call less per match.
    to_python = staticmethod(_segments.decode)

    def to_url(self, value: object) -> str:
        building = _BUILDING.get()
        try:
            encoded = _segments.url_text(value)
        except ValueError as exc:
            if building is not None:
                building.error = exc
            raise  # Django's reverse: no match
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

    A ``segment`` value the guard would refuse raises ``ValueError`` naming
    the rule. Everything else is Django's: namespaces, the script prefix,
    the other converters, ``query`` and ``fragment``; so is ``NoReverseMatch``.
    """
    building = _Building()
    token = _BUILDING.set(building)
    try:
        url: str = _django_reverse(
            viewname, urlconf, args, kwargs, current_app, query=query, fragment=fragment
        )
    except NoReverseMatch:
        if building.error is not None:
            raise building.error from None
        raise
    finally:
        _BUILDING.reset(token)
    return building.fill(url)


#: :func:`reverse`, evaluated when the URL is first used as text (as
#: ``django.urls.reverse_lazy``: for ``success_url`` and other class attributes).
reverse_lazy: Any = lazy(reverse, str)


_register_converter(SegmentConverter, "segment")


class CommonMiddleware(DjangoCommonMiddleware):  # type: ignore[misc]  # Django is untyped
    """Django's ``CommonMiddleware``, whose ``APPEND_SLASH`` redirect keeps a
    kept ``%2F``: use it in ``MIDDLEWARE`` in place of
    ``django.middleware.common.CommonMiddleware``.

    Django builds the redirect from ``request.path`` and escapes every ``%``
    in it (``escape_uri_path``). On a routing path every ``%`` is the start of
    ``%25`` or ``%2F``, so in the path of that URL each ``%25`` Django wrote
    for one of them is turned back into ``%``; a request without a routing
    path is redirected exactly as by Django.
    """

    def get_full_path_with_slash(self, request: HttpRequest) -> str:
        url: str = super().get_full_path_with_slash(request)
        target = optional_target_from(_carrier(request))
        if target is None or _segments.routing_path(target.raw_path) is None:
            return url
        path, question, query = url.partition("?")
        return path.replace("%25", "%") + question + query
