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
converter (a route that names it without that line fails at ``app.route``,
werkzeug's ``LookupError``). Where the policy keeps encoded slashes, the
guard hands Flask the routing path (``PATH_INFO`` with a kept ``/`` written
``%2F``, ``%`` written ``%25``), so a ``segment`` parameter matches one
segment and undoes those two escapes, while any other parameter, and
``request.path``, see the text ``%2F``:

    from urlguard.integrations.flask import SegmentConverter

    app.url_map.converters["segment"] = SegmentConverter
    app.wsgi_app = StrictURLMiddleware(
        app.wsgi_app, routes={"/units/": {"encoded_slash": "keep"}}
    )

    @app.get("/units/<segment:unit>")   # /units/kg%2Fs -> "kg/s"
    def unit(unit):                     # /units/kg/s does not match it
        return {"unit": unit}

``url_for("unit", unit="kg/s")`` gives ``/units/kg%2Fs``; a value the guard
would refuse (``"/etc"``, ``"a/.."``) raises ``ValueError`` instead.
"""

from __future__ import annotations

from typing import Any

from flask import request
from werkzeug.routing import BaseConverter

from .._guard import segments as _segments
from .._url.errors import InvalidTarget
from .._url.target import Target
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

    Matches one segment of the path werkzeug routes on (the routing path
    when the target keeps a ``/``, else the server's decoded ``PATH_INFO``)
    and undoes the routing path's escapes, ``%2F`` and ``%25``: the value is
    the segment urlguard validated.

        app.url_map.converters["segment"] = SegmentConverter
    """

    regex = "[^/]+"
    part_isolating = True

    # The function itself, not a method calling it: one call less per match.
    to_python = staticmethod(_segments.decode)

    def to_url(self, value: Any) -> str:
        return _segments.url_text(value)
