"""From access logs to a policy: the engine of ``urlguard audit --suggest``.

A log says, for every request, what the server answered. A request the site
answered with 2xx or 3xx was *served*: if the current policy rejects it, the
policy is too strict for the site, and the suggestion relaxes exactly what
that request needs, for exactly the part of the site where such requests
are served. A request answered with 4xx or 5xx is *failing*: when it would be
rejected for the same reason, it is evidence against relaxing there.

What the engine does, in order:

1. :class:`Ledger` is told, by the auditor, the statuses of all requests
   and each target the current policy rejects, with its status, count and
   error; it keeps those targets only.
2. :func:`suggest` relaxes, round after round, the earliest rule (in the
   parser's order) that still rejects a served target. Each relaxation is
   one *atom* (``encoded_slash = "keep"``, one character for
   ``raw_query_extra``, a limit) given to the longest raw path prefix that
   covers all the served targets needing it and none of the failing ones
   rejected for the same reason; several prefixes when one cannot, the top
   level when the only common prefix is ``/`` and no failing request is in
   the way. A target may fail on a second rule once its first is relaxed:
   it is judged again in the next round, until it passes or meets a rule
   that is never loosened.
3. Rules that protect are never loosened, whatever the status:
   ``invalid-utf8``, ``malformed-escape``, ``fragment``, ``bad-form``,
   ``dot-segment``, a control, bidi or other always-forbidden character (in
   the query, only TAB, LF and CR may be re-allowed: a ``<textarea>`` sends
   them), and a raw byte no setting accepts (space, controls, non-ASCII).
   Served requests that meet one are listed as what enforcement will stop.
4. The suggestion is written as TOML in the configuration format of
   :mod:`urlguard._config`, every line with a comment: the rule it relaxes,
   the requests and distinct targets it admits, one escaped example, and the
   failing requests it admits too. The text is then read back with
   :func:`~urlguard.config_from_mapping` and every served target judged
   again under it: any that still fails is listed, never hidden.

Nothing here reads a file or prints: the command line feeds the ledger and
writes the text.

    >>> from urlguard import Policy
    >>> from urlguard import InvalidTarget
    >>> slash = InvalidTarget("encoded-slash", "path", 1, 7)  # as the auditor found it
    >>> ledger = Ledger()
    >>> for target, status in [(b"/files/a%2Fb", 200), (b"/files/c%2Fd", 200), (b"/x/..%2F", 404)]:
    ...     ledger.observe(target, status, 1, slash)
    >>> ledger.count_statuses({200: 2, 404: 1})
    >>> result = suggest(ledger, Policy())
    >>> [(c.scope, c.key, c.value) for c in result.changes if c.origin == "suggested"]
    [('/files/', 'encoded_slash', 'keep')]
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from . import _grammar as g
from ._audit import OK, display
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
#: Distinct failing targets kept as evidence; more are counted, not kept.
KEEP_FAILED: Final = 1 << 18
#: Served targets shown per rule among what enforcement will stop.
STOPPED_EXAMPLES: Final = 5
#: Bytes of a target shown in an example.
EXAMPLE_BYTES: Final = 100
#: Rounds of relaxation before the engine gives up on what is left.
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

# A route prefix must be printable ASCII without space, '?' or '#'
# (_config.check_prefix); a raw path may hold other bytes under a policy
# that accepts them raw, and a prefix is then cut before them.
_BAD_PREFIX_BYTE: Final = re.compile(rb"[^!-~]|[?#]")


def status_class(status: int | None) -> StatusClass:
    """``served`` for 2xx and 3xx, ``failed`` for 4xx and 5xx, else
    ``other`` (1xx, nonsense such as nginx's 000, or no status at all)."""
    if status is None:
        return "other"
    if 200 <= status < 400:
        return "served"
    if 400 <= status < 600:
        return "failed"
    return "other"


# --- What the log says --------------------------------------------------------


class Ledger:
    """Requests by status class, and every target the current policy rejects
    with the statuses it was answered with. Fed by the auditor, one call per
    distinct (target, status) of a chunk: cheap, and nothing for accepted
    targets but a count."""

    def __init__(self, keep_failed: int = KEEP_FAILED) -> None:
        #: Requests with a target, by status class (accepted ones included).
        self.requests: Counter[StatusClass] = Counter()
        #: Rejected target -> requests answered 2xx/3xx, and 4xx/5xx. (Plain
        #: dicts of bytes and ints: nothing for the garbage collector to walk.)
        self.served: dict[bytes, int] = {}
        self.failed: dict[bytes, int] = {}
        #: Rejected target -> why the current policy rejects it (the engine
        #: need not judge it again).
        self.errors: dict[bytes, InvalidTarget] = {}
        #: Failing or other requests not kept, by rule: rejected by a rule
        #: never loosened (no evidence needed), or over ``keep_failed``.
        self.not_kept: Counter[tuple[StatusClass, str]] = Counter()
        self.dropped = 0  # failing requests over the limit of kept targets
        self._keep_failed = keep_failed
        self._failed_kept = 0

    def count_statuses(self, counts: Mapping[int | None, int]) -> None:
        """Count requests with a target (``counts``: status -> requests)."""
        requests = self.requests
        for status, count in counts.items():
            requests[status_class(status)] += count

    def observe(self, target: bytes, status: int | None, count: int, error: InvalidTarget) -> None:
        """Note ``count`` requests for ``target`` answered ``status`` that the
        current policy rejects with ``error``. (Count them with
        :meth:`count_statuses` too.)"""
        kind = status_class(status)
        verdict = error.rule
        if kind == "served":
            served = self.served
            if target not in served and target not in self.failed:
                self.errors[target] = error
            served[target] = served.get(target, 0) + count
            return
        known = target in self.served or target in self.failed
        if kind == "other" or (not known and verdict in PROTECTED_RULES):
            self.not_kept[kind, verdict] += count  # no evidence needed
            return
        if not known:
            if self._failed_kept >= self._keep_failed:
                self.not_kept[kind, verdict] += count
                self.dropped += count
                return
            self._failed_kept += 1
            self.errors[target] = error
        self.failed[target] = self.failed.get(target, 0) + count

    def items(self) -> list[tuple[bytes, int, int]]:
        """Every target kept, with its requests answered 2xx/3xx and 4xx/5xx."""
        served, failed = self.served, self.failed
        return [
            (target, served.get(target, 0), failed.get(target, 0))
            for target in {**served, **failed}
        ]


# --- The result ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Requests and distinct targets, with the most requested one escaped."""

    requests: int = 0
    targets: int = 0
    example: str = ""

    def as_json(self) -> dict[str, object]:
        return {"requests": self.requests, "targets": self.targets, "example": self.example}


@dataclasses.dataclass(frozen=True)
class Change:
    """One line of the suggested configuration.

    ``scope`` is ``None`` for the top level, else the route prefix.
    ``origin`` says why the line is there: ``suggested`` (it admits served
    requests: ``admits``, and ``against`` the failing ones it admits too),
    ``current`` (as in the policy the log was judged under), or ``inherited``
    (repeated from ``inherited_from``, a shorter prefix or the top level,
    because the longest matching route replaces the base policy).
    """

    scope: str | None
    key: str
    value: object
    origin: Literal["suggested", "current", "inherited"]
    rules: tuple[str, ...] = ()
    admits: Evidence = Evidence()
    against: Evidence = Evidence()
    inherited_from: str | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "key": self.key,
            "value": self.value,
            "origin": self.origin,
            "rules": list(self.rules),
            "admits": self.admits.as_json(),
            "against": self.against.as_json(),
        }


