"""What every fuzz input must satisfy, and the inputs fuzzing starts from.

``fuzz/fuzz_parse_target.py`` (atheris, run by ``tox -e fuzz``) calls
:func:`check_one` on every input it makes. It starts from the targets of the
truth tables in ``tests/test_target.py`` (:func:`seed_targets`, written out by
``fuzz/build_corpus.py``) and from ``CORNER_CASES``. Any input that ever makes
it fail goes into ``CORNER_CASES``, with the date and what it broke, so that
the default test run (tests/test_fuzz_regressions.py) replays it for good.

    >>> check_one(b"/caf%C3%A9/x?q=a+b")  # passes silently
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import CHOSEN, Parser
from urlguard import RULES, InvalidTarget, Policy, Target

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

# A verdict: the rule code of the rejection, or the segments and the query
# of the accepted Target.
Verdict = str | tuple[tuple[str, ...], tuple[tuple[str, str], ...]]
ROOT = ("",)

#: Hand-picked corner cases of the kind fuzzers find: P(bytes, verdict under
#: Policy(), verdict under Policy.browser(), id="what it tries"), each with the
#: verdict the rules (docs/rules.md) give it. Whatever else a case checks,
#: check_one must hold for it under every fuzz policy. An input that makes the
#: fuzzer fail joins them, its id saying what failed and when; none has yet.
#: The raw-char check of a component comes before any decoding, so a raw
#: backslash outranks the malformed escapes and encoded slashes around it;
#: the browser preset allows a raw backslash in the query only.
CORNER_CASES = [
    P(b"", "bad-form", "bad-form", id="empty input"),
    P(b"/%", "malformed-escape", "malformed-escape", id="lone percent at the end"),
    P(b"/%%", "malformed-escape", "malformed-escape", id="two percents"),
    P(b"/%\\x41", "raw-char", "raw-char", id="percent before a literal backslash escape"),
    P(b"/\\x%41", "raw-char", "raw-char", id="backslash x before an escape"),
    P(b"/a\\%2F", "raw-char", "raw-char", id="backslash before an encoded slash"),
    P(b"/%5C%5c\\", "raw-char", "raw-char", id="encoded and raw backslashes"),
    P(
        b"/?q=\\x%41&\\=\\%5C",
        "raw-char",
        (ROOT, (("q", "\\xA"), ("\\", "\\\\"))),  # no encoded-backslash rule in the query
        id="raw backslashes in a browser query",
    ),
    P(
        b"/?q=\\\\%41\\",
        "raw-char",
        (ROOT, (("q", "\\\\A\\"),)),
        id="escaped backslash before an escape in a query",
    ),
    P(b"/;", ((";",), ()), ((";",), ()), id="lone semicolon"),
    # '..' before the first ';' is a dot segment to servlet containers
    # (Tomcat's "..;/"), so the parser counts it as one (tests/test_target.py).
    P(b"/..;", "dot-segment", "dot-segment", id="dot dot semicolon"),
    P(b"/;..", ((";..",), ()), ((";..",), ()), id="semicolon dot dot"),
    P(b"/;=;=", ((";=;=",), ()), ((";=;=",), ()), id="empty matrix params"),
    P(b"http://[", "bad-host", "bad-host", id="unterminated IP-literal"),
    P(b"http://[]", "bad-host", "bad-host", id="empty IP-literal"),
    P(b"http://[v.]", "bad-host", "bad-host", id="empty IPvFuture"),
    P(b"http://h:", "bad-host", "bad-host", id="empty port"),  # allowed by RFC 3986, refused
    P(b"HTTP://h?", (ROOT, ()), (ROOT, ()), id="absolute-form, empty query"),
    P(
        b"/?&&&=&=&",
        (ROOT, (("", ""), ("", ""))),  # empty pieces skipped; "=" is a piece
        (ROOT, (("", ""), ("", ""))),
        id="query of separators",
    ),
    P(b"/?%", "malformed-escape", "malformed-escape", id="lone percent in query"),
    P(b"/?+=+", (ROOT, ((" ", " "),)), (ROOT, ((" ", " "),)), id="plus signs"),
    P(b"/\xed\xa0\x80", "raw-char", "raw-char", id="raw surrogate bytes"),
    P(b"/%ED%A0%80%ED%B0%80", "invalid-utf8", "invalid-utf8", id="surrogate pair, escaped"),
    P(b"/" + b"%" * 9000, "too-long", "too-long", id="too long, all percents"),
    # 201 segments, all but the last empty: counted before any is checked.
    P(b"/" + b"/" * 200, "too-many", "too-many", id="many empty segments"),
]


def check_verdict(parser: Parser, raw: bytes | str, policy: Policy) -> None:
    """What must hold for any input: a Target of str pieces, or an InvalidTarget
    naming a known rule, with a position inside the input and a safe message.
    Any other exception propagates: that is the failure the fuzzer looks for."""
    try:
        target = parser.parse_target(raw, policy)
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
    assert parser.parse_target(raw, policy) == target  # the same input, the same verdict


def check_one(data: bytes, parser: Parser = CHOSEN) -> None:
    """Everything the fuzz target asserts about one input, on ``parser``: the
    tests pass each implementation, the fuzz target none (the one chosen at
    import, which ``urlguard.parse_target`` is)."""
    for policy in FUZZ_POLICIES:
        check_verdict(parser, data, policy)
    # The same bytes as text (undecodable bytes become lone surrogates).
    check_verdict(parser, data.decode("utf-8", "surrogateescape"), Policy())


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
