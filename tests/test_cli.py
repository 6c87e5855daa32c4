"""The ``urlguard`` command: check, audit, encode, clean, pretty.

In-process through ``main([...])``, and as a real program: the installed
entry point and ``python -m urlguard``. Every log is generated here, in a
temporary directory.
"""

from __future__ import annotations

import fcntl
import gzip
import io
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import urlguard.cli
from conftest import Ran, run
from urlguard import RULES, Policy, parse_target
from urlguard.cli import main
from urlguard.cli.sources import CHUNK, MAX_LINE

P = pytest.param
ENTRY = Path(sys.executable).parent / "urlguard"
PROGRAMS = [
    P([str(ENTRY)], id="entry point"),
    P([sys.executable, "-m", "urlguard"], id="python -m urlguard"),
]
JSON_FIELDS = ["target", "ok", "rule", "segments", "query"]


def program(
    command: Sequence[str | bytes | os.PathLike[str]], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(list(command), input=stdin, capture_output=True, timeout=60, check=False)


def assert_one_line_error(err: str) -> None:
    assert "Traceback" not in err
    assert err.startswith("urlguard: error: ")
    assert err.endswith("\n")
    assert err.count("\n") == 1
    assert err.isascii()


def assert_usage_error(ran: Ran, says: str) -> None:
    """Exit status 2, nothing on stdout, and one line on stderr that says ``says``."""
    code, out, err = ran
    assert (code, out) == (2, "")
    assert_one_line_error(err)
    assert says in err


# --- check: verdicts ----------------------------------------------------------------------

# target, --policy, then the JSON verdict: rule, segments, query.
CHECK = [
    P("/caf%C3%A9/x?q=a+b", None, None, ["café", "x"], [["q", "a b"]], id="design example"),
    P("/", None, None, [""], [], id="root"),
    P("http://example.com/a?b=c", None, None, ["a"], [["b", "c"]], id="absolute-form"),
    P("/%C4rzteblatt", None, "invalid-utf8", None, None, id="latin-1 escape"),
    P("/a%2Fb", None, "encoded-slash", None, None, id="encoded slash"),
    P("/a/%2e%2E/b", None, "dot-segment", None, None, id="encoded dot segment"),
    P("/a%zz", None, "malformed-escape", None, None, id="malformed escape"),
    P("/a b", None, "raw-char", None, None, id="raw space"),
    P("/x#frag", None, "fragment", None, None, id="fragment"),
    P("*", None, "bad-form", None, None, id="asterisk-form"),
    P("/a[1]", None, "raw-char", None, None, id="bracket, strict"),
    P("/a[1]", "browser", None, ["a[1]"], [], id="bracket, browser preset"),
    P("/q?x={a}", "strict", "raw-char", None, None, id="brace in query, strict"),
    P("/q?x={a}", "browser", None, ["q"], [["x", "{a}"]], id="brace in query, browser"),
    P("/a/%E2%80%AE", None, "forbidden-char", None, None, id="decoded bidi control"),
]


@pytest.mark.parametrize(("target", "preset", "rule", "segments", "query"), CHECK)
def test_check_json_verdict(
    capsys: pytest.CaptureFixture[str],
    target: str,
    preset: str | None,
    rule: str | None,
    segments: list[str] | None,
    query: list[list[str]] | None,
) -> None:
    argv = ["check", "--json", *(["--policy", preset] if preset else []), target]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0 if rule is None else 1, "")
    [line] = out.splitlines()
    verdict = json.loads(line)
    assert list(verdict) == JSON_FIELDS
    assert verdict["ok"] is (rule is None)  # a JSON boolean, not 0 or 1
    assert verdict == {
        "target": target,
        "ok": rule is None,
        "rule": rule,
        "segments": segments,
        "query": query,
    }


def test_check_json_one_object_per_target_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    targets = ["/a", "/%C4", "/b?x=1", "/a/../b"]
    code, out, _ = run(capsys, "check", "--json", *targets)
    verdicts = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [v["target"] for v in verdicts] == targets
    assert [v["rule"] for v in verdicts] == [None, "invalid-utf8", None, "dot-segment"]
    assert verdicts[2]["query"] == [["x", "1"]]


EXIT_CODES = [
    P(["check", "/a", "/b"], 0, id="all pass"),
    P(["check", "/a", "/%zz"], 1, id="one rejected"),
    P(["check", "/%zz", "/%C4"], 1, id="all rejected"),
    P(["check", "--json", "/a"], 0, id="json, pass"),
    P(["check", "--json", "/%zz"], 1, id="json, rejected"),
    P(["check"], 2, id="no target"),
    P(["check", "--policy", "lenient", "/a"], 2, id="unknown preset"),
    P(["check", "--frobnicate", "/a"], 2, id="unknown option"),
    P([], 2, id="no command"),
    P(["frobnicate"], 2, id="unknown command"),
    P(["--help"], 0, id="help"),
    P(["check", "--help"], 0, id="check help"),
    P(["audit", "--help"], 0, id="audit help"),
]


@pytest.mark.parametrize(("argv", "code"), EXIT_CODES)
def test_check_exit_codes(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> None:
    assert run(capsys, *argv).code == code


def test_check_text_shows_decoded_pieces(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "/caf%C3%A9/x?q=a+b", "http://h:8080/p")
    assert code == 0
    assert out.splitlines() == [
        "ok      /caf%C3%A9/x?q=a+b",
        "        segments  ['café', 'x']",
        "        query     [('q', 'a b')]",
        "ok      http://h:8080/p",
        "        host      'h', port 8080",
        "        segments  ['p']",
    ]


# (--host, targets, config's allowed_hosts, exit code, the rule of each, or None)
HOST_CHECKS = [
    P("a.com", ["/x"], None, 0, [None], id="valid"),
    P("a b", ["/x", "/y"], None, 1, ["bad-host", "bad-host"], id="invalid: every target"),
    P("a.com", ["http://a.com/x", "http://b.com/x"], None, 1, [None, "bad-host"], id="agree"),
    P("a.com:80", ["http://a.com/x"], None, 0, [None], id="default port"),
    P("b.com", ["/x"], ["a.com"], 1, ["host-not-allowed"], id="not allowed"),
    P("x.a.com", ["/x"], ["*.a.com"], 0, [None], id="allowed below"),
    P("a.com", ["/x%zz"], None, 1, ["malformed-escape"], id="then the target"),
]


@pytest.mark.parametrize(("host", "targets", "allowed", "code", "rules"), HOST_CHECKS)
def test_check_host(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    host: str,
    targets: list[str],
    allowed: list[str] | None,
    code: int,
    rules: list[str | None],
) -> None:
    options = ["--host", host, "--json"]
    if allowed is not None:
        config = tmp_path / "urlguard.toml"
        config.write_text(f"allowed_hosts = {json.dumps(allowed)}\n", encoding="utf-8")
        options += ["--config", str(config)]
    exit_code, out, _ = run(capsys, "check", *options, *targets)
    assert exit_code == code
    assert [json.loads(line)["rule"] for line in out.splitlines()] == rules


def test_check_host_shows_the_caret_under_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--host", "a<b", "/x")
    assert code == 1
    first, caret, message = out.splitlines()
    assert first == "reject  a<b"
    assert caret == "         ^"
    assert message.startswith("        bad-host:")


CARETS = [
    P("/%C4rzteblatt", "invalid-utf8", 1, id="at the escape"),
    P("/ok/fine/a%zz", "malformed-escape", 10, id="malformed escape"),
    P("/a\x01b", "raw-char", 2, id="control shown escaped"),
    P("/a\\b/\x7f", "raw-char", 2, id="backslash shown doubled"),
    P("/" + "a" * 300 + "%zz" + "b" * 300, "malformed-escape", 301, id="long target, windowed"),
    P("/a/b\u202e/c", "raw-char", 4, id="raw bidi control"),
]


@pytest.mark.parametrize(("target", "rule", "offset"), CARETS)
def test_check_text_marks_the_offset(
    capsys: pytest.CaptureFixture[str], target: str, rule: str, offset: int
) -> None:
    code, out, _ = run(capsys, "check", target)
    assert code == 1
    shown, caret, message = out.splitlines()
    assert shown.startswith("reject  ")
    assert shown.isascii()
    assert shown.isprintable()
    assert caret.strip() == "^"
    column = caret.index("^")
    raw = target.encode("utf-8")
    expected = _escaped(raw[offset : offset + 1])
    assert shown[column : column + len(expected)] == expected
    assert message.strip().startswith(f"{rule}: ")
    assert f"byte offset {offset}" in message
    assert len(shown) < 8 + 4 * 130  # a window, not the whole 8 KiB target


def _escaped(raw: bytes) -> str:
    return "".join(
        "\\\\" if b == 0x5C else chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02X}" for b in raw
    )


