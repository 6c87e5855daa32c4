"""The one-line accessors, through each framework's own test client: Starlette
(TestClient), FastAPI (a dependency), Flask (its test client) and Django under
WSGI and ASGI (settings configured in-process, a minimal urlconf)."""

from __future__ import annotations

import asyncio
import sys
import types
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, WebSocket
from flask import Flask
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocketDisconnect
from werkzeug.test import Client

import urlguard.integrations.django as django_helpers
import urlguard.integrations.fastapi as fastapi_helpers
import urlguard.integrations.flask as flask_helpers
import urlguard.integrations.starlette as starlette_helpers
from conftest import Parser
from urlguard import InvalidTarget, Target
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.integrations import TargetUnavailable, target_from, violation_from
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

with warnings.catch_warnings():
    # Starlette asks for httpx2 over httpx; the project's test extra installs httpx.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient, WebSocketDenialResponse

P = pytest.param


def describe(target: Target) -> dict[str, Any]:
    return {"segments": list(target.segments), "query": [list(pair) for pair in target.query]}


# --- the shared helpers ----------------------------------------------------------------------


def test_target_from_and_violation_from(parser: Parser) -> None:
    target = parser.parse_target(b"/a")
    exc = InvalidTarget("invalid-utf8", "path", 0, 1)
    assert target_from({"urlguard.target": target}) is target
    assert violation_from({"urlguard.violation": exc}) is exc
    assert violation_from({}) is None
    with pytest.raises(TargetUnavailable, match="not installed") as missing:
        target_from({})
    assert missing.value.violation is None
    with pytest.raises(TargetUnavailable, match="report-only") as reported:
        target_from({"urlguard.violation": exc})
    assert reported.value.violation is exc
    assert isinstance(reported.value, RuntimeError)


# --- Starlette -------------------------------------------------------------------------------


async def st_echo(request: Request) -> JSONResponse:
    return JSONResponse(describe(starlette_helpers.get_target(request)))


async def st_report(request: Request) -> JSONResponse:
    violation = starlette_helpers.get_violation(request)
    try:
        starlette_helpers.get_target(request)
        has_target = True
    except TargetUnavailable:
        has_target = False
    return JSONResponse({"violation": violation and violation.rule, "target": has_target})


async def st_ws(websocket: Any) -> None:
    await websocket.accept()
    await websocket.send_json(describe(starlette_helpers.get_target(websocket)))
    await websocket.close()


def starlette_app(
    parser: Parser | None = None,
    *,
    guarded: bool = True,
    events: list[str] | None = None,
    **options: Any,
) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if events is not None:
            events.append("startup")
        yield
        if events is not None:
            events.append("shutdown")

    return Starlette(
        routes=[
            Route("/echo/{rest:path}", st_echo),
            Route("/report/{rest:path}", st_report),
            WebSocketRoute("/ws/{rest:path}", st_ws),
        ],
        middleware=[Middleware(ASGIGuard, parser=parser, **options)] if guarded else [],
        lifespan=lifespan,
    )


STARLETTE_REQUESTS = [
    P(
        "/echo/caf%C3%A9/x?q=a+b",
        200,
        {"segments": ["echo", "café", "x"], "query": [["q", "a b"]]},
        id="ok",
    ),
    P(
        "/echo/units/kg%2Fs",
        200,
        {"segments": ["echo", "units", "kg/s"], "query": []},
        id="route keeps %2F",
    ),
    P("/echo/a%2Fb", 400, "encoded-slash", id="encoded slash"),
    P("/echo/caf%C4", 400, "invalid-utf8", id="invalid utf-8"),
    P("/echo/a?q=%ED%A0%80", 400, "invalid-utf8", id="surrogate in the query"),
    P("/echo/%2e%2e/etc", 400, "dot-segment", id="dot segment"),
]


