"""``urlguard audit --suggest``: from access logs to a configuration.

The engine (``urlguard._suggest``) is fed requests as the auditor feeds it
(target, status, count, verdict under the current policy); the command is
run on logs written here, and its configuration read back with
``load_config`` and judged again on the same logs.
"""

from __future__ import annotations

import doctest
import json
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urlguard._suggest
from urlguard import InvalidTarget, Policy, config_from_mapping, load_config, parse_target
from urlguard import _grammar as g
from urlguard._routes import RouteTable
from urlguard._suggest import Ledger, Suggestion, scopes, status_class, suggest, toml_string
from urlguard.cli import main

P = pytest.param
BROWSER_QUERY = g.to_str(g.BROWSER_QUERY_EXTRA)  # '[\\]^`{|}'
Request = tuple[bytes, int | None, int]


def error_of(target: bytes, table: RouteTable) -> InvalidTarget | None:
    try:
        parse_target(target, table.select(target))
    except InvalidTarget as error:
        return error
    return None


def verdict(target: bytes, table: RouteTable) -> str:
    error = error_of(target, table)
    return "ok" if error is None else error.rule


def ledger_of(requests: Sequence[Request], table: RouteTable) -> Ledger:
    """A ledger fed as the auditor feeds it."""
    ledger = Ledger()
    for target, status, count in requests:
        error = error_of(target, table)
        ledger.count_statuses({status: count})
        if error is not None:
            ledger.observe(target, status, count, error)
    return ledger


def suggested(
    requests: Sequence[Request],
    policy: Policy | None = None,
    routes: Sequence[tuple[str, Policy]] = (),
) -> Suggestion:
    base = Policy() if policy is None else policy
    result = suggest(ledger_of(requests, RouteTable(base, list(routes))), base, routes)
    assert result.still_rejected == ()  # its own text, read back, admits what it meant to
    return result


def read_back(text: str) -> RouteTable:
    config = config_from_mapping(tomllib.loads(text))
    return RouteTable(config.policy, list(config.routes))


def stopped_rules(result: Suggestion) -> dict[str, int]:
    return {stop.rule: stop.requests for stop in result.stopped}


def test_docstring_examples() -> None:
    assert doctest.testmod(urlguard._suggest).failed == 0


# --- where: the narrowest prefixes ------------------------------------------------------

SCOPES = [
    P(
        [b"/api/v4/projects/a%2Fb", b"/api/v4/projects/c%2Fd/issues"],
        [],
        [("/api/v4/projects/", [0, 1])],
        id="the longest common prefix",
    ),
    P([b"/files/a%2Fb/c"], [], [("/files/a%2Fb/", [0])], id="one target: its own directory"),
    P([b"/a/x", b"/b/y"], [], [("/", [0, 1])], id="only '/' is common: the top level"),
    P([b"/a/x/1", b"/a/y/2"], [b"/b/z"], [("/a/", [0, 1])], id="failing elsewhere"),
    P(
        [b"/a/x/1", b"/a/y/2"],
        [b"/a/z/3"],
        [("/a/x/", [0]), ("/a/y/", [1])],
        id="a failing path between them: one route each",
    ),
    P(
        [b"/a/x/1", b"/a/x/2", b"/b/y/3"],
        [b"/c/z"],
        [("/a/x/", [0, 1]), ("/b/y/", [2])],
        id="failing under the root: split by first segment, then as long as each part allows",
    ),
    P([b"/a/1", b"/a/2"], [b"/a/3"], [("/a/", [0, 1])], id="a path ends at the prefix: kept"),
    P([b"/x", b"/y"], [b"/z"], [("/", [0, 1])], id="paths at the root: only the top level"),
    P(
        [b"/a/\xc3\xa9/1", b"/a/\xc3\xa9/2"],
        [],
        [("/a/", [0, 1])],
        id="a byte no prefix may hold: cut before it",
    ),
    P([b"/a/b c/1"], [], [("/a/", [0])], id="a space: cut before it"),
    P(
        [b"/api/p%2Fq/x"],
        [b"/api/p/q/y"],
        [("/api/p%2Fq/", [0])],
        id="routes match decoded paths: '/api/p%2Fq/' covers /api/p/q/y too",
    ),
]


@pytest.mark.parametrize(("served", "failing", "expected"), SCOPES)
def test_scopes(
    served: list[bytes], failing: list[bytes], expected: list[tuple[str, list[int]]]
) -> None:
    assert scopes(served, failing) == expected


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        P(200, "served", id="200"),
        P(204, "served", id="204"),
        P(301, "served", id="301"),
        P(304, "served", id="304"),
        P(399, "served", id="399"),
        P(400, "failed", id="400"),
        P(404, "failed", id="404"),
        P(499, "failed", id="nginx 499"),
        P(503, "failed", id="503"),
        P(101, "other", id="101"),
        P(0, "other", id="nginx 000"),
        P(600, "other", id="600"),
        P(None, "other", id="no status"),
    ],
)
def test_status_class(status: int | None, kind: str) -> None:
    assert status_class(status) == kind


