"""urlguard behind real servers on loopback, spoken to with exact bytes on a raw socket.

HTTP clients normalise hostile targets away, so every request here is written
byte for byte (example_apps/rawhttp.py). Each server runs once per module, as
a subprocess serving a guarded app from tests/e2e_apps/ on 127.0.0.1; the
app echoes what urlguard stored. Three kinds of answer are told apart:

- accepted: 200 from the app, with urlguard's decoded ``segments`` and
  ``query`` and the ``raw`` target urlguard read;
- rejected: urlguard's 400 naming the rule, ``application/problem+json`` when
  the client accepts JSON (every request in the per-server table asks for it),
  never echoing the input;
- refused: the server answered itself before any application ran (never
  ``application/problem+json``), as LANDSCAPE.md measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import rawhttp
from urlguard import InvalidTarget, parse_target

pytestmark = pytest.mark.servers

P = pytest.param
TESTS = Path(__file__).resolve().parent
MARK = b"ECHOME"  # in every hostile target: never in a rejection body
JSON = (b"Accept", b"application/json")
TEXT = (b"Accept", b"text/plain")
PROBLEM = b"application/problem+json"
PLAIN = b"text/plain; charset=utf-8"

# --- the servers --------------------------------------------------------------------------


def _uvicorn(http: str, *root: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port),
            "--http", http, "--ws", "wsproto", "--no-access-log", *root,
            "e2e_apps.guarded_asgi:app",
        ]  # fmt: skip

    return argv


def _hypercorn(app: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "hypercorn", "--bind", f"127.0.0.1:{port}",
            "--graceful-timeout", "1", app,
        ]  # fmt: skip

    return argv


def _gunicorn(worker: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
            "--worker-class", worker, "--graceful-timeout", "1", "e2e_apps.guarded_wsgi:app",
        ]  # fmt: skip

    return argv


def _waitress(port: int) -> list[str]:
    return [sys.executable, "-m", "waitress", "--listen", f"127.0.0.1:{port}",
            "e2e_apps.guarded_wsgi:app"]  # fmt: skip


def _serve(server: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "e2e_apps.serve", server, str(port)]

    return argv


@dataclass(frozen=True)
class Refused:
    """The server answered ``status`` itself; the application never ran."""

    status: int


@dataclass(frozen=True)
class Rejected:
    """urlguard answered 400 for ``rule``; ``exact``: at the offset the sent bytes give."""

    rule: str
    exact: bool = True


@dataclass(frozen=True)
class Accepted:
    """The app ran (``status``: it refuses to tunnel a CONNECT with 405); urlguard read
    ``raw`` and decoded ``segments`` and ``query``."""

    raw: bytes
    segments: tuple[str, ...]
    query: tuple[tuple[str, str], ...] = ()
    status: int = 200


Outcome = Refused | Rejected | Accepted


@dataclass(frozen=True)
class Spec:
    """A server as the tests start it, and what it does with the quirky targets."""

    argv: Callable[[int], list[str]]
    keeps_alive: bool
    quirks: dict[str, Outcome] = field(default_factory=dict)
    websocket: bool = False


# The targets on which servers differ (LANDSCAPE.md, re-measured here).
QUIRKS: dict[str, tuple[bytes, bytes]] = {
    "space": (b"GET", b"/" + MARK + b" x"),
    "tab": (b"GET", b"/" + MARK + b"\tx"),
    "nul": (b"GET", b"/" + MARK + b"\x00x"),
    "ctrl-01": (b"GET", b"/" + MARK + b"\x01x"),
    "del": (b"GET", b"/" + MARK + b"\x7fx"),
    "raw utf-8": (b"GET", b"/" + MARK + b"caf\xc3\xa9"),
    "no slash": (b"GET", b"noslash" + MARK),
    "9000-byte target": (b"GET", b"/" + MARK + b"a" * 8994),
    "fragment": (b"GET", b"/a#" + MARK),
    "absolute-form": (b"GET", b"http://127.0.0.1/a/b?x=1"),
    "absolute-form %zz": (b"GET", b"http://127.0.0.1/" + MARK + b"%zz"),
    "ftp absolute-form": (b"GET", b"ftp://h/" + MARK),
    "CONNECT authority-form": (b"CONNECT", b"127.0.0.1:80"),
    "leading //": (b"GET", b"//x/y"),
    "GET *": (b"GET", b"*"),
}

# Every server tested here refuses these with 400 before any application runs.
_REFUSED_BY_ALL = {"space": Refused(400)}
# uvicorn, hypercorn and gunicorn refuse every raw control and non-ASCII byte.
_STRICT_PARSER = {
    name: Refused(400) for name in ("space", "tab", "nul", "ctrl-01", "del", "raw utf-8")
}
_ABSOLUTE_EXACT = Accepted(b"http://127.0.0.1/a/b?x=1", ("a", "b"), (("x", "1"),))
_ORIGIN_DEFAULTS: dict[str, Outcome] = {
    "no slash": Rejected("bad-form"),
    "9000-byte target": Rejected("too-long"),
    "fragment": Rejected("fragment"),
    "absolute-form": _ABSOLUTE_EXACT,
    "absolute-form %zz": Rejected("malformed-escape"),
    "ftp absolute-form": Rejected("bad-form"),
    "CONNECT authority-form": Rejected("bad-form"),
    "leading //": Rejected("empty-segment"),
    "GET *": Rejected("bad-form"),
}
_H11 = {**_STRICT_PARSER, **_ORIGIN_DEFAULTS}
_HTTPTOOLS = {
    **_H11,
    "no slash": Refused(400),
    "CONNECT authority-form": Refused(400),
    # httptools hands over only the path of an absolute-form target (any scheme)
    # and drops '#...'.
    "fragment": Accepted(b"/a", ("a",)),
    "absolute-form": Accepted(b"/a/b?x=1", ("a", "b"), (("x", "1"),)),
    "absolute-form %zz": Rejected("malformed-escape", exact=False),
    "ftp absolute-form": Accepted(b"/" + MARK, (MARK.decode(),)),
}
_GUNICORN = {
    **_H11,
    "no slash": Refused(400),
    "GET *": Refused(400),
    "9000-byte target": Refused(414),  # limit_request_line 4094
}

SERVERS: dict[str, Spec] = {
    "uvicorn-h11": Spec(_uvicorn("h11"), True, _H11, websocket=True),
    "uvicorn-httptools": Spec(_uvicorn("httptools"), True, _HTTPTOOLS, websocket=True),
    "uvicorn-h11 --root-path /mnt": Spec(
        _uvicorn("h11", "--root-path", "/mnt"),
        True,
        # uvicorn glues root_path to what was sent: a target without a leading
        # slash arrives as `/mnt` + target, the bytes other servers give for a
        # request for that path (the blind spot asgi.py documents).
        {
            **_H11,
            "no slash": Accepted(b"/mntnoslash" + MARK, ("mntnoslash" + MARK.decode(),)),
            "CONNECT authority-form": Accepted(b"/mnt127.0.0.1:80", ("mnt127.0.0.1:80",), (), 405),
            "ftp absolute-form": Rejected("empty-segment", exact=False),  # /mntftp://h/...
        },
    ),
    "uvicorn-httptools --root-path /mnt": Spec(
        _uvicorn("httptools", "--root-path", "/mnt"), True, _HTTPTOOLS
    ),
    "hypercorn": Spec(_hypercorn("e2e_apps.guarded_asgi:app"), True, _H11, websocket=True),
    "gunicorn-sync": Spec(_gunicorn("sync"), False, _GUNICORN),
    "gunicorn-gthread": Spec(_gunicorn("gthread"), True, _GUNICORN),
    "waitress": Spec(
        _waitress,
        True,
        {
            **_ORIGIN_DEFAULTS,
            **_REFUSED_BY_ALL,
            "tab": Rejected("raw-char"),
            "nul": Rejected("raw-char"),
            "ctrl-01": Rejected("raw-char"),
            "del": Rejected("raw-char"),
            "raw utf-8": Refused(400),
        },
    ),
    "werkzeug": Spec(
        _serve("werkzeug"),
        False,  # the dev server closes every connection ("Connection: close")
        {
            **_ORIGIN_DEFAULTS,
            **_REFUSED_BY_ALL,
            "tab": Refused(400),
            "nul": Rejected("raw-char"),
            "ctrl-01": Rejected("raw-char"),
            "del": Rejected("raw-char"),
            # Sent twice UTF-8-encoded by werkzeug; urlguard undoes it (exact offset).
            "raw utf-8": Rejected("raw-char"),
            # werkzeug collapses a leading '//' before anyone sees it: not recoverable.
            "leading //": Accepted(b"/x/y", ("x", "y")),
        },
    ),
}

# Servers that hand over no raw target: urlguard refuses with 501 by default.
NO_RAW: dict[str, tuple[Callable[[int], list[str]], str]] = {
    "wsgiref": (_serve("wsgiref"), "WSGIServer/0.2"),
    "hypercorn (WSGI)": (_hypercorn("e2e_apps.guarded_wsgi:app"), "unknown"),
}

GUARDED = list(SERVERS)


class Pool:
    """Starts each server the first time a test asks for it; the module fixture stops all."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self.stack = stack
        self.live: dict[str, rawhttp.Server] = {}
        self.failed: dict[str, Exception] = {}

    def __call__(self, name: str) -> rawhttp.Server:
        if name in self.failed:
            raise RuntimeError(f"{name} failed to start earlier") from self.failed[name]
        if name not in self.live:
            argv = SERVERS[name].argv if name in SERVERS else NO_RAW[name][0]
            port = rawhttp.free_port()
            try:
                server = self.stack.enter_context(
                    rawhttp.running(argv(port), port, cwd=TESTS, timeout=20.0)
                )
            except Exception as exc:
                self.failed[name] = exc
                raise
            self.live[name] = server
        return self.live[name]

    def terminate_all(self) -> None:
        """SIGTERM every server at once, so that stopping them does not add up."""
        for server in self.live.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGTERM)


