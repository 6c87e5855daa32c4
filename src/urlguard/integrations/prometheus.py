"""A Prometheus collector for the middlewares: violations and requests checked.

Needs ``prometheus-client`` (from a clone: ``pip install '.[prometheus]'``)::

    from prometheus_client import REGISTRY
    from urlguard.integrations.prometheus import GuardCollector
    from urlguard.wsgi import StrictURLMiddleware

    app.wsgi_app = StrictURLMiddleware(app.wsgi_app, mode="report")
    REGISTRY.register(GuardCollector(app))

``GuardCollector`` takes what ``urlguard.integrations.opentelemetry.instrument``
takes: the middlewares, or the applications they guard (a Starlette or
FastAPI application that called ``app.add_middleware(StrictURLMiddleware)``,
a Flask application).

Two counters, read at each scrape, with the names and labels that
``urlguard.integrations.opentelemetry`` gives through the OpenTelemetry
Prometheus exporter:

- ``urlguard_violations_total{rule, component, mode, route}``: ``route`` is
  the route prefix as configured, relative to the mount point, or ``"/"``
  for a target under no route;
- ``urlguard_requests_total{mode}``: every request the middleware decided on.

No label ever holds anything the client sent. The middleware counts (one
integer increment per request, no lock) and the collector reads the counts
when it is scraped, so nothing of prometheus-client runs while a request is
decided. The counts are the process's own: under several worker processes
(gunicorn ``-w``) each serves its own, which prometheus-client's
multiprocess mode does not gather from a collector; OpenTelemetry with an
OTLP exporter, or a scrape of each worker, does.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from . import _counts

__all__ = ["GuardCollector"]


class GuardCollector(Collector):
    """The counts of ``apps`` (``StrictURLMiddleware`` instances, ASGI or
    WSGI, or the applications they guard), added up where several are in the
    same mode. Register it once: ``REGISTRY.register(GuardCollector(app))``."""

    def __init__(self, *apps: object) -> None:
        self._guards = _counts.guards_of("urlguard.integrations.prometheus.GuardCollector", apps)

    def describe(self) -> Iterable[Metric]:
        """The two families, empty: registering never reads the counts."""
        return self._families(collect=False)

    def collect(self) -> Iterable[Metric]:
        return self._families(collect=True)

    def _families(self, collect: bool) -> list[Metric]:
        violations = CounterMetricFamily(
            "urlguard_violations",
            "Requests whose target or host broke a rule, by rule, component, mode, route",
            labels=_counts.VIOLATION_LABELS,
        )
        requests = CounterMetricFamily(
            "urlguard_requests",
            "Requests whose target and host urlguard checked, by mode",
            labels=("mode",),
        )
        if collect:
            guards = self._guards()
            for labels, count in _counts.violations(guards).items():
                violations.add_metric(labels, count)
            for mode, count in _counts.checked(guards).items():
                requests.add_metric((mode,), count)
        return [violations, requests]
