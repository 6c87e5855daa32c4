"""End-to-end part: the Starlette app under uvicorn (httptools, one worker),
bare and guarded, loaded with wrk in alternating rounds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack

from . import ROOT, missing, python_path
from .inprocess import HOSTILE, TARGETS
from .parsers import chosen
from .summary import Results
from .timing import collect, in_turn, markdown, min_max, ratios

sys.path.insert(0, str(ROOT / "example_apps"))
import rawhttp  # example_apps/rawhttp.py: free_port, running, request

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
    """One wrk run (two connections, one thread): requests per second, and the faults seen."""
    url = f"http://127.0.0.1:{port}{target.decode('ascii')}"
    argv = [*pin, "wrk", "-t1", "-c2", f"-d{seconds:g}s", "--timeout", "5s", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30, check=False)
    rate = _RPS.search(done.stdout)
    if done.returncode != 0 or rate is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout[-300:]}{done.stderr}")
    return float(rate.group(1)), _FAULTS.findall(done.stdout)


def run(rounds: int, seconds: float, results: Results) -> None:
    """Alternate wrk runs over both servers and targets; print one table and wrk's faults."""
    if missing("wrk", "End to end"):
        return
    server_pin, wrk_pin = cpus()
    env = {"PYTHONPATH": python_path()}
    faults: list[str] = []
    with ExitStack() as servers:
        ports = {}
        for layer in LAYERS:
            ports[layer] = port = rawhttp.free_port()
            app = f"bench.apps:starlette_{layer}"
            argv = [*server_pin, sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1"]
            argv += ["--port", str(port), "--http", "httptools", "--no-access-log"]
            servers.enter_context(rawhttp.running(argv, port, env=env, cwd=ROOT))
            # 200 to both targets (raw bytes over a socket); from the guard, 400 to a hostile one.
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
    print(f"End to end: uvicorn, {rounds} wrk rounds of {seconds:g} s, {cpu}: median (min–max)")
    print(markdown(["target", "layer", "requests/s", "× bare"], rows))
    for fault in faults:
        print(f"warning: {fault}")
