"""The one host grammar: a Host header, HTTP/2's ``:authority``, the
authority of an absolute-form target, an ``allowed_hosts`` entry and the
host the URL builder writes are all read by :func:`parse_host`, and each
host has exactly one spelling, :attr:`Host.name`.

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
- ``IP-literal``: ``[`` RFC 3986 ``IPv6address`` ``]``, read by
  :mod:`ipaddress` (whose reader is that ABNF: at most four hex digits a
  group, one ``::``, a dotted quad without leading zeros only last); no
  zone identifier (RFC 6874 is for user interfaces, not requests) and no
  ``IPvFuture``, which no server resolves. Written in RFC 5952 form: lower
  case, no leading zero, the longest run of zero groups (the first of
  equals, two groups or more) as ``::``; an IPv4-mapped address
  (``::ffff:0:0/96``) with its last 32 bits dotted (RFC 5952 §5). So
  ``[0::1]``, ``[::0001]`` and ``[0:0:0:0:0:0:0:1]`` are all ``[::1]``, and
  ``[::ffff:7f00:1]`` is ``[::ffff:127.0.0.1]``. An IPv4-mapped or
  IPv4-compatible address stays an IPv6 literal: it is not the IPv4 host
  it embeds (an allow-list entry ``127.0.0.1`` does not allow it).
- a registered name: RFC 1123 §2.1 labels (letters, digits, ``-``, 1-63
  characters, not starting or ending with ``-``), at most 253 characters,
  one trailing dot allowed. ``_`` is allowed inside a label as a letter
  is: RFC 2181 §11 lets DNS labels hold it, every browser sends it, and
  container and service names use it; it delimits nothing. A label that
  starts with ``xn--`` (in any case) must be, lower-cased, a valid A-label
  (RFC 5891 §5.4): the ``idna`` package (IDNA 2008, RFC 5891-5893) decodes
  it to a U-label that encodes back to the same text. Written in lower
  case without the trailing dot: DNS compares names without regard to
  case (RFC 4343) and ``example.com.`` is the same name as ``example.com``
  (RFC 1034 §3.1), so an access rule or a cache key sees one of them.
- no escapes, no userinfo, nothing outside ASCII: browsers send A-labels.
- port: decimal, 1-65535 (:data:`PORTS`), no leading zero, not empty
  (RFC 3986 allows the last two; no client sends them, and each would
  give one authority two spellings). Port 0 names no service: a client
  cannot connect to it (RFC 6335 §6 reserves it), so a request that
  names it names no server.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final, NamedTuple

import idna

from .errors import Component, InvalidTarget

__all__ = [
    "MAX_NAME",
    "PORTS",
    "Host",
    "agree",
    "authority_span",
    "host_text",
    "is_address",
    "parse_host",
    "same_authority",
]

#: RFC 1123 §2.1 (as RFC 1035 §2.3.4 counts it, without the trailing dot).
MAX_NAME: Final = 253
MAX_LABEL: Final = 63
#: The ports a host may name, wherever urlguard reads or writes one.
PORTS: Final = range(1, 65536)

# RFC 3986 §3.2.2: dec-octet = DIGIT / %x31-39 DIGIT / "1" 2DIGIT / "2" %x30-34 DIGIT / "25" %x30-35
_DEC_OCTET: Final = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4_RE: Final = re.compile(rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}", re.ASCII)
# The characters of RFC 3986 IPv6address; ipaddress reads the rest of it.
_IPV6_CHARS_RE: Final = re.compile(r"[0-9A-Fa-f:.]+", re.ASCII)
_LABEL_RE: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?", re.ASCII)
_PORT_RE: Final = re.compile(r"[1-9][0-9]{0,4}", re.ASCII)
# The WHATWG URL Standard's "ends in a number" (host parsing, step 6 and
# "ends in a number checker"): the last label is all digits, or 0x/0X
# followed by hex digits (none at all counts).
_NUMBER_RE: Final = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*", re.ASCII)
# RFC 9112 §3.2.2 absolute-form, for the schemes of RFC 9110 §4.2 (scheme
# names are case-insensitive, RFC 3986 §3.1).
_SCHEME_RE: Final = re.compile(rb"https?://", re.IGNORECASE)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class Host(NamedTuple):
    """A valid host, in its one spelling: ``name`` as the module documentation
    writes it (``[...]`` for an IPv6 literal), ``port`` or ``None``."""

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
        name = _ipv6(text[1:close], component)
        return Host(name, _port(text, close + 1, component))
    colon = text.find(":")
    name = _name(text if colon < 0 else text[:colon], component)  # the leftmost fault first
    return Host(name, None if colon < 0 else _port(text, colon, component))


def agree(host: Host, other: Host, scheme: str) -> bool:
    """Two hosts that name one authority: the same name, and the same port
    once a missing one is read as the scheme's default (RFC 9110 §4.2.1, §4.2.2)."""
    default = _DEFAULT_PORTS.get(scheme)
    return host.name == other.name and (
        (default if host.port is None else host.port)
        == (default if other.port is None else other.port)
    )