@pytest.mark.parametrize(
    "target",
    [
        P("/a\u202eb", id="bidi control"),
        P("/a\x1b[31mred", id="terminal escape"),
        P("/a\r\nX-Injected: 1", id="CRLF"),
        P("/a/%E2%80%AE?x=\u2028", id="line separator"),
    ],
)
def test_check_never_prints_raw_control_characters(
    capsys: pytest.CaptureFixture[str], target: str
) -> None:
    for argv in (["check", target], ["check", "--json", target]):
        code, out, err = run(capsys, *argv)
        assert code == 1
        assert out.isascii()
        assert all(line.isprintable() for line in out.splitlines())
        assert err == ""


def test_check_decoded_text_is_escaped_for_display(capsys: pytest.CaptureFixture[str]) -> None:
    # U+200B is allowed by the default policy but invisible: shown escaped.
    code, out, _ = run(capsys, "check", "/a%E2%80%8Bb")
    assert code == 0
    assert "'a\\u200bb'" in out
    assert "\u200b" not in out


def test_check_undecodable_argument_bytes(tmp_path: Path) -> None:
    done = program([ENTRY, "check", b"/caf\xe9"])
    assert done.returncode == 1
    assert done.stderr == b""
    shown, caret, message = done.stdout.decode("ascii").splitlines()
    assert shown == "reject  /caf\\xE9"
    assert caret == " " * 12 + "^"
    assert message.strip().startswith("raw-char: ")
    done = program([ENTRY, "check", "--json", b"/caf\xe9"])
    verdict = json.loads(done.stdout)
    assert (verdict["ok"], verdict["rule"]) == (False, "raw-char")


# --- --policy and --config --------------------------------------------------------------

CONFIGS = [
    P("", None, "/a%2Fb", "encoded-slash", id="empty file is the strict policy"),
    P('encoded_slash = "keep"\n', None, "/a%2Fb", None, id="keeps encoded slash"),
    P('preset = "browser"\n', None, "/a[1]", None, id="browser preset in the file"),
    P('preset = "browser"\n', "strict", "/a[1]", None, id="the file's preset wins"),
    P('preset = "strict"\n', "browser", "/a[1]", "raw-char", id="file's strict preset wins"),
    P('encoded_slash = "keep"\n', "browser", "/a[1]/b%2Fc", None, id="policy gives the preset"),
    P('raw_path_extra = ""\n', "browser", "/a[1]", "raw-char", id="file's keys win over preset"),
    P('raw_path_extra = ""\n', "browser", "/q?x=[1]", None, id="other preset keys stay"),
    P("max_segments = 2\n", None, "/a/b/c", "too-many", id="limits"),
    P(
        '[routes."/files/"]\nencoded_slash = "keep"\n',
        None,
        "/files/a%2Fb",
        None,
        id="a route's policy applies under its prefix",
    ),
    P(
        '[routes."/files/"]\nencoded_slash = "keep"\n',
        None,
        "/echo/a%2Fb",
        "encoded-slash",
        id="the base policy applies elsewhere",
    ),
    P(
        '[routes."/files/"]\nencoded_slash = "keep"\n',
        None,
        "/%66iles/a%2Fb",
        None,
        id="prefixes match the decoded path, as the middleware does",
    ),
]


@pytest.mark.parametrize(("toml", "preset", "target", "rule"), CONFIGS)
def test_config_file(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    toml: str,
    preset: str | None,
    target: str,
    rule: str | None,
) -> None:
    config = tmp_path / "urlguard.toml"
    config.write_text(toml)
    argv = ["check", "--json", "--config", str(config), *(["--policy", preset] if preset else [])]
    code, out, err = run(capsys, *argv, target)
    assert (code, err) == (0 if rule is None else 1, "")
    assert json.loads(out)["rule"] == rule


def test_config_from_pyproject(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.urlguard]\nencoded_slash = "keep"\n')
    for preset in ([], ["--policy", "browser"]):
        code, out, _ = run(capsys, "check", "--json", "--config", str(pyproject), *preset, "/a%2Fb")
        assert (code, json.loads(out)["segments"]) == (0, ["a/b"])


BAD_CONFIGS = [
    P("encoded_slsh = 'keep'\n", "encoded_slsh", id="unknown key"),
    P("encoded_slash = 'maybe'\n", "encoded_slash", id="bad value"),
    P("max_length = 'long'\n", "max_length", id="bad type"),
    P("preset = 'lenient'\n", "preset", id="bad preset"),
    P("this is not toml\n", "TOML", id="not TOML"),
]


@pytest.mark.parametrize(("toml", "named"), BAD_CONFIGS)
def test_bad_config_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str, named: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    for command, operand in (("check", "/a"), ("audit", "-")):
        assert_usage_error(run(capsys, command, "--config", str(config), operand), named)


def test_missing_config_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "check", "--config", str(tmp_path / "nope.toml"), "/a")
    assert (code, out) == (2, "")
    assert_one_line_error(err)


