"""One-line access to the guarded target from a framework's request object.

The middlewares (``urlguard.asgi``, ``urlguard.wsgi``) store the decoded
:class:`~urlguard.Target` at ``scope["urlguard.target"]`` /
``environ["urlguard.target"]``. These helpers read it back, one module per
framework, each importing only its own framework:

================  ==============================================================
Starlette         ``urlguard.integrations.starlette.get_target(request)``
FastAPI           ``target: GuardedTarget`` (``urlguard.integrations.fastapi``)
Flask             ``urlguard.integrations.flask.get_target()``
Django            ``urlguard.integrations.django.get_target(request)`` (WSGI and ASGI)
================  ==============================================================

``get_target`` raises :class:`TargetUnavailable` when there is no target: the
middleware is not installed in front of the application, the request was
``OPTIONS *``, or, in report-only mode, the target broke a rule and was let
through (then ``get_violation`` returns the :class:`~urlguard.InvalidTarget`).

Each framework's module also registers a ``segment`` route parameter (one
segment of the guarded target, decoded, ``%2F`` kept as ``/``): Starlette and
FastAPI ``{unit:segment}``, Flask ``<segment:unit>`` (with its
``SegmentConverter`` added to the application's URL map), Django
``<segment:unit>``. Its value reaches the router on the *routing path*: when a
policy keeps an encoded slash and the target holds one, the middleware hands
the application a copy of the scope or environ whose decoded path writes each
``/`` inside a segment as ``%2F`` and each ``%`` as ``%25``; a ``segment``
parameter undoes exactly those two, any other parameter keeps the text.

Two more modules export the guard's counts as metrics:
``urlguard.integrations.opentelemetry`` and ``urlguard.integrations.prometheus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._guard.decision import TARGET_KEY, VIOLATION_KEY
from .._url.errors import InvalidTarget
from .._url.target import Target

__all__ = ["TargetUnavailable", "optional_target_from", "target_from", "violation_from"]


class TargetUnavailable(RuntimeError):
    """There is no guarded target for this request.

    ``violation`` is the :class:`~urlguard.InvalidTarget` when the request
    broke a rule and was let through in report-only mode, else ``None`` (the
    middleware is not installed in front of this application, or the request
    was ``OPTIONS *``).
    """

    violation: InvalidTarget | None

    def __init__(self, violation: InvalidTarget | None = None) -> None:
        self.violation = violation
        if violation is not None:
            message = (
                f"urlguard: this request broke rule {violation.rule!r} and was let through "
                "in report-only mode, so it has no target; read get_violation() instead"
            )
        else:
            message = (
                "urlguard: no target on this request: urlguard's StrictURLMiddleware is "
                "not installed in front of this application (or the request was OPTIONS *)"
            )
        super().__init__(message)


def target_from(carrier: Mapping[str, Any]) -> Target:
    """The target stored in an ASGI scope or WSGI environ, or :class:`TargetUnavailable`."""
    target = optional_target_from(carrier)
    if target is None:
        raise TargetUnavailable(violation_from(carrier))
    return target


def optional_target_from(carrier: Mapping[str, Any]) -> Target | None:
    """The target stored in an ASGI scope or WSGI environ, else ``None``."""
    target = carrier.get(TARGET_KEY)
    return target if isinstance(target, Target) else None


def violation_from(carrier: Mapping[str, Any]) -> InvalidTarget | None:
    """The violation stored in an ASGI scope or WSGI environ (report-only mode,
    or for an ``on_reject`` response), else ``None``."""
    violation = carrier.get(VIOLATION_KEY)
    return violation if isinstance(violation, InvalidTarget) else None