@pytest.fixture(scope="module")
def servers() -> Iterator[Pool]:
    with contextlib.ExitStack() as stack:
        pool = Pool(stack)
        try:
            yield pool
        finally:
            pool.terminate_all()


# --- helpers ------------------------------------------------------------------------------


def offending(target: bytes) -> InvalidTarget:
    """What urlguard says about ``target`` itself: the truth an exact server must reproduce."""
    with pytest.raises(InvalidTarget) as info:
        parse_target(target)
    return info.value


def app_json(response: rawhttp.Response, status: int = 200) -> dict[str, Any]:
    """The echo of an app that ran (fails on anything else)."""
    assert response.status == status, (response.status, response.text[:300])
    assert response.header(b"content-type") == b"application/json"
    data: dict[str, Any] = response.json()
    assert data["app"] in ("starlette", "flask")
    return data


def assert_rejection(
    response: rawhttp.Response, target: bytes, rule: str, *, as_json: bool, exact: bool = True
) -> None:
    """urlguard's 400: names the rule, never the input, framed for keep-alive."""
    assert response.status == 400, (response.status, response.text[:300])
    assert response.header(b"x-content-type-options") == b"nosniff"
    assert response.header(b"content-length") == str(len(response.body)).encode()
    assert MARK not in response.body
    if as_json:
        assert response.header(b"content-type") == PROBLEM
        problem = response.json()
        assert problem["status"] == 400
        assert problem["rule"] == rule
        assert problem["detail"].startswith(f"{rule}: ")
        if exact:
            truth = offending(target)
            assert (problem["component"], problem["index"], problem["offset"]) == (
                truth.component,
                truth.index,
                truth.offset,
            )
    else:
        assert response.header(b"content-type") == PLAIN
        assert response.body.startswith(f"400 Bad Request: {rule}: ".encode())


