"""The reference parser: the rules of docs/rules.md, in their order, top to bottom.

The raw request target is split into path segments and query pairs *before*
anything is percent-decoded (RFC 3986 §2.4: "the only time when octets within
a URI are percent-encoded is during the process of producing the URI from its
component parts"), then each piece is decoded as strict UTF-8 (RFC 3629) and
its characters are checked against the policy. Nothing is normalized: a
target is accepted as it is, or rejected with the first rule it breaks.

This module states the rules (``_parse`` and the functions below it, in the
order of docs/rules.md) and serves every install without a compiler. In front
of the rules sits one quick path (``_accept_quickly``): a target that tables
derived from the ``Policy`` clear of every rule is accepted with whole-string
work in the standard library's C code; any other goes to the rules, which
make every rejection. Why the two agree is written beside the quick path.
The compiled module (``parser_c``) must give the same answer on every
input, and the tests hold all three (compiled, this, and the tests' own
reading of the rules) to that, over generated policies.
"""

from __future__ import annotations

import re
from typing import Final, overload
from urllib.parse import unquote_to_bytes

from . import grammar as g
from .errors import Component, InvalidTarget
from .host import Host, authority_span, host_text, parse_host, same_authority
from .policy import DEFAULT_POLICY, Policy
from .target import Pairs, Target

#: What ``parse_target`` takes as a Host: the header's value, or a ``Host`` judged already.
HostValue = bytes | bytearray | memoryview | str | Host | None

_DOTS: Final = frozenset((".", ".."))
# What a Windows path reader takes for a drive: one ASCII letter and ':'.
_DRIVE: Final = re.compile(r"[A-Za-z]:")

# RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG (either case).
_MALFORMED_ESCAPE: Final = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_ENCODED_SLASH: Final = re.compile(rb"%2[Ff]")
_ENCODED_BACKSLASH: Final = re.compile(rb"%5[Cc]")
# An escape left in decoded text: the sign of %25XX, i.e. double encoding.
_ESCAPE_IN_TEXT: Final = re.compile(r"%[0-9A-Fa-f]{2}")
# Bytes the quick path looks for, as ints: `int in bytes` is one C loop.
_QUESTION: Final = g.QUESTION
_PLUS: Final = g.PLUS

# RFC 9112 §3.2.2 absolute-form, for the schemes of RFC 9110 §4.2, is found
# by _host.authority_span. RFC 3986 §3.2: authority = [ userinfo "@" ] host [ ":" port ]. It is
# read by the one host grammar (_host.py), as a Host header is: no userinfo
# (RFC 9110 §4.2.4 tells recipients to treat it as an error), no escapes
# (no browser sends them, and a decoded one could name another host), a
# host that is not empty (RFC 9110 §4.2.1).


@overload
def parse_target(
    raw: bytes | bytearray | memoryview, policy: Policy | None = None, host: HostValue = None
) -> Target: ...
@overload
def parse_target(raw: str, policy: Policy | None = None, host: HostValue = None) -> Target: ...
def parse_target(
    raw: bytes | bytearray | memoryview | str, policy: Policy | None = None, host: HostValue = None
) -> Target:
    """Split, decode and check a raw request target; return its decoded pieces.

    ``raw`` is the target exactly as the client sent it: bytes, or a ``str``
    (encoded as UTF-8 first, so any non-ASCII character is a ``raw-char``).
    Origin-form (``/path?query``) and http(s) absolute-form are accepted.

    ``host`` is the Host header sent with it (bytes or ``str``), or ``None``
    for none. It is checked first, by the host grammar (``bad-host``, see
    docs/rules.md); ``Target.host`` and ``Target.port`` then read it, and an
    absolute-form target must name the same authority (RFC 9112 §3.2.2:
    ``bad-host`` otherwise). A guard passes the ``Host`` it has judged already.

    Raises :class:`InvalidTarget` naming one rule, and nothing else, whatever
    the bytes. The same input always reports the same rule.

        >>> from urlguard import Policy
        >>> parse_target(b"/blue%2Fred%3Fand+green", Policy(encoded_slash="keep")).segments
        ('blue/red?and+green',)
        >>> parse_target(b"/pubmed?term=%C4rzteblatt")
        Traceback (most recent call last):
          ...
        urlguard._url.errors.InvalidTarget: invalid-utf8: ...
        >>> parse_target(b"/a", host=b"Example.com:8080").host
        'example.com'
    """
    # Bytes, a Policy and a judged Host (or none) nearly always: no call for them.
    data = raw if type(raw) is bytes else _as_bytes(raw)
    p = policy if type(policy) is Policy else _policy_of(policy)
    judged = host if host is None or type(host) is Host else _judged(host)
    path, question, query = data.partition(b"?")
    target = _accept_quickly(data, path, query if question else None, p, judged)
    return target if target is not None else _parse(data, p, judged)


