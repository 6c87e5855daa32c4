"""Which parser runs: the compiled one when it is there, else the reference.

``urlguard._parser_c`` (Cython) and ``urlguard._parser_py`` (pure Python)
export the same two functions, ``parse_target`` and ``parse_split_target``,
and give the same answer on every input; the compiled one is only faster. It
is chosen once, at import:

* ``URLGUARD_NO_EXTENSIONS`` set to ``1``, ``true`` or ``yes`` (any case)
  forces the reference; ``0``, ``false``, ``no`` or empty do not;
* on an interpreter other than CPython the reference is used;
* so it is when the compiled module was not built (no C compiler at install).

``PARSER`` is the chosen module: what a guard uses unless it is handed
another (``StrictURLMiddleware(app, parser=urlguard._parser_py)``), as the
tests do to run everything on both.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Literal

__all__ = ["IMPLEMENTATION", "PARSER", "parse_split_target", "parse_target"]


def _no_extensions(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether the environment forbids compiled modules: only an explicit yes,
    so that ``URLGUARD_NO_EXTENSIONS=0`` keeps them (a slip aiohttp and yarl
    both made once, reading any non-empty value as yes)."""
    return environ.get("URLGUARD_NO_EXTENSIONS", "").strip().lower() in ("1", "true", "yes")


#: The implementation this process uses, ``"compiled"`` or ``"python"``.
IMPLEMENTATION: Literal["compiled", "python"]
#: Its module, with ``parse_target`` and ``parse_split_target``.
PARSER: ModuleType

# The reference is imported last, in the handler, as markupsafe and yarl do:
# static readers of the source (the API reference's generator) then document
# the reference's functions, which carry the docstrings.
try:
    if _no_extensions() or sys.implementation.name != "cpython":
        raise ImportError("the compiled parser is not wanted here")
    from . import _parser_c as PARSER
    from ._parser_c import parse_split_target, parse_target
except ImportError:  # not wanted, or built without a C compiler: the reference
    from . import _parser_py as PARSER
    from ._parser_py import parse_split_target, parse_target  # type: ignore[no-redef]

    IMPLEMENTATION = "python"
else:
    IMPLEMENTATION = "compiled"
