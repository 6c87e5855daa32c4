"""What counts as evidence of use, and how much a change needs: the
thresholds, in one place.

A log is evidence of what clients sent and what the application answered,
and an attacker can be many clients for a few hours. Use looks different
from a campaign: it comes from many networks, over days, and is answered
with the page itself. So the engine counts

- **requests answered 2xx or 304** (a page or a cached page), not other
  redirects: a careless handler answers ``/r?next=%0D%0A...`` with 302, and
  a redirect says nothing about what the target is for;
- **distinct networks**, not addresses: an IPv4 /24 or an IPv6 /48 is one
  network, because one party usually holds a whole one (eight addresses in
  one /24 are one vantage point);
- **calendar days** (UTC), with the first and the last request at least as
  many days apart less one: a campaign is hours long, use comes back;
- and it leaves out **clients that break several unrelated rules**: a
  client whose rejected requests fall in :data:`SCANNER_FAMILIES` or more
  of the families below (an encoded slash, a raw ``<``, an overlong length)
  is probing the parser, not using the site.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Final, Literal, NamedTuple

StatusClass = Literal["served", "failed", "other"]

#: A site-wide change needs this many times the requests and networks a
#: route needs, from at least this many first path segments that each
#: have a route's evidence on their own.
SITE_FACTOR: Final = 5
#: Distinct clients listed per tally (with their requests and times); the
#: requests of further clients are counted together, their networks not.
COUNTED: Final = 64
#: Rule families: two rules of one family are one need (a GitLab client
#: sends both ``%2F`` and ``//``); rules of three families from one client
#: are a scanner's signature.
FAMILIES: Final[dict[str, str]] = {
    "encoded-slash": "separator",
    "encoded-backslash": "separator",
    "empty-segment": "separator",
    "dot-segment": "separator",
    "drive-letter": "separator",
    "malformed-escape": "encoding",
    "invalid-utf8": "encoding",
    "double-encoding": "encoding",
    "raw-char": "character",
    "forbidden-char": "character",
    "too-long": "size",
    "too-many": "size",
    "fragment": "form",
    "bad-form": "form",
    "bad-host": "form",
    "host-not-allowed": "form",
}
_FAMILY_BITS: Final = {family: 1 << n for n, family in enumerate(sorted(set(FAMILIES.values())))}
#: Families of rules a client's rejected requests break before its
#: requests stop counting as evidence.
SCANNER_FAMILIES: Final = 3
_DAY: Final = 86_400.0

_STATUS_CLASS: Final[dict[int, StatusClass]] = {2: "served", 3: "served", 4: "failed", 5: "failed"}


def status_class(status: int | None) -> StatusClass:
    """``served`` for 2xx and 3xx, ``failed`` for 4xx and 5xx, else
    ``other`` (1xx, nonsense such as nginx's 000, or no status at all)."""
    if status is None or status < 0:
        return "other"
    return _STATUS_CLASS.get(status // 100, "other")


def is_redirect(status: int | None) -> bool:
    """A 3xx other than 304: served, but no evidence of use (304 is the
    page, from the client's cache)."""
    return status is not None and 300 <= status < 400 and status != 304


def family_bits(rules: frozenset[str] | set[str]) -> int:
    """The families of ``rules`` as bits (see :data:`FAMILIES`)."""
    bits = 0
    for rule in rules:
        bits |= _FAMILY_BITS.get(FAMILIES.get(rule, ""), 0)
    return bits


def is_scanner(bits: int) -> bool:
    return bits.bit_count() >= SCANNER_FAMILIES


def client_key(client: bytes) -> bytes:
    """One client: an IPv4 address as it is, an IPv6 address as its /64
    network (one host holds a whole /64).

    >>> client_key(b"2001:db8:1:2:aaaa::1") == client_key(b"2001:db8:1:2::ffff")
    True
    """
    if b":" not in client:
        return client
    try:
        address = ipaddress.IPv6Address(client.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return client
    return b"\x00" + address.packed[:8]  # NUL: never in a logged address


def network_key(client: bytes) -> bytes:
    """The network of a client (as :func:`client_key` gives it): an IPv4
    /24, an IPv6 /48; anything else (a name) is its own network.

    >>> network_key(b"198.51.100.7") == network_key(b"198.51.100.200")
    True
    >>> network_key(client_key(b"2001:db8:1:2::1")) == network_key(client_key(b"2001:db8:1:ff::1"))
    True
    """
    if client[:1] == b"\x00":  # an IPv6 /64 (client_key)
        return client[:7]
    head, dot, _ = client.rpartition(b".")
    return head if dot and head.count(b".") == 2 else client


class Counted(NamedTuple):
    """Evidence as the thresholds read it: requests that count, distinct
    networks, calendar days, and seconds between the first and the last."""

    requests: int
    networks: int
    days: int
    span: float


def day_of(when: float) -> int:
    return int(when // _DAY)


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The evidence a change needs under a route: at least ``requests``
    requests answered 2xx or 304 (not counting those of targets also
    answered 4xx/5xx, nor those of scanners), from at least ``networks``
    distinct networks, on at least ``days`` calendar days (UTC) with the
    first and the last at least ``days - 1`` days apart. A site-wide change
    needs :data:`SITE_FACTOR` times the requests and networks, and
    :data:`SITE_FACTOR` first segments with a route's evidence each. At most
    ``routes`` routes are suggested."""

    requests: int = 20
    networks: int = 5
    days: int = 2
    routes: int = 32

    def __post_init__(self) -> None:
        for name in ("requests", "networks", "days", "routes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
        if self.networks * SITE_FACTOR > COUNTED:
            raise ValueError(f"networks must be at most {COUNTED // SITE_FACTOR}")
        if self.days > 366:
            raise ValueError(f"days must be at most 366, not {self.days!r}")

    def needs(self, *, site: bool = False) -> tuple[int, int, int]:
        """Requests, networks and days a change needs: under a route, or
        site-wide (``site``)."""
        factor = SITE_FACTOR if site else 1
        return self.requests * factor, self.networks * factor, self.days

    def met(self, counted: Counted, *, site: bool = False) -> bool:
        requests, networks, days = self.needs(site=site)
        return (
            counted.requests >= requests
            and counted.networks >= networks
            and counted.days >= days
            and counted.span >= (days - 1) * _DAY
        )

    def text(self, *, site: bool = False) -> str:
        requests, networks, days = self.needs(site=site)
        return (
            f"{_plural(requests, 'request')} answered 2xx/304 from "
            f"{_plural(networks, 'network')} on {_plural(days, 'day')}"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
