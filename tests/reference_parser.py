"""A deliberately plain reading of urlguard's rules (docs/rules.md), for differential tests.

Written from the text of the rules, RFC 3986 and RFC 3629 alone. It shares
no code and no table with ``urlguard``: every character set is spelled out
below from the RFC, percent-decoding and UTF-8 decoding are slow loops over
bytes, and nothing is imported from the package. Where it is slow or clumsy,
that is the point: it should be easy to check by reading.

Unlike the real parser it does not stop at the first problem: it collects
every violation it can see, in the documented order, so that a test can ask
"is the rule urlguard reported one of these?" and "was there only one?".

    >>> v = check(b"/caf%C3%A9/x?q=a+b")
    >>> v.accepted, v.segments, v.query
    (True, ('café', 'x'), (('q', 'a b'),))
    >>> check(b"/%C4rzteblatt").first
    Violation(rule='invalid-utf8', component='path', index=0)

Choices where the written rules leave room follow urlguard's documented
choices (docs/rules.md and the docstrings of ``urlguard.Policy``):

* Rule order: too-long, fragment, bad-form, raw-char (path, then query),
  too-many (path, then query), then per segment in order [empty-segment for
  an empty non-last segment; malformed-escape, encoded-slash,
  encoded-backslash, invalid-utf8, forbidden-char per piece; dot-segment,
  empty-segment, drive-letter, double-encoding], then per non-empty query
  pair [name, then value: malformed-escape, invalid-utf8, forbidden-char].
* Kept separators: under keep, the parts that a kept '/' (or '\\', or a raw
  '\\' the policy admits) makes inside a segment's decoded text, and under
  path_params="split" inside each parameter's name and value, obey
  dot-segment (no '.' or '..' part, nor one before a ';': '..;x'),
  empty-segment (no empty part but the last), and drive-letter (no first
  part of one ASCII letter and ':'), whatever the dot_segment and
  empty_segment switches: those govern real segments only.
* In every path_params mode, a segment that starts with a raw ';' is an
  empty segment unless it is the last (servlets strip ';' parameters).
* path_params="reject": an escaped ';' (%3B) in the path is forbidden-char.
* A segment whose part before its first raw ';' decodes to '.' or '..' is a
  dot-segment too (Tomcat's '..;/' traversal), in every path_params mode.
* path_params="reject": a raw ';' in the path is a raw-char.
* empty-segment looks at the raw segment: under path_params="split", ';p=1'
  is not empty even though its name is.
* Absolute-form: http or https in any case, '://', an authority that the
  host grammar accepts (urlguard._url.host, with truth tables of its own; else
  bad-host, component "target"), then the path and query; an empty path
  means '/'.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from urlguard import InvalidTarget
from urlguard._url.host import parse_host

# --- RFC 3986 character sets, typed out from the RFC text ------------------------------------

# §2.3  unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
ALPHA = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DIGIT = "0123456789"
UNRESERVED = ALPHA + DIGIT + "-._~"
# §2.1  pct-encoded = "%" HEXDIG HEXDIG  (either case)
HEXDIG = DIGIT + "ABCDEF" + "abcdef"
# §2.2  sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
SUB_DELIMS = "!$&'()*+,;="
# §3.3  pchar = unreserved / pct-encoded / sub-delims / ":" / "@"
#       path-absolute: segments joined by "/"
PATH_CHARS = UNRESERVED + SUB_DELIMS + ":" + "@" + "/" + "%"
# §3.4  query = *( pchar / "/" / "?" )
QUERY_CHARS = PATH_CHARS + "?"

# raw-char: what Chromium and Firefox send raw beyond RFC 3986 (measured).
BROWSER_PATH_EXTRA = "[" + "]" + "|"
BROWSER_QUERY_EXTRA = "[" + "]" + "\\" + "^" + "|" + "{" + "}" + "`"

# forbidden-char: forbidden by default, inclusive ranges.
DEFAULT_FORBIDDEN = (
    (0x0000, 0x001F),  # C0 controls
    (0x007F, 0x009F),  # DEL and C1 controls
    (0x2028, 0x2029),  # line and paragraph separators
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x200E, 0x200F),  # LRM, RLM
    (0x202A, 0x202E),  # LRE, RLE, PDF, LRO, RLO
    (0x2066, 0x2069),  # LRI, RLI, FSI, PDI
    (0xFDD0, 0xFDEF),  # noncharacters
)

TARGET, PATH, QUERY = "target", "path", "query"
ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class RefPolicy:
    """urlguard's switches, named plainly (not ``urlguard.Policy``)."""

    max_length: int = 8192
    max_segments: int = 128
    max_params: int = 1000
    path_extra: str = ""
    query_extra: str = ""
    keep_encoded_slash: bool = False
    keep_encoded_backslash: bool = False
    allow_dot_segments: bool = False
    allow_empty_segments: bool = False
    allow_double_encoding: bool = False
    path_params: str = "literal"  # "literal" | "reject" | "split"
    plus_as_space: bool = True
    allowed_ranges: tuple[tuple[int, int], ...] | None = None
    allow_chars: str = ""
    query_allow_chars: str = ""


