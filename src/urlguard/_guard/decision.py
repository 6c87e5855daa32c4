"""The decision for one request, sans-IO: what both middlewares share.

An adapter (``urlguard.asgi``, ``urlguard.wsgi``) reads the raw target, the
query and the mount point from its carrier (the ASGI scope, the WSGI environ)
and asks :meth:`Guard.decide`, which answers one of:

- ``None``: call the application, with the carrier as the guard left it: a
  :class:`~urlguard.Target` stored at ``"urlguard.target"`` (the common
  case), a violation at ``"urlguard.violation"`` (report-only mode), or
  nothing (``OPTIONS *``);
- an :class:`Answer`: send this status, these headers and this body;
- a :class:`RoutingPath`: the target keeps a ``/`` inside a segment; call
  the application with a copy of the carrier whose decoded path is this
  one (``segments``), the target stored in both;
- the application ``on_reject`` returned: run it instead.

The common case is one test for the adapter (``decision is None``), and the
guard stores the target itself: on every request, no ``isinstance`` chain.
The guard parses with the parser it was given (``parser``: a module with
``parse_target``, ``parse_split_target`` and ``host_header``), by default
the one chosen at import (``urlguard._url.parser``).

Everything else happens here, once for both: the options, checked at
construction (``TypeError``/``ValueError`` naming the keyword); the mount
point and the per-route policy; which answer (``answers`` builds it, never
from the input); the log line, with every byte outside 0x21-0x7E
backslash-escaped and its length bounded, so no CR, LF or control byte ever
reaches a log; the counters and the hooks.

A request that passes costs the adapter three lookups: what else the guard
needs (the method, ``Accept``, the client, whether it is a websocket
handshake) is read, through the adapter's ``read`` function, only for a
request that does not simply pass. The guard writes nothing to the carrier
but its own two keys: ``"urlguard.target"``, or ``"urlguard.violation"``
(before the hooks run, so that they find it there) with a stale
``"urlguard.target"`` taken off.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, Final, Generic, Literal, NamedTuple, TypeVar
from urllib.parse import quote_from_bytes

from .._url import grammar as g
from .._url import parser as _parser
from .._url.errors import InvalidTarget
from .._url.host import Host, host_text
from .._url.policy import DEFAULT_POLICY, Policy
from .._url.target import Target, raw_path_of
from .allowed_hosts import AllowedHosts, HostCheck, HostFault, cause
from .answers import Answer, answer, refusal, rejection
from .config import MODES, Config, Mode, check_prefix, load_config, route_policy
from .routes import Route, RouteTable, is_server_wide_options, unmount
from .segments import routing_path

__all__ = [
    "LOGGER",
    "TARGET_KEY",
    "VIOLATION_KEY",
    "Answer",
    "Guard",
    "GuardedMiddleware",
    "MissingRawTarget",
    "Request",
    "RoutingPath",
    "escape",
    "rebuild_target",
]

#: The one logger: ``logging.getLogger("urlguard")``.
LOGGER: Final = logging.getLogger("urlguard")

MissingRawTarget = Literal["refuse", "validate-decoded"]
MISSING_RAW_TARGET: Final[tuple[str, ...]] = ("refuse", "validate-decoded")

#: Keys added to the ASGI scope / WSGI environ. ``TARGET_KEY`` is pinned.
TARGET_KEY: Final = "urlguard.target"
VIOLATION_KEY: Final = "urlguard.violation"

#: At most this many bytes of a target go into a log line (escaped, so the
#: line holds at most four times as many characters).
LOG_LIMIT: Final = 256

#: The carrier of a request (ASGI scope, WSGI environ) and the kind of
#: application an adapter guards (and ``on_reject`` returns).
C = TypeVar("C", bound=MutableMapping[str, Any])
A = TypeVar("A", bound=Callable[..., Any])


class RoutingPath(NamedTuple):
    """The path the application routes on when a target keeps a ``/`` inside
    a segment (``segments.routing_path``): the adapter calls the application
    with a copy of the carrier holding it as its decoded path."""

    #: Below the mount point when ``below_mount``, else the whole path.
    path: str
    #: Whether the mount point was taken off the raw target (ASGI puts it
    #: back in front: its ``path`` holds ``root_path``; WSGI's ``PATH_INFO``
    #: is below ``SCRIPT_NAME``).
    below_mount: bool


def _routing(raw: bytes, below_mount: bool) -> RoutingPath | None:
    # From the raw path, not Target.segments: a target makes its decoded
    # pieces only when they are read, and most handlers never read them.
    path = routing_path(raw.partition(b"?")[0] if raw[:1] == b"/" else raw_path_of(raw))
    return None if path is None else RoutingPath(path, below_mount)


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


class Guard(Generic[C, A]):
    """Checked options and the decision both middlewares share. One per middleware.

    ``read(carrier)`` is the adapter's: what :class:`Request` holds, read from
    the carrier; ``protocol`` (``"ASGI"``, ``"WSGI"``) and ``missing`` (what the
    server failed to provide) go into messages.
    """

    __slots__ = (
        "_lock",
        "_parse",
        "_parse_split",
        "_read",
        "_violations",
        "checked",
        "host_header",
        "hosts",
        "keeps_slash",
        "known_hosts",
        "log_level",
        "missing",
        "missing_raw_target",
        "mode",
        "on_reject",
        "on_violation",
        "owner",
        "parser",
        "policy",
        "protocol",
        "report",
        "routed",
        "routes",
        "table",
    )

    policy: Policy
    routes: tuple[Route, ...]
    mode: Mode
    report: bool

    def __init__(
        self,
        owner: str,
        protocol: str,
        read: Callable[[C], Request],
        missing: str,
        *,
        policy: object = None,
        routes: object = None,
        config: object = None,
        mode: object = None,
        on_reject: object = None,
        on_violation: object = None,
        missing_raw_target: object = "refuse",
        log_level: object = logging.WARNING,
        parser: object = None,
        allowed_hosts: object = None,
    ) -> None:
        self.owner = owner
        self.parser = _parser_module(owner, parser)
        _parser.warn_if_pure()  # pip hides the build's output: say it once here
        # Bound once: the functions every request calls.
        self._parse: Callable[[bytes, Policy, Host | None], Target] = self.parser.parse_target
        self._parse_split: Callable[[bytes, bytes, Policy, Host | None], Target] = (
            self.parser.parse_split_target
        )
        #: ASGI's Host, judged if the verdict table has it (``parser_py.host_header``).
        self.host_header: Callable[[object, dict[bytes, Host]], Host | bytes | None] = (
            self.parser.host_header
        )
        self.protocol = protocol
        self._read = read
        self.missing = missing
        cfg = _config(owner, config, policy, routes)
        if cfg is not None:
            self.policy = cfg.policy
            pairs: list[tuple[str, Policy]] = list(cfg.routes)
            default_mode: Mode = cfg.mode
        else:
            if policy is not None and not isinstance(policy, Policy):
                raise TypeError(
                    f"{owner}: policy must be a urlguard.Policy, not {type(policy).__name__}"
                )
            self.policy = DEFAULT_POLICY if policy is None else policy
            pairs = _routes(owner, routes, self.policy)
            default_mode = "enforce"
        if allowed_hosts is None and cfg is not None:
            allowed_hosts = cfg.allowed_hosts
        self.hosts = HostCheck(
            None if allowed_hosts is None else AllowedHosts(allowed_hosts, owner)
        )
        #: The verdict table itself (``HostCheck.known``): one lookup on every request.
        self.known_hosts = self.hosts.known
        self.table = RouteTable(self.policy, pairs, owner)
        self.routes = self.table.routes
        self.routed = bool(self.routes)  # a bool: the quickest test on every request
        # Only a policy that keeps a '/' inside a segment needs a routing path.
        self.keeps_slash = any(
            p.encoded_slash == "keep" for p in (self.policy, *(r.policy for r in self.routes))
        )

        if mode is None:
            mode = default_mode
        if mode not in MODES:
            raise ValueError(f"{owner}: mode must be one of {MODES!r}, not {mode!r}")
        self.mode = "report" if mode == "report" else "enforce"
        self.report = self.mode == "report"

        self.on_reject = _callback(owner, "on_reject", on_reject)
        self.on_violation = _callback(owner, "on_violation", on_violation)
        if missing_raw_target not in MISSING_RAW_TARGET:
            raise ValueError(
                f"{owner}: missing_raw_target must be one of {MISSING_RAW_TARGET!r}, "
                f"not {missing_raw_target!r}"
            )
        self.missing_raw_target: MissingRawTarget = (
            "validate-decoded" if missing_raw_target == "validate-decoded" else "refuse"
        )
        if type(log_level) is not int or log_level < 0:
            raise TypeError(f"{owner}: log_level must be a logging level (an int >= 0)")
        self.log_level: int = log_level
        #: Requests decided (every call of :meth:`decide`), for metrics.
        self.checked = 0
        # (rule, component, route prefix) -> violations; "/" where no route applies.
        self._violations: Counter[tuple[str, str, str]] = Counter()
        self._lock = threading.Lock()

    # -- the decision ---------------------------------------------------------

    def decide(
        self,
        raw: bytes | None,
        query: bytes | None,
        mount: bytes | None,
        carrier: C,
        host: bytes | Host | HostFault | None = None,
    ) -> Answer | A | RoutingPath | None:
        """What to do with one request (see the module documentation).

        ``raw`` is the raw target as the server gave it, or ``None`` when it
        gave none; with ``query`` ``None`` it is the whole target (WSGI), else
        the path, the query being ``query`` (ASGI: ``/a?`` and ``/a`` look
        alike). ``mount`` is the decoded mount point, as bytes, or ``None``.
        ``host`` is the Host value, a ``Host`` the verdict table gave for it
        already, a ``HostFault`` (``allowed_hosts``: none on HTTP/1.1,
        several, disagreeing), or ``None`` for HTTP/1.0 without Host, whose
        host is then the absolute-form target's authority (judged against
        ``allowed_hosts``; with a list and no authority, ``host-not-allowed``).
        It is checked first; the parser gives it to the target, and an
        absolute-form target must name the same authority. An accepted target
        is stored in ``carrier`` at ``"urlguard.target"``, and the answer is
        ``None``: call the application.
        """
        # One increment, no lock: this is every request's cost. Under the GIL
        # CPython switches threads only at calls and backward jumps, never
        # between this read and write; a free-threaded build may lose one.
        self.checked += 1
        known: Host | None = host  # type: ignore[assignment]  # judged just below unless a Host
        if type(host) is not Host:  # as received: never skip the list
            try:
                if host is None:  # HTTP/1.0 without Host: the target's authority, if any
                    known = self.hosts.unnamed(raw)
                else:
                    known = self.known_hosts.get(host)  # type: ignore[arg-type]  # bytes, or a subclass
                    if known is None:
                        known = self.hosts.judge(host)  # type: ignore[arg-type]  # not a Host
            except InvalidTarget as exc:
                whole = b"" if raw is None else raw if not query else b"?".join((raw, query))
                return self.decide_invalid(exc, whole, carrier, host=host)
        if raw is None:
            return self._without_raw_target(mount, carrier, known)
        if mount is not None and self.routed:
            return self._decide_mounted(raw, query, mount, carrier, known)
        below_mount = False
        if mount is not None:
            below = unmount(raw, mount)
            below_mount = below is not raw
            raw = below
        policy = self.table.select(raw) if self.routed else self.policy
        try:
            if query is None:
                carrier[TARGET_KEY] = self._parse(raw, policy, known)
            else:
                carrier[TARGET_KEY] = self._parse_split(raw, query, policy, known)
        except InvalidTarget as exc:
            target_bytes = raw if not query else b"?".join((raw, query))
            return self.decide_invalid(exc, target_bytes, carrier, host=host)
        # A '/' kept inside a segment, or the text "%2F" or "%25" there, needs
        # an escape "%2" in the raw target: most requests stop at this test.
        if self.keeps_slash and b"%2" in raw:
            return _routing(raw, below_mount)
        return None

    def _decide_mounted(
        self, raw: bytes, query: bytes | None, mount: bytes, carrier: C, host: Host | None
    ) -> Answer | A | RoutingPath | None:
        """``decide`` with per-route policies below a mount point: the target
        must pass the policy of every route the application may route it to
        (:meth:`RouteTable.candidates`), in turn; the first one's target is stored."""
        unmounted, policies = self.table.candidates(raw, mount)
        below_mount = unmounted is not raw
        raw = unmounted
        try:
            for policy in reversed(policies):  # the first one's target is the one stored
                if query is None:
                    carrier[TARGET_KEY] = self._parse(raw, policy, host)
                else:
                    carrier[TARGET_KEY] = self._parse_split(raw, query, policy, host)
        except InvalidTarget as exc:
            target_bytes = raw if not query else b"?".join((raw, query))
            return self.decide_invalid(exc, target_bytes, carrier, host=host)
        if self.keeps_slash and b"%2" in raw:
            return _routing(raw, below_mount)
        return None

    def decide_invalid(
        self,
        exc: InvalidTarget,
        target: bytes,
        carrier: C,
        request: Request | None = None,
        host: bytes | Host | HostFault | None = None,
    ) -> Answer | A | None:
        """The decision for a request whose ``target`` (or ``host``) broke a
        rule (``exc``): passed on for ``OPTIONS *`` and in report-only mode,
        else answered. ``host`` goes into the log line of a host violation."""
        if request is None:
            request = self._read(carrier)
        if exc.component != "host" and is_server_wide_options(request.method, target):
            return None  # OPTIONS * names no resource: nothing to judge
        self._record(exc, target, carrier, request, host)
        if self.report:
            return None
        if not request.websocket:
            custom = self._custom_response(exc, carrier)
            if custom is not None:
                return custom
        content_type, body = rejection(exc, target, request.accept)
        return answer(
            request.method, 400, content_type, body, f"invalid request target: {exc.rule}"
        )

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
            self.owner,
            self.protocol,
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

    def _without_raw_target(
        self, mount: bytes | None, carrier: C, host: Host | None
    ) -> Answer | A | None:
        request = self._read(carrier)
        target = b""
        if request.path is not None:
            target = rebuild_target(request.path, request.query or None)
            if mount is not None:
                target = unmount(target, mount)
        if request.path is not None and self.missing_raw_target == "validate-decoded":
            try:
                carrier[TARGET_KEY] = self.check_decoded(target, host)
            except InvalidTarget as exc:
                return self.decide_invalid(exc, target, carrier, request, host)
            return None
        if is_server_wide_options(request.method, target):
            return None
        LOGGER.error(
            "%s: the server (%s) provides no raw request target (%s); %s. "
            "Run under a server that does (see urlguard's docs), or pass "
            "missing_raw_target='validate-decoded'",
            self.owner,
            escape(request.server),
            self.missing,
            "passed on (report-only)" if self.report else "refused with 501",
        )
        if self.report:
            return None
        content_type, body = refusal(request.accept, self.missing)
        return answer(
            request.method, 501, content_type, body, "no raw request target", no_store=True
        )

    def check_decoded(self, rebuilt: bytes, host: Host | None = None) -> Target:
        """Validate what a server without a raw target leaves
        (``missing_raw_target="validate-decoded"``): ``rebuilt`` comes from
        :func:`rebuild_target`, so strict UTF-8, forbidden characters, dot and
        empty segments and double encoding (a decoded ``%41``) are all checked
        on the decoded path, and the query is checked as received.

        A U+FFFD in the path is refused as ``invalid-utf8``: lenient servers
        put it where invalid bytes were, and it cannot be told from a real
        one. The parser judges it as such bytes: each escaped U+FFFD of the
        path is replaced by ``%FF%FF%FF`` (never UTF-8, RFC 3629 §1; the
        same length, so offsets hold), so the rule reported, and its place in
        the order, are the parser's own. The query is left as received.
        """
        policy = self.table.select(rebuilt)
        question = rebuilt.find(b"?")
        path = rebuilt if question < 0 else rebuilt[:question]
        # rebuild_target escapes every non-ASCII byte in upper case, and a
        # literal '%' as %25, so this finds exactly the U+FFFD characters.
        at = path.find(_REPLACEMENT_ESCAPED)
        if at < 0:
            return self._parse(rebuilt, policy, host)
        judged = path.replace(_REPLACEMENT_ESCAPED, _NEVER_UTF8) + rebuilt[len(path) :]
        self._parse(judged, policy, host)  # raises: the path holds bytes that are never UTF-8
        # Not reached while invalid-utf8 has no switch; if it ever gets one, refuse anyway.
        raise InvalidTarget("invalid-utf8", "path", path.count(b"/", 0, at) - 1, at)

    # -- violations -----------------------------------------------------------

    def _record(
        self,
        exc: InvalidTarget,
        target: bytes,
        carrier: C,
        request: Request,
        host: bytes | Host | HostFault | None,
    ) -> None:
        """Store the violation, count it, log one line and call ``on_violation``."""
        carrier.pop(TARGET_KEY, None)  # a lenient guard in front may have stored one
        carrier[VIOLATION_KEY] = exc
        route = self.table.route_of(target)
        with self._lock:
            self._violations[exc.rule, exc.component, "/" if route is None else route.prefix] += 1
        if LOGGER.isEnabledFor(self.log_level):
            # No "urlguard:" prefix: the logger's name says it already. A host
            # rejection says so, and a bad-host which of its four causes.
            of_host = exc.rule == "bad-host" or exc.rule == "host-not-allowed"
            why = cause(exc, host) if exc.rule == "bad-host" else None
            LOGGER.log(
                self.log_level,
                "%s %s: rule=%s%s component=%s index=%s offset=%d client=%s method=%s target=%s%s",
                "reported (report-only, passed on)" if self.report else "rejected",
                "host" if of_host else "request target",
                exc.rule,
                "" if why is None else f" cause={why}",
                exc.component,
                "-" if exc.index is None else exc.index,
                exc.offset,
                escape(request.client),
                escape(request.method),
                escape(target),
                "" if not of_host else f" host={_host_text(host)}",
                extra={
                    "urlguard_rule": exc.rule,
                    "urlguard_component": exc.component,
                    "urlguard_index": exc.index,
                    "urlguard_offset": exc.offset,
                    "urlguard_mode": self.mode,
                    "urlguard_cause": why,
                },
            )
        if self.on_violation is not None:
            try:
                self.on_violation(exc, carrier)
            except Exception:
                # A broken metrics hook must not turn a 400 into a 500, nor
                # let a request through: log it and carry on.
                LOGGER.exception("the on_violation callback failed")

    def _custom_response(self, exc: InvalidTarget, carrier: C) -> A | None:
        """The application ``on_reject`` returned, or ``None`` for the default 400."""
        if self.on_reject is None:
            return None
        try:
            result: object = self.on_reject(exc, carrier)
        except Exception:
            LOGGER.exception("the on_reject callback failed; sent the default 400")
            return None
        if result is None:
            return None
        if not callable(result):
            LOGGER.error(
                "on_reject returned %s, not %s; sent the default 400",
                type(result).__name__,
                application(self.protocol),
            )
            return None
        app: A = result  # type: ignore[assignment]  # callable: taken as the protocol's app
        return app

    @property
    def violations(self) -> dict[str, int]:
        """A snapshot: rule code -> how many requests broke it (both modes)."""
        counts: Counter[str] = Counter()
        for (rule, _, _), count in self.violation_counts().items():
            counts[rule] += count
        return dict(counts)

    def violation_counts(self) -> dict[tuple[str, str, str], int]:
        """A snapshot: (rule code, component, route prefix) -> how many
        requests broke that rule there (both modes). The route prefix is one
        of ``routes`` as configured, relative to the mount point, or ``"/"``
        for a target under none of them."""
        with self._lock:
            return dict(self._violations)


