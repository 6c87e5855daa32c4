"""What the ASGI and WSGI middlewares share, decided once in ``__init__``.

The adapters (``urlguard.asgi``, ``urlguard.wsgi``) only find the raw target
bytes, call :func:`urlguard.parse_target`, and store or reject. Everything
else they have in common lives here, so both behave alike to the byte:

- the options, checked at construction (``TypeError``/``ValueError`` naming
  the keyword), and the per-route policies sorted once, longest prefix first;
- route selection by path prefix (:meth:`Guard.select`);
- the rejection body: RFC 9457 ``application/problem+json`` when the client
  asks for JSON, ``text/plain`` otherwise, built from the rule code and the
  input-free message of :class:`~urlguard.InvalidTarget`, never from the input;
- the log line, with every byte outside 0x21-0x7E backslash-escaped and its
  length bounded, so no CR, LF or control byte ever reaches a log;
- the counters and the ``on_violation`` callback.

Nothing here sees a socket, a scope's ``send`` or a ``start_response``.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Final, Literal
from urllib.parse import quote_from_bytes

from . import _grammar as g
from ._config import MODES, Config, Mode, check_prefix, load_config, route_policy
from ._errors import InvalidTarget
from ._parser import parse_target
from ._policy import DEFAULT_POLICY, Policy
from ._routes import ABSOLUTE_PREFIX, Route, RouteTable
from ._target import Target

__all__ = [
    "LOGGER",
    "TARGET_KEY",
    "VIOLATION_KEY",
    "Guard",
    "GuardedMiddleware",
    "MissingRawTarget",
    "escape",
    "rebuild_target",
    "strip_root",
    "wants_json",
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

#: Carrier of the request: the ASGI scope or the WSGI environ.
Carrier = MutableMapping[str, Any]


class GuardedMiddleware:
    """What both ``StrictURLMiddleware`` classes show of their guard."""

    _guard: Guard

    @property
    def mode(self) -> str:
        """``"enforce"`` or ``"report"``."""
        return self._guard.mode

    @property
    def violations(self) -> dict[str, int]:
        """How many requests broke each rule so far (both modes), by rule code."""
        return self._guard.violations


class Guard:
    """Checked options and the logic both middlewares share. One per middleware."""

    __slots__ = (
        "_lock",
        "_violations",
        "log_level",
        "missing_raw_target",
        "mode",
        "on_reject",
        "on_violation",
        "owner",
        "policy",
        "report",
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
        *,
        policy: object,
        routes: object,
        config: object,
        mode: object,
        on_reject: object,
        on_violation: object,
        missing_raw_target: object,
        log_level: object,
    ) -> None:
        self.owner = owner
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
        self.table = RouteTable(self.policy, pairs, owner)
        self.routes = self.table.routes

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
        self._violations: Counter[str] = Counter()
        self._lock = threading.Lock()

    # -- route selection ------------------------------------------------------

    def select(self, target: bytes, root: bytes = b"") -> Policy:
        """The policy for ``target`` (see :meth:`RouteTable.select`)."""
        return self.table.select(target, root)

    # -- violations -----------------------------------------------------------

    def record(
        self,
        exc: InvalidTarget,
        carrier: Carrier,
        target: bytes,
        *,
        method: str,
        client: str,
    ) -> None:
        """Count, log one line, store the violation and call ``on_violation``."""
        carrier.pop(TARGET_KEY, None)
        carrier[VIOLATION_KEY] = exc
        with self._lock:
            self._violations[exc.rule] += 1
        if LOGGER.isEnabledFor(self.log_level):
            what = "reported (report-only, passed on)" if self.report else "rejected"
            LOGGER.log(
                self.log_level,
                "urlguard: %s request target: rule=%s component=%s index=%s offset=%d "
                "client=%s method=%s target=%s",
                what,
                exc.rule,
                exc.component,
                "-" if exc.index is None else exc.index,
                exc.offset,
                escape(client),
                escape(method),
                escape(target),
                extra={
                    "urlguard_rule": exc.rule,
                    "urlguard_component": exc.component,
                    "urlguard_index": exc.index,
                    "urlguard_offset": exc.offset,
                    "urlguard_mode": self.mode,
                },
            )
        if self.on_violation is not None:
            try:
                self.on_violation(exc, carrier)
            except Exception:
                # A broken metrics hook must not turn a 400 into a 500, nor
                # let a request through: log it and carry on.
                LOGGER.exception("urlguard: the on_violation callback failed")

    def custom_response(self, exc: InvalidTarget, carrier: Carrier) -> object | None:
        """What ``on_reject`` returned (checked by the adapter), or ``None``."""
        if self.on_reject is None:
            return None
        try:
            result: object = self.on_reject(exc, carrier)
        except Exception:
            LOGGER.exception("urlguard: the on_reject callback failed; sent the default 400")
            return None
        return result

    @property
    def violations(self) -> dict[str, int]:
        """A snapshot: rule code -> how many requests broke it (both modes)."""
        with self._lock:
            return dict(self._violations)

    # -- responses ------------------------------------------------------------

    @staticmethod
    def rejection(exc: InvalidTarget, accept: str | None) -> tuple[str, bytes]:
        """Content type and body of the 400: names the rule, never the input."""
        if accept is not None and wants_json(accept):
            problem = {
                # RFC 9457 §4.2.1: "about:blank" means the status says it all;
                # the rule code is an extension member (§3.2).
                "type": "about:blank",
                "title": "Bad Request",
                "status": 400,
                "detail": str(exc),
                "rule": exc.rule,
                "component": exc.component,
                "index": exc.index,
                "offset": exc.offset,
            }
            body = json.dumps(problem, separators=(",", ":")).encode("ascii")
            return "application/problem+json", body
        return "text/plain; charset=utf-8", f"400 Bad Request: {exc}\n".encode("ascii")

    @staticmethod
    def refusal(accept: str | None, missing: str) -> tuple[str, bytes]:
        """Content type and body of the 501 sent when the server hands over no
        raw target at all and ``missing_raw_target="refuse"``.

        501 Not Implemented (RFC 9110 §15.6.2): the request may be fine, the
        server stack lacks what urlguard needs to judge it. A 4xx would blame
        the client and stay out of server-error alerting; 503 invites retries
        of something that will never succeed; 500 reads as a crash. 501 is
        heuristically cacheable, so the adapters add ``Cache-Control: no-store``.
        """
        detail = (
            f"the server does not provide the raw request target ({missing}); "
            "urlguard refuses to guess it from decoded values"
        )
        if accept is not None and wants_json(accept):
            problem = {
                "type": "about:blank",
                "title": "Not Implemented",
                "status": 501,
                "detail": detail,
                "code": "no-raw-target",
            }
            return "application/problem+json", json.dumps(problem).encode("ascii")
        return "text/plain; charset=utf-8", f"501 Not Implemented: {detail}\n".encode("ascii")

    def log_missing(self, server: str, missing: str) -> None:
        """The one line logged for each request refused for lack of a raw target."""
        LOGGER.error(
            "urlguard: %s: the server (%s) provides no raw request target (%s); %s. "
            "Run under a server that does (see urlguard's docs), or pass "
            "missing_raw_target='validate-decoded'",
            self.owner,
            escape(server),
            missing,
            "passed on (report-only)" if self.report else "refused with 501",
        )

    # -- without a raw target -------------------------------------------------

    def check_decoded(self, rebuilt: bytes) -> Target:
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
        policy = self.select(rebuilt)
        question = rebuilt.find(b"?")
        path = rebuilt if question < 0 else rebuilt[:question]
        # rebuild_target escapes every non-ASCII byte in upper case, and a
        # literal '%' as %25, so this finds exactly the U+FFFD characters.
        at = path.find(_REPLACEMENT_ESCAPED)
        if at < 0:
            return parse_target(rebuilt, policy)
        judged = path.replace(_REPLACEMENT_ESCAPED, _NEVER_UTF8) + rebuilt[len(path) :]
        parse_target(judged, policy)  # raises: the path holds bytes that are never UTF-8
        # Not reached while invalid-utf8 has no switch; if it ever gets one, refuse anyway.
        raise InvalidTarget("invalid-utf8", "path", path.count(b"/", 0, at) - 1, at)


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


def strip_root(raw: bytes, root: bytes) -> bytes | None:
    """``raw`` without the mount point ``root`` at its start, or ``None``.

    As Starlette's ``get_route_path``: ``root`` must end where a segment ends.
    uvicorn glues ``root_path`` to whatever the client sent, so ``*`` and an
    absolute-form target follow it directly (``/mnt*``, ``/mnthttp://h/x``).
    """
    if not raw.startswith(root):
        return None
    rest = raw[len(root) :]
    if rest[:1] == b"/" or rest == b"*" or ABSOLUTE_PREFIX.match(rest):
        return rest
    return None


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


# -- Accept negotiation (RFC 9110 §12.5.1), only ever on the rejection path --

_JSON_RANGES: Final = frozenset(("application/json", "application/problem+json", "application/*"))
_TEXT_SPECIFICITY: Final = {"text/plain": 3, "text/*": 2, "*/*": 1}
_Q: Final = re.compile(r"\s*[qQ]\s*=\s*([0-9](?:\.[0-9]{0,3})?)\s*$")


def wants_json(accept: str) -> bool:
    """Whether the client asked for JSON explicitly, at least as much as text.

    ``*/*`` alone is not asking for JSON: curl and browsers send it, and they
    are better served by one line of text.
    """
    q_json = 0.0
    q_text, text_rank = 0.0, 0
    for item in accept.split(","):
        media, _, params = item.partition(";")
        media = media.strip().lower()
        if media not in _JSON_RANGES and media not in _TEXT_SPECIFICITY:
            continue
        q = 1.0
        for param in params.split(";"):
            match = _Q.match(param)
            if match is not None:
                q = float(match[1])
        if media in _JSON_RANGES:
            q_json = max(q_json, q)
        elif _TEXT_SPECIFICITY[media] > text_rank:
            q_text, text_rank = q, _TEXT_SPECIFICITY[media]
    return q_json > 0 and q_json >= q_text


# -- escaping for log lines ---------------------------------------------------

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
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    size = len(text)
    out = _UNSAFE.sub(_escape_char, text[:limit])
    if size > limit:
        out += f"...[len={size}]"
    return out
