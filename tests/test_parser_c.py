"""The compiled parser against the reference, on every input (Hypothesis).

``urlguard._url.parser_c`` must give exactly what ``urlguard._url.parser_py`` gives:
the same verdict; for a rejection the same rule, component, index, offset
and message; for an accepted target the same raw fields, authority,
segments, matrix parameters, query, repr and equality. Inputs are arbitrary
bytes, targets built from tokens that reach every rule, and mostly valid
targets (escaped text in every shape), under a range of policies that flips
every switch. The truth tables below add the boundaries of the C code: a
piece or an escape that ends exactly where the buffer ends, the sizes where
the scratch buffer and the splitter's spans move from the stack to the
heap, and the edges of each width CPython stores a string in.
"""

from __future__ import annotations

import copy
import pickle
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import implementation_module, verdict
from policy_tables import EVERY_SWITCH_VALUES
from urlguard import InvalidTarget, Policy, Target
from urlguard._url import grammar as g
from urlguard._url.host import Host

P = pytest.param


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    return implementation_module("compiled")


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    return implementation_module("python")


# Tokens that reach every rule far more often than random bytes do.
TOKENS = [
    b"/", b"//", b"?", b"&", b"=", b"+", b";", b"#", b".", b"..", b"%", b"%2F", b"%2f",
    b"%5C", b"%5c", b"%2E", b"%2e", b"%25", b"%26", b"%3D", b"%3B", b"%2B", b"%41", b"%20",
    b"%C3%A9", b"%C4", b"%C0%AF", b"%ED%A0%80", b"%F4%90%80%80", b"%F0%9F%98%80", b"%E2%80%AE",
    b"%EF%BF%BE", b"%00", b"%0A", b"%7F", b"%C2%85", b"%zz", b"%4", b"%%", b"a", b"Z", b"~",
    b"-", b"[", b"]", b"|", b"\\", b" ", b"\x00", b"\xc3\xa9", b"\xff", b"@", b":", b"http://",
    b"HTTPS://", b"http://h", b"https://x:1", b"[::1]", b"[v1.x]", b"[", b":65535", b":65536",
    b"%40", b"%3A", b"%5B", b"h%2Fx", b"%252F", b"%2541", b";p=1", b";=",
]  # fmt: skip
token_targets = st.lists(st.sampled_from(TOKENS), max_size=24).map(b"".join)
any_targets = st.one_of(
    st.binary(max_size=300), token_targets, token_targets.map(lambda t: b"/" + t)
)

# Text as it is sent escaped: ASCII that needs it, Latin-1, two- to four-byte
# UTF-8, controls and bidi controls now and then.
CHARS = "aZ09-._~ !$&'()*+,;=:@/?#[]%\\\"<>^`{|}"
CHARS += "\xe9\xff\u0416\u4e2d\U0001f600\u202e\n"
TEXT = st.text(st.sampled_from(CHARS), max_size=8)


def _escape(text: str, upper: bool) -> bytes:
    unreserved = set(g.UNRESERVED)
    spelling = "%{:02X}" if upper else "%{:02x}"
    return b"".join(
        bytes([b]) if b in unreserved else spelling.format(b).encode()
        for b in text.encode("utf-8", "surrogatepass")
    )


@st.composite
def valid_targets(draw: st.DrawFn) -> bytes:
    """Origin-form or absolute-form targets, every piece escaped as a client
    would (so mostly accepted), with now and then a raw '+', a matrix
    parameter, an empty piece or a dot segment."""
    upper = draw(st.booleans())
    segments = draw(st.lists(TEXT, min_size=1, max_size=6))
    path = b"/" + b"/".join(_escape(s, upper) for s in segments)
    if draw(st.integers(0, 7)) == 0:
        path += draw(st.sampled_from([b";p=1", b"/..", b"/.", b"//", b";", b"/%2E%2E"]))
    pairs = draw(st.lists(st.tuples(TEXT, TEXT), max_size=5))
    query = b"&".join(_escape(n, upper) + b"=" + _escape(v, upper) for n, v in pairs)
    plus, question = draw(st.booleans()), draw(st.booleans())
    if plus:
        query = query.replace(b"%20", b"+")
    target = path + (b"?" + query if pairs or question else b"")
    if draw(st.integers(0, 5)) == 0:
        host = draw(st.sampled_from([b"h", b"Ex.com:80", b"[::1]:8080", b"caf%C3%A9", b"a:"]))
        target = draw(st.sampled_from([b"http://", b"HTTPS://"])) + host + target
    return target


