"""``python -m bench``: run the parts (``--part``, default all; ``--quick``, a
tiny budget to check that each runs), then print the table of docs/speed.md.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Sequence

from . import ROOT, audit, corpus, e2e, inprocess, instructions, micro, segments, summary
from .parsers import available, chosen

PARTS = ("corpus", "micro", "inprocess", "segments", "e2e", "audit", "instructions")


def _output(*argv: str) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def src_digest() -> str:
    """Which sources were measured: a digest of src/urlguard's .py, .pyx, .pyi and .so."""
    files = sorted([*(ROOT / "src" / "urlguard").glob("*.py*"), *ROOT.glob("src/urlguard/*.so")])
    return hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()[:12]


def header(argv: Sequence[str]) -> str:
    """When, where and what was measured: the first lines of a run."""
    cpu = re.search(r"^Model name:\s*(.+)$", _output("lscpu"), re.MULTILINE)
    commit = _output("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD") or "unknown"
    changed = _output("git", "-C", str(ROOT), "status", "--porcelain", "--", "src")
    return "\n".join([
        f"date     {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"command  python -m bench {' '.join(argv)}".rstrip(),
        f"machine  {cpu[1] if cpu else platform.processor()}, {os.cpu_count()} cores, "
        f"{platform.platform(terse=True)}",
        f"python   {platform.python_implementation()} {platform.python_version()}",
        f"commit   {commit}{' with src/ changed' if changed else ''}; src digest {src_digest()}",
        f"parsers  {', '.join(available())}; a guard's default: {chosen()}",
        f"load     {os.getloadavg()[0]:.2f} (1 min) before",
    ])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="urlguard's benchmarks.")
    parser.add_argument("--part", action="append", choices=PARTS, dest="parts", help="default: all")
    parser.add_argument("--rounds", type=int, help="micro and in-process rounds (100, 1000)")
    parser.add_argument("--e2e-rounds", type=int, default=8, help="wrk rounds (8)")
    parser.add_argument("--quick", action="store_true", help="a tiny budget, to check that it runs")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    print(header(arguments), flush=True)
    started, digest = time.monotonic(), src_digest()
    targets = corpus.build()
    results: summary.Results = {}
    for part in args.parts or PARTS:
        print(flush=True)
        if part == "corpus":
            print(corpus.describe(targets))
        elif part == "micro":
            micro.run(targets, args.rounds or (3 if args.quick else 100), results)
        elif part == "inprocess":
            inprocess.run(args.rounds or (3 if args.quick else 1000), results)
        elif part == "segments":
            segments.run(args.rounds or (3 if args.quick else 300), args.quick)
        elif part == "e2e":
            e2e.run(1 if args.quick else args.e2e_rounds, 1.0 if args.quick else 3.0, results)
        elif part == "audit":
            lines, repeats = (2_000, 1) if args.quick else (200_000, 3)
            audit.run(targets, lines, repeats, 2_000 if args.quick else 1_000_000, results)
        elif part == "instructions":
            instructions.run(args.quick, results)
    print(f"\n{summary.table(results)}\n")
    print(f"{time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.2f} (1 min) after")
    if src_digest() != digest:
        print("warning: src/urlguard changed during the run: its figures mix two versions")
    return 0


raise SystemExit(main())
