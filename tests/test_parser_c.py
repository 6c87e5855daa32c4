"""The compiled parser against the reference, on every input (Hypothesis).

``urlguard._parser_c`` must give exactly what ``urlguard._parser_py`` gives:
the same verdict; for a rejection the same rule, component, index, offset
and message; for an accepted target the same raw fields, authority,
segments, matrix parameters, query, repr and equality. Inputs are arbitrary
bytes, targets built from tokens that reach every rule, and mostly valid
targets (escaped text in every shape), under a range of policies that flips
every switch. The truth tables below add the boundaries of the C code: a
piece or an escape that ends exactly where the buffer ends, the size where
the scratch buffer moves from the stack to the heap.
"""

from __future__ import annotations

import copy
import gc
import logging
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import implementation_module, target_fields
from urlguard import InvalidTarget, Policy, Target
from urlguard import _grammar as g
from urlguard._answers import Answer
from urlguard._guard import Guard, Request

P = pytest.param
ALL_EXTRA = g.to_str(g.ALLOWABLE_RAW_EXTRA)


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    return implementation_module("compiled")


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    return implementation_module("python")


POLICIES = [
    P(Policy(), id="default"),
    P(Policy.browser(), id="browser"),
    P(Policy(encoded_slash="keep"), id="keep slash"),
    P(Policy(encoded_backslash="keep", raw_path_extra="\\"), id="keep backslash, raw backslash"),
    P(Policy(encoded_slash="keep", encoded_backslash="keep", path_params="split"), id="split keep"),
    P(Policy(path_params="split"), id="split"),
    P(Policy(path_params="reject"), id="reject params"),
    P(Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)]), id="latin-1"),
    P(Policy(allowed_ranges=[(0x30, 0x39), (0x61, 0x7A), (0x4E00, 0x9FFF)]), id="narrow ranges"),
    P(
        Policy(
            encoded_backslash="keep",
            dot_segment="allow",
            empty_segment="allow",
            double_encoding="allow",
            plus_as_space=False,
        ),
        id="lenient",
    ),
    P(Policy(max_length=40, max_segments=4, max_params=3), id="small limits"),
    P(Policy(max_length=1, max_segments=1, max_params=1), id="limits of one"),
    P(
        Policy.browser(path_params="split", encoded_slash="keep", allow_chars="\r\n\u202e"),
        id="browser split keep allow-chars",
    ),
    P(
        Policy(raw_path_extra=ALL_EXTRA, raw_query_extra=ALL_EXTRA, allow_chars="\x00\x7f\ufffe"),
        id="every raw extra",
    ),
    P(Policy(allowed_ranges=[(0x21, 0x7E)], plus_as_space=True), id="no space"),
]
POLICY_VALUES: list[Policy] = [param.values[0] for param in POLICIES]  # type: ignore[misc]

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


def verdict(parse: Callable[[], Target]) -> tuple[Any, ...]:
    """Everything observable about one parse."""
    try:
        target = parse()
    except InvalidTarget as error:
        return (
            "rejected",
            type(error),
            error.args,
            error.rule,
            error.component,
            error.index,
            error.offset,
            str(error),
        )
    assert type(target) is Target or isinstance(target, Target)
    return ("accepted", *target_fields(target), hash(target))


def assert_same(compiled: ModuleType, reference: ModuleType, raw: Any, policy: Policy) -> None:
    got = verdict(lambda: compiled.parse_target(raw, policy))
    expected = verdict(lambda: reference.parse_target(raw, policy))
    assert got == expected, (raw, policy)
    if got[0] == "accepted":
        assert compiled.parse_target(raw, policy) == reference.parse_target(raw, policy)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=any_targets, policy=st.sampled_from(POLICY_VALUES))
@example(raw=b"/", policy=Policy())
@example(raw=b"", policy=Policy())
def test_compiled_agrees_on_any_bytes(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy
) -> None:
    assert_same(compiled, reference, raw, policy)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=valid_targets(), policy=st.sampled_from(POLICY_VALUES))
def test_compiled_agrees_on_mostly_valid_targets(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy
) -> None:
    assert_same(compiled, reference, raw, policy)