@pytest.mark.parametrize(("url", "status", "expected"), STARLETTE_REQUESTS)
def test_starlette(parser: Parser, url: str, status: int, expected: Any) -> None:
    app = starlette_app(parser, routes={"/echo/units/": {"encoded_slash": "keep"}})
    with TestClient(app) as client:
        response = client.get(url)
    assert response.status_code == status
    if status == 200:
        assert response.json() == expected
    else:
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        assert response.text.startswith(f"400 Bad Request: {expected}: ")


def test_starlette_problem_json_and_keep_alive(parser: Parser) -> None:
    with TestClient(starlette_app(parser)) as client:
        bad = client.get("/echo/%C4", headers={"Accept": "application/json"})
        good = client.get("/echo/fine")
    assert bad.status_code == 400
    assert bad.headers["content-type"] == "application/problem+json"
    assert bad.json()["rule"] == "invalid-utf8"
    assert good.json()["segments"] == ["echo", "fine"]


def test_starlette_lifespan_passes_through() -> None:
    events: list[str] = []
    with TestClient(starlette_app(events=events)) as client:
        assert events == ["startup"]
        client.get("/echo/x")
    assert events == ["startup", "shutdown"]


def test_starlette_websocket_accepted(parser: Parser) -> None:
    with (
        TestClient(starlette_app(parser)) as client,
        client.websocket_connect("/ws/caf%C3%A9") as ws,
    ):
        assert ws.receive_json()["segments"] == ["ws", "café"]


def test_starlette_websocket_denied_before_accept(parser: Parser) -> None:
    # Starlette's TestClient offers the websocket.http.response extension.
    with (
        TestClient(starlette_app(parser)) as client,
        pytest.raises(WebSocketDenialResponse) as denied,
        client.websocket_connect("/ws/caf%C4"),
    ):
        pytest.fail("the handshake was accepted")
    assert denied.value.status_code == 400
    assert b"invalid-utf8" in denied.value.content


def test_starlette_websocket_closed_without_the_extension(parser: Parser) -> None:
    inner = starlette_app(guarded=False)

    async def strip_extension(scope: Any, receive: Any, send: Any) -> None:
        scope = dict(scope, extensions={})
        await ASGIGuard(inner, parser=parser)(scope, receive, send)

    with (
        TestClient(strip_extension) as client,
        pytest.raises(WebSocketDisconnect) as closed,
        client.websocket_connect("/ws/caf%C4"),
    ):
        pytest.fail("the handshake was accepted")
    assert closed.value.code == 1008
    assert not isinstance(closed.value, WebSocketDenialResponse)


def test_starlette_report_mode(parser: Parser) -> None:
    with TestClient(starlette_app(parser, mode="report")) as client:
        bad = client.get("/report/a%2Fb")
        good = client.get("/report/ab")
    assert bad.json() == {"violation": "encoded-slash", "target": False}
    assert good.json() == {"violation": None, "target": True}


def test_starlette_without_the_middleware() -> None:
    with (
        TestClient(starlette_app(guarded=False)) as client,
        pytest.raises(TargetUnavailable, match="not installed"),
    ):
        client.get("/echo/x")


def test_httpx_asgi_transport(parser: Parser) -> None:
    async def main() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=starlette_app(parser))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get("/echo/caf%C3%A9?q=1"), await client.get("/echo/%zz")

    good, bad = asyncio.run(main())
    assert good.json() == {"segments": ["echo", "café"], "query": [["q", "1"]]}
    assert bad.status_code == 400
    assert "malformed-escape" in bad.text


# --- FastAPI ---------------------------------------------------------------------------------


def fastapi_app(parser: Parser | None = None, *, guarded: bool = True, **options: Any) -> FastAPI:
    app = FastAPI()
    if guarded:
        app.add_middleware(ASGIGuard, parser=parser, **options)

    @app.get("/echo/{rest:path}")
    async def echo(rest: str, target: fastapi_helpers.GuardedTarget) -> dict[str, Any]:
        return describe(target) | {"rest": rest}

    @app.get("/optional/{rest:path}")
    async def optional(
        target: fastapi_helpers.OptionalTarget, violation: fastapi_helpers.Violation
    ) -> dict[str, Any]:
        return {
            "target": None if target is None else list(target.segments),
            "violation": None if violation is None else violation.rule,
        }

    @app.websocket("/ws/{rest:path}")
    async def ws(websocket: WebSocket, target: fastapi_helpers.GuardedTarget) -> None:
        await websocket.accept()
        await websocket.send_json(describe(target))
        await websocket.close()

    return app


