"""Reading access logs for ``urlguard audit``: which requests would be rejected.

Security model: a log is untrusted input written by untrusted clients. It is
read as bytes and never decoded as text; the server's own log escaping
(nginx and Apache write ``\\xHH``, Apache also ``\\"`` and ``\\\\``) is undone
so that the target checked is the one the server received; and nothing from
the log is ever shown unescaped: examples go through :func:`display`, which
keeps printable ASCII only. A file that is not a text log (binary data, a
broken gzip stream, no line in the expected format) is an :class:`AuditError`
with a one-line message, never a traceback; one bad line (a control byte, a
line of megabytes) is counted unparseable and shown escaped, and the rest of
the file is read.

Speed: access logs repeat the same targets over and over. Input is read a
megabyte at a time; one ``findall`` of a precompiled regex pulls every request
field out of the chunk and a ``Counter`` counts them, both in C. The
distinct fields are looked up in a bounded cache of verdicts (emptied when
full); those it misses are split and folded to their *shape* of request in
bulk (see :func:`~urlguard.cli.shapes.shape_of`: logs of distinct targets are mostly a few
shapes), and their shapes' verdicts looked up, again in C. Python code runs
once per rejected field and per new shape, and ``parse_target`` on a miss.

    >>> auditor = Auditor(Policy())
    >>> auditor.feed_lines([b"/ok", b"/caf%C3%A9", b"/%C4rzteblatt"], "targets")
    >>> report = auditor.report()
    >>> report.lines, report.rejected, report.rules
    (3, 1, {'invalid-utf8': 1})
"""

from __future__ import annotations

import dataclasses
import datetime
import operator
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from typing import Final, Literal, NamedTuple, Protocol, TypeVar, cast

from .._guard.allowed_hosts import AllowedHosts, HostCheck
from .._guard.routes import RouteTable, is_server_wide_options
from .._url.errors import RULES, InvalidTarget
from .._url.parser import parse_target
from .._url.policy import Policy
from .display import display
from .shapes import Shape, folds, shape_of, shapes_of
from .sources import MAX_LINE, AuditError, Source, open_source

Format = Literal["auto", "combined", "common", "vhost_combined", "targets"]
K = TypeVar("K")
T = TypeVar("T")
FORMATS: Final[tuple[str, ...]] = ("auto", "combined", "common", "vhost_combined", "targets")
#: The formats whose lines name the host the request was for.
HOST_FORMATS: Final = frozenset(("vhost_combined",))

#: Verdicts besides the rule codes. Neither can be mistaken for a rule code.
OK: Final = "ok"
UNPARSEABLE: Final = "unparseable"

#: How many distinct request fields keep their verdict cached. Emptied when
#: full: the working set of a busy site refills it in a moment.
CACHE_SIZE: Final = 1 << 16
#: Example targets kept per rule.
EXAMPLES: Final = 3
#: Lines looked at to tell a log from a list of targets (``--format auto``).
SAMPLE: Final = 16
#: Bytes of an unparseable line kept as its example.
LINE_EXAMPLE: Final = 200

# --- Log line formats -------------------------------------------------------
#
# NCSA common log format, as written by Apache (LogFormat "%h %l %u %t \"%r\"
# %>s %b") and nginx (log_format combined starts the same way):
#     127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
# Any number of fields may come before the [time] field (Apache's
# vhost_combined puts "%v:%p" first; proxies often log X-Forwarded-For there).
# The request is the quoted field right after [time]; inside it a '"' or '\'
# is always escaped (nginx: \x22 \x5C; Apache: \" \\), hence the unrolled loop
# "[^"\\]*(?:\\.[^"\\]*)*" (linear, no nested quantifier over one character).
# Each run of a class is possessive (*+): what follows it is a byte the class
# excludes, so giving bytes back could never make a line match.
# The patterns run over a whole chunk (MULTILINE): no class may cross a '\n',
# and each match runs to the end of its line so the search resumes at the next.
# A log line holds no raw control byte: nginx and Apache escape them in
# every field they copy from a request (\xHH). A line that has one (a NUL, an
# ANSI escape, a lone CR) was not written by the server as it stands: that
# line is unparseable, and the lines around it are read as usual. TAB may
# separate fields (custom formats use it); CR only ends a line (CRLF files).
_CTL: Final = rb"\x00-\x08\x0a-\x1f\x7f"  # every control byte but TAB
_IN_QUOTES: Final = rb'(?:[^"\\' + _CTL + rb"]*+(?:\\[^" + _CTL + rb'][^"\\' + _CTL + rb"]*+)*+)"
_QUOTED: Final = b'"(' + _IN_QUOTES + b')"'
_ANY_QUOTED: Final = b'"' + _IN_QUOTES + b'"'
_HEAD: Final = rb'[^"\[' + _CTL + rb"]*+"  # the fields before [time]
_TIME_FIELD: Final = rb"[^\]" + _CTL + rb"]*+"
_START: Final = b"^" + _HEAD + rb"\[" + _TIME_FIELD + rb"\] "
_COMMON_PREFIX: Final = _START + _QUOTED + rb" [0-9]{3} (?:[0-9]+|-)"
# The combined format adds "%{Referer}i" "%{User-agent}i"; many setups append
# more fields after those, so anything but a control may follow a space.
_LINE_END: Final = rb"(?: [^" + _CTL + rb"]*+)?\r?$"
_COMBINED_END: Final = b" " + _ANY_QUOTED + b" " + _ANY_QUOTED + _LINE_END
_COMMON: Final = re.compile(_COMMON_PREFIX + _LINE_END, re.MULTILINE)
_COMBINED: Final = re.compile(_COMMON_PREFIX + _COMBINED_END, re.MULTILINE)
# The same lines with three groups, for --suggest: the fields before [time]
# (the client address is among them), the time, and the request field, '" '
# and the status as one key (``field" NNN``). The same lines match, so
# counts do not depend on which pattern is used.
_STATUS_PREFIX: Final = (
    b"^(" + _HEAD + rb")\[(" + _TIME_FIELD + rb')\] "(' + _IN_QUOTES + rb'" [0-9]{3}) (?:[0-9]+|-)'
)
_STATUS_SUFFIX: Final = len(b'" 200')
_COMMON_STATUS: Final = re.compile(_STATUS_PREFIX + _LINE_END, re.MULTILINE)
_COMBINED_STATUS: Final = re.compile(_STATUS_PREFIX + _COMBINED_END, re.MULTILINE)

