"""The sending side: encoders, builders, URI cleaning and pretty printing.

The expected sets below are typed from the literal text of RFC 3986 §2.2,
§2.3 and §3.3-§3.5 and of "How do you escape a complete URI?" (2012), on
purpose: the code derives them from ``grammar`` by set algebra, the tests
check the result against the RFC.
"""

from __future__ import annotations

import doctest
import re
import string
from collections.abc import Callable
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urlguard
from urlguard._url import encode as _encode
from urlguard._url import grammar as _grammar
from urlguard._url.encode import (
    build_target,
    build_url,
    clean_uri,
    encode_fragment,
    encode_path_segment,
    encode_query_name,
    encode_query_value,
    pretty_uri,
)

# -- the RFC's literal sets ---------------------------------------------------

UNRESERVED = string.ascii_letters + string.digits + "-._~"  # RFC 3986 §2.3
GEN_DELIMS = ":/?#[]@"  # RFC 3986 §2.2
SUB_DELIMS = "!$&'()*+,;="  # RFC 3986 §2.2
RESERVED = GEN_DELIMS + SUB_DELIMS
PCHAR = UNRESERVED + SUB_DELIMS + ":@"  # RFC 3986 §3.3 (without pct-encoded)

PATH_SAFE = PCHAR.replace(";", "")
VALUE_SAFE = UNRESERVED + "!$'()*,;=" + ":@/?"  # query minus & + # %
NAME_SAFE = VALUE_SAFE.replace("=", "")
FRAGMENT_SAFE = PCHAR + "/?"  # RFC 3986 §3.5
# "How do you escape a complete URI?", on RFC 3986: the illegal characters,
# escaped by cleaning; the rest
# of ASCII is kept.
ILLEGAL_PRINTABLE = ' "<>\\^`{|}'
CLEAN_KEEP = UNRESERVED + RESERVED + "%"
PRETTY_ASCII = UNRESERVED + ILLEGAL_PRINTABLE

ASCII = [chr(c) for c in range(128)]
Encoder = Callable[..., str]
HYPOTHESIS = settings(deadline=None)


def chars(text: str) -> frozenset[int]:
    return frozenset(text.encode("ascii"))


@pytest.mark.parametrize(
    ("derived", "literal"),
    [
        pytest.param(_encode.PATH_SEGMENT_SAFE, PATH_SAFE, id="path segment"),
        pytest.param(_encode.QUERY_NAME_SAFE, NAME_SAFE, id="query name"),
        pytest.param(_encode.QUERY_VALUE_SAFE, VALUE_SAFE, id="query value"),
        pytest.param(_encode.FRAGMENT_SAFE, FRAGMENT_SAFE, id="fragment"),
        pytest.param(_encode.CLEAN_KEEP, CLEAN_KEEP, id="clean keeps"),
        pytest.param(_encode.PRETTY_ASCII, PRETTY_ASCII, id="pretty decodes"),
    ],
)
def test_safe_sets_match_the_rfc_text(derived: frozenset[int], literal: str) -> None:
    assert derived == chars(literal)


def test_module_examples_run() -> None:
    """The docstrings' examples are part of the contract."""
    result = doctest.testmod(_encode)
    assert result.attempted > 10
    assert result.failed == 0


# -- encoders: every ASCII character -------------------------------------------


def escape(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode())


@pytest.mark.parametrize(
    ("encode", "safe"),
    [
        pytest.param(encode_path_segment, PATH_SAFE, id="path segment"),
        pytest.param(encode_query_name, NAME_SAFE, id="query name"),
        pytest.param(encode_fragment, FRAGMENT_SAFE, id="fragment"),
    ],
)
@pytest.mark.parametrize("char", ASCII, ids=[f"0x{c:02X}" for c in range(128)])
def test_every_ascii_character(encode: Encoder, safe: str, char: str) -> None:
    expected = char if char in safe else escape(char)
    if encode is encode_query_name and char == " ":
        expected = "+"
    assert encode(char) == expected


@pytest.mark.parametrize("char", ASCII, ids=[f"0x{c:02X}" for c in range(128)])
def test_every_ascii_character_in_a_query_value(char: str) -> None:
    plus = "+" if char == " " else (char if char in VALUE_SAFE else escape(char))
    assert encode_query_value(char) == plus
    assert encode_query_value(char, space="%20") == (char if char in VALUE_SAFE else escape(char))


