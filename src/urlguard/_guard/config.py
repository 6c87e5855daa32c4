"""One configuration format for the middleware and the command line.

A TOML file, standalone or as ``[tool.urlguard]`` in ``pyproject.toml``::

    preset = "strict"            # or "browser"
    mode = "enforce"             # or "report" (middleware only)
    allowed_hosts = ["example.com", "*.example.com"]   # default: any valid host
    max_segments = 64
    allowed_ranges = [[0x20, 0x7E], [0xA0, 0xFF]]

    [routes."/files/"]           # raw path prefix; longest prefix wins
    encoded_slash = "keep"

Every other top-level key is a :class:`~urlguard.Policy` field. A route's
keys override the base policy. Unknown keys and bad values are refused with
a message that names them; nothing is ignored silently.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from .._url.policy import DEFAULT_POLICY, Policy
from .allowed_hosts import AllowedHosts

Mode = Literal["enforce", "report"]
MODES: Final[tuple[str, ...]] = ("enforce", "report")
PRESETS: Final[tuple[str, ...]] = ("strict", "browser")
_TOP_LEVEL_KEYS: Final = frozenset(("preset", "mode", "routes", "allowed_hosts"))


def preset_policy(preset: str) -> Policy:
    """The policy a preset names (one of :data:`PRESETS`)."""
    return Policy.browser() if preset == "browser" else DEFAULT_POLICY


@dataclasses.dataclass(frozen=True)
class Config:
    """A base policy, per-route policies by raw path prefix, a mode, and
    the hosts the application serves (``None``: any valid host)."""

    policy: Policy = DEFAULT_POLICY
    routes: tuple[tuple[str, Policy], ...] = ()
    mode: Mode = "enforce"
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.policy, Policy):
            raise TypeError("Config.policy must be a urlguard.Policy")
        if self.mode not in MODES:
            raise ValueError(f"Config.mode must be one of {MODES!r}, not {self.mode!r}")
        for prefix, policy in self.routes:
            check_prefix(prefix, "Config.routes")
            if not isinstance(policy, Policy):
                raise TypeError(f"Config.routes[{prefix!r}] must be a urlguard.Policy")
        if self.allowed_hosts is not None:
            AllowedHosts(self.allowed_hosts, "Config.allowed_hosts")  # raises on a bad entry


def config_from_mapping(
    mapping: Mapping[str, Any], *, source: str = "configuration", default_preset: str = "strict"
) -> Config:
    """Build a :class:`Config` from a mapping shaped like the TOML file.
    ``default_preset`` is the preset used when the mapping names none."""
    if default_preset not in PRESETS:
        raise ValueError(f"default_preset must be one of {PRESETS!r}, not {default_preset!r}")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{source}: expected a table of settings")
    _refuse_unknown(mapping, _TOP_LEVEL_KEYS | set(Policy.FIELDS), source)
    preset = mapping.get("preset", default_preset)
    if preset not in PRESETS:
        raise ValueError(f"{source}: preset must be one of {PRESETS!r}, not {preset!r}")
    mode = mapping.get("mode", "enforce")
    if mode not in MODES:
        raise ValueError(f"{source}: mode must be one of {MODES!r}, not {mode!r}")
    overrides = {k: v for k, v in mapping.items() if k not in _TOP_LEVEL_KEYS}
    policy = _policy(preset_policy(preset), overrides, source)

    routes_table = mapping.get("routes", {})
    if not isinstance(routes_table, Mapping):
        raise TypeError(f"{source}: routes must be a table of raw path prefixes")
    routes: list[tuple[str, Policy]] = []
    for prefix, route_overrides in routes_table.items():
        where = f"{source} [routes.{prefix!r}]"
        check_prefix(prefix, where)
        if not isinstance(route_overrides, Mapping):
            raise TypeError(f"{where}: expected a table of policy settings")
        routes.append((prefix, route_policy(policy, route_overrides, where)))
    hosts = mapping.get("allowed_hosts")
    if hosts is not None:
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise TypeError(f"{source}: allowed_hosts must be a list of host names")
        AllowedHosts(hosts, source)  # raises on a bad entry, naming the file
        hosts = tuple(hosts)
    return Config(policy=policy, routes=tuple(routes), mode=mode, allowed_hosts=hosts)


def load_config(path: str | os.PathLike[str], *, default_preset: str = "strict") -> Config:
    """Read a :class:`Config` from a TOML file, or from the ``[tool.urlguard]``
    table of a ``pyproject.toml``. ``default_preset`` is the preset used when
    the file names none (the command line's ``--policy``)."""
    file = Path(path)
    try:
        with file.open("rb") as stream:
            data = tomllib.load(stream)
    except OSError as error:
        raise ValueError(f"{file}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{file}: not valid TOML: {error}") from None
    tool = data.get("tool")
    if isinstance(tool, Mapping) and "urlguard" in tool:
        return config_from_mapping(
            tool["urlguard"], source=f"{file} [tool.urlguard]", default_preset=default_preset
        )
    if file.name == "pyproject.toml":
        raise ValueError(f"{file}: has no [tool.urlguard] table")
    return config_from_mapping(data, source=str(file), default_preset=default_preset)


def route_policy(base: Policy, overrides: Mapping[str, Any], where: str) -> Policy:
    """A route's policy: ``base`` with ``overrides`` (TOML-shaped, keys
    checked), errors naming ``where``; for the config file and the
    middlewares' ``routes=`` alike."""
    _refuse_unknown(overrides, set(Policy.FIELDS), where)
    return _policy(base, overrides, where)


def _policy(base: Policy, overrides: Mapping[str, Any], where: str) -> Policy:
    changes = dict(overrides)
    if "allowed_ranges" in changes and isinstance(changes["allowed_ranges"], list):
        # TOML has arrays, not tuples.
        changes["allowed_ranges"] = tuple(
            tuple(item) if isinstance(item, list) else item for item in changes["allowed_ranges"]
        )
    try:
        return base.replace(**changes)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def _refuse_unknown(
    mapping: Mapping[str, Any], known: set[str] | frozenset[str], where: str
) -> None:
    unknown = sorted(set(mapping) - known)
    if unknown:
        raise ValueError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; known keys: {', '.join(sorted(known))}"
        )


def check_prefix(prefix: object, where: str) -> None:
    """A route prefix is a raw ASCII path: '/' first, no '?', '#' or spaces."""
    if not isinstance(prefix, str) or not prefix.startswith("/"):
        raise ValueError(
            f"{where}: a route prefix must be a raw path starting with '/', not {prefix!r}"
        )
    if not prefix.isascii() or any(c in prefix for c in "?# \t\r\n"):
        raise ValueError(
            f"{where}: a route prefix must be a raw ASCII path without '?', '#' or spaces"
        )
