"""Two revisions side by side in one run, each in a process of its own.

Each is written to a folder of its own (``git archive``, or a copy of ``src/``
for ``WORKTREE``) and built there; its worker (:func:`worker`) runs with that
``src`` first on ``PYTHONPATH``; rounds alternate between the two.
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

import urlguard

from . import ROOT, instructions, missing, python_path
from .corpus import build
from .inprocess import REVISION, InProcess
from .micro import Micro, naive
from .parsers import reader
from .timing import collect, iqr, markdown, ratios

WORKTREE = "WORKTREE"
#: What setup.py needs beside the package to build the compiled parser.
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md", "LICENSE")
ROWS = [f"micro {s}" for s in ("plain", "mixed", "encoded", "malformed")]
ROWS += [f"{app} {target}" for app in ("starlette", "flask") for target in ("plain", "encoded")]
Samples = dict[tuple[str, str], list[float]]


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
    """A running :func:`worker` for one revision."""

    def __init__(self, revision: str, src: Path) -> None:
        self.revision = revision
        env = dict(os.environ, PYTHONPATH=python_path(str(src)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.ab", "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        self.stdin = cast(IO[str], self.process.stdin)
        self.stdout = cast(IO[str], self.process.stdout)
        self.about = self.ask("")

    def ask(self, line: str) -> dict[str, Any]:
        """Send ``line`` (if any), read the worker's one-line JSON answer."""
        if line:
            self.stdin.write(line + "\n")
            self.stdin.flush()
        answer = self.stdout.readline()
        if not answer:
            raise SystemExit(f"bench.ab: the worker for {self.revision!r} stopped (see above)")
        parsed: dict[str, Any] = json.loads(answer)
        return parsed

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=60)


def alternate(a: Worker, b: Worker, rounds: int) -> Samples:
    """(row, ``A`` or ``B``) -> that side's ratios, one per round, the side that
    runs first swapping every round."""

    def measure(round_no: int) -> dict[tuple[str, str], float]:
        order = (a, b) if round_no % 2 else (b, a)
        answers = {worker: worker.ask(f"round {round_no}") for worker in order}
        return {(row, side): answers[w][row] for row in ROWS for side, w in (("A", a), ("B", b))}

    return collect(measure, rounds, "ab")


def table(samples: Samples, counts: list[dict[str, float]]) -> str:
    """One row per measure: each revision's time, B over A, and instructions."""
    rows = []
    for row in ROWS:
        in_a, in_b = samples[row, "A"], samples[row, "B"]
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
    if args.instructions and not missing("valgrind", "Instructions"):
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


def worker() -> None:
    """One revision's side, its ``src`` first on ``PYTHONPATH``: a JSON line naming
    its parser, then one of ratios (urlguard over naive, guarded over bare) per
    ``round N`` line read. It asks only what every revision answers."""
    micro = Micro({"naive": naive, "urlguard": reader(urlguard)}, build())
    inprocess = InProcess(REVISION)
    inprocess.size_batches()
    print(
        json.dumps({"implementation": urlguard.IMPLEMENTATION, "file": urlguard.__file__}),
        flush=True,
    )
    for line in sys.stdin:
        round_no = int(line.split()[1])
        answer: dict[str, float] = {}
        parsing = micro.round(round_no)
        for subset in micro.chunks:
            answer[f"micro {subset}"] = parsing[subset, "urlguard"] / parsing[subset, "naive"]
        requests = inprocess.round(round_no)
        for framework, tname, layer in requests:
            if layer != "bare":
                bare = requests[framework, tname, "bare"]
                answer[f"{framework} {tname}"] = requests[framework, tname, layer] / bare
        print(json.dumps(answer), flush=True)
    inprocess.close()


if __name__ == "__main__":  # python -m bench.ab A B, or a worker: python -m bench.ab --worker
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        raise SystemExit(main())
