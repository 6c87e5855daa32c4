"""Tally what the log says: requests by status, and, for each target the
current policy rejects, its cause (:mod:`.read`), under its directory, with
who sent it and when. Memory is bounded by the number of causes and
directories, not by the number of distinct targets.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

from ..._guard.routes import RouteTable, path_of, percent_decode
from ..._url.errors import InvalidTarget
from ..._url.policy import Policy
from ..audit import Shape, display, folds, shape_of
from .evidence import (
    COUNTED,
    Counted,
    StatusClass,
    client_key,
    day_of,
    is_redirect,
    is_scanner,
    network_key,
    status_class,
)
from .never import route_directory
from .read import Analysis, Atom, Cause, analyse
from .result import Evidence

#: Prefixes kept per cause before siblings are merged one segment up (never
#: above the first segment, which the top level is judged by).
MAX_PREFIXES: Final = 256
#: First segments kept per cause once it is cut to them; the requests under
#: further ones are refused as one group.
MAX_FIRST_SEGMENTS: Final = 1024
#: Causes (sets of settings) kept; the requests of any further cause are
#: refused as one group.
MAX_CAUSES: Final = 256
#: Targets whose analysis and statuses are remembered (emptied when full):
#: what makes "answered 4xx/5xx on the very target" known.
KEEP_TARGETS: Final = 1 << 16
#: Clients whose rule families are remembered (see ``evidence.is_scanner``);
#: later clients are never taken for scanners.
MAX_CLIENTS: Final = 1 << 17
#: Decoded paths of targets that keep ``double_encoding = "allow"`` away;
#: past it, that setting is never suggested.
MAX_BLOCKERS: Final = 4096
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
            least = self.least
            if least is None:
                worst = max((-n, shown) for shown, n in kept.items())
                least = self.least = (-worst[0], worst[1])
            if count < least[0] or (count == least[0] and target > least[1]):
                return  # no better than the least kept: the common case
            del kept[least[1]]
            kept[target] = count
        self.least = None  # found again when next needed

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


def _by_requests(example: tuple[int, bytes]) -> tuple[int, bytes]:
    return -example[0], example[1]


def merged(tallies: Iterable[Tally]) -> Tally:
    result = Tally()
    for tally in tallies:
        result.merge(tally)
    return result


class _Known:
    """What the ledger remembers of one rejected target: its analysis, its
    directory, and its requests by status class."""

    __slots__ = ("analysis", "cut", "depth", "failed", "families", "prefix", "served")

    def __init__(self, prefix: bytes, analysis: Analysis) -> None:
        self.prefix = prefix
        self.analysis = analysis
        self.families = analysis.families
        self.served = 0
        self.failed = 0
        # The prefix cut to the depth of its cause's tallies when last looked up.
        self.cut = prefix
        self.depth: int | None = None


class Ledger:
    """Requests by status class, and what the current policy (``policy``
    with its ``routes``) rejects, tallied per cause and directory prefix.
    Fed by the auditor, one call per distinct (target, status) of a chunk;
    nothing for accepted targets but a count."""

    def __init__(
        self,
        policy: Policy | None = None,
        routes: Sequence[tuple[str, Policy]] = (),
        *,
        keep_targets: int = KEEP_TARGETS,
        max_prefixes: int = MAX_PREFIXES,
    ) -> None:
        self.policy = Policy() if policy is None else policy
        self.routes = tuple(routes)
        self.table = RouteTable(self.policy, list(self.routes))
        #: Requests with a target, by status class (accepted ones included).
        self.requests: Counter[StatusClass] = Counter()
        #: Cause -> directory prefix -> tally.
        self.groups: dict[Cause, dict[bytes, Tally]] = {}
        #: Cause -> the number of segments its prefixes are cut to (see _coarsen).
        self.depth: dict[Cause, int] = {}
        #: (rule, reason) -> served requests a rule never loosened stops.
        self.stopped: dict[tuple[str, str], Tally] = {}
        #: Failing requests a rule never loosened stops, by rule.
        self.failed_stopped: Counter[str] = Counter()
        #: Rejected requests with no 2xx-5xx status, by rule.
        self.other: Counter[str] = Counter()
        #: Decoded paths of targets whose second decoding is dangerous: no
        #: ``double_encoding = "allow"`` may cover one.
        self.blockers: set[bytes] = set()
        self.blockers_overflow = False
        #: Client -> the families of the rules its rejected requests break.
        self.families: dict[bytes, int] = {}
        #: Requests past MAX_CAUSES or MAX_FIRST_SEGMENTS, refused as one group.
        self.overflow = Tally()
        self._keep_targets = keep_targets
        self._max_prefixes = max_prefixes
        self._known: dict[bytes, _Known] = {}
        # Each logged client's network and key (bounded): a client sends many.
        self._who: dict[bytes, tuple[bytes, bytes]] = {}
        # Analyses per shape and policy (see audit.shape_of), bounded; and
        # whether a policy of the table lets shapes decide (by id: the table
        # keeps its policies alive).
        self._shapes: dict[tuple[int, Shape], Analysis] = {}
        self._folds: dict[int, bool] = {}

    def count_statuses(self, counts: Mapping[int | None, int]) -> None:
        """Count requests with a target (``counts``: status -> requests)."""
        requests = self.requests
        for status, count in counts.items():
            requests[status_class(status)] += count

    def scanners(self) -> set[bytes]:
        """Clients whose rejected requests break rules of several families."""
        return {client for client, bits in self.families.items() if is_scanner(bits)}

    def observe(
        self,
        target: bytes,
        status: int | None,
        count: int,
        rule: str | InvalidTarget,
        clients: Collection[bytes] = (),
        first: float | None = None,
        last: float | None = None,
        *,
        shape: Shape | None = None,
    ) -> None:
        """Note ``count`` requests for ``target`` answered ``status`` that the
        current policy rejects under ``rule`` (a rule code, or the error),
        sent by ``clients`` between ``first`` and ``last``; ``shape``: the
        target's shape when the caller made it (see ``audit.shape_of``).
        (Count them with :meth:`count_statuses` too.)"""
        kind = status_class(status)
        if kind == "other":
            self.other[rule if isinstance(rule, str) else rule.rule] += count  # neither way
            return
        known = self._known.get(target)
        if known is None:
            if len(self._known) >= self._keep_targets:
                self._known.clear()
            known = self._known[target] = self._learn(target, shape)
        who = self._who
        pairs = []
        for client in clients:
            pair = who.get(client)
            if pair is None:
                if len(who) >= MAX_CLIENTS:
                    who.clear()
                key = client_key(client)
                pair = who[client] = (network_key(key), key)
            pairs.append(pair)
        if len(pairs) > 1:
            pairs = sorted(set(pairs))
            self._note(pairs, known.families)
        elif pairs:
            key = pairs[0][1]
            bits = self.families.get(key)
            if bits is None or bits | known.families != bits:
                self._note(pairs, known.families)
        analysis = known.analysis
        if analysis.stop is not None:
            if kind == "served":
                stopped = self.stopped.get(analysis.stop)
                if stopped is None:
                    stopped = self.stopped[analysis.stop] = Tally()
                stopped.add_served(target, count, pairs, first, last)
            else:
                self.failed_stopped[analysis.stop[0]] += count
            return
        tally = self._tally(known)
        if kind == "served":
            tally.add_served(target, count, pairs, first, last, redirect=is_redirect(status))
            if known.failed:
                # A target answered 4xx/5xx too: its requests are no evidence.
                tally.contested += count
                if not known.served:
                    tally.against += known.failed
            known.served += count
        else:
            tally.failed += count
            if known.served:
                tally.against += count
                if not known.failed:
                    tally.contested += known.served
            known.failed += count

    def _note(self, pairs: Iterable[tuple[bytes, bytes]], bits: int) -> None:
        """Add the families ``bits`` to each client's (bounded)."""
        families = self.families
        for _, key in pairs:
            before = families.get(key)
            if before is None:
                if len(families) < MAX_CLIENTS:
                    families[key] = bits
            elif before | bits != before:
                families[key] = before | bits

    # -- the analysis of one target, once per shape -----------------------------------

    def _learn(self, target: bytes, shape: Shape | None) -> _Known:
        policy = self.table.select(target) if self.routes else self.policy
        path = target.partition(b"?")[0] if target[:1] == b"/" else path_of(target)
        folding = self._folds.get(id(policy))
        if folding is None:
            folding = self._folds[id(policy)] = folds(policy)
        if not folding:
            shape = None
        elif shape is None:
            shape = shape_of(target)
        analysis = self._shapes.get((id(policy), shape)) if shape is not None else None
        if analysis is None:
            analysis = analyse(target, path, policy)
            if shape is not None:
                if len(self._shapes) >= self._keep_targets:
                    self._shapes.clear()
                self._shapes[id(policy), shape] = analysis
        if analysis.twice:
            self._block(path)
        if path.rfind(b"/") == 0 and len(path) > 1 and _BAD_PREFIX_BYTE.search(path) is None:
            # Directly under '/', the narrowest prefix is the path itself: '/'
            # alone would be a site-wide change.
            return _Known(path, analysis)
        return _Known(_directory_of(path), analysis)

    def _block(self, path: bytes) -> None:
        if len(self.blockers) < MAX_BLOCKERS:
            self.blockers.add(percent_decode(path))
        else:
            self.blockers_overflow = True

    # -- tallies, bounded -----------------------------------------------------------

    def _tally(self, known: _Known) -> Tally:
        analysis = known.analysis
        cause = analysis.cause
        groups = self.groups.get(cause)
        if groups is None:
            if len(self.groups) >= MAX_CAUSES:
                self.overflow.rules |= analysis.rules
                return self.overflow
            groups = self.groups[cause] = {}
        depth = self.depth.get(cause)
        if depth != known.depth:
            known.cut, known.depth = cut(known.prefix, depth), depth
        tally = groups.get(known.cut)
        if tally is None:
            if len(groups) >= self._max_prefixes and (depth is None or depth > 2):
                groups = self._coarsen(cause)
                depth = self.depth[cause]
                known.cut, known.depth = cut(known.prefix, depth), depth
                tally = groups.get(known.cut)
            if tally is None:
                if len(groups) >= MAX_FIRST_SEGMENTS:
                    self.overflow.rules |= analysis.rules
                    return self.overflow
                tally = groups[known.cut] = Tally()
                tally.rules |= analysis.rules  # one cause, one set of rules
        for atom, need in analysis.needs.items():  # the limits only
            if need > tally.needs.get(atom, 0):
                tally.needs[atom] = need
        return tally

    def _coarsen(self, cause: Cause) -> dict[bytes, Tally]:
        """Cut the prefixes of ``cause`` one segment shorter, merging
        siblings, until fewer than ``max_prefixes`` remain or they are cut to
        their first segment (which the top level is judged by: merging
        first segments would change what the evidence says there)."""
        groups = self.groups[cause]
        depth = max(map(_depth, groups))
        while len(groups) >= self._max_prefixes and depth > 2:
            depth -= 1
            merged_groups: dict[bytes, Tally] = {}
            for prefix, tally in groups.items():
                shorter = cut(prefix, depth)
                if shorter in merged_groups:
                    merged_groups[shorter].merge(tally)
                else:
                    merged_groups[shorter] = tally
            groups = merged_groups
        self.groups[cause] = groups
        self.depth[cause] = depth
        return groups


def _depth(prefix: bytes) -> int:
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


def _directory_of(path: bytes) -> bytes:
    """:func:`directory` of one path."""
    common = route_directory(path)
    bad = _BAD_PREFIX_BYTE.search(common)
    if bad is not None:
        common = common[: common.rfind(b"/", 0, bad.start()) + 1]
    return common or b"/"