@settings(max_examples=1000, deadline=None)
@given(
    path=st.one_of(valid_targets(), token_targets),
    query=st.one_of(token_targets, st.binary(max_size=40)),
    policy=st.sampled_from(POLICY_VALUES),
)
def test_compiled_split_entry_agrees(
    compiled: ModuleType, reference: ModuleType, path: bytes, query: bytes, policy: Policy
) -> None:
    got = verdict(lambda: compiled.parse_split_target(path, query, policy))
    joined = path + b"?" + query if query else path
    expected = verdict(lambda: reference.parse_target(joined, policy))
    assert got == expected
    assert got == verdict(lambda: reference.parse_split_target(path, query, policy))


@settings(max_examples=300, deadline=None)
@given(raw=st.text(max_size=40), policy=st.sampled_from(POLICY_VALUES))
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
    P(b"http://", "bad-form", id="scheme ends the buffer"),
    P(b"http:/", "bad-form", id="scheme cut by the end"),
    P(b"https", "bad-form", id="scheme name alone"),
    P(b"http://h%", "malformed-escape", id="host ends with '%'"),
    P(b"http://h%4", "malformed-escape", id="host escape cut by the end"),
    P(b"http://[::1", "bad-form", id="IP-literal cut by the end"),
    P(b"http://[v1.", "bad-form", id="IPvFuture cut by the end"),
    P(b"http://h:", None, id="empty port ends the buffer"),
    P(b"http://h:65535", None, id="largest port ends the buffer"),
    P(b"http://h:65536", "bad-form", id="port too large"),
    P(b"http://h:000001", "bad-form", id="six port digits"),
]


@pytest.mark.parametrize(("raw", "rule"), AT_THE_END)
@pytest.mark.parametrize("policy", [Policy(), *POLICY_VALUES[2:6]])
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


# The scans skip ordinary bytes eight at a time while eight remain: a block
# that ends exactly at the end of the buffer, or one byte before or after,
# with what stops a scan as the last byte.
LAST_BYTES = [b"a", b"/", b"%", b"?", b"&", b"=", b"+", b";", b"\\", b".", b"#", b"\x01", b"\xff"]


@pytest.mark.parametrize("length", [P(n, id=f"{n} bytes") for n in range(3, 27)])
@pytest.mark.parametrize("where", [P("path", id="in the path"), P("query", id="in the query")])
def test_blocks_of_eight_at_the_end(
    compiled: ModuleType, reference: ModuleType, length: int, where: str
) -> None:
    head = b"/" if where == "path" else b"/?"
    for last in LAST_BYTES:
        raw = head + b"b" * (length - len(head) - 1) + last
        assert len(raw) == length
        for policy in (Policy(), POLICY_VALUES[3], POLICY_VALUES[9]):
            assert_same(compiled, reference, raw, policy)
            assert_same(compiled, reference, memoryview(bytearray(raw)), policy)
            try:
                expected = reference.parse_target(raw, policy)
            except InvalidTarget:
                continue
            # the pieces made when first read, to the last byte
            lazy = compiled.parse_target(memoryview(bytearray(raw)), policy)
            assert (lazy.segments, lazy.query) == (expected.segments, expected.query)


KEEP_RAW_BACKSLASH = Policy(encoded_backslash="keep", raw_path_extra="\\")

# The scan of the path notes the first empty or dot segment of a path of
# ordinary bytes; the rules before it (fragment, raw-char, too-many) still win.
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
    P(b"/a/../%41", Policy(), ("dot-segment", 1, 3), id="an escape after it: the careful walk"),
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
    compiled: ModuleType,
    reference: ModuleType,
    raw: bytes,
    policy: Policy,
    expected: tuple[str, int | None, int] | None,
) -> None:
    """The dot- and empty-segment rules where the C code applies them: the
    scan of a path of ordinary bytes (the first finding, and the rules that
    still win over it), the careful walk after an escape, and the parts a
    raw '\\' kept as a separator makes."""
    assert_same(compiled, reference, raw, policy)
    got = verdict(lambda: compiled.parse_target(raw, policy))
    if expected is None:
        assert got[0] == "accepted"
    else:
        assert (got[3], got[5], got[6]) == expected


LATIN_1 = Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)])

