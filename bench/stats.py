"""Summaries, goals and plain-text tables shared by the benchmark parts.

Every figure printed is a median over rounds with its spread (interquartile
range and min–max), because on a shared 2-core machine a single run says
little. Ratios are taken *within* a round (both sides measured back to back)
and then summarised, so slow drifts of the machine cancel out.

    >>> s = summarize([3.0, 1.0, 2.0, 10.0])
    >>> s.median, s.lo, s.hi
    (2.5, 1.0, 10.0)
    >>> Goal("micro mixed", 0.75, at_most=True).verdict(0.7)
    'met'
"""

from __future__ import annotations

import gc
import itertools
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Median, quartiles and extremes of one series of measurements."""

    median: float
    q1: float
    q3: float
    lo: float
    hi: float
    n: int

    def iqr(self, fmt: str) -> str:
        """``q1–q3`` formatted with ``fmt`` (e.g. ``".0f"``)."""
        return f"{self.q1:{fmt}}–{self.q3:{fmt}}"

    def range(self, fmt: str) -> str:
        """``min–max`` formatted with ``fmt``."""
        return f"{self.lo:{fmt}}–{self.hi:{fmt}}"


def summarize(values: Sequence[float]) -> Summary:
    """The :class:`Summary` of ``values`` (at least one)."""
    if not values:
        raise ValueError("nothing to summarize")
    if len(values) == 1:
        v = float(values[0])
        return Summary(v, v, v, v, v, 1)
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Summary(median, q1, q3, float(min(values)), float(max(values)), len(values))


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Per-round ratios of two series measured in the same rounds."""
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


@dataclass(frozen=True)
class Goal:
    """A speed goal (docs/speed.md): a value must be at most (or at least) ``limit``."""

    name: str
    limit: float
    at_most: bool

    def met(self, value: float) -> bool:
        """Whether ``value`` meets the goal."""
        return value <= self.limit if self.at_most else value >= self.limit

    def text(self) -> str:
        """The goal as printed beside a result, e.g. ``≤ 0.75``."""
        limit = f"{self.limit:,.0f}" if self.limit >= 1000 else f"{self.limit:g}"
        return f"{'≤' if self.at_most else '≥'} {limit}"

    def verdict(self, value: float) -> str:
        """``met`` or ``NOT met``."""
        return "met" if self.met(value) else "NOT met"


@dataclass(frozen=True)
class Check:
    """One goal and the value a run measured for it."""

    goal: Goal
    value: float
    detail: str = ""


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows as fixed-width text: the first column left-aligned, the rest right."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


def checks_table(checks: Sequence[Check]) -> str:
    """The goals of a run and whether each was met."""
    rows = [
        [c.goal.name, f"{c.value:,.3f}" if c.value < 1000 else f"{c.value:,.0f}",
         c.goal.text(), c.goal.verdict(c.value), c.detail]
        for c in checks
    ]  # fmt: skip
    return table(["goal", "measured", "target", "verdict", "spread"], rows)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect, then keep the collector off for the timed block."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def rotated(items: Sequence[str], round_no: int) -> list[str]:
    """``items`` rotated by ``round_no``, so no variant always runs first."""
    k = round_no % len(items)
    return [*items[k:], *items[:k]]


def permuted(items: Sequence[str], round_no: int) -> list[str]:
    """``items`` in their ``round_no``-th order of all their orders, in turn.

    Over rotations, a variant still runs right after the same one in most
    rounds, and a ratio taken within the round leans the way its place
    does: with three variants, the median of B/bare came out 0.03-0.08
    above that of A/bare while B/A was below 1. Over all orders, every
    variant runs before and after every other as often, and the per-round
    ratios lean neither way.

        >>> [permuted("ab", n) for n in range(3)]
        [['a', 'b'], ['b', 'a'], ['a', 'b']]
    """
    orders = list(itertools.permutations(items))
    return list(orders[round_no % len(orders)])
