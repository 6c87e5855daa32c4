"""Run urlguard's benchmark suite and print every table in one go.

    python -m bench                      # everything: corpus, micro, inprocess, e2e, audit
    python -m bench --part micro --part inprocess --rounds 100
    python -m bench --part profile       # cost ladder and cProfile breakdowns, for tuning
    python -m bench --part instructions  # callgrind instruction counts: noise-free ratios
    python -m bench --quick              # a tiny budget: checks that every part runs

Run it from the project root with urlguard installed (``pip install -e .``)
and the ``bench`` extra (werkzeug, yarl, ada-url, Starlette, Flask, uvicorn,
httptools, gunicorn); the end-to-end part also needs wrk (``apt-get install
-y wrk``) and says so, and skips only itself, when it is missing. The exit
status is 0 whether or not the goals are met: the tables say which are.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import corpus as corpus_module
from bench.stats import Check, checks_table

PARTS = ("corpus", "micro", "inprocess", "e2e", "audit", "profile", "instructions")
DEFAULT_PARTS = ("corpus", "micro", "inprocess", "e2e", "audit")
PACKAGES = (
    "urlguard", "starlette", "flask", "werkzeug", "yarl", "ada-url", "multidict", "uvicorn",
    "httptools", "gunicorn", "uvloop",
)  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description="urlguard's benchmarks.")
    parser.add_argument(
        "--part", action="append", choices=PARTS, dest="parts",
        help=f"a part to run (repeatable); default: {' '.join(DEFAULT_PARTS)}",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, help="micro and in-process rounds (default 60, 1000)")
    parser.add_argument("--batch-ms", type=float, default=1.0, help="in-process batch length")
    parser.add_argument("--e2e-rounds", type=int, default=6, help="wrk rounds per variant")
    parser.add_argument("--e2e-seconds", type=float, default=3.0, help="length of one wrk run")
    parser.add_argument("--connections", type=int, default=2, help="wrk connections")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--audit-lines", type=int, default=200_000, help="lines per audit log")
    parser.add_argument("--audit-repeats", type=int, default=3, help="audits per log and mode")
    parser.add_argument(
        "--quick", action="store_true",
        help="tiny budget (3 rounds, 1 s wrk runs, 2,000-line logs): to check that parts run",
    )  # fmt: skip
    return parser


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


def _command(argv: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


def _cpu_model() -> str:
    for line in _command(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load_average() -> str:
    """The load averages, as the header and the last line show them."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _verdicts(corpus: corpus_module.Corpus) -> str:
    """What the strict default policy says about each kind of target."""
    import urlguard

    lines = []
    for kind in corpus_module.KINDS:
        rules: Counter[str] = Counter()
        for raw in corpus.subset(kind):
            try:
                urlguard.parse_target(raw)
            except urlguard.InvalidTarget as exc:
                rules[exc.rule] += 1
        detail = ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items()))
        lines.append(
            f"urlguard rejects {sum(rules.values())}/{corpus.count(kind)} {kind}"
            + (f" ({detail})" if detail else "")
        )
    return "\n".join(lines)


def _src_digest() -> str:
    """A short digest of the sources under src/urlguard (the Python modules and
    the compiled parser's Cython source): which version was measured."""
    digest = hashlib.sha256()
    package = ROOT / "src" / "urlguard"
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.pyx")]):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _busy_warning() -> str | None:
    cores = os.cpu_count() or 1
    one = os.getloadavg()[0]
    if one <= cores * 0.75:
        return None
    return (
        f"warning  load {one:.2f} on {cores} cores: other work is running, timings will be "
        "noisy and slow; re-run on a quiet machine before quoting them"
    )


def header(argv: Sequence[str], program: str = "python -m bench") -> str:
    """Machine, versions, date and command, as the first lines of a run."""
    commit = _command(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]) or "-"
    dirty = _command(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"])
    wrk = shutil.which("wrk")
    wrk_version = _command(["sh", "-c", "wrk --version 2>&1 | head -1"]) if wrk else "not installed"
    versions = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        f"date     {now}",
        f"command  {program} {' '.join(argv)}".rstrip(),
        f"machine  {_cpu_model()}, {os.cpu_count()} cores, {platform.platform(terse=True)}",
        f"python   {platform.python_implementation()} {platform.python_version()}",
        f"packages {versions}",
        f"wrk      {wrk_version.split(' Copyright')[0]}",
        f"commit   {commit}{' (src/ modified)' if dirty else ''}; src digest {_src_digest()}",
        f"load     {load_average()} (1, 5, 15 min) before",
        *filter(None, [_busy_warning()]),
    ])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts; print their tables and a summary of the goals."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(args_list)
    parts = tuple(args.parts or DEFAULT_PARTS)
    quick = args.quick
    micro_rounds = args.rounds or (3 if quick else 60)
    inprocess_rounds = args.rounds or (3 if quick else 1000)
    e2e_rounds = 1 if quick else args.e2e_rounds
    e2e_seconds = 1.0 if quick else args.e2e_seconds
    audit_lines = 2_000 if quick else args.audit_lines
    audit_repeats = 1 if quick else args.audit_repeats

    print(header(args_list), flush=True)
    started = time.monotonic()
    corpus = corpus_module.build()
    checks: list[Check] = []
    for part in parts:
        print(flush=True)
        if part == "corpus":
            print("Corpus: composition (bytes per target)")
            print(corpus_module.describe(corpus))
            print(_verdicts(corpus))
        elif part == "micro":
            from bench import micro

            checks += micro.run(corpus, micro_rounds)
        elif part == "inprocess":
            from bench import inprocess

            checks += inprocess.run(inprocess_rounds, args.batch_ms)
        elif part == "e2e":
            from bench import e2e

            checks += e2e.run(e2e_rounds, e2e_seconds, args.connections, args.threads)
        elif part == "audit":
            from bench import audit

            checks += audit.run(corpus, audit_lines, audit_repeats)
        elif part == "profile":
            from bench import profile

            profile.ladder(3 if quick else 30, 500 if quick else 5_000)
            print()
            profile.rejections(3 if quick else 30, 20 if quick else 200)
            print()
            profile.profiles(200 if quick else 20_000, 12)
        elif part == "instructions":
            from bench import instructions

            instructions.run(quick)
        sys.stdout.flush()
    if checks:
        print()
        print("Speed goals (docs/speed.md)")
        print(checks_table(checks))
    print()
    print(f"load     {load_average()} (1, 5, 15 min) after; {time.monotonic() - started:.0f} s")
    warning = _busy_warning()
    if warning:
        print(warning)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
