"""Write the plan out: the configuration as TOML in the format of
:mod:`urlguard._guard.config`, every line with a comment (the rule it relaxes and
the evidence it rests on), then what it leaves rejected and why. The text is
read back with :func:`~urlguard.config_from_mapping` and the example of
every change judged again under it: any that still fails is listed, never
hidden.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..._guard.config import config_from_mapping
from ..._guard.routes import RouteTable
from ..._url.errors import RULES
from ..._url.policy import Policy
from ..audit import Report
from ..display import display
from .evidence import COUNTED, SITE_FACTOR, Thresholds
from .ledger import MAX_CAUSES, MAX_FIRST_SEGMENTS, Ledger
from .read import CHAR_KEYS, STRICT, judge
from .result import Change, Evidence, Refused, Stopped, Suggestion, when
from .tally import EXAMPLE_BYTES, Tally

if TYPE_CHECKING:
    from .plan import Draft, Grant, Planner, Refusal

#: Refused groups shown one by one; the rest are summed on one line.
REFUSED_SHOWN: Final = 20
# What Policy.browser() adds to Policy(): the browser preset's fields.
_BROWSER_KEYS: Final = ("raw_path_extra", "raw_query_extra", "query_allow_chars")


def _same(key: str, a: object, b: object) -> bool:
    if key in CHAR_KEYS and isinstance(a, str) and isinstance(b, str):
        return set(a) == set(b)
    return a == b


_Credit = dict[tuple[str | None, str], tuple[Tally, set[str]]]


def _credits(draft: Draft, grants: Iterable[Grant]) -> _Credit:
    """Which written line each change is: its route, else the top level
    (``preset`` for the browser preset's fields), with the evidence of every
    change written there."""
    credits: _Credit = {}
    base = draft.base
    preset = _preset_policy(base)
    for grant in grants:
        scope: str | None = None
        if grant.prefix != b"/":
            scope = draft.canonical(grant.prefix.decode("ascii"))
        for key in dict.fromkeys(atom[0] for atom in grant.cause):  # once per written line
            where = scope
            if (
                where is None
                and key in _BROWSER_KEYS
                and _same(key, getattr(base, key), getattr(preset, key))
            ):
                key = "preset"
            tally, rules = credits.setdefault((where, key), (Tally(), set()))
            tally.merge(grant.tally)
            rules |= grant.tally.rules
    return credits


# --- Writing it out ---------------------------------------------------------------------


def _preset_of(policy: Policy) -> str:
    browser = Policy.browser()
    covered = all(set(getattr(policy, key)) >= set(getattr(browser, key)) for key in _BROWSER_KEYS)
    return "browser" if covered else "strict"


def _preset_policy(policy: Policy) -> Policy:
    return Policy.browser() if _preset_of(policy) == "browser" else STRICT


def _differences(policy: Policy, reference: Policy) -> dict[str, object]:
    return {
        key: getattr(policy, key)
        for key in Policy.FIELDS
        if not _same(key, getattr(policy, key), getattr(reference, key))
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_range(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _toml_range(item: object) -> str:
    if isinstance(item, tuple | list):
        return "[" + ", ".join(f"0x{n:04X}" for n in item) + "]"
    return _toml_value(item)


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string in printable ASCII: quotes,
    backslashes and every other character escaped (no control or bidi
    character reaches a terminal or a file).

    >>> print(toml_string('a"b\\\\c\\r\\n\\u202e'))
    "a\\"b\\\\c\\r\\n\\u202E"
    """
    out = ['"']
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(f"\\U{ord(char):08X}")
    out.append('"')
    return "".join(out)


_TOML_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def result(
    ledger: Ledger,
    draft: Draft,
    current: Draft,
    planner: Planner,
    thresholds: Thresholds,
    mode: str,
    judged_under: str,
    lines: Report | None,
) -> Suggestion:
    scanners = planner.scanners
    credits = _credits(draft, planner.grants)
    mapping: dict[str, Any] = {"preset": _preset_of(draft.base)}
    if mode != "enforce":
        mapping["mode"] = mode
    mapping.update(_differences(draft.base, _preset_policy(draft.base)))
    # A relaxation back to the preset's value is written all the same, so
    # that every suggested change is a line with its evidence.
    for scope, key in credits:
        if scope is None and key in Policy.FIELDS and key not in mapping:
            mapping[key] = getattr(draft.base, key)
    routes = {p: _differences(draft.routes[p], draft.base) for p in sorted(draft.routes)}
    if routes:
        mapping["routes"] = routes
    changes = tuple(
        _change(scope, key, value, credits, draft, current, scanners)
        for scope, key, value in _lines(mapping)
    )

    failed_rejected: Counter[str] = Counter(ledger.failed_stopped)
    for refusal in planner.refused:
        for rule in refusal.tally.rules:
            failed_rejected[rule] += refusal.tally.failed
    for groups in ledger.groups.values():
        for tally in groups.values():
            if not tally.served:  # failing only: nothing to admit there
                for rule in sorted(tally.rules, key=RULES.index)[:1]:
                    failed_rejected[rule] += tally.failed
    if ledger.overflow.served:
        from .plan import Refusal  # the plan calls this module: imported when needed

        reason = f"past {MAX_CAUSES} causes or {MAX_FIRST_SEGMENTS} first segments of one cause"
        planner.refused.append(Refusal(b"/", (), ledger.overflow, reason))
    stopped = sum(tally.served for tally in ledger.stopped.values())
    refused = sum(refusal.tally.served for refusal in planner.refused)
    admitted = sum(grant.tally.served for grant in planner.grants)
    suggestion = Suggestion(
        text="",
        mapping=_json_ready(mapping),
        changes=changes,
        served=ledger.requests["served"],
        failed=ledger.requests["failed"],
        other=ledger.requests["other"],
        rejected_served=stopped + refused + admitted,
        admitted=admitted,
        stopped=_stopped(ledger),
        refused=tuple(_refused(planner.refused, scanners)),
        still_rejected=(),
        failed_rejected=dict(sorted(failed_rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
        failed_admitted=sum(grant.tally.failed for grant in planner.grants),
        thresholds=thresholds,
        lines=lines,
    )
    text = _text(suggestion, judged_under)
    # Checkable: the text, read back as a configuration, must admit what it
    # was made to admit. Anything it does not is shown, never hidden.
    still = _read_back(text, planner.grants)
    if still:
        suggestion = dataclasses.replace(suggestion, still_rejected=tuple(still))
        text = _text(suggestion, judged_under)
    return dataclasses.replace(suggestion, text=text)


def _refused(refusals: Iterable[Refusal], scanners: Collection[bytes]) -> list[Refused]:
    found = [
        Refused(
            refusal.prefix.decode("ascii", "replace"),
            tuple(sorted(refusal.tally.rules, key=RULES.index)),
            refusal.reason,
            refusal.tally.evidence(scanners),
        )
        for refusal in refusals
    ]
    found.sort(key=lambda r: (-r.evidence.served, -r.evidence.requests, r.scope, r.rules))
    return found


def _json_ready(mapping: dict[str, Any]) -> dict[str, Any]:
    """The mapping with tuples as lists, as JSON and TOML readers give it."""

    def fix(value: object) -> object:
        if isinstance(value, tuple | list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    return {key: fix(value) for key, value in mapping.items()}


def _lines(mapping: Mapping[str, Any]) -> Iterable[tuple[str | None, str, object]]:
    for key, value in mapping.items():
        if key != "routes":
            yield None, key, value
    for prefix, table in mapping.get("routes", {}).items():
        for key, value in table.items():
            yield prefix, key, value


def _change(
    scope: str | None,
    key: str,
    value: object,
    credits: _Credit,
    draft: Draft,
    current: Draft,
    scanners: Collection[bytes],
) -> Change:
    credit = credits.get((scope, key))
    if credit is not None:
        tally, rules = credit
        return Change(
            scope,
            key,
            value,
            "suggested",
            tuple(sorted(rules, key=RULES.index)),
            tally.evidence(scanners),
        )
    if scope is None:
        if key == "preset":
            same = value == _preset_of(current.base)
        elif key == "mode":
            same = True
        else:
            same = _same(key, value, getattr(current.base, key))
        return Change(scope, key, value, "current" if same else "inherited")
    if scope in current.routes and _same(key, value, getattr(current.routes[scope], key)):
        return Change(scope, key, value, "current")
    # A route made inside another repeats what encloses it.
    return Change(scope, key, value, "inherited", inherited_from=draft.shorter(scope))


def _read_back(text: str, grants: Iterable[Grant]) -> list[str]:
    """The examples of the changes that the written text, read back as a
    configuration, still rejects (none, unless something is wrong)."""
    config = config_from_mapping(tomllib.loads(text), source="suggestion")
    table = RouteTable(config.policy, list(config.routes))
    still = []
    for grant in grants:
        for _, target in grant.tally.examples:
            if judge(target, table.select(target)) is not None:
                still.append(display(target, limit=EXAMPLE_BYTES))
    return still


def _stopped(ledger: Ledger) -> tuple[Stopped, ...]:
    found = [
        Stopped(
            rule,
            reason,
            tally.served,
            len(tally.targets),
            tuple(display(target, limit=EXAMPLE_BYTES) for _, target in tally.examples),
        )
        for (rule, reason), tally in ledger.stopped.items()
    ]
    found.sort(key=lambda stop: (-stop.requests, stop.rule, stop.reason))
    return tuple(found)


def _counted(count: int, noun: str) -> str:
    return _plural(count, noun) + (" or more" if count >= COUNTED else "")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _text(suggestion: Suggestion, judged_under: str) -> str:
    s = suggestion
    stopped = sum(stop.requests for stop in s.stopped)
    refused = sum(refusal.evidence.served for refusal in s.refused)
    read = s.lines
    lines = [
        "# urlguard configuration suggested by `urlguard audit --suggest`.",
        f"# The logs were judged under: {judged_under}.",
        f"# Lines read: {read.lines if read else 0:,}; parsed: {read.parsed if read else 0:,}; "
        f"skipped (not parsed): {read.unparseable if read else 0:,}.",
        *(f"#   e.g. {shown}" for shown in (read.unparseable_examples if read else ())),
        f"# Requests answered 2xx/3xx: {s.served:,}, of which that policy rejects "
        f"{s.rejected_served:,}.",
        f"# This configuration admits {s.admitted:,} of those; never loosened: {stopped:,}; "
        f"not enough evidence or refused: {refused:,}"
        + (" (listed at the end)." if stopped or refused else "."),
        f"# Requests answered 4xx/5xx: {s.failed:,}; this configuration admits "
        f"{s.failed_admitted:,} of those that policy rejects.",
        f"# Evidence a change needs: {s.thresholds.text()} under a route;",
        f"# at the top level {s.thresholds.text(site=True)}, and {SITE_FACTOR} first segments"
        " with a route's evidence each.",
    ]
    if s.other:
        lines.append(
            f"# Requests with no 2xx-5xx status (1xx, 000, or a list of targets): "
            f"{s.other:,}; they count neither way."
        )
    lines.append("# Check it: urlguard audit --config THIS-FILE LOG...")
    by_line = {(change.scope, change.key): change for change in s.changes}
    lines.append("")
    for key, value in s.mapping.items():
        if key != "routes":
            lines += _spaced(lines, _commented(by_line[None, key], value))
    routes: dict[str, dict[str, object]] = s.mapping.get("routes", {})
    for prefix, table in routes.items():
        lines += ["", f"[routes.{toml_string(prefix)}]"]
        if not table:
            lines.append("# as in the current configuration: the base policy")
        for key, value in table.items():
            lines += _spaced(lines, _commented(by_line[prefix, key], value))
    lines += _closing(s)
    return "\n".join(lines) + "\n"


def _spaced(before: list[str], entry: list[str]) -> list[str]:
    """A blank line between an entry with comment lines and a line above
    it that is not a table header or a blank line already."""
    if len(entry) > 1 and before and before[-1] and not before[-1].startswith("["):
        return ["", *entry]
    return entry


def _commented(change: Change, value: object) -> list[str]:
    line = f"{change.key} = {_toml_value(value)}"
    if change.origin == "current":
        return [f"{line}  # as in the current configuration"]
    if change.origin == "inherited":
        where = (
            "the top level"
            if change.inherited_from is None
            else f"[routes.{toml_string(change.inherited_from)}]"
        )
        return [f"{line}  # as in {where}, which this longer prefix replaces"]
    return [
        f"# {', '.join(change.rules)}{_browser_note(change.key, value)}:",
        *(f"#   {line}" for line in _evidence_lines(change.admits)),
        *(f"# {line}" for line in _REVIEW.get(change.key, ())),
        line,
    ]


# What a reviewer must know of a setting beyond its evidence: it admits more
# than the log showed.
_REVIEW: Final[dict[str, tuple[str, ...]]] = {
    "double_encoding": (
        "review: admits every double encoding under it, also one the log never showed",
        "that decodes twice to markup or a separator: nothing here may decode twice.",
    ),
    "query_allow_chars": (
        "review: admits these characters in every query under it; CR or LF there must",
        "never reach a response header (a redirect's Location) or a log line.",
    ),
}


def _evidence_lines(e: Evidence) -> list[str]:
    """What a change rests on, in words: requests, targets, clients and
    networks, days, the first and last time seen, an example, what did not
    count, and the requests answered 4xx/5xx."""
    lines = [
        f"{_plural(e.requests, 'request')} answered 2xx/304 ({_counted(e.targets, 'target')}) "
        f"from {_counted(e.clients, 'client')} in {_counted(e.networks, 'network')} "
        f"on {_plural(e.days, 'day')},",
        f"first seen {when(e.first) or 'at no logged time'}, "
        f"last seen {when(e.last) or 'at no logged time'};",
        f"e.g. {e.example}",
    ]
    if e.redirected or e.discounted:
        lines.append(
            f"not counted: {_plural(e.redirected, 'redirect')}, "
            f"{_plural(e.discounted, 'request')} of clients that break several kinds of rule"
        )
    if e.failed:
        lines.append(
            f"and {_plural(e.failed, 'request')} answered 4xx/5xx under it"
            f" ({e.against:,} on the very targets it admits, whose"
            f" {_plural(e.contested, 'served request')} do not count)"
        )
    else:
        lines.append("and none answered 4xx/5xx")
    return lines


def _browser_note(key: str, value: object) -> str:
    """Say so when a line is there because browsers send characters raw."""
    if key == "preset" and value == "browser":
        return " (browsers send some characters raw; this preset accepts what they send)"
    return ""


def _closing(s: Suggestion) -> list[str]:
    lines: list[str] = []
    if s.still_rejected:
        lines += [
            "",
            "# Meant to be admitted, yet rejected by this text read back (a bug; please report):",
            *(f"#   {shown}" for shown in s.still_rejected),
        ]
    if s.refused:
        lines += [
            "",
            "# Answered 2xx/3xx, but would be rejected: not enough evidence to admit, or a",
            "# change this configuration does not make (see each reason):",
        ]
        for refusal in s.refused[:REFUSED_SHOWN]:
            where = "the top level" if refusal.scope == "/" else toml_string(refusal.scope)
            e = refusal.evidence
            lines += [
                f"#   {', '.join(refusal.rules) or 'several rules'} under {where}:",
                f"#     {refusal.reason};",
                f"#     {_plural(e.served, 'request')} answered 2xx/3xx "
                f"({_counted(e.targets, 'target')}), {e.requests:,} of them evidence, "
                f"from {_counted(e.networks, 'network')} on {_plural(e.days, 'day')},",
                f"#     {when(e.first) or 'no time'} to {when(e.last) or 'no time'}",
                f"#     e.g. {e.example}",
            ]
        rest = s.refused[REFUSED_SHOWN:]
        if rest:
            requests = sum(refusal.evidence.served for refusal in rest)
            lines.append(f"#   and {len(rest):,} more, {_plural(requests, 'request')} in all")
    if s.stopped:
        lines += [
            "",
            "# Answered 2xx/3xx and still rejected: these rules are never loosened, so",
            "# enforcement will stop these requests (fix the links or the clients):",
        ]
        for stop in s.stopped:
            lines.append(
                f"#   {stop.rule}: {_plural(stop.requests, 'request')} "
                f"({_counted(stop.targets, 'target')}), {stop.reason}"
            )
            lines += [f"#     e.g. {shown}" for shown in stop.examples]
    if s.failed_rejected:
        lines += [
            "",
            "# Answered 4xx/5xx and still rejected, by rule: "
            + ", ".join(f"{rule} {n:,}" for rule, n in s.failed_rejected.items()),
        ]
    return lines