def parse_split_target(
    raw_path: bytes | bytearray | memoryview,
    query: bytes | bytearray | memoryview,
    policy: Policy,
    host: HostValue = None,
) -> Target:
    """``parse_target`` of a target that a server hands over in two parts
    (ASGI's ``raw_path`` and ``query_string``): of ``raw_path + b"?" +
    query``, or of ``raw_path`` alone when ``query`` is empty."""
    path = raw_path if type(raw_path) is bytes else _as_bytes(raw_path)
    rest = query if type(query) is bytes else _as_bytes(query)
    data = path + b"?" + rest if rest else path
    p = policy if type(policy) is Policy else _policy_of(policy)
    judged = host if host is None or type(host) is Host else _judged(host)
    # A '?' in raw_path itself makes the target's own split another one: the rules' to read.
    quick = _QUESTION not in path
    target = _accept_quickly(data, path, rest if rest else None, p, judged) if quick else None
    return target if target is not None else _parse(data, p, judged)


def host_header(headers: object, known: dict[bytes, Host]) -> Host | bytes | None:
    """The value of the one ``host`` header in an ASGI scope's ``headers``
    (a list of two-item tuples, each name a ``bytes``): the ``Host`` that
    ``known`` (a guard's verdicts) holds for it, else the value, to be
    judged. ``None`` when there is no such header, more than one, an empty
    or non-``bytes`` value, or the list is not of that shape: the caller
    then reads the headers itself."""
    if type(headers) is not list:
        return None
    found = None
    try:
        for pair in headers:
            if type(pair) is not tuple:
                return None
            name, value = pair  # ValueError unless two items
            if type(name) is not bytes:
                return None
            if name == b"host":
                if found is not None or type(value) is not bytes or not value:
                    return None  # a second one, or a value that cannot be one
                found = value
    except ValueError:
        return None
    return None if found is None else known.get(found, found)


def _judged(host: object) -> Host | None:
    """``host`` as a ``Host``: ``None`` and a ``Host`` as they are; bytes or
    ``str`` read by the host grammar."""
    if host is None or type(host) is Host:
        return host
    if not isinstance(host, str | bytes | bytearray | memoryview):
        kind = type(host).__name__
        raise TypeError(f"parse_target(): host must be bytes, str or None, not {kind}")
    return parse_host(_as_bytes(host))


# --- the quick path ------------------------------------------------------------------
#
# Most targets break no rule and hold nothing that needs a rule's full reading:
# no ';', no kept separator, no escaped separator. _accept_quickly accepts such
# a target with one regular expression over it and a few counts, all in the
# standard library's C code, and leaves the decoding to the Target (done when
# its segments or query are first read). Otherwise it returns None, and the
# rules below (_parse) read the target from its start. It never rejects:
# every rejection, with its rule, index and offset, comes from the rules in
# their order. Nothing in it names a policy: each shortcut is a table the
# Policy derives from the sets its rules use. It returns a Target only where
# _parse returns the same one, step by step:
#
# 1. Origin-form, at most max_length bytes (too-long, bad-form), and the
#    whole target matches Policy._quick_target: '/', a path, then perhaps
#    '?' and a query (fragment, raw-char). The caller splits the target at
#    its first '?' (parse_split_target: only when its path holds none of
#    its own).
# 2. The path is made of '/' and the bytes of Policy._path_quick, which are
#    allowed raw and read as allowed characters (raw-char, forbidden-char),
#    and of the escapes of the UTF-8 of a character of Policy._path_escaped
#    (see escapes.py): so every escape is well formed (malformed-escape),
#    the octets are strict UTF-8 (invalid-utf8) and each character is
#    allowed (forbidden-char). Neither holds ';' (no parameters, no "..;x",
#    no segment that starts with ';'), a kept separator, '/', '\\' or '.'
#    escaped (encoded-slash, encoded-backslash; every '/' of the decoded
#    path is a raw separator, and a '.' or '..' segment is one in the raw
#    path), nor '%' escaped where double encoding is refused (the decoded
#    path holds no '%' at all: double-encoding). The query likewise, from
#    Policy._query_quick (a raw '+' read as a space where it is one, a raw
#    '=' as data: the first of a piece splits it whatever it is) and
#    Policy._query_escaped, which holds no '&' nor '=': every '&' of the
#    decoded query separates pairs, and the first '=' of a piece is raw.
# 3. '/', '&' and '=' are ASCII, never part of a multi-byte sequence (RFC
#    3629 §3), so the whole decodes if and only if each piece between them
#    does, into those pieces joined by them.
# 4. The counts (too-many), then each segment's rules, on the raw path (the
#    same '/' and '.' as the decoded one): no '.' or '..' segment, no empty
#    one but the last (a '//'). With no kept separator a segment has one
#    part, so the rules of kept separators have nothing to look at;
#    drive-letter needs one. The path has one segment per '/', so a path
#    of at most max_segments bytes has no more; the query has a pair per
#    non-empty piece between '&' (an escape never decodes to nothing), so
#    no more than half its bytes rounded up, and only a query with as many
#    '&' as max_params is split to count them. The Target keeps the path
#    and query as sent ('+' made a space first where it is one, as _pair
#    does) and decodes and splits each when it is first read
#    (Target.segments, Target.query): a handler that reads neither pays
#    for neither.


