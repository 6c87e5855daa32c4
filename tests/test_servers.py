"""urlguard behind real servers on loopback, spoken to with exact bytes.

HTTP clients normalise hostile targets away, so every request here is written
byte for byte: HTTP/1.1 on a raw socket (example_apps/rawhttp.py), HTTP/2 in
cleartext with prior knowledge through ``h2`` with its header validation off
(tests/rawh2.py), so that ``:path`` holds exactly the bytes given. Each server
runs once per module, as a subprocess serving a guarded app from
tests/e2e_apps/ on 127.0.0.1; the app echoes what urlguard stored. Three
kinds of answer are told apart:

- accepted: 200 from the app, with urlguard's decoded ``segments`` and
  ``query``, the ``raw`` target urlguard read, and the ``host`` and ``port``
  it validated;
- rejected: urlguard's 400 naming the rule, ``application/problem+json`` when
  the client accepts JSON (every request in the per-server table asks for it),
  never echoing the input;
- refused: the server refused the request before any application ran: it
  answered itself (never ``application/problem+json``), or, over HTTP/2,
  reset the stream or closed the connection.

Every server runs the same valid and hostile targets; where a server's
answer differs from the common one (it refuses a byte itself, it hands over
less than was sent), the difference is written down for that server. The
host tables do the same with the Host lines (none, two, hostile values), an
absolute-form authority, an allow-list, and HTTP/2's ``:authority`` and
``host``. These tables are the measurements behind docs/servers.md.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

import rawh2
import rawhttp
from e2e_apps import kept_separators
from urlguard import InvalidTarget, parse_target

pytestmark = pytest.mark.servers

P = pytest.param
TESTS = Path(__file__).resolve().parent
MARK = b"ECHOME"  # in every hostile target: never in a rejection body
JSON = (b"accept", b"application/json")
TEXT = (b"accept", b"text/plain")
PROBLEM = b"application/problem+json"
PLAIN = b"text/plain; charset=utf-8"
ROOT = "/my app"  # a mount point with a character that is percent-encoded on the wire
KEPT = "e2e_apps.kept_separators"
KEPT_ASGI, KEPT_WSGI = f"{KEPT}:asgi", f"{KEPT}:wsgi"
LISTED_ASGI, LISTED_WSGI = "e2e_apps.allowed_hosts:asgi", "e2e_apps.allowed_hosts:wsgi"

# --- the server processes ------------------------------------------------------------------

Argv = Callable[[int], list[str]]


def _uvicorn(http: str, *root: str, app: str = "e2e_apps.guarded_asgi:app") -> Argv:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port),
            "--http", http, "--ws", "wsproto", "--no-access-log", *root, app,
        ]  # fmt: skip

    return argv


def _hypercorn(app: str, *root: str) -> Argv:
    # hypercorn speaks HTTP/1.1 and, to a client that starts with the HTTP/2
    # preface, h2c with prior knowledge, on the same port.
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "hypercorn", "--bind", f"127.0.0.1:{port}",
            "--graceful-timeout", "1", *root, app,
        ]  # fmt: skip

    return argv


def _granian(interface: str, app: str, *options: str) -> Argv:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "granian", "--interface", interface, "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", "--runtime-threads", "1",
            "--blocking-threads", "1", "--no-access-log", *options, app,
        ]  # fmt: skip

    return argv


def _daphne(app: str = "e2e_apps.guarded_asgi:app") -> Argv:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                "--access-log", os.devnull, app]  # fmt: skip

    return argv


def _gunicorn(worker: str, app: str = "e2e_apps.guarded_wsgi:app") -> Argv:
    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
            "--worker-class", worker, "--graceful-timeout", "1", app,
        ]  # fmt: skip

    return argv


def _waitress(*options: str, app: str = "e2e_apps.guarded_wsgi:app") -> Argv:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "waitress", "--listen", f"127.0.0.1:{port}", *options,
                app]  # fmt: skip

    return argv


def _serve(server: str) -> Argv:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "e2e_apps.serve", server, str(port)]

    return argv


PROCESSES: dict[str, Argv] = {
    "uvicorn-h11": _uvicorn("h11"),
    "uvicorn-httptools": _uvicorn("httptools"),
    "uvicorn-h11 --root-path /mnt": _uvicorn("h11", "--root-path", "/mnt"),
    "uvicorn-httptools --root-path /mnt": _uvicorn("httptools", "--root-path", "/mnt"),
    "hypercorn": _hypercorn("e2e_apps.guarded_asgi:app"),
    "granian": _granian("asgi", "e2e_apps.guarded_asgi:app"),
    "granian --http 2": _granian("asgi", "e2e_apps.guarded_asgi:app", "--http", "2"),
    "daphne": _daphne(),
    "gunicorn-sync": _gunicorn("sync"),
    "gunicorn-gthread": _gunicorn("gthread"),
    "waitress": _waitress(),
    "werkzeug": _serve("werkzeug"),
    # mounted at ROOT
    f"uvicorn-h11 --root-path '{ROOT}'": _uvicorn("h11", "--root-path", ROOT),
    f"hypercorn --root-path '{ROOT}'": _hypercorn("e2e_apps.guarded_asgi:app", "--root-path", ROOT),
    f"waitress --url-prefix '{ROOT}'": _waitress(f"--url-prefix={ROOT}"),
    # no raw target
    "wsgiref": _serve("wsgiref"),
    "hypercorn (WSGI)": _hypercorn("e2e_apps.guarded_wsgi:app"),
    "granian (WSGI)": _granian("wsgi", "e2e_apps.guarded_wsgi:app"),
    # kept separators (e2e_apps/kept_separators.py), at the root and below /m
    "waitress (kept)": _waitress(app=KEPT_WSGI),
    "uvicorn-h11 (kept)": _uvicorn("h11", app=KEPT_ASGI),
    "hypercorn (kept)": _hypercorn(KEPT_ASGI),
    "waitress --url-prefix /m (kept)": _waitress("--url-prefix=/m", app=KEPT_WSGI),
    "uvicorn-h11 --root-path /m (kept)": _uvicorn("h11", "--root-path", "/m", app=KEPT_ASGI),
    "hypercorn --root-path /m (kept)": _hypercorn(KEPT_ASGI, "--root-path", "/m"),
    "uvicorn-h11, Starlette Mount /m (kept)": _uvicorn("h11", app=f"{KEPT}:mounted"),
    # allowed_hosts (e2e_apps/allowed_hosts.py): 127.0.0.1 and the names below example.com
    "uvicorn-h11 (allowed_hosts)": _uvicorn("h11", app=LISTED_ASGI),
    "uvicorn-httptools (allowed_hosts)": _uvicorn("httptools", app=LISTED_ASGI),
    "hypercorn (allowed_hosts)": _hypercorn(LISTED_ASGI),
    "granian (allowed_hosts)": _granian("asgi", LISTED_ASGI),
    "granian --http 2 (allowed_hosts)": _granian("asgi", LISTED_ASGI, "--http", "2"),
    "daphne (allowed_hosts)": _daphne(LISTED_ASGI),
    "gunicorn-sync (allowed_hosts)": _gunicorn("sync", LISTED_WSGI),
    "waitress (allowed_hosts)": _waitress(app=LISTED_WSGI),
}


# --- what a server does with a request -----------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """The server refused the request itself; the application never ran. ``how``:
    the status it answered, or (HTTP/2) ``"reset"`` the stream, or ``"dropped"``
    the whole connection before any answer."""

    how: int | Literal["reset", "dropped"]


@dataclass(frozen=True)
class Rejected:
    """urlguard answered 400 for ``rule``; ``exact``: at the offset the sent bytes give."""

    rule: str
    exact: bool = True


@dataclass(frozen=True)
class Accepted:
    """The app ran (``status``: it refuses to tunnel a CONNECT with 405); urlguard read
    ``raw`` and decoded ``segments`` and ``query``; ``host``, when given, is the
    ``(Target.host, Target.port)`` the handler reads."""

    raw: bytes
    segments: tuple[str, ...]
    query: tuple[tuple[str, str], ...] = ()
    status: int = 200
    host: tuple[str | None, int | None] | None = None


Outcome = Refused | Rejected | Accepted
WebSocket = Literal["denial", "close"]


@dataclass(frozen=True)
class Spec:
    """A server as the tests speak to it: which process, over which protocol, and
    what it does with the quirky targets (``quirks``: every one of them) and with
    the common ones where it differs from the rest (``differs``, by test id)."""

    process: str
    keeps_alive: bool
    quirks: dict[str, Outcome]
    differs: dict[str, Outcome] = field(default_factory=dict)
    #: How a refused websocket handshake is answered: urlguard's 400 through the
    #: denial-response extension, or a close (the server then answers 403).
    websocket: WebSocket | None = None
    http2: bool = False


# The targets on which servers differ (measured here).
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

_CONTROLS = ("tab", "nul", "ctrl-01", "del")
# uvicorn, hypercorn and gunicorn refuse every raw control and non-ASCII byte.
_STRICT_PARSER: dict[str, Outcome] = {
    name: Refused(400) for name in ("space", *_CONTROLS, "raw utf-8")
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
_H11: dict[str, Outcome] = {**_STRICT_PARSER, **_ORIGIN_DEFAULTS}
# httptools and granian hand over only the path of an absolute-form target (any
# scheme) and drop '#...'.
_REDUCED: dict[str, Outcome] = {
    "fragment": Accepted(b"/a", ("a",)),
    "absolute-form": Accepted(b"/a/b?x=1", ("a", "b"), (("x", "1"),)),
    "absolute-form %zz": Rejected("malformed-escape", exact=False),
    "ftp absolute-form": Accepted(b"/" + MARK, (MARK.decode(),)),
}
_HTTPTOOLS: dict[str, Outcome] = {
    **_H11,
    **_REDUCED,
    "no slash": Refused(400),
    "CONNECT authority-form": Refused(400),
}
_GUNICORN: dict[str, Outcome] = {
    **_H11,
    "no slash": Refused(400),
    "GET *": Refused(400),
    "9000-byte target": Refused(414),  # limit_request_line 4094
}
# granian answers its own empty 400 for a raw '<' or '>', a raw '`' in the
# path and a raw '"' in the query (common ids).
_GRANIAN_REFUSES = (
    "raw quote and angle brackets",
    "raw braces, pipe, caret, backtick",
    "raw > in the path",
    "raw backtick in the path",
    "raw quote in the query",
    "raw < in the query",
)

SERVERS: dict[str, Spec] = {
    "uvicorn-h11": Spec("uvicorn-h11", True, _H11, websocket="denial"),
    "uvicorn-httptools": Spec("uvicorn-httptools", True, _HTTPTOOLS, websocket="denial"),
    "uvicorn-h11 --root-path /mnt": Spec(
        "uvicorn-h11 --root-path /mnt",
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
        "uvicorn-httptools --root-path /mnt", True, _HTTPTOOLS
    ),
    "hypercorn": Spec("hypercorn", True, _H11, websocket="denial"),
    "hypercorn (h2c)": Spec(
        "hypercorn",
        True,
        {
            **_ORIGIN_DEFAULTS,
            # Raw space and controls in :path reach the application, but NUL
            # and raw UTF-8 make hypercorn close the connection (0.18: an
            # unhandled UnicodeDecodeError for the latter), as does CONNECT.
            **{name: Rejected("raw-char") for name in ("space", "tab", "ctrl-01", "del")},
            "nul": Refused("dropped"),
            "raw utf-8": Refused("dropped"),
            "CONNECT authority-form": Refused("dropped"),
            # :path is origin-form (RFC 9113 §8.3.1): hypercorn passes an
            # absolute URL on as raw_path, urlguard answers bad-form.
            "absolute-form": Rejected("bad-form", exact=False),
            "absolute-form %zz": Rejected("bad-form", exact=False),
        },
        http2=True,
    ),
    "granian": Spec(
        "granian",
        True,
        {
            **_REDUCED,
            **{name: Refused(400) for name in ("space", *_CONTROLS)},
            "raw utf-8": Rejected("raw-char"),
            # granian hands over b"" for a target without a leading slash.
            "no slash": Rejected("bad-form"),
            "9000-byte target": Rejected("too-long"),
            "CONNECT authority-form": Rejected("bad-form"),
            "leading //": Rejected("empty-segment"),
            "GET *": Rejected("bad-form"),
        },
        {
            **{name: Refused(400) for name in _GRANIAN_REFUSES},
            # granian drops '#...' from a handshake too.
            "websocket fragment": Accepted(b"/ws/x", ("ws", "x")),
        },
        websocket="denial",
    ),
    # Over HTTP/2, granian resets the stream of a :path with raw controls, space
    # or those characters, and of one that is not origin-form.
    "granian (h2c)": Spec(
        "granian --http 2",
        True,
        {
            **{name: Refused("reset") for name in ("space", *_CONTROLS, "no slash")},
            **{
                name: Refused("reset")
                for name in (
                    "absolute-form",
                    "absolute-form %zz",
                    "ftp absolute-form",
                    "CONNECT authority-form",
                )
            },
            "raw utf-8": Rejected("raw-char"),
            "9000-byte target": Rejected("too-long"),
            "fragment": Accepted(b"/a", ("a",)),
            "leading //": Rejected("empty-segment"),
            "GET *": Rejected("bad-form"),
        },
        {name: Refused("reset") for name in _GRANIAN_REFUSES},
        http2=True,
    ),
    "daphne": Spec(
        "daphne",
        True,
        {
            **_H11,
            "del": Rejected("raw-char"),
        },
        # daphne (autobahn) refuses a handshake for a target with '#' itself.
        {"websocket fragment": Refused(400)},
        websocket="close",
    ),
    "gunicorn-sync": Spec("gunicorn-sync", False, _GUNICORN),
    "gunicorn-gthread": Spec("gunicorn-gthread", True, _GUNICORN),
    "waitress": Spec(
        "waitress",
        True,
        {
            **_ORIGIN_DEFAULTS,
            "space": Refused(400),
            **{name: Rejected("raw-char") for name in _CONTROLS},
            "raw utf-8": Refused(400),
        },
    ),
    "werkzeug": Spec(
        "werkzeug",
        False,  # the dev server closes every connection ("Connection: close")
        {
            **_ORIGIN_DEFAULTS,
            "space": Refused(400),
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
# The value: what the log line names the server by (SERVER_SOFTWARE).
NO_RAW: dict[str, str] = {
    "wsgiref": "WSGIServer/0.2",
    "hypercorn (WSGI)": "unknown",
    "granian (WSGI)": "Granian",
}

GUARDED = list(SERVERS)
HTTP1 = [name for name, spec in SERVERS.items() if not spec.http2]


class Pool:
    """Starts each server process the first time a test asks for it; the module
    fixture stops them all."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self.stack = stack
        self.live: dict[str, rawhttp.Server] = {}
        self.failed: dict[str, Exception] = {}

    def __call__(self, name: str) -> rawhttp.Server:
        process = SERVERS[name].process if name in SERVERS else name
        if process in self.failed:
            raise RuntimeError(f"{process} failed to start earlier") from self.failed[process]
        if process not in self.live:
            port = rawhttp.free_port()
            try:
                server = self.stack.enter_context(
                    rawhttp.running(PROCESSES[process](port), port, cwd=TESTS, timeout=20.0)
                )
            except Exception as exc:
                self.failed[process] = exc
                raise
            self.live[process] = server
        return self.live[process]

    def start(self, *processes: str) -> None:
        """Start those of ``processes`` not started yet, all at once: each
        waits for its own port, so several cost about as much as one."""
        todo = [name for name in processes if name not in self.live and name not in self.failed]
        managers = {
            name: rawhttp.running(PROCESSES[name](port), port, cwd=TESTS, timeout=20.0)
            for name, port in zip(todo, _free_ports(len(todo)), strict=True)
        }
        with concurrent.futures.ThreadPoolExecutor(max(1, len(todo))) as executor:
            started = {name: executor.submit(cm.__enter__) for name, cm in managers.items()}
        for name, future in started.items():
            try:
                server = future.result()
            except Exception as exc:  # raised by the test that asks for it
                self.failed[name] = exc
            else:
                self.stack.push(managers[name])  # stopped with the others
                self.live[name] = server

    def terminate_all(self) -> None:
        """SIGTERM every server at once, so that stopping them does not add up."""
        for server in self.live.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGTERM)


