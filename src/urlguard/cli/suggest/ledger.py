"""Tally what the log says: requests by status, and, for each target the
current policy rejects, its cause (:mod:`.read`), under its directory, with
who sent it and when. Memory is bounded by the number of causes and
directories, not by the number of distinct targets.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import compress, groupby, repeat
from typing import Any, Final, NamedTuple, cast
from urllib.parse import unquote_to_bytes

from ..._guard.routes import RouteTable, path_of
from ..._url.errors import InvalidTarget
from ..._url.policy import Policy
from ..audit import Rows
from ..shapes import Shape, folds, shape_of
from .evidence import (
    StatusClass,
    client_key,
    is_redirect,
    is_scanner,
    network_key,
    status_class,
)
from .read import Analysis, Cause, analyse
from .tally import PREFIXES, Tally, cut, depth_of, prefix_of

#: Prefixes kept per cause before siblings are merged one segment up (never
#: above the first segment, which the top level is judged by).
MAX_PREFIXES: Final = 256
#: First segments kept per cause once it is cut to them; the requests under
#: further ones are refused as one group.
MAX_FIRST_SEGMENTS: Final = 1024
#: Causes (sets of settings) kept; the requests of any further cause are
#: refused as one group.
MAX_CAUSES: Final = 256
#: Targets whose requests answered 2xx/3xx, and 4xx/5xx, are remembered
#: (each table emptied when a chunk would overfill it): what makes "answered
#: 4xx/5xx on the very target" known. Also the shapes whose analysis is kept.
KEEP_TARGETS: Final = 1 << 16
#: Clients whose rule families are remembered (see ``evidence.is_scanner``);
#: later clients are never taken for scanners.
MAX_CLIENTS: Final = 1 << 17
#: Decoded paths of targets that keep ``double_encoding = "allow"`` away;
#: past it, that setting is never suggested.
MAX_BLOCKERS: Final = 4096

#: Served rows that wait for their tallies before they are added in bulk:
#: a tally of one directory gets a row or two per chunk of a log of
#: distinct targets, and adding rows costs per call.
WAITING_ROWS: Final = 1 << 14
# Rows added one by one rather than in bulk (which costs more to set up).
_FEW_ROWS: Final = 4


@dataclasses.dataclass(eq=False)
class _Waiting:
    """Served rows waiting for their tallies, over chunks: added in bulk
    when :data:`WAITING_ROWS` have waited, before the tallies of a cause
    merge, and before the tallies are read. Each tally gets its rows in the
    order they came."""

    tallies: list[Tally] = dataclasses.field(default_factory=list)
    targets: list[bytes] = dataclasses.field(default_factory=list)
    counts: list[int] = dataclasses.field(default_factory=list)
    pairs: list[tuple[tuple[bytes, bytes], ...]] = dataclasses.field(default_factory=list)
    firsts: list[float | None] = dataclasses.field(default_factory=list)
    lasts: list[float | None] = dataclasses.field(default_factory=list)
    # A 3xx other than 304 (never so in a tally of a rule never loosened:
    # it admits nothing, but says what it stops).
    redirects: list[bool] = dataclasses.field(default_factory=list)

    def add(
        self,
        rows: Sequence[int],
        tallies: Iterable[Tally],
        chunk: _Chunk,
        *,
        redirects: bool = True,
    ) -> None:
        """The rows of ``chunk`` at ``rows`` wait for ``tallies`` (one
        each); ``redirects``: whether a 3xx other than 304 is told apart."""
        if not rows:
            return
        if len(rows) == len(chunk.targets):  # all of them, in order
            picked: Sequence[Sequence[Any]] = chunk
        else:
            picked = [list(map(column.__getitem__, rows)) for column in chunk]
        targets, statuses, counts, pairs, firsts, lasts = picked
        self.tallies.extend(tallies)
        self.targets.extend(targets)
        self.counts.extend(counts)
        self.pairs.extend(pairs)
        self.firsts.extend(firsts)
        self.lasts.extend(lasts)
        self.redirects.extend(map(_redirect, statuses) if redirects else repeat(False, len(rows)))

    def flush(self) -> None:
        """Add the waiting rows to their tallies: each tally's rows at once."""
        if not self.tallies:
            return
        keys = list(map(id, self.tallies))
        order = sorted(range(len(keys)), key=keys.__getitem__)  # stable: in the order they came
        for _, grouped in groupby(order, keys.__getitem__):
            rows = list(grouped)
            tally = self.tallies[rows[0]]
            if len(rows) <= _FEW_ROWS:
                for i in rows:
                    tally.add_served(
                        self.targets[i],
                        self.counts[i],
                        self.pairs[i],
                        self.firsts[i],
                        self.lasts[i],
                        redirect=self.redirects[i],
                    )
                continue
            pick = operator.itemgetter(*rows)
            tally.add_rows(
                pick(self.targets),
                pick(self.counts),
                pick(self.pairs),
                pick(self.firsts),
                pick(self.lasts),
                pick(self.redirects),
            )
        self.tallies.clear()
        self.targets.clear()
        self.counts.clear()
        self.pairs.clear()
        self.firsts.clear()
        self.lasts.clear()
        self.redirects.clear()


