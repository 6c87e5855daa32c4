"""What the guard keeps of a violation: a count, and one log line that no
input can break.

Every byte of a value outside 0x21-0x7E is backslash-escaped and its length
bounded (:func:`escape`), so that no CR, LF or control byte from a request
reaches a log line (CWE-117, log injection), and a long target cannot flood
one.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from typing import Final

from .._url.errors import InvalidTarget
from .._url.host import Host, host_text
from .allowed_hosts import HostFault, cause

__all__ = ["LOGGER", "Violations", "escape", "log_violation"]

#: The one logger: ``logging.getLogger("urlguard")``.
LOGGER: Final = logging.getLogger("urlguard")

#: At most this many bytes of a target go into a log line (escaped, so the
#: line holds at most four times as many characters).
LOG_LIMIT: Final = 256


class Violations:
    """Violations counted by (rule code, component, route prefix), both modes.

    The route prefix is the one the decision chose, as configured, or ``"/"``
    where no route applies. A lock: metrics read while requests count."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, str]] = Counter()
        self._lock = threading.Lock()

    def add(self, exc: InvalidTarget, prefix: str) -> None:
        with self._lock:
            self._counts[exc.rule, exc.component, prefix] += 1

    def snapshot(self) -> dict[tuple[str, str, str], int]:
        with self._lock:
            return dict(self._counts)

    def by_rule(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for (rule, _, _), count in self.snapshot().items():
            counts[rule] += count
        return dict(counts)


def log_violation(
    level: int,
    report: bool,
    exc: InvalidTarget,
    target: bytes,
    method: str,
    client: str,
    host: bytes | Host | HostFault | None,
) -> None:
    """The one line a violation gets (logger ``urlguard``), every value
    escaped; a host rejection says so, and a ``bad-host`` which of its causes.
    No ``urlguard:`` prefix: the logger's name says it already."""
    if not LOGGER.isEnabledFor(level):
        return
    of_host = exc.rule == "bad-host" or exc.rule == "host-not-allowed"
    why = cause(exc, host) if exc.rule == "bad-host" else None
    LOGGER.log(
        level,
        "%s %s: rule=%s%s component=%s index=%s offset=%d client=%s method=%s target=%s%s",
        "reported (report-only, passed on)" if report else "rejected",
        "host" if of_host else "request target",
        exc.rule,
        "" if why is None else f" cause={why}",
        exc.component,
        "-" if exc.index is None else exc.index,
        exc.offset,
        escape(client),
        escape(method),
        escape(target),
        "" if not of_host else f" host={_host_for_log(host)}",
        extra={
            "urlguard_rule": exc.rule,
            "urlguard_component": exc.component,
            "urlguard_index": exc.index,
            "urlguard_offset": exc.offset,
            "urlguard_mode": "report" if report else "enforce",
            "urlguard_cause": why,
        },
    )


def _host_for_log(host: bytes | Host | HostFault | None) -> str:
    """A host for the log line: the value as received (escaped), a judged
    one, or ``-`` for none (missing, several, HTTP/1.0 without Host)."""
    if isinstance(host, Host):
        return escape(host_text(host))
    if host is None or isinstance(host, HostFault) or not host:
        return "-"
    return escape(host)


# Printable ASCII except the backslash passes; everything else is escaped.
_UNSAFE: Final = re.compile(r"[^\x21-\x5b\x5d-\x7e]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match[0])
    if code == 0x5C:
        return "\\\\"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(value: bytes | str, limit: int = LOG_LIMIT) -> str:
    r"""``value`` safe for one log line: every byte (or character) outside
    0x21-0x7E, and the backslash, backslash-escaped; at most ``limit`` bytes
    (characters) of it, then how long it was. No spaces: one token per value.

        >>> print(escape(b"/a b\r\n\xc3\\"))
        /a\x20b\x0d\x0a\xc3\\
        >>> print(escape(b"/" + b"a" * 300, limit=4))
        /aaa...[len=301]
    """
    # Any bytes-like value: a server may hand over a bytearray for raw_path.
    text = value if isinstance(value, str) else bytes(value).decode("latin-1")
    size = len(text)
    out = _UNSAFE.sub(_escape_char, text[:limit])
    if size > limit:
        out += f"...[len={size}]"
    return out
