"""Instructions part: the micro and in-process ratios in instructions (callgrind's
Ir), which do not move with whatever else the machine does.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import ROOT, missing, python_path
from .summary import Results
from .timing import markdown

_TOTALS = re.compile(r"^totals: ([0-9]+)", re.MULTILINE)


def _worker(mode: str, phases_file: str, requests: int, floor_path: str) -> None:
    """Set up, warm up, write each phase's label and size, then run each after a
    ``time.sleep(0)``, where callgrind dumps. Mode ``full`` counts what the timed
    parts time; ``revision`` (bench.ab), what every revision answers;
    ``segments``, the segments part's cases."""
    gc.disable()
    if mode == "segments":
        _run_phases(phases_file, _segments_runs(requests))
        return
    import urlguard

    from .corpus import build
    from .inprocess import REVISION, TARGETS, InProcess, layers
    from .micro import Micro, contenders, naive, subsets
    from .parsers import reader

    revision = mode == "revision"
    if revision:
        parsers = {"naive": naive, "urlguard": reader(urlguard)}
    else:
        parsers = contenders(Path(floor_path) if floor_path else None)
    micro = Micro(parsers, build())
    bench = InProcess(REVISION if revision else layers())
    runs: list[tuple[str, int, Callable[[], int]]] = [
        (f"micro {subset} {name}", len(targets), functools.partial(micro.pass_time, targets, name))
        for subset, targets in subsets(build()).items()
        for name in parsers
    ]
    runs += [
        (f"{f.name} {tname} {layer}", requests, functools.partial(f.batch, layer, target, requests))
        for f in bench.frameworks
        for tname, target in TARGETS.items()
        for layer in f.layers
    ]
    _run_phases(phases_file, runs)


def _segments_runs(requests: int) -> list[tuple[str, int, Callable[[], int]]]:
    """The segments part's cases: every layer of both frameworks on each target."""
    from .inprocess import InProcess
    from .segments import LAYERS, cases, check

    bench = InProcess(LAYERS, cases(), check)
    return [
        (f"{f.name} {tname} {layer}", requests, functools.partial(f.batch, layer, target, requests))
        for f in bench.frameworks
        for tname, case in bench.cases.items()
        for layer, target in case.items()
    ]


def _run_phases(phases_file: str, runs: list[tuple[str, int, Callable[[], int]]]) -> None:
    for _, _, run in runs:
        run()  # warm-up
    Path(phases_file).write_text(json.dumps([[label, units] for label, units, _ in runs]))
    for _, _, run in runs:
        time.sleep(0)  # callgrind dumps here: the phase before ends
        run()
    time.sleep(0)


def count(mode: str, requests: int, pythonpath: str = "", floor_path: str = "") -> dict[str, float]:
    """Run a worker under callgrind (``pythonpath`` first on its path, and
    ``PYTHONHASHSEED=0``): label -> instructions per target or request of that phase."""
    with tempfile.TemporaryDirectory(prefix="urlguard-callgrind-") as folder:
        phases_file = Path(folder, "phases.json")
        argv = [
            "valgrind", "--tool=callgrind", "--dump-before=time_sleep",
            f"--callgrind-out-file={folder}/callgrind.out", sys.executable, "-m",
            "bench.instructions", mode, str(phases_file), str(requests), floor_path,
        ]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=python_path(pythonpath))
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=1800, check=False, cwd=ROOT, env=env
        )
        if done.returncode != 0:
            raise RuntimeError(f"callgrind failed: {done.stderr[-800:]}")
        phases = json.loads(phases_file.read_text())
        # Dump k holds what ran before the k-th time.sleep: dump 1 is the set-up.
        dumps = sorted(Path(folder).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        totals = [int(_TOTALS.findall(p.read_text(errors="replace"))[0]) for p in dumps[1:]]
    if len(totals) != len(phases):
        raise RuntimeError(f"{len(totals)} dumps for {len(phases)} phases: no time_sleep symbol?")
    return {label: total / units for (label, units), total in zip(phases, totals, strict=True)}


def run(quick: bool, results: Results) -> None:
    """Count every phase once; print Ir per target or request and the ratios."""
    if missing("valgrind", "Instructions"):
        return
    from . import floor
    from .micro import SUMMARY_ROWS

    print("  instructions: under callgrind", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="urlguard-floor-") as folder:
        floor_path = str(floor.build(Path(folder)) or "")
        counts = count("full", 20 if quick else 200, floor_path=floor_path)
    rows = []
    for label, ir in counts.items():
        kind, tname, layer = label.split(" ", 2)
        base = counts[f"{kind} {tname} {'naive' if kind == 'micro' else 'bare'}"]
        rows.append([label, f"{ir:,.0f}", f"{ir / base:.3f}"])
        if layer.startswith("guarded-"):
            results[f"{kind} {tname}", layer.removeprefix("guarded-") + " Ir"] = ir / base
    for row, (subset, denominator) in SUMMARY_ROWS.items():
        for name in ("compiled", "reference"):
            top, bottom = (counts.get(f"micro {subset} {c}") for c in (name, denominator))
            if top and bottom:
                results[row, f"{name} Ir"] = top / bottom
    print("Instructions (callgrind Ir) per target or request, and the ratio to naive or bare")
    print(markdown(["phase", "Ir", "× naive or bare"], rows))


if __name__ == "__main__":  # the worker: MODE PHASES_FILE REQUESTS FLOOR_PATH
    _worker(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
