"""Shapes of request targets, for ``urlguard audit``: one verdict for targets
that differ only in letters and digits.

Logs of crawlers, shops and APIs hold millions of distinct targets of a few
shapes (/products/1234/kg%2Fs). Outside escapes, the parser treats every
ASCII letter alike (a drive letter is any letter) and every digit alike, so
two origin-form targets of one shape get one verdict, provided the policy
allows every letter and digit (allowed_ranges may narrow that). The shape
is the target folded (digits to '0', the hex letters to 'a', the other
letters to 'x'; hex stays hex: "%2541" stays an escape after one decoding)
beside the four bytes after every '%' as they are: the escape, and the
escape it makes after one decoding (%25HH), so that what a first and a
second decoding give (a separator, a control, a dot) is that of the
target. Lengths and every other byte are kept (too-long, too-many, raw
bytes). Both halves are made in C, for a whole chunk at once.
"""

from __future__ import annotations

import re
from typing import Final

from .._url.policy import Policy

_FOLD: Final = bytes(
    ord("0") if chr(b).isdigit() and b < 0x80
    else ord("a") if chr(b) in "abcdefABCDEF"
    else ord("x") if chr(b).isalpha() and b < 0x80
    else b
    for b in range(256)
)  # fmt: skip
_ALNUM: Final = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# The (up to) four bytes after each '%', overlapping where escapes are near.
# The shape's second half is the target less every byte more than four
# past a '%' (the '%' kept): which bytes those are follows from where the
# folded target has its '%' (folding keeps a '%'), so the two halves say
# which byte is which. One findall over many targets, one per line: each
# '%' with the bytes after it up to four, the next '%' or the line's end
# (a byte within four of two '%' is within four of the later one), and
# each line break.
_NEAR_PERCENT: Final = re.compile(rb"%[^%\n]{0,4}|\n")

#: A target's shape: the target folded, and the bytes after its '%' kept.
Shape = tuple[bytes, bytes]


def shape_of(target: bytes) -> Shape | None:
    """The shape of an origin-form target (``None`` for any other form:
    the scheme and host of absolute-form are not folded; and for a target
    with a line break, which no logged target holds).

    >>> shape_of(b"/products/1234/kg%2Fs?page=2")
    (b'/xxxaxaxx/0000/xx%0ax?xaxa=0', b'%2Fs?')
    """
    if target[:1] != b"/" or b"\n" in target:
        return None
    return target.translate(_FOLD), b"".join(_NEAR_PERCENT.findall(target))


def shapes_of(targets: list[bytes]) -> list[Shape]:
    """:func:`shape_of` of many targets at once, in C. A target not in
    origin-form gets a shape too; no target in origin-form has it (folding
    keeps the first byte's '/' or its absence)."""
    joined = b"\n".join(targets)
    if joined.count(b"\n") != len(targets) - 1:  # a line break in a target
        return [shape_of(target) or (b"\n", b"") for target in targets]
    folded = joined.translate(_FOLD).split(b"\n")
    near = b"".join(_NEAR_PERCENT.findall(joined)).split(b"\n")
    return list(zip(folded, near, strict=True))


def folds(policy: Policy) -> bool:
    """Whether ``policy`` allows every ASCII letter and digit in the path
    and the query, so that a target's shape decides its verdict."""
    return all(policy.allows_char(c) and policy.allows_char(c, "query") for c in _ALNUM)
