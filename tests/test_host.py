"""The host grammar, :func:`urlguard._url.host.parse_host`, as truth tables.

Each table quotes the rule it checks: RFC 3986 §3.2.2 (``host``,
``IP-literal``, ``IPv6address``, ``IPv4address``) and §3.2.3 (``port``),
RFC 9110 §7.2 and RFC 9112 §3.2 (``Host = uri-host [ ":" port ]``),
RFC 1123 §2.1 (labels), the WHATWG URL Standard's "ends in a number
checker", and RFC 5891 §5.4 (A-labels). Then the host entries of the
web-platform-tests URL test data (``tests/data/wpt_url_hosts.json``,
BSD-3-Clause, ``tests/data/LICENSE.wpt``), and Hypothesis properties.
"""

from __future__ import annotations

import ipaddress
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import idna
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from urlguard import build_url
from urlguard._guard.allowed_hosts import AllowedHosts
from urlguard._url.errors import InvalidTarget
from urlguard._url.host import MAX_NAME, Host, parse_host

DATA = Path(__file__).parent / "data"


def rejected_at(raw: bytes) -> int:
    """The offset ``parse_host`` reports for ``raw``, which it must refuse."""
    with pytest.raises(InvalidTarget) as caught:
        parse_host(raw)
    error = caught.value
    assert (error.rule, error.component, error.index) == ("bad-host", "host", None)
    assert 0 <= error.offset <= len(raw)
    return error.offset


# --- RFC 3986 §3.2.2: IPv4address = dec-octet "." dec-octet "." dec-octet "." dec-octet
# dec-octet = DIGIT / %x31-39 DIGIT / "1" 2DIGIT / "2" %x30-34 DIGIT / "25" %x30-35

IPV4_VALID = [
    pytest.param(b"0.0.0.0", id="all zero"),
    pytest.param(b"127.0.0.1", id="loopback"),
    pytest.param(b"255.255.255.255", id="all 255"),
    pytest.param(b"9.99.199.249", id="one, two, three digits, 2[0-4]x"),
    pytest.param(b"250.251.252.253", id="25[0-5]"),
]


@pytest.mark.parametrize("raw", IPV4_VALID)
def test_ipv4_dotted_decimal(raw: bytes) -> None:
    assert parse_host(raw) == Host(raw.decode(), None)


# Anything else made of numbers is refused: a dotted quad out of range or
# with a leading zero is not a dec-octet, and a host whose last label is a
# number is what the WHATWG host parser hands to its IPv4 parser ("ends in a
# number checker": all ASCII digits, or "0x"/"0X" and hex digits, none at
# all included), which reads octal, hex and fewer parts (``0177.0.0.1`` is
# 127.0.0.1 to a browser and to inet_aton, 177.0.0.1 to a careless rule).
IPV4_REFUSED = [
    pytest.param(b"256.0.0.1", 8, id="octet 256"),
    pytest.param(b"1.2.3.256", 6, id="last octet 256"),
    pytest.param(b"1.2.3.300", 6, id="octet 300"),
    pytest.param(b"01.2.3.4", 7, id="leading zero, first octet"),
    pytest.param(b"1.2.3.04", 6, id="leading zero, last octet"),
    pytest.param(b"0177.0.0.1", 9, id="octal 0177"),
    pytest.param(b"0x7f.0.0.1", 9, id="hex first part"),
    pytest.param(b"0x7f.1", 5, id="two parts, hex"),
    pytest.param(b"2130706433", 0, id="one 32-bit number"),
    pytest.param(b"0xffffffff", 0, id="one hex number"),
    pytest.param(b"1.2.3", 4, id="three parts"),
    pytest.param(b"1.2.3.4.5", 8, id="five parts"),
    pytest.param(b"1.2.3.4.", 6, id="trailing dot after a dotted quad"),
    pytest.param(b"foo.09", 4, id="name ending in digits"),
    pytest.param(b"foo.0x", 4, id="name ending in 0x, no hex digits"),
    pytest.param(b"foo.0X1F", 4, id="name ending in 0X1F"),
    pytest.param(b"foo.0x1f.", 4, id="name ending in 0x1f and a dot"),
    pytest.param(b"0x", 0, id="0x alone"),
    pytest.param(b"7", 0, id="one digit"),
    pytest.param(b"example.com.1", 12, id="last label a digit"),
]


@pytest.mark.parametrize(("raw", "offset"), IPV4_REFUSED)
def test_ipv4_numbers_refused(raw: bytes, offset: int) -> None:
    assert rejected_at(raw) == offset


# The last label decides: one that is not a number makes the host a name.
NOT_NUMBERS = [
    pytest.param(b"foo.0x1g", id="0x1g is not hex"),
    pytest.param(b"foo.0xg", id="0xg"),
    pytest.param(b"1.2.3.a", id="last label a letter"),
    pytest.param(b"09.foo", id="digits first, name last"),
    pytest.param(b"1e3", id="exponent is no number"),
    pytest.param(b"0x7f.foo", id="hex first, name last"),
    pytest.param(b"3com.com", id="digit-first label (RFC 1123 2.1)"),
    pytest.param(b"x0", id="letter then digit"),
]


@pytest.mark.parametrize("raw", NOT_NUMBERS)
def test_last_label_not_a_number(raw: bytes) -> None:
    assert parse_host(raw) == Host(raw.decode().lower(), None)


