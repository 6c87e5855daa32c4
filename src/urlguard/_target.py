"""``parse_target``: the whole engine, sans-IO.

The raw request target is split into path segments and query pairs *before*
anything is percent-decoded (RFC 3986 §2.4: "the only time when octets within
a URI are percent-encoded is during the process of producing the URI from its
component parts"), then each piece is decoded as strict UTF-8 (RFC 3629) and
its characters checked against the policy. Nothing is ever normalized: a
target is accepted as it is, or rejected with exactly one rule code.

Three routes lead to the same verdict:

* a plain ASCII target (no '%', no ';', short) is accepted in
  ``parse_target`` itself after one ``translate`` and two substring checks;
* ``_parse_fast`` handles the rest of the common cases with whole-component
  operations (one C call to decode the escapes of a component, one
  ``decode``, one check of its characters). It never rejects: when anything
  looks unusual it returns ``None``;
* the careful route (``_judge``, or ``_judge_pieces`` once the raw bytes are
  known to be fine) walks the target piece by piece, in the documented rule
  order, and is the only one that finds violations: it returns the
  ``InvalidTarget``, which ``parse_target`` raises (an exception costs more
  for every frame it leaves). So the rule reported for an input never
  depends on which route looked at it first.

Whatever a faster route accepts, the careful one accepts with the same
result; property tests check that.

``parse_split_target`` is the entry for servers that hand the path and the
query over apart (ASGI): it takes the plain route on each part without
joining them, and joins them for the other routes. Tests compare it with
``parse_target`` of the joined target, field by field.
"""

from __future__ import annotations

import codecs
import re
from typing import Final, overload

from . import _grammar as g
from ._errors import Component, InvalidTarget
from ._policy import DEFAULT_POLICY, Policy

Pairs = tuple[tuple[str, str], ...]

_DOT_SEGMENTS: Final = (".", "..")

_escape_decode = codecs.escape_decode  # in CPython since 2.x; used by pickle
_BACKSLASH: Final = ord("\\")
_PERCENT: Final = g.PERCENT
_SEMICOLON: Final = g.SEMICOLON
_PLUS: Final = g.PLUS
_SLASH: Final = ord("/")

# RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG, either case.
_MALFORMED_ESCAPE: Final = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_ENCODED_SLASH: Final = re.compile(rb"%2[Ff]")
_ENCODED_BACKSLASH: Final = re.compile(rb"%5[Cc]")
# An escape left in decoded text: the sign of %25XX, i.e. double encoding.
_ESCAPE_IN_TEXT: Final = re.compile(r"%[0-9A-Fa-f]{2}")

# RFC 9112 §3.2.2 absolute-form, for the schemes of RFC 9110 §4.2 (scheme
# names are case-insensitive, RFC 3986 §3.1). The authority is a reg-name,
# an IP-literal or IPv4 address (matched by reg-name), and an optional port.
# No userinfo: RFC 9110 §4.2.4 tells recipients to treat it as an error.
_REG_NAME_CHAR: Final = b"[" + re.escape(g.to_bytes(g.REG_NAME)) + b"]"
_ABSOLUTE_FORM: Final = re.compile(
    rb"[Hh][Tt][Tt][Pp][Ss]?://("
    rb"(?:" + _REG_NAME_CHAR + rb"|%[0-9A-Fa-f]{2})+"
    rb"|\[[0-9A-Fa-f:.]+\]"  # IPv6address, RFC 3986 §3.2.2 (shape only)
    rb"|\[[Vv][0-9A-Fa-f]+\.(?:" + _REG_NAME_CHAR + rb"|:)+\]"  # IPvFuture
    rb")(?::[0-9]*)?(?=[/?]|\Z)"
)


def _unescape(raw: bytes) -> bytes:
    """Percent-decode a whole component in C, never one Python step per escape.

    ``%HH`` becomes ``\\xHH`` (after doubling any backslash, the only other
    escape then left) and ``codecs.escape_decode`` decodes the lot. It raises
    ``ValueError`` on a malformed escape: the fast path, which does the same
    inline, uses that as its check."""
    if _BACKSLASH in raw:
        raw = raw.replace(b"\\", b"\\\\")
    return _escape_decode(raw.replace(b"%", b"\\x"))[0]