def test_ledger_keeps_what_the_engine_needs_and_counts_the_rest() -> None:
    slash = InvalidTarget("encoded-slash", "path", 1, 2)
    dots = InvalidTarget("dot-segment", "path", 1, 2)
    ledger = Ledger(keep_failed=2)
    ledger.count_statuses({200: 10, 304: 2, 404: 5, 500: 1, 101: 1, None: 3})
    ledger.observe(b"/a/b%2Fc", 200, 4, slash)
    ledger.observe(b"/a/b%2Fc", 404, 1, slash)  # the same target, failing too
    ledger.observe(b"/x/y%2Fz", 404, 2, slash)
    ledger.observe(b"/x/..", 400, 3, dots)  # never loosened: no evidence needed
    ledger.observe(b"/p/q%2Fr", 500, 1, slash)
    ledger.observe(b"/s/t%2Fu", 404, 1, slash)  # beyond keep_failed
    ledger.observe(b"/o/p%2Fq", 101, 1, slash)  # neither way
    assert ledger.requests == {"served": 12, "failed": 6, "other": 4}
    assert ledger.items() == [
        (b"/a/b%2Fc", 4, 1),
        (b"/x/y%2Fz", 0, 2),
        (b"/p/q%2Fr", 0, 1),
    ]
    assert set(ledger.errors) == {b"/a/b%2Fc", b"/x/y%2Fz", b"/p/q%2Fr"}
    assert ledger.not_kept == {
        ("failed", "dot-segment"): 3,
        ("failed", "encoded-slash"): 1,
        ("other", "encoded-slash"): 1,
    }
    assert ledger.dropped == 1


# --- what: the narrowest change per cause -----------------------------------------------

GITLAB: list[Request] = [
    (b"/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20", 200, 40),
    (b"/api/v4/projects/gitlab-org%2Fgitlab-runner/merge_requests", 200, 15),
    (b"/api/v4/projects/inkscape%2Finkscape/repository/files/src%2Fmain.cpp/raw?ref=v1", 200, 6),
    (b"/api/v4/projects/fdroid%2Ffdroidclient", 304, 3),
    (b"/api/v4/projects/278964", 200, 9),  # a numeric id: fine already
]
JSON_API: list[Request] = [
    (b"/api/v1/articles?filter[author]=ada&page[size]=20", 200, 12),
    (b"/api/v1/people?filter[name]=Grace%20Hopper", 200, 4),
    (b"/api/v1/articles?include=author&fields[articles]=title,body", 200, 5),
]
TEXTAREA: list[Request] = [
    (b"/support/ticket?subject=Login&body=Hello%2C%0D%0AI+cannot+log+in.%0D%0AThanks", 200, 2),
    (b"/support/preview?body=line+one%0D%0Aline+two", 200, 3),
]
CARELESS_JOINS: list[Request] = [
    (b"/static//css/app.css", 200, 30),
    (b"/static/js//vendor.js", 200, 25),
    (b"/static//img/logo.svg", 304, 11),
]
PLAIN: list[Request] = [
    (b"/", 200, 100),
    (b"/about", 200, 10),
    (b"/search?q=caf%C3%A9+cr%C3%A8me", 200, 7),
    (b"/missing", 404, 5),
]
# Attacks, answered with errors and (by careless applications) with 2xx/3xx.
ATTACKS_FAILED: list[Request] = [
    (b"/static/../../etc/passwd", 400, 3),
    (b"/static/..%2F..%2Fetc%2Fpasswd", 404, 2),
    (b"/static/%C0%AE%C0%AE/%C0%AE%C0%AE/etc/passwd", 400, 2),  # overlong '.'
    (b"/api/v1/articles?filter[author]=%00", 500, 1),
    (b"/login?next=%E2%80%AEmoc.elgoog", 400, 1),  # RIGHT-TO-LEFT OVERRIDE
    (b"/static//..//etc/passwd", 404, 1),
]
ATTACKS_SERVED: list[Request] = [
    (b"/download?file=report.pdf%00.txt", 200, 2),  # NUL in the query
    (b"/files/invoice%E2%80%AEfdp.exe", 200, 1),  # bidi override in the path
    (b"/api/v4/projects/..%2F..%2Fadmin", 200, 1),  # a dot segment once %2F is kept
    (b"/static/%C0%AF/etc/passwd", 302, 1),  # overlong '/'
    (b"/static/..;/WEB-INF/web.xml", 200, 1),  # '..;' is a dot segment
    (b"/page%zz", 200, 1),
]
SERVED_STOPPED = {"forbidden-char": 3, "dot-segment": 2, "invalid-utf8": 1, "malformed-escape": 1}
REALISTIC = GITLAB + JSON_API + TEXTAREA + CARELESS_JOINS + PLAIN + ATTACKS_FAILED + ATTACKS_SERVED
REALISTIC_ROUTES = {
    "/api/v1/": {"raw_query_extra": BROWSER_QUERY},
    "/api/v4/projects/": {"encoded_slash": "keep"},
    "/static/": {"empty_segment": "allow"},
    "/support/": {"query_allow_chars": "\n\r"},
}

