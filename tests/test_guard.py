"""The decision, on its own: ``Guard.decide`` given what an adapter read (the
raw target, the query, the mount point, and a ``read`` function for the rest),
without any scope or environ. The adapters are tested at their boundary in
test_asgi.py and test_wsgi.py.

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
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, get_type_hints

import pytest

from urlguard import Config, InvalidTarget, Policy, Target, asgi, parse_target, wsgi
from urlguard._answers import Answer, describe, forbidden_class
from urlguard._guard import Guard, GuardedMiddleware, MissingRawTarget, Request, rebuild_target

P = pytest.param
Carrier = dict[str, Any]
App = Callable[..., Any]
MARK = b"ECHOME"


class Reader:
    """An adapter's ``read``: a fixed :class:`Request`, and how often it was asked."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.calls = 0

    def __call__(self, carrier: Carrier) -> Request:
        self.calls += 1
        return self.request


def make(request: Request | None = None, **options: Any) -> tuple[Guard[Carrier, App], Reader]:
    reader = Reader(Request("GET") if request is None else request)
    return Guard("test", "ASGI", reader, "nothing given", **options), reader


def decide(
    guard: Guard[Carrier, App],
    raw: Any,  # bytes or None; now and then what a server may hand over instead
    query: bytes | None = None,
    mount: bytes | None = None,
    carrier: Carrier | None = None,
) -> Answer | App | None:
    # As the adapters ask: through the decider, compiled when the parser is.
    return guard.decider().decide(raw, query, mount, {} if carrier is None else carrier)


def accepted(
    guard: Guard[Carrier, App], raw: bytes, query: bytes | None, mount: bytes | None
) -> Target:
    """The Target ``decide`` stored: the request went on with it."""
    carrier: Carrier = {}
    assert decide(guard, raw, query, mount, carrier) is None
    target = carrier["urlguard.target"]
    assert isinstance(target, Target)
    return target


# --- the options, declared once for both middlewares ----------------------------------------

OPTIONS = {
    "policy": Policy | None,
    "routes": Mapping[str, Policy | Mapping[str, Any]] | None,
    "config": Config | str | os.PathLike[str] | None,
    "mode": str | None,
    "missing_raw_target": MissingRawTarget,
    "log_level": int,
}


@pytest.mark.parametrize(
    "middleware",
    [P(asgi.StrictURLMiddleware, id="ASGI"), P(wsgi.StrictURLMiddleware, id="WSGI")],
)
def test_options_are_typed_keywords(middleware: type[GuardedMiddleware[Any, Any]]) -> None:
    # What an editor shows for StrictURLMiddleware(...): app first, then the
    # options as keywords with their types and defaults.
    parameters = list(inspect.signature(middleware).parameters.values())
    assert [p.name for p in parameters] == [
        "app", "policy", "routes", "config", "mode", "on_reject", "on_violation",
        "missing_raw_target", "log_level",
    ]  # fmt: skip
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert {p.kind for p in parameters[1:]} == {inspect.Parameter.KEYWORD_ONLY}
    assert [p.default for p in parameters[1:]] == [None] * 6 + ["refuse", logging.WARNING]
    hints = get_type_hints(middleware.__init__)
    assert {name: hints[name] for name in OPTIONS} == OPTIONS


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
    raw: bytes | bytearray,
    query: bytes | None,
    mount: bytes | None,
    expected: tuple[str, ...] | int,
) -> None:
    guard, reader = make()
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


def _app(*args: Any) -> None:
    return None


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
    raw: bytes | None,
    request_: Request,
    options: dict[str, Any],
    returned: object,
    target: str | None,
) -> None:
    guard, _ = make(request_, **options)
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
    mount: bytes, raw: bytes, query: bytes | None, relative: bytes
) -> None:
    guard, _ = make()
    path, question, rest = raw.partition(b"?")
    bare = accepted(guard, raw, query, mount)
    slash = accepted(guard, path + b"/" + question + rest, query, mount)
    assert bare == slash
    assert (bare.raw, bare.segments) == (relative, ("",))


