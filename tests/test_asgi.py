"""urlguard.asgi.StrictURLMiddleware at the protocol boundary: hand-built scopes
shaped like each server's (as measured, see docs/servers.md), on each parser.
What the adapter does is tested here: where it reads the raw target, the
query and the mount point (``raw_path``, ``query_string``, ``root_path``,
each of them missing, ``raw_path`` of another type), that an HTTP/2 or
HTTP/3 target is origin-form, what else it reads of a request (method,
headers, client, the decoded ``path``), which scopes it judges and which it
passes through, and how it sends an answer (a response, a websocket denial
or close), never reading the body. The decision behind it (modes, hooks, log
lines, mounts, routes, ``OPTIONS *``, options) is tested once, on the guard,
in test_guard.py; real servers in test_servers.py."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes

import pytest
from starlette.responses import PlainTextResponse

from adapter_checks import Expected, assert_answer, assert_routing_copy, assert_verdict
from conftest import Parser
from urlguard import InvalidTarget, Policy
from urlguard.asgi import StrictURLMiddleware

P = pytest.param
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]

# A marker put in hostile targets: it must never come back in a response body.
MARK = b"ECHOME"

# --- server shapes (docs/servers.md: where the raw target is) --------------------------------

EXACT = ("uvicorn-h11", "hypercorn", "daphne")  # raw_path byte-exact, fragment and all
REDUCING = ("uvicorn-httptools", "granian")  # drop '#frag', absolute-form -> its path
SERVERS = EXACT + REDUCING
_ABSOLUTE = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://[^/?]*")


def _host_for(wire: bytes) -> bytes:
    match = _ABSOLUTE.match(wire)
    authority = match[0].partition(b"://")[2] if match is not None else b""
    return authority or b"testserver"


def server_scope(
    server: str,
    wire: bytes,
    *,
    root_path: str = "",
    kind: str = "http",
    method: str = "GET",
    headers: tuple[tuple[bytes, bytes], ...] = (),
    extensions: dict[str, Any] | None = None,
) -> Scope:
    """The scope ``server`` builds for the request target ``wire``, sent with
    the Host a client sends: an absolute-form target's authority, else
    ``testserver``."""
    host = _host_for(wire)
    target = wire
    if server in REDUCING:
        target = target.split(b"#", 1)[0]
        match = _ABSOLUTE.match(target)
        if match is not None:
            target = target[match.end() :] or b"/"
    raw_path, _, query = target.partition(b"?")
    if server == "granian" and raw_path[:1] != b"/" and raw_path != b"*":
        raw_path = b""  # granian turns 'noslash' into b""
    path = unquote_to_bytes(raw_path).decode("utf-8", "replace")
    if server.startswith("uvicorn"):
        # uvicorn glues root_path in front of both.
        raw_path = root_path.encode("ascii") + raw_path
        path = root_path + path
    scope: dict[str, Any] = {
        "type": kind,
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "scheme": "ws" if kind == "websocket" else "http",
        "path": path,
        "raw_path": raw_path,
        "query_string": query,
        "root_path": root_path,
        "headers": [(b"host", host), *headers],
        "client": ("127.0.0.1", 51000),
        "server": ("127.0.0.1", 8000),
    }
    if kind == "http":
        scope["method"] = method
    else:
        scope["subprotocols"] = []
    if extensions is not None:
        scope["extensions"] = extensions
    return scope


# --- driving the middleware ----------------------------------------------------------------


class Recorder:
    """The guarded app: records the scopes it sees, answers 200 / accepts."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        self.scopes.append(scope)
        if scope["type"] == "http":
            headers = [(b"content-type", b"text/plain"), (b"content-length", b"2")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"ok"})
        elif scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 1000})


async def never_receive() -> Message:
    raise AssertionError("the middleware read the request body")


def call(app: Any, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, never_receive, send))
    return sent


