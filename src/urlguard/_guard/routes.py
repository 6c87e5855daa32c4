"""Where a raw target is: under which mount point, under which per-route
policy, and which request goes through without one.

One table serves the middlewares and the command line, so that
``urlguard audit`` predicts exactly what the middleware will do.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple
from urllib.parse import unquote_to_bytes

from .._url.policy import Policy

# Absolute-form (RFC 9112 §3.2.2): scheme (any case, RFC 3986 §3.1) and
# authority, up to where the path starts.
ABSOLUTE_PREFIX: Final = re.compile(rb"[Hh][Tt][Tt][Pp][Ss]?://[^/?#]*")


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

    __slots__ = ("base", "policy", "routes")

    def __init__(
        self, policy: Policy, pairs: list[tuple[str, Policy]], owner: str = "routes"
    ) -> None:
        self.policy = policy
        #: The base policy as a route: what applies where no route does,
        #: counted under ``"/"``.
        self.base = Route("/", b"/", True, policy)
        seen: dict[bytes, str] = {}
        compiled: list[Route] = []
        for prefix, route_policy in pairs:
            key = unquote_to_bytes(prefix.encode("ascii"))
            if key in seen:
                raise ValueError(
                    f"{owner}: routes[{prefix!r}] and routes[{seen[key]!r}] are the same prefix"
                )
            seen[key] = prefix
            compiled.append(Route(prefix, key, key.endswith(b"/"), route_policy))
        compiled.sort(key=lambda route: len(route.key), reverse=True)
        self.routes: tuple[Route, ...] = tuple(compiled)

    def select(self, target: bytes) -> Policy:
        """The policy for ``target``: the longest matching route's, else the base."""
        return self.route_for(target).policy

    def route_for(self, target: bytes) -> Route:
        """The longest route ``target`` is under, else :attr:`base`.

        Prefixes are compared with the *percent-decoded* path, the way the
        framework behind will route it (Starlette, werkzeug and Django all
        route on the decoded path): ``/%61dmin/`` must not escape a stricter
        ``/admin/`` policy. ``target`` is relative to the mount point (see
        :func:`unmount`).
        """
        if not self.routes:
            return self.base
        path = path_of(target)
        return self._route_decoded(unquote_to_bytes(path))

    def candidates(self, raw: bytes, mount: bytes | None) -> tuple[bytes, tuple[Route, ...]]:
        """``raw`` relative to the mount point (:func:`unmount`), and the
        routes whose policies it must pass, the one :meth:`route_for` picks
        for it last. Below a mount point, that is also the route for the
        path a framework routes on, the decoded path with the decoded mount
        point taken off (Starlette's ``get_route_path``). The two differ
        where an escape hides the mount point's boundary (``/m%2Fadmin/x``
        below ``/m`` is ``/m%2Fadmin/x`` to the first and ``/admin/x`` to the
        second); the target must pass both."""
        if not mount:
            return raw, (self.route_for(raw),)
        unmounted = unmount(raw, mount)
        first = self.route_for(unmounted)
        if not self.routes:
            return unmounted, (first,)
        decoded = unquote_to_bytes(path_of(raw))
        mount = mount.rstrip(b"/")
        below = decoded[len(mount) : len(mount) + 1] in (b"", b"/")
        if mount and decoded.startswith(mount) and below:
            decoded = decoded[len(mount) :] or b"/"
        second = self._route_decoded(decoded)
        return unmounted, (first,) if second is first else (second, first)

    def _route_decoded(self, key: bytes) -> Route:
        """The longest route that the decoded path ``key`` is under, else the base."""
        for route in self.routes:  # longest first
            if key.startswith(route.key) and (
                route.directory or len(key) == len(route.key) or key[len(route.key)] == 0x2F
            ):
                return route
        return self.base


def path_of(target: bytes) -> bytes:
    """The raw path of a target, origin-form or absolute-form (where an
    empty path means "/", RFC 9112 section 3.2.2)."""
    if target[:1] != b"/":
        match = ABSOLUTE_PREFIX.match(target)
        if match is not None:
            return target[match.end() :].partition(b"?")[0] or b"/"
    return target.partition(b"?")[0]


def unmount(raw: bytes, mount: bytes) -> bytes:
    """``raw`` relative to the mount point ``mount``, or ``raw`` itself when it
    is not below it.

    ``mount`` is the decoded mount point (ASGI ``root_path`` as UTF-8, WSGI
    ``SCRIPT_NAME`` as latin-1 bytes); the raw target is compared with it
    percent-decoded, segment by segment, as frameworks compare their decoded
    path with it (Starlette's ``get_route_path``): ``/my%20app/x`` is below
    ``/my app``, so is ``/%6Dnt/x`` below ``/mnt``, and ``/mntx`` is not below
    ``/mnt``. What is left starts with ``/``: a request for the mount point
    itself (``/mnt``, ``/mnt?q``) is a request for ``/`` (``/?q``) below it,
    the same as ``/mnt/`` (``/mnt/?q``).

        >>> unmount(b"/my%20app/x?q=1", b"/my app"), unmount(b"/mnt", b"/mnt")
        (b'/x?q=1', b'/')

    uvicorn glues ``root_path`` to whatever the client sent, so ``*`` and an
    absolute-form target may follow the mount point directly (``/mnt*``,
    ``/mnthttp://h/x``): those are taken off as well.
    """
    if not mount:
        return raw
    if mount[-1] == 0x2F:  # a mount point given with a trailing '/', seldom
        mount = mount.rstrip(b"/")
        if not mount:
            return raw
    if raw.startswith(mount):  # as the server glued it, or a plain ASCII path
        rest = raw[len(mount) :]
        if rest[:1] == b"/":
            return rest
        if not rest or rest[:1] == b"?":
            return b"/" + rest
        if rest == b"*" or ABSOLUTE_PREFIX.match(rest):
            return rest
    path = raw.partition(b"?")[0]
    if b"%" not in path:
        return raw
    depth = mount.count(b"/")
    pieces = path.split(b"/", depth + 1)
    if len(pieces) <= depth:
        return raw  # fewer segments than the mount point
    prefix = b"/".join(pieces[: depth + 1])
    if unquote_to_bytes(prefix) != mount:
        return raw
    rest = raw[len(prefix) :]
    return rest if rest[:1] == b"/" else b"/" + rest