# Which pass answers an origin-form target that the walk let through: the
# quick one, which only accepts (escapes decoded, UTF-8 and allowed ranges
# in one go), or the careful one, which replays the rule order, whenever the
# quick one meets something it leaves to it. "walk": rejected by the walk, or
# built at once ("split" mode, absolute form), before either pass.
PASSES = [
    P(b"/wiki/Caf%C3%A9?q=caf%C3%A9+au+lait&lang=fr", Policy(), "quick", id="encoded"),
    P(b"/a/b?x=1&y", Policy(), "quick", id="plain"),
    P(b"/caf%c3%a9", Policy(), "quick", id="lower-case hex"),
    P(b"/%41%7e%20", Policy(), "quick", id="escaped ASCII"),
    P(b"/%E2%82%AC/%F0%9F%98%80", Policy(), "quick", id="three and four bytes"),
    P(b"/%C3%A9", Policy(), "quick", id="sequence ending the buffer"),
    P(b"/?q=%C3%A9", Policy(), "quick", id="sequence ending the query"),
    P(b"/?q=a%26b%3Dc%25", Policy(), "quick", id="escaped separators in the query"),
    P(b"/caf%C3%A9", LATIN_1, "quick", id="latin-1 range"),
    P(b"/a%2Fb", Policy(), "careful", id="encoded slash"),
    P(b"/a%2Fb", Policy(encoded_slash="keep"), "careful", id="kept encoded slash"),
    P(b"/a%5Cb", Policy(), "careful", id="encoded backslash"),
    P(b"/a%2eb", Policy(), "careful", id="encoded dot"),
    P(b"/%2e%2e/x", Policy(), "careful", id="encoded dot segment"),
    P(b"/a%25", Policy(), "careful", id="encoded percent in the path"),
    P(b"/a;b/%41", Policy(), "careful", id="a ';'"),
    P(b"/a\\b/%41", KEEP_RAW_BACKSLASH, "careful", id="a raw backslash"),
    P(b"/a//%41", Policy(), "careful", id="empty segment and an escape"),
    P(b"/../%41", Policy(), "careful", id="dot segment and an escape"),
    P(b"/%C3", Policy(), "careful", id="sequence cut by the end"),
    P(b"/%C3%A", Policy(), "careful", id="escape cut by the end"),
    P(b"/%", Policy(), "careful", id="'%' last"),
    P(b"/%C3/%A9", Policy(), "careful", id="sequence cut by '/'"),
    P(b"/%C3a", Policy(), "careful", id="sequence cut by a raw byte"),
    P(b"/%A9", Policy(), "careful", id="lone continuation byte"),
    P(b"/%C0%AF", Policy(), "careful", id="overlong"),
    P(b"/%E0%9F%BF", Policy(), "careful", id="overlong three bytes"),
    P(b"/%ED%A0%80", Policy(), "careful", id="surrogate"),
    P(b"/%F0%8F%BF%BF", Policy(), "careful", id="overlong four bytes"),
    P(b"/%F4%90%80%80", Policy(), "careful", id="past U+10FFFF"),
    P(b"/%F5%80%80%80", Policy(), "careful", id="lead byte past F4"),
    P(b"/%E2%80%AE", Policy(), "careful", id="forbidden character"),
    P(b"/%00", Policy(), "careful", id="forbidden control"),
    P(b"/%E2%82%AC", LATIN_1, "careful", id="outside the latin-1 range"),
    P(b"/?q=%00", Policy(), "careful", id="forbidden in the query"),
    P(b"/?q=%C3+%A9", Policy(), "careful", id="sequence cut by '+'"),
    P(b"/?q=%C3&%A9", Policy(), "careful", id="sequence cut by '&'"),
    P(b"/?q=%C3=%A9", Policy(), "careful", id="sequence cut by '='"),
    P(b"/?q=%C3%A", Policy(), "careful", id="escape cut by the end of the query"),
    P(b"/?q=a+b", Policy(allowed_ranges=[(0x21, 0x7E)]), "careful", id="'+' to a forbidden space"),
    P(b"/a/b", Policy(path_params="split"), "walk", id="split mode"),
    P(b"http://h/%C3%A9", Policy(), "walk", id="absolute form"),
    P(b"/a\x01/%41", Policy(), "walk", id="raw-char"),
    P(b"/a/b/c", Policy(max_segments=2), "walk", id="too-many"),
]


