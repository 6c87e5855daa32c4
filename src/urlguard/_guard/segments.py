"""The routing path, and the text of a ``segment`` route parameter.

A server decodes ``/units/kg%2Fs`` to ``/units/kg/s``, and every Python
router matches on that decoded path, so a route ``/units/{unit}`` cannot
tell one segment ``kg/s`` from two segments ``kg`` and ``s``. urlguard
split the raw path before decoding, so it can. When a policy keeps an
encoded slash (``encoded_slash="keep"``) and an accepted target holds one,
the middleware calls the application with a copy of the scope or environ
whose ``path`` / ``PATH_INFO`` is the *routing path*: the decoded path with
each ``/`` inside a segment written ``%2F`` and each ``%`` written ``%25``
(Apache's ``AllowEncodedSlashes NoDecode``; Go's escaped path). Every
reader after the guard (router, middleware, handler, redirect) sees that
one path; ``raw_path``, ``RAW_URI``, ``root_path`` and ``SCRIPT_NAME`` are
the server's.

A ``segment`` parameter (each framework's integration registers one with
the framework's own converter API) matches one segment of the routing path
and undoes exactly those two escapes (:func:`decode`), so its value is the
segment urlguard validated. Any other parameter keeps the text ``%2F``: no
route sees a decoded kept ``/`` it did not ask for.

A target without a kept ``/`` keeps the server's path: :func:`routing_path`
says ``None``, and :func:`decode` is then the identity, because the
segments hold neither ``%2F`` nor ``%25`` as text.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_to_bytes

from .._url.encode import encode_path_segment
from .._url.errors import InvalidTarget
from .._url.parser import PARSER
from .._url.policy import DEFAULT_POLICY

__all__ = ["decode", "routing_path", "url_text"]

# A routing path escapes two characters in a segment: a '/' kept inside it
# as %2F, and '%' as %25 (RFC 3986 §2.1), so that a '%' in the path always
# starts one of the two.
# An escape of anything but those two (RFC 3986 §2.1: '%' and two hex digits).
_OTHER_ESCAPE: Final = re.compile(rb"%(?!2[Ff5])")


def routing_path(raw_path: bytes) -> str | None:
    """The routing path of an accepted target's raw path, or ``None`` when the
    server's decoded path says the same: no segment holds ``/``, or the text
    ``%2F`` or ``%25``, once decoded.

    >>> routing_path(b"/units/kg%2Fs/100%25")
    '/units/kg%2Fs/100%25'
    >>> routing_path(b"/units/caf%C3%A9%2Fx")
    '/units/café%2Fx'
    >>> routing_path(b"/units/kg/100%25") is None
    True
    """
    if _OTHER_ESCAPE.search(raw_path) is None:
        # The only escapes are the two a routing path keeps: decoding them
        # and writing them again gives the raw path back, in upper case.
        escaped = raw_path.replace(b"%2f", b"%2F").decode("ascii")
    else:
        # Decode the whole path once, each %25 and %2F escaped again first:
        # every other escape becomes its character, those two stay as text.
        # An accepted raw path is ASCII (RFC 3986 §2) and each piece strict
        # UTF-8, so nothing is lost.
        again = raw_path.replace(b"%25", b"%2525").replace(b"%2F", b"%252F")
        escaped = unquote_to_bytes(again.replace(b"%2f", b"%252F")).decode("utf-8")
    # There, every '%' starts "%25" or "%2F": a "%2F" is a kept '/', and a
    # decoded segment holding the text "%2F" or "%25" shows as "%252F", "%2525".
    if "%2F" in escaped or "%252F" in escaped or "%2525" in escaped:
        return escaped
    return None


def decode(value: str) -> str:
    """A ``segment`` parameter's value from its routing-path text.

    The inverse of the routing path's two escapes: in that text every ``%``
    starts ``%25`` or ``%2F``, so a ``%2F`` found is always a kept ``/``,
    and undoing it first leaves only ``%25`` to undo.
    """
    if "%2" not in value:
        return value
    return value.replace("%2F", "/").replace("%25", "%")


# What a built segment must pass: the default rules, a '/' kept.
_KEPT: Final = DEFAULT_POLICY.replace(encoded_slash="keep")


def url_text(value: object) -> str:
    """A ``segment`` parameter's value as one segment of a URL being built.

    Percent-encoded (``urlguard.encode_path_segment``: ``/`` as ``%2F``), then
    judged by the default rules with a kept ``/``: a value the guard would
    refuse raises ``ValueError`` naming the rule (``/etc``: empty-segment;
    ``a/..``: dot-segment; ``%41``: double-encoding; a control character or
    U+202E: forbidden-char), so a URL built is one that routes back to it.
    """
    text = str(value)
    if not text:
        # "/" alone is a valid target, but no segment: the route would not match.
        raise ValueError("a segment parameter cannot be empty")
    try:
        encoded = encode_path_segment(text)
    except ValueError:  # a lone surrogate: no UTF-8 for it (RFC 3629 §3)
        raise ValueError("a segment parameter cannot hold a lone surrogate") from None
    try:
        PARSER.parse_target(b"/" + encoded.encode("ascii"), _KEPT, None)
    except InvalidTarget as exc:
        raise ValueError(f"a segment parameter that urlguard refuses: {exc.rule}") from None
    return encoded
