"""What an adapter hands on when a kept ``%2F`` changes the routing path.

Shared by the ASGI and WSGI adapter tests: the scope and the environ are both a
server's mapping, copied once with one key (``path``, ``PATH_INFO``) rewritten.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping


def assert_routing_copy(
    seen: Mapping[str, object],
    given: Mapping[str, object],
    before: Mapping[str, object],
    key: str,
    value: object,
    *,
    unseen: Collection[str] = (),
) -> None:
    """``seen`` (what the application got) is a copy of ``given`` (the server's mapping,
    ``before`` as the server built it) in which only ``key`` reads ``value``; the server's
    mapping is left as it was but for the guard's own ``urlguard.`` keys, and both share
    one Target. Keys in ``unseen`` (a stream the server may wrap) are not compared."""

    def servers(mapping: Mapping[str, object]) -> dict[str, object]:
        return {
            k: v for k, v in mapping.items() if k not in unseen and not k.startswith("urlguard.")
        }

    assert seen[key] == value
    assert seen is not given  # a copy: the server's mapping is left as it was
    assert servers(given) == before
    others = {k: v for k, v in servers(seen).items() if k != key}
    assert others == {k: v for k, v in before.items() if k != key}
    assert seen["urlguard.target"] is given["urlguard.target"]
