"""The ``urlguard`` command: check targets, audit access logs, encode pieces.

    urlguard check [--policy strict|browser] [--config FILE] [--json] TARGET...
    urlguard audit [--policy ...] [--config FILE]
                   [--format auto|combined|common|vhost_combined|targets]
                   [--json] [--suggest [--write FILE [--force]]] FILE...
    urlguard encode segment|query|fragment TEXT  ·  urlguard clean URI  ·  urlguard pretty URI

``check`` and ``audit`` exit 0 when everything passes, 1 when something would
be rejected, 2 on usage errors and unreadable input. ``audit --suggest``
prints (or writes) a configuration that admits what the logs show the site
served, and exits 0 when it admits every request answered 2xx/3xx, 1 when
some of those stay rejected by a rule that is never loosened, 2 as above.

Security model: everything shown comes from untrusted input (a target from a
ticket, a log written by clients), so nothing is printed raw. Targets and
examples are shown with printable ASCII as is and every other byte as
``\\xHH``; decoded text is shown as Python string literals (non-printable
characters escaped); JSON output is ASCII. Errors are one line on stderr,
never a traceback.

    >>> main(["check", "/caf%C3%A9/x?q=a+b"])
    ok      /caf%C3%A9/x?q=a+b
            segments  ['café', 'x']
            query     [('q', 'a b')]
    0

A rejected target is shown escaped, with a caret under the offending byte and
the rule, its reason and its position on the next lines.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeAlias

# The public API, as any other user of urlguard would call it.
from .. import (
    InvalidTarget,
    Target,
    clean_uri,
    encode_fragment,
    encode_path_segment,
    encode_query_value,
    load_config,
    parse_target,
    pretty_uri,
)
from .._guard.allowed_hosts import AllowedHosts, HostCheck
from .._guard.config import PRESETS, Config, preset_policy
from .._guard.routes import RouteTable
from .audit import (
    FORMATS,
    HOST_FORMATS,
    Auditor,
    Progress,
    ProgressFactory,
    Report,
)
from .display import display, display_pieces
from .sources import AuditError
from .suggest import SITE_FACTOR, Ledger, Suggestion, Thresholds, suggest, toml_string

#: What runs a subcommand: its parsed arguments in, its exit status out.
_Handler: TypeAlias = Callable[[argparse.Namespace], int]
_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: Exit codes (pinned).
EXIT_OK: Final = 0
EXIT_REJECTED: Final = 1
EXIT_ERROR: Final = 2

#: Bytes shown on each side of the offending offset in ``check``.
_CONTEXT: Final = 60
#: Bytes of an audit example shown in the text report (JSON has them whole).
_EXAMPLE_WIDTH: Final = 120
#: Changes not made shown one by one in the summary of ``--write``.
_SUMMARY_REFUSED: Final = 5
#: Seconds before a progress bar appears: short runs never show one.
_PROGRESS_DELAY: Final = 0.5
#: Said once, on a terminal, by an audit that runs past that delay without
#: tqdm: where the progress display would have been.
_NO_PROGRESS: Final = (
    "urlguard audit: no progress display: it needs tqdm, which the cli extra "
    "installs (from a clone of urlguard: pip install '.[cli]')"
)

_POLICY_HELP: Final = (
    "strict (the default policy) or browser (also accepts, raw, what browsers send). "
    "With --config, the file's keys win: --policy only chooses the preset the file "
    "builds on when the file names no 'preset' of its own."
)
_CONFIG_HELP: Final = (
    "a TOML policy file, standalone or a pyproject.toml with [tool.urlguard] (the same "
    "file the middleware reads); each target is judged under the policy the middleware "
    "would choose for it, its [routes] included"
)
_EXIT_HELP: Final = (
    "exit status: 0 when every target passes, 1 when any would be rejected, "
    "2 on usage errors and unreadable input"
)
_AUDIT_EXIT_HELP: Final = (
    _EXIT_HELP + "; with --suggest: 0 when the suggested configuration admits every request "
    "answered 2xx/3xx, 1 when some of those stay rejected (by a rule never loosened), 2 as above"
)


class _Error(Exception):
    """A one-line error for stderr; exit status 2."""


# --- entry point ---------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``urlguard`` command with ``argv`` (default ``sys.argv[1:]``);
    return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_ERROR
    command: _Handler = args.command
    try:
        return command(args)
    except _Error as error:
        _fail(str(error))
    except AuditError as error:
        _fail(str(error))
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT, as shells report it
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (`| head`): nothing left to say
    return EXIT_ERROR


def _fail(message: str) -> None:
    print(f"urlguard: error: {_one_line(message)}", file=sys.stderr)


def _one_line(text: str) -> str:
    """``text`` with every non-printable character (line breaks, controls,
    bidi controls) escaped, so that an error is one safe line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="urlguard",
        description="Check request targets and audit access logs against urlguard's "
        "strict rules; encode URL pieces.",
        epilog=_EXIT_HELP,
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    check = _checking_command(
        commands,
        "check",
        _check,
        inputs=("targets", "TARGET"),
        json_help="one JSON object per target and line: target, ok, rule, segments, query",
        help="check request targets given on the command line",
        description="Check each TARGET (origin-form '/path?query' or http(s) absolute-form, "
        "exactly as a client would send it) and show its decoded segments and query, or "
        "the rule it breaks with a caret under the offending byte.",
        epilog=_EXIT_HELP,
    )
    check.add_argument(
        "--host",
        metavar="HOST",
        help="the Host header sent with the targets: checked first (bad-host, or "
        "host-not-allowed outside the config's allowed_hosts), and an absolute-form "
        "target must name the same authority",
    )

    audit = _checking_command(
        commands,
        "audit",
        _audit,
        inputs=("files", "FILE"),
        json_help="one JSON object: lines, parsed, unparseable, rejected, rules (rule -> "
        "count), share, examples, unparseable_examples, formats, hosts_checked (false when "
        "a format logs no host); with --suggest also 'suggestion' and 'host_stopped'; "
        "no progress display",
        help="count which requests of an access log would be rejected",
        description="Read access logs (nginx/Apache combined or common format, Apache "
        "vhost_combined), or plain lists of targets, one per line; plain or gzip; '-' is "
        "standard input. Undo the servers' log escaping (\\xHH, \\\", \\\\) and check each "
        "request target, and the host where the format logs it (vhost_combined's %v:%p, "
        "against the config's allowed_hosts too). Report per rule the count, the share of "
        "parsed lines and up to three examples; say when the format logs no host. "
        "With --suggest, propose the configuration that admits what the site served.",
        epilog=_AUDIT_EXIT_HELP,
    )
    audit.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="the line format (default auto: a log if lines look like one, vhost_combined "
        "when their first field is host:port, else a list of targets; decided per file from "
        "its first lines)",
    )
    audit.add_argument(
        "--suggest",
        action="store_true",
        help="print a TOML configuration that admits the requests the logs show answered "
        "2xx/304 and the policy rejects, where the evidence of use is enough (see "
        "--min-requests, --min-networks, --min-days; redirects and clients that break "
        "several kinds of rule do not count), by the narrowest change (a route under the "
        "common prefix of the requests that need it), each line commented with its evidence; "
        "never loosens invalid-utf8, malformed-escape, fragment, bad-form, dot segments, "
        "drive letters, control and bidi characters (CR, LF and TAB only under a route, "
        "never where a redirect answered them), raw characters no browser sends in a path, "
        "an empty segment beside a kept separator, a dangerous double encoding or a limit "
        "past its bound, and lists what they will stop and what lacks evidence. Needs logs "
        "with a status (combined, common or vhost_combined format)",
    )
    thresholds = Thresholds()
    for option, default, text in (
        (
            "--min-requests",
            thresholds.requests,
            "with --suggest: requests answered 2xx/304 a change needs under a route "
            f"(default {thresholds.requests}; the top level needs {SITE_FACTOR} times as many)",
        ),
        (
            "--min-networks",
            thresholds.networks,
            "with --suggest: distinct networks (IPv4 /24, IPv6 /48) those requests come "
            f"from (default {thresholds.networks}; the top level: {SITE_FACTOR} times)",
        ),
        (
            "--min-days",
            thresholds.days,
            "with --suggest: calendar days (UTC) those requests fall on, the first and the "
            f"last at least N-1 days apart (default {thresholds.days})",
        ),
        (
            "--max-routes",
            thresholds.routes,
            f"with --suggest: routes suggested at most (default {thresholds.routes}); past "
            "it, the routes with the least evidence are listed as refused",
        ),
    ):
        audit.add_argument(option, type=int, metavar="N", default=default, help=text)
    audit.add_argument(
        "--write",
        metavar="TOML",
        help="with --suggest: write the configuration to this file (refused if it exists, "
        "unless --force) and print a summary instead; load it with --config",
    )
    audit.add_argument(
        "--force", action="store_true", help="with --write: replace the file if it exists"
    )

    encode = _add_command(
        commands,
        "encode",
        _encode,
        help="percent-encode one decoded piece of a URL",
        description="Percent-encode TEXT as one path segment, one query value or a "
        "fragment (UTF-8, upper-case hex). '%' is always encoded: nothing is assumed "
        "to be encoded already.",
    )
    encode.add_argument("component", choices=("segment", "query", "fragment"))
    encode.add_argument("text", metavar="TEXT")
    encode.add_argument(
        "--space",
        choices=("+", "%20"),
        help="how a space is written in a query value (default '+')",
    )

    clean = _add_command(
        commands,
        "clean",
        _clean,
        help="make a URI typed by a person valid",
        description="Escape what RFC 3986 never allows raw (space, controls, "
        '" < > \\ ^ ` { | }, non-ASCII); keep reserved characters and valid escapes.',
    )
    clean.add_argument("uri", metavar="URI")

    pretty = _add_command(
        commands,
        "pretty",
        _pretty,
        help="show a URI for people",
        description="Decode the escapes that are safe to show (letters, digits, "
        "non-ASCII text); keep reserved characters, '%', controls and bidi controls "
        "escaped. Raw characters in URI are cleaned first, so nothing unsafe is shown.",
    )
    pretty.add_argument("uri", metavar="URI")
    return parser


