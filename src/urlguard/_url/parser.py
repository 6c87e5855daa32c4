"""Which parser runs: the compiled one when it is there, else the reference.

``urlguard._url.parser_c`` (Cython) and ``urlguard._url.parser_py`` (pure Python)
export the same functions, ``parse_target``, ``parse_split_target`` and
``host_header`` (an ASGI scope's Host), and give the same answer on every
input; the compiled one is only faster. It is chosen once, at import:

* ``URLGUARD_NO_EXTENSIONS`` set to ``1``, ``true`` or ``yes`` (any case)
  forces the reference; ``0``, ``false``, ``no`` or empty do not;
* on an interpreter other than CPython the reference is used;
* so it is when the compiled module was not built (no C compiler at install).

``PARSER`` is the chosen module: what a guard uses unless it is handed
another (``StrictURLMiddleware(app, parser=urlguard._url.parser_py)``), as the
tests do to run everything on both.

The last case is not a choice: the install could not build the compiled
module (no C compiler, no Python headers) and pip showed the one line that
said so only under ``pip -v``. So :func:`warn_if_pure`, called where a guard
is made, logs one warning for the whole process, on CPython only and only
when nobody asked for the reference.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Literal, Protocol, overload

if TYPE_CHECKING:
    from .host import Host
    from .parser_py import HostValue
    from .policy import Policy
    from .target import Target

__all__ = ["IMPLEMENTATION", "PARSER", "ParserModule", "parse_split_target", "parse_target"]


class ParserModule(Protocol):
    """What a parser module exports: ``parser_py`` and ``parser_c`` both are
    one, and so must be the module a guard is handed (``parser=``)."""

    @overload
    def parse_target(
        self,
        raw: bytes | bytearray | memoryview,
        policy: Policy | None = None,
        host: HostValue = None,
    ) -> Target: ...
    @overload
    def parse_target(
        self, raw: str, policy: Policy | None = None, host: HostValue = None
    ) -> Target: ...

    def parse_split_target(
        self,
        raw_path: bytes | bytearray | memoryview,
        query: bytes | bytearray | memoryview,
        policy: Policy,
        host: HostValue = None,
    ) -> Target: ...

    def host_header(self, headers: object, known: dict[bytes, Host]) -> Host | bytes | None: ...


def _no_extensions(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether the environment forbids compiled modules: only an explicit yes,
    so that ``URLGUARD_NO_EXTENSIONS=0`` keeps them."""
    return environ.get("URLGUARD_NO_EXTENSIONS", "").strip().lower() in ("1", "true", "yes")


#: The implementation this process uses, ``"compiled"`` or ``"python"``.
IMPLEMENTATION: Literal["compiled", "python"]
#: Its module, with ``parse_target``, ``parse_split_target`` and ``host_header``.
PARSER: ModuleType

# Why the compiled module is missing where it was wanted (CPython, no
# URLGUARD_NO_EXTENSIONS): the ImportError's message. None when the compiled
# module runs or the reference was chosen.
_missing: str | None = None
_wanted = not _no_extensions() and sys.implementation.name == "cpython"

# The reference is imported last, in the handler, as markupsafe and yarl do:
# static readers of the source (the API reference's generator) then document
# the reference's functions, which carry the docstrings.
try:
    if not _wanted:
        raise ImportError("the compiled parser is not wanted here")
    # The functions first: for a module that is not there, this import says
    # "No module named ..." (the warning quotes it); the module-level import
    # would say "cannot import name" and blame a circular import.
    from .parser_c import parse_split_target, parse_target  # noqa: I001
    from . import parser_c as PARSER
except ImportError as error:  # not wanted, or built without a C compiler: the reference
    from . import parser_py as PARSER
    from .parser_py import parse_split_target, parse_target  # type: ignore[no-redef]

    IMPLEMENTATION = "python"
    if _wanted:
        _missing = str(error)
else:
    IMPLEMENTATION = "compiled"

# What the compiled build saves, as the project's benchmark measured it
# (python -m bench --part instructions, callgrind; docs/speed.md, "The pure
# build"): guarded / bare instructions per request of a hello-world app.
_WHAT_IT_SAVES = (
    "Measured in process, in instructions, a guarded request costs 1.10 of a bare one "
    "with the compiled parser and 1.27 with this one under Starlette (1.11 and 1.28 for "
    "percent-encoded text), 1.02 and 1.05 under Flask (1.03 and 1.06); in time the "
    "difference is about twice that."
)

_warned = False
_warned_lock = threading.Lock()


def warn_if_pure() -> None:
    """Log, once per process, that the compiled parser is missing and how to
    get it, if it is: CPython, no ``URLGUARD_NO_EXTENSIONS``, and the compiled
    module could not be imported. Silent in every other case (PyPy and the
    switch choose the reference on purpose). The answers are the same either
    way; only the speed differs, so this is a warning, never an error."""
    global _warned
    if _missing is None or _warned:
        return
    with _warned_lock:  # two guards made at once in two threads still log one line
        if _warned:
            return
        _warned = True
    logging.getLogger("urlguard").warning(
        "the compiled parser is not installed (%s), so urlguard runs its pure-Python parser: "
        "the same answers, slower. " + _WHAT_IT_SAVES + " To get it, install a C compiler and "
        "Python's headers, "
        "then build urlguard again without pip's cache (pip install --force-reinstall "
        "--no-cache-dir --no-binary urlguard urlguard, or pip install --force-reinstall "
        "--no-cache-dir . in a clone); to choose the pure-Python parser without this "
        "warning, set URLGUARD_NO_EXTENSIONS=1",
        _missing,
    )
