"""``<segment:name>`` route parameters in Flask (werkzeug routing).

The shared truth table (segment_table.py) runs through werkzeug's test
client on both parsers, then behind gunicorn and waitress with raw sockets
(``servers`` marker), because HTTP clients normalise hostile targets away.
The served application is :data:`served`, built here by :func:`build` with
the default parser.

Its routes, each answering JSON ``{"route": name, **view_args}``:

    /units/<segment:unit>                    units
    /units/<a>/<b>                           pair     (the hard case: never gets kg%2Fs)
    /repos/<segment:owner>/<segment:name>    repo
    /files/<segment:name>/<path:rest>        file     (a segment next to a path)
    /dirs/<segment:name>/                    dir      (a trailing slash)
    /plain/<x>                               plain    (a plain parameter)
    /sub/s/<segment:b>                       sub.sub  (a Blueprint, url_prefix="/sub")
    /split/<name>, /loose/<segment:name>, /nul/<segment:u>   (the table's per-route policies)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask, request, url_for
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client

from rawhttp import free_port, running
from rawhttp import request as raw_request
from segment_table import (
    DEFAULT_TABLE,
    KEEP,
    REFUSED,
    ROUND_TRIP,
    TABLE,
    answer_of,
    first_answer,
    with_table_policies,
)
from urlguard.integrations.flask import SegmentConverter
from urlguard.wsgi import StrictURLMiddleware

P = pytest.param
HERE = Path(__file__).resolve().parent
APPS = HERE.parent / "example_apps"
JSON = {"Accept": "application/json"}

ROUTES = [
    ("/units/<segment:unit>", "units"),
    ("/units/<a>/<b>", "pair"),
    ("/repos/<segment:owner>/<segment:name>", "repo"),
    ("/files/<segment:name>/<path:rest>", "file"),
    ("/dirs/<segment:name>/", "dir"),
    ("/plain/<x>", "plain"),
    ("/split/<name>", "split"),
    ("/loose/<segment:name>", "loose"),
    ("/nul/<segment:u>", "nul"),
]

Get = Callable[[str], tuple[int, Any]]


def _answer(name: str) -> Callable[..., dict[str, Any]]:
    def view(**params: Any) -> dict[str, Any]:
        return {"route": name, **params}

    return view


def build(routes: list[tuple[str, str]] = ROUTES, *, guarded: bool = True, **guard: Any) -> Flask:
    """The application, guarded with ``guard`` (by default: ``KEEP`` and the
    shared table's per-route policies)."""
    with_table_policies(guard)
    app = Flask(__name__)
    app.url_map.converters["segment"] = SegmentConverter
    for path, name in routes:
        app.add_url_rule(path, name, _answer(name))
    sub = Blueprint("sub", __name__, url_prefix="/sub")
    sub.add_url_rule("/s/<segment:b>", "sub", _answer("sub"))
    app.register_blueprint(sub)
    if guarded:
        app.wsgi_app = StrictURLMiddleware(app.wsgi_app, **guard)  # type: ignore[method-assign]
    return app


def _answer_of(status: int, body: bytes) -> tuple[int, Any]:
    return answer_of(status, json.loads(body) if status in (200, 400) else None)


def client_get(app: Any) -> Get:
    client = Client(app)

    def get(target: str) -> tuple[int, Any]:
        response = client.get(target, headers=JSON)
        return _answer_of(response.status_code, response.data)

    return get


@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes(parser: Any, target: str, status: int, expected: Any) -> None:
    assert client_get(build(parser=parser))(target) == (status, expected)


@pytest.mark.parametrize(("target", "status", "expected"), DEFAULT_TABLE)
def test_the_default_policy_refuses_every_encoded_slash(
    parser: Any, target: str, status: int, expected: Any
) -> None:
    assert client_get(build(policy=None, parser=parser))(target) == (status, expected)


@pytest.mark.parametrize("order", [1, -1], ids=["segment-first", "segment-last"])
def test_the_hard_case_in_either_order(parser: Any, order: int) -> None:
    get = client_get(build(ROUTES[:2][::order], parser=parser))
    assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})


def test_routes_added_after_the_guard(parser: Any) -> None:
    app = build([("/plain/<x>", "plain")], parser=parser)
    app.add_url_rule("/late/<segment:name>", "late", _answer("late"))
    assert client_get(app)("/late/a%2Fb") == (200, {"route": "late", "name": "a/b"})


def test_the_routing_path_is_the_one_path_after_the_guard(parser: Any) -> None:
    app = build([], parser=parser)
    seen: dict[str, Any] = {}

    @app.get("/spy/<segment:unit>")
    def spy(unit: str) -> dict[str, str]:
        environ = request.environ
        seen.update({k: environ.get(k) for k in ("PATH_INFO", "RAW_URI", "SCRIPT_NAME")})
        seen["path"] = request.path
        return {"unit": unit}

    response = Client(app).get("/spy/caf%C3%A9%2F%25", environ_base={"RAW_URI": "x"})
    assert response.json == {"unit": "café/%"}
    assert seen == {
        "PATH_INFO": "/spy/café%2F%25".encode().decode("latin-1"),
        "RAW_URI": "/spy/caf%C3%A9%2F%25",
        "SCRIPT_NAME": "",
        "path": "/spy/café%2F%25",
    }


def _callables(obj: object) -> dict[str, object]:
    return {name: value for name, value in vars(obj).items() if callable(value)}