# Apache's vhost_combined:
#     LogFormat "%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\""
# The first field is the virtual host's name and port, then the three fields
# of the common format (%u may hold spaces: Apache escapes only quotes,
# backslashes and controls), so at least four space-separated fields come
# before [time]. The first field is what the host grammar judges; the rest
# of the line is a combined line. The host field ends at the first space:
# a name with a space cannot be logged as one field, and a line whose fields
# are too few is not in this format (unparseable), whatever its first field.
_FIELD: Final = rb'[^ "\[' + _CTL + rb"]+"
_HOST_FIELD: Final = rb'[^ "' + _CTL + rb"]+"  # "[::1]:443" too
_VHOST_HEAD: Final = b"(" + _HOST_FIELD + b") ((?:" + _FIELD + b" ){3,})"
_VHOST: Final = re.compile(
    b"^(" + _HOST_FIELD + b") (?:" + _FIELD + rb" ){3,}\[" + _TIME_FIELD + rb"\] "
    + _QUOTED + rb" [0-9]{3} (?:[0-9]+|-)" + _COMBINED_END,
    re.MULTILINE,
)  # fmt: skip
# For --suggest: the host field, the other fields before [time], the time,
# and the request field with its status (as in _STATUS_PREFIX).
_VHOST_STATUS: Final = re.compile(
    b"^" + _VHOST_HEAD + rb"\[(" + _TIME_FIELD + rb')\] "(' + _IN_QUOTES
    + rb'" [0-9]{3}) (?:[0-9]+|-)' + _COMBINED_END,
    re.MULTILINE,
)  # fmt: skip
# --format auto reads a log as vhost_combined when its log lines are all
# vhost_combined lines (four fields or more before [time]) and at least
# half of them start with what %v:%p writes: a name, an IPv4 address or an
# [IPv6] literal, ':' and a port (whether the host is valid is the audit's
# question, not the detection's). A client address (%h) in the first
# field is never that: an IPv4 address has no ':' and an IPv6 one has
# several and no brackets.
_VHOST_FIELD: Final = re.compile(rb"(?:\[[^ \]]*\]|[^ :\[\]]+):[0-9]+")