def test_fastapi_dependency(parser: Parser) -> None:
    app = fastapi_app(parser, routes={"/echo/files/": {"encoded_slash": "keep"}})
    with TestClient(app) as client:
        ok = client.get("/echo/files/a%2Fb?x=%C3%A9")
        bad = client.get("/echo/a%2Fb")
        with client.websocket_connect("/ws/caf%C3%A9") as ws:
            ws_json = ws.receive_json()
    assert ok.json() == {
        "segments": ["echo", "files", "a/b"],
        "query": [["x", "é"]],
        "rest": "files/a%2Fb",  # the routing path: the kept / still escaped
    }
    assert (bad.status_code, bad.text.split(":")[1].strip()) == (400, "encoded-slash")
    assert ws_json["segments"] == ["ws", "café"]


def test_fastapi_report_mode_optional_dependencies(parser: Parser) -> None:
    with TestClient(fastapi_app(parser, mode="report")) as client:
        bad = client.get("/optional/caf%C4")
        good = client.get("/optional/ok")
        with pytest.raises(TargetUnavailable, match="invalid-utf8"):
            client.get("/echo/caf%C4")
    assert bad.json() == {"target": None, "violation": "invalid-utf8"}
    assert good.json() == {"target": ["optional", "ok"], "violation": None}


def test_fastapi_without_the_middleware() -> None:
    with (
        TestClient(fastapi_app(guarded=False)) as client,
        pytest.raises(TargetUnavailable, match="not installed"),
    ):
        client.get("/echo/x")


# --- Flask -----------------------------------------------------------------------------------


def flask_app(parser: Parser | None = None, *, guarded: bool = True, **options: Any) -> Flask:
    app = Flask(__name__)
    app.testing = True

    @app.get("/echo/<path:rest>")
    def echo(rest: str) -> dict[str, Any]:
        return describe(flask_helpers.get_target())

    @app.get("/report/<path:rest>")
    def report(rest: str) -> dict[str, Any]:
        violation = flask_helpers.get_violation()
        return {"violation": None if violation is None else violation.rule}

    if guarded:
        app.wsgi_app = WSGIGuard(app.wsgi_app, parser=parser, **options)  # type: ignore[method-assign]
    return app


FLASK_REQUESTS = [
    P(
        "/echo/caf%C3%A9/x?q=a+b",
        200,
        {"segments": ["echo", "café", "x"], "query": [["q", "a b"]]},
        id="ok",
    ),
    P("/echo/files/a%2Fb", 200, {"segments": ["echo", "files", "a/b"], "query": []}, id="route"),
    P("/echo/a%2Fb", 400, "encoded-slash", id="encoded slash"),
    P("/echo/%C0%AF", 400, "invalid-utf8", id="overlong"),
    P("/echo/a?q=%00", 400, "forbidden-char", id="NUL in the query"),
]


@pytest.mark.parametrize(("url", "status", "expected"), FLASK_REQUESTS)
def test_flask(parser: Parser, url: str, status: int, expected: Any) -> None:
    app = flask_app(parser, routes={"/echo/files/": {"encoded_slash": "keep"}})
    response = app.test_client().get(url)
    assert response.status_code == status
    if status == 200:
        assert response.json == expected
    else:
        assert response.text.startswith(f"400 Bad Request: {expected}: ")


def test_flask_report_mode(parser: Parser) -> None:
    client = flask_app(parser, mode="report").test_client()
    assert client.get("/report/caf%C4").json == {"violation": "invalid-utf8"}
    assert client.get("/report/ok").json == {"violation": None}
    with pytest.raises(TargetUnavailable, match="report-only"):
        client.get("/echo/caf%C4")