def _accept_quickly(
    raw: bytes, path: bytes, query: bytes | None, p: Policy, host: Host | None
) -> Target | None:
    """The target ``_parse`` accepts, made with whole-string work, or None
    when it needs a reading by the rules (see above for why they agree).
    ``path`` and ``query`` are ``raw`` split at its first '?' (``query`` is
    None when there is none), as the caller has them."""
    if len(raw) > p.max_length or p._quick_target.fullmatch(raw) is None:
        return None  # 1, 2
    # 4: a segment per '/', so no more than the path has bytes
    if len(path) > p.max_segments and path.count(b"/") > p.max_segments:
        return None
    # find, not `in`: `bytes in bytes` first tries the needle as an int,
    # and formats the error it clears.
    if p.empty_segment == "reject" and path.find(b"//") >= 0:
        return None
    if p.dot_segment == "reject" and path.find(b"/.") >= 0:
        segments = path.split(b"/")
        if b"." in segments or b".." in segments:
            return None
    pieces: bytes | Pairs = ()
    if query:
        if p.plus_as_space and _PLUS in query:
            query = query.replace(b"+", b" ")
        # 4: a pair per non-empty piece between '&', so no more than half
        # the query's bytes, rounded up
        if len(query) >= 2 * p.max_params and query.count(b"&") >= p.max_params:
            split = query.split(b"&")
            if len(split) - split.count(b"") > p.max_params:
                return None
        pieces = query
    params = ((),) * path.count(b"/") if p.path_params == "split" else None
    return Target(raw, path, pieces, params, None, host)  # no authority: origin-form


def _parse(raw: bytes, p: Policy, host: Host | None) -> Target:
    # The whole target: its length, a fragment, its form.
    if len(raw) > p.max_length:
        raise InvalidTarget("too-long", "target", None, p.max_length)
    hash_at = raw.find(b"#")
    if hash_at >= 0:  # RFC 9110 §7.1: a fragment is never sent
        raise InvalidTarget("fragment", "target", None, hash_at)
    path_start, authority = (0, None) if raw[:1] == b"/" else _absolute_form(raw, p)
    question = raw.find(b"?", path_start)
    path_end = len(raw) if question < 0 else question

    # raw-char: bytes RFC 3986 §3.3 and §3.4 do not allow raw (and the extras).
    bad = p._path_raw_bad.search(raw, path_start, path_end)
    if bad:
        index = raw.count(b"/", path_start, bad.start()) - 1
        raise InvalidTarget("raw-char", "path", max(index, 0), bad.start())
    if question >= 0:
        bad = p._query_raw_bad.search(raw, question + 1)
        if bad:
            before = raw[question + 1 : bad.start()].split(b"&")[:-1]
            raise InvalidTarget("raw-char", "query", sum(1 for x in before if x), bad.start())

    # too-many: path segments, then non-empty query pairs.
    raw_path = raw[path_start:path_end] or b"/"  # RFC 9112 §3.2.2: empty path means "/"
    raw_segments = raw_path[1:].split(b"/")
    if len(raw_segments) > p.max_segments:
        offset = path_start + sum(len(s) + 1 for s in raw_segments[: p.max_segments])
        raise InvalidTarget("too-many", "path", p.max_segments, offset)
    raw_pairs = _pieces(raw, question + 1, b"&") if question >= 0 else []
    if len(raw_pairs) > p.max_params:
        raise InvalidTarget("too-many", "query", p.max_params, raw_pairs[p.max_params][1])

    # Segment by segment, then pair by pair.
    segments, params = [], []
    offset = path_start + 1
    for index, raw_segment in enumerate(raw_segments):
        last = index == len(raw_segments) - 1
        segment, segment_params = _segment(raw_segment, offset, index, last, p)
        segments.append(segment)
        params.append(segment_params)
        offset += len(raw_segment) + 1
    query = []
    for index, (piece, at) in enumerate(raw_pairs):
        query.append(_pair(piece, at, index, p))
    if authority is not None and host is not None and not same_authority(raw, authority, host):
        raise InvalidTarget("bad-host", "host", None, 0)  # RFC 9112 §3.2.2
    return Target(
        raw,
        tuple(segments),
        tuple(query),
        params=tuple(params) if p.path_params == "split" else None,
        authority=None if authority is None else host_text(authority),
        host=authority if host is None else host,  # the Host judged, never read again
    )


