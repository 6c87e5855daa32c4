"""``parser.parse_split_target(path, query, policy)``, the ASGI entry, against
``parse_target`` of the joined target: the same verdict, field by field.

ASGI servers hand over ``raw_path`` and ``query_string`` apart, and an empty
query looks like none (``/a?`` is ``/a``); the joined target is
``path + b"?" + query``, or ``path`` alone when the query is empty.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import Parser, target_fields
from urlguard import InvalidTarget, Policy, Target

P = pytest.param

POLICIES = [
    Policy(),
    Policy.browser(),
    Policy(path_params="split", encoded_slash="keep"),
    Policy(plus_as_space=False, dot_segment="allow", empty_segment="allow"),
    Policy(allowed_ranges=[(0x20, 0x7E)], path_params="reject", max_segments=3, max_params=2),
    Policy(max_length=12),
]


def _joined(path: bytes, query: bytes) -> bytes:
    return path + b"?" + query if query else path


class Verdict(NamedTuple):
    """What a parse gives: the rejection (rule, component, index, offset), or
    everything the accepted Target shows (``target_fields``)."""

    rule: str | None
    where: tuple[object, ...]
    fields: tuple[object, ...]


def _verdict(parse: Callable[[], Target]) -> Verdict:
    try:
        target = parse()
    except InvalidTarget as exc:
        return Verdict(exc.rule, (exc.component, exc.index, exc.offset), ())
    assert isinstance(target, Target)
    return Verdict(None, (), target_fields(target))


# (path, query) -> accepted segments and query, or the rule; each also
# compared with parse_target of the joined target.
CASES = [
    P(
        b"/api/v1/users/12345/orders",
        b"limit=10&page=2",
        ("api", "v1", "users", "12345", "orders"),
        id="plain",
    ),
    P(b"/a", b"", ("a",), id="no query"),
    P(b"/", b"", ("",), id="root"),
    P(b"/a", b"q=a+b&r", ("a",), id="plus and a name alone"),
    P(b"/a", b"x=1;y=2", ("a",), id="';' in the query is data"),
    P(b"/a;b", b"", ("a;b",), id="';' in the path: literal by default"),
    P(b"/a?b", b"c", ("a",), id="'?' in the path: cut there, as the joined target is"),
    P(b"/wiki/Caf%C3%A9", b"q=caf%C3%A9+au+lait&lang=fr", ("wiki", "Café"), id="encoded"),
    P(b"/a", b"q=%26&r=%3D", ("a",), id="escaped separators in the query"),
    P(b"/a//b", b"", "empty-segment", id="empty segment"),
    P(b"/a/./b", b"", "dot-segment", id="dot segment"),
    P(b"/.well-known/x", b"", (".well-known", "x"), id="a name starting with a dot"),
    P(b"/a%2Fb", b"", "encoded-slash", id="encoded slash"),
    P(b"/a", b"q=%C4", "invalid-utf8", id="invalid UTF-8 in the query"),
    P(b"/a b", b"", "raw-char", id="raw space in the path"),
    P(b"/a", b"q=a b", "raw-char", id="raw space in the query"),
    P(b"/a", b"q=#x", "fragment", id="'#' in the query"),
    P(b"", b"", "bad-form", id="empty path"),
    P(b"a", b"", "bad-form", id="no leading slash"),
    P(b"*", b"", "bad-form", id="asterisk-form"),
    P(b"http://h/a", b"q=1", ("a",), id="absolute-form"),
    P(b"/\xc3\xa9", b"", "raw-char", id="raw non-ASCII"),
]


@pytest.mark.parametrize(("path", "query", "expected"), CASES)
def test_split_target(
    parser: Parser, path: bytes, query: bytes, expected: tuple[str, ...] | str
) -> None:
    verdict = _verdict(lambda: parser.parse_split_target(path, query, Policy()))
    assert verdict == _verdict(lambda: parser.parse_target(_joined(path, query)))
    if isinstance(expected, str):
        assert verdict.rule == expected
    else:
        target = parser.parse_split_target(path, query, Policy())
        assert target.segments == expected
        assert target.raw == _joined(path, query)


def test_split_target_keeps_the_parts_apart_until_read(parser: Parser) -> None:
    target = parser.parse_split_target(b"/a/b", b"x=1+2&y", Policy())
    assert (target.raw_path, target.raw_query) == (b"/a/b", b"x=1+2&y")
    assert target.query == (("x", "1 2"), ("y", ""))
    assert target.raw == b"/a/b?x=1+2&y"
    assert target == parser.parse_target(b"/a/b?x=1+2&y")
    assert hash(target) == hash(parser.parse_target(b"/a/b?x=1+2&y"))
    assert repr(target) == repr(parser.parse_target(b"/a/b?x=1+2&y"))
    assert parser.parse_split_target(b"/a", b"", Policy()).raw_query is None


@pytest.mark.parametrize(
    "make",
    [
        P(lambda p: p.parse_split_target(b"/a/b", b"x=1+2&y", Policy()), id="split, plain"),
        P(lambda p: p.parse_split_target(b"/a", b"", Policy()), id="split, no query"),
        P(lambda p: p.parse_target(b"/a/b?x=1"), id="plain ASCII"),
        P(lambda p: p.parse_target(b"/caf%C3%A9?q=%C3%A9+x"), id="percent-encoded"),
        P(
            lambda p: p.parse_target(b"http://h/a;k=v?q", Policy(path_params="split")),
            id="absolute-form, matrix parameters",
        ),
    ],
)
@pytest.mark.parametrize(
    "duplicate",
    [
        P(copy.copy, id="copy"),
        P(copy.deepcopy, id="deepcopy"),
        P(lambda target: pickle.loads(pickle.dumps(target)), id="pickle"),
    ],
)
def test_targets_copy_and_pickle(
    parser: Parser, make: Callable[[Parser], Target], duplicate: Callable[[Target], Target]
) -> None:
    # Apps copy scopes (deepcopy in tests, pickle across processes); the
    # Target in them must survive. A copy of either parser's target is a
    # plain Target, which loads wherever urlguard does.
    target = make(parser)
    again = duplicate(target)
    assert type(again) is Target
    assert target_fields(again) == target_fields(target)
    assert again == target
    assert target == again
    assert hash(again) == hash(target)


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_split_target_takes_bytes_like_parts(parser: Parser, kind: Any) -> None:
    target = parser.parse_split_target(kind(b"/a"), kind(b"x=1"), Policy())
    assert (type(target.raw), type(target.raw_path), type(target.raw_query)) == (bytes,) * 3
    assert target == parser.parse_target(b"/a?x=1")
    assert hash(target) == hash(parser.parse_target(b"/a?x=1"))
    assert parser.parse_split_target(kind(b"/a"), kind(b""), Policy()).raw == b"/a"


def test_split_target_respects_the_length_limit(parser: Parser) -> None:
    # 11 + 1 + 0: accepted; 11 + '?' + 1 = 13 > 12: too long, as joined.
    policy = Policy(max_length=12)
    assert parser.parse_split_target(b"/abcdefghij", b"", policy).segments == ("abcdefghij",)
    with pytest.raises(InvalidTarget) as caught:
        parser.parse_split_target(b"/abcdefghij", b"x", policy)
    assert caught.value.rule == "too-long"


PIECES = [
    b"/",
    b"a",
    b"Z9",
    b"-",
    b".",
    b"..",
    b";",
    b"?",
    b"&",
    b"=",
    b"+",
    b"%20",
    b"%C3%A9",
    b"%2F",
    b"%25",
    b"%26",
    b"%C4",
    b"%zz",
    b" ",
    b"#",
    b"|",
    b"\\",
    b"\xc3\xa9",
    b"~",
]
# Half the parts from plain pieces, so that short plain targets come often.
PLAIN_PIECES = [b"/", b"a", b"Z9", b"-", b".", b"..", b";", b"&", b"=", b"+", b"~"]
parts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map(b"".join),
    st.lists(st.sampled_from(PLAIN_PIECES), max_size=12).map(b"".join),
)


@settings(max_examples=1500, deadline=None)
@given(path=parts.map(lambda p: b"/" + p), query=parts, policy=st.sampled_from(POLICIES))
def test_split_target_agrees_with_the_joined_target(
    parser: Parser, path: bytes, query: bytes, policy: Policy
) -> None:
    assert _verdict(lambda: parser.parse_split_target(path, query, policy)) == _verdict(
        lambda: parser.parse_target(_joined(path, query), policy)
    )


@settings(max_examples=300, deadline=None)
@given(path=parts, query=parts, policy=st.sampled_from(POLICIES))
def test_split_target_agrees_without_a_leading_slash(
    parser: Parser, path: bytes, query: bytes, policy: Policy
) -> None:
    assert _verdict(lambda: parser.parse_split_target(path, query, policy)) == _verdict(
        lambda: parser.parse_target(_joined(path, query), policy)
    )
