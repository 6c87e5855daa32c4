"""``urlguard audit --suggest``: from access logs to a configuration.

The engine (``urlguard.cli.suggest``) is fed requests as the auditor feeds it
(target, status, count, verdict under the current policy, clients, first
and last time); the command is run on logs written here, and its
configuration read back with ``load_config`` and judged again on the same
logs. Evidence is spread over clients and time explicitly: legitimate
traffic comes from many clients over two days, attacks from the clients
and times each test says.
"""

from __future__ import annotations

import doctest
import gc
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urlguard.cli.suggest
from conftest import run
from suggest_helpers import (
    ANY,
    ATTACKS_FAILED,
    ATTACKS_SERVED,
    CARELESS_JOINS,
    DEFAULT,
    GITLAB,
    HOUR,
    JSON_API,
    PLAIN,
    PROBES,
    REALISTIC,
    REALISTIC_ROUTES,
    SERVED_REJECTED,
    SERVED_STOPPED,
    START,
    TEXTAREA,
    P,
    Request,
    Sent,
    combined,
    error_of,
    ledger_of,
    log_lines,
    never_loosened,
    read_back,
    refused_requests,
    sent,
    shop,
    shop_ledger,
    stopped_rules,
    suggested,
    verdict,
    write_log,
)
from urlguard import Policy, config_from_mapping, load_config
from urlguard._guard.routes import RouteTable
from urlguard.cli import main
from urlguard.cli.suggest import (
    COUNTED,
    Ledger,
    Suggestion,
    Thresholds,
    client_key,
    status_class,
    suggest,
    toml_string,
)


def test_docstring_examples() -> None:
    assert doctest.testmod(urlguard.cli.suggest).failed == 0


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


@pytest.mark.parametrize(
    ("client", "same_as"),
    [
        P(b"192.0.2.7", b"192.0.2.7", id="IPv4 as it is"),
        P(b"2001:db8:1:2::1", b"2001:db8:1:2:ffff::9", id="IPv6: its /64"),
        P(b"not-an-address", b"not-an-address", id="anything else as it is"),
    ],
)
def test_client_key(client: bytes, same_as: bytes) -> None:
    assert client_key(client) == client_key(same_as)


def test_client_key_tells_ipv6_networks_apart() -> None:
    assert client_key(b"2001:db8:1:2::1") != client_key(b"2001:db8:1:3::1")


@pytest.mark.parametrize(
    "options",
    [
        P({"requests": 0}, id="no request"),
        P({"networks": 0}, id="no network"),
        P({"networks": COUNTED}, id="more networks than are counted at the top level"),
        P({"days": 0}, id="no day"),
        P({"days": 367}, id="more than a year"),
        P({"routes": 0}, id="no route"),
        P({"requests": True}, id="a bool"),
    ],
)
def test_thresholds_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        Thresholds(**options)


def test_site_wide_needs_five_times_the_requests_and_networks() -> None:
    assert Thresholds().needs() == (20, 5, 2)
    assert Thresholds().needs(site=True) == (100, 25, 2)


def test_realistic_log_each_cause_its_narrowest_route() -> None:
    result = suggested(REALISTIC)
    assert result.mapping == {"preset": "strict", "routes": REALISTIC_ROUTES}
    assert stopped_rules(result) == SERVED_STOPPED
    [probe] = result.refused
    assert (probe.scope, probe.rules, probe.reason) == (
        "/r",
        ("forbidden-char",),
        "CR or LF in a query answered with a redirect under it (response splitting)",
    )
    assert (probe.evidence.served, probe.evidence.redirected, probe.evidence.requests) == (3, 3, 0)
    assert result.admitted == sum(sent(r).number for r in SERVED_REJECTED)
    assert result.failed_admitted == 0
    table = read_back(result.text)
    for request in REALISTIC:
        target = sent(request).target
        attack = request in ATTACKS_FAILED + ATTACKS_SERVED + PROBES
        assert (verdict(target, table) == "ok") is not attack, request


def change_of(result: Suggestion, scope: str | None, key: str) -> Any:
    [change] = [c for c in result.changes if (c.scope, c.key) == (scope, key)]
    return change


def test_each_line_states_the_evidence_it_rests_on() -> None:
    result = suggested(REALISTIC)
    change = change_of(result, "/api/v4/projects/", "encoded_slash")
    assert change.origin == "suggested"
    assert change.rules == ("encoded-slash",)
    e = change.admits
    assert (e.requests, e.targets, e.clients, e.networks, e.days, e.failed) == (
        640,
        4,
        COUNTED,
        COUNTED,
        2,
        0,
    )
    assert (e.first, e.last) == (START, START + 48 * HOUR)
    assert e.example == "/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20"
    text = result.text
    block = text[text.index('[routes."/api/v4/projects/"]') :].split("\n\n")[0]
    assert block.splitlines() == [
        '[routes."/api/v4/projects/"]',
        "# encoded-slash:",
        "#   640 requests answered 2xx/304 (4 targets) from 64 clients or more in 64 networks or "
        "more on 2 days,",
        "#   first seen 2024-10-10 00:00:00 UTC, last seen 2024-10-12 00:00:00 UTC;",
        "#   e.g. /api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20",
        "#   and none answered 4xx/5xx",
        'encoded_slash = "keep"',
    ]
    brackets = change_of(result, "/api/v1/", "raw_query_extra")
    assert (brackets.rules, brackets.admits.requests, brackets.admits.targets) == (
        ("raw-char",),
        210,
        3,
    )
    textarea = change_of(result, "/support/", "query_allow_chars")
    assert textarea.rules == ("forbidden-char",)
    assert textarea.admits.example == "/support/preview?body=line+one%0D%0Aline+two"
    assert 'query_allow_chars = "\\n\\r"' in text
    assert (
        "# Evidence a change needs: 20 requests answered 2xx/304 from 5 networks on 2 days "
        "under a route;" in text
    )