class Target:
    """A request target that passed every rule, with its decoded pieces.

    Immutable: every public attribute is read-only. ``raw`` is the target
    exactly as received; ``segments`` and ``query`` are the decoded pieces,
    split before decoding, so a ``%2F`` kept by ``encoded_slash="keep"`` is a
    ``/`` *inside* a segment and a ``%26`` is an ``&`` inside a query value.
    Both are built from already validated text the first time they are read.

        >>> t = parse_target(b"/caf%C3%A9/x?q=a+b&q=c")
        >>> t.segments, t.query, t.get("q"), t.get_all("q")
        (('café', 'x'), (('q', 'a b'), ('q', 'c')), 'a b', ['a b', 'c'])
    """

    # Filled in by the parser, nowhere else; the public attributes are
    # read-only properties. Slots: an instance is created per request, and
    # slot stores and reads cost less than an instance dict's. The fast
    # routes leave _segments and _query as None and keep the checked text
    # (_path_text, _query_text; _plus: '+' still to become space), from
    # which the pieces are built when first read. (_SplitTarget keeps the
    # query's bytes instead, and its _raw is the path alone.)
    __slots__ = ("_path_text", "_plus", "_query", "_query_text", "_raw", "_segments")
    _raw: bytes
    _path_text: str
    _query_text: str
    _plus: bool
    _segments: tuple[str, ...] | None
    _query: Pairs | None
    # What only the careful route sets otherwise (_CarefulTarget's slots):
    # class values, so the fast routes store three fields fewer.
    _path_start: int = 0
    _authority: str | None = None
    _params: tuple[Pairs, ...] | None = None

    @property
    def raw(self) -> bytes:
        """The whole target as received, bytes."""
        return self._raw

    @property
    def raw_path(self) -> bytes:
        """The path as received (``b"/"`` for an absolute-form target without one)."""
        question = self._raw.find(b"?", self._path_start)
        end = question if question >= 0 else len(self._raw)
        return self._raw[self._path_start : end] or b"/"

    @property
    def raw_query(self) -> bytes | None:
        """The query as received, without the ``?``; ``None`` when there was no ``?``."""
        # The authority of an absolute-form target never holds a '?'.
        question = self._raw.find(b"?", self._path_start)
        return None if question < 0 else self._raw[question + 1 :]

    @property
    def authority(self) -> str | None:
        """``host[:port]`` of an absolute-form target; ``None`` for origin-form."""
        return self._authority

    @property
    def segments(self) -> tuple[str, ...]:
        """The decoded path segments: ``/`` is ``("",)``, ``/a/b/`` is ``("a", "b", "")``.
        Under ``path_params="split"`` each is the part before its first ``;``."""
        segments = self._segments
        if segments is None:
            parts = self._path_text.split("/")
            del parts[0]  # what comes before the leading '/': cheaper than slicing the text
            segments = self._segments = tuple(parts)
        return segments

    @property
    def params(self) -> tuple[Pairs, ...]:
        """Matrix parameters per segment under ``path_params="split"``, aligned
        with ``segments``; all empty under the other modes."""
        if self._params is None:
            return ((),) * len(self.segments)
        return self._params

    @property
    def query(self) -> Pairs:
        """The decoded query pairs, in order; a piece without ``=`` has value ``""``."""
        query = self._query
        if query is None:
            text = self._query_text
            if self._plus and "+" in text:  # the test costs less than a replace
                text = text.replace("+", " ")
            # A plain loop: in CPython 3.11 it costs about a quarter less
            # than a regex findall (whose every match allocates its stack)
            # or a comprehension (a frame of its own).
            pairs: list[tuple[str, str]] = []
            for piece in text.split("&"):
                if piece:
                    name, _, value = piece.partition("=")
                    pairs.append((name, value))
            query = self._query = tuple(pairs)
        return query

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name``, or ``default``."""
        for key, value in self.query:
            if key == name:
                return value
        return default

    def get_all(self, name: str) -> list[str]:
        """Every value of query parameter ``name``, in order."""
        return [value for key, value in self.query if key == name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Target):
            return NotImplemented
        return (
            self.raw == other.raw
            and self.segments == other.segments
            and self.params == other.params
            and self.query == other.query
        )

    def __hash__(self) -> int:
        return hash((self.raw, self.segments))

    def __repr__(self) -> str:
        return (
            f"Target(raw={self.raw!r}, segments={self.segments!r}, query={self.query!r}"
            # Only when some segment has parameters: the same text whichever
            # route built the target.
            + (f", params={self.params!r}" if any(self.params) else "")
            + ")"
        )


class _CarefulTarget(Target):
    """A Target from the careful route: every piece decoded already, and
    absolute-form and matrix parameters possible."""

    __slots__ = ("_authority", "_params", "_path_start")


class _SplitTarget(Target):
    """A plain Target from a path and a query handed over apart (ASGI):
    ``_raw`` holds the path only and ``_query_part`` the query (``b""`` for
    none); the whole target is joined only when ``raw`` is read."""

    __slots__ = ("_query_part",)
    _query_part: bytes

    @property
    def query(self) -> Pairs:
        """The decoded query pairs, in order; a piece without ``=`` has value ``""``."""
        if self._query is None:
            # Decoded when first read, not per request: ASCII, so decode() is exact.
            self._query_text = self._query_part.decode()
        return super().query

    @property
    def raw(self) -> bytes:
        """The whole target as received, bytes."""
        query = self._query_part
        return b"?".join((self._raw, query)) if query else self._raw

    @property
    def raw_path(self) -> bytes:
        """The path as received."""
        return self._raw

    @property
    def raw_query(self) -> bytes | None:
        """The query as received, without the ``?``; ``None`` when there was none."""
        return self._query_part or None


def _make_target(
    raw: bytes,
    path_start: int,
    authority: str | None,
    segments: tuple[str, ...],
    params: tuple[Pairs, ...] | None,
    query: Pairs,
) -> Target:
    """A Target from the careful route."""
    target = _CarefulTarget()
    target._raw = raw
    target._path_start = path_start
    target._authority = authority
    target._path_text = target._query_text = ""
    target._plus = False
    target._segments = segments
    target._params = params
    target._query = query
    return target


@overload
def parse_target(raw: bytes | bytearray | memoryview, policy: Policy | None = None) -> Target: ...
@overload
def parse_target(raw: str, policy: Policy | None = None) -> Target: ...
def parse_target(raw: bytes | bytearray | memoryview | str, policy: Policy | None = None) -> Target:
    """Split, decode and check a raw request target; return its decoded pieces.

    ``raw`` is the target exactly as the client sent it: bytes, or a ``str``
    (encoded as UTF-8 first, so any non-ASCII character is a ``raw-char``).
    Origin-form (``/path?query``) and http(s) absolute-form are accepted.

    Raises :class:`InvalidTarget` naming one rule, and nothing else, whatever
    the bytes. The same input always reports the same rule.

        >>> parse_target(b"/blue%2Fred%3Fand+green", Policy(encoded_slash="keep")).segments
        ('blue/red?and+green',)
        >>> parse_target(b"/pubmed?term=%C4rzteblatt")
        Traceback (most recent call last):
          ...
        urlguard._errors.InvalidTarget: invalid-utf8: ...
    """
    p = DEFAULT_POLICY if policy is None else policy
    if type(raw) is not bytes:
        raw = _as_bytes(raw)
    # Translate tables map the bytes a route may see to themselves and every
    # other byte elsewhere, so a target is unchanged by one exactly when all
    # its bytes are allowed: one C pass, nothing built per call.
    if 0 < len(raw) <= p._plain_max and raw[0] == _SLASH and raw.translate(p._plain_table) == raw:
        # The common case: plain ASCII allowed raw in path and query, no '%'
        # and no ';', short enough that no count can pass a limit. Without
        # '//' or '/.' in the path, no rule can fail: keep the text, and
        # build the pieces when first read.
        # decode() without arguments goes straight to the UTF-8 decoder
        # (no codec lookup); on these ASCII bytes it gives the same text.
        path_text, _, query_text = raw.decode().partition("?")
        if "//" not in path_text and "/." not in path_text:
            target = Target()
            target._raw = raw
            target._segments = target._query = None
            target._path_text = path_text
            target._query_text = query_text
            target._plus = p.plus_as_space
            return target
        # Only the empty-segment and dot-segment rules can fail ('/.' may
        # also start a name like '.well-known'): no need for the fast path.
        verdict = _judge_pieces(raw, p, 0, None)
    elif 0 < len(raw) <= p.max_length and raw[0] == _SLASH and raw.translate(p._fast_table) == raw:
        fast = _parse_fast(raw, p)
        if fast is not None:
            return fast
        # Origin-form, not too long, every byte allowed raw (so no '#'):
        # only the rules from too-many on can fail.
        verdict = _judge_pieces(raw, p, 0, None)
    else:
        verdict = _judge(raw, p)
    if isinstance(verdict, InvalidTarget):
        raise verdict
    return verdict


def parse_split_target(
    raw_path: bytes | bytearray | memoryview, query: bytes | bytearray | memoryview, policy: Policy
) -> Target:
    """What ``parse_target(raw_path + b"?" + query, policy)`` returns (of
    ``raw_path`` alone when ``query`` is empty), for a server that hands the
    two over apart (ASGI's ``raw_path`` and ``query_string``): a plain target
    is accepted without joining them; the rest is joined and parsed.

    The plain route's checks are those of ``parse_target``, on each part,
    except that the path's table refuses '?' (a path holding one would be
    cut there once joined) and the query's allows ';' (data there)."""
    p = policy
    # ASGI says byte strings; anything else parse_target takes is judged as
    # its bytes, so that the Target holds bytes whatever the server sent.
    if type(raw_path) is not bytes:
        raw_path = _as_bytes(raw_path)
    if type(query) is not bytes:
        query = _as_bytes(query)
    if (
        raw_path
        and raw_path[0] == _SLASH
        and len(raw_path) + len(query) < p._plain_max  # the joined target: one byte more
        and raw_path.translate(p._plain_path_table) == raw_path
        and (not query or query.translate(p._plain_query_table) == query)
    ):
        path_text = raw_path.decode()
        if "//" not in path_text and "/." not in path_text:
            target = _SplitTarget()
            target._raw = raw_path
            target._query_part = query
            target._segments = target._query = None
            target._path_text = path_text  # (_query_text: decoded from _query_part when read)
            target._plus = p.plus_as_space
            return target
    raw = b"?".join((raw_path, query)) if query else raw_path
    # parse_target's fast route, without its plain test again (measured: a
    # plain join-and-parse_target costs an encoded ASGI request about 2,300
    # instructions more). A target the fast path declines is rare; it goes
    # through parse_target from the start, the one place the routes meet.
    if 0 < len(raw) <= p.max_length and raw[0] == _SLASH and raw.translate(p._fast_table) == raw:
        return _parse_fast(raw, p) or parse_target(raw, p)
    return parse_target(raw, p)


