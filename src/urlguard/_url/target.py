"""``Target``: a request target that passed every rule, with its decoded pieces.

The reference parser builds a ``Target``; the compiled parser builds its own
C type with the same attributes, registered as a virtual subclass (so
``isinstance(t, Target)`` holds for both, and the two compare equal). What
the two share is written once, here: the raw path and query of a raw
target, equality, ``repr`` and the lookups by name.
"""

from __future__ import annotations

import re
from abc import ABCMeta
from binascii import a2b_qp
from typing import Any, Final, Protocol

from . import grammar as g
from .host import Host, parse_host

Pairs = tuple[tuple[str, str], ...]


# An ABC only so that the compiled parser's C type can register as a subclass.
class Target(metaclass=ABCMeta):  # noqa: B024
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
    authority=..., host=...)``; a target from the compiled parser is an instance of a
    C type registered as a subclass, with the same attributes. The pure
    parser may give ``segments`` as the path and ``query`` as the query as
    sent (``bytes``; in the query a ``+`` already made a space where it is
    one), when every escape in them is the UTF-8 of an allowed character
    and none is a separator: each is decoded and split when first read.
    """

    __slots__ = ("_authority", "_host", "_params", "_query", "_raw", "_segments")

    # params, authority and host may come by position too: the pure parser's
    # quick path builds most targets, and a keyword call costs it a dict.
    def __init__(
        self,
        raw: bytes,
        segments: tuple[str, ...] | bytes,
        query: Pairs | bytes,
        params: tuple[Pairs, ...] | None = None,
        authority: str | None = None,
        host: Host | None = None,
    ) -> None:
        self._raw = raw
        self._segments = segments
        self._query = query
        self._params = params
        self._authority = authority
        # The request's host: the Host header (or :authority) the parser was
        # given, else the absolute-form authority's, as the parser judged it;
        # None: neither (or a target made by hand: then the authority's).
        self._host = host

    @property
    def raw(self) -> bytes:
        """The whole target as received, bytes."""
        return self._raw

    @property
    def raw_path(self) -> bytes:
        """The path as received (``b"/"`` for an absolute-form target without one)."""
        return raw_path_of(self._raw)

    @property
    def raw_query(self) -> bytes | None:
        """The query as received, without the ``?``; ``None`` when there was no ``?``."""
        return raw_query_of(self._raw)

    @property
    def authority(self) -> str | None:
        """``host[:port]`` of an absolute-form target, lower-cased (it passed
        the host grammar: no escapes, no userinfo, an A-label not converted);
        ``None`` for an origin-form target."""
        return self._authority

    @property
    def host(self) -> str | None:
        """The request's host, validated, lower-cased (``[...]`` for an IPv6
        literal): from the Host header (or HTTP/2's ``:authority``) when a
        guard checked the request, else the absolute-form target's;
        ``None`` when there is neither (``parse_target(b"/x")``, HTTP/1.0
        without Host)."""
        return host_of(self._host, self._authority).name

    @property
    def port(self) -> int | None:
        """The port that came with :attr:`host`, or ``None`` when none was given."""
        return host_of(self._host, self._authority).port

    @property
    def segments(self) -> tuple[str, ...]:
        """The decoded path segments: ``/`` is ``("",)``, ``/a/b/`` is ``("a", "b", "")``.
        Under ``path_params="split"`` each is the part before its first ``;``."""
        segments = self._segments
        if isinstance(segments, bytes):  # the path as sent, decoded when first read
            segments = self._segments = tuple(percent_decoded(segments)[1:].split("/"))
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
        if isinstance(query, bytes):  # the query as sent, decoded when first read
            query = self._query = query_pairs(percent_decoded(query))
        return query

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name``, or ``default``."""
        return first_value(self.query, name, default)

    def get_all(self, name: str) -> list[str]:
        """Every value of query parameter ``name``, in order."""
        return all_values(self.query, name)

    def __eq__(self, other: object) -> bool:
        same: bool = equal(self, other)  # or NotImplemented
        return same

    def __hash__(self) -> int:
        # Equal targets have equal raw bytes.
        return hash(self._raw)

    def __repr__(self) -> str:
        return describe(self)


class _AnyTarget(Protocol):
    @property
    def raw(self) -> bytes: ...
    @property
    def authority(self) -> str | None: ...
    @property
    def host(self) -> str | None: ...
    @property
    def port(self) -> int | None: ...
    @property
    def segments(self) -> tuple[str, ...]: ...
    @property
    def params(self) -> tuple[Pairs, ...]: ...
    @property
    def query(self) -> Pairs: ...


def equal(target: _AnyTarget, other: object) -> Any:
    """``target == other``: both targets (of either parser) with the same
    raw bytes and the same pieces; ``NotImplemented`` for anything else."""
    if not isinstance(other, Target):
        return NotImplemented
    return (
        target.raw == other.raw
        and target.authority == other.authority
        and target.host == other.host
        and target.port == other.port
        and target.segments == other.segments
        and target.params == other.params
        and target.query == other.query
    )


def describe(target: _AnyTarget) -> str:
    """``repr(target)``."""
    params = f", params={target.params!r}" if any(target.params) else ""
    host = f", host={target.host!r}" if target.host is not None else ""
    port = f", port={target.port!r}" if target.port is not None else ""
    return (
        f"Target(raw={target.raw!r}, segments={target.segments!r}, "
        f"query={target.query!r}{params}{host}{port})"
    )


def rebuild(
    raw: bytes,
    segments: tuple[str, ...],
    query: Pairs,
    params: tuple[Pairs, ...] | None,
    authority: str | None,
    host: tuple[str | None, int | None] | None = None,
) -> Target:
    """A ``Target`` from its fields: how a copy or a pickle of either
    parser's target is made (a plain ``Target``, wherever it is loaded)."""
    known = Host(host[0], host[1]) if host is not None and host[0] is not None else None
    return Target(raw, segments, query, params=params, authority=authority, host=known)


_NO_HOST: Final = Host(None, None)  # type: ignore[arg-type]  # the name of no host


def host_of(host: Host | None, authority: str | None) -> Host:
    """The host a guard set, else the absolute-form authority's (which
    passed the same grammar), else one whose name and port are ``None``."""
    if host is not None:
        return host
    if authority is not None:
        return parse_host(authority.encode("ascii"), "target")
    return _NO_HOST


# Each non-empty piece of a query between '&' (an empty one does not start a
# match), as its name up to its first '=' and its value after it, or "".
_PAIRS: Final = re.compile(r"(?=[^&])([^&=]*)=?([^&]*)")


def query_pairs(text: str) -> Pairs:
    """The pairs of a decoded query in which every '&' separates pieces and
    the first '=' of a piece ends its name."""
    return tuple(_PAIRS.findall(text))


def percent_decoded(raw: bytes) -> str:
    """``raw`` percent-decoded and read as UTF-8, where every '%' starts the
    escape of an octet and the octets are strict UTF-8 (the pure parser's
    quick path checked both).

    Quoted-printable (RFC 2045 §6.7) writes an octet as '=' and two hex
    digits, either case, as RFC 3986 §2.1 writes it with '%'; binascii
    decodes that in C, and leaves every other byte as it is. A raw '=' is
    written as its own escape first, so that it stays itself."""
    if _PERCENT in raw:
        if _EQUALS in raw:
            raw = raw.replace(b"=", b"%3D")
        raw = a2b_qp(raw.replace(b"%", b"="))
    return raw.decode()


# Bytes looked for, as ints: `int in bytes` is one C loop.
_PERCENT: Final = g.PERCENT
_EQUALS: Final = ord("=")


def first_value(query: Pairs, name: str, default: str | None) -> str | None:
    """The first value of ``name`` among ``query``'s pairs, or ``default``."""
    for key, value in query:
        if key == name:
            return value
    return default


def all_values(query: Pairs, name: str) -> list[str]:
    """Every value of ``name`` among ``query``'s pairs, in order."""
    return [value for key, value in query if key == name]


def raw_path_of(raw: bytes) -> bytes:
    """The raw path of an accepted target (``b"/"`` for an absolute-form one without)."""
    start = _path_start(raw)
    question = raw.find(b"?", start)
    end = question if question >= 0 else len(raw)
    return raw[start:end] or b"/"


def raw_query_of(raw: bytes) -> bytes | None:
    """The raw query of an accepted target, without the ``?``; ``None``: no ``?``."""
    question = raw.find(b"?", _path_start(raw))
    return None if question < 0 else raw[question + 1 :]


def _path_start(raw: bytes) -> int:
    """Where the path starts: 0 in origin-form; after the authority in
    absolute-form, whose authority holds no '/' or '?' (RFC 3986 §3.2)."""
    if raw[:1] == b"/":
        return 0
    start = raw.find(b"//") + 2
    ends = [end for end in (raw.find(b"/", start), raw.find(b"?", start)) if end >= 0]
    return min(ends, default=len(raw))