def test_nothing_of_the_framework_is_replaced(parser: Any) -> None:
    app = build(parser=parser)
    state = (_callables(app), _callables(app.url_map))
    methods = (app.url_map.bind_to_environ, app.create_url_adapter, app.dispatch_request)
    assert client_get(app)("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert (_callables(app), _callables(app.url_map)) == state
    assert (app.url_map.bind_to_environ, app.create_url_adapter, app.dispatch_request) == methods


def test_applications_mounted_by_a_dispatcher(parser: Any) -> None:
    """Each application guarded below its SCRIPT_NAME routes its own path;
    so does a guard in front of the dispatcher."""
    main, mounted = build(parser=parser), build(parser=parser)
    get = client_get(DispatcherMiddleware(main, {"/mnt": mounted}))
    assert get("/mnt/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/mnt/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})
    assert get("/mnt/sub/s/q%2Fr") == (200, {"route": "sub", "b": "q/r"})
    assert get("/mnt/plain/a%2Fb") == (200, {"route": "plain", "x": "a%2Fb"})
    assert get("/mnt/units/..%2Fx") == (400, "dot-segment")
    assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    front = StrictURLMiddleware(
        DispatcherMiddleware(build(guarded=False).wsgi_app, {"/mnt": build(guarded=False)}),
        policy=KEEP,
        parser=parser,
    )
    get = client_get(front)
    assert get("/mnt/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/mnt/units/..%2Fx") == (400, "dot-segment")


def test_a_redirect_to_the_trailing_slash_is_not_followed_into_double_encoding(
    parser: Any,
) -> None:
    """werkzeug builds its strict-slash redirect by escaping the matched path
    once more, so a routing path's %2F goes out as %252F; the guard refuses
    that URL (double-encoding) rather than route it as other text."""
    client = Client(build(parser=parser))
    response = client.get("/dirs/a%2Fb")
    assert response.status_code == 308
    location = response.headers["Location"]
    assert location.endswith("/dirs/a%252Fb/")
    assert _answer_of(*_status_body(client, "/dirs/a%252Fb/")) == (400, "double-encoding")


def _status_body(client: Client, target: str) -> tuple[int, bytes]:
    response = client.get(target, headers=JSON)
    return response.status_code, response.data


# --- URL building ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_url_building_round_trips(parser: Any, name: str) -> None:
    app = build(parser=parser)
    with app.test_request_context():
        path = url_for("units", unit=name)
    assert client_get(app)(path) == (200, {"route": "units", "unit": name})


def test_url_building_with_two_segments_and_a_blueprint() -> None:
    app = build()
    with app.test_request_context():
        assert url_for("repo", owner="o/o", name="n n") == "/repos/o%2Fo/n%20n"
        assert url_for("sub.sub", b="q/r") == "/sub/s/q%2Fr"
        assert url_for("dir", name="a/b") == "/dirs/a%2Fb/"


@pytest.mark.parametrize("name", REFUSED)
def test_url_building_refuses_what_the_guard_refuses(name: str) -> None:
    app = build()
    with pytest.raises(ValueError, match="segment parameter"):
        SegmentConverter(app.url_map).to_url(name)
    with app.test_request_context(), pytest.raises(ValueError, match="segment parameter"):
        url_for("units", unit=name)


_APP = build()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/%?#; é\x00\u202e.:\\+"), max_size=12) | st.text())
def test_any_value_is_built_and_routed_back_or_refused(name: str) -> None:
    with _APP.test_request_context():
        try:
            path = url_for("units", unit=name)
        except ValueError:
            return
    assert client_get(_APP)(path) == (200, {"route": "units", "unit": name}), path


# --- behind real servers, with raw sockets ---------------------------------------------------

#: What gunicorn and waitress serve (the default parser).
served = build()

MODULE = f"{Path(__file__).stem}:served"


def _gunicorn(port: int) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
            "--graceful-timeout", "1", MODULE]  # fmt: skip


def _waitress(*options: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "waitress", "--listen", f"127.0.0.1:{port}", *options,
                MODULE]  # fmt: skip

    return argv


SERVERS: dict[str, tuple[Callable[[int], list[str]], str]] = {
    "gunicorn": (_gunicorn, ""),
    "waitress": (_waitress(), ""),
    "waitress --url-prefix /mnt": (_waitress("--url-prefix=/mnt"), "/mnt"),
}


@pytest.fixture(scope="module", params=list(SERVERS))
def server(request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    argv, prefix = SERVERS[request.param]
    port = free_port()
    with running(argv(port), port, cwd=HERE, env={"PYTHONPATH": str(APPS)}):
        yield port, prefix


@pytest.mark.servers
@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes_behind_servers(
    server: tuple[int, str], target: str, status: int, expected: Any
) -> None:
    port, prefix = server
    response = raw_request(
        port, (prefix + target).encode(), headers=[(b"Accept", b"application/json")]
    )
    assert response.status is not None
    assert _answer_of(response.status, response.body) == (status, expected)


@pytest.mark.servers
def test_the_very_first_request_of_a_fresh_server() -> None:
    """The example application as its page shows it: a new process's first
    request holds a %2F, and gets its segment."""
    argv = [sys.executable, "-m", "gunicorn", "--bind", "127.0.0.1:{port}", "--workers", "1",
            "--chdir", str(APPS), "flask_app:app"]  # fmt: skip
    assert first_answer(argv, APPS) == {"unit": "kg/s"}
