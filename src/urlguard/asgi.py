"""ASGI middleware: validate the raw request target before the application sees it.

Security model: the request target is judged on the bytes the client sent
(``scope["raw_path"]`` + ``?`` + ``scope["query_string"]``), never on the
decoded ``scope["path"]``, where ``%2F`` has already become ``/`` and invalid
UTF-8 has become U+FFFD. A target that breaks a rule of the policy gets a
complete ``400`` naming the rule (and never echoing the input) before the
application runs; the request body is never read. A target that passes is
stored, decoded, at ``scope["urlguard.target"]``. When the target keeps an
encoded slash (``encoded_slash="keep"``), the application gets a copy of the
scope whose ``path`` is the routing path: the decoded path with each ``/``
inside a segment written ``%2F`` and each ``%`` written ``%25``, so that
nothing after the guard takes a kept ``/`` for a separator (see
``urlguard.integrations``); every other key is the server's.

    >>> from urlguard.asgi import StrictURLMiddleware
    >>> async def app(scope, receive, send):
    ...     target = scope["urlguard.target"]        # a urlguard.Target
    ...     ...
    >>> app = StrictURLMiddleware(app, routes={"/files/": {"encoded_slash": "keep"}})

Or ``starlette_app.add_middleware(StrictURLMiddleware)`` /
``fastapi_app.add_middleware(StrictURLMiddleware, mode="report")``.

The scope as the ASGI spec gives it: ``raw_path`` (optional in the spec: a
scope without a byte string there is refused with ``501``, see
``missing_raw_target``), ``query_string`` (``/a?`` and ``/a`` look alike),
``root_path`` (the mount point, taken off a raw path below it, compared
percent-decoded segment by segment), the ``host`` header (``:authority`` over
HTTP/2 and HTTP/3, whose ``:path`` is origin-form, RFC 9113 §8.3.1). A scope
that breaks the spec is answered ``500``. What each server puts there, and
what it refuses on its own, is in the documentation's servers page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final

from ._guard.allowed_hosts import DISAGREEING, MISSING, REPEATED, HostFault
from ._guard.answers import Answer
from ._guard.decision import Request, RoutingPath
from ._guard.middleware import GuardedMiddleware
from ._url.errors import InvalidTarget
from ._url.host import Host

__all__ = ["ASGIApp", "OnReject", "OnViolation", "StrictURLMiddleware"]

# The ASGI 3 callable, in the shapes Starlette and uvicorn use, so that
# ``app.add_middleware(StrictURLMiddleware)`` type-checks.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: ``on_reject(exc, scope)`` returns an ASGI app (a Starlette ``Response`` is
#: one) to send instead of the default 400, or ``None`` for the default.
OnReject = Callable[[InvalidTarget, Scope], ASGIApp | None]
OnViolation = Callable[[InvalidTarget, Scope], object]

_DENIAL: Final = "websocket.http.response"
# The HTTP versions whose target is never absolute-form (HTTP/2, HTTP/3).
_ORIGIN_FORM_ONLY: Final = ("2", "3")
# HTTP/1.0, where Host is optional (RFC 9112 §3.2), as servers spell it:
# granian says "1".
_HTTP_1_0: Final = ("1.0", "1")
# RFC 6455 §7.4.1: 1008 "policy violation"; 1011 "unexpected condition".
_CLOSE_POLICY: Final = 1008
_CLOSE_SERVER: Final = 1011


def _read(scope: Scope) -> Request:
    """What the guard needs of a request that does not simply pass."""
    accept = [value for name, value in scope.get("headers") or () if name.lower() == b"accept"]
    method = scope.get("method")
    client = scope.get("client")
    asgi = scope.get("asgi")
    version = asgi if isinstance(asgi, Mapping) else {}
    path = scope.get("path")
    return Request(
        method=method if isinstance(method, str) else str(scope["type"]),
        accept=b",".join(accept).decode("latin-1") if accept else None,
        client=":".join(map(str, client)) if client else "-",
        websocket=scope["type"] == "websocket",
        server=(
            f"asgi.version={version.get('version', '?')},"
            f"spec_version={version.get('spec_version', '?')}"
        ),
        path=path.encode("utf-8", "surrogatepass") if isinstance(path, str) else None,
        query=scope.get("query_string") or b"",
    )


class StrictURLMiddleware(GuardedMiddleware[ASGIApp, Scope]):
    """Reject ASGI requests whose raw target breaks the policy; hand the
    decoded :class:`~urlguard.Target` to the rest at ``scope["urlguard.target"]``.

    ``app`` first, then the options as keywords (see ``__init__``):
    ``policy``, ``routes``, ``config``, ``mode``, ``on_reject`` (returns an
    ASGI app, e.g. a Starlette ``Response``; not used for websocket
    handshakes), ``on_violation``, ``missing_raw_target`` (a scope without
    a ``raw_path`` byte string), ``log_level``.

    Scopes: ``http`` and ``websocket`` are validated; a websocket handshake is
    refused before accept, with the 400 as a denial response when the server
    offers the ``websocket.http.response`` extension, else by closing with
    1008. ``lifespan`` and unknown scope types pass through untouched, and so
    does ``OPTIONS *`` (without a target). ``violations`` counts by rule code.
    """

    protocol = "ASGI"
    missing = "no raw_path byte string in the scope"
    read = staticmethod(_read)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app  # or what on_reject returns, below
        try:
            kind = scope["type"]
        except KeyError:  # every ASGI scope has a type: this one breaks the spec
            kind = None
        if kind == "http" or kind == "websocket":
            guard = self._guard
            try:
                try:
                    raw, query, root = scope["raw_path"], scope["query_string"], scope["root_path"]
                    headers = scope["headers"]
                except KeyError:  # raw_path, query_string, root_path: optional in the ASGI spec
                    raw, query = scope.get("raw_path"), scope.get("query_string") or b""
                    root, headers = scope.get("root_path"), scope.get("headers")
                mount = None
                if root:
                    if type(root) is str:
                        mount = root.encode("utf-8", "surrogatepass")
                    else:  # a server that breaks the ASGI spec: judge nothing it hands over
                        raw = None
                # The Host judged already (nearly every request), else its value, to be judged.
                host: Host | bytes | HostFault | None
                host = guard.host_header(headers, guard.hosts.known)
                if host is None:  # none, several, empty, or headers of an odd shape
                    host = _host(scope)
                if type(raw) is bytes and raw[:1] == b"/" and type(query) is bytes:  # nearly all
                    decision = guard.decide(raw, query, mount, scope, host)
                else:
                    decision = self._decide_other(raw, query, mount, scope, host)
            except Exception as exc:  # a scope that breaks the ASGI spec: 500, never a crash
                decision = guard.broken_server(_fault(scope, exc), scope)
            if decision is not None:  # None, the common case: the target is stored, go on
                if isinstance(decision, Answer):
                    await _send(scope, send, decision)
                    return
                if isinstance(decision, RoutingPath):
                    # A copy whose path is the routing path; ASGI's path holds
                    # root_path in front (as Starlette routes).
                    root = scope.get("root_path") if decision.below_mount else ""
                    scope = {**scope, "path": (root or "") + decision.path}
                else:
                    app = decision  # what on_reject returned answers instead
        elif type(kind) is not str:  # no "type" (ASGI: every scope has one): judge nothing
            await _send(scope, send, self._guard.broken_server("type", scope))
            return
        await app(scope, receive, send)

    def _decide_other(
        self,
        raw: object,
        query: object,
        mount: bytes | None,
        scope: Scope,
        host: bytes | Host | HostFault | None,
    ) -> Answer | ASGIApp | RoutingPath | None:
        """The decision for a raw path that is not bytes starting with ``/``,
        or a query that is not bytes."""
        if not isinstance(query, bytes | bytearray):
            raise _BrokenScope("query_string")  # ASGI: a byte string
        if not isinstance(raw, bytes | bytearray):
            # raw_path is a byte string (ASGI HTTP spec): anything else comes
            # from a server that breaks it, and is not trusted: as if there were none.
            return self._guard.decide(None, bytes(query), mount, scope, host)
        raw, query = bytes(raw), bytes(query)
        if raw[:1] != b"/" and scope.get("http_version") in _ORIGIN_FORM_ONLY:
            # RFC 9113 §8.3.1, RFC 9114 §4.3.1: ':path' is origin-form, or '*'
            # for OPTIONS (passed on by the guard); absolute-form is HTTP/1.1's.
            target = b"?".join((raw, query)) if query else raw
            exc = InvalidTarget("bad-form", "target", None, 0)
            return self._guard.decide_invalid(exc, target, scope)
        return self._guard.decide(raw, query, mount, scope, host)


class _BrokenScope(Exception):
    """A scope that breaks the ASGI spec, at ``key``."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _host(scope: Scope) -> bytes | HostFault | None:
    """The request's Host value, for the guard (``allowed_hosts``): the
    ``host`` header (HTTP/2 and HTTP/3 servers put ``:authority`` there);
    ``MISSING`` when an HTTP/1.1 request has none, ``None`` when HTTP/1.0
    has none (RFC 9112 §3.2 makes Host optional there); ``REPEATED`` for
    several, or ``DISAGREEING`` when HTTP/2 or HTTP/3 give several that
    differ (RFC 9113 §8.3.1: they must agree; one value repeated is that
    value). An empty value is the grammar's to refuse, on every HTTP version
    (a server that fills in an empty Host for none makes HTTP/1.0 without
    Host a ``bad-host``: docs/servers.md)."""
    values = [value for name, value in _headers(scope) if name == b"host"]
    if not values:
        return None if scope.get("http_version") in _HTTP_1_0 else MISSING
    if len(values) == 1:
        return values[0]
    if scope.get("http_version") in _ORIGIN_FORM_ONLY:
        return values[0] if len(set(values)) == 1 else DISAGREEING
    return REPEATED