ENGINE = [
    P(GITLAB, None, {"routes": {"/api/v4/projects/": {"encoded_slash": "keep"}}}, {}, id="GitLab"),
    P(
        GITLAB[:2],
        None,
        {"routes": {"/api/v4/projects/": {"encoded_slash": "keep"}}},
        {},
        id="GitLab, two projects",
    ),
    P(
        GITLAB[:1],
        None,
        {"routes": {"/api/v4/projects/gitlab-org%2Fgitlab/": {"encoded_slash": "keep"}}},
        {},
        id="one project: the narrowest route is that project",
    ),
    P(
        [(b"/files/a%2Fb", 200, 1), (b"/units/kg%2Fs", 200, 1)],
        None,
        {"encoded_slash": "keep"},
        {},
        id="%2F across the site, no failing one: the top level",
    ),
    P(
        [(b"/files/a%2Fb", 200, 1), (b"/units/kg%2Fs", 200, 1), (b"/admin/x%2Fy", 403, 1)],
        None,
        {"routes": {"/files/": {"encoded_slash": "keep"}, "/units/": {"encoded_slash": "keep"}}},
        {},
        id="%2F across the site, one failing elsewhere: one route each",
    ),
    P(
        [(b"/files/a%2Fb", 200, 1), (b"/files/..%2F..%2Fetc", 404, 1)],
        None,
        {"routes": {"/files/": {"encoded_slash": "keep"}}},
        {},
        id="a failing traversal stays rejected anyway: no evidence",
    ),
    P(
        JSON_API,
        None,
        {"routes": {"/api/v1/": {"raw_query_extra": BROWSER_QUERY}}},
        {},
        id="JSON:API",
    ),
    P(
        [*JSON_API, (b"/search?tags[]=a&tags[]=b", 200, 3)],
        None,
        {"preset": "browser"},
        {},
        id="brackets across the site: the browser preset",
    ),
    P(
        [(b"/search?q=%22exact%22&lang=en", 200, 1), (b'/search?q="exact"', 200, 4)],
        None,
        {"raw_query_extra": '"'},
        {},
        id="a raw quote browsers would escape: just that character",
    ),
    P(
        [(b"/catalog/item|42", 200, 2), (b"/catalog/item[42]", 200, 1)],
        None,
        {"routes": {"/catalog/": {"raw_path_extra": "[]|"}}},
        {},
        id="raw '|' and brackets in a path: what browsers send there",
    ),
    P(TEXTAREA, None, {"routes": {"/support/": {"query_allow_chars": "\n\r"}}}, {}, id="textarea"),
    P(
        [(b"/form?note=a%09b", 200, 1)],
        None,
        {"query_allow_chars": "\t"},
        {},
        id="a tab in query text",
    ),
    P(
        CARELESS_JOINS,
        None,
        {"routes": {"/static/": {"empty_segment": "allow"}}},
        {},
        id="careless joins",
    ),
    P(
        [(b"/api/v4/projects/a%2Fb//issues", 200, 2), *GITLAB],
        None,
        {
            "routes": {
                "/api/v4/projects/": {"encoded_slash": "keep"},
                "/api/v4/projects/a%2Fb//": {"encoded_slash": "keep", "empty_segment": "allow"},
            }
        },
        {},
        id="two rules in one target: the second once the first is relaxed",
    ),
    P(
        [(b"/report?id=%2541", 200, 1), (b"/docs/a%252Fb", 200, 1)],
        None,
        {"routes": {"/docs/": {"double_encoding": "allow"}}},
        {},
        id="double encoding in a path only (never checked in the query)",
    ),
    P(
        [(b"/share?d=" + b"x" * 9000, 200, 1), (b"/share?d=" + b"x" * 9100, 302, 1)],
        None,
        {"max_length": 9109},
        {},
        id="too long: the longest served",
    ),
    P(
        [(b"/bulk/ids?" + b"&".join([b"a"] * 1200), 200, 1)],
        None,
        {"routes": {"/bulk/": {"max_params": 1200}}},
        {},
        id="too many query pairs",
    ),
    P(
        [(b"/deep" + b"/d" * 140, 200, 1)],
        None,
        {"routes": {"/deep" + "/d" * 139 + "/": {"max_segments": 141}}},
        {},
        id="too many segments",
    ),
    P(
        [(b"/app;jsessionid=1A2B", 200, 1)],
        Policy(path_params="reject"),
        {"path_params": "literal"},
        {},
        id="';' refused by path_params = 'reject'",
    ),
    P(
        [(b"/wiki/%E6%97%A5%E6%9C%AC", 200, 3), (b"/wiki/Caf%C3%A9", 200, 1)],
        Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)]),
        {
            "allowed_ranges": [[0x20, 0x7E], [0xA0, 0xFF]],
            "routes": {"/wiki/": {"allow_chars": "日本"}},
        },
        {},
        id="characters outside a narrowed range",
    ),
    P(
        [(b"/q?s=%E6%97%A5", 200, 3)],
        Policy(allowed_ranges=[(0x20, 0x7E)]),
        {"allowed_ranges": [[0x20, 0x7E]], "query_allow_chars": "日"},
        {},
        id="outside a narrowed range, in the query only",
    ),
    P(ATTACKS_FAILED, None, {}, {}, id="attacks answered 4xx/5xx: nothing"),
    P(
        ATTACKS_SERVED,
        None,
        {},
        SERVED_STOPPED,
        id="attacks answered 2xx/3xx: listed, never loosened",
    ),
    P(
        [
            (b"/page#top", 200, 1),
            (b"GET", 200, 1),
            (b"/a b", 200, 1),
            (b"/caf\xc3\xa9", 200, 1),
            (b"/x?q=%E2%80%AE", 200, 1),
            (b"/x?q=%1B%5B31m", 200, 1),
            (b"/x/%C2%85", 200, 1),
            (b"/x?q=%EF%B7%90", 200, 1),
            (b"http://a%2Fb/", 200, 1),
        ],
        None,
        {},
        {"fragment": 1, "bad-form": 1, "raw-char": 2, "forbidden-char": 4, "bad-host": 1},
        id="never loosened: fragment, bad form, raw bytes, controls, bidi, noncharacters, host",
    ),
    P(
        [(b"/files/c:%2Fwindows%2Fwin.ini", 200, 3), (b"/files/a%2Fb", 200, 3)],
        None,
        {"routes": {"/files/": {"encoded_slash": "keep"}}},
        {"drive-letter": 3},
        id="a drive before a kept separator: never loosened",
    ),
    P(
        [(b"http://example.com/api/a%2Fb", 200, 2), (b"HTTPS://example.com/api/c%2Fd?x=1", 200, 1)],
        None,
        {"routes": {"/api/": {"encoded_slash": "keep"}}},
        {},
        id="absolute-form: routes by its path",
    ),
    P(
        [(b'/a"b/c%2Fd', 200, 1), (b"/a\\b/e%2Ff", 200, 1), (b"/x/y", 404, 1)],
        None,
        {
            "encoded_slash": "keep",
            "routes": {'/a"b/': {"raw_path_extra": '"'}, "/a\\b/": {"raw_path_extra": "\\"}},
        },
        {},
        id="quotes and backslashes in a route prefix",
    ),
    P(
        [(b"/thing", 101, 5), (b"/a%2Fb", None, 5), (b"/c%2Fd", 0, 1)],
        None,
        {},
        {},
        id="1xx, no status, nonsense: neither way",
    ),
]


