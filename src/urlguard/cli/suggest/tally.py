"""Tally what the log says: requests by status, and, for each target the
current policy rejects, its cause (:mod:`.read`), under its directory, with
who sent it and when. Memory is bounded by the number of causes and
directories, not by the number of distinct targets.
"""

from __future__ import annotations

import functools
import heapq
import operator
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import compress, repeat
from typing import Any, Final, cast
from urllib.parse import unquote_to_bytes

from ..._guard.routes import RouteTable, path_of
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
            least = self.least
            if least is None:
                worst = max((-n, shown) for shown, n in kept.items())
                least = self.least = (-worst[0], worst[1])
            if count < least[0] or (count == least[0] and target > least[1]):
                return  # no better than the least kept: the common case
            del kept[least[1]]
            kept[target] = count
        self.least = None  # found again when next needed

    def _examples(self, targets: Sequence[bytes], counts: Sequence[int]) -> None:
        """:meth:`_example` for many targets: the kept ones counted, then the
        best of the others offered, best first."""
        if all(map(operator.eq, counts, repeat(1))):
            per_target = Counter(targets)
        else:
            per_target = Counter()
            for target, count in zip(targets, counts, strict=True):
                per_target[target] += count
        kept = self.kept
        for target in kept.keys() & per_target.keys():
            kept[target] += per_target.pop(target)
            self.least = None
        best = heapq.nsmallest(
            STOPPED_EXAMPLES, zip(map(operator.neg, per_target.values()), per_target, strict=True)
        )
        for minus, target in best:
            self._example(-minus, target)

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
        pairs = [row[0] for row in clients]
        if None not in firsts and all(map(operator.eq, firsts, lasts)):
            # The common row: one request from one client. Counted in C; the
            # first and last time of each client from the rows in time order.
            moments = cast(list[float], list(firsts))
            order = sorted(range(len(pairs)), key=moments.__getitem__)
            ordered = list(map(pairs.__getitem__, order))
            times = list(map(moments.__getitem__, order))
            last = dict(zip(ordered, times, strict=True))
            first = dict(zip(reversed(ordered), reversed(times), strict=True))
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


def _by_requests(example: tuple[int, bytes]) -> tuple[int, bytes]:
    return -example[0], example[1]


def merged(tallies: Iterable[Tally]) -> Tally:
    result = Tally()
    for tally in tallies:
        result.merge(tally)
    return result


# Rows added one by one rather than in bulk (which costs more to set up).
_FEW_ROWS: Final = 4


class _Batch:
    """The served rows of a chunk, each waiting for its tally: added to them
    in bulk, before the tallies of a cause are merged and at the end."""

    __slots__ = ("counts", "firsts", "lasts", "pairs", "pending", "statuses", "targets")

    def __init__(
        self,
        targets: Sequence[bytes],
        statuses: Sequence[int | None],
        counts: Sequence[int],
        pairs: Sequence[tuple[tuple[bytes, bytes], ...]],
        firsts: Sequence[float | None],
        lasts: Sequence[float | None],
    ) -> None:
        self.targets = targets
        self.statuses = statuses
        self.counts = counts
        self.pairs = pairs
        self.firsts = firsts
        self.lasts = lasts
        # Tally -> its rows; a rule never loosened's tally: its rows, none a
        # redirect (it admits nothing, but says what it stops).
        self.pending: dict[Tally, list[int]] = {}

    def wait(self, tally: Tally, rows: list[int]) -> None:
        if not rows:
            return
        waiting = self.pending.get(tally)
        if waiting is None:
            self.pending[tally] = rows
        else:
            waiting.extend(rows)

    def flush(self, *, redirects: bool = True) -> None:
        """Add the waiting rows to their tallies; ``redirects``: whether a
        3xx other than 304 is told apart."""
        for tally, rows in self.pending.items():
            if len(rows) <= _FEW_ROWS:
                for i in rows:
                    tally.add_served(
                        self.targets[i],
                        self.counts[i],
                        self.pairs[i],
                        self.firsts[i],
                        self.lasts[i],
                        redirect=redirects and _redirect(self.statuses[i]),
                    )
                continue
            pick = operator.itemgetter(*rows)
            tally.add_rows(
                pick(self.targets),
                pick(self.counts),
                pick(self.pairs),
                pick(self.firsts),
                pick(self.lasts),
                list(map(_redirect, pick(self.statuses))) if redirects else [False] * len(rows),
            )
        self.pending.clear()


