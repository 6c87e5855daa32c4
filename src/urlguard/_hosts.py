"""The guard's host check: the grammar (``_host``), an allow-list, and a
bounded table of recent verdicts.

A request names its host in its Host header (HTTP/1.x), in ``:authority``
(HTTP/2 and HTTP/3; servers hand it to the application as a ``host``
header), and in an absolute-form target. The adapters hand the guard the
Host value as the server gave it: missing (HTTP/1.1) as ``b""`` and
several as their values joined by ``", "`` (as waitress merges them), both
of which the grammar refuses: RFC 9112 §3.2 makes either a 400.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ._errors import InvalidTarget
from ._host import Host, parse_host
from ._target import Target

__all__ = ["AllowedHosts", "HostCheck", "agree", "same_authority"]

#: At most this many valid hosts are remembered; past it the table starts
#: again, so a flood of distinct hosts costs parsing, never memory.
VERDICTS: Final = 1024

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class AllowedHosts:
    """``allowed_hosts``: exact names (``example.com``, ``example.com:8443``)
    and ``*.example.com`` for every name below ``example.com`` (not itself).

    Matched on the A-label form, case-insensitively, with a trailing dot
    ignored; a pattern without a port allows every port, one with a port
    that port alone. A pattern the host grammar refuses is a ``ValueError``.
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
            try:
                host = parse_host(_a_label(pattern[2:] if wildcard else pattern).encode("ascii"))
            except (InvalidTarget, UnicodeError):
                raise ValueError(
                    f"{owner}: allowed_hosts entry {pattern!r} is not a host name "
                    "(a name, IPv4 address or [IPv6] literal, with an optional :port; "
                    "'*.example.com' for the names below example.com)"
                ) from None
            if wildcard and host.name.startswith("["):
                raise ValueError(f"{owner}: allowed_hosts entry {pattern!r}: '*.' needs a name")
            (self.suffixes if wildcard else self.exact).add((_bare(host.name), host.port))

    def allows(self, host: Host) -> bool:
        name = _bare(host.name)
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

    def judge(self, raw: bytes) -> Host:
        """The Host ``raw`` names, or ``bad-host`` / ``host-not-allowed``."""
        host = parse_host(raw)
        if self.allowed is not None and not self.allowed.allows(host):
            raise InvalidTarget("host-not-allowed", "host", None, 0)
        known = self.known
        if len(known) >= VERDICTS:
            known.clear()
        known[raw] = host
        return host


def agree(host: Host, other: Host, scheme: str) -> bool:
    """Two spellings of one authority: the same name, and the same port once
    a missing one is read as the scheme's default (RFC 9110 §4.2.1, §4.2.2)."""
    default = _DEFAULT_PORTS.get(scheme)
    return _bare(host.name) == _bare(other.name) and (
        (default if host.port is None else host.port)
        == (default if other.port is None else other.port)
    )


def same_authority(target: Target, host: Host) -> bool:
    """An absolute-form ``target`` names the authority ``host`` names
    (RFC 9112 §3.2.2: a client sends the target's authority as Host)."""
    scheme = "https" if target.raw[:6].lower() == b"https:" else "http"
    authority = parse_host((target.authority or "").encode("ascii"), "target")
    return agree(authority, host, scheme)


def _bare(name: str) -> str:
    """A name without its trailing dot (the same name to DNS, RFC 1034 §3.1)."""
    return name[:-1] if name.endswith(".") else name


def _a_label(pattern: str) -> str:
    """A pattern's A-label form: IDNA 2008 with the ``idna`` package, else
    Python's IDNA 2003 codec (the same for the names people list)."""
    if pattern.isascii():
        return pattern.lower()
    name, colon, port = pattern.rpartition(":") if ":" in pattern else (pattern, "", "")
    try:
        import idna
    except ImportError:
        encoded = name.encode("idna").decode("ascii")
    else:
        encoded = idna.encode(name, uts46=True).decode("ascii")
    return f"{encoded}{colon}{port}"
