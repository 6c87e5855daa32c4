"""Fuzzing's regression baseline: the seed corpus and every crash, replayed.

The oracle every fuzz input is held to, the seeds and the corner cases are in
tests/fuzz_checks.py, which the fuzz targets import; here the default test
run replays them on each parser.
"""

from __future__ import annotations

import pytest

from conftest import Parser
from fuzz_checks import CORNER_CASES, Verdict, check_one, check_verdict, seed_targets
from urlguard import InvalidTarget, Policy


def verdict(parser: Parser, raw: bytes, policy: Policy) -> Verdict:
    try:
        target = parser.parse_target(raw, policy)
    except InvalidTarget as error:
        return error.rule
    return target.segments, target.query


def test_seeds_come_from_the_truth_tables() -> None:
    seeds = seed_targets()
    assert len(seeds) > 150
    for expected in (b"/%C4rzteblatt", b"/..;jsessionid=1/x", b"/" + b"a" * 8192, b"/a" * 129):
        assert expected in seeds


def test_seed_corpus_replays(parser: Parser) -> None:
    for seed in seed_targets():
        check_one(seed, parser)


@pytest.mark.parametrize(("data", "strict", "browser"), CORNER_CASES)
def test_corner_case(parser: Parser, data: bytes, strict: Verdict, browser: Verdict) -> None:
    check_one(data, parser)
    assert verdict(parser, data, Policy()) == strict
    assert verdict(parser, data, Policy.browser()) == browser


def test_other_errors_escape_the_oracle(parser: Parser) -> None:
    # The oracle only catches InvalidTarget: any other error is a failure.
    with pytest.raises(TypeError):
        check_verdict(parser, 123, Policy())  # type: ignore[arg-type]