class Ledger:
    """Requests by status class, and what the current policy (``policy``
    with its ``routes``) rejects, tallied per cause and directory prefix.
    Fed by the auditor, one call per chunk of the log with a row per
    distinct (target, status); nothing for accepted targets but a count."""

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
        # Requests per rejected target answered 2xx/3xx and 4xx/5xx so far
        # (bounded): what makes "answered 4xx/5xx on the very target" known.
        self._served: dict[bytes, int] = {}
        self._failed: dict[bytes, int] = {}
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
        code = rule if isinstance(rule, str) else rule.rule
        self.observe_rows(
            [target], [status], [count], [code], [tuple(clients)], [first], [last], [shape]
        )

    def observe_rows(
        self,
        targets: Sequence[bytes],
        statuses: Sequence[int | None],
        counts: Sequence[int],
        rules: Sequence[str],
        clients: Sequence[Sequence[bytes]],
        firsts: Sequence[float | None],
        lasts: Sequence[float | None],
        shapes: Sequence[Shape | None],
    ) -> None:
        """:meth:`observe` for the rows of a chunk of the log, one distinct
        (target, status) a row, in the order they came. Each shape is read
        once (:mod:`.read`); the rows are counted per (cause, directory) in
        one pass, and each such group is taken to its tally in the order it
        first came: which tallies exist, and when those of a cause merge,
        depend on that order."""
        kinds = list(map(_class_of, statuses))
        if "other" in kinds:
            for kind, rule, count in zip(kinds, rules, counts, strict=True):
                if kind == "other":
                    self.other[rule] += count  # neither way
            keep = list(map(operator.ne, kinds, repeat("other")))
            targets, statuses, counts, kinds = _kept(keep, targets, statuses, counts, kinds)
            clients, firsts, lasts, shapes = _kept(keep, clients, firsts, lasts, shapes)
            if not targets:
                return
        analyses, prefixes = self._read(targets, shapes)
        pairs = self._pairs(clients)
        self._note(pairs, analyses)
        contested, against = self._contest(targets, kinds, counts)
        batch = _Batch(targets, statuses, counts, pairs, firsts, lasts)
        stops = _Batch(targets, statuses, counts, pairs, firsts, lasts)
        by_cause = self._by_cause(analyses, kinds, counts, stops)
        served = list(map(operator.eq, kinds, repeat("served")))
        for cause, rows in by_cause.items():
            for tally, group in self._route(cause, rows, prefixes, analyses, batch).items():
                mine = list(map(served.__getitem__, group))
                if False not in mine:
                    batch.wait(tally, group)
                else:
                    batch.wait(tally, list(compress(group, mine)))
                    failed = compress(map(counts.__getitem__, group), map(operator.not_, mine))
                    tally.failed += sum(failed)
                if contested:
                    tally.contested += sum(map(contested.get, group, repeat(0)))
                    tally.against += sum(map(against.get, group, repeat(0)))
        batch.flush()
        stops.flush(redirects=False)

    def _by_cause(
        self,
        analyses: Sequence[Analysis],
        kinds: Sequence[StatusClass],
        counts: Sequence[int],
        stops: _Batch,
    ) -> dict[Cause, list[int]]:
        """The rows of each cause, causes in the order they came; the rows a
        rule never loosened stops, to its tally (served) or its count."""
        if list(map(_STOP, analyses)).count(None) == len(analyses):
            causes = dict.fromkeys(map(_CAUSE, analyses))
            if len(causes) == 1:  # one cause, nothing stopped: the common chunk
                return {cause: list(range(len(analyses))) for cause in causes}
        by_cause: dict[Cause, list[int]] = {}
        for i, analysis in enumerate(analyses):
            if analysis.stop is not None:
                if kinds[i] == "served":
                    stopped = self.stopped.get(analysis.stop)
                    if stopped is None:
                        stopped = self.stopped[analysis.stop] = Tally()
                    stops.wait(stopped, [i])
                else:
                    self.failed_stopped[analysis.stop[0]] += counts[i]
                continue
            rows = by_cause.get(analysis.cause)
            if rows is None:
                by_cause[analysis.cause] = [i]
            else:
                rows.append(i)
        return by_cause

    def _pairs(self, clients: Sequence[Sequence[bytes]]) -> list[tuple[tuple[bytes, bytes], ...]]:
        """Each row's clients as (network, client key) pairs, sorted."""
        who = self._who
        if all(map(operator.eq, map(len, clients), repeat(1))):
            found = list(map(who.get, map(operator.itemgetter(0), clients)))
            if None not in found:
                return list(zip(found))  # type: ignore[arg-type]  # (no None)
        return [
            tuple(sorted({who.get(client) or self._meet(client) for client in row}))
            for row in clients
        ]

    def _meet(self, client: bytes) -> tuple[bytes, bytes]:
        who = self._who
        if len(who) >= MAX_CLIENTS:
            who.clear()
        key = client_key(client)
        pair = who[client] = (network_key(key), key)
        return pair

    def _note(
        self, pairs: Sequence[tuple[tuple[bytes, bytes], ...]], analyses: Sequence[Analysis]
    ) -> None:
        """Add the families of each row's rules to its clients' (bounded)."""
        families = self.families
        bits_of = operator.attrgetter("families")
        for row, bits in dict.fromkeys(zip(pairs, map(bits_of, analyses), strict=True)):
            for _, key in row:
                before = families.get(key)
                if before is None:
                    if len(families) < MAX_CLIENTS:
                        families[key] = bits
                elif before | bits != before:
                    families[key] = before | bits

    def _contest(
        self, targets: Sequence[bytes], kinds: Sequence[StatusClass], counts: Sequence[int]
    ) -> tuple[dict[int, int], dict[int, int]]:
        """The requests of each row that are ``contested`` (served, of a
        target answered 4xx/5xx too) and ``against`` (failed, of a target
        served too), by row where not zero; and each target's requests by
        class, remembered (bounded). Only the rows of a target met before,
        or twice in these rows, are looked at one by one."""
        served, failed = self._served, self._failed
        if len(served) + len(targets) > self._keep_targets:
            served.clear()
        if len(failed) + len(targets) > self._keep_targets:
            failed.clear()
        met = list(
            map(operator.or_, map(served.__contains__, targets), map(failed.__contains__, targets))
        )
        if len(set(targets)) < len(targets):
            twice = {target for target, n in Counter(targets).items() if n > 1}
            met = list(map(operator.or_, met, map(twice.__contains__, targets)))
        if False in met:
            fresh = list(map(operator.not_, met))
            is_served = list(map(operator.eq, kinds, repeat("served")))
            pick = list(map(operator.and_, fresh, is_served))
            served.update(zip(compress(targets, pick), compress(counts, pick), strict=False))
            pick = list(map(operator.and_, fresh, map(operator.not_, is_served)))
            failed.update(zip(compress(targets, pick), compress(counts, pick), strict=False))
        contested: dict[int, int] = {}
        against: dict[int, int] = {}
        for i in compress(range(len(targets)), met):
            target, count = targets[i], counts[i]
            before_served, before_failed = served.get(target, 0), failed.get(target, 0)
            if kinds[i] == "served":
                if before_failed:
                    # A target answered 4xx/5xx too: its requests are no evidence.
                    contested[i] = count
                    if not before_served:
                        against[i] = before_failed
                served[target] = before_served + count
            else:
                if before_served:
                    against[i] = count
                    if not before_failed:
                        contested[i] = before_served
                failed[target] = before_failed + count
        return contested, against

    # -- the analysis of one target, once per shape -----------------------------------

    def _read(
        self, targets: Sequence[bytes], shapes: Sequence[Shape | None]
    ) -> tuple[list[Analysis], list[bytes]]:
        """Each target's analysis (once per shape) and prefix."""
        joined = b"\n".join(targets)
        if joined.count(b"\n") == len(targets) - 1:
            prefixes = _PREFIXES.findall(joined)  # one per line: b"" if not origin-form
        else:
            prefixes = [b""] * len(targets)
        if b"" in prefixes:
            for i in compress(range(len(prefixes)), map(operator.not_, prefixes)):
                prefixes[i] = prefix_of(path_of(targets[i]))
        policy = self.policy
        if not self.routes and self._folding(policy):
            if None in shapes:
                shapes = [
                    shape_of(t) if s is None else s for t, s in zip(targets, shapes, strict=True)
                ]
            keys = zip(repeat(id(policy)), cast(Sequence[Shape], shapes))
            known: list[Analysis | None] = list(map(self._shapes.get, keys))
        else:
            known = [None] * len(targets)
        if None in known:
            for i in compress(range(len(known)), map(operator.is_, known, repeat(None))):
                known[i] = self._analyse(targets[i], path_of(targets[i]), shapes[i])
        analyses = cast(list[Analysis], known)
        for i in compress(range(len(analyses)), map(_TWICE, analyses)):
            self._block(path_of(targets[i]))
        return analyses, prefixes

    def _folding(self, policy: Policy) -> bool:
        folding = self._folds.get(id(policy))
        if folding is None:
            folding = self._folds[id(policy)] = folds(policy)
        return folding

    def _analyse(self, target: bytes, path: bytes, shape: Shape | None) -> Analysis:
        policy = self.table.select(target) if self.routes else self.policy
        if not self._folding(policy):
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
        return analysis

    def _block(self, path: bytes) -> None:
        decoded = unquote_to_bytes(path)
        if decoded in self.blockers:
            return
        if len(self.blockers) < MAX_BLOCKERS:
            self.blockers.add(decoded)
        else:
            self.blockers_overflow = True

    # -- tallies, bounded -----------------------------------------------------------

    def _route(
        self,
        cause: Cause,
        rows: list[int],
        prefixes: Sequence[bytes],
        analyses: Sequence[Analysis],
        batch: _Batch,
    ) -> dict[Tally, list[int]]:
        """The rows of one cause by tally: their prefixes cut to the cause's
        depth, each distinct prefix taken to its tally in the order it first
        came (again from the start when that merges the cause's tallies)."""
        analysis = analyses[rows[0]]  # one cause, one set of rules
        merged = True
        while merged:
            depth = self.depth.get(cause)
            picked = list(map(prefixes.__getitem__, rows))
            if depth is not None:
                picked = list(map(re.Match.group, map(_cutter(depth), picked)))
            distinct = list(dict.fromkeys(picked))
            found: list[Tally | None] = list(map(self.groups.get(cause, {}).get, distinct))
            merged = False
            for i in compress(range(len(found)), map(operator.is_, found, repeat(None))):
                found[i] = self._tally(cause, distinct[i], analysis, batch)
                if self.depth.get(cause) != depth:
                    merged = True  # the cause's tallies merged: cut again
                    break
        tallies = cast(list[Tally], found)
        tally_of = dict(zip(distinct, tallies, strict=True))
        by_tally: dict[Tally, list[int]]
        if len(set(map(id, tallies))) == 1:
            by_tally = {tallies[0]: rows}
        else:
            by_tally = {}
            for tally, i in zip(map(tally_of.__getitem__, picked), rows, strict=True):
                mine = by_tally.get(tally)
                if mine is None:
                    by_tally[tally] = [i]
                else:
                    mine.append(i)
        limited = [a for a in dict.fromkeys(map(analyses.__getitem__, rows)) if a.needs]
        for tally, mine in by_tally.items() if limited else ():
            for each in dict.fromkeys(map(analyses.__getitem__, mine)):
                for atom, need in each.needs.items():  # the limits only
                    if need > tally.needs.get(atom, 0):
                        tally.needs[atom] = need
        return by_tally

    def _tally(self, cause: Cause, prefix: bytes, analysis: Analysis, batch: _Batch) -> Tally:
        """The tally of ``prefix``, cut to the depth of its cause's tallies,
        for ``cause``; the overflow tally past the bounds. Past
        ``max_prefixes`` tallies, those of the cause merge first (see
        :meth:`_coarsen`)."""
        groups = self.groups.get(cause)
        if groups is None:
            if len(self.groups) >= MAX_CAUSES:
                self.overflow.rules |= analysis.rules
                return self.overflow
            groups = self.groups[cause] = {}
        depth = self.depth.get(cause)
        tally = groups.get(prefix)
        if tally is None:
            if len(groups) >= self._max_prefixes and (depth is None or depth > 2):
                batch.flush()  # the rows so far to their tallies, before these merge
                groups = self._coarsen(cause)
                prefix = cut(prefix, self.depth[cause])
                tally = groups.get(prefix)
            if tally is None:
                if len(groups) >= MAX_FIRST_SEGMENTS:
                    self.overflow.rules |= analysis.rules
                    return self.overflow
                tally = groups[prefix] = Tally()
                tally.rules |= analysis.rules  # one cause, one set of rules
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


