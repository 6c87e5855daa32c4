"""Two revisions side by side in one run, each in a process of its own.

    python -m bench.ab main WORKTREE                 # main against the working tree
    python -m bench.ab HEAD~1 HEAD --rounds 1000 --instructions

Each revision is written to its own folder (``git archive``, or a copy of
``src/`` for ``WORKTREE``) and its compiled parser built there
(``setup.py build_ext --inplace``; ``--reference`` builds nothing). A worker
per revision (bench/ab_worker.py) runs with that ``src`` first on
``PYTHONPATH``: no process holds two copies of urlguard. Rounds alternate
between the workers, the order swapping every round; each ratio (urlguard
over naive, guarded over bare) is taken inside one worker's round. Printed:
each revision's median (IQR), that of B over A round by round, and with
``--instructions`` the same ratios in instructions and B minus A.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from io import BytesIO
from pathlib import Path
from typing import IO, Any, cast

from . import instructions
from .timing import iqr, markdown, ratios

ROOT = Path(__file__).resolve().parent.parent
WORKTREE = "WORKTREE"
#: What setup.py needs beside the package to build the compiled parser.
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md", "LICENSE")
ROWS = [f"micro {s}" for s in ("plain", "mixed", "encoded", "malformed")]
ROWS += [f"{app} {target}" for app in ("starlette", "flask") for target in ("plain", "encoded")]
Samples = dict[str, tuple[list[float], list[float]]]


def checkout(revision: str, into: Path, build: bool) -> Path:
    """Write ``revision``'s package into ``into``, built if asked; its ``src``."""
    if revision == WORKTREE:
        ignored = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.html", "__pycache__")
        shutil.copytree(ROOT / "src" / "urlguard", into / "src" / "urlguard", ignore=ignored)
        for name in BUILD_FILES:
            shutil.copy2(ROOT / name, into / name)
    else:
        archive = subprocess.run(
            ["git", "archive", revision, "src/urlguard", *BUILD_FILES],
            cwd=ROOT, capture_output=True, check=False,
        )  # fmt: skip
        if archive.returncode != 0:
            raise SystemExit(
                f"bench.ab: cannot read {revision!r}: {archive.stderr.decode().strip()}"
            )
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(into, filter="data")
    if build:
        print(f"  ab: building {revision}", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=into, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"bench.ab: cannot build {revision!r}: {done.stderr.strip()[-1500:]}")
    return into / "src"


class Worker:
    """A running bench/ab_worker.py for one revision."""

    def __init__(self, revision: str, src: Path) -> None:
        self.revision = revision
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.ab_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        self.stdin, self.stdout = (
            cast(IO[str], self.process.stdin),
            cast(IO[str], self.process.stdout),
        )
        self.about = self.ask("")

    def ask(self, line: str) -> dict[str, Any]:
        """Send ``line`` (if any), read the worker's one-line JSON answer."""
        if line:
            self.stdin.write(line + "\n")
            self.stdin.flush()
        answer = self.stdout.readline()
        if not answer:
            raise SystemExit(
                f"bench.ab: the worker for {self.revision!r} stopped (its error is above)"
            )
        parsed: dict[str, Any] = json.loads(answer)
        return parsed

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=60)


def alternate(a: Worker, b: Worker, rounds: int) -> Samples:
    """Row -> (A's ratios, B's ratios), one each per round after a warm-up round."""
    samples: Samples = {row: ([], []) for row in ROWS}
    for round_no in range(rounds + 1):
        first, second = (a, b) if round_no % 2 else (b, a)
        answers = {first: first.ask(f"round {round_no}"), second: second.ask(f"round {round_no}")}
        for row in ROWS if round_no else ():
            samples[row][0].append(answers[a][row])
            samples[row][1].append(answers[b][row])
        print(f"  ab round {round_no}/{rounds}", file=sys.stderr, end="\r", flush=True)
    print(file=sys.stderr)
    return samples


def table(samples: Samples, counts: list[dict[str, float]]) -> str:
    """One row per measure: each revision's time, B over A, and instructions."""
    rows = []
    for row in ROWS:
        in_a, in_b = samples[row]
        cells = [row, iqr(in_a).text(), iqr(in_b).text(), iqr(ratios(in_b, in_a)).text()]
        top, bottom = ("urlguard", "naive") if "micro" in row else ("guarded-urlguard", "bare")
        ir = [count[f"{row} {top}"] / count[f"{row} {bottom}"] for count in counts]
        cells += [f"{ir[0]:.3f}", f"{ir[1]:.3f}", f"{ir[1] - ir[0]:+.3f}"] if ir else []
        rows.append(cells)
    headers = ["urlguard / naive, guarded / bare", "A: time", "B: time", "B / A: time"]
    return markdown(headers + (["A: Ir", "B: Ir", "B − A: Ir"] if counts else []), rows)


def compare(args: argparse.Namespace, folder: Path) -> None:
    a, b = args.a, args.b
    sources = [
        checkout(rev, folder / side, not args.reference) for rev, side in [(a, "A"), (b, "B")]
    ]
    with ExitStack() as running:
        workers = []
        for label, revision, src in zip("AB", (a, b), sources, strict=True):
            workers.append(worker := Worker(revision, src))
            running.callback(worker.close)
            parser, file = worker.about["implementation"], worker.about["file"]
            print(f"{label} = {revision}: the {parser} parser ({file})")
        samples = alternate(workers[0], workers[1], args.rounds)
    counts = []
    if args.instructions and shutil.which("valgrind") is None:
        print(instructions.VALGRIND_MISSING)
    elif args.instructions:
        print("  ab: under callgrind", file=sys.stderr, flush=True)
        requests = 20 if args.rounds < 10 else 200
        counts = [instructions.count("revision", requests, str(src)) for src in sources]
    print(f"B = {b} against A = {a}, {args.rounds} alternating rounds: median (IQR)")
    print(table(samples, counts))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("a", help=f"a git revision, or {WORKTREE} for src/ as it is")
    parser.add_argument("b", help="the same, for the revision compared with A")
    parser.add_argument("--rounds", type=int, default=400, help="alternating rounds (400)")
    parser.add_argument("--instructions", action="store_true", help="count under callgrind too")
    parser.add_argument("--reference", action="store_true", help="build nothing: the reference")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="urlguard-ab-") as folder:
        compare(args, Path(folder))  # SystemExit (status 1) with why, if a revision fails
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
