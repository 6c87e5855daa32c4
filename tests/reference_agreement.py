"""urlguard held to the tests' reference (tests/reference_parser.py).

:func:`reference_policy` spells a ``Policy`` as the reference's own
``RefPolicy``; :func:`assert_agree` checks that a parser and the reference
agree on one target: both accept with the same pieces, or both reject, with
the rule, component and index of the first violation in the documented
order.
"""

from __future__ import annotations

import reference_parser as ref
from conftest import CHOSEN, Parser
from urlguard import InvalidTarget, Policy


def reference_policy(policy: Policy) -> ref.RefPolicy:
    """The reference's spelling of ``policy``: the same switch for each field."""
    return ref.RefPolicy(
        max_length=policy.max_length,
        max_segments=policy.max_segments,
        max_params=policy.max_params,
        path_extra=policy.raw_path_extra,
        query_extra=policy.raw_query_extra,
        keep_encoded_slash=policy.encoded_slash == "keep",
        keep_encoded_backslash=policy.encoded_backslash == "keep",
        allow_dot_segments=policy.dot_segment == "allow",
        allow_empty_segments=policy.empty_segment == "allow",
        allow_double_encoding=policy.double_encoding == "allow",
        path_params=policy.path_params,
        plus_as_space=policy.plus_as_space,
        allowed_ranges=None if policy.allowed_ranges is None else tuple(policy.allowed_ranges),
        allow_chars=policy.allow_chars,
        query_allow_chars=policy.query_allow_chars,
    )


# Rules that apply to the target as a whole, in the documented order; then
# every segment, then every query pair, each a stage of its own.
WHOLE_TARGET_STAGES = [
    ("too-long", "target"),
    ("fragment", "target"),
    ("bad-form", "target"),
    ("raw-char", "path"),
    ("raw-char", "query"),
    ("too-many", "path"),
    ("too-many", "query"),
]


def stage(violation: ref.Violation) -> tuple[int, int]:
    """Where a violation sits in the documented order: (stage, index)."""
    key = (violation.rule, violation.component)
    if key in WHOLE_TARGET_STAGES:
        return WHOLE_TARGET_STAGES.index(key), 0
    if violation.component == "target":  # the authority's checks belong to the form's
        return WHOLE_TARGET_STAGES.index(("bad-form", "target")), 0
    assert violation.index is not None
    return (7 if violation.component == "path" else 8), violation.index


def assert_agree(
    raw: bytes, policy: Policy, ref_policy: ref.RefPolicy, parser: Parser = CHOSEN
) -> None:
    """``parser`` (the fuzz target passes none: the one chosen at import) and
    the reference agree on ``raw``."""
    expected = ref.check(raw, ref_policy)
    seen = expected.violations
    try:
        target = parser.parse_target(raw, policy)
    except InvalidTarget as error:
        got = (error.rule, error.component, error.index)
        assert seen, f"urlguard rejects {raw!r} with {got}, the reference accepts"
        assert error.rule in expected.rules, (raw, got, seen)
        if len(expected.rules) == 1:
            assert error.rule == seen[0].rule, (raw, got, seen)
        # The first stage (the whole target's rules in order, then each
        # segment, then each pair) is the one urlguard reports from ...
        first_stage = [v for v in seen if stage(v) == stage(seen[0])]
        assert (error.component, error.index) == (seen[0].component, seen[0].index), (raw, got)
        assert error.rule in {v.rule for v in first_stage}, (raw, got, seen)
        # ... and within it, the first rule in the documented order.
        assert error.rule == seen[0].rule, (raw, got, seen)
        return
    assert not seen, f"urlguard accepts {raw!r}, the reference sees {seen}"
    assert target.segments == expected.segments, raw
    assert target.query == expected.query, raw
    if ref_policy.path_params == "split":
        assert target.params == expected.params, raw
    else:
        assert target.params == ((),) * len(target.segments), raw
    assert target.raw == raw
