"""What the engine returns: the suggestion, line by line with the evidence
each change rests on, and what it leaves rejected, as data and as JSON.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Literal

from ..audit import Report
from .evidence import Thresholds


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a change rests on: of the ``served`` requests (2xx/3xx) under
    it, those that count (``requests``:
    answered 2xx or 304, not those of targets answered 4xx/5xx too,
    ``contested``, nor those of scanners, ``discounted``), distinct
    ``targets`` and ``networks`` (up to :data:`COUNTED`) and ``clients``
    (up to :data:`PER_NETWORK` per network), the
    calendar ``days`` they fall on, the ``first`` and ``last`` time seen, the
    most requested target escaped; the requests answered with a redirect
    (``redirected``, no evidence); and the requests under it answered
    4xx/5xx (``failed``), ``against`` of them on the very targets it admits."""

    requests: int = 0
    served: int = 0
    targets: int = 0
    clients: int = 0
    networks: int = 0
    days: int = 0
    first: float | None = None
    last: float | None = None
    example: str = ""
    failed: int = 0
    against: int = 0
    contested: int = 0
    redirected: int = 0
    discounted: int = 0

    def as_json(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "served": self.served,
            "targets": self.targets,
            "clients": self.clients,
            "networks": self.networks,
            "days": self.days,
            "first_seen": when(self.first),
            "last_seen": when(self.last),
            "example": self.example,
            "failed": self.failed,
            "against": self.against,
            "contested": self.contested,
            "redirected": self.redirected,
            "discounted": self.discounted,
        }


def when(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return f"{datetime.datetime.fromtimestamp(seconds, datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"


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
    admits: Evidence = dataclasses.field(default_factory=Evidence)
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
    #: What the input held (lines read, parsed, skipped), as the audit reported it.
    lines: Report | None = None

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
