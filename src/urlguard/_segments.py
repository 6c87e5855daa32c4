"""Routing on segments: what lets a framework's router see the path as urlguard split it.

A server decodes ``/units/kg%2Fs`` to ``/units/kg/s``, and every Python
router matches on that decoded path, so a route ``/units/{unit}`` cannot
tell one segment ``kg/s`` from two segments ``kg`` and ``s``. urlguard
split the raw path before decoding, so it can: when a target has a ``/``
inside a segment, the guard hands the router a *view* of the path, the
decoded segments joined by ``/`` with each ``/`` inside a segment written
as :data:`SLASH`, at ``"urlguard.route_path"`` in the scope or environ. The
server's own keys (``path``, ``raw_path``, ``PATH_INFO``) are left alone.

:data:`SLASH` is U+0000: a policy that routes on segments forbids it in
decoded path segments, so in a view it can only stand for a kept ``/``. A
``segment`` route parameter (each framework's integration registers one)
matches one segment of the view and turns :data:`SLASH` back into ``/``;
every other parameter and every literal leaves it as it is. So a router's
choice is safe exactly when no parameter value it produced still holds
:data:`SLASH`: each integration :func:`register`-s what asks the
router (:class:`SegmentRouter`), and the guard refuses the ``%2F``
(``encoded-slash``) unless the router hands every kept ``/`` to a
``segment`` parameter. Declaring the
parameter is the whole configuration, and a route added later or mounted
below is seen, because the router itself is asked, per request.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any, Final, Protocol

from ._encode import encode_path_segment

__all__ = [
    "ROUTERS",
    "SLASH",
    "VIEW_KEY",
    "SegmentRouter",
    "claimed",
    "decode",
    "register",
    "view_of",
]

#: The routing view's key in the ASGI scope / WSGI environ.
VIEW_KEY: Final = "urlguard.route_path"

#: Stands for a ``/`` inside a segment in the routing view.
SLASH: Final = "\x00"


class SegmentRouter(Protocol):
    """What the guard asks of a framework's router (one per integration)."""

    def find(self, app: object, carrier: MutableMapping[str, Any]) -> object | None:
        """The router of the guarded application ``app`` (or of the carrier:
        a framework in front of the guard may have put its application
        there), or ``None`` when it is not this framework's."""

    def declares(self, router: Any) -> bool:
        """Whether any route of ``router``, mounted ones included, declares a
        ``segment`` parameter; if so, the framework is made to route on the
        view wherever a carrier holds one (from then on: so an application
        that declares none routes exactly as it did)."""

    def claims(self, router: Any, carrier: MutableMapping[str, Any], view: str) -> bool:
        """Whether ``router``, routing ``view`` (stored at :data:`VIEW_KEY`
        in a copy of ``carrier``), hands every kept ``/`` to a ``segment``
        parameter: it matches a route, and :func:`claimed` holds for every
        parameter value it produced."""


#: The frameworks' routers, registered by importing an integration.
ROUTERS: list[SegmentRouter] = []


def register(router: SegmentRouter) -> None:
    """Add a framework's :class:`SegmentRouter` (once)."""
    if router not in ROUTERS:
        ROUTERS.append(router)


def view_of(segments: Iterable[str], prefix: str = "") -> str:
    """The routing view of decoded ``segments`` below the mount point ``prefix``.

    >>> view_of(("units", "kg/s"))
    '/units/kg\\x00s'
    """
    return prefix + "/" + "/".join([segment.replace("/", SLASH) for segment in segments])


def claimed(values: Iterable[object]) -> bool:
    """No value a router produced still holds :data:`SLASH`: every kept
    ``/`` went to a ``segment`` parameter, which turned it back into ``/``."""
    return not any(isinstance(value, str) and SLASH in value for value in values)


def url_text(value: object) -> str:
    """A ``segment`` parameter's value as one segment of a URL being built:
    percent-encoded, ``/`` as ``%2F`` (``urlguard.encode_path_segment``)."""
    text = str(value)
    if text in ("", ".", ".."):
        # RFC 3986 §5.2.4: no escape of "." survives dot-segment removal.
        raise ValueError(f"a segment parameter cannot be {text!r}")
    return encode_path_segment(text)


def decode(value: str) -> str:
    """A ``segment`` parameter's value: its view text with each kept ``/`` back."""
    return value.replace(SLASH, "/")