# --- RFC 3986 §3.2.2: IP-literal = "[" ( IPv6address / IPvFuture ) "]"
#   IPv6address =                            6( h16 ":" ) ls32
#               /                       "::" 5( h16 ":" ) ls32
#               / [               h16 ] "::" 4( h16 ":" ) ls32
#               / [ *1( h16 ":" ) h16 ] "::" 3( h16 ":" ) ls32
#               / [ *2( h16 ":" ) h16 ] "::" 2( h16 ":" ) ls32
#               / [ *3( h16 ":" ) h16 ] "::"    h16 ":"   ls32
#               / [ *4( h16 ":" ) h16 ] "::"              ls32
#               / [ *5( h16 ":" ) h16 ] "::"              h16
#               / [ *6( h16 ":" ) h16 ] "::"
#   h16 = 1*4HEXDIG;  ls32 = ( h16 ":" h16 ) / IPv4address

# (as sent, its one spelling: RFC 5952 §4 — lower case, no leading zeros, the
# longest run of two or more zero groups as "::", the first of equal runs —
# and §5 for IPv4-mapped addresses, the last 32 bits dotted)
IPV6_VALID = [
    pytest.param("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8", id="form 1: 6(h16:) ls32, 8 groups"),
    pytest.param("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304", id="form 1 with IPv4"),
    pytest.param("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8", id="form 2: :: 5(h16:) ls32"),
    pytest.param("::2:3:4:5:6:1.2.3.4", "0:2:3:4:5:6:102:304", id="form 2 with IPv4"),
    pytest.param("1::3:4:5:6:7:8", "1:0:3:4:5:6:7:8", id="form 3"),
    pytest.param("::3:4:5:6:7:8", "::3:4:5:6:7:8", id="form 3, no head"),
    pytest.param("1:2::4:5:6:7:8", "1:2:0:4:5:6:7:8", id="form 4"),
    pytest.param("1:2:3::5:6:7:8", "1:2:3:0:5:6:7:8", id="form 5"),
    pytest.param("1:2:3:4::6:7:8", "1:2:3:4:0:6:7:8", id="form 6"),
    pytest.param("1:2:3:4:5::7:8", "1:2:3:4:5:0:7:8", id="form 7"),
    pytest.param("1:2:3:4:5::1.2.3.4", "1:2:3:4:5:0:102:304", id="form 7 with IPv4"),
    pytest.param("1:2:3:4:5:6::8", "1:2:3:4:5:6:0:8", id="form 8"),
    pytest.param("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0", id="form 9"),
    pytest.param("::", "::", id="unspecified ::"),
    pytest.param("::1", "::1", id="loopback ::1"),
    pytest.param("0::1", "::1", id="loopback, 0::1"),
    pytest.param("::0001", "::1", id="loopback, leading zeros"),
    pytest.param("0:0:0:0:0:0:0:1", "::1", id="loopback, uncompressed"),
    pytest.param("1::", "1::", id="1::"),
    pytest.param("::ffff:192.0.2.1", "::ffff:192.0.2.1", id="IPv4-mapped"),
    pytest.param("::FFFF:c000:201", "::ffff:192.0.2.1", id="IPv4-mapped in hex"),
    pytest.param("0:0:0:0:0:ffff:127.0.0.1", "::ffff:127.0.0.1", id="IPv4-mapped, long"),
    pytest.param("::192.0.2.1", "::c000:201", id="IPv4-compatible (deprecated): hex"),
    pytest.param("::127.0.0.1", "::7f00:1", id="IPv4-compatible loopback"),
    pytest.param("2001:db8::", "2001:db8::", id="documentation prefix"),
    pytest.param("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1", id="two equal runs: the first"),
    pytest.param("2001:db8:0:0:1:0:0:0", "2001:db8:0:0:1::", id="the longest run"),
    pytest.param(
        "ffff:FFFF:0:00:000:0000:abcd:ABCD", "ffff:ffff::abcd:abcd", id="mixed case, 1-4 digits"
    ),
    pytest.param("fe80::1", "fe80::1", id="link-local without zone"),
]


@pytest.mark.parametrize(("literal", "canonical"), IPV6_VALID)
def test_ipv6_nine_forms(literal: str, canonical: str) -> None:
    raw = f"[{literal}]".encode()
    assert parse_host(raw) == Host(f"[{canonical}]", None)
    assert parse_host(raw + b":8080") == Host(f"[{canonical}]", 8080)
    assert _IPV6_ABNF.fullmatch(literal)  # the RFC 3986 ABNF agrees it is one


# RFC 3986 §3.2.2 IPv6address, the nine forms as a regular expression: the
# ABNF written out, to hold ipaddress (which reads the literals) to it.
_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}})"
_IPV6_ABNF = re.compile(
    "|".join(
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
    ),
    re.ASCII,
)
_IPV6_PIECE = st.sampled_from(
    ["", ":", "::", "0", "1", "ffff", "FFFF", "12345", "1.2.3.4", "01.2.3.4"]
)


@given(st.lists(_IPV6_PIECE, max_size=12).map("".join) | st.from_regex(_IPV6_ABNF, fullmatch=True))
@example("1:2:3:4:5:6:7::")
@example("::1:2:3:4:5:6:7")
@example("1:2:3:4:5:6:7:8::")
def test_ipaddress_reads_the_rfc_3986_abnf(literal: str) -> None:
    """ipaddress, which reads the literals, accepts exactly the ABNF's IPv6address."""
    try:
        parse_host(f"[{literal}]".encode())
    except InvalidTarget:
        accepted = False
    else:
        accepted = True
    assert accepted == (_IPV6_ABNF.fullmatch(literal) is not None)


