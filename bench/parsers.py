"""The parsers a run measures, imported once and handed to the guards with
``parser=``: ``compiled`` (where it was built) and ``reference``.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from types import ModuleType

import urlguard

#: A contender of the micro part: raw target in, its pieces out.
Parse = Callable[[bytes], object]


def available() -> dict[str, ModuleType]:
    """``compiled`` (``urlguard._url.parser_c``, when it is built) and ``reference``."""
    found: dict[str, ModuleType] = {}
    with contextlib.suppress(ImportError):  # not built here
        found["compiled"] = importlib.import_module("urlguard._url.parser_c")
    found["reference"] = importlib.import_module("urlguard._url.parser_py")
    return found


def chosen() -> str:
    """The name of the parser a guard uses when it is given none."""
    return "compiled" if urlguard.IMPLEMENTATION == "compiled" else "reference"


def reader(module: ModuleType) -> Parse:
    """Parse with ``module`` and read the segments and the query, as an
    application does (a parser may make them only when they are read)."""
    parse_target = module.parse_target

    def parse_and_read(raw: bytes) -> object:
        target = parse_target(raw)
        return target.segments, target.query

    return parse_and_read
