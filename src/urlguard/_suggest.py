"""From access logs to a policy: the engine of ``urlguard audit --suggest``.

A log says, for every request, what the server answered, to which client
and when. A request the site answered with 2xx or 3xx was *served*: if the
current policy rejects it, the policy may be too strict for the site. But
an attacker writes part of every access log, and a careless handler
answers an attack with 200, so a served request is a claim, not a proof.
The engine loosens a rule only on evidence an attacker cannot cheaply
forge, and never loosens the rules that protect.

What the engine does, in order:

1. :class:`Ledger` is told, by the auditor, the statuses of all requests
   and, for each target the current policy rejects, its status, count,
   rule, clients and first and last time. It works out once per target
   shape (``_audit.shape_of``) what the target needs (the *cause*: the
   settings that would admit it, found by relaxing a copy of its policy for
   it alone) or which rule never loosened stops it, and adds the requests
   to one *tally* per cause and directory prefix (a target directly under
   ``/`` is its own prefix: ``/`` alone is the whole site). Memory is
   bounded by the number of causes and prefixes, not by the number of
   distinct targets: a cause with more
   prefixes than :data:`MAX_PREFIXES` has them cut one segment shorter,
   merging siblings, until they fit.
2. :func:`suggest` merges, per cause, the prefixes into their common
   prefix, and gives the cause's settings to that prefix when the requests
   under it are enough evidence (:class:`Thresholds`: requests, distinct
   clients, and time between the first and the last); a site-wide change
   needs :data:`SITE_FACTOR` times more, outside the first segment with
   the most of it. The top level without that evidence, and a prefix over
   a target that must stay rejected, are split by their next segment;
   whatever else lacks evidence is listed as *would be rejected: not
   enough evidence to admit*. Requests of a target also answered 4xx/5xx
   are no evidence; 4xx/5xx on other targets are not evidence against.
   At most ``Thresholds.routes`` routes are suggested: past that, the
   routes with the least evidence are listed as refused.
3. Never loosened, whatever the evidence: ``invalid-utf8``,
   ``malformed-escape``, ``fragment``, ``bad-form``, ``dot-segment``,
   ``drive-letter``; a control, bidi or other always-forbidden character
   (in the query, only TAB, LF and CR, which a ``<textarea>`` sends and the
   browser preset admits); a raw byte no setting accepts; raw characters in
   a path that no browser sends raw (``< > " { } ^`` and backtick); an
   empty segment where a separator is kept (the parser cannot tell ``//``
   from a leading ``%2F``, an absolute path); and double encoding whose
   second decoding gives a separator, a dot segment, a control or another
   escape (such a target also keeps ``double_encoding = "allow"`` from
   every prefix that covers it). Served requests that meet one are listed
   as what enforcement will stop.
4. The suggestion is written as TOML in the configuration format of
   :mod:`urlguard._config`, every line with a comment: the rule it relaxes
   and the evidence it rests on (requests, targets, clients, first and last
   time seen, one escaped example, and the failing requests under it). The
   text is then read back with :func:`~urlguard.config_from_mapping` and
   the example of every change judged again under it: any that still fails
   is listed, never hidden.

Nothing here reads a file or prints: the command line feeds the ledger and
writes the text.

    >>> from urlguard import Policy
    >>> from urlguard import InvalidTarget
    >>> slash = InvalidTarget("encoded-slash", "path", 1, 7)  # as the auditor found it
    >>> ledger = Ledger(Policy())
    >>> day = 86_400.0
    >>> for n in range(40):
    ...     target = b"/files/a%2Fb" if n % 2 else b"/files/c%2Fd"
    ...     ledger.observe(target, 200, 1, slash, {b"192.0.2.%d" % n}, n * day / 40, n * day / 40)
    >>> ledger.count_statuses({200: 40})
    >>> result = suggest(ledger)
    >>> [(c.scope, c.key, c.value) for c in result.changes if c.origin == "suggested"]
    [('/files/', 'encoded_slash', 'keep')]
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import ipaddress
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final, Literal
from urllib.parse import unquote_to_bytes

from . import _grammar as g
from ._audit import display, folds, shape_of
from ._config import check_prefix, config_from_mapping
from ._errors import RULES, InvalidTarget
from ._parser import parse_target
from ._policy import Policy
from ._routes import RouteTable, path_of, percent_decode

StatusClass = Literal["served", "failed", "other"]

#: Rules never loosened, whatever the log says (together with the
#: always-forbidden characters and the raw bytes no setting accepts).
PROTECTED_RULES: Final = frozenset(
    (
        "malformed-escape",
        "invalid-utf8",
        "fragment",
        "bad-form",
        "bad-host",
        "host-not-allowed",
        "dot-segment",
        "drive-letter",
    )
)
#: Always-forbidden characters that ``query_allow_chars`` may re-allow: the
#: line breaks and tab of text typed into a ``<textarea>`` of a GET form
#: (what the browser preset re-allows).
QUERY_TEXT_CONTROLS: Final = g.BROWSER_QUERY_CHARS
#: Characters never admitted raw in a path, whatever the evidence: browsers
#: escape them there (the browser preset's path set is only ``[]|``), so a
#: path with one raw was written by hand or by a scanner (``/x/<script>``).
NEVER_RAW_IN_PATH: Final = frozenset('<>"{}^`')
#: A site-wide change (the top level, prefix ``/``) needs this many times
#: the requests, clients and hours a route needs.
SITE_FACTOR: Final = 5
#: Distinct clients and targets counted per tally; past it, "or more".
COUNTED: Final = 256
#: Prefixes kept per cause before siblings are merged one segment up.
MAX_PREFIXES: Final = 256
#: Causes (sets of settings) kept; the requests of any further cause are
#: refused as one group.
MAX_CAUSES: Final = 256
#: Targets whose analysis and statuses are remembered (emptied when full):
#: what makes "answered 4xx/5xx on the very target" known.
KEEP_TARGETS: Final = 1 << 16
#: Decoded paths of targets that keep ``double_encoding = "allow"`` away;
#: past it, that setting is never suggested.
MAX_BLOCKERS: Final = 4096
#: Examples kept per rule among what enforcement will stop.
STOPPED_EXAMPLES: Final = 5
#: Refused groups shown one by one; the rest are summed on one line.
REFUSED_SHOWN: Final = 20
#: Bytes of a target shown in an example.
EXAMPLE_BYTES: Final = 100
#: Rounds of relaxation of one target before the engine gives up on it.
MAX_ROUNDS: Final = 64
_NO_LIMIT: Final = 1 << 40

# The settings the engine may change, with the value each relaxes to.
_SWITCHES: Final[dict[str, str]] = {
    "encoded_slash": "keep",
    "encoded_backslash": "keep",
    "empty_segment": "allow",
    "double_encoding": "allow",
    "path_params": "literal",
}
_CHAR_KEYS: Final = ("raw_path_extra", "raw_query_extra", "allow_chars", "query_allow_chars")
_LIMIT_KEYS: Final = ("max_length", "max_segments", "max_params")
# What Policy.browser() adds to Policy(): the browser preset's fields.
_BROWSER_KEYS: Final = ("raw_path_extra", "raw_query_extra", "query_allow_chars")

_BROWSER_PATH_CHARS: Final = frozenset(g.to_str(g.BROWSER_PATH_EXTRA))
_BROWSER_QUERY_CHARS: Final = frozenset(g.to_str(g.BROWSER_QUERY_EXTRA))

# One relaxation: a setting and, for character sets, the character. Limits
# carry the value they need beside the atom.
Atom = tuple[str, str]
#: What a target needs: its atoms, sorted (one tally per cause and prefix).
Cause = tuple[Atom, ...]
_EMPTY: Final[Atom] = ("empty_segment", "")
_DOUBLE: Final[Atom] = ("double_encoding", "")

# A route prefix must be printable ASCII without space, '?' or '#'
# (_config.check_prefix); a raw path may hold other bytes under a policy
# that accepts them raw, and a prefix is then cut before them.
_BAD_PREFIX_BYTE: Final = re.compile(rb"[^!-~]|[?#]")
# What a second decoding must not give: a separator, a control (C0, DEL,
# C1 in UTF-8) or another escape (triple encoding).
_TWICE_DANGER: Final = re.compile(rb"[/\\\x00-\x1f\x7f]|\xc2[\x80-\x9f]|%[0-9A-Fa-f]{2}")


_STATUS_CLASS: Final[dict[int, StatusClass]] = {2: "served", 3: "served", 4: "failed", 5: "failed"}


def status_class(status: int | None) -> StatusClass:
    """``served`` for 2xx and 3xx, ``failed`` for 4xx and 5xx, else
    ``other`` (1xx, nonsense such as nginx's 000, or no status at all)."""
    if status is None or status < 0:
        return "other"
    return _STATUS_CLASS.get(status // 100, "other")


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The evidence a change needs: at least ``requests`` requests answered
    2xx/3xx (not counting those of targets also answered 4xx/5xx), from at
    least ``clients`` distinct clients (IPv4 addresses, IPv6 /64 networks),
    between a first and a last seen at least ``hours`` apart. A site-wide
    change needs :data:`SITE_FACTOR` times each. At most ``routes`` routes
    are suggested."""

    requests: int = 20
    clients: int = 5
    hours: float = 1.0
    routes: int = 32

    def __post_init__(self) -> None:
        for name in ("requests", "clients", "routes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
        if self.clients * SITE_FACTOR > COUNTED:
            raise ValueError(f"clients must be at most {COUNTED // SITE_FACTOR}")
        if not 0 <= self.hours <= 24 * 366:
            raise ValueError(f"hours must be between 0 and {24 * 366}, not {self.hours!r}")

    def site(self) -> Thresholds:
        """What a site-wide change needs."""
        return dataclasses.replace(
            self,
            requests=self.requests * SITE_FACTOR,
            clients=self.clients * SITE_FACTOR,
            hours=self.hours * SITE_FACTOR,
        )

    def met(self, tally: _Tally) -> bool:
        span = 0.0 if tally.first is None or tally.last is None else tally.last - tally.first
        return (
            tally.requests >= self.requests
            and len(tally.clients) >= self.clients
            and span >= self.hours * 3600
        )

    def text(self) -> str:
        return (
            f"{_plural(self.requests, 'request')} from {_plural(self.clients, 'client')} "
            f"over {self.hours:g} hour{'' if self.hours == 1 else 's'}"
        )


# --- What the log says --------------------------------------------------------------


class _Tally:
    """Requests of one cause under one prefix (or of one rule never
    loosened): the evidence, in memory bounded whatever the log."""

    __slots__ = (
        "against",
        "clients",
        "contested",
        "failed",
        "first",
        "kept",
        "last",
        "least",
        "needs",
        "rules",
        "served",
        "targets",
    )

    def __init__(self) -> None:
        self.served = 0  # requests answered 2xx/3xx
        self.contested = 0  # of those, on targets answered 4xx/5xx too
        self.failed = 0  # requests answered 4xx/5xx
        self.against = 0  # of those, on targets answered 2xx/3xx too
        self.clients: set[bytes] = set()  # at most COUNTED
        self.targets: set[int] = set()  # hashes of served targets, at most COUNTED
        self.first: float | None = None
        self.last: float | None = None
        # Served targets kept as examples (at most STOPPED_EXAMPLES), with
        # their requests, and the one a better target would replace.
        self.kept: dict[bytes, int] = {}
        self.least: tuple[int, bytes] | None = None
        self.needs: dict[Atom, int] = {}  # the value each limit needs
        self.rules: set[str] = set()

    @property
    def requests(self) -> int:
        """Served requests that count as evidence."""
        return self.served - self.contested

    def add_served(
        self,
        target: bytes,
        count: int,
        clients: Iterable[bytes],
        first: float | None,
        last: float | None,
    ) -> None:
        self.served += count
        if len(self.targets) < COUNTED:
            self.targets.add(hash(target))
        if len(self.clients) < COUNTED:
            room = COUNTED - len(self.clients)
            for client in clients:
                key = client_key(client)
                if key not in self.clients:
                    self.clients.add(key)
                    room -= 1
                    if not room:
                        break
        if first is not None and (self.first is None or first < self.first):
            self.first = first
        if last is not None and (self.last is None or last > self.last):
            self.last = last
        self._example(count, target)

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

    def merge(self, other: _Tally) -> None:
        self.served += other.served
        self.contested += other.contested
        self.failed += other.failed
        self.against += other.against
        self.clients |= set(list(other.clients)[: max(0, COUNTED - len(self.clients))])
        self.targets |= set(list(other.targets)[: max(0, COUNTED - len(self.targets))])
        for when in (other.first, other.last):
            if when is not None:
                if self.first is None or when < self.first:
                    self.first = when
                if self.last is None or when > self.last:
                    self.last = when
        for count, target in other.examples:
            self._example(count, target)
        for atom, need in other.needs.items():
            self.needs[atom] = max(self.needs.get(atom, 0), need)
        self.rules |= other.rules

    def evidence(self) -> Evidence:
        example = self.examples[0][1] if self.examples else b""
        return Evidence(
            requests=self.requests,
            targets=len(self.targets),
            clients=len(self.clients),
            first=self.first,
            last=self.last,
            example=display(example, limit=EXAMPLE_BYTES) if example else "",
            failed=self.failed,
            against=self.against,
            contested=self.contested,
        )


def _by_requests(example: tuple[int, bytes]) -> tuple[int, bytes]:
    return -example[0], example[1]


def _merged(tallies: Iterable[_Tally]) -> _Tally:
    merged = _Tally()
    for tally in tallies:
        merged.merge(tally)
    return merged


class _Analysis:
    """What a target needs beyond its policy (its cause, the value each
    limit of it needs, the rules relaxed), or the rule never loosened and the
    reason that stop it; ``twice``: its second decoding is dangerous. The
    same for every target of one shape under one policy."""

    __slots__ = ("cause", "needs", "rules", "stop", "twice")

    def __init__(
        self,
        cause: Cause = (),
        needs: dict[Atom, int] | None = None,
        rules: Collection[str] = (),
        stop: tuple[str, str] | None = None,
        twice: bool = False,
    ) -> None:
        self.cause = cause
        self.needs = needs or {}
        self.rules = frozenset(rules)
        self.stop = stop
        self.twice = twice


class _Known:
    """What the ledger remembers of one rejected target: its analysis, its
    directory, and its requests by status class."""

    __slots__ = ("analysis", "cut", "depth", "failed", "prefix", "served")

    def __init__(self, prefix: bytes, analysis: _Analysis) -> None:
        self.prefix = prefix
        self.analysis = analysis
        self.served = 0
        self.failed = 0
        # The prefix cut to the depth of its cause's tallies when last looked up.
        self.cut = prefix
        self.depth: int | None = None


def client_key(client: bytes) -> bytes:
    """One client as the thresholds count them: an IPv4 address as it is,
    an IPv6 address as its /64 network (one host holds a whole /64).

    >>> client_key(b"2001:db8:1:2:aaaa::1") == client_key(b"2001:db8:1:2::ffff")
    True
    """
    if b":" not in client:
        return client
    try:
        address = ipaddress.IPv6Address(client.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return client
    return address.packed[:8]


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
        self.groups: dict[Cause, dict[bytes, _Tally]] = {}
        #: Cause -> the number of '/' its prefixes are cut to (see _coarsen).
        self.depth: dict[Cause, int] = {}
        #: (rule, reason) -> served requests a rule never loosened stops.
        self.stopped: dict[tuple[str, str], _Tally] = {}
        #: Failing requests a rule never loosened stops, by rule.
        self.failed_stopped: Counter[str] = Counter()
        #: Rejected requests with no 2xx-5xx status, by rule.
        self.other: Counter[str] = Counter()
        #: Decoded paths of targets whose second decoding is dangerous: no
        #: ``double_encoding = "allow"`` may cover one.
        self.blockers: set[bytes] = set()
        self.blockers_overflow = False
        #: Requests of causes past MAX_CAUSES, refused as one group.
        self.overflow = _Tally()
        self._keep_targets = keep_targets
        self._max_prefixes = max_prefixes
        self._known: dict[bytes, _Known] = {}
        # Analyses per shape and policy (see _audit.shape_of), bounded; and
        # whether a policy of the table lets shapes decide (by id: the table
        # keeps its policies alive).
        self._shapes: dict[tuple[int, bytes], _Analysis] = {}
        self._folds: dict[int, bool] = {}

    def count_statuses(self, counts: Mapping[int | None, int]) -> None:
        """Count requests with a target (``counts``: status -> requests)."""
        requests = self.requests
        for status, count in counts.items():
            requests[status_class(status)] += count

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
        shape: bytes | None = None,
    ) -> None:
        """Note ``count`` requests for ``target`` answered ``status`` that the
        current policy rejects under ``rule`` (a rule code, or the error),
        sent by ``clients`` between ``first`` and ``last``; ``shape``: the
        target's shape when the caller made it (see ``_audit.shape_of``).
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
        analysis = known.analysis
        if analysis.stop is not None:
            if kind == "served":
                stopped = self.stopped.get(analysis.stop)
                if stopped is None:
                    stopped = self.stopped[analysis.stop] = _Tally()
                stopped.add_served(target, count, clients, first, last)
            else:
                self.failed_stopped[analysis.stop[0]] += count
            return
        tally = self._tally(known)
        if kind == "served":
            tally.add_served(target, count, clients, first, last)
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

    # -- the analysis of one target, once per shape -----------------------------------

    def _learn(self, target: bytes, shape: bytes | None) -> _Known:
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
            analysis = _analyse(target, path, policy)
            if shape is not None:
                if len(self._shapes) >= self._keep_targets:
                    self._shapes.clear()
                self._shapes[id(policy), shape] = analysis
        if analysis.twice:
            self._block(path)
        prefix = path[: path.rfind(b"/") + 1]
        if _BAD_PREFIX_BYTE.search(prefix) is not None:
            prefix = _directory([path])
        elif prefix == b"/" and len(path) > 1 and _BAD_PREFIX_BYTE.search(path) is None:
            # Directly under '/', the narrowest prefix is the path itself: '/'
            # alone would be a site-wide change.
            prefix = path
        return _Known(prefix, analysis)

    def _block(self, path: bytes) -> None:
        if len(self.blockers) < MAX_BLOCKERS:
            self.blockers.add(percent_decode(path))
        else:
            self.blockers_overflow = True

    # -- tallies, bounded -----------------------------------------------------------

    def _tally(self, known: _Known) -> _Tally:
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
            known.cut, known.depth = _cut(known.prefix, depth), depth
        prefix = known.cut
        tally = groups.get(prefix)
        if tally is None:
            tally = groups[prefix] = _Tally()
            tally.rules |= analysis.rules  # one cause, one set of rules
            if len(groups) > self._max_prefixes:
                self._coarsen(cause)
                prefix = _cut(known.prefix, self.depth[cause])
                tally = self.groups[cause][prefix]
        for atom, need in analysis.needs.items():  # the limits only
            if need > tally.needs.get(atom, 0):
                tally.needs[atom] = need
        return tally

    def _coarsen(self, cause: Cause) -> None:
        """Cut the prefixes of ``cause`` one segment shorter, merging
        siblings, until at most ``max_prefixes`` remain. Each cut at least
        halves nothing in the worst case but lowers the depth by one, so a
        cause is cut at most as many times as paths have segments."""
        groups = self.groups[cause]
        depth = max(map(_depth, groups))
        while len(groups) > self._max_prefixes and depth > 1:
            depth -= 1
            merged: dict[bytes, _Tally] = {}
            for prefix, tally in groups.items():
                cut = _cut(prefix, depth)
                if cut in merged:
                    merged[cut].merge(tally)
                else:
                    merged[cut] = tally
            groups = merged
        self.groups[cause] = groups
        self.depth[cause] = depth


def _analyse(target: bytes, path: bytes, policy: Policy) -> _Analysis:
    """Relax a copy of the target's policy, rule by rule as the parser
    meets them, until it passes or meets a rule never loosened."""
    needs: dict[Atom, int] = {}
    rules: set[str] = set()
    for _ in range(MAX_ROUNDS):
        found = _judge(target, policy)
        if found is None:
            limits = {atom: need for atom, need in needs.items() if atom[0] in _LIMIT_KEYS}
            return _Analysis(tuple(sorted(needs)), limits, rules)
        cause = _cause(target, path, found, policy)
        if cause.atoms is None:
            return _Analysis(stop=(cause.rule, cause.reason))
        atoms = cause.atoms
        if any(key == "raw_path_extra" and char in NEVER_RAW_IN_PATH for key, char in atoms):
            return _Analysis(stop=(cause.rule, _REASONS["raw-path"]))
        separator = any(_is_separator(atom) for atom in atoms) or _keeps_separator(policy)
        if separator and (_EMPTY in atoms or _EMPTY in needs):
            return _Analysis(stop=(cause.rule, _REASONS["empty-beside-separator"]))
        if _DOUBLE in atoms and _dangerous_twice(path):
            return _Analysis(stop=(cause.rule, _REASONS["double-twice"]), twice=True)
        for atom, need in atoms.items():
            if atom[0] in _LIMIT_KEYS:
                needs[atom] = max(needs.get(atom, 0), need)
            else:
                needs.setdefault(atom, 0)
            # Which settings, not how much: a limit opened wide says the
            # same and keeps the relaxed policies few (and cached).
            policy = _relax(policy, atom, _NO_LIMIT if atom[0] in _LIMIT_KEYS else need)
        rules.add(cause.rule)
    return _Analysis(stop=("unresolved", _REASONS["unresolved"]))


def _depth(prefix: bytes) -> int:
    """Segments of a prefix: its '/', and one more for a name after the last."""
    return prefix.count(b"/") + (not prefix.endswith(b"/"))


def _cut(prefix: bytes, depth: int | None) -> bytes:
    """``prefix`` cut to ``depth`` segments, up to the '/' that ends them
    (all of it for ``None`` or when it has no more)."""
    if depth is None:
        return prefix
    at = -1
    for _ in range(depth):
        at = prefix.find(b"/", at + 1)
        if at < 0:
            return prefix
    return prefix[: at + 1]


def _is_separator(atom: Atom) -> bool:
    return atom[0] in ("encoded_slash", "encoded_backslash") or atom == ("raw_path_extra", "\\")


def _keeps_separator(policy: Policy) -> bool:
    """Whether a segment of ``policy`` may hold a separator (``%2F``,
    ``%5C``, a raw ``\\``): an empty part there is an absolute path."""
    return (
        policy.encoded_slash == "keep"
        or policy.encoded_backslash == "keep"
        or "\\" in policy.raw_path_extra
    )


def _dangerous_twice(path: bytes) -> bool:
    """Whether a segment of ``path``, decoded twice, gives a separator, a
    control, another escape, or a dot segment (``%252e%252e%252f`` is
    ``../`` to whatever decodes once more)."""
    for segment in path.split(b"/"):
        if b"%" not in segment:
            continue
        once = unquote_to_bytes(segment)
        if b"%" not in once:
            continue
        twice = unquote_to_bytes(once)
        if _TWICE_DANGER.search(twice) or twice.partition(b";")[0] in (b".", b".."):
            return True
    return False


# --- The result ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a change rests on: served requests that count (``requests``, not
    those of targets answered 4xx/5xx too: ``contested``), distinct
    ``targets`` and ``clients`` (counted up to :data:`COUNTED`), the
    ``first`` and ``last`` time seen, the most requested target escaped;
    and the requests under it answered 4xx/5xx (``failed``), ``against``
    of them on the very targets it admits."""

    requests: int = 0
    targets: int = 0
    clients: int = 0
    first: float | None = None
    last: float | None = None
    example: str = ""
    failed: int = 0
    against: int = 0
    contested: int = 0

    def as_json(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "targets": self.targets,
            "clients": self.clients,
            "first_seen": _when(self.first),
            "last_seen": _when(self.last),
            "example": self.example,
            "failed": self.failed,
            "against": self.against,
            "contested": self.contested,
        }


@dataclasses.dataclass(frozen=True)
class Change:
    """One line of the suggested configuration.

    ``scope`` is ``None`` for the top level, else the route prefix.
    ``origin`` says why the line is there: ``suggested`` (it admits served
    requests, on the evidence ``admits``), ``current`` (as in the policy
    the log was judged under), or ``inherited`` (repeated from
    ``inherited_from``, a shorter prefix or the top level, because the
    longest matching route replaces the base policy).
    """

    scope: str | None
    key: str
    value: object
    origin: Literal["suggested", "current", "inherited"]
    rules: tuple[str, ...] = ()
    admits: Evidence = Evidence()
    inherited_from: str | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "key": self.key,
            "value": self.value,
            "origin": self.origin,
            "rules": list(self.rules),
            "admits": self.admits.as_json(),
        }


@dataclasses.dataclass(frozen=True)
class Stopped:
    """Served requests a rule never loosened stops, for one rule and reason."""

    rule: str
    reason: str
    requests: int
    targets: int
    examples: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "reason": self.reason,
            "requests": self.requests,
            "targets": self.targets,
            "examples": list(self.examples),
        }


@dataclasses.dataclass(frozen=True)
class Refused:
    """Served requests that one change would admit and that the suggestion
    does not: ``reason`` says why (not enough evidence, past the bound of
    routes, a target it must not admit under it, ...). ``scope`` is the
    prefix the change would have had (``/``: the top level)."""

    scope: str
    rules: tuple[str, ...]
    reason: str
    evidence: Evidence

    def as_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "rules": list(self.rules),
            "reason": self.reason,
            "evidence": self.evidence.as_json(),
        }


@dataclasses.dataclass(frozen=True)
class Lines:
    """What the input held: lines read, parsed, and skipped (not parsed),
    with up to three skipped lines escaped."""

    read: int = 0
    parsed: int = 0
    skipped: int = 0
    examples: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Suggestion:
    """The suggested configuration (``text``, TOML, and ``mapping``, the
    same as data), line by line with its evidence (``changes``), and what it
    leaves rejected.

    ``served``/``failed``/``other``: requests with a target by status class.
    ``rejected_served``: served requests the current policy rejects;
    ``admitted``: those the suggestion admits; ``stopped``: those a rule
    never loosened stops; ``refused``: those a change would admit and the
    suggestion does not make (not enough evidence ...). ``still_rejected``:
    examples the suggestion meant to admit and that its own text, read
    back, rejects (empty unless something is wrong). ``failed_rejected``:
    failing requests still rejected, per rule; ``failed_admitted``: failing
    requests the current policy rejects and the suggestion admits.
    """

    text: str
    mapping: dict[str, Any]
    changes: tuple[Change, ...]
    served: int
    failed: int
    other: int
    rejected_served: int
    admitted: int
    stopped: tuple[Stopped, ...]
    refused: tuple[Refused, ...]
    still_rejected: tuple[str, ...]
    failed_rejected: dict[str, int]
    failed_admitted: int
    thresholds: Thresholds
    lines: Lines = Lines()

    @property
    def complete(self) -> bool:
        """Whether every served request is admitted by the suggestion."""
        return not self.stopped and not self.refused and not self.still_rejected

    def as_json(self) -> dict[str, object]:
        return {
            "toml": self.text,
            "config": self.mapping,
            "thresholds": dataclasses.asdict(self.thresholds),
            "served": self.served,
            "failed": self.failed,
            "other": self.other,
            "rejected_served": self.rejected_served,
            "admitted": self.admitted,
            "stopped": [stop.as_json() for stop in self.stopped],
            "refused": [refusal.as_json() for refusal in self.refused],
            "still_rejected": list(self.still_rejected),
            "failed_rejected": dict(self.failed_rejected),
            "failed_admitted": self.failed_admitted,
            "changes": [change.as_json() for change in self.changes if change.origin != "current"],
        }


# --- Why a target is rejected, and what would lift it ---------------------------------------------


class _Cause:
    """Why a target is rejected: the rule, and either the atoms that would
    lift it (with the value each limit needs) or, for a rule never
    loosened, ``atoms is None`` and the reason."""

    __slots__ = ("atoms", "reason", "rule")

    def __init__(self, rule: str, atoms: dict[Atom, int] | None, reason: str = "") -> None:
        self.rule = rule
        self.atoms = atoms
        self.reason = reason


def _judge(target: bytes, policy: Policy) -> InvalidTarget | None:
    try:
        parse_target(target, policy)
    except InvalidTarget as error:
        return error.with_traceback(None)  # not the parser's frames
    return None


_REASONS: Final[dict[str, str]] = {
    "malformed-escape": "a '%' not followed by two hex digits",
    "invalid-utf8": "percent-decoded bytes that are not UTF-8 (overlong forms, surrogates)",
    "fragment": "a '#' in the request target",
    "bad-form": "neither origin-form nor http(s) absolute-form",
    "bad-host": "a host that is malformed or not the one the target names",
    "host-not-allowed": "a host outside allowed_hosts",
    "dot-segment": "a '.' or '..' segment (path traversal)",
    "drive-letter": "a Windows drive before a kept separator (an absolute path)",
    "forbidden-char": "a control, bidi or other always-forbidden character",
    "raw-char": "a raw byte no setting accepts (space, control, non-ASCII)",
    "authority": "in the authority of an absolute-form target",
    "unresolved": "still rejected after the last of its relaxations",
    "raw-path": 'a raw character no browser sends in a path (< > " { } ^ `)',
    "empty-beside-separator": (
        "an empty segment where a separator is kept ('//' cannot be told from "
        "a leading %2F, an absolute or UNC path)"
    ),
    "double-twice": "decoded twice, a separator, a dot segment, a control or another escape",
    "double-twice-under": (
        "a target under it, decoded twice, gives a separator, a dot segment, a control or "
        "another escape"
    ),
}


def _cause(target: bytes, path: bytes, error: InvalidTarget, policy: Policy) -> _Cause:
    rule: str = error.rule
    if rule in PROTECTED_RULES:
        return _Cause(rule, None, _REASONS[rule])
    if error.component == "target" and rule != "too-long":
        return _Cause(rule, None, _REASONS["authority"])  # the host is never relaxed
    raw = target
    if rule == "too-long":
        return _Cause(rule, {("max_length", ""): len(raw)})
    query = raw.partition(b"?")[2] if b"?" in raw else b""
    if rule == "too-many":
        if error.component == "path":
            return _Cause(rule, {("max_segments", ""): path.count(b"/")})
        return _Cause(rule, {("max_params", ""): sum(1 for pair in query.split(b"&") if pair)})
    if rule == "raw-char":
        return _raw_char_cause(path if error.component == "path" else query, error, policy)
    if rule == "forbidden-char":
        return _forbidden_char_cause(path, query, error, policy)
    key = {
        "encoded-slash": "encoded_slash",
        "encoded-backslash": "encoded_backslash",
        "empty-segment": "empty_segment",
        "double-encoding": "double_encoding",
    }[rule]
    return _Cause(rule, {(key, ""): 0})


def _raw_char_cause(piece: bytes, error: InvalidTarget, policy: Policy) -> _Cause:
    in_path = error.component == "path"
    allowed = (g.PATH_RAW if in_path else g.QUERY_RAW) | frozenset(
        (policy.raw_path_extra if in_path else policy.raw_query_extra).encode("ascii")
    )
    if in_path and policy.path_params == "reject":
        allowed -= {g.SEMICOLON}
    key = "raw_path_extra" if in_path else "raw_query_extra"
    atoms: dict[Atom, int] = {}
    for byte in set(piece) - allowed:
        if byte in g.ALLOWABLE_RAW_EXTRA:
            atoms[key, chr(byte)] = 0
        elif byte == g.SEMICOLON and in_path and policy.path_params == "reject":
            atoms["path_params", ""] = 0
        else:
            return _Cause("raw-char", None, _REASONS["raw-char"])
    if not atoms:  # cannot happen: the parser found one; never loop on it
        return _Cause("raw-char", None, _REASONS["unresolved"])
    return _Cause("raw-char", atoms)


def _always_forbidden(char: str) -> bool:
    return not _STRICT.allows_char(char)


def _forbidden_char_cause(
    path: bytes, query: bytes, error: InvalidTarget, policy: Policy
) -> _Cause:
    """Every character of the component the policy forbids, not only the
    first: one relaxation admits them all."""
    if error.component == "path":
        text = percent_decode(path).decode("utf-8", "replace")
        found = {c for c in text if not policy.allows_char(c)}
        if not found or any(_always_forbidden(c) for c in found):
            return _Cause("forbidden-char", None, _REASONS["forbidden-char"])
        return _Cause("forbidden-char", {("allow_chars", c): 0 for c in found})
    if policy.plus_as_space:
        query = query.replace(b"+", b" ")
    text = percent_decode(query).decode("utf-8", "replace")
    found = {c for c in text if not policy.allows_char(c, "query")}
    if not found or any(_always_forbidden(c) and c not in QUERY_TEXT_CONTROLS for c in found):
        return _Cause("forbidden-char", None, _REASONS["forbidden-char"])
    return _Cause("forbidden-char", {("query_allow_chars", c): 0 for c in found})


@functools.lru_cache(maxsize=4096)
def _relax(policy: Policy, atom: Atom, need: int) -> Policy:
    """``policy`` with one atom applied: only ever looser. (Cached: a
    Policy derives its tables when made, and targets ask for the same
    relaxations of the same few policies over and over.)"""
    key, char = atom
    if key in _SWITCHES:
        value = _SWITCHES[key]
        return policy if getattr(policy, key) == value else policy.replace(**{key: value})
    if key in _LIMIT_KEYS:
        return policy if getattr(policy, key) >= need else policy.replace(**{key: need})
    current: str = getattr(policy, key)
    if char in current:
        return policy
    return policy.replace(**{key: _chars(current + char)})


def _chars(text: str) -> str:
    return "".join(sorted(set(text)))


def _relaxing(atom: Atom, need: int) -> Callable[[Policy], Policy]:
    return lambda policy: _relax(policy, atom, need)


def _adding(key: str, chars: str) -> Callable[[Policy], Policy]:
    return lambda policy: policy.replace(**{key: _chars(getattr(policy, key) + chars)})


_STRICT: Final = Policy()


# --- The configuration being built -------------------------------------------------


class _Draft:
    """A base policy and route policies (whole policies, as in a
    :class:`~urlguard.Config`), relaxed atom by atom."""

    def __init__(self, base: Policy, routes: Mapping[str, Policy]) -> None:
        self.base = base
        self.routes = dict(routes)
        self._keys = {_route_key(prefix): prefix for prefix in self.routes}
        self._table: RouteTable | None = None

    def copy(self) -> _Draft:
        return _Draft(self.base, self.routes)

    def table(self) -> RouteTable:
        if self._table is None:
            self._table = RouteTable(self.base, list(self.routes.items()))
        return self._table

    def apply(self, prefix: str, change: Callable[[Policy], Policy]) -> None:
        """Apply ``change`` to what ``prefix`` covers: the base policy and
        every route for ``/``; else the route at ``prefix`` (made from the
        policy that covers it now) and every longer route under it, since
        the longest matching route replaces the shorter ones."""
        self._table = None
        if prefix == "/":
            self.base = change(self.base)
            self.routes = {p: change(policy) for p, policy in self.routes.items()}
            return
        key = _route_key(prefix)
        prefix = self._keys.get(key, prefix)  # one decoded key, one route
        if prefix not in self.routes:
            self.routes[prefix] = self.select(prefix)
            self._keys[key] = prefix
        for other, policy in self.routes.items():
            if _route_key(other).startswith(key):
                self.routes[other] = change(policy)

    def select(self, prefix: str) -> Policy:
        return self.table().select(prefix.encode("ascii"))

    def shorter(self, prefix: str) -> str | None:
        key = _route_key(prefix)
        found = [p for p in self.routes if p != prefix and key.startswith(_route_key(p))]
        return max(found, key=lambda p: len(_route_key(p))) if found else None

    def canonical(self, prefix: str) -> str:
        """The route's prefix as the draft spells it (one decoded key, one route)."""
        return self._keys.get(_route_key(prefix), prefix)


def _route_key(prefix: str) -> bytes:
    return percent_decode(prefix.encode("ascii"))


# --- Where: directories ---------------------------------------------------------------


def _directory(paths: Sequence[bytes]) -> bytes:
    """The longest raw prefix of all ``paths`` that ends in '/' and is a
    valid route prefix."""
    # The common prefix of the least and the greatest is everyone's.
    first, last = min(paths), max(paths)
    size = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        size += 1
    common = first[:size]
    common = common[: common.rfind(b"/") + 1]
    bad = _BAD_PREFIX_BYTE.search(common)
    if bad is not None:
        common = common[: common.rfind(b"/", 0, bad.start()) + 1]
    return common or b"/"


# --- The engine: which prefixes the evidence supports ----------------------------------


@dataclasses.dataclass
class _Grant:
    """One change the evidence supports: ``cause``'s settings under
    ``prefix`` (``/``: the top level)."""

    prefix: bytes
    cause: Cause
    tally: _Tally


@dataclasses.dataclass
class _Refusal:
    prefix: bytes
    cause: Cause
    tally: _Tally
    reason: str


_NOT_ENOUGH: Final = "not enough evidence to admit"


class _Planner:
    """Merges, per cause, the tallies of sibling prefixes into their common
    prefix and judges the evidence there."""

    def __init__(self, ledger: Ledger, thresholds: Thresholds) -> None:
        self.ledger = ledger
        self.route = thresholds
        self.site = thresholds.site()
        self.grants: list[_Grant] = []
        self.refused: list[_Refusal] = []

    def plan(self) -> None:
        for cause in sorted(self.ledger.groups):
            groups = self.ledger.groups[cause]
            served = sorted(prefix for prefix, tally in groups.items() if tally.served)
            # Groups still to cover, in a list: a split may go deeper as many
            # times as the cause has prefixes.
            pending = [served] if served else []
            while pending:
                pending += self._cover(cause, pending.pop(), groups)

    def _blocked(self, cause: Cause, prefix: bytes) -> bool:
        """Whether ``cause`` under ``prefix`` would admit a target whose
        second decoding is dangerous."""
        if _DOUBLE not in cause:
            return False
        if self.ledger.blockers_overflow:
            return True
        key = percent_decode(prefix)
        return any(blocker.startswith(key) for blocker in self.ledger.blockers)

    def _cover(
        self, cause: Cause, prefixes: list[bytes], groups: Mapping[bytes, _Tally]
    ) -> list[list[bytes]]:
        """Give ``cause`` to the common prefix of ``prefixes`` when the
        evidence under it is enough, else list it as refused. The top level
        is split by first segment unless the evidence is enough for a
        site-wide change without the part that has the most of it: a site-wide
        change is for a cause seen all over the site, and one busy route
        with a few requests elsewhere (which an attacker can add) is a
        route. A prefix over a target that must stay rejected is split too.
        Returns the parts still to cover."""
        common = prefixes[0] if len(prefixes) == 1 else _directory(prefixes)
        blocked = self._blocked(cause, common)
        top = common == b"/"
        parts: dict[bytes, list[bytes]] = {}
        for prefix in prefixes:
            # The next segment, or the name after ``common``; a prefix that is
            # ``common`` itself is a part no longer prefix covers.
            cut = prefix.find(b"/", len(common))
            parts.setdefault(prefix if cut < 0 else prefix[: cut + 1], []).append(prefix)
        tallies = {part: _merged(groups[p] for p in members) for part, members in parts.items()}
        if top and not blocked:
            largest = max(tallies, key=lambda part: (tallies[part].requests, part))
            spread = _merged(tally for part, tally in tallies.items() if part != largest)
            if self.site.met(spread):
                self.grants.append(_Grant(common, cause, _merged(tallies.values())))
                return []
        elif not blocked:
            tally = _merged(tallies.values())
            if self.route.met(tally):
                self.grants.append(_Grant(common, cause, tally))
            else:
                self.refused.append(_Refusal(common, cause, tally, _NOT_ENOUGH))
            return []
        if common in parts:
            reason = _REASONS["double-twice-under"] if blocked else _NOT_ENOUGH
            self.refused.append(_Refusal(common, cause, tallies[common], reason))
        return [members for part, members in parts.items() if part != common]

    def bound(self) -> None:
        """At most ``routes`` route prefixes: those with the most evidence
        stay; the others' changes are refused, never silently dropped."""
        weight: Counter[bytes] = Counter()
        for grant in self.grants:
            if grant.prefix != b"/":
                weight[percent_decode(grant.prefix)] += grant.tally.requests
        if len(weight) <= self.route.routes:
            return
        ranked = sorted(weight, key=lambda key: (-weight[key], key))
        kept = set(ranked[: self.route.routes])
        reason = f"past the bound of {self.route.routes} routes (--max-routes)"
        self._drop(
            lambda grant: grant.prefix != b"/" and percent_decode(grant.prefix) not in kept, reason
        )

    def separate(self, current: _Draft) -> None:
        """No scope gets both ``empty_segment = "allow"`` and a kept
        separator: there the parser cannot tell ``//`` from ``%2Fetc``. The
        empty segment gives way."""
        keeping = [
            percent_decode(grant.prefix)
            for grant in self.grants
            if any(_is_separator(atom) for atom in grant.cause)
        ]
        keeping += [
            _route_key(prefix)
            for prefix, policy in current.routes.items()
            if _keeps_separator(policy)
        ]
        if _keeps_separator(current.base):
            keeping.append(b"/")

        def conflicts(grant: _Grant) -> bool:
            if _EMPTY not in grant.cause:
                return False
            key = percent_decode(grant.prefix)
            return any(key.startswith(other) or other.startswith(key) for other in keeping)

        self._drop(conflicts, _REASONS["empty-beside-separator"])

    def _drop(self, condition: Callable[[_Grant], bool], reason: str) -> None:
        kept = []
        for grant in self.grants:
            if condition(grant):
                self.refused.append(_Refusal(grant.prefix, grant.cause, grant.tally, reason))
            else:
                kept.append(grant)
        self.grants = kept


def suggest(
    ledger: Ledger,
    thresholds: Thresholds | None = None,
    *,
    mode: str = "enforce",
    judged_under: str = "strict",
    lines: Lines | None = None,
) -> Suggestion:
    """The configuration that admits the served requests of ``ledger`` that
    its policy rejects, where the evidence meets ``thresholds``, except
    those a rule never loosened stops. ``judged_under`` names that policy in
    the text; ``mode`` is kept as it is; ``lines`` says what the input held."""
    thresholds = Thresholds() if thresholds is None else thresholds
    current = _Draft(ledger.policy, dict(ledger.routes))
    planner = _Planner(ledger, thresholds)
    planner.plan()
    planner.separate(current)
    planner.bound()
    draft = current.copy()
    for grant in sorted(planner.grants, key=lambda grant: (len(grant.prefix), grant.prefix)):
        check_prefix(grant.prefix.decode("ascii"), "suggested route")  # never a bad prefix
        for atom in grant.cause:
            draft.apply(
                grant.prefix.decode("ascii"), _relaxing(atom, grant.tally.needs.get(atom, 0))
            )
    _browser_sets(draft, current)
    return _result(
        ledger, draft, current, planner, thresholds, mode, judged_under, lines or Lines()
    )


def _browser_sets(draft: _Draft, current: _Draft) -> None:
    """Raw characters that browsers send are relaxed as a set: a browser
    that sent '[' raw sends '{' raw as soon as a user types one. At the top
    level that is the browser preset; under a route, the preset's set for
    the component (never, in a path, a character no browser sends raw)."""
    browser = Policy.browser()
    added_path = set(draft.base.raw_path_extra) - set(current.base.raw_path_extra)
    added_query = set(draft.base.raw_query_extra) - set(current.base.raw_query_extra)
    if (added_path or added_query) and (
        added_path <= _BROWSER_PATH_CHARS and added_query <= _BROWSER_QUERY_CHARS
    ):
        for key in _BROWSER_KEYS:
            draft.apply("/", _adding(key, getattr(browser, key)))
    for prefix in list(draft.routes):
        before = current.select(prefix)
        for key, browser_chars in (
            ("raw_path_extra", _BROWSER_PATH_CHARS),
            ("raw_query_extra", _BROWSER_QUERY_CHARS),
        ):
            added = set(getattr(draft.routes[prefix], key)) - set(getattr(before, key))
            if added and added <= browser_chars:
                draft.apply(prefix, _adding(key, "".join(sorted(browser_chars))))


def _same(key: str, a: object, b: object) -> bool:
    if key in _CHAR_KEYS and isinstance(a, str) and isinstance(b, str):
        return set(a) == set(b)
    return a == b


_Credit = dict[tuple[str | None, str], tuple[_Tally, set[str]]]


def _credits(draft: _Draft, grants: Iterable[_Grant]) -> _Credit:
    """Which written line each change is: its route, else the top level
    (``preset`` for the browser preset's fields), with the evidence of every
    change written there."""
    credits: _Credit = {}
    base = draft.base
    preset = _preset_policy(base)
    for grant in grants:
        scope: str | None = None
        if grant.prefix != b"/":
            scope = draft.canonical(grant.prefix.decode("ascii"))
        for key in dict.fromkeys(atom[0] for atom in grant.cause):  # once per written line
            where = scope
            if (
                where is None
                and key in _BROWSER_KEYS
                and _same(key, getattr(base, key), getattr(preset, key))
            ):
                key = "preset"
            tally, rules = credits.setdefault((where, key), (_Tally(), set()))
            tally.merge(grant.tally)
            rules |= grant.tally.rules
    return credits


# --- Writing it out ---------------------------------------------------------------------


def _preset_of(policy: Policy) -> str:
    browser = Policy.browser()
    covered = all(set(getattr(policy, key)) >= set(getattr(browser, key)) for key in _BROWSER_KEYS)
    return "browser" if covered else "strict"


def _preset_policy(policy: Policy) -> Policy:
    return Policy.browser() if _preset_of(policy) == "browser" else _STRICT


def _differences(policy: Policy, reference: Policy) -> dict[str, object]:
    return {
        key: getattr(policy, key)
        for key in Policy.FIELDS
        if not _same(key, getattr(policy, key), getattr(reference, key))
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_range(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _toml_range(item: object) -> str:
    if isinstance(item, tuple | list):
        return "[" + ", ".join(f"0x{n:04X}" for n in item) + "]"
    return _toml_value(item)


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string in printable ASCII: quotes,
    backslashes and every other character escaped (no control or bidi
    character reaches a terminal or a file).

    >>> print(toml_string('a"b\\\\c\\r\\n\\u202e'))
    "a\\"b\\\\c\\r\\n\\u202E"
    """
    out = ['"']
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(f"\\U{ord(char):08X}")
    out.append('"')
    return "".join(out)


_TOML_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _result(
    ledger: Ledger,
    draft: _Draft,
    current: _Draft,
    planner: _Planner,
    thresholds: Thresholds,
    mode: str,
    judged_under: str,
    lines: Lines,
) -> Suggestion:
    credits = _credits(draft, planner.grants)
    mapping: dict[str, Any] = {"preset": _preset_of(draft.base)}
    if mode != "enforce":
        mapping["mode"] = mode
    mapping.update(_differences(draft.base, _preset_policy(draft.base)))
    # A relaxation back to the preset's value is written all the same, so
    # that every suggested change is a line with its evidence.
    for scope, key in credits:
        if scope is None and key in Policy.FIELDS and key not in mapping:
            mapping[key] = getattr(draft.base, key)
    routes = {p: _differences(draft.routes[p], draft.base) for p in sorted(draft.routes)}
    if routes:
        mapping["routes"] = routes
    changes = tuple(
        _change(scope, key, value, credits, draft, current) for scope, key, value in _lines(mapping)
    )

    failed_rejected: Counter[str] = Counter(ledger.failed_stopped)
    for refusal in planner.refused:
        for rule in refusal.tally.rules:
            failed_rejected[rule] += refusal.tally.failed
    for groups in ledger.groups.values():
        for tally in groups.values():
            if not tally.served:  # failing only: nothing to admit there
                for rule in sorted(tally.rules, key=RULES.index)[:1]:
                    failed_rejected[rule] += tally.failed
    if ledger.overflow.served:
        planner.refused.append(
            _Refusal(b"/", (), ledger.overflow, f"past {MAX_CAUSES} distinct causes")
        )
    stopped = sum(tally.served for tally in ledger.stopped.values())
    refused = sum(refusal.tally.served for refusal in planner.refused)
    admitted = sum(grant.tally.served for grant in planner.grants)
    suggestion = Suggestion(
        text="",
        mapping=_json_ready(mapping),
        changes=changes,
        served=ledger.requests["served"],
        failed=ledger.requests["failed"],
        other=ledger.requests["other"],
        rejected_served=stopped + refused + admitted,
        admitted=admitted,
        stopped=_stopped(ledger),
        refused=tuple(_refused(planner.refused)),
        still_rejected=(),
        failed_rejected=dict(sorted(failed_rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
        failed_admitted=sum(grant.tally.failed for grant in planner.grants),
        thresholds=thresholds,
        lines=lines,
    )
    text = _text(suggestion, judged_under)
    # Checkable: the text, read back as a configuration, must admit what it
    # was made to admit. Anything it does not is shown, never hidden.
    still = _read_back(text, planner.grants)
    if still:
        suggestion = dataclasses.replace(suggestion, still_rejected=tuple(still))
        text = _text(suggestion, judged_under)
    return dataclasses.replace(suggestion, text=text)


def _refused(refusals: Iterable[_Refusal]) -> list[Refused]:
    found = [
        Refused(
            refusal.prefix.decode("ascii", "replace"),
            tuple(sorted(refusal.tally.rules, key=RULES.index)),
            refusal.reason,
            refusal.tally.evidence(),
        )
        for refusal in refusals
    ]
    found.sort(key=lambda r: (-r.evidence.requests, r.scope, r.rules))
    return found


def _json_ready(mapping: dict[str, Any]) -> dict[str, Any]:
    """The mapping with tuples as lists, as JSON and TOML readers give it."""

    def fix(value: object) -> object:
        if isinstance(value, tuple | list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    return {key: fix(value) for key, value in mapping.items()}


def _lines(mapping: Mapping[str, Any]) -> Iterable[tuple[str | None, str, object]]:
    for key, value in mapping.items():
        if key != "routes":
            yield None, key, value
    for prefix, table in mapping.get("routes", {}).items():
        for key, value in table.items():
            yield prefix, key, value


def _change(
    scope: str | None,
    key: str,
    value: object,
    credits: _Credit,
    draft: _Draft,
    current: _Draft,
) -> Change:
    credit = credits.get((scope, key))
    if credit is not None:
        tally, rules = credit
        return Change(
            scope,
            key,
            value,
            "suggested",
            tuple(sorted(rules, key=RULES.index)),
            tally.evidence(),
        )
    if scope is None:
        if key == "preset":
            same = value == _preset_of(current.base)
        elif key == "mode":
            same = True
        else:
            same = _same(key, value, getattr(current.base, key))
        return Change(scope, key, value, "current" if same else "inherited")
    if scope in current.routes and _same(key, value, getattr(current.routes[scope], key)):
        return Change(scope, key, value, "current")
    # A route made inside another repeats what encloses it.
    return Change(scope, key, value, "inherited", inherited_from=draft.shorter(scope))


def _read_back(text: str, grants: Iterable[_Grant]) -> list[str]:
    """The examples of the changes that the written text, read back as a
    configuration, still rejects (none, unless something is wrong)."""
    config = config_from_mapping(tomllib.loads(text), source="suggestion")
    table = RouteTable(config.policy, list(config.routes))
    still = []
    for grant in grants:
        for _, target in grant.tally.examples:
            if _judge(target, table.select(target)) is not None:
                still.append(display(target, limit=EXAMPLE_BYTES))
    return still


def _stopped(ledger: Ledger) -> tuple[Stopped, ...]:
    found = [
        Stopped(
            rule,
            reason,
            tally.served,
            len(tally.targets),
            tuple(display(target, limit=EXAMPLE_BYTES) for _, target in tally.examples),
        )
        for (rule, reason), tally in ledger.stopped.items()
    ]
    found.sort(key=lambda stop: (-stop.requests, stop.rule, stop.reason))
    return tuple(found)


def _when(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return f"{datetime.datetime.fromtimestamp(seconds, datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"


def _counted(count: int, noun: str) -> str:
    return _plural(count, noun) + (" or more" if count >= COUNTED else "")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _text(suggestion: Suggestion, judged_under: str) -> str:
    s = suggestion
    stopped = sum(stop.requests for stop in s.stopped)
    refused = sum(refusal.evidence.requests + refusal.evidence.contested for refusal in s.refused)
    read = s.lines
    lines = [
        "# urlguard configuration suggested by `urlguard audit --suggest`.",
        f"# The logs were judged under: {judged_under}.",
        f"# Lines read: {read.read:,}; parsed: {read.parsed:,}; skipped (not parsed): "
        f"{read.skipped:,}.",
        *(f"#   e.g. {shown}" for shown in read.examples),
        f"# Requests answered 2xx/3xx: {s.served:,}, of which that policy rejects "
        f"{s.rejected_served:,}.",
        f"# This configuration admits {s.admitted:,} of those; never loosened: {stopped:,}; "
        f"not enough evidence or refused: {refused:,}"
        + (" (listed at the end)." if stopped or refused else "."),
        f"# Requests answered 4xx/5xx: {s.failed:,}; this configuration admits "
        f"{s.failed_admitted:,} of those that policy rejects.",
        f"# Evidence a change needs: {s.thresholds.text()} under a route; "
        f"{s.thresholds.site().text()} at the top level.",
    ]
    if s.other:
        lines.append(
            f"# Requests with no 2xx-5xx status (1xx, 000, or a list of targets): "
            f"{s.other:,}; they count neither way."
        )
    lines.append("# Check it: urlguard audit --config THIS-FILE LOG...")
    by_line = {(change.scope, change.key): change for change in s.changes}
    lines.append("")
    for key, value in s.mapping.items():
        if key != "routes":
            lines += _spaced(lines, _commented(by_line[None, key], value))
    routes: dict[str, dict[str, object]] = s.mapping.get("routes", {})
    for prefix, table in routes.items():
        lines += ["", f"[routes.{toml_string(prefix)}]"]
        if not table:
            lines.append("# as in the current configuration: the base policy")
        for key, value in table.items():
            lines += _spaced(lines, _commented(by_line[prefix, key], value))
    lines += _closing(s)
    return "\n".join(lines) + "\n"


def _spaced(before: list[str], entry: list[str]) -> list[str]:
    """A blank line between an entry with comment lines and a line above
    it that is not a table header or a blank line already."""
    if len(entry) > 1 and before and before[-1] and not before[-1].startswith("["):
        return ["", *entry]
    return entry


def _commented(change: Change, value: object) -> list[str]:
    line = f"{change.key} = {_toml_value(value)}"
    if change.origin == "current":
        return [f"{line}  # as in the current configuration"]
    if change.origin == "inherited":
        where = (
            "the top level"
            if change.inherited_from is None
            else f"[routes.{toml_string(change.inherited_from)}]"
        )
        return [f"{line}  # as in {where}, which this longer prefix replaces"]
    return [
        f"# {', '.join(change.rules)}{_browser_note(change.key, value)}:",
        *(f"#   {line}" for line in _evidence_lines(change.admits)),
        line,
    ]


def _evidence_lines(e: Evidence) -> list[str]:
    """What a change rests on, in words: requests, targets, clients, the
    first and last time seen, an example, and the requests answered 4xx/5xx."""
    lines = [
        f"{_plural(e.requests, 'request')} answered 2xx/3xx ({_counted(e.targets, 'target')}) "
        f"from {_counted(e.clients, 'client')},",
        f"first seen {_when(e.first) or 'at no logged time'}, "
        f"last seen {_when(e.last) or 'at no logged time'};",
        f"e.g. {e.example}",
    ]
    if e.failed:
        lines.append(
            f"and {_plural(e.failed, 'request')} answered 4xx/5xx under it"
            f" ({e.against:,} on the very targets it admits, whose"
            f" {_plural(e.contested, 'served request')} do not count)"
        )
    else:
        lines.append("and none answered 4xx/5xx")
    return lines


def _browser_note(key: str, value: object) -> str:
    """Say so when a line is there because browsers send characters raw."""
    if key == "preset" and value == "browser":
        return " (browsers send some characters raw; this preset accepts what they send)"
    browser = {"raw_path_extra": _BROWSER_PATH_CHARS, "raw_query_extra": _BROWSER_QUERY_CHARS}
    if key in browser and isinstance(value, str) and set(value) >= browser[key]:
        return " (all that browsers send raw)"
    return ""


def _closing(s: Suggestion) -> list[str]:
    lines: list[str] = []
    if s.still_rejected:
        lines += [
            "",
            "# Meant to be admitted, yet rejected by this text read back (a bug; please report):",
            *(f"#   {shown}" for shown in s.still_rejected),
        ]
    if s.refused:
        lines += [
            "",
            "# Answered 2xx/3xx, but would be rejected: not enough evidence to admit, or a",
            "# change this configuration does not make (see each reason):",
        ]
        for refusal in s.refused[:REFUSED_SHOWN]:
            where = "the top level" if refusal.scope == "/" else toml_string(refusal.scope)
            e = refusal.evidence
            lines += [
                f"#   {', '.join(refusal.rules) or 'several rules'} under {where}:",
                f"#     {refusal.reason};",
                f"#     {_plural(e.requests, 'request')} ({_counted(e.targets, 'target')}) "
                f"from {_counted(e.clients, 'client')}, {_when(e.first) or 'no time'} "
                f"to {_when(e.last) or 'no time'}",
                f"#     e.g. {e.example}",
            ]
        rest = s.refused[REFUSED_SHOWN:]
        if rest:
            requests = sum(refusal.evidence.requests for refusal in rest)
            lines.append(f"#   and {len(rest):,} more, {_plural(requests, 'request')} in all")
    if s.stopped:
        lines += [
            "",
            "# Answered 2xx/3xx and still rejected: these rules are never loosened, so",
            "# enforcement will stop these requests (fix the links or the clients):",
        ]
        for stop in s.stopped:
            lines.append(
                f"#   {stop.rule}: {_plural(stop.requests, 'request')} "
                f"({_counted(stop.targets, 'target')}), {stop.reason}"
            )
            lines += [f"#     e.g. {shown}" for shown in stop.examples]
    if s.failed_rejected:
        lines += [
            "",
            "# Answered 4xx/5xx and still rejected, by rule: "
            + ", ".join(f"{rule} {n:,}" for rule, n in s.failed_rejected.items()),
        ]
    return lines


__all__ = [
    "Change",
    "Evidence",
    "Ledger",
    "Lines",
    "Refused",
    "Stopped",
    "Suggestion",
    "Thresholds",
    "client_key",
    "status_class",
    "suggest",
    "toml_string",
]
