"""What an application accepts: one switch per rule, checked at construction.

A ``Policy`` is a frozen value. Everything the parsers need from it (byte
tables, the allowed code points, patterns) is derived once, in
``__post_init__``, so that parsing never re-reads the configuration. Bad
configuration raises ``TypeError`` or ``ValueError`` naming the key; nothing
is coerced silently.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Final, Literal

from . import grammar as g
from .escapes import escaped_character

RejectOrKeep = Literal["reject", "keep"]
RejectOrAllow = Literal["reject", "allow"]
PathParams = Literal["literal", "reject", "split"]

_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "encoded_slash": ("reject", "keep"),
    "encoded_backslash": ("reject", "keep"),
    "dot_segment": ("reject", "allow"),
    "empty_segment": ("reject", "allow"),
    "double_encoding": ("reject", "allow"),
    "path_params": ("literal", "reject", "split"),
}
_LIMITS: Final = ("max_length", "max_segments", "max_params")


@dataclasses.dataclass(frozen=True)
class Policy:
    """The rules a request target must pass. ``Policy()`` is the strict default.

    Every field is a switch for one rule (docs/rules.md):

    - ``max_length`` (8192 bytes), ``max_segments`` (128), ``max_params``
      (1000): rules ``too-long`` and ``too-many``.
    - ``raw_path_extra`` / ``raw_query_extra``: printable ASCII characters
      accepted raw beyond RFC 3986 (rule ``raw-char``); ``Policy.browser()``
      sets them to what browsers send.
    - ``encoded_slash``, ``encoded_backslash``: ``"reject"`` or ``"keep"``
      (``%2F`` stays ``/`` inside the decoded segment; the parts it separates
      there, and in a parameter's name or value under ``"split"``, are never
      ``.``, ``..``, empty but the last, or a drive first, whatever the
      other switches).
    - ``dot_segment``, ``empty_segment``, ``double_encoding``: ``"reject"``
      or ``"allow"`` (the first two for real segments only).
    - ``path_params``: ``"literal"`` (``;`` is data), ``"reject"`` (a raw
      ``;`` in the path is a ``raw-char``), or ``"split"`` (matrix parameters,
      ``/file;p=1`` is segment ``file`` with params ``(("p", "1"),)``).
    - ``plus_as_space``: ``+`` in the query means space (form semantics).
    - ``allowed_ranges``: ``None`` (all of Unicode) or inclusive code point
      ranges, e.g. ``[(0x20, 0x7E), (0xA0, 0xFF)]`` for Latin-1 text only.
      The default forbidden characters (controls, bidi controls, line
      separators, noncharacters) stay forbidden either way.
    - ``allow_chars``: characters accepted even so, in the path and the query.
    - ``query_allow_chars``: characters accepted even so in query names and
      values only, e.g. ``"\\r\\n"`` for textarea text sent by a GET form.
      Prefer it to ``allow_chars``, which would let ``%0D%0A`` into a path.

    Example::

        >>> from urlguard import Policy, parse_target
        >>> parse_target(b"/units/kg%2Fs", Policy(encoded_slash="keep")).segments
        ('units', 'kg/s')
    """

    max_length: int = 8192
    max_segments: int = 128
    max_params: int = 1000
    raw_path_extra: str = ""
    raw_query_extra: str = ""
    encoded_slash: RejectOrKeep = "reject"
    encoded_backslash: RejectOrKeep = "reject"
    dot_segment: RejectOrAllow = "reject"
    empty_segment: RejectOrAllow = "reject"
    double_encoding: RejectOrAllow = "reject"
    path_params: PathParams = "literal"
    plus_as_space: bool = True
    allowed_ranges: Sequence[tuple[int, int]] | None = None
    allow_chars: str = ""
    query_allow_chars: str = ""

    # Derived in __post_init__ for the parsers; not fields, so they take no
    # part in ==, hash or repr.
    #: 256 bytes each: non-zero where a byte may appear raw in the path / query.
    _raw_path_table: bytes = dataclasses.field(init=False, repr=False, compare=False)
    _raw_query_table: bytes = dataclasses.field(init=False, repr=False, compare=False)
    #: Sorted, merged, inclusive code point intervals that decoded text may
    #: hold, in path segments (and the authority) / in query names and values.
    _path_allowed: tuple[tuple[int, int], ...] = dataclasses.field(
        init=False, repr=False, compare=False
    )
    _query_allowed: tuple[tuple[int, int], ...] = dataclasses.field(
        init=False, repr=False, compare=False
    )
    #: The same sets as patterns that find the first byte or character outside.
    _path_raw_bad: re.Pattern[bytes] = dataclasses.field(init=False, repr=False, compare=False)
    _query_raw_bad: re.Pattern[bytes] = dataclasses.field(init=False, repr=False, compare=False)
    _path_forbidden: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)
    _query_forbidden: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)
    #: The characters that separate parts inside a decoded segment: what a
    #: kept %2F / %5C becomes, and a raw '\\' the policy admits.
    _kept_separators: str = dataclasses.field(init=False, repr=False, compare=False)
    #: The pure parser's quick path (``parser_py._accept_quickly``), from the
    #: same sets. The raw bytes it takes as they are: in the path '/' and
    #: those allowed raw that read as allowed characters, but ';' and a raw
    #: separator the policy keeps inside a segment; in the query '&' and
    #: those allowed raw that read as allowed characters ('+' as a space
    #: where it is one, '=' as data). Never '%'.
    _path_quick: bytes = dataclasses.field(init=False, repr=False, compare=False)
    _query_quick: bytes = dataclasses.field(init=False, repr=False, compare=False)
    #: The characters it takes escaped: allowed ones, but those a rule reads
    #: in decoded text (in the path '/', '\\', '.', and '%' where double
    #: encoding is refused; in the query '&' and '=').
    _path_escaped: tuple[tuple[int, int], ...] = dataclasses.field(
        init=False, repr=False, compare=False
    )
    _query_escaped: tuple[tuple[int, int], ...] = dataclasses.field(
        init=False, repr=False, compare=False
    )
    #: The pattern of a target made of those: '/', a path, perhaps '?' and a
    #: query, each a run of its raw bytes and escaped characters.
    _quick_target: re.Pattern[bytes] = dataclasses.field(init=False, repr=False, compare=False)

    FIELDS: ClassVar[tuple[str, ...]]

    def __post_init__(self) -> None:
        for name in _LIMITS:
            value = getattr(self, name)
            if type(value) is not int:
                raise TypeError(f"Policy.{name} must be an int, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"Policy.{name} must be at least 1, not {value}")
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(
                    f"Policy.{name} must be one of {', '.join(map(repr, choices))}, not {value!r}"
                )
        if type(self.plus_as_space) is not bool:
            raise TypeError("Policy.plus_as_space must be a bool")
        path_extra = _raw_extra("raw_path_extra", self.raw_path_extra)
        query_extra = _raw_extra("raw_query_extra", self.raw_query_extra)
        for name in ("allow_chars", "query_allow_chars"):
            if type(getattr(self, name)) is not str:
                raise TypeError(f"Policy.{name} must be a str")
        ranges = _check_ranges(self.allowed_ranges)
        set_ = object.__setattr__  # the documented way to derive fields of a frozen dataclass
        set_(self, "allowed_ranges", ranges)

        path_raw = g.PATH_RAW | path_extra
        if self.path_params == "reject":
            path_raw = path_raw - {g.SEMICOLON}
        query_raw = g.QUERY_RAW | query_extra
        set_(self, "_raw_path_table", _table(path_raw))
        set_(self, "_raw_query_table", _table(query_raw))
        set_(self, "_path_raw_bad", _outside(path_raw))
        set_(self, "_query_raw_bad", _outside(query_raw))

        path_allowed = _allowed_intervals(ranges, self.allow_chars)
        if self.path_params == "reject":
            # An escaped ';' in a segment too (as Spring's firewall does): a
            # decoder downstream turns %3B into a parameter delimiter.
            path_allowed = _subtract(path_allowed, [(g.SEMICOLON, g.SEMICOLON)])
        query_allowed = _allowed_intervals(ranges, self.allow_chars + self.query_allow_chars)
        for where, allowed in (("path segments", path_allowed), ("query text", query_allowed)):
            if not allowed:
                raise ValueError(
                    f"Policy.allowed_ranges leaves no character allowed in {where} once the "
                    "always-forbidden ones are taken out"
                )
        set_(self, "_path_allowed", tuple(path_allowed))
        set_(self, "_query_allowed", tuple(query_allowed))
        set_(self, "_path_forbidden", _forbidden_pattern(path_allowed))
        set_(self, "_query_forbidden", _forbidden_pattern(query_allowed))
        # A raw '\\' the policy admits separates as a kept %5C does (Windows
        # and browsers read it as '/').
        backslash = self.encoded_backslash == "keep" or g.BACKSLASH in path_raw
        kept = ("/" if self.encoded_slash == "keep" else "") + ("\\" if backslash else "")
        set_(self, "_kept_separators", kept)

        # The pure parser's quick path: what it takes raw and escaped. A raw
        # '/' always separates segments; a kept raw '\\' separates parts
        # inside one, which the rules of kept separators read.
        path_text = frozenset(c for c in path_raw if _inside(path_allowed, c))
        unsplit = frozenset((g.SEMICOLON, g.PERCENT, *map(ord, kept)))
        path_quick = (path_text - unsplit) | {g.SLASH}
        plus = ord(" ") if self.plus_as_space else g.PLUS  # what a raw '+' reads as
        query_quick = frozenset(
            c for c in query_raw if _inside(query_allowed, plus if c == g.PLUS else c)
        )
        query_quick = (query_quick | {g.AMPERSAND}) - {g.PERCENT}
        unread = [g.SLASH, g.BACKSLASH, ord(".")]
        if self.double_encoding == "reject":
            unread.append(g.PERCENT)
        path_escaped = _subtract(path_allowed, _merge([(c, c) for c in unread]))
        equals = ord("=")
        query_escaped = _subtract(query_allowed, [(g.AMPERSAND, g.AMPERSAND), (equals, equals)])
        set_(self, "_path_quick", g.to_bytes(path_quick))
        set_(self, "_query_quick", g.to_bytes(query_quick))
        set_(self, "_path_escaped", tuple(path_escaped))
        set_(self, "_query_escaped", tuple(query_escaped))
        set_(
            self,
            "_quick_target",
            _quick_target_pattern(
                self._path_quick, self._query_quick, self._path_escaped, self._query_escaped
            ),
        )

    @classmethod
    def browser(cls, **changes: Any) -> Policy:
        """The browser-compatible preset: also accepts, raw, what current
        Chromium and Firefox send raw (docs/servers.md): ``[ ] |`` in the path,
        ``[ ] \\ ^ | { }`` and backtick in the query; and CR, LF and TAB in
        query text, which both send from a ``<textarea>`` in a GET form. Other
        switches as given."""
        changes.setdefault("raw_path_extra", g.to_str(g.BROWSER_PATH_EXTRA))
        changes.setdefault("raw_query_extra", g.to_str(g.BROWSER_QUERY_EXTRA))
        changes.setdefault("query_allow_chars", g.BROWSER_QUERY_CHARS)
        return cls(**changes)

    def replace(self, **changes: Any) -> Policy:
        """A copy with some switches changed, validated like a new one."""
        return dataclasses.replace(self, **changes)

    def allows_char(self, char: str, component: Literal["path", "query"] = "path") -> bool:
        """Whether one decoded character passes the ``forbidden-char`` rule
        in ``component``."""
        forbidden = self._query_forbidden if component == "query" else self._path_forbidden
        return forbidden.search(char) is None


Policy.FIELDS = tuple(f.name for f in dataclasses.fields(Policy) if f.init)


def _raw_extra(name: str, value: object) -> frozenset[int]:
    if type(value) is not str:
        raise TypeError(f"Policy.{name} must be a str of ASCII characters")
    chars = frozenset(map(ord, value))
    if not chars <= g.ALLOWABLE_RAW_EXTRA:
        allowed = g.to_str(g.ALLOWABLE_RAW_EXTRA)
        raise ValueError(f"Policy.{name} may only contain characters from {allowed!r}")
    return chars


def _table(allowed: frozenset[int]) -> bytes:
    """256 bytes: 1 where the byte is in ``allowed``, else 0."""
    return bytes(int(b in allowed) for b in range(256))


def _outside(allowed: frozenset[int]) -> re.Pattern[bytes]:
    """A pattern that finds the first byte not in ``allowed``."""
    return re.compile(b"[^" + re.escape(g.to_bytes(allowed)) + b"]")


def _check_ranges(value: object) -> tuple[tuple[int, int], ...] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError("Policy.allowed_ranges must be None or a sequence of (low, high) pairs")
    ranges: list[tuple[int, int]] = []
    for item in value:
        if isinstance(item, str | bytes) or not isinstance(item, Iterable):
            raise TypeError("Policy.allowed_ranges items must be (low, high) pairs of ints")
        pair = tuple(item)
        if len(pair) != 2 or any(type(n) is not int for n in pair):
            raise TypeError("Policy.allowed_ranges items must be (low, high) pairs of ints")
        low, high = pair
        if not 0 <= low <= high <= g.MAX_CODE_POINT:
            raise ValueError(
                f"Policy.allowed_ranges: ({low:#x}, {high:#x}) is not a range "
                f"with 0 <= low <= high <= {g.MAX_CODE_POINT:#x}"
            )
        ranges.append((low, high))
    if not ranges:
        raise ValueError("Policy.allowed_ranges must not be empty (use None for all of Unicode)")
    return tuple(ranges)


def _merge(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _subtract(
    intervals: list[tuple[int, int]], holes: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for low, high in intervals:
        for hole_low, hole_high in holes:
            if hole_high < low or hole_low > high:
                continue
            if hole_low > low:
                result.append((low, hole_low - 1))
            low = hole_high + 1
            if low > high:
                break
        if low <= high:
            result.append((low, high))
    return result


def _allowed_intervals(
    ranges: tuple[tuple[int, int], ...] | None, allow_chars: str
) -> list[tuple[int, int]]:
    base = _merge(ranges or [(0, g.MAX_CODE_POINT)])
    allowed = _subtract(base, _merge(g.FORBIDDEN_RANGES))
    return _merge([*allowed, *((ord(c), ord(c)) for c in allow_chars)])


@functools.lru_cache(maxsize=64)
def _quick_target_pattern(
    path: bytes,
    query: bytes,
    path_escaped: tuple[tuple[int, int], ...],
    query_escaped: tuple[tuple[int, int], ...],
) -> re.Pattern[bytes]:
    """'/' and a path of ``path``'s bytes and ``path_escaped``'s characters
    escaped, then perhaps '?' and a query of ``query``'s and
    ``query_escaped``'s. Cached: policies that differ in other switches share it."""
    return re.compile(b"/%s(?:\\?%s)?" % (_run(path, path_escaped), _run(query, query_escaped)))


def _run(raw: bytes, escaped: Sequence[tuple[int, int]]) -> bytes:
    """Bytes of ``raw`` and escaped characters of ``escaped``, any number,
    without backtracking (each escape starts with '%', which ``raw`` never holds)."""
    as_sent = b"[%s]*+" % re.escape(raw)
    character = escaped_character(escaped)
    return b"%s(?:%s%s)*+" % (as_sent, character, as_sent) if character else as_sent


def _inside(intervals: list[tuple[int, int]], point: int) -> bool:
    return any(low <= point <= high for low, high in intervals)


def _forbidden_pattern(allowed: list[tuple[int, int]]) -> re.Pattern[str]:
    """A pattern that finds the first character outside ``allowed``."""
    parts = []
    for low, high in allowed:
        parts.append(
            re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        )
    return re.compile(f"[^{''.join(parts)}]" if parts else "(?s).")  # nothing allowed: any


#: The strict default, shared: a Policy is immutable.
DEFAULT_POLICY: Final = Policy()