def _as_bytes(raw: object) -> bytes:
    if isinstance(raw, str):
        # Lone surrogates pass through, to be rejected as raw bytes >= 0x80.
        return raw.encode("utf-8", "surrogatepass")
    if isinstance(raw, bytes | bytearray | memoryview):
        return bytes(raw)
    raise TypeError(f"parse_target() takes bytes or str, not {type(raw).__name__}")


def _parse_fast(raw: bytes, p: Policy) -> Target | None:
    """Accept a common origin-form target with whole-component operations, or
    return ``None`` to leave the verdict to the careful route.

    The caller has checked the length and the leading '/', and that every
    byte is allowed raw in both path and query.

    Cost notes (CPython, measured in instructions): ``bytes.find``/``count``
    with start/end and ``bytes in bytes`` pay for argument parsing and the
    buffer protocol; ``int in bytes``, ``partition`` and ``str in str`` do not."""
    # On text, not bytes: every byte is ASCII here, and ``str in str`` costs
    # a tenth of ``bytes in bytes`` (which first tries the needle as an int).
    text = raw.decode()
    escaped = "%" in text
    if escaped:
        # One replace for the whole target turns each %HH into \xHH, which
        # codecs.escape_decode decodes in C (after doubling any raw
        # backslash, the only other escape it knows). Path and query are
        # then decoded apart; the '?' that splits them is the raw one, as
        # %3F became \x3F.
        if "\\" in text:  # raw only where the policy allows it: not an escape
            text = text.replace("\\", "\\\\")
        text = text.replace("%", "\\x")
    path, question, query = text.partition("?")
    # Conservative counts ('/' per segment, '&' between pairs); only a target
    # longer than the smaller limit can hold too many of either.
    if len(raw) > p._counts_safe and (
        path.count("/") > p.max_segments or query.count("&") >= p.max_params
    ):
        return None
    if ";" in path:
        return None
    if escaped and "\\" in path:
        if "\\x2F" in path or "\\x2f" in path:  # would add a '/' to the decoded text
            return None
        try:
            path = _escape_decode(path)[0].decode()
        except ValueError:  # a malformed escape, or not UTF-8
            return None
        # A '%' here came from %25 (double encoding?), a '\\' from %5C (or
        # was allowed raw): substring tests, cheaper than a regex.
        if "%" in path or "\\" in path:
            return None
        # Encoded dots need nothing here: the dot check below reads this text.
        if not (p._printable_ok and path.isprintable()) and p._forbidden.search(path):
            return None
    elif not p._ascii_clean and p._forbidden.search(path):
        return None
    if p._reject_empty and "//" in path:
        return None
    # A dot segment always follows a '/': look closer only then.
    if p._reject_dots and "/." in path:
        segments = path.split("/")
        if "." in segments or ".." in segments:
            return None
    pairs: Pairs | None = None if question else ()
    plus = False
    if escaped and "\\" in query:
        if p.plus_as_space and "+" in query:
            # '+' is space before percent-decoding, so %2B stays '+'.
            query = query.replace("+", " ")
        try:
            text = _escape_decode(query)[0].decode()
        except ValueError:
            return None
        if not (p._printable_ok and text.isprintable()) and p._forbidden.search(text):
            return None
        if "\\x26" in query or "\\x3D" in query or "\\x3d" in query:
            pairs = _pairs_split_first(query)
        query = text
    else:
        plus = p.plus_as_space
        if not p._ascii_clean and p._forbidden.search(query):
            return None
    target = Target()
    target._raw = raw
    target._segments = None
    target._path_text = path
    target._query_text = query
    target._plus = plus
    target._query = pairs
    return target


