"""WSGI middleware: validate the raw request target before the application sees it.

Security model: the request target is judged on the bytes the client sent,
never on ``PATH_INFO``, which every WSGI server has already percent-decoded
(``%2F`` is ``/`` there, ``%2E%2E`` is ``..``, and werkzeug has replaced
invalid UTF-8 with U+FFFD). A target that breaks a rule of the policy gets a
complete ``400 Bad Request`` naming the rule (never echoing the input) before
the application runs; ``wsgi.input`` is never read. A target that passes is
stored, decoded, at ``environ["urlguard.target"]``. The environ goes on as
the server made it, unless the target keeps an encoded slash
(``encoded_slash="keep"``): then the application gets a copy whose
``PATH_INFO`` is the routing path (``urlguard.integrations`` says what that is).

    >>> from urlguard.wsgi import StrictURLMiddleware
    >>> def app(environ, start_response):
    ...     target = environ["urlguard.target"]      # a urlguard.Target
    ...     start_response("200 OK", [("Content-Type", "text/plain")])
    ...     return ["/".join(target.segments).encode()]
    >>> app = StrictURLMiddleware(app, routes={"/files/": {"encoded_slash": "keep"}})

For Flask: ``flask_app.wsgi_app = StrictURLMiddleware(flask_app.wsgi_app)``.

The raw target is ``RAW_URI`` (gunicorn, werkzeug), else ``REQUEST_URI``
(waitress, mod_wsgi, uWSGI): PEP 3333 latin-1 strings, so ``.encode("latin-1")``
gives the bytes back (the werkzeug development server encodes non-ASCII bytes
as UTF-8 once more; that is undone). Anything but a ``str`` there breaks
PEP 3333 and counts as no raw target. ``SCRIPT_NAME``, the mount point, is
taken off a raw target below it (compared percent-decoded, segment by segment),
so ``Target.raw`` and the route prefixes are relative to it, as ``PATH_INFO`` is.

A server that gives no raw target (wsgiref; granian and hypercorn in WSGI
mode) gets ``501 Not Implemented`` and one error log line naming
``SERVER_SOFTWARE``: the request may be fine, but the server cannot show what
was sent. ``missing_raw_target="validate-decoded"`` validates what is left
instead (``%2F`` can no longer be told from ``/``). Each server's behaviour is
in the documentation's servers page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from ._guard.allowed_hosts import MISSING, HostFault
from ._guard.answers import Answer
from ._guard.decision import Request, RoutingPath
from ._guard.middleware import GuardedMiddleware
from ._url.errors import InvalidTarget
from ._url.host import Host

__all__ = ["OnReject", "OnViolation", "StrictURLMiddleware"]

#: ``on_reject(exc, environ)`` returns a WSGI app (a werkzeug ``Response`` is
#: one) to answer instead of the default 400, or ``None`` for the default.
OnReject = Callable[[InvalidTarget, WSGIEnvironment], WSGIApplication | None]
OnViolation = Callable[[InvalidTarget, WSGIEnvironment], object]

_WERKZEUG: Final = "Werkzeug/"


def _read(environ: WSGIEnvironment) -> Request:
    """What the guard needs of a request that does not simply pass."""
    address = environ.get("REMOTE_ADDR")
    port = environ.get("REMOTE_PORT")
    return Request(
        method=str(environ.get("REQUEST_METHOD")),
        accept=environ.get("HTTP_ACCEPT"),
        client="-" if not address else f"{address}:{port}" if port else str(address),
        server=str(environ.get("SERVER_SOFTWARE", "unknown")),
        # PATH_INFO is below SCRIPT_NAME: together, the decoded path as sent.
        path=_latin1(environ.get("SCRIPT_NAME") or "") + _latin1(environ.get("PATH_INFO") or ""),
        query=_latin1(environ.get("QUERY_STRING") or ""),
    )


class StrictURLMiddleware(GuardedMiddleware[WSGIApplication, WSGIEnvironment]):
    """Reject WSGI requests whose raw target breaks the policy; hand the
    decoded :class:`~urlguard.Target` to the rest at ``environ["urlguard.target"]``.

    ``app`` first, then the options as keywords (see ``__init__``):
    ``policy``, ``routes``, ``config``, ``mode``, ``on_reject`` (returns a
    WSGI app, e.g. a werkzeug ``Response``), ``on_violation``,
    ``missing_raw_target`` (no ``RAW_URI`` or ``REQUEST_URI`` string, see the
    module documentation), ``log_level``.

    ``OPTIONS *`` passes through without a target. ``violations`` counts by rule code.
    """

    protocol = "WSGI"
    missing = "no RAW_URI or REQUEST_URI string in the environ"
    read = staticmethod(_read)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        app = self.app  # or what on_reject returns, below
        # A str (PEP 3333), but a server may hand over anything: its encode()
        # either gives the bytes of an ASCII str, or raises.
        raw: Any = environ.get("RAW_URI")
        if raw is None:
            raw = environ.get("REQUEST_URI")
        target: bytes | None
        try:  # one call for the common case, an ASCII str
            target = raw.encode("ascii")
        except (AttributeError, UnicodeEncodeError):  # not a str; not ASCII
            target = _raw_bytes(raw, environ)
        script = environ.get("SCRIPT_NAME")
        guard = self._guard
        host: Any = environ.get("HTTP_HOST")
        host_value: Host | bytes | HostFault | None
        try:
            value = host.encode("ascii")
        except (AttributeError, UnicodeEncodeError):  # none, or not a str; not ASCII
            host_value = _host(host, environ)
        else:
            host_value = guard.hosts.known.get(value, value)  # judged already, nearly always
        decision: Answer | WSGIApplication | RoutingPath | None
        if host_value is _BROKEN:
            decision = guard.broken_server("HTTP_HOST", environ)
        else:
            decision = guard.decide(
                target, None, _latin1(script) if script else None, environ, host_value
            )
        if decision is not None:  # None, the common case: the target is stored, go on
            if isinstance(decision, Answer):
                start_response(decision.status_line, list(decision.headers))
                return [decision.body]
            if isinstance(decision, RoutingPath):
                # PEP 3333: PATH_INFO holds the path's bytes, one character each.
                path_info = decision.path.encode("utf-8").decode("latin-1")
                environ = {**environ, "PATH_INFO": path_info}
            else:
                app = decision  # what on_reject returned answers instead
        return app(environ, start_response)


# A Host value that breaks PEP 3333: the request is refused with 500.
_BROKEN: Final = HostFault("broken")


def _host(host: object, environ: WSGIEnvironment) -> bytes | HostFault | None:
    """The Host value of an ``HTTP_HOST`` that is not an ASCII ``str``:
    none (RFC 9112 §3.2: optional in HTTP/1.0 only), a non-ASCII one (its
    bytes, which the grammar refuses), or one that is not a ``str`` at all,
    which breaks PEP 3333 (``_BROKEN``: nothing certain of what was sent).
    Servers merge several Host lines into one value (waitress: ``a, b``), or
    refuse them (gunicorn): the grammar refuses the merged value."""
    if host is None:
        return None if environ.get("SERVER_PROTOCOL") == "HTTP/1.0" else MISSING
    if not isinstance(host, str):
        return _BROKEN
    return _latin1(host)


def _raw_bytes(raw: object, environ: WSGIEnvironment) -> bytes | None:
    """The raw target bytes from a non-ASCII ``RAW_URI``/``REQUEST_URI``;
    ``None`` when it is not a ``str``."""
    if not isinstance(raw, str):
        # PEP 3333: a native string. Bytes, a number, ... from a server that
        # breaks it show nothing certain of what was sent: as if there were none.
        return None
    try:
        data = raw.encode("latin-1")  # PEP 3333: one character per byte
    except UnicodeEncodeError:
        # Not a PEP 3333 string; any non-ASCII byte is a raw-char anyway.
        return raw.encode("utf-8", "surrogatepass")
    if "werkzeug.socket" in environ or str(environ.get("SERVER_SOFTWARE", "")).startswith(
        _WERKZEUG
    ):
        # The werkzeug dev server encodes the latin-1 request line as UTF-8
        # once more (werkzeug.serving, _wsgi_encoding_dance); undo it.
        try:
            return data.decode("utf-8").encode("latin-1")
        except (UnicodeDecodeError, UnicodeEncodeError):
            pass
    return data


def _latin1(value: object) -> bytes:
    if type(value) is str and value.isascii():
        return value.encode()  # ASCII: latin-1 and UTF-8 give the same bytes
    if isinstance(value, str):
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
