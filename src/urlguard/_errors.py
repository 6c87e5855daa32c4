"""The one error family: a rejected request target.

An ``InvalidTarget`` names exactly one rule code (DESIGN.md section 2), where in the
target it was found, and why, in words. Its message is built from those
fields alone and never contains any of the input, so it is safe to log, to
show, and to send back in a 400.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

Rule = Literal[
    "too-long",
    "too-many",
    "fragment",
    "bad-form",
    "raw-char",
    "malformed-escape",
    "invalid-utf8",
    "forbidden-char",
    "encoded-slash",
    "encoded-backslash",
    "dot-segment",
    "empty-segment",
    "double-encoding",
]
Component = Literal["target", "path", "query"]

#: Every rule code, in the order the parser applies them: first to the whole
#: target (too-long, fragment, bad-form), then raw-char and too-many (path,
#: then query), then segment by segment (empty-segment; for each piece of
#: the segment malformed-escape, encoded-slash, encoded-backslash,
#: invalid-utf8, forbidden-char; then dot-segment and double-encoding), then
#: query pair by pair (name, then value: malformed-escape, invalid-utf8,
#: forbidden-char). The first violation found is the one reported.
RULES: Final[tuple[Rule, ...]] = (
    "too-long",
    "fragment",
    "bad-form",
    "raw-char",
    "too-many",
    "malformed-escape",
    "encoded-slash",
    "encoded-backslash",
    "invalid-utf8",
    "forbidden-char",
    "dot-segment",
    "empty-segment",
    "double-encoding",
)

#: One line per rule: what was wrong, in words a client developer can act on.
REASONS: Final[dict[Rule, str]] = {
    "too-long": "the request target is longer than allowed",
    "too-many": "the request target has too many path segments or query parameters",
    "fragment": "the request target contains '#': fragments are never sent (RFC 9110 section 7.1)",
    "bad-form": "the request target is neither origin-form nor http(s) absolute-form "
    "(RFC 9112 section 3.2)",
    "raw-char": "a character that must be percent-encoded appears raw (RFC 3986 section 2)",
    "malformed-escape": "'%' is not followed by two hexadecimal digits (RFC 3986 section 2.1)",
    "invalid-utf8": "percent-decoded bytes are not valid UTF-8 (RFC 3629)",
    "forbidden-char": "a decoded character is outside the allowed range",
    "encoded-slash": "a path segment contains an encoded '/' (%2F)",
    "encoded-backslash": "a path segment contains an encoded '\\' (%5C)",
    "dot-segment": "a path segment is '.' or '..' (RFC 3986 section 3.3)",
    "empty-segment": "the path contains an empty segment ('//')",
    "double-encoding": "a decoded path segment still contains a percent-escape",
}


class InvalidTarget(ValueError):
    """The request target breaks one of urlguard's rules.

    Attributes:
        rule: the rule code, one of :data:`RULES` (``"invalid-utf8"``, ...).
        component: ``"target"`` for rules about the whole target, else
            ``"path"`` or ``"query"``.
        index: the path segment or query pair (counting the non-empty ones)
            where the problem is, or ``None`` for a rule about the whole target.
        offset: the byte offset in the raw target where the problem starts.
        reason: one line saying what is wrong, without any of the input.

    Built positionally, ``InvalidTarget(rule, component, index, offset)``,
    as the parser does (an application's own tests may build one too).
    """

    # No __init__ of its own: BaseException keeps the four fields in
    # ``args`` in one C call, and the attributes read them from there. A
    # Python-level __init__ storing five attributes cost about a tenth of a
    # rejection's instructions: rejections are a hot path too, under attack.
    # The message is built only when shown.
    __slots__ = ()
    args: tuple[Rule, Component, int | None, int]

    if TYPE_CHECKING:

        def __init__(
            self, rule: Rule, component: Component, index: int | None, offset: int, /
        ) -> None: ...

    @property
    def rule(self) -> Rule:
        return self.args[0]

    @property
    def component(self) -> Component:
        return self.args[1]

    @property
    def index(self) -> int | None:
        return self.args[2]

    @property
    def offset(self) -> int:
        return self.args[3]

    @property
    def reason(self) -> str:
        return REASONS[self.args[0]]

    def __str__(self) -> str:
        where = (
            self.component
            if self.index is None
            else f"{self.component} {_piece(self.component)} {self.index}"
        )
        return f"{self.rule}: {self.reason} ({where}, byte offset {self.offset})"


def _piece(component: Component) -> str:
    return "segment" if component == "path" else "parameter"