def assert_same(compiled: ModuleType, reference: ModuleType, raw: Any, policy: Policy) -> None:
    got = verdict(lambda: compiled.parse_target(raw, policy))
    expected = verdict(lambda: reference.parse_target(raw, policy))
    assert got == expected, (raw, policy)
    if got[0] == "accepted":
        assert compiled.parse_target(raw, policy) == reference.parse_target(raw, policy)


Expected = tuple[str, int | None, int] | None  # None: accepted; else (rule, index, offset)


def assert_expected(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy, expected: Expected
) -> None:
    assert_same(compiled, reference, raw, policy)
    got = verdict(lambda: compiled.parse_target(raw, policy))
    assert got[0] == "accepted" if expected is None else (got[3], got[5], got[6]) == expected


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=any_targets, policy=st.sampled_from(EVERY_SWITCH_VALUES))
@example(raw=b"/", policy=Policy())
@example(raw=b"", policy=Policy())
def test_compiled_agrees_on_any_bytes(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy
) -> None:
    assert_same(compiled, reference, raw, policy)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=valid_targets(), policy=st.sampled_from(EVERY_SWITCH_VALUES))
def test_compiled_agrees_on_mostly_valid_targets(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy
) -> None:
    assert_same(compiled, reference, raw, policy)


@settings(max_examples=1000, deadline=None)
@given(
    path=st.one_of(valid_targets(), token_targets),
    query=st.one_of(token_targets, st.binary(max_size=40)),
    policy=st.sampled_from(EVERY_SWITCH_VALUES),
)
def test_compiled_split_entry_agrees(
    compiled: ModuleType, reference: ModuleType, path: bytes, query: bytes, policy: Policy
) -> None:
    got = verdict(lambda: compiled.parse_split_target(path, query, policy))
    joined = path + b"?" + query if query else path
    expected = verdict(lambda: reference.parse_target(joined, policy))
    assert got == expected
    assert got == verdict(lambda: reference.parse_split_target(path, query, policy))


# Host values for parse_target(raw, policy, host): valid, invalid, str, none.
HOSTS: list[bytes | str | None] = [b"a.com", b"A.com:80", b"a.com:443", b"b.com", b"[::1]"]
HOSTS += [b"[::1]:8080", b"h", b"", b"a b", b"0x7f.1", b"a.com:", "a.com", "café.fr", None]


@settings(max_examples=1000, deadline=None)
@given(
    raw=st.one_of(valid_targets(), token_targets),
    host=st.one_of(st.sampled_from(HOSTS), st.binary(max_size=12)),
    policy=st.sampled_from(EVERY_SWITCH_VALUES),
)
def test_compiled_agrees_with_a_host(
    compiled: ModuleType, reference: ModuleType, raw: bytes, host: Any, policy: Policy
) -> None:
    got = verdict(lambda: compiled.parse_target(raw, policy, host))
    assert got == verdict(lambda: reference.parse_target(raw, policy, host)), (raw, host)


HEADER_NAMES = [b"host", b"Host", b"hos", b"hosts", b"accept", bytearray(b"host"), "host"]
HEADER_VALUES = [b"a.com", b"", b"b.com", bytearray(b"a.com"), None, 7, "a.com"]


