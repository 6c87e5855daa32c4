"""The decision, on its own: ``Guard.decide`` given what an adapter read (the
raw target, the query, the mount point, and a ``read`` function for the rest),
without any scope or environ, on each parser. Everything the two middlewares
share is tested here, once: the options and their errors, the mount point,
``OPTIONS *``, the answers, report mode, the hooks, the counters, the log
line, per-route policies, the configuration, and what happens without a raw
target (the 501, and ``missing_raw_target="validate-decoded"``). The adapters
are tested at their boundary in test_asgi.py and test_wsgi.py: how each reads
its scope or environ, and sends the answer.

``Guard.check_decoded`` validates what a server without a raw target leaves
(``missing_raw_target="validate-decoded"``). The decoded path is re-encoded
by ``rebuild_target``; a U+FFFD in it is where a lenient server replaced
invalid UTF-8, so it counts as ``invalid-utf8`` of the segment that holds it,
in that segment's place in the rule order (docs/rules.md: after too-many,
raw-char, and the earlier segments; after malformed-escape, encoded-slash and
encoded-backslash in its own piece; before forbidden-char, dot-segment,
empty-segment and double-encoding there and anything later; under
path_params="split" a segment's pieces, name and parameters, are taken in
turn). The query is exact as received, so a U+FFFD escaped in it is the client's.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, get_type_hints

import pytest

import urlguard._url.parser
from conftest import Parser, implementation_name
from log_checks import assert_error_logged
from urlguard import Config, InvalidTarget, Policy, Target, asgi, wsgi
from urlguard._guard.answers import Answer, describe, forbidden_class
from urlguard._guard.decision import Guard, Request, RoutingPath
from urlguard._guard.decoded import check_decoded, rebuild_target
from urlguard._guard.middleware import GuardedMiddleware
from urlguard._guard.options import MissingRawTarget, check_options
from urlguard._url.host import Host

P = pytest.param
Carrier = dict[str, Any]
App = Callable[..., Any]
Pairs = tuple[tuple[str, str], ...]
# A marker put in hostile targets: it must never come back in an answer.
MARK = b"ECHOME"


class Reader:
    """An adapter's ``read``: a fixed :class:`Request`, and how often it was asked."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.calls = 0

    def __call__(self, carrier: Carrier) -> Request:
        self.calls += 1
        return self.request


class Made(NamedTuple):
    """A guard, and the ``read`` function it was given."""

    guard: Guard[Carrier, App]
    reader: Reader


def make(
    parser: object,
    request: Request | None = None,
    *,
    protocol: str = "ASGI",
    missing: str = "nothing given",
    **options: Any,
) -> Made:
    reader = Reader(Request("GET") if request is None else request)
    return Made(
        Guard(check_options("test", protocol, missing, parser=parser, **options), reader), reader
    )


def decide(
    guard: Guard[Carrier, App],
    raw: Any,  # bytes or None; now and then what a server may hand over instead
    query: bytes | None = None,
    mount: bytes | None = None,
    carrier: Carrier | None = None,
) -> Answer | App | RoutingPath | None:
    return guard.decide(raw, query, mount, {} if carrier is None else carrier)


def passed(decision: object) -> bool:
    """Call the application: on the server's path, or on a routing path."""
    return decision is None or type(decision) is RoutingPath


def accepted(
    guard: Guard[Carrier, App], raw: bytes | None, query: bytes | None, mount: bytes | None
) -> Target:
    """The Target ``decide`` stored: the request went on with it."""
    carrier: Carrier = {}
    assert passed(decide(guard, raw, query, mount, carrier))
    target = carrier["urlguard.target"]
    assert isinstance(target, Target)
    return target


def verdict(guard: Guard[Carrier, App], raw: bytes | None, query: bytes | None = None) -> object:
    """The segments of the Target ``decide`` stored, or the rule of the
    violation it stored, answering 400."""
    carrier: Carrier = {}
    decision = decide(guard, raw, query, None, carrier)
    if passed(decision):
        segments: tuple[str, ...] = carrier["urlguard.target"].segments
        return segments
    assert isinstance(decision, Answer)
    assert decision.status == 400
    assert "urlguard.target" not in carrier
    violation = carrier["urlguard.violation"]
    assert isinstance(violation, InvalidTarget)
    return violation.rule


def rejected(guard: Guard[Carrier, App], raw: bytes | None, query: bytes | None = None) -> str:
    """The rule of the 400 ``decide`` answered."""
    rule = verdict(guard, raw, query)
    assert isinstance(rule, str), rule
    return rule


def _app(*args: Any) -> None:
    return None


async def _async_hook(exc: InvalidTarget, carrier: Carrier) -> None:
    return None


MIDDLEWARES = [P(asgi.StrictURLMiddleware, id="ASGI"), P(wsgi.StrictURLMiddleware, id="WSGI")]

# --- the options, declared once for both middlewares ----------------------------------------

OPTIONS = {
    "policy": Policy | None,
    "routes": Mapping[str, Policy | Mapping[str, Any]] | None,
    "config": Config | str | os.PathLike[str] | None,
    "mode": str | None,
    "missing_raw_target": MissingRawTarget,
    "log_level": int,
    "parser": urlguard._url.parser.ParserModule | None,
    "allowed_hosts": Iterable[str] | None,
}


@pytest.mark.parametrize("middleware", MIDDLEWARES)
def test_options_are_typed_keywords(middleware: type[GuardedMiddleware[Any, Any]]) -> None:
    # What an editor shows for StrictURLMiddleware(...): app first, then the
    # options as keywords with their types and defaults.
    app, *options = inspect.signature(middleware).parameters.values()
    assert [app.name, *(p.name for p in options)] == [
        "app", "policy", "routes", "config", "mode", "on_reject", "on_violation",
        "missing_raw_target", "log_level", "parser", "allowed_hosts",
    ]  # fmt: skip
    assert app.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert {p.kind for p in options} == {inspect.Parameter.KEYWORD_ONLY}
    assert [p.default for p in options] == [None] * 6 + ["refuse", logging.WARNING, None, None]
    hints = get_type_hints(middleware.__init__)
    assert {name: hints[name] for name in OPTIONS} == OPTIONS


@pytest.mark.parametrize(
    ("middleware", "words"),
    [
        P(asgi.StrictURLMiddleware, "app must be an ASGI application", id="ASGI"),
        P(wsgi.StrictURLMiddleware, "app must be a WSGI application", id="WSGI"),
    ],
)
def test_app_must_be_callable(middleware: type[GuardedMiddleware[Any, Any]], words: str) -> None:
    with pytest.raises(TypeError, match=words):
        middleware(None)


@pytest.mark.parametrize(
    ("middleware", "carrier"),
    [
        P(asgi.StrictURLMiddleware, {"type": "http", "method": "GET"}, id="ASGI"),
        P(wsgi.StrictURLMiddleware, {"REQUEST_METHOD": "GET"}, id="WSGI"),
    ],
)
def test_middleware_hands_its_options_to_its_guard(
    parser: Parser, middleware: type[GuardedMiddleware[Any, Any]], carrier: Carrier
) -> None:
    guarded = middleware(_app, mode="report", parser=parser)
    guard = guarded._guard
    assert guard.options.parser is parser
    assert (guarded.mode, guard.mode) == ("report", "report")
    assert guard.decide(b"/%C4", None, None, carrier) is None
    assert guarded.violations == guard.violations == {"invalid-utf8": 1}
    assert middleware(_app)._guard.options.parser is urlguard._url.parser.PARSER
    assert middleware(_app).mode == "enforce"


# --- the parser the guard is given ------------------------------------------------------------


