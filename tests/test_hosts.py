"""The request's host, checked by both middlewares: hand-built ASGI scopes
and WSGI environs, both parsers. The grammar itself is test_host.py's; the
servers, test_servers.py's."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from urlguard import Config, InvalidTarget, Policy, Target
from urlguard._guard.allowed_hosts import VERDICTS, AllowedHosts
from urlguard._url.host import Host
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

P = pytest.param
Headers = list[tuple[bytes, bytes]]


def asgi(
    guard_options: dict[str, Any],
    headers: Headers,
    *,
    raw: bytes = b"/x",
    version: str = "1.1",
    kind: str = "http",
    parser: Any = None,
    times: int = 1,
) -> tuple[int, dict[str, Any]]:
    """The status the guarded app answers (200: it ran) and the scope it saw,
    the last of ``times`` requests to one guard (a host judged once is
    looked up in its verdict table afterwards)."""
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    guard = ASGIGuard(app, parser=parser, **guard_options)
    for _ in range(times):
        seen.clear()
        sent.clear()
        scope = {
            "type": kind,
            "http_version": version,
            "method": "GET",
            "raw_path": raw,
            "path": raw.decode("latin-1"),
            "query_string": b"",
            "root_path": "",
            "headers": list(headers),
        }
        asyncio.run(guard(scope, receive, send))
    status = next((m["status"] for m in sent if "status" in m), 0)
    return status, seen


def wsgi(
    guard_options: dict[str, Any],
    host: str | None,
    *,
    raw: str = "/x",
    protocol: str = "HTTP/1.1",
    parser: Any = None,
) -> tuple[int, dict[str, Any]]:
    seen: dict[str, Any] = {}

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.update(environ)
        start_response("200 OK", [])
        return [b""]

    statuses: list[str] = []
    guard = WSGIGuard(app, parser=parser, **guard_options)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": raw,
        "PATH_INFO": raw,
        "SERVER_PROTOCOL": protocol,
    }
    if host is not None:
        environ["HTTP_HOST"] = host

    def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        statuses.append(status)

    body = guard(environ, start_response)
    b"".join(body)
    return int(statuses[0][:3]), seen


MAPPED = b"[::ffff:7f00:1]"  # IPv4-mapped, its last 32 bits in hex
BUCHER = b"xn--bcher-kva.example"

# (headers, HTTP version, raw target, allowed_hosts, expected: rule or (host, port))
TABLE: list[Any] = [
    P([(b"host", b"example.com")], "1.1", b"/x", None, ("example.com", None), id="a name"),
    P([(b"host", b"Example.COM:8080")], "1.1", b"/x", None, ("example.com", 8080), id="case"),
    P([(b"host", b"[::1]:443")], "1.1", b"/x", None, ("[::1]", 443), id="IPv6"),
    P([], "1.1", b"/x", None, "bad-host", id="HTTP/1.1 without Host"),
    P([], "1.0", b"/x", None, (None, None), id="HTTP/1.0 without Host"),
    P([], "1.0", b"/x", ["example.com"], "host-not-allowed", id="HTTP/1.0, an allow-list"),
    P([(b"host", b"")], "1.0", b"/x", None, "bad-host", id="HTTP/1.0, an empty Host"),
    P([(b"host", b"")], "1", b"/x", None, "bad-host", id="HTTP/1.0 as granian gives it"),
    P([], "1.0", b"http://A.com./x", None, ("a.com", None), id="HTTP/1.0, absolute, no Host"),
    P([], "1.0", b"http://a.com/x", ["a.com"], ("a.com", None), id="HTTP/1.0, absolute, listed"),
    P([], "1.0", b"http://evil.com/x", ["a.com"], "host-not-allowed", id="HTTP/1.0, absolute"),
    P([], "1.0", b"http://a.com:81/x", ["a.com:80"], "host-not-allowed", id="HTTP/1.0, port"),
    P([], "1.0", b"https://a.com/x", ["a.com:443"], "host-not-allowed", id="HTTP/1.0, no port"),
    P([], "1.0", b"http://a b/x", ["a.com"], "bad-host", id="HTTP/1.0, bad authority"),
    P([], "1.0", b"http://evil.com/x", None, ("evil.com", None), id="HTTP/1.0, no list"),
    P([], "1.1", b"http://a.com/x", ["a.com"], "bad-host", id="HTTP/1.1, absolute, no Host"),
    P([(b"host", b"a.com")], "1.0", b"http://evil.com/x", ["a.com"], "bad-host", id="1.0 differ"),
    P([(b"host", b"")], "1.1", b"/x", None, "bad-host", id="HTTP/1.1, an empty Host"),
    P([(b"host", b"a"), (b"host", b"b")], "1.1", b"/x", None, "bad-host", id="two Host lines"),
    P([(b"host", b"a"), (b"host", b"a")], "1.1", b"/x", None, "bad-host", id="the same twice"),
    P([(b"host", b"a, evil")], "1.1", b"/x", None, "bad-host", id="merged by the server"),
    P([(b"host", b"a"), (b"host", b"a")], "2", b"/x", None, ("a", None), id="h2: one value"),
    P([(b"host", b"a"), (b"host", b"b")], "2", b"/x", None, "bad-host", id="h2: disagree"),
    P([(b"host", b"")], "1.1", b"/x", None, "bad-host", id="empty"),
    P([(b"host", b"a b")], "1.1", b"/x", None, "bad-host", id="space"),
    P([(b"host", b"user@evil")], "1.1", b"/x", None, "bad-host", id="userinfo"),
    P([(b"host", b"evil/x")], "1.1", b"/x", None, "bad-host", id="a path"),
    P([(b"host", "café.fr".encode())], "1.1", b"/x", None, "bad-host", id="raw UTF-8"),
    P([(b"host", b"<script>")], "1.1", b"/x", None, "bad-host", id="markup"),
    P([(b"host", b"a%2Eb")], "1.1", b"/x", None, "bad-host", id="an escape"),
    P([(b"host", b"0x7f.1")], "1.1", b"/x", None, "bad-host", id="an IPv4 number"),
    P([(b"host", b"a.com")], "1.1", b"/x", ["a.com"], ("a.com", None), id="allowed"),
    P([(b"host", b"A.com.:80")], "1.1", b"/x", ["a.com"], ("a.com", 80), id="dot, port"),
    P([(b"host", b"a.com")], "1.1", b"/x", ["A.COM."], ("a.com", None), id="entry: dot, case"),
    P([(b"host", b"[0::1]")], "1.1", b"/x", ["[::1]"], ("[::1]", None), id="IPv6 spelling"),
    P([(b"host", b"[::1]")], "1.1", b"/x", ["[0:0::01]"], ("[::1]", None), id="IPv6 entry"),
    P(
        [(b"host", b"[::ffff:7f00:1]")],
        "1.1",
        b"/x",
        None,
        ("[::ffff:127.0.0.1]", None),
        id="v4-mapped",
    ),
    P(
        [(b"host", b"[::ffff:7f00:1]")],
        "1.1",
        b"/x",
        ["127.0.0.1"],
        "host-not-allowed",
        id="not v4",
    ),
    P([(b"host", b"a.com:0")], "1.1", b"/x", None, "bad-host", id="port 0"),
    P(
        [(b"host", b"xn--bcher-kva.example")],
        "1.1",
        b"/x",
        ["BÜCHER.example"],
        ("xn--bcher-kva.example", None),
        id="U-label entry",
    ),
    P([(b"host", b"b.com")], "1.1", b"/x", ["a.com"], "host-not-allowed", id="not allowed"),
    P([(b"host", b"x.a.com")], "1.1", b"/x", ["*.a.com"], ("x.a.com", None), id="wildcard"),
    P([(b"host", b"a.com")], "1.1", b"/x", ["*.a.com"], "host-not-allowed", id="not the apex"),
    P([(b"host", b"xa.com")], "1.1", b"/x", ["*.a.com"], "host-not-allowed", id="a suffix"),
    P([(b"host", b"a.com:81")], "1.1", b"/x", ["a.com:80"], "host-not-allowed", id="port"),
    P([(b"host", b"a.com")], "1.1", b"http://a.com/x", None, ("a.com", None), id="absolute"),
    P([(b"host", b"a.com:80")], "1.1", b"http://a.com/x", None, ("a.com", 80), id="port 80"),
    P([(b"host", b"a.com")], "1.1", b"https://a.com:443/x", None, ("a.com", None), id="443"),
    P([(b"host", b"b.com")], "1.1", b"http://a.com/x", None, "bad-host", id="differs"),
    P([(b"host", b"a.com:81")], "1.1", b"http://a.com/x", None, "bad-host", id="port differs"),
    P([(b"host", b"a.com")], "1.1", b"http://evil%2Ecom/x", None, "bad-host", id="escaped"),
    P([(b"host", b"b.com")], "1.1", b"/x%zz", None, "malformed-escape", id="then the target"),
    P([(b"host", b"b c")], "1.1", b"/x%zz", None, "bad-host", id="the host first"),
]


def _expect(status: int, seen: dict[str, Any], expected: Any) -> None:
    if expected == BROKEN:
        assert status == 500
        assert seen == {}
        return
    if isinstance(expected, str):
        assert status == 400
        assert seen == {}
        return
    assert status == 200
    target = seen["urlguard.target"]
    assert isinstance(target, Target)
    assert (target.host, target.port) == expected


@pytest.mark.parametrize("times", [1, 2], ids=["judged", "from the table"])
@pytest.mark.parametrize(("headers", "version", "raw", "allowed", "expected"), TABLE)
def test_asgi(
    parser: Any,
    headers: Headers,
    version: str,
    raw: bytes,
    allowed: Any,
    expected: Any,
    times: int,
) -> None:
    options = {} if allowed is None else {"allowed_hosts": allowed}
    status, seen = asgi(options, headers, raw=raw, version=version, parser=parser, times=times)
    _expect(status, seen, expected)


# A request whose scope or environ breaks its spec: 500 (see test_broken_*).
BROKEN = "500"

# Headers of shapes no server sends, each read the slow way: those the ASGI
# spec's types allow, and those it does not, refused with 500 (expected:
# rule, BROKEN, or (host, port)).
ODD_HEADERS: list[Any] = [
    P(((b"host", b"a.com"),), ("a.com", None), id="a tuple of pairs"),
    P([[b"host", b"a.com"]], ("a.com", None), id="a list as a pair"),
    P([(bytearray(b"host"), b"a.com")], ("a.com", None), id="a bytearray name"),
    P([(b"host", bytearray(b"a.com"))], ("a.com", None), id="a bytearray value"),
    P([(b"host", bytearray(b"a b"))], "bad-host", id="a bad bytearray value"),
    P([(b"host", "a.com")], BROKEN, id="a str value"),
    P([(b"host", None)], BROKEN, id="no value"),
    P([(b"host", None), (b"host", b"a.com")], BROKEN, id="no value, then one"),
    P([(b"host", 7)], BROKEN, id="a number"),
    P([(b"host", 10**12), (b"host", 10**12)], BROKEN, id="two numbers, never bytes(n)"),
    P({b"host": b"a.com"}, BROKEN, id="a dict"),
    P([(b"host", b"a.com", b"x")], BROKEN, id="a 3-tuple"),
    P([(b"accept", b"*/*", b""), (b"host", b"a.com")], BROKEN, id="a 3-tuple, then host"),
    P("host: a.com", BROKEN, id="a str"),
    P(b"host: a.com", BROKEN, id="bytes"),
    P([b"host"], BROKEN, id="a name alone"),
    P([(b"Host", b"a.com")], "bad-host", id="not lower case: not Host"),
    P([(b"accept", b"*/*"), (b"host", b"a.com"), (b"x", b"y")], ("a.com", None), id="among"),
]


@pytest.mark.parametrize("times", [1, 2], ids=["judged", "from the table"])
@pytest.mark.parametrize(("headers", "expected"), ODD_HEADERS)
def test_headers_of_odd_shapes(parser: Any, headers: Any, expected: Any, times: int) -> None:
    status, seen = asgi({}, headers, parser=parser, times=times)
    _expect(status, seen, expected)


# host_header(headers, known) -> what it answers: a Host from the table, the
# value to judge, or None (read the headers the slow way).
A_COM = Host("a.com", None)
HOST_HEADER: list[Any] = [
    P([(b"host", b"a.com")], {}, b"a.com", id="the value"),
    P([(b"host", b"a.com")], {b"a.com": A_COM}, A_COM, id="judged"),
    P([(b"x", b"y"), (b"host", b"a.com")], {b"a.com": A_COM}, A_COM, id="after another"),
    P([], {}, None, id="none"),
    P([(b"host", b"")], {}, None, id="empty"),
    P([(b"host", b"a.com"), (b"host", b"a.com")], {b"a.com": A_COM}, None, id="twice"),
    P([(b"host", None), (b"host", b"a.com")], {}, None, id="twice, one None"),
    P([(b"host", bytearray(b"a.com"))], {}, None, id="a bytearray"),
    P([(b"host", "a.com")], {}, None, id="a str"),
    P([(b"host", b"a.com", b"x")], {}, None, id="three items"),
    P([[b"host", b"a.com"]], {}, None, id="a list pair"),
    P([("host", b"a.com")], {}, None, id="a str name"),
    P(((b"host", b"a.com"),), {}, None, id="a tuple"),
    P(None, {}, None, id="no headers"),
    P([(b"Host", b"a.com")], {}, None, id="Host"),
    P([(b"hosts", b"a.com"), (b"hos", b"b")], {}, None, id="near names"),
]


@pytest.mark.parametrize(("headers", "known", "expected"), HOST_HEADER)
def test_host_header(parser: Any, headers: Any, known: dict[bytes, Host], expected: Any) -> None:
    got = parser.host_header(headers, known)
    assert got == expected
    assert type(got) is type(expected)


# parse_target(raw, policy, host): the host first, then the target, then
# whether an absolute-form target names it. (raw, host, expected)
PARSE_WITH_HOST: list[Any] = [
    P(b"/x", b"Example.com:8080", ("example.com", 8080), id="bytes"),
    P(b"/x", "example.com", ("example.com", None), id="str"),
    P(b"/x", A_COM, ("a.com", None), id="a judged Host"),
    P(b"/x", None, (None, None), id="none"),
    P(b"http://a.com/x", None, ("a.com", None), id="the authority's"),
    P(b"http://a.com/x", b"a.com:80", ("a.com", 80), id="the header's"),
    P(b"http://A.com:8080/x", b"a.com:8080", ("a.com", 8080), id="the same authority"),
    P(b"http://a.com/x", b"b.com", "bad-host", id="another"),
    P(b"https://a.com/x", b"a.com:80", "bad-host", id="another port"),
    P(b"/x", b"a b", "bad-host", id="invalid"),
    P(b"/x", "café.fr", "bad-host", id="not ASCII"),
    P(b"/x", b"", "bad-host", id="empty"),
    P(b"/x%zz", b"a b", "bad-host", id="the host first"),
    P(b"/x%zz", b"a.com", "malformed-escape", id="then the target"),
]


@pytest.mark.parametrize(("raw", "host", "expected"), PARSE_WITH_HOST)
def test_parse_with_a_host(parser: Any, raw: bytes, host: Any, expected: Any) -> None:
    if isinstance(expected, str):
        with pytest.raises(InvalidTarget) as caught:
            parser.parse_target(raw, None, host)
        assert caught.value.rule == expected
        assert caught.value.component == ("host" if expected == "bad-host" else "path")
        return
    target = parser.parse_target(raw, None, host)
    assert (target.host, target.port) == expected
    assert parser.parse_split_target(*raw.partition(b"?")[::2], Policy(), host) == target


@pytest.mark.parametrize("host", [1, 1.0, object()])
def test_a_host_of_another_type_is_a_type_error(parser: Any, host: Any) -> None:
    with pytest.raises(TypeError, match="host must be bytes, str or None"):
        parser.parse_target(b"/x", None, host)


# An environ holds one HTTP_HOST: servers merge repeated lines ("a, evil",
# in the table) or refuse them; HTTP/2 does not reach WSGI, nor granian's "1".
# (The absolute-form rows run as WSGI too: gunicorn and waitress keep it.)
WSGI_TABLE = [row for row in TABLE if len(row.values[0]) <= 1 and row.values[1] in ("1.0", "1.1")]


@pytest.mark.parametrize(("headers", "version", "raw", "allowed", "expected"), WSGI_TABLE)
def test_wsgi(
    parser: Any, headers: Headers, version: str, raw: bytes, allowed: Any, expected: Any
) -> None:
    options = {} if allowed is None else {"allowed_hosts": allowed}
    host = headers[0][1].decode("latin-1") if headers else None
    protocol = f"HTTP/{version}"
    status, seen = wsgi(options, host, raw=raw.decode("latin-1"), protocol=protocol, parser=parser)
    _expect(status, seen, expected)


def test_the_rule_is_named_and_the_host_never_echoed(caplog: pytest.LogCaptureFixture) -> None:
    violations: list[InvalidTarget] = []
    options = {"on_violation": lambda exc, scope: violations.append(exc)}
    host = b"evil\r\nX-Injected: 1 <script>"
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, _ = asgi(options, [(b"host", host)])
    assert status == 400
    assert [(v.rule, v.component) for v in violations] == [("bad-host", "host")]
    [line] = [record.getMessage() for record in caplog.records]
    assert "\r" not in line
    assert "\n" not in line
    assert "host=evil\\x0d\\x0aX-Injected:\\x201\\x20<script>" in line


def test_a_websocket_handshake_is_checked_too() -> None:
    _, seen = asgi({}, [(b"host", b"a b")], kind="websocket")
    assert seen == {}  # refused before the application ran
    _, seen = asgi({}, [(b"host", b"a.com")], kind="websocket")
    assert seen["urlguard.target"].host == "a.com"


def test_report_mode_lets_a_bad_host_through_with_its_violation() -> None:
    status, seen = asgi({"mode": "report"}, [(b"host", b"a b")])
    assert status == 200
    assert "urlguard.target" not in seen
    assert seen["urlguard.violation"].rule == "bad-host"


def test_a_flood_of_distinct_hosts_keeps_the_table_bounded() -> None:
    guard = ASGIGuard(_asgi_app)
    check = guard._guard.hosts
    for i in range(VERDICTS * 3):
        check.judge(f"h{i}.example".encode())
        assert len(check.known) <= VERDICTS
    assert check.judge(b"h1.example").name == "h1.example"  # the answer does not change


def test_allowed_hosts_from_the_config() -> None:
    config = Config(allowed_hosts=("a.com",))
    status, _ = asgi({"config": config}, [(b"host", b"b.com")])
    assert status == 400
    status, _ = asgi({"config": config}, [(b"host", b"a.com")])
    assert status == 200


@pytest.mark.parametrize(
    "patterns",
    [
        ["a b"],
        ["*."],
        ["*.[::1]"],
        ["*.127.0.0.1"],
        ["a.com:99999"],
        ["a.com:0"],
        "a.com",
        [b"a.com"],
        ["http://a.com"],
        ["xn--zz.example"],
        [],
    ],
)
def test_bad_allowed_hosts_fail_at_construction(patterns: Any) -> None:
    """Including an empty list, which would refuse every request: refused
    at construction rather than at the first request."""
    with pytest.raises((TypeError, ValueError), match="allowed_hosts"):
        ASGIGuard(_asgi_app, allowed_hosts=patterns)
    with pytest.raises((TypeError, ValueError), match="allowed_hosts"):
        WSGIGuard(_wsgi_app, allowed_hosts=patterns)


async def _asgi_app(scope: Any, receive: Any, send: Any) -> None:
    return None


def _wsgi_app(environ: Any, start_response: Any) -> list[bytes]:
    return []


def test_an_idn_pattern_is_matched_on_its_a_label() -> None:
    allowed = AllowedHosts(["bücher.example"], "test")
    from urlguard._url.host import parse_host

    assert allowed.allows(parse_host(b"xn--bcher-kva.example"))
    assert not allowed.allows(parse_host(b"bucher.example"))


class _Bytes(bytes):
    """A byte string of another type, as a server that breaks PEP 3333 might hand over."""


@pytest.mark.parametrize("host", [_Bytes(b"a.com"), b"a.com", bytearray(b"a.com"), 7])
def test_an_http_host_that_is_not_a_str_breaks_pep_3333(
    parser: Any, host: object, caplog: pytest.LogCaptureFixture
) -> None:
    """PEP 3333: HTTP_ variables are native strings. Anything else shows
    nothing certain of what was sent: 500, one error line naming the key."""
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, seen = wsgi({"allowed_hosts": ["a.com"]}, host, parser=parser)  # type: ignore[arg-type]
    assert (status, seen) == (500, {})
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert "breaks the WSGI spec (key HTTP_HOST)" in record.getMessage()


# --- a scope that breaks the ASGI spec: 500, one log line naming the key, no exception

BROKEN_SCOPES: list[Any] = [
    P({"headers": {b"host": b"a.com"}}, "headers", id="headers a dict"),
    P({"headers": [(b"host", b"a.com", b"")]}, "headers", id="headers of 3-tuples"),
    P({"headers": "host: a.com"}, "headers", id="headers a str"),
    P({"headers": [(b"host", "a.com")]}, "headers", id="a header value a str"),
    P({"query_string": "a=%zz"}, "query_string", id="query_string a str, rejected target"),
    P({"query_string": "a=1"}, "query_string", id="query_string a str, passing target"),
    P({"query_string": 7}, "query_string", id="query_string a number"),
    P({"type": None}, "type", id="no type"),
]


def _broken(parser: Any, changes: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """The messages sent for one request whose scope holds ``changes``
    (``"type": None`` takes the key away), and the urlguard log lines."""
    scope: dict[str, Any] = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "raw_path": b"/x",
        "path": "/x",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"a.com")],
        **changes,
    }
    if scope["type"] is None:
        del scope["type"]
    sent: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the application ran")

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    handler = _Capture()
    logger = logging.getLogger("urlguard")
    logger.addHandler(handler)
    try:
        asyncio.run(ASGIGuard(app, parser=parser)(scope, receive, send))
    finally:
        logger.removeHandler(handler)
    return sent, handler.lines


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
@pytest.mark.parametrize(("changes", "key"), BROKEN_SCOPES)
def test_broken_scope(parser: Any, changes: dict[str, Any], key: str, times: int) -> None:
    for _ in range(times):
        sent, lines = _broken(parser, changes)
        assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
        assert sent[0]["status"] == 500
        assert b"a.com" not in sent[1]["body"]
        [line] = lines
        assert f"breaks the ASGI spec (key {key})" in line


# --- which of the four causes a bad-host has, in its log line

CAUSES: list[Any] = [
    P([], "1.1", b"/x", "missing", id="HTTP/1.1 without Host"),
    P([(b"host", b"")], "1.1", b"/x", "missing", id="an empty Host"),
    P([(b"host", b"")], "1", b"/x", "missing", id="granian's HTTP/1.0 without Host"),
    P([(b"host", b"a"), (b"host", b"b")], "1.1", b"/x", "repeated", id="two Host lines"),
    P([(b"host", b"a"), (b"host", b"a")], "1.1", b"/x", "repeated", id="the same twice"),
    P([(b"host", b"a, evil")], "1.1", b"/x", "repeated", id="merged by the server"),
    P([(b"host", b"a b")], "1.1", b"/x", "malformed", id="a space"),
    P([(b"host", b"a.com")], "1.1", b"http://a b/x", "malformed", id="the target's authority"),
    P([(b"host", b"b.com")], "1.1", b"http://a.com/x", "disagreeing", id="absolute-form"),
    P([(b"host", b"a"), (b"host", b"b")], "2", b"/x", "disagreeing", id="HTTP/2 host headers"),
]


@pytest.mark.parametrize("times", [1, 2], ids=["judged", "from the table"])
@pytest.mark.parametrize(("headers", "version", "raw", "cause"), CAUSES)
def test_a_host_rejection_is_logged_as_one_with_its_cause(
    parser: Any,
    headers: Headers,
    version: str,
    raw: bytes,
    cause: str,
    times: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        status, _ = asgi({}, headers, raw=raw, version=version, parser=parser, times=times)
    assert status == 400
    line = caplog.records[-1].getMessage()
    assert line.startswith(f"rejected host: rule=bad-host cause={cause} ")
    assert caplog.records[-1].__dict__["urlguard_cause"] == cause


def test_a_host_not_allowed_is_logged_as_a_host_rejection(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        asgi({"allowed_hosts": ["a.com"]}, [(b"host", b"b.com")])
    [record] = caplog.records
    assert record.getMessage().startswith(
        "rejected host: rule=host-not-allowed component=host index=- offset=0 "
    )
    assert record.getMessage().endswith(" host=b.com")


# --- the docs say what the product does

ROOT = Path(__file__).resolve().parent.parent
# A sentence that says the host, or headers with Host among them, go unchecked.
_HOST_UNCHECKED = re.compile(
    r"(?:not|only|never)[^.]*\bheaders?\b[^.]*\(`?Host`? included\)"
    r"|\bHost\b[^.]*\bnot (?:validated|checked)"
    r"|(?:not|never) (?:validate|check)s?[^.]*\bHost\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize("page", ["SECURITY.md", "docs/security.md"])
def test_the_security_pages_describe_the_host_check(page: str) -> None:
    text = " ".join((ROOT / page).read_text("utf-8").split())
    assert _HOST_UNCHECKED.search(text) is None, _HOST_UNCHECKED.search(text)
    for needed in ("bad-host", "host-not-allowed", ":authority", "X-Forwarded-Host"):
        assert needed in text, needed


def test_the_rules_page_shows_a_host_rejection_as_logged(caplog: pytest.LogCaptureFixture) -> None:
    """docs/rules.md shows the log line of a merged Host: it is the one logged."""
    shown = re.search(r"^rejected host: .*$", (ROOT / "docs/rules.md").read_text("utf-8"), re.M)
    assert shown is not None
    scope_client = ("127.0.0.1", 50000)
    seen: list[str] = []

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = _Lines()
    logging.getLogger("urlguard").addHandler(handler)
    try:
        guard = ASGIGuard(_asgi_app)
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": "GET",
            "raw_path": b"/x",
            "query_string": b"",
            "headers": [(b"host", b"a, evil")],
            "client": scope_client,
        }

        async def send(message: Any) -> None:
            return None

        async def receive() -> Any:
            return {}

        asyncio.run(guard(scope, receive, send))
    finally:
        logging.getLogger("urlguard").removeHandler(handler)
    assert seen == [shown[0]]
