"""Audit part: ``urlguard audit --json`` (and ``--suggest``) over generated logs,
in lines per second, and its peak memory on distinct rejected targets.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from .corpus import SEED, Corpus
from .parsers import chosen
from .summary import Results
from .timing import Spread, markdown, min_max

COMMANDS = (["audit", "--json"], ["audit", "--suggest", "--json"])
_AGENT = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def _log_escape(target: bytes) -> bytes:
    """A target as nginx logs it: ``"``, ``\\`` and bytes outside printable ASCII as ``\\xHH``."""
    return b"".join(
        bytes([b]) if 0x20 <= b < 0x7F and b not in b'"\\' else b"\\x%02X" % b for b in target
    )


def write_log(
    path: Path, targets: Sequence[bytes], status: Callable[[int], int] | None = None
) -> None:
    """A log of ``targets`` at ``path`` (gzip if .gz), each status ``status(index)`` or random."""
    rng = random.Random(SEED)
    with gzip.open(path, "wb", compresslevel=1) if path.suffix == ".gz" else path.open("wb") as log:
        for i, target in enumerate(targets):
            hour, rest = divmod(i // 50 % 86_400, 3600)
            minute, second = divmod(rest, 60)
            code = rng.choice((200, 200, 200, 200, 304, 404)) if status is None else status(i)
            host, size = rng.randrange(1, 255), rng.randrange(200, 90_000)
            log.write(
                b'203.0.%d.%d - - [10/Oct/2024:%02d:%02d:%02d +0000] "GET %s HTTP/1.1" %d %d "-"'
                b' "%s"\n'
                % (host % 7, host, hour, minute, second, _log_escape(target), code, size, _AGENT)
            )


def typical_targets(corpus: Corpus, lines: int) -> list[bytes]:
    """The corpus's targets repeated with Zipf-like weights (``1/rank**1.1``), as traffic does."""
    rng = random.Random(SEED)
    ranked = list(corpus.targets)
    rng.shuffle(ranked)
    weights = [1 / rank**1.1 for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights=weights, k=lines)


def distinct_targets(corpus: Corpus, lines: int) -> list[bytes]:
    """Every target different (a unique ``r=N``): the worst case for a cache of verdicts."""
    targets = [corpus.targets[i % len(corpus.targets)] for i in range(lines)]
    return [t + (b"&" if b"?" in t else b"?") + b"r=%d" % i for i, t in enumerate(targets)]


# Runs the command, then reports its own peak resident set (VmHWM, which exec
# resets: a child's ru_maxrss counts the larger parent it was forked from) and
# the CPU seconds it used (wall time on a shared machine counts waits for a core).
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


class Run(NamedTuple):
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


def _rates(runs: list[Run], lines: int) -> tuple[Spread, Spread]:
    """Lines per wall second and per CPU second over ``runs``."""
    wall = [lines / run.seconds for run in runs]
    return min_max(wall), min_max([lines / run.cpu_seconds for run in runs])


def run(corpus: Corpus, lines: int, repeats: int, memory_lines: int, results: Results) -> None:
    """Audit each log ``repeats`` times each way, then the memory log; print a table of each."""
    # name -> whether to force the reference (URLGUARD_NO_EXTENSIONS); once if it is the chosen one
    parsers = {chosen(): False, "reference": True}
    rows = []
    with tempfile.TemporaryDirectory(prefix="urlguard-audit-") as folder:
        logs = {name: Path(folder, f"{name}.log") for name in ("typical", "distinct", "shop")}
        write_log(logs["typical"], typical_targets(corpus, lines))
        write_log(logs["distinct"], distinct_targets(corpus, lines))
        # One shape every policy rejects, every product id different, every third one missing.
        shop = [b"/products/%d/kg%%2Fs" % n for n in range(lines)]
        write_log(logs["shop"], shop, lambda i: 404 if i % 3 == 0 else 200)
        for command in COMMANDS:
            for kind, log in logs.items():
                for parser, reference in parsers.items():
                    runs = [audit_once(command, log, lines, reference) for _ in range(repeats)]
                    wall, cpu = _rates(runs, lines)
                    rows.append([" ".join(command), kind, parser, wall.text(), cpu.text()])
                    if command == COMMANDS[0] and kind != "shop":
                        results[f"audit {kind}", parser] = wall
        print(f"Audit: lines per second over {lines:,} lines, {repeats} runs: median (min–max)")
        print(markdown(["command", "log", "parser", "lines/s", "lines per CPU second"], rows))

        log = Path(folder, "served.log.gz")
        # Distinct targets the strict policy rejects, all served, under 5,000 directories.
        served = [b"/c%d/%d/kg%%2Fs" % (n % 5000, n) for n in range(memory_lines)]
        write_log(log, served, lambda i: 200)
        rows = []
        for command in COMMANDS:
            for parser, reference in parsers.items():
                runs = [audit_once(command, log, memory_lines, reference) for _ in range(repeats)]
                peak = min_max([run.peak / 2**20 for run in runs]).text(".0f")
                wall, cpu = _rates(runs, memory_lines)
                rows.append([" ".join(command), parser, peak, wall.text(), cpu.text()])
    print()
    print(
        f"Audit: peak memory on {memory_lines:,} distinct served targets (gzip), "
        f"{repeats} runs: median (min–max)"
    )
    print(markdown(["command", "parser", "peak RSS MiB", "lines/s", "lines per CPU second"], rows))
