"""What urlguard answers in place of the application: the 400 for a target
that breaks a rule, the 501 for a server that gives no raw target.

Complete responses (``Content-Length``, so keep-alive goes on), in the form
the client asks for: RFC 9457 ``application/problem+json`` when it asks for
JSON, one line of ``text/plain`` otherwise. Built from the rule code and
input-free words, never from the input.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Final, NamedTuple
from urllib.parse import unquote_to_bytes

from .._url.errors import InvalidTarget

__all__ = ["Answer", "answer", "describe", "forbidden_class", "refusal", "rejection", "wants_json"]


class Answer(NamedTuple):
    """A complete response for the adapter to send: ``headers`` include
    ``Content-Length``, so keep-alive goes on; ``body`` is empty for ``HEAD``
    (RFC 9110 §9.3.2). ``reason`` is one line for a websocket close frame."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    reason: str

    @property
    def status_line(self) -> str:
        """``"400 Bad Request"``, as WSGI's ``start_response`` takes it."""
        return f"{self.status} {HTTPStatus(self.status).phrase}"


def answer(
    method: str,
    status: int,
    content_type: str,
    body: bytes,
    reason: str,
    *,
    no_store: bool = False,
) -> Answer:
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("X-Content-Type-Options", "nosniff"),
    ]
    if no_store:
        # RFC 9110 §15.6.2: a 501 is heuristically cacheable.
        headers.append(("Cache-Control", "no-store"))
    if method == "HEAD":
        body = b""  # the headers of the GET response, without its body (RFC 9110 §9.3.2)
    return Answer(status, tuple(headers), body, reason)


def rejection(exc: InvalidTarget, target: bytes, accept: str | None) -> tuple[str, bytes]:
    """Content type and body of the 400: names the rule, never the input.
    In a problem (RFC 9457 §3.2), the rule and where it broke are extension
    members."""
    where = {"component": exc.component, "index": exc.index, "offset": exc.offset}
    return _body(accept, 400, describe(exc, target), {"rule": exc.rule, **where})


def refusal(accept: str | None, missing: str) -> tuple[str, bytes]:
    """Content type and body of the 501 sent when the server hands over no
    raw target at all and ``missing_raw_target="refuse"``.

    501 Not Implemented (RFC 9110 §15.6.2): the request may be fine, the
    server stack lacks what urlguard needs to judge it. A 4xx would blame
    the client and stay out of server-error alerting; 503 invites retries
    of something that will never succeed; 500 reads as a crash. 501 is
    heuristically cacheable, so the answer says ``Cache-Control: no-store``.
    """
    detail = (
        f"the server does not provide the raw request target ({missing}); "
        "urlguard refuses to guess it from decoded values"
    )
    return _body(accept, 501, detail, {"code": "no-raw-target"})


def _body(
    accept: str | None, status: int, detail: str, members: dict[str, object]
) -> tuple[str, bytes]:
    """RFC 9457 ``application/problem+json`` when the client asks for JSON,
    else one line of text: ``400 Bad Request: <detail>``."""
    title = HTTPStatus(status).phrase
    if accept is not None and wants_json(accept):
        # §4.2.1: "about:blank" means the status says it all.
        problem = {"type": "about:blank", "title": title, "status": status, "detail": detail}
        body = json.dumps({**problem, **members}, separators=(",", ":")).encode("ascii")
        return "application/problem+json", body
    return "text/plain; charset=utf-8", f"{status} {title}: {detail}\n".encode("ascii")


# -- what kind of forbidden character -------------------------------------------

# The classes forbidden by default (grammar.FORBIDDEN_RANGES), in words.
_CONTROL: Final = "a control character (C0, DEL or C1)"
_SEPARATOR: Final = "a line or paragraph separator (U+2028, U+2029)"
_BIDI: Final = "a bidirectional control (Unicode TR9; CVE-2021-42574)"
_NONCHARACTER: Final = "a Unicode noncharacter"
_OUTSIDE: Final = "outside the policy's allowed_ranges"


def forbidden_class(char: str) -> str:
    """Which class of forbidden character ``char`` is, in words: a control,
    a separator, a bidi control or a noncharacter (all forbidden by default),
    else outside the policy's ``allowed_ranges``.

        >>> forbidden_class("\\u202e")
        'a bidirectional control (Unicode TR9; CVE-2021-42574)'
        >>> forbidden_class("é")
        "outside the policy's allowed_ranges"
    """
    code = ord(char)
    if code <= 0x1F or 0x7F <= code <= 0x9F:
        return _CONTROL
    if code in (0x2028, 0x2029):
        return _SEPARATOR
    if (
        code == 0x061C
        or 0x200E <= code <= 0x200F
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
    ):
        return _BIDI
    if 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE:
        return _NONCHARACTER
    return _OUTSIDE


def describe(exc: InvalidTarget, target: bytes) -> str:
    """``str(exc)``, where a ``forbidden-char`` says which class of character
    it found instead of "outside the allowed range" (which reads wrong when
    the allowed range is all of Unicode). The class comes from the character
    at ``exc.offset`` in ``target`` (the target that was parsed); it names a
    class, never the character. An error that carries its own ``detail``
    already says it."""
    if exc.rule != "forbidden-char" or getattr(exc, "detail", None) is not None:
        return str(exc)
    char = _char_at(target, exc.offset)
    if char is None:
        return str(exc)
    return str(exc).replace(exc.reason, f"a decoded character is {forbidden_class(char)}", 1)


def _char_at(target: bytes, offset: int) -> str | None:
    """The character that starts at ``offset``: percent-encoded UTF-8 (one to
    four escapes) or one raw ASCII byte; ``None`` when there is neither."""
    if target[offset : offset + 1] != b"%":
        byte = target[offset : offset + 1]
        return byte.decode("ascii") if byte and byte.isascii() else None
    data = unquote_to_bytes(target[offset : offset + 12])
    for size in range(1, 5):
        try:
            return data[:size].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


# -- Accept negotiation (RFC 9110 §12.5.1), only ever on the rejection path --

_JSON_RANGES: Final = frozenset(("application/json", "application/problem+json", "application/*"))
_TEXT_SPECIFICITY: Final = {"text/plain": 3, "text/*": 2, "*/*": 1}
_Q: Final = re.compile(r"\s*[qQ]\s*=\s*([0-9](?:\.[0-9]{0,3})?)\s*$")


def wants_json(accept: str) -> bool:
    """Whether the client asked for JSON explicitly, at least as much as text.

    ``*/*`` alone is not asking for JSON: curl and browsers send it, and they
    are better served by one line of text.
    """
    q_json = 0.0
    q_text, text_rank = 0.0, 0
    for item in accept.split(","):
        media, _, params = item.partition(";")
        media = media.strip().lower()
        if media not in _JSON_RANGES and media not in _TEXT_SPECIFICITY:
            continue
        q = 1.0
        for param in params.split(";"):
            match = _Q.match(param)
            if match is not None:
                q = float(match[1])
        if media in _JSON_RANGES:
            q_json = max(q_json, q)
        elif _TEXT_SPECIFICITY[media] > text_rank:
            q_text, text_rank = q, _TEXT_SPECIFICITY[media]
    return q_json > 0 and q_json >= q_text
