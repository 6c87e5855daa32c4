"""What urlguard stored for a request, as the echo apps report it."""

from __future__ import annotations

from typing import Any

from urlguard import Target


def stored(target: Target | None) -> dict[str, Any]:
    """The stored target's pieces (``raw`` as latin-1, one character per
    byte), each ``None`` when urlguard stored none."""
    if target is None:
        return dict.fromkeys(("segments", "query", "raw", "host", "port"))
    return {
        "segments": list(target.segments),
        "query": [list(pair) for pair in target.query],
        "raw": target.raw.decode("latin-1"),
        "host": target.host,
        "port": target.port,
    }
