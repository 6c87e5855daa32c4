"""No leak in the compiled parser: memory stays flat over a million parses.

The compiled module builds every result object itself (strings, tuples, its
targets, the InvalidTarget) and owns scratch buffers on the heap for long
targets and many pieces: a missing decref or free shows as memory that
grows with the number of parses. A million parses of plain, encoded, long
and hostile targets, under several policies and through both entries, with
every attribute of each target read, must leave the process's resident
memory and the number of objects the collector tracks where a first warm-up
round left them.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from conftest import implementation_module
from urlguard import InvalidTarget, Policy, Target

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
    b"/" + b"a/" * 200,  # more segments than the spans on the stack
    b"/a?" + b"x&" * 1200,
    b"/?" + b"&".join(b"name%d=v" % k for k in range(300)),  # more pairs than on the stack
    b"/f;p=1;q/x?q=caf%C3%A9&r",
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
                    target.raw_path, target.raw_query, target.params  # noqa: B018
                    target.get("q"), hash(target), repr(target)
    return parsed


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_a_million_parses_leave_memory_flat() -> None:
    compiled = implementation_module("compiled")
    assert_flat(lambda rounds: _parse_all(compiled, rounds), ROUNDS)


def test_policies_made_without_end_are_not_all_kept() -> None:
    """The compiled parser keeps the tables it derives from each policy in
    use, and the policy with them; a process that makes a new policy for
    every call still keeps only a few of them alive."""
    compiled = implementation_module("compiled")
    made = []
    for n in range(1000):
        policy = Policy(max_length=1000 + n)
        assert compiled.parse_target(b"/a/b?c=d", policy).segments == ("a", "b")
        made.append(weakref.ref(policy))
    del policy
    gc.collect()
    assert sum(ref() is not None for ref in made) < 100


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
