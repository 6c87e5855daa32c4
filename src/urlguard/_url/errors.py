"""The one error family: a rejected request target.

An ``InvalidTarget`` names exactly one rule code (see docs/rules.md), where
in the target it was found, and why, in words. Its message is built from those
fields alone and never contains any of the input, so it is safe to log, to
show, and to send back in a 400.
"""

from __future__ import annotations

from typing import Any, Final, Literal

Rule = Literal[
    "too-long",
    "too-many",
    "fragment",
    "bad-form",
    "bad-host",
    "host-not-allowed",
    "raw-char",
    "malformed-escape",
    "invalid-utf8",
    "forbidden-char",
    "encoded-slash",
    "encoded-backslash",
    "dot-segment",
    "empty-segment",
    "drive-letter",
    "double-encoding",
]
Component = Literal["target", "path", "query", "host"]

#: Every rule code, in the order docs/rules.md states them (the order in
#: which the rules are applied, the first violation found being the one
#: reported, is stated there once).
RULES: Final[tuple[Rule, ...]] = (
    "too-long",
    "fragment",
    "bad-form",
    "bad-host",
    "host-not-allowed",
    "raw-char",
    "too-many",
    "malformed-escape",
    "encoded-slash",
    "encoded-backslash",
    "invalid-utf8",
    "forbidden-char",
    "dot-segment",
    "empty-segment",
    "drive-letter",
    "double-encoding",
)

#: One line per rule: what was wrong, in words a client developer can act on.
REASONS: Final[dict[Rule, str]] = {
    "too-long": "the request target is longer than allowed",
    "too-many": "the request target has too many path segments or query parameters",
    "fragment": "the request target contains '#': fragments are never sent (RFC 9110 section 7.1)",
    "bad-form": "the request target is neither origin-form nor http(s) absolute-form "
    "(RFC 9112 section 3.2; over HTTP/2 and HTTP/3 only origin-form, RFC 9113 section 8.3.1)",
    "bad-host": "the host is missing, repeated, malformed, or not the one the target "
    "names (RFC 9112 section 3.2)",
    "host-not-allowed": "the host is not one this application serves",
    "raw-char": "a character that must be percent-encoded appears raw (RFC 3986 section 2)",
    "malformed-escape": "'%' is not followed by two hexadecimal digits (RFC 3986 section 2.1)",
    "invalid-utf8": "percent-decoded bytes are not valid UTF-8 (RFC 3629)",
    "forbidden-char": "a decoded character is outside the allowed range",
    "encoded-slash": "a path segment contains an encoded '/' (%2F)",
    "encoded-backslash": "a path segment contains an encoded '\\' (%5C)",
    "dot-segment": "a path segment is '.' or '..' (RFC 3986 section 3.3)",
    "empty-segment": "the path contains an empty segment ('//')",
    "drive-letter": "a kept separator makes a Windows drive ('c:') the start of a path segment",
    "double-encoding": "a decoded path segment still contains a percent-escape",
}


class InvalidTarget(ValueError):
    """The request target breaks one of urlguard's rules.

    Attributes:
        rule: the rule code, one of :data:`RULES` (``"invalid-utf8"``, ...).
        component: ``"target"`` for rules about the whole target (and the
            authority of an absolute-form target), ``"path"`` or ``"query"``,
            or ``"host"`` for the request's Host header (or ``:authority``).
        index: the path segment or query pair (counting the non-empty ones)
            where the problem is, or ``None`` for a rule about the whole target.
        offset: the byte offset in the raw target (for ``"host"``: in the
            Host value) where the problem starts.
        reason: one line saying what is wrong, without any of the input.

    Built like any exception, positionally or by keyword::

        >>> error = InvalidTarget("too-long", "target", None, 8192)
        >>> error == error and str(error)
        'too-long: the request target is longer than allowed (target, byte offset 8192)'
        >>> InvalidTarget(rule="dot-segment", component="path", index=1, offset=3).index
        1
    """

    # The four fields live in ``args``, where ``BaseException.__new__`` puts
    # the positional arguments: so pickling and copying rebuild the error,
    # and the compiled parser makes one without a Python ``__init__`` frame.
    __slots__ = ()

    def __init__(self, rule: Rule, component: Component, index: int | None, offset: int) -> None:
        self.args = (rule, component, index, offset)  # the keyword form, too

    @property
    def rule(self) -> Rule:
        return self._field(0)  # type: ignore[no-any-return]

    @property
    def component(self) -> Component:
        return self._field(1)  # type: ignore[no-any-return]

    @property
    def index(self) -> int | None:
        return self._field(2)  # type: ignore[no-any-return]

    @property
    def offset(self) -> int:
        return self._field(3)  # type: ignore[no-any-return]

    def _field(self, position: int) -> Any:
        # None on an instance made without its four arguments.
        args = self.args
        return args[position] if len(args) == 4 else None

    @property
    def reason(self) -> str:
        rule = self.rule
        unknown = "the request target was rejected"
        return REASONS.get(rule, unknown) if isinstance(rule, str) else unknown

    def __str__(self) -> str:
        # From the fields alone, never from the input; and never raising, even
        # on an instance made without __init__ or with fields of odd types.
        rule, component, index, offset = self.rule, self.component, self.index, self.offset
        rule_text = rule if isinstance(rule, str) else "rejected"
        where: str = component if isinstance(component, str) else "target"
        if isinstance(index, int):
            where = f"{where} {_piece(where)} {index}"
        at = f", byte offset {offset}" if isinstance(offset, int) else ""
        return f"{rule_text}: {self.reason} ({where}{at})"

    def __repr__(self) -> str:
        fields = (self.rule, self.component, self.index, self.offset)
        return f"InvalidTarget({', '.join(map(repr, fields))})"


def _piece(component: object) -> str:
    return "segment" if component == "path" else "parameter"