def _pairs_split_first(query: str) -> Pairs:
    """The pairs of a query in which an escape decodes to '&' or '=': split
    first, then decode each name and value.

    ``query`` is as ``_parse_fast`` holds it (escapes as ``\\xHH``, raw
    backslashes doubled, '+' already space), and it decodes as a whole, so
    each piece decodes too: a raw '&' or '=' can neither cut an escape nor
    sit inside a UTF-8 sequence (RFC 3629 §3: every byte of a multi-byte
    character is >= 0x80)."""
    pairs: list[tuple[str, str]] = []
    for piece in query.split("&"):
        if piece:
            name, _, value = piece.partition("=")
            pairs.append((_escape_decode(name)[0].decode(), _escape_decode(value)[0].decode()))
    return tuple(pairs)


def _parse_carefully(raw: bytes, p: Policy) -> Target:
    """The careful route alone: check every rule in the documented order and
    raise the first violation (for tests: the reference the faster routes
    must agree with)."""
    verdict = _judge(raw, p)
    if isinstance(verdict, InvalidTarget):
        raise verdict
    return verdict


def _judge(raw: bytes, p: Policy) -> Target | InvalidTarget:
    """Check every rule in the documented order; return the first violation."""
    if len(raw) > p.max_length:
        return InvalidTarget("too-long", "target", None, p.max_length)
    hash_at = raw.find(b"#")
    if hash_at >= 0:
        return InvalidTarget("fragment", "target", None, hash_at)

    authority: str | None = None
    if raw[:1] == b"/":
        path_start = 0
    else:
        form = _ABSOLUTE_FORM.match(raw)
        if form is None:
            return InvalidTarget("bad-form", "target", None, 0)
        authority = raw[form.start(1) : form.end()].decode("ascii")
        path_start = form.end()
    question = raw.find(b"?", path_start)
    path_end = len(raw) if question < 0 else question

    bad = p._path_bad.search(raw, path_start, path_end)
    if bad:
        index = raw.count(b"/", path_start, bad.start()) - 1
        return InvalidTarget("raw-char", "path", max(index, 0), bad.start())
    if question >= 0:
        bad = p._query_bad.search(raw, question + 1)
        if bad:
            index = _pair_index(raw[question + 1 :], bad.start() - question - 1)
            return InvalidTarget("raw-char", "query", index, bad.start())
    return _judge_pieces(raw, p, path_start, authority)