@dataclasses.dataclass(frozen=True)
class Stopped:
    """Served requests the suggestion does not admit, for one rule."""

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
class Suggestion:
    """The suggested configuration (``text``, TOML, and ``mapping``, the
    same as data), line by line with its evidence (``changes``), and what it
    leaves rejected.

    ``served``/``failed``/``other``: requests with a target by status class.
    ``rejected_served``: served requests the current policy rejects;
    ``admitted``: those the suggestion admits; ``stopped``: those it does
    not, per rule (never loosened). ``still_rejected``: served targets the
    suggestion meant to admit and that its own text, read back, rejects
    (empty unless something is wrong). ``failed_rejected``: failing requests
    still rejected, per rule; ``failed_admitted``: failing requests the
    current policy rejects and the suggestion admits.
    """

    text: str
    mapping: dict[str, Any]
    changes: tuple[Change, ...]
    served: int
    failed: int
    other: int
    rejected_served: Evidence
    admitted: Evidence
    stopped: tuple[Stopped, ...]
    still_rejected: tuple[str, ...]
    failed_rejected: dict[str, int]
    failed_admitted: int
    dropped: int
    unparseable: int = 0
    unparseable_examples: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every served request is admitted by the suggestion."""
        return not self.stopped and not self.still_rejected

    def as_json(self) -> dict[str, object]:
        return {
            "toml": self.text,
            "config": self.mapping,
            "served": self.served,
            "failed": self.failed,
            "other": self.other,
            "rejected_served": self.rejected_served.as_json(),
            "admitted": self.admitted.as_json(),
            "stopped": [stop.as_json() for stop in self.stopped],
            "still_rejected": list(self.still_rejected),
            "failed_rejected": dict(self.failed_rejected),
            "failed_admitted": self.failed_admitted,
            "unparseable": self.unparseable,
            "changes": [change.as_json() for change in self.changes if change.origin != "current"],
        }


# --- Targets and verdicts ---------------------------------------------------------


class _Item:
    """One rejected target of the log."""

    __slots__ = (
        "_key", "_path", "failed", "first", "needs", "served", "stop", "target", "verdicts"
    )  # fmt: skip

    def __init__(self, target: bytes, served: int, failed: int) -> None:
        self.target = target
        self._path: bytes | None = None
        self._key: bytes | None = None
        self.served = served
        self.failed = failed
        # Why the current policy rejects it, what it needs beyond that
        # policy, and what stops it if anything does (see _assess); set
        # once, before the engine runs.
        self.first: _Cause | None = None
        self.needs: list[tuple[str, str]] = []
        self.stop: _Cause | None = None
        # Verdicts by policy: the engine asks again under equal policies (a
        # target's own relaxation is often its route's; the text read back
        # makes equal policies anew).
        self.verdicts: dict[Policy, InvalidTarget | None] = {}

    @property
    def path(self) -> bytes:
        """The raw path (made when first read: most targets never need it)."""
        if self._path is None:
            self._path = path_of(self.target)
        return self._path

    @property
    def key(self) -> bytes:
        """The path as routes see it (_routes.RouteTable.select)."""
        if self._key is None:
            path = self.path
            self._key = percent_decode(path) if b"%" in path else path
        return self._key


def _judge(item: _Item, policy: Policy) -> InvalidTarget | None:
    verdicts = item.verdicts
    if policy in verdicts:
        return verdicts[policy]
    try:
        parse_target(item.target, policy)
    except InvalidTarget as error:
        kept = verdicts[policy] = error.with_traceback(None)  # not the parser's frames
        return kept
    verdicts[policy] = None
    return None


class _Cause:
    """Why a target is rejected: the rule, and either the atoms that would
    lift it (with the value each limit needs) or, for a rule never
    loosened, ``atoms is None`` and the reason."""

    __slots__ = ("atoms", "reason", "rule")

    def __init__(self, rule: str, atoms: dict[Atom, int] | None, reason: str = "") -> None:
        self.rule = rule
        self.atoms = atoms
        self.reason = reason


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
    "unresolved": "still rejected after the last round of relaxation",
}


def _cause(item: _Item, error: InvalidTarget, policy: Policy) -> _Cause:
    rule: str = error.rule
    if rule in PROTECTED_RULES:
        return _Cause(rule, None, _REASONS[rule])
    if error.component == "target" and rule != "too-long":
        return _Cause(rule, None, _REASONS["authority"])  # the host is never relaxed
    raw = item.target
    if rule == "too-long":
        return _Cause(rule, {("max_length", ""): len(raw)})
    path = item.path
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
    first: one round relaxes them all."""
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

    def enclosing(self, prefix: str) -> Policy:
        """The policy of the longest other route that covers ``prefix``,
        else the base policy: what ``prefix`` would get without its route."""
        shorter = self.shorter(prefix)
        return self.routes[shorter] if shorter is not None else self.base

    def shorter(self, prefix: str) -> str | None:
        key = _route_key(prefix)
        found = [p for p in self.routes if p != prefix and key.startswith(_route_key(p))]
        return max(found, key=lambda p: len(_route_key(p))) if found else None

    def route_of(self, item: _Item) -> str | None:
        """The prefix of the route the middleware would choose for ``item``."""
        key = item.key
        for route in self.table().routes:  # longest first, as select() tries them
            if key.startswith(route.key) and (
                route.directory or len(key) == len(route.key) or key[len(route.key)] == 0x2F
            ):
                return route.prefix
        return None


