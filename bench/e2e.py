"""End-to-end part: uvicorn on 127.0.0.1 under wrk, bare against guarded.

uvicorn (httptools, one worker, no access log) serves the Starlette app bare
and guarded (on the parser chosen at import), each in its own process group
for the whole part; each must first answer 200 to both targets (raw bytes
over a socket), and the guard 400 to a hostile one. In each round (the
first a warm-up) each server gets one wrk run per target, in an order that
changes from round to round; guarded/bare is taken within the round. With
two CPUs and ``taskset`` the servers run on one CPU and wrk on the other,
so they never share a core. Non-2xx answers and socket errors are reported.
Without wrk this part says so and is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from .inprocess import HOSTILE, TARGETS
from .parsers import chosen
from .summary import Results
from .timing import collect, in_turn, markdown, min_max, ratios

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_apps"))
import rawhttp  # noqa: E402  (example_apps/rawhttp.py: free_port, running, request)

WRK_MISSING = "End to end: skipped: wrk is not installed (apt-get install -y wrk)."
LAYERS = ("bare", "guarded")
_RPS = re.compile(r"^Requests/sec:\s+([0-9.]+)", re.MULTILINE)
_FAULTS = re.compile(r"Non-2xx or 3xx responses: [0-9]+|Socket errors: .*")


def cpus() -> tuple[list[str], list[str]]:
    """``taskset`` prefixes for the servers and for wrk: a CPU each, if there are two."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if shutil.which("taskset") is None or len(allowed) < 2:
        return [], []
    return ["taskset", "-c", str(allowed[0])], ["taskset", "-c", str(allowed[1])]


def wrk(port: int, target: bytes, seconds: float, pin: list[str]) -> tuple[float, list[str]]:
    """One wrk run (two connections, one thread), bounded in time: requests per
    second, and the faults it reported."""
    url = f"http://127.0.0.1:{port}{target.decode('ascii')}"
    argv = [*pin, "wrk", "-t1", "-c2", f"-d{seconds:g}s", "--timeout", "5s", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30, check=False)
    rate = _RPS.search(done.stdout)
    if done.returncode != 0 or rate is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout[-300:]}{done.stderr}")
    return float(rate.group(1)), _FAULTS.findall(done.stdout)


def run(rounds: int, seconds: float, results: Results, out: Callable[[str], None] = print) -> None:
    """Alternate wrk runs over the servers and both targets; print one table."""
    if shutil.which("wrk") is None:
        out(WRK_MISSING)
        return
    server_pin, wrk_pin = cpus()
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    faults: list[str] = []
    with ExitStack() as servers:
        ports = {}
        for layer in LAYERS:
            ports[layer] = port = rawhttp.free_port()
            app = f"bench.apps.starlette_hello:{layer}"
            argv = [*server_pin, sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1"]
            argv += ["--port", str(port), "--http", "httptools", "--no-access-log"]
            servers.enter_context(rawhttp.running(argv, port, env=env, cwd=ROOT))
            statuses = [rawhttp.request(port, t).status for t in (*TARGETS.values(), HOSTILE)]
            if statuses[:-1] != [200, 200] or (statuses[-1] == 400) != (layer != "bare"):
                raise RuntimeError(f"uvicorn {layer} answered {statuses}")

        def measure(round_no: int) -> dict[tuple[str, str], float]:
            rates = {}
            for tname, target in TARGETS.items():
                for layer in in_turn(LAYERS, round_no):
                    rates[tname, layer], found = wrk(ports[layer], target, seconds, wrk_pin)
                    faults.extend(f"round {round_no}, {layer}, {tname}: {f}" for f in found)
            return rates

        samples = collect(measure, rounds, "e2e")
    rows = []
    for (tname, layer), rates in samples.items():
        spread = min_max(ratios(rates, samples[tname, "bare"]))
        rows.append([tname, layer, min_max(rates).text(), spread.text()])
        if layer == "guarded":
            results[f"uvicorn {tname}", chosen()] = spread
    cpu = f"servers on CPU {server_pin[-1]}, wrk on {wrk_pin[-1]}" if server_pin else "not pinned"
    out(f"End to end: uvicorn, {rounds} wrk rounds of {seconds:g} s, {cpu}: median (min–max)")
    out(markdown(["target", "layer", "requests/s", "× bare"], rows))
    for fault in faults:
        out(f"warning: {fault}")