@settings(max_examples=1000, deadline=None)
@given(
    headers=st.lists(
        st.one_of(
            st.tuples(st.sampled_from(HEADER_NAMES), st.sampled_from(HEADER_VALUES)),
            st.lists(st.sampled_from(HEADER_NAMES), max_size=3),
            st.tuples(st.sampled_from(HEADER_NAMES)),
        ),
        max_size=5,
    ),
    as_tuple=st.booleans(),
)
def test_compiled_reads_the_host_header_as_the_reference(
    compiled: ModuleType, reference: ModuleType, headers: list[Any], as_tuple: bool
) -> None:
    known = {b"a.com": Host("a.com", None)}
    given_headers = tuple(headers) if as_tuple else headers
    got = compiled.host_header(given_headers, known)
    expected = reference.host_header(given_headers, known)
    assert got == expected
    assert type(got) is type(expected)


@settings(max_examples=300, deadline=None)
@given(raw=st.text(max_size=40), policy=st.sampled_from(EVERY_SWITCH_VALUES))
def test_compiled_agrees_on_text(
    compiled: ModuleType, reference: ModuleType, raw: str, policy: Policy
) -> None:
    assert_same(compiled, reference, raw, policy)


# --- the boundaries of the C code ------------------------------------------------

# Each piece, escape or sequence ends exactly where the buffer ends.
AT_THE_END = [
    P(b"/a%", "malformed-escape", id="'%' is the last byte"),
    P(b"/a%4", "malformed-escape", id="escape cut after one digit"),
    P(b"/a%41", None, id="escape ends the buffer"),
    P(b"/%C3", "invalid-utf8", id="two-byte sequence cut by the end"),
    P(b"/%E2%82", "invalid-utf8", id="three-byte sequence cut by the end"),
    P(b"/%F0%9F%98", "invalid-utf8", id="four-byte sequence cut by the end"),
    P(b"/%F0%9F%98%80", None, id="four-byte sequence ends the buffer"),
    P(b"/?q=%", "malformed-escape", id="query value ends with '%'"),
    P(b"/?q=%A", "malformed-escape", id="query escape cut after one digit"),
    P(b"/?%", "malformed-escape", id="query name is '%'"),
    P(b"/?q=%C3%A9", None, id="query escape ends the buffer"),
    P(b"/?q=%C3", "invalid-utf8", id="query sequence cut by the end"),
    P(b"/a;", None, id="';' is the last byte"),
    P(b"/a;p=%", "malformed-escape", id="matrix value ends with '%'"),
    P(b"/a;%2", "malformed-escape", id="matrix key cut by the end"),
    P(b"/..;", "dot-segment", id="'..;' ends the buffer"),
    P(b"/%2E%2E", "dot-segment", id="escaped dots end the buffer"),
    P(b"/%25%34", None, id="a decoded escape cut by the end is data"),
    P(b"/%2541", "double-encoding", id="double encoding ends the buffer"),
    P(b"/?", None, id="'?' is the last byte"),
    P(b"/?&", None, id="'&' is the last byte"),
    P(b"/a/", None, id="'/' is the last byte"),
    P(b"http://", "bad-host", id="scheme ends the buffer"),
    P(b"http:/", "bad-form", id="scheme cut by the end"),
    P(b"https", "bad-form", id="scheme name alone"),
    P(b"http://h%", "bad-host", id="host ends with '%'"),
    P(b"http://h%4", "bad-host", id="host escape cut by the end"),
    P(b"http://[::1", "bad-host", id="IP-literal cut by the end"),
    P(b"http://[v1.", "bad-host", id="IPvFuture cut by the end"),
    P(b"http://h:", "bad-host", id="empty port ends the buffer"),
    P(b"http://h:65535", None, id="largest port ends the buffer"),
    P(b"http://h:65536", "bad-host", id="port too large"),
    P(b"http://h:000001", "bad-host", id="six port digits"),
]


@pytest.mark.parametrize(("raw", "rule"), AT_THE_END)
@pytest.mark.parametrize("policy", [Policy(), *EVERY_SWITCH_VALUES[2:6]])
def test_pieces_ending_at_the_end_of_the_buffer(
    compiled: ModuleType, reference: ModuleType, raw: bytes, rule: str | None, policy: Policy
) -> None:
    # The bytes object's own buffer ends one NUL after the last byte: a copy
    # into a bytearray-backed memoryview slice has nothing after it at all.
    backing = bytearray(raw)
    assert_same(compiled, reference, raw, policy)
    assert_same(compiled, reference, memoryview(backing), policy)
    if policy == Policy():
        assert verdict(lambda: compiled.parse_target(raw))[0 if rule is None else 3] == (
            rule or "accepted"
        )


