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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from .._errors import InvalidTarget
from .._target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = ["TargetUnavailable", "get_target", "get_violation"]


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