@functools.cache
def _class_of(status: int | None) -> StatusClass:
    return status_class(status)


@functools.cache
def _redirect(status: int | None) -> bool:
    return is_redirect(status)


@functools.cache
def _cutter(depth: int) -> Callable[[bytes], re.Match[bytes]]:
    """The match of :func:`cut` to ``depth`` (it always matches): the
    prefix up to its ``depth``-th '/', or all of it when it has fewer."""
    match = re.compile(rb"(?:[^/]*/){%d}|.*" % depth, re.DOTALL).match
    return cast(Callable[[bytes], re.Match[bytes]], match)


_TWICE: Final = operator.attrgetter("twice")
_CAUSE: Final = operator.attrgetter("cause")
_STOP: Final = operator.attrgetter("stop")


def _kept(keep: list[bool], *columns: Sequence[object]) -> list[list[Any]]:
    return [list(compress(column, keep)) for column in columns]


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


# prefix_of in one match, of a path or of the target it starts: a path of
# one clean segment is its own prefix, else its segments up to the last
# '/' that are clean and not empty.
_CLEAN: Final = rb"[^\x00-\x20\x7f-\xff/?#]"
_PREFIX: Final = re.compile(b"/(?:" + _CLEAN + rb"++(?=\?|\Z)|(?:" + _CLEAN + b"++/)*+)")
#: The same, of each line of many targets at once.
_PREFIXES: Final = re.compile(
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