KEEP_SLASH = Policy(encoded_slash="keep")
SEGMENTS_2, PARAMS_2 = Policy(max_segments=2), Policy(max_params=2)
LOWER_ONLY = Policy(allowed_ranges=[(0x61, 0x7A)])

# Each index the C code reads or writes without a check, at exactly its edge
# (parser_c.pyx says beside each why it stays in range).
BOUNDS = [
    # d[m] = c: piece s[a:b] decodes into buf[a:a + m], and m <= b - a.
    P(b"/%41", Policy(), None, id="d[m]: an escape is the whole piece and ends the target"),
    P(b"/?q=%41", Policy(), None, id="d[m]: a query escape ends the target"),
    P(b"/a%2F", KEEP_SLASH, None, id="d[m]: a kept separator ends the target"),
    # s[a]: a segment's first byte, read only when the segment is not empty.
    P(b"/;", Policy(), None, id="s[a]: a one-byte last segment"),
    P(b"/a/;", Policy(), None, id="s[a]: the last segment starts at the last byte"),
    P(b"/;/a", Policy(), ("empty-segment", 0, 1), id="s[a]: ';' hides an empty segment"),
    # d[0], d[1]: '.' and '..' are read only at lengths one and two.
    P(b"/.", Policy(), ("dot-segment", 0, 1), id="d[0]: one byte"),
    P(b"/..", Policy(), ("dot-segment", 0, 1), id="d[1]: two bytes"),
    P(b"/...", Policy(), None, id="d[0], d[1]: three bytes are a name"),
    P(b"/%2E", Policy(), ("dot-segment", 0, 1), id="d[0]: one decoded byte"),
    P(b"/%2E;", Policy(), ("dot-segment", 0, 1), id="s[j + 2]: escaped dot ends at the ';'"),
    P(b"/c:%2F", KEEP_SLASH, ("drive-letter", 0, 1), id="d[0], d[1]: a drive, then the end"),
    P(b"/c%2Fx", KEEP_SLASH, None, id="d[0], d[1]: the first part is one byte"),
    P(b"/cd:%2Fx", KEEP_SLASH, None, id="d[0], d[1]: the first part is three bytes"),
    # segments[0]: an absolute-form target's empty path, noted by hand.
    P(b"http://h", Policy(), None, id="segments[0]: empty path ends the target"),
    P(b"http://h?q=1", Policy(), None, id="segments[0]: empty path, then a query"),
    # segments[max_segments], pairs[max_params]: noted when there are more.
    P(b"/a/b", SEGMENTS_2, None, id="segments: exactly max_segments"),
    P(b"/a/b/c", SEGMENTS_2, ("too-many", 2, 4), id="segments: one more than max_segments"),
    P(b"///", SEGMENTS_2, ("too-many", 2, 2), id="segments: as many as bytes, one too many"),
    P(b"//", Policy(max_segments=1), ("too-many", 1, 1), id="segments: two bytes, limit one"),
    P(b"/", Policy(max_segments=1000), None, id="segments: limit above the length"),
    P(b"/?a&b", PARAMS_2, None, id="pairs: exactly max_params"),
    P(b"/?a&b&c", PARAMS_2, ("too-many", 2, 6), id="pairs: one more than max_params"),
    P(b"/?a&&b&", PARAMS_2, None, id="pairs: empty pieces are not counted"),
    P(b"/?a&b", Policy(max_params=1), ("too-many", 1, 4), id="pairs: one more, the last byte"),
    # kind[s[i]]: 256 classes; no byte >= 0x80 is allowed raw.
    P(b"/a\xff", Policy(), ("raw-char", 0, 2), id="kind: 0xFF ends the path"),
    P(b"/?\x80", Policy.browser(), ("raw-char", 0, 2), id="kind: 0x80 in the query"),
    # ascii[c]: 128 entries, read for c < 0x80 only.
    P(b"/a~", LOWER_ONLY, ("forbidden-char", 0, 2), id="ascii: raw byte not allowed, last"),
    P(b"/?a=~", LOWER_ONLY, ("forbidden-char", 0, 4), id="ascii: raw query byte, last"),
    # The intervals: a code point at each end of the first and the last one.
    P(b"/%61%7A", LOWER_ONLY, None, id="intervals: both ends of the only one"),
    P(b"/%60", LOWER_ONLY, ("forbidden-char", 0, 1), id="intervals: just below"),
    P(b"/%7B", LOWER_ONLY, ("forbidden-char", 0, 1), id="intervals: just above"),
    P(b"/%F4%8F%BF%BD", Policy(), None, id="intervals: U+10FFFD, the last allowed"),
    P(b"/%F4%8F%BF%BE", Policy(), ("forbidden-char", 0, 1), id="intervals: U+10FFFE"),
    # _raw_offset's s[j]: the decoded index maps back inside the piece.
    P(b"/%41%C3", Policy(), ("invalid-utf8", 0, 4), id="raw offset: the last escape"),
    P(b"/a%C3%A9%E2%80%AE", Policy(), ("forbidden-char", 0, 8), id="raw offset: last of three"),
    # _has_escape's d[k + 2]: k < m - 2.
    P(b"/%25", Policy(), None, id="d[k + 2]: one decoded byte"),
    P(b"/a%2541", Policy(), ("double-encoding", 0, 1), id="d[k + 2]: the last decoded byte"),
]