def test_help_documents_config_precedence(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("check", "audit"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0
        flat = " ".join(out.split())
        assert "the file's keys win" in flat
        assert "exit status: 0" in flat


# --- audit: fixtures -------------------------------------------------------------------------

# Request lines as nginx and Apache write them into a log (escaped), with the
# verdict of the default policy on the target they received.
REQUESTS: list[tuple[bytes, str]] = [
    (b"GET / HTTP/1.1", "ok"),
    (b"GET /caf%C3%A9/x?q=a+b HTTP/1.1", "ok"),
    (b"POST /api/v1/users/12345/orders?limit=10&page=2 HTTP/2.0", "ok"),
    (b"OPTIONS * HTTP/1.1", "ok"),
    (b"GET http://example.com/a?b=c HTTP/1.1", "ok"),
    (b"GET /%C4rzteblatt HTTP/1.1", "invalid-utf8"),
    (b"GET /a%2Fb HTTP/1.0", "encoded-slash"),
    (b"GET /a/../b HTTP/1.1", "dot-segment"),
    (b"GET //a HTTP/1.1", "empty-segment"),
    (b"GET /a%zz HTTP/1.1", "malformed-escape"),
    (b"GET /caf\\xC3\\xA9 HTTP/1.1", "raw-char"),  # nginx: raw UTF-8 bytes
    (b"GET /a\\x22b HTTP/1.1", "raw-char"),  # nginx: a raw '"'
    (b'GET /a\\"b HTTP/1.1', "raw-char"),  # Apache: a raw '"'
    (b"GET /a\\\\b HTTP/1.1", "raw-char"),  # Apache: a raw '\'
    (b"GET /a\\tb HTTP/1.1", "raw-char"),  # Apache: a raw TAB
    (b"GET /a b HTTP/1.1", "raw-char"),  # a raw space: still a target
    (b"CONNECT example.com:443 HTTP/1.1", "bad-form"),
    (b"GET /x#y HTTP/1.1", "fragment"),
    (b"-", "unparseable"),  # Apache: no request line received
    (b"", "unparseable"),
    (b"GET /", "unparseable"),  # HTTP/0.9: no protocol
    (b"GET / FTP/1.0", "unparseable"),
    (b"\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xFC\\x03\\x03", "unparseable"),  # TLS hello
]
# The first three distinct rejected raw-char targets, escaped for display:
# the log escapes were undone, so '"' is itself and bytes are \xHH.
RAW_CHAR_EXAMPLES = ["/caf\\xC3\\xA9", '/a"b', "/a\\\\b"]


def combined(request: bytes, n: int = 0) -> bytes:
    return (
        b'192.0.2.%d - - [10/Oct/2024:13:55:36 +0000] "%b" 200 512 '
        b'"https://example.com/" "Mozilla/5.0 (X11; Linux x86_64) \\"quoted\\""'
        % (n % 250, request)
    )


def common(request: bytes, n: int = 0) -> bytes:
    return b'192.0.2.%d - frank [10/Oct/2024:13:55:36 -0700] "%b" 404 -' % (n % 250, request)


def log(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def expected(verdicts: list[str]) -> dict[str, object]:
    tally = Counter(verdicts)
    rules = {rule: tally[rule] for rule in RULES if tally[rule]}
    return {
        "lines": len(verdicts),
        "parsed": len(verdicts) - tally["unparseable"],
        "unparseable": tally["unparseable"],
        "rejected": sum(rules.values()),
        "rules": rules,
    }


def audit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code, out, err = run(capsys, "audit", "--json", *argv)
    assert err == ""
    result: dict[str, object] = json.loads(out)
    return code, result


def totals(result: dict[str, object]) -> dict[str, object]:
    return {key: result[key] for key in ("lines", "parsed", "unparseable", "rejected", "rules")}


@pytest.mark.parametrize(
    ("make", "fmt"),
    [
        P(combined, "auto", id="combined, auto"),
        P(combined, "combined", id="combined"),
        P(combined, "common", id="combined read as common"),
        P(common, "auto", id="common, auto"),
        P(common, "common", id="common"),
    ],
)
def test_audit_log_formats(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make: Callable[[bytes, int], bytes],
    fmt: str,
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([make(request, n) for n, (request, _) in enumerate(REQUESTS)]))
    code, result = audit_json(capsys, "--format", fmt, str(path))
    want = expected([verdict for _, verdict in REQUESTS])
    assert code == 1
    assert totals(result) == want
    examples = result["examples"]
    assert isinstance(examples, dict)
    assert examples["raw-char"] == RAW_CHAR_EXAMPLES
    assert examples["invalid-utf8"] == ["/%C4rzteblatt"]
    assert set(examples) == {verdict for _, verdict in REQUESTS} - {"ok", "unparseable"}


def test_audit_json_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([combined(b"GET /a%2Fb HTTP/1.1"), combined(b"GET / HTTP/1.1")] * 2))
    code, result = audit_json(capsys, str(path))
    assert code == 1
    assert {"lines", "rejected", "rules", "parsed", "unparseable", "examples"} <= set(result)
    assert result["lines"] == 4
    assert result["rejected"] == 2
    assert result["rules"] == {"encoded-slash": 2}
    assert result["examples"] == {"encoded-slash": ["/a%2Fb"]}
    assert result["share"] == {"encoded-slash": 0.5}


def test_audit_applies_routes_like_the_middleware(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "urlguard.toml"
    config.write_text('[routes."/files/"]\nencoded_slash = "keep"\n')
    path = tmp_path / "access.log"
    path.write_bytes(
        log([combined(b"GET /files/a%2Fb HTTP/1.1"), combined(b"GET /x/a%2Fb HTTP/1.1")])
    )
    code, result = audit_json(capsys, "--config", str(config), str(path))
    assert code == 1
    assert (result["lines"], result["rejected"]) == (2, 1)
    assert result["examples"] == {"encoded-slash": ["/x/a%2Fb"]}


def test_audit_unescapes_before_judging(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Under the browser preset a raw '\' is fine in the query but a raw '"' is
    # not: only undoing nginx's \x22 and Apache's \" finds the quote.
    path = tmp_path / "access.log"
    lines = [
        combined(b"GET /q?a=\\x22 HTTP/1.1"),  # nginx, '"'
        combined(b'GET /q?a=\\" HTTP/1.1'),  # Apache, '"'
        combined(b"GET /q?a=\\x5C HTTP/1.1"),  # nginx, '\'
        combined(b"GET /q?a=\\\\ HTTP/1.1"),  # Apache, '\'
        combined(b"GET /q?a=\\x5Cx22 HTTP/1.1"),  # nginx, the four bytes \x22
    ]
    path.write_bytes(log(lines))
    code, result = audit_json(capsys, "--policy", "browser", str(path))
    assert code == 1
    assert result["rules"] == {"raw-char": 2}
    assert result["examples"] == {"raw-char": ['/q?a="']}


@pytest.mark.parametrize(
    "line",
    [
        P(
            b'example.com:443 192.0.2.1 - - [10/Oct/2024:13:55:36 +0000] "GET /%C4 HTTP/1.1" 200 5 '
            b'"-" "curl/8"',
            id="vhost_combined prefix",
        ),
        P(
            b'192.0.2.1 - - [10/Oct/2024:13:55:36 +0000] "GET /%C4 HTTP/1.1" 200 5 "-" "curl/8" '
            b'"198.51.100.7" rt=0.003',
            id="fields appended",
        ),
        P(
            b'192.0.2.1 - - [10/Oct/2024:13:55:36 +0000] "GET /%C4 HTTP/1.1" 200 5 "-" "curl/8"\r',
            id="CRLF line end",
        ),
    ],
)
def test_audit_log_variants(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: bytes
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([line, line]))
    for fmt in ("auto", "combined", "common"):
        code, result = audit_json(capsys, "--format", fmt, str(path))
        assert (code, totals(result)) == (1, expected(["invalid-utf8"] * 2))


TARGETS: list[tuple[bytes, str]] = [
    (b"/", "ok"),
    (b"/caf%C3%A9?q=a+b", "ok"),
    (b"https://example.com", "ok"),
    (b"/%C4rzteblatt", "invalid-utf8"),
    (b"/a/./b", "dot-segment"),
    (b"/caf\xc3\xa9", "raw-char"),  # a plain list holds the bytes themselves
    (b"/a\\x22", "raw-char"),  # ...and is not unescaped: this is a raw '\'
    (b"*", "bad-form"),
    (b"", "unparseable"),
]


@pytest.mark.parametrize("fmt", ["auto", "targets"])
@pytest.mark.parametrize("newline", [P(b"\n", id="LF"), P(b"\r\n", id="CRLF")])
def test_audit_plain_targets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str, newline: bytes
) -> None:
    path = tmp_path / "targets.txt"
    path.write_bytes(b"".join(target + newline for target, _ in TARGETS))
    code, result = audit_json(capsys, "--format", fmt, str(path))
    assert code == 1
    assert totals(result) == expected([verdict for _, verdict in TARGETS])
    assert result["examples"] == {
        "invalid-utf8": ["/%C4rzteblatt"],
        "dot-segment": ["/a/./b"],
        "raw-char": ["/caf\\xC3\\xA9", "/a\\\\x22"],
        "bad-form": ["*"],
    }


def test_audit_counts_repeats_and_keeps_three_distinct_examples(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    targets = [b"/a%%2F%d" % (n % 5) for n in range(1000)] + [b"/fine"] * 3000
    path = tmp_path / "targets.txt"
    path.write_bytes(log(targets))
    code, result = audit_json(capsys, str(path))
    assert code == 1
    assert totals(result) == expected(["encoded-slash"] * 1000 + ["ok"] * 3000)
    assert result["examples"] == {"encoded-slash": ["/a%2F0", "/a%2F1", "/a%2F2"]}
    assert result["share"] == {"encoded-slash": 0.25}


def test_audit_text_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    lines = [combined(b"GET /%C4rzteblatt HTTP/1.1")] * 3 + [combined(b"GET /ok HTTP/1.1")] * 6
    path.write_bytes(log([*lines, combined(b"-"), combined(b"GET /caf\\xC3\\xA9 HTTP/1.1")]))
    code, out, err = run(capsys, "audit", str(path))
    assert (code, err) == (1, "")
    assert out.isascii()
    words = [line.split() for line in out.splitlines()]
    assert ["lines", "11"] in words
    assert ["parsed", "10"] in words
    assert ["unparseable", "1"] in words
    assert ["rejected", "4", "40.000%"] in words
    assert ["invalid-utf8", "3", "30.000%"] in words
    assert ["raw-char", "1", "10.000%"] in words
    assert ["/%C4rzteblatt"] in words
    assert ["/caf\\xC3\\xA9"] in words
    rules = [w[0] for w in words if w and w[0] in RULES]
    assert rules == ["invalid-utf8", "raw-char"]  # most frequent first


def test_audit_text_report_shows_unparseable_lines_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(
        log([combined(b"GET / HTTP/1.1"), b"\x1b]0;owned\x07 not a log line", combined(b"-")])
    )
    code, out, err = run(capsys, "audit", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines()[3:6] == [
        "unparseable             2",
        "    \\x1B]0;owned\\x07 not a log line",
        "    -",
    ]


def test_audit_text_report_all_clear(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([common(b"GET /a HTTP/1.1")] * 3))
    code, out, _ = run(capsys, "audit", str(path))
    assert code == 0
    assert "no request would be rejected" in out


# The text report shows at most 120 characters of an escaped example, cut
# between display pieces ('\xHH', '\\' or one character), never inside one.
# Each example starts with these 116 characters, then reaches the limit.
HEAD = b"/" + b"a" * 115
SHOWN = "/" + "a" * 115
EXAMPLE_CUTS = [
    P(HEAD + b"bc\\", SHOWN + "bc\\\\", id="fits exactly, no cut"),
    P(HEAD + b"bcdef\xc3", SHOWN + "bcde...", id="cut between plain characters"),
    P(HEAD + b"\xc3\xa9", SHOWN + "\\xC3...", id="'\\xHH' ends at the limit"),
    P(HEAD + b"b\xc3\xa9", SHOWN + "b...", id="'\\xHH' straddles, 1 past"),
    P(HEAD + b"bc\xc3\xa9", SHOWN + "bc...", id="'\\xHH' straddles, 2 past"),
    P(HEAD + b"bcd\xc3\xa9", SHOWN + "bcd...", id="'\\xHH' straddles, 3 past"),
    P(HEAD + b"bc\\d", SHOWN + "bc\\\\...", id="'\\\\' ends at the limit"),
    P(HEAD + b"bcd\\", SHOWN + "bcd...", id="'\\\\' straddles"),
]


@pytest.mark.parametrize(("target", "shown"), EXAMPLE_CUTS)
def test_audit_text_report_cuts_examples_between_escapes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: bytes, shown: str
) -> None:
    path = tmp_path / "targets.txt"
    path.write_bytes(log([target]))
    code, out, _ = run(capsys, "audit", "--format", "targets", str(path))
    assert code == 1
    [example] = [line[4:] for line in out.splitlines() if line.startswith("    ")]
    assert example == shown
    assert len(example.removesuffix("...")) <= 120


AUDIT_EXIT_CODES = [
    P([b"/a", b"/b"], [], 0, id="all pass"),
    P([b"/a", b"/%zz"], [], 1, id="one rejected"),
    P([b"/a", b""], [], 0, id="blank lines are not rejections"),
    P([], [], 2, id="empty file: nothing was audited"),
    P([b""] * 3, [], 2, id="blank lines only: no line parses"),
    P([b"/a[1]"], [], 1, id="strict rejects"),
    P([b"/a[1]"], ["--policy", "browser"], 0, id="browser accepts"),
    P([b"/a"], ["--format", "apache"], 2, id="unknown format"),
    P([b"/a"], ["--policy", "lenient"], 2, id="unknown preset"),
]


@pytest.mark.parametrize(("targets", "options", "code"), AUDIT_EXIT_CODES)
def test_audit_exit_codes(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    targets: list[bytes],
    options: list[str],
    code: int,
) -> None:
    path = tmp_path / "targets.txt"
    path.write_bytes(log(targets))
    assert run(capsys, "audit", *options, str(path)).code == code


def test_audit_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "audit").code == 2


def test_audit_adds_up_several_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.txt"
    first.write_bytes(log([combined(b"GET /%C4 HTTP/1.1"), combined(b"GET / HTTP/1.1")]))
    second.write_bytes(log([b"/%C4", b"/a/../b", b"/"]))  # same bytes, other format
    code, result = audit_json(capsys, str(first), str(second))
    assert code == 1
    assert totals(result) == expected(["invalid-utf8", "ok", "invalid-utf8", "dot-segment", "ok"])


# --- audit: gzip and standard input ------------------------------------------------------------


def _mixed_log() -> tuple[bytes, dict[str, object]]:
    lines = [combined(request, n) for n, (request, _) in enumerate(REQUESTS)]
    return log(lines * 3), expected([verdict for _, verdict in REQUESTS] * 3)


@pytest.mark.parametrize(
    ("name", "pack"),
    [
        P("access.log.gz", gzip.compress, id="gz"),
        P("access.log", gzip.compress, id="gzip without .gz name"),
        P(
            "access.log.gz",
            lambda data: gzip.compress(data[:999]) + gzip.compress(data[999:]),
            id="two gzip members",
        ),
        P("access.log.gz", lambda data: data, id="plain with .gz name"),
    ],
)
def test_audit_gzip(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    name: str,
    pack: Callable[[bytes], bytes],
) -> None:
    data, want = _mixed_log()
    path = tmp_path / name
    path.write_bytes(pack(data))
    code, result = audit_json(capsys, str(path))
    assert (code, totals(result)) == (1, want)


@pytest.mark.parametrize("command", PROGRAMS)
@pytest.mark.parametrize("pack", [P(lambda d: d, id="plain"), P(gzip.compress, id="gzip")])
def test_audit_stdin(command: list[str], pack: Callable[[bytes], bytes]) -> None:
    data, want = _mixed_log()
    done = program([*command, "audit", "--json", "-"], stdin=pack(data))
    assert (done.returncode, done.stderr) == (1, b"")
    assert totals(json.loads(done.stdout)) == want


@pytest.mark.parametrize("suggesting", [P([], id="audit"), P(["--suggest"], id="suggest")])
@pytest.mark.parametrize("size", [P(5 << 19, id="2.5 MiB"), P(3 << 20, id="3 MiB")])
def test_audit_long_line_is_unparseable_not_fatal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, size: int, suggesting: list[str]
) -> None:
    path = tmp_path / "access.log"
    huge = combined(b"GET /" + b"a" * size + b" HTTP/1.1")
    path.write_bytes(log([combined(b"GET /%zz HTTP/1.1"), huge, combined(b"GET / HTTP/1.1")]))
    code, result = audit_json(capsys, *suggesting, str(path))
    assert (code, totals(result)) == (1, expected(["malformed-escape", "unparseable", "ok"]))


@pytest.mark.parametrize(
    ("before", "length", "verdict"),
    [
        P(0, MAX_LINE, "too-long", id="longest line kept"),
        P(0, MAX_LINE + 1, "unparseable", id="one byte more: dropped"),
        P(CHUNK // 2, MAX_LINE, "too-long", id="longest line across a chunk boundary"),
        P(CHUNK // 2, MAX_LINE + 1, "unparseable", id="dropped across a chunk boundary"),
        P(CHUNK - 3, 3 * MAX_LINE, "unparseable", id="spanning three chunks"),
    ],
)
def test_audit_line_length_limit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, before: int, length: int, verdict: str
) -> None:
    # Short lines, about `before` bytes of them, put the long line where chunks split.
    path = tmp_path / "targets.txt"
    short = [b"/" + b"a" * 62] * (before // 64)
    path.write_bytes(log([*short, b"/" + b"b" * (length - 1), b"/%zz"]))
    code, result = audit_json(capsys, "--format", "targets", str(path))
    want = expected(["ok"] * len(short) + [verdict, "malformed-escape"])
    assert (code, totals(result)) == (1, want)


def _big_log() -> tuple[bytes, dict[str, object]]:
    """Over 3 MiB, so that lines straddle the chunks the log is read in."""
    lines = [combined(request, n) for n, (request, _) in enumerate(REQUESTS)] * 1000
    assert len(log(lines)) > 3 * CHUNK
    return log(lines), expected([verdict for _, verdict in REQUESTS] * 1000)


@pytest.mark.parametrize("pack", [P(lambda d: d, id="plain"), P(gzip.compress, id="gzip")])
def test_audit_big_log_counts_every_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pack: Callable[[bytes], bytes]
) -> None:
    data, want = _big_log()
    path = tmp_path / "access.log"
    path.write_bytes(pack(data))
    code, result = audit_json(capsys, str(path))
    assert (code, totals(result)) == (1, want)
    done = program([ENTRY, "audit", "--json", "-"], stdin=pack(data))  # read as a pipe
    assert (done.returncode, totals(json.loads(done.stdout))) == (1, want)


# --- audit: one bad line is one unparseable line -----------------------------------------------

OK_LINE = combined(b"GET /a HTTP/1.1")
BAD_LINES = [
    P(
        OK_LINE[:40] + b"\0" + OK_LINE[40:],
        "[10/Oct/2024:13:55:36 +000\\x000]",
        id="NUL",
    ),
    P(b"\x1b[2J" + OK_LINE, "\\x1B[2J192.0.2.0", id="ANSI escape before the line"),
    P(
        OK_LINE.replace(b"Mozilla", b"Moz\x1b]0;x\x07illa"),
        "Moz\\x1B]0;x\\x07illa",
        id="OSC in the agent",
    ),
    P(OK_LINE.replace(b" 200 ", b"\r 200 "), '/a HTTP/1.1"\\x0D 200', id="a CR inside the line"),
    P(OK_LINE.replace(b"GET /a", b"GET /\xc3\x28"), None, id="invalid UTF-8: still a line"),
    P(OK_LINE.replace(b"HTTP/1.1", b"HTTP/1.1\x7f"), "HTTP/1.1\\x7F", id="DEL"),
]


@pytest.mark.parametrize(("bad", "shown"), BAD_LINES)
@pytest.mark.parametrize("suggesting", [P([], id="audit"), P(["--suggest"], id="suggest")])
def test_a_control_byte_makes_only_its_line_unparseable(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    bad: bytes,
    shown: str | None,
    suggesting: list[str],
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([OK_LINE, bad, combined(b"GET /%zz HTTP/1.1"), OK_LINE]))
    code, result = audit_json(capsys, *suggesting, str(path))
    if shown is None:  # bytes past 0x7F are text a log may hold: judged
        assert totals(result) == expected(["ok", "raw-char", "malformed-escape", "ok"])
        return
    assert (code, totals(result)) == (1, expected(["ok", "unparseable", "malformed-escape", "ok"]))
    examples = result["unparseable_examples"]
    assert isinstance(examples, list)
    [example] = examples
    assert isinstance(example, str)
    assert shown in example
    assert example.isascii()
    assert example.isprintable()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        P(log([b""] * 3), "3 lines read, 0 parsed, 3 skipped", id="blank lines only"),
        P(
            log([b"/a", b"\0\0\0", b"/b"]).replace(b"/", b"\0"),
            "binary data",
            id="NUL bytes and no target",
        ),
        P(b"", "the input is empty", id="empty"),
    ],
)
@pytest.mark.parametrize(
    "options", [P([], id="text"), P(["--json"], id="json"), P(["--suggest"], id="suggest")]
)
def test_audit_says_so_when_no_line_parses(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: bytes,
    says: str,
    options: list[str],
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(content)
    assert_usage_error(run(capsys, "audit", *options, str(path)), says)


def test_audit_no_line_parses_in_the_log_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([combined(b"-"), combined(b"GET /"), combined(b"")]))
    code, out, err = run(capsys, "audit", str(path))
    assert (code, out) == (2, "")
    assert "no line could be read as a request: 3 lines read, 0 parsed, 3 skipped; e.g. -" in err


def test_audit_summary_shows_lines_read_parsed_and_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([OK_LINE, b"junk", OK_LINE]))
    code, out, _ = run(capsys, "audit", str(path))
    assert code == 0
    assert out.splitlines()[1:4] == [
        "lines                   3",
        "parsed                  2",
        "unparseable             1",
    ]
    code, out, _ = run(capsys, "audit", "--suggest", str(path))
    assert "# Lines read: 3; parsed: 2; skipped (not parsed): 1.\n" in out


