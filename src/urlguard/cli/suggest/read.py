"""Read one rejected target: what it needs beyond its policy (its *cause*:
the settings that would admit it), or which rule never loosened stops it.

The policy is relaxed, on a copy, rule by rule as the parser meets them,
until the target passes or meets a rule of :mod:`.never`. The answer is the
same for every target of one shape under one policy, so the ledger asks
once per shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Final
from urllib.parse import unquote_to_bytes

from ..._url import grammar as g
from ..._url.errors import InvalidTarget
from ..._url.parser import parse_target
from ..._url.policy import Policy
from .evidence import family_bits
from .never import (
    LIMIT_BOUNDS,
    NEVER_RAW_IN_PATH,
    PROTECTED_RULES,
    QUERY_TEXT_CONTROLS,
    REASONS,
    dangerous_twice,
)

#: Rounds of relaxation of one target before the engine gives up on it.
MAX_ROUNDS: Final = 64
_NO_LIMIT: Final = 1 << 40

# The settings the engine may change, with the value each relaxes to.
SWITCHES: Final[dict[str, str]] = {
    "encoded_slash": "keep",
    "encoded_backslash": "keep",
    "empty_segment": "allow",
    "double_encoding": "allow",
    "path_params": "literal",
}
CHAR_KEYS: Final = ("raw_path_extra", "raw_query_extra", "allow_chars", "query_allow_chars")
LIMIT_KEYS: Final = ("max_length", "max_segments", "max_params")

# One relaxation: a setting and, for character sets, the character. Limits
# carry the value they need beside the atom.
Atom = tuple[str, str]
#: What a target needs: its atoms, sorted (one tally per cause and prefix).
Cause = tuple[Atom, ...]
EMPTY: Final[Atom] = ("empty_segment", "")
DOUBLE: Final[Atom] = ("double_encoding", "")
STRICT: Final = Policy()


class Analysis:
    """What a target needs beyond its policy (its cause, the value each
    limit of it needs, the rules relaxed), or the rule never loosened and the
    reason that stop it; ``twice``: its second decoding is dangerous. The
    same for every target of one shape under one policy."""

    __slots__ = ("cause", "families", "needs", "rules", "stop", "twice")

    def __init__(
        self,
        cause: Cause = (),
        needs: dict[Atom, int] | None = None,
        rules: Collection[str] = (),
        stop: tuple[str, str] | None = None,
        twice: bool = False,
    ) -> None:
        self.cause = cause
        self.needs = needs or {}
        self.rules = frozenset(rules) if stop is None else frozenset((stop[0],))
        self.families = family_bits(self.rules)  # what a client sending it breaks
        self.stop = stop
        self.twice = twice


def analyse(target: bytes, path: bytes, policy: Policy) -> Analysis:
    """Relax a copy of the target's policy, rule by rule as the parser
    meets them, until it passes or meets a rule never loosened."""
    needs: dict[Atom, int] = {}
    rules: set[str] = set()
    for _ in range(MAX_ROUNDS):
        found = judge(target, policy)
        if found is None:
            limits = {atom: need for atom, need in needs.items() if atom[0] in LIMIT_KEYS}
            return Analysis(tuple(sorted(needs)), limits, rules)
        cause = _cause(target, path, found, policy)
        if cause.atoms is None:
            return Analysis(stop=(cause.rule, cause.reason))
        atoms = cause.atoms
        if any(key == "raw_path_extra" and char in NEVER_RAW_IN_PATH for key, char in atoms):
            return Analysis(stop=(cause.rule, REASONS["raw-path"]))
        if any(
            key in LIMIT_BOUNDS and need > LIMIT_BOUNDS[key] for (key, _), need in atoms.items()
        ):
            return Analysis(stop=(cause.rule, REASONS["beyond-bound"]))
        separator = any(is_separator(atom) for atom in atoms) or keeps_separator(policy)
        if separator and (EMPTY in atoms or EMPTY in needs):
            return Analysis(stop=(cause.rule, REASONS["empty-beside-separator"]))
        if DOUBLE in atoms and dangerous_twice(path):
            return Analysis(stop=(cause.rule, REASONS["double-twice"]), twice=True)
        for atom, need in atoms.items():
            if atom[0] in LIMIT_KEYS:
                needs[atom] = max(needs.get(atom, 0), need)
            else:
                needs.setdefault(atom, 0)
            # Which settings, not how much: a limit opened wide says the
            # same and keeps the relaxed policies few (and cached).
            policy = relax(policy, atom, _NO_LIMIT if atom[0] in LIMIT_KEYS else need)
        rules.add(cause.rule)
    return Analysis(stop=("unresolved", REASONS["unresolved"]))


def is_separator(atom: Atom) -> bool:
    return atom[0] in ("encoded_slash", "encoded_backslash") or atom == ("raw_path_extra", "\\")


def keeps_separator(policy: Policy) -> bool:
    """Whether a segment of ``policy`` may hold a separator (``%2F``,
    ``%5C``, a raw ``\\``): an empty part there is an absolute path."""
    return (
        policy.encoded_slash == "keep"
        or policy.encoded_backslash == "keep"
        or "\\" in policy.raw_path_extra
    )


class _Cause:
    """Why a target is rejected: the rule, and either the atoms that would
    lift it (with the value each limit needs) or, for a rule never
    loosened, ``atoms is None`` and the reason."""

    __slots__ = ("atoms", "reason", "rule")

    def __init__(self, rule: str, atoms: dict[Atom, int] | None, reason: str = "") -> None:
        self.rule = rule
        self.atoms = atoms
        self.reason = reason


def judge(target: bytes, policy: Policy) -> InvalidTarget | None:
    try:
        parse_target(target, policy)
    except InvalidTarget as error:
        return error.with_traceback(None)  # not the parser's frames
    return None


def _cause(target: bytes, path: bytes, error: InvalidTarget, policy: Policy) -> _Cause:
    rule: str = error.rule
    if rule in PROTECTED_RULES:
        return _Cause(rule, None, REASONS[rule])
    if error.component == "target" and rule != "too-long":
        return _Cause(rule, None, REASONS["authority"])  # the host is never relaxed
    raw = target
    if rule == "too-long":
        return _Cause(rule, {("max_length", ""): len(raw)})
    query = raw.partition(b"?")[2] if b"?" in raw else b""
    if rule == "too-many":
        if error.component == "path":
            return _Cause(rule, {("max_segments", ""): path.count(b"/")})
        return _Cause(rule, {("max_params", ""): sum(1 for pair in query.split(b"&") if pair)})
    if rule == "raw-char":
        return _raw_char_cause(path if error.component == "path" else query, error, policy)
    if rule == "forbidden-char":
        return _forbidden_char_cause(path, query, error, policy)
    key = {
        "encoded-slash": "encoded_slash",
        "encoded-backslash": "encoded_backslash",
        "empty-segment": "empty_segment",
        "double-encoding": "double_encoding",
    }[rule]
    return _Cause(rule, {(key, ""): 0})


def _raw_char_cause(piece: bytes, error: InvalidTarget, policy: Policy) -> _Cause:
    in_path = error.component == "path"
    allowed = (g.PATH_RAW if in_path else g.QUERY_RAW) | frozenset(
        (policy.raw_path_extra if in_path else policy.raw_query_extra).encode("ascii")
    )
    if in_path and policy.path_params == "reject":
        allowed -= {g.SEMICOLON}
    key = "raw_path_extra" if in_path else "raw_query_extra"
    atoms: dict[Atom, int] = {}
    for byte in set(piece) - allowed:
        if byte in g.ALLOWABLE_RAW_EXTRA:
            atoms[key, chr(byte)] = 0
        elif byte == g.SEMICOLON and in_path and policy.path_params == "reject":
            atoms["path_params", ""] = 0
        else:
            return _Cause("raw-char", None, REASONS["raw-char"])
    if not atoms:  # cannot happen: the parser found one; never loop on it
        return _Cause("raw-char", None, REASONS["unresolved"])
    return _Cause("raw-char", atoms)


def _always_forbidden(char: str) -> bool:
    return not STRICT.allows_char(char)


def _forbidden_char_cause(
    path: bytes, query: bytes, error: InvalidTarget, policy: Policy
) -> _Cause:
    """Every character of the component the policy forbids, not only the
    first: one relaxation admits them all."""
    if error.component == "path":
        text = unquote_to_bytes(path).decode("utf-8", "replace")
        found = {c for c in text if not policy.allows_char(c)}
        if not found or any(_always_forbidden(c) for c in found):
            return _Cause("forbidden-char", None, REASONS["forbidden-char"])
        return _Cause("forbidden-char", {("allow_chars", c): 0 for c in found})
    if policy.plus_as_space:
        query = query.replace(b"+", b" ")
    text = unquote_to_bytes(query).decode("utf-8", "replace")
    found = {c for c in text if not policy.allows_char(c, "query")}
    if not found or any(_always_forbidden(c) and c not in QUERY_TEXT_CONTROLS for c in found):
        return _Cause("forbidden-char", None, REASONS["forbidden-char"])
    return _Cause("forbidden-char", {("query_allow_chars", c): 0 for c in found})


@functools.lru_cache(maxsize=4096)
def relax(policy: Policy, atom: Atom, need: int) -> Policy:
    """``policy`` with one atom applied: only ever looser. (Cached: a
    Policy derives its tables when made, and targets ask for the same
    relaxations of the same few policies over and over.)"""
    key, char = atom
    if key in SWITCHES:
        value = SWITCHES[key]
        return policy if getattr(policy, key) == value else policy.replace(**{key: value})
    if key in LIMIT_KEYS:
        return policy if getattr(policy, key) >= need else policy.replace(**{key: need})
    current: str = getattr(policy, key)
    if char in current:
        return policy
    return policy.replace(**{key: chars(current + char)})


def chars(text: str) -> str:
    return "".join(sorted(set(text)))


def relaxing(atom: Atom, need: int) -> Callable[[Policy], Policy]:
    return lambda policy: relax(policy, atom, need)