def browser(**changes: Any) -> RefPolicy:
    """The browser preset (it also takes CR, LF and TAB in query text), with
    other switches as given."""
    preset = RefPolicy(
        path_extra=BROWSER_PATH_EXTRA,
        query_extra=BROWSER_QUERY_EXTRA,
        query_allow_chars="\r\n\t",
    )
    return dataclasses.replace(preset, **changes)


@dataclass(frozen=True)
class Violation:
    rule: str
    component: str
    index: int | None


@dataclass
class Verdict:
    """Every violation seen, in the documented order, and the decoded pieces."""

    violations: list[Violation] = field(default_factory=list)
    segments: tuple[str, ...] = ()
    params: tuple[tuple[tuple[str, str], ...], ...] = ()
    query: tuple[tuple[str, str], ...] = ()

    @property
    def accepted(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    @property
    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}


# --- decoding, one byte at a time ---------------------------------------------------------------


# Each HEXDIG's value, by its byte: either case (RFC 3986 §2.1).
HEX_VALUES = {ord(char): "0123456789abcdef".index(char.lower()) for char in HEXDIG}


def hex_value(byte: int) -> int | None:
    return HEX_VALUES.get(byte)


def escapes(raw: bytes) -> tuple[bool, list[int]]:
    """(all escapes well formed?, the byte values of the well-formed escapes)."""
    well_formed = True
    values: list[int] = []
    i = 0
    while i < len(raw):
        if raw[i] == ord("%"):
            high = hex_value(raw[i + 1]) if i + 1 < len(raw) else None
            low = hex_value(raw[i + 2]) if i + 2 < len(raw) else None
            if high is None or low is None:
                well_formed = False
                i += 1
                continue
            values.append(high * 16 + low)
            i += 3
        else:
            i += 1
    return well_formed, values


def percent_decode(raw: bytes) -> bytes:
    """Decode every well-formed %XX; a malformed '%' is kept as it is (the
    caller has already noted it as malformed-escape)."""
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == ord("%") and i + 2 < len(raw):
            high, low = hex_value(raw[i + 1]), hex_value(raw[i + 2])
            if high is not None and low is not None:
                out.append(high * 16 + low)
                i += 3
                continue
        out.append(raw[i])
        i += 1
    return bytes(out)


def utf8_decode(data: bytes) -> str | None:
    """Strict UTF-8 after RFC 3629 §4, or None:

    UTF8-1 = %x00-7F
    UTF8-2 = %xC2-DF UTF8-tail
    UTF8-3 = %xE0 %xA0-BF UTF8-tail / %xE1-EC 2( UTF8-tail ) /
             %xED %x80-9F UTF8-tail / %xEE-EF 2( UTF8-tail )
    UTF8-4 = %xF0 %x90-BF 2( UTF8-tail ) / %xF1-F3 3( UTF8-tail ) /
             %xF4 %x80-8F 2( UTF8-tail )
    UTF8-tail = %x80-BF
    """
    chars: list[str] = []
    i = 0
    n = len(data)
    while i < n:
        b = data[i]
        if b <= 0x7F:
            chars.append(chr(b))
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            length, second = 2, (0x80, 0xBF)
        elif b == 0xE0:
            length, second = 3, (0xA0, 0xBF)
        elif 0xE1 <= b <= 0xEC or 0xEE <= b <= 0xEF:
            length, second = 3, (0x80, 0xBF)
        elif b == 0xED:
            length, second = 3, (0x80, 0x9F)
        elif b == 0xF0:
            length, second = 4, (0x90, 0xBF)
        elif 0xF1 <= b <= 0xF3:
            length, second = 4, (0x80, 0xBF)
        elif b == 0xF4:
            length, second = 4, (0x80, 0x8F)
        else:
            return None
        if i + length > n:
            return None
        low, high = second  # the range of the second byte
        if not low <= data[i + 1] <= high:
            return None
        for k in range(2, length):
            if not 0x80 <= data[i + k] <= 0xBF:
                return None
        if length == 2:
            code = (b & 0x1F) << 6 | (data[i + 1] & 0x3F)
        elif length == 3:
            code = (b & 0x0F) << 12 | (data[i + 1] & 0x3F) << 6 | (data[i + 2] & 0x3F)
        else:
            code = (
                (b & 0x07) << 18
                | (data[i + 1] & 0x3F) << 12
                | (data[i + 2] & 0x3F) << 6
                | (data[i + 3] & 0x3F)
            )
        chars.append(chr(code))
        i += length
    return "".join(chars)


