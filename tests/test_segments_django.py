"""Django routes on segments: ``<segment:name>``, under WSGI and ASGI.

A truth table over one urlconf (and the same routes in the other order),
sent as hand-built WSGI environs and ASGI scopes to urlguard's middleware
around Django's own handlers, and behind gunicorn, waitress and uvicorn with
raw sockets (``servers`` marker). The answer names the route Django chose,
the parameters it handed over and ``request.path_info``, the server's
decoded path, which routing on segments never changes.

Django's settings are process-wide: they are configured here only when no
other module did (with the same values as tests/test_integrations.py), and
each test names its urlconf with ``override_settings``. The server processes
import this module and serve :func:`wsgi_server_app` / :func:`asgi_server_app`.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import django
import pytest
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.test.utils import override_settings
from django.urls import NoReverseMatch, include, path, re_path

import rawhttp
import urlguard.integrations.django as django_segments
from conftest import Parser
from urlguard import build_target
from urlguard._segments import VIEW_KEY
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

P = pytest.param
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# --- the urlconfs ----------------------------------------------------------------------------


def _answer(name: str) -> Any:
    def view(request: HttpRequest, *args: str, **params: str) -> JsonResponse:
        return JsonResponse(
            {
                "route": name,
                "params": {**params},
                "args": list(args),
                "path_info": request.path_info,
            }
        )

    return view


NESTED = [path("items/<segment:item>", _answer("nested"), name="item")]
INCLUDED = [path("s/<segment:b>", _answer("sub"), name="sub")]

UNITS = path("units/<segment:unit>", _answer("units"), name="unit")
PAIR = path("units/<a>/<b>", _answer("pair"), name="pair")
ROUTES = [
    path("repos/<segment:owner>/<segment:name>", _answer("repo"), name="repo"),
    path("files/<segment:name>/<path:rest>", _answer("file"), name="file"),
    path("dirs/<segment:name>/", _answer("dir"), name="dir"),
    path("sub/", include((INCLUDED, "mounted"))),
    path("nest/<segment:owner>/", include(NESTED)),
    path("plain/<x>", _answer("plain"), name="plain"),
    re_path(r"^loose/", _answer("loose")),
    re_path(r"^regex/(?P<x>[^/]+)$", _answer("regex")),
    re_path(r"^positional/([^/]+)$", _answer("positional")),
]
#: The same application without any segment route.
PLAIN_ROUTES = [
    path("units/<unit>", _answer("units")),
    path("units/<a>/<b>", _answer("pair")),
    path("plain/<x>", _answer("plain")),
]

URLS = "urlguard_test_segments_django"  # the pair first: the hard case
URLS_SEGMENT_FIRST = f"{URLS}_segment_first"
URLS_PLAIN = f"{URLS}_plain"
URLCONFS = {
    URLS: [PAIR, UNITS, *ROUTES],
    URLS_SEGMENT_FIRST: [UNITS, PAIR, *ROUTES],
    URLS_PLAIN: PLAIN_ROUTES,
}
for _name, _patterns in URLCONFS.items():
    _module = types.ModuleType(_name)
    _module.urlpatterns = _patterns  # type: ignore[attr-defined]
    sys.modules[_name] = _module


class SwitchUrlconf:
    """A Django middleware that resolves every request on the plain urlconf."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        request.urlconf = URLS_PLAIN
        return self.get_response(request)


def configure() -> None:
    if not settings.configured:
        settings.configure(
            DEBUG=False,
            SECRET_KEY="urlguard-tests-" + "x" * 40,
            ALLOWED_HOSTS=["*"],
            ROOT_URLCONF=URLS,
            MIDDLEWARE=[],
            INSTALLED_APPS=[],
            USE_TZ=True,
        )
        django.setup()


def wsgi_server_app() -> Any:
    """What gunicorn and waitress serve."""
    from django.core.wsgi import get_wsgi_application

    configure()
    return WSGIGuard(get_wsgi_application())


def asgi_server_app() -> Any:
    """What uvicorn serves."""
    from django.core.asgi import get_asgi_application

    configure()
    return ASGIGuard(get_asgi_application())


@pytest.fixture(scope="module", autouse=True)
def django_settings() -> Iterator[None]:
    configure()
    with override_settings(ROOT_URLCONF=URLS, ALLOWED_HOSTS=["*"], MIDDLEWARE=[]):
        yield


# --- asking the guarded handlers ---------------------------------------------------------


