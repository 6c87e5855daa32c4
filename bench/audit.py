"""Audit part: ``urlguard audit --json`` throughput, in log lines per second,
and the peak memory of ``--suggest``.

Three generated logs in the combined format: ``typical`` repeats targets of
the corpus with Zipf-like weights (``1/rank**1.1``), as traffic does;
``distinct`` makes every target different (a unique ``r=N``), the worst case
for any cache of verdicts; ``shop`` is one URL shape that every policy
rejects, ``/products/N/kg%2Fs``, answered 200 for most N and 404 for the
missing ones, the worst case for ``--suggest`` (every line is a distinct
rejected target). Each is audited in a subprocess (start-up included), with
and without ``--suggest``, on the parser chosen at import and on the
reference (``URLGUARD_NO_EXTENSIONS=1``); the report must count every line.

Each run also reports the CPU seconds the audit used: on a machine shared
with other work, wall time counts the waits for a core too.

Memory: ``--suggest`` on a log of one million distinct targets, all served
and all rejected, spread over thousands of directories, gzip-compressed;
the peak resident set the subprocess reports of itself (``VmHWM``), beside
plain ``audit`` on the same log.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .corpus import Corpus
from .parsers import chosen
from .summary import Results
from .timing import markdown, min_max

COMMANDS = (["audit", "--json"], ["audit", "--suggest", "--json"])
_AGENT = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def _log_escape(target: bytes) -> bytes:
    """A target as nginx logs it: ``"``, ``\\`` and bytes outside printable ASCII as ``\\xHH``."""
    return b"".join(
        bytes([b]) if 0x20 <= b < 0x7F and b not in b'"\\' else b"\\x%02X" % b for b in target
    )