IPV6_REFUSED = [
    pytest.param(b"[1:2:3:4:5:6:7:8:9]", 1, id="9 groups"),
    pytest.param(b"[0:1:2:3:4:5:6:7:8]", 1, id="9 groups from 0"),
    pytest.param(b"[1:2:3:4:5:6:7]", 1, id="7 groups, no ::"),
    pytest.param(b"[1111:2222:3333]", 1, id="3 groups"),
    pytest.param(b"[1:2:3:4:5:6:7::8]", 1, id=":: in 8 groups"),
    pytest.param(b"[0::0::0]", 1, id="two ::"),
    pytest.param(b"[1::2::]", 1, id="two ::, one trailing"),
    pytest.param(b"[12345::1]", 1, id="5 hex digits"),
    pytest.param(b"[1:2:3:4:5:6:7:10000]", 1, id="5 hex digits last"),
    pytest.param(b"[:1:2:3:4:5:6:7]", 1, id="leading single colon"),
    pytest.param(b"[1:2:3:4:5:6:7:]", 1, id="trailing single colon"),
    pytest.param(b"[:]", 1, id="one colon"),
    pytest.param(b"[:::]", 1, id="three colons"),
    pytest.param(b"[]", 1, id="empty brackets"),
    pytest.param(b"[g::1]", 1, id="non-hex digit"),
    pytest.param(b"[::1.2.3.]", 1, id="IPv4 part short"),
    pytest.param(b"[::1.2.3]", 1, id="IPv4 part of 3"),
    pytest.param(b"[::1.2.3.256]", 1, id="IPv4 part out of range"),
    pytest.param(b"[::01.2.3.4]", 1, id="IPv4 part leading zero"),
    pytest.param(b"[1.2.3.4::]", 1, id="IPv4 first"),
    pytest.param(b"[1:2:3:4:5:6:7:1.2.3.4]", 1, id="IPv4 after 7 groups"),
    pytest.param(b"[0:.0]", 1, id="colon then dot"),
    pytest.param(b"[fe80::1%25eth0]", 1, id="zone id (RFC 6874)"),
    pytest.param(b"[fe80::1%eth0]", 1, id="raw zone id"),
    pytest.param(b"[v1.fe80::a+en1]", 1, id="IPvFuture"),
    pytest.param(b"[ ::1]", 1, id="space inside"),
    pytest.param(b"[::1", 4, id="no closing bracket"),
    pytest.param(b"::1", 0, id="no brackets"),
    pytest.param(b"1::", 0, id="no brackets: 1 is a number"),
    pytest.param(b"[::1]x", 5, id="junk after ]"),
    pytest.param(b"[::1]]", 5, id="two ]"),
    pytest.param(b"[[::1]]", 1, id="two ["),
    pytest.param(b"[::1]:", 5, id="empty port after literal"),
    pytest.param(b"[::1]:080", 5, id="leading-zero port after literal"),
]


@pytest.mark.parametrize(("raw", "offset"), IPV6_REFUSED)
def test_ipv6_refused(raw: bytes, offset: int) -> None:
    assert rejected_at(raw) == offset


# --- RFC 3986 §3.2.3: port = *DIGIT; urlguard reads 1-65535 (port 0 names
# no service a client can reach: RFC 6335 §6 reserves it) and refuses the
# empty port and leading zeros (two spellings of one authority).

PORTS = [
    pytest.param(b"h:1", 1, id="port 1"),
    pytest.param(b"h:80", 80, id="port 80"),
    pytest.param(b"h:65535", 65535, id="port 65535"),
    pytest.param(b"[::1]:443", 443, id="port after IPv6"),
    pytest.param(b"1.2.3.4:8080", 8080, id="port after IPv4"),
]


@pytest.mark.parametrize(("raw", "port"), PORTS)
def test_port_valid(raw: bytes, port: int) -> None:
    assert parse_host(raw).port == port


PORTS_REFUSED = [
    pytest.param(b"h:0", 1, id="port 0"),
    pytest.param(b"[::1]:0", 5, id="port 0 after IPv6"),
    pytest.param(b"h:65536", 2, id="65536"),
    pytest.param(b"h:99999", 2, id="99999"),
    pytest.param(b"h:100000", 1, id="six digits"),
    pytest.param(b"h:4294967377", 1, id="2^32 + 81"),
    pytest.param(b"h:080", 1, id="leading zero"),
    pytest.param(b"h:00", 1, id="00"),
    pytest.param(b"h:", 1, id="empty port"),
    pytest.param(b"h:+1", 1, id="sign"),
    pytest.param(b"h:-1", 1, id="negative"),
    pytest.param(b"h: 80", 1, id="space before"),
    pytest.param(b"h:80 ", 1, id="space after"),
    pytest.param(b"h:8_0", 1, id="underscore, which int() accepts"),
    pytest.param(b"h:\xd9\xa1", 2, id="Arabic-Indic digit, which int() accepts"),
    pytest.param(b"h:0x50", 1, id="hex"),
    pytest.param(b"h:80:80", 1, id="two ports"),
    pytest.param(b"h:http", 1, id="a name"),
]


@pytest.mark.parametrize(("raw", "offset"), PORTS_REFUSED)
def test_port_refused(raw: bytes, offset: int) -> None:
    assert rejected_at(raw) == offset


# --- RFC 9110 §7.2 / RFC 9112 §3.2: Host = uri-host [ ":" port ]. No
# userinfo (RFC 9110 §4.2.4 forbids it in http URIs), no path, no spaces, no
# escapes (browsers send A-labels), nothing outside ASCII, never empty here
# (an empty Host is a missing host to the guard, which answers 400).

