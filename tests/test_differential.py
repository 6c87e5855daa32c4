"""urlguard against an independent reading of its rules (tests/reference_parser.py).

The reference is a slow, plain loop over bytes written from the rules alone,
sharing no code or table with ``urlguard``. Hypothesis builds targets from
hostile and benign tokens; for each, under several policies:

* both accept or both reject;
* a rejection names a rule the reference also sees, and when the reference
  sees only one rule, that rule;
* the reported component and index are those of the first violation in
  the documented order (see the reference's docstring for that order), and
  so is the rule;
* an accepted target has the same segments, matrix parameters and query.

Each implementation (the ``parser`` fixture) is held to the reference.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import reference_parser as ref
from conftest import Parser
from fuzz_checks import seed_targets
from policy_tables import LATIN1, WITH_REFERENCE
from reference_agreement import assert_agree, reference_policy
from urlguard import RULES, Policy

P = pytest.param


def test_reference_policy_names_every_switch() -> None:
    def switches(ref_policy: ref.RefPolicy) -> dict[str, object]:
        values = dataclasses.asdict(ref_policy)  # characters as sets: their order is no switch
        return {k: set(v) if isinstance(v, str) else v for k, v in values.items()}

    assert len(Policy.FIELDS) == len(dataclasses.fields(ref.RefPolicy))
    for param in WITH_REFERENCE:
        policy, ref_policy = param.values
        assert switches(reference_policy(policy)) == switches(ref_policy)  # type: ignore[arg-type]


# --- targets built from tokens --------------------------------------------------------------------

# Most targets are origin-form; the rest try every other shape.
PREFIXES = [b"/"] * 8 + [
    b"//",
    b"http://h",
    b"HTTPS://h:8080",
    b"http://[::1]",
    b"http://h%41",
    b"http://h%2F",
    b"http://h%5c",
    b"http://h%0D%0A",
    b"http://h%C0%AE",
    b"http://h%E2%80%AE",
    b"http://h%ff",
    b"http://h%40x",
    b"http://h%zz",
    b"http://h%3A1",
    b"http://h:65535",
    b"http://h:65536",
    b"http://h:99999999",
    b"http://h:",
    b"http://caf%C3%A9",
    b"http://u@h",
    b"http://",
    b"http://h:x",
    b"ftp://h",
    b"*",
    b"",
    b"noslash",
]
BENIGN = [
    *(b"a", b"b", b"Z", b"0", b"~", b"-", b"_", b":", b"@", b"!", b"$", b"'", b"(", b"*", b","),
    *(b"%41", b"%C3%A9", b"%c3%a9", b"%C3%BF", b"%E8%B5%B7", b"%F0%9F%98%80", b"%20"),
    *(b"/", b"/", b"/", b"=", b"+", b";", b";p=1", b"a.b"),
]
BENIGN_QUERY = [*BENIGN, b"&", b"&", b"=", b"?", b"%26", b"%3D", b"%2B", b"%2F", b"%2541"]
HOSTILE = [
    *(b"//", b".", b"..", b"..;", b"%2E", b"%2e%2E", b"/./", b"/../"),
    *(b"%2F", b"%2f", b"%5C", b"%5c", b"%25", b"%2541", b"%252F", b"%26", b"%3D", b"%3B"),
    *(b"%C4", b"%C3", b"%A9", b"%C0%AF", b"%ED%A0%80", b"%F4%90%80%80", b"%F5"),
    *(b"%E2%80%AE", b"%E2%80%A8", b"%D8%9C", b"%EF%B7%90", b"%EF%BF%BE", b"%C2%80"),
    *(b"%00", b"%0A", b"%0D", b"%7F", b"%zz", b"%4", b"%", b"%u00E9", b"#"),
    *(b" ", b"\t", b"\x00", b"\x7f", b"\xc3\xa9", b"\xff", b"\xc4"),
    *(b"[", b"]", b"|", b"\\", b"^", b"`", b"{", b"}", b'"', b"<", b"http://h", b"?"),
]


# Code points at every edge of the forbidden and Latin-1 ranges, and of UTF-8.
EDGES = sorted(
    {
        edge + step
        for low, high in [*ref.DEFAULT_FORBIDDEN, *LATIN1, (0xD800, 0xDFFF), (0x10000, 0x10FFFF)]
        for edge in (low, high)
        for step in (-1, 0, 1)
        if 0 <= edge + step <= 0x10FFFF
    }
    | {plane + last for plane in range(0, 0x110000, 0x10000) for last in (0xFFFD, 0xFFFE, 0xFFFF)}
)
code_points = st.one_of(st.sampled_from(EDGES), st.integers(0, 0x10FFFF))


def escaped(code_point: int) -> bytes:
    """'%XX' for each UTF-8 byte (a surrogate gets its 3 invalid bytes)."""
    encoded = chr(code_point).encode("utf-8", "surrogatepass")
    return b"".join(b"%%%02X" % byte for byte in encoded)


hostile_tokens = st.one_of(st.sampled_from(HOSTILE), code_points.map(escaped))


@st.composite
def mixed(draw: st.DrawFn, benign: list[bytes], hostile: int) -> bytes:
    """Benign tokens with up to ``hostile`` hostile ones dropped in anywhere."""
    pieces = draw(st.lists(st.sampled_from(benign), max_size=10))
    for token in draw(st.lists(hostile_tokens, max_size=hostile)):
        pieces.insert(draw(st.integers(0, len(pieces))), token)
    return b"".join(pieces)


structured = st.builds(
    lambda prefix, path, query: prefix + path + query,
    st.sampled_from(PREFIXES),
    mixed(BENIGN, 2),
    st.one_of(st.just(b""), mixed(BENIGN_QUERY, 1).map(lambda q: b"?" + q)),
)
soup = st.lists(st.sampled_from(BENIGN_QUERY + HOSTILE), max_size=12).map(b"".join)
targets = st.one_of(structured, structured, structured, soup, st.binary(max_size=30))


@pytest.mark.parametrize(("policy", "ref_policy"), WITH_REFERENCE)
@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(raw=targets)
@example(raw=b"/caf%C3%A9/x?q=a+b")
@example(raw=b"/..;jsessionid=1/x")
@example(raw=b"/file;p=1?q=2")
@example(raw=b"/a%2Fb/%5C?x=%2F")
@example(raw=b"http://h")
@example(raw=b"https://h?x=1")
@example(raw=b"/pubmed?term=%C4rzteblatt")
@example(raw=b"/x?a=1&&b=2&")
def test_urlguard_agrees_with_the_reference(
    parser: Parser, raw: bytes, policy: Policy, ref_policy: ref.RefPolicy
) -> None:
    assert_agree(raw, policy, ref_policy, parser)


@pytest.mark.parametrize(("policy", "ref_policy"), WITH_REFERENCE)
def test_truth_table_targets_agree(
    parser: Parser, policy: Policy, ref_policy: ref.RefPolicy
) -> None:
    """Every target of the truth tables in tests/test_target.py, under every policy."""
    for raw in seed_targets():
        assert_agree(raw, policy, ref_policy, parser)


# --- every rule, once, through both -----------------------------------------------------------

EVERY_RULE = [
    P(b"/" + b"a" * 8192, "too-long", id="too-long"),
    P(b"/a#b", "fragment", id="fragment"),
    P(b"noslash", "bad-form", id="bad-form"),
    P(b"http://a%2Fb/", "bad-host", id="bad-host"),
    P(b"/a b", "raw-char", id="raw-char"),
    P(b"/a" * 129, "too-many", id="too-many"),
    P(b"/%zz", "malformed-escape", id="malformed-escape"),
    P(b"/%C4rzteblatt", "invalid-utf8", id="invalid-utf8"),
    P(b"/%E2%80%AE", "forbidden-char", id="forbidden-char"),
    P(b"/a%2Fb", "encoded-slash", id="encoded-slash"),
    P(b"/a%5cb", "encoded-backslash", id="encoded-backslash"),
    P(b"/.%2e/x", "dot-segment", id="dot-segment"),
    P(b"/a//b", "empty-segment", id="empty-segment"),
    P(b"/%252F", "double-encoding", id="double-encoding"),
]


@pytest.mark.parametrize(("raw", "rule"), EVERY_RULE)
def test_every_rule_alone(parser: Parser, raw: bytes, rule: str) -> None:
    # The reference sees '#' as a raw-char too; every other rule is alone.
    alone = {rule, "raw-char"} if rule == "fragment" else {rule}
    assert ref.check(raw).violations[0].rule == rule
    assert ref.check(raw).rules == alone
    assert_agree(raw, Policy(), ref.RefPolicy(), parser)


# Rules that need a switch on: (raw, rule, policy, the same switches for the reference).
EVERY_RULE_SWITCHED = [
    P(
        b"/c:%2Fwindows",
        "drive-letter",
        Policy(encoded_slash="keep"),
        ref.RefPolicy(keep_encoded_slash=True),
        id="drive-letter",
    ),
]


@pytest.mark.parametrize(("raw", "rule", "policy", "ref_policy"), EVERY_RULE_SWITCHED)
def test_every_switched_rule_alone(
    parser: Parser, raw: bytes, rule: str, policy: Policy, ref_policy: ref.RefPolicy
) -> None:
    assert ref.check(raw, ref_policy).rules == {rule}
    assert_agree(raw, policy, ref_policy, parser)


def test_every_rule_is_in_the_table() -> None:
    rules = {rule for _, rule in (param.values for param in EVERY_RULE)}
    rules |= {rule for _, rule, _, _ in (param.values for param in EVERY_RULE_SWITCHED)}
    # host-not-allowed is the guard's alone (an allow-list): test_guard.py.
    assert rules == set(RULES) - {"host-not-allowed"}


# --- the reference itself, against the text of the rules and the articles --------------------

REFERENCE_ACCEPTS = [
    P(b"/", ref.RefPolicy(), ("",), (), id="root"),
    P(b"/a/b/", ref.RefPolicy(), ("a", "b", ""), (), id="trailing slash"),
    P(b"/caf%C3%A9/x?q=a+b", ref.RefPolicy(), ("café", "x"), (("q", "a b"),), id="design"),
    P(b"http://h", ref.RefPolicy(), ("",), (), id="absolute-form, no path"),
    P(b"https://h?x=1", ref.RefPolicy(), ("",), (("x", "1"),), id="absolute-form, query"),
    P(b"/x?a=1&&b=2&", ref.RefPolicy(), ("x",), (("a", "1"), ("b", "2")), id="empty pairs"),
    P(b"/x?a%3Db=%26&c", ref.RefPolicy(), ("x",), (("a=b", "&"), ("c", "")), id="separators"),
    P(b"/x?q=%2B+", ref.RefPolicy(), ("x",), (("q", "+ "),), id="plus before decoding"),
    P(b"/x?v=%2541", ref.RefPolicy(), ("x",), (("v", "%41"),), id="query double encoding"),
    P(b"/a%2Fb", ref.RefPolicy(keep_encoded_slash=True), ("a/b",), (), id="keep slash"),
    P(b"/file;p=1", ref.RefPolicy(), ("file;p=1",), (), id="params literal"),
    P(b"/file;p=1", ref.RefPolicy(path_params="split"), ("file",), (), id="params split"),
    P(b"/[x]|", ref.browser(), ("[x]|",), (), id="browser path"),
    P(b"/x?q=[\\^`{|}]", ref.browser(), ("x",), (("q", "[\\^`{|}]"),), id="browser query"),
    P(b"/%C3%BF", ref.RefPolicy(allowed_ranges=LATIN1), ("ÿ",), (), id="latin-1"),
    P(b"/%F4%8F%BF%BD", ref.RefPolicy(), ("\U0010fffd",), (), id="U+10FFFD"),
]


@pytest.mark.parametrize(("raw", "ref_policy", "segments", "query"), REFERENCE_ACCEPTS)
def test_reference_accepts(
    raw: bytes,
    ref_policy: ref.RefPolicy,
    segments: tuple[str, ...],
    query: tuple[tuple[str, str], ...],
) -> None:
    verdict = ref.check(raw, ref_policy)
    assert verdict.violations == []
    assert (verdict.segments, verdict.query) == (segments, query)


def test_reference_split_params() -> None:
    verdict = ref.check(b"/a%3Bb;k%3D=v%3B;;flag/c", ref.RefPolicy(path_params="split"))
    assert verdict.segments == ("a;b", "c")
    assert verdict.params == ((("k=", "v;"), ("flag", "")), ())


REFERENCE_REJECTS = [
    P(b"", ref.RefPolicy(), ["bad-form"], id="empty"),
    P(b"*", ref.RefPolicy(), ["bad-form"], id="asterisk"),
    P(b"ftp://h/x", ref.RefPolicy(), ["bad-form"], id="other scheme"),
    P(b"http://u@h/", ref.RefPolicy(), ["bad-host"], id="userinfo"),
    P(b"http:///x", ref.RefPolicy(), ["bad-host"], id="empty host"),
    P(b"/a?b#c", ref.RefPolicy(), ["fragment", "raw-char"], id="'#' is also raw"),
    P(b"/%C0%AF", ref.RefPolicy(), ["invalid-utf8"], id="overlong"),
    P(b"/%ED%A0%80", ref.RefPolicy(), ["invalid-utf8"], id="surrogate"),
    P(b"/%F4%90%80%80", ref.RefPolicy(), ["invalid-utf8"], id="above U+10FFFF"),
    P(b"/%EF%BF%BE", ref.RefPolicy(), ["forbidden-char"], id="noncharacter"),
    P(b"/%2F%zz", ref.RefPolicy(), ["malformed-escape", "encoded-slash"], id="both"),
    P(b"/..;x", ref.RefPolicy(), ["dot-segment"], id="Tomcat ..;"),
    P(b"/a;b", ref.RefPolicy(path_params="reject"), ["raw-char"], id="reject params"),
    P(b"/x?t=%E8%B5%B7", ref.RefPolicy(allowed_ranges=LATIN1), ["forbidden-char"], id="CJK"),
    P(b"/a/b/c", ref.RefPolicy(max_segments=2), ["too-many"], id="segments"),
    P(b"/?a&b&&c", ref.RefPolicy(max_params=2), ["too-many"], id="pairs"),
]


@pytest.mark.parametrize(("raw", "ref_policy", "rules"), REFERENCE_REJECTS)
def test_reference_rejects(raw: bytes, ref_policy: ref.RefPolicy, rules: list[str]) -> None:
    assert [v.rule for v in ref.check(raw, ref_policy).violations] == rules


def test_reference_sets_match_the_excluded_list() -> None:
    # "Proper URL Encoding and Decoding": of printable ASCII, `" < > \ ^ ` { | }`
    # are excluded from URLs;
    # a path segment may not hold '#' '?' '[' ']', a query may hold '?'.
    printable = {chr(c) for c in range(0x21, 0x7F)}
    allowed = printable - set('"<>\\^`{|}')
    assert set(ref.PATH_CHARS) == allowed - set("#?[]")
    assert set(ref.QUERY_CHARS) == allowed - set("#[]")


@given(data=st.one_of(st.binary(max_size=12), st.text(max_size=6).map(str.encode)))
def test_reference_utf8_is_strict_utf8(data: bytes) -> None:
    # CPython's UTF-8 codec is strict in the same sense (RFC 3629): a
    # cross-check of the hand-written decoder, not part of urlguard.
    try:
        expected: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        expected = None
    assert ref.utf8_decode(data) == expected


@pytest.mark.parametrize(("policy", "ref_policy"), WITH_REFERENCE)
def test_every_edge_code_point(parser: Parser, policy: Policy, ref_policy: ref.RefPolicy) -> None:
    """Each code point at an edge of a forbidden, Latin-1 or UTF-8 range, escaped,
    alone and between letters, in a segment, a query name and a query value."""
    for code_point in EDGES:
        for piece in (escaped(code_point), b"a" + escaped(code_point) + b"b"):
            for raw in (b"/" + piece, b"/x?" + piece + b"=v", b"/x?n=" + piece):
                assert_agree(raw, policy, ref_policy, parser)
