"""The guarded target of the current Flask request.

from flask import Flask
from urlguard.integrations.flask import get_target
from urlguard.wsgi import StrictURLMiddleware

app = Flask(__name__)
app.wsgi_app = StrictURLMiddleware(app.wsgi_app)

@app.get("/echo/<path:rest>")
def echo(rest):
    return {"segments": list(get_target().segments)}
"""

from __future__ import annotations

from flask import request

from .._errors import InvalidTarget
from .._target import Target
from . import TargetUnavailable, target_from, violation_from

__all__ = ["TargetUnavailable", "get_target", "get_violation"]


def get_target() -> Target:
    """The :class:`~urlguard.Target` of the current request (from
    ``flask.request.environ``); raises
    :class:`~urlguard.integrations.TargetUnavailable` when there is none."""
    return target_from(request.environ)


def get_violation() -> InvalidTarget | None:
    """The rule the current request broke, when report-only mode let it through."""
    return violation_from(request.environ)