HOST_FIELD_REFUSED = [
    pytest.param(b"", 0, id="empty"),
    pytest.param(b":80", 0, id="port only"),
    pytest.param(b"user@example.com", 4, id="userinfo"),
    pytest.param(b"user:pass@example.com", 4, id="userinfo with password"),
    pytest.param(b"example.com@evil.com", 11, id="@ inside"),
    pytest.param(b"example.com/x", 11, id="path"),
    pytest.param(b"evil/x", 4, id="slash"),
    pytest.param(b"example.com?x", 11, id="query"),
    pytest.param(b"example.com#x", 11, id="fragment"),
    pytest.param(b"example.com\\x", 11, id="backslash"),
    pytest.param(b"a b", 1, id="inner space"),
    pytest.param(b" example.com", 0, id="leading space"),
    pytest.param(b"example.com ", 11, id="trailing space"),
    pytest.param(b"example.com\t", 11, id="tab"),
    pytest.param(b"a, b", 1, id="two hosts merged"),
    pytest.param(b"a%20b", 1, id="escaped space"),
    pytest.param(b"a%3Cb", 1, id="escaped <"),
    pytest.param(b"a%7Cb", 1, id="escaped |"),
    pytest.param(b"192.168.0.%31", 10, id="escaped digit"),
    pytest.param(b"%65xample.com", 0, id="escaped letter"),
    pytest.param(b"a%EF%BC%8Fb%EF%BC%A0evil.com", 1, id="escaped full-width / and @"),
    pytest.param("a／b＠evil.com".encode(), 1, id="full-width / and @, raw UTF-8"),
    pytest.param("café.example".encode(), 3, id="U-label"),
    pytest.param(b"caf\xe9.example", 3, id="Latin-1 byte"),
    pytest.param(b"ex\x00ample.com", 2, id="NUL"),
    pytest.param(b"example.com\r\nX: y", 11, id="CRLF"),
    pytest.param(b"*.example.com", 0, id="wildcard"),
    pytest.param(b"exa<mple.com", 3, id="<"),
]


@pytest.mark.parametrize(("raw", "offset"), HOST_FIELD_REFUSED)
def test_host_field_refused(raw: bytes, offset: int) -> None:
    assert rejected_at(raw) == offset


# --- RFC 1123 §2.1 (RFC 1035 §2.3.4 sizes): labels of letters, digits and
# "-", 1-63 characters, not starting or ending with "-"; digits may start a
# label; 253 characters in all, one trailing dot (the root) allowed. "_" is
# a letter here (RFC 2181 §11). One spelling: lower case (RFC 4343), no
# trailing dot ("example.com." is "example.com", RFC 1034 §3.1).

NAMES = [
    pytest.param(b"localhost", "localhost", id="one label"),
    pytest.param(b"example.com", "example.com", id="two labels"),
    pytest.param(b"Example.COM", "example.com", id="lower-cased"),
    pytest.param(b"example.com.", "example.com", id="one trailing dot, taken off"),
    pytest.param(b"EXAMPLE.com.", "example.com", id="upper case and a trailing dot"),
    pytest.param(b"a-b.c--d.e", "a-b.c--d.e", id="inner hyphens"),
    pytest.param(b"3com.com", "3com.com", id="digit first"),
    pytest.param(b"123.example", "123.example", id="all-digit first label"),
    pytest.param(b"_dmarc.example.com", "_dmarc.example.com", id="leading underscore"),
    pytest.param(b"my_service", "my_service", id="inner underscore"),
    pytest.param(b"a" * 63 + b".com", "a" * 63 + ".com", id="label of 63"),
    pytest.param(b"x", "x", id="one letter"),
    pytest.param(b"example.com:8000", "example.com", id="with port"),
    pytest.param(b"example.com.:8000", "example.com", id="trailing dot and port"),
]


@pytest.mark.parametrize(("raw", "name"), NAMES)
def test_names(raw: bytes, name: str) -> None:
    assert parse_host(raw).name == name


def _name_of(length: int) -> bytes:
    """A valid name of exactly ``length`` characters: labels of 63 and the rest."""
    labels = []
    while length > 0:
        size = min(63, length)
        labels.append(b"a" * size)
        length -= size + 1
    name = b".".join(labels)
    return name if not name.endswith(b".") else name[:-1] + b"a"


def test_name_sizes() -> None:
    longest = _name_of(MAX_NAME)
    assert len(longest) == MAX_NAME
    assert parse_host(longest).name == longest.decode()
    assert parse_host(longest + b".").name == longest.decode()  # root dot not counted
    assert rejected_at(_name_of(MAX_NAME + 1)) == MAX_NAME
    assert rejected_at(longest + b"..") == MAX_NAME + 1  # the empty label comes first


NAMES_REFUSED = [
    pytest.param(b"a" * 64 + b".com", 63, id="label of 64"),
    pytest.param(b"com." + b"a" * 64, 67, id="last label of 64"),
    pytest.param(b"-example.com", 0, id="leading hyphen"),
    pytest.param(b"example-.com", 7, id="trailing hyphen"),
    pytest.param(b"example.-com", 8, id="leading hyphen, second label"),
    pytest.param(b"-", 0, id="hyphen alone"),
    pytest.param(b"a..b", 2, id="empty label"),
    pytest.param(b".example.com", 0, id="leading dot"),
    pytest.param(b"example.com..", 12, id="two trailing dots"),
    pytest.param(b".", 0, id="root alone"),
    pytest.param(b"..", 0, id="two dots"),
    pytest.param(b"exa$mple", 3, id="dollar"),
    pytest.param(b"exa~mple", 3, id="tilde"),
    pytest.param(b"a!b", 1, id="bang"),
    pytest.param(b"a\x7fb", 1, id="DEL"),
]


