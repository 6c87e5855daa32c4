"""Which parser a process uses: ``urlguard.IMPLEMENTATION`` and the switch
``URLGUARD_NO_EXTENSIONS``, read once at import (so each case is a fresh
interpreter)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

import urlguard

P = pytest.param
COMPILED_BUILT = importlib.util.find_spec("urlguard._parser_c") is not None


def _implementation_in_child(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "URLGUARD_NO_EXTENSIONS"}
    if value is not None:
        env["URLGUARD_NO_EXTENSIONS"] = value
    code = (
        "import urlguard, urlguard._parser as p;"
        "assert urlguard.IMPLEMENTATION == p.IMPLEMENTATION;"
        "print(urlguard.IMPLEMENTATION, p.PARSER.__name__, p.parse_target.__module__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    implementation, chosen, module = result.stdout.split()
    # The module chosen, and the functions exported, are those the name says.
    expected = "urlguard._parser_c" if implementation == "compiled" else "urlguard._parser_py"
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
    assert "IMPLEMENTATION" in urlguard.__all__


def test_implementation_is_the_expected_one() -> None:
    """CI and tox say which implementation the install must have produced
    (``compiled`` where a compiler is, ``python`` under URLGUARD_NO_EXTENSIONS),
    so that a build that silently fell back fails here."""
    expected = os.environ.get("URLGUARD_EXPECT_IMPLEMENTATION")
    if expected is None:
        pytest.skip("URLGUARD_EXPECT_IMPLEMENTATION is not set (CI and tox set it)")
    assert expected == urlguard.IMPLEMENTATION


def test_public_parse_target_is_the_chosen_one() -> None:
    import urlguard._parser as chosen

    assert urlguard.parse_target is chosen.parse_target
    expected = (
        "urlguard._parser_c" if urlguard.IMPLEMENTATION == "compiled" else "urlguard._parser_py"
    )
    assert chosen.PARSER.__name__ == expected
    assert chosen.parse_target is chosen.PARSER.parse_target
    assert chosen.parse_split_target is chosen.PARSER.parse_split_target
    assert chosen.parse_target.__module__ == expected
    assert chosen.parse_split_target.__module__ == expected
    assert sorted(chosen.__all__) == [
        "IMPLEMENTATION",
        "PARSER",
        "parse_split_target",
        "parse_target",
    ]
