"""Validating what a server without a raw target leaves
(``missing_raw_target="validate-decoded"``): the decoded path and the raw query.

The path is percent-encoded again (:func:`rebuild_target`) and parsed as a
raw target, so strict UTF-8, forbidden characters, dot and empty segments
and double encoding (a decoded ``%41``) are all checked on it. What cannot be
checked any more: a ``%2F`` is a ``/`` by then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from urllib.parse import quote_from_bytes

from .._url import grammar as g
from .._url.errors import InvalidTarget
from .._url.host import Host
from .._url.policy import Policy
from .._url.target import Target

__all__ = ["check_decoded", "rebuild_target"]

_REPLACEMENT_ESCAPED: Final = b"%EF%BF%BD"  # U+FFFD in UTF-8, percent-encoded
_NEVER_UTF8: Final = b"%FF%FF%FF"  # 0xFF appears in no UTF-8 sequence (RFC 3629 §1)
_PATH_SAFE: Final = g.to_str(g.PCHAR | {g.SLASH})


def rebuild_target(path: bytes, query: bytes | None) -> bytes:
    """A raw target from decoded path bytes and a raw query: every byte the
    path may not hold raw (RFC 3986 §3.3 pchar, and '/') is percent-encoded,
    '%' included, so a decoded escape shows up as double encoding. '/' stays
    the separator: an original ``%2F`` cannot be told apart any more. An
    empty path (WSGI, a request for the mount point itself) becomes ``/``."""
    raw_path = quote_from_bytes(path or b"/", safe=_PATH_SAFE).encode("ascii")
    return raw_path + b"?" + query if query else raw_path


def check_decoded(
    parse: Callable[[bytes, Policy, Host | None], Target],
    policy: Policy,
    rebuilt: bytes,
    host: Host | None,
) -> Target:
    """``rebuilt`` (from :func:`rebuild_target`) parsed under ``policy``.

    A U+FFFD in the path is refused as ``invalid-utf8``: lenient servers put
    it where invalid bytes were, and it cannot be told from a real one. The
    parser judges it as such bytes: each escaped U+FFFD of the path becomes
    ``%FF%FF%FF`` (the same length, so offsets hold), so the rule reported,
    and its place in the order, are the parser's own. The query is left as
    received."""
    question = rebuilt.find(b"?")
    path = rebuilt if question < 0 else rebuilt[:question]
    # rebuild_target escapes every non-ASCII byte in upper case, and a
    # literal '%' as %25, so this finds exactly the U+FFFD characters.
    at = path.find(_REPLACEMENT_ESCAPED)
    if at < 0:
        return parse(rebuilt, policy, host)
    judged = path.replace(_REPLACEMENT_ESCAPED, _NEVER_UTF8) + rebuilt[len(path) :]
    parse(judged, policy, host)  # raises: the path holds bytes that are never UTF-8
    # Not reached while invalid-utf8 has no switch; if it ever gets one, refuse anyway.
    raise InvalidTarget("invalid-utf8", "path", path.count(b"/", 0, at) - 1, at)
