"""Checks the ASGI and the WSGI adapter tests share: what the guard answered and
what the application was handed.

The scope and the environ are both a server's mapping of a request; the checks
take either.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from urlguard import Target

Expected = tuple[str, ...] | str | None  # segments, a rule code, or None: the server refuses it


def assert_verdict(
    status: int, body: bytes, seen: Sequence[Mapping[str, Any]], expected: Expected
) -> None:
    """Accepted with these segments (a tuple), or a 400 naming the rule (a str)."""
    if isinstance(expected, tuple):
        assert status == 200
        assert seen[0]["urlguard.target"].segments == expected
    else:
        assert status == 400
        assert isinstance(expected, str)
        assert expected.encode() in body


def assert_answer(
    status: int,
    body: bytes,
    length: str,
    seen: Sequence[Mapping[str, Any]],
    expected: Expected,
    mark: bytes,
) -> None:
    """Accepted, the application called once with a Target of these segments (a
    tuple); or a 400 naming the rule (a str), the application never called, the body
    echoing nothing of the input ``mark`` flags, and ``length`` (the Content-Length
    sent) the body's."""
    if isinstance(expected, tuple):
        assert status == 200
        (one,) = seen
        target = one["urlguard.target"]
        assert isinstance(target, Target)
        assert target.segments == expected
    else:
        assert status == 400
        assert seen == []
        assert isinstance(expected, str)
        assert expected.encode() in body
        assert mark.lower() not in body.lower()
        assert length == str(len(body))


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
