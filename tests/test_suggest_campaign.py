"""``urlguard audit --suggest`` against campaigns, not single requests.

An attacker can be many clients for a few hours: the logs here are
generated, a site's visitors (thousands of addresses in thousands of
networks, over two days or two weeks) with and without a campaign (five to
ten addresses in one or two /24 networks, up to fifty requests per payload
over up to six hours, answered 200 or 302 by careless handlers). The
suggestion must be the same with the campaign as without it, and must admit
the visitors' own exceptions. More evidence of the same kind never turns an
admission into a refusal.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from suggest_helpers import (
    DAY,
    HOUR,
    PAYLOADS,
    START,
    VISITORS_ROUTES,
    Campaign,
    P,
    campaign_log,
    error_of,
    never_loosened,
    read_back,
    verdict,
    visitors_log,
)
from urlguard.cli import main
from urlguard.cli.suggest import Ledger, Thresholds, suggest


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def suggestion(*paths: Path) -> dict[str, Any]:
    """``urlguard audit --suggest --json`` on ``paths``: its suggestion."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["audit", "--suggest", "--json", *map(str, paths)])
    assert code in (0, 1)
    found: dict[str, Any] = json.loads(out.getvalue())["suggestion"]
    return found


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50,000 requests over two days from 3,000 visitors."""
    return write(
        tmp_path_factory.mktemp("visitors") / "two-days.log", visitors_log(2, 50_000, 3_000)
    )


@pytest.fixture(scope="module")
def visitors_alone(two_days: Path) -> dict[str, Any]:
    return suggestion(two_days)


@pytest.mark.parametrize(("days", "lines", "visitors"), [(2, 50_000, 3_000), (14, 80_000, 5_000)])
def test_the_visitors_exceptions_are_admitted(
    tmp_path: Path, days: int, lines: int, visitors: int
) -> None:
    log = write(tmp_path / "access.log", visitors_log(days, lines, visitors))
    found = suggestion(log)
    assert found["config"] == {"preset": "strict", "routes": VISITORS_ROUTES}
    table = read_back(found["toml"])
    for target in (
        b"/api/v4/projects/gitlab-org%2Fgitlab/issues?page=1",
        b"/api/v1/articles?filter[author]=a1&page[size]=20",
        b"/support/ticket?subject=Hi&body=Hello%2C%0D%0Ait+fails.%0D%0AThanks",
    ):
        assert verdict(target, table) == "ok", target


CAMPAIGNS = [
    P(Campaign(8, 1, 30, 2.0), id="8 addresses in one /24, 30 a payload over 2 hours"),
    P(Campaign(5, 1, 50, 6.0), id="5 addresses in one /24, 50 a payload over 6 hours"),
    P(
        Campaign(10, 2, 50, 6.0, start=START + 21 * HOUR),
        id="10 addresses in two /24s, 50 a payload over 6 hours across midnight",
    ),
]
ALL_AT_ONCE = [request for payload in PAYLOADS.values() for request in payload]


@pytest.mark.parametrize("campaign", CAMPAIGNS)
@pytest.mark.parametrize(
    "payload",
    [P(payload, id=name) for name, payload in PAYLOADS.items()] + [P(ALL_AT_ONCE, id="all")],
)
def test_a_campaign_steers_nothing(
    tmp_path: Path,
    two_days: Path,
    visitors_alone: dict[str, Any],
    campaign: Campaign,
    payload: list[tuple[bytes, int]],
) -> None:
    attack = write(tmp_path / "campaign.log", campaign_log(campaign, payload))
    found = suggestion(two_days, attack)
    assert found["config"] == visitors_alone["config"]  # no change comes from the campaign
    table = read_back(found["toml"])
    for target, _ in payload:
        assert verdict(target, table) != "ok", target
    alone = suggestion(attack)  # and nothing on its own either
    assert alone["config"] == {"preset": "strict"}
    assert alone["admitted"] == 0


def test_a_campaign_of_many_kinds_is_a_scanner() -> None:
    """Clients that break rules of several families do not count: the same
    requests from many networks over days are no evidence when each client
    also sends traversals and overlong lengths."""
    ledger = Ledger()
    kinds = [b"/files/a%2Fb", b"/search?q=<x>", b"/static/../etc/passwd", b"/q?x=" + b"A" * 9000]
    for n in range(40):
        client = [b"198.51.%d.7" % n]
        for k, target in enumerate(kinds):
            error = error_of(target, ledger.table)
            assert error is not None
            when = START + n * 2 * HOUR + k
            ledger.observe(target, 200, 1, error, client, when, when)
    result = suggest(ledger, Thresholds(requests=5, networks=5, days=1))
    assert result.mapping == {"preset": "strict"}
    assert {r.evidence.discounted for r in result.refused} == {40}


# --- monotone: more evidence of the same kind --------------------------------------------------

UNIVERSE = [
    b"/a/x%2Fy",
    b"/a/b/x%2Fz",
    b"/b/x%2Fy",
    b"/c/x%2Fy",
    b"/d/p%2Fq",
    b"/e/p%2Fq",
    b"/f/p%2Fq",
    b"/s/t?f[a]=1",
    b"/u/t?f[b]=1",
    b"/support/x?b=1%0D%0A2",
    b"/static//a.css",
    b"/docs/a%2520b",
    b"/docs/%252e%252e%252fetc",
    b"/r?n=%0D%0ALocation:x",
    b"/q?x=" + b"A" * 9000,
]
# An entry: a target of the universe, its status, and its evidence: networks,
# clients per network, requests, first day and hours.
Entry = tuple[int, int, int, int, int, int, float]
entries = st.tuples(
    st.integers(0, len(UNIVERSE) - 1),
    st.sampled_from([200, 304, 302, 404]),
    st.integers(1, 8),
    st.integers(1, 3),
    st.integers(1, 30),
    st.integers(0, 3),
    st.sampled_from([0.0, 5.0, 30.0]),
)
# More of an entry: which one, and its added networks, clients, requests, days, hours.
mores = st.tuples(
    st.integers(0, 1000),
    st.integers(1, 8),
    st.integers(1, 3),
    st.integers(1, 30),
    st.integers(0, 3),
    st.sampled_from([0.0, 5.0, 30.0]),
)


def admitted(entries: list[Entry], thresholds: Thresholds) -> set[bytes]:
    """The targets of the universe the suggestion for ``entries`` admits.
    Each entry's clients are its own (fresh addresses)."""
    ledger = Ledger()
    for n, (index, status, networks, per, requests, day, hours) in enumerate(entries):
        target = UNIVERSE[index]
        error = error_of(target, ledger.table)
        assert error is not None
        clients = [
            b"10.%d.%d.%d" % (n % 250, k, 1 + c) for k in range(networks) for c in range(per)
        ]
        first = START + day * DAY
        ledger.count_statuses({status: requests})
        ledger.observe(target, status, requests, error, clients, first, first + hours * HOUR)
    table = read_back(suggest(ledger, thresholds).text)
    return {target for target in UNIVERSE if verdict(target, table) == "ok"}