def _route_key(prefix: str) -> bytes:
    return percent_decode(prefix.encode("ascii"))


# --- Where to relax: the narrowest prefixes -------------------------------------------


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


def scopes(served: Sequence[bytes], failing: Iterable[bytes]) -> list[tuple[str, list[int]]]:
    """Route prefixes for one relaxation: the longest raw prefix ending in
    '/' that covers every path of ``served`` and no key of ``failing``
    (decoded paths, as routes compare them); when one prefix cannot, the
    served paths are split by their next segment and each part gets its
    own. A part that cannot be split (a path ends there) keeps the prefix
    that covers failing paths too. Returns each prefix with the indices of
    the served paths it covers; ``/`` means the top level.

    >>> scopes([b"/api/p/a%2Fb", b"/api/p/c%2Fd"], [b"/static/x/y"])
    [('/api/p/', [0, 1])]
    >>> scopes([b"/a/x/1", b"/a/y/2"], [b"/a/z/3"])
    [('/a/x/', [0]), ('/a/y/', [1])]
    """
    found: list[tuple[str, list[int]]] = []

    def cover(members: list[int], against: list[bytes]) -> None:
        prefix = _directory([served[i] for i in members])
        key = percent_decode(prefix)
        against = [k for k in against if k.startswith(key)]
        if against:
            parts: dict[bytes, list[int]] = {}
            for i in members:
                rest = served[i][len(prefix) :]
                cut = rest.find(b"/")
                if cut < 0:
                    break  # a path ends here: no longer prefix covers it
                parts.setdefault(rest[: cut + 1], []).append(i)
            else:
                if len(parts) > 1:
                    for part in parts.values():
                        cover(part, against)
                    return
        check_prefix(prefix.decode("ascii"), "suggested route")  # never a bad prefix
        found.append((prefix.decode("ascii"), members))

    if served:
        cover(list(range(len(served))), list(failing))
    return found