def _free_ports(count: int) -> list[int]:
    """``count`` TCP ports on 127.0.0.1, all bound at once so that none is given twice."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


@pytest.fixture(scope="module")
def servers() -> Iterator[Pool]:
    with contextlib.ExitStack() as stack:
        pool = Pool(stack)
        try:
            yield pool
        finally:
            pool.terminate_all()


def send(
    servers: Pool,
    name: str,
    target: bytes,
    *,
    method: bytes = b"GET",
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> rawhttp.Response:
    """One request to server ``name``, on a new connection, in its protocol."""
    port = servers(name).port
    if name in SERVERS and SERVERS[name].http2:
        return rawh2.request(port, target, method=method, headers=headers)
    return rawhttp.request(port, target, method=method, headers=headers)


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


def assert_refused(response: rawhttp.Response, how: int | str) -> None:
    """The server's own refusal: its status (never urlguard's problem+json), or
    over HTTP/2 a reset stream or a closed connection."""
    if how == "reset":
        assert isinstance(response, rawh2.Response)
        assert response.reset is not None, response
    elif how == "dropped":
        assert isinstance(response, rawh2.Response)
        assert response.dropped, response
    else:
        assert response.status == how, (response.status, response.text[:300])
        assert response.header(b"content-type") != PROBLEM  # not urlguard's answer


def assert_outcome(
    response: rawhttp.Response, target: bytes, expected: Outcome, *, as_json: bool
) -> None:
    match expected:
        case Refused(how):
            assert_refused(response, how)
        case Rejected(rule, exact):
            assert_rejection(response, target, rule, as_json=as_json, exact=exact)
        case Accepted(raw, segments, query, status, host):
            data = app_json(response, status)
            assert data["raw"] == raw.decode("latin-1")  # byte-exact, mount point taken off
            assert tuple(data["segments"]) == segments
            assert tuple(map(tuple, data["query"])) == query
            if host is not None:
                assert (data["host"], data["port"]) == host


def _every_server(cases: list[Any], common: Callable[..., Outcome]) -> list[Any]:
    """Each of ``cases`` (pytest params: the target, then what ``common`` makes
    the outcome of) for each server, with that server's outcome: the common
    one, or the one it ``differs`` with for that case's id."""
    params = []
    for name, spec in SERVERS.items():
        for case in cases:
            assert isinstance(case.id, str)
            target, *_ = case.values
            expected = spec.differs.get(case.id) or common(*case.values)
            params.append(P(name, target, expected, id=f"{name}-{case.id}"))
    return params


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