@pytest.mark.parametrize(("raw", "offset"), NAMES_REFUSED)
def test_names_refused(raw: bytes, offset: int) -> None:
    assert rejected_at(raw) == offset


# --- RFC 5891 §5.4: an "xn--" label must decode to a valid U-label (IDNA
# 2008: RFC 5892 code points, the RFC 5893 Bidi rule) that encodes back to
# the same label, as the idna package reads it. Each row: host, accepted.

FULL_WIDTH_SLASH = b"xn--" + "a／b".encode("punycode")  # NFKC gives "a/b"
FULL_WIDTH_AT = b"xn--" + "a＠b".encode("punycode")  # NFKC gives "a@b"
FULL_WIDTH_A = b"xn--" + "éＡ".encode("punycode")  # NFKC gives "éA"
IDEOGRAPHIC_STOP = b"xn--" + "a\u3002b".encode("punycode")  # UTS 46 gives "a.b"

A_LABELS = [
    pytest.param(b"xn--caf-dma", True, id="cafe, valid"),
    pytest.param(b"xn--nxasmq6b", True, id="Greek, valid"),
    pytest.param(b"xn--caf-dma.example", True, id="valid, then a label"),
    pytest.param(b"XN--CAF-DMA", True, id="upper case, valid"),
    pytest.param(b"Xn--NxAsMq6B", True, id="mixed case, valid"),
    pytest.param(b"xn--zz", False, id="not Punycode"),
    pytest.param(b"xn--", False, id="empty body"),
    pytest.param(b"xn--a", False, id="decodes to nothing"),
    pytest.param(b"xn--abc-", False, id="ASCII only"),
    pytest.param(b"xn--pokxncvks", False, id="circled and squared forms, unstable"),
    pytest.param(FULL_WIDTH_SLASH, False, id="full-width slash inside"),
    pytest.param(FULL_WIDTH_AT, False, id="full-width at inside"),
    pytest.param(b"xn--ab-g1t", False, id="zero-width space inside"),
    pytest.param(b"xn--CAF-DMA.xn--zz", False, id="second label invalid"),
    pytest.param(b"xn--ls8h", False, id="emoji: IDNA 2008 disallows it"),
    pytest.param(b"xn--caf-pia", False, id="upper-case U-label, unstable"),
    pytest.param(b"xn--fa-hia", True, id="sharp s, PVALID"),
    pytest.param(FULL_WIDTH_A, False, id="full-width letter, unstable"),
    pytest.param(IDEOGRAPHIC_STOP, False, id="ideographic full stop inside"),
]


@pytest.mark.parametrize(("raw", "accepted"), A_LABELS)
def test_a_labels(raw: bytes, accepted: bool) -> None:
    if accepted:
        assert parse_host(raw) == Host(raw.decode().lower(), None)
    else:
        rejected_at(raw)


def test_a_label_offsets() -> None:
    assert rejected_at(b"xn--zz") == 0
    assert rejected_at(b"xn--caf-dma.xn--zz") == 12
    assert rejected_at(b"xn--") == 3  # a trailing hyphen, before any decoding


# --- The web-platform-tests URL test data: the WHATWG URL parser's answers.
#
# tests/data/wpt_url_hosts.json holds the entries of urltestdata.json whose
# input is an absolute http:, https:, ws: or wss: URL and whose authority can
# be cut out as the bytes a request would carry. Left out when the data was
# vendored (76 distinct inputs), because the WHATWG parser changes the input
# before it reads the host, or because the host is not in the input:
#   32 userinfo in the authority (WHATWG splits at the last "@"), e.g.
#      "http://user:pass@foo:21/bar;par?b#c", "https://@test@test@example:800/",
#      "wss://joe: !\"$%&'()*+,-.:;<=>@[]^_`{|}~@host/";
#   33 no "//" after the scheme: relative to a base, or slashes supplied by
#      WHATWG ("http:foo.com", "http:/example.com/", "http:\\\\foo.com\\",
#      "http:[61:27]/:foo", "http:@www.example.com", "http:");
#    5 tab, CR or LF in the authority, which WHATWG removes
#      ("http://example\t.\norg", "http://f:\n/c", "http://ho\tst/",
#      "http://ho\nst/", "http://ho\rst/");
#    3 a backslash ends the authority (a "/" to WHATWG, not to RFC 3986):
#      "http://a:b@c\\", "ws://a@b\\c", "http://example.com\\\\foo\\\\bar";
#    2 an empty authority: "http://?", "http://#";
#    1 leading C0 controls and spaces, which WHATWG strips:
#      "\x00\x1b\x04\x12 http://example.com/\x1f \r ".

_WPT: dict[str, Any] = json.loads((DATA / "wpt_url_hosts.json").read_text("utf-8"))
WPT_ENTRIES: list[dict[str, Any]] = _WPT["entries"]
_AUTHORITY_END = re.compile(r"[/?#\\]")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}  # WHATWG "special schemes"


def wpt_authority(url: str) -> tuple[str, bytes]:
    """The scheme and the raw ``host[:port]`` of a vendored entry's input."""
    scheme, sep, rest = url.partition("://")
    assert sep, url
    assert scheme.lower() in DEFAULT_PORTS, url
    end = _AUTHORITY_END.search(rest)
    authority = rest if end is None else rest[: end.start()]
    assert authority, url
    assert not any(char in authority for char in "@\t\n\r"), url
    assert end is None or rest[end.start()] != "\\", url
    return scheme.lower(), authority.encode()


