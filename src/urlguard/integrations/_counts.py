"""What both metrics integrations read from the middlewares: cumulative
counts, summed over the middlewares given, with only configured names as labels.

The guard keeps the counts itself (``Guard.checked``, one increment per
request; ``Guard.violation_counts``, kept with the log line of a violation),
so a metrics library is never called while a request is decided: it reads
these numbers when it collects. A backend that fails then fails in its own
collection, never in a request.

An integration is given what the application has at hand: a middleware it
made (``StrictURLMiddleware(app)``), or the application a framework made
the middleware for. Starlette and FastAPI make their middlewares themselves
(``app.add_middleware``, ``middleware=[...]``) when the application first
runs, and keep no name for them; they are found in the built stack
(``app.middleware_stack``) when the counts are read, following each layer's
``app``, the name every middleware of Starlette's, werkzeug's and urlguard's
keeps its inner application under. A Flask application is followed from its
``wsgi_app``. Only public attributes are read, and nothing is changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from .._guard.middleware import GuardedMiddleware

#: The labels of the violations counter, in order.
VIOLATION_LABELS = ("rule", "component", "mode", "route")

#: The guards an integration counts, found anew at each collection.
Guards = Callable[[], tuple[Any, ...]]


def guards_of(owner: str, apps: tuple[object, ...]) -> Guards:
    """The guards of ``apps``, each a ``StrictURLMiddleware``, a Starlette or
    FastAPI application that declares one, or a Flask application whose
    ``wsgi_app`` is wrapped in one. Anything else fails here, at set-up."""
    if not apps:
        raise TypeError(
            f"{owner}: pass the StrictURLMiddleware instances to count, "
            "or the application they guard"
        )
    finders = [_finder(owner, app) for app in apps]

    def guards() -> tuple[Any, ...]:
        return tuple(guard for finder in finders for guard in finder())

    return guards


def _finder(owner: str, app: object) -> Guards:
    if isinstance(app, GuardedMiddleware):
        guard = app._guard
        return lambda: (guard,)
    if hasattr(app, "user_middleware") and hasattr(app, "middleware_stack"):
        return _starlette_finder(owner, app)
    if hasattr(app, "wsgi_app"):
        if not _chain(app.wsgi_app):
            raise TypeError(
                f"{owner}: {type(app).__name__}.wsgi_app is not wrapped in a urlguard.wsgi "
                "StrictURLMiddleware: app.wsgi_app = StrictURLMiddleware(app.wsgi_app)"
            )
        return lambda: _chain(app.wsgi_app)
    raise TypeError(
        f"{owner}: expected a urlguard.asgi or urlguard.wsgi StrictURLMiddleware, "
        f"or the application it guards, not {type(app).__name__}"
    )


def _starlette_finder(owner: str, app: Any) -> Guards:
    declared = sum(
        1
        for middleware in app.user_middleware
        if isinstance(middleware.cls, type) and issubclass(middleware.cls, GuardedMiddleware)
    )
    if not declared:
        raise TypeError(
            f"{owner}: {type(app).__name__} has no StrictURLMiddleware: "
            "app.add_middleware(StrictURLMiddleware) first"
        )

    def guards() -> tuple[Any, ...]:
        # Built when the application first runs (its lifespan start under a
        # server): before that no middleware exists and nothing was counted.
        if app.middleware_stack is None:
            return ()
        found = _chain(app.middleware_stack)
        if len(found) != declared:
            raise RuntimeError(
                f"{owner}: found {len(found)} of the {declared} StrictURLMiddleware "
                f"{type(app).__name__} declares: a middleware outside it keeps its "
                "inner application under another name than `app`; pass the "
                "middleware itself instead"
            )
        return found

    return guards


def _chain(layer: object) -> tuple[Any, ...]:
    """The guards met following ``app`` from ``layer`` inwards, outermost first."""
    found = []
    seen: set[int] = set()
    while layer is not None and id(layer) not in seen:
        seen.add(id(layer))
        if isinstance(layer, GuardedMiddleware):
            found.append(layer._guard)
        layer = getattr(layer, "app", None)
    return tuple(found)


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