class _Chunk(NamedTuple):
    """The rows of a chunk the ledger keeps: one per (target, status)."""

    targets: Sequence[bytes]
    statuses: Sequence[int | None]
    counts: Sequence[int]
    pairs: Sequence[tuple[tuple[bytes, bytes], ...]]
    firsts: Sequence[float | None]
    lasts: Sequence[float | None]


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
        waiting_rows: int = WAITING_ROWS,
    ) -> None:
        self.policy = Policy() if policy is None else policy
        self.routes = tuple(routes)
        self.table = RouteTable(self.policy, list(self.routes))
        #: Requests with a target, by status class (accepted ones included).
        self.requests: Counter[StatusClass] = Counter()
        # Cause -> directory prefix -> tally (see groups).
        self._groups: dict[Cause, dict[bytes, Tally]] = {}
        #: Cause -> the number of segments its prefixes are cut to (see _coarsen).
        self.depth: dict[Cause, int] = {}
        # (rule, reason) -> served requests a rule never loosened stops (see stopped).
        self._stopped: dict[tuple[str, str], Tally] = {}
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
        # Requests past MAX_CAUSES or MAX_FIRST_SEGMENTS (see overflow).
        self._overflow = Tally()
        # Served rows not yet added to their tallies.
        self._waiting = _Waiting()
        self._keep_targets = keep_targets
        self._max_prefixes = max_prefixes
        self._waiting_rows = waiting_rows
        # Requests per rejected target answered 2xx/3xx and 4xx/5xx so far
        # (bounded): what makes "answered 4xx/5xx on the very target" known.
        self._served: dict[bytes, int] = {}
        self._failed: dict[bytes, int] = {}
        # Each logged client's network and key (bounded): a client sends many.
        self._who: dict[bytes, tuple[bytes, bytes]] = {}
        # Analyses per shape and policy (see shapes.shape_of), bounded; and
        # whether a policy of the table lets shapes decide (by id: the table
        # keeps its policies alive).
        self._shapes: dict[tuple[int, Shape], Analysis] = {}
        # The length of the prefix of an origin-form target, per shape (bounded).
        self._prefix_ends: dict[Shape, int] = {}
        self._folds: dict[int, bool] = {}

    @property
    def groups(self) -> dict[Cause, dict[bytes, Tally]]:
        """Cause -> directory prefix -> tally, every request observed added."""
        self._waiting.flush()
        return self._groups

    @property
    def stopped(self) -> dict[tuple[str, str], Tally]:
        """(rule, reason) -> the served requests a rule never loosened stops."""
        self._waiting.flush()
        return self._stopped

    @property
    def overflow(self) -> Tally:
        """The requests past MAX_CAUSES or MAX_FIRST_SEGMENTS, refused as one group."""
        self._waiting.flush()
        return self._overflow

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
        target's shape when the caller made it (see ``shapes.shape_of``).
        (Count them with :meth:`count_statuses` too.)"""
        code = rule if isinstance(rule, str) else rule.rule
        self.observe_rows(
            Rows([target], [status], [count], [code], [tuple(clients)], [first], [last], [shape])
        )

    def observe_rows(self, rows: Rows) -> None:
        """:meth:`observe` for the rows of a chunk of the log, one distinct
        (target, status) a row, in the order they came. Each shape is read
        once (:mod:`.read`); the rows are counted per (cause, directory) in
        one pass, and each such group is taken to its tally in the order it
        first came: which tallies exist, and when those of a cause merge,
        depend on that order."""
        targets, statuses, counts, rules, clients, firsts, lasts, shapes = rows
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
        chunk = _Chunk(targets, statuses, counts, pairs, firsts, lasts)
        waiting = self._waiting
        by_cause = self._by_cause(analyses, kinds, counts, chunk)
        served = list(map(operator.eq, kinds, repeat("served")))
        for cause, indexes in by_cause.items():
            tallies = self._route(cause, indexes, prefixes, analyses)
            mine = list(map(served.__getitem__, indexes))
            if False not in mine:
                waiting.add(indexes, tallies, chunk)
            else:
                waiting.add(list(compress(indexes, mine)), list(compress(tallies, mine)), chunk)
                failed = list(map(operator.not_, mine))
                for tally, i in zip(
                    compress(tallies, failed), compress(indexes, failed), strict=True
                ):
                    tally.failed += counts[i]
            if contested or against:
                tally_of = dict(zip(indexes, tallies, strict=True))
                for i in contested.keys() & tally_of.keys():
                    tally_of[i].contested += contested[i]
                for i in against.keys() & tally_of.keys():
                    tally_of[i].against += against[i]
        if len(waiting.tallies) >= self._waiting_rows:
            waiting.flush()

    def _by_cause(
        self,
        analyses: Sequence[Analysis],
        kinds: Sequence[StatusClass],
        counts: Sequence[int],
        chunk: _Chunk,
    ) -> dict[Cause, list[int]]:
        """The rows of each cause, causes in the order they came; the rows a
        rule never loosened stops, to its tally (served) or its count."""
        distinct = dict.fromkeys(analyses)  # an analysis per shape: few
        if all(analysis.stop is None for analysis in distinct):
            causes = {analysis.cause for analysis in distinct}
            if len(causes) == 1:  # one cause, nothing stopped: the common chunk
                return {cause: list(range(len(analyses))) for cause in causes}
        by_cause: dict[Cause, list[int]] = {}
        stops: list[int] = []
        stopped: list[Tally] = []
        for i, analysis in enumerate(analyses):
            if analysis.stop is not None:
                if kinds[i] == "served":
                    tally = self._stopped.get(analysis.stop)
                    if tally is None:
                        tally = self._stopped[analysis.stop] = Tally()
                    stops.append(i)
                    stopped.append(tally)
                else:
                    self.failed_stopped[analysis.stop[0]] += counts[i]
                continue
            rows = by_cause.get(analysis.cause)
            if rows is None:
                by_cause[analysis.cause] = [i]
            else:
                rows.append(i)
        self._waiting.add(stops, stopped, chunk, redirects=False)
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
        kinds = set(map(_FAMILIES, analyses))
        met: Iterable[tuple[tuple[tuple[bytes, bytes], ...], int]]
        if len(kinds) == 1:  # one kind of rows (the common chunk): each client once
            met = zip(dict.fromkeys(pairs), repeat(kinds.pop()))
        else:
            met = dict.fromkeys(zip(pairs, map(_FAMILIES, analyses), strict=True))
        for row, bits in met:
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
        if True not in met and "failed" not in kinds:  # new targets, all served
            served.update(zip(targets, counts, strict=True))
            return {}, {}
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
        prefixes = self._prefixes(targets, shapes)
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

    def _prefixes(self, targets: Sequence[bytes], shapes: Sequence[Shape | None]) -> list[bytes]:
        """Each target's prefix (see ``tally.PREFIXES``): where the shapes are
        known, its length once per shape (folding keeps every byte the
        prefix ends at), else by one match over all the targets."""
        if None in shapes:
            joined = b"\n".join(targets)
            if joined.count(b"\n") == len(targets) - 1:
                prefixes = PREFIXES.findall(joined)  # one per line: b"" if not origin-form
            else:
                prefixes = [b""] * len(targets)
        else:
            known = self._prefix_ends
            ends = list(map(known.get, cast(Sequence[Shape], shapes)))
            for i in compress(range(len(ends)), map(operator.is_, ends, repeat(None))):
                # A target with a shape is in origin-form: it has a prefix.
                prefix = cast(re.Match[bytes], PREFIXES.match(targets[i]))[0]
                if len(known) >= self._keep_targets:
                    known.clear()
                ends[i] = known[cast(Shape, shapes[i])] = len(prefix)
            prefixes = list(map(operator.getitem, targets, map(slice, ends)))
        if b"" in prefixes:
            for i in compress(range(len(prefixes)), map(operator.not_, prefixes)):
                prefixes[i] = prefix_of(path_of(targets[i]))
        return prefixes

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
    ) -> list[Tally]:
        """The tally of each row of one cause: its prefix cut to the cause's
        depth, each distinct prefix taken to its tally in the order it first
        came (again from the start when that merges the cause's tallies)."""
        analysis = analyses[rows[0]]  # one cause, one set of rules
        picked = list(map(prefixes.__getitem__, rows))
        merged = True
        while merged:
            depth = self.depth.get(cause)
            cut_to = picked if depth is None else _cut_all(picked, depth)
            distinct = list(dict.fromkeys(cut_to))
            found: list[Tally | None] = list(map(self._groups.get(cause, {}).get, distinct))
            merged = False
            if None in found and self._full(cause):
                # No new tally: every new prefix goes to the overflow (in bulk:
                # a log of many directories has thousands per chunk).
                self._overflow.rules |= analysis.rules
                found = [self._overflow if tally is None else tally for tally in found]
            for i in compress(range(len(found)), map(operator.is_, found, repeat(None))):
                found[i] = self._tally(cause, distinct[i], analysis)
                if self.depth.get(cause) != depth:
                    merged = True  # the cause's tallies merged: cut again
                    break
        tally_of = dict(zip(distinct, cast(list[Tally], found), strict=True))
        tallies = list(map(tally_of.__getitem__, cut_to))
        if analysis.needs:  # a cause with a limit: each of its analyses has a need
            for tally, each in dict.fromkeys(
                zip(tallies, map(analyses.__getitem__, rows), strict=True)
            ):
                for atom, need in each.needs.items():  # the limits only
                    if need > tally.needs.get(atom, 0):
                        tally.needs[atom] = need
        return tallies

    def _full(self, cause: Cause) -> bool:
        """Whether a new prefix of ``cause`` gets no tally of its own (see
        :meth:`_tally`): past the bounds, and no merging to make room."""
        groups = self._groups.get(cause)
        if groups is None:
            return len(self._groups) >= MAX_CAUSES
        depth = self.depth.get(cause)
        could_merge = len(groups) >= self._max_prefixes and (depth is None or depth > 2)
        return len(groups) >= MAX_FIRST_SEGMENTS and not could_merge

    def _tally(self, cause: Cause, prefix: bytes, analysis: Analysis) -> Tally:
        """The tally of ``prefix``, cut to the depth of its cause's tallies,
        for ``cause``; the overflow tally past the bounds. Past
        ``max_prefixes`` tallies, those of the cause merge first (see
        :meth:`_coarsen`)."""
        groups = self._groups.get(cause)
        if groups is None:
            if len(self._groups) >= MAX_CAUSES:
                self._overflow.rules |= analysis.rules
                return self._overflow
            groups = self._groups[cause] = {}
        depth = self.depth.get(cause)
        tally = groups.get(prefix)
        if tally is None:
            if len(groups) >= self._max_prefixes and (depth is None or depth > 2):
                self._waiting.flush()  # the rows so far to their tallies, before these merge
                groups = self._coarsen(cause)
                prefix = cut(prefix, self.depth[cause])
                tally = groups.get(prefix)
            if tally is None:
                if len(groups) >= MAX_FIRST_SEGMENTS:
                    self._overflow.rules |= analysis.rules
                    return self._overflow
                tally = groups[prefix] = Tally()
                tally.rules |= analysis.rules  # one cause, one set of rules
        return tally

    def _coarsen(self, cause: Cause) -> dict[bytes, Tally]:
        """Cut the prefixes of ``cause`` one segment shorter, merging
        siblings, until fewer than ``max_prefixes`` remain or they are cut to
        their first segment (which the top level is judged by: merging
        first segments would change what the evidence says there)."""
        groups = self._groups[cause]
        depth = max(map(depth_of, groups))
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
        self._groups[cause] = groups
        self.depth[cause] = depth
        return groups


@functools.cache
def _class_of(status: int | None) -> StatusClass:
    return status_class(status)


@functools.cache
def _redirect(status: int | None) -> bool:
    return is_redirect(status)


def _cut_all(prefixes: list[bytes], depth: int) -> list[bytes]:
    """:func:`cut` of each of ``prefixes`` to ``depth``, by one pattern over
    all of them (no prefix holds a line break)."""
    cut_to: list[bytes] = _cutter(depth).findall(b"\n".join(prefixes))
    if len(cut_to) != len(prefixes):  # never, but a line break in a prefix
        return [cut(prefix, depth) for prefix in prefixes]
    return cut_to


@functools.cache
def _cutter(depth: int) -> re.Pattern[bytes]:
    """Each line up to its ``depth``-th '/', or all of it when it has fewer."""
    return re.compile(rb"^(?:[^/\n]*/){%d}|^[^\n]*" % depth, re.MULTILINE)


_TWICE: Final = operator.attrgetter("twice")


_FAMILIES: Final = operator.attrgetter("families")


def _kept(keep: list[bool], *columns: Sequence[object]) -> list[list[Any]]:
    return [list(compress(column, keep)) for column in columns]
