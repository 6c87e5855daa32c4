"""Shared by the tests of ``urlguard audit --suggest``: requests as the
auditor feeds them to the engine, logs written from them, the realistic log
of a site, generated campaigns, and an oracle of what must never be admitted,
stated without the engine.

Legitimate traffic comes from many networks over two days; attacks from the
clients, networks and times each test says.
"""

from __future__ import annotations

import datetime
import random
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

import pytest

from urlguard import InvalidTarget, Policy, config_from_mapping, parse_target
from urlguard._guard.routes import RouteTable, path_of
from urlguard._url import grammar as g
from urlguard.cli.suggest import Ledger, Suggestion, Thresholds, suggest

P = pytest.param
BROWSER_QUERY = g.to_str(g.BROWSER_QUERY_EXTRA)  # '[\\]^`{|}'
START = datetime.datetime(2024, 10, 10, tzinfo=datetime.UTC).timestamp()
HOUR = 3600.0
#: Any evidence is enough: the tests of where and what.
ANY = Thresholds(requests=1, networks=1, days=1)
DEFAULT = Thresholds()


class Sent(NamedTuple):
    """``number`` requests for ``target`` answered ``status``, from
    ``clients`` distinct clients, each in a network of its own (default: one
    per request, at most 40), spread evenly over ``hours`` (default 48)."""

    target: bytes
    status: int | None
    number: int
    clients: int | None = None
    hours: float = 48.0


Request = tuple[bytes, int | None, int] | Sent


def sent(request: Request) -> Sent:
    return request if isinstance(request, Sent) else Sent(*request)


