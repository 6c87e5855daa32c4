"""The ledger of ``audit --suggest`` keeps served rows waiting and adds them
to their tallies in bulk: over many chunks, before the tallies of a cause
merge, and before the tallies are read. How a log is cut into chunks, and
when the waiting rows are added, must change no tally: the same rows in
the same order give the same evidence, examples and limits, whether each
row comes in a call of its own and is added at once, or thousands wait.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suggest_helpers import HOUR, START, P, error_of
from urlguard import Policy
from urlguard._guard.routes import path_of
from urlguard.cli.audit import Rows
from urlguard.cli.shapes import shape_of
from urlguard.cli.suggest import MAX_FIRST_SEGMENTS, Ledger
from urlguard.cli.suggest.read import analyse
from urlguard.cli.suggest.tally import STOPPED_EXAMPLES, Tally

# (target, status, clients, first, last)
Row = tuple[bytes, int, tuple[bytes, ...], float, float]

# Targets of three causes and a rule never loosened, under a few directories.
_KINDS = (
    b"/d%d/%d/x%%2Fy",  # encoded-slash
    b"/d%d/%d/x%%5Cy",  # encoded-backslash
    b"/d%d/%d/q?a=<%d>",  # a raw character in the query
    b"/d%d/%d/a/../b",  # a dot segment: never loosened
    b"/d%d/%d/x%%2Fy?q=%d",  # a query after the encoded slash
    b"/d%d/x%%2F%d#f",  # a fragment
    b"/d%d/%d",  # a raw byte past ASCII below
    b"/d%d/%d/" + b"s/" * 130,  # too many segments: a limit and the value it needs
)
# Targets with no shape, now and then: the chunks they come in are read
# without the shapes of the others.
_UNSHAPED = (
    b"http://h%d.example/%d/x%%2Fy",  # absolute-form
    b"/d%d/%d/x%%2Fy\n/z",  # a line break (no log holds one)
)


@st.composite
def logs(draw: st.DrawFn) -> list[Row]:
    size = draw(st.integers(1, 250))
    rng = random.Random(draw(st.integers(0, 2**32)))
    rows: list[Row] = []
    when = START
    for n in range(size):
        kind = rng.choice(_UNSHAPED if rng.random() < 0.01 else _KINDS)
        directory = rng.randrange(draw(st.sampled_from([1, 3, 12])))
        target = kind % ((directory, n, n) if kind.count(b"%d") == 3 else (directory, n))
        if kind == b"/d%d/%d":
            target += b"/\xe9" if n % 2 else b"\xe9/z"
        status = rng.choice((200, 200, 200, 302, 304, 404, 500))
        clients = tuple(
            b"10.%d.0.%d" % (rng.randrange(9), rng.randrange(1, 6))
            for _ in range(rng.choice((1, 1, 1, 2)))
        )
        when += rng.choice((0.0, 60.0, 7 * HOUR, -30.0))  # a log is nearly in time order
        rows.append((target, status, clients, when, when + rng.choice((0.0, 0.0, 90.0))))
    return rows


def feed(ledger: Ledger, rows: Sequence[Row], chunk: int, *, shaped: bool = False) -> None:
    """Observe ``rows`` ``chunk`` at a time, as the auditor hands them over
    (``shaped``: with the shapes it made)."""
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        rules = []
        for target, *_ in part:
            error = error_of(target, ledger.table)
            assert error is not None
            rules.append(error.rule)
        targets, statuses, clients, firsts, lasts = zip(*part, strict=True)
        counts = [1] * len(part)
        shapes = list(map(shape_of, targets)) if shaped else [None] * len(part)
        ledger.observe_rows(Rows(targets, statuses, counts, rules, clients, firsts, lasts, shapes))


def snapshot(tally: Tally) -> tuple[Any, ...]:
    return (
        tally.evidence(set()),
        tally.examples,
        {network: dict(clients) for network, clients in tally.networks.items()},
        sorted(tally.targets),
        sorted(tally.needs.items()),
        sorted(tally.rules),
    )


def tallies(ledger: Ledger) -> dict[object, tuple[Any, ...]]:
    found: dict[object, tuple[Any, ...]] = {
        (cause, prefix): snapshot(tally)
        for cause, groups in ledger.groups.items()
        for prefix, tally in groups.items()
    }
    found.update({stop: snapshot(tally) for stop, tally in ledger.stopped.items()})
    found["overflow"] = snapshot(ledger.overflow)
    return found


@settings(max_examples=120, deadline=None)
@given(
    rows=logs(),
    chunk=st.integers(1, 300),
    waiting=st.integers(1, 400),
    max_prefixes=st.sampled_from([2, 4, 256]),
)
def test_chunks_and_waiting_change_no_tally(
    rows: list[Row], chunk: int, waiting: int, max_prefixes: int
) -> None:
    """One row per call, each added at once, against any cut into chunks
    and any number of rows kept waiting (a small ``max_prefixes`` makes the
    tallies of a cause merge while rows wait). The chunks come with the
    shapes the auditor made, which the prefixes are then found by; the
    single rows without them."""
    one_by_one = Ledger(max_prefixes=max_prefixes, waiting_rows=1)
    feed(one_by_one, rows, 1)
    in_bulk = Ledger(max_prefixes=max_prefixes, waiting_rows=waiting)
    feed(in_bulk, rows, chunk, shaped=True)
    assert tallies(in_bulk) == tallies(one_by_one)
    assert in_bulk.depth == one_by_one.depth
    assert in_bulk.families == one_by_one.families  # what tells a scanner
    # What each way adds up to: every request in a tally, redirects told
    # apart but in the tallies of a rule never loosened.
    served = [row for row in rows if row[1] < 400]
    loosened = [row for row in served if analyse(row[0], path_of(row[0]), Policy()).stop is None]
    redirects = [row for row in loosened if row[1] == 302]
    every = [*in_bulk.stopped.values(), in_bulk.overflow]
    every += [tally for groups in in_bulk.groups.values() for tally in groups.values()]
    assert sum(tally.served for tally in every) == len(served)
    assert sum(tally.redirected for tally in every) == len(redirects)
    # The value a limit needs: the most any request of its cause needs.
    atom = ("max_segments", "")
    needed = [analyse(row[0], path_of(row[0]), Policy()).needs.get(atom, 0) for row in rows]
    assert max(tally.needs.get(atom, 0) for tally in every) == max(needed)
    assert in_bulk.failed_stopped == one_by_one.failed_stopped


def test_first_segments_past_the_bound_go_to_the_overflow_together() -> None:
    """Past MAX_FIRST_SEGMENTS first segments, a cause's new ones are
    tallied as one group, whether the rows come one by one or a chunk
    of thousands at once."""
    extra = 100
    rows: list[Row] = [
        (b"/s%d/%d/x%%2Fy" % (n % (MAX_FIRST_SEGMENTS + extra), n), 200, (b"10.0.%d.1" % (n % 7),),
         START + n, START + n)
        for n in range(2 * (MAX_FIRST_SEGMENTS + extra))
    ]  # fmt: skip
    one_by_one = Ledger(max_prefixes=4, waiting_rows=1)
    feed(one_by_one, rows, 1)
    in_bulk = Ledger(max_prefixes=4)
    feed(in_bulk, rows, len(rows))
    assert tallies(in_bulk) == tallies(one_by_one)
    [groups] = in_bulk.groups.values()
    assert len(groups) == MAX_FIRST_SEGMENTS
    assert in_bulk.overflow.served == 2 * extra
    assert sorted(groups)[:2] == [b"/s0/", b"/s1/"]


@settings(max_examples=200, deadline=None)
@given(
    targets=st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=60, unique=True),
    cuts=st.lists(st.integers(1, 60), max_size=8),
)
def test_distinct_targets_keep_the_same_examples_in_any_batches(
    targets: list[bytes], cuts: list[int]
) -> None:
    """Targets of one request each: the examples are the least targets
    (the fewest bytes first), whether added one by one or in batches of
    any size (a batch offers only targets that can take a kept place)."""
    one_by_one = Tally()
    for target in targets:
        one_by_one.add_served(target, 1, [(b"n", b"c")], START, START)
    in_batches = Tally()
    start = 0
    for size in [*cuts, len(targets)]:
        part = targets[start : start + size]
        start += size
        if part:
            in_batches.add_rows(
                part, [1] * len(part), [[(b"n", b"c")]] * len(part),
                [START] * len(part), [START] * len(part), [False] * len(part),
            )  # fmt: skip
    expected = [(1, target) for target in sorted(targets)[:STOPPED_EXAMPLES]]
    assert one_by_one.examples == expected
    assert in_batches.examples == expected


@pytest.mark.parametrize(
    ("batches", "examples"),
    [
        P([[b"/a", b"/b", b"/c", b"/d", b"/e"], [b"/z", b"/z"]],
          [(2, b"/z"), (1, b"/a"), (1, b"/b"), (1, b"/c"), (1, b"/d")],
          id="a target twice in a batch beats those of one request"),
        P([[b"/a", b"/b", b"/c", b"/d", b"/e"], [b"/0", b"/z"]],
          [(1, b"/0"), (1, b"/a"), (1, b"/b"), (1, b"/c"), (1, b"/d")],
          id="of one request each, the least bytes first"),
        P([[b"/a", b"/b", b"/c", b"/d", b"/e"], [b"/e", b"/z"]],
          [(2, b"/e"), (1, b"/a"), (1, b"/b"), (1, b"/c"), (1, b"/d")],
          id="a kept target counted again"),
        P([[b"/a", b"/a", b"/b", b"/b", b"/c", b"/c", b"/d", b"/d", b"/e", b"/e"], [b"/0"]],
          [(2, b"/a"), (2, b"/b"), (2, b"/c"), (2, b"/d"), (2, b"/e")],
          id="one request is no better than two"),
    ],
)  # fmt: skip
def test_examples_in_batches_of_one_request_a_row(
    batches: list[list[bytes]], examples: list[tuple[int, bytes]]
) -> None:
    tally = Tally()
    for batch in batches:
        size = len(batch)
        tally.add_rows(
            batch, [1] * size, [[(b"n", b"c")]] * size, [START] * size, [START] * size,
            [False] * size,
        )  # fmt: skip
    assert tally.examples == examples
