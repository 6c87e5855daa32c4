"""WSGI middleware: validate the raw request target before the application sees it.

Security model: the request target is judged on the bytes the client sent,
never on ``PATH_INFO``, which every WSGI server has already percent-decoded
(``%2F`` is ``/`` there, ``%2E%2E`` is ``..``, and werkzeug has replaced
invalid UTF-8 with U+FFFD). A target that breaks a rule of the policy gets a
complete ``400 Bad Request`` naming the rule (never echoing the input) before
the application runs; ``wsgi.input`` is never read. A target that passes is
stored, decoded, at ``environ["urlguard.target"]``. The server's own keys are
never rewritten.

    >>> from urlguard.wsgi import StrictURLMiddleware
    >>> def app(environ, start_response):
    ...     target = environ["urlguard.target"]      # a urlguard.Target
    ...     start_response("200 OK", [("Content-Type", "text/plain")])
    ...     return ["/".join(target.segments).encode()]
    >>> app = StrictURLMiddleware(app, routes={"/files/": {"encoded_slash": "keep"}})

For Flask: ``flask_app.wsgi_app = StrictURLMiddleware(flask_app.wsgi_app)``.

Where the raw target comes from (measured, LANDSCAPE.md): ``RAW_URI``
(gunicorn, werkzeug), then ``REQUEST_URI`` (waitress, mod_wsgi, uWSGI), as
PEP 3333 latin-1 strings, so ``.encode("latin-1")`` gives the bytes back. The
werkzeug development server encodes raw non-ASCII bytes as UTF-8 a second
time; that is undone (it also collapses a leading ``//``, which cannot be).
When ``SCRIPT_NAME`` begins the raw path, it is taken off, so the stored
target and route prefixes are relative to the mount point.

wsgiref, and granian and hypercorn in WSGI mode, give no raw target at all.
By default such requests are refused with ``501 Not Implemented`` and one
error log line naming ``SERVER_SOFTWARE``: the request may be fine, but the
server cannot show urlguard what was sent (a 4xx would blame the client, a 503
invite retries, a 500 look like a crash). ``missing_raw_target="validate-decoded"``
validates what is left instead: the exact ``QUERY_STRING``, and the
``PATH_INFO`` bytes re-encoded (strict UTF-8, forbidden characters, dot and
empty segments, double encoding; ``%2F`` can no longer be told from ``/``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

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
from ._parser import parse_target
from ._policy import Policy
from ._routes import is_server_wide_options

__all__ = ["OnReject", "OnViolation", "StrictURLMiddleware"]

#: ``on_reject(exc, environ)`` returns a WSGI app (a werkzeug ``Response`` is
#: one) to answer instead of the default 400, or ``None`` for the default.
OnReject = Callable[[InvalidTarget, WSGIEnvironment], WSGIApplication | None]
OnViolation = Callable[[InvalidTarget, WSGIEnvironment], object]

_BAD_REQUEST: Final = "400 Bad Request"
_NOT_IMPLEMENTED: Final = "501 Not Implemented"
_MISSING: Final = "no RAW_URI or REQUEST_URI in the environ"


class StrictURLMiddleware(GuardedMiddleware):
    """Reject WSGI requests whose raw target breaks the policy; hand the
    decoded :class:`~urlguard.Target` to the rest at ``environ["urlguard.target"]``.

    :param app: the WSGI application to guard.
    :param policy: a :class:`~urlguard.Policy`; default ``Policy()``, the strict one.
    :param routes: raw path prefix -> a ``Policy``, or a mapping of overrides
        of ``policy`` (``{"/files/": {"encoded_slash": "keep"}}``). The longest
        matching prefix wins. Prefixes are compared with the percent-decoded
        path (as frameworks route), relative to ``SCRIPT_NAME``; a prefix
        ending in ``/`` matches everything below it, one without matches itself
        and everything below (``/api`` matches ``/api`` and ``/api/x``, not ``/apix``).
    :param config: a :class:`~urlguard.Config`, or the path of a TOML file
        (``urlguard.load_config``); excludes ``policy`` and ``routes``.
    :param mode: ``"enforce"`` (reject) or ``"report"`` (log, count, and let
        the request through with the violation at ``environ["urlguard.violation"]``
        and no ``environ["urlguard.target"]``). Default: the config's, else enforce.
    :param on_reject: ``on_reject(exc, environ) -> WSGI app | None``, called in
        enforce mode for a rejected request; the returned app (e.g. a werkzeug
        ``Response``) answers instead of the default 400, ``None`` keeps the default.
    :param on_violation: ``on_violation(exc, environ)``, called for every
        violation in both modes (metrics); its return value is ignored.
    :param missing_raw_target: ``"refuse"`` (default) or ``"validate-decoded"``,
        for servers that give no raw target (see the module documentation).
    :param log_level: the level of the one log line per violation
        (logger ``"urlguard"``); default ``logging.WARNING``.

    ``OPTIONS *`` passes through without a target. ``violations`` counts by rule code.
    """

    def __init__(
        self,
        app: WSGIApplication,
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
            raise TypeError("urlguard.wsgi.StrictURLMiddleware: app must be a WSGI application")
        self.app = app
        self._guard = guard = Guard(
            "urlguard.wsgi.StrictURLMiddleware",
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

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        raw = environ.get("RAW_URI")
        if raw is None:
            raw = environ.get("REQUEST_URI")
            if raw is None:
                return self._without_raw_target(environ, start_response)
        if type(raw) is str and raw.isascii():
            target = raw.encode()  # ASCII: UTF-8 gives the same bytes, without a codec lookup
        else:
            target = _raw_bytes(raw, environ)
        script = environ.get("SCRIPT_NAME")
        mount = b""
        if script:
            mount = _latin1(script)
            rest = strip_root(target, mount)
            if rest is not None:
                target, mount = rest, b""
        policy = self._guard.select(target, mount) if self._routed else self._policy
        try:
            environ[TARGET_KEY] = parse_target(target, policy)
        except InvalidTarget as exc:
            return self._violation(exc, target, environ, start_response)
        return self.app(environ, start_response)

    def _violation(
        self,
        exc: InvalidTarget,
        target: bytes,
        environ: WSGIEnvironment,
        start_response: StartResponse,
    ) -> Iterable[bytes]:
        guard = self._guard
        method = environ.get("REQUEST_METHOD")
        if is_server_wide_options(method, target):
            return self.app(environ, start_response)
        guard.record(exc, environ, target, method=str(method), client=_client(environ))
        if guard.report:
            return self.app(environ, start_response)
        custom = guard.custom_response(exc, environ)
        if custom is not None:
            if callable(custom):
                result: Iterable[bytes] = custom(environ, start_response)
                return result
            LOGGER.error(
                "urlguard: on_reject returned %s, not a WSGI application; sent the default 400",
                type(custom).__name__,
            )
        content_type, body = Guard.rejection(exc, environ.get("HTTP_ACCEPT"))
        return _respond(environ, start_response, _BAD_REQUEST, content_type, body)

    def _without_raw_target(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        guard = self._guard
        path = _latin1(environ.get("PATH_INFO") or "")
        if guard.missing_raw_target == "validate-decoded":
            target = rebuild_target(path, _latin1(environ.get("QUERY_STRING") or "") or None)
            try:
                environ[TARGET_KEY] = guard.check_decoded(target)
            except InvalidTarget as exc:
                return self._violation(exc, target, environ, start_response)
            return self.app(environ, start_response)
        if is_server_wide_options(environ.get("REQUEST_METHOD"), path):
            return self.app(environ, start_response)
        guard.log_missing(str(environ.get("SERVER_SOFTWARE", "unknown")), _MISSING)
        if guard.report:
            return self.app(environ, start_response)
        content_type, body = Guard.refusal(environ.get("HTTP_ACCEPT"), _MISSING)
        return _respond(environ, start_response, _NOT_IMPLEMENTED, content_type, body, True)


def _respond(
    environ: WSGIEnvironment,
    start_response: StartResponse,
    status: str,
    content_type: str,
    body: bytes,
    no_store: bool = False,
) -> list[bytes]:
    """A complete response, Content-Length included, so keep-alive goes on.
    A HEAD request gets the headers only (RFC 9110 §9.3.2)."""
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("X-Content-Type-Options", "nosniff"),
    ]
    if no_store:
        # RFC 9110 §15.6.2: a 501 is heuristically cacheable.
        headers.append(("Cache-Control", "no-store"))
    start_response(status, headers)
    return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]


def _raw_bytes(raw: object, environ: WSGIEnvironment) -> bytes:
    """The raw target bytes from a non-ASCII ``RAW_URI``/``REQUEST_URI``."""
    if isinstance(raw, bytes):
        return raw
    if not isinstance(raw, str):
        raw = str(raw)
    try:
        data = raw.encode("latin-1")  # PEP 3333: one character per byte
    except UnicodeEncodeError:
        # Not a PEP 3333 string; any non-ASCII byte is a raw-char anyway.
        return raw.encode("utf-8", "surrogatepass")
    if "werkzeug.socket" in environ or str(environ.get("SERVER_SOFTWARE", "")).startswith(
        "Werkzeug/"
    ):
        # The werkzeug dev server encodes the latin-1 request line as UTF-8
        # once more (werkzeug.serving, _wsgi_encoding_dance); undo it.
        try:
            return data.decode("utf-8").encode("latin-1")
        except (UnicodeDecodeError, UnicodeEncodeError):
            pass
    return data


def _latin1(value: object) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")


def _client(environ: WSGIEnvironment) -> str:
    address = environ.get("REMOTE_ADDR")
    if not address:
        return "-"
    port = environ.get("REMOTE_PORT")
    return f"{address}:{port}" if port not in (None, "") else str(address)
