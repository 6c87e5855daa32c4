"""Instruction counts under callgrind: a noise-free proxy for the micro and
in-process ratios, for a machine too busy for wall-clock timing.

One worker process per parser (micro) or per framework (in-process) runs
under ``valgrind --tool=callgrind --dump-before=time_sleep``: after set-up
and a warm-up, it calls ``time.sleep(0)`` before each measured phase, so
callgrind writes one dump per phase and each dump holds exactly the
instructions (Ir) of that phase: no start-up, no import, no warm-up. The
collector is off in the worker and ``PYTHONHASHSEED=0``, so a phase
costs the same on every run, whatever else the machine is doing.

Instructions are not time (the cost of one instruction against another, and
of cache misses and mispredicted branches, are not in them), so this part
prints no verdict of its own; it shows what the code asks of the CPU. For
the in-process requests callgrind also simulates the caches and the branch
predictor (``--cache-sim=yes --branch-sim=yes``): inside a framework's
request the guard's code and data are cold, and its misses, which a micro
loop never shows, are a large part of what it costs in time there. They are
summed into KCachegrind's cycle estimate, CEst = Ir + 10 × L1 misses + 100 ×
last-level misses + 10 × mispredicted branches: a model, not a measurement.
valgrind is Debian's package (``apt-get install -y valgrind``); without it
this part says so and is skipped.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .stats import table

ROOT = Path(__file__).resolve().parent.parent
VALGRIND_MISSING = (
    "Instructions: skipped: valgrind is not installed. Install it with "
    "`apt-get install -y valgrind`, then run `python -m bench --part instructions`."
)
SUBSETS = ("mixed", "plain", "encoded", "malformed")
REQUESTS = 200
_EVENTS = re.compile(r"^events: (.+)$", re.MULTILINE)
_TOTALS = re.compile(r"^totals: (.+)$", re.MULTILINE)
# KCachegrind's cycle estimate (no L2 and no global bus events here).
_L1_MISSES = ("I1mr", "D1mr", "D1mw")
_LL_MISSES = ("ILmr", "DLmr", "DLmw")
_MISPREDICTS = ("Bcm", "Bim")


def cycle_estimate(events: dict[str, int]) -> int:
    """Ir + 10 × L1 misses + 100 × last-level misses + 10 × mispredicted branches."""
    return (
        events["Ir"]
        + 10 * sum(events[name] for name in _L1_MISSES)
        + 100 * sum(events[name] for name in _LL_MISSES)
        + 10 * sum(events[name] for name in _MISPREDICTS)
    )


def _phase() -> None:
    """Mark the start of a measured phase: callgrind dumps before each call.
    (No gc.collect() here: it would be counted in the phase before.)"""
    time.sleep(0)


def _worker(args: Sequence[str]) -> None:
    """Set up and warm up, then run one phase per measurement (under callgrind).
    The collector stays off throughout, so no phase pays for a collection."""
    gc.disable()
    kind = args[0]
    if kind == "micro":
        from .corpus import build
        from .micro import parser

        name, passes = args[1], int(args[2])
        subsets = args[3:]
        corpus = build()
        chosen = {
            "mixed": corpus.targets,
            "plain": corpus.subset("plain"),
            "encoded": corpus.subset("encoded"),
            "malformed": corpus.subset("malformed"),
        }
        parse = parser(name)

        def parse_all(targets: Sequence[bytes], times: int) -> None:
            for _ in range(times):
                for raw in targets:
                    try:  # noqa: SIM105 (the same loop as the timed part)
                        parse(raw)
                    except ValueError:
                        pass

        parse_all(corpus.targets, 1)  # warm-up
        for subset in subsets:
            _phase()
            parse_all(chosen[subset], passes)
    elif kind == "inprocess":
        import asyncio

        from .inprocess import LAYERS, TARGETS, Bench

        framework, requests = args[1], int(args[2])
        targets = args[3:]
        loop = asyncio.new_event_loop()
        bench = Bench(framework, loop)
        for layer in LAYERS:
            for target in TARGETS.values():
                bench.batch(layer, target, 50)  # warm-up
        for tname in targets:
            for layer in LAYERS:
                _phase()
                bench.batch(layer, TARGETS[tname], requests)
        loop.close()
    elif kind == "adapters":
        from .adapters import worker

        worker(args[1:], _phase)
    else:
        raise SystemExit(f"unknown worker kind {kind!r}")
    _phase()  # closes the last measured phase


def phases(args: Sequence[str], expected: int, simulate: bool = False) -> list[dict[str, int]]:
    """Run a worker under callgrind; the events of each measured phase, in
    order: ``Ir``, and with ``simulate`` the cache and branch events too."""
    with tempfile.TemporaryDirectory(prefix="urlguard-callgrind-") as tmp:
        out_file = Path(tmp, "callgrind.out")
        simulation = ["--cache-sim=yes", "--branch-sim=yes"] if simulate else []
        argv = [
            "valgrind", "--tool=callgrind", "--dump-before=time_sleep", *simulation,
            "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out_file}",
            sys.executable, "-m", "bench.instructions", "worker", *args,
        ]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=1800, check=False, cwd=ROOT, env=env
        )
        if done.returncode != 0:
            raise RuntimeError(f"callgrind run {list(args)} failed: {done.stderr[-800:]}")
        # Dump k (k = 1, 2, ...) holds what ran before the k-th time.sleep: dump 1
        # is start-up and warm-up, dumps 2..expected+1 the phases.
        dumps = sorted(
            (int(p.name.rsplit(".", 1)[1]), p) for p in Path(tmp).glob("callgrind.out.*")
        )
        counts = []
        for _, path in dumps[1 : expected + 1]:
            text = path.read_text(errors="replace")
            names, totals = _EVENTS.search(text), _TOTALS.search(text)
            if names is None or totals is None:
                raise RuntimeError(f"no events or totals in {path.name}")
            values = [int(value) for value in totals.group(1).split()]
            counts.append(dict(zip(names.group(1).split(), values, strict=True)))
    if len(counts) != expected:
        raise RuntimeError(
            f"callgrind wrote {len(dumps)} dumps for {list(args)}, expected {expected + 1}: "
            "does this Python build keep the time_sleep symbol?"
        )
    return counts


def run(quick: bool, out: Callable[[str], None] = print) -> None:
    """Print Ir per target (micro), and per request (in-process) with the
    simulated misses, mispredicts and cycle estimate."""
    if shutil.which("valgrind") is None:
        out(VALGRIND_MISSING)
        return
    from .corpus import build
    from .inprocess import LAYERS, TARGETS
    from .micro import NAMES, contenders

    corpus = build()
    sizes = {"mixed": len(corpus.targets), "plain": corpus.count("plain")}
    sizes["encoded"] = corpus.count("encoded")
    sizes["malformed"] = corpus.count("malformed")
    missing: list[str] = []
    if quick:
        names = ["naive", "urlguard"]
    else:
        found, missing = contenders()  # the micro part's, with its notes on what is missing
        names = [name for name in NAMES if name in found]
    subsets = ("plain",) if quick else SUBSETS
    passes = 1 if quick else 2
    per_target: dict[tuple[str, str], float] = {}
    for name in names:
        print(f"  instructions: {name}  ", file=sys.stderr, end="\r", flush=True)
        counts = phases(["micro", name, str(passes), *subsets], len(subsets))
        for subset, count in zip(subsets, counts, strict=True):
            per_target[name, subset] = count["Ir"] / (passes * sizes[subset])
    rows = [
        [subset, name, f"{per_target[name, subset]:,.0f}",
         f"{per_target[name, subset] / per_target['naive', subset]:.3f}"]
        for subset in subsets
        for name in names
    ]  # fmt: skip
    out(f"Instructions (callgrind Ir) per target, {passes} pass(es) after a warm-up pass")
    out(table(["subset", "parser", "Ir", "×naive"], rows))
    for note in missing:
        out(note)
    out("")

    requests = 20 if quick else REQUESTS
    frameworks = ("starlette",) if quick else ("starlette", "flask")
    targets = ("plain",) if quick else tuple(TARGETS)
    rows = []
    for framework in frameworks:
        print(f"  instructions: {framework}  ", file=sys.stderr, end="\r", flush=True)
        expected = len(LAYERS) * len(targets)
        counts = phases(["inprocess", framework, str(requests), *targets], expected, simulate=True)
        for i, tname in enumerate(targets):
            per_layer = dict(
                zip(LAYERS, counts[len(LAYERS) * i : len(LAYERS) * (i + 1)], strict=True)
            )
            bare = per_layer["bare"]
            for layer in LAYERS:
                events = per_layer[layer]
                ir, cest = events["Ir"] / requests, cycle_estimate(events) / requests
                l1 = sum(events[name] - bare[name] for name in _L1_MISSES) / requests
                branches = sum(events[name] - bare[name] for name in _MISPREDICTS) / requests
                rows.append([
                    framework, tname, layer, f"{ir:,.0f}", f"{ir / bare['Ir'] * requests:.3f}",
                    f"{l1:+,.0f}", f"{branches:+,.0f}", f"{cest:,.0f}",
                    f"{cest / cycle_estimate(bare) * requests:.3f}",
                ])  # fmt: skip
    print(file=sys.stderr)
    out(
        f"Instructions (callgrind Ir) per in-process request, {requests} requests after a "
        "warm-up, with simulated L1 misses and mispredicted branches (against bare) and "
        "CEst = Ir + 10 × L1 misses + 100 × last-level misses + 10 × mispredicts"
    )
    out(
        table(
            ["app", "target", "layer", "Ir", "×bare", "L1 miss", "mispredict", "CEst", "×bare"],
            rows,
        )
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        _worker(sys.argv[2:])
    else:
        run(quick="--quick" in sys.argv)