@pytest.mark.parametrize(("raw", "policy", "expected"), BOUNDS)
def test_unchecked_indexes_at_their_edge(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy, expected: Expected
) -> None:
    assert_expected(compiled, reference, raw, policy, expected)


# Every source of a rejection: the walk's own rules, the absolute-form
# reading, the host grammar on the authority and on the Host given, and
# their agreement. (raw, host, rule)
SOURCES = [
    P(b"/a%zz", None, "malformed-escape", id="a rule of the walk"),
    P(b"x" * 9000, None, "too-long", id="before the walk"),
    P(b"ftp://h/", None, "bad-form", id="not origin-form nor http(s)"),
    P(b"http://h%41/", None, "bad-host", id="the authority"),
    P(b"/", b"a b", "bad-host", id="the Host given"),
    P(b"http://a/", b"b", "bad-host", id="authority and Host disagree"),
]


@pytest.mark.parametrize(("raw", "host", "rule"), SOURCES)
def test_one_error_channel(
    compiled: ModuleType, reference: ModuleType, raw: bytes, host: bytes | None, rule: str
) -> None:
    """The walk records each rejection, whatever found it, and the entry
    raises it: the innermost frame is the entry's, no exception is chained."""
    got = verdict(lambda: compiled.parse_target(raw, None, host))
    assert got == verdict(lambda: reference.parse_target(raw, None, host))
    assert got[3] == rule
    entries: dict[str, Callable[[], Target]] = {
        "parse_target": lambda: compiled.parse_target(raw, None, host),
        "parse_split_target": lambda: compiled.parse_split_target(raw, b"", None, host),
    }
    for name, parse in entries.items():
        with pytest.raises(InvalidTarget) as caught:
            parse()
        innermost = traceback.extract_tb(caught.value.__traceback__)[-1]
        assert innermost.name == f"urlguard._url.parser_c.{name}"
        assert caught.value.__context__ is None


KEEP_RAW_BACKSLASH = Policy(encoded_backslash="keep", raw_path_extra="\\")