class Answer:
    def __init__(self, status: int, body: bytes, carrier: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.carrier = carrier

    def json(self) -> Any:
        return json.loads(self.body)


def wsgi_get(app: Any, target: bytes, script_name: str = "") -> Answer:
    """``target`` as gunicorn hands it over: ``RAW_URI`` as sent, ``PATH_INFO``
    decoded (latin-1 text of the bytes) and below ``SCRIPT_NAME``."""
    raw_path, _, query = target.partition(b"?")
    decoded = unquote_to_bytes(raw_path)[len(script_name.encode()) :]
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": script_name,
        "PATH_INFO": decoded.decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "RAW_URI": target.decode("latin-1"),
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        status.append(line)
        return lambda data: None

    body = b"".join(app(environ, start_response))
    return Answer(int(status[0].split()[0]), body, environ)


def asgi_get(app: Any, target: bytes, root_path: str = "") -> Answer:
    """``target`` as uvicorn hands it over: ``raw_path`` as sent (the root path
    in front of it), ``path`` decoded, ``root_path``."""
    raw_path, _, query = target.partition(b"?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote_to_bytes(raw_path).decode("utf-8", "surrogateescape"),
        "raw_path": raw_path,
        "root_path": root_path,
        "query_string": query,
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def main() -> None:
        done = asyncio.Event()
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await done.wait()  # the client stays until the response is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await app(scope, receive, send)

    asyncio.run(main())
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Answer(start["status"], body, scope)


def wsgi_app(parser: Parser) -> Any:
    from django.core.wsgi import get_wsgi_application

    return WSGIGuard(get_wsgi_application(), parser=parser)


def asgi_app(parser: Parser) -> Any:
    from django.core.asgi import get_asgi_application

    return ASGIGuard(get_asgi_application(), parser=parser)


@pytest.fixture(params=["wsgi", "asgi"])
def get(request: pytest.FixtureRequest, parser: Parser) -> Any:
    """GET through the guard around Django's WSGI or ASGI handler."""
    if request.param == "wsgi":
        app = wsgi_app(parser)
        return lambda target, mount="": wsgi_get(app, target, mount)
    app = asgi_app(parser)
    return lambda target, mount="": asgi_get(app, target, mount)


def check(answer: Answer, status: int, expected: Any) -> None:
    """200: ``expected`` is (route, params); 400: the rule; 404: ``None``."""
    assert answer.status == status, answer.body
    if status == 200:
        route, params = expected
        assert answer.json()["route"] == route
        assert answer.json()["params"] == params
    elif status == 400:
        assert answer.body.startswith(f"400 Bad Request: {expected}: ".encode())


# --- the truth table ---------------------------------------------------------------------

TABLE = [
    P(b"/units/kg%2Fs", 200, ("units", {"unit": "kg/s"}), id="kept slash: one segment"),
    P(b"/units/kg%2fs", 200, ("units", {"unit": "kg/s"}), id="kept slash, lower case"),
    P(b"/units/kg/s", 200, ("pair", {"a": "kg", "b": "s"}), id="a real slash: two segments"),
    P(b"/units/caf%C3%A9", 200, ("units", {"unit": "café"}), id="UTF-8 decoded"),
    P(b"/units/kg", 200, ("units", {"unit": "kg"}), id="no slash at all"),
    P(b"/units/a%2Fb%2Fc?q=1", 200, ("units", {"unit": "a/b/c"}), id="two kept, a query"),
    P(b"/units/a;b%2Fc", 200, ("units", {"unit": "a;b/c"}), id="';' is literal"),
    P(b"/units/..%2Fx", 400, "dot-segment", id="..%2F: dot segment"),
    P(b"/units/.%2Fx", 400, "dot-segment", id=".%2F: dot segment"),
    P(b"/units/%2Fetc", 400, "empty-segment", id="leading %2F: empty segment"),
    P(b"/units/kg%2F", 200, ("units", {"unit": "kg/"}), id="a trailing kept slash is data"),
    P(b"/units/a%2F%2Fb", 400, "empty-segment", id="doubled %2F: empty segment"),
    P(b"/units/a%5Cb", 400, "encoded-backslash", id="other rules hold"),
    P(b"/repos/a%2Fb/c%2Fd", 200, ("repo", {"owner": "a/b", "name": "c/d"}), id="two segments"),
    P(b"/repos/a/c%2Fd", 200, ("repo", {"owner": "a", "name": "c/d"}), id="the second kept"),
    P(
        b"/files/a%2Fb/x/y",
        200,
        ("file", {"name": "a/b", "rest": "x/y"}),
        id="a segment next to a path",
    ),
    P(b"/files/a/x%2Fy", 400, "encoded-slash", id="a path parameter never takes %2F"),
    P(b"/dirs/a%2Fb/", 200, ("dir", {"name": "a/b"}), id="trailing slash"),
    P(b"/dirs/a%2Fb", 400, "encoded-slash", id="trailing slash missing: no route"),
    P(b"/sub/s/x%2Fy", 200, ("sub", {"b": "x/y"}), id="include()"),
    P(
        b"/nest/a%2Fb/items/c%2Fd",
        200,
        ("nested", {"owner": "a/b", "item": "c/d"}),
        id="include() below a segment",
    ),
    P(b"/plain/a%2Fb", 400, "encoded-slash", id="a str parameter never takes %2F"),
    P(b"/plain/a", 200, ("plain", {"x": "a"}), id="plain route as before"),
    P(b"/loose/a%2Fb", 400, "encoded-slash", id="a pattern capturing nothing never takes %2F"),
    P(b"/regex/a%2Fb", 400, "encoded-slash", id="a named group never takes %2F"),
    P(b"/positional/a%2Fb", 400, "encoded-slash", id="a positional group never takes %2F"),
    P(b"/nowhere/a%2Fb", 400, "encoded-slash", id="no route"),
    P(b"/nowhere/a", 404, None, id="no route, no %2F: Django's 404"),
]


@pytest.mark.parametrize("urlconf", [URLS, URLS_SEGMENT_FIRST])
@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_truth_table(get: Any, urlconf: str, target: bytes, status: int, expected: Any) -> None:
    with override_settings(ROOT_URLCONF=urlconf):
        check(get(target), status, expected)


@pytest.mark.parametrize("mount", ["/mnt", "/my app"])
@pytest.mark.parametrize(("target", "status", "expected"), TABLE[:14])
def test_truth_table_below_a_mount_point(
    get: Any, mount: str, target: bytes, status: int, expected: Any
) -> None:
    raw_mount = build_target([mount.strip("/")]).encode()
    check(get(raw_mount + target, mount), status, expected)


def test_the_servers_keys_are_never_rewritten(get: Any) -> None:
    answer = get(b"/units/kg%2Fs")
    assert answer.json()["params"] == {"unit": "kg/s"}
    assert answer.json()["path_info"] == "/units/kg/s"  # Django's request.path_info
    assert answer.carrier[VIEW_KEY] == "/units/kg\x00s"
    if "PATH_INFO" in answer.carrier:
        assert answer.carrier["PATH_INFO"] == "/units/kg/s"
        assert answer.carrier["RAW_URI"] == "/units/kg%2Fs"
    else:
        assert answer.carrier["path"] == "/units/kg/s"
        assert answer.carrier["raw_path"] == b"/units/kg%2Fs"


def test_a_request_without_kept_slash_has_no_view(get: Any) -> None:
    answer = get(b"/units/kg/s")
    assert answer.json()["route"] == "pair"
    assert VIEW_KEY not in answer.carrier


@pytest.mark.parametrize(
    ("target", "status", "expected"),
    [
        P(b"/units/kg%2Fs", 400, "encoded-slash", id="kept slash"),
        P(b"/units/..%2Fx", 400, "encoded-slash", id="..%2F: still encoded-slash"),
        P(b"/units/%2Fetc", 400, "encoded-slash", id="%2Fetc: still encoded-slash"),
        P(b"/plain/a%2Fb", 400, "encoded-slash", id="plain route"),
        P(b"/units/kg/s", 200, ("pair", {"a": "kg", "b": "s"}), id="two segments"),
        P(b"/units/kg", 200, ("units", {"unit": "kg"}), id="one segment"),
        P(b"/units/caf%C3%A9", 200, ("units", {"unit": "café"}), id="UTF-8"),
    ],
)
def test_an_app_without_segment_routes_as_before(
    get: Any, target: bytes, status: int, expected: Any
) -> None:
    with override_settings(ROOT_URLCONF=URLS_PLAIN):
        answer = get(target)
    check(answer, status, expected)
    assert VIEW_KEY not in answer.carrier


def test_the_urlconf_a_middleware_chooses_is_checked_too(parser: Parser) -> None:
    # The guard asked ROOT_URLCONF, where /units/kg%2Fs is a segment route; a
    # middleware then resolves on a urlconf where it would be a str parameter.
    from django.core.wsgi import get_wsgi_application

    with override_settings(MIDDLEWARE=[f"{__name__}.SwitchUrlconf"]):
        app = WSGIGuard(get_wsgi_application(), parser=parser)
        check(wsgi_get(app, b"/units/kg%2Fs"), 404, None)
        check(wsgi_get(app, b"/units/kg"), 200, ("units", {"unit": "kg"}))


def test_without_the_guard_a_nul_is_a_nul() -> None:
    # Only the guard's view holds a kept '/' as U+0000; Django's own decoded
    # path never stands for one.
    from django.core.wsgi import get_wsgi_application

    answer = wsgi_get(get_wsgi_application(), b"/units/a%00b")
    assert answer.json()["params"] == {"unit": "a\x00b"}
    check(wsgi_get(get_wsgi_application(), b"/units/kg/s"), 200, ("pair", {"a": "kg", "b": "s"}))


def test_only_the_guarded_handler_routes_on_views(parser: Parser) -> None:
    from django.core.wsgi import get_wsgi_application

    guarded = get_wsgi_application()
    check(
        wsgi_get(WSGIGuard(guarded, parser=parser), b"/units/a%2Fb"),
        200,
        ("units", {"unit": "a/b"}),
    )
    assert "resolve_request" in vars(guarded)
    assert "resolve_request" not in vars(get_wsgi_application())


def test_a_wrapped_handler_is_found(parser: Parser) -> None:
    from django.core.wsgi import get_wsgi_application

    class Wrapper:
        def __init__(self, application: Any) -> None:
            self.application = application

        def __call__(self, environ: Any, start_response: Any) -> Any:
            return self.application(environ, start_response)

    app = WSGIGuard(Wrapper(Wrapper(get_wsgi_application())), parser=parser)
    check(wsgi_get(app, b"/units/kg%2Fs"), 200, ("units", {"unit": "kg/s"}))


def test_an_app_the_guard_cannot_see_into_keeps_encoded_slash(parser: Parser) -> None:
    from django.core.wsgi import get_wsgi_application

    handler = get_wsgi_application()

    def opaque(environ: Any, start_response: Any) -> Any:
        return handler(environ, start_response)

    check(wsgi_get(WSGIGuard(opaque, parser=parser), b"/units/kg%2Fs"), 400, "encoded-slash")
    check(
        wsgi_get(WSGIGuard(opaque, parser=parser), b"/units/kg/s"),
        200,
        ("pair", {"a": "kg", "b": "s"}),
    )


# --- URL building ------------------------------------------------------------------------

NAMES = [
    P("kg/s", "kg%2Fs", id="slash"),
    P("100%", "100%25", id="percent"),
    P("a?b", "a%3Fb", id="question mark"),
    P("a#b", "a%23b", id="hash"),
    P("a b", "a%20b", id="space"),
    P("café", "caf%C3%A9", id="non-ASCII"),
    P("a/b?c#d %e/é", "a%2Fb%3Fc%23d%20%25e%2F%C3%A9", id="all of them"),
    P("...", "...", id="three dots are a name"),
]


@pytest.mark.parametrize(("name", "encoded"), NAMES)
def test_reverse_round_trips(get: Any, name: str, encoded: str) -> None:
    url = django_segments.reverse("unit", kwargs={"unit": name})
    assert url == f"/units/{encoded}"
    check(get(url.encode()), 200, ("units", {"unit": name}))


@pytest.mark.parametrize(("name", "encoded"), NAMES)
def test_reverse_round_trips_with_two_segments_and_include(
    get: Any, name: str, encoded: str
) -> None:
    url = django_segments.reverse("repo", args=[name, name])
    assert url == f"/repos/{encoded}/{encoded}"
    check(get(url.encode()), 200, ("repo", {"owner": name, "name": name}))
    url = django_segments.reverse("mounted:sub", kwargs={"b": name})
    assert url == f"/sub/s/{encoded}"
    check(get(url.encode()), 200, ("sub", {"b": name}))
    url = django_segments.reverse("file", kwargs={"name": name, "rest": "x/y"})
    assert url == f"/files/{encoded}/x/y"
    check(get(url.encode()), 200, ("file", {"name": name, "rest": "x/y"}))


def test_reverse_keeps_query_and_fragment_as_django_builds_them() -> None:
    url = django_segments.reverse("unit", args=["kg/s"], query={"q": "a b"}, fragment="top")
    assert url == "/units/kg%2Fs?q=a+b#top"
    assert str(django_segments.reverse_lazy("unit", args=["kg/s"])) == "/units/kg%2Fs"


@pytest.mark.parametrize("name", [P("", id="empty"), P(".", id="dot"), P("..", id="dot dot")])
def test_no_reverse_for_dot_segments(name: str) -> None:
    from django.urls import reverse

    for build in (reverse, django_segments.reverse):
        with pytest.raises(NoReverseMatch):
            build("unit", kwargs={"unit": name})


@pytest.mark.parametrize(
    ("name", "encoded"), [row for row in NAMES if "/" not in str(row.values[0])]
)
def test_djangos_reverse_round_trips_without_slash(get: Any, name: str, encoded: str) -> None:
    from django.urls import reverse

    url = reverse("unit", kwargs={"unit": name})
    check(get(url.encode()), 200, ("units", {"unit": name}))


@pytest.mark.parametrize("name", ["kg/s", "a/b?c#d %e/é"])
def test_djangos_reverse_and_url_tag_refuse_a_slash(name: str) -> None:
    from django.template import Context, Engine
    from django.urls import reverse

    with pytest.raises(NoReverseMatch, match=r"urlguard\.integrations\.django\.reverse"):
        reverse("unit", kwargs={"unit": name})
    template = Engine().from_string("{% url 'unit' unit=name %}")
    with pytest.raises(NoReverseMatch, match="keep '/' raw"):
        template.render(Context({"name": name}))


# --- behind real servers -------------------------------------------------------------------

#: (target, status, route and params | rule | None): what every server answers.
SERVER_TABLE: list[tuple[bytes, int, Any]] = [
    (b"/units/kg%2Fs", 200, ("units", {"unit": "kg/s"})),
    (b"/units/kg/s", 200, ("pair", {"a": "kg", "b": "s"})),
    (b"/units/caf%C3%A9", 200, ("units", {"unit": "café"})),
    (b"/units/..%2Fx", 400, "dot-segment"),
    (b"/units/%2Fetc", 400, "empty-segment"),
    (b"/repos/a%2Fb/c%2Fd", 200, ("repo", {"owner": "a/b", "name": "c/d"})),
    (b"/files/a%2Fb/x/y", 200, ("file", {"name": "a/b", "rest": "x/y"})),
    (b"/files/a/x%2Fy", 400, "encoded-slash"),
    (b"/dirs/a%2Fb/", 200, ("dir", {"name": "a/b"})),
    (b"/sub/s/x%2Fy", 200, ("sub", {"b": "x/y"})),
    (b"/plain/a%2Fb", 400, "encoded-slash"),
    (b"/nowhere/a", 404, None),
]

MODULE = "test_segments_django"
SERVERS = [
    P(["gunicorn", "--chdir", str(TESTS), f"{MODULE}:wsgi_server_app()"], "", id="gunicorn"),
    P(["waitress", "--call", f"{MODULE}:wsgi_server_app"], "", id="waitress"),
    P(
        ["waitress", "--url-prefix=/mnt", "--call", f"{MODULE}:wsgi_server_app"],
        "/mnt",
        id="waitress --url-prefix /mnt",
    ),
    P(["uvicorn", "--factory", f"{MODULE}:asgi_server_app"], "", id="uvicorn"),
    P(
        ["uvicorn", "--root-path", "/mnt", "--factory", f"{MODULE}:asgi_server_app"],
        "/mnt",
        id="uvicorn --root-path /mnt",
    ),
]


def _server_argv(argv: list[str], port: int) -> list[str]:
    tool, *args = argv
    if tool == "gunicorn":
        args += ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
    elif tool == "waitress":
        args = [f"--listen=127.0.0.1:{port}", *args]
    else:
        args += ["--host", "127.0.0.1", "--port", str(port)]
    return [sys.executable, "-m", tool, *args]


@pytest.mark.servers
@pytest.mark.parametrize(("argv", "mount"), SERVERS)
def test_behind_real_servers(argv: list[str], mount: str) -> None:
    port = rawhttp.free_port()
    env = {"PYTHONPATH": f"{TESTS}:{ROOT / 'example_apps'}"}
    # uvicorn glues its root path in front of what was sent; waitress takes
    # its URL prefix off what was sent.
    sent_prefix = b"" if argv[0] == "uvicorn" else mount.encode()
    with rawhttp.running(_server_argv(argv, port), port, env=env, cwd=TESTS) as server:
        answers = [
            (rawhttp.request(port, sent_prefix + target), status, expected)
            for target, status, expected in SERVER_TABLE
        ]
        output = server.output()
    for response, status, expected in answers:
        assert response.status == status, (response.body, output)
        if status == 200:
            route, params = expected
            assert response.json()["route"] == route
            assert response.json()["params"] == params
        elif status == 400:
            assert response.body.startswith(f"400 Bad Request: {expected}: ".encode())