class GuardedMiddleware(Generic[A, C]):
    """The configuration both ``StrictURLMiddleware`` classes take, declared once."""

    #: Set by each adapter: its protocol's name, its ``read`` function, and
    #: what a server that gives no raw target fails to provide.
    protocol: str
    missing: str
    read: Callable[[C], Request]

    def __init__(
        self,
        app: A,
        *,
        policy: Policy | None = None,
        routes: Mapping[str, Policy | Mapping[str, Any]] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        mode: str | None = None,
        on_reject: Callable[[InvalidTarget, C], A | None] | None = None,
        on_violation: Callable[[InvalidTarget, C], object] | None = None,
        missing_raw_target: MissingRawTarget = "refuse",
        log_level: int = logging.WARNING,
        parser: _parser.ParserModule | None = None,
        allowed_hosts: Iterable[str] | None = None,
    ) -> None:
        """
        :param app: the application to guard.
        :param policy: a :class:`~urlguard.Policy`; default ``Policy()``, the strict one.
        :param routes: raw path prefix -> a ``Policy``, or a mapping of
            overrides of ``policy`` (``{"/files/": {"encoded_slash": "keep"}}``).
            The longest matching prefix wins. Prefixes are compared with the
            percent-decoded path (as frameworks route), relative to the mount
            point; a prefix ending in ``/`` matches everything below it, one
            without matches itself and everything below (``/api`` matches
            ``/api`` and ``/api/x``, not ``/apix``).
        :param config: a :class:`~urlguard.Config`, or the path of a TOML file
            (``urlguard.load_config``); excludes ``policy`` and ``routes``.
        :param mode: ``"enforce"`` (reject) or ``"report"`` (log, count, and
            let the request through with the violation at ``"urlguard.violation"``
            and no ``"urlguard.target"``). Default: the config's, else enforce.
        :param on_reject: ``on_reject(exc, carrier) -> application | None``,
            called in enforce mode for a rejected HTTP request (the carrier
            holds the violation at ``"urlguard.violation"``); the application
            it returns answers instead of the default 400, ``None`` keeps the
            default (so does a failing hook, logged).
        :param on_violation: ``on_violation(exc, carrier)``, called for every
            violation in both modes (metrics); its return value is ignored,
            and a failing hook is logged.
        :param missing_raw_target: ``"refuse"`` (default): when the server
            gives no raw target, answer ``501`` and log an error naming the
            server. ``"validate-decoded"``: validate what is left instead, the
            exact query and the decoded path re-encoded (``%2F`` can no
            longer be told from ``/``; U+FFFD, which servers put where
            invalid UTF-8 was, counts as ``invalid-utf8``).
        :param log_level: the level of the one log line per violation
            (logger ``"urlguard"``); default ``logging.WARNING``.
        :param parser: the parser module, ``urlguard._url.parser_c`` (compiled)
            or ``urlguard._url.parser_py`` (the reference); default the one
            chosen at import (``urlguard.IMPLEMENTATION``). Both give the same
            answer on every input; tests and benchmarks pass each in turn.
        :param allowed_hosts: the hosts the application serves: exact names
            (``"example.com"``, ``"example.com:8443"``, ``"[::1]"``) and
            ``"*.example.com"`` for every name below ``example.com``, each
            read in the spelling ``Target.host`` uses; any other valid host
            is ``host-not-allowed``, from whichever source names it (Host,
            ``:authority``, or the absolute-form authority of an HTTP/1.0
            request without Host; one naming no host at all is refused too).
            An empty list is a ``ValueError``. Default: the config's, else
            any host the grammar accepts (every request's host is checked
            either way: ``bad-host``).
        """
        owner = f"{type(self).__module__}.{type(self).__qualname__}"
        if not callable(app):
            raise TypeError(f"{owner}: app must be {application(self.protocol)}")
        self.app = app
        self._guard: Guard[C, A] = Guard(
            owner,
            self.protocol,
            type(self).read,
            self.missing,
            policy=policy,
            routes=routes,
            config=config,
            mode=mode,
            on_reject=on_reject,
            on_violation=on_violation,
            missing_raw_target=missing_raw_target,
            log_level=log_level,
            parser=parser,
            allowed_hosts=allowed_hosts,
        )

    @property
    def mode(self) -> str:
        """``"enforce"`` or ``"report"``."""
        return self._guard.mode

    @property
    def violations(self) -> dict[str, int]:
        """How many requests broke each rule so far (both modes), by rule code."""
        return self._guard.violations