@pytest.mark.parametrize(("name", "target", "expected"), _every_server(ACCEPTED, Accepted))
def test_accepted(servers: Pool, name: str, target: bytes, expected: Outcome) -> None:
    response = send(servers, name, target, headers=[JSON])
    assert_outcome(response, target, expected, as_json=True)
    if isinstance(expected, Accepted):
        assert response.json()["routed"] is True


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
    P(b"/ECHOME%E2%80%AE", "forbidden-char", id="%E2%80%AE (right-to-left override)"),
    P(b"/ECHOME%252F", "double-encoding", id="%252F"),
    P(b"/ECHOME\\x", "raw-char", id="raw backslash"),
    P(b'/ECHOME"<>', "raw-char", id="raw quote and angle brackets"),
    P(b"/ECHOME{x}|^`", "raw-char", id="raw braces, pipe, caret, backtick"),
    P(b'/ECHOME"x', "raw-char", id="raw quote in the path"),
    P(b"/ECHOME>x", "raw-char", id="raw > in the path"),
    P(b"/ECHOME`x", "raw-char", id="raw backtick in the path"),
    P(b"/ECHOME{}|^x", "raw-char", id="raw braces, pipe, caret in the path"),
    P(b'/x?ECHOME="', "raw-char", id="raw quote in the query"),
    P(b"/x?ECHOME=<", "raw-char", id="raw < in the query"),
    P(b"/x?ECHOME=`", "raw-char", id="raw backtick in the query"),
    P(b"/ECHOME" + b"/a" * 130, "too-many", id="130 segments"),
    P(b"/ECHOME?" + b"a&" * 1001, "too-many", id="1001 params"),
]


@pytest.mark.parametrize("accept", [P(JSON, id="json"), P(TEXT, id="text")])
@pytest.mark.parametrize(
    ("name", "target", "expected"), _every_server(REJECTED, lambda target, rule: Rejected(rule))
)
def test_rejected(
    servers: Pool, name: str, target: bytes, expected: Outcome, accept: tuple[bytes, bytes]
) -> None:
    response = send(servers, name, target, headers=[accept])
    assert_outcome(response, target, expected, as_json=accept == JSON)


def test_differences_name_common_cases() -> None:
    ids = {case.id for case in [*ACCEPTED, *REJECTED, *WEBSOCKET]}
    for spec in SERVERS.values():
        assert set(spec.differs) <= ids


# --- where servers differ: refused, rejected or accepted -----------------------------------

QUIRK_CASES = [P(name, quirk, id=f"{name}-{quirk}") for name in GUARDED for quirk in QUIRKS]


@pytest.mark.parametrize(("name", "quirk"), QUIRK_CASES)
def test_server_specific(servers: Pool, name: str, quirk: str) -> None:
    method, target = QUIRKS[quirk]
    response = send(servers, name, target, method=method, headers=[JSON])
    assert_outcome(response, target, SERVERS[name].quirks[quirk], as_json=True)


def test_every_server_has_every_quirk() -> None:
    for spec in SERVERS.values():
        assert set(spec.quirks) == set(QUIRKS)


# --- OPTIONS * -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*GUARDED, *NO_RAW])
def test_options_star_passes_through(servers: Pool, name: str) -> None:
    data = app_json(send(servers, name, b"*", method=b"OPTIONS"))
    assert data["segments"] is None  # reached the app, with no target stored


# --- the mount point: root_path, SCRIPT_NAME ------------------------------------------------

