"""``Guard.check_decoded``: validating what a server without a raw target
leaves (``missing_raw_target="validate-decoded"``), on bytes, no adapter.

The decoded path is re-encoded by ``rebuild_target``; a U+FFFD in it is where
a lenient server replaced invalid UTF-8, so it counts as ``invalid-utf8`` of
the segment that holds it, in that segment's place in the rule order
(DESIGN.md §1: after too-many, raw-char, and the earlier segments; after
malformed-escape, encoded-slash and encoded-backslash in its own piece;
before forbidden-char, dot-segment, empty-segment and double-encoding there
and anything later; under path_params="split" a segment's pieces, name and
parameters, are taken in turn).
The query is exact as received, so a U+FFFD escaped in it is the client's.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import pytest

from urlguard import InvalidTarget, Policy
from urlguard._guard import Guard, rebuild_target

P = pytest.param


class R(NamedTuple):
    """A rejection: rule, component, index (of the segment or pair), offset."""

    rule: str
    component: str
    piece: int | None
    offset: int


# (decoded path, raw query, policy overrides) ->
#   accepted segments, or R(rule, component, index, offset) of the violation.
DECODED = [
    P("/caf\u00e9", b"", {}, ("café",), id="real UTF-8 is fine"),
    P("/caf\ufffd", b"", {}, R("invalid-utf8", "path", 0, 4), id="U+FFFD in a segment"),
    P("/ok/x\ufffd", b"", {}, R("invalid-utf8", "path", 1, 5), id="in a later segment"),
    P(
        "/a;x=\ufffd",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 5),
        id="in a split matrix parameter value",
    ),
    P(
        "/a;\ufffd=1/b",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 3),
        id="in a split matrix parameter name",
    ),
    P(
        "/a;x=\ufffd",
        b"",
        {},
        R("invalid-utf8", "path", 0, 5),
        id="in a literal ';' segment",
    ),
    P("/\ufffd/..", b"", {}, R("invalid-utf8", "path", 0, 1), id="before a later dot segment"),
    P("/../\ufffd", b"", {}, R("dot-segment", "path", 0, 1), id="after an earlier dot segment"),
    P(
        "/\ufffd%41",
        b"",
        {},
        R("invalid-utf8", "path", 0, 1),
        id="before double encoding in its own segment",
    ),
    P(
        "/x/%41/\ufffd",
        b"",
        {},
        R("double-encoding", "path", 1, 3),
        id="after double encoding in an earlier segment",
    ),
    P(
        "/\ufffd",
        b"q=a b",
        {},
        R("raw-char", "query", 0, 14),
        id="after a raw char in the query",
    ),
    P(
        "/a/b/\ufffd",
        b"",
        {"max_segments": 2},
        R("too-many", "path", 2, 4),
        id="after too many segments",
    ),
    P(
        "/\ufffd",
        b"q=%C4",
        {},
        R("invalid-utf8", "path", 0, 1),
        id="before the query's own invalid UTF-8",
    ),
    P(
        "/a",
        b"q=%EF%BF%BD",
        {},
        ("a",),
        id="escaped U+FFFD in the exact query is the client's",
    ),
    P("/a", b"q=%C4", {}, R("invalid-utf8", "query", 0, 5), id="query still checked"),
    P(
        "/\\\ufffd",
        b"",
        {},
        R("encoded-backslash", "path", 0, 1),
        id="after an encoded backslash in its own segment",
    ),
    P(
        "/\ufffd;x=\\",
        b"",
        {"path_params": "split"},
        R("invalid-utf8", "path", 0, 1),
        id="split: in the name, before an encoded backslash in a parameter",
    ),
    P(
        "/\x01;x=\ufffd",
        b"",
        {"path_params": "split"},
        R("forbidden-char", "path", 0, 1),
        id="split: after a forbidden character in the name",
    ),
    P("/\ufffd\ufffd", b"", {}, R("invalid-utf8", "path", 0, 1), id="two: the first"),
]


@pytest.mark.parametrize(("path", "query", "overrides", "expected"), DECODED)
def test_check_decoded(
    path: str, query: bytes, overrides: dict[str, object], expected: tuple[str, ...] | R
) -> None:
    guard = Guard(
        "test",
        policy=Policy(**overrides),  # type: ignore[arg-type]
        routes=None,
        config=None,
        mode=None,
        on_reject=None,
        on_violation=None,
        missing_raw_target="validate-decoded",
        log_level=logging.WARNING,
    )
    rebuilt = rebuild_target(path.encode("utf-8"), query or None)
    if isinstance(expected, R):
        with pytest.raises(InvalidTarget) as caught:
            guard.check_decoded(rebuilt)
        exc = caught.value
        assert R(exc.rule, exc.component, exc.index, exc.offset) == expected
    else:
        assert guard.check_decoded(rebuilt).segments == expected
