"""No leak in the compiled parser: memory stays flat over a million parses,
and over a million decisions of its decider.

The compiled module builds every result object itself (strings, tuples, the
Target, the InvalidTarget) and owns a scratch buffer on the heap for long
targets: a missing decref or free shows as memory that grows with the
number of parses. A million parses of plain, encoded, long and hostile
targets, under several policies and through both entries, must leave the
process's resident memory and the number of objects the collector tracks
where a first warm-up round left them. The same holds for the guard's
decider in C, which takes a mount point off, picks a route's policy, stores
the target or hands a violation back to the Python decision.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from logging import DEBUG
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import implementation_module
from urlguard import InvalidTarget, Policy, Target
from urlguard._guard import Guard, Request

TARGETS = [
    b"/products/classic-red?color=beige&size=l&ref=home",
    b"/wiki/Caf%C3%A9?q=caf%C3%A9+au+lait&lang=pt",
    b"http://Example.com:8080/a/b?x=1",
    b"/files/a%2Fb;p=1/c?d",
    b"/" + b"a%C3%A9" * 200 + b"?q=" + b"%E4%B8%AD" * 100,  # past the stack buffer
    b"/a%zz",
    b"/search?q=%FF%FE",
    b"/static//admin",
    b"/users/42/docs/..%2f..%2fetc/passwd",
    b"/a#frag",
    b"/%E2%80%AE",
    b"\x00\xff" * 40,
    b"http://h%2Fx/",
    b"/" + b"a/" * 200,
    b"/a?" + b"x&" * 1200,
    # More query names than the compiled parser's table of names holds: some
    # are replaced in it, and released, on every round.
    b"/?" + b"&".join(b"name%d=v" % k for k in range(300)),
]
POLICIES = [
    Policy(),
    Policy.browser(),
    Policy(encoded_slash="keep", path_params="split"),
    Policy(allowed_ranges=[(0x20, 0x7E)]),
]
ROUNDS = 1_000_000 // (len(TARGETS) * len(POLICIES) * 2)


def _rss_bytes() -> int:
    """Resident memory now (not the peak): the second field of /proc/self/statm."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096


def _parse_all(parser: ModuleType, rounds: int) -> int:
    parse: Callable[..., Target] = parser.parse_target
    split: Callable[..., Target] = parser.parse_split_target
    parsed = 0
    for _ in range(rounds):
        for policy in POLICIES:
            for raw in TARGETS:
                path, _, query = raw.partition(b"?")
                for call in (parse, split):
                    try:
                        target = call(raw, policy) if call is parse else call(path, query, policy)
                    except InvalidTarget:
                        continue
                    finally:
                        parsed += 1
                    # Pieces may be made when first read: read them too.
                    target.segments, target.query  # noqa: B018
    return parsed


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_a_million_parses_leave_memory_flat() -> None:
    compiled = implementation_module("compiled")
    assert_flat(lambda rounds: _parse_all(compiled, rounds), ROUNDS)


def assert_flat(run: Callable[[int], int], rounds: int) -> None:
    """``run(rounds)`` (which says how many calls it made) after a tenth of it
    as a warm-up: a million calls, leaving RSS and the tracked objects flat."""
    run(rounds // 10)
    gc.collect()
    rss_before, objects_before = _rss_bytes(), len(gc.get_objects())
    calls = run(rounds)
    gc.collect()
    rss_after, objects_after = _rss_bytes(), len(gc.get_objects())
    assert calls >= 1_000_000 * 0.99
    # A leak of one small object per call would be tens of megabytes.
    assert rss_after - rss_before < 4 * 1024 * 1024, (rss_before, rss_after)
    assert objects_after - objects_before < 1000, (objects_before, objects_after)


# Both decisions: accepted and stored, or handed back (counted, answered or
# passed on in report-only mode); no log line (DEBUG is below the logger's
# level; captured lines would grow the memory measured).
GUARD_OPTIONS: list[dict[str, Any]] = [
    {"routes": {"/files/": {"encoded_slash": "keep"}}},
    {"mode": "report"},
]
MOUNTS = [None, b"/mnt"]


def _decide_all(guards: list[Guard[dict[str, object], Callable[..., object]]], rounds: int) -> int:
    deciders = [guard.decider() for guard in guards]
    decided = 0
    for _ in range(rounds):
        for decider in deciders:
            for raw in TARGETS:
                path, _, query = raw.partition(b"?")
                for mount in MOUNTS:
                    for asked in ((mount or b"") + raw, None), ((mount or b"") + path, query):
                        decider.decide(asked[0], asked[1], mount, {})
                        decided += 1
    return decided


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_a_million_decisions_leave_memory_flat() -> None:
    implementation_module("compiled")  # skipped (or failed, in CI) without it
    guards: list[Guard[dict[str, object], Callable[..., object]]] = [
        Guard("leak", "ASGI", lambda carrier: Request("GET"), "-", log_level=DEBUG, **options)
        for options in GUARD_OPTIONS
    ]
    assert all(type(guard.decider()).__module__ == "urlguard._parser_c" for guard in guards)
    rounds = 1_000_000 // (len(guards) * len(TARGETS) * len(MOUNTS) * 2)
    assert_flat(lambda rounds: _decide_all(guards, rounds), rounds)
