"""Django routes on segments: ``<segment:name>``, under WSGI and ASGI.

The shared truth table (segment_table.py), over one urlconf (and the same
routes in the other order), sent as hand-built WSGI environs and ASGI scopes
to urlguard's middleware around Django's own handlers, and behind gunicorn,
waitress and uvicorn with raw sockets (``servers`` marker).

Django's settings are process-wide: they are configured here only when no
other module did (with the same values as tests/test_integrations.py), and
each test names its urlconf with ``override_settings``. The server processes
import this module and serve :func:`wsgi_server_app` / :func:`asgi_server_app`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes
from wsgiref.util import setup_testing_defaults

import django
import pytest
from django.conf import settings
from django.http import Http404, HttpRequest, JsonResponse
from django.test.utils import override_settings
from django.urls import NoReverseMatch, include, path
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import rawhttp
import urlguard.integrations.django as django_segments
from conftest import Parser
from segment_table import (
    DEFAULT_TABLE,
    KEEP,
    REFUSED,
    REPRO_ROUTES,
    ROUND_TRIP,
    TABLE,
    answer_of,
    first_answer,
    with_table_policies,
)
from urlguard import build_target
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

P = pytest.param
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# --- the urlconfs ----------------------------------------------------------------------------


def _answer(name: str) -> Any:
    def view(request: HttpRequest, **params: str) -> JsonResponse:
        return JsonResponse({"route": name, **params})

    return view


def _missing(request: HttpRequest, **params: str) -> JsonResponse:
    raise Http404


def _spy(request: HttpRequest, unit: str) -> JsonResponse:
    return JsonResponse({"unit": unit, "path_info": request.path_info, "path": request.path})


INCLUDED = [path("s/<segment:b>", _answer("sub"), name="sub")]

UNITS = path("units/<segment:unit>", _answer("units"), name="unit")
PAIR = path("units/<a>/<b>", _answer("pair"), name="pair")
ROUTES = [
    path("repos/<segment:owner>/<segment:name>", _answer("repo"), name="repo"),
    path("files/<segment:name>/<path:rest>", _answer("file"), name="file"),
    path("dirs/<segment:name>/", _answer("dir"), name="dir"),
    path("sub/", include((INCLUDED, "mounted"))),
    path("plain/<x>", _answer("plain"), name="plain"),
    path("missing/<segment:name>", _missing),
    path("missing/<a>/<b>/", _answer("pair-dir")),
    path("spy/<segment:unit>", _spy),
    path("split/<name>", _answer("split")),
    path("loose/<segment:name>", _answer("loose")),
    path("nul/<segment:u>", _answer("nul")),
]

URLS = "urlguard_test_segments_django"  # the pair first: the hard case
URLS_SEGMENT_FIRST = f"{URLS}_segment_first"
URLCONFS = {
    URLS: [PAIR, UNITS, *ROUTES],
    URLS_SEGMENT_FIRST: [UNITS, PAIR, *ROUTES],
}
for _name, _patterns in URLCONFS.items():
    _module = types.ModuleType(_name)
    _module.urlpatterns = _patterns  # type: ignore[attr-defined]
    sys.modules[_name] = _module


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
    return WSGIGuard(get_wsgi_application(), policy=KEEP, routes=REPRO_ROUTES)


def asgi_server_app() -> Any:
    """What uvicorn serves."""
    from django.core.asgi import get_asgi_application

    configure()
    return ASGIGuard(get_asgi_application(), policy=KEEP, routes=REPRO_ROUTES)


@pytest.fixture(scope="module", autouse=True)
def django_settings() -> Iterator[None]:
    configure()
    with override_settings(ROOT_URLCONF=URLS, ALLOWED_HOSTS=["*"], MIDDLEWARE=[]):
        yield


# --- asking the guarded handlers ---------------------------------------------------------


class Answer:
    def __init__(
        self, status: int, body: bytes, carrier: dict[str, Any], location: bytes | None = None
    ) -> None:
        self.status = status
        self.body = body
        self.carrier = carrier
        self.location = location

    def json(self) -> Any:
        return json.loads(self.body)

    def as_table(self) -> tuple[int, Any]:
        return answer_of(self.status, self.json() if self.status in (200, 400) else None)


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
        "HTTP_ACCEPT": "application/json",
    }
    setup_testing_defaults(environ)  # the wsgi.* keys
    status: list[str] = []
    location: list[bytes] = []

    def start_response(line: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        status.append(line)
        location.extend(v.encode("latin-1") for k, v in headers if k.lower() == "location")
        return lambda data: None

    body = b"".join(app(environ, start_response))
    return Answer(int(status[0].split()[0]), body, environ, location[0] if location else None)


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
        "headers": [(b"host", b"testserver"), (b"accept", b"application/json")],
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
    headers = {name.lower(): value for name, value in start["headers"]}
    return Answer(start["status"], body, scope, headers.get(b"location"))


def wsgi_app(parser: Parser, **guard: Any) -> Any:
    from django.core.wsgi import get_wsgi_application

    with_table_policies(guard)
    return WSGIGuard(get_wsgi_application(), parser=parser, **guard)


def asgi_app(parser: Parser, **guard: Any) -> Any:
    from django.core.asgi import get_asgi_application

    with_table_policies(guard)
    return ASGIGuard(get_asgi_application(), parser=parser, **guard)


def getter(kind: str, parser: Parser, **guard: Any) -> Any:
    """GET through the guard around Django's WSGI or ASGI handler."""
    if kind == "wsgi":
        wsgi = wsgi_app(parser, **guard)
        return lambda target, mount="": wsgi_get(wsgi, target, mount)
    asgi = asgi_app(parser, **guard)
    return lambda target, mount="": asgi_get(asgi, target, mount)


