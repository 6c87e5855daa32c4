"""Per-route policies: which policy a raw target falls under, and which
request goes through without one.

One table serves the middlewares and the command line, so that
``urlguard audit`` predicts exactly what the middleware will do.
"""

from __future__ import annotations

import re
from binascii import unhexlify
from typing import Final, NamedTuple

from ._policy import Policy

# Absolute-form (RFC 9112 §3.2.2): scheme (any case, RFC 3986 §3.1) and
# authority, up to where the path starts.
ABSOLUTE_PREFIX: Final = re.compile(rb"[Hh][Tt][Tt][Pp][Ss]?://[^/?#]*")

# RFC 3986 §2.1 pct-encoded, in runs; a malformed escape is left as it is.
_ESCAPE_RUN: Final = re.compile(rb"(?:%[0-9A-Fa-f]{2})+")


def is_server_wide_options(method: object, target: object) -> bool:
    """``OPTIONS *``: the asterisk-form target (RFC 9112 §3.2.4), which asks
    about the server as a whole and names no resource. The middlewares pass
    it on without a target (it would be ``bad-form``), and the audit counts
    it as passed. ``method`` and ``target`` as the caller has them: ``str``
    (ASGI, WSGI) or ``bytes`` (a log line)."""
    # Each compared with its own type: bytes == str would warn under python -b.
    if not (target == b"*" if isinstance(target, bytes) else target == "*"):
        return False
    return method == b"OPTIONS" if isinstance(method, bytes) else method == "OPTIONS"


class Route(NamedTuple):
    """One per-route policy, precomputed for matching."""

    prefix: str  # as configured, for messages
    key: bytes  # the prefix percent-decoded, compared with decoded paths
    directory: bool  # prefix ends with '/': a plain prefix match
    policy: Policy


class RouteTable:
    """A base policy and per-route policies by raw path prefix, longest first.

    >>> from urlguard import Policy
    >>> table = RouteTable(Policy(), [("/files/", Policy(encoded_slash="keep"))])
    >>> table.select(b"/files/a%2Fb").encoded_slash
    'keep'
    """

    __slots__ = ("policy", "routes")

    def __init__(
        self, policy: Policy, pairs: list[tuple[str, Policy]], owner: str = "routes"
    ) -> None:
        self.policy = policy
        seen: dict[bytes, str] = {}
        compiled: list[Route] = []
        for prefix, route_policy in pairs:
            key = percent_decode(prefix.encode("ascii"))
            if key in seen:
                raise ValueError(
                    f"{owner}: routes[{prefix!r}] and routes[{seen[key]!r}] are the same prefix"
                )
            seen[key] = prefix
            compiled.append(Route(prefix, key, key.endswith(b"/"), route_policy))
        compiled.sort(key=lambda route: len(route.key), reverse=True)
        self.routes: tuple[Route, ...] = tuple(compiled)

    def select(self, target: bytes, root: bytes = b"") -> Policy:
        """The policy for ``target``: the longest matching route, else the base.

        Prefixes are compared with the *percent-decoded* path, the way the
        framework behind will route it (Starlette, werkzeug and Django all
        route on the decoded path): ``/%61dmin/`` must not escape a stricter
        ``/admin/`` policy. ``root`` is a mount point (``root_path``,
        ``SCRIPT_NAME``, decoded) still present at the start of ``target``.
        """
        if not self.routes:
            return self.policy
        path = path_of(target)
        key = percent_decode(path) if b"%" in path else path
        if root and key.startswith(root) and key[len(root) : len(root) + 1] == b"/":
            key = key[len(root) :]
        for route in self.routes:  # longest first
            if key.startswith(route.key) and (
                route.directory or len(key) == len(route.key) or key[len(route.key)] == 0x2F
            ):
                return route.policy
        return self.policy


def _decode_run(match: re.Match[bytes]) -> bytes:
    return unhexlify(match[0].replace(b"%", b""))


def percent_decode(raw: bytes) -> bytes:
    """Decode every well-formed escape, as frameworks do before routing."""
    return _ESCAPE_RUN.sub(_decode_run, raw)


def path_of(target: bytes) -> bytes:
    """The raw path of a target, origin-form or absolute-form (where an
    empty path means "/", RFC 9112 section 3.2.2)."""
    if target[:1] != b"/":
        match = ABSOLUTE_PREFIX.match(target)
        if match is not None:
            return target[match.end() :].partition(b"?")[0] or b"/"
    return target.partition(b"?")[0]