# --- The engine ------------------------------------------------------------------------


def _solve(draft: _Draft, served: list[_Item], failing: list[_Item]) -> dict[_Item, _Cause]:
    """Relax ``draft`` until every item of ``served`` passes or meets a rule
    never loosened; return those, with the cause that stops them.

    Relaxing one rule never changes which violation comes first in a target
    whose first is another rule's, so a target is judged again only after
    its own rule was relaxed."""
    stopped: dict[_Item, _Cause] = {}
    pending: dict[_Item, _Cause] = {}  # served, not admitted yet: why
    evidence: dict[_Item, _Cause] = {}  # failing, not admitted yet: why
    to_judge, to_judge_failing = served, failing
    first = True  # the draft is still the current policy: causes known
    for _ in range(MAX_ROUNDS):
        table = draft.table()
        for item in to_judge:
            cause = item.first if first else _cause_under(item, table)
            if cause is not None and cause.atoms is None:
                stopped[item] = cause
            elif cause is not None:
                pending[item] = cause
        for item in to_judge_failing:
            cause = item.first if first else _cause_under(item, table)
            if cause is not None and cause.atoms is not None:
                evidence[item] = cause  # else admitted already, or rejected whatever happens
        first = False
        if not pending:
            return stopped
        # One rule a round, the parser's first: relaxing it may admit what a
        # later rule would have asked for (the browser preset's CR and LF).
        rule = min((cause.rule for cause in pending.values()), key=RULES.index)
        to_judge = [item for item, cause in pending.items() if cause.rule == rule]
        to_judge_failing = [item for item, cause in evidence.items() if cause.rule == rule]
        needs: dict[Atom, list[tuple[_Item, int]]] = {}
        for item in to_judge:
            for atom, need in _atoms(pending.pop(item)).items():
                needs.setdefault(atom, []).append((item, need))
        against: dict[Atom, list[tuple[bytes, int]]] = {}
        for item in to_judge_failing:
            for atom, need in _atoms(evidence.pop(item)).items():
                against.setdefault(atom, []).append((item.key, need))
        for atom, members in sorted(needs.items()):
            top = max(need for _, need in members)
            blocking = (key for key, need in against.get(atom, ()) if need <= top)
            for prefix, indices in scopes([item.path for item, _ in members], blocking):
                value = max(members[i][1] for i in indices)
                draft.apply(prefix, _relaxing(atom, value))
    table = draft.table()
    for item in [*pending, *to_judge]:  # MAX_ROUNDS spent: say so rather than loop on
        if _judge(item, table.select(item.target)) is not None:
            stopped[item] = _Cause("unresolved", None, _REASONS["unresolved"])
    return stopped