@pytest.mark.parametrize(("raw", "policy", "expected"), PASSES)
def test_which_pass_answers(
    compiled: ModuleType, reference: ModuleType, raw: bytes, policy: Policy, expected: str
) -> None:
    """The quick pass takes what clients send escaped; everything it is not
    sure of goes to the careful pass, whose answer is the reference's."""
    assert_same(compiled, reference, raw, policy)
    assert compiled._pass_taken(raw, policy) == expected


ESCAPES = [P(b"", id="plain"), P(b"%C3%A9", id="an escape"), P(b"+", id="a '+'")]


@pytest.mark.parametrize("count", [P(n, id=f"{n} pieces") for n in (1, 15, 16, 17, 40)])
@pytest.mark.parametrize("escape", ESCAPES)
def test_pieces_noted_by_the_walk(
    compiled: ModuleType, reference: ModuleType, count: int, escape: bytes
) -> None:
    """The walk notes where the first 16 segments and query pairs are; a
    target with more is scanned again when its pieces are read."""
    policy = Policy(max_segments=64, max_params=64)
    path = b"".join(b"/s%d" % k for k in range(count - 1)) + b"/" + escape
    query = b"&".join(b"k%d=v%d" % (k, k) for k in range(count - 1)) + b"&k=" + escape
    for raw in (path, path + b"?" + query, b"/?" + query + b"&&", b"/?&" + query):
        lazy, expected = compiled.parse_target(raw, policy), reference.parse_target(raw, policy)
        assert lazy.segments == expected.segments
        assert lazy.query == expected.query


@pytest.mark.parametrize(
    "size", [P(n, id=f"{n:#x} bytes") for n in (0xFFFE, 0xFFFF, 0x10000, 0x10001)]
)
@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("long_path", [P(True, id="long path"), P(False, id="long query")])
def test_bounds_past_what_the_notes_hold(
    compiled: ModuleType, reference: ModuleType, size: int, escape: bytes, long_path: bool
) -> None:
    """The notes keep bounds in 16 bits: the pieces of a target longer than
    0xFFFF bytes are found by a scan instead, and those of a target of
    0xFFFF bytes, whose last piece ends there, from the notes."""
    policy = Policy(max_length=0x20000)
    if long_path:
        head, tail = b"/s/", b"/t?a=" + escape + b"&c=d"
    else:
        head, tail = b"/s/t?a=" + escape + b"&c=", b"d"
    raw = head + b"p" * (size - len(head) - len(tail)) + tail
    assert len(raw) == size
    for query_first in (False, True):
        lazy, expected = compiled.parse_target(raw, policy), reference.parse_target(raw, policy)
        if query_first:
            assert lazy.query == expected.query
        assert lazy.segments == expected.segments
        assert lazy.query == expected.query


def test_pieces_of_a_target_made_otherwise(compiled: ModuleType) -> None:
    """A _LazyTarget made by its constructor, not by the walk, has no notes:
    its pieces are made as Target makes them; the attribute handed another
    object reads nothing past it."""
    made = compiled._LazyTarget(b"/a/b%20c?x=1&y", plus_as_space=False)
    assert made.segments == ("a", "b c")
    assert made.query == (("x", "1"), ("y", ""))
    plain = Target(b"/d?e=f")
    assert compiled._LazyTarget.segments.__get__(plain, Target) == ("d",)
    assert compiled._LazyTarget.query.__get__(plain, Target) == (("e", "f"),)
    with pytest.raises(AttributeError):
        compiled._LazyTarget.query.__get__(object(), object)