@pytest.fixture(params=["wsgi", "asgi"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def get(kind: str, parser: Parser) -> Any:
    return getter(kind, parser)


# --- the truth table ---------------------------------------------------------------------


@pytest.mark.parametrize("urlconf", [URLS, URLS_SEGMENT_FIRST])
@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_truth_table(get: Any, urlconf: str, target: str, status: int, expected: Any) -> None:
    with override_settings(ROOT_URLCONF=urlconf):
        assert get(target.encode()).as_table() == (status, expected)


@pytest.mark.parametrize("mount", ["/mnt", "/my app"])
@pytest.mark.parametrize(("target", "status", "expected"), TABLE)
def test_truth_table_below_a_mount_point(
    get: Any, mount: str, target: str, status: int, expected: Any
) -> None:
    raw_mount = build_target([mount.strip("/")]).encode()
    assert get(raw_mount + target.encode(), mount).as_table() == (status, expected)


@pytest.mark.parametrize(("target", "status", "expected"), DEFAULT_TABLE)
def test_the_default_policy_refuses_every_encoded_slash(
    kind: str, parser: Parser, target: str, status: int, expected: Any
) -> None:
    get = getter(kind, parser, policy=None)
    assert get(target.encode()).as_table() == (status, expected)


def test_the_routing_path_is_the_one_path_after_the_guard(get: Any) -> None:
    answer = get(b"/spy/caf%C3%A9%2F%25")
    assert answer.json() == {
        "unit": "café/%",
        "path_info": "/spy/café%2F%25",
        "path": "/spy/café%2F%25",
    }
    assert answer.carrier.get("RAW_URI", answer.carrier.get("raw_path")) in (
        "/spy/caf%C3%A9%2F%25",
        b"/spy/caf%C3%A9%2F%25",
    )


def test_a_request_without_a_kept_slash_keeps_the_servers_path(get: Any) -> None:
    assert get(b"/spy/50%25").json() == {"unit": "50%", "path_info": "/spy/50%", "path": "/spy/50%"}


def test_nothing_of_the_framework_is_replaced(kind: str, parser: Parser) -> None:
    import django.core.handlers.base
    import django.urls.resolvers

    guard = wsgi_app(parser) if kind == "wsgi" else asgi_app(parser)
    handler = guard.app
    watched = (handler, django.urls.resolvers.URLResolver, django.core.handlers.base.BaseHandler)
    state = [_callables(namespace) for namespace in watched]
    answer = (
        wsgi_get(guard, b"/units/kg%2Fs") if kind == "wsgi" else asgi_get(guard, b"/units/kg%2Fs")
    )
    assert answer.as_table() == (200, {"route": "units", "unit": "kg/s"})
    assert [_callables(namespace) for namespace in watched] == state


def _callables(namespace: object) -> dict[str, object]:
    return {name: value for name, value in vars(namespace).items() if callable(value)}


def test_a_missing_segment_never_redirects_to_another_resource(kind: str, parser: Parser) -> None:
    """``/missing/a%2Fb`` exists (its view raises 404); Django's APPEND_SLASH
    must not send it to ``/missing/a/b/``, another route's URL."""
    middleware = ["django.middleware.common.CommonMiddleware"]
    with override_settings(MIDDLEWARE=middleware, APPEND_SLASH=True):
        answer = getter(kind, parser)(b"/missing/a%2Fb")
    assert (answer.status, answer.location) == (404, None)


@pytest.mark.parametrize(
    ("middleware", "location"),
    [
        ("urlguard.integrations.django.CommonMiddleware", b"/dirs/a%2Fb/?q=%25"),
        ("django.middleware.common.CommonMiddleware", b"/dirs/a%252Fb/?q=%25"),
    ],
    ids=["urlguard", "django"],
)
def test_append_slash_keeps_the_encoded_slash(
    kind: str, parser: Parser, middleware: str, location: bytes
) -> None:
    with override_settings(MIDDLEWARE=[middleware], APPEND_SLASH=True):
        get = getter(kind, parser)
        answer = get(b"/dirs/a%2Fb?q=%25")
        assert (answer.status, answer.location) == (301, location)
        followed = get(location).as_table()
    if middleware.startswith("urlguard"):
        assert followed == (200, {"route": "dir", "name": "a/b"})
    else:  # Django's own escapes the routing path's '%' again: refused, never misrouted
        assert followed == (400, "double-encoding")


def test_without_a_kept_slash_append_slash_is_djangos(kind: str, parser: Parser) -> None:
    middleware = ["urlguard.integrations.django.CommonMiddleware"]
    with override_settings(MIDDLEWARE=middleware, APPEND_SLASH=True):
        answer = getter(kind, parser)(b"/dirs/a%25b")
    assert (answer.status, answer.location) == (301, b"/dirs/a%25b/")


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
    assert get(url.encode()).as_table() == (200, {"route": "units", "unit": name})


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_reverse_round_trips_with_two_segments_and_include(get: Any, name: str) -> None:
    url = django_segments.reverse("repo", args=[name, name])
    assert get(url.encode()).as_table() == (200, {"route": "repo", "owner": name, "name": name})
    url = django_segments.reverse("mounted:sub", kwargs={"b": name})
    assert get(url.encode()).as_table() == (200, {"route": "sub", "b": name})
    url = django_segments.reverse("file", kwargs={"name": name, "rest": "x/y"})
    assert get(url.encode()).as_table() == (200, {"route": "file", "name": name, "rest": "x/y"})


def test_reverse_keeps_query_and_fragment_as_django_builds_them() -> None:
    url = django_segments.reverse("unit", args=["kg/s"], query={"q": "a b"}, fragment="top")
    assert url == "/units/kg%2Fs?q=a+b#top"
    assert str(django_segments.reverse_lazy("unit", args=["kg/s"])) == "/units/kg%2Fs"


@pytest.mark.parametrize("name", REFUSED)
def test_reverse_refuses_what_the_guard_refuses(name: str) -> None:
    from django.urls import reverse

    with pytest.raises(ValueError, match="segment parameter"):
        django_segments.reverse("unit", kwargs={"unit": name})
    with pytest.raises(NoReverseMatch):
        reverse("unit", kwargs={"unit": name})


@pytest.mark.parametrize(
    ("name", "encoded"), [row for row in NAMES if "/" not in str(row.values[0])]
)
def test_djangos_reverse_round_trips_without_slash(get: Any, name: str, encoded: str) -> None:
    from django.urls import reverse

    url = reverse("unit", kwargs={"unit": name})
    assert get(url.encode()).as_table() == (200, {"route": "units", "unit": name})


@pytest.mark.parametrize("name", ["kg/s", "a/b?c#d %e/é"])
def test_djangos_reverse_and_url_tag_refuse_a_slash(name: str) -> None:
    from django.template import Context, Engine
    from django.urls import reverse

    with pytest.raises(NoReverseMatch, match=r"urlguard\.integrations\.django\.reverse"):
        reverse("unit", kwargs={"unit": name})
    template = Engine().from_string("{% url 'unit' unit=name %}")
    with pytest.raises(NoReverseMatch, match="keep '/' raw"):
        template.render(Context({"name": name}))


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/%?#; é\x00\u202e.:\\+"), max_size=12) | st.text())
def test_any_value_is_reversed_and_routed_back_or_refused(name: str) -> None:
    from django.core.wsgi import get_wsgi_application

    try:
        url = django_segments.reverse("unit", kwargs={"unit": name})
    except ValueError:
        return
    answer = wsgi_get(WSGIGuard(get_wsgi_application(), policy=KEEP), url.encode())
    assert answer.as_table() == (200, {"route": "units", "unit": name}), url


# --- behind real servers -------------------------------------------------------------------

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
            (rawhttp.request(port, sent_prefix + row.values[0].encode(), headers=JSON), row)
            for row in TABLE
        ]
        output = server.output()
    for response, row in answers:
        assert response.status is not None
        _, status, expected = row.values
        body = json.loads(response.body) if response.status in (200, 400) else None
        assert answer_of(response.status, body) == (status, expected), (row.id, output)


JSON = [(b"Accept", b"application/json")]


@pytest.mark.servers
def test_the_very_first_request_of_a_fresh_server() -> None:
    """The example project as its page shows it (the converter registered in
    the urlconf, which Django loads on the first request): a new process's
    first request holds a %2F, and gets its segment."""
    examples = ROOT / "example_apps"
    argv = [sys.executable, "-m", "gunicorn", "--bind", "127.0.0.1:{port}", "--workers", "1",
            "--chdir", str(examples), "django_app:application"]  # fmt: skip
    assert first_answer(argv, examples) == {"unit": "kg/s"}
