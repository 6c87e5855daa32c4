"""End-to-end benchmark: real servers on 127.0.0.1 under wrk.

uvicorn (``--http httptools``, one worker, ``--no-access-log``) serves the
Starlette app and gunicorn (one sync worker) the Flask app, each bare and
guarded; all four run for the whole part, each in its own process group,
and are stopped (SIGTERM, then SIGKILL) when it ends, also on error or
Ctrl-C. Rounds alternate: in each round, for each target, every server gets
one wrk run of the same length, in a rotated order; the ratio guarded/bare
is taken within each round and summarised over rounds.

With two CPUs or more (and ``taskset``, from util-linux), the servers run on
one CPU and wrk on another. A one-worker server and wrk each keep a core
busy; left to the scheduler, on a 2-core machine they can meet on one core
for parts of a run (seen here: uvicorn bare served 6,544 req/s pinned,
5,308 not, medians of 12 runs of 2 s each).

Before any timing each server must answer 200 for both targets (sent byte
for byte over a raw socket), and the guarded ones 400 for a hostile target.
A wrk run that saw a non-2xx answer or a socket error is reported, not hidden.

wrk is Debian's package (``apt-get install -y wrk``); without it this part
says so and is skipped, the rest of the suite runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .inprocess import HOSTILE, TARGETS
from .stats import Check, Goal, ratios, rotated, summarize, table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_apps"))
import rawhttp  # noqa: E402  (example_apps/rawhttp.py: free_port, running, request)

WRK_MISSING = (
    "End to end: skipped: wrk is not installed. "
    "Install it with `apt-get install -y wrk` (Debian's package), "
    "then run `python -m bench --part e2e`."
)

GOALS = {
    "plain": Goal("end to end: uvicorn plain, guarded/bare req/s", 0.98, at_most=False),
    "encoded": Goal("end to end: uvicorn encoded, guarded/bare req/s", 0.98, at_most=False),
}


@dataclass(frozen=True)
class Variant:
    """One server process to run."""

    name: str  # e.g. "uvicorn bare"
    server: str  # "uvicorn" | "gunicorn"
    layer: str  # "bare" | "guarded"

    def argv(self, port: int) -> list[str]:
        if self.server == "uvicorn":
            return [
                sys.executable, "-m", "uvicorn", f"bench.apps.starlette_hello:{self.layer}",
                "--host", "127.0.0.1", "--port", str(port), "--http", "httptools",
                "--workers", "1", "--no-access-log", "--log-level", "warning",
            ]  # fmt: skip
        return [
            sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "sync",
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning",
            f"bench.apps.flask_hello:{self.layer}",
        ]  # fmt: skip


VARIANTS = (
    Variant("uvicorn bare", "uvicorn", "bare"),
    Variant("uvicorn guarded", "uvicorn", "guarded"),
    Variant("gunicorn bare", "gunicorn", "bare"),
    Variant("gunicorn guarded", "gunicorn", "guarded"),
)


@dataclass(frozen=True)
class WrkRun:
    """What one wrk run reported."""

    requests_per_second: float
    requests: int
    non_2xx: int
    socket_errors: int


_RPS = re.compile(r"^Requests/sec:\s+([0-9.]+)", re.MULTILINE)
_TOTAL = re.compile(r"^\s*([0-9]+) requests in ", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+([0-9]+)")
_SOCKET_ERRORS = re.compile(
    r"Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)"
)


def parse_wrk(output: str) -> WrkRun:
    """The numbers of one wrk report; raises ``ValueError`` when there are none."""
    rps = _RPS.search(output)
    total = _TOTAL.search(output)
    if rps is None or total is None:
        raise ValueError(f"wrk printed no result:\n{output[-500:]}")
    non_2xx = _NON_2XX.search(output)
    errors = _SOCKET_ERRORS.search(output)
    return WrkRun(
        requests_per_second=float(rps.group(1)),
        requests=int(total.group(1)),
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(g) for g in errors.groups()) if errors else 0,
    )


def cpu_split() -> tuple[int, int] | None:
    """(CPU for the servers, CPU for wrk), two this process may run on; ``None``
    with fewer than two or without ``taskset``: then the scheduler places them."""
    if shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else None


def pinned(argv: list[str], cpu: int | None) -> list[str]:
    """``argv`` run on ``cpu`` alone (its children too), or as it is for ``None``."""
    return argv if cpu is None else ["taskset", "-c", str(cpu), *argv]


def wrk(
    port: int,
    target: bytes,
    seconds: float,
    connections: int,
    threads: int,
    cpu: int | None = None,
) -> WrkRun:
    """One wrk run against ``http://127.0.0.1:port`` + ``target``; bounded in time."""
    url = f"http://127.0.0.1:{port}{target.decode('ascii')}"
    argv = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "5s", url,
    ]  # fmt: skip
    done = subprocess.run(
        pinned(argv, cpu), capture_output=True, text=True, timeout=seconds + 30, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk exited with {done.returncode}: {done.stderr[-500:]}")
    return parse_wrk(done.stdout)


@contextmanager
def servers(cpu: int | None = None) -> Iterator[dict[str, int]]:
    """Start every variant (on ``cpu``, if given); yield name -> port; stop them
    all on the way out."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with ExitStack() as stack:
        ports: dict[str, int] = {}
        for variant in VARIANTS:
            port = rawhttp.free_port()
            argv = pinned(variant.argv(port), cpu)
            stack.enter_context(rawhttp.running(argv, port, env=env, cwd=ROOT))
            ports[variant.name] = port
        yield ports


def verify(ports: dict[str, int]) -> None:
    """Every server answers 200 for both targets; only the guarded ones 400 for a hostile one."""
    for variant in VARIANTS:
        port = ports[variant.name]
        for name, target in TARGETS.items():
            response = rawhttp.request(port, target)
            if response.status != 200:
                raise RuntimeError(f"{variant.name}: {name} target got {response.status}")
        hostile = rawhttp.request(port, HOSTILE).status
        if (hostile == 400) != (variant.layer == "guarded"):
            raise RuntimeError(f"{variant.name}: hostile target got {hostile}")


def run(
    rounds: int,
    seconds: float,
    connections: int,
    threads: int,
    out: Callable[[str], None] = print,
) -> list[Check]:
    """Alternate wrk runs over the four servers and both targets; print one table."""
    if shutil.which("wrk") is None:
        out(WRK_MISSING)
        return []
    samples: dict[tuple[str, str], list[float]] = {}
    flagged: list[str] = []
    split = cpu_split()
    server_cpu, wrk_cpu = split if split else (None, None)
    with servers(server_cpu) as ports:
        verify(ports)
        names = [v.name for v in VARIANTS]
        for name in names:  # warm up every server and the page cache, 1 s each
            wrk(ports[name], TARGETS["plain"], 1, connections, threads, wrk_cpu)
        for round_no in range(rounds):
            for tname, target in TARGETS.items():
                for name in rotated(names, round_no):
                    result = wrk(ports[name], target, seconds, connections, threads, wrk_cpu)
                    if result.non_2xx or result.socket_errors:
                        flagged.append(
                            f"round {round_no + 1} {name} {tname}: {result.non_2xx} non-2xx, "
                            f"{result.socket_errors} socket errors of {result.requests}"
                        )
                    samples.setdefault((name, tname), []).append(result.requests_per_second)
            print(f"  e2e round {round_no + 1}/{rounds}", file=sys.stderr, end="\r", flush=True)
        print(file=sys.stderr)

    rows: list[list[str]] = []
    checks: list[Check] = []
    for server in ("uvicorn", "gunicorn"):
        for tname in TARGETS:
            bare = samples[f"{server} bare", tname]
            for layer in ("bare", "guarded"):
                values = samples[f"{server} {layer}", tname]
                s = summarize(values)
                r = summarize(ratios(values, bare))
                goal = GOALS[tname] if (server, layer) == ("uvicorn", "guarded") else None
                rows.append([
                    server, tname, layer, f"{s.median:,.0f}", s.iqr(",.0f"), s.range(",.0f"),
                    f"{r.median:.3f}", r.range(".3f"),
                    f"{goal.text()} {goal.verdict(r.median)}" if goal else "",
                ])  # fmt: skip
                if goal:
                    checks.append(Check(goal, r.median, f"min–max {r.range('.3f')}"))
    out(
        f"End to end: req/s under wrk (-t{threads} -c{connections}, {seconds:g} s per run), "
        f"median of {rounds} alternating rounds (IQR, min–max); ratio = guarded/bare within "
        "each round; "
        + (
            f"servers on CPU {server_cpu}, wrk on CPU {wrk_cpu}"
            if split
            else "not pinned (fewer than two CPUs, or no taskset)"
        )
    )
    headers = ["server", "target", "layer", "req/s", "IQR", "min–max", "×bare", "×bare min–max"]
    headers.append("goal")
    out(table(headers, rows))
    for line in flagged:
        out(f"warning: {line}")
    return checks