def application(protocol: str) -> str:
    """``"an ASGI application"``, ``"a WSGI application"``: for messages."""
    return f"{'an' if protocol[:1] in 'AEIOU' else 'a'} {protocol} application"


# -- answers --------------------------------------------------------------------


# -- without a raw target ---------------------------------------------------------

_REPLACEMENT_ESCAPED: Final = b"%EF%BF%BD"  # U+FFFD in UTF-8, percent-encoded
_NEVER_UTF8: Final = b"%FF%FF%FF"  # 0xFF appears in no UTF-8 sequence


def rebuild_target(path: bytes, query: bytes | None) -> bytes:
    """A raw target from decoded path bytes and a raw query: every byte the
    path may not hold raw (RFC 3986 §3.3 pchar, and '/') is percent-encoded,
    '%' included, so a decoded escape shows up as double encoding. '/' stays
    the separator: an original ``%2F`` cannot be told apart any more. An
    empty path (WSGI, a request for the mount point itself) becomes ``/``."""
    raw_path = quote_from_bytes(path or b"/", safe=_PATH_SAFE).encode("ascii")
    return raw_path + b"?" + query if query else raw_path


_PATH_SAFE: Final = g.to_str(g.PCHAR | {g.SLASH})


# -- checking the options ---------------------------------------------------------


