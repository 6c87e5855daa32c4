"""``{name:segment}`` route parameters in Starlette and FastAPI.

The truth table runs through each framework's test client on both parsers,
then behind uvicorn with raw sockets (``servers`` marker), because HTTP
clients normalise hostile targets away. The applications are in
e2e_apps/segment_routes.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path as FilePath
from typing import Annotated, Any

import pytest
from fastapi import FastAPI, Path
from starlette.exceptions import StarletteDeprecationWarning
from starlette.routing import Route

from e2e_apps import segment_routes
from rawhttp import free_port, request, running
from urlguard import InvalidTarget, Policy, _segments, parse_target
from urlguard.asgi import StrictURLMiddleware
from urlguard.integrations.starlette import SegmentConvertor

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

P = pytest.param

# target -> (status, JSON answer or the rule named by the 400)
TABLE: list[Any] = [
    P("/units/kg%2Fs", 200, {"route": "units", "unit": "kg/s"}, id="kept-slash"),
    P("/units/kg%2fs", 200, {"route": "units", "unit": "kg/s"}, id="lower-case-escape"),
    P("/units/kg/s", 200, {"route": "pair", "a": "kg", "b": "s"}, id="two-segments"),
    P("/units/caf%C3%A9", 200, {"route": "units", "unit": "café"}, id="utf8"),
    P("/units/kg", 200, {"route": "units", "unit": "kg"}, id="plain"),
    P("/units/a%2Fb%2Fc", 200, {"route": "units", "unit": "a/b/c"}, id="two-kept"),
    P("/units/50%25%2F", 200, {"route": "units", "unit": "50%/"}, id="empty-last-part"),
    P("/units/..%2Fx", 400, "dot-segment", id="dot-part"),
    P("/units/%2Fetc", 400, "empty-segment", id="leading-kept"),
    P("/units/a%2F..", 400, "dot-segment", id="trailing-dot-part"),
    P("/units/a%2F%2Fb", 400, "empty-segment", id="empty-part-inside"),
    P("/units/c:%2Fx", 400, "drive-letter", id="drive-part"),
    P("/units/a%252Fb", 400, "double-encoding", id="double-encoded"),
    P("/repos/o%2Fo/n%2Fn", 200, {"route": "repo", "owner": "o/o", "name": "n/n"}, id="two-params"),
    P("/repos/o/n%2Fn", 200, {"route": "repo", "owner": "o", "name": "n/n"}, id="second-param"),
    P("/files/a%2Fb/c/d", 200, {"route": "file", "name": "a/b", "rest": "c/d"}, id="beside-path"),
    P("/files/a/c%2Fd", 400, "encoded-slash", id="kept-in-path-param"),
    P("/dirs/a%2Fb/", 200, {"route": "dir", "name": "a/b"}, id="trailing-slash"),
    P("/sub/s/q%2Fr", 200, {"route": "sub", "b": "q/r"}, id="mounted"),
    P("/sub%2Fs/x", 400, "encoded-slash", id="kept-in-mount-prefix"),
    P("/plain/a%2Fb", 400, "encoded-slash", id="no-segment-param"),
    P("/plain/a", 200, {"route": "plain", "x": "a"}, id="no-segment-param-plain"),
    P("/nowhere/a%2Fb", 400, "encoded-slash", id="no-route"),
    P("/units/kg%5Cs", 400, "encoded-backslash", id="backslash-not-kept"),
]

# The same targets, for an application with no segment route: as before.
PLAIN_TABLE: list[Any] = [
    P("/units/kg%2Fs", 400, "encoded-slash", id="kept-slash"),
    P("/units/..%2Fx", 400, "encoded-slash", id="dot-part"),
    P("/units/kg/s", 200, {"route": "pair", "a": "kg", "b": "s"}, id="two-segments"),
    P("/units/kg", 200, {"route": "units", "unit": "kg"}, id="plain"),
]

Get = Callable[[str], tuple[int, Any]]


def _client_get(app: Any) -> Iterator[Get]:
    with TestClient(app) as client:

        def get(target: str) -> tuple[int, Any]:
            response = client.get(target, headers={"Accept": "application/json"})
            body = response.json()
            return response.status_code, body if response.status_code == 200 else body["rule"]

        yield get


@pytest.fixture(params=["starlette", "fastapi"])
def get(request: pytest.FixtureRequest, parser: Any) -> Iterator[Get]:
    build = getattr(segment_routes, request.param)
    yield from _client_get(build(parser=parser))


@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes(get: Get, target: str, status: int, expected: Any) -> None:
    assert get(target) == (status, expected)


@pytest.mark.parametrize(("target", "status", "expected"), PLAIN_TABLE)
def test_an_application_without_segment_routes_is_unchanged(
    parser: Any, target: str, status: int, expected: Any
) -> None:
    for get in _client_get(segment_routes.starlette(segment="", parser=parser)):
        assert get(target) == (status, expected)


@pytest.mark.parametrize("order", [1, -1], ids=["segment-first", "segment-last"])
def test_the_hard_case_in_either_order(parser: Any, order: int) -> None:
    routes = [("/units/{unit:segment}", "units"), ("/units/{a}/{b}", "pair")][::order]
    for build in (segment_routes.starlette, segment_routes.fastapi):
        for get in _client_get(build(routes, parser=parser)):
            assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
            assert get("/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})


def test_routes_added_after_the_first_request_are_seen(parser: Any) -> None:
    app = segment_routes.starlette([("/plain/{x}", "plain")], parser=parser)
    for get in _client_get(app):
        assert get("/late/a%2Fb") == (400, "encoded-slash")
        app.add_route("/late/{name:segment}", segment_routes._answer("late"))
        assert get("/late/a%2Fb") == (200, {"route": "late", "name": "a/b"})


def test_the_server_keys_are_not_rewritten(parser: Any) -> None:
    seen: dict[str, Any] = {}

    async def spy(request: Any) -> Any:
        seen.update({k: request.scope.get(k) for k in ("path", "raw_path", "root_path")})
        seen["target"] = request.scope["urlguard.target"].segments
        return await segment_routes._answer("units")(request)

    app = segment_routes.starlette([], parser=parser)
    app.router.routes.insert(0, Route("/units/{unit:segment}", spy))
    for get in _client_get(app):
        assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert seen == {
        "path": "/units/kg/s",
        "raw_path": b"/units/kg%2Fs",
        "root_path": "",
        "target": ("units", "kg/s"),
    }


def test_a_websocket_route_takes_a_segment(parser: Any) -> None:
    app = segment_routes.starlette(parser=parser)
    with TestClient(app) as client, client.websocket_connect("/ws/a%2Fb") as ws:
        assert ws.receive_json() == {"room": "a/b"}


def test_openapi_and_validators_see_a_string_parameter() -> None:
    app = FastAPI()

    @app.get("/units/{unit:segment}")
    async def unit(unit: Annotated[str, Path(max_length=4)]) -> dict[str, str]:
        return {"unit": unit}

    app.add_middleware(StrictURLMiddleware)
    (parameter,) = app.openapi()["paths"]["/units/{unit}"]["get"]["parameters"]
    assert parameter["in"] == "path"
    assert parameter["schema"]["type"] == "string"
    with TestClient(app) as client:
        assert client.get("/units/kg%2Fs").json() == {"unit": "kg/s"}
        # Five characters: the validator refuses them.
        assert client.get("/units/kg%2Fs%2Fh").status_code == 422


NAMES = ["kg/s", "50%", "a?b", "a#b", "a b", "café", "a/", "ü/ß?#%20"]
# Names with a '..' or an empty part beside a '/': no policy reads them back,
# since the parts beside a kept separator obey the path rules whatever the policy.
UNREADABLE = [P("../x", "dot-segment", id="../x"), P("/a", "empty-segment", id="/a")]


@pytest.mark.parametrize("name", NAMES)
def test_url_building_round_trips(name: str) -> None:
    for app in (segment_routes.starlette_app, segment_routes.fastapi_app):
        path = app.url_path_for("units", unit=name)
        assert "/" not in path.removeprefix("/units/")
        # What urlguard, keeping %2F, gives back is the name.
        assert parse_target(path.encode(), LENIENT).segments == ("units", name)


@pytest.mark.parametrize(("name", "rule"), UNREADABLE)
def test_a_built_url_with_a_dot_or_empty_part_is_refused(name: str, rule: str) -> None:
    for app in (segment_routes.starlette_app, segment_routes.fastapi_app):
        path = app.url_path_for("units", unit=name)
        with pytest.raises(InvalidTarget) as caught:
            parse_target(path.encode(), LENIENT)
        assert caught.value.rule == rule


# Only to read back what was built: the rules are not what is tested here.
LENIENT = Policy(
    encoded_slash="keep", dot_segment="allow", empty_segment="allow", double_encoding="allow"
)


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_url_building_refuses_what_no_escape_can_carry(name: str) -> None:
    with pytest.raises(ValueError, match="segment parameter"):
        SegmentConvertor().to_string(name)


def test_the_view_marks_kept_slashes_only() -> None:
    assert _segments.view_of(("units", "kg/s")) == "/units/kg\x00s"
    assert _segments.view_of(("",)) == "/"
    assert _segments.view_of(("a", "b"), "/mnt") == "/mnt/a/b"


def test_a_decoded_nul_is_itself_where_the_policy_allows_it(parser: Any) -> None:
    # U+0000 stands for a kept '/' in a view only; this policy admits a real one
    # (and so cannot route a kept '/': the view could not tell them apart).
    policy = Policy(allow_chars="\x00")
    for get in _client_get(segment_routes.starlette(policy=policy, parser=parser)):
        assert get("/units/a%2Fb") == (400, "encoded-slash")
        assert get("/units/a%00b") == (200, {"route": "units", "unit": "a\x00b"})


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
    body = json.loads(response.body)
    assert (response.status, body if response.status == 200 else body["rule"]) == (
        status,
        expected,
    )


NEVER_ON_VIEWS = """
import warnings
warnings.simplefilter("ignore")
import starlette.routing
from starlette.testclient import TestClient
from e2e_apps import segment_routes

original = starlette.routing.get_route_path
with TestClient(segment_routes.plain_app) as client:
    assert client.get("/units/kg%2Fs").status_code == 400
assert starlette.routing.get_route_path is original, "routes on views without segment routes"
with TestClient(segment_routes.starlette_app) as client:
    assert client.get("/units/kg%2Fs").json() == {"route": "units", "unit": "kg/s"}
assert starlette.routing.get_route_path is not original, "segment routes and no views"
print("ok")
"""


def test_an_application_without_segment_routes_never_routes_on_views() -> None:
    # A fresh interpreter: in this one another test may have made Starlette
    # route on views already.
    done = subprocess.run(
        [sys.executable, "-c", NEVER_ON_VIEWS],
        cwd=FilePath(__file__).parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