def _cause_under(item: _Item, table: RouteTable) -> _Cause | None:
    """Why ``item`` is rejected under ``table``, or ``None`` if it is not."""
    policy = table.select(item.target)
    error = _judge(item, policy)
    return None if error is None else _cause(item, error, policy)


def _atoms(cause: _Cause) -> dict[Atom, int]:
    return cause.atoms if cause.atoms is not None else {}


def _assess(item: _Item, policy: Policy, error: InvalidTarget | None = None) -> None:
    """Set ``item.first``, why ``policy`` rejects it; ``item.needs``, the
    settings (with the rule each relaxes) it needs beyond ``policy``, found
    by relaxing a copy of ``policy`` for it alone; and ``item.stop``, the
    cause that stops it when a rule never loosened does. ``error``: what
    ``policy`` raised for it, when the audit already knows."""
    if error is not None:
        item.verdicts[policy] = error
    item.needs, item.stop = _needs(item, policy)


def _needs(item: _Item, policy: Policy) -> tuple[list[tuple[str, str]], _Cause | None]:
    needed: list[tuple[str, str]] = []
    for _ in range(MAX_ROUNDS):
        error = _judge(item, policy)
        if error is None:
            return needed, None
        cause = _cause(item, error, policy)
        if item.first is None:
            item.first = cause
        if cause.atoms is None:
            return needed, cause
        for atom, need in cause.atoms.items():
            # Which settings, not how much: a limit opened wide says the same
            # and keeps the relaxed policies few (and cached).
            policy = _relax(policy, atom, _NO_LIMIT if atom[0] in _LIMIT_KEYS else need)
            needed.append((atom[0], cause.rule))
    return needed, _Cause("unresolved", None, _REASONS["unresolved"])


