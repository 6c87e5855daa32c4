"""The pieces of ``urlguard.cli.audit`` that ``audit --suggest`` leans on: the
shape of a target (one verdict per shape), the client and the time of a
log line."""

from __future__ import annotations

import doctest
import random
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urlguard.cli.audit
import urlguard.cli.display
import urlguard.cli.shapes
from urlguard import InvalidTarget, Policy, parse_target
from urlguard._guard.allowed_hosts import AllowedHosts
from urlguard._url import grammar as g
from urlguard._url.host import parse_host
from urlguard.cli.audit import Auditor, Format, client_of, log_time
from urlguard.cli.shapes import folds, shape_of, shapes_of
from urlguard.cli.sources import MAX_LINE

P = pytest.param


@pytest.mark.parametrize("module", [urlguard.cli.audit, urlguard.cli.display, urlguard.cli.shapes])
def test_docstring_examples(module: ModuleType) -> None:
    assert doctest.testmod(module).failed == 0


def verdict(target: bytes, policy: Policy) -> str:
    try:
        parse_target(target, policy)
    except InvalidTarget as error:
        return error.rule
    return "ok"


POLICIES = [
    P(Policy(), id="strict"),
    P(Policy.browser(), id="browser"),
    P(
        Policy(encoded_slash="keep", encoded_backslash="keep", empty_segment="allow"),
        id="separators kept, empty segments allowed",
    ),
    P(Policy(double_encoding="allow", path_params="split"), id="double encoding allowed"),
    P(
        Policy(
            raw_path_extra=g.to_str(g.ALLOWABLE_RAW_EXTRA),
            raw_query_extra=g.to_str(g.ALLOWABLE_RAW_EXTRA),
            max_length=64,
            max_segments=4,
            max_params=2,
        ),
        id="raw extras, tight limits",
    ),
]
PIECES = ["a", "Z9", "..", ".", "%2E", "%2F", "%2f", "%5C", "%25", "%2541", "%252F", "%252e"]
PIECES += ["%25252F", "%00", "%C0%AE", "%E6%97%A5", "%zz", "c:", "C:", ";", "=", "&", "?", "/"]
PIECES += ["//", "[", "<", "\\", "+", "#", "%", "%2", "x%2", "\xe9", "0", "ff", "Gg"]
# Letters and digits, by the class the shape keeps: a digit, a hex letter, another letter.
CLASSES = ["0123456789", "abcdefABCDEF", "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ"]


def same_shape(target: bytes, rng: random.Random) -> bytes:
    """``target`` with each letter and digit outside the four bytes after a
    '%' swapped for another of its class."""
    out = bytearray(target)
    kept = 0
    for i, byte in enumerate(target):
        if byte == ord("%"):
            kept = 5
        if kept:
            kept -= 1
            continue
        for letters in CLASSES:
            if chr(byte) in letters:
                out[i] = ord(rng.choice(letters))
    return bytes(out)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10), st.randoms())
def test_targets_of_one_shape_get_one_verdict(pieces: list[str], rng: random.Random) -> None:
    target = ("/" + "".join(pieces)).encode("utf-8")
    other = same_shape(target, rng)
    assert shape_of(other) == shape_of(target)
    assert shapes_of([target, other]) == [shape_of(target), shape_of(other)]
    for param in POLICIES:
        [policy] = param.values
        assert isinstance(policy, Policy)
        assert verdict(other, policy) == verdict(target, policy), (target, other, param.id)


@pytest.mark.parametrize(
    ("target", "shape"),
    [
        P(
            b"/products/1234/kg%2Fs",
            (b"/xxxaxaxx/0000/xx%0ax", b"%2Fs"),
            id="letters and digits folded, beside the '%' and the four bytes after each",
        ),
        P(b"/a%2541b9", (b"/a%0000a0", b"%2541"), id="the escape and the escape it makes kept"),
        P(
            b"/x%252e%252e%252fetc",
            (b"/x%000a%000a%000aaxa", b"%252e%252e%252f"),
            id="each escape kept",
        ),
        P(b"/%%41", (b"/%%00", b"%%41"), id="escapes four bytes apart or less overlap"),
        P(b"/caf\xc3\xa9", (b"/aaa\xc3\xa9", b""), id="bytes past ASCII kept"),
        P(b"/a%2\nb", None, id="a line break: no shape"),
        P(b"http://host/a%2Fb", None, id="absolute-form: no shape"),
        P(b"*", None, id="asterisk-form: no shape"),
    ],
)
def test_shape_of(target: bytes, shape: tuple[bytes, bytes] | None) -> None:
    assert shape_of(target) == shape
    # In bulk, every target has a shape, the same where it has one at all.
    [bulk] = shapes_of([target])
    assert bulk == shape or (shape is None and bulk[0][:1] != b"/")