# The same Target for a request for the mount point itself and for it and its slash.
ITSELF = Accepted(b"/", ("",))
MOUNTED: dict[str, list[Any]] = {
    # uvicorn glues root_path in front of what the client sent: what follows is
    # the client's own path, below the mount point.
    f"uvicorn-h11 --root-path '{ROOT}'": [
        P(b"/x", Accepted(b"/x", ("x",)), id="below"),
        P(b"/", ITSELF, id="the mount point and its slash"),
        P(b"?q=1", Accepted(b"/?q=1", ("",), (("q", "1"),)), id="the mount point itself"),
        P(b"/my%20app/x", Accepted(b"/my%20app/x", ("my app", "x")), id="the client's path"),
        P(b"/x/%2E%2E", Rejected("dot-segment", exact=False), id="judged below"),
    ],
    # hypercorn, daphne, granian and waitress hand over the target as sent.
    f"hypercorn --root-path '{ROOT}'": [
        P(b"/my%20app/x", Accepted(b"/x", ("x",)), id="below, compared decoded"),
        P(b"/%6Dy%20app/x?q=1", Accepted(b"/x?q=1", ("x",), (("q", "1"),)), id="escaped"),
        P(b"/my%20app", ITSELF, id="the mount point itself"),
        P(b"/my%20app/", ITSELF, id="the mount point and its slash"),
        P(b"/my%20appx", Accepted(b"/my%20appx", ("my appx",)), id="not below"),
        P(b"/other", Accepted(b"/other", ("other",)), id="elsewhere, judged whole"),
        P(b"/my%20app/%2E%2E", Rejected("dot-segment", exact=False), id="judged below"),
    ],
    f"waitress --url-prefix '{ROOT}'": [
        P(b"/my%20app/x", Accepted(b"/x", ("x",)), id="below, compared decoded"),
        P(b"/my%20app", ITSELF, id="the mount point itself"),
        P(b"/my%20app?q=1", Accepted(b"/?q=1", ("",), (("q", "1"),)), id="itself, a query"),
        P(b"/my%20app/", ITSELF, id="the mount point and its slash"),
        P(b"/my%20app/%2E%2E", Rejected("dot-segment", exact=False), id="judged below"),
    ],
}


@pytest.mark.parametrize(
    ("name", "target", "expected"),
    [
        P(name, *case.values, id=f"{name}: {case.id}")
        for name, cases in MOUNTED.items()
        for case in cases
    ],
)
def test_mount_point(servers: Pool, name: str, target: bytes, expected: Outcome) -> None:
    response = send(servers, name, target, headers=[JSON])
    assert_outcome(response, target, expected, as_json=True)


# --- kept separators: the parts inside a decoded segment ------------------------------------

# e2e_apps/kept_separators.py keeps %2F and %5C in a decoded segment and
# accepts a raw '\', application-wide; its route /admin/ rejects %2F again.
# Each server runs it at the root or below the mount point /m.


@dataclass(frozen=True)
class Kept:
    """A server running kept_separators: ``prefix`` goes before every target to
    reach the application's ``/`` (uvicorn glues its ``--root-path`` in front
    of what it is sent itself)."""

    process: str
    prefix: bytes = b""
    http2: bool = False


KEPT_SERVERS: dict[str, Kept] = {
    "waitress": Kept("waitress (kept)"),
    "uvicorn-h11": Kept("uvicorn-h11 (kept)"),
    "hypercorn": Kept("hypercorn (kept)"),
    "hypercorn (h2c)": Kept("hypercorn (kept)", http2=True),
    "waitress --url-prefix /m": Kept("waitress --url-prefix /m (kept)", b"/m"),
    "uvicorn-h11 --root-path /m": Kept("uvicorn-h11 --root-path /m (kept)"),
    "hypercorn --root-path /m": Kept("hypercorn --root-path /m (kept)", b"/m"),
    "hypercorn --root-path /m (h2c)": Kept("hypercorn --root-path /m (kept)", b"/m", http2=True),
    "Starlette Mount /m": Kept("uvicorn-h11, Starlette Mount /m (kept)", b"/m"),
}
KEPT_CASES = [
    # target below the application's "/" -> the rule, or the segments
    P(rb"/files/a\..\..\secret.txt", "dot-segment", id="raw backslashes around .."),
    P(rb"/files/\\server\share", "empty-segment", id="a UNC path"),
    P(b"/files/c:%2Fwindows%2Fwin.ini", "drive-letter", id="c: then %2F"),
    P(b"/files/C:%5Cwindows", "drive-letter", id="C: then %5C"),
    P(b"/files/..%2Fx", "dot-segment", id="..%2F"),
    P(b"/files/%2Fetc", "empty-segment", id="%2F first"),
    P(b"/;/admin", "empty-segment", id="a segment of a raw ;"),
    P(b"/admin/a%2Fb", "encoded-slash", id="%2F under /admin/"),
    P(b"/files/a:b%2Fc", ("files", "a:b/c"), id="a colon after more than a letter"),
    P(rb"/files/a\b%5Cc", ("files", "a\\b\\c"), id="backslashes kept"),
]


@pytest.fixture
def kept(servers: Pool) -> Pool:
    """The pool, with every server running kept_separators started (at once)."""
    servers.start(*dict.fromkeys(server.process for server in KEPT_SERVERS.values()))
    return servers


def _kept_truth(target: bytes) -> InvalidTarget:
    """What urlguard says about ``target`` under the policy kept_separators gives it."""
    policy = kept_separators.POLICY
    if target.startswith(b"/admin/"):
        policy = policy.replace(**kept_separators.ROUTES["/admin/"])
    with pytest.raises(InvalidTarget) as info:
        parse_target(target, policy)
    return info.value


@pytest.mark.parametrize(
    ("name", "target", "expected"),
    [
        P(name, *case.values, id=f"{name}: {case.id}")
        for name in KEPT_SERVERS
        for case in KEPT_CASES
    ],
)
def test_kept_separators(
    kept: Pool, name: str, target: bytes, expected: str | tuple[str, ...]
) -> None:
    server = KEPT_SERVERS[name]
    port = kept(server.process).port
    wire = server.prefix + target
    if server.http2:
        response: rawhttp.Response = rawh2.request(port, wire, headers=[JSON])
    else:
        response = rawhttp.request(port, wire, headers=[JSON])
    if isinstance(expected, tuple):
        assert_outcome(response, wire, Accepted(target, expected), as_json=True)
        return
    assert_rejection(response, wire, expected, as_json=True, exact=False)
    truth = _kept_truth(target)  # judged below the mount point
    problem = response.json()
    assert (problem["component"], problem["index"], problem["offset"]) == (
        truth.component,
        truth.index,
        truth.offset,
    )


