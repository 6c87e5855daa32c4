"""Hello-world apps for the benchmarks, each bare, behind a no-op layer, behind
a layer that stores an answer without judging, and guarded.

``starlette_hello`` (ASGI) and ``flask_hello`` (WSGI) expose ``bare``,
``noop``, ``stored`` and ``guarded`` module attributes, so a server can load
any variant (``uvicorn bench.apps.starlette_hello:guarded``). The handlers
are identical in every variant: the difference measured is the layer in front.

``stored`` reads the raw target as the guard does and stores the ``Target``
parsed the first time that target was seen (one dict lookup): what a guard
costs before it judges anything, whatever its parser. The guard's cost above
``stored`` is its parsing and checking.
"""

from __future__ import annotations

from urlguard import InvalidTarget, Target, parse_target


def first_sight(raw: bytes | str) -> Target | None:
    """What the ``stored`` layers keep for a target they see the first time:
    its ``Target``, or ``None`` for one the guard would reject (not judged:
    that request goes on, as through ``noop``)."""
    try:
        return parse_target(raw)
    except InvalidTarget:
        return None