def same_authority(raw: bytes, authority: Host, host: Host) -> bool:
    """The absolute-form target ``raw``, whose authority is ``authority``,
    names the host ``host`` names (RFC 9112 §3.2.2: a client sends the
    target's authority as Host); a missing port is the scheme's default."""
    return agree(authority, host, "https" if raw[4:5] in (b"s", b"S") else "http")


def host_text(host: Host) -> str:
    """``host`` as ``uri-host [":" port]``, which :func:`parse_host` reads back as ``host``."""
    return host.name if host.port is None else f"{host.name}:{host.port}"


def authority_span(raw: bytes) -> tuple[int, int] | None:
    """Where the authority of an http(s) absolute-form target starts and
    ends (RFC 3986 §3.2: after ``//``, up to the first ``/`` or ``?``);
    ``None`` for a target in another form."""
    scheme = _SCHEME_RE.match(raw)
    if scheme is None:
        return None
    start = scheme.end()
    ends = [i for i in (raw.find(b"/", start), raw.find(b"?", start)) if i >= 0]
    return start, min(ends, default=len(raw))


def is_address(name: str) -> bool:
    """Whether a valid host name is an IP address (IPv4, or an IPv6 literal)."""
    return name[:1] == "[" or _IPV4_RE.fullmatch(name) is not None


def _ipv6(literal: str, component: Component) -> str:
    """An RFC 3986 ``IPv6address`` in RFC 5952 form, inside brackets."""
    # Only the ABNF's characters: ipaddress would also take a "%zone".
    if _IPV6_CHARS_RE.fullmatch(literal) is None:
        raise _bad(component, 1)
    try:
        address = ipaddress.IPv6Address(literal)
    except ValueError:
        raise _bad(component, 1) from None
    mapped = address.ipv4_mapped
    if mapped is not None:  # RFC 5952 §5 (ipaddress writes it so from Python 3.13 on)
        return f"[::ffff:{mapped}]"
    return f"[{address.compressed}]"


def _port(text: str, at: int, component: Component) -> int | None:
    """The port after ``text[at]`` (``":"``), or ``None`` when nothing follows the host."""
    if at == len(text):
        return None
    if text[at] != ":" or _PORT_RE.fullmatch(text, at + 1) is None:
        raise _bad(component, at)
    port = int(text[at + 1 :])
    if port not in PORTS:
        raise _bad(component, at + 1)
    return port


def _name(name: str, component: Component) -> str:
    """An IPv4 address or a registered name (see the module documentation), as written."""
    if _IPV4_RE.fullmatch(name):
        return name
    body = name[:-1] if name.endswith(".") else name
    if not body:
        raise _bad(component, 0)
    labels = body.split(".")
    at = 0
    for label in labels:
        if len(label) > MAX_LABEL or _LABEL_RE.fullmatch(label) is None:
            raise _bad(component, at + _first_wrong(label))
        # The A-label checked is the lower-case one: "XN--CAF-DMA" is
        # "xn--caf-dma", as a WHATWG parser reads it.
        if label[:4].lower() == "xn--" and not _is_a_label(label.lower()):
            raise _bad(component, at)
        at += len(label) + 1
    if len(body) > MAX_NAME:
        raise _bad(component, MAX_NAME)
    if _NUMBER_RE.fullmatch(labels[-1]):
        raise _bad(component, len(body) - len(labels[-1]))  # read as an IPv4 number
    return body.lower()


def _first_wrong(label: str) -> int:
    for i, char in enumerate(label):
        if not (char.isalnum() or char == "_" or (char == "-" and 0 < i < len(label) - 1)):
            return i
    return min(len(label), MAX_LABEL)


def _is_a_label(label: str) -> bool:
    """RFC 5891 §5.4: an ``xn--`` label (in lower case) decodes to a valid
    U-label (IDNA 2008: every code point PVALID or CONTEXT-allowed, RFC 5892;
    the Bidi rule, RFC 5893) that encodes back to the same label."""
    try:
        return idna.encode(idna.decode(label)) == label.encode("ascii")
    except ValueError:  # idna.IDNAError and UnicodeError both are
        return False


def _bad(component: Component, offset: int) -> InvalidTarget:
    return InvalidTarget("bad-host", component, None, offset)
