"""Patterns of characters written as escapes of their UTF-8 (urlguard._url.escapes).

A pattern made from a set of code points must match the escapes of exactly
the UTF-8 of those code points, in either hex case, and nothing else: no
surrogate, no overlong form, no stray continuation octet, no escape cut
short. Shown for every code point under the default policy's path set, and
for random sets and random octets against Python's strict decoder.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urlguard import Policy
from urlguard._url.escapes import escaped_character

P = pytest.param


def escaped(octets: bytes, *, lower: bool = False) -> bytes:
    return b"".join((b"%%%02x" if lower else b"%%%02X") % octet for octet in octets)


def inside(points: list[tuple[int, int]], point: int) -> bool:
    return any(low <= point <= high for low, high in points)


@pytest.mark.parametrize(
    ("points", "text", "matches"),
    [
        P([(0x41, 0x5A)], b"%41", True, id="an ASCII letter"),
        P([(0x41, 0x5A)], b"%5a", True, id="lower-case hex"),
        P([(0x41, 0x5A)], b"%61", False, id="outside the set"),
        P([(0xE9, 0xE9)], b"%C3%A9", True, id="two octets"),
        P([(0xE9, 0xE9)], b"%c3%a9", True, id="two octets, lower case"),
        P([(0xE9, 0xE9)], b"%C3", False, id="cut short"),
        P([(0xE9, 0xE9)], b"%C3%A9%A9", False, id="a continuation octet too many"),
        P([(0x80, 0x10FFFF)], b"%C0%AF", False, id="overlong '/'"),
        P([(0x80, 0x10FFFF)], b"%E0%80%AF", False, id="overlong '/' in three octets"),
        P([(0x80, 0x10FFFF)], b"%ED%A0%80", False, id="a surrogate"),
        P([(0x80, 0x10FFFF)], b"%F4%90%80%80", False, id="past U+10FFFF"),
        P([(0x80, 0x10FFFF)], b"%F0%9F%98%80", True, id="four octets"),
        P([(0x80, 0x10FFFF)], b"%E2%82%AC", True, id="three octets"),
        P([(0x80, 0x10FFFF)], b"%A9", False, id="a continuation octet alone"),
        P([(0x80, 0x10FFFF)], b"%C3%2F", False, id="a lead octet, then ASCII"),
        P([(0x202A, 0x202E)], b"%E2%80%AE", True, id="the edge of a range"),
        P([(0x202A, 0x202D)], b"%E2%80%AE", False, id="past the edge of a range"),
        P([(0x41, 0x41)], b"%4", False, id="one hex digit"),
        P([(0x41, 0x41)], b"%G1", False, id="not hex"),
    ],
)
def test_escaped_character(points: list[tuple[int, int]], text: bytes, matches: bool) -> None:
    assert (re.fullmatch(escaped_character(points), text) is not None) == matches


def test_no_character_no_pattern() -> None:
    assert escaped_character([]) == b""


def test_every_code_point_of_the_default_path_set() -> None:
    points = list(Policy()._path_allowed)
    pattern = re.compile(escaped_character(points))
    for point in range(0x110000):
        if 0xD800 <= point <= 0xDFFF:  # as a lax encoder writes a surrogate
            octets = bytes((0xED, 0x80 | (point >> 6) & 0x3F, 0x80 | point & 0x3F))
            expected = False
        else:
            octets = chr(point).encode()
            expected = inside(points, point)
        found = pattern.fullmatch(escaped(octets, lower=point % 2 == 1)) is not None
        assert found == expected, hex(point)


_INTERVALS = st.lists(
    st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 0x2000)).map(
        lambda pair: (pair[0], min(pair[0] + pair[1], 0x10FFFF))
    ),
    min_size=1,
    max_size=6,
)


@given(_INTERVALS, st.binary(min_size=1, max_size=5), st.booleans())
def test_random_octets_match_as_the_strict_decoder_reads_them(
    points: list[tuple[int, int]], octets: bytes, lower: bool
) -> None:
    try:
        text = octets.decode()
    except UnicodeDecodeError:
        expected = False
    else:
        expected = len(text) == 1 and inside(points, ord(text))
    found = re.fullmatch(escaped_character(points), escaped(octets, lower=lower)) is not None
    assert found == expected


@given(_INTERVALS, st.data())
def test_each_character_of_a_random_set_matches(
    points: list[tuple[int, int]], data: st.DataObject
) -> None:
    low, high = data.draw(st.sampled_from(points))
    point = data.draw(st.integers(low, high))
    expected = not 0xD800 <= point <= 0xDFFF
    octets = chr(point).encode("utf-8", "surrogatepass")
    assert (re.fullmatch(escaped_character(points), escaped(octets)) is not None) == expected
