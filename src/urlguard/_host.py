"""The one host grammar: a Host header, HTTP/2's ``:authority``, and the
authority of an absolute-form target are all read by :func:`parse_host`.

RFC 9110 §7.2 gives the Host field the syntax ``uri-host [ ":" port ]``
(RFC 3986 §3.2.2, §3.2.3); RFC 9112 §3.2 makes a server answer 400 to a
request whose Host is missing (HTTP/1.1), repeated or invalid. urlguard
reads it more strictly than RFC 3986 allows, so that every component that
later reads the host (a resolver, a proxy, an access rule, a browser's URL
parser) reads the same one:

- ``IPv4address``: four decimal parts 0-255, no leading zero (RFC 3986
  ``dec-octet``). Any other host that the WHATWG URL Standard's host parser
  would read as an IPv4 *number* (its last label all digits, or ``0x``
  followed by hex digits: ``0177.0.0.1``, ``0x7f.1``, ``2130706433``) is
  refused, since a resolver may read it otherwise.
- ``IP-literal``: ``[`` RFC 3986 ``IPv6address`` ``]`` exactly; no zone
  identifier (RFC 6874 is for user interfaces, not requests) and no
  ``IPvFuture``, which no server resolves.
- a registered name: RFC 1123 §2.1 labels (letters, digits, ``-``, 1-63
  characters, not starting or ending with ``-``), at most 253 characters,
  one trailing dot allowed. ``_`` is allowed inside a label as a letter
  is: RFC 2181 §11 lets DNS labels hold it, every browser sends it, and
  container and service names use it; it delimits nothing. A label that
  starts with ``xn--`` (in any case) must be, lower-cased, a valid A-label
  (RFC 5891 §5.4): checked with the ``idna`` package (IDNA 2008) when it
  is installed; in any case it must decode as Punycode (RFC 3492) to a
  non-ASCII label that encodes back to the same text, that NFKC and
  lower-casing leave as it is (so no full-width ``／`` or ``＠``, which
  NFKC maps to ``/`` and ``@``), and that holds no space, control or
  delimiter (nor ``。``, which UTS 46 maps to ``.``). Without ``idna``, a
  label that IDNA 2008 disallows but that passes these checks
  (``xn--ls8h``, an emoji) is accepted.
- no escapes, no userinfo, nothing outside ASCII: browsers send A-labels.
- port: decimal, 0-65535, no leading zero, not empty (RFC 3986 allows
  both; no client sends them, and each would give one authority two
  spellings for an access rule or a cache key to tell apart).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, NamedTuple

from ._errors import Component, InvalidTarget

__all__ = ["MAX_NAME", "Host", "ends_in_a_number", "parse_host"]

#: RFC 1123 §2.1 (as RFC 1035 §2.3.4 counts it, without the trailing dot).
MAX_NAME: Final = 253
MAX_LABEL: Final = 63

_DEC_OCTET: Final = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4: Final = rf"{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}"
_H16: Final = r"[0-9A-Fa-f]{1,4}"
_LS32: Final = rf"(?:{_H16}:{_H16}|{_IPV4})"
# RFC 3986 §3.2.2, IPv6address, its nine forms in order.
_IPV6: Final = "|".join(
    (
        rf"(?:{_H16}:){{6}}{_LS32}",
        rf"::(?:{_H16}:){{5}}{_LS32}",
        rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
        rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
        rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
        rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
    )
)
_IPV4_RE: Final = re.compile(_IPV4, re.ASCII)
_IPV6_RE: Final = re.compile(rf"(?:{_IPV6})", re.ASCII)
_LABEL_RE: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?", re.ASCII)
_PORT_RE: Final = re.compile(r"0|[1-9][0-9]{0,4}", re.ASCII)
# The WHATWG URL Standard's "ends in a number" (host parsing, step 6 and
# "ends in a number checker"): the last label is all digits, or 0x/0X
# followed by hex digits (none at all counts).
_NUMBER_RE: Final = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*", re.ASCII)
# What must not be in a U-label: the URL delimiters, and U+3002 IDEOGRAPHIC
# FULL STOP, which UTS 46 maps to "." although NFKC keeps it. (The full-width
# forms, which NFKC maps to these, are refused as unstable before this.)
_DELIMITERS: Final = frozenset("/\\?#@:[]%. \u3002")


class Host(NamedTuple):
    """A valid host: ``name`` in lower case (``[...]`` for an IPv6 literal;
    a registered name keeps a trailing dot if it had one), ``port`` or ``None``."""

    name: str
    port: int | None


def parse_host(raw: bytes, component: Component = "host") -> Host:
    """``raw`` (``uri-host [":" port]``, as a Host header holds it) as a
    :class:`Host`; ``InvalidTarget("bad-host", component, None, offset)``
    otherwise, ``offset`` pointing at the first byte found wrong."""
    if not raw:
        raise _bad(component, 0)
    if not raw.isascii():
        raise _bad(component, next(i for i, b in enumerate(raw) if b > 0x7F))
    text = raw.decode("ascii")
    if text[0] == "[":
        close = text.find("]")
        if close < 0:
            raise _bad(component, len(text))
        literal = text[1:close]
        if _IPV6_RE.fullmatch(literal) is None:
            raise _bad(component, 1)
        return Host(f"[{literal.lower()}]", _port(text, close + 1, component))
    colon = text.find(":")
    name = text if colon < 0 else text[:colon]
    _check_name(name, component)  # before the port: the offset is the leftmost fault
    return Host(name.lower(), None if colon < 0 else _port(text, colon, component))


def ends_in_a_number(name: str) -> bool:
    """The WHATWG URL Standard's "ends in a number checker": whether the last
    label of ``name``, one trailing dot aside, is a number (:data:`_NUMBER_RE`),
    so that a browser reads ``name`` as an IPv4 address ("1.2.3" is 1.2.0.3)."""
    labels = name.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    return _NUMBER_RE.fullmatch(labels[-1]) is not None


def _port(text: str, at: int, component: Component) -> int | None:
    """The port after ``text[at]`` (``":"``), or ``None`` when nothing follows the host."""
    if at == len(text):
        return None
    if text[at] != ":" or _PORT_RE.fullmatch(text, at + 1) is None:
        raise _bad(component, at)
    port = int(text[at + 1 :])
    if port > 65535:
        raise _bad(component, at + 1)
    return port


def _check_name(name: str, component: Component) -> None:
    """An IPv4 address or a registered name (see the module documentation)."""
    if _IPV4_RE.fullmatch(name):
        return
    body = name[:-1] if name.endswith(".") else name
    if not body:
        raise _bad(component, 0)
    labels = body.split(".")
    at = 0
    for label in labels:
        if len(label) > MAX_LABEL or _LABEL_RE.fullmatch(label) is None:
            raise _bad(component, at + _first_wrong(label))
        # DNS compares labels without regard to case (RFC 4343) and the name
        # is returned in lower case, so the A-label checked is the lower-case
        # one: "XN--CAF-DMA" is "xn--caf-dma", as a WHATWG parser reads it.
        if label[:4].lower() == "xn--" and not _is_a_label(label.lower()):
            raise _bad(component, at)
        at += len(label) + 1
    if len(body) > MAX_NAME:
        raise _bad(component, MAX_NAME)
    if _NUMBER_RE.fullmatch(labels[-1]):
        raise _bad(component, len(body) - len(labels[-1]))  # read as an IPv4 number


def _first_wrong(label: str) -> int:
    for i, char in enumerate(label):
        if not (char.isalnum() or char == "_" or (char == "-" and 0 < i < len(label) - 1)):
            return i
    return min(len(label), MAX_LABEL)


def _is_a_label(label: str) -> bool:
    """RFC 5891 §5.4: an ``xn--`` label (in lower case) must decode to a valid U-label."""
    try:
        import idna  # the optional extra: IDNA 2008 (RFC 5891, 5892)
    except ImportError:
        return _punycode_label(label)
    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError, ValueError):
        return False
    return _punycode_label(label)


def _punycode_label(label: str) -> bool:
    """Punycode (RFC 3492) that decodes to something not ASCII and encodes
    back to the same (lower-case) label, whose decoding is stable under NFKC
    and lower-casing and holds no delimiter, space or control. RFC 5892
    §2.2 makes every code point that NFKC or case folding changes
    DISALLOWED; refusing them refuses ``／``, ``＠``, ``Ａ`` and every other
    compatibility form that UTS 46 would map to another label. (Lower-casing
    rather than case folding keeps ``ß`` and ``ς``, PVALID by RFC 5892 §2.6.)
    The whole check without ``idna``; a second one with it."""
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
    except (UnicodeError, ValueError):
        return False
    if decoded.isascii() or decoded.encode("punycode").decode("ascii") != label[4:]:
        return False
    stable = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", decoded).lower())
    if stable != decoded:
        return False
    return not any(char in _DELIMITERS or unicodedata.category(char)[0] in "CZ" for char in decoded)


def _bad(component: Component, offset: int) -> InvalidTarget:
    return InvalidTarget("bad-host", component, None, offset)
