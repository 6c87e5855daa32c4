"""urlguard.wsgi.StrictURLMiddleware at the protocol boundary: hand-built environs
shaped like each server's (as measured, see docs/servers.md), truth tables of
what passes and what is rejected, and every option. The decision behind it is
tested on its own in test_guard.py, real servers in test_servers.py."""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes
from wsgiref.types import StartResponse, WSGIEnvironment

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from log_checks import assert_error_logged
from urlguard import RULES, Config, InvalidTarget, Policy, Target
from urlguard.wsgi import StrictURLMiddleware

P = pytest.param
MARK = b"ECHOME"  # put in hostile targets: never in a response body

# --- server shapes (docs/servers.md) --------------------------------------------------------

WITH_RAW = ("gunicorn", "waitress", "werkzeug")
WITHOUT_RAW = ("wsgiref", "granian", "hypercorn")
SOFTWARE = {
    "gunicorn": "gunicorn/27.0.1",
    "waitress": "waitress",
    "werkzeug": "Werkzeug/3.1.9 Python/3.11.9",
    "wsgiref": "WSGIServer/0.2 CPython/3.11.9",
    "granian": "granian",
}


class NoInput:
    """wsgi.input that fails the test when anything reads it."""

    def read(self, *args: Any) -> bytes:
        raise AssertionError("the middleware read the request body")

    readline = readlines = read

    def __iter__(self) -> Any:
        raise AssertionError("the middleware read the request body")


def _dance(text: str) -> str:
    # werkzeug's _wsgi_encoding_dance on http.server's latin-1 request line.
    return text.encode("utf-8").decode("latin-1")


def server_environ(
    server: str,
    wire: bytes,
    *,
    script_name: str = "",
    method: str = "GET",
    accept: str | None = None,
) -> dict[str, Any]:
    """The environ ``server`` builds for the request target ``wire``."""
    if server == "werkzeug" and wire.startswith(b"//"):
        wire = b"/" + wire.lstrip(b"/")  # http.server collapses a leading '//'
    raw_path, _, query = wire.partition(b"?")
    path = unquote_to_bytes(raw_path)
    if server == "hypercorn":
        path = path.decode("utf-8", "replace").encode("utf-8")  # via the ASGI scope
    script = script_name.encode("latin-1")
    if script and path.startswith(script):
        path = path[len(script) :]
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path.decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "51000",
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": NoInput(),
        "wsgi.errors": None,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if server in SOFTWARE:
        environ["SERVER_SOFTWARE"] = SOFTWARE[server]
    if server == "gunicorn":
        environ["RAW_URI"] = wire.decode("latin-1")
    elif server == "waitress":
        environ["REQUEST_URI"] = wire.decode("latin-1")
    elif server == "werkzeug":
        environ["REQUEST_URI"] = environ["RAW_URI"] = _dance(wire.decode("latin-1"))
        environ["werkzeug.socket"] = object()
    if accept is not None:
        environ["HTTP_ACCEPT"] = accept
    return environ


# --- driving the middleware ----------------------------------------------------------------


class Recorder:
    """The guarded app: records the environs it sees, answers 200."""

    def __init__(self) -> None:
        self.environs: list[WSGIEnvironment] = []

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        self.environs.append(environ)
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]


_STATUS_LINE = re.compile(r"[1-5][0-9][0-9] [A-Za-z][A-Za-z' ]*")


def call(app: Any, environ: WSGIEnvironment) -> tuple[int, dict[str, str], bytes]:
    """Run the app as a server would; check what a server needs to answer it."""
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started.append((status, headers))
        return lambda data: None

    body = b"".join(app(environ, start_response))
    ((status, headers),) = started
    assert _STATUS_LINE.fullmatch(status), status
    for name, value in headers:
        name.encode("latin-1")
        value.encode("latin-1")
        assert "\r" not in value
        assert "\n" not in value
    return int(status[:3]), dict(headers), body


