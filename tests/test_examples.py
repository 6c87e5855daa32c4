"""The example apps, their documentation, and the tour.

- Every example app (Starlette, FastAPI, Flask, Django) answers its two
  routes, ``/echo/`` and ``/files/``, through its framework's own test client.
- Every ``curl`` line in an app's header comment returns what the comment says.
- The README's quick starts run, and its first command runs the tour.
- The documented start commands work under the real servers, and the tour
  prints its table and exits 0 (``servers`` marker: real processes on loopback).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from starlette.exceptions import StarletteDeprecationWarning
from werkzeug.test import Client

import fastapi_app
import flask_app
import starlette_app
import tour
from doc_pages import page_blocks
from rawhttp import free_port, request, running

with warnings.catch_warnings():
    # Starlette asks for httpx2 over httpx; the project's test extra installs httpx.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

P = pytest.param
ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "example_apps"
JSON = {"Accept": "application/json"}


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Get = Callable[[str, dict[str, str]], Answer]


# --- one way to ask each example -------------------------------------------------------------


def asgi_client(app: Any) -> Iterator[Get]:
    with TestClient(app) as client:

        def get(url: str, headers: dict[str, str]) -> Answer:
            response = client.get(url, headers=headers)
            kind = response.headers.get("content-type", "")
            return Answer(response.status_code, kind, response.content)

        yield get


def wsgi_client(app: Any) -> Get:
    client = Client(app)

    def get(url: str, headers: dict[str, str]) -> Answer:
        response = client.get(url, headers=headers)
        return Answer(response.status_code, response.content_type or "", response.data)

    return get


@pytest.fixture(scope="module")
def django_app() -> Iterator[types.ModuleType]:
    """The Django example, with its own urlconf (another test module may have
    configured Django's settings first: settings are process-wide)."""
    from django.test.utils import override_settings

    import django_app as module

    with override_settings(ROOT_URLCONF=module.__name__, ALLOWED_HOSTS=["localhost"]):
        yield module


@pytest.fixture(params=["starlette", "fastapi", "flask", "django"])
def example(request: pytest.FixtureRequest) -> Iterator[Get]:
    name = request.param
    if name == "starlette":
        yield from asgi_client(starlette_app.app)
    elif name == "fastapi":
        yield from asgi_client(fastapi_app.app)
    elif name == "flask":
        yield wsgi_client(flask_app.app)
    else:
        yield wsgi_client(request.getfixturevalue("django_app").application)


# --- the two routes ---------------------------------------------------------------------------

OK_CASES = [
    P(
        "/echo/caf%C3%A9/x?q=a+b",
        ["echo", "café", "x"],
        [["q", "a b"]],
        id="segments of the whole path, echo first",
    ),
    P("/echo/", ["echo", ""], [], id="echo, nothing after it"),
    P("/echo/a/", ["echo", "a", ""], [], id="trailing slash: an empty last segment"),
    P(
        "/echo/?q=%E2%82%AC&empty&q=2",
        ["echo", ""],
        [["q", "€"], ["empty", ""], ["q", "2"]],
        id="query pairs in order, repeated names kept",
    ),
    P("/echo/file;p=1", ["echo", "file;p=1"], [], id="';' is literal by default"),
    P("/files/units/kg%2Fs", ["files", "units", "kg/s"], [], id="/files/ keeps %2F"),
    P("/files/a%2fb", ["files", "a/b"], [], id="/files/ keeps %2f, lower case"),
    P("/files/a%2F", ["files", "a/"], [], id="/files/ keeps a trailing %2F"),
    P("/files/.git%2Fconfig", ["files", ".git/config"], [], id="/files/ dot-file, no dot segment"),
    P("/files/", ["files", ""], [], id="files, nothing after it"),
]


@pytest.mark.parametrize(("url", "segments", "query"), OK_CASES)
def test_routes_answer_the_decoded_target(
    example: Get, url: str, segments: list[str], query: list[list[str]]
) -> None:
    answer = example(url, {})
    assert answer.status == 200, answer.body
    assert answer.json() == {"segments": segments, "query": query}


REJECTED_CASES = [
    P("/echo/units/kg%2Fs", "encoded-slash", id="%2F outside /files/"),
    P("/echo/%C4rzteblatt", "invalid-utf8", id="Latin-1 byte"),
    P("/files/%C4rzteblatt", "invalid-utf8", id="/files/ is strict otherwise"),
    P("/files/a%5Cb", "encoded-backslash", id="/files/ keeps only the slash"),
    P("/files/%2e%2e/etc", "dot-segment", id="/files/ dot segment"),
    # A kept %2F is data, but the parts it separates still obey the path rules.
    P("/files/..%2F..%2Fetc%2Fpasswd", "dot-segment", id="/files/ ..%2F traversal"),
    P("/files/%2Fetc%2Fpasswd", "empty-segment", id="/files/ leading %2F"),
    P("/files/a%2F%2Fb", "empty-segment", id="/files/ doubled %2F"),
    P("/echo/a?q=%zz", "malformed-escape", id="malformed escape in the query"),
    P("/echo/a?q=%00", "forbidden-char", id="NUL in the query"),
    P("/echo/a//b", "empty-segment", id="empty segment"),
    P("/echo/%252e", "double-encoding", id="double encoding"),
]


@pytest.mark.parametrize(("url", "rule"), REJECTED_CASES)
def test_routes_reject_with_the_rule(example: Get, url: str, rule: str) -> None:
    answer = example(url, JSON)
    assert answer.status == 400
    assert answer.content_type == "application/problem+json"
    assert answer.json()["rule"] == rule
    text = example(url, {})
    assert text.status == 400
    assert text.body.startswith(f"400 Bad Request: {rule}: ".encode())


def test_the_slash_route_is_a_prefix_not_a_substring(example: Get) -> None:
    # /echo/files/ is not under /files/: the default policy applies there.
    assert example("/echo/files/a%2Fb", JSON).json()["rule"] == "encoded-slash"


# --- the curl lines in each header comment ---------------------------------------------------


class CurlLine(NamedTuple):
    url: str
    headers: dict[str, str]
    expected: str


CURL = re.compile(r"^    curl --path-as-is (?P<args>.*)$")


def curl_lines(module: types.ModuleType) -> list[CurlLine]:
    """Each ``curl --path-as-is ...`` line of a docstring and the output under it
    (continuation lines indented further are joined with single spaces)."""
    lines = (module.__doc__ or "").splitlines()
    found: list[CurlLine] = []
    for i, line in enumerate(lines):
        match = CURL.match(line)
        if match is None:
            continue
        args = shlex.split(match["args"])
        headers = dict(args[j + 1].split(": ", 1) for j in range(len(args) - 1) if args[j] == "-H")
        output: list[str] = []
        for following in lines[i + 1 :]:
            if not following.strip():
                break
            output.append(following.strip())
        url = re.sub(r"^http://127\.0\.0\.1:\d+", "", args[-1])
        found.append(CurlLine(url, headers, " ".join(output)))
    return found


def check_curl_line(get: Get, line: CurlLine) -> None:
    answer = get(line.url, line.headers)
    if line.expected.startswith("400 "):
        assert answer.status == 400
        assert answer.body.decode().strip() == line.expected
    else:
        assert line.expected.startswith("{")
        assert answer.json() == json.loads(line.expected)
        assert answer.status == (400 if "application/problem+json" in answer.content_type else 200)


def test_every_app_documents_curl_lines() -> None:
    import django_app

    for module in (starlette_app, fastapi_app, flask_app, django_app):
        lines = curl_lines(module)
        assert len(lines) >= 3, module.__name__
        assert any(line.expected.startswith("400 ") for line in lines), module.__name__
        assert any(line.expected.startswith("{") for line in lines), module.__name__


@pytest.mark.parametrize("line", [P(line, id=line.url) for line in curl_lines(starlette_app)])
def test_starlette_curl_lines(line: CurlLine) -> None:
    for get in asgi_client(starlette_app.app):
        check_curl_line(get, line)


@pytest.mark.parametrize("line", [P(line, id=line.url) for line in curl_lines(fastapi_app)])
def test_fastapi_curl_lines(line: CurlLine) -> None:
    for get in asgi_client(fastapi_app.app):
        check_curl_line(get, line)


@pytest.mark.parametrize("line", [P(line, id=line.url) for line in curl_lines(flask_app)])
def test_flask_curl_lines(line: CurlLine) -> None:
    check_curl_line(wsgi_client(flask_app.app), line)


def test_django_curl_lines(django_app: types.ModuleType) -> None:
    lines = curl_lines(django_app)
    for line in lines:
        check_curl_line(wsgi_client(django_app.application), line)


# --- the README ------------------------------------------------------------------------------


def readme_blocks(language: str) -> list[tuple[str, str]]:
    """(the heading above it, its code) for each fenced ``language`` block of the README."""
    return [(b.heading, b.code) for b in page_blocks("README.md") if b.language == language]


def quick_start(framework: str) -> str:
    codes = [code for heading, code in readme_blocks("python") if heading == framework]
    assert len(codes) == 1, f"one python block under '### {framework}' in README.md"
    (code,) = codes
    return code


def test_readme_first_commands() -> None:
    first_block, *_ = [code for _, code in readme_blocks("sh")]
    first, second = first_block.splitlines()[:2]
    assert first == (
        "python3 -m venv .venv && .venv/bin/pip install --quiet -e '.[examples]' "
        "&& .venv/bin/python example_apps/tour.py"
    )
    assert second.startswith("python3 -m venv .venv-tox && ")


@pytest.mark.parametrize("framework", ["Starlette", "FastAPI"])
def test_readme_quick_start_asgi(framework: str) -> None:
    namespace: dict[str, Any] = {"__name__": f"readme_{framework.lower()}"}
    exec(quick_start(framework), namespace)  # the README's own code, as a reader runs it
    for get in asgi_client(namespace["app"]):
        assert get("/echo/caf%C3%A9/x", {}).json() == ["echo", "café", "x"]
        assert get("/echo/a%2Fb", JSON).json()["rule"] == "encoded-slash"
        assert get("/units/kg%2Fs", {}).json() == {"unit": "kg/s"}
        assert get("/units/..%2Fetc", JSON).json()["rule"] == "dot-segment"


def test_readme_quick_start_flask() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_flask"}
    exec(quick_start("Flask"), namespace)
    get = wsgi_client(namespace["app"])
    assert get("/echo/caf%C3%A9/x", {}).json() == ["echo", "café", "x"]
    assert get("/echo/a%2Fb", JSON).json()["rule"] == "encoded-slash"
    assert get("/units/kg%2Fs", {}).json() == {"unit": "kg/s"}
    assert get("/units/..%2Fetc", JSON).json()["rule"] == "dot-segment"


def test_readme_quick_start_django(django_app: types.ModuleType) -> None:
    from django.test.utils import override_settings
    from django.urls import path, re_path

    # The README shows the project's files one by one: wsgi.py and views.py
    # run here; urls.py (a package-relative import) is stood for below.
    files = [code for heading, code in readme_blocks("python") if heading == "Django"]
    assert [code.splitlines()[0] for code in files] == [
        "# mysite/wsgi.py",
        "# mysite/views.py",
        "# mysite/urls.py",
    ]
    namespace: dict[str, Any] = {"__name__": "readme_django"}
    exec("\n\n".join(files[:2]), namespace)
    urls = types.ModuleType("readme_django_urls")
    urls.urlpatterns = [  # type: ignore[attr-defined]
        re_path(r"^echo/(?P<rest>.*)$", namespace["echo"]),
        path("units/<segment:unit>", namespace["unit"]),
    ]
    sys.modules[urls.__name__] = urls
    try:
        with override_settings(ROOT_URLCONF=urls.__name__):
            get = wsgi_client(namespace["application"])
            assert get("/echo/caf%C3%A9/x", {}).json() == ["echo", "café", "x"]
            assert get("/echo/a%2Fb", JSON).json()["rule"] == "encoded-slash"
            assert get("/units/kg%2Fs", {}).json() == {"unit": "kg/s"}
            assert get("/units/..%2Fetc", JSON).json()["rule"] == "dot-segment"
    finally:
        del sys.modules[urls.__name__]


# --- the tour's pieces -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        P(b"/a?b", b"/a?b", id="origin-form unchanged"),
        P(b"http://example.com/doc@1:5/?x=1", b"/doc@1:5/?x=1", id="absolute-form"),
        P(b"https://h:8080/file;p=1?q=2", b"/file;p=1?q=2", id="with a port"),
        P(b"http://example.com/?query=a", b"/?query=a", id="root path"),
        P(b"http://example.com?x=1", b"/?x=1", id="empty path with a query"),
        P(b"http://example.com", b"/", id="no path at all"),
    ],
)
def test_tour_origin_form(raw: bytes, expected: bytes) -> None:
    assert tour.origin_form(raw) == expected