# --- accepted, the same on every server ----------------------------------------------------

ACCEPTED = [
    P(b"/", ("",), (), id="root"),
    P(
        b"/caf%C3%A9/x?q=a+b&r=%E2%82%AC",
        ("café", "x"),
        (("q", "a b"), ("r", "€")),
        id="utf-8 path and query",
    ),
    P(b"/files/a%2Fb", ("files", "a/b"), (), id="%2F kept under the /files/ route"),
    P(b"/a;v=1/b", ("a;v=1", "b"), (), id="matrix param literal"),
    P(b"/p?x=%2F&y=&z", ("p",), (("x", "/"), ("y", ""), ("z", "")), id="query pieces"),
    P(b"/p?q=%25zz", ("p",), (("q", "%zz"),), id="encoded percent in query"),
    P(b"/%7Euser/%41", ("~user", "A"), (), id="unreserved escapes"),
    P(b"/mnt/a", ("mnt", "a"), (), id="path that looks like the mount point"),
    P(b"/a/", ("a", ""), (), id="trailing slash"),
    P(b"/" + b"a" * 3000, ("a" * 3000,), (), id="3000-byte segment"),
]


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize(("target", "segments", "query"), ACCEPTED)
def test_accepted(
    servers: Pool,
    name: str,
    target: bytes,
    segments: tuple[str, ...],
    query: tuple[tuple[str, str], ...],
) -> None:
    data = app_json(rawhttp.request(servers(name).port, target))
    assert data["raw"] == target.decode("latin-1")  # byte-exact, mount point taken off
    assert tuple(data["segments"]) == segments
    assert tuple(map(tuple, data["query"])) == query
    assert data["routed"] is True