def guarded(**options: Any) -> tuple[StrictURLMiddleware, Recorder]:
    inner = Recorder()
    return StrictURLMiddleware(inner, **options), inner


# --- truth table: servers that give the raw target --------------------------------------------

Expected = tuple[str, ...] | str | None  # segments, a rule code, or None: the server refuses it


def _assert_verdict(
    status: int, body: bytes, seen: list[WSGIEnvironment], expected: Expected
) -> None:
    """Accepted with these segments (a tuple), or a 400 naming the rule (a str)."""
    if isinstance(expected, tuple):
        assert status == 200
        assert seen[0]["urlguard.target"].segments == expected
    else:
        assert status == 400
        assert isinstance(expected, str)
        assert expected.encode() in body


CASES: list[tuple[str, bytes, Expected, Expected, Expected]] = [
    # id, wire target, gunicorn, waitress, werkzeug dev server
    ("plain", b"/echo/a?q=a+b", ("echo", "a"), ("echo", "a"), ("echo", "a")),
    ("utf-8", b"/echo/caf%C3%A9", ("echo", "café"), ("echo", "café"), ("echo", "café")),
    ("invalid utf-8", b"/ECHOME/caf%C4", *(("invalid-utf8",) * 3)),
    ("invalid utf-8 query", b"/a?ECHOME=%C4", *(("invalid-utf8",) * 3)),
    ("encoded slash", b"/ECHOME/a%2Fb", *(("encoded-slash",) * 3)),
    ("dot segment", b"/ECHOME/.%2e/x", *(("dot-segment",) * 3)),
    ("malformed escape", b"/ECHOME/%u00E9", *(("malformed-escape",) * 3)),
    ("encoded NUL", b"/ECHOME/%00", *(("forbidden-char",) * 3)),
    ("double encoding", b"/ECHOME/%2541", *(("double-encoding",) * 3)),
    ("fragment", b"/ECHOME#f", *(("fragment",) * 3)),
    ("absolute-form", b"http://example.com/a?b", ("a",), ("a",), ("a",)),
    ("empty segment", b"/ECHOME//x", *(("empty-segment",) * 3)),
    # http.server collapses a leading '//' before werkzeug sees it.
    ("leading double slash", b"//ECHOME", "empty-segment", "empty-segment", ("ECHOME",)),
    ("raw NUL", b"/ECHOME\x00", None, "raw-char", "raw-char"),
    ("raw 0x01", b"/ECHOME\x01", None, "raw-char", "raw-char"),
    ("raw DEL", b"/ECHOME\x7f", None, "raw-char", "raw-char"),
    ("raw TAB", b"/ECHOME\tx", None, "raw-char", None),
    ("raw UTF-8", b"/ECHOME/caf\xc3\xa9", None, None, "raw-char"),
    ("raw backslash", b"/ECHOME\\x", *(("raw-char",) * 3)),
    ("noslash", b"ECHOME", None, "bad-form", "bad-form"),
    ("8 KiB", b"/" + b"a" * 8192, None, "too-long", "too-long"),
]


def _server_params() -> list[Any]:
    params = []
    for name, wire, *results in CASES:
        for server, expected in zip(WITH_RAW, results, strict=True):
            if expected is not None:
                params.append(P(server, wire, expected, id=f"{server}: {name}"))
    return params


