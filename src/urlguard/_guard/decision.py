"""The decision for one request, sans-IO: what both middlewares share.

An adapter (``urlguard.asgi``, ``urlguard.wsgi``) reads the raw target, the
query, the mount point and the Host value from its carrier (the ASGI scope,
the WSGI environ) and asks :meth:`Guard.decide`, which answers one of:

- ``None``: call the application, with the carrier as the guard left it: a
  :class:`~urlguard.Target` stored at ``"urlguard.target"`` (the common
  case), a violation at ``"urlguard.violation"`` (report-only mode), or
  nothing (``OPTIONS *``);
- an :class:`~urlguard._guard.answers.Answer`: send this status, these
  headers and this body;
- a :class:`RoutingPath`: the target keeps a ``/`` inside a segment; call
  the application with a copy of the carrier whose decoded path is this one
  (:mod:`urlguard._guard.segments`), the target stored in both;
- what the application's ``on_reject`` returned: run it instead.

A request that passes costs one host verdict lookup, one parse, one store and
one increment; what else the guard needs (the method, ``Accept``, the client,
whether it is a websocket handshake) is read, through the adapter's ``read``
function, only for a request that does not simply pass. The guard writes
nothing to the carrier but its own two keys: ``"urlguard.target"``, or
``"urlguard.violation"`` (before the hooks run, so that they find it there)
with a stale ``"urlguard.target"`` taken off.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Final, Generic, NamedTuple, TypeAlias, TypeVar

from .._url.errors import InvalidTarget
from .._url.host import Host
from .._url.policy import Policy
from .._url.target import Target, raw_path_of
from .allowed_hosts import HostFault
from .answers import Answer, answer, refusal, rejection
from .decoded import check_decoded, rebuild_target
from .options import Options, application
from .record import LOGGER, Violations, escape, log_violation
from .routes import Route, is_server_wide_options, unmount
from .segments import routing_path

__all__ = ["TARGET_KEY", "VIOLATION_KEY", "Guard", "Request", "RoutingPath"]

#: Keys added to the ASGI scope / WSGI environ. ``TARGET_KEY`` is pinned.
TARGET_KEY: Final = "urlguard.target"
VIOLATION_KEY: Final = "urlguard.violation"

#: The carrier of a request (ASGI scope, WSGI environ) and the kind of
#: application an adapter guards (and ``on_reject`` returns).
C = TypeVar("C", bound=MutableMapping[str, Any])
A = TypeVar("A", bound=Callable[..., Any])


class RoutingPath(NamedTuple):
    """The path the application routes on when a target keeps a ``/`` inside
    a segment: the adapter calls the application with a copy of the carrier
    holding it as its decoded path."""

    #: Below the mount point when ``below_mount``, else the whole path.
    path: str
    #: Whether the mount point was taken off the raw target (ASGI puts it
    #: back in front: its ``path`` holds ``root_path``; WSGI's ``PATH_INFO``
    #: is below ``SCRIPT_NAME``).
    below_mount: bool


class Request(NamedTuple):
    """What an adapter reads from a request that does not simply pass."""

    method: str
    #: The ``Accept`` header's value (several joined by ``,``), or ``None``.
    accept: str | None = None
    #: ``host:port`` of the client, for the log line.
    client: str = "-"
    #: A websocket handshake: no ``on_reject``; the adapter refuses it its own way.
    websocket: bool = False
    #: Names the server in the log line when it gives no raw target.
    server: str = "unknown"
    #: When the server gives no raw target: the decoded path (the mount point
    #: included, so that it is taken off as from a raw target; ``None``: not
    #: even that) and the raw query.
    path: bytes | None = None
    query: bytes = b""


#: What :meth:`Guard.decide` answers (see the module documentation).
Decision: TypeAlias = Answer | A | RoutingPath | None
#: The Host as an adapter hands it over: judged already (the verdict table
#: had it), a raw value, a fault of the request (none, several, disagreeing),
#: or ``None`` for an HTTP/1.0 request without one.
HostValue: TypeAlias = Host | bytes | HostFault | None


class Guard(Generic[C, A]):
    """The decision both middlewares share, from their checked options.

    ``read(carrier)`` is the adapter's: what :class:`Request` holds, read
    from the carrier, for a request that does not simply pass.
    """

    __slots__ = (
        "_parse",
        "_parse_split",
        "_read",
        "_violations",
        "checked",
        "host_header",
        "hosts",
        "keeps_slash",
        "options",
        "policy",
        "table",
        "unrouted",
    )

    def __init__(self, options: Options, read: Callable[[C], Request]) -> None:
        self.options = options
        self._read = read
        self.table = options.table
        self.policy = options.table.policy
        self.hosts = options.hosts
        self._parse: Callable[[bytes, Policy, Host | None], Target] = options.parser.parse_target
        self._parse_split: Callable[[bytes, bytes, Policy, Host | None], Target] = (
            options.parser.parse_split_target
        )
        #: The Host headers' scan (ASGI): the judged Host if the verdict table has it.
        self.host_header: Callable[[object, dict[bytes, Host]], HostValue] = (
            options.parser.host_header
        )
        policies = (self.policy, *(route.policy for route in self.table.routes))
        #: Only a policy that keeps a '/' inside a segment needs a routing path.
        self.keeps_slash = any(policy.encoded_slash == "keep" for policy in policies)
        #: No route to look up: every target is judged under the base policy.
        self.unrouted = not self.table.routes
        #: Requests decided, for metrics.
        self.checked = 0
        self._violations = Violations()

    @property
    def violations(self) -> dict[str, int]:
        """A snapshot: rule code -> how many requests broke it (both modes)."""
        return self._violations.by_rule()

    @property
    def mode(self) -> str:
        """``"enforce"`` or ``"report"``."""
        return "report" if self.options.report else "enforce"

    def decide(
        self,
        raw: bytes | None,
        query: bytes | None,
        mount: bytes | None,
        carrier: C,
        host: HostValue = None,
    ) -> Decision[A]:
        """What to do with one request (see the module documentation).

        ``raw`` is the raw target as the server gave it, or ``None`` when it
        gave none; with ``query`` ``None`` it is the whole target (WSGI), else
        the path, the query being ``query`` (ASGI: ``/a?`` and ``/a`` look
        alike). ``mount`` is the decoded mount point, as bytes, or ``None``.
        ``host`` is checked first (allow-list included, whatever its source:
        for HTTP/1.0 without Host, the absolute-form target's authority); the
        parser gives it to the target, and an absolute-form target must name
        the same authority. An accepted target is stored in ``carrier`` at
        ``"urlguard.target"``, and the answer is ``None``: call the application.
        """
        # One increment, no lock: this is every request's cost. Under the GIL
        # CPython switches threads only at calls and backward jumps, never
        # between this read and write; a free-threaded build may lose one.
        self.checked += 1
        if self.unrouted and mount is None and type(host) is Host and raw is not None:
            # Nearly every request: no route to look up, no mount point to take
            # off, a Host the verdict table knows. _decide_in_full's loop over
            # a single route, written out, since every request pays for it.
            try:
                if query is None:
                    carrier[TARGET_KEY] = self._parse(raw, self.policy, host)
                else:
                    carrier[TARGET_KEY] = self._parse_split(raw, query, self.policy, host)
            except InvalidTarget as exc:
                return self._refuse(exc, raw, query, carrier, host, self.table.base)
            if self.keeps_slash and raw.partition(b"%2")[1]:  # see _routing
                return _routing(raw, False)
            return None
        return self._decide_in_full(raw, query, mount, carrier, host)

    def decide_invalid(
        self, exc: InvalidTarget, target: bytes, carrier: C, request: Request | None = None
    ) -> Decision[A]:
        """The decision for a request whose ``target`` an adapter found
        broken before any parse (``exc``): counted as decided, then as
        :meth:`decide` answers a violation."""
        self.checked += 1
        return self._answer(exc, target, carrier, request, None, self.table.base)

    def broken_server(self, key: str, carrier: C) -> Answer:
        """The answer to a request whose carrier breaks the protocol's spec
        at ``key`` (an ASGI scope's ``headers`` as a dict, its ``query_string``
        a ``str``, no ``type``; a WSGI environ's ``HTTP_HOST`` as bytes):
        ``500``, and one error log line naming the key. Such a request shows
        nothing certain of what the client sent, so it is neither judged nor
        passed on, and nothing more is read from it (a 4xx would blame the
        client; the fault is the server's). ``key`` ``"?"``: no key breaks
        the spec, the fault is urlguard's own, logged with its traceback."""
        LOGGER.error(
            "%s: the server handed over a request that breaks the %s spec (key %s); "
            "refused with 500",
            self.options.owner,
            self.options.spec,
            escape(key),
            exc_info=key == "?",
        )
        method = carrier.get("method", carrier.get("REQUEST_METHOD"))
        body = b"500 Internal Server Error: the server handed over a request urlguard cannot read\n"
        return answer(
            method if isinstance(method, str) else "GET",
            500,
            "text/plain; charset=utf-8",
            body,
            "broken request",
            no_store=True,
        )

    def violation_counts(self) -> dict[tuple[str, str, str], int]:
        """A snapshot: (rule code, component, route prefix) -> how many
        requests broke that rule there (both modes). The route prefix is one
        of ``routes`` as configured, relative to the mount point, or ``"/"``
        for a target under none of them."""
        return self._violations.snapshot()

    # -- the rest of the decision ---------------------------------------------

    def _decide_in_full(
        self,
        raw: bytes | None,
        query: bytes | None,
        mount: bytes | None,
        carrier: C,
        host: HostValue,
    ) -> Decision[A]:
        """:meth:`decide` for a Host not judged yet, a server without a raw
        target, a mount point or per-route policies: the target must pass the
        policy of every route the application may route it to, in turn."""
        try:
            known = self._judge_host(raw, host)
        except InvalidTarget as exc:
            if raw is None:
                return self._answer(exc, b"", carrier, None, host, self.table.base)
            return self._refuse(exc, raw, query, carrier, host, self.table.route_for(raw))
        if raw is None:
            return self._without_raw_target(mount, carrier, known)
        below, routes = self.table.candidates(raw, mount)
        try:
            for route in routes:  # the last one's target is the one stored
                if query is None:
                    carrier[TARGET_KEY] = self._parse(below, route.policy, known)
                else:
                    carrier[TARGET_KEY] = self._parse_split(below, query, route.policy, known)
        except InvalidTarget as exc:
            return self._refuse(exc, below, query, carrier, host, route)
        if self.keeps_slash and below.partition(b"%2")[1]:
            return _routing(below, below is not raw)
        return None

    def _judge_host(self, raw: bytes | None, host: HostValue) -> Host | None:
        """The valid, allowed Host the request names, or ``InvalidTarget``."""
        if isinstance(host, Host):
            return host
        if host is None:  # HTTP/1.0 without Host: the target's authority, if any
            return self.hosts.unnamed(raw)
        return self.hosts.verdict(host)

    def _refuse(
        self,
        exc: InvalidTarget,
        raw: bytes,
        query: bytes | None,
        carrier: C,
        host: HostValue,
        route: Route,
    ) -> Decision[A]:
        """:meth:`_answer` for the target made of ``raw`` and ``query``."""
        target = raw + b"?" + query if query else raw
        return self._answer(exc, target, carrier, None, host, route)

    def _answer(
        self,
        exc: InvalidTarget,
        target: bytes,
        carrier: C,
        request: Request | None,
        host: HostValue,
        route: Route,
    ) -> Decision[A]:
        """The decision for a request whose ``target`` (or ``host``) broke a
        rule (``exc``) under ``route``: passed on for ``OPTIONS *`` and in
        report-only mode, else answered. The violation is stored in the
        carrier, counted, logged and given to ``on_violation``."""
        if request is None:
            request = self._read(carrier)
        if exc.component != "host" and is_server_wide_options(request.method, target):
            return None  # OPTIONS * names no resource: nothing to judge
        options = self.options
        carrier.pop(TARGET_KEY, None)  # a lenient guard in front may have stored one
        carrier[VIOLATION_KEY] = exc
        self._violations.add(exc, route.prefix)
        log_violation(
            options.log_level, options.report, exc, target, request.method, request.client, host
        )
        if options.on_violation is not None:
            try:
                options.on_violation(exc, carrier)
            except Exception:
                # A broken metrics hook must not turn a 400 into a 500, nor
                # let a request through: log it and carry on.
                LOGGER.exception("the on_violation callback failed")
        if options.report:
            return None
        if not request.websocket:
            custom = self._custom_response(exc, carrier)
            if custom is not None:
                return custom
        content_type, body = rejection(exc, target, request.accept)
        return answer(
            request.method, 400, content_type, body, f"invalid request target: {exc.rule}"
        )

    def _custom_response(self, exc: InvalidTarget, carrier: C) -> A | None:
        """The application ``on_reject`` returned, or ``None`` for the default 400."""
        on_reject = self.options.on_reject
        if on_reject is None:
            return None
        try:
            result: A | None = on_reject(exc, carrier)
        except Exception:
            LOGGER.exception("the on_reject callback failed; sent the default 400")
            return None
        if result is not None and not callable(result):
            LOGGER.error(
                "on_reject returned %s, not %s; sent the default 400",
                type(result).__name__,
                application(self.options.spec),
            )
            return None
        return result

    def _without_raw_target(
        self, mount: bytes | None, carrier: C, host: Host | None
    ) -> Decision[A]:
        """A server that gives no raw target: validate what is left
        (``missing_raw_target="validate-decoded"``), else 501 and an error
        log line naming the server."""
        options = self.options
        request = self._read(carrier)
        target = b""
        if request.path is not None:
            target = rebuild_target(request.path, request.query or None)
            if mount is not None:
                target = unmount(target, mount)
        if request.path is not None and options.missing_raw_target == "validate-decoded":
            route = self.table.route_for(target)
            try:
                carrier[TARGET_KEY] = check_decoded(self._parse, route.policy, target, host)
            except InvalidTarget as exc:
                return self._answer(exc, target, carrier, request, host, route)
            return None
        if is_server_wide_options(request.method, target):
            return None
        LOGGER.error(
            "%s: the server (%s) provides no raw request target (%s); %s. "
            "Run under a server that does (see urlguard's docs), or pass "
            "missing_raw_target='validate-decoded'",
            options.owner,
            escape(request.server),
            options.missing,
            "passed on (report-only)" if options.report else "refused with 501",
        )
        if options.report:
            return None
        content_type, body = refusal(request.accept, options.missing)
        return answer(
            request.method, 501, content_type, body, "no raw request target", no_store=True
        )


def _routing(raw: bytes, below_mount: bool) -> RoutingPath | None:
    """The routing path of an accepted target that keeps a '/' inside a
    segment, or the text "%2F" or "%25" there: each needs an escape "%2" in
    the raw target, which the decision looks for first, with
    ``raw.partition``: ``b"%2" in raw`` and ``raw.find`` first try to read
    their argument as an integer (a byte value), and raise and clear a
    TypeError inside to find it is not one."""
    # From the raw path, not Target.segments: a target makes its decoded
    # pieces only when they are read, and most handlers never read them.
    path = routing_path(raw.partition(b"?")[0] if raw[:1] == b"/" else raw_path_of(raw))
    if path is None:
        return None
    # The tuple RoutingPath(path, below_mount) makes, without the Python-level
    # __new__ a NamedTuple defines: a kept '/' is every request on such routes.
    return tuple.__new__(RoutingPath, (path, below_mount))
