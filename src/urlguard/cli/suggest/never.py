"""What the suggestion never loosens, whatever the evidence: the list, in
one place. The other stages ask this module; none keeps a copy.

A target that needs one of these is *stopped*: listed as what enforcement
will stop, never counted as evidence for anything.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_to_bytes

from ..._url import grammar as g

#: Rules never loosened.
PROTECTED_RULES: Final = frozenset(
    (
        "malformed-escape",
        "invalid-utf8",
        "fragment",
        "bad-form",
        "bad-host",
        "host-not-allowed",
        "dot-segment",
        "drive-letter",
    )
)
#: Always-forbidden characters that ``query_allow_chars`` may re-allow
#: under a route: the line breaks and tab of text typed into a
#: ``<textarea>`` of a GET form. Never at the top level, so never through
#: a preset.
QUERY_TEXT_CONTROLS: Final = frozenset(g.BROWSER_QUERY_CHARS)
#: Line breaks: never admitted where a request that holds one was answered
#: with a redirect (a ``Location`` header built from the query is response
#: splitting, CWE-113).
LINE_BREAKS: Final = frozenset("\r\n")
#: Characters never admitted raw in a path: browsers escape them there
#: (the browser preset's path set is only ``[]|``), so a path with one raw
#: was written by hand or by a scanner (``/x/<script>``).
NEVER_RAW_IN_PATH: Final = frozenset('<>"{}^`')
#: The most a limit is ever raised to. A target longer than 16 KiB passes
#: few front ends (nginx's default buffers hold 8 KiB, Apache's
#: LimitRequestLine is 8190), and PHP and Django stop reading a query at
#: 1,000 fields; past these, a target is an attack on the parser.
LIMIT_BOUNDS: Final[dict[str, int]] = {
    "max_length": 16_384,
    "max_segments": 256,
    "max_params": 2_000,
}

# What a second decoding must not give: a separator, a control (C0, DEL,
# C1 in UTF-8), another escape (triple encoding), or a character of markup
# (`%253Cimg%2520src%253Dx%2520onerror...` is an <img> to whatever decodes
# once more: CWE-174).
_TWICE_DANGER: Final = re.compile(rb"[/\\?#<>\"'\x00-\x1f\x7f]|\xc2[\x80-\x9f]|%[0-9A-Fa-f]{2}")


def dangerous_twice(path: bytes) -> bool:
    """Whether a segment of ``path``, decoded twice, gives a separator, a
    control, another escape, a character of markup, or a dot segment
    (``%252e%252e%252f`` is ``../`` to whatever decodes once more)."""
    for segment in path.split(b"/"):
        if b"%" not in segment:
            continue
        once = unquote_to_bytes(segment)
        if b"%" not in once:
            continue
        twice = unquote_to_bytes(once)
        if _TWICE_DANGER.search(twice) or twice.partition(b";")[0] in (b".", b".."):
            return True
    return False


def route_directory(path: bytes) -> bytes:
    """The directory of ``path`` as a route key may hold it: up to its last
    ``/``, but never past an empty segment (``/assets//etc/passwd`` is under
    ``/assets/``: a route ``/assets//etc/`` would say that ``//`` is a
    place, and a router that collapses it would then see ``/etc/``)."""
    directory = path[: path.rfind(b"/") + 1]
    empty = directory.find(b"//")
    return directory if empty < 0 else directory[: empty + 1]


def never_site_wide(chars: frozenset[str]) -> bool:
    """Whether a cause that re-allows ``chars`` in the query is kept off the
    top level: CR, LF and TAB are admitted under a route, never site-wide."""
    return bool(chars & QUERY_TEXT_CONTROLS)


#: Why a target or a change is refused, by reason code.
REASONS: Final[dict[str, str]] = {
    "malformed-escape": "a '%' not followed by two hex digits",
    "invalid-utf8": "percent-decoded bytes that are not UTF-8 (overlong forms, surrogates)",
    "fragment": "a '#' in the request target",
    "bad-form": "neither origin-form nor http(s) absolute-form",
    "bad-host": "a host that is malformed or not the one the target names",
    "host-not-allowed": "a host outside allowed_hosts",
    "dot-segment": "a '.' or '..' segment (path traversal)",
    "drive-letter": "a Windows drive before a kept separator (an absolute path)",
    "forbidden-char": "a control, bidi or other always-forbidden character",
    "raw-char": "a raw byte no setting accepts (space, control, non-ASCII)",
    "authority": "in the authority of an absolute-form target",
    "unresolved": "still rejected after the last of its relaxations",
    "raw-path": 'a raw character no browser sends in a path (< > " { } ^ `)',
    "beyond-bound": (
        "a length or count past the most a limit is raised to "
        f"(max_length {LIMIT_BOUNDS['max_length']:,}, max_segments "
        f"{LIMIT_BOUNDS['max_segments']:,}, max_params {LIMIT_BOUNDS['max_params']:,})"
    ),
    "empty-beside-separator": (
        "an empty segment where a separator is kept ('//' cannot be told from "
        "a leading %2F, an absolute or UNC path)"
    ),
    "double-twice": (
        "decoded twice, a separator, a dot segment, a control, markup or another escape"
    ),
    "double-twice-under": (
        "a target under it, decoded twice, gives a separator, a dot segment, a control, "
        "markup or another escape"
    ),
    "line-break-redirect": (
        "CR or LF in a query answered with a redirect under it (response splitting)"
    ),
    "line-break-site": "CR, LF or TAB are admitted under a route, never site-wide",
}