# Where the mount point is taken off: the raw target the Target holds, or
# None when it is rejected. The mount point is glued in front of the raw path
# (uvicorn), given with a trailing '/', escaped, or not there at all.
UNMOUNTED = [
    # mount point, raw target -> Target.raw
    P(b"/mnt", b"/mnt/a", b"/a", id="glued in front"),
    P(b"/mnt", b"/mnt/", b"/", id="its slash"),
    P(b"/mnt", b"/mnt", b"/", id="itself"),
    P(b"/mnt", b"/mnt?q", b"/?q", id="itself, a query"),
    P(b"/mnt", b"/mnt/a?q=/mnt", b"/a?q=/mnt", id="a query that names it"),
    P(b"/mnt", b"/mntx/a", b"/mntx/a", id="a longer first segment"),
    P(b"/mnt", b"/mn", b"/mn", id="a shorter path"),
    P(b"/mnt", b"/MNT/a", b"/MNT/a", id="another case"),
    P(b"/mnt", b"/a/mnt/b", b"/a/mnt/b", id="further down"),
    P(b"/mnt", b"/mnt//a", None, id="an empty segment after it"),
    P(b"/mnt/", b"/mnt/a", b"/a", id="a trailing slash"),
    P(b"/mnt/", b"/mnt", b"/", id="a trailing slash, itself"),
    P(b"/mnt/", b"/mnt//a", None, id="a trailing slash, then an empty segment"),
    P(b"/", b"/a", b"/a", id="the root"),
    P(b"/a/b", b"/a/b/c", b"/c", id="two segments"),
    P(b"/a/b", b"/a/bc", b"/a/bc", id="two segments, a longer last one"),
    P(b"/my app", b"/my%20app/x", b"/x", id="an escaped mount point"),
    P(b"/caf\xc3\xa9", b"/caf%C3%A9/x", b"/x", id="a non-ASCII mount point"),
    P(b"/%7E", b"/%7E/x", b"/x", id="a '%' in the mount point, glued in front"),
]


@pytest.mark.parametrize(("mount", "raw", "relative"), UNMOUNTED)
def test_where_the_mount_point_is_taken_off(
    mount: bytes, raw: bytes, relative: bytes | None
) -> None:
    guard, _ = make()
    carrier: Carrier = {}
    decision = decide(guard, raw, None, mount, carrier)
    if relative is None:
        assert isinstance(decision, Answer)
    else:
        assert decision is None
        assert carrier["urlguard.target"].raw == relative


def test_the_decider_is_compiled_with_the_compiled_parser(implementation: str) -> None:
    for options in ({}, {"routes": {"/a/": {"encoded_slash": "keep"}}}, {"mode": "report"}):
        guard, _ = make(**options)
        decider = guard.decider()
        if implementation == "python":
            assert decider is guard
        else:
            assert type(decider).__module__ == "urlguard._parser_c"


def test_answer_is_complete_and_never_echoes() -> None:
    guard, _ = make(Request("GET", accept="application/json"))
    answer = decide(guard, b"/" + MARK + b"%C4")
    assert isinstance(answer, Answer)
    headers = dict(answer.headers)
    assert (answer.status, answer.status_line) == (400, "400 Bad Request")
    assert headers["Content-Type"] == "application/problem+json"
    assert headers["Content-Length"] == str(len(answer.body))
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert MARK not in answer.body
    assert json.loads(answer.body)["rule"] == "invalid-utf8"
    assert answer.reason == "invalid request target: invalid-utf8"


def test_head_answer_has_the_length_of_the_get_body() -> None:
    get = decide(make()[0], b"/%C4")
    head = decide(make(Request("HEAD"))[0], b"/%C4")
    assert isinstance(get, Answer)
    assert isinstance(head, Answer)
    assert head.body == b""
    assert head.headers == get.headers
    assert dict(get.headers)["Content-Length"] == str(len(get.body))


@pytest.mark.parametrize(
    ("method", "raw", "passes"),
    [
        P("OPTIONS", b"*", True, id="OPTIONS *"),
        P("OPTIONS", b"/mnt*", True, id="OPTIONS *, root glued in front"),
        P("GET", b"*", False, id="GET *"),
        P("OPTIONS", b"*?x", False, id="OPTIONS *?x"),
    ],
)
def test_options_asterisk_passes_untouched(method: str, raw: bytes, passes: bool) -> None:
    guard, _ = make(Request(method))
    carrier: Carrier = {}
    decision = decide(guard, raw, None, b"/mnt", carrier)
    if passes:
        assert decision is None
        assert carrier == {}
        assert guard.violations == {}
    else:
        assert isinstance(decision, Answer)
        assert carrier["urlguard.violation"].rule == "bad-form"


def test_report_mode_passes_with_the_violation_stored() -> None:
    guard, _ = make(mode="report", on_reject=lambda exc, carrier: None)
    carrier: Carrier = {"urlguard.target": "stale"}
    assert decide(guard, b"/a%2Fb", None, b"", carrier) is None
    assert set(carrier) == {"urlguard.violation"}
    assert carrier["urlguard.violation"].rule == "encoded-slash"
    assert guard.violations == {"encoded-slash": 1}


