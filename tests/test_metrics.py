"""The metrics integrations against the real libraries: OpenTelemetry's SDK
read by its in-memory reader, and a Prometheus registry scraped over HTTP.

Both middlewares, both modes, per-route policies below a mount point: every
request is counted once, every violation once under its rule, component,
mode and route prefix, and no label holds anything the client sent. A
metrics backend that fails changes no answer: nothing of it runs while a
request is decided.
"""

from __future__ import annotations

import asyncio
import sys
import types
import urllib.request
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes
from wsgiref.util import setup_testing_defaults

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from conftest import Parser
from urlguard import asgi, wsgi
from urlguard.integrations.opentelemetry import instrument
from urlguard.integrations.prometheus import GuardCollector

MOUNT = "/mnt"
ROUTES: dict[str, Any] = {
    "/files/": {"encoded_slash": "keep"},
    "/api": {"path_params": "reject"},
}
HOST = b"example.com"

Guarded = asgi.StrictURLMiddleware | wsgi.StrictURLMiddleware


class Sent(NamedTuple):
    target: bytes  # below the mount point
    host: bytes
    rejected: bool  # in enforce mode


# Each request once, in this order.
REQUESTS = (
    Sent(b"/files/a%2Fb", HOST, rejected=False),  # kept under /files/
    Sent(b"/files/..%2Fx", HOST, rejected=True),  # dot-segment under /files/
    Sent(b"/api/x;v=1", HOST, rejected=True),  # path_params="reject": raw-char under /api
    Sent(b"/other/%zz", HOST, rejected=True),  # malformed-escape, under no route
    Sent(b"/a?q=%FF", HOST, rejected=True),  # invalid-utf8 in the query, under no route
    Sent(b"/a/b", HOST, rejected=False),
    Sent(b"/a", b"exa mple.com", rejected=True),  # bad-host
)
# (rule, component, route) -> count: a violation under no route is under "/".
VIOLATIONS = {
    ("dot-segment", "path", "/files/"): 1,
    ("raw-char", "path", "/api"): 1,
    ("malformed-escape", "path", "/"): 1,
    ("invalid-utf8", "query", "/"): 1,
    ("bad-host", "host", "/"): 1,
}
# Every label value a violation may carry comes from this closed set.
CONFIGURED = {"report", "enforce", "path", "query", "target", "host", "/", *ROUTES}


async def _asgi_app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _wsgi_app(environ: Any, start_response: Any) -> list[bytes]:
    start_response("200 OK", [])
    return [b"ok"]


def _asgi_status(app: Guarded, sent: Sent) -> int:
    """The status of ``sent`` below the mount point, with the raw path as uvicorn
    gives it: the mount point glued in front."""
    path, _, query = sent.target.partition(b"?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": MOUNT + path.decode("ascii"),
        "raw_path": MOUNT.encode() + path,
        "query_string": query,
        "root_path": MOUNT,
        "headers": [(b"host", sent.host)],
    }
    messages: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        raise AssertionError("the body is never read")

    async def send(message: MutableMapping[str, Any]) -> None:
        messages.append(message)

    assert isinstance(app, asgi.StrictURLMiddleware)

    asyncio.run(app(scope, receive, send))
    status: int = messages[0]["status"]
    return status


def _wsgi_status(app: Guarded, sent: Sent) -> int:
    """The status of ``sent`` below the mount point, as gunicorn gives it."""
    path, _, query = sent.target.partition(b"?")
    environ = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": MOUNT,
        "PATH_INFO": path.decode("ascii"),
        "QUERY_STRING": query.decode("ascii"),
        "RAW_URI": MOUNT + sent.target.decode("ascii"),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": sent.host.decode("ascii"),
        "wsgi.url_scheme": "http",
    }
    assert isinstance(app, wsgi.StrictURLMiddleware)
    return _wsgi_call(app, environ)


def _wsgi_call(app: Any, environ: dict[str, Any]) -> int:
    """The status ``app`` answers ``environ`` with, its body read and closed."""
    statuses: list[str] = []

    def start_response(
        status: str, headers: list[tuple[str, str]], exc_info: Any = None, /
    ) -> Callable[[bytes], object]:
        statuses.append(status)
        return _write

    body = app(environ, start_response)
    try:
        b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()
    return int(statuses[0].split()[0])


def _write(data: bytes) -> None:
    raise AssertionError("the application writes nothing through write()")


def _guarded(protocol: str, mode: str, parser: Parser, **options: Any) -> Guarded:
    if protocol == "ASGI":
        return asgi.StrictURLMiddleware(
            _asgi_app, mode=mode, routes=ROUTES, parser=parser, **options
        )
    return wsgi.StrictURLMiddleware(_wsgi_app, mode=mode, routes=ROUTES, parser=parser, **options)