@pytest.mark.parametrize(("requests", "policy", "mapping", "stopped"), ENGINE)
def test_engine(
    requests: list[Request],
    policy: Policy | None,
    mapping: dict[str, Any],
    stopped: dict[str, int],
) -> None:
    result = suggested(requests, policy)
    assert result.mapping == {"preset": "strict", **mapping}
    assert stopped_rules(result) == stopped
    assert result.complete is (not stopped)
    table = read_back(result.text)
    loosest = RouteTable(loosest_from(policy or Policy()), [])
    for target, status, _ in requests:
        if status_class(status) == "served":
            assert verdict(target, table) == verdict(target, loosest) == "ok" or (
                verdict(target, table) != "ok" and verdict(target, loosest) != "ok"
            ), target


def test_realistic_log_each_cause_its_narrowest_route() -> None:
    result = suggested(REALISTIC)
    assert result.mapping == {"preset": "strict", "routes": REALISTIC_ROUTES}
    assert stopped_rules(result) == SERVED_STOPPED
    served_rejected = GITLAB[:4] + JSON_API + TEXTAREA + CARELESS_JOINS
    assert result.admitted.requests == sum(count for _, _, count in served_rejected)
    assert result.admitted.targets == len(served_rejected)
    assert result.failed_admitted == 0
    table = read_back(result.text)
    for request in REALISTIC:
        target, _, _ = request
        attack = request in ATTACKS_FAILED + ATTACKS_SERVED
        assert (verdict(target, table) == "ok") is not attack, request