def test_audit_gzip_bomb_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """64 MiB of zeros in 64 KiB of gzip: one line of megabytes, dropped
    without keeping it, and the real lines after it counted."""
    bomb = gzip.compress(b"\0" * (64 << 20) + b"\n" + log([OK_LINE] * 20), compresslevel=9)
    assert len(bomb) < 128 << 10
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(bomb)
    for options in ([], ["--suggest"]):
        code, result = audit_json(capsys, *options, str(path))
        assert (code, totals(result)) == (0, expected(["unparseable"] + ["ok"] * 20))


# --- audit: bad input --------------------------------------------------------------------------


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    data, _ = _mixed_log()
    packed = gzip.compress(data)
    corrupt = bytearray(packed)
    corrupt[len(corrupt) // 2] ^= 0xFF
    files = {
        "binary.log": bytes(range(256)) * 64,
        "binary-no-nul.log": bytes(range(1, 256)) * 64,
        "truncated.log.gz": packed[: len(packed) // 2],
        "corrupt.log.gz": bytes(corrupt),
        "gzip-binary.log.gz": gzip.compress(bytes(range(256)) * 64),
        "wrong-format.log": log([common(b"GET / HTTP/1.1")] * 3),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    return {
        "binary garbage": (["binary.log"], "binary data"),
        "binary garbage without NUL": (["binary-no-nul.log"], "not an access log"),
        "truncated gzip": (["truncated.log.gz"], "truncated gzip"),
        "corrupt gzip": (["corrupt.log.gz"], "not valid gzip"),
        "binary inside gzip": (["gzip-binary.log.gz"], "binary data"),
        "missing file": (["missing.log"], "No such file"),
        "a directory": (["."], "cannot read"),
        "common log read as combined": (["--format", "combined", "wrong-format.log"], "combined"),
    }


BAD_INPUTS = [
    "binary garbage",
    "binary garbage without NUL",
    "truncated gzip",
    "corrupt gzip",
    "binary inside gzip",
    "missing file",
    "a directory",
    "common log read as combined",
]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_audit_bad_input_in_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    argv, says = _bad_inputs(tmp_path)[case]
    monkeypatch.chdir(tmp_path)
    assert_usage_error(run(capsys, "audit", *argv), says)


@pytest.mark.parametrize("command", PROGRAMS)
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_audit_bad_input_as_a_program(command: list[str], tmp_path: Path, case: str) -> None:
    argv, says = _bad_inputs(tmp_path)[case]
    done = subprocess.run(
        [*command, "audit", *argv], capture_output=True, timeout=60, cwd=tmp_path, check=False
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert_one_line_error(done.stderr.decode("ascii"))
    assert says in done.stderr.decode()


def test_audit_bad_file_name_is_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "audit", str(tmp_path / "no\nsuch\u202efile.log"))
    assert code == 2
    assert_one_line_error(err)
    assert "no\\x0Asuch\\xE2\\x80\\xAEfile.log" in err


def test_audit_binary_stdin() -> None:
    done = program([ENTRY, "audit", "-"], stdin=bytes(range(256)) * 64)
    assert done.returncode == 2
    assert_one_line_error(done.stderr.decode("ascii"))
    assert b"<stdin>" in done.stderr


# --- audit: hosts (Apache vhost_combined) -------------------------------------------------------


def vhost(host: bytes, request: bytes = b"GET / HTTP/1.1", n: int = 0, status: int = 200) -> bytes:
    """A line of Apache's vhost_combined: "%v:%p %h %l %u %t \"%r\" %>s %O ..."."""
    return host + b" " + combined(request, n).replace(b" 200 512 ", b" %d 512 " % status, 1)


# The logged %v:%p field, as Apache writes it (escaped), and the verdict of
# the host grammar with no allow-list.
VHOSTS: list[tuple[bytes, str]] = [
    (b"example.com:443", "ok"),
    (b"www.example.com:80", "ok"),
    (b"EXAMPLE.com.:80", "ok"),  # any case, one trailing dot
    (b"192.0.2.10:8080", "ok"),
    (b"[2001:db8::1]:443", "ok"),
    (b"xn--caf-dma.example:443", "ok"),
    (b"evil_host:80", "ok"),  # '_' is a letter to the grammar (RFC 2181 section 11)
    (b"example.com", "ok"),  # no port: Apache always logs one, the grammar needs none
    (b"0x7f.1:80", "bad-host"),  # a WHATWG parser reads 127.0.0.1
    (b"0177.0.0.1:80", "bad-host"),
    (b"2130706433:80", "bad-host"),
    (b"256.0.0.1:80", "bad-host"),
    (b"example.com:65535", "ok"),
    (b"example.com:65536", "bad-host"),  # a port past 65535
    (b"example.com:99999", "bad-host"),
    (b"example.com:080", "bad-host"),  # a leading zero
    (b"example.com:", "bad-host"),  # an empty port
    (b":80", "bad-host"),
    (b"-", "bad-host"),  # a first field that is no host at all
    (b"[0::0::0]:80", "bad-host"),
    (b"[fe80::1%25eth0]:80", "bad-host"),  # no zone identifier
    (b"ex%41mple.com:80", "bad-host"),  # no escapes
    (b"a\\x01b:80", "bad-host"),  # Apache's escape of a control byte
    (b"caf\\xC3\\xA9.example:80", "bad-host"),  # Apache's escape of UTF-8: not an A-label
    (b"user@example.com:80", "bad-host"),
    (b"-example.com:80", "bad-host"),
]


@pytest.mark.parametrize("fmt", ["auto", "vhost_combined"])
def test_audit_checks_the_logged_host(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([vhost(host, n=n) for n, (host, _) in enumerate(VHOSTS)]))
    code, result = audit_json(capsys, "--format", fmt, str(path))
    assert code == 1
    assert totals(result) == expected([verdict for _, verdict in VHOSTS])
    assert result["formats"] == ["vhost_combined"]
    assert result["hosts_checked"] is True
    assert result["examples"] == {"bad-host": ["0x7f.1:80", "0177.0.0.1:80", "2130706433:80"]}


@pytest.mark.parametrize(("host", "verdict"), [P(h, v, id=h.decode()) for h, v in VHOSTS])
def test_audit_host_truth_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, host: bytes, verdict: str
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([vhost(host)]))
    code, result = audit_json(capsys, "--format", "vhost_combined", str(path))
    assert totals(result) == expected([verdict])
    assert code == (0 if verdict == "ok" else 1)
    if verdict != "ok":
        shown = host.decode("ascii").replace("\\", "\\\\")  # display() doubles a backslash
        assert result["examples"] == {verdict: [shown]}


@pytest.mark.parametrize(
    ("line", "verdict"),
    [
        # The field ends at the first space: the host is "a", and "b:80"
        # one of the fields before [time] (%u may hold spaces).
        P(vhost(b"a b:80"), "ok", id="a space ends the host field"),
        # A quote (Apache writes \") cannot be in the field: not this format.
        P(vhost(b'a\\"b:80'), "unparseable", id="an escaped quote in the host field"),
        # Too few fields before [time]: a combined line, not a vhost_combined one.
        P(combined(b"GET / HTTP/1.1"), "unparseable", id="a combined line"),
        P(vhost(b"0x7f.1:80", b"-"), "unparseable", id="a bad host without a request"),
        P(vhost(b"example.com:443", b"-"), "unparseable", id="a host without a request"),
        # The guard checks the host first: one line, one rule.
        P(vhost(b"0x7f.1:80", b"GET /a%2Fb HTTP/1.1"), "bad-host", id="bad host and target"),
        P(vhost(b"example.com:443", b"GET /a%2Fb HTTP/1.1"), "encoded-slash", id="bad target"),
        P(vhost(b"example.com:443", b"OPTIONS * HTTP/1.1"), "ok", id="OPTIONS *"),
    ],
)
def test_audit_vhost_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: bytes, verdict: str
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([line, vhost(b"example.com:443")]))
    code, result = audit_json(capsys, "--format", "vhost_combined", str(path))
    assert totals(result) == expected([verdict, "ok"])
    assert code == (0 if verdict in ("ok", "unparseable") else 1)


def test_audit_no_line_in_vhost_combined_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([combined(b"GET / HTTP/1.1")] * 3))
    assert_usage_error(
        run(capsys, "audit", "--format", "vhost_combined", str(path)),
        "no line is in the vhost_combined log format ('%v:%p %h %l %u' and",
    )


