"""Patterns of characters written as percent-escapes of their UTF-8.

RFC 3986 §2.1 writes an octet as ``"%" HEXDIG HEXDIG`` (either case) and
§2.5 writes a character as the escapes of its UTF-8 (RFC 3629). A pattern
that matches exactly the escapes of a set of code points checks, in one
regular expression, what decoding and then checking each character would:
every escape is well formed, the octets are strict UTF-8 (no overlong form,
no surrogate, nothing past U+10FFFF), and every character is in the set.
The pure parser's quick path uses it (see ``Policy._quick_target``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

#: The first code point that UTF-8 writes in 2, 3 and 4 octets (RFC 3629 §3).
_LENGTH_STARTS: Final = (0x80, 0x800, 0x10000)
# RFC 3629 §3: "The definition of UTF-8 prohibits encoding character numbers
# between U+D800 and U+DFFF" (the surrogates, which Python's strict decoder refuses).
_SURROGATES: Final = (0xD800, 0xDFFF)
_HEX: Final = "0123456789ABCDEF"


def escaped_character(points: Sequence[tuple[int, int]]) -> bytes:
    """A regular expression (bytes source) that matches one character of
    ``points`` (inclusive intervals of code points) written as the escapes
    of its UTF-8 octets, and nothing else; ``b""`` when there is none."""
    branches = [
        b"%".join(_octets(low, high) for low, high in sequence)
        for low, high in points
        for sequence in _utf8_sequences(low, high)
    ]
    # The first '%' outside the branches: where there is none, one test fails.
    return b"%%(?:%s)" % b"|".join(branches) if branches else b""


def _utf8_sequences(low: int, high: int) -> Iterator[list[tuple[int, int]]]:
    """The code points ``low``..``high`` (surrogates left out) as runs of
    UTF-8 octet ranges: each run a list of one (first, last) octet range per
    position, and every combination of octets in those ranges the UTF-8 of a
    code point in the interval. The interval is cut where the length of the
    encoding changes, then where a continuation octet would not cover its
    whole range (the construction of Go's and Rust's UTF-8 automata)."""
    if low > high:
        return
    if low <= _SURROGATES[1] and high >= _SURROGATES[0]:
        yield from _utf8_sequences(low, _SURROGATES[0] - 1)
        yield from _utf8_sequences(_SURROGATES[1] + 1, high)
        return
    for start in _LENGTH_STARTS:
        if low < start <= high:
            yield from _utf8_sequences(low, start - 1)
            yield from _utf8_sequences(start, high)
            return
    for shift in (6, 12, 18):
        tail = (1 << shift) - 1  # the bits the last continuation octets hold
        if low & ~tail != high & ~tail:
            if low & tail:
                yield from _utf8_sequences(low, low | tail)
                yield from _utf8_sequences((low | tail) + 1, high)
                return
            if high & tail != tail:
                yield from _utf8_sequences(low, (high & ~tail) - 1)
                yield from _utf8_sequences(high & ~tail, high)
                return
    yield list(zip(chr(low).encode(), chr(high).encode(), strict=True))


def _octets(low: int, high: int) -> bytes:
    """The two hex digits (either case) of an octet from ``low`` to ``high``."""
    first, last = divmod(low, 16), divmod(high, 16)
    if first[0] == last[0]:
        return _digits(first[0], first[0]) + _digits(first[1], last[1])
    branches = []
    lead, end = first[0], last[0]
    if first[1]:
        branches.append(_digits(lead, lead) + _digits(first[1], 15))
        lead += 1
    if last[1] != 15:
        tail = _digits(end, end) + _digits(0, last[1])
        end -= 1
    else:
        tail = b""
    if lead <= end:
        branches.append(_digits(lead, end) + _digits(0, 15))
    if tail:
        branches.append(tail)
    return branches[0] if len(branches) == 1 else b"(?:%s)" % b"|".join(branches)


def _digits(low: int, high: int) -> bytes:
    """A class of the hex digits ``low``..``high``, letters in either case."""
    chosen = _HEX[low : high + 1]
    return f"[{chosen}{chosen.lower().translate(_DIGITS_AS_NOTHING)}]".encode()


_DIGITS_AS_NOTHING: Final = str.maketrans("", "", "0123456789")
