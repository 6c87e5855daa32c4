"""The routing path and a ``segment`` parameter's text (``urlguard._guard.segments``)."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segment_table import REFUSED, ROUND_TRIP
from urlguard import InvalidTarget, Policy, parse_target
from urlguard._guard.segments import decode, routing_path, url_text

P = pytest.param

ROUTING = [
    P(b"/", None, id="root"),
    P(b"/units/kg", None, id="no escape"),
    P(b"/units/caf%C3%A9%20x", None, id="escapes, none of the two"),
    P(b"/units/50%25", None, id="a percent alone: the decoded path says it"),
    P(b"/units/kg%2Fs", "/units/kg%2Fs", id="kept slash"),
    P(b"/units/kg%2fs", "/units/kg%2Fs", id="lower case written upper"),
    P(b"/u/50%25%2F", "/u/50%25%2F", id="percent beside a kept slash"),
    P(b"/u/caf%C3%A9%2Fx/a%20b", "/u/café%2Fx/a b", id="other escapes decoded"),
    P(b"/u/a%252Fb", "/u/a%252Fb", id="the text %2F kept apart from a slash"),
    P(b"/u/a%2525", "/u/a%2525", id="the text %25 kept apart from a percent"),
    P(b"/u/a%25%32%46", "/u/a%252F", id="the text %2F spelled with escapes"),
    P(b"/u/a%252f", None, id="the text %2f: no converter reads it"),
    P(b"/u/a;p=x%2Fy", "/u/a;p=x%2Fy", id="a parameter's kept slash"),
]


SPLIT = Policy(encoded_slash="keep", double_encoding="allow", path_params="split")
LITERAL = Policy(encoded_slash="keep", double_encoding="allow")


@pytest.mark.parametrize(("raw_path", "expected"), ROUTING)
@pytest.mark.parametrize("policy", [P(LITERAL, id="literal"), P(SPLIT, id="split")])
def test_routing_path(raw_path: bytes, expected: str | None, policy: Policy) -> None:
    parse_target(raw_path, policy)  # an accepted target: the routing path's premise
    assert routing_path(raw_path) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        P("kg", "kg", id="plain"),
        P("kg%2Fs", "kg/s", id="kept slash"),
        P("50%25%2F", "50%/", id="percent and slash"),
        P("a%252Fb", "a%2Fb", id="the text %2F"),
        P("a%2fb", "a%2fb", id="lower case is text: never written so"),
        P("50%", "50%", id="a percent on the server's path"),
    ],
)
def test_decode(value: str, expected: str) -> None:
    assert decode(value) == expected


def _by_segment(raw_path: bytes) -> str | None:
    """The routing path stated the long way: each segment decoded on its own,
    then '%' and '/' escaped in it; None when no segment needs either."""
    segments = [unquote(piece) for piece in raw_path.decode("ascii").split("/")]
    if not any("/" in s or "%2F" in s or "%25" in s for s in segments):
        return None
    return "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)


_PIECES = ["a", "/", "%2F", "%2f", "%25", "%32", "%46", "F", "2", "%C3%A9", "%41", "5", "%35", ";"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from([LITERAL, SPLIT]))
def test_the_routing_path_is_each_segment_escaped(pieces: list[str], policy: Policy) -> None:
    """And a segment parameter's decode gives each decoded segment back."""
    raw_path = ("/" + "".join(pieces)).encode()
    try:
        parse_target(raw_path, policy)
    except InvalidTarget:
        return  # a kept '/' beside an empty or dot part: never routed
    path = routing_path(raw_path)
    assert path == _by_segment(raw_path)
    decoded = [unquote(piece) for piece in raw_path.decode("ascii").split("/")]
    if path is None:  # the server's decoded path, read by the converter as it is
        assert [decode(s) for s in unquote(raw_path.decode()).split("/")] == decoded
    else:
        assert [decode(s) for s in path.split("/")] == decoded


@pytest.mark.parametrize("value", ROUND_TRIP)
def test_url_text_round_trips(value: str) -> None:
    encoded = url_text(value)
    assert "/" not in encoded
    kept = Policy(encoded_slash="keep")
    assert parse_target(("/" + encoded).encode(), kept).segments == (value,)


@pytest.mark.parametrize("value", REFUSED)
def test_url_text_refuses_what_the_guard_refuses(value: str) -> None:
    with pytest.raises(ValueError, match="segment parameter"):
        url_text(value)