def _add_command(
    commands: _Commands,
    name: str,
    handler: _Handler,
    *,
    help: str,
    description: str,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """The subcommand ``name``, run by ``handler``."""
    parser = commands.add_parser(name, help=help, description=description, epilog=epilog)
    parser.set_defaults(command=handler)
    return parser


def _checking_command(
    commands: _Commands,
    name: str,
    handler: _Handler,
    *,
    inputs: tuple[str, str],
    json_help: str,
    help: str,
    description: str,
    epilog: str,
) -> argparse.ArgumentParser:
    """A subcommand that checks its inputs (``inputs``: the attribute and the metavar,
    one or more of them) under the policy ``--policy`` and ``--config`` give, in text or
    with ``--json``."""
    parser = _add_command(
        commands, name, handler, help=help, description=description, epilog=epilog
    )
    parser.add_argument("--policy", choices=PRESETS, help=_POLICY_HELP)
    parser.add_argument("--config", metavar="FILE", help=_CONFIG_HELP)
    parser.add_argument("--json", action="store_true", help=json_help)
    attribute, metavar = inputs
    parser.add_argument(attribute, nargs="+", metavar=metavar)
    return parser


# --- policy ----------------------------------------------------------------------


def _resolve_config(args: argparse.Namespace) -> Config:
    preset: str = args.policy or "strict"
    path: str | None = args.config
    if path is None:
        return Config(policy=preset_policy(preset))
    try:
        return load_config(path, default_preset=preset)
    except (TypeError, ValueError) as error:
        raise _Error(f"--config: {error}") from None


# --- check -------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    config = _resolve_config(args)
    routes = RouteTable(config.policy, list(config.routes))
    hosts = HostCheck(
        None if config.allowed_hosts is None else AllowedHosts(config.allowed_hosts, "--config")
    )
    host_raw = None if args.host is None else _argument_bytes(args.host)
    as_json: bool = args.json
    status = EXIT_OK
    for given in args.targets:
        raw = _argument_bytes(given)
        try:
            host = None if host_raw is None else hosts.judge(host_raw)
            target = parse_target(raw, routes.select(raw), host)  # as the guard does
        except InvalidTarget as error:
            status = EXIT_REJECTED
            if as_json:
                _out(_json_verdict(given, None, error))
            else:
                shown = host_raw if error.component == "host" and host_raw is not None else raw
                _out(_rejected_text(shown, error))
        else:
            _out(_json_verdict(given, target, None) if as_json else _accepted_text(raw, target))
    return status


def _argument_bytes(given: str) -> bytes:
    """The bytes of a command-line argument as the OS passed them (undecodable
    bytes come back through surrogateescape), so that offsets are byte offsets."""
    try:
        return os.fsencode(given)
    except UnicodeEncodeError:  # a lone surrogate passed to main() directly
        return given.encode("utf-8", "surrogatepass")


def _json_verdict(given: str, target: Target | None, error: InvalidTarget | None) -> str:
    # Pinned: exactly these fields, in this order.
    verdict = {
        "target": given,
        "ok": target is not None,
        "rule": None if error is None else error.rule,
        "segments": None if target is None else list(target.segments),
        "query": None if target is None else [list(pair) for pair in target.query],
    }
    return json.dumps(verdict)  # ensure_ascii: no raw control or bidi character


def _accepted_text(raw: bytes, target: Target) -> str:
    lines = [f"ok      {display(raw)}"]
    if target.host is not None:
        port = "" if target.port is None else f", port {target.port}"
        lines.append(f"        host      {target.host!r}{port}")
    lines.append(f"        segments  {list(target.segments)!r}")
    if any(target.params):
        lines.append(f"        params    {[list(p) for p in target.params]!r}")
    if target.raw_query is not None:
        lines.append(f"        query     {list(target.query)!r}")
    return "\n".join(lines)


def _rejected_text(raw: bytes, error: InvalidTarget) -> str:
    pieces = display_pieces(raw)
    offset = min(max(error.offset, 0), len(raw))
    start = max(0, offset - _CONTEXT)
    end = min(len(raw), offset + _CONTEXT)
    before = ("..." if start else "") + "".join(pieces[start:offset])
    after = "".join(pieces[offset:end]) + ("..." if end < len(raw) else "")
    return "\n".join(
        (
            f"reject  {before}{after}",
            " " * (8 + len(before)) + "^",
            f"        {error}",  # str(InvalidTarget) never contains input
        )
    )


# --- audit --------------------------------------------------------------------------


def _audit(args: argparse.Namespace) -> int:
    write: str | None = args.write
    if write is not None and not args.suggest:
        raise _Error("--write applies to --suggest only")
    if args.force and write is None:
        raise _Error("--force applies to --write only")
    if write is not None and not args.force and os.path.lexists(write):
        # Refused before the logs are read, and again when writing.
        raise _Error(f"--write: {_shown_path(write)} exists; add --force to replace it")
    config = _resolve_config(args)
    thresholds = _thresholds(args)
    ledger = Ledger(config.policy, config.routes) if args.suggest else None
    allowed = (
        None if config.allowed_hosts is None else AllowedHosts(config.allowed_hosts, "--config")
    )
    auditor = Auditor(RouteTable(config.policy, list(config.routes)), args.format, ledger, allowed)
    progress = None if args.json else _progress_factory()
    with _collector_paused():
        for name in args.files:
            auditor.feed_file(name, progress)
    report = auditor.report()
    if not report.parsed:
        # Never "no request would be rejected" about an input with no request.
        examples = "".join(
            f"; e.g. {_shorten(shown, _EXAMPLE_WIDTH)}" for shown in report.unparseable_examples[:1]
        )
        if not report.lines:
            raise _Error("no line to audit: the input is empty")
        raise _Error(
            f"no line could be read as a request: {report.lines:,} lines read, 0 parsed, "
            f"{report.unparseable:,} skipped{examples}"
        )
    if ledger is None:
        if args.json:
            _out(json.dumps(report.as_json()))
        else:
            _out(_report_text(report, _policy_name(args)))
        return EXIT_REJECTED if report.rejected else EXIT_OK
    suggestion = suggest(
        ledger,
        thresholds,
        mode=config.mode,
        judged_under=_policy_name(args),
        lines=dataclasses.replace(
            report,
            unparseable_examples=[
                _shorten(shown, _EXAMPLE_WIDTH) for shown in report.unparseable_examples
            ],
        ),
    )
    host_stopped = dict(sorted(auditor.host_stops.items()))
    text = suggestion.text + _host_stopped_text(host_stopped)
    if write is not None:
        _write(write, text, force=args.force)
    if args.json:
        _out(
            json.dumps(
                {
                    **report.as_json(),
                    "suggestion": suggestion.as_json(),
                    "host_stopped": host_stopped,
                }
            )
        )
    elif write is not None:
        _out(_suggestion_summary(suggestion, report, write, host_stopped))
    else:
        _out(text.rstrip("\n"))
    return EXIT_OK if suggestion.complete and not host_stopped else EXIT_REJECTED


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while logs are read. Reading
    makes and drops millions of lists and tuples and no reference cycle:
    the collector's passes over them would free nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _host_stopped_text(stopped: dict[str, int]) -> str:
    """What the configuration cannot admit: requests answered 2xx/3xx whose
    logged host (vhost_combined) the guard refuses. No policy setting
    covers the host, so the suggestion never counts them as evidence."""
    if not stopped:
        return ""
    counts = ", ".join(f"{rule} {count:,}" for rule, count in stopped.items())
    return (
        f"\n# Never loosened: {sum(stopped.values()):,} requests answered 2xx/3xx name a host "
        f"the guard refuses ({counts}).\n"
        "# No setting above admits them: fix the server's names or allowed_hosts.\n"
    )


_THRESHOLD_OPTIONS: Final = {
    "min_requests": "requests",
    "min_networks": "networks",
    "min_days": "days",
    "max_routes": "routes",
}


def _thresholds(args: argparse.Namespace) -> Thresholds:
    """The evidence thresholds of ``--suggest``; refused without it."""
    given = {option: getattr(args, option) for option in _THRESHOLD_OPTIONS}
    defaults = Thresholds()
    changed = [
        "--" + option.replace("_", "-")
        for option, field in _THRESHOLD_OPTIONS.items()
        if given[option] != getattr(defaults, field)
    ]
    if changed and not args.suggest:
        raise _Error(f"{changed[0]} applies to --suggest only")
    try:
        return Thresholds(**{field: given[option] for option, field in _THRESHOLD_OPTIONS.items()})
    except ValueError as error:
        option = next(o for o, f in _THRESHOLD_OPTIONS.items() if str(error).startswith(f))
        raise _Error(f"--{option.replace('_', '-')}: {error}") from None


def _shown_path(path: str) -> str:
    return display(os.fsencode(path), limit=200)


def _write(path: str, text: str, *, force: bool) -> None:
    """Write ``text`` (ASCII) to ``path``; never replace a file without ``force``."""
    try:
        with open(path, "w" if force else "x", encoding="ascii", newline="\n") as stream:
            stream.write(text)
    except FileExistsError:
        raise _Error(f"--write: {_shown_path(path)} exists; add --force to replace it") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise _Error(f"--write: {_shown_path(path)}: cannot write: {reason}") from None


def _suggestion_summary(
    suggestion: Suggestion, report: Report, path: str, host_stopped: dict[str, int]
) -> str:
    s = suggestion
    refused = sum(r.evidence.served for r in s.refused)
    lines = [
        f"wrote        {_shown_path(path)}",
        f"lines        {report.lines:>12,}",
        f"parsed       {report.parsed:>12,}",
        f"skipped      {report.unparseable:>12,}",
        f"2xx/3xx      {s.served:>12,}  rejected now {s.rejected_served:,}, "
        f"admitted by the suggestion {s.admitted:,}",
        f"4xx/5xx      {s.failed:>12,}  admitted by the suggestion {s.failed_admitted:,}",
    ]
    settings = [c for c in s.changes if c.origin == "suggested"]
    for change in settings:
        where = "top level" if change.scope is None else f"[routes.{toml_string(change.scope)}]"
        e = change.admits
        lines.append(
            f"  {where}: {change.key} ({', '.join(change.rules)}) admits "
            f"{e.requests:,} requests from {e.networks:,} networks on {e.days:,} days, "
            f"{e.failed:,} answered 4xx/5xx"
        )
    for refusal in s.refused[:_SUMMARY_REFUSED]:
        e = refusal.evidence
        where = (
            "at the top level" if refusal.scope == "/" else f"under {toml_string(refusal.scope)}"
        )
        lines.append(
            f"refused      {e.served:>12,}  {', '.join(refusal.rules)} {where}: {refusal.reason}"
        )
    if len(s.refused) > _SUMMARY_REFUSED:
        lines.append(
            f"refused      {refused:>12,}  in all ({len(s.refused):,} changes; see the file)"
        )
    for stop in s.stopped:
        lines.append(f"stopped      {stop.requests:>12,}  {stop.rule}: {stop.reason}")
        lines += [f"    {_shorten(shown, _EXAMPLE_WIDTH)}" for shown in stop.examples]
    for rule, count in host_stopped.items():
        lines.append(f"stopped      {count:>12,}  {rule}: the logged host (never loosened)")
        lines += [f"    {_shorten(shown, _EXAMPLE_WIDTH)}" for shown in report.examples[rule]]
    for shown in s.still_rejected:
        lines.append(f"still rejected (a bug; please report): {shown}")
    return "\n".join(lines)


def _policy_name(args: argparse.Namespace) -> str:
    name = args.policy or "strict"
    if args.config is not None:
        name = display(os.fsencode(args.config), limit=80) + (
            f" (on {args.policy})" if args.policy else ""
        )
    return name


def _report_text(report: Report, policy: str) -> str:
    parsed = report.parsed
    lines = [
        f"policy       {policy}",
        f"lines        {report.lines:>12,}",
        f"parsed       {parsed:>12,}",
        f"unparseable  {report.unparseable:>12,}",
        *(f"    {_shorten(example, _EXAMPLE_WIDTH)}" for example in report.unparseable_examples),
        f"rejected     {report.rejected:>12,}  {_percent(report.rejected, parsed)}",
        _hosts_line(report),
    ]
    if not report.rules:
        lines.append("no request would be rejected")
        return "\n".join(lines)
    lines += ["", f"{'rule':<20} {'count':>12}  {'share':>8}"]
    for rule, count in sorted(report.rules.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{rule:<20} {count:>12,}  {_percent(count, parsed)}")
        for example in report.examples.get(rule, ()):
            lines.append(f"    {_shorten(example, _EXAMPLE_WIDTH)}")
    return "\n".join(lines)


def _hosts_line(report: Report) -> str:
    """Whether the hosts were checked: only a format that logs them
    (vhost_combined) lets the audit see them."""
    if report.hosts_checked:
        return "hosts        checked (the logged %v:%p)"
    without = ", ".join(f for f in report.formats if f not in HOST_FORMATS)
    if any(f in HOST_FORMATS for f in report.formats):
        return f"hosts        checked in vhost_combined input only; not in {without}, not checked"
    return f"hosts        not in this log format ({without}), not checked"


# One piece of display()'s output: '\\', '\xHH' or one printable character.
_DISPLAY_PIECE: Final = re.compile(r"\\\\|\\x[0-9A-F]{2}|.", re.DOTALL)


def _shorten(shown: str, width: int) -> str:
    """``shown`` (escaped by :func:`display`) cut to at most ``width``
    characters, then ``...``. The cut falls between pieces, never inside an
    escape: a trailing ``\\x4`` would read as a different byte."""
    if len(shown) <= width:
        return shown
    end = 0
    for piece in _DISPLAY_PIECE.finditer(shown):
        if piece.end() > width:
            break
        end = piece.end()
    return shown[:end] + "..."


def _percent(count: int, total: int) -> str:
    return f"{100 * count / total:7.3f}%" if total else "      -"


def _progress_factory() -> ProgressFactory | None:
    """A tqdm counter per file on a terminal: lines read and lines per
    second (a log's lines are not known ahead, so there is no bar to fill).
    Its last state is left on the screen, one line per file, and the report
    follows it. Nothing when stderr is not a terminal. Without tqdm (the
    ``cli`` extra), one line that says how to get the display, once per run.
    A run shorter than ``_PROGRESS_DELAY`` shows neither."""
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        hint = _ProgressHint()
        return lambda name: hint

    def bar(name: str) -> Progress:
        made: Progress = tqdm(
            desc=name if len(name) <= 40 else "..." + name[-37:],
            unit=" lines",
            unit_scale=True,  # the rate: "412k lines/s"
            bar_format="{desc}: {n:,} lines [{elapsed}, {rate_fmt}]",
            file=sys.stderr,
            delay=_PROGRESS_DELAY,
            leave=True,
            dynamic_ncols=True,
        )
        return made

    return bar


class _ProgressHint:
    """Where the progress display would be without tqdm: the first update past
    ``_PROGRESS_DELAY`` (from the first file on) says once how to get it."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._said = False

    def update(self, n: int) -> None:
        if not self._said and time.monotonic() - self._start >= _PROGRESS_DELAY:
            self._said = True
            print(_NO_PROGRESS, file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


# --- encode, clean, pretty ------------------------------------------------------------


def _encode(args: argparse.Namespace) -> int:
    component: str = args.component
    text: str = args.text
    space: str | None = args.space
    if space is not None and component != "query":
        raise _Error("--space applies to 'encode query' only")
    try:
        if component == "segment":
            encoded = encode_path_segment(text)
        elif component == "query":
            encoded = encode_query_value(text, space="%20" if space == "%20" else "+")
        else:
            encoded = encode_fragment(text)
    except (TypeError, ValueError) as error:
        raise _Error(f"TEXT: {error}") from None
    _out(encoded)
    return EXIT_OK


def _clean(args: argparse.Namespace) -> int:
    try:
        _out(clean_uri(args.uri))
    except (TypeError, ValueError) as error:
        raise _Error(f"URI: {error}") from None
    return EXIT_OK


def _pretty(args: argparse.Namespace) -> int:
    try:
        # Cleaning first escapes raw controls and bidi controls in the
        # argument; it changes nothing in a valid URI.
        _out(pretty_uri(clean_uri(args.uri)))
    except (TypeError, ValueError) as error:
        raise _Error(f"URI: {error}") from None
    return EXIT_OK


# --- output --------------------------------------------------------------------------


def _out(text: str) -> None:
    """Print a line; on a stdout that cannot encode it, escape what it cannot."""
    stream = sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        encoding = stream.encoding or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding) + "\n")