def suggest(
    ledger: Ledger,
    policy: Policy,
    routes: Sequence[tuple[str, Policy]] = (),
    *,
    mode: str = "enforce",
    judged_under: str = "strict",
    unparseable: int = 0,
    unparseable_examples: Sequence[str] = (),
) -> Suggestion:
    """The narrowest configuration that admits every served request of
    ``ledger`` that ``policy`` (with its ``routes``) rejects, except those a
    rule never loosened stops. ``judged_under`` names that policy in the
    text; ``mode`` is kept as it is; ``unparseable`` lines (shown escaped by
    the caller in ``unparseable_examples``) are reported in the text."""
    current = _Draft(policy, dict(routes))
    items = [_Item(target, served, failed) for target, served, failed in ledger.items()]
    items.sort(key=lambda item: item.target)  # the same log, the same text
    served = [item for item in items if item.served]
    failing = [item for item in items if not item.served and item.failed]

    # Which targets any configuration could admit: relaxing everything a
    # target asks for, for it alone, either admits it or meets a rule never
    # loosened. The others stay rejected whatever is suggested, so a failing
    # one is no evidence against anything.
    table = current.table()
    for item in items:
        _assess(item, table.select(item.target), ledger.errors.get(item.target))
    stopped = {item: item.stop for item in served if item.stop is not None}
    admissible = [item for item in served if item.stop is None]
    evidence = [item for item in failing if item.stop is None]
    draft = current.copy()
    stopped.update(_solve(draft, admissible, evidence))
    _browser_sets(draft, current)
    _prune(draft, current, admissible)
    result = _result(ledger, draft, current, served, failing, stopped, mode, judged_under)
    if not unparseable:
        return result
    result = dataclasses.replace(
        result, unparseable=unparseable, unparseable_examples=tuple(unparseable_examples)
    )
    return dataclasses.replace(result, text=_text(result, judged_under))


def _browser_sets(draft: _Draft, current: _Draft) -> None:
    """Raw characters that browsers send are relaxed as a set: a browser
    that sent '[' raw sends '{' raw as soon as a user types one. At the top
    level that is the browser preset; under a route, the preset's set for
    the component."""
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


def _prune(draft: _Draft, current: _Draft, admitted: list[_Item]) -> None:
    """Undo what no admitted target relies on: a new route's setting beyond
    what encloses it when all the targets that needed it fall under a
    longer route (made later), then a new route that no longer differs from
    what encloses it. What a route repeats from the route or the top level
    that encloses it stays: that prefix was chosen with the evidence under
    all of it, this one included."""
    credits = _credits(draft, admitted)
    for prefix in sorted(draft.routes, key=len):  # an enclosing route first
        if prefix in current.routes:
            continue
        route = draft.routes[prefix]
        enclosing = draft.enclosing(prefix)
        changes = {}
        for key in Policy.FIELDS:
            value = getattr(route, key)
            written = not _same(key, value, getattr(draft.base, key))
            if (
                written
                and (prefix, key) not in credits
                and not _same(key, value, getattr(enclosing, key))
            ):
                changes[key] = getattr(enclosing, key)
        if changes:
            draft.routes[prefix] = route.replace(**changes)
            draft._table = None
    for prefix in sorted(draft.routes, key=len, reverse=True):
        if prefix in current.routes:
            continue
        route = draft.routes.pop(prefix)
        draft._keys.pop(_route_key(prefix), None)
        draft._table = None
        if not all(
            _same(key, getattr(route, key), getattr(draft.select(prefix), key))
            for key in Policy.FIELDS
        ):
            draft.routes[prefix] = route
            draft._keys[_route_key(prefix)] = prefix
            draft._table = None


def _same(key: str, a: object, b: object) -> bool:
    if key in _CHAR_KEYS and isinstance(a, str) and isinstance(b, str):
        return set(a) == set(b)
    return a == b


_Credit = dict[tuple[str | None, str], tuple[list[_Item], set[str]]]