LOW = Thresholds(requests=3, networks=2, days=1, routes=1000)
PROBES_302 = [(13, 302, 1, 1, 1, 0, 0.0)]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(entries, max_size=12),
    st.lists(mores, max_size=6),
    st.sampled_from([LOW, Thresholds(routes=1000)]),
)
@example(PROBES_302 * 200, [], LOW)  # the probe campaign, 200 ...
@example(PROBES_302 * 300, [], LOW)  # ... and 300 of it: both refused
def test_more_evidence_of_the_same_kind_never_refuses_what_was_admitted(
    base: list[Entry], more: list[tuple[int, int, int, int, int, float]], thresholds: Thresholds
) -> None:
    served = [entry for entry in base if entry[1] in (200, 304)]
    extended = list(base)
    for pick, *evidence in more:
        if served:
            index, status = served[pick % len(served)][:2]
            extended.append((index, status, *evidence))  # type: ignore[arg-type]
    before, after = admitted(base, thresholds), admitted(extended, thresholds)
    assert before <= after
    for index, *_ in extended:  # what the log shows is judged by what it shows
        if never_loosened(UNIVERSE[index]):
            assert UNIVERSE[index] not in after, UNIVERSE[index]


@pytest.mark.parametrize("probes", [200, 300])
def test_crlf_probes_on_many_first_segments_are_refused_however_many(probes: int) -> None:
    """One probe each on ``probes`` first segments, each from an address of
    its own, two minutes apart, answered 302: never admitted, at any count."""
    ledger = Ledger()
    for n in range(probes):
        target = b"/p%d?next=%%0D%%0ASet-Cookie:%%20sid=evil" % n
        error = error_of(target, ledger.table)
        assert error is not None
        when = START + n * 120.0
        client = [b"%d.%d.%d.9" % (20 + n // 65536, n // 256 % 256, n % 256)]
        ledger.observe(target, 302, 1, error, client, when, when)
    result = suggest(ledger, Thresholds(requests=1, networks=1, days=1, routes=1000))
    assert result.mapping == {"preset": "strict"}
    assert result.admitted == 0
    assert {r.reason for r in result.refused} == {
        "CR or LF in a query answered with a redirect under it (response splitting)"
    }