def _send_all(app: Guarded) -> list[int]:
    if isinstance(app, asgi.StrictURLMiddleware):
        return [_asgi_status(app, sent) for sent in REQUESTS]
    return [_wsgi_status(app, sent) for sent in REQUESTS]


def _expected_statuses(mode: str) -> list[int]:
    return [400 if sent.rejected and mode == "enforce" else 200 for sent in REQUESTS]


Points = dict[str, dict[tuple[tuple[str, Any], ...], int]]


def _otel_points(data: MetricsData | None) -> Points:
    """metric name -> sorted attributes -> value, from one collection."""
    assert data is not None
    points: Points = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "urlguard"
            for metric in scope.metrics:
                values = points.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    assert point.attributes is not None
                    values[tuple(sorted(point.attributes.items()))] = int(point.value)  # type: ignore[union-attr]
    return points


def _expected_otel(mode: str, rounds: int) -> Points:
    violations: dict[tuple[tuple[str, Any], ...], int] = {
        (("component", component), ("mode", mode), ("route", route), ("rule", rule)): n * rounds
        for (rule, component, route), n in VIOLATIONS.items()
    }
    requests: dict[tuple[tuple[str, Any], ...], int] = {(("mode", mode),): len(REQUESTS) * rounds}
    return {"urlguard.violations": violations, "urlguard.requests": requests}


PROTOCOLS = pytest.mark.parametrize("protocol", ["ASGI", "WSGI"])
MODES = pytest.mark.parametrize("mode", ["report", "enforce"])


# --- OpenTelemetry ------------------------------------------------------------------------


@PROTOCOLS
@MODES
def test_opentelemetry_counts(parser: Parser, protocol: str, mode: str) -> None:
    app = _guarded(protocol, mode, parser)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(app, meter_provider=provider)
    # Before any request: requests checked is 0 (a series from the start, so
    # that a rate over it is defined), and no violation series.
    assert _otel_points(reader.get_metrics_data()) == {"urlguard.requests": {(("mode", mode),): 0}}

    assert _send_all(app) == _expected_statuses(mode)
    assert _otel_points(reader.get_metrics_data()) == _expected_otel(mode, 1)
    # Cumulative: a second round doubles every count.
    assert _send_all(app) == _expected_statuses(mode)
    assert _otel_points(reader.get_metrics_data()) == _expected_otel(mode, 2)
    provider.shutdown()


def test_opentelemetry_adds_up_middlewares_by_mode(parser: Parser) -> None:
    """Two middlewares in report mode add up; one in enforce mode stays apart."""
    reporting = [_guarded("ASGI", "report", parser), _guarded("WSGI", "report", parser)]
    enforcing = _guarded("WSGI", "enforce", parser)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(*reporting, enforcing, meter_provider=provider)
    for app in (*reporting, enforcing):
        _send_all(app)
    points = _otel_points(reader.get_metrics_data())
    expected = _expected_otel("report", 2)
    for name, values in _expected_otel("enforce", 1).items():
        expected[name].update(values)
    assert points == expected
    provider.shutdown()


def test_labels_never_hold_input(parser: Parser) -> None:
    """Hostile targets and hosts: every label value is a rule code, a
    component, a mode or a configured route prefix."""
    app = _guarded("ASGI", "report", parser)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(app, meter_provider=provider)
    hostile = [
        Sent(b"/files/%0d%0aX-Injected:%20yes", HOST, True),
        Sent(b"/api/%E2%80%AE", HOST, True),
        Sent(b'/x"}\x7f', HOST, True),
        Sent(b"/" + b"a" * 9000, HOST, True),
        Sent(b"/a", b'evil"} 1\nurlguard_requests_total 9', True),
    ]
    for sent in hostile:
        _asgi_status(app, sent)
    points = _otel_points(reader.get_metrics_data())
    rules = set(app.violations)
    values = {value for attributes in points["urlguard.violations"] for _, value in attributes}
    assert values <= CONFIGURED | rules
    assert sum(points["urlguard.violations"].values()) == len(hostile)
    provider.shutdown()


class FailingReader(InMemoryMetricReader):
    """A backend that fails at every collection, as an exporter whose
    endpoint is down raises in its own thread."""

    def _receive_metrics(self, metrics_data: Any, timeout_millis: float = 0, **kwargs: Any) -> None:
        raise RuntimeError("the collector is down")