def _config(owner: str, config: object, policy: object, routes: object) -> Config | None:
    if config is None:
        return None
    if policy is not None or routes is not None:
        raise ValueError(
            f"{owner}: pass either config, or policy and routes, not both "
            "(mode may still be given to override the configured mode)"
        )
    if isinstance(config, Config):
        return config
    if isinstance(config, str | os.PathLike):
        return load_config(config)
    raise TypeError(
        f"{owner}: config must be a urlguard.Config or the path of a TOML file, "
        f"not {type(config).__name__}"
    )


def _routes(owner: str, routes: object, base: Policy) -> list[tuple[str, Policy]]:
    if routes is None:
        return []
    if not isinstance(routes, Mapping):
        raise TypeError(
            f"{owner}: routes must be a mapping of raw path prefixes to a Policy "
            f"or a mapping of policy overrides, not {type(routes).__name__}"
        )
    pairs: list[tuple[str, Policy]] = []
    for prefix, value in routes.items():
        where = f"{owner}: routes[{prefix!r}]"
        check_prefix(prefix, where)
        if isinstance(value, Policy):
            pairs.append((prefix, value))
        elif isinstance(value, Mapping):
            pairs.append((prefix, route_policy(base, value, where)))
        else:
            raise TypeError(
                f"{where} must be a urlguard.Policy or a mapping of overrides, "
                f"not {type(value).__name__}"
            )
    return pairs


