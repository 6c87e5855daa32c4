"""OpenTelemetry metrics for the middlewares: violations and requests checked.

Needs ``opentelemetry-api`` (from a clone: ``pip install '.[otel]'``); the
application's OpenTelemetry SDK and exporter (OTLP, Prometheus, ...) do the
rest, as for every other instrument it has::

    from urlguard.asgi import StrictURLMiddleware
    from urlguard.integrations.opentelemetry import instrument

    app = StrictURLMiddleware(app, mode="report", routes={"/files/": {"encoded_slash": "keep"}})
    instrument(app)

or, where the framework makes the middleware, with the framework's
application (Starlette, FastAPI: found in the stack they build; Flask: in
``app.wsgi_app``)::

    app.add_middleware(StrictURLMiddleware, mode="report")
    instrument(app)

Two asynchronous (observable) counters, read when the SDK collects:

- ``urlguard.violations`` (unit ``{violation}``), attributes ``rule`` (the
  rule code), ``component`` (``path``, ``query``, ``target``, ``host``),
  ``mode`` (``report`` or ``enforce``) and ``route`` (the route prefix as
  configured, relative to the mount point, or ``"/"`` for a target under no
  route);
- ``urlguard.requests`` (unit ``{request}``), attribute ``mode``: every
  request the middleware decided on (``http`` and ``websocket``).

Through the OpenTelemetry Prometheus exporter they are
``urlguard_violations_total`` and ``urlguard_requests_total``, the names
``urlguard.integrations.prometheus`` gives them too.

No attribute ever holds anything the client sent. The middleware counts
(one integer increment per request, no lock); nothing of OpenTelemetry runs
while a request is decided, so an SDK or exporter that fails never changes
an answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter

from .. import __version__
from . import _counts

__all__ = ["instrument"]


def instrument(*apps: object, meter_provider: MeterProvider | None = None) -> None:
    """Report the violations and requests checked of ``apps`` through the
    meter ``"urlguard"`` of ``meter_provider`` (default: the global one).

    Each of ``apps`` is a ``StrictURLMiddleware`` (ASGI or WSGI), or the
    application it guards: a Starlette or FastAPI application that added it
    (``app.add_middleware(StrictURLMiddleware)``), a Flask application whose
    ``wsgi_app`` it wraps. Anything else raises ``TypeError`` here.

    Call it once per meter provider, with every guarded application of the
    process: the counts of several middlewares in the same mode are added up.
    """
    guards = _counts.guards_of("urlguard.integrations.opentelemetry.instrument", apps)

    def observe_violations(options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, dict(zip(_counts.VIOLATION_LABELS, labels, strict=True)))
            for labels, count in _counts.violations(guards()).items()
        ]

    def observe_requests(options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {"mode": mode}) for mode, count in _counts.checked(guards()).items()
        ]

    meter = get_meter("urlguard", __version__, meter_provider)
    meter.create_observable_counter(
        "urlguard.violations",
        callbacks=[observe_violations],
        unit="{violation}",
        description="Requests whose target or host broke a rule, by rule, component, mode, route",
    )
    meter.create_observable_counter(
        "urlguard.requests",
        callbacks=[observe_requests],
        unit="{request}",
        description="Requests whose target and host urlguard checked, by mode",
    )