def _credits(draft: _Draft, items: Iterable[_Item]) -> _Credit:
    """Which written setting admits which item (of ``items``, all admitted):
    for each setting an item needs, the route it falls under when that
    route writes the setting, else the top level (``preset`` for the browser
    preset's fields)."""
    credits: _Credit = {}
    base = draft.base
    preset = _preset_policy(draft.base)
    for item in items:
        needed = item.needs
        if not needed:
            continue
        prefix = draft.route_of(item)
        route = draft.routes[prefix] if prefix is not None else base
        seen: set[tuple[str | None, str]] = set()
        for key, rule in needed:
            scope: str | None = prefix
            if prefix is None or _same(key, getattr(route, key), getattr(base, key)):
                scope = None
                if key in _BROWSER_KEYS and _same(key, getattr(base, key), getattr(preset, key)):
                    key = "preset"
            members, rules = credits.setdefault((scope, key), ([], set()))
            if (scope, key) not in seen:  # an item counts once per line
                seen.add((scope, key))
                members.append(item)
            rules.add(rule)
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


def _example(items: Sequence[_Item], weight: Callable[[_Item], int]) -> str:
    best = min(items, key=lambda item: (-weight(item), item.target))
    return display(best.target, limit=EXAMPLE_BYTES)


def _evidence(items: Sequence[_Item], weight: Callable[[_Item], int]) -> Evidence:
    if not items:
        return Evidence()
    return Evidence(sum(map(weight, items)), len(items), _example(items, weight))


