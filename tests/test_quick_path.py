"""The pure parser's quick path (``parser_py._accept_quickly``) under the differential.

The quick path accepts a target with whole-string work where tables derived
from the ``Policy`` say that no rule can apply, and otherwise leaves the
target to the rules. Two things are shown here, from the generators of
tests/test_policy_space.py (the ones ``fuzz/fuzz_policies.py`` runs for
millions of inputs):

* the generated targets reach every way through the quick path: accepted
  with and without escapes in the path and in the query, their decoded text
  taken as printable or searched, an escaped path with a raw '=', with '+'
  as a space, with raw text searched for characters, under
  ``path_params="split"``, and left to the rules both where the rules accept
  and where they reject;
* the differential (``three_agree``: compiled against pure, pure against the
  tests' reference) catches a quick path that skips a rule: one entry of one
  derived table changed, and it fails within a few thousand targets.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

import pytest

from conftest import implementation_module
from policy_space import Seeded, draw_policy, draw_target, three_agree, tokens_for
from urlguard import InvalidTarget, Policy, Target
from urlguard._url import parser_py as pure
from urlguard._url.policy import _forbidden_pattern, _merge, _quick_target_pattern

P = pytest.param


def quickly(raw: bytes, policy: Policy) -> Target | None:
    """The quick path's answer for ``raw``, split at its first '?' as parse_target splits it."""
    path, question, query = raw.partition(b"?")
    return pure._accept_quickly(raw, path, query if question else None, policy, None)


def ways(raw: bytes, policy: Policy) -> set[str]:
    """How ``raw`` went through the quick path under ``policy``."""
    path, question, query = raw.partition(b"?")
    if quickly(raw, policy) is None:
        try:
            pure.parse_target(raw, policy)
        except InvalidTarget:
            return {"left to the rules, which reject"}
        return {"left to the rules, which accept"}
    target = pure.parse_target(raw, policy)
    found = {"accepted"}
    found.add("accepted, path escaped" if b"%" in path else "accepted, path as sent")
    if b"%" in path:
        printable = policy._path_printable_allowed and "/".join(target.segments).isprintable()
        found.add(
            "accepted, escaped path printable" if printable else "accepted, escaped path searched"
        )
    if b"%" in path and b"=" in path:
        found.add("accepted, escaped path with a raw '='")
    if question:
        found.add("accepted, query escaped" if b"%" in query else "accepted, query as sent")
    if question and b"%" in query:
        text = "&".join(f"{name}={value}" for name, value in target.query)
        printable = policy._query_printable_allowed and text.isprintable()
        found.add(
            "accepted, escaped query printable" if printable else "accepted, escaped query searched"
        )
    if question and policy.plus_as_space and b"+" in query:
        found.add("accepted, '+' a space")
    if policy.path_params == "split":
        found.add("accepted, split")
    if not policy._path_raw_is_text:
        found.add("accepted, path searched for characters")
    if question and not policy._query_raw_is_text:
        found.add("accepted, query searched for characters")
    return found


def test_generated_targets_take_every_way_through_the_quick_path() -> None:
    choose = Seeded(0)
    seen: Counter[str] = Counter()
    for _ in range(300):
        policy = draw_policy(choose)
        tokens = tokens_for(policy)
        for _ in range(20):
            seen.update(ways(draw_target(choose, tokens), policy))
    every = {
        "accepted, path escaped",
        "accepted, path as sent",
        "accepted, query escaped",
        "accepted, query as sent",
        "accepted, escaped path printable",
        "accepted, escaped path searched",
        "accepted, escaped path with a raw '='",
        "accepted, escaped query printable",
        "accepted, escaped query searched",
        "accepted, '+' a space",
        "accepted, split",
        "accepted, path searched for characters",
        "accepted, query searched for characters",
        "left to the rules, which accept",
        "left to the rules, which reject",
    }
    assert every <= set(seen), every - set(seen)
    assert min(seen[way] for way in every) >= 10, seen


# --- faults: one entry of one table changed -------------------------------------------

Fault = Callable[[Policy], None]


def _set(policy: Policy, name: str, value: object) -> None:
    object.__setattr__(policy, name, value)  # the way Policy derives its own fields


def takes_semicolon(policy: Policy) -> None:
    """The quick path takes a raw ';' in the path: "..;x" and "/;/a" skip their rules."""
    _set(policy, "_path_quick", policy._path_quick + b";")


def takes_hash(policy: Policy) -> None:
    """The quick path takes a raw '#' in the query: the fragment rule is skipped."""
    _set(policy, "_query_quick", policy._query_quick + b"#")


def admits_nul(policy: Policy) -> None:
    """The decoded path's pattern admits U+0000: forbidden-char is skipped for it."""
    allowed = _merge([*policy._path_allowed, (0x2F, 0x2F), (0, 0)])
    _set(policy, "_path_text_bad", _forbidden_pattern(allowed))


def trusts_raw_text(policy: Policy) -> None:
    """Raw path bytes are taken for allowed characters where they are not."""
    _set(policy, "_path_raw_is_text", True)


def trusts_raw_query(policy: Policy) -> None:
    """Raw query bytes ('+' as a space) are taken for allowed characters where they are not."""
    _set(policy, "_query_raw_is_text", True)


def trusts_printable(policy: Policy) -> None:
    """A printable decoded path is taken for allowed text where the policy does not allow
    every printable character (allowed_ranges narrower than Unicode)."""
    _set(policy, "_path_printable_allowed", True)


def trusts_printable_query(policy: Policy) -> None:
    """The same, in the query."""
    _set(policy, "_query_printable_allowed", True)


def takes_backslash(policy: Policy) -> None:
    """The quick path takes a raw '\\', kept separator or not."""
    if "\\" in policy.raw_path_extra:
        _set(policy, "_path_quick", policy._path_quick + b"\\")


FAULTS = [
    P(takes_semicolon, id="';' taken"),
    P(takes_hash, id="'#' taken"),
    P(admits_nul, id="U+0000 admitted"),
    P(trusts_raw_text, id="raw bytes trusted as text"),
    P(trusts_raw_query, id="raw query bytes trusted as text"),
    P(trusts_printable, id="printable path text trusted"),
    P(trusts_printable_query, id="printable query text trusted"),
    P(takes_backslash, id="a kept raw '\\' taken"),
]


def faulty(policy: Policy, fault: Fault) -> Policy:
    """A copy of ``policy`` (the same switches) whose quick path has ``fault``,
    its target pattern derived again from its (faulty) byte tables."""
    copy = dataclasses.replace(policy)
    fault(copy)
    _set(copy, "_quick_target", _quick_target_pattern(copy._path_quick, copy._query_quick))
    return copy


@pytest.mark.parametrize("fault", FAULTS)
def test_the_differential_catches_a_quick_path_that_skips_a_rule(fault: Fault) -> None:
    compiled, python = implementation_module("compiled"), implementation_module("python")
    choose = Seeded(1)
    for _ in range(2000):  # policies, twenty targets each
        policy = draw_policy(choose)
        broken = faulty(policy, fault)
        tokens = tokens_for(policy)
        for _ in range(20):
            raw = draw_target(choose, tokens)
            three_agree(compiled, python, raw, policy)  # the real tables agree
            try:
                three_agree(compiled, python, raw, broken)
            except AssertionError:
                return
    pytest.fail("40,000 targets compared, the fault went unseen")


def test_a_faulty_copy_leaves_the_policy_as_it_was() -> None:
    policy = Policy()
    broken = faulty(policy, takes_semicolon)
    assert broken == policy
    assert b";" in broken._path_quick
    assert b";" not in policy._path_quick