# The [time] field, %t: "10/Oct/2000:13:55:36 -0700" (Apache and nginx).
_TIME: Final = re.compile(
    rb"([0-9]{2})/([A-Za-z]{3})/([0-9]{4})"  # day/month/year
    rb":([0-9]{2}):([0-9]{2}):([0-9]{2})"  # :hour:minute:second
    rb" ([+-])([0-9]{2})([0-9]{2})"  # the offset from UTC
)
_MONTHS: Final = {
    name: number
    for number, name in enumerate(b"jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)
}


def log_time(field: bytes) -> float | None:
    """Seconds since the epoch of a logged ``%t`` field, or ``None`` when it
    is not one (the time then counts for nothing).

    >>> log_time(b"10/Oct/2000:13:55:36 -0700")
    971211336.0
    """
    found = _TIME.fullmatch(field)
    if found is None:
        return None
    month = _MONTHS.get(found[2].lower())
    if month is None:
        return None
    try:
        when = datetime.datetime(
            int(found[3]),
            month,
            int(found[1]),
            int(found[4]),
            int(found[5]),
            int(found[6]),
            tzinfo=datetime.UTC,
        ).timestamp()
    except ValueError:  # no such day, hour, ...
        return None
    offset = (int(found[8]) * 60 + int(found[9])) * 60
    return float(when - offset if found[7] == b"+" else when + offset)


def client_of(head: bytes) -> bytes:
    """The client address among the fields before ``[time]``: ``%h %l %u``
    end there (Apache's vhost_combined puts ``%v:%p`` before them), so it
    is the third field from the end, or the first when there are fewer.

    >>> client_of(b"example.com:443 192.0.2.7 - frank ")
    b'192.0.2.7'
    """
    fields = head.split()
    if not fields:
        return b"-"
    return fields[-3] if len(fields) >= 3 else fields[0]


# RFC 9112 §3: request-line = method SP request-target SP HTTP-version, with
# method = token (RFC 9110 §5.6.2) and HTTP-version = "HTTP/" DIGIT "." DIGIT
# (logs of HTTP/2 say "HTTP/2.0", some say "HTTP/2"). The target is whatever
# lies between the first and the last space, so a target with a raw space is
# checked (and rejected as raw-char) rather than miscounted.
_TOKEN: Final = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE: Final = re.compile(rb"(" + _TOKEN + rb") (.+) HTTP/[0-9]+(?:\.[0-9]+)?", re.DOTALL)

# The escapes nginx (ngx_http_log_escape: \xHH for '"', '\', bytes < 0x20 and
# > 0x7E) and Apache (ap_escape_logitem: \" \\ \b \n \r \t \v, else \xhh)
# write into a logged request line.
_LOG_ESCAPE: Final = re.compile(rb'\\(?:x([0-9A-Fa-f]{2})|(["\\bnrtv]))')
_SIMPLE_ESCAPES: Final[dict[bytes, bytes]] = {
    b'"': b'"',
    b"\\": b"\\",
    b"b": b"\b",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
    b"v": b"\v",
}
_BACKSLASH: Final = ord("\\")
_SLASH: Final = ord("/")

# What a line of a plain list of targets starts with (for --format auto):
# origin-form or http(s) absolute-form.
_LOOKS_LIKE_TARGET: Final = re.compile(rb"/|[Hh][Tt][Tt][Pp][Ss]?://")


def unescape_log(field: bytes) -> bytes:
    """Undo the escaping nginx and Apache apply to a logged request line.

    >>> unescape_log(rb'GET /a\\x22b\\\\c\\xC3\\xA9 HTTP/1.1')
    b'GET /a"b\\\\c\\xc3\\xa9 HTTP/1.1'
    """
    if _BACKSLASH not in field:
        return field
    return _LOG_ESCAPE.sub(_unescape_one, field)


def _unescape_one(match: re.Match[bytes]) -> bytes:
    hex_digits = match[1]
    if hex_digits is not None:
        return bytes((int(hex_digits, 16),))
    return _SIMPLE_ESCAPES[match[2]]


# --- Errors and reports -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Report:
    """Totals of an audit. ``lines == parsed + unparseable``; ``rejected``
    counts parsed lines whose target would be rejected, ``rules`` splits it
    per rule code, ``examples`` holds up to three distinct escaped targets
    per rule, ``unparseable_examples`` up to three escaped lines (or request
    fields) that did not parse. A line whose host is refused (bad-host,
    host-not-allowed) counts under that rule, its host field as the example."""

    lines: int
    parsed: int
    unparseable: int
    rejected: int
    rules: dict[str, int]
    examples: dict[str, list[str]]
    unparseable_examples: list[str] = dataclasses.field(default_factory=list)
    #: The formats the inputs were read in, and whether each of them names
    #: the host (Apache's vhost_combined) so that every line's host was
    #: checked. ``False`` when any input's format carries no host.
    formats: tuple[str, ...] = ()
    hosts_checked: bool = False

    def share(self, rule: str) -> float:
        """The fraction of parsed lines rejected under ``rule``."""
        return self.rules.get(rule, 0) / self.parsed if self.parsed else 0.0

    def as_json(self) -> dict[str, object]:
        """The ``audit --json`` object (pinned: at least ``lines``,
        ``rejected`` and ``rules``)."""
        return {
            "lines": self.lines,
            "parsed": self.parsed,
            "unparseable": self.unparseable,
            "rejected": self.rejected,
            "rules": dict(self.rules),
            "share": {rule: round(self.share(rule), 6) for rule in self.rules},
            "examples": {rule: list(found) for rule, found in self.examples.items()},
            "unparseable_examples": list(self.unparseable_examples),
            "formats": list(self.formats),
            "hosts_checked": self.hosts_checked,
        }


class Progress(Protocol):
    """The part of ``tqdm`` the auditor uses."""

    def update(self, n: int) -> object: ...

    def close(self) -> None: ...


#: Makes the progress display of one input, given its name for display;
#: ``update`` is called with the number of lines read since the last call.
ProgressFactory = Callable[[str], Progress]


class Rows(NamedTuple):
    """The rejected requests of a chunk of a log, one row per distinct
    (target, status), in the order they came: its count, the rule that
    rejects it, the clients that sent it and when it was first and last
    sent (seconds since the epoch; ``None`` when no time was logged), and
    its shape when the auditor made it (see :func:`~urlguard.cli.shapes.shape_of`).
    ``status`` is ``None`` for a list of targets."""

    targets: Sequence[bytes]
    statuses: Sequence[int | None]
    counts: Sequence[int]
    rules: Sequence[str]
    clients: Sequence[Sequence[bytes]]
    firsts: Sequence[float | None]
    lasts: Sequence[float | None]
    shapes: Sequence[Shape | None]


class Observer(Protocol):
    """How ``audit --suggest`` learns what the site answered: the statuses
    of all requests with a target, a chunk at a time, and the :class:`Rows`
    of a chunk."""

    def count_statuses(self, counts: Mapping[int | None, int]) -> object: ...

    def observe_rows(self, rows: Rows) -> object: ...


# --- The auditor ------------------------------------------------------------


class Auditor:
    """Counts, over any number of inputs, the verdicts of ``parse_target``
    under one policy, or under per-route policies chosen as the middleware
    chooses them (a :class:`RouteTable`). Feed it files (:meth:`feed_file`)
    or lines (:meth:`feed_lines`); read the totals with :meth:`report`.

    Where the format names the host (``vhost_combined``), the host is
    judged first, as the guard judges it: the host grammar, then
    ``allowed_hosts`` when given."""

    def __init__(
        self,
        policy: Policy | RouteTable,
        fmt: Format = "auto",
        observer: Observer | None = None,
        allowed_hosts: AllowedHosts | None = None,
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        self._routes = policy if isinstance(policy, RouteTable) else RouteTable(policy, [])
        self._format: Format = fmt
        self._observer = observer
        self._hosts = HostCheck(allowed_hosts)
        # Verdicts per logged host field (OK or a host rule), bounded.
        self._host_cache: dict[bytes, str] = {}
        # The formats the inputs were read in.
        self._formats: set[str] = set()
        self._combined = False  # the last file detected as common holds combined lines
        #: With an observer: requests answered 2xx/3xx that are refused for
        #: their host, per rule. They are never shown to the observer.
        self.host_stops: Counter[str] = Counter()
        # Verdicts per shape and policy (see shapes.shape_of), and whether a policy
        # of the table lets shapes decide (by id: the table keeps them alive).
        self._shapes: dict[tuple[int, Shape], str] = {}
        # Verdicts per request shape (see _request_shape).
        self._requests: dict[tuple[bytes, Shape, bytes], str] = {}
        # With an observer: the target of each rejected request field.
        self._rejected_targets: dict[bytes, tuple[bytes, Shape | None]] = {}
        self._last_shape: Shape | None = None  # of the target judged last
        self._folds: dict[int, bool] = {}
        # Whether a request field's shape decides its verdict: one policy
        # (per-route policies are chosen by the path itself) that allows
        # every letter and digit (see shapes.folds).
        self._shaping = not self._routes.routes and folds(self._routes.policy)
        self._unparseable_examples: list[str] = []
        # One tally for every verdict: OK, UNPARSEABLE and each rule code.
        self._tally: dict[str, int] = dict.fromkeys((OK, UNPARSEABLE, *RULES), 0)
        # Verdicts per request field (logs) and per line (lists of targets):
        # the same bytes mean different things in the two.
        self._log_cache: dict[bytes, str] = {}
        self._target_cache: dict[bytes, str] = {}
        self._examples: dict[str, list[str]] = {}
        # Lines that matched a log format (for the per-file format check).
        self._matched = 0

    # -- public ---------------------------------------------------------------

    def feed_file(self, name: str, progress: ProgressFactory | None = None) -> None:
        """Audit one file: a path, or ``-`` for standard input; plain or gzip
        (recognised by its magic bytes, whatever its name). Raises
        :class:`AuditError` for a file that cannot be read or is not a log."""
        shown = "<stdin>" if name == "-" else display(os.fsencode(name), limit=200)
        with open_source(name, shown) as source:
            bar = progress(shown) if progress is not None else None
            try:
                self._feed_source(source, shown, bar)
            finally:
                if bar is not None:
                    bar.close()

    def feed_lines(self, lines: Iterable[bytes], fmt: Format | None = None) -> None:
        """Audit lines (without their line breaks) already in memory."""
        chosen = self._format if fmt is None else fmt
        batch = list(lines)
        if chosen == "auto":
            chosen = self._detect(batch, "input") if any(map(bytes.strip, batch)) else "targets"
        self._formats.add(chosen)
        self._scan(b"".join(line + b"\n" for line in batch), chosen)

    def report(self) -> Report:
        tally = self._tally
        lines = sum(tally.values())
        unparseable = tally[UNPARSEABLE]
        rules: dict[str, int] = {rule: tally[rule] for rule in RULES if tally[rule]}
        return Report(
            lines=lines,
            parsed=lines - unparseable,
            unparseable=unparseable,
            rejected=sum(rules.values()),
            rules=rules,
            examples={rule: list(self._examples[rule]) for rule in rules},
            unparseable_examples=list(self._unparseable_examples),
            formats=tuple(sorted(self._formats)),
            hosts_checked=bool(self._formats) and self._formats <= HOST_FORMATS,
        )

    # -- reading ---------------------------------------------------------------

    def _feed_source(self, source: Source, shown: str, bar: Progress | None) -> None:
        fmt = self._format
        sample: list[bytes] = []  # --format auto: the first runs of lines
        sampled = 0  # non-blank lines in the sample
        matched_before = self._matched
        text_seen = False
        for body in source.batches():
            if bar is not None:
                bar.update(body.count(b"\n"))
            if not text_seen and body.strip():
                text_seen = True
            if fmt == "auto":
                sample.append(body)
                sampled += sum(1 for line in body.split(b"\n") if line.strip())
                if sampled < SAMPLE:
                    continue
                fmt = self._detect(b"".join(sample).split(b"\n"), shown)
                body, sample = b"".join(sample), []
            self._scan(body, fmt)
        if fmt == "auto":  # a short file: all of it was the sample
            body = b"".join(sample)
            fmt = self._detect(body.split(b"\n"), shown) if sampled else "targets"
            self._scan(body, fmt)
        # Combined lines are scanned as common ones (the fields after the
        # status are not used); the report names the format they are in.
        self._formats.add("combined" if fmt == "common" and self._combined else fmt)
        # Overlong lines were dropped while reading: each is one unparseable line.
        self._tally[UNPARSEABLE] += source.overlong
        if bar is not None and source.overlong:
            bar.update(source.overlong)
        if source.overlong:
            self._unparseable(f"(a line longer than {MAX_LINE:,} bytes, skipped)")
        if fmt != "targets" and text_seen and self._matched == matched_before:
            fields = "'%v:%p %h %l %u' and " if fmt == "vhost_combined" else ""
            raise AuditError(
                f"{shown}: no line is in the {fmt} log format "
                f"({fields}a request line in quotes after the [time] field); see --format"
            )

    def _detect(self, sample: list[bytes], shown: str) -> Format:
        lines = [line for line in sample if line.strip()][:SAMPLE]
        logged = [line for line in lines if _COMMON.match(line) or _VHOST.match(line)]
        if logged:
            if all(_VHOST.match(line) for line in logged) and 2 * sum(
                1 for line in logged if _VHOST_FIELD.fullmatch(line[: line.find(b" ")])
            ) >= len(logged):
                return "vhost_combined"
            self._combined = all(_COMBINED.match(line) for line in logged)
            return "common"  # combined lines are common lines with more after
        if any(_LOOKS_LIKE_TARGET.match(line) for line in lines):
            return "targets"
        if any(0 in line for line in lines):
            raise AuditError(f"{shown}: binary data (NUL bytes in its first lines): not a text log")
        raise AuditError(
            f"{shown}: not an access log (combined, common or vhost_combined format) nor a list of "
            "targets starting with '/' or http(s)://; see --format"
        )

    # -- the hot path: C over the chunk, Python once per distinct field ---------

    def _scan(self, body: bytes, fmt: Format) -> None:
        """Count the verdicts of ``body``: whole lines, each ending in ``\\n``."""
        if fmt == "targets":
            lines = body.split(b"\n")
            lines.pop()  # after the last line break
            counts = Counter(lines)
            self._count(counts, self._target_cache, self._judge_line)
            if b"" in counts:
                self._unparseable("(an empty line)")
            if self._observer is not None:
                self._observe_lines(counts, self._observer)
            return
        if fmt == "vhost_combined":
            self._scan_vhost(body)
            return
        if self._observer is not None:
            pattern = _COMBINED_STATUS if fmt == "combined" else _COMMON_STATUS
            found: list[tuple[bytes, bytes, bytes]] = pattern.findall(body)
            self._note_unparseable(body, len(found), pattern)
            if found:
                self._count_observed(found, self._observer)
            return
        pattern = _COMBINED if fmt == "combined" else _COMMON
        fields: list[bytes] = pattern.findall(body)
        self._note_unparseable(body, len(fields), pattern)
        self._count_fields(Counter(fields))

    def _scan_vhost(self, body: bytes) -> None:
        """:meth:`_scan` for lines that name their host: each distinct host
        field is judged once, and each distinct (host, request) pair counted
        under the host's rule when the host is refused, else under the
        request's verdict (the guard checks the host before the target)."""
        observer = self._observer
        if observer is None:
            pairs: list[tuple[bytes, bytes]] = _VHOST.findall(body)
            self._note_unparseable(body, len(pairs), _VHOST)
            self._count_hosts(Counter(pairs))
            return
        found: list[tuple[bytes, bytes, bytes, bytes]] = _VHOST_STATUS.findall(body)
        self._note_unparseable(body, len(found), _VHOST_STATUS)
        if not found:
            return
        # Lines of a refused host are counted here and never shown to the
        # observer as evidence: no setting of the policy admits them, and
        # the target of such a request says nothing about what the site
        # served. The others go on as lines of a combined log.
        judge_host = self._judge_host
        kept: list[tuple[bytes, bytes, bytes]] = []
        refused: Counter[tuple[bytes, bytes]] = Counter()
        for host, head, when, key in found:
            if judge_host(host) == OK:
                kept.append((head, when, key))
            else:
                refused[host, key] += 1
        if refused:
            requests: Counter[tuple[bytes, bytes]] = Counter()
            stops = self.host_stops
            for (host, key), count in refused.items():
                field = key[:-_STATUS_SUFFIX]
                requests[host, field] += count
                if b"200" <= key[-3:] < b"400" and _target_of(field) is not None:
                    stops[judge_host(host)] += count
            self._count_hosts(requests)
        if kept:
            self._count_observed(kept, observer)

    def _count_hosts(self, pairs: Counter[tuple[bytes, bytes]]) -> None:
        tally = self._tally
        judge_host = self._judge_host
        cached = self._log_cache.get
        for (host, field), count in pairs.items():
            verdict = judge_host(host)
            if verdict == OK:
                verdict = cached(field) or self._judge_request(field)
            elif _target_of(field) is None:
                verdict = UNPARSEABLE  # no request line: not a request at all
                self._unparseable(display(field, LINE_EXAMPLE))
            else:
                self._example(verdict, host)
            tally[verdict] += count

    def _judge_host(self, raw: bytes) -> str:
        """OK, ``bad-host`` or ``host-not-allowed`` for a logged ``%v:%p``.
        The field is judged as Apache wrote it: Apache escapes a quote, a
        backslash, a control or a byte past ASCII as ``\\xHH``, none of
        which a valid host holds, so the backslash is refused as the byte
        itself would be."""
        verdict = self._host_cache.get(raw)
        if verdict is None:
            try:
                self._hosts.judge(raw)
            except InvalidTarget as error:
                verdict = error.rule
            else:
                verdict = OK
            _remember(self._host_cache, raw, verdict)
        return verdict

    def _example(self, rule: str, raw: bytes) -> None:
        """Keep ``raw`` (a target, or a host field) as an example of ``rule``."""
        found = self._examples.setdefault(rule, [])
        if len(found) < EXAMPLES:
            shown = display(raw)
            if shown not in found:
                found.append(shown)

    def _note_unparseable(self, body: bytes, matched: int, pattern: re.Pattern[bytes]) -> None:
        self._matched += matched
        missed = body.count(b"\n") - matched
        self._tally[UNPARSEABLE] += missed
        if missed and len(self._unparseable_examples) < EXAMPLES:
            # Rare, and done only until the examples are found: one match per line.
            for line in body.split(b"\n")[:-1]:
                if pattern.match(line) is None:
                    self._unparseable(display(line, LINE_EXAMPLE) if line else "(an empty line)")
                    if len(self._unparseable_examples) >= EXAMPLES:
                        break

    def _count_fields(self, counts: Counter[bytes]) -> None:
        """:meth:`_count` for the request fields of a log."""
        self._add(self._judge_fields(list(counts)).verdicts, counts.values())

    def _add(self, verdicts: list[str], counts: Iterable[int]) -> None:
        """Count the requests of each verdict (``counts``, one per verdict):
        a chunk holds few verdicts, each summed in C."""
        numbers = list(counts)
        kinds = dict.fromkeys(verdicts)
        if len(kinds) == 1:
            self._tally[verdicts[0]] += sum(numbers)
            return
        for verdict in kinds:
            mine = map(operator.eq, verdicts, repeat(verdict))
            self._tally[verdict] += sum(compress(numbers, mine))

    def _count(
        self, counts: Counter[bytes], cache: dict[bytes, str], judge: Callable[[bytes], str]
    ) -> None:
        tally = self._tally
        cached = cache.get
        for key, count in counts.items():
            verdict = cached(key)
            if verdict is None:
                verdict = judge(key)
            tally[verdict] += count

    def _judge_fields(self, fields: list[bytes]) -> _Judged:
        """The verdicts of request fields, in order, as :meth:`_judge_request`
        gives them. A log of distinct targets holds few shapes of request:
        the key of each field's shape is made in bulk (in C, but for the
        shape of a target with an escape) and its verdict looked up; only a
        field of a new shape, or of none, is judged one by one. With an
        observer, the target and shape of each field rejected in bulk come
        with the verdicts.
        """
        cache = self._log_cache
        verdicts = list(map(cache.get, fields))
        if None not in verdicts:
            return _Judged(verdicts)  # type: ignore[arg-type]  # (no None)
        judge = self._judge_request
        if not self._shaping:
            return _Judged(
                [
                    verdict or cache.get(field) or judge(field)
                    for field, verdict in zip(fields, verdicts, strict=True)
                ]
            )
        misses = list(compress(fields, map(operator.not_, verdicts)))
        # Each field's key as _request_key makes it: the method before the
        # first space, the target's shape, the version after the last. A
        # field that has no key gets one that no key made there can match:
        # its target is empty, does not start with '/', or holds a '\\'
        # (which _request_key refuses).
        if list(map(bytes.count, misses, repeat(b" "))).count(2) == len(misses):
            # Two spaces in every field (a request line's): its three words.
            words = b" ".join(misses).split(b" ")
            methods: Sequence[bytes] = words[0::3]
            targets: Sequence[bytes] = words[1::3]
            versions: Sequence[bytes] = words[2::3]
        elif (joined := b"\n".join(misses)).count(b"\n") == len(misses) - 1:
            methods, targets, versions = zip(*_FIELD_PARTS.findall(joined), strict=True)
        else:  # a line break in a field: not a log's
            methods, _, rests = zip(*map(bytes.partition, misses, repeat(b" ")), strict=True)
            targets, _, versions = zip(*map(bytes.rpartition, rests, repeat(b" ")), strict=True)
        shapes = shapes_of(list(targets))
        known = list(map(self._requests.get, zip(methods, shapes, versions, strict=True)))
        passed = list(compress(misses, map(operator.eq, known, repeat(OK))))
        if len(cache) + len(passed) > CACHE_SIZE:
            cache.clear()
        cache.update(zip(passed, repeat(OK)))
        # The fields rejected by their shape's verdict: their split is the
        # target (a key was found, so the field holds no log escape).
        rejected = list(
            map(
                operator.and_,
                map(operator.is_not, known, repeat(None)),
                map(operator.ne, known, repeat(OK)),
            )
        )
        if len(passed) < len(misses):
            self._judge_misses(misses, targets, known, rejected)
        split: _Split | None = None
        if self._observer is not None and True in rejected:
            split = (targets, shapes)
            if False in rejected:
                split = (_where(rejected, targets), _where(rejected, shapes))
        if len(misses) == len(fields):
            return _Judged(known, split)  # type: ignore[arg-type]  # (judged: no None left)
        if split is not None:
            split = (_aligned(verdicts, split[0]), _aligned(verdicts, split[1]))
        found = iter(known)
        return _Judged([verdict or next(found) for verdict in verdicts], split)  # type: ignore[misc]

    def _judge_misses(
        self,
        fields: list[bytes],
        targets: Sequence[bytes],
        known: list[str | None],
        rejected: list[bool],
    ) -> None:
        """Fill in ``known`` (the verdicts of the shapes of ``fields``, as
        far as they are known) for the fields :meth:`_judge_fields` could not
        pass in bulk: a new shape (or none) is judged in order, which keeps
        its own target and example; of the fields of known rejected shapes
        (``rejected``), an example of each rule is taken while the rule has
        fewer than :data:`EXAMPLES`."""
        cache = self._log_cache
        judge = self._judge_request
        examples = self._examples
        for i in compress(range(len(known)), map(operator.is_, known, repeat(None))):
            field = fields[i]
            known[i] = cache.get(field) or judge(field)
        if True not in rejected:
            return
        # Their verdicts are not cached: a log that repeats a rejected field
        # finds it by its shape again, and a log of distinct targets would
        # only fill the cache.
        rules = cast(list[str], list(compress(known, rejected)))
        for rule in dict.fromkeys(rules):
            if len(examples.get(rule, ())) < EXAMPLES:
                for target, same in zip(compress(targets, rejected), rules, strict=False):
                    if same == rule:
                        self._example(rule, target)
                        if len(examples[rule]) >= EXAMPLES:
                            break

    def _count_observed(self, found: list[tuple[bytes, bytes, bytes]], observer: Observer) -> None:
        """:meth:`_count` for ``--suggest``: each distinct request field and
        status (``field" NNN``) is counted; a rejected one is told to the
        observer with its target, its clients and its first and last time.
        Only the lines of rejected fields are looked at one by one."""
        heads, times, keys = zip(*found, strict=True)
        counts: Mapping[bytes, int] = dict.fromkeys(keys, 1)
        if len(counts) < len(keys):  # a key on more than one line
            counts = Counter(keys)
        distinct = list(counts)
        fields = list(map(_FIELD_OF, distinct))
        judged = self._judge_fields(fields)
        self._add(judged.verdicts, counts.values())
        # Statuses of the requests with a target: every line's, counted in C,
        # less those of a request without one (rare).
        statuses = Counter(map(_STATUS_OF, keys))
        if judged.verdicts.count(OK) != len(distinct):
            lines = (heads, times, keys)
            self._observe_rejected(distinct, fields, judged, counts, statuses, lines, observer)
        observer.count_statuses({int(status): n for status, n in statuses.items() if n})

    def _observe_rejected(
        self,
        distinct: list[bytes],
        fields: list[bytes],
        judged: _Judged,
        counts: Mapping[bytes, int],
        statuses: Counter[bytes],
        found: tuple[Sequence[bytes], Sequence[bytes], Sequence[bytes]],
        observer: Observer,
    ) -> None:
        """Tell the observer the rows of a chunk's rejected keys (``field"
        NNN``), in the order the keys came: target, shape, rule, clients and
        times. A key on one line (most of a log of distinct targets) is
        found by a dict built in C, or is its line when every line is a
        rejected key of its own; the lines of the others, one by one. Times
        and clients are read once per distinct field of the chunk."""
        verdicts = judged.verdicts
        mask = list(map(operator.ne, verdicts, repeat(OK)))
        keys, rules = list(compress(distinct, mask)), list(compress(verdicts, mask))
        if judged.split is None:
            targets: list[bytes | None] = [None] * len(keys)
            shapes: list[Shape | None] = [None] * len(keys)
        else:
            targets = list(compress(judged.split[0], mask))
            shapes = list(compress(judged.split[1], mask))
        if None in targets:
            # Judged one by one, now or in an earlier chunk: the target kept
            # then, or found again (without its shape).
            kept = self._rejected_targets.get
            for i in compress(range(len(keys)), map(operator.is_, targets, repeat(None))):
                field = _FIELD_OF(keys[i])
                targets[i], shapes[i] = kept(field) or (_target_of(field), None)
        if UNPARSEABLE in rules or None in targets:
            for key, rule in zip(keys, rules, strict=True):
                if rule == UNPARSEABLE:
                    statuses[key[-3:]] -= counts[key]  # a request without a target
            present = list(
                map(
                    operator.and_,
                    map(operator.is_not, targets, repeat(None)),
                    map(operator.ne, rules, repeat(UNPARSEABLE)),
                )
            )
            keys, rules = list(compress(keys, present)), list(compress(rules, present))
            targets, shapes = list(compress(targets, present)), list(compress(shapes, present))
        if not keys:
            return
        heads, times, lines = found  # per line: before [time], the time, the key
        if len(keys) == len(lines):
            # Every line a rejected key of its own (a log of distinct
            # targets): the keys are the lines, in order.
            numbers: list[int] = [1] * len(keys)
            rows: Sequence[int] = range(len(lines))
            at_rows_heads, at_rows_times = heads, times
            many: dict[bytes, list[int]] = {}
        else:
            last_line = dict(zip(lines, range(len(lines)), strict=True))
            rows = list(map(last_line.__getitem__, keys))
            numbers = list(map(counts.__getitem__, keys))
            at_rows_heads = list(map(heads.__getitem__, rows))
            at_rows_times = list(map(times.__getitem__, rows))
            many = {}
            if max(numbers) > 1:
                many = {key: [] for key, n in zip(keys, numbers, strict=True) if n > 1}
                for i in compress(range(len(lines)), map(many.__contains__, lines)):
                    many[lines[i]].append(i)
        if many:  # the times and clients of every line of those keys too
            needed = set(rows).union(*many.values())
            stamps = set(map(times.__getitem__, needed))
            addresses = set(map(heads.__getitem__, needed))
        else:
            stamps, addresses = set(at_rows_times), set(at_rows_heads)
        when = {stamp: log_time(stamp) for stamp in stamps}
        who = {head: client_of(head) for head in addresses}
        firsts = list(map(when.__getitem__, at_rows_times))
        lasts = list(firsts)
        sent: list[tuple[bytes, ...]] = list(zip(map(who.__getitem__, at_rows_heads)))
        for n in compress(range(len(keys)), map(many.__contains__, keys)) if many else ():
            found_at = many[keys[n]]
            seen = [t for t in (when[times[i]] for i in found_at) if t is not None]
            firsts[n] = min(seen, default=None)
            lasts[n] = max(seen, default=None)
            sent[n] = tuple(dict.fromkeys(who[heads[i]] for i in found_at))
        status_of = {status: int(status) for status in statuses}
        answered = list(map(status_of.__getitem__, map(_STATUS_OF, keys)))
        observer.observe_rows(
            Rows(cast(list[bytes], targets), answered, numbers, rules, sent, firsts, lasts, shapes)
        )

    def _observe_lines(self, counts: Counter[bytes], observer: Observer) -> None:
        cached = self._target_cache.get
        targets = 0
        rows: list[tuple[bytes, int, str]] = []
        for line, count in counts.items():
            verdict = cached(line) or self._judge_line(line)
            if verdict == UNPARSEABLE:
                continue
            targets += count
            if verdict != OK:
                rows.append((line.removesuffix(b"\r"), count, verdict))
        if rows:
            lines, numbers, rules = zip(*rows, strict=True)
            none = [None] * len(rows)
            observer.observe_rows(
                Rows(lines, none, numbers, rules, [()] * len(rows), none, none, none)
            )
        observer.count_statuses({None: targets})

    def _unparseable(self, shown: str) -> None:
        found = self._unparseable_examples
        if len(found) < EXAMPLES and shown not in found:
            found.append(shown)

    # -- verdicts (once per distinct field) ------------------------------------

    def _judge_request(self, field: bytes) -> str:
        # Once per distinct field: a log of distinct targets comes here for
        # every line, so the shape's verdict is found without further calls.
        key = self._request_key(field) if self._shaping else None
        if key is not None:
            verdict = self._requests.get(key)
            if verdict is not None:
                if verdict != OK and verdict != UNPARSEABLE:
                    target = field[len(key[0]) + 1 : len(field) - len(key[2]) - 1]
                    self._judged(field, target, key[1], verdict)
                cache = self._log_cache
                if len(cache) >= CACHE_SIZE:
                    cache.clear()
                cache[field] = verdict
                return verdict
        request = _REQUEST_LINE.fullmatch(unescape_log(field))
        if request is None:
            verdict = UNPARSEABLE
            self._unparseable(display(field, LINE_EXAMPLE))
        elif is_server_wide_options(request[1], request[2]):
            verdict = OK  # the adapters pass it through (see bad-form)
        else:
            verdict = self._judge_target(request[2])
            if verdict != OK and self._observer is not None:
                self._found(field, request[2], self._last_shape)
        _remember(self._log_cache, field, verdict)
        if key is not None:
            _remember(self._requests, key, verdict)
        return verdict

    @staticmethod
    def _request_key(field: bytes) -> tuple[bytes, Shape, bytes] | None:
        """The key of a request field's verdict among those of its shape
        (when the policy lets shapes decide, see ``_shaping``): its method
        and version as they are and its target's shape (see
        :func:`~urlguard.cli.shapes.shape_of`); ``None`` when the shape does not decide the
        verdict: a field with log escapes (the field is not yet the request
        line) or a target not in origin-form. The request line's grammar
        reads only the method, the spaces and the version."""
        if _BACKSLASH in field:
            return None
        first, last = field.find(b" "), field.rfind(b" ")
        # Origin-form: the target (between the first and last space) starts with '/'.
        if first < 0 or last <= first + 1 or field[first + 1] != _SLASH:
            return None
        target = field[first + 1 : last]
        shape = shape_of(target)
        return None if shape is None else (field[:first], shape, field[last + 1 :])

    def _judged(self, field: bytes, target: bytes, shape: Shape, verdict: str) -> None:
        """What judging a request does besides its verdict: an example of a
        rule, the target for the observer."""
        if verdict in (OK, UNPARSEABLE):
            return
        self._example(verdict, target)
        if self._observer is not None:
            self._found(field, target, shape)

    def _found(self, field: bytes, target: bytes, shape: Shape | None) -> None:
        """Keep a rejected request's target (and shape) for the observer:
        found now, not again."""
        if len(self._rejected_targets) >= CACHE_SIZE:
            self._rejected_targets.clear()
        self._rejected_targets[field] = (target, shape)

    def _judge_line(self, line: bytes) -> str:
        target = line[:-1] if line.endswith(b"\r") else line  # CRLF files
        verdict = self._judge_target(target) if target else UNPARSEABLE
        _remember(self._target_cache, line, verdict)
        return verdict

    def _judge_target(self, target: bytes) -> str:
        policy = self._routes.select(target)
        key = self._shape_key(target, policy)
        self._last_shape = None if key is None else key[1]
        rule = self._shapes.get(key) if key is not None else None
        if rule is None:
            try:
                parse_target(target, policy)
            except InvalidTarget as error:
                rule = error.rule
            else:
                rule = OK
            if key is not None:
                _remember(self._shapes, key, rule)
        if rule != OK:
            self._example(rule, target)
        return rule

    def _shape_key(self, target: bytes, policy: Policy) -> tuple[int, Shape] | None:
        """The key of ``target``'s verdict among those of its shape, if its
        shape decides it under ``policy``."""
        folding = self._folds.get(id(policy))
        if folding is None:
            folding = self._folds[id(policy)] = folds(policy)
        if not folding:
            return None
        shape = shape_of(target)
        return None if shape is None else (id(policy), shape)


# Each line's method (before the first space), target and version (after
# the last), as bytes.partition and rpartition split a field; all empty for
# a line without two spaces (no key made from that can match a stored one).
_FIELD_PARTS: Final = re.compile(rb"^(?:([^ \n]*) (.*) ([^ \n]*)|.*)$", re.MULTILINE)

# The status of a ``field" NNN`` key, and its field.
_STATUS_OF: Final = operator.itemgetter(slice(-3, None))
_FIELD_OF: Final = operator.itemgetter(slice(None, -_STATUS_SUFFIX))


# The targets and shapes of request fields, by position (None where not known).
_Split = tuple[Sequence[bytes | None], Sequence[Shape | None]]


class _Judged(NamedTuple):
    """The verdicts of request fields, in order; with an observer, the
    target and shape of each field rejected by its shape's verdict, by
    position (``None`` for the others; ``split`` is ``None`` for all)."""

    verdicts: list[str]
    split: _Split | None = None


def _where(mask: Sequence[bool], column: Sequence[T]) -> list[T | None]:
    """The items of ``column`` where ``mask`` is true, ``None`` elsewhere."""
    return list(map(operator.getitem, zip(repeat(None), column), mask))


def _aligned(verdicts: Sequence[str | None], judged: Sequence[T]) -> list[T | None]:
    """``judged`` (one per field whose verdict is ``None``) at the positions
    of those fields among all, ``None`` at the others."""
    found = iter(judged)
    return [None if verdict is not None else next(found) for verdict in verdicts]


def _target_of(field: bytes) -> bytes | None:
    """The target of a logged request field (``None`` if it has none)."""
    request = _REQUEST_LINE.fullmatch(unescape_log(field))
    return None if request is None else request[2]


def _remember(cache: dict[K, str], key: K, verdict: str) -> None:
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    cache[key] = verdict