class Response(NamedTuple):
    """What was sent: the status, the headers, the whole body."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes


def response(sent: list[Message]) -> Response:
    start, *rest = sent
    assert start["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in rest)
    assert not sent[-1].get("more_body", False), "the response must be complete"
    body = b"".join(m.get("body", b"") for m in rest)
    return Response(start["status"], dict(start["headers"]), body)


class Guarded(NamedTuple):
    """The middleware, and the application it guards."""

    app: StrictURLMiddleware
    inner: Recorder


def guarded(parser: Parser, **options: Any) -> Guarded:
    inner = Recorder()
    return Guarded(StrictURLMiddleware(inner, parser=parser, **options), inner)


# --- truth table: every server shape, with and without root_path ----------------------------

CASES: list[tuple[str, bytes, Expected, Expected]] = [
    # id, wire target, result on EXACT servers, result on REDUCING servers
    ("plain", b"/echo/a?q=a+b", ("echo", "a"), ("echo", "a")),
    ("utf-8", b"/echo/caf%C3%A9", ("echo", "café"), ("echo", "café")),
    ("root", b"/", ("",), ("",)),
    ("invalid utf-8", b"/ECHOME/caf%C4rz", "invalid-utf8", "invalid-utf8"),
    ("invalid utf-8 query", b"/a?ECHOME=%C4", "invalid-utf8", "invalid-utf8"),
    ("overlong", b"/ECHOME/%C0%AF", "invalid-utf8", "invalid-utf8"),
    ("encoded slash", b"/ECHOME/a%2Fb", "encoded-slash", "encoded-slash"),
    ("encoded backslash", b"/ECHOME/a%5Cb", "encoded-backslash", "encoded-backslash"),
    ("dot segment", b"/ECHOME/%2E%2E/x", "dot-segment", "dot-segment"),
    ("empty segment", b"/ECHOME//x", "empty-segment", "empty-segment"),
    ("leading double slash", b"//ECHOME", "empty-segment", "empty-segment"),
    ("malformed escape", b"/ECHOME/%zz", "malformed-escape", "malformed-escape"),
    ("encoded NUL", b"/ECHOME/%00", "forbidden-char", "forbidden-char"),
    ("bidi override", b"/ECHOME/%E2%80%AE", "forbidden-char", "forbidden-char"),
    ("double encoding", b"/ECHOME/%252F", "double-encoding", "double-encoding"),
    ("raw backslash", b"/ECHOME\\x", "raw-char", "raw-char"),
    ("fragment", b"/ECHOME#frag", "fragment", ("ECHOME",)),
    ("fragment after query", b"/a?ECHOME#frag", "fragment", ("a",)),
    ("absolute-form", b"http://example.com/echo/a?q=1", ("echo", "a"), ("echo", "a")),
    ("absolute-form bad path", b"http://example.com/ECHOME/%C4", "invalid-utf8", "invalid-utf8"),
    ("absolute-form no path", b"HTTPS://example.com?q=1", ("",), None),  # not measured
    ("noslash", b"ECHOME", "bad-form", "bad-form"),
    ("too long", b"/" + b"a" * 8192, "too-long", "too-long"),
]


def _server_params() -> list[Any]:
    """One case per distinct scope shape: the middleware sees only the scope,
    so servers that build the very same one for a target are tested once,
    under an id naming them all. daphne and hypercorn share every shape;
    uvicorn-httptools and granian share every shape without root_path but
    'noslash' (granian makes it b"", httptools refuses it); every server
    shares a plain origin-form target's shape without root_path; with
    root_path, the two uvicorns (root glued into raw_path) part from the rest."""
    shapes: dict[tuple[str, str, str], tuple[bytes, Expected, list[str]]] = {}
    for name, wire, exact, reducing in CASES:
        for server in SERVERS:
            expected = exact if server in EXACT else reducing
            if expected is None or (name == "noslash" and server == "uvicorn-httptools"):
                continue  # uvicorn with httptools refuses 'noslash' itself
            for root in ("", "/mnt"):
                verdict = expected
                if root and name == "noslash" and server == "uvicorn-h11":
                    # uvicorn glues '/mnt' to 'ECHOME': the result is a fine path,
                    # the same bytes another server gives for '/mntECHOME'.
                    verdict = ("mntECHOME",)
                shape = repr(server_scope(server, wire, root_path=root))
                _, first, servers = shapes.setdefault((name, root, shape), (wire, verdict, []))
                assert first == verdict, f"one scope, two verdicts: {server}, {name}"
                servers.append(server)
    return [
        P(
            servers[0],
            root,
            wire,
            expected,
            id=f"{'='.join(servers)}{' root_path' * bool(root)}: {name}",
        )
        for (name, root, _), (wire, expected, servers) in shapes.items()
    ]


@pytest.mark.parametrize(("server", "root", "wire", "expected"), _server_params())
def test_server_shapes(
    parser: Parser, server: str, root: str, wire: bytes, expected: Expected
) -> None:
    app, inner = guarded(parser)
    scope = server_scope(server, wire, root_path=root)
    status, headers, body = response(call(app, scope))
    length = headers.get(b"content-length", b"").decode()
    assert_answer(status, body, length, inner.scopes, expected, MARK)


ROOT_CASES = [
    # server, root_path, wire target, stored Target.raw, segments
    P("hypercorn", "/mnt", b"/mnt/echo/a", b"/echo/a", ("echo", "a"), id="root in target"),
    P("daphne", "/mnt", b"/mnt/echo/a?x", b"/echo/a?x", ("echo", "a"), id="daphne, with a query"),
    P("granian", "/mnt", b"/mnt", b"/", ("",), id="the mount point itself is / below it"),
    P("hypercorn", "/mnt", b"/mnt/", b"/", ("",), id="the mount point and its slash"),
    P("hypercorn", "/mnt", b"/mnt?q=1", b"/?q=1", ("",), id="the mount point, a query"),
    P("hypercorn", "/mnt/", b"/mnt/a", b"/a", ("a",), id="root_path with a trailing slash"),
    P("hypercorn", "/mnt", b"/mntx/a", b"/mntx/a", ("mntx", "a"), id="root ends at a slash"),
    P("hypercorn", "/my app", b"/my%20app/x", b"/x", ("x",), id="root compared decoded"),
    P("hypercorn", "/mnt", b"/%6Dnt/x", b"/x", ("x",), id="an escaped root"),
    P("hypercorn", "/mnt", b"/%6dnt", b"/", ("",), id="an escaped root itself"),
    P("hypercorn", "/caf\u00e9", b"/caf%C3%A9/x", b"/x", ("x",), id="a non-ASCII root"),
    P("hypercorn", "/m\udcff", b"/m%ED%B3%BF/x", b"/x", ("x",), id="a lone surrogate in root"),
    P("hypercorn", "/a/b", b"/a/b/c", b"/c", ("c",), id="a root of two segments"),
    P("hypercorn", "/a/b", b"/a", b"/a", ("a",), id="above a root of two segments"),
    P("hypercorn", "/mnt", b"/other", b"/other", ("other",), id="not below: judged whole"),
    P("uvicorn-h11", "/mnt", b"/mnt/a", b"/mnt/a", ("mnt", "a"), id="uvicorn strips once"),
    P("uvicorn-h11", "/mnt", b"/a?x=1", b"/a?x=1", ("a",), id="uvicorn, root glued in front"),
    P("uvicorn-h11", "/mnt", b"/", b"/", ("",), id="uvicorn, the mount point"),
    P("uvicorn-h11", "/my app", b"/x", b"/x", ("x",), id="uvicorn glues a root as it is"),
    P(
        "uvicorn-h11",
        "/my app",
        b"/my%20app/x",
        b"/my%20app/x",
        ("my app", "x"),
        id="uvicorn: what follows the root is the client's",
    ),
    P(
        "uvicorn-h11",
        "/mnt",
        b"http://h/a",
        b"http://h/a",
        ("a",),
        id="uvicorn, root before absolute-form",
    ),
    P("uvicorn-httptools", "/mnt", b"/a", b"/a", ("a",), id="uvicorn httptools, root glued"),
]


@pytest.mark.parametrize(("server", "root", "wire", "raw", "segments"), ROOT_CASES)
def test_root_path(
    parser: Parser, server: str, root: str, wire: bytes, raw: bytes, segments: tuple[str, ...]
) -> None:
    app, inner = guarded(parser)
    status, _, _ = response(call(app, server_scope(server, wire, root_path=root)))
    assert status == 200
    target = inner.scopes[0]["urlguard.target"]
    assert (target.raw, target.segments) == (raw, segments)


def test_server_keys_are_never_rewritten(parser: Parser) -> None:
    app, inner = guarded(parser)
    scope = server_scope("uvicorn-h11", b"/echo/caf%C3%A9?q=1", root_path="/mnt")
    before = copy.deepcopy(scope)
    call(app, scope)
    assert {k: v for k, v in inner.scopes[0].items() if not k.startswith("urlguard.")} == before
    assert set(inner.scopes[0]) - set(before) == {"urlguard.target"}


ROUTING_PATHS = [
    # server, root_path, wire -> the path the application gets
    P("uvicorn-h11", "", b"/u/kg%2Fs?q=%2F", "/u/kg%2Fs", id="a kept slash"),
    P("uvicorn-h11", "", b"/u/caf%C3%A9%2F50%25", "/u/café%2F50%25", id="decoded, % escaped"),
    P("uvicorn-h11", "/mnt", b"/u/kg%2Fs", "/mnt/u/kg%2Fs", id="uvicorn: root_path in front"),
    P("hypercorn", "/mnt", b"/mnt/u/kg%2Fs", "/mnt/u/kg%2Fs", id="hypercorn: below root_path"),
    P("hypercorn", "/mnt", b"/u/kg%2Fs", "/u/kg%2Fs", id="not below root_path: whole"),
]


@pytest.mark.parametrize(("server", "root", "wire", "path"), ROUTING_PATHS)
def test_a_kept_slash_reaches_the_app_on_the_routing_path(
    parser: Parser, server: str, root: str, wire: bytes, path: str
) -> None:
    app, inner = guarded(parser, policy=Policy(encoded_slash="keep"))
    scope = server_scope(server, wire, root_path=root)
    before = copy.deepcopy(scope)
    assert response(call(app, scope)).status == 200
    (seen,) = inner.scopes
    assert_routing_copy(seen, scope, before, "path", path)


def test_without_a_kept_slash_the_scope_is_the_servers(parser: Parser) -> None:
    app, inner = guarded(parser, policy=Policy(encoded_slash="keep"))
    scope = server_scope("uvicorn-h11", b"/u/50%25?next=%2Fx")
    call(app, scope)
    assert inner.scopes[0] is scope
    assert scope["path"] == "/u/50%"


def test_empty_query_and_no_query_look_the_same(parser: Parser) -> None:
    # ASGI splits at '?': '/a?' and '/a' both arrive with query_string b"".
    app, inner = guarded(parser)
    call(app, server_scope("uvicorn-h11", b"/a?"))
    call(app, server_scope("uvicorn-h11", b"/a"))
    first, second = (s["urlguard.target"] for s in inner.scopes)
    assert first == second
    assert first.raw == b"/a"
    assert first.raw_query is None


def test_query_is_validated_exactly(parser: Parser) -> None:
    app, inner = guarded(parser)
    call(app, server_scope("hypercorn", b"/a?x=%26&y"))
    assert inner.scopes[0]["urlguard.target"].query == (("x", "&"), ("y", ""))


# query_string and root_path are optional in the ASGI spec, and a server may
# leave either out or set it to None.
OPTIONAL_KEYS = [
    # keys taken out, keys set to None -> Target.raw
    P(("root_path",), (), b"/mnt/a?q=1", id="no root_path"),
    P(("query_string",), (), b"/a", id="no query_string"),
    P(("root_path", "query_string"), (), b"/mnt/a", id="neither"),
    P((), ("root_path",), b"/mnt/a?q=1", id="root_path None"),
    P((), (), b"/a?q=1", id="both there: the root is taken off"),
]


@pytest.mark.parametrize(("missing", "none", "raw"), OPTIONAL_KEYS)
def test_optional_keys_may_be_missing(
    parser: Parser, missing: tuple[str, ...], none: tuple[str, ...], raw: bytes
) -> None:
    app, inner = guarded(parser)
    scope = server_scope("hypercorn", b"/mnt/a?q=1", root_path="/mnt")
    for key in missing:
        del scope[key]
    for key in none:
        scope[key] = None
    assert response(call(app, scope)).status == 200
    (seen,) = inner.scopes
    assert seen["urlguard.target"].raw == raw


# --- raw_path missing ------------------------------------------------------------------------


def _without_raw_path(how: str, path: str = "/a", query: bytes = b"") -> Scope:
    scope = server_scope("hypercorn", b"/a")
    scope["path"], scope["query_string"] = path, query
    if how == "missing":
        del scope["raw_path"]
    else:
        scope["raw_path"] = None
    return scope


@pytest.mark.parametrize("how", ["missing", "none"])
def test_missing_raw_path_is_refused_with_501(
    parser: Parser, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, inner = guarded(parser)
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        status, headers, body = response(call(app, _without_raw_path(how)))
    assert status == 501
    assert inner.scopes == []
    assert headers[b"cache-control"] == b"no-store"
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"raw_path" in body
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    assert "raw_path" in record.getMessage()
    assert "(asgi.version=3.0,spec_version=2.4)" in record.getMessage()


# What the middleware reads without raw_path: the decoded ``path`` (a str,
# encoded as UTF-8) and ``query_string`` as received. What the guard makes of
# them is tested in test_guard.py (test_validate_decoded).
DECODED = [
    P("/caf\u00e9/x", b"", ("café", "x"), id="utf-8 path"),
    P("/caf\ufffd", b"", "invalid-utf8", id="replacement character means invalid utf-8"),
    P("/a\udcff", b"", "invalid-utf8", id="a lone surrogate is never UTF-8"),
    P("/a b", b"", ("a b",), id="decoded space is allowed"),
    P("/a", b"q=a+b", ("a",), id="query_string as received"),
    P("/a", b"q=%C4", "invalid-utf8", id="query_string judged as received"),
]


@pytest.mark.parametrize(("path", "query", "expected"), DECODED)
def test_missing_raw_path_validate_decoded(
    parser: Parser, path: str, query: bytes, expected: Expected
) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    status, _, body = response(call(app, _without_raw_path("missing", path, query)))
    assert_verdict(status, body, inner.scopes, expected)


def test_validate_decoded_strips_root_path(parser: Parser) -> None:
    app, inner = guarded(parser, missing_raw_target="validate-decoded")
    scope = _without_raw_path("none", "/mnt/a")
    scope["root_path"] = "/mnt"
    call(app, scope)
    assert inner.scopes[0]["urlguard.target"].segments == ("a",)


# --- raw_path of another type: a server that breaks the contract -------------------------------

# raw_path is a byte string (ASGI HTTP spec). A server that hands over anything
# else has not shown urlguard what was sent: treated as no raw_path at all (501,
# or the decoded path under validate-decoded), never judged, never an exception.
WRONG_TYPE = [
    # raw_path, path, root_path, missing_raw_target -> 501, or the segments stored
    P("/a", "/a", "", "refuse", 501, id="str"),
    P("/mnt/a", "/mnt/a", "/mnt", "refuse", 501, id="str below a root_path"),
    P("/a%2Fb", "/a/b", "", "validate-decoded", ("a", "b"), id="str, validate-decoded"),
    P(
        "/mnt/a%2Fb", "/mnt/a/b", "/mnt", "validate-decoded", ("a", "b"),
        id="str below a root_path, validate-decoded",
    ),
    P(47, "/", "", "refuse", 501, id="int"),
    P(47, "/mnt/a", "/mnt", "refuse", 501, id="int below a root_path"),
    P(memoryview(b"/a"), "/a", "", "refuse", 501, id="memoryview"),
    P(["/a"], "/a", "", "refuse", 501, id="list"),
    P(None, "/mnt/a", "/mnt", "refuse", 501, id="None: no raw_path (as before)"),
    P(bytearray(b"/mnt/a"), "/mnt/a", "/mnt", "refuse", ("a",), id="bytearray: bytes (as before)"),
    P(b"/mnt/a", "/mnt/a", b"/mnt", "refuse", 501, id="a root_path of bytes"),
    P(b"/a", "/a", 7, "refuse", 501, id="a root_path of another type"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "path", "root", "missing", "expected"), WRONG_TYPE)
def test_raw_path_of_another_type_is_no_raw_path(
    parser: Parser,
    raw: object,
    path: str,
    root: object,
    missing: str,
    expected: int | tuple[str, ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, inner = guarded(parser, missing_raw_target=missing)
    scope = server_scope("hypercorn", b"/")
    scope["root_path"] = root  # hypercorn leaves raw_path as sent
    scope["raw_path"], scope["path"] = raw, path
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        status, headers, body = response(call(app, scope))
    if isinstance(expected, tuple):
        assert status == 200
        (seen,) = inner.scopes
        assert seen["urlguard.target"].segments == expected
        assert caplog.records == []
    else:
        assert status == expected == 501
        assert inner.scopes == []
        assert headers[b"cache-control"] == b"no-store"
        assert b"raw_path" in body
        (record,) = caplog.records
        assert "(asgi.version=3.0,spec_version=2.4) provides no raw request target" in (
            record.getMessage()
        )


def test_raw_path_of_another_type_in_report_mode(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    app, inner = guarded(parser, mode="report")
    scope = server_scope("hypercorn", b"/mnt/a", root_path="/mnt")
    scope["raw_path"] = "/mnt/a"
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        assert response(call(app, scope)).status == 200
    (seen,) = inner.scopes
    assert "urlguard.target" not in seen
    assert "urlguard.violation" not in seen
    (record,) = caplog.records
    assert "provides no raw request target" in record.getMessage()
    assert "passed on (report-only)" in record.getMessage()


def test_websocket_raw_path_of_another_type(parser: Parser) -> None:
    app, inner = guarded(parser)
    scope = server_scope("hypercorn", b"/ws", kind="websocket")
    scope["raw_path"] = "/ws"
    assert call(app, scope) == [
        {"type": "websocket.close", "code": 1011, "reason": "no raw request target"}
    ]
    scope["extensions"] = {"websocket.http.response": {}}
    start, _ = call(app, scope)
    assert (start["type"], start["status"]) == ("websocket.http.response.start", 501)
    assert inner.scopes == []


# --- HTTP/2 and HTTP/3: the target is origin-form -------------------------------------------

# RFC 9113 §8.3.1 (HTTP/2) and RFC 9114 §4.3.1 (HTTP/3): ":path" is origin-form,
# or "*" for OPTIONS; absolute-form belongs to HTTP/1.1 (RFC 9112 §3.2.2).
# hypercorn hands a :path of http://evil.example/x over as raw_path, with
# scope["path"] the whole URL (test_servers.py): what urlguard would judge on
# its path /x, the application routes as something else.
EVIL = b"http://evil.example/x"
JSON_ACCEPT = (b"accept", b"application/json")
ORIGIN_FORM = [
    # http_version (None: no key), method, raw_path, root_path -> segments, a rule,
    # or None: passed on without a target (OPTIONS *)
    P("2", "GET", EVIL, "", "bad-form", id="h2 absolute-form"),
    P("3", "GET", EVIL, "", "bad-form", id="h3 absolute-form"),
    P("2", "POST", b"HTTPS://evil.example", "", "bad-form", id="h2 absolute-form, no path"),
    P("2", "GET", EVIL, "/mnt", "bad-form", id="h2 absolute-form, a root_path"),
    P("2", "GET", b"http://evil.example/mnt/x", "/mnt", "bad-form", id="h2 below a root_path"),
    P("2", "GET", bytearray(EVIL), "", "bad-form", id="h2 absolute-form, a bytearray"),
    P("2", "OPTIONS", EVIL, "", "bad-form", id="h2 OPTIONS absolute-form"),
    P("2", "GET", b"noslash", "", "bad-form", id="h2 no slash"),
    P("2", "GET", b"", "", "bad-form", id="h2 empty"),
    P("2", "GET", b"*", "", "bad-form", id="h2 GET *"),
    P("2", "OPTIONS", b"*", "", None, id="h2 OPTIONS * passes"),
    P("3", "OPTIONS", b"*", "/mnt", None, id="h3 OPTIONS * passes"),
    P("2", "GET", b"/x", "", ("x",), id="h2 origin-form"),
    P("3", "GET", b"/mnt/x", "/mnt", ("x",), id="h3 origin-form below a root_path"),
    P("2", "GET", bytearray(b"/x"), "", ("x",), id="h2 origin-form, a bytearray"),
    P("1.1", "GET", EVIL, "", ("x",), id="HTTP/1.1 absolute-form: judged on its path"),
    P("1.0", "GET", EVIL, "", ("x",), id="HTTP/1.0 absolute-form"),
    P(None, "GET", EVIL, "", ("x",), id="no http_version: 1.1"),
]


def _h2_scope(
    version: str | None,
    raw: bytes | bytearray,
    *,
    root: str = "",
    method: str = "GET",
    kind: str = "http",
    query: bytes = b"",
) -> Scope:
    """A scope as hypercorn builds it from ``:path``: raw_path as sent, ``path``
    the whole of it decoded (an absolute URL included)."""
    scope = server_scope(
        "hypercorn", b"/", root_path=root, method=method, kind=kind, headers=(JSON_ACCEPT,)
    )
    scope["raw_path"], scope["query_string"] = raw, query
    scope["path"] = unquote_to_bytes(bytes(raw)).decode("utf-8", "replace")
    scope["headers"][0] = (b"host", _host_for(bytes(raw)))
    if version is None:
        del scope["http_version"]
    else:
        scope["http_version"] = version
    return scope


@pytest.mark.parametrize(("version", "method", "raw", "root", "expected"), ORIGIN_FORM)
def test_http2_and_http3_path_is_origin_form(
    parser: Parser,
    version: str | None,
    method: str,
    raw: bytes,
    root: str,
    expected: Expected,
) -> None:
    app, inner = guarded(parser)
    scope = _h2_scope(version, raw, root=root, method=method)
    status, _, body = response(call(app, scope))
    if expected is None:
        assert status == 200
        (seen,) = inner.scopes
        assert "urlguard.target" not in seen
        assert "urlguard.violation" not in seen
    elif isinstance(expected, tuple):
        assert status == 200
        assert inner.scopes[0]["urlguard.target"].segments == expected
    else:
        assert status == 400
        assert inner.scopes == []
        problem = json.loads(body)
        where = (problem["rule"], problem["component"], problem["index"], problem["offset"])
        assert where == (expected, "target", None, 0)


def test_http2_absolute_form_log_line(parser: Parser, caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded(parser)
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, _h2_scope("2", EVIL, query=b"q=\r\n"))
    (record,) = caplog.records
    assert record.getMessage() == (
        "rejected request target: rule=bad-form component=target index=- offset=0 "
        r"client=127.0.0.1:51000 method=GET target=http://evil.example/x?q=\x0d\x0a"
    )


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_http2_absolute_form_is_a_violation_like_any_other(parser: Parser, mode: str) -> None:
    seen: list[tuple[str, InvalidTarget]] = []

    def on_violation(exc: InvalidTarget, scope: Scope) -> None:
        assert scope["urlguard.violation"] is exc
        seen.append(("on_violation", exc))

    def on_reject(exc: InvalidTarget, scope: Scope) -> Any:
        seen.append(("on_reject", exc))
        return PlainTextResponse(f"no: {exc.rule}", status_code=418)

    app, inner = guarded(parser, mode=mode, on_violation=on_violation, on_reject=on_reject)
    scope = _h2_scope("2", EVIL)
    scope["urlguard.target"] = "stale"  # a lenient guard in front stored one
    status, _, body = response(call(app, scope))
    if mode == "report":
        assert status == 200
        (passed,) = inner.scopes
        assert "urlguard.target" not in passed
        assert passed["urlguard.violation"].args == ("bad-form", "target", None, 0)
        assert [name for name, _ in seen] == ["on_violation"]
    else:
        assert (status, body) == (418, b"no: bad-form")
        assert inner.scopes == []
        assert [name for name, _ in seen] == ["on_violation", "on_reject"]
    assert all(exc.args == ("bad-form", "target", None, 0) for _, exc in seen)
    assert app.violations == {"bad-form": 1}


WEBSOCKET_FORM = [
    # http_version, raw_path -> what is sent
    P("2", EVIL, "close 1008", id="h2 (RFC 8441) absolute-form"),
    P("3", b"noslash", "close 1008", id="h3 (RFC 9220) no slash"),
    P("2", b"/ws", "accepted", id="h2 origin-form"),
    P("1.1", EVIL, "accepted", id="HTTP/1.1 absolute-form"),
]


@pytest.mark.parametrize(("version", "raw", "expected"), WEBSOCKET_FORM)
def test_http2_websocket_path_is_origin_form(
    parser: Parser, version: str, raw: bytes, expected: str
) -> None:
    app, inner = guarded(parser)
    sent = call(app, _h2_scope(version, raw, kind="websocket"))
    if expected == "accepted":
        assert [m["type"] for m in sent] == ["websocket.accept", "websocket.close"]
        assert len(inner.scopes) == 1
    else:
        assert inner.scopes == []
        assert sent == [
            {"type": "websocket.close", "code": 1008, "reason": "invalid request target: bad-form"}
        ]


# --- lifespan, unknown scope types ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lifespan", "webtransport", "future-protocol"])
def test_other_scopes_pass_through_untouched(kind: str) -> None:
    seen: list[tuple[Any, Any, Any]] = []

    async def inner(scope: Scope, receive: Any, send: Any) -> None:
        seen.append((scope, receive, send))

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        raise AssertionError("nothing may be sent")

    scope: Scope = {"type": kind, "asgi": {"version": "3.0"}, "state": {}}
    before = copy.deepcopy(scope)
    asyncio.run(StrictURLMiddleware(inner)(scope, receive, send))
    ((got_scope, got_receive, got_send),) = seen
    assert got_scope is scope
    assert got_receive is receive
    assert got_send is send
    assert scope == before


# --- websockets ----------------------------------------------------------------------------


def test_websocket_accepted_with_target(parser: Parser) -> None:
    app, inner = guarded(parser)
    scope = server_scope("uvicorn-h11", b"/ws/caf%C3%A9?t=1", kind="websocket")
    sent = call(app, scope)
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.close"]
    assert inner.scopes[0]["urlguard.target"].segments == ("ws", "café")


def test_websocket_rejected_with_denial_response(parser: Parser) -> None:
    app, inner = guarded(parser)
    scope = server_scope(
        "uvicorn-h11",
        b"/ws/ECHOME%C4",
        kind="websocket",
        headers=((b"accept", b"application/json"),),
        extensions={"websocket.http.response": {}},
    )
    start, body = call(app, scope)
    assert inner.scopes == []
    assert (start["type"], body["type"]) == (
        "websocket.http.response.start",
        "websocket.http.response.body",
    )
    assert start["status"] == 400
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"content-length"] == str(len(body["body"])).encode()
    assert json.loads(body["body"])["rule"] == "invalid-utf8"
    assert MARK not in body["body"]


@pytest.mark.parametrize("extensions", [None, {}, {"websocket.http.response.zerocopy": {}}])
def test_websocket_rejected_by_close_1008(
    parser: Parser, extensions: dict[str, Any] | None
) -> None:
    app, inner = guarded(parser)
    scope = server_scope("hypercorn", b"/ws/%2e%2e", kind="websocket", extensions=extensions)
    sent = call(app, scope)
    assert inner.scopes == []
    assert sent == [
        {"type": "websocket.close", "code": 1008, "reason": "invalid request target: dot-segment"}
    ]


def test_websocket_without_raw_path(parser: Parser) -> None:
    app, _ = guarded(parser)
    scope = server_scope("hypercorn", b"/ws", kind="websocket")
    del scope["raw_path"]
    assert call(app, scope) == [
        {"type": "websocket.close", "code": 1011, "reason": "no raw request target"}
    ]
    scope["extensions"] = {"websocket.http.response": {}}
    start, body = call(app, scope)
    assert (start["type"], start["status"]) == ("websocket.http.response.start", 501)
    assert body["type"] == "websocket.http.response.body"
    assert b"raw_path" in body["body"]


def test_on_reject_is_not_used_for_websockets(parser: Parser) -> None:
    calls: list[InvalidTarget] = []

    def on_reject(exc: InvalidTarget, scope: Scope) -> Any:
        calls.append(exc)
        return PlainTextResponse("custom", status_code=418)

    app, _ = guarded(parser, on_reject=on_reject)
    (close,) = call(app, server_scope("hypercorn", b"/ws/%C4", kind="websocket"))
    assert (close["type"], close["code"]) == ("websocket.close", 1008)
    assert calls == []


# --- the answer as sent ----------------------------------------------------------------------

ACCEPT = [
    # Accept headers as the scope holds them -> the content type of the 400
    P((), "text/plain; charset=utf-8", id="no Accept"),
    P(((b"accept", b"application/json"),), "application/problem+json", id="json"),
    P(((b"Accept", b"application/json"),), "application/problem+json", id="name in any case"),
    P(
        ((b"accept", b"text/plain;q=0.1"), (b"accept", b"application/json;q=0.2")),
        "application/problem+json",
        id="several, joined: json last",
    ),
    P(
        ((b"accept", b"application/json;q=0.2"), (b"accept", b"text/plain;q=0.1")),
        "application/problem+json",
        id="several, joined: json first",
    ),
    P(((b"accept", b"\xff\x00garbage;;;q=zz,"),), "text/plain; charset=utf-8", id="not text"),
]


@pytest.mark.parametrize(("headers", "content_type"), ACCEPT)
def test_answer_as_sent(
    parser: Parser, headers: tuple[tuple[bytes, bytes], ...], content_type: str
) -> None:
    app, inner = guarded(parser)
    scope = server_scope("uvicorn-h11", b"/ECHOME/caf%C4", headers=headers)
    sent = call(app, scope)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    status, got, body = response(sent)
    assert inner.scopes == []
    assert status == 400
    # The guard's headers, with names in lower case as ASGI has them.
    assert got == {
        b"content-type": content_type.encode(),
        b"content-length": str(len(body)).encode(),
        b"x-content-type-options": b"nosniff",
    }
    assert MARK not in body
    if content_type == "application/problem+json":
        assert json.loads(body)["rule"] == "invalid-utf8"
    else:
        assert body.startswith(b"400 Bad Request: invalid-utf8: ")


def test_head_gets_headers_only(parser: Parser) -> None:
    app, _ = guarded(parser)
    _, get_headers, get_body = response(call(app, server_scope("hypercorn", b"/%C4")))
    status, headers, body = response(call(app, server_scope("hypercorn", b"/%C4", method="HEAD")))
    assert (status, body) == (400, b"")
    assert (
        headers[b"content-length"] == get_headers[b"content-length"] == str(len(get_body)).encode()
    )


def test_request_body_is_never_read(parser: Parser) -> None:
    # never_receive fails the test if called; here with a body announced.
    app, _ = guarded(parser)
    headers = ((b"content-length", b"5"), (b"content-type", b"text/plain"))
    scope = server_scope("uvicorn-h11", b"/%C4", method="POST", headers=headers)
    assert response(call(app, scope)).status == 400


def test_on_reject_app_answers_instead(parser: Parser) -> None:
    seen: list[Scope] = []

    def on_reject(exc: InvalidTarget, scope: Scope) -> PlainTextResponse:
        seen.append(scope)
        return PlainTextResponse(f"no: {exc.rule}", status_code=418)

    app, inner = guarded(parser, on_reject=on_reject)
    scope = server_scope("hypercorn", b"/%C4")
    status, headers, body = response(call(app, scope))
    assert (status, body) == (418, b"no: invalid-utf8")
    assert headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert seen == [scope]
    assert inner.scopes == []


# --- log lines -------------------------------------------------------------------------------

HOSTILE = [
    # raw_path, query_string, method, the target and the method as the log line shows them
    P(
        b"/a\r\nX-Injected: 1", b"", "GET\r\nEVIL", r"/a\x0d\x0aX-Injected:\x201",
        r"GET\x0d\x0aEVIL", id="CRLF, a hostile method",
    ),
    P(b"/a", b"q=\r\n\x1b[2J", "GET", r"/a?q=\x0d\x0a\x1b[2J", "GET", id="in query_string"),
    P(
        bytearray(b"/\x00\x07\x7f"), b"", "GET", r"/\x00\x07\x7f", "GET",
        id="a bytearray raw_path",
    ),
    P(
        b"/" + b"\n" * 20000, b"", "GET", "/" + r"\x0a" * 255 + "...[len=20001]", "GET",
        id="long, all LF",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "query", "method", "shown", "shown_method"), HOSTILE)
def test_log_line_is_escaped_and_bounded(
    parser: Parser,
    raw: bytes,
    query: bytes,
    method: str,
    shown: str,
    shown_method: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What the scope hands over reaches the log line escaped and bounded
    (every class of byte: test_guard.py)."""
    app, _ = guarded(parser)
    scope = server_scope("uvicorn-h11", b"/", method=method)
    scope["raw_path"], scope["query_string"] = raw, query
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert response(call(app, scope)).status == 400
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line), line
    assert line.endswith(f" client=127.0.0.1:51000 method={shown_method} target={shown}")


CLIENTS = [
    # scope["client"] -> as the log line shows it
    P(("127.0.0.1", 51000), "127.0.0.1:51000", id="host and port"),
    P(["::1", 8080], "::1:8080", id="a list, IPv6"),
    P(None, "-", id="None"),
    P("missing", "-", id="no client key"),
]


@pytest.mark.parametrize(("client", "shown"), CLIENTS)
def test_log_line_fields(
    parser: Parser, client: object, shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = guarded(parser)
    scope = server_scope("hypercorn", b"/a/caf%C4?x=1", method="PATCH")
    if client == "missing":
        del scope["client"]
    else:
        scope["client"] = client
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, scope)
    (record,) = caplog.records
    assert record.name == "urlguard"
    assert record.getMessage() == (
        "rejected request target: rule=invalid-utf8 component=path index=1 "
        f"offset=6 client={shown} method=PATCH target=/a/caf%C4?x=1"
    )


def test_websocket_log_line_names_its_type_as_the_method(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    # A websocket scope has no "method": its type stands in for it.
    app, _ = guarded(parser)
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, server_scope("hypercorn", b"/ws/%C4", kind="websocket"))
    (record,) = caplog.records
    assert " method=websocket target=/ws/%C4" in record.getMessage()
