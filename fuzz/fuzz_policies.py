"""Differential fuzzing over the policy space: the compiled parser, the pure one, and
the tests' own reading of the rules.

The generators of ``tests/policy_space.py``, driven by a seeded
``random.Random`` instead of Hypothesis and run for millions of inputs:
draw a policy over every switch, then targets made for it, and compare
``parse_target`` and ``parse_split_target`` of the compiled and the pure
parser on everything observable, then the pure one's verdict with that of
``tests/reference_parser.py`` (``three_agree`` there): so every quick path
of the pure parser is held to both. Now and then draw a base policy with
routes and a mount point instead, and compare the decisions of two Guards
that differ only in their parser (``guards_agree``). One process per CPU,
each with its own seed.

    python fuzz/fuzz_policies.py --inputs 10000000
    python fuzz/fuzz_policies.py --seconds 600 --seed 7 --jobs 2

It stops at whichever bound comes first and prints, on its last line, how
many inputs under how many distinct policies were compared. On the first
difference it stops, makes the input (and the policy) as small as still
shows it, prints both, with both verdicts, and exits 1. ``tox -e fuzz``
runs it for a bounded number of inputs.
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import hashlib
import multiprocessing
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

# The compiled parser must be built: there is nothing to compare without it.
import urlguard._url.parser_c
import urlguard._url.parser_py
from conftest import Parser
from policy_space import (
    GuardCase,
    Seeded,
    draw_guard_case,
    draw_policy,
    draw_request_target,
    draw_target,
    guard_tokens,
    guards_agree,
    make_guard,
    three_agree,
    tokens_for,
)
from urlguard import Policy

COMPILED: Final = cast(Parser, urlguard._url.parser_c)
PURE: Final = cast(Parser, urlguard._url.parser_py)

#: Targets per drawn policy: drawing one (a Policy, its patterns compiled,
#: and the tokens made for it) takes about 6 ms of CPU, as long as some forty
#: inputs' comparisons; at 500 targets it is under a tenth of the run.
TARGETS_PER_POLICY: Final = 500
#: One round in this many draws a guard (base policy, routes, mount point).
GUARD_EVERY: Final = 10
REQUESTS_PER_GUARD: Final = 100


@dataclass
class Tally:
    """What one worker compared."""

    targets: int = 0
    requests: int = 0
    guards: int = 0
    #: Digests of the repr of every distinct policy drawn (routes' included).
    policies: set[bytes] = field(default_factory=set)
    failure: str | None = None

    @property
    def inputs(self) -> int:
        return self.targets + self.requests

    def add(self, other: Tally) -> None:
        self.targets += other.targets
        self.requests += other.requests
        self.guards += other.guards
        self.policies |= other.policies
        self.failure = self.failure or other.failure


def digest(policy: Policy) -> bytes:
    return hashlib.blake2b(repr(policy).encode(), digest_size=12).digest()


def difference(check: Callable[[], None]) -> str | None:
    """What ``check`` found: the AssertionError's message (both verdicts),
    the traceback of anything else a parser raised, or None."""
    try:
        check()
    except AssertionError as error:
        return str(error)
    except Exception as error:  # a parser raised what it must not
        return "".join(traceback.format_exception(error, chain=False))
    return None


def smallest_input(raw: bytes, differs: Callable[[bytes], bool]) -> bytes:
    """``raw`` with every chunk dropped that still leaves a difference: chunks
    of halving sizes, and of one to four escapes (three bytes each)."""
    while True:
        before = raw
        halves = {len(raw) >> k for k in range(1, len(raw).bit_length())}
        for size in sorted(halves | {12, 9, 6, 3, 1}, reverse=True):
            at = 0
            while at < len(raw):
                candidate = raw[:at] + raw[at + size :]
                if differs(candidate):
                    raw = candidate
                else:
                    at += 1 if size % 3 == 0 else size  # escapes start anywhere
        if raw == before:
            return raw


CHARACTER_SETS: Final = ("raw_path_extra", "raw_query_extra", "allow_chars", "query_allow_chars")


def simpler_policies(policy: Policy) -> Iterator[Policy]:
    """``policy`` with one switch simpler: back to ``Policy()``'s, or with
    one character or one range fewer."""
    default = Policy()
    for name in Policy.FIELDS:
        value = getattr(policy, name)
        changes: list[object] = []
        if value != getattr(default, name):
            changes.append(getattr(default, name))
        if name in CHARACTER_SETS and len(value) > 1:
            changes += [value[:k] + value[k + 1 :] for k in range(len(value))]
        if name == "allowed_ranges" and value is not None and len(value) > 1:
            changes += [value[:k] + value[k + 1 :] for k in range(len(value))]
        for change in changes:
            try:
                yield policy.replace(**{name: change})
            except re.error:  # ranges that allow nothing (see test_policy_space.buildable)
                continue


def simplest_policy(policy: Policy, differs: Callable[[Policy], bool]) -> Policy:
    """``policy`` made simpler, one switch at a time, while a difference stays."""
    while True:
        simpler = next((p for p in simpler_policies(policy) if differs(p)), None)
        if simpler is None:
            return policy
        policy = simpler


def report_parsers(raw: bytes, policy: Policy, found: str) -> str:
    """The difference as found, then with the input and the policy made as
    small as still shows it, with both verdicts."""
    report = f"found: input {raw!r}\npolicy {policy!r}\n{found}\n"

    def check(r: bytes, p: Policy) -> str | None:
        return difference(lambda: three_agree(COMPILED, PURE, r, p))

    def differs_on(r: bytes, p: Policy) -> bool:
        return check(r, p) is not None

    def differs_under(p: Policy, r: bytes) -> bool:
        return check(r, p) is not None

    if check(raw, policy) is None:
        return report + "(no difference on its own: it depends on what was parsed before)"
    for _ in range(3):  # a smaller input may let the policy shrink further, and back
        policy = simplest_policy(policy, functools.partial(differs_on, raw))
        raw = smallest_input(raw, functools.partial(differs_under, policy))
    return report + f"\nsmallest: input {raw!r}\npolicy {policy!r}\n{check(raw, policy)}"


def report_guards(raw: bytes, case: GuardCase, found: str) -> str:
    """The difference as found, then with the input made as small as still shows it."""
    report = f"found: input {raw!r}\nguards {case!r}\n{found}\n"

    def check(r: bytes) -> str | None:
        with_compiled, with_pure = make_guard(case, COMPILED), make_guard(case, PURE)
        return difference(lambda: guards_agree(with_compiled, with_pure, case, r))

    if check(raw) is None:
        return report + "(no difference on its own: it depends on what was decided before)"
    raw = smallest_input(raw, lambda r: check(r) is not None)
    return report + f"\nsmallest: input {raw!r}\n{check(raw)}"


class Flag(Protocol):
    """A ``threading.Event``, or a ``multiprocessing`` one shared by the workers."""

    def is_set(self) -> bool: ...

    def set(self) -> None: ...


class Counts(Protocol):
    """Inputs compared so far, one slot per worker (a shared array between processes)."""

    def __setitem__(self, index: int, value: int, /) -> None: ...

    def __iter__(self) -> Iterator[int]: ...


def run(
    seed: int, inputs: int, deadline: float, stop: Flag, progress: Counts, worker: int
) -> Tally:
    """Compare until ``inputs`` inputs are compared, ``deadline`` (monotonic)
    passes, or ``stop`` is set; stop at the first difference. Worker 0 says
    how far all have come, once a minute."""
    faulthandler.enable()  # a crash in the compiled parser shows the Python frames
    choose = Seeded(seed)
    tally = Tally()
    started = said = time.monotonic()
    round_ = 0
    while tally.inputs < inputs and time.monotonic() < deadline and not stop.is_set():
        round_ += 1
        if round_ % GUARD_EVERY == 0:
            case = draw_guard_case(choose)
            tally.guards += 1
            tally.policies.update(map(digest, case.policies()))
            tokens = guard_tokens(case)
            with_compiled, with_pure = make_guard(case, COMPILED), make_guard(case, PURE)
            for _ in range(REQUESTS_PER_GUARD):
                raw = draw_request_target(choose, case, tokens)
                found = difference(
                    functools.partial(guards_agree, with_compiled, with_pure, case, raw)
                )
                if found is not None:
                    tally.failure = report_guards(raw, case, found)
                    stop.set()
                    return tally
                tally.requests += 1
        else:
            policy = draw_policy(choose)
            tally.policies.add(digest(policy))
            tokens = tokens_for(policy)
            for _ in range(TARGETS_PER_POLICY):
                raw = draw_target(choose, tokens)
                found = difference(functools.partial(three_agree, COMPILED, PURE, raw, policy))
                if found is not None:
                    tally.failure = report_parsers(raw, policy, found)
                    stop.set()
                    return tally
                tally.targets += 1
        progress[worker] = tally.inputs
        if worker == 0 and time.monotonic() - said >= 60:
            said = time.monotonic()
            done = sum(progress)
            print(f"  {done:,} inputs, {done / (said - started):,.0f}/s", flush=True)
    return tally


# What each worker process gets at its start (shared objects cannot be
# pickled into a task, only inherited).
_SHARED: dict[str, Any] = {}


def _share(stop: Flag, progress: Counts) -> None:
    _SHARED.update(stop=stop, progress=progress)


def _run_shared(seed: int, inputs: int, deadline: float, worker: int) -> Tally:
    return run(seed, inputs, deadline, _SHARED["stop"], _SHARED["progress"], worker)


def run_all(seed: int, jobs: int, quota: int, deadline: float) -> Tally | None:
    """Every worker's tally, added up; None if a worker died."""
    if jobs == 1:  # in this process: no pickling, and a debugger works
        return run(seed, quota, deadline, threading.Event(), [0], 0)
    context = multiprocessing.get_context()
    stop, progress = context.Event(), context.Array("q", jobs, lock=False)
    total = Tally()
    with ProcessPoolExecutor(jobs, context, initializer=_share, initargs=(stop, progress)) as pool:
        futures = [pool.submit(_run_shared, seed + k, quota, deadline, k) for k in range(jobs)]
        try:
            for future in futures:
                total.add(future.result())
        except BrokenProcessPool:
            return None
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help="stop after this long")
    parser.add_argument("--inputs", type=int, help="stop after at least this many inputs")
    parser.add_argument("--seed", type=int, help="worker k draws from SEED + k (default: fresh)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: one per CPU)"
    )
    args = parser.parse_args(argv)
    if args.seconds is None and args.inputs is None:
        parser.error("give --seconds, --inputs or both")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    jobs = max(args.jobs, 1)
    quota = -(-args.inputs // jobs) if args.inputs is not None else sys.maxsize
    started = time.monotonic()
    deadline = started + args.seconds if args.seconds is not None else float("inf")
    bounds = [
        f"{args.inputs:,} inputs" if args.inputs else "",
        f"{args.seconds:g} s" if args.seconds else "",
    ]
    print(
        f"fuzz_policies: seed {seed}, {jobs} processes, up to {' or '.join(filter(None, bounds))}",
        flush=True,
    )
    total = run_all(seed, jobs, quota, deadline)
    if total is None:
        seeds = ", ".join(str(seed + k) for k in range(jobs))
        print(
            "a worker died (see the traceback above); replay its draws with "
            f"--jobs 1 --seed S, S in {seeds}",
            file=sys.stderr,
        )
        return 2
    elapsed = time.monotonic() - started
    if total.failure is not None:
        print(f"the parsers differ:\n{total.failure}", file=sys.stderr)
        return 1
    print(
        f"{total.targets:,} targets through parse_target and parse_split_target, "
        f"{total.requests:,} requests through {total.guards:,} pairs of Guards, "
        f"in {elapsed:,.0f} s ({total.inputs / elapsed:,.0f} inputs/s)"
    )
    print(
        f"{total.inputs:,} inputs under {len(total.policies):,} policies: "
        "compiled, pure and the tests' reference agree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