def change_of(result: Suggestion, scope: str | None, key: str) -> Any:
    [change] = [c for c in result.changes if (c.scope, c.key) == (scope, key)]
    return change


def test_each_line_says_rule_requests_targets_and_an_example() -> None:
    result = suggested(REALISTIC)
    change = change_of(result, "/api/v4/projects/", "encoded_slash")
    assert change.origin == "suggested"
    assert change.rules == ("encoded-slash",)
    assert (change.admits.requests, change.admits.targets) == (64, 4)
    assert (
        change.admits.example
        == "/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20"
    )
    assert change.against.requests == 0
    text = result.text
    block = text[text.index('[routes."/api/v4/projects/"]') :].split("\n\n")[0]
    assert block.splitlines() == [
        '[routes."/api/v4/projects/"]',
        "# encoded-slash: admits 64 requests (4 targets) answered 2xx/3xx,",
        "#   and none answered 4xx/5xx; e.g. "
        "/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20",
        'encoded_slash = "keep"',
    ]
    brackets = change_of(result, "/api/v1/", "raw_query_extra")
    assert (brackets.rules, brackets.admits.requests, brackets.admits.targets) == (
        ("raw-char",),
        21,
        3,
    )
    textarea = change_of(result, "/support/", "query_allow_chars")
    assert textarea.rules == ("forbidden-char",)
    assert textarea.admits.example == "/support/preview?body=line+one%0D%0Aline+two"
    assert 'query_allow_chars = "\\n\\r"' in text


def test_failing_requests_a_route_cannot_leave_out_are_counted_against_it() -> None:
    result = suggested([(b"/a/1%2F2", 200, 3), (b"/a/3%2F4", 404, 2)])
    assert result.mapping == {"preset": "strict", "routes": {"/a/": {"encoded_slash": "keep"}}}
    change = change_of(result, "/a/", "encoded_slash")
    assert (change.admits.requests, change.against.requests) == (3, 2)
    assert change.against.example == "/a/3%2F4"
    assert result.failed_admitted == 2
    assert "#   and 2 requests (1 target) answered 4xx/5xx that no narrower prefix" in result.text


def test_browser_preset_line() -> None:
    result = suggested([(b"/search?tags[]=a", 200, 3), (b"/api/x?filter[a]=1", 200, 2)])
    change = change_of(result, None, "preset")
    assert (change.value, change.origin, change.rules) == ("browser", "suggested", ("raw-char",))
    assert change.admits.requests == 5
    assert result.text.count("\npreset = ") == 1


def test_existing_configuration_is_kept_and_marked() -> None:
    result = suggested(
        [(b"/files/a%2Fb", 200, 1), (b"/static//x.css", 200, 1), (b"/static/a//y.js", 200, 1)],
        Policy(max_segments=64),
        [("/files/", Policy(max_segments=64, encoded_slash="keep"))],
    )
    assert result.mapping == {
        "preset": "strict",
        "max_segments": 64,
        "routes": {
            "/files/": {"encoded_slash": "keep"},
            "/static/": {"empty_segment": "allow"},
        },
    }
    assert change_of(result, None, "max_segments").origin == "current"
    assert change_of(result, "/files/", "encoded_slash").origin == "current"
    assert change_of(result, "/static/", "empty_segment").origin == "suggested"
    assert "max_segments = 64  # as in the current configuration" in result.text


def test_mode_is_kept() -> None:
    ledger = ledger_of([(b"/a/b%2Fc", 200, 1)], RouteTable(Policy(), []))
    result = suggest(ledger, Policy(), mode="report")
    assert result.mapping == {
        "preset": "strict",
        "mode": "report",
        "routes": {"/a/": {"encoded_slash": "keep"}},
    }
    assert '\nmode = "report"  # as in the current configuration\n' in result.text
    assert config_from_mapping(tomllib.loads(result.text)).mode == "report"