def _judge_pieces(
    raw: bytes, p: Policy, path_start: int, authority: str | None
) -> Target | InvalidTarget:
    """The rules from too-many on, for a target whose raw bytes are checked."""
    question = raw.find(b"?", path_start)
    raw_path = raw[path_start:question] if question >= 0 else raw[path_start:]
    if not raw_path:  # absolute-form with an empty path means "/" (RFC 9112 §3.2.2)
        raw_path = b"/"
    raw_segments = raw_path[1:].split(b"/")
    if len(raw_segments) > p.max_segments:
        offset = path_start + _nth(raw_path, b"/", p.max_segments)
        return InvalidTarget("too-many", "path", p.max_segments, offset)
    # The non-empty '&'-separated pieces of the query, with their offsets.
    query_pieces: list[tuple[bytes, int]] = []
    if question >= 0:
        offset = question + 1
        for piece in raw[offset:].split(b"&"):
            if piece:
                query_pieces.append((piece, offset))
            offset += len(piece) + 1
        if len(query_pieces) > p.max_params:
            return InvalidTarget("too-many", "query", p.max_params, query_pieces[p.max_params][1])

    checked = _check_segments(raw_segments, path_start + 1, p)
    if isinstance(checked, InvalidTarget):
        return checked
    pairs: list[tuple[str, str]] = []
    for index, (piece, offset) in enumerate(query_pieces):
        pair = _check_pair(piece, offset, index, p)
        if isinstance(pair, InvalidTarget):
            return pair
        pairs.append(pair)
    return _make_target(raw, path_start, authority, checked[0], checked[1], tuple(pairs))


