"""``<segment:name>`` route parameters in Flask (werkzeug routing).

The truth table runs through werkzeug's test client on both parsers, then
behind gunicorn and waitress with raw sockets (``servers`` marker), because
HTTP clients normalise hostile targets away. The served application is
:data:`served`, built here by :func:`build` with the default parser.

Its routes, each answering JSON ``{"route": name, **view_args}``:

    /units/<segment:unit>                    units
    /units/<a>/<b>                           pair     (the hard case: never gets kg%2Fs)
    /repos/<segment:owner>/<segment:name>    repo
    /files/<segment:name>/<path:rest>        file     (a segment next to a path)
    /dirs/<segment:name>/                    dir      (a trailing slash)
    /plain/<x>                               plain    (declares no segment)
    /sub/s/<segment:b>                       sub.sub  (a Blueprint, url_prefix="/sub")
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask, Request, request, url_for
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import BaseConverter, Rule
from werkzeug.test import Client

import urlguard._guard
from rawhttp import free_port, running
from rawhttp import request as raw_request
from urlguard import InvalidTarget, Policy, _segments, parse_target
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
]

# target -> (status, JSON answer, or the rule named by the 400, or None for a 404)
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
    P("/units/kg%5Cs", 400, "encoded-backslash", id="backslash-not-kept"),
    P("/units/kg%2Fs/x/y", 400, "encoded-slash", id="no-route-for-the-view"),
    P("/repos/o%2Fo/n%2Fn", 200, {"route": "repo", "owner": "o/o", "name": "n/n"}, id="two-params"),
    P("/repos/o/n%2Fn", 200, {"route": "repo", "owner": "o", "name": "n/n"}, id="second-param"),
    P("/files/a%2Fb/c/d", 200, {"route": "file", "name": "a/b", "rest": "c/d"}, id="beside-path"),
    P("/files/a/c%2Fd", 400, "encoded-slash", id="kept-in-path-param"),
    P("/dirs/a%2Fb/", 200, {"route": "dir", "name": "a/b"}, id="trailing-slash"),
    # werkzeug would redirect to the rule's trailing slash, a URL built from
    # the path it matched: no redirect is a claim, so the %2F is refused.
    P("/dirs/a%2Fb", 400, "encoded-slash", id="trailing-slash-missing"),
    P("/sub/s/q%2Fr", 200, {"route": "sub", "b": "q/r"}, id="blueprint"),
    P("/sub%2Fs/q", 400, "encoded-slash", id="kept-in-blueprint-prefix"),
    P("/plain/a%2Fb", 400, "encoded-slash", id="no-segment-param"),
    P("/plain/a", 200, {"route": "plain", "x": "a"}, id="no-segment-param-plain"),
    P("/nowhere/a%2Fb", 400, "encoded-slash", id="no-route"),
    P("/nowhere/a", 404, None, id="no-route-plain"),
]

Get = Callable[[str], tuple[int, Any]]


def _answer(name: str) -> Callable[..., dict[str, Any]]:
    def view(**params: Any) -> dict[str, Any]:
        return {"route": name, **params}

    return view


def build(routes: list[tuple[str, str]] = ROUTES, *, segment: bool = True, **guard: Any) -> Flask:
    """The application, guarded; ``segment=False`` declares no ``segment``
    parameter anywhere (nor registers the converter)."""
    app = Flask(__name__)
    if segment:
        app.url_map.converters["segment"] = SegmentConverter

    def rule(path: str) -> str:
        return path if segment else path.replace("<segment:", "<")

    for path, name in routes:
        app.add_url_rule(rule(path), name, _answer(name))
    sub = Blueprint("sub", __name__, url_prefix="/sub")
    sub.add_url_rule(rule("/s/<segment:b>"), "sub", _answer("sub"))
    app.register_blueprint(sub)
    app.wsgi_app = StrictURLMiddleware(app.wsgi_app, **guard)  # type: ignore[method-assign]
    return app


def _answer_of(status: int, body: bytes) -> tuple[int, Any]:
    if status == 200:
        return status, json.loads(body)
    if status == 400:
        return status, json.loads(body)["rule"]
    return status, None


def client_get(app: Any) -> Get:
    client = Client(app)

    def get(target: str) -> tuple[int, Any]:
        response = client.get(target, headers=JSON)
        return _answer_of(response.status_code, response.data)

    return get


@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_segment_routes(parser: Any, target: str, status: int, expected: Any) -> None:
    assert client_get(build(parser=parser))(target) == (status, expected)


@pytest.mark.parametrize("order", [1, -1], ids=["segment-first", "segment-last"])
def test_the_hard_case_in_either_order(parser: Any, order: int) -> None:
    get = client_get(build(ROUTES[:2][::order], parser=parser))
    assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})


TARGETS = [P(row.values[0], id=row.id) for row in TABLE]


@pytest.mark.parametrize("target", TARGETS)
def test_an_application_without_segment_routes_is_unchanged(
    parser: Any, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same status and body as with no integration registered at all."""
    client = Client(build(segment=False, parser=parser))
    integrated = client.get(target, headers=JSON)
    monkeypatch.setattr(urlguard._guard, "ROUTERS", [])
    alone = client.get(target, headers=JSON)
    assert (integrated.status_code, integrated.data) == (alone.status_code, alone.data)
    if "%2F" in target.upper():
        assert integrated.status_code in (400, 404)


