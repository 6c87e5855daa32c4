"""Generators over the policy space, and the checks that parsers and guards agree.

The generators are written once against :class:`Chooser`: Hypothesis drives
them in tests/test_policy_space.py (:class:`Drawn`, which shrinks), a seeded
``random.Random`` drives them for long runs in fuzz/fuzz_policies.py
(:class:`Seeded`). Each policy is drawn over every switch (both presets as
bases; narrow allowed ranges, ones without ASCII letters, digits or the
space; allowed characters that matter; any raw extras; small and large
limits), and targets are made for that policy: its raw extras, its kept
separators with dots and empty parts around them, ';' in every path_params
mode, escaped characters at the edges of its allowed ranges, '+', escapes
cut at the end, absolute-form prefixes. A guard case is a drawn base
policy, up to three routes with drawn overrides, a mount point, and targets
with and without the mount point in front (its boundary now and then
hidden by an escape).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn, Protocol, TypeVar

from hypothesis import strategies as st

from conftest import Parser, verdict
from reference_agreement import assert_agree, reference_policy
from urlguard import InvalidTarget, Policy, Target
from urlguard._guard.answers import Answer
from urlguard._guard.config import route_policy
from urlguard._guard.decision import TARGET_KEY, VIOLATION_KEY, Guard, Request, RoutingPath
from urlguard._guard.options import check_options
from urlguard._url import grammar as g

T = TypeVar("T")

# --- choices, made by Hypothesis or by a seeded generator -------------------------


class Chooser(Protocol):
    """Where the generators get their choices from."""

    def pick(self, options: Sequence[T]) -> T: ...

    def number(self, low: int, high: int) -> int: ...

    def chance(self, one_in: int) -> bool:
        """True about once in ``one_in`` times."""
        ...


@functools.cache
def _integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


class Drawn:
    """Choices drawn by Hypothesis: a failure shrinks towards the first
    option, the lowest number, and ``chance`` False (less of everything)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def pick(self, options: Sequence[T]) -> T:
        return options[self._draw(_integers(0, len(options) - 1))]

    def number(self, low: int, high: int) -> int:
        return self._draw(_integers(low, high))

    def chance(self, one_in: int) -> bool:
        return self._draw(_integers(1, one_in)) == one_in