def _check_segments(
    raw_segments: list[bytes], offset: int, p: Policy
) -> tuple[tuple[str, ...], tuple[Pairs, ...] | None] | InvalidTarget:
    segments: list[str] = []
    all_params: list[Pairs] = []
    last = len(raw_segments) - 1
    split = p.path_params == "split"
    for index, raw_segment in enumerate(raw_segments):
        if not raw_segment:
            if index != last and p.empty_segment == "reject":
                return InvalidTarget("empty-segment", "path", index, offset)
            segments.append("")
            all_params.append(())
        elif split:
            name_raw, *param_pieces = raw_segment.split(b";")
            name = _decode_segment_piece(name_raw, offset, index, p)
            if isinstance(name, InvalidTarget):
                return name
            texts = [name]
            params: list[tuple[str, str]] = []
            piece_offset = offset + len(name_raw) + 1
            for piece in param_pieces:
                if piece:
                    key_raw, _, value_raw = piece.partition(b"=")
                    key = _decode_segment_piece(key_raw, piece_offset, index, p)
                    if isinstance(key, InvalidTarget):
                        return key
                    value_offset = piece_offset + len(key_raw) + 1
                    value = _decode_segment_piece(value_raw, value_offset, index, p)
                    if isinstance(value, InvalidTarget):
                        return value
                    params.append((key, value))
                    texts += (key, value)
                piece_offset += len(piece) + 1
            error = _dots_error(name, raw_segment, offset, index, p)
            error = error or _double_encoding_error(texts, offset, index, p)
            if error:
                return error
            segments.append(name)
            all_params.append(tuple(params))
        elif p._ascii_clean and _PERCENT not in raw_segment and _SEMICOLON not in raw_segment:
            # Raw bytes are checked already: plain ASCII text, and only the
            # dot rule can apply to it.
            text = raw_segment.decode("ascii")
            if p._reject_dots and text in _DOT_SEGMENTS:
                return InvalidTarget("dot-segment", "path", index, offset)
            segments.append(text)
        else:
            decoded = _decode_segment_piece(raw_segment, offset, index, p)
            if isinstance(decoded, InvalidTarget):
                return decoded
            error = _dots_error(decoded, raw_segment, offset, index, p)
            error = error or _double_encoding_error([decoded], offset, index, p)
            if error:
                return error
            segments.append(decoded)
        offset += len(raw_segment) + 1
    return tuple(segments), (tuple(all_params) if split else None)


def _decode_segment_piece(piece: bytes, offset: int, index: int, p: Policy) -> str | InvalidTarget:
    if _PERCENT in piece:
        # malformed-escape comes before the encoded-slash rules.
        error = _escape_error(piece, offset, "path", index)
        if error:
            return error
        if p.encoded_slash == "reject":
            found = _ENCODED_SLASH.search(piece)
            if found:
                return InvalidTarget("encoded-slash", "path", index, offset + found.start())
        if p.encoded_backslash == "reject":
            found = _ENCODED_BACKSLASH.search(piece)
            if found:
                return InvalidTarget("encoded-backslash", "path", index, offset + found.start())
        decoded = _unescape(piece)
    else:
        decoded = piece
    return _text_of(decoded, piece, offset, "path", index, p)