# Where an escape hides the mount point's boundary: below /m, /m%2Fadmin/x is
# /admin/x to the application (it routes on the decoded path), so it must pass
# the /admin/ policy too. uvicorn glues /m in front of what it is sent: there
# the client sends %2Fadmin/..., and /m%2Fadmin/... is a request for /m/admin/...
BOUNDARY = [
    # server, what is sent -> the outcome
    P("hypercorn --root-path /m (kept)", b"/m%2Fadmin/caf%C3%A9", "encoded-slash", id="hypercorn"),
    P("uvicorn-h11 --root-path /m (kept)", b"%2Fadmin/caf%C3%A9", "encoded-slash", id="uvicorn"),
    P("uvicorn-h11, Starlette Mount /m (kept)", b"/m%2Fadmin/caf%C3%A9", "encoded-slash",
      id="Starlette Mount"),
    P("waitress --url-prefix /m (kept)", b"/m%2Fadmin/caf%C3%A9", "encoded-slash", id="waitress"),
    # no stricter route below the boundary: the escape stays in the segment
    P("hypercorn --root-path /m (kept)", b"/m%2Ffiles/caf%C3%A9",
      Accepted(b"/m%2Ffiles/caf%C3%A9", ("m/files", "café")), id="hypercorn, not /admin/"),
    P("uvicorn-h11, Starlette Mount /m (kept)", b"/m%2Ffiles/caf%C3%A9",
      Accepted(b"/m%2Ffiles/caf%C3%A9", ("m/files", "café")), id="Starlette Mount, not /admin/"),
    P("waitress --url-prefix /m (kept)", b"/m%2Ffiles/caf%C3%A9",
      Accepted(b"/m%2Ffiles/caf%C3%A9", ("m/files", "café")), id="waitress, not /admin/"),
    P("uvicorn-h11 --root-path /m (kept)", b"/m%2Fadmin/caf%C3%A9",
      Accepted(b"/m%2Fadmin/caf%C3%A9", ("m/admin", "café")), id="uvicorn, /m/m/admin/..."),
]  # fmt: skip


@pytest.mark.parametrize(("process", "target", "expected"), BOUNDARY)
def test_mount_point_boundary(
    kept: Pool, process: str, target: bytes, expected: str | Accepted
) -> None:
    response = rawhttp.request(kept(process).port, target, headers=[JSON])
    if isinstance(expected, Accepted):
        assert_outcome(response, target, expected, as_json=True)
    else:
        assert_rejection(response, target, expected, as_json=True, exact=False)


# --- HTTP/2: :path is origin-form ------------------------------------------------------------


@pytest.mark.parametrize(
    ("process", "target"),
    [
        P("hypercorn", b"http://evil.example/x", id="hypercorn"),
        P("hypercorn (kept)", b"https://evil.example/files/a%2Fb?q=1", id="hypercorn, kept"),
        P("hypercorn --root-path /m (kept)", b"http://evil.example/m/x", id="hypercorn, below /m"),
    ],
)
@pytest.mark.parametrize("accept", [P(JSON, id="json"), P(TEXT, id="text")])
def test_http2_absolute_form_path_is_bad_form(
    kept: Pool, process: str, target: bytes, accept: tuple[bytes, bytes]
) -> None:
    """RFC 9113 §8.3.1: hypercorn hands an absolute URL in :path to the
    application, ``path`` the whole of it; urlguard answers bad-form. The same
    target over HTTP/1.1 is absolute-form, judged on its path."""
    server = kept(process)
    response = rawh2.request(server.port, target, headers=[accept])
    assert_rejection(response, target, "bad-form", as_json=accept == JSON, exact=False)
    if accept == JSON:
        problem = response.json()
        assert (problem["component"], problem["index"], problem["offset"]) == ("target", None, 0)
    logged = "rule=bad-form component=target index=- offset=0 client="
    lines = [line for line in server.output().splitlines() if logged in line]
    assert lines
    assert lines[-1].endswith(f" target={target.decode()}")
    assert app_json(rawhttp.request(server.port, target, headers=[JSON]))["raw"] == target.decode()


# --- keep-alive: a rejection, then a good request on the same connection ------------------

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
KINDS = ["GET", "HEAD", "POST with a request as its body"]


def _first(kind: str, port: int) -> bytes:
    if kind == "POST with a request as its body":
        length = (b"Content-Length", str(len(SMUGGLED)).encode())
        head = rawhttp.build_request(
            port, b"/ECHOME%zz", method=b"POST", headers=[length], close=False
        )
        return head + SMUGGLED
    return rawhttp.build_request(port, b"/ECHOME%zz", method=kind.encode(), close=False)


def _conversation(servers: Pool, name: str, kind: str) -> list[rawhttp.Response]:
    port = servers(name).port
    if SERVERS[name].http2:
        # Streams one after another on one connection; no body can smuggle anything.
        streams = [(kind.encode(), b"/ECHOME%zz", ())]
        streams += [(b"GET", target, ()) for target in (b"/ok?n=1", b"/ECHOME/../x", b"/ok?n=2")]
        return list(rawh2.converse(port, streams))
    messages = [
        _first(kind, port),
        rawhttp.build_request(port, b"/ok?n=1", close=False),
        rawhttp.build_request(port, b"/ECHOME/../x", close=False),
        rawhttp.build_request(port, b"/ok?n=2"),
    ]
    return rawhttp.converse(port, messages)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        P(name, kind, id=f"{name}-{kind}")
        for name, spec in SERVERS.items()
        for kind in KINDS
        if not (spec.http2 and kind.startswith("POST"))
    ],
)
def test_keep_alive_rejection_then_good_request(servers: Pool, name: str, kind: str) -> None:
    bad, good, bad2, good2 = _conversation(servers, name, kind)
    assert bad.status == 400
    assert MARK not in bad.body
    if kind == "HEAD":
        assert bad.header(b"content-length") not in (None, b"0")
        assert bad.body == b""
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


# --- websocket handshakes -----------------------------------------------------------------

UPGRADE = [
    (b"Upgrade", b"websocket"),
    (b"Connection", b"Upgrade"),
    (b"Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ=="),
    (b"Sec-WebSocket-Version", b"13"),
]
WS_SERVERS = [name for name, spec in SERVERS.items() if spec.websocket]
WEBSOCKET = [
    P(b"/ws/ECHOME%zz", Rejected("malformed-escape"), id="websocket %zz"),
    P(b"/ws/ECHOME%2Fx", Rejected("encoded-slash"), id="websocket %2F"),
    P(b"/ws/x?ECHOME=%C4", Rejected("invalid-utf8"), id="websocket bad utf-8 in query"),
    P(b"/ws/ECHOME/%2E%2E", Rejected("dot-segment"), id="websocket dot-dot"),
    # uvicorn with httptools drops '#...' from HTTP requests, not from handshakes.
    P(b"/ws/x#ECHOME", Rejected("fragment"), id="websocket fragment"),
    P(
        b"/ws/caf%C3%A9?q=1",
        Accepted(b"/ws/caf%C3%A9?q=1", ("ws", "café"), (("q", "1"),)),
        id="websocket accepted",
    ),
]


def handshake(
    port: int, target: bytes, *, hosts: Sequence[bytes] | None = None
) -> tuple[rawhttp.Response, dict[str, Any] | None]:
    """A websocket handshake for ``target`` (with those Host lines, as
    :func:`rawhttp.build_request` takes them); after a 101, the first message
    the app sends (its JSON echo), read from the first frame (RFC 6455 §5.2)."""
    data = rawhttp.build_request(port, target, headers=[*UPGRADE, TEXT], close=False, hosts=hosts)
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
        sock.sendall(data)
        buffer = b""

        def need(size: int) -> None:
            nonlocal buffer
            while len(buffer) < size:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ValueError(f"closed after {len(buffer)} bytes: {buffer[:200]!r}")
                buffer += chunk

        while b"\r\n\r\n" not in buffer:
            need(len(buffer) + 1)
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        status_line, *lines = head.split(b"\r\n")
        headers = tuple((k.strip(), v.strip()) for k, _, v in (x.partition(b":") for x in lines))
        status = int(status_line.split(b" ", 2)[1])
        length = next((int(v) for k, v in headers if k.lower() == b"content-length"), 0)
        if status != 101:
            need(length)
            return rawhttp.Response(status, headers=headers, body=buffer[:length]), None
        need(2)
        size, start = buffer[1] & 0x7F, 2  # a server's frames are not masked
        if size == 126:
            need(4)
            size, start = int.from_bytes(buffer[2:4], "big"), 4
        need(start + size)
        assert buffer[0] == 0x81  # FIN, text
        return rawhttp.Response(status, headers=headers), json.loads(buffer[start : start + size])