class Seeded:
    """The same choices from ``random.Random(seed)``, for runs of millions
    (from ``random()``, several times quicker than ``randrange``)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed).random

    def pick(self, options: Sequence[T]) -> T:
        return options[int(self._random() * len(options))]

    def number(self, low: int, high: int) -> int:
        return low + int(self._random() * (high - low + 1))

    def chance(self, one_in: int) -> bool:
        return self._random() * one_in < 1


# --- policies ---------------------------------------------------------------------

ALL_EXTRA: Final = g.to_str(g.ALLOWABLE_RAW_EXTRA)
PRESETS: Final[tuple[Callable[..., Policy], ...]] = (Policy, Policy.browser)

# Small limits (one a quarter of the time), and large ones: where the C
# code's stack room for 64 spans ends, where its scratch buffers move to the
# heap (above 1024 bytes), the defaults, and more.
LENGTHS: Final = (1, 2, 5, 9, 16, 24, 40, 64)
COUNTS: Final = (1, 2, 3, 4, 6)
LARGE_LENGTHS: Final = (1024, 8192, 100_000)
LARGE_COUNTS: Final = (63, 64, 65, 128, 1000)

# Characters that matter to allow_chars and query_allow_chars: C0 and C1
# controls, CR/LF/TAB, DEL, bidi controls, line separators, noncharacters,
# the delimiters ';', '/', '\\', '%', '+', space, and non-ASCII of each
# UTF-8 length.
SPECIAL_CHARS: Final = (
    "\x00\x01\t\n\r\x1f\x7f\x80\x85\x9f"
    "\u061c\u200e\u200f\u2028\u2029\u202a\u202e\u2066\u2069"
    "\ufdd0\ufdef\ufffe\uffff\U0001fffe\U0010ffff"
    ";/\\%+ .:=&?#a0\xe9\xff\u0416\u4e2d\U0001f600"
)

# Allowed ranges: wide and narrow, without ASCII letters, digits or the
# space, a single delimiter, all of Unicode, the astral planes only.
RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x20, 0x7E),  # printable ASCII
    (0x21, 0x7E),  # ... without the space
    (0xA0, 0xFF),  # Latin-1 letters
    (0x30, 0x39),  # digits only
    (0x61, 0x7A),  # lower case only
    (0x41, 0x5A),  # upper case only
    (0x00, 0x2F),  # below the digits
    (0x3A, 0x40),  # between digits and letters
    (0x7B, 0x10FFFF),  # above ASCII letters
    (0x80, 0x10FFFF),  # no ASCII at all
    (0x4E00, 0x9FFF),  # CJK only
    (0x2F, 0x2F),  # '/' alone
    (0x5C, 0x5C),  # '\\' alone
    (0x3B, 0x3B),  # ';' alone
    (0x25, 0x25),  # '%' alone
    (0x20, 0x20),  # space alone
    (0x00, 0x10FFFF),  # everything (the forbidden characters stay forbidden)
    (0xE000, 0xFFFF),  # private use and specials
    (0x10000, 0x10FFFF),  # astral only
    (0x200E, 0x202E),  # bidi controls and around
)
# Code points where UTF-8 lengths, forbidden ranges and ASCII classes change.
RANGE_POINTS: Final = (
    0x00, 0x20, 0x2F, 0x30, 0x3A, 0x41, 0x5B, 0x61, 0x7B, 0x7F, 0x80, 0xA0, 0x100,
    0x7FF, 0x800, 0x2028, 0xD7FF, 0xE000, 0xFDD0, 0xFFFE, 0x10000, 0x10FFFF,
)  # fmt: skip
RANGE_WIDTHS: Final = (0, 1, 9, 0x7F, 0xFFFF)


def draw_range(choose: Chooser) -> tuple[int, int]:
    if choose.chance(3):  # one from around a point where something changes
        low = min(max(choose.pick(RANGE_POINTS) + choose.number(-2, 2), 0), g.MAX_CODE_POINT)
        return low, min(low + choose.pick(RANGE_WIDTHS), g.MAX_CODE_POINT)
    return choose.pick(RANGES)


def draw_chars(choose: Chooser, most: int) -> str:
    return "".join(choose.pick(SPECIAL_CHARS) for _ in range(choose.number(0, most)))


def draw_raw_extra(choose: Chooser) -> str:
    return "".join(char for char in ALL_EXTRA if choose.chance(2))


#: Each switch of a Policy, and how a value for it is drawn.
SWITCHES: Final[dict[str, Callable[[Chooser], object]]] = {
    "max_length": lambda choose: choose.pick(LENGTHS if choose.chance(4) else LARGE_LENGTHS),
    "max_segments": lambda choose: choose.pick(COUNTS if choose.chance(4) else LARGE_COUNTS),
    "max_params": lambda choose: choose.pick(COUNTS if choose.chance(4) else LARGE_COUNTS),
    "raw_path_extra": draw_raw_extra,
    "raw_query_extra": draw_raw_extra,
    "encoded_slash": lambda choose: choose.pick(("reject", "keep")),
    "encoded_backslash": lambda choose: choose.pick(("reject", "keep")),
    "dot_segment": lambda choose: choose.pick(("reject", "allow")),
    "empty_segment": lambda choose: choose.pick(("reject", "allow")),
    "double_encoding": lambda choose: choose.pick(("reject", "allow")),
    "path_params": lambda choose: choose.pick(("literal", "reject", "split")),
    "plus_as_space": lambda choose: choose.pick((True, False)),
    "allowed_ranges": lambda choose: (
        None if choose.chance(3) else tuple(draw_range(choose) for _ in range(choose.number(1, 3)))
    ),
    "allow_chars": lambda choose: draw_chars(choose, 3),
    "query_allow_chars": lambda choose: draw_chars(choose, 3),
}
assert set(SWITCHES) == set(Policy.FIELDS), "a switch of Policy is never drawn"


def draw_changes(choose: Chooser) -> dict[str, Any]:
    """Some switches, each drawn (about half of them; the rest as the base has them)."""
    return {name: draw(choose) for name, draw in SWITCHES.items() if choose.chance(2)}


def buildable(
    make: Callable[..., Policy], changes: dict[str, Any], ranges: object = None
) -> dict[str, Any]:
    """``changes`` that ``make`` takes. Where the allowed ranges (the
    changes', else ``ranges``) leave no character allowed in the path or
    the query, Policy refuses them (ValueError naming allowed_ranges): such
    ranges are widened by a-z, on that error only."""
    try:
        make(**changes)
    except ValueError as error:
        if "leaves no character allowed" not in str(error):
            raise
        narrow = changes.get("allowed_ranges", ranges)
        assert narrow is not None
        return {**changes, "allowed_ranges": (*narrow, (0x61, 0x7A))}
    return changes


def draw_policy(choose: Chooser) -> Policy:
    make = choose.pick(PRESETS)
    return make(**buildable(make, draw_changes(choose)))


def draw_route_policy(choose: Chooser, base: Policy) -> Policy | dict[str, Any]:
    """A route's policy: a whole Policy now and then, mostly overrides of ``base``."""
    if choose.chance(4):
        return draw_policy(choose)
    return buildable(base.replace, draw_changes(choose), base.allowed_ranges)


# --- targets made for one policy ------------------------------------------------------

# Path tokens every policy gets: dots, separators escaped and raw, drive
# letters, ';' as data, delimiter and parameter, '+', escapes of every kind
# (malformed, double, overlong, surrogate, past U+10FFFF, forbidden), and a
# few bytes never allowed raw.
PATH_TOKENS: Final = (
    b"a", b"Z", b"0", b"~", b"-", b"_", b".", b"..", b"...", b"%2E", b"%2e", b"%2E%2E", b".%2E",
    b"%2F", b"%2f", b"%5C", b"%5c", b"\\", b"c:", b"Z:", b";", b";;", b"..;x", b";p=1", b";=",
    b"=", b"=%41", b"%41=", b"%C3%A9=", b"%3B", b"%3b", b"+", b"%2B", b"%20", b"%25", b"%2541",
    b"%252F", b"%41", b"%", b"%4", b"%zz", b"%C3%A9", b"%c3%a9", b"%C4", b"%C0%AF", b"%ED%A0%80",
    b"%F4%90%80%80",
    b"%F0%9F%98%80", b"%E2%80%AE", b"%EF%BF%BE", b"%00", b"%0A", b"%0D%0A", b"%7F", b"%C2%85",
    b"%E4%B8%AD", b"@", b":", b"!$&'()*,", b"?", b" ", b"\xc3\xa9",
)  # fmt: skip
# Query tokens: '+' and its escape, the separators escaped, CR/LF and TAB as
# a form sends them, and the same escapes as in the path.
QUERY_TOKENS: Final = (
    b"a", b"Z", b"0", b".", b"..", b"/", b"?", b"=", b"==", b"+", b"++", b"%2B", b"%20", b"%26",
    b"%3D", b"%3B", b";", b"%2F", b"%5C", b"%0D%0A", b"%09", b"%0A", b"%00", b"%7F", b"%C2%85",
    b"%25", b"%2541", b"%41", b"%", b"%4", b"%zz", b"%C3%A9", b"%C4", b"%ED%A0%80",
    b"%F0%9F%98%80", b"%E2%80%AE", b"%EF%BF%BE", b"%E4%B8%AD", b"@", b":", b"!$'()*,", b" ",
    b"\xc3\xa9",
)  # fmt: skip
# Under a kept separator: dot and empty parts and drive letters around it.
KEPT_SLASH: Final = (
    b"%2F", b"%2f", b"..%2F", b"%2F..", b"%2F%2F", b".%2F", b"%2F.", b"%2Fa", b"a%2F", b"c:%2F",
    b"C:%2f", b"1:%2F", b"cc:%2F", b"..;x%2F", b"%2E%2E%2F", b"%2F;",
)  # fmt: skip
KEPT_BACKSLASH: Final = (
    b"%5C", b"%5c", b"%5C..", b"..%5C", b"%5C%5C", b"C:%5C", b"c:%5c", b"%5C.", b"%2E%5C",
    b"%5C%2F", b"%2F%5C",
)  # fmt: skip
RAW_BACKSLASH: Final = (b"\\", b"\\..", b"..\\", b"\\\\", b"c:\\", b"\\%2F", b"%5C\\")
# ';' in every path_params mode: data, a raw-char, or parameters (with dots
# before them, "..;x" being ".." to a servlet container).
SEMICOLONS: Final = (
    b";", b";;", b"..;x", b".;", b"..;", b";p=1", b";=", b";p", b";%2F", b";..", b"..%3B",
    b"%2E%2E;", b";a=%2F", b"%3B", b";a=b;c", b";=;",
)  # fmt: skip
# What an absolute-form target starts with: the scheme in any case, hosts
# of every shape (IP literals, ports at their limits, escapes that are
# delimiters or separators once decoded, userinfo).
SCHEMES: Final = (b"http://", b"HTTPS://", b"hTtP://", b"https:/", b"ftp://")
HOSTS: Final = (
    b"h", b"ex.com", b"h:80", b"h:", b"h:65535", b"h:65536", b"[::1]", b"[::1]:8080", b"[v1.x]",
    b"[", b"caf%C3%A9", b"h%2F", b"h%2f.x", b"h%5C", b"%41", b"h%3A1", b"h%40", b"h%25", b"h%",
    b"h%C4", b"a@b", b"", b"h;", b"h+", b"h%E2%80%AE",
)  # fmt: skip
# What else a target may start with: nothing, '*', a relative path, an
# escaped or a raw separator.
ODD_STARTS: Final = (b"", b"*", b"a", b"a/", b"//", b"%2F", b"\\", b"?", b";", b".")
# What a target may end with, cut: escapes and UTF-8 sequences missing their
# last bytes, and pieces that end the buffer (the C code's edges).
CUT: Final = (
    b"%", b"%4", b"%c", b"%C3", b"%E2%82", b"%F0%9F%98", b"%ED", b"%F4%8F%BF", b"%2", b"%2E%2",
    b";", b"..", b"..;", b"%2F", b"\\", b"?", b"&", b"=", b"+", b"/", b"#", b"#f",
)  # fmt: skip
PAIR_SEPARATORS: Final = (b"&", b"&", b"&&")
# A space or a '+' in the query, as plus_as_space reads it.
PLUS: Final = (b"+", b"%2B", b"%20", b"a+b", b"%2B+")
# Text that most policies allow, for when the policy allows all of Unicode.
PLAIN: Final = ("a", "Z", "0", "~", "\xe9", "\u4e2d", "\U0001f600")


def escape(char: str, upper: bool = True) -> bytes:
    """``char`` percent-encoded byte by byte (a surrogate as CESU bytes, invalid)."""
    spelling = "%{:02X}" if upper else "%{:02x}"
    return "".join(spelling.format(b) for b in char.encode("utf-8", "surrogatepass")).encode()


def spelled(point: int) -> bytes:
    """A code point as a client sends it: raw if unreserved, else escaped."""
    return bytes([point]) if point in g.UNRESERVED else escape(chr(point))


def edge_points(policy: Policy) -> list[int]:
    """The code points just inside and just outside each range the policy
    allows and each character it allows besides."""
    points: set[int] = set()
    for low, high in policy.allowed_ranges or ():
        points.update((low - 1, low, high, high + 1))
    for char in policy.allow_chars + policy.query_allow_chars:
        points.update((ord(char) - 1, ord(char), ord(char) + 1))
    return sorted(p for p in points if 0 <= p <= g.MAX_CODE_POINT)


def _edge_tokens(points: Sequence[int]) -> tuple[bytes, ...]:
    tokens: list[bytes] = []
    for point in points:
        tokens.append(escape(chr(point)))
        if 0x21 <= point <= 0x7E:
            tokens.append(bytes([point]))  # raw too: raw-char unless the policy admits it
    return tuple(tokens)


# For every policy: the edges of the ranges forbidden whatever the policy,
# and every raw extra (raw-char unless the policy admits it).
RARE: Final = _edge_tokens(
    sorted(
        p
        for p in {p for low, high in g.FORBIDDEN_RANGES for p in (low - 1, low, high, high + 1)}
        if 0 <= p <= g.MAX_CODE_POINT
    )
) + tuple(c.encode() for c in ALL_EXTRA)


def inside(policy: Policy, component: Literal["path", "query"]) -> tuple[bytes, ...]:
    """Text the policy accepts in ``component``: the ends and the middle of
    each allowed range, as a client spells them (so that targets are not
    all rejected under narrow ranges)."""
    ranges = policy.allowed_ranges or [(ord(c), ord(c)) for c in PLAIN]
    points = {p for low, high in ranges for p in (low, (low + high) // 2, high)}
    return tuple(spelled(p) for p in sorted(points) if policy.allows_char(chr(p), component))


@dataclass(frozen=True)
class Tokens:
    """What targets for one policy are made of, besides the common tokens:
    the policy's own tokens and the text it accepts, in the path and in the
    query, and what a target may end with."""

    path: tuple[bytes, ...]
    path_text: tuple[bytes, ...]
    query: tuple[bytes, ...]
    query_text: tuple[bytes, ...]
    cut: tuple[bytes, ...]


def tokens_for(policy: Policy) -> Tokens:
    """The policy's own tokens: its raw extras raw, its kept separators with
    dots and empty parts around them, ';' as its path_params mode reads it,
    '+' and its escape, its allowed characters and the edges of its ranges
    escaped, and those escapes cut short."""
    edges = _edge_tokens(edge_points(policy))
    allowed = tuple(escape(c, upper) for c in policy.allow_chars for upper in (True, False))
    in_query = tuple(escape(c) for c in policy.query_allow_chars)
    kept: tuple[bytes, ...] = SEMICOLONS
    if policy.encoded_slash == "keep":
        kept += KEPT_SLASH * 2
    if policy.encoded_backslash == "keep":
        kept += KEPT_BACKSLASH * 2
    if "\\" in policy.raw_path_extra:
        kept += RAW_BACKSLASH * 2
    path_raw = tuple(c.encode() for c in policy.raw_path_extra) * 2
    query_raw = tuple(c.encode() for c in policy.raw_query_extra) * 2
    multibyte = [t for t in edges + allowed + in_query if len(t) >= 6]
    cut = CUT + tuple(t[:-1] for t in multibyte) + tuple(t[:-3] for t in multibyte)
    return Tokens(
        path=edges + allowed + in_query + kept + path_raw,
        path_text=inside(policy, "path") or (b"a",),
        query=edges + allowed + in_query * 2 + query_raw + PLUS,
        query_text=inside(policy, "query") or (b"a",),
        cut=cut,
    )


def draw_piece(
    choose: Chooser, tokens: tuple[bytes, ...], text: tuple[bytes, ...], common: tuple[bytes, ...]
) -> bytes:
    """One to four tokens (now and then none): text the policy accepts,
    common tokens, the policy's own, and now and then a raw extra or the
    edge of a forbidden range."""
    parts = []
    for _ in range(0 if choose.chance(8) else choose.number(1, 4)):
        kind = choose.number(0, 9)
        if kind < 4:
            parts.append(choose.pick(text))
        elif kind < 6:
            parts.append(choose.pick(common))
        elif kind < 9:
            parts.append(choose.pick(tokens))
        else:
            parts.append(choose.pick(RARE))
    return b"".join(parts)


def draw_start(choose: Chooser) -> bytes:
    """Origin-form mostly; absolute-form (its path may be empty), or something else."""
    form = choose.number(0, 15)
    if form == 0:
        host = choose.pick(HOSTS)
        if choose.chance(4):
            host += escape(chr(choose.pick(RANGE_POINTS)))
        return choose.pick(SCHEMES) + host + choose.pick((b"/", b"/", b""))
    if form == 1:
        return choose.pick(ODD_STARTS)
    return b"/"


def draw_target(choose: Chooser, tokens: Tokens) -> bytes:
    """A target made for the policy ``tokens`` were made for."""
    parts = [draw_start(choose)]
    for k in range(choose.number(0, 5)):
        if k:
            parts.append(b"/")
        parts.append(draw_piece(choose, tokens.path, tokens.path_text, PATH_TOKENS))
    if choose.chance(2):
        parts.append(b"?")
        for k in range(choose.number(0, 4)):
            if k:
                parts.append(choose.pick(PAIR_SEPARATORS))
            parts.append(draw_piece(choose, tokens.query, tokens.query_text, QUERY_TOKENS))
            if not choose.chance(4):
                parts.append(b"=")
                parts.append(draw_piece(choose, tokens.query, tokens.query_text, QUERY_TOKENS))
    if choose.chance(5):
        parts.append(choose.pick(tokens.cut))
    return b"".join(parts)


# --- the parsers' comparison --------------------------------------------------------


def parsers_agree(compiled: Parser, pure: Parser, raw: bytes, policy: Policy) -> None:
    """Raise AssertionError, with the input, the policy and both verdicts,
    unless both parsers see the same in ``raw``: whole, and split at its
    first '?' as an ASGI server hands it over."""
    got = verdict(lambda: compiled.parse_target(raw, policy))
    expected = verdict(lambda: pure.parse_target(raw, policy))
    if got != expected:
        raise AssertionError(
            f"parse_target({raw!r}, {policy!r}):\n  compiled  {got}\n  pure      {expected}"
        )
    if got[0] == "accepted":  # the two kinds of Target compare equal, both ways
        made, wanted = compiled.parse_target(raw, policy), pure.parse_target(raw, policy)
        if not (made == wanted and wanted == made):
            raise AssertionError(f"parse_target({raw!r}, {policy!r}): targets unequal")
    path, _, query = raw.partition(b"?")
    got = verdict(lambda: compiled.parse_split_target(path, query, policy))
    expected = verdict(lambda: pure.parse_split_target(path, query, policy))
    if got != expected:
        raise AssertionError(
            f"parse_split_target({path!r}, {query!r}, {policy!r}):\n"
            f"  compiled  {got}\n  pure      {expected}"
        )


def three_agree(compiled: Parser, pure: Parser, raw: bytes, policy: Policy) -> None:
    """``parsers_agree`` of the compiled and the pure parser, then the pure
    one against the tests' own reading of the rules (tests/reference_parser.py)."""
    parsers_agree(compiled, pure, raw, policy)
    assert_agree(raw, policy, reference_policy(policy), pure)


# --- the guard's decision with routes and mount points --------------------------------

MOUNTS: Final[tuple[bytes | None, ...]] = (None, b"/m", b"/m/x", b"/my app")
# How a client may spell what is below a mount point: as it is, escaped,
# with its boundary hidden by an escape (/m%2Fadmin/x is /m/admin/x to a
# framework), or almost it.
MOUNT_SPELLINGS: Final[dict[bytes | None, tuple[bytes, ...]]] = {
    None: (b"/m", b"/my%20app"),
    b"/m": (b"/m", b"/m", b"/%6D", b"/%6d", b"/M", b"/m%2F", b"/m%2f", b"/m%5C", b"/mx", b"/m;"),
    b"/m/x": (b"/m/x", b"/m/x", b"/m%2Fx", b"/%6D/x", b"/m/%78", b"/m", b"/m/x%2F", b"/m/xy"),
    b"/my app": (
        b"/my%20app", b"/my%20app", b"/my app", b"/my+app", b"/my%20app%2F", b"/my%2520app",
        b"/my%20ap", b"/my%20app%2f",
    ),
}  # fmt: skip
# Route prefixes (distinct once percent-decoded), and how targets spell them.
ROUTE_PREFIXES: Final = (
    "/admin", "/admin/", "/files/", "/m", "/m/x", "/x", "/%61dmin/x", "/my%20app", "/a;b",
    "/api/v1", "/",
)  # fmt: skip
ROUTE_SPELLINGS: Final = (
    b"/admin", b"/%61dmin", b"/admin%2F", b"/ADMIN", b"/files/", b"/files%2F", b"/files",
    b"/x", b"/%78", b"/a;b", b"/a%3Bb", b"/api/v1", b"/api%2Fv1", b"/m", b"/m/x", b"/my%20app",
)  # fmt: skip
RESTS: Final = (b"", b"/", b"?", b"?a=1", b"/x", b"/x/..", b"/%2F", b"//x")
METHODS: Final = ("GET", "HEAD")
ACCEPTS: Final = (None, "application/json", "text/html", "*/*")


@dataclass(frozen=True)
class GuardCase:
    """Two guards' configuration (all but the parser) and the request they judge."""

    policy: Policy
    routes: Mapping[str, Policy | Mapping[str, Any]]
    mode: str
    mount: bytes | None
    request: Request

    def policies(self) -> list[Policy]:
        """The base policy and each route's, as the guard derives them."""
        return [
            self.policy,
            *(
                value if isinstance(value, Policy) else route_policy(self.policy, value, prefix)
                for prefix, value in self.routes.items()
            ),
        ]


def draw_guard_case(choose: Chooser) -> GuardCase:
    base = draw_policy(choose)
    routes: dict[str, Policy | Mapping[str, Any]] = {}
    for _ in range(choose.number(0, 3)):
        prefix = choose.pick(ROUTE_PREFIXES)
        routes[prefix] = draw_route_policy(choose, base)
    return GuardCase(
        policy=base,
        routes=routes,
        mode=choose.pick(("enforce", "report")),
        mount=choose.pick(MOUNTS),
        request=Request(choose.pick(METHODS), choose.pick(ACCEPTS)),
    )


def guard_tokens(case: GuardCase) -> Tokens:
    """The tokens of every policy the guard may parse with, together."""
    each = [tokens_for(policy) for policy in case.policies()]
    return Tokens(
        *(
            tuple(token for tokens in each for token in getattr(tokens, field.name))
            for field in dataclasses.fields(Tokens)
        )
    )


def draw_request_target(choose: Chooser, case: GuardCase, tokens: Tokens) -> bytes:
    """A target with the mount point in front or not, a route's prefix after
    it or not, and a drawn target or a short rest after that."""
    head = choose.pick(MOUNT_SPELLINGS[case.mount]) if not choose.chance(4) else b""
    route = choose.pick(ROUTE_SPELLINGS) if choose.chance(2) else b""
    if head[-3:].upper() in (b"%2F", b"%5C") and route:
        route = route[1:]  # /m%2Fadmin: the mount point's boundary hidden
    rest = draw_target(choose, tokens) if choose.chance(2) else choose.pick(RESTS)
    if head + route and rest[:1] != b"/" and rest[:1] != b"?" and choose.chance(2):
        rest = b"/" + rest
    return head + route + rest


def make_guard(case: GuardCase, parser: Parser) -> Guard[dict[str, Any], Callable[..., Any]]:
    def read(carrier: dict[str, Any]) -> Request:
        return case.request

    # DEBUG: no log line is made (the logger stays at WARNING), which keeps long runs quiet.
    options = check_options(
        "policy space",
        "ASGI",
        "raw_path",
        policy=case.policy,
        routes=case.routes,
        mode=case.mode,
        parser=parser,
        log_level=logging.DEBUG,
    )
    return Guard(options, read)


def _raise(error: InvalidTarget) -> NoReturn:
    raise error


def decision(
    guard: Guard[dict[str, Any], Callable[..., Any]],
    raw: bytes,
    query: bytes | None,
    mount: bytes | None,
) -> tuple[object, ...]:
    """Everything observable about one decision: the answer (status, headers,
    body, reason) or None, and what the guard stored in the carrier."""
    carrier: dict[str, Any] = {}
    answer = guard.decide(raw, query, mount, carrier)
    assert answer is None or isinstance(answer, Answer | RoutingPath)
    target = carrier.pop(TARGET_KEY, None)
    violation = carrier.pop(VIOLATION_KEY, None)
    assert target is None or isinstance(target, Target)
    assert violation is None or isinstance(violation, InvalidTarget)
    return (
        answer,
        None if target is None else verdict(lambda: target),
        None if violation is None else verdict(lambda: _raise(violation)),
        sorted(carrier),
    )


def guards_agree(
    compiled: Guard[dict[str, Any], Callable[..., Any]],
    reference: Guard[dict[str, Any], Callable[..., Any]],
    case: GuardCase,
    raw: bytes,
) -> None:
    """Raise AssertionError unless both guards decide alike on ``raw``, given
    whole (WSGI) and as its path and query (ASGI)."""
    path, _, query = raw.partition(b"?")
    for given_raw, given_query in ((raw, None), (path, query)):
        got = decision(compiled, given_raw, given_query, case.mount)
        expected = decision(reference, given_raw, given_query, case.mount)
        if got != expected:
            raise AssertionError(
                f"decide({given_raw!r}, {given_query!r}, {case.mount!r}) under {case!r}:\n"
                f"  compiled  {got}\n  reference {expected}"
            )