@PROTOCOLS
@MODES
def test_a_failing_backend_changes_no_answer(parser: Parser, protocol: str, mode: str) -> None:
    failing = FailingReader()
    working = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[failing, working])
    # An on_violation hook that raises too: the answers stay the guard's own.
    app = _guarded(protocol, mode, parser, on_violation=_raise)
    instrument(app, meter_provider=provider)
    for _ in range(2):
        assert _send_all(app) == _expected_statuses(mode)
        with pytest.raises(RuntimeError, match="the collector is down"):
            failing.collect()
    assert _otel_points(working.get_metrics_data()) == _expected_otel(mode, 2)
    provider.shutdown()


def _raise(exc: Exception, carrier: object) -> None:
    raise RuntimeError("the hook is broken")


def test_only_middlewares_are_instrumented() -> None:
    with pytest.raises(TypeError, match="StrictURLMiddleware"):
        instrument()
    with pytest.raises(TypeError, match="not function"):
        instrument(_wsgi_app)
    with pytest.raises(TypeError, match="StrictURLMiddleware"):
        GuardCollector()


# --- Prometheus ---------------------------------------------------------------------------


@pytest.fixture
def registry() -> Iterator[tuple[CollectorRegistry, str]]:
    """A registry served over HTTP on loopback, and its URL."""
    registry = CollectorRegistry()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        yield registry, f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], int]]:
    """sample name -> sorted labels -> value, as Prometheus reads them."""
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode("utf-8")
    samples: dict[str, dict[tuple[tuple[str, str], ...], int]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("urlguard_"):
            continue
        assert family.type == "counter"
        for sample in family.samples:
            if sample.name.endswith("_total"):
                values = samples.setdefault(sample.name, {})
                values[tuple(sorted(sample.labels.items()))] = int(sample.value)
    return samples


@PROTOCOLS
@MODES
def test_prometheus_scrape(
    parser: Parser, protocol: str, mode: str, registry: tuple[CollectorRegistry, str]
) -> None:
    app = _guarded(protocol, mode, parser)
    registry[0].register(GuardCollector(app))
    assert _scrape(registry[1]) == {"urlguard_requests_total": {(("mode", mode),): 0}}

    for rounds in (1, 2):
        assert _send_all(app) == _expected_statuses(mode)
        expected = {
            "urlguard_violations_total": {
                (("component", component), ("mode", mode), ("route", route), ("rule", rule)): n
                * rounds
                for (rule, component, route), n in VIOLATIONS.items()
            },
            "urlguard_requests_total": {(("mode", mode),): len(REQUESTS) * rounds},
        }
        assert _scrape(registry[1]) == expected


def test_prometheus_hostile_input_stays_out_of_the_exposition(
    parser: Parser, registry: tuple[CollectorRegistry, str]
) -> None:
    app = _guarded("WSGI", "enforce", parser)
    registry[0].register(GuardCollector(app))
    _wsgi_status(app, Sent(b'/files/%0aurlguard_requests_total{mode="x"} 9', HOST, True))
    _wsgi_status(app, Sent(b"/a", b'evil"}', True))
    samples = _scrape(registry[1])
    assert samples["urlguard_requests_total"] == {(("mode", "enforce"),): 2}
    values = {value for labels in samples["urlguard_violations_total"] for _, value in labels}
    assert values <= CONFIGURED | set(app.violations)


def test_registering_reads_no_counts(parser: Parser) -> None:
    """``describe`` names the two families without reading the guard."""
    app = _guarded("ASGI", "report", parser)
    collector = GuardCollector(app)
    assert [(f.name, f.samples) for f in collector.describe()] == [
        ("urlguard_violations", []),
        ("urlguard_requests", []),
    ]


# --- The applications the framework pages set up ------------------------------------------
#
# Starlette and FastAPI make the middleware themselves (``add_middleware``,
# ``middleware=[...]``) and keep no name for it: ``instrument`` and
# ``GuardCollector`` take the application and find the middleware in the stack
# the framework builds. Flask is given the application too; Django's handler is
# wrapped in its ``wsgi.py``, so the middleware is at hand there.

LOCAL = b"localhost"
FRAMEWORK_ROUTES: dict[str, Any] = {"/echo/api": {"path_params": "reject"}}
FRAMEWORK_REQUESTS = (
    Sent(b"/echo/api/x;v=1", LOCAL, rejected=True),  # raw-char under /echo/api
    Sent(b"/echo/%zz", LOCAL, rejected=True),  # malformed-escape, under no route
    Sent(b"/echo/a?q=%FF", LOCAL, rejected=True),  # invalid-utf8 in the query
    Sent(b"/echo/a/b", LOCAL, rejected=False),
)
FRAMEWORK_VIOLATIONS = {
    ("raw-char", "path", "/echo/api"): 1,
    ("malformed-escape", "path", "/"): 1,
    ("invalid-utf8", "query", "/"): 1,
}


def _scope(sent: Sent) -> dict[str, Any]:
    """An HTTP/1.1 scope as uvicorn makes it: ``path`` percent-decoded."""
    path, _, query = sent.target.partition(b"?")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "path": unquote_to_bytes(path).decode("utf-8", "replace"),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", sent.host)],
    }


