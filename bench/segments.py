"""Segment routes part: what declaring ``segment`` route parameters costs.

The same hello-world apps as the in-process part, each framework three
ways: bare, guarded, and guarded with the wiki route declaring its
parameter as a ``segment``. Both guarded apps answer the plain and the
encoded target alike; the ``segment`` one also takes ``/wiki/kg%2Fs``
(the others refuse it), timed against the bare app's ``/wiki/kg-s``. The
figure that matters is the difference of the two guarded ratios to bare,
round by round.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

from .inprocess import HELLO, TARGETS, Framework
from .summary import Results
from .timing import calls_per, collect, collector_off, fastest_of_two, iqr, markdown, ratios

KEPT = b"/wiki/kg%2Fs"
KEPT_BARE = b"/wiki/kg-s"
LAYERS = ("bare", "guarded", "segment")


def _frameworks(loop: asyncio.AbstractEventLoop) -> list[Framework]:
    from .apps import flask_hello, starlette_hello

    frameworks = []
    for name, module in (("starlette", starlette_hello), ("flask", flask_hello)):
        layers: dict[str, Any] = {
            "bare": module.make_app("bare"),
            "guarded": module.make_app("guarded"),
            "segment": module.make_app("guarded", segment=True),
        }
        framework = Framework(name, layers, loop)
        for layer in LAYERS:
            for target in (*TARGETS.values(), KEPT):
                status, body, _ = framework.once(layer, target)
                ok = (status, body) == (200, HELLO)
                if ok != (target != KEPT or layer == "segment"):
                    raise RuntimeError(f"{name} {layer} {target!r}: {status} {body!r}")
        frameworks.append(framework)
    return frameworks


def run(rounds: int, results: Results, out: Callable[[str], None] = print) -> None:
    """Time the three apps of both frameworks; print the differences (its own
    table: the summary's rows are the in-process goals)."""
    logging.getLogger("urlguard").disabled = True
    loop = asyncio.new_event_loop()
    try:
        frameworks = _frameworks(loop)
        cases = [(tname, target, target) for tname, target in TARGETS.items()]
        cases.append(("kept %2F", KEPT, KEPT_BARE))
        sizes = {
            (f.name, tname): 20 * calls_per(0.001, functools.partial(f.batch, "bare", bare, 20))
            for f in frameworks
            for tname, _, bare in cases
        }

        def one_round(round_no: int) -> dict[tuple[str, str, str], float]:
            times = {}
            with collector_off():
                for f in frameworks:
                    for tname, target, bare in cases:
                        n = sizes[f.name, tname]
                        layers = ["bare", "segment"] if tname == "kept %2F" else list(LAYERS)

                        def batch(
                            layer: str,
                            f: Framework = f,
                            n: int = n,
                            t: bytes = target,
                            b: bytes = bare,
                        ) -> int:
                            return f.batch(layer, b if layer == "bare" else t, n)

                        for layer, ns in fastest_of_two(layers, round_no, batch).items():
                            times[f.name, tname, layer] = ns / n / 1000
            return times

        samples = collect(one_round, rounds, "segments")
    finally:
        loop.close()
    rows = []
    for f in frameworks:
        for tname, _, _ in cases:
            bare = samples[f.name, tname, "bare"]
            segment = ratios(samples[f.name, tname, "segment"], bare)
            if tname == "kept %2F":
                rows.append([f.name, tname, "-", iqr(segment).text(), "-"])
                continue
            guarded = ratios(samples[f.name, tname, "guarded"], bare)
            more = [s - g for s, g in zip(segment, guarded, strict=True)]
            rows.append(
                [f.name, tname, iqr(guarded).text(), iqr(segment).text(), iqr(more).text("+.3f")]
            )
    out(f"Segment routes: × bare, {rounds} rounds: median (IQR)")
    out(markdown(["app", "target", "guarded", "guarded, segment route", "more"], rows))
