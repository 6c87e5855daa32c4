"""ASGI middleware: validate the raw request target before the application sees it.

Security model: the request target is judged on the bytes the client sent
(``scope["raw_path"]`` + ``?`` + ``scope["query_string"]``), never on the
decoded ``scope["path"]``, where ``%2F`` has already become ``/`` and invalid
UTF-8 has become U+FFFD. A target that breaks a rule of the policy gets a
complete ``400`` naming the rule (and never echoing the input) before the
application runs; the request body is never read. A target that passes is
stored, decoded, at ``scope["urlguard.target"]``. The server's own keys are
never rewritten.

    >>> from urlguard.asgi import StrictURLMiddleware
    >>> async def app(scope, receive, send):
    ...     target = scope["urlguard.target"]        # a urlguard.Target
    ...     ...
    >>> app = StrictURLMiddleware(app, routes={"/files/": {"encoded_slash": "keep"}})

Or ``starlette_app.add_middleware(StrictURLMiddleware)`` /
``fastapi_app.add_middleware(StrictURLMiddleware, mode="report")``.

What each ASGI server puts in the scope (measured, LANDSCAPE.md):

- ``raw_path`` is optional in the ASGI spec; a missing key and ``None`` are
  treated alike: the request is refused with ``501`` (see
  ``missing_raw_target``) rather than judged on the decoded ``path``.
- ASGI splits the target at the first ``?``, so ``/a?`` (an empty query) and
  ``/a`` look the same: both are validated as ``/a``, and ``Target.raw_query``
  is ``None`` for both.
- ``root_path``: uvicorn glues it in front of ``raw_path``; hypercorn, granian
  and daphne leave ``raw_path`` as sent. When ``raw_path`` starts with
  ``root_path`` (ending at a ``/``), it is taken off, so the stored target and
  route prefixes are relative to the mount point on every server, as in
  Starlette's routing.
- uvicorn with httptools and granian reduce an absolute-form target to its
  path and drop a ``#fragment``; h11, hypercorn and daphne pass both on, and
  then the absolute-form target is validated on its path and query and a
  fragment is a ``fragment`` violation.
- One blind spot: uvicorn with ``root_path="/mnt"`` turns a target without
  a leading slash (``x``) into ``/mntx``, the bytes other servers give for a
  request for ``/mntx``; it is validated as that path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final

from ._config import Config
from ._errors import InvalidTarget
from ._guard import (
    LOGGER,
    TARGET_KEY,
    Guard,
    GuardedMiddleware,
    MissingRawTarget,
    rebuild_target,
    strip_root,
)
from ._parser import parse_split_target
from ._policy import Policy
from ._routes import is_server_wide_options

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
# RFC 6455 §7.4.1: 1008 "policy violation"; 1011 "unexpected condition".
_CLOSE_POLICY: Final = 1008
_CLOSE_SERVER: Final = 1011


class StrictURLMiddleware(GuardedMiddleware):
    """Reject ASGI requests whose raw target breaks the policy; hand the
    decoded :class:`~urlguard.Target` to the rest at ``scope["urlguard.target"]``.

    :param app: the ASGI application to guard.
    :param policy: a :class:`~urlguard.Policy`; default ``Policy()``, the strict one.
    :param routes: raw path prefix -> a ``Policy``, or a mapping of overrides
        of ``policy`` (``{"/files/": {"encoded_slash": "keep"}}``). The longest
        matching prefix wins. Prefixes are compared with the percent-decoded
        path (as frameworks route), relative to ``root_path``; a prefix ending
        in ``/`` matches everything below it, one without matches itself and
        everything below (``/api`` matches ``/api`` and ``/api/x``, not ``/apix``).
    :param config: a :class:`~urlguard.Config`, or the path of a TOML file
        (``urlguard.load_config``); excludes ``policy`` and ``routes``.
    :param mode: ``"enforce"`` (reject) or ``"report"`` (log, count, and let
        the request through with the violation at ``scope["urlguard.violation"]``
        and no ``scope["urlguard.target"]``). Default: the config's, else enforce.
    :param on_reject: ``on_reject(exc, scope) -> ASGI app | None``, called in
        enforce mode for a rejected HTTP request; the returned app (e.g. a
        Starlette ``Response``) is run instead of the default 400, ``None``
        keeps the default. Not used for websocket handshakes.
    :param on_violation: ``on_violation(exc, scope)``, called for every
        violation in both modes (metrics); its return value is ignored.
    :param missing_raw_target: ``"refuse"`` (default): a scope without
        ``raw_path`` gets ``501`` and an error log line. ``"validate-decoded"``:
        validate what is left instead, the exact ``query_string`` and the
        ``path`` re-encoded (``%2F`` can no longer be told from ``/``; U+FFFD,
        which servers put where invalid UTF-8 was, counts as ``invalid-utf8``).
    :param log_level: the level of the one log line per violation
        (logger ``"urlguard"``); default ``logging.WARNING``.

    Scopes: ``http`` and ``websocket`` are validated; a websocket handshake is
    refused before accept, with the 400 as a denial response when the server
    offers the ``websocket.http.response`` extension, else by closing with
    1008. ``lifespan`` and unknown scope types pass through untouched, and so
    does ``OPTIONS *`` (without a target). ``violations`` counts by rule code.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        policy: Policy | None = None,
        routes: Mapping[str, Policy | Mapping[str, Any]] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        mode: str | None = None,
        on_reject: OnReject | None = None,
        on_violation: OnViolation | None = None,
        missing_raw_target: MissingRawTarget = "refuse",
        log_level: int = logging.WARNING,
    ) -> None:
        if not callable(app):
            raise TypeError("urlguard.asgi.StrictURLMiddleware: app must be an ASGI application")
        self.app = app
        self._guard = guard = Guard(
            "urlguard.asgi.StrictURLMiddleware",
            policy=policy,
            routes=routes,
            config=config,
            mode=mode,
            on_reject=on_reject,
            on_violation=on_violation,
            missing_raw_target=missing_raw_target,
            log_level=log_level,
        )
        self._policy = guard.policy
        self._routed = bool(guard.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            raw = scope["raw_path"]
            root = scope["root_path"]
            query = scope["query_string"]
        except KeyError:
            raw = scope.get("raw_path")
            root = scope.get("root_path")
            query = scope.get("query_string")
        if raw is None:
            await self._without_raw_path(scope, receive, send)
            return
        mount = b""
        if root:
            mount = root.encode("utf-8", "surrogatepass")
            rest = strip_root(raw, mount)
            if rest is not None:
                raw, mount = rest, b""
        query = query or b""
        # Routes are chosen by the path alone (up to a first '?').
        policy = self._guard.select(raw, mount) if self._routed else self._policy
        try:
            scope[TARGET_KEY] = parse_split_target(raw, query, policy)
        except InvalidTarget as exc:
            target = b"?".join((raw, query)) if query else raw
            await self._violation(exc, target, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _violation(
        self, exc: InvalidTarget, target: bytes, scope: Scope, receive: Receive, send: Send
    ) -> None:
        guard = self._guard
        if is_server_wide_options(scope.get("method"), target):
            await self.app(scope, receive, send)
            return
        guard.record(exc, scope, target, method=_method(scope), client=_client(scope))
        if guard.report:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            content_type, body = Guard.rejection(exc, _accept(scope))
            reason = f"invalid request target: {exc.rule}"
            await _deny_websocket(scope, send, 400, content_type, body, reason, no_store=False)
            return
        custom = guard.custom_response(exc, scope)
        if custom is not None:
            if callable(custom):
                await custom(scope, receive, send)
                return
            LOGGER.error(
                "urlguard: on_reject returned %s, not an ASGI application; sent the default 400",
                type(custom).__name__,
            )
        await _respond(scope, send, 400, *Guard.rejection(exc, _accept(scope)))

    async def _without_raw_path(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self._guard
        path = scope.get("path")
        if guard.missing_raw_target == "validate-decoded" and isinstance(path, str):
            root = scope.get("root_path")
            if root and path.startswith(root + "/"):
                path = path[len(root) :]
            target = rebuild_target(
                path.encode("utf-8", "surrogatepass"), scope.get("query_string") or None
            )
            try:
                scope[TARGET_KEY] = guard.check_decoded(target)
            except InvalidTarget as exc:
                await self._violation(exc, target, scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        if is_server_wide_options(scope.get("method"), path):
            await self.app(scope, receive, send)
            return
        asgi = scope.get("asgi")
        version = asgi if isinstance(asgi, Mapping) else {}
        server = (
            f"asgi.version={version.get('version', '?')},"
            f"spec_version={version.get('spec_version', '?')}"
        )
        guard.log_missing(server, "no raw_path in the scope")
        if guard.report:
            await self.app(scope, receive, send)
            return
        content_type, body = Guard.refusal(_accept(scope), "no raw_path in the ASGI scope")
        if scope["type"] == "websocket":
            reason = "no raw request target"
            await _deny_websocket(scope, send, 501, content_type, body, reason, no_store=True)
            return
        await _respond(scope, send, 501, content_type, body, no_store=True)


async def _respond(
    scope: Scope,
    send: Send,
    status: int,
    content_type: str,
    body: bytes,
    *,
    no_store: bool = False,
) -> None:
    """A complete response, Content-Length included, so keep-alive goes on.
    A HEAD request gets the headers only (RFC 9110 §9.3.2)."""
    headers = _headers(content_type, body, no_store=no_store)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send(
        {"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body}
    )


async def _deny_websocket(
    scope: Scope,
    send: Send,
    status: int,
    content_type: str,
    body: bytes,
    reason: str,
    *,
    no_store: bool,
) -> None:
    """Refuse a websocket handshake before accept: an HTTP response through the
    denial extension when the server offers it, else close (the server then
    answers the handshake with 403)."""
    extensions = scope.get("extensions") or {}
    if _DENIAL in extensions:
        headers = _headers(content_type, body, no_store=no_store)
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    code = _CLOSE_POLICY if status == 400 else _CLOSE_SERVER
    await send({"type": "websocket.close", "code": code, "reason": reason})


def _headers(content_type: str, body: bytes, *, no_store: bool) -> list[tuple[bytes, bytes]]:
    headers = [
        (b"content-type", content_type.encode("ascii")),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"x-content-type-options", b"nosniff"),
    ]
    if no_store:
        headers.append((b"cache-control", b"no-store"))
    return headers


def _accept(scope: Scope) -> str | None:
    values = [value for name, value in scope.get("headers") or () if name.lower() == b"accept"]
    if not values:
        return None
    return b",".join(values).decode("latin-1")


def _method(scope: Scope) -> str:
    method = scope.get("method")
    return method if isinstance(method, str) else str(scope["type"])


def _client(scope: Scope) -> str:
    client = scope.get("client")
    if not client:
        return "-"
    host, port = client[0], client[1] if len(client) > 1 else None
    return f"{host}:{port}" if port is not None else str(host)