# Hosts that the WHATWG parser accepts and parse_host refuses, each with the
# reason. A new disagreement, or one that goes away, fails the test.
UPPER_DISALLOWED = "A-label of disallowed code points, not lower case (WHATWG passes ASCII through)"
WPT_DISAGREEMENTS: dict[bytes, str] = {
    b"f:": "empty port (WHATWG drops it)",
    b"f:0": "port 0, which names no service (WHATWG keeps it)",
    b"f:00000000000000": "leading zero port",
    b"f:00000000000000000000080": "leading zero port",
    b"192.0x00A80001": "IPv4 number, hex part (WHATWG reads 192.168.0.1)",
    b"0x.0x.0": "IPv4 number, empty hex parts (WHATWG reads 0.0.0.0)",
    b"0x.0x.0x.0x": "IPv4 number, empty hex parts (WHATWG reads 0.0.0.0)",
    b"00.00.00.00": "IPv4 number, octal parts (WHATWG reads 0.0.0.0)",
    b"0000000000000000000000000000000000000000177.0.0.1": "IPv4 number, octal part",
    b"192.168.257": "IPv4 number, three parts (WHATWG reads 192.168.1.1)",
    b"192.168.257.": "IPv4 number, three parts and a dot",
    b"256": "IPv4 number, one part (WHATWG reads 0.0.1.0)",
    b"999999999": "IPv4 number, one part",
    b"999999999.": "IPv4 number, one part and a dot",
    b"4294967295": "IPv4 number, one part (WHATWG reads 255.255.255.255)",
    b"0xffffffff": "IPv4 number, one hex part",
    b"1.2.3.4.": "trailing dot after IPv4 (WHATWG drops it)",
    b"%30%78%63%30%2e%30%32%35%30.01": "WHATWG percent-decodes (to an IPv4 number)",
    b"%30%78%63%30%2e%30%32%35%30.01%2e": "WHATWG percent-decodes (to an IPv4 number)",
    b"%e2%98%83": "WHATWG percent-decodes and maps IDNA",
    b"a%C2%ADb": "WHATWG percent-decodes and maps IDNA (drops a soft hyphen)",
    "GOO\u200b\u2060\ufeffgoo.com".encode(): "WHATWG maps IDNA (drops zero-width characters)",
    "www.foo\u3002bar.com".encode(): "WHATWG maps IDNA (ideographic full stop)",
    "\uff27\uff4f.com".encode(): "WHATWG maps IDNA (full-width letters)",
    "\u4f60\u597d\u4f60\u597d".encode(): "WHATWG maps IDNA (U-label)",
    "fa\u00df.ExAmPlE".encode(): "WHATWG maps IDNA (U-label)",
    "\uff10\uff38\uff43\uff10\uff0e\uff10\uff12\uff15\uff10\uff0e\uff10\uff11".encode(): (
        "WHATWG maps IDNA (full-width digits, to an IPv4 number)"
    ),
    b".": "empty label (WHATWG allows it)",
    b"..": "empty label (WHATWG allows it)",
    b"foo.09..": "empty label (WHATWG allows it)",
    b"!\"$&'()*+,-.;=_`{}~": "not RFC 1123 letters (WHATWG allows them)",
    b"xn--": "not an A-label: nothing after xn-- (WHATWG passes ASCII through)",
    b"a.b.c.xn--pokxncvks": "A-label of disallowed code points (WHATWG passes ASCII through)",
    b"a.b.c.XN--pokxncvks": UPPER_DISALLOWED,
    b"a.b.c.Xn--pokxncvks": UPPER_DISALLOWED,
    b"10.0.0.xn--pokxncvks": "A-label of disallowed code points (WHATWG passes ASCII through)",
    b"10.0.0.XN--pokxncvks": UPPER_DISALLOWED,
    b"10.0.0.xN--pokxncvks": UPPER_DISALLOWED,
}


def _wpt_params(failure: bool) -> list[Any]:
    return [
        pytest.param(entry, id=ascii(entry["input"])[1:-1])
        for entry in WPT_ENTRIES
        if bool(entry.get("failure")) == failure
    ]


def test_wpt_data_header() -> None:
    source = _WPT["source"]
    assert (source["repository"], source["file"]) == (
        "web-platform-tests/wpt",
        "url/resources/urltestdata.json",
    )
    assert (DATA / "LICENSE.wpt").read_text("utf-8").startswith("# The 3-Clause BSD License")
    assert len(WPT_ENTRIES) == 327
    assert sum(1 for entry in WPT_ENTRIES if entry.get("failure")) == 181


@pytest.mark.parametrize("entry", _wpt_params(failure=True))
def test_wpt_failures_refused(entry: dict[str, Any]) -> None:
    """Every host the WHATWG parser refuses, parse_host refuses too."""
    _, raw = wpt_authority(entry["input"])
    rejected_at(raw)


@pytest.mark.parametrize("entry", _wpt_params(failure=False))
def test_wpt_accepted(entry: dict[str, Any]) -> None:
    scheme, raw = wpt_authority(entry["input"])
    if raw in WPT_DISAGREEMENTS:
        rejected_at(raw)
        return
    host = parse_host(raw)
    # Both write one spelling of a host: lower case, IPv6 in RFC 5952 form.
    # WHATWG keeps a name's trailing dot, which urlguard takes off, and never
    # dots an IPv4-mapped address's last 32 bits, as RFC 5952 §5 does.
    if host.name.startswith("["):
        address = ipaddress.IPv6Address(host.name[1:-1])
        if address.ipv4_mapped is None:
            assert host.name == entry["hostname"]
        else:
            assert address == ipaddress.IPv6Address(entry["hostname"][1:-1])
    else:
        assert host.name == entry["hostname"].removesuffix(".")
    # WHATWG leaves out the scheme's default port.
    expected_port = "" if host.port in (None, DEFAULT_PORTS[scheme]) else str(host.port)
    assert entry["port"] == expected_port