def test_tour_sends_every_article_example() -> None:
    from article_examples import ARTICLES, EXAMPLES

    rows = tour.article_rows()
    targets = {row.target for row in rows}
    for _source, raw, policy_name, _policy in EXAMPLES:
        prefix = b"/files" if policy_name == "keep-slash" else b"/echo"
        assert prefix + tour.origin_form(raw) in targets
    assert all(row.target.startswith((b"/echo/", b"/files/")) for row in rows)
    assert {source.split(":")[0] for source, *_ in EXAMPLES} == set(ARTICLES)
    assert len(tour.HOSTILE) >= 12


def test_tour_finds_the_guards_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    """The lines the tour shows are the ones the guard really logs, plain (no
    logging configured) or after the default format's prefix."""
    from urlguard.wsgi import StrictURLMiddleware

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [b""]

    def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        return None

    guarded = StrictURLMiddleware(app)
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/a%C4",
        "PATH_INFO": "/a\ufffd",
        "HTTP_HOST": "localhost",
    }
    with caplog.at_level("WARNING", logger="urlguard"):
        guarded(environ, start_response)
    [message] = [record.getMessage() for record in caplog.records]
    output = "\n".join(["server started", message, "WARNING:urlguard:" + message, "GET /x 200"])
    assert tour.urlguard_log(output) == [message, message]
    assert message.startswith("rejected request target: rule=invalid-utf8")