def _websocket_params() -> list[Any]:
    """Each websocket case for each server that takes websockets, with that
    server's outcome: the common one, or the one it ``differs`` with."""
    params = []
    for name in WS_SERVERS:
        for case in WEBSOCKET:
            target, common = case.values
            expected = SERVERS[name].differs.get(str(case.id), common)
            params.append(P(name, target, expected, id=f"{name}-{case.id}"))
    return params


@pytest.mark.parametrize(("name", "target", "expected"), _websocket_params())
def test_websocket_handshake(servers: Pool, name: str, target: bytes, expected: Outcome) -> None:
    server = servers(name)
    response, echo = handshake(server.port, target)
    match expected:
        case Accepted(raw, segments, query):
            assert response.status == 101
            assert echo is not None
            assert (echo["raw"], tuple(echo["segments"])) == (raw.decode("latin-1"), segments)
            assert tuple(map(tuple, echo["query"])) == query
        case Rejected(rule) if SERVERS[name].websocket == "close":
            # Closed before accept (1008): the server answers the handshake with 403.
            assert response.status == 403
            assert MARK not in response.body
            assert f"rule={rule} " in server.output()
        case _:
            assert_outcome(response, target, expected, as_json=False)


# --- the host: Host header, absolute-form authority, :authority --------------------------
#
# RFC 9112 §3.2: an HTTP/1.1 request without Host, with more than one Host line,
# or with an invalid Host gets 400; HTTP/1.0 may leave Host out. RFC 9113
# §8.3.1: an HTTP/2 request names its host in :authority, and a host header
# beside it must name the same one. Each row below is sent to each server; the
# outcome is urlguard's (bad-host, host-not-allowed, or the handler reading
# Target.host and Target.port), unless the server refuses the request itself
# or hands over something other than what was sent.


@dataclass(frozen=True)
class HostRequest:
    """One request as a client writes it: HTTP/1.1 ``target`` with the Host lines
    ``hosts`` (``None``: the one a client sends, ``()``: none), or the same as
    HTTP/1.0; over HTTP/2, ``:authority`` and the ``host`` headers ``hosts``.
    ``listed``: sent to the server running e2e_apps/allowed_hosts.py."""

    hosts: tuple[bytes, ...] | None
    target: bytes = b"/x"
    http10: bool = False
    authority: bytes | None = None
    listed: bool = False


def _one(host: bytes) -> HostRequest:
    return HostRequest((host,))


BAD_HOST = Rejected("bad-host")
NOT_ALLOWED = Rejected("host-not-allowed")
ABSOLUTE = b"http://good.example.com/x"
LISTED_ABSOLUTE = b"http://app.example.com/x"  # a name e2e_apps/allowed_hosts.py allows

HOST_REQUESTS: dict[str, HostRequest] = {
    "no Host": HostRequest(()),
    "no Host, HTTP/1.0": HostRequest((), http10=True),
    "two Host lines": HostRequest((b"a.example.com", b"evil.example")),
    "the same Host twice": HostRequest((b"a.example.com", b"a.example.com")),
    "Host a b": _one(b"a b"),
    "Host user@evil": _one(b"user@evil.example"),
    "Host evil/x": _one(b"evil.example/x"),
    "empty Host": _one(b""),
    "non-ASCII Host": _one(b"caf\xc3\xa9.example"),
    "Host <script>": _one(b"<script>"),
    "Host 0x7f.1": _one(b"0x7f.1"),
    "Host folded (obs-fold)": _one(b"a.example.com\r\n evil"),
    "invalid Host, HTTP/1.0": HostRequest((b"a b",), http10=True),
    "valid Host": _one(b"App.Example.COM:8080"),
    "valid IPv6 Host": _one(b"[::1]:8000"),
    "IPv6 Host, another spelling": _one(b"[0:0::01]:8000"),
    "Host with port 0": _one(b"a.example.com:0"),
    "empty Host, HTTP/1.0": HostRequest((b"",), http10=True),
    "absolute-form, the same Host": HostRequest(None, ABSOLUTE),
    "absolute-form, Host with the default port": HostRequest((b"good.example.com:80",), ABSOLUTE),
    "absolute-form, another Host": HostRequest((b"good.example.com",), b"http://evil.example/x"),
    "absolute-form, no Host": HostRequest((), ABSOLUTE),
    "absolute-form, no Host, HTTP/1.0": HostRequest((), ABSOLUTE, http10=True),
    "allowed_hosts: a miss": HostRequest((b"evil.example",), listed=True),
    "allowed_hosts: no Host, HTTP/1.0": HostRequest((), http10=True, listed=True),
    "allowed_hosts: absolute-form miss, no Host, HTTP/1.0": HostRequest(
        (), b"http://evil.example/x", http10=True, listed=True
    ),
    "allowed_hosts: absolute-form listed, no Host, HTTP/1.0": HostRequest(
        (), LISTED_ABSOLUTE, http10=True, listed=True
    ),
    "allowed_hosts: a name below example.com": HostRequest((b"app.example.com",), listed=True),
}

# What urlguard answers when the server hands the request over as sent.
_HOST_COMMON: dict[str, Outcome] = {
    "no Host": BAD_HOST,
    "no Host, HTTP/1.0": Accepted(b"/x", ("x",), host=(None, None)),
    "two Host lines": BAD_HOST,
    "the same Host twice": BAD_HOST,
    "Host a b": BAD_HOST,
    "Host user@evil": BAD_HOST,
    "Host evil/x": BAD_HOST,
    "empty Host": BAD_HOST,
    "non-ASCII Host": BAD_HOST,
    "Host <script>": BAD_HOST,
    "Host 0x7f.1": BAD_HOST,
    "Host folded (obs-fold)": BAD_HOST,  # unfolded to 'a.example.com evil'
    "invalid Host, HTTP/1.0": BAD_HOST,
    "valid Host": Accepted(b"/x", ("x",), host=("app.example.com", 8080)),
    "valid IPv6 Host": Accepted(b"/x", ("x",), host=("[::1]", 8000)),
    "IPv6 Host, another spelling": Accepted(b"/x", ("x",), host=("[::1]", 8000)),
    "Host with port 0": BAD_HOST,
    "empty Host, HTTP/1.0": BAD_HOST,
    "absolute-form, the same Host": Accepted(ABSOLUTE, ("x",), host=("good.example.com", None)),
    "absolute-form, Host with the default port": Accepted(
        ABSOLUTE, ("x",), host=("good.example.com", 80)
    ),
    "absolute-form, another Host": BAD_HOST,
    "absolute-form, no Host": BAD_HOST,
    # HTTP/1.0 without Host: the host is the target's authority (RFC 9112 §3.2.2).
    "absolute-form, no Host, HTTP/1.0": Accepted(ABSOLUTE, ("x",), host=("good.example.com", None)),
    "allowed_hosts: a miss": NOT_ALLOWED,
    "allowed_hosts: a name below example.com": Accepted(
        b"/x", ("x",), host=("app.example.com", None)
    ),
    # An application that lists its hosts serves no unnamed one.
    "allowed_hosts: no Host, HTTP/1.0": NOT_ALLOWED,
    "allowed_hosts: absolute-form miss, no Host, HTTP/1.0": NOT_ALLOWED,
    "allowed_hosts: absolute-form listed, no Host, HTTP/1.0": Accepted(
        LISTED_ABSOLUTE, ("x",), host=("app.example.com", None)
    ),
}
# httptools and granian hand over only the path of an absolute-form target:
# what the Host header names is all there is to check, and the handler reads it.
_HOST_REDUCED: dict[str, Outcome] = {
    "absolute-form, the same Host": Accepted(b"/x", ("x",), host=("good.example.com", None)),
    "absolute-form, Host with the default port": Accepted(
        b"/x", ("x",), host=("good.example.com", 80)
    ),
    "absolute-form, another Host": Accepted(b"/x", ("x",), host=("good.example.com", None)),
}
# httptools hands over only the path and no Host: the request names no host at
# all, which HTTP/1.0 allows; with an allow-list, that is host-not-allowed.
_HOST_HTTPTOOLS: dict[str, Outcome] = {
    **_HOST_REDUCED,
    "absolute-form, no Host, HTTP/1.0": Accepted(b"/x", ("x",), host=(None, None)),
    "allowed_hosts: absolute-form listed, no Host, HTTP/1.0": NOT_ALLOWED,
}
# granian gives a request without Host a host header: the target's authority
# when it is in absolute form (and only the path), else an empty value. So
# under granian an HTTP/1.0 request without Host cannot be told from one with
# an empty Host, and gets bad-host as that one does (with an allow-list too).
_HOST_GRANIAN: dict[str, Outcome] = {
    **_HOST_REDUCED,
    "no Host, HTTP/1.0": BAD_HOST,
    "absolute-form, no Host": Accepted(b"/x", ("x",), host=("good.example.com", None)),
    "absolute-form, no Host, HTTP/1.0": Accepted(b"/x", ("x",), host=("good.example.com", None)),
    "allowed_hosts: no Host, HTTP/1.0": BAD_HOST,
    "allowed_hosts: absolute-form listed, no Host, HTTP/1.0": Accepted(
        b"/x", ("x",), host=("app.example.com", None)
    ),
}
# h11 (uvicorn's and hypercorn's parser) refuses a missing or repeated Host itself.
_HOST_H11: dict[str, Outcome] = {
    **_HOST_COMMON,
    **{
        case: Refused(400)
        for case in ("no Host", "two Host lines", "the same Host twice", "absolute-form, no Host")
    },
}