def char_allowed(char: str, policy: RefPolicy, component: str = "path") -> bool:
    if char in policy.allow_chars:
        return True
    if component == QUERY and char in policy.query_allow_chars:
        return True
    code = ord(char)
    for low, high in DEFAULT_FORBIDDEN:
        if low <= code <= high:
            return False
    if code & 0xFFFF in (0xFFFE, 0xFFFF):  # U+xFFFE and U+xFFFF of every plane
        return False
    if policy.allowed_ranges is None:
        return True
    return any(low <= code <= high for low, high in policy.allowed_ranges)


def has_escape_text(text: str) -> bool:
    """'%' followed by two hex digits, in decoded text (double-encoding)."""
    for i in range(len(text) - 2):
        if text[i] == "%" and text[i + 1] in HEXDIG and text[i + 2] in HEXDIG:
            return True
    return False


# --- one piece: a segment (or a piece of one under "split"), a query name or value ----------


def check_piece(
    raw: bytes, component: str, index: int, policy: RefPolicy, out: list[Violation]
) -> str | None:
    """Append the piece's violations to ``out``; return its text if it decodes."""
    well_formed, values = escapes(raw)
    if not well_formed:
        out.append(Violation("malformed-escape", component, index))
    if component == PATH:
        if ord("/") in values and not policy.keep_encoded_slash:
            out.append(Violation("encoded-slash", component, index))
        if ord("\\") in values and not policy.keep_encoded_backslash:
            out.append(Violation("encoded-backslash", component, index))
    text = utf8_decode(percent_decode(raw))
    if text is None:
        out.append(Violation("invalid-utf8", component, index))
        return None
    if not all(char_allowed(c, policy, component) for c in text):
        out.append(Violation("forbidden-char", component, index))
    elif component == PATH and policy.path_params == "reject" and ";" in text and b";" not in raw:
        out.append(Violation("forbidden-char", component, index))  # %3B, as Spring refuses it
    return text


def kept_parts(text: str, policy: RefPolicy) -> list[str]:
    """``text`` split at every separator the policy keeps: '/' of a kept
    %2F, '\\' of a kept %5C, and a raw '\\' the policy admits."""
    parts = [text]
    if policy.keep_encoded_slash:
        parts = [piece for part in parts for piece in part.split("/")]
    if policy.keep_encoded_backslash or "\\" in policy.path_extra:
        parts = [piece for part in parts for piece in part.split("\\")]
    return parts


def is_dot(raw: bytes) -> bool:
    if len(raw) > 6:  # '.' and '..' are two bytes at most, each three raw ("%2E") at most
        return False
    escapes_ok, _ = escapes(raw)
    return escapes_ok and utf8_decode(percent_decode(raw)) in (".", "..")