def test_tour_table_fits_its_columns() -> None:
    cells = [["label", "x" * 100], ["200 ['echo', '起司堡']"], ["400 invalid-utf8", "(path)"]]
    lines = list(tour.table_lines(cells))
    assert len(lines) == 4  # the label, then 100 characters cut into three lines
    width = tour.TARGET_WIDTH + 2 * tour.CELL_WIDTH + 2 * len(tour.GAP)
    assert all(tour.columns(line) <= width for line in lines)
    # The third column starts at the same place although '起司堡' is six columns wide.
    third = tour.TARGET_WIDTH + tour.CELL_WIDTH + 2 * len(tour.GAP)
    assert tour.columns(lines[0][: lines[0].index("400")]) == third
    assert tour.columns(lines[1][: lines[1].index("(path)")]) == third
    assert tour.shown(b"/a b\x00\\") == "/a\\x20b\\x00\\x5c"


# --- under the real servers ------------------------------------------------------------------

CONTROL_SOCKET = ["--no-control-socket"] if tour.gunicorn_has_control_socket() else []

START_COMMANDS = [
    P(starlette_app, "uvicorn example_apps.starlette_app:app", id="uvicorn starlette"),
    P(starlette_app, "uvicorn --app-dir example_apps starlette_app:app", id="uvicorn app-dir"),
    P(fastapi_app, "uvicorn example_apps.fastapi_app:app", id="uvicorn fastapi"),
    P(flask_app, "gunicorn --chdir example_apps flask_app:app", id="gunicorn flask"),
    P(flask_app, "flask --app example_apps/flask_app run", id="flask run"),
]


