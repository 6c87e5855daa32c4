"""The guard's host check: the grammar (``host``), an allow-list, and a
bounded table of recent verdicts.

A request names its host in its Host header (HTTP/1.x), in ``:authority``
(HTTP/2 and HTTP/3; servers hand it to the application as a ``host``
header), and in an absolute-form target. The adapters hand the guard the
Host value as the server gave it, or a :class:`HostFault` when there is no
one value to give: none on HTTP/1.1 (RFC 9112 §3.2), several, or, over
HTTP/2, ``host`` headers that disagree (RFC 9113 §8.3.1). Each of those
is ``bad-host``. HTTP/1.0 may leave Host out (``None``): then the host is
the absolute-form target's authority, if it has one (RFC 9112 §3.2.2).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import idna

from .._url.errors import InvalidTarget
from .._url.host import Host, authority_span, is_address, parse_host

__all__ = [
    "DISAGREEING",
    "MISSING",
    "REPEATED",
    "AllowedHosts",
    "HostCheck",
    "HostFault",
    "cause",
]

#: At most this many valid hosts are remembered; past it the table starts
#: again, so a flood of distinct hosts costs parsing, never memory.
VERDICTS: Final = 1024


class HostFault:
    """Why a request has no one Host value: ``cause`` is ``"missing"``,
    ``"repeated"`` or ``"disagreeing"`` (the adapters' :data:`MISSING`,
    :data:`REPEATED`, :data:`DISAGREEING`). Hashed by identity, so looking
    one up in the verdict table finds nothing and compares no bytes."""

    __slots__ = ("cause",)

    def __init__(self, cause: str) -> None:
        self.cause = cause

    def __repr__(self) -> str:
        return f"HostFault({self.cause!r})"


#: HTTP/1.1 without Host (RFC 9112 §3.2).
MISSING: Final = HostFault("missing")
#: Several Host lines (RFC 9112 §3.2).
REPEATED: Final = HostFault("repeated")
#: ``host`` headers that name different hosts over HTTP/2 or HTTP/3 (RFC 9113 §8.3.1).
DISAGREEING: Final = HostFault("disagreeing")


class AllowedHosts:
    """``allowed_hosts``: exact hosts (``example.com``, ``example.com:8443``,
    ``[::1]``) and ``*.example.com`` for every name below ``example.com``
    (not itself). Unicode names are taken to their A-labels by the ``idna``
    package (UTS 46 mapping, then IDNA 2008), as browsers do.

    Each entry is read by the host grammar and kept in its one spelling, so
    ``[0::1]`` listed allows ``[::1]`` sent, ``Example.COM.`` allows
    ``example.com``; an entry without a port allows every port, one with a
    port that port alone. An entry the grammar refuses is a ``ValueError``,
    and so is an empty list, which would refuse every request (leave
    ``allowed_hosts`` unset to accept any valid host).
    """

    __slots__ = ("exact", "suffixes")

    def __init__(self, patterns: object, owner: str) -> None:
        if isinstance(patterns, str | bytes) or not isinstance(patterns, Iterable):
            raise TypeError(f"{owner}: allowed_hosts must be a list of host names")
        self.exact: set[tuple[str, int | None]] = set()
        self.suffixes: set[tuple[str, int | None]] = set()
        for pattern in patterns:
            if not isinstance(pattern, str):
                raise TypeError(f"{owner}: allowed_hosts holds {type(pattern).__name__}, not str")
            wildcard = pattern.startswith("*.")
            host = _entry(pattern[2:] if wildcard else pattern, pattern, owner)
            if wildcard and is_address(host.name):
                raise ValueError(f"{owner}: allowed_hosts entry {pattern!r}: '*.' needs a name")
            (self.suffixes if wildcard else self.exact).add(host)
        if not self.exact and not self.suffixes:
            raise ValueError(
                f"{owner}: allowed_hosts is empty, which would refuse every request; "
                "list the hosts the application serves, or leave it unset (None) "
                "to accept any valid host"
            )

    def allows(self, host: Host) -> bool:
        name = host.name
        if (name, None) in self.exact or (name, host.port) in self.exact:
            return True
        for suffix, port in self.suffixes:
            below = name.endswith(suffix) and name[-len(suffix) - 1 : -len(suffix)] == "."
            if below and (port is None or port == host.port):
                return True
        return False


class HostCheck:
    """The host verdict of one guard: valid, allowed, remembered."""

    __slots__ = ("allowed", "known")

    def __init__(self, allowed: AllowedHosts | None) -> None:
        self.allowed = allowed
        #: raw Host value -> the valid, allowed Host it names (bounded: VERDICTS).
        self.known: dict[bytes, Host] = {}

    def verdict(self, raw: bytes | HostFault) -> Host:
        """The Host ``raw`` names: the verdict table's, or :meth:`judge`'s."""
        if isinstance(raw, bytes):
            known = self.known.get(raw)
            if known is not None:
                return known
        return self.judge(raw)

    def judge(self, raw: bytes | HostFault) -> Host:
        """The Host ``raw`` names, or ``bad-host`` / ``host-not-allowed``;
        remembered in the verdict table when valid and allowed."""
        if isinstance(raw, HostFault):
            raise InvalidTarget("bad-host", "host", None, 0)
        host = parse_host(raw)
        if self.allowed is not None and not self.allowed.allows(host):
            raise InvalidTarget("host-not-allowed", "host", None, 0)
        known = self.known
        if len(known) >= VERDICTS:
            known.clear()
        known[raw] = host
        return host

    def unnamed(self, target: bytes | None) -> Host | None:
        """The host of a request without Host (HTTP/1.0): an absolute-form
        ``target``'s authority (RFC 9112 §3.2.2), judged against the
        allow-list; ``None`` when there is no list, or when the authority
        is not a valid host (the parser reports that, with its offset).
        With a list and no authority, ``host-not-allowed``: an application
        that lists its hosts serves no unnamed one."""
        if self.allowed is None:
            return None
        span = None if target is None else authority_span(target)
        if target is None or span is None:
            raise InvalidTarget("host-not-allowed", "host", None, 0)
        try:
            host = parse_host(target[span[0] : span[1]], "target")
        except InvalidTarget:
            return None
        if not self.allowed.allows(host):
            raise InvalidTarget("host-not-allowed", "host", None, 0)
        return host


def cause(exc: InvalidTarget, value: object) -> str:
    """Which of the four causes made ``exc`` (``bad-host``) of the Host
    ``value`` the adapter gave: ``missing`` (none, or an empty one, which
    names none either), ``repeated`` (several, or a value a server merged
    from several with ", ", RFC 9110 §5.3), ``malformed`` (the grammar
    refuses it, or the absolute-form authority), ``disagreeing`` (a valid
    Host, but the target's authority or another ``host`` header names
    another)."""
    if type(value) is HostFault:
        return value.cause
    if exc.component != "host":
        return "malformed"  # the absolute-form target's authority
    if type(value) is Host:
        return "disagreeing"
    raw = value if isinstance(value, bytes) else b""
    if not raw:
        return "missing"
    if b", " in raw:
        return "repeated"
    try:
        parse_host(raw)
    except InvalidTarget:
        return "malformed"
    return "disagreeing"


def _entry(text: str, pattern: str, owner: str) -> Host:
    """One ``allowed_hosts`` entry (``*.`` taken off) in its one spelling."""
    try:
        if not text.isascii():
            name, colon, port = text.rpartition(":") if ":" in text else (text, "", "")
            # UTS 46 (case folding, width mapping), then IDNA 2008, as browsers do.
            text = idna.encode(name, uts46=True).decode("ascii") + colon + port
        return parse_host(text.encode("ascii"))
    except ValueError:  # InvalidTarget, idna.IDNAError, UnicodeError
        raise ValueError(
            f"{owner}: allowed_hosts entry {pattern!r} is not a host name "
            "(a name, IPv4 address or [IPv6] literal, with an optional :port 1-65535; "
            "'*.example.com' for the names below example.com)"
        ) from None