@pytest.mark.parametrize("length", [P(n, id=f"{n} bytes") for n in range(20)])
def test_short_texts(compiled: ModuleType, length: int) -> None:
    """Texts of every short length (one character and "" come from a table,
    longer ones are made from their bytes), as segments, query names and
    query values, each differing from the others in one byte."""
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
    """Escaped text read from a lazy target, at each width's edges, with
    and without a '+' (decoded to a space in the query only). CPython's
    string equality compares the widths first: a string stored wider than
    its characters need is unequal to the same text."""
    escaped = other.encode() + "".join(f"%{b:02X}" for b in char.encode()).encode()
    raw = b"/" + escaped + b"?" + escaped + b"=" + escaped
    target = compiled.parse_target(raw, Policy(allow_chars="\x80"))
    in_path, in_query = other + char, other.replace("+", " ") + char
    assert target.segments == (in_path,)
    assert target.query == ((in_query, in_query),)


def test_query_names_are_shared(compiled: ModuleType, reference: ModuleType) -> None:
    """Query names of 2 to 16 characters that recur come back as the same
    string (the compiled parser keeps the last name seen in each slot of a
    table); every name read is still its own, through any number of
    distinct names that replace each other in the table."""
    policy = Policy(max_params=2000, max_length=100_000)
    first = compiled.parse_target(b"/a?page=1&per_page=2&q=x&" + b"n" * 17 + b"=y")
    again = compiled.parse_target(b"/b?page=3&per_page=4&q=z&" + b"n" * 17 + b"=w")
    assert [name for name, _ in first.query] == ["page", "per_page", "q", "n" * 17]
    assert first.query[0][0] is again.query[0][0]
    assert first.query[1][0] is again.query[1][0]
    escaped = compiled.parse_target(b"/c?page=caf%C3%A9&q%C3%A9=1+2")
    assert escaped.query == (("page", "café"), ("qé", "1 2"))
    assert escaped.query[0][0] is first.query[0][0]
    names = [b"k%d" % k for k in range(3000)] + [
        b"key-%d-%s" % (k, b"x" * (k % 9)) for k in range(3000)
    ]
    for start in range(0, len(names), 10):
        raw = b"/?" + b"&".join(name + b"=v" for name in names[start : start + 10])
        assert compiled.parse_target(raw, policy).query == reference.parse_target(raw, policy).query
    many = b"/?" + b"&".join(name + b"=v" for name in names[:600])
    assert compiled.parse_target(many, policy).query == reference.parse_target(many, policy).query


