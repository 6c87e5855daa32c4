"""The sending side: encoders per component, target and URL builders, URI
cleaning and pretty printing.

Security model. A URL is built by encoding each decoded piece on its own and
only then joining the pieces with delimiters, the order "How do you escape a
complete URI?" (2012) calls the only correct one: once joined,
nobody can tell a delimiter from data. Each encoder therefore always
escapes the characters that are delimiters in its component ('/' in a path
segment; '&', '+', '#' and, in a name, '=' in the query), so the receiver
splits exactly where the sender joined. Encoders never guess whether their
input is "already encoded": '%' always becomes '%25'. Text is encoded as UTF-8
first (RFC 3987 §3.1) and hex digits are upper case (RFC 3986 §2.1). Every
safe set is derived from :mod:`urlguard._url.grammar`.

    >>> from urlguard import build_target, parse_target
    >>> target = build_target(["blue+light blue", "café"], {"q": "a&b==c"})
    >>> target
    '/blue+light%20blue/caf%C3%A9?q=a%26b==c'
    >>> parse_target(target).segments, parse_target(target).query
    (('blue+light blue', 'café'), (('q', 'a&b==c'),))

URI cleaning and pretty printing (as that article defines them) are not
encoding: they turn a complete URI typed by a person into a valid one and
back, for display only. Never build URIs with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, Literal
from urllib.parse import quote_from_bytes

import idna

from . import grammar as g
from .errors import InvalidTarget
from .host import PORTS, parse_host

Space = Literal["+", "%20"]
Query = Mapping[str, str] | Iterable[tuple[str, str]]

_AMPERSAND: Final = ord("&")
_EQUALS: Final = ord("=")


# -- per-component safe sets (RFC 3986 §3.3-§3.5) ---------------------------
#
# Path segment: pchar, minus ';' so that the output reads back the same when
# the receiver splits matrix parameters (Policy(path_params="split"), as in
# "What every web developer must know about URL encoding"). pchar holds
# neither '/' nor '%', so both are always escaped.
PATH_SEGMENT_SAFE: Final = g.PCHAR - {g.SEMICOLON}
# Query: what the query allows raw, minus '%' (escapes), '&' (pair
# separator), '+' (space under form semantics) and '#' (ends the query).
QUERY_VALUE_SAFE: Final = g.QUERY_RAW - {g.PERCENT, _AMPERSAND, g.PLUS, g.HASH}
# A name also ends at its first '='; a value may keep '=' raw (the example of
# "What every web developer must know about URL encoding": "a&b==c" is sent
# as "a%26b==c").
QUERY_NAME_SAFE: Final = QUERY_VALUE_SAFE - {_EQUALS}
# Fragment: no delimiters inside it; only '%' (and '#', never raw) escaped.
FRAGMENT_SAFE: Final = g.FRAGMENT_RAW - {g.PERCENT, g.HASH}

# URI cleaning escapes exactly the characters RFC 3986 never allows raw
# ("How do you escape a complete URI?", on RFC 3986): space, controls,
# " < > \ ^ ` { | } and non-ASCII.
# Everything else, '%' and every reserved character included, stays raw.
CLEAN_KEEP: Final = g.ALL_ASCII - g.CONTROLS - g.EXCLUDED_PRINTABLE
# Pretty printing decodes, of ASCII, only unreserved characters, space and
# " < > \ ^ ` { | } (the same article); never reserved characters, '%' or
# controls.
PRETTY_ASCII: Final = g.UNRESERVED | g.EXCLUDED_PRINTABLE


# Each encoder is urllib.parse.quote_from_bytes with its component's safe set
# (upper-case hex, RFC 3986 §2.1; its always-safe letters, digits and "_.-~"
# are unreserved, in every set here). '%' is in CLEAN_KEEP only: clean_uri
# mends stray ones afterwards (no escape made here starts with two hex digits).
_PATH_SAFE: Final = g.to_str(PATH_SEGMENT_SAFE)
_NAME_SAFE: Final = g.to_str(QUERY_NAME_SAFE)
_VALUE_SAFE: Final = g.to_str(QUERY_VALUE_SAFE)
_FRAGMENT_SAFE: Final = g.to_str(FRAGMENT_SAFE)
_CLEAN_SAFE: Final = g.to_str(CLEAN_KEEP)

_HEXDIGITS: Final = g.to_str(g.HEXDIG)
_HEX: Final = f"[{_HEXDIGITS}]"
# RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG; any other '%' is a stray.
_STRAY_PERCENT: Final = re.compile(f"%(?!{_HEX}{{2}})")
_ESCAPE_RUN: Final = re.compile(f"(?:%{_HEX}{{2}})+")


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"\\U{lo:08X}-\\U{hi:08X}" for lo, hi in ranges)


def _ranges(chars: frozenset[int]) -> list[tuple[int, int]]:
    return [(c, c) for c in sorted(chars)]


# What pretty printing leaves escaped, as decoded text: ASCII outside
# PRETTY_ASCII, bytes that were not UTF-8 (U+DC80-U+DCFF under the
# "surrogateescape" error handler), and the default forbidden characters
# (controls, bidi controls, line separators, noncharacters).
_KEEP_ESCAPED: Final = re.compile(
    "["
    + _char_class(_ranges(g.ALL_ASCII - PRETTY_ASCII))
    + _char_class([(0xDC80, 0xDCFF)])
    + _char_class(g.FORBIDDEN_RANGES)
    + "]"
)


def _utf8(text: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Lone surrogates have no UTF-8 form (RFC 3629 §3). No input echoed.
        raise ValueError(
            f"{what} contains a lone surrogate at index {exc.start}, which UTF-8 cannot encode"
        ) from None


def _encode(text: str, safe: str, what: str, space: object = "%20") -> str:
    """``text`` as UTF-8, every byte outside ``safe`` escaped; a space as
    ``+`` when ``space`` says so (``+`` itself is never in a query's safe set)."""
    data = _utf8(text, what)
    if space == "%20":
        return quote_from_bytes(data, safe)
    if space == "+":
        return quote_from_bytes(data, safe + " ").replace(" ", "+")
    raise ValueError(f"space must be '+' or '%20', not {space!r}")


def encode_path_segment(text: str) -> str:
    """Percent-encode one decoded path segment.

    Leaves raw only ``pchar`` minus ``;`` (RFC 3986 §3.3): unreserved
    characters, sub-delims other than ``;``, ``:`` and ``@``. ``/``, ``%``,
    ``?``, ``#``, space and everything non-ASCII (as UTF-8) are escaped. ``+``
    stays raw: in a path it means plus. ``.`` and ``..`` have no encoding that
    survives dot-segment removal (RFC 3986 §5.2.4); :func:`build_target`
    refuses them. A segment with ``:`` must not start a relative reference
    (RFC 3986 §4.2); the builders always put ``/`` first.

        >>> encode_path_segment("blue+light blue")
        'blue+light%20blue'
        >>> encode_path_segment("a/b?c")
        'a%2Fb%3Fc'
        >>> encode_path_segment("%41")
        '%2541'
    """
    return _encode(text, _PATH_SAFE, "path segment")


def encode_query_name(text: str, *, space: Space = "+") -> str:
    """Percent-encode one decoded query parameter name.

    Like :func:`encode_query_value`, and ``=`` is escaped too, since a name
    ends at the first ``=``.

        >>> encode_query_name("a=b c")
        'a%3Db+c'
    """
    return _encode(text, _NAME_SAFE, "query name", space)


def encode_query_value(text: str, *, space: Space = "+") -> str:
    """Percent-encode one decoded query parameter value.

    Leaves raw the query characters that carry no meaning in a value (RFC 3986
    §3.4: unreserved, sub-delims, ``:`` ``@`` ``/`` ``?``) and always escapes
    ``&``, ``+``, ``#`` and ``%``. Space becomes ``+`` (form semantics, the
    default) or ``%20`` (``space="%20"``, for receivers that read ``+`` as
    plus); any other ``space`` is a ``ValueError``.

        >>> encode_query_value("blue+light blue")
        'blue%2Blight+blue'
        >>> encode_query_value("a&b==c")
        'a%26b==c'
        >>> encode_query_value("a b", space="%20")
        'a%20b'
    """
    return _encode(text, _VALUE_SAFE, "query value", space)


def encode_fragment(text: str) -> str:
    """Percent-encode a decoded fragment (RFC 3986 §3.5): ``pchar``, ``/`` and
    ``?`` stay raw; ``%``, ``#``, space and non-ASCII are escaped.

        >>> encode_fragment("Section 2/a?b#c")
        'Section%202/a?b%23c'
    """
    return _encode(text, _FRAGMENT_SAFE, "fragment")


def _encode_path(segments: Iterable[str]) -> tuple[list[str], bool]:
    """The encoded segments, and whether the first one is empty."""
    if isinstance(segments, str | bytes):
        raise TypeError("segments must be a sequence of str, not a single string")
    encoded: list[str] = []
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            # RFC 3986 §5.2.4 removes these, and %2E means '.' (§2.3): no
            # encoding carries them, and a receiver normalizing them is how
            # path traversal starts.
            raise ValueError(f"path segment {index} is a dot-segment, which cannot be sent")
        encoded.append(encode_path_segment(segment))
    if not encoded:
        raise ValueError("segments must not be empty: [''] is the path '/'")
    return encoded, encoded[0] == ""


def _encode_query(query: Query, space: Space) -> str:
    if isinstance(query, str | bytes):
        raise TypeError("query must be a mapping or a sequence of (name, value) pairs")
    if space != "+" and space != "%20":
        raise ValueError(f"space must be '+' or '%20', not {space!r}")
    pairs = query.items() if isinstance(query, Mapping) else query
    return "&".join(
        _encode(name, _NAME_SAFE, "query name", space)
        + "="
        + _encode(value, _VALUE_SAFE, "query value", space)
        for name, value in pairs
    )


def build_target(segments: Iterable[str], query: Query = (), *, space: Space = "+") -> str:
    """An origin-form request target (RFC 9112 §3.2.1) from decoded pieces.

    ``segments`` are the decoded path segments (``[""]`` is ``/``; a trailing
    ``""`` is a trailing slash); ``query`` is a mapping or a sequence of
    ``(name, value)`` pairs, left out when empty. Each piece is encoded by its
    component's encoder, so for everything the default :class:`Policy`
    accepts, ``parse_target(build_target(s, q))`` gives back ``tuple(s)`` and
    ``tuple(q)``. Refused with ``ValueError``: no segments, a ``.`` or ``..``
    segment, and an empty first segment followed by others (``//x`` reads as a
    network-path reference to host ``x``, RFC 3986 §4.2).

        >>> build_target(["a/b?c", ""], [("q", "a&b==c"), ("x", "1 2")])
        '/a%2Fb%3Fc/?q=a%26b==c&x=1+2'
        >>> build_target([""])
        '/'
    """
    encoded, first_empty = _encode_path(segments)
    if first_empty and len(encoded) > 1:
        raise ValueError("an empty first segment would start the target with '//'")
    target = "/" + "/".join(encoded)
    encoded_query = _encode_query(query, space)
    return f"{target}?{encoded_query}" if encoded_query else target


def _host(host: str) -> str:
    """``host`` in its one spelling (``urlguard._url.host``): the grammar that
    reads a Host header decides what the builder writes, so every URL built
    here names a host the guard accepts, spelled as ``Target.host`` gives it."""
    if not isinstance(host, str):
        raise TypeError(f"host must be a str, not {type(host).__name__}")
    if not host:
        raise ValueError("host must not be empty (RFC 9110 §4.2.1)")
    if host.count(":") > 1 and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address, written in brackets (RFC 3986 §3.2.2)
    if not host.isascii():
        try:
            # UTS 46 processing (case folding, width mapping), then IDNA 2008,
            # as browsers do.
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as exc:  # a UnicodeError, hence ValueError
            raise ValueError("host is not a valid internationalised domain name") from exc
    try:
        parsed = parse_host(host.encode("ascii"))
    except InvalidTarget:
        kind = "[" if host.startswith("[") else "%" if "%" in host else ""
        raise ValueError(_HOST_REFUSED[kind]) from None
    if parsed.port is not None:
        raise ValueError("host must not hold a port: pass port=")
    return parsed.name


_HOST_REFUSED: Final = {
    "[": "host is not an IPv6 address, or has an IPv6 zone identifier "
    "(RFC 3986 §3.2.2; zone identifiers are not allowed in http(s) URLs)",
    "%": "host holds '%': the builder takes decoded names, never escapes",
    "": "host is not a name (RFC 1123 labels, valid A-labels), a dotted-quad IPv4 "
    "address or an IPv6 address (RFC 3986 §3.2.2); a last label that is a number "
    "is read as IPv4 by browsers",
}


def _port(port: int | None) -> str:
    if port is None:
        return ""
    if type(port) is not int:
        raise TypeError(f"port must be an int, not {type(port).__name__}")
    if port not in PORTS:
        raise ValueError(f"port must be between 1 and 65535, not {port}")
    return f":{port}"


def build_url(
    scheme: str,
    host: str,
    segments: Iterable[str] = ("",),
    query: Query = (),
    *,
    port: int | None = None,
    fragment: str | None = None,
    space: Space = "+",
) -> str:
    """An ``http`` or ``https`` URL from decoded pieces.

    ``scheme`` is ``http`` or ``https`` in any case (written lower case).
    ``host`` is a name, an IPv4 address, an IPv6 address (with or without
    brackets), or a Unicode name, converted by the ``idna`` package (UTS 46,
    then IDNA 2008); it is read by the same grammar as a Host header and
    written as ``Target.host`` spells it (lower case, no trailing dot, IPv6
    in brackets in RFC 5952 form). What that grammar refuses (hosts that
    browsers would read as IPv4 but are not a dotted quad, ``1.2.3``,
    ``0x7f.1``; IPv6 zone identifiers; characters outside RFC 1123 labels;
    an empty host) and ports outside 1-65535 are refused with ``ValueError``. Path and query as in
    :func:`build_target` (an empty first segment is allowed here);
    ``fragment`` is encoded with :func:`encode_fragment`.

        >>> build_url("HTTPS", "bücher.example", ["a b"], {"q": "x"}, port=8443)
        'https://xn--bcher-kva.example:8443/a%20b?q=x'
        >>> build_url("http", "::1", fragment="top")
        'http://[::1]/#top'
    """
    if not isinstance(scheme, str) or scheme.lower() not in ("http", "https"):
        raise ValueError("scheme must be 'http' or 'https'")
    authority = _host(host) + _port(port)
    encoded, _ = _encode_path(segments)
    url = f"{scheme.lower()}://{authority}/" + "/".join(encoded)
    encoded_query = _encode_query(query, space)
    if encoded_query:
        url = f"{url}?{encoded_query}"
    if fragment is not None:
        url = f"{url}#{encode_fragment(fragment)}"
    return url


def clean_uri(uri: str) -> str:
    """Make a URI typed by a person valid, changing nothing that has a meaning.

    "URI cleaning" for RFC 3986, as "How do you escape a complete URI?"
    (2012) defines it: escapes (as UTF-8, upper-case hex) exactly
    space, controls, ``" < > \\ ^ ` { | }`` and non-ASCII characters; never a
    reserved character and never a valid ``%XX``; a ``%`` not followed by two
    hex digits becomes ``%25`` (the article's "advanced" cleaning).
    Idempotent. For input from outside only: never build URIs this way, since
    no cleaner can know which ``#`` or ``&`` was meant as data.

        >>> clean_uri("http://example.com/news%23funny?name=Helen Ødegård&x=100%")
        'http://example.com/news%23funny?name=Helen%20%C3%98deg%C3%A5rd&x=100%25'
    """
    uri = quote_from_bytes(_utf8(uri, "uri"), _CLEAN_SAFE)
    return _STRAY_PERCENT.sub("%25", uri) if "%" in uri else uri


def pretty_uri(uri: str) -> str:
    """A URI for display: decode only the escapes that are safe to show.

    "Pretty printing", as "How do you escape a complete URI?" defines it:
    ``%XX`` runs are decoded where they give
    unreserved characters, space, ``" < > \\ ^ ` { | }`` or valid UTF-8
    non-ASCII characters. Reserved characters, ``%``, controls (U+0000-U+001F,
    U+007F-U+009F), the bidi controls, line separators and noncharacters of
    the default policy, and bytes that are not UTF-8 stay escaped, in their
    original hex case. ``clean_uri(pretty_uri(u)) == u`` for every valid URI
    in normal form (upper-case hex, unreserved characters never escaped).
    Raw characters in ``uri`` are passed through: clean input from outside
    first.

        >>> pretty_uri("/caf%C3%A9/a%2Fb?q=Helen%20%C3%98deg%C3%A5rd%E2%80%AE%ff")
        '/café/a%2Fb?q=Helen Ødegård%E2%80%AE%ff'
    """
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a str, not {type(uri).__name__}")
    return _ESCAPE_RUN.sub(_pretty_run, uri) if "%" in uri else uri


def _pretty_run(match: re.Match[str]) -> str:
    run = match[0]
    # Bytes that are not UTF-8 decode to U+DC80-U+DCFF, one per byte.
    text = bytes.fromhex(run.replace("%", "")).decode("utf-8", "surrogateescape")
    if _KEEP_ESCAPED.search(text) is None:
        return text
    out: list[str] = []
    position = 0  # in bytes, so the escape keeps its original hex case
    for char in text:
        code = ord(char)
        size = 1 if code < 0x80 or 0xDC80 <= code <= 0xDCFF else len(char.encode())
        if _KEEP_ESCAPED.match(char):
            out.append(run[3 * position : 3 * (position + size)])
        else:
            out.append(char)
        position += size
    return "".join(out)