# -- encoders: truth tables ------------------------------------------------------

SEGMENT_CASES = [
    pytest.param("", "", id="empty"),
    pytest.param(UNRESERVED, UNRESERVED, id="unreserved raw"),
    pytest.param("!$&'()*+,=:@", "!$&'()*+,=:@", id="sub-delims except ; and : @ raw"),
    pytest.param(";", "%3B", id="semicolon encoded (path_params=split)"),
    pytest.param("/", "%2F", id="slash"),
    pytest.param("?#", "%3F%23", id="question mark and hash"),
    pytest.param("%", "%25", id="percent"),
    pytest.param("%41", "%2541", id="never guesses already encoded"),
    pytest.param("%2F", "%252F", id="encoded slash stays data"),
    pytest.param("[]", "%5B%5D", id="brackets"),
    pytest.param(' "<>\\^`{|}', "%20%22%3C%3E%5C%5E%60%7B%7C%7D", id="RFC-illegal printable"),
    pytest.param("\x00\t\n\r\x1f\x7f", "%00%09%0A%0D%1F%7F", id="C0 controls and DEL"),
    pytest.param("\x80\x9f", "%C2%80%C2%9F", id="C1 controls as UTF-8"),
    pytest.param("é", "%C3%A9", id="two-byte UTF-8"),
    pytest.param("€", "%E2%82%AC", id="three-byte UTF-8"),
    pytest.param("😀", "%F0%9F%98%80", id="four-byte UTF-8"),
    pytest.param("起司堡", "%E8%B5%B7%E5%8F%B8%E5%A0%A1", id="CJK"),
    pytest.param("blue+light blue", "blue+light%20blue", id="article: blue+light blue in a path"),
    pytest.param("a/b?c", "a%2Fb%3Fc", id="article: a/b?c as one segment"),
    pytest.param(
        "to_be_or_not_to_be?.jpg",
        "to_be_or_not_to_be%3F.jpg",
        id="article: to_be_or_not_to_be?.jpg",
    ),
    pytest.param(".", ".", id="dot stays a dot (no encoding helps)"),
]


@pytest.mark.parametrize(("text", "expected"), SEGMENT_CASES)
def test_encode_path_segment(text: str, expected: str) -> None:
    assert encode_path_segment(text) == expected


VALUE_CASES = [
    pytest.param("", "", "", id="empty"),
    pytest.param(
        "blue+light blue",
        "blue%2Blight+blue",
        "blue%2Blight%20blue",
        id="article: blue+light blue by part",
    ),
    pytest.param("a&b==c", "a%26b==c", "a%26b==c", id="article: a&b==c"),
    pytest.param("#%", "%23%25", "%23%25", id="hash and percent"),
    pytest.param("%26", "%2526", "%2526", id="never guesses already encoded"),
    pytest.param("/?:@", "/?:@", "/?:@", id="slash question colon at raw"),
    pytest.param("!$'()*,;=", "!$'()*,;=", "!$'()*,;=", id="harmless sub-delims raw"),
    pytest.param(
        "http://example.com/news#funny",
        "http://example.com/news%23funny",
        "http://example.com/news%23funny",
        id="article: redirect with %23",
    ),
    pytest.param("[]\\^`{|}", "%5B%5D%5C%5E%60%7B%7C%7D", "%5B%5D%5C%5E%60%7B%7C%7D", id="illegal"),
    pytest.param("Ødegård", "%C3%98deg%C3%A5rd", "%C3%98deg%C3%A5rd", id="UTF-8"),
    pytest.param("\r\n", "%0D%0A", "%0D%0A", id="CR LF"),
]


@pytest.mark.parametrize(("text", "plus", "pct20"), VALUE_CASES)
def test_encode_query_value(text: str, plus: str, pct20: str) -> None:
    assert encode_query_value(text) == plus
    assert encode_query_value(text, space="+") == plus
    assert encode_query_value(text, space="%20") == pct20


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a=b", "a%3Db", id="equals encoded in a name"),
        pytest.param("a&b", "a%26b", id="ampersand"),
        pytest.param("a+b c", "a%2Bb+c", id="plus and space"),
        pytest.param("q[]", "q%5B%5D", id="brackets"),
        pytest.param("caf\u00e9", "caf%C3%A9", id="UTF-8"),
    ],
)
def test_encode_query_name(text: str, expected: str) -> None:
    assert encode_query_name(text) == expected