def test_wpt_disagreements_current() -> None:
    """Each listed disagreement is a host that WHATWG accepts, and no other."""
    accepted = {wpt_authority(e["input"])[1] for e in WPT_ENTRIES if not e.get("failure")}
    refused = {wpt_authority(e["input"])[1] for e in WPT_ENTRIES if e.get("failure")}
    assert set(WPT_DISAGREEMENTS) <= accepted
    assert not set(WPT_DISAGREEMENTS) & refused


# --- Apache Tomcat's host parser: the hosts its own tests refuse
# (org.apache.tomcat.util.http.parser.TestHttpParserHost, Apache License
# 2.0, the rows that expect IllegalArgumentException). Every one of them is
# refused here too. (Tomcat accepts some that urlguard refuses: "256.0.0.0",
# "0.0.0", "123", which a browser reads as IPv4 numbers.)

TOMCAT_REFUSED = [
    *(".0.0.0", "0..0.0", "0]"),
    *(".", ".:8080", ".foo.bar", "-foo.bar", "foo.bar-", "foo.bar-:8080", "^foo.bar"),
    *("foo-.bar", "f*oo.bar", "foo..bar", "foo.-bar", "foo.^bar", "foo.b*ar"),
    "[1234:5678:90AB:CDEF:1234:127.0.0.1]",
    "[1234:5678:90AB:CDEF:1234:5678:127.0.0.1",
    *("[0::0::0]", "[0:0:G:0:0:0:0:0]", "[00000:0:0:0:0:0:0:0]"),
    "[1234:5678:90AB:CDEF:1234:5678:90AB:]",
    "[1234:5678:90AB:CDEF:1234:5678:90AB:CDEF",
    *("[::127.00.0.1]", "[0::0::127.0.0.1]", "[0:0:G:0:0:0:127.0.0.1]"),
    *("[00000:0:0:0:0:0:127.0.0.1]", "[1::127..0.1]", "[1::127..0.1]:8080"),
    *("[1::127.a.0.1]", "[1::127.a.0.1]:8080", "[1::127.-.0.1]", "[1::127.-.0.1]:8080"),
    *("[::1]'", "[:2222:3333:4444:5555:6666:7777:8888]"),
    *("[1111:::3333:4444:5555:6666:7777:8888]", "::1]"),
    "[1111:2222:3333:4444:5555:6666:7777:8888:9999]",
    "[1111:2222:3333:4444:5555:6666:7777:1.2.3.4]",
    "[1111:2222:3333]",
    *("localhost:x", "localhost:-1", "127.0.0.1:x", "127.0.0.1:-1", "[::1]:x", "[::1]:-1"),
]


@pytest.mark.parametrize("raw", TOMCAT_REFUSED)
def test_tomcat_refusals_refused(raw: str) -> None:
    rejected_at(raw.encode())


# --- Properties.

HOSTISH = st.one_of(
    st.binary(max_size=300),
    st.lists(
        st.sampled_from(
            [
                *(b"a", b"Z", b"0", b"1", b"9", b"x", b"X", b"f", b"-", b"_", b".", b":", b"["),
                *(b"]", b"::", b"xn--", b"XN--", b"%", b"%2e", b"255", b"256", b"0x", b" "),
                *(b"\xef\xbc\x8f", b"@", b"/", b"\x00", b"\xff"),
            ]
        ),
        max_size=80,
    ).map(b"".join),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=40).map(
        lambda body: b"xn--" + body.encode()
    ),
)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(raw=HOSTISH)
@example(raw=b"xn--" + b"9" * 250)
@example(raw=b"xn--99999999999999999999")
@example(raw=b"[" + b"1:" * 150 + b"]")
def test_any_bytes(raw: bytes) -> None:
    """Only InvalidTarget, with an offset inside the input; a Host that
    formats back to itself."""
    try:
        host = parse_host(raw)
    except InvalidTarget as error:
        assert (error.rule, error.component, error.index) == ("bad-host", "host", None)
        assert 0 <= error.offset <= len(raw)
    else:
        assert_round_trip(host)


def assert_round_trip(host: Host) -> None:
    formatted = host.name if host.port is None else f"{host.name}:{host.port}"
    assert parse_host(formatted.encode()) == host


LABEL = st.from_regex(r"[A-Za-z_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?", fullmatch=True).filter(
    lambda label: label[:4].lower() != "xn--"
)
# Labels that may come first but not last (the last one must not be a number).
INNER_LABEL = LABEL | st.sampled_from(["3com", "09", "0x7f", "xn--caf-dma", "XN--nxasmq6b"])
NAME = st.builds(
    lambda inner, last: ".".join([*inner, last]), st.lists(INNER_LABEL, max_size=5), LABEL
)
IPV4 = st.integers(0, 2**32 - 1).map(lambda n: str(ipaddress.IPv4Address(n)))