def documented(module: types.ModuleType, command: str) -> bool:
    return f"    {command}\n" in (module.__doc__ or "")


def server_argv(command: str, port: int) -> list[str]:
    """The documented command, run with this interpreter, on ``port``."""
    tool, *args = shlex.split(command)
    if tool == "uvicorn":
        args += ["--port", str(port)]
    elif tool == "gunicorn":
        args += ["--bind", f"127.0.0.1:{port}", *CONTROL_SOCKET]
    else:
        args += ["--port", str(port)]
    return [sys.executable, "-m", tool, *args]


@pytest.mark.servers
@pytest.mark.parametrize(("module", "command"), START_COMMANDS)
def test_documented_start_commands(module: types.ModuleType, command: str) -> None:
    assert documented(module, command), f"{module.__name__} documents {command!r}"
    port = free_port()
    with running(server_argv(command, port), port, cwd=ROOT) as server:
        ok = request(port, b"/echo/caf%C3%A9?q=a+b")
        kept = request(port, b"/files/kg%2Fs")
        bad = request(port, b"/echo/kg%2Fs", headers=[(b"Accept", b"application/json")])
        output = server.output()
    assert ok.status == 200, output
    assert ok.json() == {"segments": ["echo", "café"], "query": [["q", "a b"]]}
    assert kept.json() == {"segments": ["files", "kg/s"], "query": []}
    assert (bad.status, bad.json()["rule"]) == (400, "encoded-slash")


@pytest.mark.servers
def test_django_start_command() -> None:
    import django_app

    command = "gunicorn --chdir example_apps django_app:application"
    assert documented(django_app, command)
    port = free_port()
    with running(server_argv(command, port), port, cwd=ROOT):
        ok = request(port, b"/files/a%2Fb?q=%C3%A9")
        bad = request(port, b"/echo/caf%C4", headers=[(b"Accept", b"application/json")])
    assert ok.json() == {"segments": ["files", "a/b"], "query": [["q", "é"]]}
    assert (bad.status, bad.json()["rule"]) == (400, "invalid-utf8")


