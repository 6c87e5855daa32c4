"""urlguard.asgi.StrictURLMiddleware at the protocol boundary: hand-built scopes
shaped like each server's (as measured, see docs/servers.md), truth tables of
what passes and what is rejected, and every option. The decision behind it is
tested on its own in test_guard.py, real servers in test_servers.py."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
from starlette.responses import PlainTextResponse

from log_checks import assert_error_logged
from urlguard import Config, InvalidTarget, Policy, Target
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
    """The scope ``server`` builds for the request target ``wire``."""
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
        "headers": [(b"host", b"testserver"), *headers],
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


def response(sent: list[Message]) -> tuple[int, dict[bytes, bytes], bytes]:
    assert sent[0]["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in sent[1:])
    assert not sent[-1].get("more_body", False), "the response must be complete"
    headers = dict(sent[0]["headers"])
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], headers, body


def guarded(**options: Any) -> tuple[StrictURLMiddleware, Recorder]:
    inner = Recorder()
    return StrictURLMiddleware(inner, **options), inner


# --- truth table: every server shape, with and without root_path ----------------------------

Expected = tuple[str, ...] | str | None  # segments, a rule code, or None: the server refuses it


def _assert_verdict(status: int, body: bytes, seen: list[Scope], expected: Expected) -> None:
    """Accepted with these segments (a tuple), or a 400 naming the rule (a str)."""
    if isinstance(expected, tuple):
        assert status == 200
        assert seen[0]["urlguard.target"].segments == expected
    else:
        assert status == 400
        assert isinstance(expected, str)
        assert expected.encode() in body


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
def test_server_shapes(server: str, root: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded()
    scope = server_scope(server, wire, root_path=root)
    status, headers, body = response(call(app, scope))
    if isinstance(expected, tuple):
        assert status == 200
        (seen,) = inner.scopes
        target = seen["urlguard.target"]
        assert isinstance(target, Target)
        assert target.segments == expected
    else:
        assert status == 400
        assert inner.scopes == []
        assert isinstance(expected, str)
        assert expected.encode() in body
        assert MARK.lower() not in body.lower()
        assert headers[b"content-length"] == str(len(body)).encode()


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
    server: str, root: str, wire: bytes, raw: bytes, segments: tuple[str, ...]
) -> None:
    app, inner = guarded()
    status, _, _ = response(call(app, server_scope(server, wire, root_path=root)))
    assert status == 200
    target = inner.scopes[0]["urlguard.target"]
    assert (target.raw, target.segments) == (raw, segments)


@pytest.mark.parametrize("server", ["hypercorn", "daphne", "granian"])
@pytest.mark.parametrize("query", [P(b"", id="no query"), P(b"?q=1", id="a query")])
def test_mount_point_itself_is_its_slash(server: str, query: bytes) -> None:
    app, inner = guarded()
    for wire in (b"/mnt", b"/mnt/"):
        call(app, server_scope(server, wire + query, root_path="/mnt"))
    bare, slash = (scope["urlguard.target"] for scope in inner.scopes)
    assert bare == slash
    assert (bare.raw, bare.segments, bare.query) == (slash.raw, ("",), slash.query)


def test_path_below_the_root_is_judged_relative_to_it() -> None:
    # '/a/b' mounted: '/a/b/%2E%2E' is a dot segment below it; '/a%2Fb/x' is not
    # below it (its first segment is 'a/b'), so it is judged whole.
    app, _ = guarded()
    for wire, rule in ((b"/a/b/%2E%2E", b"dot-segment"), (b"/a%2Fb/x", b"encoded-slash")):
        status, _, body = response(call(app, server_scope("hypercorn", wire, root_path="/a/b")))
        assert status == 400
        assert rule in body


def test_server_keys_are_never_rewritten() -> None:
    app, inner = guarded()
    scope = server_scope("uvicorn-h11", b"/echo/caf%C3%A9?q=1", root_path="/mnt")
    before = copy.deepcopy(scope)
    call(app, scope)
    assert {k: v for k, v in inner.scopes[0].items() if not k.startswith("urlguard.")} == before
    assert set(inner.scopes[0]) - set(before) == {"urlguard.target"}


def test_empty_query_and_no_query_look_the_same() -> None:
    # ASGI splits at '?': '/a?' and '/a' both arrive with query_string b"".
    app, inner = guarded()
    call(app, server_scope("uvicorn-h11", b"/a?"))
    call(app, server_scope("uvicorn-h11", b"/a"))
    first, second = (s["urlguard.target"] for s in inner.scopes)
    assert first == second
    assert first.raw == b"/a"
    assert first.raw_query is None


def test_query_is_validated_exactly() -> None:
    app, inner = guarded()
    call(app, server_scope("hypercorn", b"/a?x=%26&y"))
    assert inner.scopes[0]["urlguard.target"].query == (("x", "&"), ("y", ""))


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
def test_missing_raw_path_is_refused_with_501(how: str, caplog: pytest.LogCaptureFixture) -> None:
    app, inner = guarded()
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


@pytest.mark.parametrize("how", ["missing", "none"])
def test_missing_raw_path_in_report_mode_passes_and_logs(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, inner = guarded(mode="report")
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        status, _, _ = response(call(app, _without_raw_path(how)))
    assert status == 200
    assert "urlguard.target" not in inner.scopes[0]
    (record,) = caplog.records
    assert (record.name, record.levelno) == ("urlguard", logging.ERROR)
    message = record.getMessage()
    assert "provides no raw request target (no raw_path in the scope)" in message
    assert "passed on (report-only)" in message


DECODED = [
    P("/caf\u00e9/x", b"", ("café", "x"), id="utf-8 path"),
    P("/a", b"q=a+b", ("a",), id="query kept exact"),
    P("/caf\ufffd", b"", "invalid-utf8", id="replacement character means invalid utf-8"),
    P("/a/../b", b"", "dot-segment", id="dot segment"),
    P("//a", b"", "empty-segment", id="empty segment"),
    P("/a\x00", b"", "forbidden-char", id="decoded NUL"),
    P("/a\u202e", b"", "forbidden-char", id="decoded bidi override"),
    P("/%41", b"", "double-encoding", id="decoded escape is double encoding"),
    P("/a", b"q=%C4", "invalid-utf8", id="query invalid utf-8"),
    P("/a", b"q=\\", "raw-char", id="query raw backslash"),
    P("/a b", b"", ("a b",), id="decoded space is allowed"),
]


@pytest.mark.parametrize(("path", "query", "expected"), DECODED)
def test_missing_raw_path_validate_decoded(path: str, query: bytes, expected: Expected) -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    status, _, body = response(call(app, _without_raw_path("missing", path, query)))
    _assert_verdict(status, body, inner.scopes, expected)


def test_validate_decoded_strips_root_path() -> None:
    app, inner = guarded(missing_raw_target="validate-decoded")
    scope = _without_raw_path("none", "/mnt/a")
    scope["root_path"] = "/mnt"
    call(app, scope)
    assert inner.scopes[0]["urlguard.target"].segments == ("a",)


# --- OPTIONS *, lifespan, unknown scope types ----------------------------------------------------

ASTERISK = [
    P("uvicorn-h11", "", "OPTIONS", b"*", 200, id="uvicorn OPTIONS *"),
    P("uvicorn-h11", "/mnt", "OPTIONS", b"*", 200, id="uvicorn root_path OPTIONS *"),
    P("hypercorn", "/mnt", "OPTIONS", b"*", 200, id="hypercorn root_path OPTIONS *"),
    P("granian", "", "OPTIONS", b"*", 200, id="granian OPTIONS *"),
    P("uvicorn-h11", "", "GET", b"*", 400, id="GET * is bad-form"),
    P("uvicorn-h11", "", "OPTIONS", b"*?x", 400, id="OPTIONS *?x is bad-form"),
]


@pytest.mark.parametrize(("server", "root", "method", "wire", "status"), ASTERISK)
def test_options_asterisk(server: str, root: str, method: str, wire: bytes, status: int) -> None:
    app, inner = guarded()
    got, _, body = response(call(app, server_scope(server, wire, root_path=root, method=method)))
    assert got == status
    if status == 200:
        assert "urlguard.target" not in inner.scopes[0]
        assert "urlguard.violation" not in inner.scopes[0]
    else:
        assert b"bad-form" in body


def test_options_asterisk_without_raw_path_passes() -> None:
    app, inner = guarded()
    scope = _without_raw_path("missing", "*")
    scope["method"] = "OPTIONS"
    assert response(call(app, scope))[0] == 200
    assert len(inner.scopes) == 1


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


def test_websocket_accepted_with_target() -> None:
    app, inner = guarded()
    scope = server_scope("uvicorn-h11", b"/ws/caf%C3%A9?t=1", kind="websocket")
    sent = call(app, scope)
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.close"]
    assert inner.scopes[0]["urlguard.target"].segments == ("ws", "café")


def test_websocket_rejected_with_denial_response() -> None:
    app, inner = guarded()
    scope = server_scope(
        "uvicorn-h11",
        b"/ws/ECHOME%C4",
        kind="websocket",
        headers=((b"accept", b"application/json"),),
        extensions={"websocket.http.response": {}},
    )
    sent = call(app, scope)
    assert inner.scopes == []
    assert [m["type"] for m in sent] == [
        "websocket.http.response.start",
        "websocket.http.response.body",
    ]
    assert sent[0]["status"] == 400
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"content-length"] == str(len(sent[1]["body"])).encode()
    assert json.loads(sent[1]["body"])["rule"] == "invalid-utf8"
    assert MARK not in sent[1]["body"]


@pytest.mark.parametrize("extensions", [None, {}, {"websocket.http.response.zerocopy": {}}])
def test_websocket_rejected_by_close_1008(extensions: dict[str, Any] | None) -> None:
    app, inner = guarded()
    scope = server_scope("hypercorn", b"/ws/%2e%2e", kind="websocket", extensions=extensions)
    sent = call(app, scope)
    assert inner.scopes == []
    assert sent == [
        {"type": "websocket.close", "code": 1008, "reason": "invalid request target: dot-segment"}
    ]


def test_websocket_in_report_mode_passes() -> None:
    app, inner = guarded(mode="report")
    sent = call(app, server_scope("hypercorn", b"/ws/%C4", kind="websocket"))
    assert sent[0]["type"] == "websocket.accept"
    assert inner.scopes[0]["urlguard.violation"].rule == "invalid-utf8"


def test_websocket_without_raw_path() -> None:
    app, _ = guarded()
    scope = server_scope("hypercorn", b"/ws", kind="websocket")
    del scope["raw_path"]
    assert call(app, scope) == [
        {"type": "websocket.close", "code": 1011, "reason": "no raw request target"}
    ]
    scope["extensions"] = {"websocket.http.response": {}}
    sent = call(app, scope)
    assert sent[0]["type"] == "websocket.http.response.start"
    assert sent[0]["status"] == 501


def test_on_reject_is_not_used_for_websockets() -> None:
    calls: list[InvalidTarget] = []

    def on_reject(exc: InvalidTarget, scope: Scope) -> Any:
        calls.append(exc)
        return PlainTextResponse("custom", status_code=418)

    app, _ = guarded(on_reject=on_reject)
    sent = call(app, server_scope("hypercorn", b"/ws/%C4", kind="websocket"))
    assert sent[0]["code"] == 1008
    assert calls == []


# --- the rejection response ------------------------------------------------------------------

ACCEPT = [
    P(None, "text/plain; charset=utf-8", id="no Accept"),
    P(b"application/json", "application/problem+json", id="json"),
    P(b"application/problem+json", "application/problem+json", id="problem+json"),
    P(b"APPLICATION/JSON", "application/problem+json", id="case-insensitive"),
    P(b"application/*", "application/problem+json", id="application wildcard"),
    P(b"application/json, text/plain", "application/problem+json", id="json first, same q"),
    P(b"text/plain;q=0.1, application/json;q=0.2", "application/problem+json", id="json higher q"),
    P(b"*/*", "text/plain; charset=utf-8", id="anything: text"),
    P(
        b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "text/plain; charset=utf-8",
        id="browser",
    ),
    P(b"application/json;q=0", "text/plain; charset=utf-8", id="json refused"),
    P(b"application/json; q=0.000", "text/plain; charset=utf-8", id="json refused, 3 digits"),
    P(b"text/plain, application/json;q=0.5", "text/plain; charset=utf-8", id="text preferred"),
    P(b"application/jsonx", "text/plain; charset=utf-8", id="not json"),
    P(b"\xff\x00garbage;;;q=zz,", "text/plain; charset=utf-8", id="garbage"),
]


# str(InvalidTarget) for '/ECHOME/caf%C4': rule, reason, position, no input.
DETAIL = (
    "invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)"
    " (path segment 1, byte offset 11)"
)


@pytest.mark.parametrize(("accept", "content_type"), ACCEPT)
def test_rejection_body_follows_accept(accept: bytes | None, content_type: str) -> None:
    app, _ = guarded()
    headers = () if accept is None else ((b"accept", accept),)
    scope = server_scope("uvicorn-h11", b"/ECHOME/caf%C4", headers=headers)
    status, got, body = response(call(app, scope))
    assert status == 400
    assert got[b"content-type"] == content_type.encode()
    assert got[b"content-length"] == str(len(body)).encode()
    assert got[b"x-content-type-options"] == b"nosniff"
    assert MARK not in body
    assert b"caf" not in body
    if content_type == "application/problem+json":
        problem = json.loads(body)
        assert problem == {
            "type": "about:blank",
            "title": "Bad Request",
            "status": 400,
            "detail": DETAIL,
            "rule": "invalid-utf8",
            "component": "path",
            "index": 1,
            "offset": 11,
        }
    else:
        assert body == f"400 Bad Request: {DETAIL}\n".encode()


def test_head_gets_headers_only() -> None:
    app, _ = guarded()
    _, get_headers, get_body = response(call(app, server_scope("hypercorn", b"/%C4")))
    status, headers, body = response(call(app, server_scope("hypercorn", b"/%C4", method="HEAD")))
    assert (status, body) == (400, b"")
    assert (
        headers[b"content-length"] == get_headers[b"content-length"] == str(len(get_body)).encode()
    )


def test_request_body_is_never_read() -> None:
    # never_receive fails the test if called; here with a body announced.
    app, _ = guarded()
    headers = ((b"content-length", b"5"), (b"content-type", b"text/plain"))
    scope = server_scope("uvicorn-h11", b"/%C4", method="POST", headers=headers)
    assert response(call(app, scope))[0] == 400


# --- modes, hooks, counters ------------------------------------------------------------------


def test_report_mode_lets_the_request_through(caplog: pytest.LogCaptureFixture) -> None:
    app, inner = guarded(mode="report")
    with caplog.at_level(logging.INFO, logger="urlguard"):
        status, _, _ = response(call(app, server_scope("uvicorn-h11", b"/a%2Fb")))
        response(call(app, server_scope("uvicorn-h11", b"/ok")))
    assert status == 200
    assert app.mode == "report"
    bad, good = inner.scopes
    assert "urlguard.target" not in bad
    assert bad["urlguard.violation"].rule == "encoded-slash"
    assert "urlguard.violation" not in good
    assert good["urlguard.target"].segments == ("ok",)
    assert app.violations == {"encoded-slash": 1}
    (record,) = caplog.records
    assert "report-only" in record.getMessage()
    assert record.levelno == logging.WARNING


def test_enforce_mode_counts_by_rule() -> None:
    app, _ = guarded()
    for wire in (b"/%C4", b"/%C0%AF", b"/a%2F", b"/fine"):
        call(app, server_scope("hypercorn", wire))
    assert app.violations == {"invalid-utf8": 2, "encoded-slash": 1}
    assert app.mode == "enforce"


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_on_violation_is_called_in_both_modes(mode: str) -> None:
    calls: list[tuple[InvalidTarget, Scope]] = []
    app, _ = guarded(mode=mode, on_violation=lambda exc, scope: calls.append((exc, scope)))
    scope = server_scope("hypercorn", b"/a/%2e")
    call(app, scope)
    call(app, server_scope("hypercorn", b"/fine"))
    ((exc, seen),) = calls
    assert exc.rule == "dot-segment"
    assert seen is scope


def test_failing_on_violation_still_rejects(caplog: pytest.LogCaptureFixture) -> None:
    def on_violation(exc: InvalidTarget, scope: Scope) -> None:
        raise RuntimeError("metrics down")

    app, inner = guarded(on_violation=on_violation)
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert response(call(app, server_scope("hypercorn", b"/%C4")))[0] == 400
    assert inner.scopes == []
    assert any(r.exc_info and "on_violation" in r.getMessage() for r in caplog.records)


def test_on_reject_builds_the_response() -> None:
    seen: list[tuple[str, Any]] = []

    def on_reject(exc: InvalidTarget, scope: Scope) -> Any:
        seen.append((exc.rule, scope.get("urlguard.violation")))
        return PlainTextResponse(f"no: {exc.rule}", status_code=418)

    app, inner = guarded(on_reject=on_reject)
    status, _, body = response(call(app, server_scope("hypercorn", b"/%C4")))
    assert (status, body) == (418, b"no: invalid-utf8")
    assert seen[0][0] == "invalid-utf8"
    assert isinstance(seen[0][1], InvalidTarget)
    assert inner.scopes == []
    response(call(app, server_scope("hypercorn", b"/fine")))
    assert len(seen) == 1


def _raises(exc: InvalidTarget, scope: Scope) -> Any:
    raise RuntimeError("hook bug")


@pytest.mark.parametrize(
    ("on_reject", "logged", "exception"),
    [
        P(lambda exc, scope: None, None, None, id="None keeps the default"),
        P(
            _raises,
            "the on_reject callback failed; sent the default 400",
            RuntimeError,
            id="a failing hook falls back to the default",
        ),
        P(
            lambda exc, scope: 42,
            "on_reject returned int, not an ASGI application; sent the default 400",
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
        status, _, body = response(call(app, server_scope("hypercorn", b"/%C4")))
    assert status == 400
    assert b"invalid-utf8" in body
    assert inner.scopes == []
    assert_error_logged(caplog.records, logged, exception)


def test_report_mode_does_not_call_on_reject() -> None:
    app, inner = guarded(mode="report", on_reject=_raises)
    assert response(call(app, server_scope("hypercorn", b"/%C4")))[0] == 200
    assert len(inner.scopes) == 1


# --- per-route policies --------------------------------------------------------------------

ROUTES: dict[str, Any] = {
    "/files/": {"encoded_slash": "keep"},
    "/files/private/": Policy(),
    "/api": {"allowed_ranges": [[0x20, 0x7E]]},
}

ROUTED = [
    P("hypercorn", "", b"/files/a%2Fb", ("files", "a/b"), id="route keeps %2F"),
    P("hypercorn", "", b"/files/private/a%2Fb", "encoded-slash", id="longest prefix wins"),
    P("hypercorn", "", b"/other/a%2Fb", "encoded-slash", id="base policy elsewhere"),
    P("hypercorn", "", b"/filesx/a%2Fb", "encoded-slash", id="prefix ends at its slash"),
    P("hypercorn", "", b"/files", ("files",), id="directory prefix needs the slash"),
    P("hypercorn", "", b"/%66iles/a%2Fb", ("files", "a/b"), id="matched decoded, as routed"),
    P("hypercorn", "", b"/api/caf%C3%A9", "forbidden-char", id="stricter route"),
    P("hypercorn", "", b"/api", ("api",), id="prefix matches itself"),
    P("hypercorn", "", b"/apix/caf%C3%A9", ("apix", "café"), id="prefix ends at a segment"),
    P("hypercorn", "", b"/%61pi/caf%C3%A9", "forbidden-char", id="no escape from a strict route"),
    P("hypercorn", "", b"/api%2Fx/caf%C3%A9", "encoded-slash", id="encoded slash after prefix"),
    P("uvicorn-h11", "", b"http://h/files/a%2Fb", ("files", "a/b"), id="absolute-form"),
    P("uvicorn-h11", "/mnt", b"/files/a%2Fb", ("files", "a/b"), id="uvicorn root_path"),
    P("hypercorn", "/mnt", b"/mnt/files/a%2Fb", ("files", "a/b"), id="hypercorn root in target"),
    P(
        "hypercorn",
        "/mnt",
        b"/%6Dnt/files/a%2Fb",
        ("files", "a/b"),
        id="encoded root is taken off too",
    ),
    P("hypercorn", "/my app", b"/my%20app/files/a%2Fb", ("files", "a/b"), id="root with a space"),
    P("hypercorn", "/mnt", b"/files/a%2Fb", ("files", "a/b"), id="root stripped by a proxy"),
]


@pytest.mark.parametrize(("server", "root", "wire", "expected"), ROUTED)
def test_routes(server: str, root: str, wire: bytes, expected: Expected) -> None:
    app, inner = guarded(routes=ROUTES)
    status, _, body = response(call(app, server_scope(server, wire, root_path=root)))
    _assert_verdict(status, body, inner.scopes, expected)


def test_routes_override_the_given_policy() -> None:
    base = Policy.browser()
    app, inner = guarded(policy=base, routes={"/f/": {"encoded_slash": "keep"}})
    call(app, server_scope("hypercorn", b"/f/a%2F[b]"))
    assert inner.scopes[0]["urlguard.target"].segments == ("f", "a/[b]")
    status, _, _ = response(call(app, server_scope("hypercorn", b"/g/a%2F[b]")))
    assert status == 400


# --- configuration -------------------------------------------------------------------------


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "urlguard.toml"
    path.write_text('mode = "report"\n[routes."/files/"]\nencoded_slash = "keep"\n')
    for config in (path, str(path)):
        app, inner = guarded(config=config)
        assert app.mode == "report"
        call(app, server_scope("hypercorn", b"/files/a%2Fb"))
        call(app, server_scope("hypercorn", b"/x/a%2Fb"))
        assert inner.scopes[0]["urlguard.target"].segments == ("files", "a/b")
        assert inner.scopes[1]["urlguard.violation"].rule == "encoded-slash"


def test_pyproject_config_and_mode_override(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n[tool.urlguard]\nmode = "report"\n')
    app, _inner = guarded(config=path, mode="enforce")
    assert app.mode == "enforce"
    assert response(call(app, server_scope("hypercorn", b"/%C4")))[0] == 400


def test_config_object() -> None:
    config = Config(policy=Policy(dot_segment="allow"), mode="enforce")
    app, inner = guarded(config=config)
    call(app, server_scope("hypercorn", b"/a/../b"))
    assert inner.scopes[0]["urlguard.target"].segments == ("a", "..", "b")


async def _async_hook(exc: InvalidTarget, scope: Scope) -> None:
    return None


BAD_OPTIONS = [
    P({"policy": {"encoded_slash": "keep"}}, TypeError, "policy", id="policy not a Policy"),
    P({"routes": [("/a", Policy())]}, TypeError, "routes", id="routes not a mapping"),
    P({"routes": {"nope": {}}}, ValueError, "nope", id="prefix without slash"),
    P({"routes": {"/a b": {}}}, ValueError, "/a b", id="prefix with space"),
    P({"routes": {"/a": {"bogus": 1}}}, ValueError, "bogus", id="unknown policy key"),
    P({"routes": {"/a": {"encoded_slash": "maybe"}}}, ValueError, "encoded_slash", id="bad value"),
    P({"routes": {"/a": 3}}, TypeError, "routes['/a']", id="route value"),
    P({"routes": {"/a/": {}, "/%61/": {}}}, ValueError, "same prefix", id="duplicate prefix"),
    P({"mode": "strict"}, ValueError, "mode", id="unknown mode"),
    P({"on_reject": 3}, TypeError, "on_reject", id="on_reject not callable"),
    P({"on_reject": _async_hook}, TypeError, "on_reject", id="on_reject a coroutine function"),
    P({"on_violation": "x"}, TypeError, "on_violation", id="on_violation not callable"),
    P({"missing_raw_target": "guess"}, ValueError, "missing_raw_target", id="missing raw"),
    P({"log_level": "WARNING"}, TypeError, "log_level", id="log_level a string"),
    P({"config": 123}, TypeError, "config", id="config type"),
    P({"config": Config(), "policy": Policy()}, ValueError, "config", id="config and policy"),
    P({"config": Config(), "routes": {}}, ValueError, "config", id="config and routes"),
    P({"config": "/nonexistent/urlguard.toml"}, ValueError, "cannot read", id="config missing"),
]


@pytest.mark.parametrize(("options", "error", "words"), BAD_OPTIONS)
def test_bad_configuration_fails_at_construction(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=re.escape(words)):
        StrictURLMiddleware(Recorder(), **options)


def test_app_must_be_callable() -> None:
    with pytest.raises(TypeError, match="app"):
        StrictURLMiddleware(None)  # type: ignore[arg-type]


def test_app_is_positional_and_options_keyword_only() -> None:
    with pytest.raises(TypeError):
        StrictURLMiddleware(Recorder(), Policy())  # type: ignore[call-arg]


# --- log lines -------------------------------------------------------------------------------

HOSTILE = [
    # raw target, method, the target as the log line must show it
    P(b"/a\r\nX-Injected: 1", "GET", r"/a\x0d\x0aX-Injected:\x201", id="CRLF"),
    P(b"/\x00\x1b[2J\x07\x7f", "GET", r"/\x00\x1b[2J\x07\x7f", id="NUL, ESC, BEL, DEL"),
    P(
        b"/caf\xc3\xa9\xe2\x80\xae\xe2\x80\xa8",
        "GET",
        r"/caf\xc3\xa9\xe2\x80\xae\xe2\x80\xa8",
        id="raw UTF-8: bidi override, line separator",
    ),
    P(b"/\\x41\\", "GET", r"/\\x41\\", id="backslashes stay unambiguous"),
    P(b"/a\tb c", "GET\r\nEVIL", r"/a\x09b\x20c", id="TAB, space, hostile method"),
    P(b"/" + b"\n" * 20000, "GET", "/" + r"\x0a" * 255 + "...[len=20001]", id="long, all LF"),
]


@pytest.mark.parametrize(("raw", "method", "shown"), HOSTILE)
def test_log_line_is_escaped_and_bounded(
    raw: bytes, method: str, shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, _ = guarded()
    scope = server_scope("uvicorn-h11", b"/", method=method)
    scope["raw_path"] = raw
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, _, _ = response(call(app, scope))
    assert status == 400
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line), line
    assert line.endswith(f" target={shown}")
    assert "client=127.0.0.1:51000" in line
    assert f"rule={record.__dict__['urlguard_rule']}" in line
    if method != "GET":
        assert r"method=GET\x0d\x0aEVIL" in line


def test_log_line_fields(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded()
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        call(app, server_scope("hypercorn", b"/a/caf%C4?x=1"))
    (record,) = caplog.records
    assert record.name == "urlguard"
    assert record.getMessage() == (
        "rejected request target: rule=invalid-utf8 component=path index=1 "
        "offset=6 client=127.0.0.1:51000 method=GET target=/a/caf%C4?x=1"
    )
    assert (
        record.__dict__["urlguard_rule"],
        record.__dict__["urlguard_component"],
        record.__dict__["urlguard_index"],
    ) == (
        "invalid-utf8",
        "path",
        1,
    )


def test_log_level_option(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = guarded(log_level=logging.INFO)
    with caplog.at_level(logging.INFO, logger="urlguard"):
        call(app, server_scope("hypercorn", b"/%C4"))
    assert [r.levelno for r in caplog.records] == [logging.INFO]


def test_stacked_report_mode_leaves_no_stale_target() -> None:
    # A lenient outer guard stores a target; a strict inner one in report mode
    # must not leave it behind for a request it finds in violation.
    inner = Recorder()
    strict = StrictURLMiddleware(inner, mode="report")
    app = StrictURLMiddleware(strict, policy=Policy(encoded_slash="keep"))
    call(app, server_scope("hypercorn", b"/a%2Fb"))
    (scope,) = inner.scopes
    assert "urlguard.target" not in scope
    assert scope["urlguard.violation"].rule == "encoded-slash"
