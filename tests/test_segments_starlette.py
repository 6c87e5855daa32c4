"""``{name:segment}`` route parameters in Starlette and FastAPI.

The shared truth table (segment_table.py) runs through each framework's
test client on both parsers, then behind uvicorn with raw sockets
(``servers`` marker), because HTTP clients normalise hostile targets away.
The applications are in e2e_apps/segment_routes.py.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path as FilePath
from typing import Annotated, Any

import fastapi.routing
import pytest
import starlette.routing
from fastapi import FastAPI, Path
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from e2e_apps import segment_routes
from rawhttp import free_port, request, running
from segment_table import DEFAULT_TABLE, KEEP, REFUSED, ROUND_TRIP, TABLE, answer_of, first_answer
from urlguard import Policy
from urlguard.asgi import StrictURLMiddleware
from urlguard.integrations.starlette import SegmentConvertor

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

Get = Callable[[str], tuple[int, Any]]


def _client_get(app: Any) -> Iterator[Get]:
    with TestClient(app, follow_redirects=False) as client:

        def get(target: str) -> tuple[int, Any]:
            response = client.get(target, headers={"Accept": "application/json"})
            json_body = "json" in response.headers.get("content-type", "")
            return answer_of(response.status_code, response.json() if json_body else None)

        yield get


@pytest.fixture(params=["starlette", "fastapi"])
def get(request: pytest.FixtureRequest, parser: Any) -> Iterator[Get]:
    build = getattr(segment_routes, request.param)
    yield from _client_get(build(parser=parser))


@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes(get: Get, target: str, status: int, expected: Any) -> None:
    assert get(target) == (status, expected)


@pytest.mark.parametrize(("target", "status", "expected"), DEFAULT_TABLE)
def test_the_default_policy_refuses_every_encoded_slash(
    parser: Any, target: str, status: int, expected: Any
) -> None:
    for get in _client_get(segment_routes.starlette(policy=None, parser=parser)):
        assert get(target) == (status, expected)


@pytest.mark.parametrize("order", [1, -1], ids=["segment-first", "segment-last"])
def test_the_hard_case_in_either_order(parser: Any, order: int) -> None:
    routes = [("/units/{unit:segment}", "units"), ("/units/{a}/{b}", "pair")][::order]
    for build in (segment_routes.starlette, segment_routes.fastapi):
        for get in _client_get(build(routes, parser=parser)):
            assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
            assert get("/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})


def test_routes_added_after_the_first_request(parser: Any) -> None:
    app = segment_routes.starlette([("/plain/{x}", "plain")], parser=parser)
    for get in _client_get(app):
        assert get("/late/a%2Fb") == (404, None)
        app.add_route("/late/{name:segment}", segment_routes._answer("late"))
        assert get("/late/a%2Fb") == (200, {"route": "late", "name": "a/b"})


def _spying_app(parser: Any, root_path: str = "") -> tuple[Starlette, dict[str, Any]]:
    seen: dict[str, Any] = {}

    async def spy(request: Request) -> Response:
        seen.update({k: request.scope.get(k) for k in ("path", "raw_path", "root_path")})
        seen["url.path"] = request.url.path
        seen["target"] = request.scope["urlguard.target"].segments
        return JSONResponse({"unit": request.path_params["unit"]})

    app = Starlette(
        routes=[Route("/units/{unit:segment}", spy)],
        middleware=[Middleware(StrictURLMiddleware, policy=KEEP, parser=parser)],
    )
    return app, seen


def test_the_routing_path_is_the_one_path_after_the_guard(parser: Any) -> None:
    app, seen = _spying_app(parser)
    with TestClient(app) as client:
        assert client.get("/units/kg%2Fs%25").json() == {"unit": "kg/s%"}
    assert seen == {
        "path": "/units/kg%2Fs%25",
        "url.path": "/units/kg%2Fs%25",
        "raw_path": b"/units/kg%2Fs%25",
        "root_path": "",
        "target": ("units", "kg/s%"),
    }


def test_a_request_without_a_kept_slash_keeps_the_servers_path(parser: Any) -> None:
    app, seen = _spying_app(parser)
    with TestClient(app) as client:
        assert client.get("/units/50%25").json() == {"unit": "50%"}
    assert seen["path"] == "/units/50%"


def test_the_routing_path_below_a_root_path(parser: Any) -> None:
    app, seen = _spying_app(parser)
    with TestClient(app, root_path="/mnt") as client:
        assert client.get("/mnt/units/kg%2Fs").json() == {"unit": "kg/s"}
    assert seen["path"] == "/mnt/units/kg%2Fs"
    assert seen["root_path"] == "/mnt"


def _callables(namespace: object) -> dict[str, object]:
    return {name: value for name, value in vars(namespace).items() if callable(value)}


def test_nothing_of_the_framework_is_replaced(parser: Any) -> None:
    modules = (starlette.routing, fastapi.routing)
    before = [_callables(module) for module in modules]
    apps = (segment_routes.starlette(parser=parser), segment_routes.fastapi(parser=parser))
    state = [_callables(app.router) for app in apps]
    for app in apps:
        for get in _client_get(app):
            assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert [_callables(module) for module in modules] == before
    assert [_callables(app.router) for app in apps] == state


def test_a_websocket_route_takes_a_segment(parser: Any) -> None:
    app = segment_routes.starlette(parser=parser)
    with TestClient(app) as client, client.websocket_connect("/ws/a%2Fb") as ws:
        assert ws.receive_json() == {"room": "a/b"}


def test_openapi_and_validators_see_a_string_parameter() -> None:
    app = FastAPI()

    @app.get("/units/{unit:segment}")
    async def unit(unit: Annotated[str, Path(max_length=4)]) -> dict[str, str]:
        return {"unit": unit}

    app.add_middleware(StrictURLMiddleware, policy=KEEP)
    (parameter,) = app.openapi()["paths"]["/units/{unit}"]["get"]["parameters"]
    assert parameter["in"] == "path"
    assert parameter["schema"]["type"] == "string"
    with TestClient(app) as client:
        assert client.get("/units/kg%2Fs").json() == {"unit": "kg/s"}
        # Five characters: the validator refuses them.
        assert client.get("/units/kg%2Fs%2Fh").status_code == 422


def test_a_redirect_to_the_trailing_slash_keeps_the_encoded_slash(parser: Any) -> None:
    for build in (segment_routes.starlette, segment_routes.fastapi):
        with TestClient(build(parser=parser), follow_redirects=False) as client:
            response = client.get("/dirs/a%2Fb")
            assert response.status_code == 307
            assert response.headers["location"] == "http://testserver/dirs/a%2Fb/"
            assert client.get(response.headers["location"]).json() == {
                "route": "dir",
                "name": "a/b",
            }


# --- the issues the routing path closes -----------------------------------------------------


def test_split_parameters_never_hide_a_prefix(parser: Any) -> None:
    """The router sees the path everyone else sees, ';' parameters included:
    a middleware that refuses ``/admin/`` and the router agree."""

    async def admin(request: Request) -> Response:
        return JSONResponse({"route": "admin"})

    async def refuse_admin(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and Request(scope).url.path.startswith("/admin/"):
            await JSONResponse({"refused": True}, status_code=403)(scope, receive, send)
            return
        await inner(scope, receive, send)

    policy = Policy(path_params="split", encoded_slash="keep", double_encoding="allow")
    inner = Starlette(routes=[Route("/admin/{p}", admin)])
    app = StrictURLMiddleware(
        refuse_admin,
        policy=policy,
        routes={"/admin/": {"double_encoding": "reject"}},
        parser=parser,
    )
    for get in _client_get(app):
        assert get("/admin;x=1/secret") == (404, None)
        assert get("/admin;x/%2541") == (404, None)
        assert get("/admin/secret")[0] == 403


def test_a_nul_the_policy_allows_is_never_a_slash(parser: Any) -> None:
    policy = Policy(path_params="split", allow_chars="\x00", encoded_slash="keep")
    app = segment_routes.starlette([("/units/{unit:segment}", "units")], policy=policy)
    for get in _client_get(app):
        status, body = get("/units/%00etc%00passwd;x")
        assert status == 200
        assert "/" not in body["unit"]
    plain = segment_routes.starlette([("/f/{name}", "f")], policy=policy)
    for get in _client_get(plain):
        assert get("/f;x/a%2Fb") == (404, None)
        assert get("/f/a%2Fb") == (200, {"route": "f", "name": "a%2Fb"})


# --- building URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_url_building_round_trips(parser: Any, name: str) -> None:
    for build in (segment_routes.starlette, segment_routes.fastapi):
        app = build(parser=parser)
        path = app.url_path_for("units", unit=name)
        for get in _client_get(app):
            assert get(path) == (200, {"route": "units", "unit": name})


@pytest.mark.parametrize("name", REFUSED)
def test_url_building_refuses_what_the_guard_refuses(name: str) -> None:
    with pytest.raises(ValueError, match="segment parameter"):
        segment_routes.starlette_app.url_path_for("units", unit=name)
    with pytest.raises(ValueError, match="segment parameter"):
        SegmentConvertor().to_string(name)


_APP = segment_routes.starlette()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/%?#; é\x00\u202e.:\\+"), max_size=12) | st.text())
def test_any_value_is_built_and_routed_back_or_refused(name: str) -> None:
    try:
        path = _APP.url_path_for("units", unit=name)
    except ValueError:
        return
    with TestClient(_APP, follow_redirects=False) as client:
        response = client.get(path)
        assert response.status_code == 200, (name, path, response.text)
        assert response.json() == {"route": "units", "unit": name}


# --- behind a real server, with raw sockets ----------------------------------------------------


@pytest.fixture(scope="module", params=["starlette_app", "fastapi_app"])
def served(request: pytest.FixtureRequest) -> Iterator[int]:
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--log-level", "warning", f"e2e_apps.segment_routes:{request.param}"]
    with running(argv, port, cwd=FilePath(__file__).parent):
        yield port


@pytest.mark.servers
@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes_behind_uvicorn(
    served: int, target: str, status: int, expected: Any
) -> None:
    response = request(served, target.encode(), headers=[(b"Accept", b"application/json")])
    assert response.status is not None
    json_body = b"json" in dict(response.headers).get(b"content-type", b"")
    body = json.loads(response.body) if json_body else None
    assert answer_of(response.status, body) == (status, expected)


@pytest.mark.servers
@pytest.mark.parametrize("app", ["starlette_app:app", "fastapi_app:app"])
def test_the_very_first_request_of_a_fresh_server(app: str) -> None:
    """The example application as its page shows it: a new process's first
    request holds a %2F, and gets its segment."""
    examples = FilePath(__file__).parent.parent / "example_apps"
    argv = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}",
            "--log-level", "warning", "--app-dir", str(examples), app]  # fmt: skip
    assert first_answer(argv, examples) == {"unit": "kg/s"}
