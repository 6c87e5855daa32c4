"""Bytes from a log or a command line, shown safely: printable ASCII as it
is, every other byte as ``\\xHH``, never a control character or a line break.
"""

from __future__ import annotations

from typing import Final

_BACKSLASH: Final = ord("\\")

# Printable ASCII stays; '\' becomes '\\' so that '\xHH' is never ambiguous;
# everything else is '\xHH'.
_DISPLAY: Final[tuple[str, ...]] = tuple(
    "\\\\" if b == _BACKSLASH else chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02X}"
    for b in range(256)
)


def display_pieces(raw: bytes) -> list[str]:
    """One printable-ASCII string per byte of ``raw`` (see :func:`display`)."""
    return [_DISPLAY[b] for b in raw]


def display(raw: bytes, limit: int | None = None) -> str:
    """``raw`` escaped for a terminal or a log line: printable ASCII as is,
    ``\\`` as ``\\\\``, every other byte as ``\\xHH``. Never a control
    character, never a line break. With ``limit``, at most that many bytes are
    shown, then ``...``.

        >>> display(b"/caf\\xc3\\xa9\\r\\n")
        '/caf\\\\xC3\\\\xA9\\\\x0D\\\\x0A'
    """
    if limit is not None and len(raw) > limit:
        return "".join(_DISPLAY[b] for b in raw[:limit]) + "..."
    return "".join(_DISPLAY[b] for b in raw)
