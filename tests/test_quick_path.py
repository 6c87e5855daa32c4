"""The pure parser's quick path (``parser_py._accept_quickly``) under the differential.

The quick path accepts a target with whole-string work where tables derived
from the ``Policy`` say that no rule can apply, and otherwise leaves the
target to the rules. Two things are shown here, from the generators of
tests/test_policy_space.py (the ones ``fuzz/fuzz_policies.py`` runs for
millions of inputs):

* the generated targets reach every way through the quick path: accepted
  with and without escapes in the path and in the query, escapes of ASCII
  and of longer UTF-8, an escaped path with a raw '=', with '+' as a space,
  under a policy whose raw bytes are not all allowed text, under
  ``path_params="split"``, and left to the rules both where the rules accept
  and where they reject;
* the differential (``three_agree``: compiled against pure, pure against the
  tests' reference) catches a quick path that skips a rule: one entry of one
  derived table changed, and it fails within a few thousand targets.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable

import pytest

from conftest import implementation_module
from policy_space import Seeded, draw_policy, draw_target, three_agree, tokens_for
from urlguard import InvalidTarget, Policy, Target
from urlguard._url import parser_py as pure
from urlguard._url.policy import _merge, _quick_target_pattern

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
    found = {"accepted"}
    found.add("accepted, path escaped" if b"%" in path else "accepted, path as sent")
    for part, where in ((path, "path"), (query, "query")):
        if b"%" in part:
            beyond_ascii = re.search(rb"%[89A-Fa-f]", part) is not None
            found.add(f"accepted, {where} escapes {'beyond' if beyond_ascii else 'of'} ASCII")
    if b"%" in path and b"=" in path:
        found.add("accepted, escaped path with a raw '='")
    if question:
        found.add("accepted, query escaped" if b"%" in query else "accepted, query as sent")
    if question and policy.plus_as_space and b"+" in query:
        found.add("accepted, '+' a space")
    if policy.path_params == "split":
        found.add("accepted, split")
    if _raw(policy._raw_path_table) - set(policy._path_quick) - set(b";%\\"):
        found.add("accepted, raw path bytes that are not all allowed text")
    if question and _raw(policy._raw_query_table) - set(policy._query_quick) - {ord("%")}:
        found.add("accepted, raw query bytes that are not all allowed text")
    return found


def _raw(table: bytes) -> set[int]:
    """The bytes a policy's table (1 or 0 per byte) allows raw."""
    return {byte for byte, allowed in enumerate(table) if allowed}


def test_generated_targets_take_every_way_through_the_quick_path() -> None:
    choose = Seeded(0)
    seen: Counter[str] = Counter()
    for _ in range(500):
        policy = draw_policy(choose)
        tokens = tokens_for(policy)
        for _ in range(20):
            seen.update(ways(draw_target(choose, tokens), policy))
    every = {
        "accepted, path escaped",
        "accepted, path as sent",
        "accepted, query escaped",
        "accepted, query as sent",
        "accepted, path escapes of ASCII",
        "accepted, path escapes beyond ASCII",
        "accepted, query escapes of ASCII",
        "accepted, query escapes beyond ASCII",
        "accepted, escaped path with a raw '='",
        "accepted, '+' a space",
        "accepted, split",
        "accepted, raw path bytes that are not all allowed text",
        "accepted, raw query bytes that are not all allowed text",
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


def takes_every_raw_byte(policy: Policy) -> None:
    """Raw path bytes are taken for allowed characters where they are not
    (a policy whose allowed_ranges leave out letters or digits)."""
    raw = bytes(b for b, allowed in enumerate(policy._raw_path_table) if allowed)
    _set(policy, "_path_quick", raw.translate(None, b";%\\"))


def takes_every_raw_query_byte(policy: Policy) -> None:
    """The same in the query, '+' and '=' included whatever they read as."""
    raw = bytes(b for b, allowed in enumerate(policy._raw_query_table) if allowed)
    _set(policy, "_query_quick", raw.translate(None, b"%"))


def takes_backslash(policy: Policy) -> None:
    """The quick path takes a raw '\\', kept separator or not."""
    if "\\" in policy.raw_path_extra:
        _set(policy, "_path_quick", policy._path_quick + b"\\")


def _escapes_also(name: str, *points: int) -> Fault:
    def fault(policy: Policy) -> None:
        intervals = [*getattr(policy, name), *((point, point) for point in points)]
        _set(policy, name, tuple(_merge(intervals)))

    return fault


escapes_nul = _escapes_also("_path_escaped", 0)
escapes_nul.__doc__ = "The path takes %00: forbidden-char is skipped for it."
escapes_slash = _escapes_also("_path_escaped", ord("/"))
escapes_slash.__doc__ = "The path takes %2F: encoded-slash (and kept %2F's rules) skipped."
escapes_dot = _escapes_also("_path_escaped", ord("."))
escapes_dot.__doc__ = "The path takes %2E: '%2E%2E' passes as a segment, not as '..'."
escapes_percent = _escapes_also("_path_escaped", ord("%"))
escapes_percent.__doc__ = "The path takes %25: double-encoding is skipped."
escapes_ampersand = _escapes_also("_query_escaped", ord("&"))
escapes_ampersand.__doc__ = "The query takes %26: the decoded query splits a value in two."
escapes_bidi = _escapes_also("_query_escaped", 0x202E)
escapes_bidi.__doc__ = "The query takes U+202E escaped: forbidden-char is skipped for it."


FAULTS = [
    P(takes_semicolon, id="';' taken"),
    P(takes_hash, id="'#' taken"),
    P(takes_every_raw_byte, id="raw path bytes trusted as text"),
    P(takes_every_raw_query_byte, id="raw query bytes trusted as text"),
    P(takes_backslash, id="a kept raw '\\' taken"),
    P(escapes_nul, id="%00 taken"),
    P(escapes_slash, id="%2F taken"),
    P(escapes_dot, id="%2E taken"),
    P(escapes_percent, id="%25 taken"),
    P(escapes_ampersand, id="%26 taken in the query"),
    P(escapes_bidi, id="U+202E taken escaped in the query"),
]


def faulty(policy: Policy, fault: Fault) -> Policy:
    """A copy of ``policy`` (the same switches) whose quick path has ``fault``,
    its target pattern derived again from its (faulty) tables."""
    copy = dataclasses.replace(policy)
    fault(copy)
    pattern = _quick_target_pattern(
        copy._path_quick, copy._query_quick, copy._path_escaped, copy._query_escaped
    )
    _set(copy, "_quick_target", pattern)
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