# The first empty or dot segment is reported; the rules about the whole
# target (fragment, raw-char, too-many) come before it.
DOT_AND_EMPTY = [
    P(b"/a/..", Policy(), ("dot-segment", 1, 3), id="'..' last"),
    P(b"/./a", Policy(), ("dot-segment", 0, 1), id="'.' first"),
    P(b"/a//b", Policy(), ("empty-segment", 1, 3), id="empty in the middle"),
    P(b"/a/b/", Policy(), None, id="empty last is allowed"),
    P(b"//", Policy(), ("empty-segment", 0, 1), id="two slashes"),
    P(b"/a/../b//c", Policy(), ("dot-segment", 1, 3), id="the first finding wins"),
    P(b"/a//../c", Policy(), ("empty-segment", 1, 3), id="empty before dots"),
    P(b"/a/...", Policy(), None, id="three dots are a name"),
    P(b"/a/..?q=1", Policy(), ("dot-segment", 1, 3), id="'..' before the query"),
    P(b"/a/../b\x01", Policy(), ("raw-char", 2, 7), id="raw-char after it wins"),
    P(b"/a/..?q=\x01", Policy(), ("raw-char", 0, 8), id="raw-char in the query wins"),
    P(b"/a/../b#f", Policy(), ("fragment", None, 7), id="fragment wins"),
    P(b"/\x01/#", Policy(), ("fragment", None, 3), id="fragment after a raw-char wins"),
    P(b"/../a/b", Policy(max_segments=2), ("too-many", 2, 5), id="too-many wins"),
    P(b"/a?x&y#", Policy(), ("fragment", None, 6), id="fragment ends the query"),
    P(b"/a/../%41", Policy(), ("dot-segment", 1, 3), id="an escape after it"),
    P(b"/a/..", Policy(dot_segment="allow"), None, id="dots allowed"),
    # A raw '\\' kept as a separator (encoded_backslash="keep", allowed raw)
    # splits the segment it is in: its parts obey the dot and empty rules.
    P(b"/..\\x", KEEP_RAW_BACKSLASH, ("dot-segment", 0, 1), id="raw backslash after dots"),
    P(b"/x\\..", KEEP_RAW_BACKSLASH, ("dot-segment", 0, 1), id="raw backslash before dots"),
    P(b"/a\\\\b", KEEP_RAW_BACKSLASH, ("empty-segment", 0, 1), id="two raw backslashes"),
    P(b"/a/..\\%41", KEEP_RAW_BACKSLASH, ("dot-segment", 1, 3), id="raw backslash and escape"),
    P(b"/a\\b", KEEP_RAW_BACKSLASH, None, id="raw backslash between names"),
    P(b"/a//b", Policy(empty_segment="allow"), None, id="empty allowed"),
]


@pytest.mark.parametrize(("raw", "policy", "expected"), DOT_AND_EMPTY)
def test_dot_and_empty_segments(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy, expected: Expected
) -> None:
    """The dot- and empty-segment rules: the first finding, the rules that
    win over it (every rule about the whole target comes first), and the
    parts a raw '\\' kept as a separator makes."""
    assert_expected(compiled, reference, raw, policy, expected)


@pytest.mark.parametrize("length", [P(n, id=f"{n} bytes") for n in range(20)])
def test_short_texts(compiled: ModuleType, length: int) -> None:
    """Texts of every short length ("" and one character are CPython's
    shared strings, longer ones are made from their bytes), as segments,
    query names and query values, each differing from the others in one byte."""
    base = bytes(0x61 + k % 26 for k in range(length))
    variants = [base] + [base[:k] + b"Z" + base[k + 1 :] for k in range(length)]
    for text in variants:
        query = b"x=" + text + b"&" + text + b"=x&" + text + b"=" + text + b"&" + text
        target = compiled.parse_target(b"/" + text + b"?" + query)
        expected = text.decode("ascii")
        assert target.segments == (expected,)
        pairs = (("x", expected), (expected, "x"), (expected, expected), (expected, ""))
        assert target.query == (pairs if text else pairs[:3])


# The characters at the edges of each width CPython stores a string in (one,
# two or four bytes per character).
WIDTH_EDGES = ["~", "\x80", "\xff", "\u0100", "\u07ff", "\u0800", "\ufffd", "\U00010000"]


