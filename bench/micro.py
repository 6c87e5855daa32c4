"""Micro part: parsing a target and reading its pieces, with each parser,
against naive decoding and against the floor (bench/floor.py).
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import parse_qsl, unquote

from . import floor
from .corpus import KINDS, Corpus
from .parsers import Parse, available, reader
from .summary import Results
from .timing import collect, collector_off, fastest_of_two, iqr, markdown, ratios

#: Targets timed at a time: well under a millisecond, so that few timings are cut by a preemption.
CHUNK = 100
#: The summary's rows: (subset, denominator).
SUMMARY_ROWS = {
    "micro plain": ("plain", "floor"),
    "micro mixed": ("mixed", "floor"),
    "micro encoded": ("encoded", "floor"),
    "micro malformed": ("malformed", "naive"),
    "micro mixed naive": ("mixed", "naive"),
}


def naive(raw: bytes) -> object:
    """What applications do today: ``unquote(path).split("/")``, ``parse_qsl(query)``."""
    path, _, query = raw.decode("latin-1").partition("?")
    return unquote(path).split("/"), parse_qsl(query)


def subsets(corpus: Corpus) -> dict[str, Sequence[bytes]]:
    """Each kind of target, and all of them (``mixed``)."""
    plain, encoded, malformed = map(corpus.subset, KINDS)
    return {"plain": plain, "mixed": corpus.targets, "encoded": encoded, "malformed": malformed}


class Micro:
    """The contenders and the chunks of each subset, timed a round at a time."""

    def __init__(self, contenders: dict[str, Parse], corpus: Corpus) -> None:
        self.contenders = contenders
        self.chunks = {
            name: [targets[i : i + CHUNK] for i in range(0, len(targets), CHUNK)]
            for name, targets in subsets(corpus).items()
        }

    def pass_time(self, targets: Sequence[bytes], name: str) -> int:
        """Nanoseconds for contender ``name`` to parse every target once."""
        parse = self.contenders[name]
        start = time.perf_counter_ns()
        for raw in targets:
            try:  # noqa: SIM105 (contextlib.suppress would add a context manager per target)
                parse(raw)
            except ValueError:
                pass
        return time.perf_counter_ns() - start

    def round(self, round_no: int) -> dict[tuple[str, str], float]:
        """(subset, contender) -> nanoseconds over the whole subset, this round: the
        contenders in an order that changes from chunk to chunk, a rejection skipped."""
        names = list(self.contenders)
        times = dict.fromkeys(((s, n) for s in self.chunks for n in names), 0.0)
        with collector_off():
            for subset, chunks in self.chunks.items():
                for c, chunk in enumerate(chunks):
                    time_one = functools.partial(self.pass_time, chunk)
                    for name, ns in fastest_of_two(names, round_no + c, time_one).items():
                        times[subset, name] += ns
        return times


def contenders(floor_path: Path | None) -> dict[str, Parse]:
    """naive, each urlguard parser built here, and the floor when it was built."""
    found: dict[str, Parse] = {"naive": naive}
    found.update((name, reader(module)) for name, module in available().items())
    if floor_path is not None:
        found["floor"] = floor.load(floor_path)
    return found


def run(corpus: Corpus, rounds: int, results: Results) -> None:
    """Time every contender over every subset; print ns per target and ratios."""
    with tempfile.TemporaryDirectory(prefix="urlguard-floor-") as folder:
        micro = Micro(contenders(floor.build(Path(folder))), corpus)
    samples = collect(micro.round, rounds, "micro")
    sizes = {subset: sum(map(len, chunks)) for subset, chunks in micro.chunks.items()}
    rows = []
    for (subset, name), times in samples.items():
        per_target = iqr([ns / sizes[subset] for ns in times])
        versus = iqr(ratios(times, samples[subset, "naive"]))
        rows.append([subset, name, per_target.text(",.0f"), versus.text()])
    print(f"Micro: ns per target and ratio to naive, {rounds} rounds: median (IQR)")
    print(markdown(["subset", "contender", "ns per target", "× naive"], rows))
    for row, (subset, denominator) in SUMMARY_ROWS.items():
        for name in ("compiled", "reference"):
            if name in micro.contenders and denominator in micro.contenders:
                spread = iqr(ratios(samples[subset, name], samples[subset, denominator]))
                results[row, name] = spread
