"""Plan the changes: which prefixes the evidence supports, for each cause.

Per cause, the prefixes of its tallies merge into their common prefix, and
the cause's settings go there when the evidence under it meets the
thresholds (:mod:`.evidence`). The top level is split by first segment
unless at least ``SITE_FACTOR`` first segments each have a route's evidence
on their own and all together have a site's; a prefix over a target that
must stay rejected is split by its next segment. Everything the plan does
not make is a refusal with its reason: nothing is dropped in silence.

Every test is a count over the evidence reaching a threshold, so more
evidence of the same kind never turns an admission into a refusal (within
the ledger's bounds and ``--max-routes``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from urllib.parse import unquote_to_bytes

from ..._guard.config import check_prefix
from ..._guard.routes import RouteTable
from ..._url.policy import Policy
from ..audit import Report
from .evidence import SITE_FACTOR, Thresholds
from .ledger import Ledger
from .never import LINE_BREAKS, REASONS, never_site_wide
from .read import DOUBLE, EMPTY, Cause, is_separator, keeps_separator, relaxing
from .result import Suggestion
from .tally import Tally, directory, merged
from .write import result

NOT_ENOUGH = "not enough evidence to admit"


class Draft:
    """A base policy and route policies (whole policies, as in a
    :class:`~urlguard.Config`), relaxed atom by atom."""

    def __init__(self, base: Policy, routes: Mapping[str, Policy]) -> None:
        self.base = base
        self.routes = dict(routes)
        self._keys = {route_key(prefix): prefix for prefix in self.routes}
        self._table: RouteTable | None = None

    def copy(self) -> Draft:
        return Draft(self.base, self.routes)

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
        key = route_key(prefix)
        prefix = self._keys.get(key, prefix)  # one decoded key, one route
        if prefix not in self.routes:
            self.routes[prefix] = self.select(prefix)
            self._keys[key] = prefix
        for other, policy in self.routes.items():
            if route_key(other).startswith(key):
                self.routes[other] = change(policy)

    def select(self, prefix: str) -> Policy:
        return self.table().select(prefix.encode("ascii"))

    def shorter(self, prefix: str) -> str | None:
        key = route_key(prefix)
        found = [p for p in self.routes if p != prefix and key.startswith(route_key(p))]
        return max(found, key=lambda p: len(route_key(p))) if found else None

    def canonical(self, prefix: str) -> str:
        """The route's prefix as the draft spells it (one decoded key, one route)."""
        return self._keys.get(route_key(prefix), prefix)


def route_key(prefix: str) -> bytes:
    return unquote_to_bytes(prefix.encode("ascii"))


@dataclasses.dataclass
class Grant:
    """One change the evidence supports: ``cause``'s settings under
    ``prefix`` (``/``: the top level)."""

    prefix: bytes
    cause: Cause
    tally: Tally


@dataclasses.dataclass
class Refusal:
    prefix: bytes
    cause: Cause
    tally: Tally
    reason: str


def _line_breaks(cause: Cause) -> bool:
    return any(key == "query_allow_chars" and char in LINE_BREAKS for key, char in cause)


def _site_wide_never(cause: Cause) -> bool:
    return never_site_wide(frozenset(char for key, char in cause if key == "query_allow_chars"))