def rfc5952(number: int) -> str:
    """RFC 5952 text of a 128-bit address, written out here from the RFC (a
    reference for ipaddress and parse_host): §4.1 no leading zeros, §4.2 the
    longest run of two or more zero groups as "::" (the first of equal
    runs), §4.3 lower case, §5 an IPv4-mapped address's last 32 bits dotted."""
    groups = [(number >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    if groups[:6] == [0, 0, 0, 0, 0, 0xFFFF]:
        return "::ffff:" + ".".join(str(byte) for byte in number.to_bytes(16, "big")[12:])
    start, length, i = -1, 1, 0
    while i < 8:
        j = i
        while j < 8 and groups[j] == 0:
            j += 1
        if j - i > length:
            start, length = i, j - i
        i = max(j, i + 1)
    texts = [f"{group:x}" for group in groups]
    if start < 0:
        return ":".join(texts)
    return ":".join(texts[:start]) + "::" + ":".join(texts[start + length :])


@st.composite
def ipv6_spellings(draw: st.DrawFn) -> tuple[str, list[str]]:
    """An IPv6 literal's one spelling and others (RFC 3986 allows them all):
    leading zeros, any run of zero groups as "::" or none, either case, the
    last 32 bits dotted."""
    number = draw(
        st.integers(0, 2**128 - 1)
        | st.integers(0, 2**32 - 1).map(lambda n: 0xFFFF << 32 | n)  # IPv4-mapped
        | st.integers(0, 2**32 - 1)  # IPv4-compatible, and ::1, ::
        | st.integers(0, 2**128 - 1).map(lambda n: n & draw_mask(n))  # runs of zeros
    )
    groups = [(number >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    spellings = []
    for _ in range(4):
        texts = [f"{group:0{draw(st.integers(1, 4))}x}" for group in groups]
        if draw(st.booleans()):  # the last 32 bits as a dotted quad
            texts[6:] = [".".join(str(b) for b in number.to_bytes(16, "big")[12:])]
        zeros = [i for i, text in enumerate(texts) if "." not in text and int(text, 16) == 0]
        text = ":".join(texts)
        compress: bool = draw(st.booleans())
        if zeros and compress:
            first = draw(st.sampled_from(zeros))
            last = first
            while last + 1 in zeros and draw(st.booleans()):
                last += 1
            text = ":".join(texts[:first]) + "::" + ":".join(texts[last + 1 :])
        spellings.append(text.upper() if draw(st.booleans()) else text)
    return f"[{rfc5952(number)}]", [f"[{text}]" for text in spellings]


def draw_mask(number: int) -> int:
    """A mask that clears some 16-bit groups of ``number``, picked from its bits."""
    mask = 0
    for i in range(8):
        if (number >> i) & 1:
            mask |= 0xFFFF << (16 * i)
    return mask


@st.composite
def name_spellings(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A registered name's one spelling (lower case, no trailing dot) and
    others: any case, a trailing dot or none."""
    name = draw(NAME.filter(lambda name: len(name) <= MAX_NAME)).lower()
    spellings = []
    for _ in range(4):
        text = "".join(c.upper() if draw(st.booleans()) else c for c in name)
        spellings.append(text + "." if draw(st.booleans()) else text)
    return name, spellings


HOSTS_SPELLED = name_spellings() | ipv6_spellings() | IPV4.map(lambda text: (text, [text]))


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTS_SPELLED, st.none() | st.integers(1, 65535))
def test_every_spelling_reads_as_the_one(spelled: tuple[str, list[str]], port: int | None) -> None:
    """parse_host reads every spelling of a host as its one spelling; the
    URL builder writes that one, and parse_host reads it back the same."""
    canonical, spellings = spelled
    for text in spellings:
        raw = text if port is None else f"{text}:{port}"
        host = parse_host(raw.encode())
        assert host == Host(canonical, port)
        assert_round_trip(host)
        url = build_url("http", text, port=port)
        authority = url.removeprefix("http://").partition("/")[0]
        assert authority == (canonical if port is None else f"{canonical}:{port}")
        assert parse_host(authority.encode()) == host


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTS_SPELLED, HOSTS_SPELLED, st.none() | st.integers(1, 65535))
def test_an_allow_list_of_one_spelling_allows_every_other(
    spelled: tuple[str, list[str]], other: tuple[str, list[str]], port: int | None
) -> None:
    """An allow-list that lists one spelling allows every spelling of that
    host (on its port, or on any when it names none), and no other host."""
    canonical, spellings = spelled
    listed = spellings[0] if port is None else f"{spellings[0]}:{port}"
    allowed = AllowedHosts([listed], "test")
    for text in spellings:
        assert allowed.allows(
            parse_host(text.encode() if port is None else f"{text}:{port}".encode())
        )
    if other[0] != canonical:
        for text in other[1]:
            assert not allowed.allows(parse_host(text.encode()))
            assert not allowed.allows(Host(other[0], port))


# Letters written left to right, with ASCII ones, so that RFC 5893's bidi
# rule and the contextual rules seldom refuse a random label.
LEFT_TO_RIGHT_LETTERS = st.characters(categories=["Ll", "Lo"], max_codepoint=0xFFFF).filter(
    lambda char: unicodedata.bidirectional(char) == "L"
) | st.sampled_from("abcz09-")


def _a_label(text: str) -> str | None:
    """``text`` as one A-label, if IDNA 2008 allows it as a label."""
    try:
        encoded = idna.encode(text).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return None
    return encoded if encoded.startswith("xn--") and "." not in encoded else None


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(label=st.text(LEFT_TO_RIGHT_LETTERS, min_size=1, max_size=12).map(_a_label).filter(bool))
def test_idna_2008_labels_accepted(label: str | None) -> None:
    """Every label of such letters that IDNA 2008 encodes is accepted, in any case."""
    assert label is not None
    for raw in (label, label.upper()):
        assert parse_host(raw.encode()) == Host(label, None)