def test_encode_query_name_space_option() -> None:
    assert encode_query_name("a b", space="%20") == "a%20b"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", "", id="empty"),
        pytest.param(
            "/?:@-._~!$&'()*+,;=", "/?:@-._~!$&'()*+,;=", id="article: what a fragment keeps raw"
        ),
        pytest.param("#", "%23", id="hash"),
        pytest.param("%23", "%2523", id="never guesses"),
        pytest.param("Section 2", "Section%202", id="space"),
        pytest.param("\u202e", "%E2%80%AE", id="bidi control as UTF-8"),
    ],
)
def test_encode_fragment(text: str, expected: str) -> None:
    assert encode_fragment(text) == expected


@pytest.mark.parametrize("space", ["", " ", "%2B", "%20 ", "+ ", None, 1])
def test_space_must_be_plus_or_pct20(space: object) -> None:
    with pytest.raises(ValueError, match="space"):
        encode_query_value("a b", space=space)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="space"):
        encode_query_name("a b", space=space)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="space"):
        build_target([""], [("a", "b")], space=space)  # type: ignore[arg-type]


ENCODERS = [
    pytest.param(encode_path_segment, id="path segment"),
    pytest.param(encode_query_name, id="query name"),
    pytest.param(encode_query_value, id="query value"),
    pytest.param(encode_fragment, id="fragment"),
    pytest.param(clean_uri, id="clean"),
]


@pytest.mark.parametrize("encode", ENCODERS)
def test_lone_surrogate_is_a_value_error_without_the_input(encode: Encoder) -> None:
    with pytest.raises(ValueError, match="surrogate at index 6") as info:
        encode("secret\udc80")
    assert "secret" not in str(info.value)


@pytest.mark.parametrize("encode", [*ENCODERS, pytest.param(pretty_uri, id="pretty")])
@pytest.mark.parametrize("value", [b"abc", None, 1])
def test_non_text_is_a_type_error(encode: Encoder, value: object) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        encode(value)


# -- build_target ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segments", "query", "expected"),
    [
        pytest.param([""], (), "/", id="root"),
        pytest.param(("",), {}, "/", id="root, empty mapping"),
        pytest.param(["a"], (), "/a", id="one segment"),
        pytest.param(["a", ""], (), "/a/", id="trailing slash"),
        pytest.param(["a", "", "b"], (), "/a//b", id="empty inner segment is the caller's"),
        pytest.param(
            ["blue+light blue"],
            [("blue+light blue", "blue+light blue")],
            "/blue+light%20blue?blue%2Blight+blue=blue%2Blight+blue",
            id="article: blue+light blue by part",
        ),
        pytest.param(
            [""], {"query": "a&b==c"}, "/?query=a%26b==c", id="article: a&b==c from a mapping"
        ),
        pytest.param(["a/b?c"], (), "/a%2Fb%3Fc", id="article: a/b?c as one segment"),
        pytest.param([""], [("a", "1"), ("a", "2"), ("b", "")], "/?a=1&a=2&b=", id="pairs"),
        pytest.param([""], [("", "")], "/?=", id="empty name and value"),
        pytest.param(iter(["x", "y"]), iter([("k", "v")]), "/x/y?k=v", id="iterators"),
        pytest.param(
            ["caf\u00e9"],
            [("q", "\u8d77\u53f8\u5821")],
            "/caf%C3%A9?q=%E8%B5%B7%E5%8F%B8%E5%A0%A1",
            id="UTF-8",
        ),
        pytest.param(["a;b"], [("a=b", "c;d")], "/a%3Bb?a%3Db=c;d", id="semicolons and equals"),
    ],
)
def test_build_target(segments: list[str], query: _encode.Query, expected: str) -> None:
    assert build_target(segments, query) == expected


def test_build_target_space() -> None:
    assert build_target(["a b"], [("c d", "e f")], space="%20") == "/a%20b?c%20d=e%20f"


