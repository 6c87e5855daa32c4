"""Two versions of ``parse_target``, timed side by side in one process.

    python -m bench.ab HEAD~1 WORKTREE             # the last commit against your edits
    python -m bench.ab 9a53bd0 HEAD --rounds 60    # two commits
    python -m bench.ab HEAD WORKTREE --subset malformed
    python -m bench.ab 9aec83b WORKTREE --build    # build the revision's compiled parser too

On a machine whose speed drifts by a factor of two within minutes, two
separate benchmark runs cannot show a 5 % change. This loads the
``urlguard`` package of both versions under two names (``git archive`` for a
revision, ``src/`` for ``WORKTREE``) and times them over the same chunks of
the benchmark corpus, in turns, the order alternating, so that each ratio
B/A is taken between two timings a few milliseconds apart. Both parse and
read ``.segments`` and ``.query``, as the micro part does.

A revision's archive holds the compiled parser's source, not the module:
without ``--build`` that side runs the pure-Python reference, and the
first lines of the output say which parser each side runs. ``--build``
compiles it in the archive (``setup.py build_ext --inplace``: Cython and a
C compiler, as for an install), so that two compiled parsers are compared.

It prints, per subset, the median over chunks and rounds of the paired
ratio B/A with its interquartile range, and the ratio of the summed fastest
times per chunk. A tool for tuning, not one of the speed goals of
docs/speed.md; run it from the project root.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

if __package__ in (None, ""):  # run as `python bench/ab.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import KINDS, build
from bench.micro import Parser, time_targets
from bench.stats import quiet_gc, summarize, table

ROOT = Path(__file__).resolve().parent.parent
WORKTREE = "WORKTREE"
SUBSETS = ("plain", "encoded", "malformed", "mixed")
CHUNK = 100


# What setup.py needs beside the package to build the compiled parser.
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md", "LICENSE")


def source(revision: str, into: Path, build: bool = False) -> Path:
    """The folder holding the ``urlguard`` package of ``revision``; with
    ``build``, its compiled parser built in place."""
    if revision == WORKTREE:
        return ROOT / "src"
    paths = ["src/urlguard", *(BUILD_FILES if build else ())]
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, *paths],
        cwd=ROOT, capture_output=True, check=False,
    )  # fmt: skip
    if archive.returncode != 0:
        message = archive.stderr.decode(errors="replace").strip()
        raise SystemExit(f"bench.ab: cannot read {revision!r}: {message}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    if build:
        done = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=into, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"bench.ab: cannot build {revision!r}: {done.stderr.strip()}")
    return into / "src"


def implementation(module: ModuleType) -> str:
    """Which parser a loaded version runs ("compiled" or "python")."""
    return str(getattr(module, "IMPLEMENTATION", "python"))


def load(name: str, src: Path, shared: Sequence[str] = ()) -> ModuleType:
    """``src/urlguard`` imported as the package ``name`` (its imports are relative).

    Each module named in ``shared`` (``"_parser"``) is not loaded from ``src``:
    the package gets this process's ``urlguard`` module of that name instead,
    so that two versions of the rest run on the very same objects."""
    spec = importlib.util.spec_from_file_location(
        name, src / "urlguard" / "__init__.py", submodule_search_locations=[str(src / "urlguard")]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"bench.ab: no urlguard package under {src}")
    for module_name in shared:
        sys.modules[f"{name}.{module_name}"] = importlib.import_module(f"urlguard.{module_name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reader(module: ModuleType) -> Parser:
    parse = module.parse_target

    def parse_and_read(raw: bytes) -> object:
        target = parse(raw)
        return target.segments, target.query

    return parse_and_read


def compare(a: Parser, b: Parser, targets: Sequence[bytes], rounds: int) -> list[str]:
    """One table row: paired ratios B/A over chunks and rounds."""
    chunks = [targets[i : i + CHUNK] for i in range(0, len(targets), CHUNK)]
    ratios: list[float] = []
    fastest_a = [float("inf")] * len(chunks)
    fastest_b = [float("inf")] * len(chunks)
    with quiet_gc():
        for round_no in range(rounds + 1):  # round 0 warms up and is dropped
            for c, chunk in enumerate(chunks):
                if (round_no + c) % 2:
                    time_a, time_b = time_targets(a, chunk), time_targets(b, chunk)
                else:
                    time_b, time_a = time_targets(b, chunk), time_targets(a, chunk)
                if round_no:
                    ratios.append(time_b / time_a)
                    fastest_a[c] = min(fastest_a[c], time_a)
                    fastest_b[c] = min(fastest_b[c], time_b)
    s = summarize(ratios)
    return [f"{s.median:.3f}", s.iqr(".3f"), f"{sum(fastest_b) / sum(fastest_a):.3f}", str(s.n)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("a", help=f"a git revision, or {WORKTREE} for src/ as it is")
    parser.add_argument("b", help="the same, for the version compared with A")
    parser.add_argument("--rounds", type=int, default=40, help="rounds over the chunks (40)")
    parser.add_argument(
        "--build", action="store_true",
        help="build each revision's compiled parser (Cython and a C compiler)",
    )  # fmt: skip
    parser.add_argument(
        "--subset", action="append", choices=SUBSETS, dest="subsets",
        help="a corpus subset (repeatable); default: all four",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    corpus = build()
    with tempfile.TemporaryDirectory(prefix="urlguard-ab-") as tmp:
        versions = {}
        for label, revision in (("A", args.a), ("B", args.b)):
            name = f"urlguard_ab_{label.lower()}"
            module = load(name, source(revision, Path(tmp, label), args.build))
            versions[label] = module
            print(f"{label} = {revision}: the {implementation(module)} parser")
        a, b = reader(versions["A"]), reader(versions["B"])
        rows = []
        subsets: dict[str, Sequence[bytes]] = {kind: corpus.subset(kind) for kind in KINDS}
        subsets["mixed"] = corpus.targets
        for subset in args.subsets or SUBSETS:
            targets = subsets[subset]
            print(f"  ab: {subset}  ", file=sys.stderr, end="\r", flush=True)
            rows.append([subset, *compare(a, b, targets, args.rounds)])
    print(file=sys.stderr)
    print(
        f"B = {args.b} against A = {args.a}: time per chunk of {CHUNK} targets, "
        f"{args.rounds} rounds; B/A < 1 means B is faster"
    )
    print(table(["subset", "B/A median", "B/A IQR", "B/A of minima", "pairs"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
