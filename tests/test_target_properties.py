"""Properties of parse_target over arbitrary bytes (Hypothesis)."""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import Parser
from urlguard import InvalidTarget, Policy

P = pytest.param

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
def test_any_bytes_give_a_target_or_invalid_target(
    parser: Parser, raw: bytes, policy: Policy
) -> None:
    try:
        target = parser.parse_target(raw, policy)
    except InvalidTarget as error:
        assert error.component in ("target", "path", "query")
        assert 0 <= error.offset <= len(raw)
        return
    assert target.raw == raw
    assert all(isinstance(s, str) for s in target.segments)
    assert all(isinstance(n, str) and isinstance(v, str) for n, v in target.query)


# --- kept separators ---------------------------------------------------------------------------

KEEP_POLICIES = [
    Policy(encoded_slash="keep"),
    Policy(encoded_backslash="keep"),
    Policy(encoded_slash="keep", encoded_backslash="keep"),
    Policy.browser(encoded_slash="keep", encoded_backslash="keep", path_params="split"),
]
KEPT_TOKENS = [b"%2F", b"%2f", b"%5C", b"%5c", b".", b"..", b"%2E", b"%2e", b"a", b";", b"=", b"/"]
kept_targets = st.lists(st.sampled_from(KEPT_TOKENS), max_size=12).map(lambda t: b"/" + b"".join(t))


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(raw=kept_targets, policy=st.sampled_from(KEEP_POLICIES))
@example(raw=b"/..%2F..%2Fetc", policy=KEEP_POLICIES[0])
@example(raw=b"/a%2F", policy=KEEP_POLICIES[0])
def test_kept_separators_never_make_a_dot_or_empty_part(
    parser: Parser, raw: bytes, policy: Policy
) -> None:
    """Whatever a policy that keeps %2F or %5C accepts, no segment splits on
    the kept separators into a '.' or '..' part, or an empty part before
    its last."""
    try:
        target = parser.parse_target(raw, policy)
    except InvalidTarget:
        return
    separators = policy._kept_separators
    for segment in target.segments:
        parts = [segment]
        for separator in separators:
            parts = [piece for part in parts for piece in part.split(separator)]
        assert not any(part in (".", "..") for part in parts), (raw, target.segments)
        assert "" not in parts[:-1], (raw, target.segments)


@settings(max_examples=500)
@given(raw=any_targets, policy=policies)
def test_verdict_is_deterministic(parser: Parser, raw: bytes, policy: Policy) -> None:
    def verdict() -> object:
        try:
            return parser.parse_target(raw, policy)
        except InvalidTarget as error:
            return (error.rule, error.component, error.index, error.offset)

    assert verdict() == verdict()


def _round_times(
    parser: Parser, raws: list[bytes], policy: Policy, rounds: int = 25, loops: int = 5
) -> list[list[float]]:
    """Per round, the time of ``loops`` parses of each target, taken in turn
    so that a slow spell of a busy machine slows all of them alike. Time on
    this thread's CPU clock, which leaves out what other processes take, with
    the garbage collector off, as timeit does."""
    times = []
    gc.disable()
    try:
        for _ in range(rounds):
            row = []
            for raw in raws:
                start = time.thread_time()
                for _ in range(loops):
                    with contextlib.suppress(InvalidTarget):
                        parser.parse_target(raw, policy)
                row.append(time.thread_time() - start)
            times.append(row)
    finally:
        gc.enable()
    return times


# Worst cases as a function of the target's length n (about n bytes each).
WORST_CASES = [
    P(lambda n: b"/" + b"a" * (n - 1), id="plain, one long segment"),
    P(lambda n: b"/" + b"%C3%A9" * ((n - 1) // 6), id="all escapes, one long segment"),
    P(lambda n: b"/x?" + b"%C3%A9=%C3%A9&" * ((n - 3) // 14), id="many encoded pairs"),
    P(lambda n: b"/" + b"a/" * ((n - 1) // 2), id="many segments"),
    P(
        lambda n: b"/" + b"%41" * ((n - 1) // 3),
        id="escapes of single ASCII bytes",
    ),
    P(lambda n: b"/" + b"a" * (n - 2) + b"%", id="rejected at the very end"),
    P(lambda n: b"/" + b"%2e%2E/" * ((n - 1) // 7), id="dot segments"),
    P(lambda n: b"/x?" + b"&" * (n - 3), id="only separators"),
]


@pytest.mark.timing
@pytest.mark.parametrize("make", WORST_CASES)
def test_parsing_is_linear_in_the_worst_case(parser: Parser, make: Callable[[int], bytes]) -> None:
    """Doubling the length of a worst case about doubles its cost: 4, 8 and
    16 KiB, compared within each round, the median over the rounds. Linear
    work gives ratios near 2 and 4, quadratic work 4 and 16 once it
    dominates; a copy of the rest of the target per byte, tried here, gave
    2.3 to 2.7 and 6.4 to 7.6. Seen here on a 2-core machine, with up to
    three other processes busy: at most 2.1 and 4.1 over 480 runs. Time,
    not a count of calls or bytecodes, which would miss quadratic work done
    in C (a slice or a search repeated per piece)."""
    # Limits that never bind, so that every size takes the same route.
    lenient = Policy(max_segments=100_000, max_params=100_000, max_length=16384)
    sizes = (4096, 8192, 16384)
    raws = [make(size) for size in sizes]
    assert all(size - 16 < len(raw) <= size for raw, size in zip(raws, sizes, strict=True))
    rows = _round_times(parser, raws, lenient)
    twice = statistics.median(eight / four for four, eight, _ in rows)
    four_times = statistics.median(sixteen / four for four, _, sixteen in rows)
    assert twice < 3, rows
    assert four_times < 6, rows