def test_a_route_inside_a_route_repeats_what_encloses_it() -> None:
    # /api/ gets the browser's query characters, a prefix chosen with the
    # evidence under all of /api/; the longer route for %2F made later
    # repeats them, since only the longest matching route applies.
    requests: list[Request] = [
        (b"/api/items?filter[a]=1", 200, 1),
        (b"/api/p/a%2Fb", 200, 1),
        (b"/api/p/c%2Fd", 200, 1),
    ]
    result = suggested(requests)
    assert result.mapping["routes"] == {
        "/api/": {"raw_query_extra": BROWSER_QUERY},
        "/api/p/": {"raw_query_extra": BROWSER_QUERY, "encoded_slash": "keep"},
    }
    inherited = change_of(result, "/api/p/", "raw_query_extra")
    assert (inherited.origin, inherited.inherited_from) == ("inherited", "/api/")
    block = result.text[result.text.index('[routes."/api/p/"]') :].splitlines()
    assert block[:2] == [
        '[routes."/api/p/"]',
        'raw_query_extra = "[\\\\]^`{|}"  # as in [routes."/api/"], which this longer prefix '
        "replaces",
    ]


# --- the text ---------------------------------------------------------------------------

HOSTILE: list[Request] = [
    (b"/x?q=%0D%0Aevil", 200, 1),
    (b"/x/%E2%80%AE", 200, 1),
    (b"/x/%1B%5B2J", 200, 1),
    (b'/x/"\\\x1b[2J\r\n', 200, 1),
    (b"/x/\xe2\x80\xae", 200, 1),
    (b"/y/a%2F%0D%0A", 200, 1),
]


def test_text_is_printable_ascii_whatever_the_targets() -> None:
    result = suggested(HOSTILE)
    for line in result.text.splitlines():
        assert line.isascii(), line
        assert line.isprintable(), line
    assert result.text.endswith("\n")


@pytest.mark.parametrize(
    ("text", "toml"),
    [
        P("keep", '"keep"', id="plain"),
        P('a"b\\c', '"a\\"b\\\\c"', id="quote and backslash"),
        P("\t\n\r", '"\\t\\n\\r"', id="textarea controls"),
        P("\x00\x1b\x7f", '"\\u0000\\u001B\\u007F"', id="other controls"),
        P("\u202e日", '"\\u202E\\u65E5"', id="bidi and non-ASCII"),
        P("\U0001f600", '"\\U0001F600"', id="astral"),
    ],
)
def test_toml_string(text: str, toml: str) -> None:
    assert toml_string(text) == toml
    assert tomllib.loads(f"k = {toml}") == {"k": text}


def test_same_log_same_text() -> None:
    assert suggested(REALISTIC).text == suggested(list(reversed(REALISTIC))).text


# --- properties: never loosen what protects, always admit what can be admitted -------------


def loosest_from(policy: Policy) -> Policy:
    """The loosest policy a suggestion can reach from ``policy``: what it
    rejects, no suggestion admits (characters outside a narrowed range
    aside, which no test here combines with this)."""
    return policy.replace(
        max_length=1 << 20,
        max_segments=1 << 20,
        max_params=1 << 20,
        raw_path_extra=g.to_str(g.ALLOWABLE_RAW_EXTRA),
        raw_query_extra=g.to_str(g.ALLOWABLE_RAW_EXTRA),
        encoded_slash="keep",
        encoded_backslash="keep",
        empty_segment="allow",
        double_encoding="allow",
        path_params="literal" if policy.path_params == "reject" else policy.path_params,
        allowed_ranges=None,
        query_allow_chars=policy.query_allow_chars + "\t\n\r",
    )


LOOSEST = loosest_from(Policy())
SEGMENTS = ["a", "", "b%2Fc", "..", ".", "%2E", "%C0%AE", "%00", "%E2%80%AE", "caf%C3%A9"]
SEGMENTS += ["[1]", "x|y", "a;b", "%zz", "%255C", "d%5Ce", "%2F", "..%2F", "%ED%A0%80"]
SEGMENTS += ['q"t', "b\\s", "a<b", "%E6%97%A5"]
QUERIES = ["", "q=1", "f[a]=1", "t=a%0D%0Ab", "z=%00", 'w="x"', "u=%E2%80%AE", "k=%09", "^"]
STATUSES = [200, 204, 302, 304, 400, 404, 500, None]

requests_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4),
        st.sampled_from(QUERIES),
        st.sampled_from(STATUSES),
        st.integers(1, 3),
    ),
    max_size=12,
)


def build(segments: list[str], query: str) -> bytes:
    return ("/" + "/".join(segments) + ("?" + query if query else "")).encode()


@settings(max_examples=150, deadline=None)
@given(requests_strategy)
def test_suggestion_admits_what_can_be_and_nothing_that_protects(
    drawn: list[tuple[list[str], str, int | None, int]],
) -> None:
    requests = [(build(segments, query), status, n) for segments, query, status, n in drawn]
    result = suggested(requests)
    table = read_back(result.text)
    for target, status, _ in requests:
        loosest = verdict(target, RouteTable(LOOSEST, []))
        judged = verdict(target, table)
        if loosest != "ok":
            assert judged != "ok", target  # never loosened, whatever the status
        elif status_class(status) == "served":
            assert judged == "ok", target  # served and admissible: admitted
    assert result.complete is all(
        verdict(t, RouteTable(LOOSEST, [])) == "ok"
        for t, s, _ in requests
        if status_class(s) == "served"
    )


