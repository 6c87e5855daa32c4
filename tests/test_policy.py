"""Policy: validated at construction, one switch per rule, presets."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any, Literal

import pytest

from conftest import Parser
from urlguard import Policy

P = pytest.param

BAD_POLICIES = [
    P({"max_length": 0}, ValueError, "max_length", id="zero length"),
    P({"max_length": "8192"}, TypeError, "max_length", id="length as str"),
    P({"max_segments": True}, TypeError, "max_segments", id="bool is not an int here"),
    P({"max_params": -1}, ValueError, "max_params", id="negative params"),
    P({"encoded_slash": "kep"}, ValueError, "encoded_slash", id="typo in a choice"),
    P({"encoded_backslash": True}, ValueError, "encoded_backslash", id="bool for a choice"),
    P({"dot_segment": "keep"}, ValueError, "dot_segment", id="keep is not allow"),
    P({"empty_segment": None}, ValueError, "empty_segment", id="None choice"),
    P({"double_encoding": "no"}, ValueError, "double_encoding", id="double encoding choice"),
    P({"path_params": "strip"}, ValueError, "path_params", id="unknown path params mode"),
    P({"plus_as_space": 1}, TypeError, "plus_as_space", id="int for a bool"),
    P({"raw_path_extra": " "}, ValueError, "raw_path_extra", id="space never raw"),
    P({"raw_query_extra": "#"}, ValueError, "raw_query_extra", id="hash never raw"),
    P({"raw_query_extra": "%"}, ValueError, "raw_query_extra", id="percent never extra"),
    P({"raw_path_extra": b"|"}, TypeError, "raw_path_extra", id="bytes extra"),
    P({"allowed_ranges": []}, ValueError, "allowed_ranges", id="empty ranges"),
    P({"allowed_ranges": [(0x7E, 0x20)]}, ValueError, "allowed_ranges", id="reversed range"),
    P({"allowed_ranges": [(0, 0x110000)]}, ValueError, "allowed_ranges", id="past U+10FFFF"),
    P({"allowed_ranges": [(0x7F, 0x9F)]}, ValueError, "allowed_ranges", id="only controls"),
    P({"allowed_ranges": [(0, 0x1F)]}, ValueError, "allowed_ranges", id="only C0 controls"),
    P(
        {"allowed_ranges": [(0x3B, 0x3B)], "path_params": "reject"},
        ValueError,
        "allowed_ranges",
        id="only ';', which reject takes out of segments",
    ),
    P({"allowed_ranges": [(1, 2, 3)]}, TypeError, "allowed_ranges", id="triple"),
    P({"allowed_ranges": [("a", "z")]}, TypeError, "allowed_ranges", id="str bounds"),
    P({"allowed_ranges": "a-z"}, TypeError, "allowed_ranges", id="str ranges"),
    P({"allow_chars": 10}, TypeError, "allow_chars", id="int allow_chars"),
]


@pytest.mark.parametrize(("kwargs", "error", "name"), BAD_POLICIES)
def test_bad_configuration_fails_at_construction(
    kwargs: dict[str, Any], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        Policy(**kwargs)


def test_unknown_keyword_is_named() -> None:
    with pytest.raises(TypeError, match="encoded_slashes"):
        Policy(encoded_slashes="keep")  # type: ignore[call-arg]


def test_defaults_are_the_design_defaults() -> None:
    policy = Policy()
    assert (policy.max_length, policy.max_segments, policy.max_params) == (8192, 128, 1000)
    assert policy.encoded_slash == policy.encoded_backslash == "reject"
    assert policy.dot_segment == policy.empty_segment == policy.double_encoding == "reject"
    assert policy.path_params == "literal"
    assert policy.plus_as_space is True
    assert policy.allowed_ranges is None


def test_policy_is_frozen_hashable_and_comparable() -> None:
    policy = Policy(encoded_slash="keep")
    assert policy == Policy(encoded_slash="keep")
    assert hash(policy) == hash(Policy(encoded_slash="keep"))
    assert policy != Policy()
    with pytest.raises(AttributeError):
        policy.encoded_slash = "reject"  # type: ignore[misc]


def test_ranges_are_normalised_to_tuples() -> None:
    policy = Policy(allowed_ranges=[[0x20, 0x7E]])  # type: ignore[list-item]
    assert policy.allowed_ranges == ((0x20, 0x7E),)
    assert policy == Policy(allowed_ranges=((0x20, 0x7E),))


def test_replace_validates_again() -> None:
    assert Policy().replace(encoded_slash="keep").encoded_slash == "keep"
    with pytest.raises(ValueError, match="dot_segment"):
        Policy().replace(dot_segment="maybe")


def test_browser_preset_and_overrides() -> None:
    browser = Policy.browser()
    assert browser.raw_path_extra == "[]|"
    assert set(browser.raw_query_extra) == set("[\\]^`{|}")
    assert Policy.browser(encoded_slash="keep").encoded_slash == "keep"
    assert Policy.browser(raw_path_extra="").raw_path_extra == ""


@pytest.mark.parametrize(
    ("policy", "char", "allowed"),
    [
        P(Policy(), "é", True, id="default allows Latin"),
        P(Policy(), "起", True, id="default allows CJK"),
        P(Policy(), "\x00", False, id="default forbids NUL"),
        P(Policy(), "\u202e", False, id="default forbids RLO"),
        P(Policy(allowed_ranges=[(0x20, 0xFF)]), "起", False, id="Latin-1 only forbids CJK"),
        P(
            Policy(allowed_ranges=[(0x00, 0xFF)]),
            "\x00",
            False,
            id="ranges never re-allow controls",
        ),
        P(Policy(allowed_ranges=[(0x20, 0x7E)], allow_chars="é"), "é", True, id="allow_chars adds"),
        P(Policy(allow_chars="\n"), "\n", True, id="allow_chars re-allows LF"),
    ],
)
def test_allows_char(policy: Policy, char: str, allowed: bool) -> None:
    assert policy.allows_char(char) is allowed


@pytest.mark.parametrize("policy", [Policy(), Policy.browser(), Policy(path_params="reject")])
def test_byte_tables_agree_with_the_patterns(policy: Policy) -> None:
    """The 256-byte tables (for the compiled parser) and the patterns (for the
    reference) describe the same sets."""
    for byte in range(256):
        raw = bytes([byte])
        in_path = policy._path_raw_bad.fullmatch(raw) is None
        in_query = policy._query_raw_bad.fullmatch(raw) is None
        assert bool(policy._raw_path_table[byte]) == in_path, byte
        assert bool(policy._raw_query_table[byte]) == in_query, byte


@pytest.mark.parametrize(
    "duplicate",
    [
        P(copy.copy, id="copy"),
        P(copy.deepcopy, id="deepcopy"),
        P(lambda policy: pickle.loads(pickle.dumps(policy)), id="pickle"),
    ],
)
def test_a_policy_in_use_copies_without_what_a_parser_derived(
    parser: Parser, duplicate: Callable[[Policy], Policy]
) -> None:
    """What a parser derives from a policy on first use (the compiled
    parser's tables) is the parser's, not the policy's: parsing adds nothing
    to a policy, and a copy or a pickle of a policy in use is equal to it and
    parses alike."""
    policy = Policy(encoded_slash="keep", max_segments=3)
    fields = set(vars(policy))
    parsed = parser.parse_target(b"/a%2Fb/c", policy)
    assert set(vars(policy)) == fields
    again = duplicate(policy)
    assert again == policy
    assert hash(again) == hash(policy)
    assert set(vars(again)) == fields
    assert parser.parse_target(b"/a%2Fb/c", again) == parsed
    assert parser.parse_target(b"/a/b/c", again).segments == ("a", "b", "c")


@pytest.mark.parametrize(
    ("policy", "path_allows", "query_allows"),
    [
        P(Policy(), "é", "é", id="default"),
        P(Policy(allow_chars="\n"), "\n", "\n", id="allow_chars: both"),
        P(Policy(query_allow_chars="\n"), "", "\n", id="query_allow_chars: query only"),
        P(Policy.browser(), "", "\t\n\r", id="browser: textarea characters in the query"),
    ],
)
def test_path_and_query_allowed_sets(policy: Policy, path_allows: str, query_allows: str) -> None:
    for char in "\t\n\r":
        assert policy.allows_char(char, "path") is (char in path_allows), repr(char)
        assert policy.allows_char(char, "query") is (char in query_allows), repr(char)
    assert not policy.allows_char("\u202e", "query")
    components: tuple[tuple[tuple[tuple[int, int], ...], Literal["path", "query"]], ...] = (
        (policy._path_allowed, "path"),
        (policy._query_allowed, "query"),
    )
    for intervals, component in components:
        assert list(intervals) == sorted(intervals)
        for code_point in (0x00, 0x09, 0x0A, 0x0D, 0x20, 0x7F, 0xE9, 0x202E, 0xFFFE, 0x10FFFD):
            inside = any(low <= code_point <= high for low, high in intervals)
            assert inside is policy.allows_char(chr(code_point), component), hex(code_point)


def test_query_allow_chars_is_checked() -> None:
    with pytest.raises(TypeError, match="query_allow_chars"):
        Policy(query_allow_chars=["\n"])  # type: ignore[arg-type]