class Planner:
    """Merges, per cause, the tallies of sibling prefixes into their common
    prefix and judges the evidence there."""

    def __init__(self, ledger: Ledger, thresholds: Thresholds) -> None:
        self.ledger = ledger
        self.thresholds = thresholds
        self.scanners = ledger.scanners()
        self.grants: list[Grant] = []
        self.refused: list[Refusal] = []

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
        if DOUBLE not in cause:
            return False
        if self.ledger.blockers_overflow:
            return True
        key = unquote_to_bytes(prefix)
        return any(blocker.startswith(key) for blocker in self.ledger.blockers)

    def _met(self, tally: Tally, *, site: bool = False) -> bool:
        return self.thresholds.met(tally.count(self.scanners), site=site)

    def _cover(
        self, cause: Cause, prefixes: list[bytes], groups: Mapping[bytes, Tally]
    ) -> list[list[bytes]]:
        """Give ``cause`` to the common prefix of ``prefixes`` when the
        evidence under it is enough, else list it as refused. The top level
        is split by first segment unless :data:`SITE_FACTOR` first segments
        each have a route's evidence and all together a site's: a site-wide
        change is for a cause seen all over the site, and one busy route with
        a few requests elsewhere (which an attacker can add) is a route. A
        prefix over a target that must stay rejected is split too. Returns
        the parts still to cover."""
        common = prefixes[0] if len(prefixes) == 1 else directory(prefixes)
        blocked = self._blocked(cause, common)
        top = common == b"/"
        parts: dict[bytes, list[bytes]] = {}
        for prefix in prefixes:
            # The next segment, or the name after ``common``; a prefix that is
            # ``common`` itself is a part no longer prefix covers.
            cut = prefix.find(b"/", len(common))
            parts.setdefault(prefix if cut < 0 else prefix[: cut + 1], []).append(prefix)
        tallies = {part: merged(groups[p] for p in members) for part, members in parts.items()}
        whole = merged(tallies.values())
        if top and not blocked and not _site_wide_never(cause):
            qualified = sum(
                1 for part, tally in tallies.items() if part != common and self._met(tally)
            )
            if qualified >= SITE_FACTOR and self._met(whole, site=True):
                self.grants.append(Grant(common, cause, whole))
                return []
        elif not top and not blocked:
            if _line_breaks(cause) and whole.redirected:
                # CR/LF where the application answers with a redirect:
                # response splitting, whatever else the log says (CWE-113).
                reason = REASONS["line-break-redirect"]
                self.refused.append(Refusal(common, cause, whole, reason))
            elif self._met(whole):
                self.grants.append(Grant(common, cause, whole))
            else:
                self.refused.append(Refusal(common, cause, whole, NOT_ENOUGH))
            return []
        if common in parts:
            reason = (
                REASONS["double-twice-under"]
                if blocked
                else REASONS["line-break-site"]
                if top and _site_wide_never(cause)
                else NOT_ENOUGH
            )
            self.refused.append(Refusal(common, cause, tallies[common], reason))
        return [members for part, members in parts.items() if part != common]

    def bound(self) -> None:
        """At most ``routes`` route prefixes: those with the most evidence
        stay; the others' changes are refused, never silently dropped."""
        weight: Counter[bytes] = Counter()
        for grant in self.grants:
            if grant.prefix != b"/":
                weight[unquote_to_bytes(grant.prefix)] += grant.tally.count(self.scanners).requests
        if len(weight) <= self.thresholds.routes:
            return
        ranked = sorted(weight, key=lambda key: (-weight[key], key))
        kept = set(ranked[: self.thresholds.routes])
        reason = f"past the bound of {self.thresholds.routes} routes (--max-routes)"
        self._drop(
            lambda grant: grant.prefix != b"/" and unquote_to_bytes(grant.prefix) not in kept,
            reason,
        )

    def separate(self, current: Draft) -> None:
        """No scope gets both ``empty_segment = "allow"`` and a kept
        separator: there the parser cannot tell ``//`` from ``%2Fetc``. The
        empty segment gives way."""
        keeping = [
            unquote_to_bytes(grant.prefix)
            for grant in self.grants
            if any(is_separator(atom) for atom in grant.cause)
        ]
        keeping += [
            route_key(prefix)
            for prefix, policy in current.routes.items()
            if keeps_separator(policy)
        ]
        if keeps_separator(current.base):
            keeping.append(b"/")

        def conflicts(grant: Grant) -> bool:
            if EMPTY not in grant.cause:
                return False
            key = unquote_to_bytes(grant.prefix)
            return any(key.startswith(other) or other.startswith(key) for other in keeping)

        self._drop(conflicts, REASONS["empty-beside-separator"])

    def _drop(self, condition: Callable[[Grant], bool], reason: str) -> None:
        kept = []
        for grant in self.grants:
            if condition(grant):
                self.refused.append(Refusal(grant.prefix, grant.cause, grant.tally, reason))
            else:
                kept.append(grant)
        self.grants = kept


def suggest(
    ledger: Ledger,
    thresholds: Thresholds | None = None,
    *,
    mode: str = "enforce",
    judged_under: str = "strict",
    lines: Report | None = None,
) -> Suggestion:
    """The configuration that admits the served requests of ``ledger`` that
    its policy rejects, where the evidence meets ``thresholds``, except
    those a rule never loosened stops. ``judged_under`` names that policy in
    the text; ``mode`` is kept as it is; ``lines`` says what the input held."""
    thresholds = Thresholds() if thresholds is None else thresholds
    current = Draft(ledger.policy, dict(ledger.routes))
    planner = Planner(ledger, thresholds)
    planner.plan()
    planner.separate(current)
    planner.bound()
    draft = current.copy()
    for grant in sorted(planner.grants, key=lambda grant: (len(grant.prefix), grant.prefix)):
        check_prefix(grant.prefix.decode("ascii"), "suggested route")  # never a bad prefix
        for atom in grant.cause:
            draft.apply(
                grant.prefix.decode("ascii"), relaxing(atom, grant.tally.needs.get(atom, 0))
            )
    return result(ledger, draft, current, planner, thresholds, mode, judged_under, lines)