def _headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    """The scope's headers as byte-string pairs (the ASGI spec: an iterable
    of two byte strings each; none at all when the key is missing);
    ``_BrokenScope("headers")`` for anything else: a dict, a str, pairs of
    another size, values that are not byte strings."""
    headers = scope.get("headers") or ()
    if not isinstance(headers, list | tuple):
        raise _BrokenScope("headers")
    pairs = []
    for pair in headers:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise _BrokenScope("headers")
        name, value = pair
        if not isinstance(name, bytes | bytearray) or not isinstance(value, bytes | bytearray):
            raise _BrokenScope("headers")
        pairs.append((bytes(name), bytes(value)))
    return pairs


def _fault(scope: Scope, exc: Exception) -> str:
    """The key of ``scope`` that broke the guard's reading of it (``exc``):
    the first one the ASGI spec gives a type that this one does not have;
    ``"?"`` when none does (then the exception is urlguard's own)."""
    if isinstance(exc, _BrokenScope):
        return exc.key
    try:
        _headers(scope)
    except _BrokenScope:
        return "headers"
    for key, kinds in _SPEC_TYPES:
        value = scope.get(key)
        if value is not None and not isinstance(value, kinds):
            return key
    return "?"


# What the ASGI spec says each key the guard reads holds (when present).
_SPEC_TYPES: Final[tuple[tuple[str, type | tuple[type, ...]], ...]] = (
    ("method", str),
    ("http_version", str),
    ("query_string", (bytes, bytearray)),
    ("raw_path", (bytes, bytearray)),
    ("root_path", str),
    ("client", (list, tuple)),
    ("asgi", dict),
)


async def _send(scope: Scope, send: Send, answer: Answer) -> None:
    """The answer through the normal ``send``; to a websocket handshake, before
    accept: as a denial response when the server offers the extension, else
    by closing (the server then answers the handshake with 403)."""
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers
    ]
    if scope.get("type") != "websocket":  # http, or no type at all (a broken scope)
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body})
    elif _DENIAL in (scope.get("extensions") or {}):
        await send(
            {"type": "websocket.http.response.start", "status": answer.status, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": answer.body})
    else:
        code = _CLOSE_POLICY if answer.status == 400 else _CLOSE_SERVER
        await send({"type": "websocket.close", "code": code, "reason": answer.reason})
