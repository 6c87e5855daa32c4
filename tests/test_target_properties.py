"""Properties of parse_target over arbitrary bytes (Hypothesis)."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from urlguard import InvalidTarget, Policy, parse_target
from urlguard._target import _parse_carefully, _parse_fast

POLICIES = [
    Policy(),
    Policy.browser(),
    Policy(encoded_slash="keep", encoded_backslash="keep", path_params="split"),
    Policy(
        dot_segment="allow", empty_segment="allow", double_encoding="allow", plus_as_space=False
    ),
    Policy(
        allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)],
        path_params="reject",
        max_segments=4,
        max_params=3,
    ),
]
policies = st.sampled_from(POLICIES)

# Tokens that make targets interesting far more often than random bytes do.
TOKENS = [
    b"/",
    b"//",
    b"?",
    b"&",
    b"=",
    b"+",
    b";",
    b"#",
    b".",
    b"..",
    b"%",
    b"%2F",
    b"%2f",
    b"%5C",
    b"%2E",
    b"%25",
    b"%26",
    b"%3D",
    b"%3d",
    b"%3B",
    b"%2B",
    b"%41",
    b"%C3%A9",
    b"%C4",
    b"%C0%AF",
    b"%ED%A0%80",
    b"%F4%90%80%80",
    b"%E2%80%AE",
    b"%00",
    b"%0A",
    b"%zz",
    b"%4",
    b"a",
    b"Z",
    b"~",
    b"[",
    b"|",
    b"\\",
    b" ",
    b"\x00",
    b"\xc3\xa9",
    b"http://h",
    b"HTTPS://x:1",
]
token_targets = st.lists(st.sampled_from(TOKENS), max_size=24).map(b"".join)
any_targets = st.one_of(
    st.binary(max_size=200), token_targets, token_targets.map(lambda t: b"/" + t)
)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(raw=any_targets, policy=policies)
@example(raw=b"/%", policy=Policy())
@example(raw=b"http://h", policy=Policy())
def test_any_bytes_give_a_target_or_invalid_target(raw: bytes, policy: Policy) -> None:
    try:
        target = parse_target(raw, policy)
    except InvalidTarget as error:
        assert error.component in ("target", "path", "query")
        assert 0 <= error.offset <= len(raw)
        return
    assert target.raw == raw
    assert all(isinstance(s, str) for s in target.segments)
    assert all(isinstance(n, str) and isinstance(v, str) for n, v in target.query)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(raw=any_targets, policy=policies)
def test_fast_path_agrees_with_careful_path(raw: bytes, policy: Policy) -> None:
    """Whatever the fast path accepts, the careful path accepts identically."""
    if len(raw) > policy.max_length or raw[:1] != b"/" or raw.translate(None, policy._fast_ok):
        return
    fast = _parse_fast(raw, policy)
    if fast is None:
        return
    careful = _parse_carefully(raw, policy)
    assert fast == careful
    assert fast.query == careful.query
    assert fast.params == careful.params


# (raw target, policy, the query pairs): escapes of '&' and '=' are data,
# so the fast path splits before decoding; it must take these targets.
ESCAPED_SEPARATORS = [
    (b"/s?q=a+%26+b&x=1", Policy(), (("q", "a & b"), ("x", "1"))),
    (b"/s?k%3Dv=%3d&&=%26", Policy(), (("k=v", "="), ("", "&"))),
    (b"/s?q=caf%C3%A9+%26+th%C3%A9", Policy(), (("q", "café & thé"),)),
    (b"/s?q=a+%26+b", Policy(plus_as_space=False), (("q", "a+&+b"),)),
    (b"/s?q=%5C\\%26", Policy.browser(), (("q", "\\\\&"),)),
]


@pytest.mark.parametrize(("raw", "policy", "query"), ESCAPED_SEPARATORS)
def test_fast_path_splits_before_decoding_escaped_separators(
    raw: bytes, policy: Policy, query: tuple[tuple[str, str], ...]
) -> None:
    fast = _parse_fast(raw, policy)
    assert fast is not None
    assert fast.query == query
    assert fast == _parse_carefully(raw, policy)
    assert parse_target(raw, policy).query == query


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(raw=any_targets, policy=policies)
@example(raw=b"/a/b?c=d+e", policy=Policy())
def test_every_route_agrees_with_careful_path(raw: bytes, policy: Policy) -> None:
    """Rejections come only from the careful path; whatever a faster route
    accepts, the careful path accepts with the same result."""
    try:
        target = parse_target(raw, policy)
    except InvalidTarget:
        return
    assert target == _parse_carefully(raw, policy)
    assert target.raw_path == _parse_carefully(raw, policy).raw_path
    assert target.raw_query == _parse_carefully(raw, policy).raw_query


@settings(max_examples=500)
@given(raw=any_targets, policy=policies)
def test_verdict_is_deterministic(raw: bytes, policy: Policy) -> None:
    def verdict() -> object:
        try:
            return parse_target(raw, policy)
        except InvalidTarget as error:
            return (error.rule, error.component, error.index, error.offset)

    assert verdict() == verdict()


def _cost(raw: bytes, policy: Policy, rounds: int = 7, loops: int = 20) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            with contextlib.suppress(InvalidTarget):
                parse_target(raw, policy)
        best = min(best, time.perf_counter() - start)
    return best


def test_parsing_is_linear_in_the_worst_case() -> None:
    """An 8 KiB worst case costs a small multiple of a plain 8 KiB target:
    a ratio measured in one run, not an absolute time."""
    lenient = Policy(max_segments=10_000, max_params=10_000, max_length=8192)
    plain = b"/" + b"a" * 8191
    worst_cases = [
        b"/" + b"%C3%A9" * 1365,  # all escapes, one long segment
        b"/x?" + b"%C3%A9=%C3%A9&" * 584,  # many encoded pairs
        b"/" + b"a/" * 4095,  # many segments
        b"/" + b"%41" * 2730,  # escapes the fast path can't batch as UTF-8 runs
        b"/" + b"a" * 8190 + b"%",  # rejected at the very end
        b"/" + b"%2e%2E/" * 1170,  # dot segments
        b"/x?" + b"&" * 8189,  # only separators
    ]
    assert all(len(raw) <= 8192 for raw in worst_cases)  # none cut short by too-long
    base = _cost(plain, lenient)
    ratios = [_cost(raw, lenient) / base for raw in worst_cases]
    # Seen here: at most about 15 (the careful path, one segment at a time).
    # Quadratic behaviour on 8 KiB would be thousands of times slower.
    assert max(ratios) < 50, ratios
