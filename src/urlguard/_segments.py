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

from typing import Final
from urllib.parse import unquote

from ._encode import encode_path_segment
from ._errors import InvalidTarget
from ._parser import PARSER
from ._policy import DEFAULT_POLICY

__all__ = ["decode", "needs_routing_path", "routing_path", "url_text"]

# The text that only a routing path holds: '/' inside a segment, and the two
# escapes decode() undoes. Bytes of an accepted (so ASCII) raw path: each of
# them needs a '%2F', '%2f' or '%25' there.
_ESCAPES: Final = ("%2F", "%25")


def needs_routing_path(raw: bytes) -> bool:
    """Whether a raw target may hold a kept ``/`` or the text ``%2F``/``%25``
    in a segment: a quick test on bytes, so most requests never split."""
    return b"%2" in raw and (b"%2F" in raw or b"%2f" in raw or b"%25" in raw)


def routing_path(raw_path: bytes) -> str | None:
    """The routing path of an accepted target's raw path, or ``None`` when the
    server's decoded path says the same (no segment holds ``/``, ``%2F`` or
    ``%25`` once decoded).

    >>> routing_path(b"/units/kg%2Fs/100%25")
    '/units/kg%2Fs/100%25'
    >>> routing_path(b"/units/kg/100%25") is None
    True
    """
    # An accepted raw path is ASCII (RFC 3986 §2: no raw byte >= 0x80) and
    # each piece strict UTF-8 once decoded, so unquote loses nothing.
    segments = [unquote(piece) for piece in raw_path.decode("ascii").split("/")]
    if not any("/" in s or "%2F" in s or "%25" in s for s in segments):
        return None
    # '%' first, so that the '%2F' written next is the only other escape.
    return "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)


def decode(value: str) -> str:
    """A ``segment`` parameter's value from its routing-path text.

    The inverse of the routing path's two escapes: in that text every ``%``
    starts ``%25`` or ``%2F``, so a ``%2F`` found is always a kept ``/``,
    and undoing it first leaves only ``%25`` to undo.
    """
    if "%2" not in value:
        return value
    return value.replace(_ESCAPES[0], "/").replace(_ESCAPES[1], "%")


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
    if text in ("", ".", ".."):
        # RFC 3986 §5.2.4: no escape of "." survives dot-segment removal.
        raise ValueError(f"a segment parameter cannot be {text!r}")
    try:
        encoded = encode_path_segment(text)
    except ValueError:  # a lone surrogate: no UTF-8 for it (RFC 3629 §3)
        raise ValueError("a segment parameter cannot hold a lone surrogate") from None
    try:
        PARSER.parse_target(b"/" + encoded.encode("ascii"), _KEPT, None)
    except InvalidTarget as exc:
        raise ValueError(f"a segment parameter that urlguard refuses: {exc.rule}") from None
    return encoded