@pytest.mark.parametrize(
    ("segments", "query", "error", "message"),
    [
        pytest.param([], (), ValueError, "must not be empty", id="no segments"),
        pytest.param(["."], (), ValueError, "dot-segment", id="dot"),
        pytest.param(["a", ".."], (), ValueError, "segment 1 is a dot-segment", id="dot dot"),
        pytest.param(["", "evil.example"], (), ValueError, "'//'", id="network-path lookalike"),
        pytest.param("abc", (), TypeError, "single string", id="segments as a str"),
        pytest.param(b"abc", (), TypeError, "single string", id="segments as bytes"),
        pytest.param([""], "a=b", TypeError, "pairs", id="query as a str"),
        pytest.param([b"a"], (), TypeError, "path segment must be a str", id="bytes segment"),
        pytest.param([""], [("a", 1)], TypeError, "query value must be a str", id="int value"),
    ],
)
def test_build_target_refuses(
    segments: list[str], query: _encode.Query, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        build_target(segments, query)


# -- build_url -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "host", "port", "expected"),
    [
        pytest.param("http", "example.com", None, "http://example.com/", id="reg-name"),
        pytest.param("HTTPS", "Example.COM", None, "https://example.com/", id="case"),
        pytest.param("https", "example.com.", 443, "https://example.com:443/", id="port, FQDN"),
        pytest.param("http", "a-b_c", 1, "http://a-b_c:1/", id="hyphen, underscore, port 1"),
        pytest.param("http", "0:0::1", None, "http://[::1]/", id="IPv6, one spelling"),
        pytest.param(
            "http", "::ffff:7f00:1", None, "http://[::ffff:127.0.0.1]/", id="IPv4-mapped, RFC 5952"
        ),
        pytest.param("http", "127.0.0.1", 65535, "http://127.0.0.1:65535/", id="IPv4"),
        pytest.param("http", "::1", None, "http://[::1]/", id="IPv6 gets brackets"),
        pytest.param("http", "[::1]", 8080, "http://[::1]:8080/", id="IPv6 in brackets"),
        pytest.param("http", "2001:DB8:0:0::1", None, "http://[2001:db8::1]/", id="IPv6 canonical"),
        pytest.param("http", "bücher.example", None, "http://xn--bcher-kva.example/", id="IDNA"),
        pytest.param("http", "BÜCHER.example", None, "http://xn--bcher-kva.example/", id="UTS 46"),
        pytest.param(
            "http",
            "\u8d77\u53f8.example",
            None,
            "http://xn--sprx15k.example/",
            id="IDNA CJK (stdlib IDNA 2003 codec agrees)",
        ),
        pytest.param(
            "http",
            "\uff11.\uff12.\uff13.\uff14",
            None,
            "http://1.2.3.4/",
            id="full-width digits map to IPv4",
        ),
    ],
)
def test_build_url_hosts(scheme: str, host: str, port: int | None, expected: str) -> None:
    assert build_url(scheme, host, port=port) == expected