ALLOWED = [
    P(b"example.com:443", "ok", id="an exact name"),
    P(b"EXAMPLE.COM.:8443", "ok", id="any case, a trailing dot, any port"),
    P(b"api.example.org:443", "ok", id="a subdomain of a wildcard"),
    P(b"example.org:443", "host-not-allowed", id="the wildcard's own name"),
    P(b"other.test:443", "host-not-allowed", id="an allow-list miss"),
    P(b"evil_host:80", "host-not-allowed", id="a valid name outside the list"),
    P(b"0x7f.1:80", "bad-host", id="the grammar first"),
    P(b"example.com:99999", "bad-host", id="a bad port of an allowed name"),
]


@pytest.mark.parametrize(("host", "verdict"), ALLOWED)
def test_audit_allowed_hosts_from_the_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, host: bytes, verdict: str
) -> None:
    config = tmp_path / "urlguard.toml"
    config.write_text('allowed_hosts = ["example.com", "*.example.org"]\n')
    path = tmp_path / "access.log"
    path.write_bytes(log([vhost(host, b"GET /a%2Fb HTTP/1.1"), vhost(b"example.com:443")]))
    code, result = audit_json(capsys, "--config", str(config), str(path))
    want = "encoded-slash" if verdict == "ok" else verdict
    assert totals(result) == expected([want, "ok"])
    assert code == 1


