"""Which parser a process uses: ``urlguard.IMPLEMENTATION`` and the switch
``URLGUARD_NO_EXTENSIONS``, read once at import (so each case is a fresh
interpreter)."""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import threading

import pytest

import urlguard

P = pytest.param
COMPILED_BUILT = importlib.util.find_spec("urlguard._url.parser_c") is not None


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter with ``env``; it must succeed."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def _implementation_in_child(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "URLGUARD_NO_EXTENSIONS"}
    if value is not None:
        env["URLGUARD_NO_EXTENSIONS"] = value
    code = (
        "import urlguard, urlguard._url.parser as p;"
        "assert urlguard.IMPLEMENTATION == p.IMPLEMENTATION;"
        "print(urlguard.IMPLEMENTATION, p.PARSER.__name__, p.parse_target.__module__)"
    )
    implementation, chosen, module = _python(code, env).stdout.split()
    # The module chosen, and the functions exported, are those the name says.
    expected = (
        "urlguard._url.parser_c" if implementation == "compiled" else "urlguard._url.parser_py"
    )
    assert (chosen, module) == (expected, expected)
    return implementation


@pytest.mark.parametrize(
    ("value", "forces_python"),
    [
        P("1", True, id="1"),
        P("true", True, id="true"),
        P("TRUE", True, id="TRUE"),
        P("yes", True, id="yes"),
        P(" Yes ", True, id="Yes with spaces"),
        P("0", False, id="0 does not disable"),
        P("false", False, id="false"),
        P("no", False, id="no"),
        P("", False, id="empty"),
        P("2", False, id="2 is not a yes"),
        P(None, False, id="unset"),
    ],
)
def test_no_extensions_switch(value: str | None, forces_python: bool) -> None:
    expected = "python" if forces_python or not COMPILED_BUILT else "compiled"
    assert _implementation_in_child(value) == expected


def test_implementation_is_public() -> None:
    assert urlguard.IMPLEMENTATION in ("compiled", "python")
    exported: dict[str, object] = {}
    exec("from urlguard import *", exported)
    assert exported["IMPLEMENTATION"] == urlguard.IMPLEMENTATION


def test_implementation_is_the_expected_one() -> None:
    """CI and tox say which implementation the install must have produced
    (``compiled`` where a compiler is, ``python`` under URLGUARD_NO_EXTENSIONS),
    so that a build that silently fell back fails here."""
    expected = os.environ.get("URLGUARD_EXPECT_IMPLEMENTATION")
    if expected is None:
        pytest.skip("URLGUARD_EXPECT_IMPLEMENTATION is not set (CI and tox set it)")
    assert expected == urlguard.IMPLEMENTATION


def test_public_parse_target_is_the_chosen_one() -> None:
    import urlguard._url.parser as chosen

    assert urlguard.parse_target is chosen.parse_target
    expected = (
        "urlguard._url.parser_c"
        if urlguard.IMPLEMENTATION == "compiled"
        else "urlguard._url.parser_py"
    )
    assert chosen.PARSER.__name__ == expected
    assert chosen.parse_target is chosen.PARSER.parse_target
    assert chosen.parse_split_target is chosen.PARSER.parse_split_target
    assert chosen.parse_target.__module__ == expected
    assert chosen.parse_split_target.__module__ == expected
    exported: dict[str, object] = {}
    exec("from urlguard._url.parser import *", exported)  # every name in __all__ is there
    assert exported["parse_target"] is chosen.PARSER.parse_target
    assert exported["parse_split_target"] is chosen.PARSER.parse_split_target
    assert exported["IMPLEMENTATION"] == urlguard.IMPLEMENTATION


# -- the warning when the compiled parser is missing ---------------------------------