@pytest.mark.parametrize(
    "size",
    [P(n, id=f"{n} bytes") for n in (511, 512, 513, 1024, 8191, 8192, 8193)],
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
    """Up to 512 bytes decode into a stack buffer, above into the heap."""
    raw = b"/" + b"a" * (size - 1 - len(tail)) + tail
    assert len(raw) == size
    for policy in (Policy(), Policy(max_length=10_000)):
        assert_same(compiled, reference, raw, policy)
    query = b"/?q=" + b"%C3%A9" * ((size - 4) // 6)
    assert_same(compiled, reference, query, Policy(max_length=10_000))


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
    """Per-policy tables are cached; alternating policies (per-route ones)
    and more policies than the cache holds still give each its own answer."""
    targets = [b"/a%2Fb", b"/a;p=1/%C3%A9", b"/x?q=%E2%80%AE", b"/%C3%A9", b"/a//b"]
    policies = [*POLICY_VALUES, *(Policy(max_length=n) for n in range(5, 200))]
    for round_ in range(2):
        for policy in policies[round_:] + policies[:round_]:
            for raw in targets:
                assert_same(compiled, reference, raw, policy)


def test_results_are_built_directly(compiled: ModuleType) -> None:
    """The compiled module writes Target's and InvalidTarget's slots itself
    (a Python __init__ costs more than a parse) after checking, at import,
    that doing so gives what their constructors give; if either class
    changes, it falls back to the constructor, and this test says so."""
    assert compiled._check_direct_construction() == (True, True)


def test_never_hands_over_to_the_reference(compiled: ModuleType) -> None:
    """Every input is judged in C: the module holds no reference to the
    pure-Python parser to fall back on."""
    names = vars(compiled)
    assert "_parser_py" not in names
    assert not any(
        getattr(value, "__module__", None) == "urlguard._parser_py" for value in names.values()
    )


@pytest.mark.parametrize(
    "raw",
    [
        P(b"/caf%C3%A9/a+b;c?q=a+b%2B&&r=%E4%B8%AD&s=&=t", id="escapes, '+', empty pairs"),
        P(b"/" + b"%C3%A9" * 300 + b"?q=" + b"%E4%B8%AD" * 300, id="past the stack buffer"),
        P(b"/a/b/", id="no query"),
        P(b"/?", id="empty query"),
    ],
)
@pytest.mark.parametrize("query_first", [P(False, id="segments first"), P(True, id="query first")])
def test_pieces_made_when_first_read(
    compiled: ModuleType, reference: ModuleType, raw: bytes, query_first: bool
) -> None:
    """An accepted origin-form target's pieces are made when first read, in
    either order, once: the same objects come back on every later read."""
    policy = Policy(max_length=10_000)
    lazy, expected = compiled.parse_target(raw, policy), reference.parse_target(raw, policy)
    assert isinstance(lazy, Target)
    if query_first:
        assert lazy.query == expected.query
    assert lazy.segments == expected.segments
    assert lazy.query == expected.query
    assert lazy.segments is lazy.segments
    assert lazy.query is lazy.query
    assert lazy.params == expected.params
    assert lazy == expected


def test_lazy_targets_are_targets_like_any_other(
    compiled: ModuleType, reference: ModuleType
) -> None:
    """The lazy target is a type of its own (its deallocator keeps freed
    objects for the next targets, and it keeps where the walk found its
    pieces): still a Target the garbage collector sees through, that cannot
    be subclassed (so every instance has its layout), and whose copies and
    pickles have the same pieces, read or unread."""
    policy = Policy(plus_as_space=False)
    for raw, pol in ((b"/a/b?x=1&y", None), (b"/a%20b?x+1=%C3%A9", None), (b"/a?x+1", policy)):
        lazy = compiled.parse_target(raw, pol)
        kind = type(lazy)
        assert kind is compiled._LazyTarget
        assert kind.__mro__ == (kind, Target, object)
        assert gc.is_tracked(lazy)
        assert raw in gc.get_referents(lazy)
        expected = reference.parse_target(raw, pol)
        for twin in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
            assert type(twin) is kind
            assert target_fields(twin) == target_fields(expected)
            assert twin == lazy == expected
    with pytest.raises(TypeError):
        type("Sub", (kind,), {})


# The names a lazy target's attributes are read by: the interned names the
# interpreter hands over, names spelled otherwise (a string built at run
# time is not interned), and the generic lookup called directly.
READS: list[tuple[str, Callable[[Any, str], Any]]] = [
    ("attribute", getattr),
    ("name built at run time", lambda target, name: getattr(target, "".join(list(name)))),
    ("object.__getattribute__", object.__getattribute__),
    (
        "type's __getattribute__",
        lambda target, name: vars(type(target))["__getattribute__"](target, name),
    ),
]


@pytest.mark.parametrize("read", [P(read, id=label) for label, read in READS])
@pytest.mark.parametrize("raw", [P(b"/a/b?x=1&y", id="plain"), P(b"/a%20b?x=%C3%A9", id="escaped")])
def test_attributes_of_a_lazy_target(
    compiled: ModuleType,
    reference: ModuleType,
    read: Callable[[Any, str], Any],
    raw: bytes,
) -> None:
    """Segments and query come the short way for the interned names and the
    generic way for any other spelling: the same values either way, and
    every other attribute, and a missing one, as on any Target."""
    expected = reference.parse_target(raw)
    for name in ("segments", "query", "raw", "raw_path", "raw_query", "params", "authority"):
        lazy = compiled.parse_target(raw)
        assert read(lazy, name) == getattr(expected, name)
    lazy = compiled.parse_target(raw)
    for name in ("segments", "query"):
        assert read(lazy, name) is read(lazy, name) is getattr(lazy, name)  # made once
    lazy = compiled.parse_target(raw)
    assert read(lazy, "__class__") is compiled._LazyTarget
    assert read(lazy, "__eq__")(expected) is True
    assert read(lazy, "get")("x") == expected.get("x")
    with pytest.raises(AttributeError, match="_LazyTarget' object has no attribute 'missing'"):
        read(lazy, "missing")


def test_freed_targets_come_back_empty(compiled: ModuleType, reference: ModuleType) -> None:
    """Targets freed in any order and made again, more at once than are kept
    for reuse: each new one holds its own target's pieces, read or unread."""
    raws = [b"/%d/x?q=%d" % (i, i) + (b"&r=%C3%A9" if i % 3 else b"") for i in range(60)]
    for order in (lambda xs: xs, reversed, lambda xs: xs[::3] + xs[1::3] + xs[2::3]):
        live = [compiled.parse_target(raw) for raw in raws]
        for k, target in enumerate(live):
            if k % 2:
                target.segments  # noqa: B018 (some read, some not, before they go)
        for k in list(order(list(range(len(live))))):
            live[k] = None
        for raw in raws:
            assert compiled.parse_target(raw) == reference.parse_target(raw)


# --- the guard's decision, in C -------------------------------------------------------

# Guards that take each way through the decision: routes (one of them
# escaped), report-only, matrix parameters split, on_reject's application,
# a server without a raw target.
GUARD_OPTIONS: list[dict[str, Any]] = [
    {},
    {"routes": {"/files/": {"encoded_slash": "keep"}, "/api": Policy.browser(), "/%C3%A9/": {}}},
    {"mode": "report"},
    {"policy": Policy(max_length=40, path_params="split", encoded_slash="keep")},
    {"on_reject": lambda exc, carrier: _on_reject_app},
    {"missing_raw_target": "validate-decoded", "policy": Policy.browser()},
]
MOUNT_POINTS = [None, b"", b"/", b"/mnt", b"/mnt/", b"/my app", b"/caf\xc3\xa9"]
METHODS = ["GET", "HEAD", "OPTIONS"]


def _on_reject_app(*args: Any) -> None:
    return None


@contextmanager
def log_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("urlguard")
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)


def observed(carrier: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in carrier.items():
        if isinstance(value, Target):
            shown[key] = target_fields(value)
        elif isinstance(value, InvalidTarget):
            shown[key] = (value.rule, value.component, value.index, value.offset)
        else:
            shown[key] = value
    return shown


def decision(
    use_decider: bool, options: dict[str, Any], request: Request, raw: Any, query: Any, mount: Any
) -> Any:
    """Everything one decision shows: what it returns, what the carrier then
    holds, the log lines, the counters, how often the request was read."""
    reads: list[int] = []

    def read(carrier: Any) -> Request:
        reads.append(1)
        return request

    guard: Guard[Any, Any] = Guard("test", "ASGI", read, "nothing given", **options)
    decide = guard.decider().decide if use_decider else guard.decide
    carrier: dict[str, Any] = {"urlguard.target": "stale", "server's own": 1}
    with log_lines() as lines:
        returned = decide(raw, query, mount, carrier)
    if isinstance(returned, Answer):
        returned = (returned.status, returned.headers, returned.body, returned.reason)
    return returned, observed(carrier), lines, guard.violations, len(reads)


raw_targets = st.one_of(
    valid_targets(),
    any_targets,
    st.tuples(
        st.sampled_from([b"/mnt", b"/my%20app", b"/caf%C3%A9", b"/mnt/"]), valid_targets()
    ).map(b"".join),
    st.none(),
    valid_targets().map(bytearray),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    options=st.sampled_from(GUARD_OPTIONS),
    method=st.sampled_from(METHODS),
    raw=raw_targets,
    query=st.one_of(st.none(), st.just(b""), token_targets),
    mount=st.sampled_from(MOUNT_POINTS),
    path=st.one_of(st.none(), valid_targets()),
)
@example(options={}, method="OPTIONS", raw=b"/mnt*", query=None, mount=b"/mnt", path=None)
@example(options={}, method="GET", raw=b"/mnt", query=b"q", mount=b"/mnt", path=None)
def test_compiled_decider_agrees_with_the_guard(
    compiled: ModuleType,
    options: dict[str, Any],
    method: str,
    raw: bytes | None,
    query: bytes | None,
    mount: bytes | None,
    path: bytes | None,
) -> None:
    """The decider in C answers every request as ``Guard.decide`` does:
    the same decision, carrier, log lines and counters."""
    request = Request(method, path=path, query=query or b"")
    asked = (raw, query, mount)
    got = decision(True, options, request, *asked)
    assert got == decision(False, options, request, *asked)