@pytest.mark.parametrize(("server", "wire", "expected"), _server_params())
def test_server_shapes(server: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded()
    status, headers, body = call(app, server_environ(server, wire))
    if isinstance(expected, tuple):
        assert status == 200
        target = inner.environs[0]["urlguard.target"]
        assert isinstance(target, Target)
        assert target.segments == expected
    else:
        assert status == 400
        assert inner.environs == []
        assert isinstance(expected, str)
        assert expected.encode() in body
        assert MARK.lower() not in body.lower()
        assert headers["Content-Length"] == str(len(body))


def test_werkzeug_double_encoding_is_undone(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded()
    environ = server_environ("werkzeug", b"/caf\xc3\xa9\x01")
    assert environ["RAW_URI"] == "/caf\xc3\x83\xc2\xa9\x01"  # what werkzeug hands over
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, _, _ = call(app, environ)
    assert status == 400
    (record,) = caplog.records
    assert record.getMessage().endswith(r"target=/caf\xc3\xa9\x01")
    assert "offset=4" in record.getMessage()


@pytest.mark.parametrize(
    "software",
    [P("Werkzeug/3.1.9 Python/3.11.9", id="by SERVER_SOFTWARE"), P(None, id="by werkzeug.socket")],
)
def test_werkzeug_is_recognised(software: str | None, caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded()
    environ = server_environ("werkzeug", b"/\xc3\xa9")
    if software is None:
        del environ["SERVER_SOFTWARE"]
    else:
        del environ["werkzeug.socket"]
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, environ)
    assert caplog.records[0].getMessage().endswith(r"target=/\xc3\xa9")


def test_other_servers_are_not_undone(caplog: pytest.LogCaptureFixture) -> None:
    # The same latin-1 string from another server means other bytes.
    app, _ = guarded()
    environ = server_environ("gunicorn", b"/\xc3\x83\xc2\xa9")
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, environ)
    assert caplog.records[0].getMessage().endswith(r"target=/\xc3\x83\xc2\xa9")


RAW_SOURCES = [
    P({"RAW_URI": "/ok", "REQUEST_URI": "/%C4"}, ("ok",), id="RAW_URI first"),
    P({"REQUEST_URI": "/%C4"}, "invalid-utf8", id="then REQUEST_URI"),
    P({"RAW_URI": "/%C4", "REQUEST_URI": "/ok"}, "invalid-utf8", id="RAW_URI wins when bad"),
    P({"RAW_URI": ""}, "bad-form", id="empty RAW_URI is a bad-form target"),
    P({"RAW_URI": b"/ok"}, ("ok",), id="bytes from a non-PEP 3333 server"),
    # Not latin-1, so not bytes as PEP 3333 carries them: judged as UTF-8,
    # whose bytes >= 0x80 are never allowed raw.
    P({"RAW_URI": "/caf\u00e9\u20ac"}, "raw-char", id="characters beyond latin-1"),
    P({"REQUEST_URI": "/a\udcff"}, "raw-char", id="lone surrogate"),
]


@pytest.mark.parametrize(("keys", "expected"), RAW_SOURCES)
def test_raw_target_sources(keys: dict[str, Any], expected: Expected) -> None:
    app, inner = guarded()
    environ = server_environ("wsgiref", b"/ok")
    environ.update(keys)
    status, _, body = call(app, environ)
    _assert_verdict(status, body, inner.environs, expected)
    if isinstance(expected, str):
        assert inner.environs == []
        assert [rule for rule in RULES if rule.encode() in body] == [expected]


def test_server_keys_are_never_rewritten() -> None:
    app, inner = guarded()
    environ = server_environ("gunicorn", b"/app/echo/caf%C3%A9?q=1", script_name="/app")
    before = {k: v for k, v in environ.items() if k != "wsgi.input"}
    before = copy.deepcopy(before)
    call(app, environ)
    seen = inner.environs[0]
    assert {k: v for k, v in seen.items() if k in before} == before
    assert set(seen) - set(before) == {"urlguard.target", "wsgi.input"}


SCRIPT_CASES = [
    P("gunicorn", "/app", b"/app/echo/a?x", b"/echo/a?x", ("echo", "a"), id="mount stripped"),
    P("waitress", "/app", b"/app/", b"/", ("",), id="mount root"),
    P("gunicorn", "/app", b"/app", b"/", ("",), id="the mount itself is / below it"),
    P("gunicorn", "/app", b"/app?q=1", b"/?q=1", ("",), id="the mount itself, a query"),
    P("gunicorn", "/app", b"/%61pp/x", b"/x", ("x",), id="an escaped mount"),
    P("gunicorn", "/app", b"/apple/x", b"/apple/x", ("apple", "x"), id="ends at a slash"),
    P("gunicorn", "/my app", b"/my%20app/x", b"/x", ("x",), id="compared decoded"),
    # PEP 3333: SCRIPT_NAME holds the decoded bytes as latin-1 characters.
    P("waitress", "/caf\xc3\xa9", b"/caf%C3%A9/x?q", b"/x?q", ("x",), id="a non-ASCII mount"),
    P("werkzeug", "/caf\xc3\xa9", b"/caf\xc3\xa9/x", b"/x", ("x",), id="werkzeug, raw UTF-8"),
    P("gunicorn", "/a/b", b"/a/b", b"/", ("",), id="a mount of two segments"),
    P("gunicorn", "/app", b"/other", b"/other", ("other",), id="not below: judged whole"),
]


@pytest.mark.parametrize(("server", "script", "wire", "raw", "segments"), SCRIPT_CASES)
def test_script_name(
    server: str, script: str, wire: bytes, raw: bytes, segments: tuple[str, ...]
) -> None:
    app, inner = guarded()
    assert call(app, server_environ(server, wire, script_name=script))[0] == 200
    target = inner.environs[0]["urlguard.target"]
    assert (target.raw, target.segments) == (raw, segments)


@pytest.mark.parametrize("server", WITH_RAW)
@pytest.mark.parametrize("query", [P(b"", id="no query"), P(b"?q=1", id="a query")])
def test_mount_point_itself_is_its_slash(server: str, query: bytes) -> None:
    app, inner = guarded()
    for wire in (b"/app", b"/app/"):
        assert call(app, server_environ(server, wire + query, script_name="/app"))[0] == 200
    bare, slash = (environ["urlguard.target"] for environ in inner.environs)
    assert bare == slash
    assert (bare.raw, bare.segments, bare.query) == (slash.raw, ("",), slash.query)


# --- no raw target: wsgiref, granian and hypercorn in WSGI mode -------------------------------


@pytest.mark.parametrize("server", WITHOUT_RAW)
def test_no_raw_target_is_refused_with_501(server: str, caplog: pytest.LogCaptureFixture) -> None:
    app, inner = guarded()
    with caplog.at_level(logging.DEBUG, logger="urlguard"):
        status, headers, body = call(app, server_environ(server, b"/fine"))
    assert status == 501
    assert inner.environs == []
    assert headers["Cache-Control"] == "no-store"
    assert headers["Content-Length"] == str(len(body))
    assert b"RAW_URI" in body
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    software = SOFTWARE.get(server, "unknown").replace(" ", r"\x20")
    assert f"the server ({software})" in record.getMessage()


def test_no_raw_target_problem_json() -> None:
    app, _ = guarded()
    status, headers, body = call(app, server_environ("wsgiref", b"/", accept="application/json"))
    assert status == 501
    assert headers["Content-Type"] == "application/problem+json"
    problem = json.loads(body)
    assert (problem["status"], problem["title"]) == (501, "Not Implemented")


def test_no_raw_target_log_line_escapes_server_software(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded()
    environ = server_environ("wsgiref", b"/")
    environ["SERVER_SOFTWARE"] = "evil\r\nINJECTED\x1b[0m"
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        call(app, environ)
    line = caplog.records[0].getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line)
    assert r"evil\x0d\x0aINJECTED\x1b[0m" in line


def test_no_raw_target_in_report_mode_passes(caplog: pytest.LogCaptureFixture) -> None:
    app, inner = guarded(mode="report")
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        assert call(app, server_environ("wsgiref", b"/fine"))[0] == 200
    assert "urlguard.target" not in inner.environs[0]
    (record,) = caplog.records
    assert (record.name, record.levelno) == ("urlguard", logging.ERROR)
    message = record.getMessage()
    assert "provides no raw request target (no RAW_URI or REQUEST_URI in the environ)" in message
    assert "passed on (report-only)" in message


DECODED = [
    P("wsgiref", b"/caf%C3%A9/x?q=a+b", ("café", "x"), id="wsgiref utf-8"),
    P("granian", b"/caf%C3%A9", ("café",), id="granian utf-8"),
    P("hypercorn", b"/caf%C3%A9", ("café",), id="hypercorn utf-8"),
    P("wsgiref", b"/caf%C4", "invalid-utf8", id="wsgiref keeps invalid bytes"),
    P("granian", b"/caf\xc4", "invalid-utf8", id="granian raw invalid byte"),
    P("hypercorn", b"/caf%C4", "invalid-utf8", id="hypercorn replaced it with U+FFFD"),
    P("wsgiref", b"/a%00", "forbidden-char", id="decoded NUL"),
    P("wsgiref", b"/a\x00", "forbidden-char", id="raw NUL"),
    P("wsgiref", b"/%E2%80%AE", "forbidden-char", id="bidi override"),
    P("wsgiref", b"/a/%2E%2E/b", "dot-segment", id="dot segment"),
    P("wsgiref", b"/a//b", "empty-segment", id="empty segment"),
    P("wsgiref", b"/%2541", "double-encoding", id="double encoding"),
    P("wsgiref", b"/a%2Fb", ("a", "b"), id="encoded slash cannot be seen"),
    P("wsgiref", b"/a?q=%C4", "invalid-utf8", id="query exact: invalid utf-8"),
    P("wsgiref", b"/a?q=%zz", "malformed-escape", id="query exact: malformed"),
    P("wsgiref", b"/a?ECHOME=1&x=%26", ("a",), id="query exact: fine"),
]


@pytest.mark.parametrize(("server", "wire", "expected"), DECODED)
def test_no_raw_target_validate_decoded(server: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    status, _, body = call(app, server_environ(server, wire))
    _assert_verdict(status, body, inner.environs, expected)


def test_validate_decoded_keeps_the_query_exact() -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    call(app, server_environ("wsgiref", b"/a?x=%26&y=a+b"))
    assert inner.environs[0]["urlguard.target"].query == (("x", "&"), ("y", "a b"))


def test_validate_decoded_empty_path_info_is_the_mount_point() -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    environ = server_environ("wsgiref", b"/")
    environ["PATH_INFO"] = ""
    assert call(app, environ)[0] == 200
    assert inner.environs[0]["urlguard.target"].segments == ("",)


def test_validate_decoded_uses_routes() -> None:
    routes = {"/strict/": {"allowed_ranges": [[0x20, 0x7E]]}}
    app, _ = guarded(missing_raw_target="validate-decoded", routes=routes)
    assert call(app, server_environ("wsgiref", b"/strict/caf%C3%A9"))[0] == 400
    assert call(app, server_environ("wsgiref", b"/other/caf%C3%A9"))[0] == 200


# --- OPTIONS * -------------------------------------------------------------------------------

ASTERISK = [
    P("gunicorn", "OPTIONS", b"*", 200, id="gunicorn OPTIONS *"),
    P("waitress", "OPTIONS", b"*", 200, id="waitress OPTIONS *"),
    P("wsgiref", "OPTIONS", b"*", 200, id="wsgiref OPTIONS *"),
    P("gunicorn", "GET", b"*", 400, id="GET * is bad-form"),
    P("gunicorn", "OPTIONS", b"*?x", 400, id="OPTIONS *?x is bad-form"),
]


@pytest.mark.parametrize(("server", "method", "wire", "status"), ASTERISK)
def test_options_asterisk(server: str, method: str, wire: bytes, status: int) -> None:
    app, inner = guarded()
    assert call(app, server_environ(server, wire, method=method))[0] == status
    if status == 200:
        assert "urlguard.target" not in inner.environs[0]


def test_options_asterisk_validate_decoded() -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    assert call(app, server_environ("wsgiref", b"*", method="OPTIONS"))[0] == 200
    assert "urlguard.violation" not in inner.environs[0]


# --- the rejection response ------------------------------------------------------------------

ACCEPT = [
    P(None, "text/plain; charset=utf-8", id="no Accept"),
    P("application/json", "application/problem+json", id="json"),
    P("text/html,*/*;q=0.8", "text/plain; charset=utf-8", id="browser"),
    P("application/json;q=0", "text/plain; charset=utf-8", id="json refused"),
]


@pytest.mark.parametrize(("accept", "content_type"), ACCEPT)
def test_rejection_body(accept: str | None, content_type: str) -> None:
    app, _ = guarded()
    environ = server_environ("gunicorn", b"/ECHOME/a%2Fb", accept=accept)
    status, headers, body = call(app, environ)
    assert status == 400
    assert headers["Content-Type"] == content_type
    assert headers["Content-Length"] == str(len(body))
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert MARK not in body
    if content_type == "application/problem+json":
        problem = json.loads(body)
        assert problem["rule"] == "encoded-slash"
        assert (problem["type"], problem["status"], problem["title"]) == (
            "about:blank",
            400,
            "Bad Request",
        )
    else:
        assert body.startswith(b"400 Bad Request: encoded-slash: ")


def test_head_gets_headers_only() -> None:
    app, _ = guarded()
    _, get_headers, get_body = call(app, server_environ("gunicorn", b"/%C4"))
    status, headers, body = call(app, server_environ("gunicorn", b"/%C4", method="HEAD"))
    assert (status, body) == (400, b"")
    assert headers["Content-Length"] == get_headers["Content-Length"] == str(len(get_body))


def test_request_body_is_never_read() -> None:
    app, _ = guarded()
    environ = server_environ("gunicorn", b"/%C4", method="POST")
    environ["CONTENT_LENGTH"] = "5"
    assert call(app, environ)[0] == 400  # NoInput fails the test if read


# --- werkzeug's test client: a real WSGI round trip ------------------------------------------


def test_werkzeug_test_client() -> None:
    app, inner = guarded()
    client = Client(app)
    ok = client.get("/echo/caf%C3%A9?q=a+b")
    assert ok.status_code == 200
    target = inner.environs[0]["urlguard.target"]
    assert (target.segments, target.query) == (("echo", "café"), (("q", "a b"),))
    bad = client.get("/echo/caf%C4", headers={"Accept": "application/json"})
    assert bad.status_code == 400
    assert bad.json is not None
    assert bad.json["rule"] == "invalid-utf8"
    assert bad.headers["Content-Length"] == str(len(bad.data))


# --- modes, hooks, counters ------------------------------------------------------------------


def test_report_mode(caplog: pytest.LogCaptureFixture) -> None:
    app, inner = guarded(mode="report")
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert call(app, server_environ("waitress", b"/a\x00"))[0] == 200
        assert call(app, server_environ("waitress", b"/ok"))[0] == 200
    bad, good = inner.environs
    assert "urlguard.target" not in bad
    assert bad["urlguard.violation"].rule == "raw-char"
    assert good["urlguard.target"].segments == ("ok",)
    assert app.violations == {"raw-char": 1}
    assert app.mode == "report"
    (record,) = caplog.records
    assert "report-only" in record.getMessage()


def test_enforce_mode_counts() -> None:
    app, _ = guarded()
    for wire in (b"/%C4", b"/a%2F", b"/b%2f", b"/ok"):
        call(app, server_environ("gunicorn", wire))
    assert app.violations == {"invalid-utf8": 1, "encoded-slash": 2}


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_on_violation(mode: str) -> None:
    calls: list[tuple[InvalidTarget, WSGIEnvironment]] = []
    app, _ = guarded(mode=mode, on_violation=lambda exc, environ: calls.append((exc, environ)))
    environ = server_environ("gunicorn", b"/%zz")
    call(app, environ)
    call(app, server_environ("gunicorn", b"/ok"))
    ((exc, seen),) = calls
    assert exc.rule == "malformed-escape"
    assert seen is environ


def test_failing_on_violation_still_rejects(caplog: pytest.LogCaptureFixture) -> None:
    def on_violation(exc: InvalidTarget, environ: WSGIEnvironment) -> None:
        raise RuntimeError("metrics down")

    app, inner = guarded(on_violation=on_violation)
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert call(app, server_environ("gunicorn", b"/%C4"))[0] == 400
    assert inner.environs == []
    assert any(r.exc_info for r in caplog.records)


def test_on_reject_builds_the_response() -> None:
    def on_reject(exc: InvalidTarget, environ: WSGIEnvironment) -> Response:
        assert environ["urlguard.violation"] is exc
        return Response(f"custom {exc.rule}", status=418)

    app, inner = guarded(on_reject=on_reject)
    status, _, body = call(app, server_environ("gunicorn", b"/%C4"))
    assert (status, body) == (418, b"custom invalid-utf8")
    assert inner.environs == []


def _raises(exc: InvalidTarget, environ: WSGIEnvironment) -> Any:
    raise RuntimeError("hook bug")


@pytest.mark.parametrize(
    ("on_reject", "logged", "exception"),
    [
        P(lambda exc, environ: None, None, None, id="None keeps the default"),
        P(
            _raises,
            "the on_reject callback failed; sent the default 400",
            RuntimeError,
            id="a failing hook falls back to the default",
        ),
        P(
            lambda exc, environ: "nope",
            "on_reject returned str, not a WSGI application; sent the default 400",
            None,
            id="a non-app result falls back to the default",
        ),
    ],
)
def test_on_reject_default(
    on_reject: Any,
    logged: str | None,
    exception: type[Exception] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, inner = guarded(on_reject=on_reject)
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, _, body = call(app, server_environ("gunicorn", b"/%C4"))
    assert status == 400
    assert b"invalid-utf8" in body
    assert inner.environs == []
    assert_error_logged(caplog.records, logged, exception)


# --- per-route policies --------------------------------------------------------------------

ROUTES: dict[str, Any] = {
    "/files/": {"encoded_slash": "keep"},
    "/files/private/": Policy(),
    "/api": {"allowed_ranges": [[0x20, 0x7E]]},
}

ROUTED = [
    P("", b"/files/a%2Fb", ("files", "a/b"), id="route keeps %2F"),
    P("", b"/files/private/a%2Fb", "encoded-slash", id="longest prefix wins"),
    P("", b"/other/a%2Fb", "encoded-slash", id="base policy elsewhere"),
    P("", b"/%66iles/a%2Fb", ("files", "a/b"), id="matched decoded, as routed"),
    P("", b"/api/caf%C3%A9", "forbidden-char", id="stricter route"),
    P("", b"/%61pi/caf%C3%A9", "forbidden-char", id="no escape from a strict route"),
    P("", b"/apix/caf%C3%A9", ("apix", "café"), id="prefix ends at a segment"),
    P("/mnt", b"/mnt/files/a%2Fb", ("files", "a/b"), id="relative to SCRIPT_NAME"),
    P("/mnt", b"/%6Dnt/files/a%2Fb", ("files", "a/b"), id="encoded mount, taken off too"),
]


@pytest.mark.parametrize(("script", "wire", "expected"), ROUTED)
def test_routes(script: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded(routes=ROUTES)
    status, _, body = call(app, server_environ("gunicorn", wire, script_name=script))
    _assert_verdict(status, body, inner.environs, expected)


# --- configuration -------------------------------------------------------------------------


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "urlguard.toml"
    path.write_text('preset = "browser"\n[routes."/files/"]\nencoded_slash = "keep"\n')
    app, inner = guarded(config=path)
    assert app.mode == "enforce"
    assert call(app, server_environ("gunicorn", b"/files/a%2F[b]"))[0] == 200
    assert inner.environs[0]["urlguard.target"].segments == ("files", "a/[b]")
    assert call(app, server_environ("gunicorn", b"/x/a%2F"))[0] == 400


def test_config_object_with_mode_override() -> None:
    app, inner = guarded(config=Config(mode="enforce"), mode="report")
    assert app.mode == "report"
    assert call(app, server_environ("gunicorn", b"/%C4"))[0] == 200
    assert inner.environs[0]["urlguard.violation"].rule == "invalid-utf8"


BAD_OPTIONS = [
    P({"policy": "strict"}, TypeError, "policy", id="policy not a Policy"),
    P({"routes": {"/a": {"bogus": 1}}}, ValueError, "bogus", id="unknown policy key"),
    P({"routes": {"a": {}}}, ValueError, "routes['a']", id="prefix without slash"),
    P({"mode": "report-only"}, ValueError, "mode", id="unknown mode"),
    P({"on_reject": object()}, TypeError, "on_reject", id="on_reject not callable"),
    P({"on_violation": 1}, TypeError, "on_violation", id="on_violation not callable"),
    P({"missing_raw_target": "allow"}, ValueError, "missing_raw_target", id="missing raw"),
    P({"log_level": -1}, TypeError, "log_level", id="negative log level"),
    P({"config": Config(), "policy": Policy()}, ValueError, "config", id="config and policy"),
]


@pytest.mark.parametrize(("options", "error", "words"), BAD_OPTIONS)
def test_bad_configuration_fails_at_construction(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=re.escape(words)):
        StrictURLMiddleware(Recorder(), **options)


def test_app_must_be_callable() -> None:
    with pytest.raises(TypeError, match="app"):
        StrictURLMiddleware("app")  # type: ignore[arg-type]


# --- log lines -------------------------------------------------------------------------------

HOSTILE = [
    # server, wire target, the target as the log line must show it
    P("waitress", b"/a\r\nX-Injected: 1", r"/a\x0d\x0aX-Injected:\x201", id="CRLF"),
    P("waitress", b"/\x00\x1b[2J\x07\x7f\t", r"/\x00\x1b[2J\x07\x7f\x09", id="NUL ESC BEL DEL TAB"),
    P(
        "werkzeug",
        b"/caf\xe2\x80\xae\xe2\x80\xa8\xc2\x85",
        r"/caf\xe2\x80\xae\xe2\x80\xa8\xc2\x85",
        id="raw bidi, LS, NEL through werkzeug",
    ),
    P("waitress", b"/\\x41\\", r"/\\x41\\", id="backslashes stay unambiguous"),
    P(
        "waitress",
        b"/" + b"\r\n" * 10000,
        "/" + r"\x0d\x0a" * 127 + r"\x0d...[len=20001]",
        id="long",
    ),
]


@pytest.mark.parametrize(("server", "wire", "shown"), HOSTILE)
def test_log_line_is_escaped_and_bounded(
    server: str, wire: bytes, shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = guarded()
    environ = server_environ(server, wire)
    environ["REQUEST_METHOD"] = "GET\r\nEVIL"
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert call(app, environ)[0] == 400
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line), line
    assert line.endswith(f" target={shown}")
    assert r"method=GET\x0d\x0aEVIL" in line
    assert "client=127.0.0.1:51000" in line


def test_log_line_fields(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded()
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, server_environ("gunicorn", b"/a?x=1&y=%FF"))
    (record,) = caplog.records
    assert record.getMessage() == (
        "rejected request target: rule=invalid-utf8 component=query index=1 "
        "offset=9 client=127.0.0.1:51000 method=GET target=/a?x=1&y=%FF"
    )


def test_stacked_report_mode_leaves_no_stale_target() -> None:
    inner = Recorder()
    strict = StrictURLMiddleware(inner, mode="report")
    app = StrictURLMiddleware(strict, policy=Policy(encoded_slash="keep"))
    call(app, server_environ("gunicorn", b"/a%2Fb"))
    (environ,) = inner.environs
    assert "urlguard.target" not in environ
    assert environ["urlguard.violation"].rule == "encoded-slash"