def _absolute_form(raw: bytes, p: Policy) -> tuple[int, Host]:
    """Where the path of an absolute-form target starts, and the Host its
    authority names (read by the host grammar); ``bad-form`` for a scheme
    other than http(s), ``bad-host`` for an authority the grammar refuses."""
    span = authority_span(raw)
    if span is None:
        raise InvalidTarget("bad-form", "target", None, 0)
    start, end = span
    try:
        host = parse_host(raw[start:end], "target")
    except InvalidTarget as exc:
        raise InvalidTarget("bad-host", "target", None, start + exc.offset) from None
    return end, host


def _segment(
    raw_segment: bytes, offset: int, index: int, last: bool, p: Policy
) -> tuple[str, Pairs]:
    """One path segment's text and matrix parameters, or its first violation."""
    if not raw_segment:
        if not last and p.empty_segment == "reject":
            raise InvalidTarget("empty-segment", "path", index, offset)
        return "", ()
    # The pieces: the whole segment, or under "split" its name before the
    # first ';' and a key and a value per non-empty ';' piece (RFC 3986 §3.3).
    slashes = p.encoded_slash == "reject"
    if p.path_params == "split":
        name_raw, *param_pieces = raw_segment.split(b";")
    else:
        name_raw, param_pieces = raw_segment, []
    name = _decode(name_raw, offset, "path", index, p, slashes=slashes)
    texts, params = [name], []
    at = offset + len(name_raw) + 1
    for piece in param_pieces:
        if piece:
            key_raw, _, value_raw = piece.partition(b"=")
            key = _decode(key_raw, at, "path", index, p, slashes=slashes)
            value = _decode(value_raw, at + len(key_raw) + 1, "path", index, p, slashes=slashes)
            params.append((key, value))
            texts += (key, value)
        at += len(piece) + 1

    # The real segment, which the dot_segment and empty_segment switches
    # govern. "..;x" is ".." to servlet containers, which strip path
    # parameters before resolving dot segments (Tomcat's "..;/" behind a
    # proxy), and "/;/admin" is "//admin" to them: the whole segment counts,
    # and so does its part before the first raw ';'.
    dots = name in _DOTS or (
        g.SEMICOLON in raw_segment
        and unquote_to_bytes(raw_segment.partition(b";")[0]) in (b".", b"..")
    )
    empty = not last and raw_segment[:1] == b";"
    # The parts a kept separator (%2F, %5C, or a raw '\' the policy admits)
    # makes inside the name, and inside each parameter's name and value:
    # each is a segment to whatever splits the text again (a file system, a
    # proxy, a servlet container), so whatever the switches, none is '.' or
    # '..' (nor before a ';'), none is empty but the last ("%2Fetc": an
    # absolute path, "%5C%5Chost": a UNC path), and the first is no drive
    # ("c:/windows" is absolute to a Windows path join, whatever its base).
    kept_dots = kept_empty = drive = False
    if p._kept_separators:
        for text in texts:
            parts = _split_on_any(text, p._kept_separators)
            if len(parts) > 1:
                kept_dots = kept_dots or any(part.partition(";")[0] in _DOTS for part in parts)
                kept_empty = kept_empty or "" in parts[:-1]
                drive = drive or bool(_DRIVE.fullmatch(parts[0]))
    if kept_dots or (dots and p.dot_segment == "reject"):
        raise InvalidTarget("dot-segment", "path", index, offset)
    if kept_empty or (empty and p.empty_segment == "reject"):
        raise InvalidTarget("empty-segment", "path", index, offset)
    if drive:
        raise InvalidTarget("drive-letter", "path", index, offset)
    if p.double_encoding == "reject":
        for text in texts:
            if "%" in text and _ESCAPE_IN_TEXT.search(text):
                raise InvalidTarget("double-encoding", "path", index, offset)
    return name, tuple(params)