def _lines(
    targets: Sequence[bytes], seed: int, status: Callable[[int], int] | None = None
) -> Iterator[bytes]:
    rng = random.Random(seed)
    for i, target in enumerate(targets):
        hour, rest = divmod(i // 50 % 86_400, 3600)
        minute, second = divmod(rest, 60)
        code = rng.choice((200, 200, 200, 200, 304, 404)) if status is None else status(i)
        host, size = rng.randrange(1, 255), rng.randrange(200, 90_000)
        yield (
            b'203.0.%d.%d - - [10/Oct/2024:%02d:%02d:%02d +0000] "GET %s HTTP/1.1" %d %d "-"'
            b' "%s"\n'
            % (host % 7, host, hour, minute, second, _log_escape(target), code, size, _AGENT)
        )


def write_log(
    path: Path, targets: Sequence[bytes], seed: int, status: Callable[[int], int] | None = None
) -> None:
    if path.suffix == ".gz":
        with gzip.open(path, "wb", compresslevel=1) as packed:
            packed.writelines(_lines(targets, seed, status))
    else:
        with path.open("wb") as log:
            log.writelines(_lines(targets, seed, status))


def typical_targets(corpus: Corpus, lines: int) -> list[bytes]:
    rng = random.Random(corpus.seed)
    ranked = list(corpus.targets)
    rng.shuffle(ranked)
    weights = [1 / rank**1.1 for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights=weights, k=lines)


def distinct_targets(corpus: Corpus, lines: int) -> list[bytes]:
    targets = [corpus.targets[i % len(corpus.targets)] for i in range(lines)]
    return [t + (b"&" if b"?" in t else b"?") + b"r=%d" % i for i, t in enumerate(targets)]


def shop_targets(lines: int) -> list[bytes]:
    """One product URL shape per line, every product id different."""
    return [b"/products/%d/kg%%2Fs" % n for n in range(lines)]


def shop_status(i: int) -> int:
    """Missing products (every third id) answer 404, the others 200."""
    return 404 if i % 3 == 0 else 200


def served_targets(lines: int) -> list[bytes]:
    """Distinct targets the strict policy rejects, under 5,000 directories."""
    return [b"/c%d/%d/kg%%2Fs" % (n % 5000, n) for n in range(lines)]


# Runs the command, then reports its own peak resident set (VmHWM, which
# exec resets: ru_maxrss of a child also counts the parent it was forked
# from, when that parent was larger than the audit) and the CPU seconds it
# used (on a shared machine, wall time also counts the waits for a core).
_RUNNER: Final = """
import resource, sys
from urlguard.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
used = resource.getrusage(resource.RUSAGE_SELF)
print("peak-rss-kib", peak, "cpu-seconds", used.ru_utime + used.ru_stime, file=sys.stderr)
sys.exit(code)
"""


@dataclass(frozen=True)
class Run:
    """One audit: wall seconds, CPU seconds, and peak resident set in bytes."""

    seconds: float
    cpu_seconds: float
    peak: int


def audit_once(command: list[str], log: Path, lines: int, reference: bool) -> Run:
    """One audit in a subprocess, bounded in time."""
    env = dict(os.environ, URLGUARD_NO_EXTENSIONS="1") if reference else None
    argv = [sys.executable, "-c", _RUNNER, *command, str(log)]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=900, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or json.loads(done.stdout).get("lines") != lines:
        raise RuntimeError(f"urlguard {' '.join(command)} failed: {done.stderr[-300:]!r}")
    # The runner's last words: "peak-rss-kib N cpu-seconds S".
    words = done.stderr.rsplit(b"peak-rss-kib ", 1)[-1].split()
    return Run(elapsed, float(words[2]), int(words[0]) * 1024)


def lines_per_second(command: list[str], log: Path, lines: int, reference: bool) -> float:
    """One audit in a subprocess, bounded in time: lines per wall second."""
    return lines / audit_once(command, log, lines, reference).seconds


def run(
    corpus: Corpus,
    lines: int,
    repeats: int,
    results: Results,
    out: Callable[[str], None] = print,
    memory_lines: int = 1_000_000,
) -> None:
    """Audit the three logs ``repeats`` times each way; print one table.
    Then the peak memory on ``memory_lines`` distinct served targets."""
    # name -> whether to force the reference (URLGUARD_NO_EXTENSIONS); once if it is the chosen one
    parsers = {chosen(): False, "reference": True}
    rows = []
    with tempfile.TemporaryDirectory(prefix="urlguard-audit-") as folder:
        logs = {
            "typical": Path(folder, "typical.log"),
            "distinct": Path(folder, "distinct.log"),
            "shop": Path(folder, "shop.log"),
        }
        write_log(logs["typical"], typical_targets(corpus, lines), corpus.seed)
        write_log(logs["distinct"], distinct_targets(corpus, lines), corpus.seed)
        write_log(logs["shop"], shop_targets(lines), corpus.seed, shop_status)
        for command in COMMANDS:
            for kind, log in logs.items():
                for parser, reference in parsers.items():
                    runs = [audit_once(command, log, lines, reference) for _ in range(repeats)]
                    rates = [lines / run.seconds for run in runs]
                    rows.append([
                        " ".join(command),
                        kind,
                        parser,
                        min_max(rates).text(),
                        min_max([lines / run.cpu_seconds for run in runs]).text(),
                    ])  # fmt: skip
                    if command == COMMANDS[0] and kind != "shop":
                        results[f"audit {kind}", parser] = min_max(rates)
        out(f"Audit: lines per second over {lines:,} lines, {repeats} runs: median (min–max)")
        out(markdown(["command", "log", "parser", "lines/s", "lines per CPU second"], rows))

        served = Path(folder, "served.log.gz")
        write_log(served, served_targets(memory_lines), corpus.seed, lambda i: 200)
        rows = []
        for command in COMMANDS:
            for parser, reference in parsers.items():
                runs = [
                    audit_once(command, served, memory_lines, reference) for _ in range(repeats)
                ]
                rows.append([
                    " ".join(command),
                    parser,
                    min_max([run.peak / 2**20 for run in runs]).text(".0f"),
                    min_max([memory_lines / run.seconds for run in runs]).text(),
                    min_max([memory_lines / run.cpu_seconds for run in runs]).text(),
                ])  # fmt: skip
    out("")
    out(
        f"Audit: peak memory on {memory_lines:,} distinct served targets (gzip), "
        f"{repeats} runs: median (min–max)"
    )
    out(markdown(["command", "parser", "peak RSS MiB", "lines/s", "lines per CPU second"], rows))