def test_audit_allowed_hosts_apply_to_logged_hosts_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "urlguard.toml"
    config.write_text('allowed_hosts = ["example.com"]\n')
    path = tmp_path / "access.log"
    path.write_bytes(log([combined(b"GET / HTTP/1.1")] * 2))
    code, result = audit_json(capsys, "--config", str(config), str(path))
    assert code == 0
    assert totals(result) == expected(["ok", "ok"])
    assert result["hosts_checked"] is False


@pytest.mark.parametrize(
    ("make", "fmt", "shown"),
    [
        P(combined, "auto", "combined", id="combined, auto"),
        P(combined, "combined", "combined", id="combined"),
        P(common, "common", "common", id="common"),
    ],
)
def test_audit_says_when_the_format_logs_no_host(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make: Callable[[bytes, int], bytes],
    fmt: str,
    shown: str,
) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log([make(b"GET /a%2Fb HTTP/1.1", 0), make(b"GET / HTTP/1.1", 1)]))
    code, out, err = run(capsys, "audit", "--format", fmt, str(path))
    assert (code, err) == (1, "")
    hosts = [line for line in out.splitlines() if line.startswith("hosts ")]
    assert hosts == [f"hosts        not in this log format ({shown}), not checked"]
    code, result = audit_json(capsys, "--format", fmt, str(path))
    assert result["hosts_checked"] is False
    assert result["formats"] == [shown]
    # The pinned fields are those of any audit.
    assert (result["lines"], result["rejected"], result["rules"]) == (2, 1, {"encoded-slash": 1})