def near_percent(target: bytes) -> bytes:
    """The bytes of ``target`` that are a '%' or one of the four after one."""
    return bytes(b for i, b in enumerate(target) if b == 0x25 or 0x25 in target[max(0, i - 4) : i])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=14).map(lambda b: b"/" + b.replace(b"\n", b"%")), max_size=6))
def test_a_shape_keeps_the_four_bytes_after_each_percent(targets: list[bytes]) -> None:
    """The second half of a shape, one target at a time and many at once."""
    assert [shape_of(target) for target in targets] == [
        (target.translate(urlguard.cli.shapes._FOLD), near_percent(target)) for target in targets
    ]
    assert shapes_of(targets) == [shape_of(target) for target in targets]


@pytest.mark.parametrize(
    ("policy", "folding"),
    [
        P(Policy(), True, id="strict"),
        P(Policy(allowed_ranges=[(0x20, 0x7E)]), True, id="printable ASCII"),
        P(Policy(allowed_ranges=[(0x20, 0x60), (0x7B, 0x7E)]), False, id="no small letters"),
    ],
)
def test_folds_only_where_letters_and_digits_are_allowed(policy: Policy, folding: bool) -> None:
    assert folds(policy) is folding


@pytest.mark.parametrize(
    ("field", "seconds"),
    [
        P(b"10/Oct/2000:13:55:36 -0700", 971211336.0, id="Apache's example"),
        P(b"10/Oct/2000:20:55:36 +0000", 971211336.0, id="the same in UTC"),
        P(b"01/jan/2024:00:00:00 +0130", 1704061800.0, id="a month in small letters"),
        P(b"31/Feb/2024:00:00:00 +0000", None, id="no such day"),
        P(b"10/Foo/2000:13:55:36 -0700", None, id="no such month"),
        P(b"10/Oct/2000:13:55:36", None, id="no offset"),
        P(b"", None, id="empty"),
    ],
)
def test_log_time(field: bytes, seconds: float | None) -> None:
    assert log_time(field) == seconds


@pytest.mark.parametrize(
    ("head", "client"),
    [
        P(b"192.0.2.7 - - ", b"192.0.2.7", id="common"),
        P(b"192.0.2.7 - frank ", b"192.0.2.7", id="with a user"),
        P(b"example.com:443 2001:db8::1 - - ", b"2001:db8::1", id="vhost_combined"),
        P(b"192.0.2.7 ", b"192.0.2.7", id="one field"),
        P(b"", b"-", id="none"),
    ],
)
def test_client_of(head: bytes, client: bytes) -> None:
    assert client_of(head) == client


METHODS = ["GET", "POST", "OPTIONS", "G T", "GET\\x20"]
VERSIONS = ["HTTP/1.1", "HTTP/2.0", "HTTQ/1.1", "HTTP/1.1 x", ""]
TARGETS = ["*", "/", "http://a.example/b%2Fc"]