# --- the command ----------------------------------------------------------------------------


def combined(target: bytes, status: int | None, n: int = 0) -> bytes:
    escaped = b"".join(
        bytes([b]) if 0x20 <= b < 0x7F and b not in b'"\\' else b"\\x%02X" % b for b in target
    )
    return (
        b'198.51.100.%d - - [10/Oct/2024:13:55:36 +0000] "GET %b HTTP/1.1" %d 512 '
        b'"-" "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"'
        % (n % 250, escaped, 200 if status is None else status)
    )


def write_log(path: Path, requests: Sequence[Request]) -> Path:
    lines = [combined(t, s, i) for t, s, count in requests for i in range(count)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


class Ran(NamedTuple):
    """What ``urlguard`` returned and printed."""

    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    code = main(list(argv))
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def test_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """What --suggest writes, given back with --config on the same log,
    admits every 2xx/3xx request it chose to admit and still rejects every
    request it listed, and every attack."""
    log = write_log(tmp_path / "access.log", REALISTIC)
    policy = tmp_path / "urlguard.toml"
    code, out, err = run(capsys, "audit", "--suggest", "--write", str(policy), str(log))
    assert (code, err) == (1, "")  # served attacks stay rejected
    assert f"wrote        {policy}" in out
    config = load_config(policy)
    table = RouteTable(config.policy, list(config.routes))
    admitted = GITLAB + JSON_API + TEXTAREA + CARELESS_JOINS + PLAIN
    for target, _, _ in admitted:
        assert verdict(target, table) == "ok", target
    for target, _, _ in ATTACKS_SERVED + ATTACKS_FAILED:
        assert verdict(target, table) != "ok", target

    code, out, err = run(capsys, "audit", "--json", "--config", str(policy), str(log))
    report = json.loads(out)
    assert (code, err) == (1, "")
    attacks = sum(count for _, _, count in ATTACKS_SERVED + ATTACKS_FAILED)
    assert report["rejected"] == attacks
    before = json.loads(run(capsys, "audit", "--json", str(log)).out)
    served = sum(count for _, _, count in GITLAB[:4] + JSON_API + TEXTAREA + CARELESS_JOINS)
    assert before["rejected"] == attacks + served


def test_suggest_prints_toml_that_loads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = write_log(tmp_path / "access.log", GITLAB + CARELESS_JOINS + PLAIN)
    code, out, err = run(capsys, "audit", "--suggest", str(log))
    assert (code, err) == (0, "")  # every served request admitted
    (tmp_path / "out.toml").write_text(out)
    config = load_config(tmp_path / "out.toml")
    assert [prefix for prefix, _ in config.routes] == ["/api/v4/projects/", "/static/"]
    assert out.startswith("# urlguard configuration suggested by `urlguard audit --suggest`.\n")


def test_suggest_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = write_log(tmp_path / "access.log", GITLAB + ATTACKS_SERVED)
    code, out, err = run(capsys, "audit", "--suggest", "--json", str(log))
    result = json.loads(out)
    assert (code, err) == (1, "")
    lines = sum(count for _, _, count in GITLAB + ATTACKS_SERVED)
    assert result["lines"] == lines
    assert result["rejected"] == lines - 9  # the numeric project id passes
    assert set(result["rules"]) == {
        "encoded-slash",
        "forbidden-char",
        "invalid-utf8",
        "dot-segment",
        "malformed-escape",
    }
    suggestion = result["suggestion"]
    assert suggestion["config"] == {
        "preset": "strict",
        "routes": {"/api/v4/projects/": {"encoded_slash": "keep"}},
    }
    assert tomllib.loads(suggestion["toml"])["routes"] == suggestion["config"]["routes"]
    assert {stop["rule"] for stop in suggestion["stopped"]} == set(SERVED_STOPPED)
    assert suggestion["admitted"]["requests"] == 64
    [change] = suggestion["changes"]
    assert change["scope"] == "/api/v4/projects/"
    assert change["admits"] == {
        "requests": 64,
        "targets": 4,
        "example": "/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20",
    }


def test_suggest_from_a_configuration(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.urlguard]\npreset = "browser"\n\n[tool.urlguard.routes."/files/"]\n'
        'encoded_slash = "keep"\n'
    )
    log = write_log(tmp_path / "access.log", [(b"/files/a%2Fb", 200, 1), *CARELESS_JOINS])
    code, out, _ = run(capsys, "audit", "--suggest", "--config", str(pyproject), str(log))
    assert code == 0
    assert tomllib.loads(out) == {
        "preset": "browser",
        "routes": {"/files/": {"encoded_slash": "keep"}, "/static/": {"empty_segment": "allow"}},
    }
    assert "# The logs were judged under: " + str(pyproject) in out