def _environ(sent: Sent) -> dict[str, Any]:
    """A WSGI environ as gunicorn makes it: ``PATH_INFO`` decoded as latin-1 (PEP 3333)."""
    path, _, query = sent.target.partition(b"?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("ascii"),
        "RAW_URI": sent.target.decode("ascii"),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": sent.host.decode("ascii"),
    }
    setup_testing_defaults(environ)  # the wsgi.* keys
    return environ


def _serve_asgi(app: Any, sent: Sent) -> int:
    messages: list[MutableMapping[str, Any]] = []

    received: list[bool] = []

    async def receive() -> MutableMapping[str, Any]:
        if not received:
            received.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        # The client stays connected: a framework that listens for a disconnect
        # (Django) waits here until it cancels its listener.
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        messages.append(message)

    asyncio.run(app(_scope(sent), receive, send))
    status: int = messages[0]["status"]
    return status


def _serve_wsgi(app: Any, sent: Sent) -> int:
    return _wsgi_call(app, _environ(sent))


class SetUp(NamedTuple):
    """An application guarded as a framework page does it, what is handed to
    the metrics integrations, and how a request reaches it."""

    app: Any
    counted: object
    serve: Callable[[Any, Sent], int]


def starlette_add_middleware(mode: str, parser: Parser) -> SetUp:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def echo(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/echo/{rest:path}", echo)])
    app.add_middleware(asgi.StrictURLMiddleware, mode=mode, routes=FRAMEWORK_ROUTES, parser=parser)
    return SetUp(app, app, _serve_asgi)


def starlette_middleware_list(mode: str, parser: Parser) -> SetUp:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def echo(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    guard = Middleware(asgi.StrictURLMiddleware, mode=mode, routes=FRAMEWORK_ROUTES, parser=parser)
    app = Starlette(routes=[Route("/echo/{rest:path}", echo)], middleware=[guard])
    return SetUp(app, app, _serve_asgi)


def fastapi_add_middleware(mode: str, parser: Parser) -> SetUp:
    from fastapi import FastAPI
    from starlette.middleware.gzip import GZipMiddleware

    app = FastAPI()

    @app.get("/echo/{rest:path}")
    async def echo(rest: str) -> str:
        return "ok"

    app.add_middleware(asgi.StrictURLMiddleware, mode=mode, routes=FRAMEWORK_ROUTES, parser=parser)
    # Added last, so outermost: the guard is found behind it.
    app.add_middleware(GZipMiddleware)
    return SetUp(app, app, _serve_asgi)


def flask_wsgi_app(mode: str, parser: Parser) -> SetUp:
    from flask import Flask

    app = Flask(__name__)

    @app.get("/echo/<path:rest>")
    def echo(rest: str) -> str:
        return "ok"

    app.wsgi_app = wsgi.StrictURLMiddleware(  # type: ignore[method-assign]
        app.wsgi_app, mode=mode, routes=FRAMEWORK_ROUTES, parser=parser
    )
    return SetUp(app, app, _serve_wsgi)


def django_wsgi_py(mode: str, parser: Parser) -> SetUp:
    from django.core.wsgi import get_wsgi_application

    application = wsgi.StrictURLMiddleware(
        get_wsgi_application(), mode=mode, routes=FRAMEWORK_ROUTES, parser=parser
    )
    return SetUp(application, application, _serve_wsgi)


def django_asgi_py(mode: str, parser: Parser) -> SetUp:
    from django.core.asgi import get_asgi_application

    application = asgi.StrictURLMiddleware(
        get_asgi_application(), mode=mode, routes=FRAMEWORK_ROUTES, parser=parser
    )
    return SetUp(application, application, _serve_asgi)


SET_UPS = pytest.mark.parametrize(
    "set_up",
    [
        pytest.param(starlette_add_middleware, id="Starlette app.add_middleware"),
        pytest.param(starlette_middleware_list, id="Starlette middleware=[...]"),
        pytest.param(fastapi_add_middleware, id="FastAPI app.add_middleware, GZip outside"),
        pytest.param(flask_wsgi_app, id="Flask app.wsgi_app"),
        pytest.param(django_wsgi_py, id="Django wsgi.py"),
        pytest.param(django_asgi_py, id="Django asgi.py"),
    ],
)


@pytest.fixture
def django_project() -> Iterator[None]:
    """Django configured with a catch-all view, as a project's settings do."""
    import django
    from django.conf import settings
    from django.http import HttpResponse
    from django.test.utils import override_settings
    from django.urls import re_path

    def echo(request: Any, rest: str) -> HttpResponse:
        return HttpResponse("ok")

    module = types.ModuleType("urlguard_test_metrics_urls")
    module.urlpatterns = [re_path(r"^echo/(?P<rest>.*)$", echo)]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    if not settings.configured:
        settings.configure(SECRET_KEY="urlguard-tests-" + "x" * 40, INSTALLED_APPS=[], USE_TZ=True)
        django.setup()
    with override_settings(
        ROOT_URLCONF=module.__name__, ALLOWED_HOSTS=["localhost"], MIDDLEWARE=[], DEBUG=False
    ):
        yield
    del sys.modules[module.__name__]


def _prometheus_samples(
    registry: CollectorRegistry,
) -> dict[str, dict[tuple[tuple[str, str], ...], int]]:
    samples: dict[str, dict[tuple[tuple[str, str], ...], int]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name.startswith("urlguard_") and sample.name.endswith("_total"):
                values = samples.setdefault(sample.name, {})
                values[tuple(sorted(sample.labels.items()))] = int(sample.value)
    return samples


@SET_UPS
@MODES
@pytest.mark.usefixtures("django_project")
def test_the_framework_set_ups_are_counted(
    parser: Parser, set_up: Callable[[str, Parser], SetUp], mode: str
) -> None:
    """The application as a framework page guards it is what both integrations
    are given, and each request is counted once, each violation once."""
    app, counted, serve = set_up(mode, parser)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(counted, meter_provider=provider)
    registry = CollectorRegistry()
    registry.register(GuardCollector(counted))

    for rounds in (1, 2):
        statuses = [serve(app, sent) for sent in FRAMEWORK_REQUESTS]
        assert statuses == [
            400 if sent.rejected and mode == "enforce" else 200 for sent in FRAMEWORK_REQUESTS
        ]
        violations = {
            (("component", component), ("mode", mode), ("route", route), ("rule", rule)): n * rounds
            for (rule, component, route), n in FRAMEWORK_VIOLATIONS.items()
        }
        requests = {(("mode", mode),): len(FRAMEWORK_REQUESTS) * rounds}
        assert _otel_points(reader.get_metrics_data()) == {
            "urlguard.violations": violations,
            "urlguard.requests": requests,
        }
        assert _prometheus_samples(registry) == {
            "urlguard_violations_total": violations,
            "urlguard_requests_total": requests,
        }
    provider.shutdown()


def test_a_starlette_stack_is_read_once_built(parser: Parser) -> None:
    """Starlette builds its middlewares when the application first runs (its
    lifespan start under a server): until then there is nothing to count and
    no series; from then on, every request."""
    set_up = starlette_add_middleware("enforce", parser)
    registry = CollectorRegistry()
    registry.register(GuardCollector(set_up.counted))
    assert _prometheus_samples(registry) == {}
    assert set_up.serve(set_up.app, FRAMEWORK_REQUESTS[-1]) == 200
    assert _prometheus_samples(registry) == {"urlguard_requests_total": {(("mode", "enforce"),): 1}}


def test_an_application_without_the_middleware_is_refused_at_set_up() -> None:
    from flask import Flask
    from starlette.applications import Starlette

    with pytest.raises(
        TypeError, match=r"Starlette has no StrictURLMiddleware: app\.add_middleware"
    ):
        instrument(Starlette())
    with pytest.raises(TypeError, match=r"Flask\.wsgi_app is not wrapped"):
        GuardCollector(Flask(__name__))


class Opaque:
    """A pure ASGI middleware that keeps its inner application under a name
    of its own: the guard behind it cannot be found."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.inner(scope, receive, send)


def test_a_guard_hidden_behind_another_middleware_fails_the_collection(parser: Parser) -> None:
    set_up = starlette_add_middleware("enforce", parser)
    set_up.app.add_middleware(Opaque)
    collector = GuardCollector(set_up.counted)
    assert set_up.serve(set_up.app, FRAMEWORK_REQUESTS[-1]) == 200
    with pytest.raises(RuntimeError, match="found 0 of the 1 StrictURLMiddleware"):
        list(collector.collect())