# --- rejected by urlguard, the same on every server ----------------------------------------

REJECTED = [
    P(b"/ECHOME%zz", "malformed-escape", id="%zz"),
    P(b"/ECHOME%", "malformed-escape", id="trailing %"),
    P(b"/ECHOME%u00E9", "malformed-escape", id="%u escape"),
    P(b"/x?ECHOME=%G1", "malformed-escape", id="malformed escape in query"),
    P(b"/ECHOME/%C4rzte", "invalid-utf8", id="latin-1 byte in path"),
    P(b"/ECHOME?term=%C4rzteblatt", "invalid-utf8", id="latin-1 byte in query"),
    P(b"/ECHOME/%C0%AF", "invalid-utf8", id="overlong slash"),
    P(b"/ECHOME/%ED%A0%80", "invalid-utf8", id="surrogate"),
    P(b"/units/kg%2FsECHOME", "encoded-slash", id="%2F outside /files/"),
    P(b"/ECHOME%5Cx", "encoded-backslash", id="%5C"),
    P(b"/ECHOME/%2E%2E/etc", "dot-segment", id="encoded dot-dot"),
    P(b"/ECHOME/../etc", "dot-segment", id="raw dot-dot"),
    P(b"/ECHOME//x", "empty-segment", id="inner //"),
    P(b"/ECHOME%00", "forbidden-char", id="%00"),
    P(b"/ECHOME%252F", "double-encoding", id="%252F"),
    P(b"/ECHOME\\x", "raw-char", id="raw backslash"),
    P(b'/ECHOME"<>', "raw-char", id="raw quote and angle brackets"),
    P(b"/ECHOME{x}|^`", "raw-char", id="raw braces, pipe, caret, backtick"),
    P(b"/ECHOME" + b"/a" * 130, "too-many", id="130 segments"),
    P(b"/ECHOME?" + b"a&" * 1001, "too-many", id="1001 params"),
]


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize("accept", [P(JSON, id="json"), P(TEXT, id="text")])
@pytest.mark.parametrize(("target", "rule"), REJECTED)
def test_rejected(
    servers: Pool, name: str, accept: tuple[bytes, bytes], target: bytes, rule: str
) -> None:
    response = rawhttp.request(servers(name).port, target, headers=[accept])
    assert_rejection(response, target, rule, as_json=accept == JSON)


# --- where servers differ: refused, rejected or accepted -----------------------------------

QUIRK_CASES = [P(name, quirk, id=f"{name}-{quirk}") for name in GUARDED for quirk in QUIRKS]


@pytest.mark.parametrize(("name", "quirk"), QUIRK_CASES)
def test_server_specific(servers: Pool, name: str, quirk: str) -> None:
    method, target = QUIRKS[quirk]
    expected = SERVERS[name].quirks[quirk]
    response = rawhttp.request(servers(name).port, target, method=method, headers=[JSON])
    match expected:
        case Refused(status):
            assert response.status == status, (response.status, response.text[:300])
            assert response.header(b"content-type") != PROBLEM  # not urlguard's answer
        case Rejected(rule, exact):
            assert_rejection(response, target, rule, as_json=True, exact=exact)
        case Accepted(raw, segments, query, status):
            data = app_json(response, status)
            assert data["raw"] == raw.decode("latin-1")
            assert tuple(data["segments"]) == segments
            assert tuple(map(tuple, data["query"])) == query