def test_flask_without_the_middleware() -> None:
    with pytest.raises(TargetUnavailable, match="not installed"):
        flask_app(guarded=False).test_client().get("/echo/x")


# --- Django, WSGI and ASGI -------------------------------------------------------------------

URLCONF = "urlguard_test_django_urls"


def _django_view(request: Any, rest: str) -> Any:
    from django.http import JsonResponse

    try:
        return JsonResponse(describe(django_helpers.get_target(request)))
    except TargetUnavailable as missing:
        violation = django_helpers.get_violation(request)
        return JsonResponse(
            {"unavailable": str(missing), "violation": violation and violation.rule}
        )


@pytest.fixture(scope="module")
def django_settings() -> Iterator[None]:
    import django
    from django.conf import settings
    from django.test.utils import override_settings
    from django.urls import re_path

    module = types.ModuleType(URLCONF)
    module.urlpatterns = [re_path(r"^echo/(?P<rest>.*)$", _django_view)]  # type: ignore[attr-defined]
    sys.modules[URLCONF] = module
    if not settings.configured:
        settings.configure(
            DEBUG=False,
            SECRET_KEY="urlguard-tests-" + "x" * 40,
            ALLOWED_HOSTS=["*"],
            ROOT_URLCONF=URLCONF,
            MIDDLEWARE=[],
            INSTALLED_APPS=[],
            USE_TZ=True,
        )
        django.setup()
    with override_settings(ROOT_URLCONF=URLCONF, ALLOWED_HOSTS=["*"], MIDDLEWARE=[]):
        yield
    del sys.modules[URLCONF]


DJANGO_REQUESTS = [
    P(
        "/echo/caf%C3%A9?q=a+b",
        200,
        {"segments": ["echo", "café"], "query": [["q", "a b"]]},
        id="ok",
    ),
    P("/echo/caf%C4", 400, "invalid-utf8", id="invalid utf-8 (Django would re-encode it)"),
    P("/echo/a%2Fb", 400, "encoded-slash", id="encoded slash"),
]


@pytest.mark.usefixtures("django_settings")
@pytest.mark.parametrize(("url", "status", "expected"), DJANGO_REQUESTS)
def test_django_wsgi(parser: Parser, url: str, status: int, expected: Any) -> None:
    from django.core.wsgi import get_wsgi_application

    response = Client(WSGIGuard(get_wsgi_application(), parser=parser)).get(url)
    assert response.status_code == status
    if status == 200:
        assert response.json == expected
    else:
        assert response.text.startswith(f"400 Bad Request: {expected}: ")


@pytest.mark.usefixtures("django_settings")
@pytest.mark.parametrize(("url", "status", "expected"), DJANGO_REQUESTS)
def test_django_asgi(parser: Parser, url: str, status: int, expected: Any) -> None:
    from django.core.asgi import get_asgi_application

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=ASGIGuard(get_asgi_application(), parser=parser))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(url)

    response = asyncio.run(main())
    assert response.status_code == status
    if status == 200:
        assert response.json() == expected
    else:
        assert response.text.startswith(f"400 Bad Request: {expected}: ")


@pytest.mark.usefixtures("django_settings")
def test_django_report_mode_under_wsgi(parser: Parser) -> None:
    from django.core.wsgi import get_wsgi_application

    response = Client(WSGIGuard(get_wsgi_application(), mode="report", parser=parser)).get(
        "/echo/a%2Fb"
    )
    assert response.json is not None
    assert response.json["violation"] == "encoded-slash"
    assert "report-only" in response.json["unavailable"]


@pytest.mark.usefixtures("django_settings")
def test_django_without_the_middleware() -> None:
    from django.core.wsgi import get_wsgi_application

    response = Client(get_wsgi_application()).get("/echo/x")
    assert response.json is not None
    assert "not installed" in response.json["unavailable"]