def _parser_module(owner: str, parser: object) -> Any:
    if parser is None:
        return _parser.PARSER
    for name in ("parse_target", "parse_split_target", "host_header"):
        if not callable(getattr(parser, name, None)):
            raise TypeError(
                f"{owner}: parser must be a urlguard parser module (urlguard._url.parser_c "
                f"or urlguard._url.parser_py), not {type(parser).__name__}"
            )
    return parser


def _callback(owner: str, name: str, value: object) -> Callable[..., Any] | None:
    if value is None:
        return None
    if not callable(value):
        raise TypeError(f"{owner}: {name} must be callable, not {type(value).__name__}")
    if inspect.iscoroutinefunction(value):
        raise TypeError(
            f"{owner}: {name} must be a plain function (it is called synchronously); "
            "return an ASGI application from on_reject to respond asynchronously"
        )
    return value


# -- escaping for log lines ---------------------------------------------------


def _host_text(host: bytes | Host | HostFault | None) -> str:
    """A host for the log line: the value as received (escaped), a judged
    one, or ``-`` for none (missing, several, HTTP/1.0 without Host)."""
    if isinstance(host, Host):
        return escape(host_text(host))
    if host is None or isinstance(host, HostFault) or not host:
        return "-"
    return escape(host)


# Printable ASCII except the backslash passes; everything else is escaped.
_UNSAFE: Final = re.compile(r"[^\x21-\x5b\x5d-\x7e]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match[0])
    if code == 0x5C:
        return "\\\\"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(value: bytes | str, limit: int = LOG_LIMIT) -> str:
    r"""``value`` safe for one log line: every byte (or character) outside
    0x21-0x7E, and the backslash, backslash-escaped; at most ``limit`` bytes
    (characters) of it, then how long it was. No spaces: one token per value.

        >>> print(escape(b"/a b\r\n\xc3\\"))
        /a\x20b\x0d\x0a\xc3\\
        >>> print(escape(b"/" + b"a" * 300, limit=4))
        /aaa...[len=301]
    """
    # Any bytes-like value: a server may hand over a bytearray for raw_path.
    text = value if isinstance(value, str) else bytes(value).decode("latin-1")
    size = len(text)
    out = _UNSAFE.sub(_escape_char, text[:limit])
    if size > limit:
        out += f"...[len={size}]"
    return out