def test_every_server_has_every_quirk() -> None:
    for spec in SERVERS.values():
        assert set(spec.quirks) == set(QUIRKS)


# --- OPTIONS * -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*GUARDED, *NO_RAW])
def test_options_star_passes_through(servers: Pool, name: str) -> None:
    data = app_json(rawhttp.request(servers(name).port, b"*", method=b"OPTIONS"))
    assert data["segments"] is None  # reached the app, with no target stored


# --- keep-alive: a rejection, then a good request on the same connection ------------------

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"


def _first(kind: str, port: int) -> bytes:
    if kind == "POST with a request as its body":
        length = (b"Content-Length", str(len(SMUGGLED)).encode())
        head = rawhttp.build_request(
            port, b"/ECHOME%zz", method=b"POST", headers=[length], close=False
        )
        return head + SMUGGLED
    return rawhttp.build_request(port, b"/ECHOME%zz", method=kind.encode(), close=False)


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize("kind", ["GET", "HEAD", "POST with a request as its body"])
def test_keep_alive_rejection_then_good_request(servers: Pool, name: str, kind: str) -> None:
    port = servers(name).port
    messages = [
        _first(kind, port),
        rawhttp.build_request(port, b"/ok?n=1", close=False),
        rawhttp.build_request(port, b"/ECHOME/../x", close=False),
        rawhttp.build_request(port, b"/ok?n=2"),
    ]
    bad, good, bad2, good2 = rawhttp.converse(port, messages)
    assert bad.status == 400
    assert MARK not in bad.body
    if kind == "HEAD":
        assert bad.header(b"content-length") not in (None, b"0")
    else:
        assert_rejection(bad, b"/ECHOME%zz", "malformed-escape", as_json=False)
    if SERVERS[name].keeps_alive:
        assert (bad.header(b"connection") or b"").lower() != b"close"
        assert app_json(good)["query"] == [["n", "1"]]
        assert_rejection(bad2, b"/ECHOME/../x", "dot-segment", as_json=False)
        assert app_json(good2)["query"] == [["n", "2"]]
    else:
        # The server closes after every response and says so; nothing else was read.
        assert (bad.header(b"connection") or b"").lower() == b"close"
        assert [good.closed, bad2.closed, good2.closed] == [True, True, True]


# --- websocket handshakes (uvicorn and hypercorn offer the denial-response extension) -----

UPGRADE = [
    (b"Upgrade", b"websocket"),
    (b"Connection", b"Upgrade"),
    (b"Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ=="),
    (b"Sec-WebSocket-Version", b"13"),
]
WS_SERVERS = [name for name, spec in SERVERS.items() if spec.websocket]


@pytest.mark.parametrize("name", WS_SERVERS)
@pytest.mark.parametrize(
    ("target", "rule"),
    [
        P(b"/ws/ECHOME%zz", "malformed-escape", id="%zz"),
        P(b"/ws/ECHOME%2Fx", "encoded-slash", id="%2F"),
        P(b"/ws/x?ECHOME=%C4", "invalid-utf8", id="bad utf-8 in query"),
        P(b"/ws/ECHOME/%2E%2E", "dot-segment", id="dot-dot"),
        # uvicorn with httptools drops '#...' from HTTP requests, not from handshakes.
        P(b"/ws/x#ECHOME", "fragment", id="fragment"),
    ],
)
def test_websocket_handshake_rejected(servers: Pool, name: str, target: bytes, rule: str) -> None:
    port = servers(name).port
    data = rawhttp.build_request(port, target, headers=[*UPGRADE, TEXT], close=False)
    response = rawhttp.exchange(port, data)
    assert response.status != 101
    assert_rejection(response, target, rule, as_json=False)


@pytest.mark.parametrize("name", WS_SERVERS)
def test_websocket_handshake_accepted(servers: Pool, name: str) -> None:
    port = servers(name).port
    data = rawhttp.build_request(port, b"/ws/caf%C3%A9?q=1", headers=UPGRADE, close=False)
    response = rawhttp.exchange(port, data)
    assert response.status == 101
    assert (response.header(b"upgrade") or b"").lower() == b"websocket"


