"""Instructions part: the micro and in-process ratios in instructions
(callgrind's Ir), which do not move with whatever else the machine does.

A worker runs under ``valgrind --tool=callgrind --dump-before=time_sleep``:
after set-up and a warm-up it calls ``time.sleep(0)`` before each phase, so
each dump holds one phase's instructions and nothing else. The collector is
off and ``PYTHONHASHSEED=0``: a phase counts the same on every run. Mode
``full`` measures what the timed parts measure; ``revision`` (for bench.ab)
what every revision answers: naive against its parser, bare against its
guard. Without valgrind this part says so and is skipped.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .summary import Results
from .timing import markdown

ROOT = Path(__file__).resolve().parent.parent
VALGRIND_MISSING = "Instructions: skipped: valgrind is not installed (apt-get install -y valgrind)."
_TOTALS = re.compile(r"^totals: ([0-9]+)", re.MULTILINE)


def _worker(mode: str, phases_file: str, requests: int, floor_path: str) -> None:
    """Set up, warm up, write each phase's label and size, then run them."""
    gc.disable()
    import urlguard

    from .corpus import build
    from .inprocess import TARGETS, InProcess
    from .micro import contenders, naive, pass_time, subsets
    from .parsers import available, reader

    if mode == "full":
        parsers = contenders(Path(floor_path) if floor_path else None)
        bench = InProcess(dict(available()), allow_list=True)
    else:  # a revision: only what every revision's package answers
        parsers = {"naive": naive, "urlguard": reader(urlguard)}
        bench = InProcess({"urlguard": None}, noop=False)
    runs: list[tuple[str, int, Callable[[], int]]] = [
        (f"micro {subset} {name}", len(targets), functools.partial(pass_time, parse, targets))
        for subset, targets in subsets(build()).items()
        for name, parse in parsers.items()
    ]
    runs += [
        (f"{f.name} {tname} {layer}", requests, functools.partial(f.batch, layer, target, requests))
        for f in bench.frameworks
        for tname, target in TARGETS.items()
        for layer in f.layers
    ]
    for _, _, run in runs:
        run()  # warm-up
    Path(phases_file).write_text(json.dumps([[label, units] for label, units, _ in runs]))
    for _, _, run in runs:
        time.sleep(0)  # callgrind dumps here: the phase before ends
        run()
    time.sleep(0)


def count(mode: str, requests: int, pythonpath: str = "", floor_path: str = "") -> dict[str, float]:
    """Run a worker under callgrind: label -> instructions per target or
    request of that phase. ``pythonpath`` comes first on the worker's path (a
    revision's src, for bench.ab)."""
    with tempfile.TemporaryDirectory(prefix="urlguard-callgrind-") as folder:
        phases_file = Path(folder, "phases.json")
        argv = [
            "valgrind", "--tool=callgrind", "--dump-before=time_sleep",
            f"--callgrind-out-file={folder}/callgrind.out", sys.executable, "-m",
            "bench.instructions", mode, str(phases_file), str(requests), floor_path,
        ]  # fmt: skip
        path = os.pathsep.join(filter(None, [pythonpath, str(ROOT), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=path)
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


def run(quick: bool, results: Results, out: Callable[[str], None] = print) -> None:
    """Count every phase once; print Ir per target or request and the ratios."""
    if shutil.which("valgrind") is None:
        out(VALGRIND_MISSING)
        return
    from . import floor
    from .micro import SUMMARY_ROWS

    print("  instructions: under callgrind", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="urlguard-floor-") as folder:
        floor_path = str(floor.try_build(Path(folder), out) or "")
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
    out("Instructions (callgrind Ir) per target or request, and the ratio to naive or bare")
    out(markdown(["phase", "Ir", "× naive or bare"], rows))


if __name__ == "__main__":  # the worker: MODE PHASES_FILE REQUESTS FLOOR_PATH
    _worker(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
