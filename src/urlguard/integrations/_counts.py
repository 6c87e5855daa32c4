"""What both metrics integrations read from the middlewares: cumulative
counts, summed over the middlewares given, with only configured names as labels.

The guard keeps the counts itself (``Guard.checked``, one increment per
request; ``Guard.violation_counts``, kept with the log line of a violation),
so a metrics library is never called while a request is decided: it reads
these numbers when it collects. A backend that fails then fails in its own
collection, never in a request.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._guard import GuardedMiddleware

#: The labels of the violations counter, in order.
VIOLATION_LABELS = ("rule", "component", "mode", "route")


def guards_of(owner: str, middlewares: tuple[object, ...]) -> tuple[Any, ...]:
    """The guards of ``middlewares``: at least one, each a ``StrictURLMiddleware``."""
    if not middlewares:
        raise TypeError(f"{owner}: pass the StrictURLMiddleware instances to count")
    guards = []
    for middleware in middlewares:
        if not isinstance(middleware, GuardedMiddleware):
            raise TypeError(
                f"{owner}: expected a urlguard.asgi or urlguard.wsgi StrictURLMiddleware, "
                f"not {type(middleware).__name__}"
            )
        guards.append(middleware._guard)
    return tuple(guards)


def checked(guards: tuple[Any, ...]) -> dict[str, int]:
    """mode -> requests checked."""
    counts: Counter[str] = Counter()
    for guard in guards:
        counts[guard.mode] += guard.checked
    return dict(counts)


def violations(guards: tuple[Any, ...]) -> dict[tuple[str, str, str, str], int]:
    """(rule, component, mode, route) -> violations. Every value is a rule
    code, a component name, a mode or a route prefix as configured: never
    anything a client sent."""
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for guard in guards:
        for (rule, component, route), count in guard.violation_counts().items():
            counts[rule, component, guard.mode, route] += count
    return dict(counts)