def clients_of(n: int, request: Sent) -> list[bytes]:
    """The clients of the ``n``-th entry of a log: its own addresses, each
    in a /24 of its own (visitors of a site come from many networks)."""
    many = request.clients if request.clients is not None else min(request.number, 40)
    return [b"10.%d.%d.%d" % (n % 250, k % 250, 1 + k // 250) for k in range(many)]


def error_of(target: bytes, table: RouteTable) -> InvalidTarget | None:
    try:
        parse_target(target, table.select(target))
    except InvalidTarget as error:
        return error
    return None


def verdict(target: bytes, table: RouteTable) -> str:
    error = error_of(target, table)
    return "ok" if error is None else error.rule


def ledger_of(
    requests: Sequence[Request],
    policy: Policy | None = None,
    routes: Sequence[tuple[str, Policy]] = (),
) -> Ledger:
    """A ledger fed as the auditor feeds it: per (target, status), with
    the clients and the first and last time."""
    ledger = Ledger(policy, routes)
    table = ledger.table
    for n, request in enumerate(map(sent, requests)):
        error = error_of(request.target, table)
        ledger.count_statuses({request.status: request.number})
        if error is not None:
            last = START + (request.hours * HOUR if request.number > 1 else 0)
            clients = clients_of(n, request)
            ledger.observe(
                request.target, request.status, request.number, error, clients, START, last
            )
    return ledger


def suggested(
    requests: Sequence[Request],
    policy: Policy | None = None,
    routes: Sequence[tuple[str, Policy]] = (),
    thresholds: Thresholds = DEFAULT,
) -> Suggestion:
    result = suggest(ledger_of(requests, policy, routes), thresholds)
    assert result.still_rejected == ()  # its own text, read back, admits what it meant to
    return result


def read_back(text: str) -> RouteTable:
    config = config_from_mapping(tomllib.loads(text))
    return RouteTable(config.policy, list(config.routes))


def stopped_rules(result: Suggestion) -> dict[str, int]:
    found: dict[str, int] = {}
    for stop in result.stopped:
        found[stop.rule] = found.get(stop.rule, 0) + stop.requests
    return found


def refused_requests(result: Suggestion) -> int:
    return sum(r.evidence.served for r in result.refused)


# --- the realistic log: legitimate traffic from many clients over two days -------------------

GITLAB: list[Request] = [
    (b"/api/v4/projects/gitlab-org%2Fgitlab/issues?state=opened&per_page=20", 200, 400),
    (b"/api/v4/projects/gitlab-org%2Fgitlab-runner/merge_requests", 200, 150),
    (b"/api/v4/projects/inkscape%2Finkscape/repository/files/src%2Fmain.cpp/raw?ref=v1", 200, 60),
    (b"/api/v4/projects/fdroid%2Ffdroidclient", 304, 30),
    (b"/api/v4/projects/278964", 200, 90),  # a numeric id: fine already
]
JSON_API: list[Request] = [
    (b"/api/v1/articles?filter[author]=ada&page[size]=20", 200, 120),
    (b"/api/v1/people?filter[name]=Grace%20Hopper", 200, 40),
    (b"/api/v1/articles?include=author&fields[articles]=title,body", 200, 50),
]
TEXTAREA: list[Request] = [
    (b"/support/ticket?subject=Login&body=Hello%2C%0D%0AI+cannot+log+in.%0D%0AThanks", 200, 20),
    (b"/support/preview?body=line+one%0D%0Aline+two", 200, 30),
]
CARELESS_JOINS: list[Request] = [
    (b"/static//css/app.css", 200, 300),
    (b"/static/js//vendor.js", 200, 250),
    (b"/static//img/logo.svg", 304, 110),
]
PLAIN: list[Request] = [
    (b"/", 200, 1000),
    (b"/about", 200, 100),
    (b"/search?q=caf%C3%A9+cr%C3%A8me", 200, 70),
    (b"/missing", 404, 50),
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
# A response splitting probe a careless redirect answered 302, three times
# from one client: what a query at '/r' could be loosened for, with no
# evidence that the site needs it.
PROBES: list[Request] = [Sent(b"/r?next=%0D%0ASet-Cookie:%20session=evil", 302, 3, 1, 0.1)]
SERVED_STOPPED = {"forbidden-char": 3, "dot-segment": 2, "invalid-utf8": 1, "malformed-escape": 1}
REALISTIC = (
    GITLAB + JSON_API + TEXTAREA + CARELESS_JOINS + PLAIN + ATTACKS_FAILED + ATTACKS_SERVED + PROBES
)
REALISTIC_ROUTES = {
    "/api/v1/": {"raw_query_extra": "[]"},
    "/api/v4/projects/": {"encoded_slash": "keep"},
    "/static/": {"empty_segment": "allow"},
    "/support/": {"query_allow_chars": "\n\r"},
}
SERVED_REJECTED = GITLAB[:4] + JSON_API + TEXTAREA + CARELESS_JOINS


def loosest_from(policy: Policy) -> Policy:
    """The loosest policy a suggestion can reach from ``policy`` (characters
    outside a narrowed range aside, which no test here combines with this)."""
    return policy.replace(
        max_length=16_384,  # the bounds the documentation states
        max_segments=256,
        max_params=2_000,
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


def never_loosened(target: bytes) -> bool:
    """Whether ``target`` is one the suggestion must never admit, as the
    engine's list states it, judged here without the engine: the loosest
    reachable policy rejects it; or its path holds a raw character no
    browser sends there; or it needs both an empty segment and a kept
    separator; or a segment decoded twice gives a separator (``/ \\ ? #``),
    a control, markup (``< > " '``), another escape or a dot segment."""
    if verdict(target, RouteTable(LOOSEST, [])) != "ok":
        return True
    path = path_of(target)
    if set(path) & set(b'<>"{}^`'):
        return True
    needs_empty = verdict(target, RouteTable(LOOSEST.replace(empty_segment="reject"), [])) != "ok"
    without_separators = LOOSEST.replace(
        encoded_slash="reject",
        encoded_backslash="reject",
        raw_path_extra=LOOSEST.raw_path_extra.replace("\\", ""),
    )
    needs_separator = verdict(target, RouteTable(without_separators, [])) != "ok"
    if needs_empty and needs_separator:
        return True
    for segment in path.split(b"/"):
        twice = unquote_to_bytes(unquote_to_bytes(segment))
        if twice != unquote_to_bytes(segment) and (
            re.search(rb"[/\\?#<>\"'\x00-\x1f\x7f]|\xc2[\x80-\x9f]|%[0-9A-Fa-f]{2}", twice)
            or twice.partition(b";")[0] in (b".", b"..")
        ):
            return True
    return False


def shop(lines: int) -> list[Request]:
    """One URL shape answered 200 for some products and 404 for missing ones."""
    return [
        Sent(b"/products/%d/kg%%2Fs" % n, 404 if n % 3 == 0 else 200, 1, 1, 0) for n in range(lines)
    ]


def shop_ledger(lines: int) -> Ledger:
    ledger = Ledger()
    error = error_of(b"/products/1/kg%2Fs", ledger.table)
    assert error is not None
    for n, request in enumerate(map(sent, shop(lines))):
        client = [b"198.51.%d.7" % (n % 200)]  # visitors from 200 networks
        when = START + n * 10.0
        ledger.observe(request.target, request.status, 1, error, client, when, when)
    ledger.count_statuses({200: lines})
    return ledger


def combined(target: bytes, status: int | None, client: bytes, when: float) -> bytes:
    escaped = b"".join(
        bytes([b]) if 0x20 <= b < 0x7F and b not in b'"\\' else b"\\x%02X" % b for b in target
    )
    stamp = datetime.datetime.fromtimestamp(when, datetime.UTC).strftime("%d/%b/%Y:%H:%M:%S")
    return (
        b'%b - - [%b +0000] "GET %b HTTP/1.1" %d 512 '
        b'"-" "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"'
        % (client, stamp.encode(), escaped, 200 if status is None else status)
    )


def log_lines(requests: Sequence[Request]) -> list[bytes]:
    """Each request of each entry on its own line, from the entry's clients
    in turn, spread evenly over its hours."""
    lines = []
    for n, request in enumerate(map(sent, requests)):
        clients = clients_of(n, request)
        step = request.hours * HOUR / max(request.number - 1, 1)
        for i in range(request.number):
            lines.append(
                combined(
                    request.target, request.status, clients[i % len(clients)], START + i * step
                )
            )
    return lines


def write_log(path: Path, requests: Sequence[Request]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in log_lines(requests)))
    return path


# --- generated logs: visitors of a site, and campaigns against it -----------------------------

DAY = 24 * HOUR
#: What the visitors of the generated site need beyond the strict policy,
#: as the suggestion should write it: project paths with %2F, bracketed
#: query names, and a <textarea> whose GET form sends CR LF (answered 200).
VISITORS_ROUTES = {
    "/api/v1/": {"raw_query_extra": "[]"},
    "/api/v4/projects/": {"encoded_slash": "keep"},
    "/support/": {"query_allow_chars": "\n\r"},
}
_PAGES = (b"/", b"/about", b"/blog/2024/10/hello", b"/search?q=caf%C3%A9+cr%C3%A8me", b"/docs/")
_PROJECTS = (b"gitlab-org%2Fgitlab", b"inkscape%2Finkscape", b"fdroid%2Ffdroidclient")


def _visitor_target(rng: random.Random) -> tuple[bytes, int]:
    """One request of a visitor, and the site's answer."""
    roll = rng.random()
    if roll < 0.06:
        project = rng.choice(_PROJECTS)
        return b"/api/v4/projects/%s/issues?page=%d" % (project, rng.randrange(1, 9)), 200
    if roll < 0.09:
        return b"/api/v1/articles?filter[author]=a%d&page[size]=20" % rng.randrange(99), 200
    if roll < 0.092:
        return b"/support/ticket?subject=Hi&body=Hello%2C%0D%0Ait+fails.%0D%0AThanks", 200
    if roll < 0.12:
        return b"/missing/%d" % rng.randrange(999), 404
    return rng.choice(_PAGES), rng.choice((200, 200, 200, 304))


def visitors_log(days: int, lines: int, visitors: int, seed: int = 36) -> list[bytes]:
    """``lines`` requests over ``days`` days from ``visitors`` addresses,
    each in a network drawn from thousands, in time order."""
    rng = random.Random(seed)
    addresses = [
        b"%d.%d.%d.%d"
        % (
            rng.choice((24, 31, 77, 81, 88, 92, 151, 176)),
            rng.randrange(256),
            rng.randrange(256),
            rng.randrange(1, 255),
        )
        for _ in range(visitors)
    ]
    found = []
    for n in range(lines):
        when = START + n * days * DAY / lines
        target, status = _visitor_target(rng)
        found.append(combined(target, status, rng.choice(addresses), when))
    return found


#: The payloads of a campaign: what a careless application answers 200 or
#: 302, each with the status it got.
PAYLOADS: dict[str, list[tuple[bytes, int]]] = {
    "CR LF through a redirect": [
        (b"/r?next=%0D%0ASet-Cookie:%20sid=evil", 302),
        (b"/redirect?next=%0D%0ASet-Cookie:%20sid=evil", 302),
    ],
    "CR LF answered 200": [(b"/r?next=%0D%0ASet-Cookie:%20sid=evil", 200)],
    "an empty segment in a route key": [(b"/assets//etc/passwd", 200)],
    "double encoding of markup": [
        (b"/view2/%253Cimg%2520src%253Dx%2520onerror%253Dalert(1)%253E", 200)
    ],
    "raw < > in a query": [(b"/search?q=<script>alert(1)</script>", 200)],
    "too many query pairs": [(b"/q?" + b"&".join(b"a%d=1" % n for n in range(1500)), 200)],
    "too long": [(b"/q?x=" + b"A" * 10_887, 200)],
    "encoded backslash": [(b"/dl/..%5C..%5Cwin.ini", 200), (b"/dl/a%5Cb", 200)],
    "encoded slash": [(b"/files/a%2Fb", 200), (b"/files/etc%2Fpasswd", 200)],
    "raw [ ] under several first segments": [
        (b"/%s/x?t[]=1" % place, 200) for place in (b"a", b"b", b"c", b"d", b"e", b"f")
    ],
}


class Campaign(NamedTuple):
    """A campaign: ``addresses`` clients in ``networks`` /24s taking turns,
    each payload sent ``requests`` times over ``hours`` from ``start``."""

    addresses: int
    networks: int
    requests: int
    hours: float
    start: float = START + 10 * HOUR


def campaign_log(campaign: Campaign, payloads: Sequence[tuple[bytes, int]]) -> list[bytes]:
    clients = [
        b"203.0.%d.%d" % (113 + k % campaign.networks, 10 + k) for k in range(campaign.addresses)
    ]
    found = []
    for p, (target, status) in enumerate(payloads):
        step = campaign.hours * HOUR / max(campaign.requests - 1, 1)
        for i in range(campaign.requests):
            client = clients[(p + i) % len(clients)]
            found.append(combined(target, status, client, campaign.start + i * step))
    return found
