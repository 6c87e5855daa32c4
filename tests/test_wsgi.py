"""urlguard.wsgi.StrictURLMiddleware at the protocol boundary: hand-built environs
shaped like each server's (as measured, see docs/servers.md), on each parser.
What the adapter does is tested here: where it reads the raw target
(``RAW_URI``, then ``REQUEST_URI``, either of another type than ``str``; the
werkzeug development server's re-encoding undone) and the mount point
(``SCRIPT_NAME``), what else it reads of a request (method, ``HTTP_ACCEPT``,
the client, ``SERVER_SOFTWARE``, and ``PATH_INFO`` and ``QUERY_STRING`` when
there is no raw target), keys missing, and how it answers through ``start_response``, never reading
``wsgi.input``. The decision behind it (modes, hooks, log lines, mounts,
routes, ``OPTIONS *``, options) is tested once, on the guard, in
test_guard.py; real servers in test_servers.py."""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Iterable
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes
from wsgiref.types import StartResponse, WSGIEnvironment

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from adapter_checks import Expected, assert_answer, assert_routing_copy, assert_verdict
from conftest import Parser
from urlguard import RULES, InvalidTarget, Policy
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
    """The environ ``server`` builds for the request target ``wire``, sent
    with the Host a client sends: an absolute-form target's authority, else
    ``127.0.0.1:8000``."""
    absolute = re.match(rb"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", wire)
    host = (
        absolute[1].decode("latin-1") if absolute is not None and absolute[1] else "127.0.0.1:8000"
    )
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
        "HTTP_HOST": host,
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


class Answered(NamedTuple):
    """What the application answered: the status code, the headers, the body."""

    status: int
    headers: dict[str, str]
    body: bytes


def call(app: Any, environ: WSGIEnvironment) -> Answered:
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
    return Answered(int(status[:3]), dict(headers), body)


class Guarded(NamedTuple):
    """The middleware, and the application it guards."""

    app: StrictURLMiddleware
    inner: Recorder


def guarded(parser: Parser, **options: Any) -> Guarded:
    inner = Recorder()
    return Guarded(StrictURLMiddleware(inner, parser=parser, **options), inner)


