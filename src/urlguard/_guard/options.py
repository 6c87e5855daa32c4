"""The middleware's keyword options, checked once, at construction.

A wrong type is a ``TypeError``, a wrong value a ``ValueError``, each naming
the middleware and the keyword; nothing is coerced. What the options say is
kept in one :class:`Options` value, from which the guard derives what every
request reads.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, cast

from .._url import parser as _parser
from .._url.policy import DEFAULT_POLICY, Policy
from .allowed_hosts import AllowedHosts, HostCheck
from .config import MODES, Config, check_prefix, load_config, route_policy
from .routes import RouteTable

__all__ = ["MissingRawTarget", "Options", "application", "check_options"]

MissingRawTarget = Literal["refuse", "validate-decoded"]
MISSING_RAW_TARGET: Final[tuple[str, ...]] = ("refuse", "validate-decoded")


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """What one middleware was configured with, checked."""

    #: ``module.Class`` of the middleware, for messages.
    owner: str
    #: The protocol whose spec a carrier follows (``"ASGI"``, ``"WSGI"``), for messages.
    spec: str
    #: What a server that gives no raw target fails to provide, for messages.
    missing: str
    #: The parser module: ``parse_target``, ``parse_split_target``, ``host_header``.
    parser: _parser.ParserModule
    #: The base policy and the per-route ones.
    table: RouteTable
    #: The allow-list, if any, and the verdicts on the Host values seen.
    hosts: HostCheck
    #: Report-only: log and count, and let the request through.
    report: bool
    on_reject: Callable[..., Any] | None
    on_violation: Callable[..., Any] | None
    missing_raw_target: MissingRawTarget
    log_level: int


def check_options(
    owner: str,
    spec: str,
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
) -> Options:
    """The options, checked (see ``GuardedMiddleware.__init__`` for each)."""
    cfg = _config(owner, config, policy, routes)
    if cfg is not None:
        base = cfg.policy
        pairs: list[tuple[str, Policy]] = list(cfg.routes)
        default_mode = cfg.mode
        if allowed_hosts is None:
            allowed_hosts = cfg.allowed_hosts
    else:
        if policy is not None and not isinstance(policy, Policy):
            raise TypeError(
                f"{owner}: policy must be a urlguard.Policy, not {type(policy).__name__}"
            )
        base = DEFAULT_POLICY if policy is None else policy
        pairs = _routes(owner, routes, base)
        default_mode = "enforce"
    if mode is None:
        mode = default_mode
    if mode not in MODES:
        raise ValueError(f"{owner}: mode must be one of {MODES!r}, not {mode!r}")
    if missing_raw_target not in MISSING_RAW_TARGET:
        raise ValueError(
            f"{owner}: missing_raw_target must be one of {MISSING_RAW_TARGET!r}, "
            f"not {missing_raw_target!r}"
        )
    if type(log_level) is not int or log_level < 0:
        raise TypeError(f"{owner}: log_level must be a logging level (an int >= 0)")
    return Options(
        owner=owner,
        spec=spec,
        missing=missing,
        parser=_parser_module(owner, parser),
        table=RouteTable(base, pairs, owner),
        hosts=HostCheck(None if allowed_hosts is None else AllowedHosts(allowed_hosts, owner)),
        report=mode == "report",
        on_reject=_callback(owner, "on_reject", on_reject),
        on_violation=_callback(owner, "on_violation", on_violation),
        missing_raw_target=(
            "validate-decoded" if missing_raw_target == "validate-decoded" else "refuse"
        ),
        log_level=log_level,
    )


def application(spec: str) -> str:
    """``"an ASGI application"``, ``"a WSGI application"``: for messages."""
    return f"{'an' if spec[:1] in 'AEIOU' else 'a'} {spec} application"


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


def _parser_module(owner: str, parser: object) -> _parser.ParserModule:
    _parser.warn_if_pure()  # pip hides the build's output: say it once here
    if parser is None:
        return _parser.PARSER
    for name in ("parse_target", "parse_split_target", "host_header"):
        if not callable(getattr(parser, name, None)):
            raise TypeError(
                f"{owner}: parser must be a urlguard parser module (urlguard._url.parser_c "
                f"or urlguard._url.parser_py), not {type(parser).__name__}"
            )
    return cast(_parser.ParserModule, parser)  # it has the three functions


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