def _split_on_any(text: str, separators: str) -> list[str]:
    """``text`` split on every one of ``separators`` (none: ``[text]``)."""
    if not separators:
        return [text]
    for separator in separators[1:]:
        text = text.replace(separator, separators[0])
    return text.split(separators[0])


def _pair(piece: bytes, offset: int, index: int, p: Policy) -> tuple[str, str]:
    """One query pair, split at its first '=' before decoding."""
    if p.plus_as_space:
        # Form semantics: '+' is space, replaced before percent-decoding so
        # that %2B stays '+'. Same length, so offsets hold.
        piece = piece.replace(b"+", b" ")
    name_raw, _, value_raw = piece.partition(b"=")
    name = _decode(name_raw, offset, "query", index, p)
    value = _decode(value_raw, offset + len(name_raw) + 1, "query", index, p)
    return name, value


def _decode(
    piece: bytes,
    offset: int,
    component: Component,
    index: int | None,
    p: Policy,
    *,
    slashes: bool = False,
) -> str:
    """Percent-decode one piece as strict UTF-8 and check its characters.

    ``slashes``: apply the encoded-slash rule (and encoded-backslash, by its
    own switch; both always in an authority)."""
    if g.PERCENT in piece:
        bad = _MALFORMED_ESCAPE.search(piece)
        if bad:
            raise InvalidTarget("malformed-escape", component, index, offset + bad.start())
        if component != "query":
            found = _ENCODED_SLASH.search(piece) if slashes else None
            if found:
                raise InvalidTarget("encoded-slash", component, index, offset + found.start())
            if component == "target" or p.encoded_backslash == "reject":
                found = _ENCODED_BACKSLASH.search(piece)
                if found:
                    raise InvalidTarget(
                        "encoded-backslash", component, index, offset + found.start()
                    )
        data = unquote_to_bytes(piece)
    else:
        data = piece
    try:
        text = data.decode()  # strict UTF-8: RFC 3629, no surrogates, nothing past U+10FFFF
    except UnicodeDecodeError as exc:
        at = offset + _raw_offset(piece, exc.start)
        raise InvalidTarget("invalid-utf8", component, index, at) from None
    forbidden = p._path_forbidden if component == "path" else p._query_forbidden
    found_char = forbidden.search(text)
    if found_char:
        at = offset + _raw_offset(piece, _utf8_length(text[: found_char.start()]))
        raise InvalidTarget("forbidden-char", component, index, at)
    return text


def _pieces(raw: bytes, start: int, separator: bytes) -> list[tuple[bytes, int]]:
    """The non-empty pieces of ``raw[start:]`` between separators, with their offsets."""
    pieces = []
    for piece in raw[start:].split(separator):
        if piece:
            pieces.append((piece, start))
        start += len(piece) + 1
    return pieces


def _raw_offset(piece: bytes, decoded_index: int) -> int:
    """Where decoded byte ``decoded_index`` comes from in ``piece``."""
    position = 0
    for _ in range(decoded_index):
        position += 3 if piece[position] == g.PERCENT else 1
    return position


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


def _policy_of(policy: object) -> Policy:
    if policy is None:
        return DEFAULT_POLICY
    if not isinstance(policy, Policy):
        kind = type(policy).__name__
        raise TypeError(f"parse_target(): policy must be a urlguard.Policy or None, not {kind}")
    return policy


def _as_bytes(raw: object) -> bytes:
    if type(raw) is bytes:
        return raw
    if isinstance(raw, str):
        # Lone surrogates pass through, to be rejected as raw bytes >= 0x80.
        return raw.encode("utf-8", "surrogatepass")
    if isinstance(raw, bytes | bytearray | memoryview):
        return bytes(raw)
    raise TypeError(f"parse_target() takes bytes or str, not {type(raw).__name__}")