def test_hooks_see_the_violation_in_the_carrier() -> None:
    seen: list[tuple[str, object]] = []

    def app(*args: Any) -> None:
        return None

    def on_reject(exc: InvalidTarget, carrier: Carrier) -> App:
        seen.append(("on_reject", carrier["urlguard.violation"]))
        return app

    def on_violation(exc: InvalidTarget, carrier: Carrier) -> None:
        seen.append(("on_violation", carrier["urlguard.violation"]))

    guard, _ = make(on_reject=on_reject, on_violation=on_violation)
    carrier: Carrier = {}
    assert decide(guard, b"/%2e%2e", None, b"", carrier) is app
    violation = carrier["urlguard.violation"]
    assert seen == [("on_violation", violation), ("on_reject", violation)]


def test_websocket_handshakes_get_the_default_answer() -> None:
    calls: list[InvalidTarget] = []
    guard, _ = make(
        Request("websocket", websocket=True), on_reject=lambda exc, carrier: calls.append(exc)
    )
    answer = decide(guard, b"/ws/%C4")
    assert isinstance(answer, Answer)
    assert answer.status == 400
    assert calls == []


# --- no raw target ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "missing_raw_target", "expected"),
    [
        P(Request("GET", path=b"/a"), "refuse", 501, id="refused"),
        P(Request("HEAD", path=b"/a"), "refuse", 501, id="refused, HEAD"),
        P(Request("OPTIONS", path=b"*"), "refuse", None, id="OPTIONS * passes"),
        P(Request("GET", path=b"/mnt/a", query=b"q=1"), "validate-decoded", ("a",), id="decoded"),
        P(Request("GET", path=b"/mnt"), "validate-decoded", ("",), id="decoded mount point"),
        P(Request("GET", path=b"/mnt/a\x00"), "validate-decoded", 400, id="decoded NUL"),
        P(Request("GET", path=None), "validate-decoded", 501, id="not even a path"),
    ],
)
def test_without_raw_target(
    request_: Request,
    missing_raw_target: str,
    expected: tuple[str, ...] | int | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard, _ = make(request_, missing_raw_target=missing_raw_target)
    carrier: Carrier = {}
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decision = decide(guard, None, b"", b"/mnt", carrier)
    if expected is None:
        assert decision is None
        assert carrier == {}
        assert caplog.records == []
    elif isinstance(expected, tuple):
        assert decision is None
        assert carrier["urlguard.target"].segments == expected
    else:
        assert isinstance(decision, Answer)
        assert decision.status == expected
        headers = dict(decision.headers)
        assert headers["Content-Length"] != "0"
        assert (headers.get("Cache-Control") == "no-store") is (expected == 501)
        assert decision.body == (b"" if request_.method == "HEAD" else decision.body)


# --- the log line ---------------------------------------------------------------------------


def test_log_line_under_the_default_format(caplog: pytest.LogCaptureFixture) -> None:
    guard, _ = make(Request("GET", client="127.0.0.1:5"))
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        decide(guard, b"/a\r\n%zz")
    (record,) = caplog.records
    line = logging.Formatter(logging.BASIC_FORMAT).format(record)
    assert line == (
        "WARNING:urlguard:rejected request target: rule=raw-char component=path index=0 "
        "offset=2 client=127.0.0.1:5 method=GET target=/a\\x0d\\x0a%zz"
    )


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
def test_forbidden_char_names_its_class(raw: bytes, policy: Policy, words: str) -> None:
    with pytest.raises(InvalidTarget) as caught:
        parse_target(raw, policy)
    exc = caught.value
    assert exc.rule == "forbidden-char"
    detail = describe(exc, raw)
    assert detail.startswith(f"forbidden-char: a decoded character is {words}")
    assert detail.endswith(str(exc)[str(exc).index(" (") :])  # where, as str(exc) says it
    assert "allowed range (" not in detail


def test_forbidden_char_class_reaches_the_answer() -> None:
    guard, _ = make(Request("GET", accept="application/json"))
    answer = decide(guard, b"/x", b"q=%E2%80%AE")
    assert isinstance(answer, Answer)
    assert json.loads(answer.body)["detail"] == (
        "forbidden-char: a decoded character is a bidirectional control (Unicode TR9; "
        "CVE-2021-42574) (query parameter 0, byte offset 5)"
    )


def test_other_rules_keep_their_message() -> None:
    with pytest.raises(InvalidTarget) as caught:
        parse_target(b"/%C4")
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
    path: str, query: bytes, overrides: dict[str, object], expected: tuple[str, ...] | R
) -> None:
    guard, _ = make(policy=Policy(**overrides), missing_raw_target="validate-decoded")  # type: ignore[arg-type]
    rebuilt = rebuild_target(path.encode("utf-8"), query or None)
    if isinstance(expected, R):
        with pytest.raises(InvalidTarget) as caught:
            guard.check_decoded(rebuilt)
        exc = caught.value
        assert R(exc.rule, exc.component, exc.index, exc.offset) == expected
    else:
        assert guard.check_decoded(rebuilt).segments == expected