def test_the_server_keys_are_not_rewritten(parser: Any) -> None:
    seen: dict[str, Any] = {}
    app = build([], parser=parser)

    @app.get("/units/<segment:unit>")
    def unit(unit: str) -> dict[str, str]:
        environ = request.environ
        seen.update({k: environ.get(k) for k in ("PATH_INFO", "SCRIPT_NAME", "REQUEST_URI")})
        seen.update(path=request.path, view=environ[_segments.VIEW_KEY])
        seen["target"] = environ["urlguard.target"].segments
        return {"unit": unit}

    assert client_get(app)("/units/kg%2Fs") == (200, {"unit": "kg/s"})
    assert seen == {
        "PATH_INFO": "/units/kg/s",
        "SCRIPT_NAME": "",
        "REQUEST_URI": "/units/kg%2Fs",
        "path": "/units/kg/s",
        "view": "/units/kg\x00s",
        "target": ("units", "kg/s"),
    }


def test_a_request_without_a_view_is_bound_as_before(parser: Any) -> None:
    app = build(parser=parser)
    client_get(app)("/units/kg%2Fs")  # the guard found the map: it routes on views
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/units/kg/s", "SERVER_NAME": "h"}
    environ |= {"SERVER_PORT": "80", "wsgi.url_scheme": "http"}
    adapter = app.url_map.bind_to_environ(environ)
    assert adapter.path_info == "/units/kg/s"
    assert adapter.match() == ("pair", {"a": "kg", "b": "s"})
    environ[_segments.VIEW_KEY] = "/units/kg\x00s"
    assert app.url_map.bind_to_environ(environ).match() == ("units", {"unit": "kg/s"})
    # A path passed to match is not the view: its U+0000 is itself.
    on_view = app.url_map.bind_to_environ(environ)
    assert on_view.match("/units/a\x00b") == ("units", {"unit": "a\x00b"})
    # werkzeug binds a request as its environ.
    assert app.url_map.bind_to_environ(Request(environ)).match() == ("units", {"unit": "kg/s"})
    assert environ["PATH_INFO"] == "/units/kg/s"


def test_a_method_the_route_does_not_take_is_no_claim(parser: Any) -> None:
    client = Client(build(parser=parser))
    response = client.post("/units/kg%2Fs", headers=JSON)
    assert _answer_of(response.status_code, response.data) == (400, "encoded-slash")
    assert client.post("/units/kg", headers=JSON).status_code == 405


class Lossy(BaseConverter):
    """Drops what it does not know: a kept ``/`` vanishes from its value."""

    def to_python(self, value: str) -> str:
        return value.replace(_segments.SLASH, "")


def test_a_kept_slash_that_no_segment_value_holds_is_no_claim(parser: Any) -> None:
    app = build([], parser=parser)
    app.url_map.converters["lossy"] = Lossy
    app.add_url_rule("/lossy/<lossy:x>", "lossy", _answer("lossy"))
    app.add_url_rule("/mixed/<segment:a>/<lossy:x>", "mixed", _answer("mixed"))
    get = client_get(app)
    assert get("/lossy/a%2Fb") == (400, "encoded-slash")
    assert get("/mixed/a%2Fb/c%2Fd") == (400, "encoded-slash")
    assert get("/mixed/a%2Fb/c") == (200, {"route": "mixed", "a": "a/b", "x": "c"})


def test_under_split_path_params_a_segment_never_sees_the_parameters(parser: Any) -> None:
    get = client_get(build(parser=parser, policy=Policy(path_params="split")))
    assert get("/units/kg;v=1") == (200, {"route": "units", "unit": "kg"})
    assert get("/units/kg%2Fs;v=1") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/repos/o;a=1/n%2Fn;b=2") == (200, {"route": "repo", "owner": "o", "name": "n/n"})


# U+0000 stands for a kept '/' in a view only; this policy admits a real one
# (and so cannot route a kept '/': the view could not tell them apart).
NUL_TABLE: list[Any] = [
    P("/units/a%00b", 200, {"route": "units", "unit": "a\x00b"}, id="nul-is-itself"),
    P("/units/a%00b/c", 200, {"route": "pair", "a": "a\x00b", "b": "c"}, id="nul-elsewhere"),
    P("/units/a%2Fb", 400, "encoded-slash", id="no-kept-slash"),
    P("/units/kg", 200, {"route": "units", "unit": "kg"}, id="plain"),
]


@pytest.mark.parametrize(("target", "status", "expected"), NUL_TABLE)
def test_a_decoded_nul_is_itself_where_the_policy_allows_it(
    parser: Any, target: str, status: int, expected: Any
) -> None:
    get = client_get(build(parser=parser, policy=Policy(allow_chars="\x00")))
    assert get(target) == (status, expected)


