"""Both parsers, one suite.

urlguard has two implementations of one parser (see ``urlguard._parser``):
the pure-Python reference and the compiled module. As in yarl's and
propcache's suites, the tests of the parser and of everything that calls it
(the guard, both middlewares, the framework integrations) run once on each:
the ``implementation`` fixture is parametrized over both for the modules in
``ON_BOTH``, and for each test the names that urlguard's modules (and the
test module) bound to a parser function at import are pointed at the chosen
implementation's, then restored. Elsewhere the fixture only reports which
implementation this process uses.

``parser`` gives a test the chosen module itself (its ``parse_target`` and
``parse_split_target``).

Without the compiled module (an install without a C compiler, or another
interpreter) only the reference runs, unless ``URLGUARD_EXPECT_IMPLEMENTATION``
says the compiled one must be there: CI and tox set it, so that a build that
silently fell back to pure Python fails the suite instead of testing one
parser twice. (test_parser_c and test_leak, about the compiled module
alone, are skipped without it.)
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

import urlguard
import urlguard._parser

# Test modules whose every test runs on both implementations.
ON_BOTH = frozenset(
    {
        "test_target",
        "test_target_properties",
        "test_split_target",
        "test_differential",
        "test_fuzz_regressions",
        "test_security_model",
        "test_guard",
        "test_asgi",
        "test_wsgi",
        "test_integrations",
        "test_routes",
    }
)

REFERENCE_MODULE = "urlguard._parser_py"
COMPILED_MODULE = "urlguard._parser_c"
# The names that hold a parser function, in urlguard and in test modules
# (decider_for: what the guard asks at construction for its decider).
FUNCTIONS = ("parse_target", "parse_split_target", "decider_for")

# What this process chose at import (before any test swapped anything).
SELECTED = {name: getattr(urlguard._parser, name) for name in FUNCTIONS}
PUBLIC = {
    "parse_target": urlguard.parse_target,
    "parse_split_target": SELECTED["parse_split_target"],
}
# Modules outside the package that may hold the public parser function.
OUTSIDE = ("test_", "conftest", "bench.", "tour", "starlette_app", "flask_app", "fastapi_app")


def _reference() -> ModuleType:
    return importlib.import_module(REFERENCE_MODULE)


def implementation_module(name: str) -> ModuleType:
    """``"python"`` or ``"compiled"`` as a module; the compiled one skips the
    test when it was not built (and fails it when CI expects it)."""
    if name == "python":
        return _reference()
    try:
        return importlib.import_module(COMPILED_MODULE)
    except ImportError as error:
        if os.environ.get("URLGUARD_EXPECT_IMPLEMENTATION") == "compiled":
            raise AssertionError(f"the compiled parser was expected: {error}") from error
        pytest.skip(f"the compiled parser is not built here ({error})")


def target_fields(target: urlguard.Target) -> tuple[object, ...]:
    """Everything a ``Target`` shows (its pieces made, if they were not yet):
    what two parsers, or a target and its copy, must agree on."""
    return (
        repr(target),
        target.raw,
        target.raw_path,
        target.raw_query,
        target.authority,
        target.segments,
        target.params,
        target.query,
    )


def _implementation_modules() -> tuple[ModuleType, ...]:
    modules = [_reference()]
    compiled = sys.modules.get(COMPILED_MODULE)
    if compiled is not None:
        modules.append(compiled)
    return tuple(modules)


def _swaps(chosen: ModuleType) -> list[tuple[dict[str, Any], str, object]]:
    """(namespace, name, value now) for every binding to point at ``chosen``."""
    implementations = _implementation_modules()
    own = {id(m.__dict__) for m in implementations}
    any_parser = {id(getattr(m, name, None)): name for m in implementations for name in FUNCTIONS}
    public = {id(function): name for name, function in PUBLIC.items()}
    swaps: list[tuple[dict[str, Any], str, object]] = []
    for module_name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if namespace is None or id(namespace) in own:
            continue
        # In urlguard, any parser function is the parser; elsewhere (tests,
        # example apps) only what the public name was: a test that imports
        # the reference itself, to compare with it, keeps it.
        in_package = module_name == "urlguard" or module_name.startswith("urlguard.")
        if not in_package and not module_name.startswith(OUTSIDE):
            continue
        wanted = any_parser if in_package else public
        for name, value in list(namespace.items()):
            function = wanted.get(id(value))
            if function is not None and getattr(chosen, function) is not value:
                swaps.append((namespace, name, value))
    return swaps


@pytest.fixture(autouse=True)
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """The parser implementation this test runs on, ``"python"`` or ``"compiled"``."""
    name: str | None = getattr(request, "param", None)
    if name is None:
        yield urlguard._parser.IMPLEMENTATION
        return
    chosen = implementation_module(name)
    swaps = _swaps(chosen)
    for namespace, key, value in swaps:
        namespace[key] = getattr(chosen, _function_name(value))
    try:
        yield name
    finally:
        for namespace, key, value in swaps:
            namespace[key] = value


def _function_name(value: object) -> str:
    for name in FUNCTIONS:
        if getattr(value, "__name__", None) == name:
            return name
    raise AssertionError(f"not a parser function: {value!r}")


@pytest.fixture
def parser(implementation: str) -> ModuleType:
    """The module of the implementation this test runs on."""
    return implementation_module(implementation)


def _compiled_available() -> bool:
    """Whether the compiled half runs: the module is built, or it must be
    (then its absence fails each test instead of leaving them out)."""
    if os.environ.get("URLGUARD_EXPECT_IMPLEMENTATION") == "compiled":
        return True
    try:
        importlib.import_module(COMPILED_MODULE)
    except ImportError:
        return False
    return True


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if module in ON_BOTH and "implementation" in metafunc.fixturenames:
        # Without the compiled module (the pure wheel), only the reference.
        names = ["python", "compiled"] if _compiled_available() else ["python"]
        metafunc.parametrize("implementation", names, indirect=True)
