"""One tally: the evidence of the requests of one cause under one
directory prefix (or of one rule never loosened), in memory bounded however
many targets, clients and times it sees; and the prefixes tallies are kept
under.
"""

from __future__ import annotations

import heapq
import operator
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from itertools import compress, islice, repeat
from typing import Final, cast

from ..display import display
from .evidence import (
    COUNTED,
    Counted,
    day_of,
)
from .never import route_directory
from .read import Atom
from .result import Evidence

#: Examples kept per tally.
STOPPED_EXAMPLES: Final = 5
#: Bytes of a target shown in an example.
EXAMPLE_BYTES: Final = 100

# A route prefix must be printable ASCII without space, '?' or '#'
# (_config.check_prefix); a raw path may hold other bytes under a policy
# that accepts them raw, and a prefix is then cut before them.
_BAD_PREFIX_BYTE: Final = re.compile(rb"[^!-~]|[?#]")
# The requests of the clients of a network past PER_NETWORK, and of the
# networks past COUNTED, counted together. A logged address never holds a
# control byte (servers escape them).
_UNLISTED: Final = b"\x01"
#: Clients listed one by one per network: what scanners are told apart by.
PER_NETWORK: Final = 4


# Per client: requests that are evidence, and the first and last time.
_Seen = tuple[int, float | None, float | None]