def test_routes_added_after_the_first_request_are_seen(parser: Any) -> None:
    app = build([("/plain/<x>", "plain")], parser=parser)
    get = client_get(app)
    assert get("/late/a%2Fb") == (400, "encoded-slash")
    # Flask's setup is over once it served a request; werkzeug's map still takes rules.
    app.url_map.add(Rule("/late/<segment:name>", endpoint="late"))
    app.view_functions["late"] = _answer("late")
    assert get("/late/a%2Fb") == (200, {"route": "late", "name": "a/b"})


def test_a_route_naming_segment_without_the_converter_fails_at_declaration() -> None:
    app = Flask(__name__)
    with pytest.raises(LookupError, match="segment"):
        app.add_url_rule("/units/<segment:unit>", "units", _answer("units"))


# --- where the guard sits ------------------------------------------------------------------


def _plain_flask() -> Flask:
    app = Flask(__name__)
    app.url_map.converters["segment"] = SegmentConverter
    app.add_url_rule("/units/<segment:unit>", "units", _answer("units"))
    app.add_url_rule("/units/<a>/<b>", "pair", _answer("pair"))
    return app


@pytest.mark.parametrize(
    "wrap",
    [
        P(lambda app, parser: StrictURLMiddleware(app, parser=parser), id="around-the-app"),
        P(
            lambda app, parser: StrictURLMiddleware(ProxyFix(app.wsgi_app), parser=parser),
            id="around-a-middleware",
        ),
        P(
            lambda app, parser: StrictURLMiddleware(ProxyFix(ProxyFix(app)), parser=parser),
            id="around-two-middlewares",
        ),
    ],
)
def test_the_guard_finds_the_application(parser: Any, wrap: Any) -> None:
    get = client_get(wrap(_plain_flask(), parser))
    assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})


def test_applications_mounted_by_a_dispatcher(parser: Any) -> None:
    """Each application guarded below its SCRIPT_NAME routes its own view."""
    main, mounted = build(parser=parser), build(parser=parser)
    get = client_get(DispatcherMiddleware(main, {"/mnt": mounted}))
    assert get("/mnt/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})
    assert get("/mnt/units/kg/s") == (200, {"route": "pair", "a": "kg", "b": "s"})
    assert get("/mnt/sub/s/q%2Fr") == (200, {"route": "sub", "b": "q/r"})
    assert get("/mnt/plain/a%2Fb") == (400, "encoded-slash")
    assert get("/mnt/units/..%2Fx") == (400, "dot-segment")
    assert get("/units/kg%2Fs") == (200, {"route": "units", "unit": "kg/s"})


def test_a_guard_in_front_of_a_dispatcher_keeps_no_slash(parser: Any) -> None:
    """In front of a dispatcher, no one map routes what the guard saw: the
    guard asks none, and a %2F stays an encoded-slash."""
    dispatcher = DispatcherMiddleware(_plain_flask().wsgi_app, {"/mnt": _plain_flask()})
    get = client_get(StrictURLMiddleware(dispatcher, parser=parser))
    assert get("/units/kg%2Fs") == (400, "encoded-slash")
    assert get("/mnt/units/kg%2Fs") == (400, "encoded-slash")
    assert get("/mnt/units/kg") == (200, {"route": "units", "unit": "kg"})


# --- URL building ----------------------------------------------------------------------------

NAMES = ["kg/s", "50%", "a?b", "a#b", "a b", "café", "a/", "ü/ß?#%20", "+;=@:"]
# Names with a '..' or an empty part beside a '/': no policy reads them back,
# since the parts beside a kept separator obey the path rules whatever the policy.
UNREADABLE = [P("../x", "dot-segment", id="../x"), P("/a", "empty-segment", id="/a")]

# Only to read back what was built: the rules are not what is tested here.
LENIENT = Policy(
    encoded_slash="keep", dot_segment="allow", empty_segment="allow", double_encoding="allow"
)


@pytest.mark.parametrize("name", NAMES)
def test_url_building_round_trips(name: str) -> None:
    app = build()
    with app.test_request_context():
        path = url_for("units", unit=name)
    assert path.startswith("/units/")
    assert "/" not in path.removeprefix("/units/")
    # What urlguard, keeping %2F, gives back is the name.
    assert parse_target(path.encode(), LENIENT).segments == ("units", name)


@pytest.mark.parametrize(("name", "rule"), UNREADABLE)
def test_a_built_url_with_a_dot_or_empty_part_is_refused(name: str, rule: str) -> None:
    app = build()
    with app.test_request_context():
        path = url_for("units", unit=name)
    with pytest.raises(InvalidTarget) as caught:
        parse_target(path.encode(), LENIENT)
    assert caught.value.rule == rule


@pytest.mark.parametrize("name", ["kg/s", "50%", "a?b", "a#b", "a b", "café", "a/b/c", "+;=@:"])
def test_a_built_url_reaches_its_route_with_the_name(parser: Any, name: str) -> None:
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


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_url_building_refuses_what_no_escape_can_carry(name: str) -> None:
    app = build()
    with pytest.raises(ValueError, match="segment parameter"):
        SegmentConverter(app.url_map).to_url(name)
    with app.test_request_context(), pytest.raises(ValueError, match="segment parameter"):
        url_for("units", unit=name)


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