HOST_SERVERS: dict[str, dict[str, Outcome]] = {
    "uvicorn-h11": _HOST_H11,
    "uvicorn-httptools": {
        **_HOST_COMMON,
        **_HOST_HTTPTOOLS,
        "Host folded (obs-fold)": Refused(400),
    },
    "hypercorn": _HOST_H11,
    "granian": {
        **_HOST_COMMON,
        **_HOST_GRANIAN,
        "Host folded (obs-fold)": Refused(400),
    },
    "daphne": _HOST_COMMON,
    "gunicorn-sync": {
        **_HOST_COMMON,
        **{
            case: Refused(400)
            for case in ("two Host lines", "the same Host twice", "Host folded (obs-fold)")
        },
    },
    "waitress": _HOST_COMMON,  # merges two Host lines into 'a, b': urlguard refuses that
}

# Over HTTP/2 the request names its host in :authority; a host header may
# come beside it. AUTHORITY: the :authority a client sends for these.
AUTHORITY = b"h2.example.com"
HOST_REQUESTS_H2: dict[str, HostRequest] = {
    ":authority": HostRequest((), authority=b"App.Example.com:8443"),
    ":authority and the same host": HostRequest((AUTHORITY,), authority=AUTHORITY),
    ":authority and another host": HostRequest((b"evil.example",), authority=AUTHORITY),
    "two host headers": HostRequest((b"a.example.com", b"evil.example"), authority=AUTHORITY),
    "the same host header twice": HostRequest((AUTHORITY, AUTHORITY), authority=AUTHORITY),
    ":authority a b": HostRequest((), authority=b"a b"),
    ":authority <script>": HostRequest((), authority=b"<script>"),
    ":authority 0x7f.1": HostRequest((), authority=b"0x7f.1"),
    "empty :authority": HostRequest((), authority=b""),
    ":authority, IPv6 in another spelling": HostRequest((), authority=b"[0:0::01]:8443"),
    "allowed_hosts: a miss": HostRequest((), authority=b"evil.example", listed=True),
    "allowed_hosts: a name below example.com": HostRequest(
        (), authority=b"app.example.com", listed=True
    ),
}
_H2_COMMON: dict[str, Outcome] = {
    ":authority": Accepted(b"/x", ("x",), host=("app.example.com", 8443)),
    ":authority and the same host": Accepted(b"/x", ("x",), host=(AUTHORITY.decode(), None)),
    ":authority 0x7f.1": BAD_HOST,
    ":authority, IPv6 in another spelling": Accepted(b"/x", ("x",), host=("[::1]", 8443)),
    "allowed_hosts: a miss": Rejected("host-not-allowed"),
    "allowed_hosts: a name below example.com": Accepted(
        b"/x", ("x",), host=("app.example.com", None)
    ),
}
HOST_SERVERS_H2: dict[str, dict[str, Outcome]] = {
    "hypercorn (h2c)": {
        **_H2_COMMON,
        # The h2 library under hypercorn refuses any host header that is not
        # the only one and the same as :authority: the connection closes.
        ":authority and another host": Refused("dropped"),
        "two host headers": Refused("dropped"),
        "the same host header twice": Refused("dropped"),
        ":authority a b": BAD_HOST,
        ":authority <script>": BAD_HOST,
        "empty :authority": BAD_HOST,
    },
    "granian (h2c)": {
        **_H2_COMMON,
        # granian drops :authority when a host header comes with it, so the
        # disagreement never reaches the application: the handler reads the
        # host header's name, validated.
        ":authority and another host": Accepted(b"/x", ("x",), host=("evil.example", None)),
        "two host headers": BAD_HOST,
        "the same host header twice": Accepted(b"/x", ("x",), host=(AUTHORITY.decode(), None)),
        ":authority a b": Refused("reset"),
        ":authority <script>": Refused("reset"),
        "empty :authority": Refused("reset"),
    },
}


def test_every_server_has_every_host_case() -> None:
    for table in HOST_SERVERS.values():
        assert set(table) == set(HOST_REQUESTS)
    for table in HOST_SERVERS_H2.values():
        assert set(table) == set(HOST_REQUESTS_H2)


def assert_host_outcome(response: rawhttp.Response, sent: HostRequest, expected: Outcome) -> None:
    """As :func:`assert_outcome`, with urlguard's rejection judged on the host:
    the rule, component ``host``, and no hostile host echoed."""
    if not isinstance(expected, Rejected):
        assert_outcome(response, sent.target, expected, as_json=True)
        return
    assert response.status == 400, (response.status, response.text[:300])
    assert response.header(b"content-type") == PROBLEM
    assert response.header(b"content-length") == str(len(response.body)).encode()
    problem = response.json()
    assert (problem["status"], problem["rule"], problem["component"]) == (
        400,
        expected.rule,
        "host",
    )
    assert problem["detail"].startswith(f"{expected.rule}: ")
    for value in (*(sent.hosts or ()), sent.authority or b""):
        if value:
            assert value not in response.body


def _listed(name: str) -> str:
    """The process running e2e_apps/allowed_hosts.py that stands for ``name``."""
    return f"{SERVERS[name].process} (allowed_hosts)"


@pytest.fixture
def hosts(servers: Pool) -> Pool:
    """The pool, with every server the host tables speak to started (at once)."""
    names = [*HOST_SERVERS, *HOST_SERVERS_H2]
    servers.start(
        *dict.fromkeys(p for name in names for p in (SERVERS[name].process, _listed(name)))
    )
    return servers