#: label of a tour row -> what both stacks must answer (in the row's first line).
TOUR_ROWS = [
    P("encoded slash", "400 encoded-slash", "400 encoded-slash", id="encoded slash"),
    P("...kept under /files/", "200 ['files', 'a/b']", "200 ['files', 'a/b']", id="kept"),
    P("Latin-1 byte, not UTF-8", "400 invalid-utf8", "400 invalid-utf8", id="latin-1"),
    P("overlong '/' (%C0%AF)", "400 invalid-utf8", "400 invalid-utf8", id="overlong"),
    P("encoded NUL", "400 forbidden-char", "400 forbidden-char", id="NUL"),
    P("right-to-left override", "400 forbidden-char", "400 forbidden-char", id="bidi"),
    P("dot segment", "400 dot-segment", "400 dot-segment", id="dots"),
    P("'..;' (Tomcat's bypass)", "400 dot-segment", "400 dot-segment", id="dot-semicolon"),
    P("empty segment", "400 empty-segment", "400 empty-segment", id="empty"),
    P("double encoding", "400 double-encoding", "400 double-encoding", id="double"),
    P("encoded backslash", "400 encoded-backslash", "400 encoded-backslash", id="backslash"),
    P("malformed escape", "400 malformed-escape", "400 malformed-escape", id="malformed"),
    P("raw space", "400 refused by uvicorn", "400 refused by gunicorn", id="raw space"),
    P("raw UTF-8", "400 refused by uvicorn", "400 refused by gunicorn", id="raw utf-8"),
    P("9000 bytes", "400 too-long", "414 refused by gunicorn", id="long"),
    P(
        "Proper encoding: %C4 is not UTF-8",
        "400 invalid-utf8",
        "400 invalid-utf8",
        id="article: Latin-1 escape",
    ),
    P(
        "Every web developer: encode each part",
        "200 ['files', 'a/b?c']",
        "200 ['files', 'a/b?c']",
        id="article: encode each part",
    ),
]


@pytest.fixture(scope="module")
def tour_output() -> str:
    done = subprocess.run(
        [sys.executable, str(APPS / "tour.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stdout


@pytest.mark.servers
def test_tour_prints_its_table(tour_output: str) -> None:
    assert "A: uvicorn + Starlette" in tour_output
    assert "B: gunicorn + Flask" in tour_output
    assert "== The articles' examples" in tour_output
    assert "== Hostile targets" in tour_output
    assert "no answer" not in tour_output
    assert tour_output.rstrip().endswith("Every server stopped.")


@pytest.mark.servers
def test_tour_shows_the_four_frameworks_routing_on_segments(tour_output: str) -> None:
    section = tour_output.split("== Routes on segments", 1)[1]
    answers: dict[str, list[str]] = {}
    target = ""
    for line in section.splitlines()[1:]:
        if line.startswith("    "):
            framework, answer = line.split(maxsplit=1)
            answers.setdefault(target, []).append(f"{framework} {answer}")
        elif line.startswith("/"):
            target = line.split()[0]
    frameworks = ("Starlette", "FastAPI", "Flask", "Django")
    assert answers["/units/kg%2Fs"] == [f"{f} 200 {{'unit': 'kg/s'}}" for f in frameworks]
    assert answers["/units/caf%C3%A9"] == [f"{f} 200 {{'unit': 'café'}}" for f in frameworks]
    assert answers["/units/..%2Fetc"] == [f"{f} 400 dot-segment" for f in frameworks]
    assert answers["/units/%2Fetc%2Fpasswd"] == [f"{f} 400 empty-segment" for f in frameworks]
    assert answers["/echo/kg%2Fs"] == [f"{f} 400 encoded-slash" for f in frameworks]
    assert all(answer.split()[1] == "404" for answer in answers["/units/kg/s"])


@pytest.mark.servers
@pytest.mark.parametrize(("label", "a", "b"), TOUR_ROWS)
def test_tour_rows(tour_output: str, label: str, a: str, b: str) -> None:
    rows = [line for line in tour_output.splitlines() if line.startswith(label + " ")]
    assert len(rows) == 1, label
    (row,) = rows
    _, *cells = [cell for cell in re.split(r"\s{2,}", row) if cell]
    assert cells == [a, b]


@pytest.mark.servers
def test_tour_fragment_row(tour_output: str) -> None:
    # gunicorn hands urlguard the '#'; uvicorn's httptools parser drops it first
    # (then the row is marked '*'), its h11 parser does not.
    (row,) = [line for line in tour_output.splitlines() if line.startswith("fragment ")]
    _, uvicorn, gunicorn = [cell for cell in re.split(r"\s{2,}", row) if cell]
    assert gunicorn == "400 fragment"
    assert uvicorn in ("400 fragment", "200 ['echo', 'page'] *")