# --- hostile bytes reach the log escaped, on the servers that let them through ------------


@pytest.mark.parametrize(
    ("name", "target", "logged"),
    [
        P("waitress", b"/ECHOME\x01\x7f\x00\tx", "/ECHOME\\x01\\x7f\\x00\\x09x", id="waitress"),
        P("werkzeug", b"/ECHOME\x01\x7f\x00x", "/ECHOME\\x01\\x7f\\x00x", id="werkzeug-ctrl"),
        P("werkzeug", b"/ECHOME\xc3\xa9\x1b[2J", "/ECHOME\\xc3\\xa9\\x1b[2J", id="werkzeug-utf8"),
    ],
)
def test_log_line_escapes_raw_bytes(servers: Pool, name: str, target: bytes, logged: str) -> None:
    server = servers(name)
    response = rawhttp.request(server.port, target)
    assert_rejection(response, target, "raw-char", as_json=False)
    lines = [line for line in server.output().splitlines() if f"target={logged}" in line]
    assert len(lines) == 1, server.output()[-2000:]
    (line,) = lines
    assert "rule=raw-char component=path index=0" in line
    assert line.endswith(f"target={logged}")
    assert all(0x20 <= ord(c) < 0x7F for c in line)


# --- no raw target at all: 501 by default, never a crash -----------------------------------


@pytest.mark.parametrize("name", list(NO_RAW))
@pytest.mark.parametrize(
    "target",
    [
        P(b"/", id="root"),
        P(b"/caf%C3%A9/x?q=a+b", id="good"),
        P(b"/ECHOME%zz", id="malformed"),
        P(b"/ECHOME%2F..%2F", id="encoded slash"),
        P(b"noslashECHOME", id="no slash"),
    ],
)
@pytest.mark.parametrize("accept", [P(JSON, id="json"), P(TEXT, id="text")])
def test_no_raw_target_refused_with_501(
    servers: Pool, name: str, target: bytes, accept: tuple[bytes, bytes]
) -> None:
    server = servers(name)
    response = rawhttp.request(server.port, target, headers=[accept])
    assert response.status == 501, (response.status, response.text[:300])
    assert response.header(b"cache-control") == b"no-store"
    assert response.header(b"content-length") == str(len(response.body)).encode()
    assert MARK not in response.body
    if accept == JSON:
        assert response.header(b"content-type") == PROBLEM
        assert json.loads(response.body)["code"] == "no-raw-target"
    else:
        assert response.header(b"content-type") == PLAIN
        assert response.body.startswith(b"501 Not Implemented: ")
    software = NO_RAW[name][1]
    assert f"the server ({software}) provides no raw request target" in server.output()


# Hostile bytes sent to the servers without a raw target (measured): some the
# server refuses itself with its own 400 (LANDSCAPE.md, "What the servers
# already reject"); whatever reaches urlguard gets its 501, never a crash.
NO_RAW_HOSTILE = [
    # id, target, then the status from wsgiref and from hypercorn (WSGI)
    ("raw 0x01", b"/a\x01b", 501, 400),  # hypercorn refuses control bytes
    ("raw UTF-8", b"/caf\xc3\xa9", 501, 400),  # so does it raw UTF-8
    ("raw space", b"/a b", 400, 400),  # every server refuses a space
    ("9000 bytes", b"/" + b"a" * 9000, 501, 501),  # only gunicorn limits the length
    ("escaped invalid UTF-8", b"/%ff%fe", 501, 501),
]


def _no_raw_hostile_params() -> list[Any]:
    return [
        P(name, target, status, id=f"{name}: {case}")
        for case, target, *statuses in NO_RAW_HOSTILE
        for name, status in zip(NO_RAW, statuses, strict=True)
    ]


@pytest.mark.parametrize(("name", "target", "status"), _no_raw_hostile_params())
def test_no_raw_target_never_crashes(servers: Pool, name: str, target: bytes, status: int) -> None:
    response = rawhttp.request(servers(name).port, target)
    assert response.status == status, (response.status, response.text[:300])
    if status == 501:  # urlguard's answer, not the server's
        assert response.header(b"content-type") == PLAIN
        assert response.body.startswith(b"501 Not Implemented: ")
    else:
        assert response.header(b"content-type") != PLAIN