def test_write_never_replaces_a_file_without_force(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = write_log(tmp_path / "access.log", GITLAB)
    target = tmp_path / "urlguard.toml"
    target.write_text("# mine\n")
    code, out, err = run(capsys, "audit", "--suggest", "--write", str(target), str(log))
    assert (code, out) == (2, "")
    assert err == f"urlguard: error: --write: {target} exists; add --force to replace it\n"
    assert target.read_text() == "# mine\n"
    code, out, err = run(capsys, "audit", "--suggest", "--write", str(target), "--force", str(log))
    assert (code, err) == (0, "")
    (prefix, _), *_ = load_config(target).routes
    assert prefix == "/api/v4/projects/"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        P(["--write", "x.toml"], "--write applies to --suggest only", id="write without suggest"),
        P(["--suggest", "--force"], "--force applies to --write only", id="force without write"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    log = write_log(tmp_path / "access.log", GITLAB)
    code, out, err = run(capsys, "audit", *argv, str(log))
    assert (code, out, err) == (2, "", f"urlguard: error: {message}\n")
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.parametrize(
    ("requests", "code"),
    [
        P(PLAIN, 0, id="nothing to change"),
        P(GITLAB, 0, id="everything served admitted"),
        P(ATTACKS_FAILED, 0, id="only failing requests rejected"),
        P(GITLAB + ATTACKS_SERVED[:1], 1, id="a served request stays rejected"),
    ],
)
def test_exit_codes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, requests: list[Request], code: int
) -> None:
    log = write_log(tmp_path / "access.log", requests)
    assert run(capsys, "audit", "--suggest", str(log)).code == code


def test_unparseable_lines_are_counted_and_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(
        combined(b"/a%2Fb", 200)
        + b"\nnot a log line \x1b[31m\xe2\x80\xae\r\n"
        + combined(b"/c%2Fd", 200)
        + b"\n\n"
    )
    code, out, err = run(capsys, "audit", "--suggest", str(log))
    assert (code, err) == (0, "")
    assert "# Lines that did not parse (not judged): 2\n" in out
    assert "#   e.g. not a log line \\x1B[31m\\xE2\\x80\\xAE\\x0D\n" in out
    assert "#   e.g. (an empty line)\n" in out
    assert all(line.isascii() and line.isprintable() for line in out.splitlines())
    code, out, _ = run(capsys, "audit", "--json", str(log))
    report = json.loads(out)
    assert report["unparseable"] == 2
    assert report["unparseable_examples"] == [
        "not a log line \\x1B[31m\\xE2\\x80\\xAE\\x0D",
        "(an empty line)",
    ]


def test_common_format_carries_the_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(
        b'192.0.2.1 - - [10/Oct/2024:13:55:36 -0700] "GET /a/x%2Fy HTTP/1.1" 200 12\n'
        b'192.0.2.1 - - [10/Oct/2024:13:55:36 -0700] "GET /b/x%2Fy HTTP/1.1" 404 -\n'
    )
    code, out, _ = run(capsys, "audit", "--suggest", str(log))
    assert code == 0
    assert tomllib.loads(out)["routes"] == {"/a/": {"encoded_slash": "keep"}}


def test_a_list_of_targets_has_no_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    targets = tmp_path / "targets.txt"
    targets.write_bytes(b"/a/x%2Fy\n/b//c\n")
    code, out, _ = run(capsys, "audit", "--suggest", str(targets))
    assert code == 0
    assert tomllib.loads(out) == {"preset": "strict"}
    assert "# Requests with no 2xx-5xx status (1xx, 000, or a list of targets): 2;" in out


def test_the_documented_example_is_what_the_command_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/suggest.md shows the command run on the realistic log above."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "suggest.md").read_text()
    shown = "".join(re.findall(r"```console\n(.*?)```", page, re.DOTALL))
    monkeypatch.chdir(tmp_path)
    write_log(tmp_path / "access.log", REALISTIC)
    printed = []
    for argv in (
        ["audit", "--suggest", "access.log"],
        ["audit", "--suggest", "--write", "urlguard.toml", "access.log"],
        ["audit", "--config", "urlguard.toml", "access.log"],
    ):
        main(argv)
        printed.append(f"$ urlguard {' '.join(argv)}\n{capsys.readouterr().out}")
    assert shown == "".join(printed)