# --- what and where, on any evidence ---------------------------------------------------------

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
        [(b"/%s/a%%2Fb" % d, 200, 3) for d in (b"files", b"units", b"maps", b"docs", b"wiki")],
        None,
        {"encoded_slash": "keep"},
        {},
        id="%2F under five first segments, each with a route's evidence: the top level",
    ),
    P(
        [(b"/%s/a%%2Fb" % d, 200, 3) for d in (b"files", b"units", b"maps", b"docs")],
        None,
        {
            "routes": {
                f"/{d}/": {"encoded_slash": "keep"} for d in ["docs", "files", "maps", "units"]
            }
        },
        {},
        id="%2F under four first segments: one route each",
    ),
    P(
        [(b"/files/a%2Fb", 200, 30), (b"/units/kg%2Fs", 200, 4)],
        None,
        {"routes": {"/files/": {"encoded_slash": "keep"}, "/units/": {"encoded_slash": "keep"}}},
        {},
        id="%2F mostly under one prefix: not a site-wide change, one route each",
    ),
    P(
        [
            *[(b"/%s/a%%2Fb" % d, 200, 3) for d in (b"files", b"units", b"maps", b"docs", b"wiki")],
            (b"/admin/x%2Fy", 403, 1),
        ],
        None,
        {"encoded_slash": "keep"},
        {},
        id="a 4xx on another target is no evidence against",
    ),
    P(
        [(b"/files/a%2Fb", 200, 1), (b"/files/..%2F..%2Fetc", 404, 1)],
        None,
        {"routes": {"/files/": {"encoded_slash": "keep"}}},
        {},
        id="a failing traversal stays rejected anyway",
    ),
    P(
        JSON_API,
        None,
        {"routes": {"/api/v1/": {"raw_query_extra": "[]"}}},
        {},
        id="JSON:API: just the brackets",
    ),
    P(
        [*JSON_API, (b"/search?tags[]=a&tags[]=b", 200, 10)],
        None,
        {"routes": {"/api/v1/": {"raw_query_extra": "[]"}, "/search": {"raw_query_extra": "[]"}}},
        {},
        id="brackets in two places: just the brackets, in each",
    ),
    P(
        [(b"/search?q=%22exact%22&lang=en", 200, 1), (b'/search?q="exact"', 200, 5)],
        None,
        {"routes": {"/search": {"raw_query_extra": '"'}}},
        {},
        id="a raw quote in a query browsers would escape: just that character, on that path",
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
        [(b"/form?note=a%09b", 200, 5)],
        None,
        {"routes": {"/form": {"query_allow_chars": "\t"}}},
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
        {"routes": {"/api/v4/projects/": {"encoded_slash": "keep"}}},
        {"empty-segment": 2},
        id="an empty segment beside a kept separator: never loosened",
    ),
    P(
        [(b"/report?id=%2541", 200, 1), (b"/docs/a%2520b", 200, 1)],
        None,
        {"routes": {"/docs/": {"double_encoding": "allow"}}},
        {},
        id="double encoding in a path only (never checked in the query)",
    ),
    P(
        [(b"/share?d=" + b"x" * 9000, 200, 3), (b"/share?d=" + b"x" * 9100, 302, 3)],
        None,
        {"routes": {"/share": {"max_length": 9109}}},
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
        [(b"/app;jsessionid=1A2B", 200, 5)],
        Policy(path_params="reject"),
        {"path_params": "reject", "routes": {"/app;jsessionid=1A2B": {"path_params": "literal"}}},
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
        [(b"/q?s=%E6%97%A5", 200, 5)],
        Policy(allowed_ranges=[(0x20, 0x7E)]),
        {"allowed_ranges": [[0x20, 0x7E]], "routes": {"/q": {"query_allow_chars": "日"}}},
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
        {"routes": {"/a\\b/": {"encoded_slash": "keep", "raw_path_extra": "\\"}}},
        {"raw-char": 1},
        id="a raw quote in a path: never; a backslash in a route prefix",
    ),
    P(
        [(b"/x/<script>", 200, 5), (b"/x/{a}^`", 200, 5)],
        None,
        {},
        {"raw-char": 10},
        id="raw characters no browser sends in a path: never",
    ),
    P(
        [(b"/static/%2Fetc%2Fpasswd", 200, 5), (b"/static/%5C%5Chost%5Cshare", 200, 5)],
        None,
        {},
        {"empty-segment": 10},
        id="a leading kept separator (absolute or UNC path): never",
    ),
    P(
        [
            (b"/static/%252e%252e%252fetc%252fpasswd", 200, 5),
            (b"/static/a%2500b", 200, 5),
            (b"/static/a%25252Fb", 200, 5),
            (b"/static/%252E%252E", 200, 5),
        ],
        None,
        {},
        {"double-encoding": 20},
        id="double encoding giving a separator, a control, another escape, a dot segment: never",
    ),
    P(
        [(b"/assets//etc/passwd", 200, 5), (b"/assets/css//site.css", 200, 5)],
        None,
        {"routes": {"/assets/": {"empty_segment": "allow"}}},
        {},
        id="a route key never holds an empty segment: /assets/, not /assets//etc/",
    ),
    P(
        [
            (b"/view2/%253Cimg%2520src%253Dx%2520onerror%253Dalert(1)%253E", 200, 5),
            (b"/view2/%2522quoted%2522", 200, 5),
            (b"/view2/it%2527s", 200, 5),
            (b"/view2/a%253Fb%2523c", 200, 5),
        ],
        None,
        {},
        {"double-encoding": 20},
        id="double encoding giving markup, a quote, '?' or '#': never",
    ),
    P(
        [
            (b"/q?" + b"&".join([b"a"] * 2001), 200, 3),
            (b"/q?x=" + b"A" * 16_380, 200, 3),
            (b"/q" + b"/d" * 257, 200, 3),
        ],
        None,
        {},
        {"too-many": 6, "too-long": 3},
        id="limits past their bounds: never",
    ),
    P(
        [(b"/q?" + b"&".join([b"a"] * 2000), 200, 3), (b"/q?x=" + b"A" * 16_379, 200, 3)],
        None,
        {"routes": {"/q": {"max_length": 16_384, "max_params": 2000}}},
        {},
        id="limits up to their bounds",
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
    result = suggested(requests, policy, thresholds=ANY)
    assert result.mapping == {"preset": "strict", **mapping}
    assert stopped_rules(result) == stopped
    assert result.refused == ()
    assert result.complete is (not stopped)
    table = read_back(result.text)
    for request in map(sent, requests):
        if status_class(request.status) == "served":
            admitted = verdict(request.target, table) == "ok"
            assert admitted is not (policy is None and never_loosened(request.target)), request


def test_the_never_loosened_oracle_agrees_with_the_engine_on_its_own_examples() -> None:
    for target in (
        b"/static/%2Fetc%2Fpasswd",
        b"/static/%252e%252e%252fetc%252fpasswd",
        b"/x/<script>",
        b"/files/c:%2Fwindows",
    ):
        assert never_loosened(target), target
    for target in (b"/static//css/app.css", b"/docs/a%2520b", b"/api/p/a%2Fb"):
        assert not never_loosened(target), target


# --- evidence an attacker cannot cheaply forge ------------------------------------------------

ATTACKS = [
    P(b"/static/%2Fetc%2Fpasswd", id="a leading %2F: an absolute path"),
    P(b"/static/%252e%252e%252fetc%252fpasswd", id="double encoding giving ../"),
    P(b"/r?next=%0D%0ASet-Cookie:%20session=evil", id="CR LF in a query at the root"),
    P(b"/x/<script>", id="raw < > in a path"),
]
# Legitimate traffic beside an attack, in the same directory, that must not
# carry the attack in.
BESIDE: dict[bytes, list[Request]] = {
    b"/static/%2Fetc%2Fpasswd": CARELESS_JOINS,
    b"/static/%252e%252e%252fetc%252fpasswd": [(b"/static/my%2520file.pdf", 200, 300)],
    b"/r?next=%0D%0ASet-Cookie:%20session=evil": TEXTAREA,
    b"/x/<script>": [(b"/x/item[1]", 200, 300)],
}


@pytest.mark.parametrize("target", ATTACKS)
@pytest.mark.parametrize("count", [1, 3, 10])
@pytest.mark.parametrize("several", [P(False, id="one client"), P(True, id="several clients")])
@pytest.mark.parametrize("beside", [P(False, id="alone"), P(True, id="beside legitimate traffic")])
@pytest.mark.parametrize("hours", [P(0.0, id="at once"), P(24 * 7.0, id="over a week")])
def test_a_handful_of_requests_admits_no_attack(
    target: bytes, count: int, several: bool, beside: bool, hours: float
) -> None:
    attack = Sent(target, 200, count, count if several else 1, hours)
    requests = [attack, *(BESIDE[target] if beside else [])]
    result = suggested(requests)
    assert verdict(target, read_back(result.text)) != "ok"
    assert result.complete is False
    listed = stopped_rules(result).get("empty-segment", 0) + refused_requests(result)
    listed += sum(stopped_rules(result).values()) - stopped_rules(result).get("empty-segment", 0)
    assert listed >= count  # listed, never silently dropped
    if not never_loosened(target):  # only the evidence stops it
        [refusal] = [r for r in result.refused if r.evidence.example == target.decode()]
        assert refusal.reason == "not enough evidence to admit"
        assert refusal.scope == "/r"  # the narrowest prefix: its own path
    for request in map(sent, requests[1:]):  # the legitimate traffic beside it
        if target == b"/static/%252e%252e%252fetc%252fpasswd":
            # No double_encoding where a dangerous one was served: refused, and said why.
            assert verdict(request.target, read_back(result.text)) != "ok"
            assert any("decoded twice" in r.reason for r in result.refused)
        elif status_class(request.status) == "served":
            assert verdict(request.target, read_back(result.text)) == "ok", request


@pytest.mark.parametrize(
    "target",
    [P(t, id=i) for t, i in [(b"/static/%2Fetc%2Fpasswd", "%2F"), (b"/x/<script>", "<>")]]
    + [P(b"/static/%252e%252e%252fetc%252fpasswd", id="%252e")],
)
def test_no_evidence_is_enough_for_what_is_never_loosened(target: bytes) -> None:
    flood = Sent(target, 200, 100_000, COUNTED, 24 * 30.0)
    result = suggested([flood], thresholds=ANY)
    assert verdict(target, read_back(result.text)) != "ok"
    assert sum(stopped_rules(result).values()) == 100_000


@pytest.mark.parametrize(
    ("attack", "admitted"),
    [
        P(Sent(b"/r/x%2Fy", 200, 19, 40, 48), False, id="19 requests: one short"),
        P(Sent(b"/r/x%2Fy", 200, 20, 40, 48), True, id="20 requests from 20 networks over 48 h"),
        P(Sent(b"/r/x%2Fy", 200, 500, 4, 48), False, id="4 networks: one short"),
        P(Sent(b"/r/x%2Fy", 200, 500, 5, 48), True, id="5 networks"),
        P(Sent(b"/r/x%2Fy", 200, 500, 40, 23.99), False, id="one calendar day"),
        P(Sent(b"/r/x%2Fy", 200, 500, 40, 24), True, id="two calendar days, 24 hours apart"),
        P(Sent(b"/r/x%2Fy", 302, 500, 40, 48), False, id="answered with redirects"),
    ],
)
def test_default_thresholds(attack: Sent, admitted: bool) -> None:
    result = suggested([attack])
    assert (verdict(attack.target, read_back(result.text)) == "ok") is admitted
    assert result.complete is admitted
    if not admitted:
        [refusal] = result.refused
        assert refusal.reason == "not enough evidence to admit"
        assert refusal.evidence.served == attack.number
        assert "would be rejected: not enough evidence to admit" in result.text


@pytest.mark.parametrize(
    ("directories", "requests", "clients", "hours", "expected"),
    [
        P(5, 20, 5, 48.0, "site", id="five first segments with a route's evidence each"),
        P(4, 20, 5, 48.0, "routes", id="four: one route each"),
        P(5, 20, 5, 23.0, "none", id="within a day: nothing"),
        P(6, 20, 4, 48.0, "none", id="4 networks each: nothing"),
    ],
)
def test_a_site_wide_change_needs_evidence_all_over_the_site(
    directories: int, requests: int, clients: int, hours: float, expected: str
) -> None:
    traffic = [Sent(b"/d%d/x%%2Fy" % n, 200, requests, clients, hours) for n in range(directories)]
    result = suggested(traffic)
    routes = result.mapping.get("routes", {})
    if expected == "site":
        assert result.mapping == {"preset": "strict", "encoded_slash": "keep"}
    elif expected == "routes":
        assert "encoded_slash" not in result.mapping
        assert sorted(routes) == [f"/d{n}/" for n in range(directories)]
    else:
        assert result.mapping == {"preset": "strict"}
        assert len(result.refused) == directories


def test_one_busy_route_is_not_lifted_to_the_top_level_by_a_few_requests_elsewhere() -> None:
    result = suggested([*GITLAB, Sent(b"/r/x%2Fy", 200, 3, 3, 48)])
    assert result.mapping == {
        "preset": "strict",
        "routes": {"/api/v4/projects/": {"encoded_slash": "keep"}},
    }
    [refusal] = result.refused
    assert (refusal.scope, refusal.reason) == ("/r/", "not enough evidence to admit")


def test_line_breaks_are_refused_where_a_redirect_answered_them() -> None:
    """CR LF under /support/ answered 200 from many networks over days, and
    once with a redirect under the same route: the route gets nothing."""
    textarea = Sent(b"/support/ticket?body=a%0D%0Ab", 200, 300, 40, 48)
    redirected = Sent(b"/support/login?next=%0D%0ASet-Cookie:x", 302, 1, 1, 0)
    assert suggested([textarea]).mapping["routes"] == {"/support/": {"query_allow_chars": "\n\r"}}
    result = suggested([textarea, redirected])
    assert result.mapping == {"preset": "strict"}
    [refusal] = result.refused
    assert refusal.reason.endswith("(response splitting)")


def test_line_breaks_are_never_admitted_site_wide() -> None:
    """Five first segments, each with a route's evidence for CR LF: five
    routes, never the top level (nor a preset)."""
    places = (b"a", b"b", b"c", b"d", b"e")
    result = suggested([Sent(b"/%s/x?t=1%%0D%%0A2" % place, 200, 300, 40, 48) for place in places])
    assert result.mapping == {
        "preset": "strict",
        "routes": {f"/{p.decode()}/": {"query_allow_chars": "\n\r"} for p in places},
    }


def test_ipv6_clients_count_per_network() -> None:
    ledger = Ledger()
    error = error_of(b"/r/x%2Fy", ledger.table)
    assert error is not None
    hosts = [b"2001:db8:0:1::%x" % n for n in range(100)]  # one /64
    ledger.observe(b"/r/x%2Fy", 200, 100, error, hosts, START, START + 48 * HOUR)
    result = suggest(ledger)
    [refusal] = result.refused
    assert refusal.evidence.clients == 1


def test_a_failure_on_the_very_target_is_evidence_against() -> None:
    """Requests of a target the site also answered 4xx/5xx do not count; a
    404 on another target is a missing resource, not an attack."""
    served = Sent(b"/a/x%2Fy", 200, 30, 10, 48)
    very = Sent(b"/a/x%2Fy", 403, 1, 1, 0)
    sibling = Sent(b"/a/other%2Fz", 404, 1000, 40, 48)
    alone = suggested([served, very])
    assert alone.mapping == {"preset": "strict"}
    [refusal] = alone.refused
    assert (refusal.evidence.requests, refusal.evidence.contested, refusal.evidence.against) == (
        0,
        30,
        1,
    )
    for order in ([served, sibling], [sibling, served]):
        result = suggested(order)
        assert result.mapping == {"preset": "strict", "routes": {"/a/": {"encoded_slash": "keep"}}}
        change = change_of(result, "/a/", "encoded_slash")
        assert (change.admits.requests, change.admits.failed, change.admits.against) == (
            30,
            1000,
            0,
        )
    flipped = suggested([very, served])
    assert flipped.refused[0].evidence.contested == 30  # the order does not matter


@pytest.mark.parametrize(
    ("sent", "contested", "against"),
    [
        pytest.param([(200, 30), (403, 1)], 30, 1, id="served, then a failure"),
        pytest.param([(200, 30), (403, 1), (500, 2)], 30, 3, id="served, then two failures"),
        pytest.param([(403, 1), (500, 2), (200, 30)], 30, 3, id="two failures, then served"),
        pytest.param([(403, 1), (200, 30), (200, 5)], 35, 1, id="a failure, then served twice"),
    ],
)
def test_every_failure_on_a_served_target_counts_against(
    sent: list[tuple[int, int]], contested: int, against: int
) -> None:
    """Each request comes in a call of its own (a chunk of its own): what
    the ledger remembers of the target decides, whatever came first."""
    result = suggested([Sent(b"/a/x%2Fy", status, count, 1, 0) for status, count in sent])
    [refusal] = result.refused
    assert (refusal.evidence.contested, refusal.evidence.against) == (contested, against)


# --- a policy a person can read, in bounded memory ---------------------------------------------


@pytest.mark.parametrize("lines", [10_000, 20_000])
def test_a_shape_answered_200_and_404_is_one_route(lines: int) -> None:
    ledger = shop_ledger(lines)
    [cause] = ledger.groups
    assert len(ledger.groups[cause]) <= urlguard.cli.suggest.MAX_PREFIXES  # bounded memory
    result = suggest(ledger)
    assert result.mapping == {
        "preset": "strict",
        "routes": {"/products/": {"encoded_slash": "keep"}},
    }
    change = change_of(result, "/products/", "encoded_slash")
    assert change.admits.requests == lines - len(range(0, lines, 3))
    assert change.admits.failed == len(range(0, lines, 3))
    assert len(result.text.splitlines()) < 40


def test_siblings_merge_one_segment_up_when_a_cause_has_too_many_prefixes() -> None:
    ledger = Ledger(max_prefixes=4)
    error = error_of(b"/p/a/1/x%2Fy", ledger.table)
    assert error is not None
    for n in range(50):
        target = b"/p/%s/%d/x%%2Fy" % (b"ab"[n % 2 : n % 2 + 1], n)
        ledger.observe(target, 200, 1, error, [b"192.0.%d.2" % n], START, START + n * HOUR)
    [cause] = ledger.groups
    assert sorted(ledger.groups[cause]) == [b"/p/a/", b"/p/b/"]
    result = suggest(ledger)
    assert result.mapping["routes"] == {"/p/": {"encoded_slash": "keep"}}
    assert change_of(result, "/p/", "encoded_slash").admits.requests == 50


def test_the_number_of_routes_is_bounded() -> None:
    requests: list[Request] = [(b"/%s/x%%2Fy" % name, 200, 2) for name in (b"a", b"b", b"c")]
    requests.append((b"/a/more%2Fz", 200, 2))
    result = suggested(requests, thresholds=Thresholds(1, 1, 1, routes=2))
    assert sorted(result.mapping["routes"]) == ["/a/", "/b/"]  # the most evidence, then by name
    [refusal] = result.refused
    assert (refusal.scope, refusal.reason) == ("/c/", "past the bound of 2 routes (--max-routes)")
    assert not result.complete


def test_empty_segments_give_way_where_a_separator_is_kept() -> None:
    result = suggested([(b"/files/a%2Fb", 200, 300), (b"/files//x.css", 200, 300)])
    assert result.mapping == {"preset": "strict", "routes": {"/files/": {"encoded_slash": "keep"}}}
    [refusal] = result.refused
    assert refusal.rules == ("empty-segment",)
    assert refusal.reason.startswith("an empty segment where a separator is kept")
    assert verdict(b"/files/%2Fetc%2Fpasswd", read_back(result.text)) == "empty-segment"


def test_a_dangerous_double_encoding_keeps_the_setting_from_every_prefix_over_it() -> None:
    result = suggested(
        [
            (b"/docs/a/x%2520y", 200, 300),
            (b"/docs/b/x%2520y", 200, 300),
            Sent(b"/docs/b/%252e%252e%252fetc", 404, 1, 1, 0),
        ]
    )
    assert result.mapping == {
        "preset": "strict",
        "routes": {"/docs/a/": {"double_encoding": "allow"}},
    }
    [refusal] = result.refused
    assert refusal.scope == "/docs/b/"
    assert "decoded twice" in refusal.reason


def test_causes_past_the_bound_are_refused_as_one_group() -> None:
    ledger = Ledger(Policy(allowed_ranges=[(0x20, 0x7E)]))
    table = ledger.table
    for n in range(urlguard.cli.suggest.MAX_CAUSES + 10):
        target = b"/w/" + chr(0x4E00 + n).encode().replace(b"", b"")
        target = b"/w/" + "".join(f"%{b:02X}" for b in chr(0x4E00 + n).encode()).encode()
        error = error_of(target, table)
        assert error is not None
        ledger.observe(target, 200, 1, error, [b"192.0.2.1"], START, START)
    result = suggest(ledger, ANY)
    overflow = [r for r in result.refused if r.reason.startswith("past 256 causes")]
    assert [r.evidence.requests for r in overflow] == [10]


# --- the text ---------------------------------------------------------------------------

HOSTILE: list[Request] = [
    (b"/x?q=%0D%0Aevil", 200, 1),
    (b"/x/%E2%80%AE", 200, 1),
    (b"/x/%1B%5B2J", 200, 1),
    (b'/x/"\\\x1b[2J\r\n', 200, 1),
    (b"/x/\xe2\x80\xae", 200, 1),
    (b"/y/a%2F%0D%0A", 200, 1),
]


@pytest.mark.parametrize("thresholds", [P(ANY, id="any evidence"), P(DEFAULT, id="default")])
def test_text_is_printable_ascii_whatever_the_targets(thresholds: Thresholds) -> None:
    result = suggested(HOSTILE, thresholds=thresholds)
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


def test_the_browser_preset_is_never_suggested() -> None:
    """Brackets all over the site admit brackets site-wide, not the browser
    preset: that would admit CR, LF and TAB in every query, on no evidence."""
    places = (b"search", b"api", b"shop", b"list", b"tags")
    result = suggested([(b"/%s/x?tags[]=a" % place, 200, 3) for place in places], thresholds=ANY)
    assert result.mapping == {"preset": "strict", "raw_query_extra": "[]"}
    change = change_of(result, None, "raw_query_extra")
    assert (change.origin, change.rules, change.admits.requests) == ("suggested", ("raw-char",), 15)
    assert verdict(b"/search/x?q=a%0D%0Ab", read_back(result.text)) == "forbidden-char"


def test_existing_configuration_is_kept_and_marked() -> None:
    result = suggested(
        [(b"/files/a%2Fb", 200, 1), (b"/static//x.css", 200, 1), (b"/static/a//y.js", 200, 1)],
        Policy(max_segments=64),
        [("/files/", Policy(max_segments=64, encoded_slash="keep"))],
        thresholds=ANY,
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
    result = suggest(ledger_of([(b"/a/b%2Fc", 200, 1)]), ANY, mode="report")
    assert result.mapping == {
        "preset": "strict",
        "mode": "report",
        "routes": {"/a/": {"encoded_slash": "keep"}},
    }
    assert '\nmode = "report"  # as in the current configuration\n' in result.text
    assert config_from_mapping(tomllib.loads(result.text)).mode == "report"


def test_a_route_inside_a_route_repeats_what_encloses_it() -> None:
    requests: list[Request] = [
        (b"/api/items?filter[a]=1", 200, 1),
        (b"/api/p/a%2Fb", 200, 1),
        (b"/api/p/c%2Fd", 200, 1),
    ]
    result = suggested(requests, thresholds=ANY)
    assert result.mapping["routes"] == {
        "/api/": {"raw_query_extra": "[]"},
        "/api/p/": {"raw_query_extra": "[]", "encoded_slash": "keep"},
    }
    inherited = change_of(result, "/api/p/", "raw_query_extra")
    assert (inherited.origin, inherited.inherited_from) == ("inherited", "/api/")


# --- properties ----------------------------------------------------------------------------

SEGMENTS = ["a", "", "b%2Fc", "..", ".", "%2E", "%C0%AE", "%00", "%E2%80%AE", "caf%C3%A9"]
SEGMENTS += ["[1]", "x|y", "a;b", "%zz", "%255C", "d%5Ce", "%2F", "..%2F", "%ED%A0%80"]
SEGMENTS += ['q"t', "b\\s", "a<b", "%E6%97%A5", "%2520", "%252e%252e%252f", "%2Fetc", "%5C%5Ch"]
SEGMENTS += ["c:%2Fw", "%2500", "x^y", "%25252F"]
QUERIES = ["", "q=1", "f[a]=1", "t=a%0D%0Ab", "z=%00", 'w="x"', "u=%E2%80%AE", "k=%09", "^"]
STATUSES = [200, 204, 302, 304, 400, 403, 404, 500, None]

requests_strategy = st.lists(
    st.builds(
        Sent,
        st.builds(
            lambda directory, segments, query: (
                directory + "/".join(segments) + ("?" + query if query else "")
            ).encode(),
            # A few shared directories, so that targets meet under one prefix.
            st.sampled_from(["/", "/s/", "/s/t/"]),
            st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3),
            st.sampled_from(QUERIES),
        ),
        st.sampled_from(STATUSES),
        st.integers(1, 400),
        st.integers(1, 60),
        st.sampled_from([0.0, 0.5, 2.0, 48.0]),
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None)
@given(requests_strategy, st.sampled_from([ANY, DEFAULT, Thresholds(requests=50, networks=2)]))
def test_nothing_never_loosened_is_admitted_and_nothing_is_dropped(
    requests: list[Sent], thresholds: Thresholds
) -> None:
    """For any log: no target the engine must never loosen is accepted by
    the policy suggested; every served request the current policy rejects
    is admitted, stopped or refused, and counted once."""
    result = suggested(requests, thresholds=thresholds)
    table = read_back(result.text)
    for request in requests:
        if never_loosened(request.target):
            assert verdict(request.target, table) != "ok", request.target
    stopped = sum(stop.requests for stop in result.stopped)
    assert result.rejected_served == result.admitted + stopped + refused_requests(result)
    assert result.complete is (result.admitted == result.rejected_served)


# --- the command ----------------------------------------------------------------------------


def test_the_command_sees_what_the_engine_sees(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = write_log(tmp_path / "access.log", REALISTIC)
    code, out, err = run(capsys, "audit", "--suggest", "--json", str(log))
    assert (code, err) == (1, "")  # served attacks stay rejected
    engine = suggested(REALISTIC)
    command = json.loads(out)["suggestion"]
    assert command["config"] == engine.mapping
    change = next(c for c in command["changes"] if c["scope"] == "/api/v4/projects/")
    assert change["admits"]["clients"] == COUNTED  # listed one by one; more are counted
    assert (change["admits"]["networks"], change["admits"]["days"]) == (COUNTED, 2)
    assert change["admits"]["first_seen"] == "2024-10-10 00:00:00 UTC"
    assert change["admits"]["last_seen"] == "2024-10-12 00:00:00 UTC"


def test_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """What --suggest writes, given back with --config on the same log,
    admits every 2xx/3xx request it chose to admit and still rejects every
    request it listed, and every attack."""
    log = write_log(tmp_path / "access.log", REALISTIC)
    policy = tmp_path / "urlguard.toml"
    code, out, err = run(capsys, "audit", "--suggest", "--write", str(policy), str(log))
    assert (code, err) == (1, "")
    assert f"wrote        {policy}" in out
    config = load_config(policy)
    table = RouteTable(config.policy, list(config.routes))
    for request in GITLAB + JSON_API + TEXTAREA + CARELESS_JOINS + PLAIN:
        assert verdict(sent(request).target, table) == "ok", request
    for request in ATTACKS_SERVED + ATTACKS_FAILED + PROBES:
        assert verdict(sent(request).target, table) != "ok", request
    code, out, err = run(capsys, "audit", "--json", "--config", str(policy), str(log))
    report = json.loads(out)
    assert (code, err) == (1, "")
    assert report["rejected"] == sum(
        sent(r).number for r in ATTACKS_SERVED + ATTACKS_FAILED + PROBES
    )


@pytest.mark.parametrize(
    ("options", "code", "routes"),
    [
        P([], 1, {}, id="default: a handful of requests is not enough"),
        P(
            ["--min-requests", "3", "--min-networks", "1", "--min-days", "1"],
            0,
            {"/r/": {"encoded_slash": "keep"}},
            id="lowered",
        ),
        P(["--min-requests", "4", "--min-networks", "1", "--min-days", "1"], 1, {}, id="one short"),
    ],
)
def test_threshold_options(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    options: list[str],
    code: int,
    routes: dict[str, Any],
) -> None:
    log = write_log(tmp_path / "access.log", [Sent(b"/r/x%2Fy", 200, 3, 1, 0)])
    ran = run(capsys, "audit", "--suggest", *options, str(log))
    assert (ran.code, ran.err) == (code, "")
    assert tomllib.loads(ran.out).get("routes", {}) == routes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        P(["--write", "x.toml"], "--write applies to --suggest only", id="write without suggest"),
        P(["--suggest", "--force"], "--force applies to --write only", id="force without write"),
        P(
            ["--min-requests", "5"],
            "--min-requests applies to --suggest only",
            id="threshold without suggest",
        ),
        P(["--suggest", "--min-networks", "0"], "--min-networks: networks must", id="no network"),
        P(["--suggest", "--max-routes", "0"], "--max-routes: routes must be", id="no route"),
        P(["--suggest", "--min-days", "0"], "--min-days: days must be", id="no day"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    log = write_log(tmp_path / "access.log", GITLAB)
    code, out, err = run(capsys, "audit", *argv, str(log))
    assert (code, out) == (2, "")
    assert err.startswith(f"urlguard: error: {message}")
    assert not (tmp_path / "x.toml").exists()


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


@pytest.mark.parametrize(
    ("requests", "code"),
    [
        P(PLAIN, 0, id="nothing to change"),
        P(GITLAB, 0, id="everything served admitted"),
        P(ATTACKS_FAILED + PLAIN, 0, id="only failing requests rejected"),
        P(GITLAB + ATTACKS_SERVED[:1], 1, id="a served request stays rejected"),
        P([*GITLAB, Sent(b"/r/x%2Fy", 200, 3, 1, 0)], 1, id="a served request lacks evidence"),
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
    good = log_lines([(b"/a/b%2Fc", 200, 25)])
    log.write_bytes(
        b"\n".join(good[:10])
        + b"\nnot a log line \x1b[31m\xe2\x80\xae\r\n"
        + b"\n".join(good[10:])
        + b"\n\n"
    )
    code, out, err = run(capsys, "audit", "--suggest", str(log))
    assert (code, err) == (0, "")
    assert "# Lines read: 27; parsed: 25; skipped (not parsed): 2.\n" in out
    assert "#   e.g. not a log line \\x1B[31m\\xE2\\x80\\xAE\\x0D\n" in out
    assert "#   e.g. (an empty line)\n" in out
    assert all(line.isascii() and line.isprintable() for line in out.splitlines())


def test_a_list_of_targets_has_no_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    targets = tmp_path / "targets.txt"
    targets.write_bytes(b"/a/x%2Fy\n/b//c\n")
    code, out, _ = run(capsys, "audit", "--suggest", str(targets))
    assert code == 0
    assert tomllib.loads(out) == {"preset": "strict"}
    assert "# Requests with no 2xx-5xx status (1xx, 000, or a list of targets): 2;" in out


@pytest.mark.parametrize("lines", [2_000])
def test_the_shop_log_through_the_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: int
) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(
        b"".join(
            combined(request.target, request.status, b"198.51.%d.7" % (n % 200), START + n * 60.0)
            + b"\n"
            for n, request in enumerate(map(sent, shop(lines)))
        )
    )
    code, out, err = run(capsys, "audit", "--suggest", str(log))
    assert (code, err) == (0, "")
    assert tomllib.loads(out)["routes"] == {"/products/": {"encoded_slash": "keep"}}


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


def test_a_target_that_must_stay_rejected_splits_its_branch_only() -> None:
    """A blocker at the bottom of a chain of 100 branching directories: every
    branch beside the chain gets its route, the blocker's directory none."""
    requests: list[Request] = [(b"/a" * k + b"/b/x%2520y", 200, 1) for k in range(1, 101)]
    blocker = b"/a" * 100 + b"/b/%252e%252e%252fetc"
    requests.append(Sent(blocker, 404, 1, 1, 0))
    result = suggested(requests, thresholds=Thresholds(1, 1, 1, routes=1000))
    routes = result.mapping["routes"]
    assert len(routes) == 99
    assert all(policy == {"double_encoding": "allow"} for policy in routes.values())
    [refusal] = result.refused
    assert refusal.scope == (b"/a" * 100 + b"/b/").decode()
    assert refusal.reason.startswith("a target under it, decoded twice")
    assert verdict(blocker, read_back(result.text)) == "double-encoding"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        P(b"", "no line to audit: the input is empty", id="empty"),
        P(None, "access.log: cannot read: No such file or directory", id="missing"),
        P(b"\x1f\x8b\x08garbage", "access.log: truncated gzip data", id="broken gzip"),
        P(b"\n\n", "no line could be read as a request", id="blank lines only"),
    ],
)
def test_an_unreadable_or_empty_log_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None, message: str
) -> None:
    log = tmp_path / ("access.log.gz" if content and content[:2] == b"\x1f\x8b" else "access.log")
    if content is not None:
        log.write_bytes(content)
    code, out, err = run(capsys, "audit", "--suggest", str(log))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("urlguard: error: ")
    assert message.replace("access.log", str(log)) in err
    assert gc.isenabled()  # paused while the log was read, and on again
