"""Audit part: ``urlguard audit --json`` throughput, in log lines per second.

Two generated logs in the combined format: ``typical`` repeats targets of
the corpus with Zipf-like weights (``1/rank**1.1``), as traffic does;
``distinct`` makes every target different (a unique ``r=N``), the worst case
for any cache of verdicts. Each is audited in a subprocess (start-up
included), with and without ``--suggest``, on the parser chosen at import
and on the reference (``URLGUARD_NO_EXTENSIONS=1``); the report must count
every line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

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


def write_log(path: Path, targets: Sequence[bytes], seed: int) -> None:
    rng = random.Random(seed)
    with path.open("wb") as log:
        for i, target in enumerate(targets):
            minute, second = divmod(i // 50 % 3600, 60)
            status = rng.choice((200, 200, 200, 200, 304, 404))
            host, size = rng.randrange(1, 255), rng.randrange(200, 90_000)
            log.write(
                b'203.0.113.%d - - [10/Oct/2024:13:%02d:%02d +0000] "GET %s HTTP/1.1" %d %d "-"'
                b' "%s"\n' % (host, minute, second, _log_escape(target), status, size, _AGENT)
            )


def typical_targets(corpus: Corpus, lines: int) -> list[bytes]:
    rng = random.Random(corpus.seed)
    ranked = list(corpus.targets)
    rng.shuffle(ranked)
    weights = [1 / rank**1.1 for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights=weights, k=lines)


def distinct_targets(corpus: Corpus, lines: int) -> list[bytes]:
    targets = [corpus.targets[i % len(corpus.targets)] for i in range(lines)]
    return [t + (b"&" if b"?" in t else b"?") + b"r=%d" % i for i, t in enumerate(targets)]


def lines_per_second(command: list[str], log: Path, lines: int, reference: bool) -> float:
    """One audit in a subprocess, bounded in time."""
    env = dict(os.environ, URLGUARD_NO_EXTENSIONS="1") if reference else None
    argv = [sys.executable, "-m", "urlguard", *command, str(log)]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=600, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or json.loads(done.stdout).get("lines") != lines:
        raise RuntimeError(f"urlguard {' '.join(command)} failed: {done.stderr[-300:]!r}")
    return lines / elapsed


def run(
    corpus: Corpus, lines: int, repeats: int, results: Results, out: Callable[[str], None] = print
) -> None:
    """Audit both logs ``repeats`` times each way; print one table."""
    # name -> whether to force the reference (URLGUARD_NO_EXTENSIONS); once if it is the chosen one
    parsers = {chosen(): False, "reference": True}
    rows = []
    with tempfile.TemporaryDirectory(prefix="urlguard-audit-") as folder:
        logs = {"typical": Path(folder, "typical.log"), "distinct": Path(folder, "distinct.log")}
        write_log(logs["typical"], typical_targets(corpus, lines), corpus.seed)
        write_log(logs["distinct"], distinct_targets(corpus, lines), corpus.seed)
        for command in COMMANDS:
            for kind, log in logs.items():
                for parser, reference in parsers.items():
                    rates = [
                        lines_per_second(command, log, lines, reference) for _ in range(repeats)
                    ]
                    rows.append([" ".join(command), kind, parser, min_max(rates).text()])
                    if command == COMMANDS[0]:
                        results[f"audit {kind}", parser] = min_max(rates)
    out(f"Audit: lines per second over {lines:,} lines, {repeats} runs: median (min–max)")
    out(markdown(["command", "log", "parser", "lines/s"], rows))