def _double_encoding_error(
    texts: list[str], offset: int, index: int, p: Policy
) -> InvalidTarget | None:
    """An escape left in decoded text (from %25XX) is double encoding."""
    if p.double_encoding == "reject" and any(_ESCAPE_IN_TEXT.search(text) for text in texts):
        return InvalidTarget("double-encoding", "path", index, offset)
    return None


def _dots_error(
    text: str, raw_segment: bytes, offset: int, index: int, p: Policy
) -> InvalidTarget | None:
    if not p._reject_dots:
        return None
    if text in _DOT_SEGMENTS:
        return InvalidTarget("dot-segment", "path", index, offset)
    # "..;x" is ".." to servlet containers, which strip path parameters
    # before resolving dot segments (the Tomcat "..;/" traversal behind a
    # proxy): a segment whose part before its first raw ';' is a dot segment
    # counts as one in every mode.
    semicolon = raw_segment.find(b";")
    if semicolon >= 0 and _unescape(raw_segment[:semicolon]).decode("utf-8") in _DOT_SEGMENTS:
        return InvalidTarget("dot-segment", "path", index, offset)
    return None


def _check_pair(
    piece: bytes, offset: int, index: int, p: Policy
) -> tuple[str, str] | InvalidTarget:
    if p.plus_as_space:
        # '+' means space in form-encoded queries; replaced before
        # percent-decoding so that %2B stays '+' (seed 000). Same length,
        # so offsets hold.
        piece = piece.replace(b"+", b" ")
    name_raw, _, value_raw = piece.partition(b"=")
    if p._ascii_clean and _PERCENT not in piece:
        return name_raw.decode("ascii"), value_raw.decode("ascii")
    name = _decode_piece(name_raw, offset, "query", index, p)
    if isinstance(name, InvalidTarget):
        return name
    value = _decode_piece(value_raw, offset + len(name_raw) + 1, "query", index, p)
    if isinstance(value, InvalidTarget):
        return value
    return name, value


def _escape_error(
    piece: bytes, offset: int, component: Component, index: int
) -> InvalidTarget | None:
    bad = _MALFORMED_ESCAPE.search(piece)
    if bad:
        return InvalidTarget("malformed-escape", component, index, offset + bad.start())
    return None


def _decode_piece(
    piece: bytes, offset: int, component: Component, index: int, p: Policy
) -> str | InvalidTarget:
    """Percent-decode one piece as strict UTF-8 and check its characters."""
    if _PERCENT in piece:
        error = _escape_error(piece, offset, component, index)
        if error:
            return error
        decoded = _unescape(piece)
    else:
        decoded = piece
    return _text_of(decoded, piece, offset, component, index, p)


def _text_of(
    decoded: bytes, piece: bytes, offset: int, component: Component, index: int, p: Policy
) -> str | InvalidTarget:
    """Decoded bytes as strict UTF-8 text, checked against the policy."""
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError as error:
        return InvalidTarget(
            "invalid-utf8", component, index, offset + _raw_offset(piece, error.start)
        )
    found = not (p._printable_ok and text.isprintable()) and p._forbidden.search(text)
    if found:
        decoded_at = len(text[: found.start()].encode("utf-8"))
        return InvalidTarget(
            "forbidden-char", component, index, offset + _raw_offset(piece, decoded_at)
        )
    return text


def _raw_offset(piece: bytes, decoded_index: int) -> int:
    """Where decoded byte ``decoded_index`` starts in ``piece`` (error path only)."""
    position = 0
    for _ in range(decoded_index):
        position += 3 if piece[position] == _PERCENT else 1
    return position


def _pair_index(query: bytes, position: int) -> int:
    """Which non-empty pair the byte at ``position`` of ``query`` is in."""
    return sum(1 for piece in query[:position].split(b"&")[:-1] if piece)


def _nth(data: bytes, needle: bytes, n: int) -> int:
    """The position of the ``n``-th (0-based) occurrence of ``needle``."""
    position = -1
    for _ in range(n + 1):
        position = data.find(needle, position + 1)
    return position