def test_build_url_pieces() -> None:
    url = build_url(
        "https",
        "example.com",
        ["blue+light blue", "a/b?c", ""],
        [("q", "a&b==c"), ("r", "x y")],
        fragment="sec 2#x",
    )
    assert url == "https://example.com/blue+light%20blue/a%2Fb%3Fc/?q=a%26b==c&r=x+y#sec%202%23x"
    assert build_url("http", "h", [""], {"a": "b c"}, space="%20") == "http://h/?a=b%20c"
    assert build_url("http", "h", ["", "x"]) == "http://h//x"
    assert build_url("http", "h", fragment="") == "http://h/#"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param({"scheme": "ftp"}, ValueError, "scheme", id="ftp"),
        pytest.param({"scheme": ""}, ValueError, "scheme", id="empty scheme"),
        pytest.param({"scheme": "http:"}, ValueError, "scheme", id="scheme with colon"),
        pytest.param({"host": ""}, ValueError, "empty", id="empty host"),
        pytest.param({"host": "user@evil.example"}, ValueError, "not a name", id="userinfo"),
        pytest.param({"host": "h:80"}, ValueError, "port", id="port in host"),
        pytest.param({"host": "h/x"}, ValueError, "not a name", id="slash in host"),
        pytest.param({"host": "a%41"}, ValueError, "'%'", id="percent in host"),
        pytest.param({"host": "a b"}, ValueError, "not a name", id="space in host"),
        pytest.param({"host": "a\r\nb"}, ValueError, "not a name", id="CR LF in host"),
        pytest.param({"host": "a~b"}, ValueError, "not a name", id="tilde: not RFC 1123"),
        pytest.param({"host": "a!b"}, ValueError, "not a name", id="sub-delim: not RFC 1123"),
        pytest.param({"host": "xn--zz"}, ValueError, "A-label", id="not an A-label"),
        pytest.param({"host": "1.2.3"}, ValueError, "IPv4", id="short IPv4"),
        pytest.param({"host": "0x7f.1"}, ValueError, "IPv4", id="hex IPv4"),
        pytest.param({"host": "example.0X1f"}, ValueError, "IPv4", id="hex last label"),
        pytest.param({"host": "01.2.3.4"}, ValueError, "IPv4", id="leading zero IPv4"),
        pytest.param({"host": "256.1.1.1"}, ValueError, "IPv4", id="IPv4 out of range"),
        pytest.param({"host": "example.123."}, ValueError, "IPv4", id="numeric last label"),
        pytest.param({"host": "[1.2.3.4]"}, ValueError, "IPv6", id="IPv4 in brackets"),
        pytest.param({"host": "[example.com]"}, ValueError, "IPv6", id="name in brackets"),
        pytest.param({"host": "fe80::1%eth0"}, ValueError, "zone", id="IPv6 zone"),
        pytest.param({"host": "[fe80::1%25eth0]"}, ValueError, "IPv6", id="IPv6 zone escaped"),
        pytest.param({"host": "ex\u00e4 mple"}, ValueError, "internationalised", id="bad IDNA"),
        pytest.param({"host": "a..\u00fc"}, ValueError, "internationalised", id="empty label"),
        pytest.param({"host": b"h"}, TypeError, "host must be a str", id="bytes host"),
        pytest.param({"port": 0}, ValueError, "port", id="port 0"),
        pytest.param({"port": 65536}, ValueError, "port", id="port too big"),
        pytest.param({"port": -1}, ValueError, "port", id="negative port"),
        pytest.param({"port": True}, TypeError, "port", id="bool port"),
        pytest.param({"port": "80"}, TypeError, "port", id="str port"),
        pytest.param({"segments": ["."]}, ValueError, "dot-segment", id="dot segment"),
        pytest.param({"segments": []}, ValueError, "empty", id="no segments"),
    ],
)
def test_build_url_refuses(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    arguments: dict[str, object] = {"scheme": "http", "host": "example.com", **kwargs}
    with pytest.raises(error, match=message) as info:
        build_url(**arguments)  # type: ignore[arg-type]
    host = arguments["host"]
    if isinstance(host, str) and host:
        assert host not in str(info.value)


# -- clean_uri ---------------------------------------------------------------------

HELEN = "http://example.com/admin/login?name=Helen Ødegård&gender=f"
HELEN_CLEAN = "http://example.com/admin/login?name=Helen%20%C3%98deg%C3%A5rd&gender=f"
IPV6 = "http://[2001:db8:85a3:8d3:1319:8a2e:370:7348]/admin/login?name=Helen Ødegård&gender=f"
IPV6_CLEAN = (
    "http://[2001:db8:85a3:8d3:1319:8a2e:370:7348]/admin/login"
    "?name=Helen%20%C3%98deg%C3%A5rd&gender=f"
)
REDIRECT = (
    "http://example.com/admin/login?redirect=http://example.com/news%23funny"
    "&name=Helen Ødegård&gender=f"
)
REDIRECT_CLEAN = (
    "http://example.com/admin/login?redirect=http://example.com/news%23funny"
    "&name=Helen%20%C3%98deg%C3%A5rd&gender=f"
)

CLEAN_CASES = [
    pytest.param(HELEN, HELEN_CLEAN, id="article: Helen Ødegård"),
    pytest.param(REDIRECT, REDIRECT_CLEAN, id="article: valid %23 not double-escaped"),
    pytest.param(IPV6, IPV6_CLEAN, id="article: IPv6 brackets not escaped"),
    pytest.param(
        "http://example.com/news#funny&x",
        "http://example.com/news#funny&x",
        id="hash is never guessed at",
    ),
    pytest.param(RESERVED + UNRESERVED, RESERVED + UNRESERVED, id="reserved and unreserved kept"),
    pytest.param(ILLEGAL_PRINTABLE, "%20%22%3C%3E%5C%5E%60%7B%7C%7D", id="illegal printable"),
    pytest.param("\x00\t\n\r\x1f\x7f", "%00%09%0A%0D%1F%7F", id="controls"),
    pytest.param("\x85\u202e\u2028", "%C2%85%E2%80%AE%E2%80%A8", id="C1, bidi, LS as UTF-8"),
    pytest.param("😀", "%F0%9F%98%80", id="four-byte"),
    pytest.param("%41%e9%2F", "%41%e9%2F", id="valid escapes kept, either case"),
    pytest.param("100%", "100%25", id="trailing percent"),
    pytest.param("%zz%4", "%25zz%254", id="malformed escapes"),
    pytest.param("%%41", "%25%41", id="stray then valid"),
    pytest.param("%\u00e9", "%25%C3%A9", id="stray before non-ASCII"),
    pytest.param("% 1", "%25%201", id="stray before space"),
    pytest.param("%A é", "%25A%20%C3%A9", id="one hex digit then space"),
    pytest.param("%u00E9", "%25u00E9", id="IIS %u"),
    pytest.param("", "", id="empty"),
]


@pytest.mark.parametrize(("uri", "expected"), CLEAN_CASES)
def test_clean_uri(uri: str, expected: str) -> None:
    assert clean_uri(uri) == expected
    assert clean_uri(expected) == expected


# -- pretty_uri ---------------------------------------------------------------------

PRETTY_CASES = [
    pytest.param(HELEN_CLEAN, HELEN, id="article: Helen Ødegård"),
    pytest.param(REDIRECT_CLEAN, REDIRECT, id="article: %23 stays"),
    pytest.param(IPV6_CLEAN, IPV6, id="article: IPv6"),
    pytest.param("%41%7e%2D", "A~-", id="unreserved decoded"),
    pytest.param("%20%22%3C%3E%5C%5E%60%7B%7C%7D", ILLEGAL_PRINTABLE, id="illegal printable"),
    pytest.param(
        "".join(escape(c) for c in RESERVED),
        "".join(escape(c) for c in RESERVED),
        id="reserved stay escaped",
    ),
    pytest.param("%2f%3f%23", "%2f%3f%23", id="reserved keep lower-case hex"),
    pytest.param("%25%2541", "%25%2541", id="percent stays"),
    pytest.param("%00%09%0A%0d%1F%7F", "%00%09%0A%0d%1F%7F", id="C0 controls and DEL stay"),
    pytest.param("%C2%80%C2%85%c2%9f", "%C2%80%C2%85%c2%9f", id="C1 controls stay"),
    pytest.param("%C2%A0%C3%A9", "\u00a0é", id="U+00A0 and é decoded"),
    pytest.param("%c3%a9", "é", id="lower-case hex decoded"),
    pytest.param("%D8%9C", "%D8%9C", id="ARABIC LETTER MARK"),
    pytest.param("%E2%80%8E%E2%80%8F", "%E2%80%8E%E2%80%8F", id="LRM RLM"),
    pytest.param("%E2%80%A8%E2%80%A9", "%E2%80%A8%E2%80%A9", id="line and paragraph separators"),
    pytest.param("%E2%80%AA%E2%80%AE", "%E2%80%AA%E2%80%AE", id="LRE RLO"),
    pytest.param("%E2%81%A6%E2%81%A9", "%E2%81%A6%E2%81%A9", id="LRI PDI"),
    pytest.param("%EF%B7%90%EF%B7%AF", "%EF%B7%90%EF%B7%AF", id="noncharacters FDD0 FDEF"),
    pytest.param("%EF%BF%BE%F0%9F%BF%BF", "%EF%BF%BE%F0%9F%BF%BF", id="noncharacters xFFFE"),
    pytest.param("%F4%8F%BF%BF", "%F4%8F%BF%BF", id="U+10FFFF noncharacter"),
    pytest.param("%F4%8F%BF%BD", "\U0010fffd", id="U+10FFFD decoded"),
    pytest.param("%E2%80%AB%E2%80%AC%E2%80%AD", "%E2%80%AB%E2%80%AC%E2%80%AD", id="RLE PDF LRO"),
    pytest.param("%E2%80%8D", "\u200d", id="ZWJ decoded (not in the forbidden list)"),
    pytest.param("%C3", "%C3", id="truncated"),
    pytest.param("%C3x%A9", "%C3x%A9", id="split by a raw character"),
    pytest.param("%C0%AF", "%C0%AF", id="overlong"),
    pytest.param("%ED%A0%80", "%ED%A0%80", id="surrogate"),
    pytest.param("%F4%90%80%80", "%F4%90%80%80", id="above U+10FFFF"),
    pytest.param("%ff%FE", "%ff%FE", id="FF FE keep their case"),
    pytest.param("%C3%A9%ff%C3%A9%41", "é%ffé" + "A", id="invalid byte inside a run"),
    pytest.param("%E2%80%AEx%E2%82%AC", "%E2%80%AEx€", id="RLO stays, euro decoded"),
    pytest.param("/a b\u00e9", "/a b\u00e9", id="raw characters pass through"),
    pytest.param("%", "%", id="stray percent untouched"),
    pytest.param("", "", id="empty"),
]


@pytest.mark.parametrize(("uri", "expected"), PRETTY_CASES)
def test_pretty_uri(uri: str, expected: str) -> None:
    assert pretty_uri(uri) == expected


# -- properties --------------------------------------------------------------------

FORBIDDEN = _grammar.FORBIDDEN_RANGES
ESCAPE = re.compile("%[0-9A-Fa-f]{2}")
INTERESTING = "%/\\;+&=?#. :@2F5Ceé€😀\u200b\u00a0\u202e"


def allowed_char(char: str) -> bool:
    """Not forbidden by the default policy (docs/rules.md, forbidden-char)."""
    code = ord(char)
    return not any(lo <= code <= hi for lo, hi in FORBIDDEN)


any_char = st.one_of(st.characters(codec="utf-8"), st.sampled_from(INTERESTING))
text_char = any_char.filter(allowed_char)
text = st.text(text_char, max_size=12)
segment = st.text(text_char.filter(lambda c: c not in "/\\"), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..") and ESCAPE.search(s) is None
)


# Default policy: no empty segment except the last one.
def _ending(names: list[str], trailing_slash: bool) -> list[str]:
    """The segments of a path: ``names``, and an empty last one for a trailing
    slash (or alone, for ``/``)."""
    return [*names, ""] if trailing_slash or not names else names


segments = st.builds(_ending, st.lists(segment, max_size=8), st.booleans())
pairs = st.lists(st.tuples(text, text), max_size=8)
spaces = st.sampled_from(["+", "%20"])


@HYPOTHESIS
@given(segments, pairs, spaces)
def test_build_target_round_trips(s: list[str], q: list[tuple[str, str]], space: str) -> None:
    target = urlguard.parse_target(build_target(s, q, space=space))  # type: ignore[arg-type]
    assert target.segments == tuple(s)
    assert target.query == tuple(q)


@HYPOTHESIS
@given(segments, st.dictionaries(text, text, max_size=8))
def test_build_target_round_trips_a_mapping(s: list[str], q: dict[str, str]) -> None:
    target = urlguard.parse_target(build_target(s, q))
    assert target.segments == tuple(s)
    assert target.query == tuple(q.items())


ports = st.one_of(st.none(), st.integers(1, 65535))


@HYPOTHESIS
@given(segments, pairs, st.sampled_from(["http", "HTTPS"]), ports)
def test_build_url_round_trips(
    s: list[str], q: list[tuple[str, str]], scheme: str, port: int | None
) -> None:
    url = build_url(scheme, "bücher.example", s, q, port=port, fragment="a#b")
    without_fragment, _, fragment = url.partition("#")
    target = urlguard.parse_target(without_fragment)
    assert target.segments == tuple(s)
    assert target.query == tuple(q)
    host = "xn--bcher-kva.example"
    assert target.authority == host + ("" if port is None else f":{port}")
    split = urlsplit(url)
    assert (split.scheme, split.hostname, split.port) == (scheme.lower(), host, port)
    assert unquote(fragment) == "a#b"


@HYPOTHESIS
@given(segment)
def test_path_segment_output_is_accepted(text: str) -> None:
    encoded = encode_path_segment(text)
    assert urlguard.parse_target("/" + encoded).segments == (text,)
    split = urlguard.parse_target("/" + encoded, urlguard.Policy(path_params="split"))
    assert split.segments == (text,)
    assert split.params == ((),)


@HYPOTHESIS
@given(text, text, spaces, st.booleans())
def test_query_output_is_accepted(name: str, value: str, space: str, plus: bool) -> None:
    if space == "+" and not plus:
        return  # '+' for space needs form semantics on the receiving side
    policy = urlguard.Policy(plus_as_space=plus)
    raw = "/?" + encode_query_name(name, space=space) + "=" + encode_query_value(value, space=space)  # type: ignore[arg-type]
    assert urlguard.parse_target(raw, policy).query == ((name, value),)


@HYPOTHESIS
@given(text)
def test_fragment_output_is_accepted(text: str) -> None:
    encoded = encode_fragment(text)
    # A fragment is never sent; its grammar is the query's (RFC 3986 §3.5),
    # so the query parser must accept every byte of it.
    urlguard.parse_target("/?" + encoded)
    assert unquote(encoded, errors="strict") == text


@HYPOTHESIS
@given(st.text(any_char))
def test_encoders_match_an_independent_quote(text: str) -> None:
    """urllib's quote, with the RFC's literal safe sets, is the oracle."""
    assert encode_path_segment(text) == quote(text, safe=PATH_SAFE)
    assert encode_query_name(text) == quote_plus(text, safe=NAME_SAFE)
    assert encode_query_name(text, space="%20") == quote(text, safe=NAME_SAFE)
    assert encode_query_value(text) == quote_plus(text, safe=VALUE_SAFE)
    assert encode_query_value(text, space="%20") == quote(text, safe=VALUE_SAFE)
    assert encode_fragment(text) == quote(text, safe=FRAGMENT_SAFE)
    assert unquote_plus(encode_query_value(text), errors="strict") == text


# Normalised URIs (the law of "How do you escape a complete URI?"): raw legal
# characters, escapes with
# upper-case hex, and unreserved characters never escaped.
raw_legal = st.sampled_from(RESERVED + UNRESERVED)
escaped_bytes = st.binary(min_size=1, max_size=4).map(
    lambda data: "".join(chr(b) if chr(b) in UNRESERVED else f"%{b:02X}" for b in data)
)
escaped_text = st.text(any_char, min_size=1, max_size=3).map(lambda t: quote(t, safe=RESERVED))
normalised_uri = st.lists(st.one_of(raw_legal, escaped_bytes, escaped_text), max_size=20).map(
    "".join
)


@HYPOTHESIS
@given(normalised_uri)
def test_clean_undoes_pretty(uri: str) -> None:
    assert clean_uri(pretty_uri(uri)) == uri


@HYPOTHESIS
@given(normalised_uri)
def test_pretty_never_reveals_what_must_stay_escaped(uri: str) -> None:
    """Reserved characters, '%', controls, bidi controls and noncharacters
    appear in the pretty form only where they were already raw."""

    def must_stay_escaped(char: str) -> bool:
        return (char.isascii() and char not in PRETTY_ASCII) or not allowed_char(char)

    shown = [c for c in ESCAPE.sub("", pretty_uri(uri)) if must_stay_escaped(c)]
    raw = [c for c in ESCAPE.sub("", uri) if must_stay_escaped(c)]
    assert shown == raw


@HYPOTHESIS
@given(st.text(any_char))
def test_clean_is_idempotent_and_valid(text: str) -> None:
    cleaned = clean_uri(text)
    assert clean_uri(cleaned) == cleaned
    assert set(cleaned) <= set(CLEAN_KEEP)
    assert re.search("%(?![0-9A-Fa-f]{2})", cleaned) is None


@HYPOTHESIS
@given(st.text(any_char.filter(lambda c: c != "%")))
def test_clean_matches_quote_with_reserved_safe(text: str) -> None:
    """Without '%', cleaning is quote() with the reserved set safe (as the
    article on escaping a complete URI says of urllib.quote)."""
    assert clean_uri(text) == quote(text, safe=RESERVED)