def _result(
    ledger: Ledger,
    draft: _Draft,
    current: _Draft,
    served: list[_Item],
    failing: list[_Item],
    stopped: dict[_Item, _Cause],
    mode: str,
    judged_under: str,
) -> Suggestion:
    admitted = [item for item in served if item not in stopped]
    table = draft.table()
    failed_admitted = [
        item
        for item in failing
        if item.stop is None and _judge(item, table.select(item.target)) is None
    ]
    credits = _credits(draft, admitted)
    against = _credits(draft, failed_admitted)

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
        _change(scope, key, value, credits, against, draft, current)
        for scope, key, value in _lines(mapping)
    )

    failed_rejected: Counter[str] = Counter()
    for (kind, rule), count in ledger.not_kept.items():
        if kind == "failed":
            failed_rejected[rule] += count
    opened = set(failed_admitted)
    for item in failing:
        if item.stop is not None:  # the rule that stops it whatever is suggested
            failed_rejected[item.stop.rule] += item.failed
        elif item not in opened:
            error = _judge(item, table.select(item.target))
            failed_rejected[error.rule if error is not None else OK] += item.failed
    failed_rejected.pop(OK, None)

    suggestion = Suggestion(
        text="",
        mapping=_json_ready(mapping),
        changes=changes,
        served=ledger.requests["served"],
        failed=ledger.requests["failed"],
        other=ledger.requests["other"],
        rejected_served=_evidence(served, _served),
        admitted=_evidence(admitted, _served),
        stopped=_stopped_by_rule(stopped),
        still_rejected=(),
        failed_rejected=dict(sorted(failed_rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
        failed_admitted=sum(item.failed for item in failed_admitted),
        dropped=ledger.dropped,
    )
    text = _text(suggestion, judged_under)
    # Checkable: the text, read back as a configuration, must admit what it
    # was made to admit. Anything it does not is shown, never hidden.
    still = _read_back(text, admitted)
    if still:
        kept = [item for item in admitted if item not in set(still)]
        suggestion = dataclasses.replace(
            suggestion,
            admitted=_evidence(kept, _served),
            still_rejected=tuple(display(item.target, limit=EXAMPLE_BYTES) for item in still),
        )
        text = _text(suggestion, judged_under)
    return dataclasses.replace(suggestion, text=text)


def _served(item: _Item) -> int:
    return item.served


def _failed(item: _Item) -> int:
    return item.failed


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
    against: _Credit,
    draft: _Draft,
    current: _Draft,
) -> Change:
    credit = credits.get((scope, key))
    if credit is not None:
        members, rules = credit
        opposed = against.get((scope, key), ([], set()))[0]
        return Change(
            scope,
            key,
            value,
            "suggested",
            tuple(sorted(rules, key=RULES.index)),
            _evidence(members, _served),
            _evidence(opposed, _failed),
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
    # A route made here repeats what encloses it (see _prune).
    return Change(scope, key, value, "inherited", inherited_from=draft.shorter(scope))


def _read_back(text: str, admitted: list[_Item]) -> list[_Item]:
    """The admitted targets that the written text, read back as a
    configuration, still rejects (none, unless something is wrong)."""
    config = config_from_mapping(tomllib.loads(text), source="suggestion")
    table = RouteTable(config.policy, list(config.routes))
    return [item for item in admitted if _judge(item, table.select(item.target)) is not None]


def _stopped_by_rule(stopped: Mapping[_Item, _Cause]) -> tuple[Stopped, ...]:
    by_rule: dict[str, list[_Item]] = {}
    reasons: dict[str, str] = {}
    for item, cause in stopped.items():
        by_rule.setdefault(cause.rule, []).append(item)
        reasons.setdefault(cause.rule, cause.reason)
    found = []
    for rule, items in by_rule.items():
        items.sort(key=lambda item: (-item.served, item.target))
        found.append(
            Stopped(
                rule,
                reasons[rule],
                sum(item.served for item in items),
                len(items),
                tuple(display(i.target, limit=EXAMPLE_BYTES) for i in items[:STOPPED_EXAMPLES]),
            )
        )
    found.sort(key=lambda stop: (-stop.requests, stop.rule))
    return tuple(found)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _text(suggestion: Suggestion, judged_under: str) -> str:
    s = suggestion
    stopped = sum(stop.requests for stop in s.stopped)
    lines = [
        "# urlguard configuration suggested by `urlguard audit --suggest`.",
        f"# The logs were judged under: {judged_under}.",
        f"# Requests answered 2xx/3xx: {s.served:,}, of which that policy rejects "
        f"{s.rejected_served.requests:,} ({_plural(s.rejected_served.targets, 'target')}).",
        f"# This configuration admits {s.admitted.requests:,} of those "
        f"({_plural(s.admitted.targets, 'target')}); {stopped:,} stay rejected"
        + (" (listed at the end)." if stopped else "."),
        f"# Requests answered 4xx/5xx: {s.failed:,}; this configuration admits "
        f"{s.failed_admitted:,} of those that policy rejects.",
    ]
    if s.unparseable:
        lines.append(f"# Lines that did not parse (not judged): {s.unparseable:,}")
        lines += [f"#   e.g. {shown}" for shown in s.unparseable_examples]
    if s.other:
        lines.append(
            f"# Requests with no 2xx-5xx status (1xx, 000, or a list of targets): "
            f"{s.other:,}; they count neither way."
        )
    if s.dropped:
        lines.append(
            f"# Evidence not kept: {_plural(s.dropped, 'failing request')} beyond "
            f"{KEEP_FAILED:,} distinct targets."
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
    admits, against = change.admits, change.against
    head = (
        f"# {', '.join(change.rules)}{_browser_note(change.key, value)}: admits "
        f"{_plural(admits.requests, 'request')} ({_plural(admits.targets, 'target')}) "
        "answered 2xx/3xx,"
    )
    if not against.requests:
        return [head, f"#   and none answered 4xx/5xx; e.g. {admits.example}", line]
    return [
        head,
        f"#   e.g. {admits.example}",
        f"#   and {_plural(against.requests, 'request')} ({_plural(against.targets, 'target')}) "
        "answered 4xx/5xx that no narrower prefix leaves out,",
        f"#   e.g. {against.example}",
        line,
    ]


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
    if s.stopped:
        lines += [
            "",
            "# Answered 2xx/3xx and still rejected: these rules are never loosened, so",
            "# enforcement will stop these requests (fix the links or the clients):",
        ]
        for stop in s.stopped:
            lines.append(
                f"#   {stop.rule}: {_plural(stop.requests, 'request')} "
                f"({_plural(stop.targets, 'target')}), {stop.reason}"
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
    "Stopped",
    "Suggestion",
    "scopes",
    "status_class",
    "suggest",
    "toml_string",
]