class Recording:
    """A parser module's functions: which the guard called, with what, then
    the answer of the parser it wraps."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.calls: list[tuple[str, bytes]] = []

    def parse_target(
        self, raw: bytes, policy: Policy | None = None, host: Host | None = None
    ) -> Target:
        self.calls.append(("parse_target", raw))
        return self.parser.parse_target(raw, policy, host)

    def parse_split_target(
        self, raw_path: bytes, query: bytes, policy: Policy, host: Host | None = None
    ) -> Target:
        self.calls.append(("parse_split_target", raw_path + b"?" + query))
        return self.parser.parse_split_target(raw_path, query, policy, host)

    def host_header(self, headers: object, known: dict[bytes, Host]) -> Host | bytes | None:
        return self.parser.host_header(headers, known)


GIVEN_PARSER = [
    # raw target, query, Request, options -> the call the parser saw
    P(b"/a?q", None, Request("GET"), {}, ("parse_target", b"/a?q"), id="whole target"),
    P(b"/a", b"q", Request("GET"), {}, ("parse_split_target", b"/a?q"), id="path and query"),
    P(
        b"/f/a%2Fb", None, Request("GET"), {"routes": {"/f/": {"encoded_slash": "keep"}}},
        ("parse_target", b"/f/a%2Fb"), id="a route's policy",
    ),
    P(
        None, None, Request("GET", path=b"/a", query=b"q"),
        {"missing_raw_target": "validate-decoded"}, ("parse_target", b"/a?q"),
        id="no raw target, validate-decoded",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "query", "request_", "options", "call"), GIVEN_PARSER)
def test_the_guard_parses_with_the_parser_it_is_given(
    parser: Parser,
    raw: bytes | None,
    query: bytes | None,
    request_: Request,
    options: dict[str, Any],
    call: tuple[str, bytes],
) -> None:
    recording = Recording(parser)
    guard = make(recording, request_, **options).guard
    used: object = guard.options.parser
    assert used is recording
    target = accepted(guard, raw, query, None)
    assert recording.calls == [call]
    _, seen = call
    assert target == parser.parse_target(seen, guard.table.select(seen))


def test_the_guard_parses_with_the_chosen_parser_by_default() -> None:
    guard = make(None).guard
    assert guard.options.parser is urlguard._url.parser.PARSER
    assert implementation_name(guard.options.parser) == urlguard.IMPLEMENTATION


# --- pass with a target, pass untouched, or answer --------------------------------------------


DECISIONS = [
    # raw target, query (None: the raw target is whole), mount point ->
    #   segments of the Target, None (pass untouched), or the status answered
    P(b"/a/b?q=1", None, None, ("a", "b"), id="whole target"),
    P(b"/a/b", b"q=1", None, ("a", "b"), id="path and query apart"),
    P(b"/a%zz", None, None, 400, id="rejected"),
    P(b"/a", b"q=%C4", None, 400, id="rejected in the query given apart"),
    P(b"*", None, None, 400, id="GET *"),
    P(b"/mnt/a", None, b"", ("mnt", "a"), id="an empty mount point"),
    P(b"/mnt/a", None, b"/mnt", ("a",), id="below the mount point"),
    P(b"/mnt", None, b"/mnt", ("",), id="the mount point itself"),
    P(b"/my%20app/a%2Fb", None, b"/my app", 400, id="below the mount point, judged"),
    P(bytearray(b"/a%zz"), None, None, 400, id="rejected, a bytearray"),
    P(bytearray(b"/mnt/a"), b"q", b"/mnt", ("a",), id="a bytearray below the mount point"),
]


@pytest.mark.parametrize(("raw", "query", "mount", "expected"), DECISIONS)
def test_decide(
    parser: Parser,
    raw: bytes | bytearray,
    query: bytes | None,
    mount: bytes | None,
    expected: tuple[str, ...] | int,
) -> None:
    guard, reader = make(parser)
    carrier: Carrier = {}
    decision = decide(guard, raw, query, mount, carrier)
    if isinstance(expected, tuple):
        assert decision is None  # the application is called, with the Target
        assert carrier["urlguard.target"].segments == expected
        assert reader.calls == 0  # a request that passes is read no further
    else:
        assert isinstance(decision, Answer)
        assert decision.status == expected
        assert "urlguard.target" not in carrier
        assert reader.calls == 1


# What decide returns, and what it leaves in the carrier, which held a
# stale target (as behind a lenient guard) and a key of the server's: None
# means "call the application", with whatever the carrier now holds;
# anything else answers instead. "new": a Target stored; "stale": left as
# it was (the guard judged nothing); None: taken off, with the violation stored.
OUTCOMES = [
    # raw target, request, options -> returned, urlguard.target
    P(b"/a?q=1", Request("GET"), {}, None, "new", id="accepted"),
    P(b"*", Request("OPTIONS"), {}, None, "stale", id="OPTIONS *: untouched"),
    P(b"/a%2F", Request("GET"), {"mode": "report"}, None, None, id="report-only"),
    P(
        b"/a%2F", Request("websocket", websocket=True), {"mode": "report"}, None, None,
        id="report-only, a websocket handshake",
    ),
    P(b"/a%2F", Request("GET"), {}, Answer, None, id="rejected"),
    P(
        b"/a%2F", Request("GET"), {"on_reject": lambda exc, carrier: _app}, _app, None,
        id="rejected, on_reject's app",
    ),
    P(
        b"/a%2F", Request("GET"), {"on_reject": lambda exc, carrier: None}, Answer, None,
        id="rejected, on_reject declines",
    ),
    P(None, Request("GET", path=b"/a"), {}, Answer, "stale", id="no raw target: 501"),
    P(
        None, Request("GET", path=b"/a"), {"mode": "report"}, None, "stale",
        id="no raw target, report-only: untouched",
    ),
    P(
        None, Request("GET", path=b"/a"), {"missing_raw_target": "validate-decoded"}, None,
        "new", id="no raw target, decoded path accepted",
    ),
    P(
        None, Request("GET", path=b"/a%2F"), {"missing_raw_target": "validate-decoded"},
        Answer, None, id="no raw target, decoded path rejected",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "request_", "options", "returned", "target"), OUTCOMES)
def test_what_the_carrier_holds_after_the_decision(
    parser: Parser,
    raw: bytes | None,
    request_: Request,
    options: dict[str, Any],
    returned: object,
    target: str | None,
) -> None:
    guard = make(parser, request_, **options).guard
    carrier: Carrier = {"urlguard.target": "stale", "server's own": 1}
    decision = decide(guard, raw, None, None, carrier)
    if returned is Answer:
        assert isinstance(decision, Answer)
    else:
        assert decision is returned
    assert carrier["server's own"] == 1
    if target is None:
        assert "urlguard.target" not in carrier
        assert isinstance(carrier["urlguard.violation"], InvalidTarget)
    else:
        assert "urlguard.violation" not in carrier
        if target == "stale":
            assert carrier["urlguard.target"] == "stale"
        else:
            assert isinstance(carrier["urlguard.target"], Target)


# --- the mount point ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mount", "raw", "query", "relative"),
    [
        P(b"/mnt", b"/mnt", None, b"/", id="whole target"),
        P(b"/mnt", b"/mnt?q=1", None, b"/?q=1", id="whole target, a query"),
        P(b"/mnt", b"/mnt", b"q=1", b"/?q=1", id="path and query apart"),
        P(b"/my app", b"/my%20app", None, b"/", id="a mount point compared decoded"),
        P(b"/a/b", b"/a/%62", b"", b"/", id="two segments, one escaped"),
    ],
)
def test_mount_point_itself_is_its_slash(
    parser: Parser, mount: bytes, raw: bytes, query: bytes | None, relative: bytes
) -> None:
    guard = make(parser).guard
    path, question, rest = raw.partition(b"?")
    bare = accepted(guard, raw, query, mount)
    slash = accepted(guard, path + b"/" + question + rest, query, mount)
    assert bare == slash
    assert (bare.raw, bare.segments, bare.query) == (relative, ("",), slash.query)


# Where the mount point is taken off: the raw target the Target holds, or
# the rule broken by what is left. The mount point is glued in front of the
# raw path (uvicorn), given with a trailing '/', escaped, or not there at all.
UNMOUNTED = [
    # mount point, raw target -> Target.raw, or the rule
    P(b"/mnt", b"/mnt/a", b"/a", id="glued in front"),
    P(b"/mnt", b"/mnt/", b"/", id="its slash"),
    P(b"/mnt", b"/mnt", b"/", id="itself"),
    P(b"/mnt", b"/mnt?q", b"/?q", id="itself, a query"),
    P(b"/mnt", b"/mnt/a?q=/mnt", b"/a?q=/mnt", id="a query that names it"),
    P(b"/mnt", b"/mntx/a", b"/mntx/a", id="a longer first segment"),
    P(b"/mnt", b"/mn", b"/mn", id="a shorter path"),
    P(b"/mnt", b"/MNT/a", b"/MNT/a", id="another case"),
    P(b"/mnt", b"/a/mnt/b", b"/a/mnt/b", id="further down"),
    P(b"/mnt", b"/mnt//a", "empty-segment", id="an empty segment after it"),
    P(b"/mnt/", b"/mnt/a", b"/a", id="a trailing slash"),
    P(b"/mnt/", b"/mnt", b"/", id="a trailing slash, itself"),
    P(b"/mnt/", b"/mnt//a", "empty-segment", id="a trailing slash, then an empty segment"),
    P(b"/", b"/a", b"/a", id="the root"),
    P(b"/a/b", b"/a/b/c", b"/c", id="two segments"),
    P(b"/a/b", b"/a/bc", b"/a/bc", id="two segments, a longer last one"),
    P(b"/a/b", b"/a/b/%2E%2E", "dot-segment", id="a dot segment below it"),
    P(b"/a/b", b"/a%2Fb/x", "encoded-slash", id="an encoded slash is no separator: judged whole"),
    P(b"/my app", b"/my%20app/x", b"/x", id="an escaped mount point"),
    P(b"/caf\xc3\xa9", b"/caf%C3%A9/x", b"/x", id="a non-ASCII mount point"),
    P(b"/%7E", b"/%7E/x", b"/x", id="a '%' in the mount point, glued in front"),
]


@pytest.mark.parametrize(("mount", "raw", "relative"), UNMOUNTED)
def test_where_the_mount_point_is_taken_off(
    parser: Parser, mount: bytes, raw: bytes, relative: bytes | str
) -> None:
    guard = make(parser).guard
    carrier: Carrier = {}
    decision = decide(guard, raw, None, mount, carrier)
    if isinstance(relative, str):
        assert isinstance(decision, Answer)
        assert carrier["urlguard.violation"].rule == relative
    else:
        assert decision is None
        assert carrier["urlguard.target"].raw == relative


# --- OPTIONS * ------------------------------------------------------------------------------------

ASTERISK = [
    # method, raw target (None: none, the decoded path is "*"), mount point,
    # missing_raw_target -> passes untouched (True) or the rule of the 400
    P("OPTIONS", b"*", None, "refuse", True, id="OPTIONS *"),
    P("OPTIONS", b"*", b"/mnt", "refuse", True, id="OPTIONS *, a mount point"),
    P("OPTIONS", b"/mnt*", b"/mnt", "refuse", True, id="OPTIONS *, root glued in front"),
    P("GET", b"*", None, "refuse", "bad-form", id="GET *"),
    P("OPTIONS", b"*?x", None, "refuse", "bad-form", id="OPTIONS *?x"),
    P("OPTIONS", None, None, "refuse", True, id="no raw target"),
    P("OPTIONS", None, None, "validate-decoded", True, id="no raw target, validate-decoded"),
]


@pytest.mark.parametrize(("method", "raw", "mount", "missing", "passes"), ASTERISK)
def test_options_asterisk_passes_untouched(
    parser: Parser,
    method: str,
    raw: bytes | None,
    mount: bytes | None,
    missing: str,
    passes: bool | str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = Request(method, path=b"*")
    guard = make(parser, request, missing_raw_target=missing).guard
    carrier: Carrier = {}
    with caplog.at_level(logging.DEBUG, logger="urlguard"):
        decision = decide(guard, raw, None, mount, carrier)
    if passes is True:
        assert decision is None
        assert carrier == {}
        assert guard.violations == {}
        assert caplog.records == []
    else:
        assert isinstance(decision, Answer)
        assert decision.status == 400
        assert carrier["urlguard.violation"].rule == passes


# --- the answer -------------------------------------------------------------------------------


def test_answer_is_complete_and_never_echoes(parser: Parser) -> None:
    guard = make(parser, Request("GET", accept="application/json")).guard
    answer = decide(guard, b"/" + MARK + b"%C4")
    assert isinstance(answer, Answer)
    headers = dict(answer.headers)
    assert (answer.status, answer.status_line) == (400, "400 Bad Request")
    assert headers["Content-Type"] == "application/problem+json"
    assert headers["Content-Length"] == str(len(answer.body))
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "Cache-Control" not in headers
    assert MARK not in answer.body
    assert json.loads(answer.body)["rule"] == "invalid-utf8"
    assert answer.reason == "invalid request target: invalid-utf8"


def test_head_answer_has_the_length_of_the_get_body(parser: Parser) -> None:
    get = decide(make(parser).guard, b"/%C4")
    head = decide(make(parser, Request("HEAD")).guard, b"/%C4")
    assert isinstance(get, Answer)
    assert isinstance(head, Answer)
    assert head.body == b""
    assert head.headers == get.headers
    assert dict(get.headers)["Content-Length"] == str(len(get.body))


ACCEPT = [
    P(None, "text/plain; charset=utf-8", id="no Accept"),
    P("application/json", "application/problem+json", id="json"),
    P("application/problem+json", "application/problem+json", id="problem+json"),
    P("APPLICATION/JSON", "application/problem+json", id="case-insensitive"),
    P("application/*", "application/problem+json", id="application wildcard"),
    P("application/json, text/plain", "application/problem+json", id="json first, same q"),
    P("text/plain;q=0.1, application/json;q=0.2", "application/problem+json", id="json higher q"),
    P("*/*", "text/plain; charset=utf-8", id="anything: text"),
    P(
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "text/plain; charset=utf-8",
        id="browser",
    ),
    P("application/json;q=0", "text/plain; charset=utf-8", id="json refused"),
    P("application/json; q=0.000", "text/plain; charset=utf-8", id="json refused, 3 digits"),
    P("text/plain, application/json;q=0.5", "text/plain; charset=utf-8", id="text preferred"),
    P("application/jsonx", "text/plain; charset=utf-8", id="not json"),
    P("\xff\x00garbage;;;q=zz,", "text/plain; charset=utf-8", id="garbage"),
]


@pytest.mark.parametrize(("accept", "content_type"), ACCEPT)
def test_answer_follows_accept(parser: Parser, accept: str | None, content_type: str) -> None:
    for raw, status in ((b"/%C4", 400), (None, 501)):
        guard = make(parser, Request("GET", accept=accept, path=b"/a")).guard
        answer = decide(guard, raw)
        assert isinstance(answer, Answer)
        assert answer.status == status
        assert dict(answer.headers)["Content-Type"] == content_type


# str(InvalidTarget) for '/ECHOME/caf%C4': rule, reason, position, no input.
DETAIL = (
    "invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)"
    " (path segment 1, byte offset 11)"
)


@pytest.mark.parametrize(
    ("accept", "body"),
    [
        P(
            "application/json",
            {
                "type": "about:blank",
                "title": "Bad Request",
                "status": 400,
                "detail": DETAIL,
                "rule": "invalid-utf8",
                "component": "path",
                "index": 1,
                "offset": 11,
            },
            id="problem+json",
        ),
        P(None, f"400 Bad Request: {DETAIL}\n", id="text"),
    ],
)
def test_answer_body_names_the_rule_and_where(
    parser: Parser, accept: str | None, body: dict[str, object] | str
) -> None:
    guard = make(parser, Request("GET", accept=accept)).guard
    answer = decide(guard, b"/ECHOME/caf%C4")
    assert isinstance(answer, Answer)
    assert MARK not in answer.body
    assert b"caf" not in answer.body
    if isinstance(body, str):
        assert answer.body == body.encode()
    else:
        assert json.loads(answer.body) == body


# --- report mode, counters, hooks ---------------------------------------------------------------


def test_report_mode_passes_with_the_violation_stored(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    called: list[InvalidTarget] = []

    def on_reject(exc: InvalidTarget, carrier: Carrier) -> App:
        called.append(exc)
        return _app

    guard = make(parser, mode="report", on_reject=on_reject).guard
    assert (guard.mode, guard.options.report) == ("report", True)
    carrier: Carrier = {"urlguard.target": "stale"}
    with caplog.at_level(logging.INFO, logger="urlguard"):
        assert decide(guard, b"/a%2Fb", None, b"", carrier) is None
    assert set(carrier) == {"urlguard.violation"}
    assert carrier["urlguard.violation"].rule == "encoded-slash"
    assert guard.violations == {"encoded-slash": 1}
    assert called == []
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("reported (report-only, passed on) request target: ")
    assert record.__dict__["urlguard_mode"] == "report"
    assert accepted(guard, b"/ok", None, None).segments == ("ok",)  # the rest as in enforce
    assert guard.violations == {"encoded-slash": 1}


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_violations_are_counted_by_rule(parser: Parser, mode: str) -> None:
    guard = make(parser, mode=mode).guard
    assert guard.violations == {}
    for raw in (b"/%C4", b"/%C0%AF", b"/a%2F", b"/fine", b"/b%2f"):
        decide(guard, raw)
    assert guard.violations == {"invalid-utf8": 2, "encoded-slash": 2}
    snapshot = guard.violations
    decide(guard, b"/%C4")
    assert snapshot == {"invalid-utf8": 2, "encoded-slash": 2}  # a snapshot, not a view


def test_hooks_see_the_violation_in_the_carrier(parser: Parser) -> None:
    seen: list[tuple[str, object]] = []

    def app(*args: Any) -> None:
        return None

    def on_reject(exc: InvalidTarget, carrier: Carrier) -> App:
        seen.append(("on_reject", carrier["urlguard.violation"]))
        return app

    def on_violation(exc: InvalidTarget, carrier: Carrier) -> None:
        seen.append(("on_violation", carrier["urlguard.violation"]))

    guard = make(parser, on_reject=on_reject, on_violation=on_violation).guard
    assert accepted(guard, b"/fine", None, None).segments == ("fine",)
    assert seen == []  # neither hook for a target that passes
    carrier: Carrier = {}
    assert decide(guard, b"/%2e%2e", None, b"", carrier) is app
    violation = carrier["urlguard.violation"]
    assert seen == [("on_violation", violation), ("on_reject", violation)]


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_on_violation_is_called_in_both_modes(parser: Parser, mode: str) -> None:
    calls: list[tuple[InvalidTarget, Carrier]] = []
    guard = make(parser, mode=mode, on_violation=lambda exc, c: calls.append((exc, c))).guard
    carrier: Carrier = {}
    decide(guard, b"/a/%2e", None, None, carrier)
    decide(guard, b"/fine")
    ((exc, seen),) = calls
    assert exc.rule == "dot-segment"
    assert seen is carrier


@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_failing_on_violation_changes_nothing(
    parser: Parser, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    def on_violation(exc: InvalidTarget, carrier: Carrier) -> None:
        raise RuntimeError("hook bug")

    guard = make(parser, mode=mode, on_violation=on_violation).guard
    carrier: Carrier = {}
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decision = decide(guard, b"/%C4", None, None, carrier)
    if mode == "enforce":
        assert isinstance(decision, Answer)
        assert decision.status == 400
    else:
        assert decision is None
    assert carrier["urlguard.violation"].rule == "invalid-utf8"
    assert_error_logged(caplog.records, "the on_violation callback failed", RuntimeError)


def _raises(exc: InvalidTarget, carrier: Carrier) -> App:
    raise RuntimeError("hook bug")


ON_REJECT = [
    # on_reject, protocol -> the end of the error logged (None: none), its exception
    P(lambda exc, carrier: None, "ASGI", None, None, id="None keeps the default"),
    P(
        _raises, "ASGI", "the on_reject callback failed; sent the default 400", RuntimeError,
        id="a failing hook falls back to the default",
    ),
    P(
        lambda exc, carrier: 42, "ASGI",
        "on_reject returned int, not an ASGI application; sent the default 400", None,
        id="a non-app result falls back to the default, ASGI",
    ),
    P(
        lambda exc, carrier: "nope", "WSGI",
        "on_reject returned str, not a WSGI application; sent the default 400", None,
        id="a non-app result falls back to the default, WSGI",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("on_reject", "protocol", "logged", "exception"), ON_REJECT)
def test_on_reject_default(
    parser: Parser,
    on_reject: Callable[[InvalidTarget, Carrier], object],
    protocol: str,
    logged: str | None,
    exception: type[Exception] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = make(parser, protocol=protocol, on_reject=on_reject).guard
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        answer = decide(guard, b"/%C4")
    assert isinstance(answer, Answer)
    assert answer.status == 400
    assert b"invalid-utf8" in answer.body
    assert_error_logged(caplog.records, logged, exception)


def test_websocket_handshakes_get_the_default_answer(parser: Parser) -> None:
    calls: list[InvalidTarget] = []
    guard = make(
        parser,
        Request("websocket", websocket=True),
        on_reject=lambda exc, carrier: calls.append(exc),
    ).guard
    answer = decide(guard, b"/ws/%C4")
    assert isinstance(answer, Answer)
    assert answer.status == 400
    assert calls == []


# --- no raw target ------------------------------------------------------------------------


REFUSAL = (
    b"501 Not Implemented: the server does not provide the raw request target (nothing given);"
    b" urlguard refuses to guess it from decoded values\n"
)


@pytest.mark.parametrize(
    ("request_", "missing_raw_target", "expected"),
    [
        P(Request("GET", path=b"/a"), "refuse", 501, id="refused"),
        P(Request("HEAD", path=b"/a"), "refuse", 501, id="refused, HEAD"),
        P(Request("GET", path=b"/mnt/a", query=b"q=1"), "validate-decoded", ("a",), id="decoded"),
        P(Request("GET", path=b"/mnt"), "validate-decoded", ("",), id="decoded mount point"),
        P(Request("GET", path=b""), "validate-decoded", ("",), id="decoded, empty"),
        P(Request("GET", path=b"/mnt/a\x00"), "validate-decoded", 400, id="decoded NUL"),
        P(Request("GET", path=None), "validate-decoded", 501, id="not even a path"),
    ],
)
def test_without_raw_target(
    parser: Parser,
    request_: Request,
    missing_raw_target: str,
    expected: tuple[str, ...] | int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = make(parser, request_, missing_raw_target=missing_raw_target).guard
    carrier: Carrier = {}
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decision = decide(guard, None, b"", b"/mnt", carrier)
    if isinstance(expected, tuple):
        assert decision is None
        assert carrier["urlguard.target"].segments == expected
        assert caplog.records == []
        return
    assert isinstance(decision, Answer)
    assert decision.status == expected
    headers = dict(decision.headers)
    assert headers["Content-Length"] != "0"
    assert (headers.get("Cache-Control") == "no-store") is (expected == 501)
    if expected == 501:
        assert "urlguard.target" not in carrier
        assert decision.reason == "no raw request target"
        assert decision.body == (b"" if request_.method == "HEAD" else REFUSAL)
        (record,) = caplog.records
        assert (record.name, record.levelno) == ("urlguard", logging.ERROR)
        assert record.getMessage() == (
            "test: the server (unknown) provides no raw request target (nothing given); "
            "refused with 501. Run under a server that does (see urlguard's docs), or "
            "pass missing_raw_target='validate-decoded'"
        )


def test_without_raw_target_problem_json(parser: Parser) -> None:
    guard = make(parser, Request("GET", accept="application/json", path=b"/")).guard
    answer = decide(guard, None)
    assert isinstance(answer, Answer)
    assert dict(answer.headers)["Content-Type"] == "application/problem+json"
    assert json.loads(answer.body) == {
        "type": "about:blank",
        "title": "Not Implemented",
        "status": 501,
        "detail": "the server does not provide the raw request target (nothing given); "
        "urlguard refuses to guess it from decoded values",
        "code": "no-raw-target",
    }


def test_without_raw_target_in_report_mode_passes_and_logs(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    guard = make(parser, Request("GET", path=b"/a"), mode="report").guard
    carrier: Carrier = {}
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        assert decide(guard, None, None, None, carrier) is None
    assert carrier == {}
    assert guard.violations == {}
    (record,) = caplog.records
    assert (record.name, record.levelno) == ("urlguard", logging.ERROR)
    message = record.getMessage()
    assert "provides no raw request target (nothing given); passed on (report-only)." in message


def test_without_raw_target_log_line_escapes_the_server(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    guard = make(parser, Request("GET", server="evil\r\nINJECTED\x1b[0m", path=b"/")).guard
    with caplog.at_level(logging.ERROR, logger="urlguard"):
        decide(guard, None)
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line)
    assert r"the server (evil\x0d\x0aINJECTED\x1b[0m)" in line


# What a decoded path can still break (missing_raw_target="validate-decoded"):
# its bytes are re-encoded, so raw characters are never the rule there; the
# query is exact as received.
VALIDATE_DECODED = [
    # decoded path, raw query -> (segments, query) of the Target, or the rule
    P("/caf\u00e9/x", b"", (("café", "x"), ()), id="UTF-8"),
    P("/a b", b"", (("a b",), ()), id="a decoded space is allowed"),
    P("/a", b"x=%26&y=a+b", (("a",), (("x", "&"), ("y", "a b"))), id="query kept exact"),
    P("/a/../b", b"", "dot-segment", id="dot segment"),
    P("//a", b"", "empty-segment", id="empty segment"),
    P("/a\x00", b"", "forbidden-char", id="decoded NUL"),
    P("/a\u202e", b"", "forbidden-char", id="decoded bidi override"),
    P("/%41", b"", "double-encoding", id="a decoded escape is double encoding"),
    P("/a", b"q=\\", "raw-char", id="query: raw backslash"),
    P("/a", b"q=%zz", "malformed-escape", id="query: malformed escape"),
]


@pytest.mark.parametrize(("path", "query", "expected"), VALIDATE_DECODED)
def test_validate_decoded(
    parser: Parser, path: str, query: bytes, expected: tuple[tuple[str, ...], Pairs] | str
) -> None:
    request = Request("GET", path=path.encode("utf-8"), query=query)
    guard = make(parser, request, missing_raw_target="validate-decoded").guard
    if isinstance(expected, str):
        assert rejected(guard, None) == expected
    else:
        target = accepted(guard, None, None, None)
        assert (target.segments, target.query) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        P(b"/strict/caf\xc3\xa9", "forbidden-char", id="the route's policy"),
        P(b"/other/caf\xc3\xa9", ("other", "café"), id="the base policy elsewhere"),
    ],
)
def test_validate_decoded_uses_routes(
    parser: Parser, path: bytes, expected: tuple[str, ...] | str
) -> None:
    routes = {"/strict/": {"allowed_ranges": [[0x20, 0x7E]]}}
    request = Request("GET", path=path)
    guard = make(parser, request, missing_raw_target="validate-decoded", routes=routes).guard
    assert verdict(guard, None) == expected


# --- the log line ---------------------------------------------------------------------------


def test_log_line_under_the_default_format(
    parser: Parser, caplog: pytest.LogCaptureFixture
) -> None:
    guard = make(parser, Request("GET", client="127.0.0.1:5")).guard
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decide(guard, b"/a\r\n%zz")
    (record,) = caplog.records
    line = logging.Formatter(logging.BASIC_FORMAT).format(record)
    assert line == (
        "WARNING:urlguard:rejected request target: rule=raw-char component=path index=0 "
        "offset=2 client=127.0.0.1:5 method=GET target=/a\\x0d\\x0a%zz"
    )
    extra = {key: value for key, value in record.__dict__.items() if key.startswith("urlguard_")}
    assert extra == {
        "urlguard_rule": "raw-char",
        "urlguard_component": "path",
        "urlguard_index": 0,
        "urlguard_offset": 2,
        "urlguard_mode": "enforce",
        "urlguard_cause": None,
    }


def test_log_line_of_a_target_given_apart(parser: Parser, caplog: pytest.LogCaptureFixture) -> None:
    guard = make(parser).guard
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decide(guard, b"/a/caf%C4", b"x=1")
        decide(guard, b"/a", b"x=1&y=%FF")
    first, second = (record.getMessage() for record in caplog.records)
    assert first.endswith(
        " component=path index=1 offset=6 client=- method=GET target=/a/caf%C4?x=1"
    )
    assert second.endswith(
        " component=query index=1 offset=9 client=- method=GET target=/a?x=1&y=%FF"
    )


HOSTILE = [
    # raw target, method, client, then each as the log line must show it
    P(
        b"/a\r\nX-Injected: 1", "GET", "-", r"/a\x0d\x0aX-Injected:\x201", "GET", "-",
        id="CRLF",
    ),
    P(
        b"/\x00\x1b[2J\x07\x7f\t", "GET", "-", r"/\x00\x1b[2J\x07\x7f\x09", "GET", "-",
        id="NUL, ESC, BEL, DEL, TAB",
    ),
    P(
        b"/caf\xc3\xa9\xe2\x80\xae\xe2\x80\xa8\xc2\x85", "GET", "-",
        r"/caf\xc3\xa9\xe2\x80\xae\xe2\x80\xa8\xc2\x85", "GET", "-",
        id="raw UTF-8: bidi override, line separator, NEL",
    ),
    P(b"/\\x41\\", "GET", "-", r"/\\x41\\", "GET", "-", id="backslashes stay unambiguous"),
    P(
        b"/a b", "GET\r\nEVIL", "h\r\n:1", r"/a\x20b", r"GET\x0d\x0aEVIL", r"h\x0d\x0a:1",
        id="space, hostile method and client",
    ),
    P(
        b"/" + b"\r\n" * 10000, "GET", "-", "/" + r"\x0d\x0a" * 127 + r"\x0d...[len=20001]",
        "GET", "-", id="long: 256 bytes of it, then its length",
    ),
    P(
        b"/" + b"a" * 255 + b"%", "GET", "-", "/" + "a" * 255 + "...[len=257]", "GET", "-",
        id="one byte past the limit",
    ),
    P(b"/" + b"a" * 254 + b"%", "GET", "-", "/" + "a" * 254 + "%", "GET", "-", id="at the limit"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "method", "client", "shown", "shown_method", "shown_client"), HOSTILE
)
def test_log_line_is_escaped_and_bounded(
    parser: Parser,
    raw: bytes,
    method: str,
    client: str,
    shown: str,
    shown_method: str,
    shown_client: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = make(parser, Request(method, client=client)).guard
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        assert isinstance(decide(guard, raw), Answer)
    (record,) = caplog.records
    line = record.getMessage()
    assert all(0x20 <= ord(c) <= 0x7E for c in line), line
    assert line.endswith(f" client={shown_client} method={shown_method} target={shown}")
    assert f"rule={record.__dict__['urlguard_rule']} " in line


@pytest.mark.parametrize("level", [logging.INFO, logging.ERROR])
def test_log_level_option(parser: Parser, level: int, caplog: pytest.LogCaptureFixture) -> None:
    guard = make(parser, log_level=level).guard
    with caplog.at_level(logging.DEBUG, logger="urlguard"):
        decide(guard, b"/%C4")
    assert [r.levelno for r in caplog.records] == [level]
    caplog.clear()
    with caplog.at_level(level + 1, logger="urlguard"):
        decide(guard, b"/%C4")
    assert caplog.records == []
    assert guard.violations == {"invalid-utf8": 2}  # counted all the same


# --- per-route policies --------------------------------------------------------------------

ROUTES: dict[str, Any] = {
    "/files/": {"encoded_slash": "keep"},
    "/files/private/": Policy(),
    "/api": {"allowed_ranges": [[0x20, 0x7E]]},
}

ROUTED = [
    # mount point, raw target, query -> segments, or the rule
    P(None, b"/files/a%2Fb", None, ("files", "a/b"), id="route keeps %2F"),
    P(None, b"/files/a%2Fb", b"q=1", ("files", "a/b"), id="route, the query apart"),
    P(None, b"/files/private/a%2Fb", None, "encoded-slash", id="longest prefix wins"),
    P(None, b"/other/a%2Fb", None, "encoded-slash", id="base policy elsewhere"),
    P(None, b"/filesx/a%2Fb", None, "encoded-slash", id="prefix ends at its slash"),
    P(None, b"/files", None, ("files",), id="directory prefix needs the slash"),
    P(None, b"/%66iles/a%2Fb", None, ("files", "a/b"), id="matched decoded, as routed"),
    P(None, b"/api/caf%C3%A9", None, "forbidden-char", id="stricter route"),
    P(None, b"/api", None, ("api",), id="prefix matches itself"),
    P(None, b"/apix/caf%C3%A9", None, ("apix", "café"), id="prefix ends at a segment"),
    P(None, b"/%61pi/caf%C3%A9", None, "forbidden-char", id="no escape from a strict route"),
    P(None, b"/api%2Fx/caf%C3%A9", None, "encoded-slash", id="encoded slash after prefix"),
    P(None, b"http://h/files/a%2Fb", None, ("files", "a/b"), id="absolute-form"),
    P(b"/mnt", b"/mnt/files/a%2Fb", None, ("files", "a/b"), id="relative to the mount point"),
    P(b"/mnt", b"/mnt/files/a%2Fb", b"", ("files", "a/b"), id="below it, the query apart"),
    P(b"/mnt", b"/%6Dnt/files/a%2Fb", None, ("files", "a/b"), id="escaped mount point"),
    P(b"/my app", b"/my%20app/files/a%2Fb", None, ("files", "a/b"), id="mount with a space"),
    P(b"/mnt", b"/files/a%2Fb", None, ("files", "a/b"), id="mount point taken off before"),
]


@pytest.mark.parametrize(("mount", "raw", "query", "expected"), ROUTED)
def test_routes(
    parser: Parser,
    mount: bytes | None,
    raw: bytes,
    query: bytes | None,
    expected: tuple[str, ...] | str,
) -> None:
    guard = make(parser, routes=ROUTES).guard
    carrier: Carrier = {}
    decision = decide(guard, raw, query, mount, carrier)
    if isinstance(expected, str):
        assert isinstance(decision, Answer)
        assert carrier["urlguard.violation"].rule == expected
    else:
        assert passed(decision)
        assert carrier["urlguard.target"].segments == expected


# --- the routing path ----------------------------------------------------------------------

#: raw target (WSGI: whole; ASGI: the path, the query apart), mount point ->
#: the decision for a passing target under a policy that keeps %2F.
ROUTING = [
    P(b"/units/kg", None, None, id="no escape: the server's path"),
    P(b"/units/caf%C3%A9%20x", None, None, id="escapes but no kept slash"),
    P(b"/units/50%25", None, None, id="a percent alone: the server's path"),
    P(b"/units/a?next=%2Fhome", None, None, id="an escaped slash in the query only"),
    P(b"/units/kg%2Fs", None, RoutingPath("/units/kg%2Fs", False), id="kept slash"),
    P(b"/units/kg%2fs", None, RoutingPath("/units/kg%2Fs", False), id="lower case: written upper"),
    P(b"/u/50%25%2F", None, RoutingPath("/u/50%25%2F", False), id="percent beside a kept slash"),
    P(b"/u/caf%C3%A9%2Fx/a%20b", None, RoutingPath("/u/café%2Fx/a b", False), id="decoded"),
    P(b"/m/u/a%2Fb", b"/m", RoutingPath("/u/a%2Fb", True), id="below the mount point"),
    P(b"/u/a%2Fb", b"/m", RoutingPath("/u/a%2Fb", False), id="not below the mount point"),
    P(b"/u/a%252Fb", None, RoutingPath("/u/a%252Fb", False), id="escape text kept apart"),
]


@pytest.mark.parametrize(("raw", "mount", "expected"), ROUTING)
@pytest.mark.parametrize("routed", [P(False, id="one policy"), P(True, id="routes")])
def test_the_routing_path(
    parser: Parser, raw: bytes, mount: bytes | None, expected: object, routed: bool
) -> None:
    keep = Policy(encoded_slash="keep", double_encoding="allow")
    options: dict[str, Any] = (
        {"routes": {"/": keep, "/elsewhere/": {}}} if routed else {"policy": keep}
    )
    guard = make(parser, **options).guard
    carrier: Carrier = {}
    assert decide(guard, raw, None, mount, carrier) == expected
    assert isinstance(carrier["urlguard.target"], Target)


def test_no_routing_path_where_no_policy_keeps_a_slash(parser: Parser) -> None:
    guard = make(parser, policy=Policy(double_encoding="allow")).guard
    carrier: Carrier = {}
    assert decide(guard, b"/u/a%252Fb", None, None, carrier) is None
    assert carrier["urlguard.target"].segments == ("u", "a%2Fb")


# A base policy that keeps %2F and a stricter route: below a mount point, the
# target must pass the policy of the route a framework may route it to. The
# servers hand the mount point over two ways (uvicorn glues root_path in front
# of raw_path; hypercorn, granian, daphne and the WSGI servers leave the raw
# target as sent), and the framework routes on the decoded path with the
# decoded mount point taken off (Starlette's get_route_path).
KEEPING = Policy(encoded_slash="keep")
STRICT_ADMIN = {"/admin/": {"encoded_slash": "reject"}, "/files/": {"path_params": "reject"}}
MOUNTED = [
    # mount point, raw target as the server hands it -> segments, or the rule
    P(b"/m", b"/m%2Fadmin/caf%C3%A9", "encoded-slash", id="escape hides the mount's end"),
    P(b"/m", b"/m%2Fadmin/a%2Fb", "encoded-slash", id="and the route's rule applies"),
    P(b"/m", b"/%6D%2Fadmin/x", "encoded-slash", id="mount point escaped too"),
    P(b"/m", b"/m/m%2Fadmin/x", ("m/admin", "x"), id="uvicorn: glued, then a name"),
    P(b"/m", b"/m/admin/a%2Fb", "encoded-slash", id="plain mount, strict route"),
    P(b"/m", b"/admin/a%2Fb", "encoded-slash", id="mount point taken off before"),
    P(b"/m", b"/m/x%2Fy", ("x/y",), id="plain mount, base policy"),
    P(b"/m", b"/m%2Fx%2Fy", ("m/x/y",), id="escaped boundary, base on both views"),
    P(b"/m", b"/m%2Ffiles/a;b", "raw-char", id="hidden boundary, another route"),
    P(b"/m/x", b"/m/x%2Fadmin/a", "encoded-slash", id="deeper mount point"),
    P(b"/my app", b"/my%20app%2Fadmin/a", "encoded-slash", id="mount with a space"),
    P(None, b"/m%2Fadmin/a", ("m/admin", "a"), id="no mount: the decoded path is the key"),
    P(None, b"/x%2Fadmin/a", ("x/admin", "a"), id="no mount, no route"),
]


@pytest.mark.parametrize(("mount", "raw", "expected"), MOUNTED)
@pytest.mark.parametrize("query", [P(None, id="whole"), P(b"q=1", id="query apart")])
def test_routes_below_a_mount_point(
    parser: Parser,
    mount: bytes | None,
    raw: bytes,
    expected: tuple[str, ...] | str,
    query: bytes | None,
) -> None:
    guard = make(parser, policy=KEEPING, routes=STRICT_ADMIN).guard
    carrier: Carrier = {}
    decision = decide(guard, raw, query, mount, carrier)
    if isinstance(expected, str):
        assert isinstance(decision, Answer)
        assert decision.status == 400
        assert carrier["urlguard.violation"].rule == expected
        assert "urlguard.target" not in carrier
    else:
        assert passed(decision)
        assert carrier["urlguard.target"].segments == expected


def test_routes_below_a_mount_point_in_report_mode(parser: Parser) -> None:
    """Report mode passes the request on with the violation, and no target,
    even when the first policy accepted it."""
    guard = make(parser, policy=KEEPING, routes=STRICT_ADMIN, mode="report").guard
    carrier: Carrier = {}
    assert decide(guard, b"/m%2Fadmin/a%2Fb", None, b"/m", carrier) is None
    assert carrier["urlguard.violation"].rule == "encoded-slash"
    assert "urlguard.target" not in carrier


def test_routes_override_the_given_policy(parser: Parser) -> None:
    guard = make(parser, policy=Policy.browser(), routes={"/f/": {"encoded_slash": "keep"}}).guard
    assert guard.policy == Policy.browser()
    (route,) = guard.table.routes
    assert route.policy == Policy.browser(encoded_slash="keep")  # the given policy, overridden
    assert verdict(guard, b"/f/a%2F[b]") == ("f", "a/[b]")
    assert verdict(guard, b"/g/a%2F[b]") == "encoded-slash"


# --- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize("as_str", [P(False, id="a Path"), P(True, id="a str")])
def test_config_file(parser: Parser, tmp_path: Path, as_str: bool) -> None:
    path = tmp_path / "urlguard.toml"
    path.write_text(
        'preset = "browser"\nmode = "report"\n[routes."/files/"]\nencoded_slash = "keep"\n'
    )
    guard = make(parser, config=str(path) if as_str else path).guard
    assert guard.mode == "report"
    assert guard.policy == Policy.browser()
    assert verdict(guard, b"/files/a%2F[b]") == ("files", "a/[b]")
    carrier: Carrier = {}
    assert decide(guard, b"/x/a%2F[b]", None, None, carrier) is None  # report-only
    assert carrier["urlguard.violation"].rule == "encoded-slash"


def test_pyproject_config_and_mode_override(parser: Parser, tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n[tool.urlguard]\nmode = "report"\n')
    assert make(parser, config=path).guard.mode == "report"
    guard = make(parser, config=path, mode="enforce").guard
    assert guard.mode == "enforce"
    assert rejected(guard, b"/%C4") == "invalid-utf8"


@pytest.mark.parametrize(
    ("config", "mode", "expected"),
    [
        P(Config(policy=Policy(dot_segment="allow")), None, ("enforce", ("a", "..", "b"))),
        P(Config(mode="report"), None, ("report", None)),
        P(Config(mode="enforce"), "report", ("report", None)),
        P(Config(mode="report"), "enforce", ("enforce", "dot-segment")),
    ],
)
def test_config_object_and_mode_override(
    parser: Parser, config: Config, mode: str | None, expected: tuple[str, object]
) -> None:
    guard = make(parser, config=config, mode=mode).guard
    carrier: Carrier = {}
    decision = decide(guard, b"/a/../b", None, None, carrier)
    shown_mode, result = expected
    assert guard.mode == shown_mode
    if isinstance(result, tuple):
        assert decision is None
        assert carrier["urlguard.target"].segments == result
    elif result is None:
        assert decision is None
        assert carrier["urlguard.violation"].rule == "dot-segment"
    else:
        assert isinstance(decision, Answer)
        assert carrier["urlguard.violation"].rule == result


BAD_OPTIONS = [
    P({"policy": {"encoded_slash": "keep"}}, TypeError, "policy", id="policy not a Policy"),
    P({"routes": [("/a", Policy())]}, TypeError, "routes", id="routes not a mapping"),
    P({"routes": {"a": {}}}, ValueError, "routes['a']", id="prefix without slash"),
    P({"routes": {"/a b": {}}}, ValueError, "/a b", id="prefix with space"),
    P({"routes": {"/a": {"bogus": 1}}}, ValueError, "bogus", id="unknown policy key"),
    P({"routes": {"/a": {"encoded_slash": "maybe"}}}, ValueError, "encoded_slash", id="bad value"),
    P({"routes": {"/a": 3}}, TypeError, "routes['/a']", id="route value"),
    P({"routes": {"/a/": {}, "/%61/": {}}}, ValueError, "same prefix", id="duplicate prefix"),
    P({"mode": "report-only"}, ValueError, "mode", id="unknown mode"),
    P({"on_reject": 3}, TypeError, "on_reject", id="on_reject not callable"),
    P({"on_reject": _async_hook}, TypeError, "on_reject", id="on_reject a coroutine function"),
    P({"on_violation": "x"}, TypeError, "on_violation", id="on_violation not callable"),
    P({"missing_raw_target": "guess"}, ValueError, "missing_raw_target", id="missing raw"),
    P({"log_level": "WARNING"}, TypeError, "log_level", id="log_level a string"),
    P({"log_level": -1}, TypeError, "log_level", id="negative log level"),
    P({"config": 123}, TypeError, "config", id="config type"),
    P({"config": Config(), "policy": Policy()}, ValueError, "config", id="config and policy"),
    P({"config": Config(), "routes": {}}, ValueError, "config", id="config and routes"),
    P({"config": "/nonexistent/urlguard.toml"}, ValueError, "cannot read", id="config missing"),
    P({"parser": "compiled"}, TypeError, "parser must be", id="parser a name"),
    P({"parser": json}, TypeError, "parser must be", id="parser another module"),
]


@pytest.mark.parametrize(("options", "error", "words"), BAD_OPTIONS)
def test_bad_configuration_fails_at_construction(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=re.escape(words)):
        check_options("test", "ASGI", "nothing given", **options)


# --- what kind of forbidden character ---------------------------------------------------------

ASCII_ONLY = Policy(allowed_ranges=[(0x20, 0x7E)])

FORBIDDEN = [
    # raw target, policy, the words that replace "outside the allowed range"
    P(b"/%E2%80%AE", Policy(), "a bidirectional control", id="U+202E RLO"),
    P(b"/x?q=%D8%9C", Policy(), "a bidirectional control", id="U+061C in the query"),
    P(b"/%E2%81%A9", Policy(), "a bidirectional control", id="U+2069 PDI"),
    P(b"/%00", Policy(), "a control character", id="NUL"),
    P(b"/%7F", Policy(), "a control character", id="DEL"),
    P(b"/%C2%85", Policy(), "a control character", id="U+0085 NEL"),
    P(b"/%E2%80%A8", Policy(), "a line or paragraph separator", id="U+2028"),
    P(b"/%EF%B7%90", Policy(), "a Unicode noncharacter", id="U+FDD0"),
    P(b"/%F4%8F%BF%BF", Policy(), "a Unicode noncharacter", id="U+10FFFF"),
    P(b"/caf%C3%A9", ASCII_ONLY, "outside the policy's allowed_ranges", id="é, ASCII only"),
    P(b"/%F0%9F%98%80", ASCII_ONLY, "outside the policy's allowed_ranges", id="emoji"),
    P(b"/a%00", ASCII_ONLY, "a control character", id="NUL, ASCII only"),
    P(b"http://h/%E2%80%8F", Policy(), "a bidirectional control", id="absolute-form"),
]


@pytest.mark.parametrize(("raw", "policy", "words"), FORBIDDEN)
def test_forbidden_char_names_its_class(
    parser: Parser, raw: bytes, policy: Policy, words: str
) -> None:
    with pytest.raises(InvalidTarget) as caught:
        parser.parse_target(raw, policy)
    exc = caught.value
    assert exc.rule == "forbidden-char"
    detail = describe(exc, raw)
    assert detail.startswith(f"forbidden-char: a decoded character is {words}")
    assert detail.endswith(str(exc)[str(exc).index(" (") :])  # where, as str(exc) says it
    assert "allowed range (" not in detail


def test_forbidden_char_class_reaches_the_answer(parser: Parser) -> None:
    guard = make(parser, Request("GET", accept="application/json")).guard
    answer = decide(guard, b"/x", b"q=%E2%80%AE")
    assert isinstance(answer, Answer)
    assert json.loads(answer.body)["detail"] == (
        "forbidden-char: a decoded character is a bidirectional control (Unicode TR9; "
        "CVE-2021-42574) (query parameter 0, byte offset 5)"
    )


def test_other_rules_keep_their_message(parser: Parser) -> None:
    with pytest.raises(InvalidTarget) as caught:
        parser.parse_target(b"/%C4")
    assert describe(caught.value, b"/%C4") == str(caught.value)


@pytest.mark.parametrize(
    ("char", "words"),
    [
        P("\u0000", "a control character (C0, DEL or C1)", id="U+0000"),
        P("\u009f", "a control character (C0, DEL or C1)", id="U+009F"),
        P("\u00a0", "outside the policy's allowed_ranges", id="U+00A0"),
        P("\u200e", "a bidirectional control (Unicode TR9; CVE-2021-42574)", id="U+200E"),
        P("\u2066", "a bidirectional control (Unicode TR9; CVE-2021-42574)", id="U+2066"),
        P("\ufdef", "a Unicode noncharacter", id="U+FDEF"),
        P("\ufffe", "a Unicode noncharacter", id="U+FFFE"),
        P("\U0001fffe", "a Unicode noncharacter", id="U+1FFFE"),
        P("\ufffd", "outside the policy's allowed_ranges", id="U+FFFD"),
    ],
)
def test_forbidden_class(char: str, words: str) -> None:
    assert forbidden_class(char) == words


# --- validate-decoded: U+FFFD ------------------------------------------------------------------


class R(NamedTuple):
    """A rejection: rule, component, index (of the segment or pair), offset."""

    rule: str
    component: str
    piece: int | None
    offset: int


# (decoded path, raw query, policy overrides) ->
#   accepted segments, or R(rule, component, index, offset) of the violation.
DECODED = [
    P("/caf\u00e9", b"", {}, ("café",), id="real UTF-8 is fine"),
    P("/caf\ufffd", b"", {}, R("invalid-utf8", "path", 0, 4), id="U+FFFD in a segment"),
    P("/ok/x\ufffd", b"", {}, R("invalid-utf8", "path", 1, 5), id="in a later segment"),
    P(
        "/a;x=\ufffd",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 5),
        id="in a split matrix parameter value",
    ),
    P(
        "/a;\ufffd=1/b",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 3),
        id="in a split matrix parameter name",
    ),
    P(
        "/a;x=\ufffd",
        b"",
        {},
        R("invalid-utf8", "path", 0, 5),
        id="in a literal ';' segment",
    ),
    P("/\ufffd/..", b"", {}, R("invalid-utf8", "path", 0, 1), id="before a later dot segment"),
    P("/../\ufffd", b"", {}, R("dot-segment", "path", 0, 1), id="after an earlier dot segment"),
    P(
        "/\ufffd%41",
        b"",
        {},
        R("invalid-utf8", "path", 0, 1),
        id="before double encoding in its own segment",
    ),
    P(
        "/x/%41/\ufffd",
        b"",
        {},
        R("double-encoding", "path", 1, 3),
        id="after double encoding in an earlier segment",
    ),
    P(
        "/\ufffd",
        b"q=a b",
        {},
        R("raw-char", "query", 0, 14),
        id="after a raw char in the query",
    ),
    P(
        "/a/b/\ufffd",
        b"",
        {"max_segments": 2},
        R("too-many", "path", 2, 4),
        id="after too many segments",
    ),
    P(
        "/\ufffd",
        b"q=%C4",
        {},
        R("invalid-utf8", "path", 0, 1),
        id="before the query's own invalid UTF-8",
    ),
    P(
        "/a",
        b"q=%EF%BF%BD",
        {},
        ("a",),
        id="escaped U+FFFD in the exact query is the client's",
    ),
    P("/a", b"q=%C4", {}, R("invalid-utf8", "query", 0, 5), id="query still checked"),
    P(
        "/\\\ufffd",
        b"",
        {},
        R("encoded-backslash", "path", 0, 1),
        id="after an encoded backslash in its own segment",
    ),
    P(
        "/\ufffd;x=\\",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 1),
        id="split: in the name, before an encoded backslash in a parameter",
    ),
    P(
        "/\x01;x=\ufffd",
        b"",
        {"path_params": "split"},
        R("forbidden-char", "path", 0, 1),
        id="split: after a forbidden character in the name",
    ),
    P("/\ufffd\ufffd", b"", {}, R("invalid-utf8", "path", 0, 1), id="two: the first"),
]


@pytest.mark.parametrize(("path", "query", "overrides", "expected"), DECODED)
def test_check_decoded(
    parser: Parser,
    path: str,
    query: bytes,
    overrides: dict[str, Any],
    expected: tuple[str, ...] | R,
) -> None:
    guard = make(parser, policy=Policy(**overrides), missing_raw_target="validate-decoded").guard
    rebuilt = rebuild_target(path.encode("utf-8"), query or None)
    if isinstance(expected, R):
        with pytest.raises(InvalidTarget) as caught:
            check_decoded(parser.parse_target, guard.table.select(rebuilt), rebuilt, None)
        exc = caught.value
        assert R(exc.rule, exc.component, exc.index, exc.offset) == expected
    else:
        target = check_decoded(parser.parse_target, guard.table.select(rebuilt), rebuilt, None)
        assert target.segments == expected
