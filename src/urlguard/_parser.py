"""The parser urlguard uses: the pure-Python reference, ``_parser_py``.

Everything else in the package imports ``parse_target`` and
``parse_split_target`` from here.
"""

from __future__ import annotations

from typing import Final, Literal

from ._parser_py import parse_split_target, parse_target

IMPLEMENTATION: Final[Literal["compiled", "python"]] = "python"

__all__ = ["IMPLEMENTATION", "parse_split_target", "parse_target"]
