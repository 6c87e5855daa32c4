"""The compiled parser, the pure one and the tests' reference over the policy space.

tests/test_parser_c.py compares the two parsers under fifteen fixed policies,
tests/test_differential.py the pure one with the tests' own reading of the
rules (tests/reference_parser.py) under eleven; here every example draws a
policy of its own and targets made for it (tests/policy_space.py). The
compiled and the pure ``parse_target`` and ``parse_split_target`` must agree
on everything observable (``verdict``, in conftest), and the pure one with
the tests' reference (``assert_agree``, in tests/reference_agreement.py): so
every quick path of the pure parser is held to both. So must two Guards
that differ only in their parser, under a drawn guard case.

Hypothesis drives the generators here; fuzz/fuzz_policies.py drives the
same ones from a seed for long runs.
"""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import Parser, implementation_module
from policy_space import (
    Drawn,
    GuardCase,
    Seeded,
    draw_guard_case,
    draw_policy,
    draw_request_target,
    draw_target,
    guard_tokens,
    guards_agree,
    make_guard,
    three_agree,
    tokens_for,
)
from urlguard import RULES, InvalidTarget, Policy
from urlguard._guard.decision import Request


@st.composite
def policy_and_targets(draw: st.DrawFn) -> tuple[Policy, list[bytes]]:
    """A drawn policy and a few targets made for it."""
    choose = Drawn(draw)
    policy = draw_policy(choose)
    tokens = tokens_for(policy)
    return policy, [draw_target(choose, tokens) for _ in range(choose.number(1, 6))]


@pytest.fixture(scope="module")
def compiled() -> Parser:
    return implementation_module("compiled")


@pytest.fixture(scope="module")
def pure() -> Parser:
    return implementation_module("python")


KEEP_BOTH: Final = Policy(encoded_slash="keep", encoded_backslash="keep")


# The two tests below take about 30 s and 15 s on two cores, the module
# under a minute; fuzz/fuzz_policies.py runs the same generators for millions.
@settings(max_examples=8000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=policy_and_targets())
@example(case=(KEEP_BOTH, [b"/..%2Fa", b"/a%2F%2Fb", b"/%5C..", b"/c:%2Fw", b"/C:%5Cw"]))
@example(case=(KEEP_BOTH.replace(path_params="split"), [b"/..;x%2Fa/b", b"/a%2F..;x", b"/;/a"]))
@example(case=(Policy(path_params="reject"), [b"/a;b", b"/a%3Bb", b"/?a;b=%3B"]))
@example(case=(Policy(allowed_ranges=[(0x80, 0x10FFFF)]), [b"/%C2%80", b"/%C2%7F", b"/a"]))
@example(case=(Policy(allowed_ranges=[(0x21, 0x7E)]), [b"/?a=b+c", b"/?a=%2B", b"/a+b"]))
@example(case=(Policy.browser(raw_path_extra="\\"), [b"/a\\..", b"/a\\\\b", b"/c:\\x"]))
def test_parsers_agree_under_drawn_policies(
    compiled: Parser, pure: Parser, case: tuple[Policy, list[bytes]]
) -> None:
    policy, targets = case
    for raw in targets:
        three_agree(compiled, pure, raw, policy)


@st.composite
def guard_case_and_targets(draw: st.DrawFn) -> tuple[GuardCase, list[bytes]]:
    choose = Drawn(draw)
    case = draw_guard_case(choose)
    tokens = guard_tokens(case)
    return case, [draw_request_target(choose, case, tokens) for _ in range(choose.number(1, 6))]


HIDDEN = GuardCase(
    Policy(),
    {"/admin": Policy(), "/": {"encoded_slash": "keep"}},
    "enforce",
    b"/m",
    Request("GET"),
)


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=guard_case_and_targets())
@example(case=(HIDDEN, [b"/m%2Fadmin/x", b"/m/admin%2Fx", b"/%6D/admin", b"/m", b"/m?q"]))
def test_guards_agree_with_routes_and_mounts(
    compiled: Parser, pure: Parser, case: tuple[GuardCase, list[bytes]]
) -> None:
    config, targets = case
    with_compiled, with_reference = make_guard(config, compiled), make_guard(config, pure)
    for raw in targets:
        guards_agree(with_compiled, with_reference, config, raw)
    assert with_compiled.violations == with_reference.violations


# --- what the generators reach ------------------------------------------------------


def test_generated_targets_reach_every_rule() -> None:
    """The generators are only as good as what they reach: from one seed,
    targets made for drawn policies break every rule, in the path and in the
    query where a rule applies to both, and are often enough accepted."""
    reference = implementation_module("python")
    choose = Seeded(0)
    seen: set[tuple[str, str]] = set()
    accepted = total = 0
    for _ in range(300):
        policy = draw_policy(choose)
        tokens = tokens_for(policy)
        for _ in range(20):
            total += 1
            try:
                reference.parse_target(draw_target(choose, tokens), policy)
            except InvalidTarget as error:
                seen.add((error.rule, error.component))
            else:
                accepted += 1
    # host-not-allowed is the guard's alone (an allow-list): test_guard.py.
    assert {rule for rule, _ in seen} == set(RULES) - {"host-not-allowed"}
    both = {"raw-char", "too-many", "malformed-escape", "invalid-utf8", "forbidden-char"}
    assert {(rule, "query") for rule in both} <= seen
    assert {(rule, "path") for rule in both} <= seen
    assert accepted > total // 10


def test_generated_requests_reach_routes_and_hidden_boundaries() -> None:
    """Targets drawn for a guard land under its routes, and some below a
    mount point hide its boundary: the policies of two routes apply."""
    choose = Seeded(0)
    routed = both = 0
    for _ in range(300):
        case = draw_guard_case(choose)
        table = make_guard(case, implementation_module("python")).table
        tokens = guard_tokens(case)
        for _ in range(10):
            raw = draw_request_target(choose, case, tokens)
            if case.mount is None:
                policies: tuple[Policy, ...] = (table.select(raw),)
            else:
                _, routes = table.candidates(raw, case.mount)
                policies = tuple(route.policy for route in routes)
            routed += any(policy is not case.policy for policy in policies)
            both += len(policies) == 2
    assert routed > 300
    assert both > 30
