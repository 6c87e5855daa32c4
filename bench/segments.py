"""Segment routes part: the guarded apps with the wiki route's parameter plain
and declared as a ``segment``, side by side, and a request with a kept ``%2F``.
"""

from __future__ import annotations

from .inprocess import HELLO, TARGETS, Framework, InProcess, Layers
from .timing import iqr, markdown, ratios

KEPT = b"/wiki/kg%2Fs"
#: What the bare app is timed on beside KEPT, which only the segment route takes.
KEPT_BARE = b"/wiki/kg-s"
LAYERS: Layers = {
    "bare": {"layer": "bare"},
    "guarded": {"layer": "guarded"},
    "segment": {"layer": "guarded", "segment": True},
}


def check(framework: Framework) -> None:
    """Refuse to time an app that does not answer 200 "Hello, world!" to both
    targets, or answers it to KEPT without the segment route."""
    for layer in LAYERS:
        for target in (*TARGETS.values(), KEPT):
            status, body, _ = framework.once(layer, target)
            if ((status, body) == (200, HELLO)) != (target != KEPT or layer == "segment"):
                raise RuntimeError(f"{framework.name} {layer} {target!r}: {status} {body!r}")


def run(rounds: int) -> None:
    """Time the three apps of both frameworks; print the ratios to bare and the
    segment route's more, round by round (the summary's rows are in-process)."""
    cases = {tname: dict.fromkeys(LAYERS, target) for tname, target in TARGETS.items()}
    cases["kept %2F"] = {"bare": KEPT_BARE, "segment": KEPT}
    samples = InProcess(LAYERS, cases, check).timed(rounds, "segments")
    rows = []
    for app in ("starlette", "flask"):
        for tname in cases:
            bare = samples[app, tname, "bare"]
            segment = ratios(samples[app, tname, "segment"], bare)
            if tname == "kept %2F":
                rows.append([app, tname, "-", iqr(segment).text(), "-"])
                continue
            guarded = ratios(samples[app, tname, "guarded"], bare)
            more = iqr([s - g for s, g in zip(segment, guarded, strict=True)]).text("+.3f")
            rows.append([app, tname, iqr(guarded).text(), iqr(segment).text(), more])
    print(f"Segment routes: × bare, {rounds} rounds: median (IQR)")
    print(markdown(["app", "target", "guarded", "guarded, segment route", "more"], rows))
