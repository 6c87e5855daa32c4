"""Fuzzing's regression baseline: the seed corpus and every crash, replayed.

``fuzz/fuzz_parse_target.py`` (atheris, run by ``tox -e fuzz``) calls
:func:`check_one` on every input it makes. It starts from the targets of the
truth tables in ``tests/test_target.py`` (:func:`seed_targets`, written out by
``fuzz/build_corpus.py``). Any input that ever made it fail goes into
``REGRESSIONS`` below, with the date and what it broke, so that the default
test run replays it for good.

    >>> check_one(b"/caf%C3%A9/x?q=a+b")  # passes silently
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from urlguard import RULES, InvalidTarget, Policy, Target, parse_target

P = pytest.param
HERE = Path(__file__).resolve().parent
# Longest seed kept: enough for the too-long and too-many rows of the tables.
MAX_SEED = 16 * 1024

#: The policies every fuzz input is parsed under.
FUZZ_POLICIES = (
    Policy(),
    Policy.browser(),
    Policy(encoded_slash="keep", encoded_backslash="keep", path_params="split"),
    Policy(
        path_params="reject",
        allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)],
        max_length=256,
        max_segments=8,
        max_params=8,
    ),
    Policy(
        dot_segment="allow",
        empty_segment="allow",
        double_encoding="allow",
        plus_as_space=False,
        allow_chars="\r\n\u202e",
    ),
)

#: Inputs that once made the fuzzer fail: P(bytes, id="what failed, and when").
#: None has so far: on the parser of issue 6, fuzz_parse_target.py ran 120 s
#: (48,906 inputs, each under 6 policies) and fuzz_differential.py 120 s
#: (52,728 inputs, each under 9 policy pairs) without a failure. Until one
#: does, this holds hand-picked corner cases of the kind fuzzers find.
REGRESSIONS = [
    P(b"", id="empty input"),
    P(b"/%", id="lone percent at the end"),
    P(b"/%%", id="two percents"),
    P(b"/%\\x41", id="percent before a literal backslash escape"),
    P(b"/\\x%41", id="backslash x before an escape"),
    P(b"/a\\%2F", id="backslash before an encoded slash"),
    P(b"/%5C%5c\\", id="encoded and raw backslashes"),
    P(b"/?q=\\x%41&\\=\\%5C", id="raw backslashes in a browser query"),
    P(b"/?q=\\\\%41\\", id="escaped backslash before an escape in a query"),
    P(b"/;", id="lone semicolon"),
    P(b"/..;", id="dot dot semicolon"),
    P(b"/;..", id="semicolon dot dot"),
    P(b"/;=;=", id="empty matrix params"),
    P(b"http://[", id="unterminated IP-literal"),
    P(b"http://[]", id="empty IP-literal"),
    P(b"http://[v.]", id="empty IPvFuture"),
    P(b"http://h:", id="empty port"),
    P(b"HTTP://h?", id="absolute-form, empty query"),
    P(b"/?&&&=&=&", id="query of separators"),
    P(b"/?%", id="lone percent in query"),
    P(b"/?+=+", id="plus signs"),
    P(b"/\xed\xa0\x80", id="raw surrogate bytes"),
    P(b"/%ED%A0%80%ED%B0%80", id="surrogate pair, escaped"),
    P(b"/" + b"%" * 9000, id="too long, all percents"),
    P(b"/" + b"/" * 200, id="many empty segments"),
]


def check_verdict(raw: bytes | str, policy: Policy) -> None:
    """What must hold for any input: a Target of str pieces, or an InvalidTarget
    naming a known rule, with a position inside the input and a safe message.
    Any other exception propagates: that is the failure the fuzzer looks for."""
    try:
        target = parse_target(raw, policy)
    except InvalidTarget as error:
        size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
        assert error.rule in RULES
        assert error.component in ("target", "path", "query")
        assert error.index is None or error.index >= 0
        assert 0 <= error.offset <= size
        message = str(error)
        assert message.isascii()
        assert message.isprintable()  # no CR, LF or other control
        return
    assert isinstance(target, Target)
    assert target.raw == (raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    assert all(type(segment) is str for segment in target.segments)
    assert len(target.params) == len(target.segments)
    for pairs in (*target.params, target.query):
        assert all(type(name) is str and type(value) is str for name, value in pairs)
    assert isinstance(target.raw_path, bytes)
    assert target.raw_query is None or isinstance(target.raw_query, bytes)
    assert parse_target(raw, policy) == target  # the same input, the same verdict


def check_one(data: bytes) -> None:
    """Everything the fuzz target asserts about one input."""
    for policy in FUZZ_POLICIES:
        check_verdict(data, policy)
    # The same bytes as text (undecodable bytes become lone surrogates).
    check_verdict(data.decode("utf-8", "surrogateescape"), Policy())


def _constant(node: ast.AST) -> bytes | int | None:
    """The value of a bytes or int literal, or of ``+``/``*`` over them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes | int):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _constant(node.left), _constant(node.right)
        if isinstance(left, bytes) and isinstance(right, bytes) and isinstance(node.op, ast.Add):
            return left + right
        if isinstance(left, bytes) and isinstance(right, int) and isinstance(node.op, ast.Mult):
            return left * right if len(left) * right <= MAX_SEED else None
    return None


def seed_targets() -> list[bytes]:
    """Every bytes literal (and ``+``/``*`` of literals) in tests/test_target.py."""
    tree = ast.parse((HERE / "test_target.py").read_text(encoding="utf-8"))
    found = {value for node in ast.walk(tree) if isinstance(value := _constant(node), bytes)}
    return sorted(found, key=lambda seed: (len(seed), seed))


def test_seeds_come_from_the_truth_tables() -> None:
    seeds = seed_targets()
    assert len(seeds) > 150
    for expected in (b"/%C4rzteblatt", b"/..;jsessionid=1/x", b"/" + b"a" * 8192, b"/a" * 129):
        assert expected in seeds


def test_seed_corpus_replays() -> None:
    for seed in seed_targets():
        check_one(seed)


@pytest.mark.parametrize("data", REGRESSIONS)
def test_regression(data: bytes) -> None:
    check_one(data)


def test_other_errors_escape_the_oracle() -> None:
    # The oracle only catches InvalidTarget: any other error is a failure.
    with pytest.raises(TypeError):
        check_verdict(123, Policy())  # type: ignore[arg-type]
