"""Bounded load with hostile traffic: real servers, keep-alive, raw targets.

Run by ``tox -e load`` (``pytest loadtest -s``), never by the default test
run. For each server: start it on 127.0.0.1 (``example_apps/rawhttp.py``),
warm it up with the traffic mix, note the worker's resident memory, send the
mix for ``URLGUARD_LOAD_SECONDS`` (20) seconds over
``URLGUARD_LOAD_CONNECTIONS`` (4) keep-alive connections, then assert:

* no 5xx at all;
* every answer is the one its case expects from this server (the rule code
  in urlguard's 400, the decoded segments in a 200);
* no connection dropped, other than closes after the server's own refusals;
* the worker's VmRSS at the end is within ``RSS_MARGIN_KIB`` of its value
  after warm-up (a leak per request would show over ~10^5 requests).

A summary per server is printed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from loadgen import Tally, run
from traffic import CASES

import rawhttp

P = pytest.param
ROOT = Path(__file__).resolve().parent.parent
APPS = str(ROOT / "example_apps")
SECONDS = float(os.environ.get("URLGUARD_LOAD_SECONDS", "20"))
WARMUP_SECONDS = float(os.environ.get("URLGUARD_LOAD_WARMUP", "5"))
CONNECTIONS = int(os.environ.get("URLGUARD_LOAD_CONNECTIONS", "4"))
MAX_REQUESTS = 500_000
# Growth allowed between the end of the warm-up and the end of the run.
RSS_MARGIN_KIB = int(os.environ.get("URLGUARD_LOAD_RSS_MARGIN_KIB", str(4 * 1024)))
# Fewer answers than this in a run means the run proved nothing.
MIN_REQUESTS = int(SECONDS * 50)


def uvicorn(http: str) -> list[str]:
    return [
        *(sys.executable, "-m", "uvicorn", "--app-dir", APPS, "starlette_app:app"),
        *("--host", "127.0.0.1", "--http", http, "--no-access-log", "--log-level", "warning"),
        "--port",
    ]


GUNICORN = [
    *(sys.executable, "-m", "gunicorn", "--chdir", APPS, "flask_app:app"),
    *("--workers", "1", "--worker-class", "gthread", "--threads", "4", "--keep-alive", "10"),
    *("--log-level", "warning", "--bind"),
]

SERVERS = [
    P("uvicorn-httptools", uvicorn("httptools"), id="uvicorn-httptools+starlette"),
    P("uvicorn-h11", uvicorn("h11"), id="uvicorn-h11+starlette"),
    P("gunicorn", GUNICORN, id="gunicorn-gthread+flask"),
]


def rss_kib(pid: int) -> int:
    """VmRSS of a process, in KiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def worker_pid(server: rawhttp.Server, name: str) -> int:
    """The process that runs the application: uvicorn's own, gunicorn's one worker."""
    pid = server.process.pid
    if not name.startswith("gunicorn"):
        return pid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise AssertionError("gunicorn started no worker within 10 s")


def summary(name: str, tally: Tally, rss_warm: int, rss_end: int) -> str:
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(tally.statuses.items()))
    return (
        f"\n[{name}] {tally.requests} requests in {tally.seconds:.1f} s "
        f"({tally.requests / tally.seconds:.0f}/s) over {CONNECTIONS} keep-alive connections\n"
        f"  statuses: {statuses}\n"
        f"  server refusals: {tally.refusals} (closed after: {tally.refusal_closes}); "
        f"connections opened: {tally.connections_opened}\n"
        f"  unexpected answers or drops: {tally.unexpected_count}\n"
        f"  worker VmRSS: {rss_warm} KiB after warm-up, {rss_end} KiB at the end "
        f"({rss_end - rss_warm:+d} KiB, margin {RSS_MARGIN_KIB} KiB)"
    )


@pytest.mark.parametrize(("name", "argv"), SERVERS)
def test_hostile_load(name: str, argv: list[str]) -> None:
    port = rawhttp.free_port()
    bind = f"127.0.0.1:{port}" if name == "gunicorn" else str(port)
    with rawhttp.running([*argv, bind], port) as server:
        pid = worker_pid(server, name)
        warm = asyncio.run(
            run(
                port,
                name,
                seconds=WARMUP_SECONDS,
                connections=CONNECTIONS,
                max_requests=MAX_REQUESTS,
            )
        )
        rss_warm = rss_kib(pid)
        tally = asyncio.run(
            run(port, name, seconds=SECONDS, connections=CONNECTIONS, max_requests=MAX_REQUESTS)
        )
        rss_end = rss_kib(pid)
        print(summary(name, tally, rss_warm, rss_end))
        assert server.process.poll() is None, server.output()
    assert warm.unexpected_count == 0, warm.unexpected
    assert tally.server_errors == 0, tally.statuses
    assert tally.unexpected_count == 0, tally.unexpected
    assert tally.requests >= MIN_REQUESTS
    assert set(tally.per_case) == {case.name for case in CASES}  # every case was sent
    assert rss_end - rss_warm <= RSS_MARGIN_KIB