def expected_verdict(method: str, target: bytes, version: str) -> str:
    """The verdict of one logged request line, judged without the auditor."""
    line = f"{method} ".encode() + target + (f" {version}".encode() if version else b"")
    parts = line.split(b" ")
    if len(parts) < 3 or not re.fullmatch(rb"HTTP/[0-9]+(?:\.[0-9]+)?", parts[-1]):
        return "unparseable"
    if not re.fullmatch(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+", parts[0]):
        return "unparseable"
    if parts[0] == b"OPTIONS" and target == b"*":
        return "ok"
    return verdict(b" ".join(parts[1:-1]), Policy())


def requests_of(methods: list[str], pieces: list[str], versions: list[str]) -> Any:
    """Lists of (method, target, version), targets from ``pieces``."""
    return st.lists(
        st.tuples(
            st.sampled_from(methods),
            st.one_of(
                st.sampled_from(TARGETS),
                st.lists(st.sampled_from(pieces), min_size=1, max_size=6).map(
                    lambda chosen: "/" + "".join(chosen)
                ),
            ),
            st.sampled_from(versions),
        ),
        min_size=1,
        max_size=12,
    )


@settings(max_examples=200, deadline=None)
@given(requests_of(METHODS, PIECES, VERSIONS), st.randoms())
def test_verdicts_by_shape_are_the_verdicts_of_each_request(
    requests: list[tuple[str, str, str]], rng: random.Random
) -> None:
    """The auditor judges a request line once per shape: on a log where
    each request comes again with its letters and digits changed, every
    rule is counted as judging each request alone counts it."""
    check_verdicts(requests, rng)


@settings(max_examples=200, deadline=None)
@given(
    requests_of(["GET", "POST", "OPTIONS"], [p for p in PIECES if p != "\\"], VERSIONS[:3]),
    st.randoms(),
)
def test_verdicts_by_shape_of_request_lines_as_servers_log_them(
    requests: list[tuple[str, str, str]], rng: random.Random
) -> None:
    """The same, on request lines of two spaces and no log escape: the
    fields are split in bulk, each into its three words."""
    check_verdicts(requests, rng)


def check_verdicts(requests: list[tuple[str, str, str]], rng: random.Random) -> None:
    """The second chunk holds other requests of the shapes the first one
    judged: their verdicts are found in bulk, by the method, shape and
    version of each."""
    want: dict[str, int] = {}
    auditor = Auditor(Policy(), "common")
    for chunk in range(2):
        lines = []
        for method, text, version in requests:
            target = text.encode("utf-8")
            variants = [same_shape(target, rng), same_shape(target, rng)]
            for variant in [target, *variants] if chunk == 0 else variants:
                field = f"{method} ".encode() + variant
                field += f" {version}".encode() if version else b""
                lines.append(b'192.0.2.1 - - [10/Oct/2024:13:55:36 +0000] "' + field + b'" 200 1')
                rule = expected_verdict(method, variant, version)
                want[rule] = want.get(rule, 0) + 1
        auditor.feed_lines([line.replace(b"\\", b"\\\\") for line in lines])
    report = auditor.report()
    assert report.unparseable == want.pop("unparseable", 0)
    assert report.rules == {rule: n for rule, n in want.items() if rule != "ok"}


# --- Hosts: Apache's vhost_combined ------------------------------------------

TAIL = b' [10/Oct/2024:13:55:36 +0000] "GET / HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def line_of(head: bytes) -> bytes:
    """A log line with ``head`` as the fields before [time]."""
    return head + TAIL


@pytest.mark.parametrize(
    ("heads", "fmt"),
    [
        P([b"example.com:443 192.0.2.7 - -"], "vhost_combined", id="vhost_combined"),
        P([b"[2001:db8::1]:443 192.0.2.7 - -"], "vhost_combined", id="an IPv6 ServerName"),
        P([b"0x7f.1:80 192.0.2.7 - -"], "vhost_combined", id="a bad host is still a host field"),
        P([b"example.com:443 192.0.2.7 - john smith"], "vhost_combined", id="a user with a space"),
        P(
            [b"example.com:443 192.0.2.7 - -", b"- 192.0.2.7 - -"],
            "vhost_combined",
            id="half the lines with host:port",
        ),
        P([b"192.0.2.7 - -"], "common", id="combined"),
        P([b"2001:db8::1 - -"], "common", id="combined, an IPv6 client"),
        P([b"203.0.113.5 192.0.2.7 - -"], "common", id="a forwarded-for address first"),
        P([b"example.com 192.0.2.7 - -"], "common", id="a name without a port"),
        P(
            [b"example.com:443 192.0.2.7 - -", b"192.0.2.7 - -"],
            "common",
            id="one line of too few fields",
        ),
    ],
)
def test_auto_detects_vhost_combined(heads: list[bytes], fmt: str) -> None:
    auditor = Auditor(Policy())
    auditor.feed_lines([line_of(head) for head in heads])
    assert auditor.report().formats == (fmt,)


def host_verdicts(heads: list[bytes], allowed: list[str] | None = None) -> dict[str, int]:
    auditor = Auditor(
        Policy(),
        "vhost_combined",
        allowed_hosts=None if allowed is None else AllowedHosts(allowed, "test"),
    )
    auditor.feed_lines([line_of(head) for head in heads])
    report = auditor.report()
    assert report.hosts_checked
    return {**report.rules, "unparseable": report.unparseable}


@pytest.mark.parametrize(
    ("host", "rule"),
    [
        P(b"example.com:443", None, id="a name"),
        P(b"evil_host:80", None, id="underscore"),
        P(b"0x7f.1:80", "bad-host", id="hex IPv4 number"),
        P(b"example.com:65536", "bad-host", id="a port past 65535"),
        P(b"-", "bad-host", id="a dash"),
        P(b"\\x00:80", "bad-host", id="an escaped NUL"),
    ],
)
def test_host_field_judged_by_the_host_grammar(host: bytes, rule: str | None) -> None:
    got = host_verdicts([host + b" 192.0.2.7 - -"] * 2)
    assert got == ({"unparseable": 0} if rule is None else {rule: 2, "unparseable": 0})
    if rule is not None:
        with pytest.raises(InvalidTarget) as raised:
            parse_host(host)
        assert raised.value.rule == rule  # the grammar the guard uses


def test_host_field_against_allowed_hosts() -> None:
    heads = [b"example.com:443 192.0.2.7 - -", b"www.example.com:443 192.0.2.7 - -"]
    heads += [b"other.test:443 192.0.2.7 - -", b"0x7f.1:80 192.0.2.7 - -"]
    assert host_verdicts(heads, ["example.com"]) == {
        "bad-host": 1,
        "host-not-allowed": 2,
        "unparseable": 0,
    }
    assert host_verdicts(heads) == {"bad-host": 1, "unparseable": 0}


def test_report_says_whether_hosts_were_checked() -> None:
    auditor = Auditor(Policy())
    auditor.feed_lines([line_of(b"192.0.2.7 - -")])
    report = auditor.report()
    assert (report.formats, report.hosts_checked) == (("common",), False)
    assert report.as_json()["hosts_checked"] is False
    auditor.feed_lines([line_of(b"example.com:443 192.0.2.7 - -")])
    assert auditor.report().hosts_checked is False  # one input without hosts
    only = Auditor(Policy(), "vhost_combined")
    only.feed_lines([line_of(b"example.com:443 192.0.2.7 - -")])
    assert only.report().as_json()["hosts_checked"] is True


# --- Progress: lines read ----------------------------------------------------


class Recorder:
    """A progress display that keeps what it was told."""

    def __init__(self) -> None:
        self.updates: list[int] = []
        self.closed = False

    def update(self, n: int) -> None:
        self.updates.append(n)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("fmt", ["auto", "common", "targets"])
def test_progress_counts_lines(tmp_path: Path, fmt: Format) -> None:
    lines = [line_of(b"192.0.2.%d - -" % (n % 250)) for n in range(30_000)]
    if fmt == "targets":
        lines = [b"/a/%d" % n for n in range(30_000)]
    path = tmp_path / "access.log"
    path.write_bytes(b"\n".join(lines) + b"\n" + b"/" * (MAX_LINE + 1))  # one overlong, no \n
    made: list[tuple[str, Recorder]] = []

    def factory(name: str) -> Recorder:
        made.append((name, Recorder()))
        return made[-1][1]

    auditor = Auditor(Policy(), fmt)
    auditor.feed_file(str(path), factory)
    [(name, bar)] = made
    assert name == str(path)
    assert bar.closed
    assert len(bar.updates) > 1  # as it reads, a chunk at a time
    assert sum(bar.updates) == auditor.report().lines == 30_001


_LOG_BYTES = [b'"', b"\\", b"[", b"]", b" ", b"\r", b"\t", b"\x01", b"a", b"7", b"-", b"/"]
_LOG_PIECES = [b'1.2.3.4 - - [10/Oct/2024:13:55:36 +0000] "GET /', b' HTTP/1.1" 200 ']
_LOG_PIECES += [b'2 "-" "', b'"', b"\\x22", b'\\"', b"\n", *_LOG_BYTES]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LOG_PIECES), max_size=40).map(b"".join))
def test_possessive_runs_match_the_lines_backtracking_would(body: bytes) -> None:
    """The log patterns' runs give no byte back (``*+``): on any text they
    find what the same patterns with backtracking runs find."""
    for pattern in (
        urlguard.cli.audit._COMMON,
        urlguard.cli.audit._COMBINED,
        urlguard.cli.audit._COMBINED_STATUS,
        urlguard.cli.audit._VHOST_STATUS,
    ):
        backtracking = re.compile(
            pattern.pattern.replace(b"*+", b"*").replace(b"++", b"+"), re.MULTILINE
        )
        assert pattern.findall(body) == backtracking.findall(body)