def test_audit_targets_log_no_host(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "targets.txt"
    path.write_bytes(b"/a\n/b%2Fc\n")
    code, out, _ = run(capsys, "audit", str(path))
    assert code == 1
    assert "hosts        not in this log format (targets), not checked" in out.splitlines()


def test_audit_text_report_of_hosts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hosts = tmp_path / "vhosts.log"
    hosts.write_bytes(log([vhost(b"0x7f.1:80"), vhost(b"example.com:443")]))
    code, out, _ = run(capsys, "audit", str(hosts))
    assert code == 1
    lines = out.splitlines()
    assert "hosts        checked (the logged %v:%p)" in lines
    rule = next(n for n, line in enumerate(lines) if line.startswith("bad-host "))
    assert lines[rule + 1] == "    0x7f.1:80"
    plain = tmp_path / "access.log"
    plain.write_bytes(log([combined(b"GET / HTTP/1.1")]))
    code, out, _ = run(capsys, "audit", str(hosts), str(plain))
    assert (
        "hosts        checked in vhost_combined input only; not in combined, not checked"
        in out.splitlines()
    )
    code, result = audit_json(capsys, str(hosts), str(plain))
    assert result["formats"] == ["combined", "vhost_combined"]
    assert result["hosts_checked"] is False


def _served_log(make: Callable[[bytes, int], bytes]) -> bytes:
    """Requests a site answered 200 under /files/ with an encoded slash,
    from many clients, and some it served to everyone."""
    lines = [make(b"GET /files/a%2Fb HTTP/1.1", n) for n in range(30)]
    lines += [make(b"GET /about HTTP/1.1", n) for n in range(5)]
    return log(lines)


def test_audit_suggest_on_vhost_combined(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain, hosts = tmp_path / "access.log", tmp_path / "vhosts.log"
    plain.write_bytes(_served_log(combined))
    hosts.write_bytes(_served_log(lambda request, n: vhost(b"example.com:443", request, n)))
    options = ["--suggest", "--min-networks", "1", "--min-days", "1", "--json"]
    code, before = audit_json(capsys, *options, str(plain))
    assert code == 0
    code, after = audit_json(capsys, *options, str(hosts))
    assert code == 0
    # The path part as before: the same change, on the same evidence.
    assert after["suggestion"] == before["suggestion"]
    assert after["host_stopped"] == before["host_stopped"] == {}
    assert "encoded_slash" in json.dumps(after["suggestion"])


def without_lines(suggestion: object) -> dict[str, object]:
    assert isinstance(suggestion, dict)
    toml = [line for line in suggestion["toml"].splitlines() if not line.startswith("# Lines")]
    return {**suggestion, "toml": toml, "lines": None}


def test_audit_suggest_never_loosens_the_host(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "urlguard.toml"
    config.write_text('allowed_hosts = ["example.com"]\n')
    good = _served_log(lambda request, n: vhost(b"example.com:443", request, n))
    bad = [vhost(b"0x7f.1:80", b"GET /files/a%2Fb HTTP/1.1", n) for n in range(25)]
    bad += [vhost(b"other.test:443", b"GET /about HTTP/1.1", n) for n in range(7)]
    bad += [vhost(b"other.test:443", b"GET /about HTTP/1.1", n, status=404) for n in range(3)]
    path = tmp_path / "vhosts.log"
    path.write_bytes(good + log(bad))
    clean = tmp_path / "clean.log"
    clean.write_bytes(good)
    options = ["--suggest", "--min-networks", "1", "--min-days", "1", "--config", str(config)]
    _, alone = audit_json(capsys, *options, "--json", str(clean))
    code, result = audit_json(capsys, *options, "--json", str(path))
    assert code == 1  # served requests stay rejected, for their host
    assert result["host_stopped"] == {"bad-host": 25, "host-not-allowed": 7}
    assert result["rules"] == {"bad-host": 25, "host-not-allowed": 10, "encoded-slash": 30}
    # A refused host is no evidence for the path: the same suggestion, but
    # for the lines read.
    assert without_lines(result["suggestion"]) == without_lines(alone["suggestion"])
    code, out, err = run(capsys, "audit", *options, str(path))
    assert (code, err) == (1, "")
    assert out.splitlines()[-2:] == [
        "# Never loosened: 32 requests answered 2xx/3xx name a host the guard refuses "
        "(bad-host 25, host-not-allowed 7).",
        "# No setting above admits them: fix the server's names or allowed_hosts.",
    ]
    written = tmp_path / "suggested.toml"
    code, out, _ = run(capsys, "audit", *options, "--write", str(written), str(path))
    assert code == 1
    assert "stopped                25  bad-host: the logged host (never loosened)" in out
    assert "    0x7f.1:80" in out.splitlines()
    assert written.read_text().endswith("fix the server's names or allowed_hosts.\n")


# --- audit: progress on a terminal ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("stderr_is_tty", "block_tqdm", "shown"),
    [
        P(True, False, True, id="terminal: progress"),
        P(True, True, False, id="terminal without tqdm: how to get progress, once"),
        P(False, False, False, id="pipe: no progress"),
    ],
)
def test_audit_progress(stderr_is_tty: bool, block_tqdm: bool, shown: bool) -> None:
    # A slow writer on stdin keeps the audit running past the progress delay.
    code = "import sys\n"
    if block_tqdm:
        code += "sys.modules['tqdm'] = None  # as if the [cli] extra were not installed\n"
    code += "from urlguard.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    data, want = _mixed_log()
    half = len(data) // 2
    chunks: list[bytes] = []
    master = slave = -1
    if stderr_is_tty:
        master, slave = pty.openpty()
        # A terminal 80 columns wide (a fresh pty has none, and tqdm draws nothing).
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-c", code, "audit", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=slave if stderr_is_tty else subprocess.PIPE,
    ) as proc:
        reader = None
        if stderr_is_tty:
            os.close(slave)
            reader = threading.Thread(target=_drain, args=(master, chunks), daemon=True)
            reader.start()
        try:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(data[:half])
            proc.stdin.flush()
            # Hold the rest back well past the 0.5 s progress delay (the bar
            # is drawn on the next update after it); a loaded machine can
            # take a second or two just to start Python and import.
            time.sleep(3.0)
            proc.stdin.write(data[half:])
            proc.stdin.close()
            out = proc.stdout.read()
            assert proc.wait(timeout=30) == 1
            if proc.stderr is not None:
                chunks.append(proc.stderr.read())
        finally:
            if proc.poll() is None:
                proc.kill()
            if reader is not None:
                reader.join(timeout=10)
                os.close(master)
    err = b"".join(chunks)
    assert f"lines        {want['lines']:>12,}".encode() in out  # the report, on stdout
    assert b"Traceback" not in err
    assert (b"<stdin>" in err) is shown
    if shown:
        # Lines, never bytes; the last state is left on its own line.
        last = err.replace(b"\r\n", b"\n").rstrip(b"\n").split(b"\n")[-1].split(b"\r")[-1]
        assert last.startswith(f"<stdin>: {want['lines']} lines [".encode())
        assert b"lines/s]" in last
        assert b"B/s" not in err
        assert b"MB" not in err
    elif block_tqdm:
        assert err.replace(b"\r\n", b"\n") == urlguard.cli.commands._NO_PROGRESS.encode() + b"\n"
    else:
        assert err == b""


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class NotATerminal(io.StringIO):
    def isatty(self) -> bool:
        return False


def audit_on(
    monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO, *argv: str
) -> tuple[int, str, str]:
    """``audit`` in process with stdout and stderr as given, the progress
    shown from the start (no delay): stdout and stderr are one stream when
    ``stderr`` is a terminal, as on a screen."""
    stdout = stderr if stderr.isatty() else io.StringIO()
    monkeypatch.setattr(urlguard.cli.commands, "_PROGRESS_DELAY", 0)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    code = main(["audit", *argv])
    return code, stdout.getvalue(), stderr.getvalue()


def test_audit_progress_counts_lines_and_leaves_the_summary(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    data, want = _mixed_log()
    path.write_bytes(data * 100)
    lines = 100 * int(str(want["lines"]))
    code, screen, _ = audit_on(monkeypatch, FakeTerminal(), str(path))
    assert code == 1
    shown = display_name(path)
    bar, report = screen.split("\npolicy ", 1)
    # Every state of the counter is one line rewritten in place (\r); the
    # last one stays, ended by a line break, and the report follows it.
    states = bar.split("\r")
    assert states[0] == ""
    assert all(state.startswith(f"{shown}: ") for state in states[1:])
    assert states[-1].startswith(f"{shown}: {lines:,} lines [")
    assert states[-1].endswith("lines/s]")
    assert f"lines        {lines:>12,}" in report
    assert "hosts        not in this log format (combined), not checked" in report
    for unit in ("B/s", "kB", "MB", "%"):
        assert unit not in bar


def display_name(path: Path) -> str:
    name = str(path)
    return name if len(name) <= 40 else "..." + name[-37:]


def test_audit_progress_one_line_per_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(log([combined(b"GET / HTTP/1.1")] * 3))
    second.write_bytes(log([combined(b"GET /a%2Fb HTTP/1.1")] * 5))
    code, screen, _ = audit_on(monkeypatch, FakeTerminal(), str(first), str(second))
    assert code == 1
    kept = [line.split("\r")[-1] for line in screen.split("\npolicy ")[0].split("\n")]
    assert [line.split(" [")[0] for line in kept] == [
        f"{display_name(first)}: 3 lines",
        f"{display_name(second)}: 5 lines",
    ]


@pytest.mark.parametrize(
    ("delay", "said"),
    [
        P(0, True, id="past the delay: said once for two files"),
        P(3600, False, id="a run shorter than the delay: nothing"),
    ],
)
def test_audit_without_tqdm_says_how_to_get_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, delay: float, said: bool
) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(log([combined(b"GET / HTTP/1.1")] * 3))
    second.write_bytes(log([combined(b"GET /a%2Fb HTTP/1.1")] * 5))
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as without the cli extra
    monkeypatch.setattr(urlguard.cli.commands, "_PROGRESS_DELAY", delay)
    terminal = FakeTerminal()  # stdout and stderr, one screen
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["audit", str(first), str(second)]) == 1
    screen = terminal.getvalue()
    hint = urlguard.cli.commands._NO_PROGRESS + "\n"
    assert screen.count(urlguard.cli.commands._NO_PROGRESS) == (1 if said else 0)
    assert screen.removeprefix(hint if said else "").startswith("policy ")
    assert "pip install '.[cli]'" in hint


