"""What the timed parts share: rounds with the collector off, interleaved
orders, batch sizes from ``timeit``, summaries from ``statistics``, tables.
"""

from __future__ import annotations

import gc
import itertools
import math
import statistics
import sys
import timeit
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import NamedTuple, TypeVar

T = TypeVar("T")


class Spread(NamedTuple):
    """A median and the interval around it (quartiles, or minimum and maximum)."""

    median: float
    low: float
    high: float

    def text(self, form: str = "") -> str:
        """``median (low–high)``; by default three decimals, none from 1,000."""
        form = form or (",.0f" if self.median >= 1000 else ".3f")
        return f"{self.median:{form}} ({self.low:{form}}–{self.high:{form}})"


def iqr(values: Sequence[float]) -> Spread:
    """The median and interquartile range of ``values`` (at least one)."""
    if len(values) < 2:
        return Spread(values[0], values[0], values[0])
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(median, low, high)


def min_max(values: Sequence[float]) -> Spread:
    """The median of ``values`` with their minimum and maximum."""
    return Spread(statistics.median(values), min(values), max(values))


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round by round, the ratio of two series measured in the same rounds."""
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


@contextmanager
def collector_off() -> Iterator[None]:
    """Collect, then keep the cyclic collector off: a collection would land in one timing."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def calls_per(seconds: float, call: Callable[[], object]) -> int:
    """How many calls of ``call`` take about ``seconds`` (timeit's autorange)."""
    number, taken = timeit.Timer(call).autorange()
    return max(1, round(number * seconds / taken))


def collect(
    measure: Callable[[int], Mapping[T, float]], rounds: int, name: str
) -> dict[T, list[float]]:
    """Each key's values over ``rounds`` rounds of ``measure(round_no)``, after
    a warm-up round (0) whose values are dropped."""
    samples: dict[T, list[float]] = {key: [] for key in measure(0)}
    for round_no in range(1, rounds + 1):
        for key, value in measure(round_no).items():
            samples[key].append(value)
        print(f"  {name} round {round_no}/{rounds}", file=sys.stderr, end="\r", flush=True)
    print(file=sys.stderr)
    return samples


def fastest_of_two(names: Sequence[T], turn: int, time_one: Callable[[T], float]) -> dict[T, float]:
    """Each name's faster of two timings, in its ``turn``-th order and then back:
    a preemption by another process seldom lands on both."""
    order = in_turn(names, turn)
    fastest = dict.fromkeys(order, math.inf)
    for name in (*order, *reversed(order)):
        fastest[name] = min(fastest[name], time_one(name))
    return fastest


def in_turn(items: Sequence[T], round_no: int) -> tuple[T, ...]:
    """``items`` in the ``round_no``-th of all their orders, so that each runs
    before and after each other equally often (rotations alone would not)."""
    orders = list(itertools.permutations(items))
    return orders[round_no % len(orders)]


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table: the first column left-aligned, the others right."""
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join([":---", *["---:"] * (len(headers) - 1)]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
