"""The character sets of RFC 3986, built once, and everything derived from them.

Every table in urlguard (the raw-byte checks of the parser, the encoders'
safe sets, URI cleaning and pretty printing) is computed here from the ABNF
below. Nothing else in the package types a character class by hand: two
hand-typed copies of one table drift apart.

Sets are ``frozenset[int]`` of byte values (all ASCII); ``Policy`` derives
its byte tables and patterns from them once, at construction.
"""

from __future__ import annotations

import string

# RFC 3986 §2.3
#   unreserved  = ALPHA / DIGIT / "-" / "." / "_" / "~"
ALPHA = frozenset(string.ascii_letters.encode())
DIGIT = frozenset(string.digits.encode())
HEXDIG = frozenset(string.hexdigits.encode())  # both cases: RFC 3986 §2.1
UNRESERVED = ALPHA | DIGIT | frozenset(b"-._~")

# RFC 3986 §2.2
#   gen-delims  = ":" / "/" / "?" / "#" / "[" / "]" / "@"
#   sub-delims  = "!" / "$" / "&" / "'" / "(" / ")"
#               / "*" / "+" / "," / ";" / "="
#   reserved    = gen-delims / sub-delims
GEN_DELIMS = frozenset(b":/?#[]@")
SUB_DELIMS = frozenset(b"!$&'()*+,;=")
RESERVED = GEN_DELIMS | SUB_DELIMS

PERCENT = ord("%")
SLASH = ord("/")
QUESTION = ord("?")
HASH = ord("#")
SEMICOLON = ord(";")
BACKSLASH = ord("\\")
PLUS = ord("+")
AMPERSAND = ord("&")

# RFC 3986 §3.3
#   pchar       = unreserved / pct-encoded / sub-delims / ":" / "@"
#   segment     = *pchar
# '%' is listed with the raw bytes because pct-encoded starts with it; whether
# it is followed by two HEXDIG is the separate rule `malformed-escape`.
PCHAR = UNRESERVED | SUB_DELIMS | frozenset(b":@")
PATH_RAW = PCHAR | {SLASH, PERCENT}

# RFC 3986 §3.4 and §3.5
#   query       = *( pchar / "/" / "?" )
#   fragment    = *( pchar / "/" / "?" )
QUERY_RAW = PCHAR | {SLASH, QUESTION, PERCENT}
FRAGMENT_RAW = QUERY_RAW

# RFC 3986 §3.2.2 reg-name, and §3.2.3 port; enough to check the authority of
# an absolute-form request target (RFC 9112 §3.2.2).
#   reg-name    = *( unreserved / pct-encoded / sub-delims )
REG_NAME = UNRESERVED | SUB_DELIMS

# Printable ASCII that RFC 3986 never allows raw anywhere:
#   " < > \ ^ ` { | }   plus space; '[' and ']' only inside an IP-literal host.
ALL_ASCII = frozenset(range(0x80))
CONTROLS = frozenset(range(0x20)) | {0x7F}
EXCLUDED_PRINTABLE = frozenset(b' "<>\\^`{|}')

# What current browsers send raw beyond RFC 3986 (measured with Chromium and
# Firefox; docs/servers.md): Chromium sends '[' ']' raw in the path, Firefox
# also '|'; both send '[' '\' ']' '^' '`' '{' '|' '}' raw in the query.
BROWSER_PATH_EXTRA = frozenset(b"[]|")
BROWSER_QUERY_EXTRA = frozenset(b"[\\]^`{|}")

# What browsers put, percent-encoded, into query text that a user typed: a
# GET form's <textarea> sends its line breaks as %0D%0A and tabs as %09
# (docs/servers.md). Never in the path.
BROWSER_QUERY_CHARS = "\t\n\r"

# The only extras a policy may allow raw: printable ASCII outside RFC 3986's
# sets. Never '#' (it ends the target), never '%' (escapes), never space or a
# control (no browser sends them; servers disagree on them).
ALLOWABLE_RAW_EXTRA = frozenset(b'"<>\\^`{|}[]')


def to_bytes(chars: frozenset[int]) -> bytes:
    """The set as sorted bytes, for regex classes and byte tables."""
    return bytes(sorted(chars))


def to_str(chars: frozenset[int]) -> str:
    """The set as a sorted string, for readable messages and encoder tables."""
    return "".join(chr(c) for c in sorted(chars))


# Decoded characters forbidden by default (rule forbidden-char, docs/rules.md):
# C0 and C1 controls and DEL; the line and paragraph separators; the bidi
# controls that reorder displayed text (Unicode TR9, CVE-2021-42574 "Trojan
# Source"); and the noncharacters (Unicode §23.7), which are never for
# interchange.
FORBIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),
    (0x007F, 0x009F),
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x200E, 0x200F),  # LRM, RLM
    (0x2028, 0x2029),  # LINE SEPARATOR, PARAGRAPH SEPARATOR
    (0x202A, 0x202E),  # LRE, RLE, PDF, LRO, RLO
    (0x2066, 0x2069),  # LRI, RLI, FSI, PDI
    (0xFDD0, 0xFDEF),
    *((plane + 0xFFFE, plane + 0xFFFF) for plane in range(0, 0x110000, 0x10000)),
)

# The last Unicode code point (RFC 3629 §3: UTF-8 stops here).
MAX_CODE_POINT = 0x10FFFF