# --- truth table: servers that give the raw target --------------------------------------------

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
def test_server_shapes(parser: Parser, server: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded(parser)
    status, headers, body = call(app, server_environ(server, wire))
    assert_answer(status, body, headers.get("Content-Length", ""), inner.environs, expected, MARK)


def test_werkzeug_double_encoding_is_undone(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = guarded(parser)
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
def test_werkzeug_is_recognised(
    parser: Parser, software: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = guarded(parser)
    environ = server_environ("werkzeug", b"/\xc3\xa9")
    if software is None:
        del environ["SERVER_SOFTWARE"]
    else:
        del environ["werkzeug.socket"]
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, environ)
    assert caplog.records[0].getMessage().endswith(r"target=/\xc3\xa9")


def test_other_servers_are_not_undone(parser: Parser, caplog: pytest.LogCaptureFixture) -> None:
    # The same latin-1 string from another server means other bytes.
    app, _ = guarded(parser)
    environ = server_environ("gunicorn", b"/\xc3\x83\xc2\xa9")
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, environ)
    assert caplog.records[0].getMessage().endswith(r"target=/\xc3\x83\xc2\xa9")


RAW_SOURCES = [
    P({"RAW_URI": "/ok", "REQUEST_URI": "/%C4"}, ("ok",), id="RAW_URI first"),
    P({"REQUEST_URI": "/%C4"}, "invalid-utf8", id="then REQUEST_URI"),
    P({"RAW_URI": "/%C4", "REQUEST_URI": "/ok"}, "invalid-utf8", id="RAW_URI wins when bad"),
    P({"RAW_URI": ""}, "bad-form", id="empty RAW_URI is a bad-form target"),
    # Not latin-1, so not bytes as PEP 3333 carries them: judged as UTF-8,
    # whose bytes >= 0x80 are never allowed raw.
    P({"RAW_URI": "/caf\u00e9\u20ac"}, "raw-char", id="characters beyond latin-1"),
    P({"REQUEST_URI": "/a\udcff"}, "raw-char", id="lone surrogate"),
]


@pytest.mark.parametrize(("keys", "expected"), RAW_SOURCES)
def test_raw_target_sources(parser: Parser, keys: dict[str, Any], expected: Expected) -> None:
    app, inner = guarded(parser)
    environ = server_environ("wsgiref", b"/ok")
    environ.update(keys)
    status, _, body = call(app, environ)
    assert_verdict(status, body, inner.environs, expected)
    if isinstance(expected, str):
        assert inner.environs == []
        assert [rule for rule in RULES if rule.encode() in body] == [expected]


# --- RAW_URI / REQUEST_URI of another type: a server that breaks PEP 3333 -------------------

# PEP 3333: the CGI variables are native strings, one character per byte. A
# server that puts anything else in RAW_URI or REQUEST_URI has not shown
# urlguard what was sent: treated as no raw target (501, or PATH_INFO under
# validate-decoded), never judged, never an exception. RAW_URI is read first:
# when it is of the wrong type, REQUEST_URI is not trusted instead.
WRONG_TYPE = [
    # wire target (PATH_INFO), the raw-target keys, SCRIPT_NAME, missing_raw_target
    # -> 501, the segments stored, or None: passed on without a target (OPTIONS *)
    P(b"/ok", {"RAW_URI": b"/ok"}, "", "refuse", 501, id="RAW_URI bytes"),
    P(b"/app/ok", {"RAW_URI": b"/app/ok"}, "/app", "refuse", 501, id="bytes below SCRIPT_NAME"),
    P(b"/ok", {"REQUEST_URI": b"/ok"}, "", "refuse", 501, id="REQUEST_URI bytes"),
    P(b"/caf\xc3\xa9", {"RAW_URI": b"/caf\xc3\xa9"}, "", "refuse", 501, id="non-ASCII bytes"),
    P(b"/ok", {"RAW_URI": bytearray(b"/ok")}, "", "refuse", 501, id="RAW_URI bytearray"),
    P(b"/ok", {"RAW_URI": 47}, "", "refuse", 501, id="RAW_URI int"),
    P(b"/app/ok", {"REQUEST_URI": 47}, "/app", "refuse", 501, id="REQUEST_URI int, SCRIPT_NAME"),
    P(
        b"/ok", {"RAW_URI": b"/ok", "REQUEST_URI": "/ok"}, "", "refuse", 501,
        id="RAW_URI bytes, REQUEST_URI str: not trusted either",
    ),
    P(b"/a%2Fb", {"RAW_URI": b"/a%2Fb"}, "", "validate-decoded", ("a", "b"), id="validate-decoded"),
    P(
        b"/app/a%2Fb", {"REQUEST_URI": 47}, "/app", "validate-decoded", ("a", "b"),
        id="validate-decoded below SCRIPT_NAME",
    ),
    P(b"*", {"RAW_URI": b"*"}, "", "refuse", None, id="OPTIONS * passes (as before)"),
    P(b"/ok", {"RAW_URI": None}, "", "refuse", 501, id="None: no raw target (as before)"),
    P(b"/ok", {"RAW_URI": None, "REQUEST_URI": "/ok"}, "", "refuse", ("ok",),
      id="RAW_URI None, REQUEST_URI str: read (as before)"),
]  # fmt: skip


@pytest.mark.parametrize(("wire", "keys", "script", "missing", "expected"), WRONG_TYPE)
def test_raw_target_of_another_type_is_no_raw_target(
    parser: Parser,
    wire: bytes,
    keys: dict[str, Any],
    script: str,
    missing: str,
    expected: int | tuple[str, ...] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, inner = guarded(parser, missing_raw_target=missing)
    method = "OPTIONS" if wire == b"*" else "GET"
    environ = server_environ("wsgiref", wire, script_name=script, method=method)
    environ.update(keys)
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        status, headers, body = call(app, environ)
    if expected == 501:
        assert status == 501
        assert inner.environs == []
        assert headers["Cache-Control"] == "no-store"
        assert b"RAW_URI" in body
        (record,) = caplog.records
        assert r"the server (WSGIServer/0.2\x20CPython/3.11.9) provides no raw request target" in (
            record.getMessage()
        )
        return
    assert status == 200
    (seen,) = inner.environs
    assert caplog.records == []
    if expected is None:
        assert "urlguard.target" not in seen
        assert "urlguard.violation" not in seen
    else:
        assert seen["urlguard.target"].segments == expected


def test_raw_target_of_another_type_in_report_mode(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    app, inner = guarded(parser, mode="report")
    environ = server_environ("gunicorn", b"/app/a%2Fb", script_name="/app")
    environ["RAW_URI"] = environ["RAW_URI"].encode("latin-1")
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        assert call(app, environ).status == 200
    (seen,) = inner.environs
    assert "urlguard.target" not in seen
    assert "urlguard.violation" not in seen
    (record,) = caplog.records
    assert "the server (gunicorn/27.0.1) provides no raw request target" in record.getMessage()
    assert "passed on (report-only)" in record.getMessage()


def test_server_keys_are_never_rewritten(parser: Parser) -> None:
    app, inner = guarded(parser)
    environ = server_environ("gunicorn", b"/app/echo/caf%C3%A9?q=1", script_name="/app")
    before = {k: v for k, v in environ.items() if k != "wsgi.input"}
    before = copy.deepcopy(before)
    call(app, environ)
    seen = inner.environs[0]
    assert {k: v for k, v in seen.items() if k in before} == before
    assert set(seen) - set(before) == {"urlguard.target", "wsgi.input"}


ROUTING_PATHS = [
    # server, SCRIPT_NAME, wire -> the PATH_INFO the application gets (PEP 3333 latin-1 text)
    P("gunicorn", "", b"/u/kg%2Fs?q=%2F", "/u/kg%2Fs", id="a kept slash"),
    P("waitress", "", b"/u/caf%C3%A9%2F50%25", "/u/caf\xc3\xa9%2F50%25", id="decoded, % escaped"),
    P("gunicorn", "/app", b"/app/u/kg%2Fs", "/u/kg%2Fs", id="below SCRIPT_NAME"),
]


@pytest.mark.parametrize(("server", "script", "wire", "path_info"), ROUTING_PATHS)
def test_a_kept_slash_reaches_the_app_on_the_routing_path(
    parser: Parser, server: str, script: str, wire: bytes, path_info: str
) -> None:
    app, inner = guarded(parser, policy=Policy(encoded_slash="keep"))
    environ = server_environ(server, wire, script_name=script)
    before = {k: v for k, v in environ.items() if k != "wsgi.input"}
    assert call(app, environ).status == 200
    (seen,) = inner.environs
    assert_routing_copy(seen, environ, before, "PATH_INFO", path_info, unseen={"wsgi.input"})


def test_without_a_kept_slash_the_environ_is_the_servers(parser: Parser) -> None:
    app, inner = guarded(parser, policy=Policy(encoded_slash="keep"))
    environ = server_environ("gunicorn", b"/u/50%25?next=%2Fx")
    call(app, environ)
    assert inner.environs[0] is environ


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
    parser: Parser, server: str, script: str, wire: bytes, raw: bytes, segments: tuple[str, ...]
) -> None:
    app, inner = guarded(parser)
    assert call(app, server_environ(server, wire, script_name=script)).status == 200
    target = inner.environs[0]["urlguard.target"]
    assert (target.raw, target.segments) == (raw, segments)


# Keys a server may leave out: no SCRIPT_NAME is no mount point; without a
# raw target, no PATH_INFO is the mount point itself, no QUERY_STRING no query.
OPTIONAL_KEYS = [
    # server, keys taken out, missing_raw_target -> Target.raw
    P("gunicorn", ("SCRIPT_NAME",), "refuse", b"/app/a?q=1", id="no SCRIPT_NAME"),
    P("wsgiref", ("SCRIPT_NAME",), "validate-decoded", b"/a?q=1", id="decoded, no SCRIPT_NAME"),
    P("wsgiref", ("PATH_INFO",), "validate-decoded", b"/?q=1", id="decoded, no PATH_INFO"),
    P("wsgiref", ("QUERY_STRING",), "validate-decoded", b"/a", id="decoded, no QUERY_STRING"),
]


@pytest.mark.parametrize(("server", "missing", "missing_raw_target", "raw"), OPTIONAL_KEYS)
def test_optional_keys_may_be_missing(
    parser: Parser, server: str, missing: tuple[str, ...], missing_raw_target: str, raw: bytes
) -> None:
    app, inner = guarded(parser, missing_raw_target=missing_raw_target)
    environ = server_environ(server, b"/app/a?q=1", script_name="/app")
    for key in missing:
        del environ[key]
    assert call(app, environ).status == 200
    (seen,) = inner.environs
    assert seen["urlguard.target"].raw == raw


# --- no raw target: wsgiref, granian and hypercorn in WSGI mode -------------------------------


@pytest.mark.parametrize("server", WITHOUT_RAW)
def test_no_raw_target_is_refused_with_501(
    parser: Parser, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, inner = guarded(parser)
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


# What the middleware reads without a raw target: PATH_INFO as each server
# leaves it (decoded, as latin-1 characters of its bytes), and QUERY_STRING
# as received. What the guard makes of them is tested in test_guard.py
# (test_validate_decoded).
DECODED = [
    P("wsgiref", b"/caf%C3%A9/x?q=a+b", ("café", "x"), id="wsgiref utf-8"),
    P("granian", b"/caf%C3%A9", ("café",), id="granian utf-8"),
    P("hypercorn", b"/caf%C3%A9", ("café",), id="hypercorn utf-8"),
    P("wsgiref", b"/caf%C4", "invalid-utf8", id="wsgiref keeps invalid bytes"),
    P("granian", b"/caf\xc4", "invalid-utf8", id="granian raw invalid byte"),
    P("hypercorn", b"/caf%C4", "invalid-utf8", id="hypercorn replaced it with U+FFFD"),
    P("wsgiref", b"/a%2Fb", ("a", "b"), id="encoded slash cannot be seen"),
    P("wsgiref", b"/a?q=%C4", "invalid-utf8", id="query exact: invalid utf-8"),
    P("wsgiref", b"/a?ECHOME=1&x=%26", ("a",), id="query exact: fine"),
]


@pytest.mark.parametrize(("server", "wire", "expected"), DECODED)
def test_no_raw_target_validate_decoded(
    parser: Parser, server: str, wire: bytes, expected: Expected
) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    status, _, body = call(app, server_environ(server, wire))
    assert_verdict(status, body, inner.environs, expected)


def test_validate_decoded_keeps_the_query_exact(parser: Parser) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    call(app, server_environ("wsgiref", b"/a?x=%26&y=a+b"))
    assert inner.environs[0]["urlguard.target"].query == (("x", "&"), ("y", "a b"))


@pytest.mark.parametrize("script", [P("", id="at the root"), P("/app", id="below /app")])
def test_validate_decoded_empty_path_info_is_the_mount_point(parser: Parser, script: str) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    environ = server_environ("wsgiref", script.encode() + b"?q", script_name=script)
    assert environ["PATH_INFO"] == ""
    assert call(app, environ).status == 200
    target = inner.environs[0]["urlguard.target"]
    assert (target.raw, target.segments) == (b"/?q", ("",))


# Without a raw target, the decoded path is SCRIPT_NAME + PATH_INFO (PEP 3333),
# the mount point then taken off as from a raw target.
SCRIPT_DECODED = [
    # wire target, SCRIPT_NAME -> Target.raw
    P(b"/app/x?q", "/app", b"/x?q", id="below the mount point"),
    P(b"/app/app/x", "/app", b"/app/x", id="a path below it that repeats it"),
    P(b"/my app/x", "/my app", b"/x", id="a mount point with a space"),
]


@pytest.mark.parametrize(("wire", "script", "raw"), SCRIPT_DECODED)
def test_validate_decoded_below_script_name(
    parser: Parser, wire: bytes, script: str, raw: bytes
) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    assert call(app, server_environ("wsgiref", wire, script_name=script)).status == 200
    (environ,) = inner.environs
    assert environ["urlguard.target"].raw == raw


# --- the answer as sent ----------------------------------------------------------------------

ACCEPT = [
    # HTTP_ACCEPT -> the content type of the 400
    P(None, "text/plain; charset=utf-8", id="no Accept"),
    P("application/json", "application/problem+json", id="json"),
    P("text/html,*/*;q=0.8", "text/plain; charset=utf-8", id="browser"),
]


@pytest.mark.parametrize(("accept", "content_type"), ACCEPT)
def test_answer_as_sent(parser: Parser, accept: str | None, content_type: str) -> None:
    app, inner = guarded(parser)
    environ = server_environ("gunicorn", b"/ECHOME/a%2Fb", accept=accept)
    status, headers, body = call(app, environ)
    assert inner.environs == []
    assert status == 400
    assert headers == {
        "Content-Type": content_type,
        "Content-Length": str(len(body)),
        "X-Content-Type-Options": "nosniff",
    }
    assert MARK not in body
    if content_type == "application/problem+json":
        assert json.loads(body)["rule"] == "encoded-slash"
    else:
        assert body.startswith(b"400 Bad Request: encoded-slash: ")


def test_head_gets_headers_only(parser: Parser) -> None:
    app, _ = guarded(parser)
    _, get_headers, get_body = call(app, server_environ("gunicorn", b"/%C4"))
    status, headers, body = call(app, server_environ("gunicorn", b"/%C4", method="HEAD"))
    assert (status, body) == (400, b"")
    assert headers["Content-Length"] == get_headers["Content-Length"] == str(len(get_body))


def test_request_body_is_never_read(parser: Parser) -> None:
    app, _ = guarded(parser)
    environ = server_environ("gunicorn", b"/%C4", method="POST")
    environ["CONTENT_LENGTH"] = "5"
    assert call(app, environ).status == 400  # NoInput fails the test if read


# --- werkzeug's test client: a real WSGI round trip ------------------------------------------


def test_werkzeug_test_client(parser: Parser) -> None:
    app, inner = guarded(parser)
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


# --- on_reject ----------------------------------------------------------------------------


def test_on_reject_builds_the_response(parser: Parser) -> None:
    def on_reject(exc: InvalidTarget, environ: WSGIEnvironment) -> Response:
        assert environ["urlguard.violation"] is exc
        return Response(f"custom {exc.rule}", status=418)

    app, inner = guarded(parser, on_reject=on_reject)
    status, _, body = call(app, server_environ("gunicorn", b"/%C4"))
    assert (status, body) == (418, b"custom invalid-utf8")
    assert inner.environs == []


# --- log lines -------------------------------------------------------------------------------

HOSTILE = [
    # server, wire target, the target as the log line must show it
    P("waitress", b"/a\r\nX-Injected: 1", r"/a\x0d\x0aX-Injected:\x201", id="CRLF"),
    P(
        "werkzeug",
        b"/caf\xe2\x80\xae\xe2\x80\xa8\xc2\x85",
        r"/caf\xe2\x80\xae\xe2\x80\xa8\xc2\x85",
        id="raw bidi, LS, NEL through werkzeug",
    ),
    P(
        "waitress",
        b"/" + b"\r\n" * 10000,
        "/" + r"\x0d\x0a" * 127 + r"\x0d...[len=20001]",
        id="long",
    ),
]


@pytest.mark.parametrize(("server", "wire", "shown"), HOSTILE)
def test_log_line_is_escaped_and_bounded(
    parser: Parser, server: str, wire: bytes, shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    """What the environ hands over reaches the log line escaped and bounded
    (every class of byte: test_guard.py)."""
    app, _ = guarded(parser)
    environ = server_environ(server, wire)
    environ["REQUEST_METHOD"] = "GET\r\nEVIL"
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert call(app, environ).status == 400
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line), line
    assert line.endswith(f" client=127.0.0.1:51000 method=GET\\x0d\\x0aEVIL target={shown}")


CLIENTS = [
    # REMOTE_ADDR, REMOTE_PORT (None: not in the environ) -> as the log line shows it
    P("127.0.0.1", "51000", "127.0.0.1:51000", id="address and port"),
    P("::1", None, "::1", id="no port"),
    P("::1", "", "::1", id="an empty port"),
    P(None, "51000", "-", id="no address"),
    P("", None, "-", id="an empty address"),
]


@pytest.mark.parametrize(("address", "port", "shown"), CLIENTS)
def test_log_line_fields(
    parser: Parser,
    address: str | None,
    port: str | None,
    shown: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, _ = guarded(parser)
    environ = server_environ("gunicorn", b"/a?x=1&y=%FF", method="PATCH")
    for key, value in (("REMOTE_ADDR", address), ("REMOTE_PORT", port)):
        if value is None:
            del environ[key]
        else:
            environ[key] = value
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, environ)
    (record,) = caplog.records
    assert record.getMessage() == (
        "rejected request target: rule=invalid-utf8 component=query index=1 "
        f"offset=9 client={shown} method=PATCH target=/a?x=1&y=%FF"
    )