@pytest.mark.parametrize(
    ("stream", "argv"),
    [
        P(FakeTerminal, ["--json"], id="terminal, --json: no progress"),
        P(FakeTerminal, ["--json", "--suggest"], id="terminal, --json --suggest: no progress"),
        P(NotATerminal, [], id="not a terminal: no progress"),
        P(NotATerminal, ["--json"], id="not a terminal, --json: no progress"),
    ],
)
def test_audit_no_progress(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stream: Callable[[], io.StringIO],
    argv: list[str],
) -> None:
    path = tmp_path / "access.log"
    data, want = _mixed_log()
    path.write_bytes(data)
    code, out, err = audit_on(monkeypatch, stream(), *argv, str(path))
    assert code == 1
    if "--json" in argv:
        assert totals(json.loads(out)) == want  # nothing but the object on stdout
    else:
        assert out.startswith("policy ")
        assert err == ""
    assert "lines [" not in out + err
    assert "\r" not in out + err


def _drain(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            return
        if not data:
            return
        chunks.append(data)


# --- encode, clean, pretty ----------------------------------------------------------------------

ENCODE = [
    P("segment", "a/b c", [], "a%2Fb%20c", id="segment: slash and space"),
    P("segment", "café;v=1", [], "caf%C3%A9%3Bv=1", id="segment: UTF-8 and semicolon"),
    P("segment", "%41", [], "%2541", id="segment: percent always encoded"),
    P("query", "a&b c+d", [], "a%26b+c%2Bd", id="query: separators and plus"),
    P("query", "a b", ["--space", "%20"], "a%20b", id="query: space as %20"),
    P("query", "a b", ["--space", "+"], "a+b", id="query: space as +"),
    P("fragment", "Section 2/a?b#c", [], "Section%202/a?b%23c", id="fragment"),
]


@pytest.mark.parametrize(("component", "text", "options", "encoded"), ENCODE)
def test_encode(
    capsys: pytest.CaptureFixture[str],
    component: str,
    text: str,
    options: list[str],
    encoded: str,
) -> None:
    code, out, err = run(capsys, "encode", component, text, *options)
    assert (code, out, err) == (0, encoded + "\n", "")
    if component == "segment":
        policy = Policy(encoded_slash="keep", double_encoding="allow")
        assert parse_target("/" + encoded, policy).segments == (text,)
    elif component == "query":
        policy = Policy(plus_as_space="--space" not in options or options[-1] != "%20")
        assert parse_target("/?x=" + encoded, policy).query == (("x", text),)


CLEAN_PRETTY = [
    P(
        "clean",
        "http://example.com/news%23funny?name=Helen Ødegård&x=100%",
        "http://example.com/news%23funny?name=Helen%20%C3%98deg%C3%A5rd&x=100%25",
        id="clean",
    ),
    P("clean", "/a%2Fb?c=%41", "/a%2Fb?c=%41", id="clean keeps valid escapes"),
    P("pretty", "/caf%C3%A9/a%2Fb?q=x%20y", "/café/a%2Fb?q=x y", id="pretty"),
    P("pretty", "/a%E2%80%AEb", "/a%E2%80%AEb", id="pretty keeps bidi controls escaped"),
    P("pretty", "/a\u202eb\x1b", "/a%E2%80%AEb%1B", id="pretty escapes raw controls"),
]


@pytest.mark.parametrize(("command", "uri", "shown"), CLEAN_PRETTY)
def test_clean_and_pretty(
    capsys: pytest.CaptureFixture[str], command: str, uri: str, shown: str
) -> None:
    code, out, err = run(capsys, command, uri)
    assert (code, out, err) == (0, shown + "\n", "")


@pytest.mark.parametrize(
    "argv",
    [
        P(["encode", "segment", "a", "--space", "%20"], id="--space with a segment"),
        P(["encode", "path", "a"], id="unknown component"),
        P(["encode", "segment"], id="no text"),
        P(["encode", "segment", "\udce9"], id="undecodable argument"),
        P(["clean", "\ud800"], id="lone surrogate"),
    ],
)
def test_encode_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert "Traceback" not in err


@pytest.mark.parametrize("command", PROGRAMS)
def test_encode_undecodable_argument_as_a_program(command: list[str]) -> None:
    done = program([*command, "encode", "segment", b"caf\xe9"])
    assert (done.returncode, done.stdout) == (2, b"")
    assert_one_line_error(done.stderr.decode("ascii"))


# --- the same command three ways ----------------------------------------------------------------


@pytest.mark.parametrize("command", PROGRAMS)
@pytest.mark.parametrize(
    "argv",
    [
        P(["check", "--json", "/caf%C3%A9/x?q=a+b", "/%C4rzteblatt"], id="check json"),
        P(["check", "/caf%C3%A9/x?q=a+b", "/a%zz"], id="check text"),
        P(["check", "/ok"], id="check passing"),
        P(["encode", "query", "a&b c"], id="encode"),
        P(["pretty", "/caf%C3%A9"], id="pretty"),
        P(["check"], id="usage error"),
    ],
)
def test_programs_match_main(
    capsys: pytest.CaptureFixture[str], command: list[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    done = program([*command, *argv])
    assert done.returncode == code
    assert done.stdout.decode("utf-8") == out
    assert "Traceback" not in done.stderr.decode()
    assert bool(done.stderr) == bool(err)


def test_entry_point_is_installed() -> None:
    assert ENTRY.is_file()
    assert program([ENTRY, "--help"]).returncode == 0