@pytest.mark.parametrize(
    ("name", "case", "expected"),
    [
        P(name, case, expected, id=f"{name}-host-{case}")
        for name, table in HOST_SERVERS.items()
        for case, expected in table.items()
    ],
)
def test_host(hosts: Pool, name: str, case: str, expected: Outcome) -> None:
    sent = HOST_REQUESTS[case]
    port = hosts(_listed(name) if sent.listed else name).port
    if sent.http10:
        lines = [b"GET " + sent.target + b" HTTP/1.0"]
        lines += [b"Host: " + host for host in sent.hosts or ()]
        lines += [b"Accept: application/json", b"", b""]
        response = rawhttp.exchange(port, b"\r\n".join(lines))
    else:
        response = rawhttp.request(port, sent.target, headers=[JSON], hosts=sent.hosts)
    assert_host_outcome(response, sent, expected)


@pytest.mark.parametrize(
    ("name", "case", "expected"),
    [
        P(name, case, expected, id=f"{name}-host-{case}")
        for name, table in HOST_SERVERS_H2.items()
        for case, expected in table.items()
    ],
)
def test_host_http2(hosts: Pool, name: str, case: str, expected: Outcome) -> None:
    sent = HOST_REQUESTS_H2[case]
    port = hosts(_listed(name) if sent.listed else name).port
    headers = [*((b"host", host) for host in sent.hosts or ()), JSON]
    response = rawh2.request(port, sent.target, headers=headers, authority=sent.authority)
    assert_host_outcome(response, sent, expected)


def test_host_granian_http2_hides_authority(hosts: Pool) -> None:
    """Behind granian the handler cannot tell that :authority was another
    name: the application's scope holds only the host header."""
    port = hosts("granian (h2c)").port
    response = rawh2.request(
        port, b"/x", headers=[(b"host", b"evil.example"), JSON], authority=AUTHORITY
    )
    data = app_json(response)
    assert data["server"]["host"] == ["evil.example"]
    assert data["server"]["http_version"] == "2"


# A websocket handshake's host gets the same checks.
WS_HOST: dict[str, HostRequest] = {
    "Host a b": _one(b"a b"),
    "Host <script>": _one(b"<script>"),
    "no Host": HostRequest(()),
    "two Host lines": HostRequest((b"a.example.com", b"evil.example")),
    "valid Host": _one(b"App.example.com:81"),
}
_WS_HOST_COMMON: dict[str, Outcome] = {
    "Host a b": BAD_HOST,
    "Host <script>": BAD_HOST,
    "no Host": BAD_HOST,
    "two Host lines": BAD_HOST,
    "valid Host": Accepted(b"/ws/x", ("ws", "x"), host=("app.example.com", 81)),
}
_WS_SERVER_REFUSES = {"no Host": Refused(400), "two Host lines": Refused(400)}
WS_HOST_SERVERS: dict[str, dict[str, Outcome]] = {
    "uvicorn-h11": {**_WS_HOST_COMMON, **_WS_SERVER_REFUSES},
    "uvicorn-httptools": {**_WS_HOST_COMMON, **_WS_SERVER_REFUSES},
    "hypercorn": {**_WS_HOST_COMMON, **_WS_SERVER_REFUSES},
    "granian": _WS_HOST_COMMON,
    # daphne (autobahn) refuses a handshake without Host itself; two Host
    # lines reach urlguard joined by ','.
    "daphne": {**_WS_HOST_COMMON, "no Host": Refused(400)},
}


@pytest.mark.parametrize(
    ("name", "case", "expected"),
    [
        P(name, case, expected, id=f"{name}-websocket host-{case}")
        for name, table in WS_HOST_SERVERS.items()
        for case, expected in table.items()
    ],
)
def test_websocket_host(hosts: Pool, name: str, case: str, expected: Outcome) -> None:
    server = hosts(name)
    sent = WS_HOST[case]
    response, echo = handshake(server.port, b"/ws/x", hosts=sent.hosts)
    match expected:
        case Accepted(raw, segments, _, _, host):
            assert response.status == 101
            assert echo is not None
            assert (echo["raw"], tuple(echo["segments"])) == (raw.decode(), segments)
            assert (echo["host"], echo["port"]) == host
        case Rejected(rule) if SERVERS[name].websocket == "close":
            # Closed before accept (1008): the server answers the handshake with 403.
            assert response.status == 403
            # Logged as a host rejection, with its cause (a malformed or a repeated Host).
            assert re.search(
                rf"rejected host: rule={rule} cause=(malformed|repeated) component=host ",
                server.output(),
            )
        case Rejected(rule):
            assert response.status == 400
            assert response.header(b"content-type") == PLAIN
            assert response.body.startswith(f"400 Bad Request: {rule}: ".encode())
            for value in sent.hosts or ():
                assert value not in response.body
        case Refused(how):
            assert_refused(response, how)


# --- hostile bytes reach the log escaped, on the servers that let them through ------------


@pytest.mark.parametrize(
    ("name", "target", "logged"),
    [
        P("waitress", b"/ECHOME\x01\x7f\x00\tx", "/ECHOME\\x01\\x7f\\x00\\x09x", id="waitress"),
        P("werkzeug", b"/ECHOME\x01\x7f\x00x", "/ECHOME\\x01\\x7f\\x00x", id="werkzeug-ctrl"),
        P("werkzeug", b"/ECHOME\xc3\xa9\x1b[2J", "/ECHOME\\xc3\\xa9\\x1b[2J", id="werkzeug-utf8"),
        P(
            "granian",
            b"/ECHOME\xe2\x80\xae\xc2\x85",
            "/ECHOME\\xe2\\x80\\xae\\xc2\\x85",
            id="granian",
        ),
        P("hypercorn (h2c)", b"/ECHOME \x01\x7f\tx", "/ECHOME\\x20\\x01\\x7f\\x09x", id="h2c"),
    ],
)
def test_log_line_escapes_raw_bytes(servers: Pool, name: str, target: bytes, logged: str) -> None:
    response = send(servers, name, target, headers=[TEXT])
    assert_rejection(response, target, "raw-char", as_json=False)
    output = servers(name).output()
    lines = [line for line in output.splitlines() if f"target={logged}" in line]
    assert len(lines) == 1, output[-2000:]
    (line,) = lines
    assert "rejected request target: rule=raw-char component=path index=0" in line
    assert "urlguard: rejected" not in line
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
    assert f"the server ({NO_RAW[name]}) provides no raw request target" in server.output()


# Hostile bytes sent to the servers without a raw target (measured): some the
# server refuses itself with its own 400; whatever reaches urlguard gets its
# 501, never a crash.
NO_RAW_HOSTILE = [
    # id, target, then the status from wsgiref, hypercorn (WSGI) and granian (WSGI)
    ("raw 0x01", b"/a\x01b", 501, 400, 400),  # hypercorn and granian refuse control bytes
    ("raw NUL", b"/a\x00b", 501, 400, 400),
    ("raw DEL", b"/a\x7fb", 501, 400, 400),
    ("raw UTF-8", b"/caf\xc3\xa9", 501, 400, 501),  # hypercorn refuses raw UTF-8
    ("raw space", b"/a b", 400, 400, 400),  # every server refuses a space
    ("9000 bytes", b"/" + b"a" * 9000, 501, 501, 501),  # only gunicorn limits the length
    ("escaped invalid UTF-8", b"/%ff%fe", 501, 501, 501),
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