# A child that imports urlguard as an install without the compiled module
# would: a finder ahead of the others answers for that one name what the
# import system answers for a file that is not there. The PyPy case swaps
# the interpreter's name before the import, which is all the choice reads.
# Log records go to stdout, between the child's own marks, so that the test
# sees which call logged.
_CHILD = """
import logging, sys, types
class NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name == "urlguard._url.parser_c":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
if {missing!r}:
    sys.meta_path.insert(0, NotBuilt())
if {interpreter!r} != "cpython":
    sys.implementation = types.SimpleNamespace(
        **{{**vars(sys.implementation), "name": {interpreter!r}}}
    )
logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(name)s: %(message)s")
import urlguard
print("implementation", urlguard.IMPLEMENTATION)
{body}
"""
_BY_FUNCTION = """
from urlguard._url import parser as _parser
_parser.warn_if_pure()
print("first call")
_parser.warn_if_pure()
print("second call")
"""
# Guards of both protocols: one warning for the process, whichever comes first.
_BY_GUARDS = """
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard
WSGIGuard(lambda environ, start_response: [])
print("first guard")
ASGIGuard(lambda scope, receive, send: None)
print("second guard")
"""
WARNING = "WARNING urlguard: the compiled parser is not installed"


def _child_lines(
    body: str, *, missing: bool, interpreter: str = "cpython", no_extensions: str | None = None
) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("URLGUARD_")}
    if no_extensions is not None:
        env["URLGUARD_NO_EXTENSIONS"] = no_extensions
    result = _python(_CHILD.format(missing=missing, interpreter=interpreter, body=body), env)
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_missing_compiled_parser_warns_once() -> None:
    lines = _child_lines(_BY_FUNCTION, missing=True)
    assert lines[0] == "implementation python"
    assert lines[1].startswith(WARNING), lines
    assert lines[2:] == ["first call", "second call"]
    # One line: a log shows it whole, and it says what to do about it.
    (warning,) = [line for line in lines if "urlguard" in line]
    assert "No module named 'urlguard._url.parser_c'" in warning
    assert "install a C compiler" in warning
    assert "--no-cache-dir" in warning
    assert "URLGUARD_NO_EXTENSIONS=1" in warning


def test_first_guard_warns_and_the_second_does_not() -> None:
    lines = _child_lines(_BY_GUARDS, missing=True)
    assert lines[0] == "implementation python"
    assert lines[1].startswith(WARNING), lines
    assert lines[2:] == ["first guard", "second guard"]


@pytest.mark.parametrize(
    ("missing", "interpreter", "no_extensions", "implementation"),
    [
        P(True, "cpython", "1", "python", id="URLGUARD_NO_EXTENSIONS=1"),
        P(True, "cpython", "yes", "python", id="URLGUARD_NO_EXTENSIONS=yes"),
        P(True, "pypy", None, "python", id="PyPy"),
        P(False, "pypy", None, "python", id="PyPy beside a compiled module"),
        P(False, "cpython", "1", "python", id="switch beside a compiled module"),
    ],
)
def test_a_chosen_reference_is_silent(
    missing: bool, interpreter: str, no_extensions: str | None, implementation: str
) -> None:
    for body in (_BY_FUNCTION, _BY_GUARDS):
        lines = _child_lines(
            body, missing=missing, interpreter=interpreter, no_extensions=no_extensions
        )
        assert lines[0] == f"implementation {implementation}"
        assert not [line for line in lines if "urlguard" in line], lines


@pytest.mark.skipif(not COMPILED_BUILT, reason="the compiled parser is not built here")
def test_the_compiled_parser_is_silent() -> None:
    for body in (_BY_FUNCTION, _BY_GUARDS):
        lines = _child_lines(body, missing=False)
        assert lines[0] == "implementation compiled"
        assert not [line for line in lines if "urlguard" in line], lines


def test_switch_that_is_not_a_yes_still_warns() -> None:
    """``URLGUARD_NO_EXTENSIONS=0`` asks for the compiled parser: its absence is news."""
    lines = _child_lines(_BY_FUNCTION, missing=True, no_extensions="0")
    assert lines[1].startswith(WARNING), lines


def test_threads_making_guards_at_once_log_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from urlguard._url import parser as _parser

    monkeypatch.setattr(_parser, "_missing", "No module named 'urlguard._url.parser_c'")
    monkeypatch.setattr(_parser, "_warned", False)
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        _parser.warn_if_pure()

    threads = [threading.Thread(target=make) for _ in range(8)]
    with caplog.at_level(logging.WARNING, logger="urlguard"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    messages = [r.getMessage() for r in caplog.records if r.name == "urlguard"]
    assert len(messages) == 1, messages
    assert messages[0].startswith("the compiled parser is not installed")