def check_segment(
    raw: bytes, index: int, last: bool, policy: RefPolicy, out: list[Violation]
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Append the segment's violations to ``out``; return (text, params)."""
    if raw == b"":
        if not last and not policy.allow_empty_segments:
            out.append(Violation("empty-segment", PATH, index))
        return "", ()
    params: list[tuple[str, str]] = []
    if policy.path_params == "split":
        name_raw, *param_raws = raw.split(b";")
        texts = [check_piece(name_raw, PATH, index, policy, out)]
        for param_raw in param_raws:
            if param_raw == b"":
                continue
            key_raw, _, value_raw = param_raw.partition(b"=")
            key = check_piece(key_raw, PATH, index, policy, out)
            value = check_piece(value_raw, PATH, index, policy, out)
            texts += [key, value]
            params.append((key or "", value or ""))
        name = texts[0] or ""
    else:
        texts = [check_piece(raw, PATH, index, policy, out)]
        name = texts[0] or ""
    # The real segment, which the dot and empty switches govern; its part
    # before the first raw ';' counts too, in every mode ("..;x", "/;/admin":
    # servlet containers strip ';' parameters).
    real_dot = is_dot(raw) or is_dot(raw.split(b";")[0])
    real_empty = raw.startswith(b";") and not last
    # The parts that a kept separator makes inside the name's decoded text,
    # and, under "split", inside each parameter's name and value. Whatever
    # the switches: no part is '.' or '..' (nor is its text before a ';'),
    # none is empty but the last, and the first is no drive ("c:").
    kept_dot = kept_empty = drive = False
    for text in texts:
        parts = [] if text is None else kept_parts(text, policy)
        if len(parts) > 1:
            kept_dot = kept_dot or any(part.split(";")[0] in (".", "..") for part in parts)
            kept_empty = kept_empty or "" in parts[:-1]
            first = parts[0]
            drive = drive or (len(first) == 2 and first[0] in ASCII_LETTERS and first[1] == ":")
    if kept_dot or (real_dot and not policy.allow_dot_segments):
        out.append(Violation("dot-segment", PATH, index))
    if kept_empty or (real_empty and not policy.allow_empty_segments):
        out.append(Violation("empty-segment", PATH, index))
    if drive:
        out.append(Violation("drive-letter", PATH, index))
    escaped = any(text is not None and has_escape_text(text) for text in texts)
    if escaped and not policy.allow_double_encoding:
        out.append(Violation("double-encoding", PATH, index))
    return name, tuple(params)


def check_pair(raw: bytes, index: int, policy: RefPolicy, out: list[Violation]) -> tuple[str, str]:
    if policy.plus_as_space:
        raw = raw.replace(b"+", b" ")  # before percent-decoding: %2B stays '+'
    name_raw, _, value_raw = raw.partition(b"=")
    name = check_piece(name_raw, QUERY, index, policy, out)
    value = check_piece(value_raw, QUERY, index, policy, out)
    return name or "", value or ""


# --- the request target -------------------------------------------------------------------------


def check_authority(authority: bytes, policy: RefPolicy, out: list[Violation]) -> bool:
    """The host grammar, urlguard's own (tests/test_host.py holds its truth
    tables): appends bad-host and returns False when it refuses the authority."""
    try:
        parse_host(authority, "target")
    except InvalidTarget:
        out.append(Violation("bad-host", TARGET, None))
        return False
    return True


def find_path_start(raw: bytes, policy: RefPolicy, out: list[Violation]) -> int | None:
    """Where the path starts (origin-form or http(s) absolute-form), or None."""
    if raw[:1] == b"/":
        return 0
    lowered = raw[:8].lower()
    if lowered.startswith(b"http://"):
        start = 7
    elif lowered.startswith(b"https://"):
        start = 8
    else:
        out.append(Violation("bad-form", TARGET, None))
        return None
    end = start
    while end < len(raw) and raw[end] not in b"/?":
        end += 1
    if not check_authority(raw[start:end], policy, out):
        return None
    return end


def check(raw: bytes, policy: RefPolicy | None = None) -> Verdict:
    """Every violation of urlguard's rules in ``raw``, and its pieces when there are none."""
    policy = RefPolicy() if policy is None else policy
    verdict = Verdict()
    out = verdict.violations

    if len(raw) > policy.max_length:
        out.append(Violation("too-long", TARGET, None))
    if ord("#") in raw:
        out.append(Violation("fragment", TARGET, None))
    path_start = find_path_start(raw, policy, out)
    if path_start is None:
        return verdict

    question = raw.find(b"?", path_start)
    raw_path = raw[path_start:] if question < 0 else raw[path_start:question]
    raw_query = None if question < 0 else raw[question + 1 :]
    if raw_path == b"":
        raw_path = b"/"  # absolute-form without a path

    # raw-char: the first byte that RFC 3986 does not allow raw (plus the extras)
    path_allowed = PATH_CHARS + policy.path_extra
    if policy.path_params == "reject":
        path_allowed = path_allowed.replace(";", "")
    for i, byte in enumerate(raw_path):
        if chr(byte) not in path_allowed:
            out.append(Violation("raw-char", PATH, raw_path[:i].count(b"/") - 1))
            break
    raw_pairs = [] if raw_query is None else [p for p in raw_query.split(b"&") if p != b""]
    if raw_query is not None:
        query_allowed = QUERY_CHARS + policy.query_extra
        pair_index = 0
        for i, byte in enumerate(raw_query):
            if byte == ord("&"):
                if i > 0 and raw_query[i - 1] != ord("&"):
                    pair_index += 1
                continue
            if chr(byte) not in query_allowed:
                out.append(Violation("raw-char", QUERY, pair_index))
                break

    raw_segments = raw_path[1:].split(b"/")
    if len(raw_segments) > policy.max_segments:
        out.append(Violation("too-many", PATH, policy.max_segments))
    if len(raw_pairs) > policy.max_params:
        out.append(Violation("too-many", QUERY, policy.max_params))

    segments: list[str] = []
    params: list[tuple[tuple[str, str], ...]] = []
    for index, raw_segment in enumerate(raw_segments):
        last = index == len(raw_segments) - 1
        text, segment_params = check_segment(raw_segment, index, last, policy, out)
        segments.append(text)
        params.append(segment_params)
    query = [check_pair(piece, index, policy, out) for index, piece in enumerate(raw_pairs)]

    if not out:
        verdict.segments = tuple(segments)
        verdict.params = tuple(params)
        verdict.query = tuple(query)
    return verdict
