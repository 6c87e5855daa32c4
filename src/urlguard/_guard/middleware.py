"""The configuration both ``StrictURLMiddleware`` classes take, declared once:
each adapter subclasses :class:`GuardedMiddleware` and adds its ``__call__``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic

from .._url.errors import InvalidTarget
from .._url.parser import ParserModule
from .._url.policy import Policy
from .config import Config
from .decision import A, C, Guard, Request
from .options import MissingRawTarget, application, check_options

__all__ = ["GuardedMiddleware"]


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
        parser: ParserModule | None = None,
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
        options = check_options(
            owner,
            self.protocol,
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
        self._guard: Guard[C, A] = Guard(options, type(self).read)

    @property
    def mode(self) -> str:
        """``"enforce"`` or ``"report"``."""
        return self._guard.mode

    @property
    def violations(self) -> dict[str, int]:
        """How many requests broke each rule so far (both modes), by rule code."""
        return self._guard.violations