@pytest.mark.parametrize("char", [P(c, id=f"U+{ord(c):04X}") for c in WIDTH_EDGES])
@pytest.mark.parametrize("other", [P("", id="alone"), P("a+", id="after ASCII")])
def test_widths_of_decoded_text(compiled: ModuleType, char: str, other: str) -> None:
    """Escaped text at each width's edges, with and without a '+' (decoded
    to a space in the query only). The compiled parser makes each string at
    the width of its widest character; CPython's string equality compares
    the widths first, so a string stored wider than it needs is unequal to
    the same text."""
    escaped = other.encode() + "".join(f"%{b:02X}" for b in char.encode()).encode()
    raw = b"/" + escaped + b"?" + escaped + b"=" + escaped
    target = compiled.parse_target(raw, Policy(allow_chars="\x80"))
    in_path, in_query = other + char, other.replace("+", " ") + char
    assert target.segments == (in_path,)
    assert target.query == ((in_query, in_query),)


@pytest.mark.parametrize(
    "size", [P(n, id=f"{n} bytes") for n in (1023, 1024, 1025, 8191, 8192, 8193)]
)
@pytest.mark.parametrize(
    "tail",
    [
        P(b"", id="plain"),
        P(b"%C3%A9", id="escape at the end"),
        P(b"%", id="'%' at the end"),
        P(b"%C3", id="sequence cut at the end"),
    ],
)
def test_scratch_buffer_sizes(
    compiled: ModuleType, reference: ModuleType, size: int, tail: bytes
) -> None:
    """Up to 1024 bytes decode into a buffer on the stack, above into the heap."""
    raw = b"/" + b"a" * (size - 1 - len(tail)) + tail
    assert len(raw) == size
    for policy in (Policy(), Policy(max_length=10_000)):
        assert_same(compiled, reference, raw, policy)
    query = b"/?q=" + b"%C3%A9" * ((size - 4) // 6)
    assert_same(compiled, reference, query, Policy(max_length=10_000))


@pytest.mark.parametrize("count", [P(n, id=f"{n} pieces") for n in (62, 63, 64, 65, 66, 200)])
@pytest.mark.parametrize("limit", [P(n, id=f"limit {n}") for n in (63, 64, 65, 1000)])
@pytest.mark.parametrize("last", [P(b"x", id="plain"), P(b"%C3%A9", id="escaped")])
def test_span_room(
    compiled: ModuleType, reference: ModuleType, count: int, limit: int, last: bytes
) -> None:
    """The splitter notes up to 64 segments and 64 pairs on the stack, more
    on the heap, and always one past the limit (too-many reports where it
    starts); pieces past the room are counted, not noted."""
    policy = Policy(max_segments=limit, max_params=limit, max_length=10_000)
    path = b"/" + b"/".join(b"s%d" % k for k in range(count - 1)) + b"/" + last
    query = b"&".join(b"k%d=v" % k for k in range(count - 1)) + b"&q=" + last
    for raw in (path, b"/?" + query, path + b"?" + query):
        assert_same(compiled, reference, raw, policy)


@pytest.mark.parametrize(
    "raw",
    [
        P(bytearray(b"/a/b?x=1"), id="bytearray"),
        P(memoryview(b"/a/b?x=1"), id="memoryview"),
        P("/caf%C3%A9", id="str"),
        P("/café", id="non-ASCII str"),
        P("/\udcff", id="lone surrogate"),
    ],
)
def test_other_input_types(compiled: ModuleType, reference: ModuleType, raw: Any) -> None:
    assert_same(compiled, reference, raw, Policy())


@pytest.mark.parametrize("raw", [P(None, id="None"), P(42, id="int"), P([b"/"], id="list")])
def test_wrong_input_types(compiled: ModuleType, reference: ModuleType, raw: Any) -> None:
    with pytest.raises(TypeError) as expected:
        reference.parse_target(raw)
    with pytest.raises(TypeError) as got:
        compiled.parse_target(raw)
    assert str(got.value) == str(expected.value)


def test_many_policies_in_turn(compiled: ModuleType, reference: ModuleType) -> None:
    """Each policy keeps the tables the compiled parser derives from it:
    alternating policies (per-route ones) and hundreds of them still give
    each its own answer; a copy or a pickle of a policy derives them anew."""
    targets = [b"/a%2Fb", b"/a;p=1/%C3%A9", b"/x?q=%E2%80%AE", b"/%C3%A9", b"/a//b"]
    policies = [*EVERY_SWITCH_VALUES, *(Policy(max_length=n) for n in range(5, 200))]
    for round_ in range(2):
        for policy in policies[round_:] + policies[:round_]:
            for raw in targets:
                assert_same(compiled, reference, raw, policy)
    keep = Policy(encoded_slash="keep")
    assert compiled.parse_target(b"/a%2Fb", keep).segments == ("a/b",)
    for duplicate in (copy.copy(keep), copy.deepcopy(keep), pickle.loads(pickle.dumps(keep))):
        assert duplicate == keep
        assert compiled.parse_target(b"/a%2Fb", duplicate).segments == ("a/b",)


def test_a_quick_target_copied_before_it_is_read(
    compiled: ModuleType, reference: ModuleType
) -> None:
    """The pure parser's quick path keeps the decoded path and query and
    splits them when first read: a copy or a pickle made before that reads
    the same pieces, equal to the compiled parser's target."""
    raw = b"/a/caf%C3%A9/?x=1&&y&z=a+b"
    made = compiled.parse_target(raw)
    for duplicate in (
        copy.copy(reference.parse_target(raw)),
        copy.deepcopy(reference.parse_target(raw)),
        pickle.loads(pickle.dumps(reference.parse_target(raw))),
    ):
        assert duplicate == made
        assert duplicate.segments == ("a", "café", "")
        assert duplicate.query == (("x", "1"), ("y", ""), ("z", "a b"))
        assert duplicate.params == ((), (), ())


def test_targets_of_both_parsers_are_one_kind(compiled: ModuleType, reference: ModuleType) -> None:
    """The compiled parser's targets are a C type registered as a subclass
    of Target: isinstance holds, they compare equal to the reference's and
    hash alike, and a copy or a pickle of one is a plain Target."""
    raw, policy = b"/f;p=1/x%2Fy?q=1&q=2", Policy(path_params="split", encoded_slash="keep")
    made, expected = compiled.parse_target(raw, policy), reference.parse_target(raw, policy)
    assert type(expected) is Target
    assert isinstance(made, Target)
    assert made == expected
    assert expected == made
    assert not made != expected  # noqa: SIM202  (the C type's __ne__)
    assert hash(made) == hash(expected)
    assert repr(made) == repr(expected)
    assert (made.get("q"), made.get("r", "-"), made.get_all("q")) == ("1", "-", ["1", "2"])
    assert made != compiled.parse_target(b"/f/x", policy)
    assert made.__eq__(raw) is NotImplemented
    for duplicate in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(duplicate) is Target
        assert duplicate == made
    with pytest.raises(AttributeError):
        made.segments = ()  # type: ignore[misc]
    # One made from Python, not by the parser, has nothing to read: an
    # error, never a crash.
    empty = type(made).__new__(type(made))
    with pytest.raises(TypeError, match="not made by"):
        empty.segments  # noqa: B018


def test_rejections_are_invalid_targets(compiled: ModuleType, reference: ModuleType) -> None:
    """An error the compiled parser makes without running __init__ is an
    InvalidTarget like any other: fields, message, equality of args, pickle."""
    with pytest.raises(InvalidTarget) as got:
        compiled.parse_target(b"/a/%C3")
    with pytest.raises(InvalidTarget) as expected:
        reference.parse_target(b"/a/%C3")
    error = got.value
    assert type(error) is InvalidTarget
    assert (error.rule, error.component, error.index, error.offset) == (
        "invalid-utf8",
        "path",
        1,
        3,
    )
    assert (str(error), repr(error), error.args) == (
        str(expected.value),
        repr(expected.value),
        expected.value.args,
    )
    assert pickle.loads(pickle.dumps(error)).args == error.args
