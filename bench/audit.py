"""Audit benchmark: ``urlguard audit`` throughput in log lines per second.

Two generated logs in the combined format nginx and Apache write, in a
temporary directory that is removed afterwards:

* ``typical``: targets drawn from the corpus with Zipf-like repetition
  (weight ``1/rank**1.1``), as real traffic repeats a few URLs a lot;
* ``distinct``: every line a different target (the corpus target with a
  unique ``r=N`` parameter), the worst case for any cache of verdicts.

Each log is audited in-process (``urlguard.cli.main(["audit", "--json", ...])``,
stdout captured) and as a subprocess (``python -m urlguard audit --json``,
interpreter start-up included), several times; the JSON report must count
every line, or the run is refused. Then the same again with ``--suggest``
(the configuration proposed from the statuses, computed after the last line
and included in the time); its report must hold a suggestion too.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from urlguard import cli

from .corpus import Corpus
from .stats import Check, Goal, summarize, table

GOAL = Goal("audit: lines per second", 100_000, at_most=False)
_AGENT = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def _log_escape(target: bytes) -> bytes:
    """A target as nginx writes it in a log: ``"``, ``\\`` and bytes outside
    printable ASCII as ``\\xHH`` (a raw space stays a space)."""
    if all(0x20 <= b < 0x7F and b not in b'"\\' for b in target):
        return target
    return b"".join(
        bytes([b]) if 0x20 <= b < 0x7F and b not in b'"\\' else b"\\x%02X" % b for b in target
    )


def _line(rng: random.Random, target: bytes, second: int) -> bytes:
    host = b"203.0.113.%d" % rng.randrange(1, 255)
    minute, sec = divmod(second % 3600, 60)
    status = rng.choice((200, 200, 200, 200, 304, 404))
    return (
        host
        + b' - - [10/Oct/2024:13:%02d:%02d +0000] "GET ' % (minute, sec)
        + _log_escape(target)
        + b' HTTP/1.1" %d %d "-" "' % (status, rng.randrange(200, 90_000))
        + _AGENT
        + b'"\n'
    )


def zipf_targets(corpus: Corpus, lines: int, seed: int) -> list[bytes]:
    """``lines`` targets drawn from the corpus with Zipf-like repetition."""
    rng = random.Random(seed)
    ranked = list(corpus.targets)
    rng.shuffle(ranked)
    weights = [1 / (rank**1.1) for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights=weights, k=lines)


def distinct_targets(corpus: Corpus, lines: int) -> list[bytes]:
    """``lines`` different targets, each a corpus target with a unique ``r=N``."""
    base = corpus.targets
    out = []
    for i in range(lines):
        target = base[i % len(base)]
        out.append(target + (b"&" if b"?" in target else b"?") + b"r=%d" % i)
    return out


def write_log(path: Path, targets: Sequence[bytes], seed: int) -> None:
    rng = random.Random(seed)
    with path.open("wb") as fh:
        fh.writelines(_line(rng, t, i // 50) for i, t in enumerate(targets))


#: The two ways of auditing measured: the plain audit, and --suggest.
COMMANDS: dict[str, list[str]] = {
    "audit --json": ["audit", "--json"],
    "audit --suggest --json": ["audit", "--suggest", "--json"],
}


def _in_process(command: list[str], path: Path) -> tuple[float, dict[str, object]]:
    buffer = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buffer):
        status = cli.main([*command, str(path)])
    elapsed = time.perf_counter() - start
    if status not in (0, 1):
        raise RuntimeError(f"urlguard audit exited with {status}")
    report: dict[str, object] = json.loads(buffer.getvalue())
    return elapsed, report


def _subprocess(command: list[str], path: Path) -> tuple[float, dict[str, object]]:
    argv = [sys.executable, "-m", "urlguard", *command, str(path)]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=600, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"urlguard audit exited with {done.returncode}: {done.stderr[-300:]!r}")
    report: dict[str, object] = json.loads(done.stdout)
    return elapsed, report


def run(
    corpus: Corpus, lines: int, repeats: int, out: Callable[[str], None] = print
) -> list[Check]:
    """Generate both logs, audit each ``repeats`` times both ways, without and
    with ``--suggest``; print one table for each."""
    checks: list[Check] = []
    headers = ["log", "run", "lines", "MB", "lines/s", "min–max", "rejected", "goal"]
    with tempfile.TemporaryDirectory(prefix="urlguard-bench-") as tmp:
        logs = {
            "typical": Path(tmp, "typical.log"),
            "distinct": Path(tmp, "distinct.log"),
        }
        write_log(logs["typical"], zipf_targets(corpus, lines, corpus.seed), corpus.seed)
        write_log(logs["distinct"], distinct_targets(corpus, lines), corpus.seed)
        for name, command in COMMANDS.items():
            rows: list[list[str]] = []
            for kind, path in logs.items():
                size = path.stat().st_size
                for how, audit in (("in-process", _in_process), ("subprocess", _subprocess)):
                    rates: list[float] = []
                    report: dict[str, object] = {}
                    for _ in range(repeats):
                        elapsed, report = audit(command, path)
                        _check_report(report, lines, suggest="--suggest" in command)
                        rates.append(lines / elapsed)
                    s = summarize(rates)
                    rows.append([
                        kind, how, f"{lines:,}", f"{size / 1e6:.1f}", f"{s.median:,.0f}",
                        s.range(",.0f"), f"{report.get('rejected')}",
                        f"{GOAL.text()} {GOAL.verdict(s.median)}",
                    ])  # fmt: skip
                    label = "audit" if name == "audit --json" else "audit --suggest"
                    checks.append(Check(
                        Goal(f"{label}: {kind} log, {how}", GOAL.limit, GOAL.at_most),
                        s.median, f"min–max {s.range(',.0f')}",
                    ))  # fmt: skip
            out(f"Audit: `urlguard {name}` lines per second, median of {repeats} runs (min–max)")
            out(table(headers, rows))
    return checks


def _check_report(report: dict[str, object], lines: int, *, suggest: bool) -> None:
    if report.get("lines") != lines:
        raise RuntimeError(f"audit counted {report.get('lines')} lines, not {lines}")
    if suggest and not isinstance(report.get("suggestion"), dict):
        raise RuntimeError("audit --suggest gave no suggestion")
