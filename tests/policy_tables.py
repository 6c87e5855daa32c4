"""Fixed tables of policies, shared by the tests and the fuzzers.

``EVERY_SWITCH`` flips each switch of ``Policy`` at least once, presets and
limits included: the compiled parser is held to the pure one under each
(tests/test_parser_c.py, fuzz/fuzz_compiled.py). ``WITH_REFERENCE`` pairs
policies with the tests' reference parser's own spelling of the same
switches (tests/test_differential.py, fuzz/fuzz_differential.py).
"""

from __future__ import annotations

import pytest

import reference_parser as ref
from urlguard import Policy
from urlguard._url import grammar as g

P = pytest.param
ALL_EXTRA = g.to_str(g.ALLOWABLE_RAW_EXTRA)
LATIN1 = ((0x20, 0x7E), (0xA0, 0xFF))
# Escaped backslash kept; dot and empty segments and double encoding allowed; '+' kept as '+'.
LENIENT = Policy(
    encoded_backslash="keep",
    dot_segment="allow",
    empty_segment="allow",
    double_encoding="allow",
    plus_as_space=False,
)

EVERY_SWITCH = [
    P(Policy(), id="default"),
    P(Policy.browser(), id="browser"),
    P(Policy(encoded_slash="keep"), id="keep slash"),
    P(Policy(encoded_backslash="keep", raw_path_extra="\\"), id="keep backslash, raw backslash"),
    P(Policy(encoded_slash="keep", encoded_backslash="keep", path_params="split"), id="split keep"),
    P(Policy(path_params="split"), id="split"),
    P(Policy(path_params="reject"), id="reject params"),
    P(Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)]), id="latin-1"),
    P(Policy(allowed_ranges=[(0x30, 0x39), (0x61, 0x7A), (0x4E00, 0x9FFF)]), id="narrow ranges"),
    P(LENIENT, id="lenient"),
    P(Policy(max_length=40, max_segments=4, max_params=3), id="small limits"),
    P(Policy(max_length=1, max_segments=1, max_params=1), id="limits of one"),
    P(
        Policy.browser(path_params="split", encoded_slash="keep", allow_chars="\r\n\u202e"),
        id="browser split keep allow-chars",
    ),
    P(
        Policy(raw_path_extra=ALL_EXTRA, raw_query_extra=ALL_EXTRA, allow_chars="\x00\x7f\ufffe"),
        id="every raw extra",
    ),
    P(Policy(allowed_ranges=[(0x21, 0x7E)], plus_as_space=True), id="no space"),
]
EVERY_SWITCH_VALUES: list[Policy] = [param.values[0] for param in EVERY_SWITCH]  # type: ignore[misc]

# Each urlguard policy next to the reference's own spelling of the same switches.
WITH_REFERENCE = [
    P(Policy(), ref.RefPolicy(), id="default"),
    P(Policy.browser(), ref.browser(), id="browser"),
    P(Policy(encoded_slash="keep"), ref.RefPolicy(keep_encoded_slash=True), id="keep slash"),
    P(Policy(path_params="split"), ref.RefPolicy(path_params="split"), id="split params"),
    P(Policy(path_params="reject"), ref.RefPolicy(path_params="reject"), id="reject params"),
    P(
        Policy(allowed_ranges=list(LATIN1)),
        ref.RefPolicy(allowed_ranges=LATIN1),
        id="latin-1 only",
    ),
    P(
        LENIENT,
        ref.RefPolicy(
            keep_encoded_backslash=True,
            allow_dot_segments=True,
            allow_empty_segments=True,
            allow_double_encoding=True,
            plus_as_space=False,
        ),
        id="lenient switches",
    ),
    P(
        Policy(max_length=40, max_segments=4, max_params=3),
        ref.RefPolicy(max_length=40, max_segments=4, max_params=3),
        id="small limits",
    ),
    P(
        Policy.browser(path_params="split", encoded_slash="keep", allow_chars="\r\n\u202e"),
        ref.browser(path_params="split", keep_encoded_slash=True, allow_chars="\r\n\u202e"),
        id="browser split keep allow-chars",
    ),
    P(
        Policy(encoded_slash="keep", encoded_backslash="keep"),
        ref.RefPolicy(keep_encoded_slash=True, keep_encoded_backslash=True),
        id="keep both separators",
    ),
    P(
        Policy(path_params="split", encoded_slash="keep", query_allow_chars="\r\n\u202e"),
        ref.RefPolicy(path_params="split", keep_encoded_slash=True, query_allow_chars="\r\n\u202e"),
        id="split keep query-allow-chars",
    ),
]