def _earlier(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _later(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


class Tally:
    """Requests of one cause under one prefix (or of one rule never
    loosened): the evidence, in memory bounded whatever the log."""

    __slots__ = (
        "against",
        "contested",
        "failed",
        "first",
        "kept",
        "last",
        "least",
        "needs",
        "networks",
        "redirected",
        "rules",
        "served",
        "targets",
    )

    def __init__(self) -> None:
        self.served = 0  # requests answered 2xx/3xx
        self.redirected = 0  # of those, answered 3xx but 304: no evidence
        self.contested = 0  # of those, on targets answered 4xx/5xx too
        self.failed = 0  # requests answered 4xx/5xx
        self.against = 0  # of those, on targets answered 2xx/3xx too
        # Evidence per network (network_key, at most COUNTED) and client
        # (client_key, at most PER_NETWORK), the rest under _UNLISTED. Listing
        # networks first keeps their count exact up to COUNTED however many
        # clients one network has, so more evidence never lowers it.
        self.networks: dict[bytes, dict[bytes, _Seen]] = {}
        self.targets: set[int] = set()  # hashes of served targets, at most COUNTED
        self.first: float | None = None  # of all served requests
        self.last: float | None = None
        # Served targets kept as examples (at most STOPPED_EXAMPLES), with
        # their requests, and the one a better target would replace.
        self.kept: dict[bytes, int] = {}
        self.least: tuple[int, bytes] | None = None
        self.needs: dict[Atom, int] = {}  # the value each limit needs
        self.rules: set[str] = set()

    def add_served(
        self,
        target: bytes,
        count: int,
        clients: Sequence[tuple[bytes, bytes]],
        first: float | None,
        last: float | None,
        *,
        redirect: bool = False,
    ) -> None:
        """``count`` requests of ``target`` from ``clients`` (pairs of
        network and client key, sorted), answered 2xx/3xx; ``redirect``: a
        3xx other than 304."""
        self.served += count
        if len(self.targets) < COUNTED:
            self.targets.add(hash(target))
        if first is not None and (self.first is None or first < self.first):
            self.first = first
        if last is not None and (self.last is None or last > self.last):
            self.last = last
        self._example(count, target)
        if redirect:
            self.redirected += count
            return
        # The requests shared out among the clients (a chunk of the log
        # says who sent a target and how often, not who sent how many).
        if len(clients) == 1:
            network, client = clients[0]
            self._put(network, client, (count, first, last))
        elif not clients:
            self._put(_UNLISTED, _UNLISTED, (count, first, last))
        else:
            share, extra = divmod(count, len(clients))
            for n, (network, client) in enumerate(clients):
                self._put(network, client, (share + (n < extra), first, last))

    def add_rows(
        self,
        targets: Sequence[bytes],
        counts: Sequence[int],
        clients: Sequence[Sequence[tuple[bytes, bytes]]],
        firsts: Sequence[float | None],
        lasts: Sequence[float | None],
        redirects: Sequence[bool],
    ) -> None:
        """:meth:`add_served` for many rows at once (one per distinct target
        and status of a chunk, in the order they came): the same tally as
        row by row, but for the examples, the most requested of all rows."""
        self.served += sum(counts)
        known = self.targets
        if len(known) < COUNTED:
            for digest in map(hash, targets):
                known.add(digest)
                if len(known) >= COUNTED:
                    break
        if None in firsts:
            firsts_known = [moment for moment in firsts if moment is not None]
            lasts_known = [moment for moment in lasts if moment is not None]
        else:
            firsts_known, lasts_known = cast(list[float], firsts), cast(list[float], lasts)
        if firsts_known:
            self.first = _earlier(self.first, min(firsts_known))
            self.last = _later(self.last, max(lasts_known))
        self._examples(targets, counts)
        if True in redirects:
            self.redirected += sum(compress(counts, redirects))
            keep = list(map(operator.not_, redirects))
            counts, clients = list(compress(counts, keep)), list(compress(clients, keep))
            firsts, lasts = list(compress(firsts, keep)), list(compress(lasts, keep))
        for (network, client), seen in _per_client(counts, clients, firsts, lasts).items():
            self._put(network, client, seen)

    def _put(self, network: bytes, client: bytes, seen: _Seen) -> None:
        networks = self.networks
        clients = networks.get(network)
        if clients is None:
            if len(networks) - (_UNLISTED in networks) >= COUNTED:
                network = client = _UNLISTED
                clients = networks.setdefault(network, {})
            else:
                clients = networks[network] = {}
        if client not in clients and len(clients) - (_UNLISTED in clients) >= PER_NETWORK:
            client = _UNLISTED
        before = clients.get(client)
        clients[client] = (
            seen
            if before is None
            else (before[0] + seen[0], _earlier(before[1], seen[1]), _later(before[2], seen[2]))
        )

    def _example(self, count: int, target: bytes) -> None:
        """Keep the most requested targets, the least bytes first among
        equals (the same log, the same examples, in any order)."""
        kept = self.kept
        if target in kept:
            kept[target] += count
        elif len(kept) < STOPPED_EXAMPLES:
            kept[target] = count
        else:
            least = self._least()
            if count < least[0] or (count == least[0] and target > least[1]):
                return  # no better than the least kept: the common case
            del kept[least[1]]
            kept[target] = count
        self.least = None  # found again when next needed

    def _examples(self, targets: Sequence[bytes], counts: Sequence[int]) -> None:
        """:meth:`_example` for many targets: the kept ones counted, then the
        best of the others offered, best first."""
        kept = self.kept
        ones = all(map(operator.eq, counts, repeat(1)))
        if ones and len(kept) >= STOPPED_EXAMPLES:
            distinct = dict.fromkeys(targets)
            if len(distinct) == len(targets):
                # One request for each target (a log of distinct targets):
                # the kept ones counted where they come again; then only a
                # target less than the least kept one, if that has one
                # request, can take its place.
                for target in kept.keys() & distinct.keys():
                    kept[target] += 1
                    self.least = None
                fewest, most_bytes = self._least()
                if fewest > 1:
                    return
                targets = [t for t in filter(most_bytes.__gt__, targets) if t not in kept]
                counts = [1] * len(targets)
        if ones:
            per_target = Counter(targets)
        else:
            per_target = Counter()
            for target, count in zip(targets, counts, strict=True):
                per_target[target] += count
        for target in kept.keys() & per_target.keys():
            kept[target] += per_target.pop(target)
            self.least = None
        best = heapq.nsmallest(
            STOPPED_EXAMPLES, zip(map(operator.neg, per_target.values()), per_target, strict=True)
        )
        for minus, target in best:
            self._example(-minus, target)

    def _least(self) -> tuple[int, bytes]:
        """The kept example a better target replaces: the fewest requests,
        the most bytes among equals."""
        least = self.least
        if least is None:
            worst = max((-n, shown) for shown, n in self.kept.items())
            least = self.least = (-worst[0], worst[1])
        return least

    @property
    def examples(self) -> list[tuple[int, bytes]]:
        """The examples, most requested first."""
        return sorted(((n, target) for target, n in self.kept.items()), key=_by_requests)

    def merge(self, other: Tally) -> None:
        self.served += other.served
        self.redirected += other.redirected
        self.contested += other.contested
        self.failed += other.failed
        self.against += other.against
        for network, clients in sorted(other.networks.items()):
            for client, seen in sorted(clients.items()):
                self._put(network, client, seen)
        self.targets |= set(sorted(other.targets)[: max(0, COUNTED - len(self.targets))])
        self.first = _earlier(self.first, other.first)
        self.last = _later(self.last, other.last)
        for count, target in other.examples:
            self._example(count, target)
        for atom, need in other.needs.items():
            self.needs[atom] = max(self.needs.get(atom, 0), need)
        self.rules |= other.rules

    def _counted(
        self, scanners: Collection[bytes]
    ) -> tuple[int, int, int, set[int], float | None, float | None]:
        """Requests, clients and networks that count, and their days, first
        and last time."""
        requests = listed = networks = 0
        days: set[int] = set()
        first: float | None = None
        last: float | None = None
        for network, clients in self.networks.items():
            counts = False
            for client, (n, a, b) in clients.items():
                if client in scanners:
                    continue
                counts = True
                requests += n
                listed += client != _UNLISTED
                for moment in (a, b):
                    if moment is not None:
                        days.add(day_of(moment))
                first, last = _earlier(first, a), _later(last, b)
            networks += counts and network != _UNLISTED
        return requests, listed, networks, days, first, last

    def count(self, scanners: Collection[bytes]) -> Counted:
        """The evidence as the thresholds read it, without ``scanners``."""
        requests, _, networks, days, first, last = self._counted(scanners)
        span = 0.0 if first is None or last is None else last - first
        return Counted(max(0, requests - self.contested), networks, len(days), span)

    def evidence(self, scanners: Collection[bytes]) -> Evidence:
        example = self.examples[0][1] if self.examples else b""
        counted = self.count(scanners)
        _, listed, _, _, _, _ = self._counted(scanners)
        discounted = sum(
            seen[0]
            for clients in self.networks.values()
            for client, seen in clients.items()
            if client in scanners
        )
        return Evidence(
            requests=counted.requests,
            served=self.served,
            targets=len(self.targets),
            clients=listed,
            networks=counted.networks,
            days=counted.days,
            first=self.first,
            last=self.last,
            example=display(example, limit=EXAMPLE_BYTES) if example else "",
            failed=self.failed,
            against=self.against,
            contested=self.contested,
            redirected=self.redirected,
            discounted=discounted,
        )


def _per_client(
    counts: Sequence[int],
    clients: Sequence[Sequence[tuple[bytes, bytes]]],
    firsts: Sequence[float | None],
    lasts: Sequence[float | None],
) -> dict[tuple[bytes, bytes], _Seen]:
    """Requests per (network, client) and their first and last time, in the
    order the clients first come. A row's requests are shared out among its
    clients (a chunk of the log says who sent a target and how often, not
    who sent how many); a row without clients counts as one unlisted."""
    if all(map(operator.eq, counts, repeat(1))) and all(
        map(operator.eq, map(len, clients), repeat(1))
    ):
        pairs = list(map(_FIRST, clients))
        if None not in firsts and all(map(operator.eq, firsts, lasts)):
            # The common row: one request from one client. Counted in C; the
            # first and last time of each client from the rows in time
            # order (a log's, most often: then they are not sorted again).
            moments = cast(list[float], firsts)
            ordered = pairs
            if not all(map(operator.le, moments, islice(moments, 1, None))):
                order = sorted(range(len(pairs)), key=moments.__getitem__)
                ordered = list(map(pairs.__getitem__, order))
                moments = list(map(moments.__getitem__, order))
            last = dict(zip(ordered, moments, strict=True))
            first = dict(zip(reversed(ordered), reversed(moments), strict=True))
            return {pair: (n, first[pair], last[pair]) for pair, n in Counter(pairs).items()}
    seen: dict[tuple[bytes, bytes], _Seen] = {}
    for count, row, a, b in zip(counts, clients, firsts, lasts, strict=True):
        if not row:
            row = ((_UNLISTED, _UNLISTED),)
        share, extra = divmod(count, len(row))
        for n, pair in enumerate(row):
            before = seen.get(pair)
            mine = share + (n < extra)
            seen[pair] = (
                (mine, a, b)
                if before is None
                else (before[0] + mine, _earlier(before[1], a), _later(before[2], b))
            )
    return seen


_FIRST: Final = operator.itemgetter(0)


def _by_requests(example: tuple[int, bytes]) -> tuple[int, bytes]:
    return -example[0], example[1]


def merged(tallies: Iterable[Tally]) -> Tally:
    result = Tally()
    for tally in tallies:
        result.merge(tally)
    return result


def depth_of(prefix: bytes) -> int:
    """Segments of a prefix: its '/', and one more for a name after the last."""
    return prefix.count(b"/") + (not prefix.endswith(b"/"))


def cut(prefix: bytes, depth: int | None) -> bytes:
    """``prefix`` cut to ``depth`` segments, up to the '/' that ends them
    (all of it for ``None`` or when it has no more)."""
    if depth is None:
        return prefix
    pieces = prefix.split(b"/", depth)  # the last piece: what follows the depth-th '/'
    return prefix if len(pieces) <= depth else prefix[: len(prefix) - len(pieces[-1])]


def directory(paths: Sequence[bytes]) -> bytes:
    """The longest raw prefix of all ``paths`` that ends in '/' and is a
    valid route prefix, never past an empty segment (see
    ``never.route_directory``)."""
    if len(paths) == 1:
        return _directory_of(paths[0])
    # The common prefix of the least and the greatest is everyone's.
    first, last = min(paths), max(paths)
    size = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        size += 1
    return _directory_of(first[:size])


# prefix_of in one match, of a path or of the target it starts: a path of
# one clean segment is its own prefix, else its segments up to the last
# '/' that are clean and not empty.
_CLEAN: Final = rb"[^\x00-\x20\x7f-\xff/?#]"
_PREFIX: Final = re.compile(b"/(?:" + _CLEAN + rb"++(?=\?|\Z)|(?:" + _CLEAN + b"++/)*+)")
#: The same, of each line of many targets at once.
PREFIXES: Final = re.compile(
    b"^(?:/" + _CLEAN + rb"++(?=\?|$)|/(?:" + _CLEAN + rb"++/)*+)?", re.MULTILINE
)


def prefix_of(path: bytes) -> bytes:
    """The narrowest prefix a target of ``path`` is tallied under: its
    directory (see :func:`directory`), or, directly under '/', the path
    itself ('/' alone would be a site-wide change)."""
    found = _PREFIX.match(path)
    return b"/" if found is None else found[0]


def _directory_of(path: bytes) -> bytes:
    """:func:`directory` of one path."""
    common = route_directory(path)
    bad = _BAD_PREFIX_BYTE.search(common)
    if bad is not None:
        common = common[: common.rfind(b"/", 0, bad.start()) + 1]
    return common or b"/"
