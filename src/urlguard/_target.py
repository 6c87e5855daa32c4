"""``Target``: a request target that passed every rule, with its decoded pieces.

Both parsers (the pure-Python reference and the compiled module) build it
through its constructor. The decoded pieces may be handed over ready, or left
to be decoded from the raw bytes the first time they are read: a parser that
has accepted the target has checked every escape and every character, so
decoding is then a plain split and percent-decode that cannot fail.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

Pairs = tuple[tuple[str, str], ...]

_PERCENT = ord("%")


class Target:
    """A request target that passed every rule, with its decoded pieces.

    Immutable: every public attribute is read-only. ``raw`` is the target
    exactly as received; ``segments`` and ``query`` are the decoded pieces,
    split before decoding, so a ``%2F`` kept by ``encoded_slash="keep"`` is a
    ``/`` *inside* a segment and a ``%26`` is an ``&`` inside a query value.

        >>> from urlguard import parse_target
        >>> t = parse_target(b"/caf%C3%A9/x?q=a+b&q=c")
        >>> t.segments, t.query, t.get("q"), t.get_all("q")
        (('café', 'x'), (('q', 'a b'), ('q', 'c')), 'a b', ['a b', 'c'])

    Built by the parsers as ``Target(raw, segments, query, params=...,
    authority=...)``. ``segments`` or ``query`` left as ``None`` are decoded
    from ``raw`` when first read (split on ``/``, on ``&`` and the first
    ``=``, ``+`` as space when ``plus_as_space``, then percent-decoded as
    UTF-8); that is exact for a target a parser accepted, except under
    ``path_params="split"``, where the parser hands the pieces over.
    """

    __slots__ = ("_authority", "_params", "_plus", "_query", "_raw", "_segments")

    def __init__(
        self,
        raw: bytes,
        segments: tuple[str, ...] | None = None,
        query: Pairs | None = None,
        *,
        params: tuple[Pairs, ...] | None = None,
        authority: str | None = None,
        plus_as_space: bool = True,
    ) -> None:
        self._raw = raw
        self._segments = segments
        self._query = query
        self._params = params
        self._authority = authority
        self._plus = plus_as_space

    @property
    def raw(self) -> bytes:
        """The whole target as received, bytes."""
        return self._raw

    @property
    def raw_path(self) -> bytes:
        """The path as received (``b"/"`` for an absolute-form target without one)."""
        start = _path_start(self._raw)
        question = self._raw.find(b"?", start)
        end = question if question >= 0 else len(self._raw)
        return self._raw[start:end] or b"/"

    @property
    def raw_query(self) -> bytes | None:
        """The query as received, without the ``?``; ``None`` when there was no ``?``."""
        question = self._raw.find(b"?", _path_start(self._raw))
        return None if question < 0 else self._raw[question + 1 :]

    @property
    def authority(self) -> str | None:
        """``host[:port]`` of an absolute-form target, its escapes decoded
        (they passed the same checks as a path segment's, and none decodes to
        a delimiter); as sent otherwise: not lowercased, not IDNA-converted.
        ``None`` for an origin-form target."""
        return self._authority

    @property
    def segments(self) -> tuple[str, ...]:
        """The decoded path segments: ``/`` is ``("",)``, ``/a/b/`` is ``("a", "b", "")``.
        Under ``path_params="split"`` each is the part before its first ``;``."""
        if self._segments is None:
            pieces = self.raw_path[1:]
            if _PERCENT in pieces:
                self._segments = tuple(map(_decode, pieces.split(b"/")))
            else:
                self._segments = tuple(pieces.decode().split("/"))
        return self._segments

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
        if self._query is None:
            raw_query = self.raw_query or b""
            if self._plus:
                raw_query = raw_query.replace(b"+", b" ")  # before decoding: %2B stays '+'
            escaped = _PERCENT in raw_query
            pairs = []
            for piece in raw_query.split(b"&"):
                if piece:
                    # Split at the first raw '=' before decoding: %3D is data.
                    name, _, value = piece.partition(b"=")
                    if escaped:
                        pairs.append((_decode(name), _decode(value)))
                    else:
                        pairs.append((name.decode(), value.decode()))
            self._query = tuple(pairs)
        return self._query

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
            and self.authority == other.authority
            and self.segments == other.segments
            and self.params == other.params
            and self.query == other.query
        )

    def __hash__(self) -> int:
        # Equal targets have equal raw bytes; reading raw decodes nothing.
        return hash(self._raw)

    def __repr__(self) -> str:
        params = f", params={self.params!r}" if any(self.params) else ""
        return f"Target(raw={self.raw!r}, segments={self.segments!r}, query={self.query!r}{params})"


def _path_start(raw: bytes) -> int:
    """Where the path starts: 0 in origin-form; after the authority in
    absolute-form, whose authority holds no '/' or '?' (RFC 3986 §3.2)."""
    if raw[:1] == b"/":
        return 0
    start = raw.find(b"//") + 2
    ends = [end for end in (raw.find(b"/", start), raw.find(b"?", start)) if end >= 0]
    return min(ends, default=len(raw))


def _decode(piece: bytes) -> str:
    """An accepted piece, percent-decoded as UTF-8 (checked already: strict)."""
    return unquote_to_bytes(piece).decode() if _PERCENT in piece else piece.decode()
