"""Both parsers, one suite.

urlguard has two implementations of one parser (see ``urlguard._url.parser``):
the pure-Python reference, ``urlguard._url.parser_py``, and the compiled module,
``urlguard._url.parser_c``. Each exports ``parse_target`` and
``parse_split_target``. As in yarl's and propcache's suites, a test of the
parser or of anything that calls it (the guard, both middlewares, the
framework integrations) asks for the ``parser`` fixture, which is
parametrized over the implementation modules, and calls it explicitly:
``parser.parse_target(...)``, ``Guard(..., parser=parser)``,
``StrictURLMiddleware(app, parser=parser)``. Nothing is swapped: the test
gets the module, and the guard uses the module it is given.

``implementation`` gives the name of the module a test runs on,
``"python"`` or ``"compiled"``.

Without the compiled module (an install without a C compiler, another
interpreter, or ``URLGUARD_NO_EXTENSIONS`` set) only the reference runs,
unless ``URLGUARD_EXPECT_IMPLEMENTATION=compiled`` says the compiled one must
be there: CI and tox set it, so that a build that silently fell back to pure
Python fails the suite instead of testing one parser twice. (test_parser_c
and test_leak, about the compiled module alone, take it through
:func:`implementation_module`, and are skipped without it.)
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import pytest

import urlguard
import urlguard._url.parser
import urlguard._url.parser_py
from urlguard import InvalidTarget, Target
from urlguard._url.parser import ParserModule

REFERENCE_MODULE = "urlguard._url.parser_py"
COMPILED_MODULE = "urlguard._url.parser_c"
#: The name of each implementation, and its module.
MODULES = {"python": REFERENCE_MODULE, "compiled": COMPILED_MODULE}


#: What a parser module holds, a ``Protocol``: ``urlguard._url.parser_py`` and
#: ``urlguard._url.parser_c`` both export its functions. The fixture hands over
#: the module itself; the type checker holds both modules to it here.
Parser = ParserModule
if TYPE_CHECKING:
    import urlguard._url.parser_c

    _REFERENCE: Parser = urlguard._url.parser_py
    _COMPILED: Parser = urlguard._url.parser_c


#: The parser urlguard chose at import (``urlguard.parse_target`` is its
#: function): what the fuzz targets, which reuse test oracles, check.
CHOSEN = cast(Parser, urlguard._url.parser.PARSER)


def _compiled_expected() -> bool:
    return os.environ.get("URLGUARD_EXPECT_IMPLEMENTATION") == "compiled"


def implementation_module(name: str) -> ModuleType:
    """``"python"`` or ``"compiled"`` as a module (a ``Parser``); the compiled
    one skips the test when it was not built (and fails it when CI expects it)."""
    try:
        return importlib.import_module(MODULES[name])
    except ImportError as error:
        if _compiled_expected():
            raise AssertionError(f"the compiled parser was expected: {error}") from error
        pytest.skip(f"the compiled parser is not built here ({error})")


def implementation_name(parser: Parser) -> str:
    """``"python"`` or ``"compiled"``: the name of a parser module."""
    (name,) = [name for name, module in MODULES.items() if sys.modules.get(module) is parser]
    return name


def target_fields(target: urlguard.Target) -> tuple[object, ...]:
    """Everything a ``Target`` shows: what two parsers, or a target and its
    copy, must agree on."""
    return (
        repr(target),
        target.raw,
        target.raw_path,
        target.raw_query,
        target.authority,
        target.host,
        target.port,
        target.segments,
        target.params,
        target.query,
    )


def verdict(parse: Callable[[], Target]) -> tuple[Any, ...]:
    """Everything observable about one parse."""
    try:
        target = parse()
    except InvalidTarget as error:
        return (
            "rejected",
            type(error),
            error.args,
            error.rule,
            error.component,
            error.index,
            error.offset,
            str(error),
        )
    assert type(target) is Target or isinstance(target, Target)
    return ("accepted", *target_fields(target), hash(target))


def _implementations() -> list[str]:
    """The implementations the suite runs on: the reference, and the compiled
    module when it is built and wanted here, or when it must be (then its
    absence fails each test instead of leaving them out)."""
    if _compiled_expected():
        return ["python", "compiled"]
    if urlguard._url.parser._no_extensions():
        return ["python"]
    try:
        importlib.import_module(COMPILED_MODULE)
    except ImportError:
        return ["python"]
    return ["python", "compiled"]


@pytest.fixture(scope="session", params=_implementations())
def parser(request: pytest.FixtureRequest) -> Parser:
    """The parser module this test runs on: ``urlguard._url.parser_py``, then
    ``urlguard._url.parser_c``."""
    name: str = request.param
    return implementation_module(name)


@pytest.fixture(scope="session")
def implementation(parser: Parser) -> str:
    """The name of the parser this test runs on, ``"python"`` or ``"compiled"``."""
    return implementation_name(parser)


class Ran(NamedTuple):
    """What the ``urlguard`` command line returned and printed, run in process."""

    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    from urlguard.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)
