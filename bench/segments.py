"""Segment routes part: the guarded apps with the wiki route's parameter plain
(the default policy) and declared as a ``segment`` (a policy that keeps
encoded slashes), side by side, and a request with a kept ``%2F``, which
reaches the application on the routing path.
"""

from __future__ import annotations

from urlguard import Policy

from . import instructions, missing
from .inprocess import HELLO, TARGETS, Framework, InProcess, Layers
from .timing import iqr, markdown, ratios

KEPT = b"/wiki/kg%2Fs"
#: What the bare app is timed on beside KEPT, which only the segment route takes.
KEPT_BARE = b"/wiki/kg-s"
LAYERS: Layers = {
    "bare": {"layer": "bare"},
    "guarded": {"layer": "guarded"},
    "segment": {"layer": "guarded", "segment": True, "policy": Policy(encoded_slash="keep")},
}


def check(framework: Framework) -> None:
    """Refuse to time an app that does not answer 200 "Hello, world!" to both
    targets, or answers it to KEPT without the segment route."""
    for layer in LAYERS:
        for target in (*TARGETS.values(), KEPT):
            status, body, _ = framework.once(layer, target)
            if ((status, body) == (200, HELLO)) != (target != KEPT or layer == "segment"):
                raise RuntimeError(f"{framework.name} {layer} {target!r}: {status} {body!r}")


def cases() -> dict[str, dict[str, bytes]]:
    """Case -> each layer's target: the in-process targets on every layer, and
    the kept %2F on the segment route beside the bare app on a plain one."""
    found = {tname: dict.fromkeys(LAYERS, target) for tname, target in TARGETS.items()}
    found["kept %2F"] = {"bare": KEPT_BARE, "segment": KEPT}
    return found


def run(rounds: int, quick: bool = False) -> None:
    """Time the three apps of both frameworks; print the ratios to bare and the
    segment route's more, round by round (the summary's rows are in-process),
    with the same ratios in instructions beside them when valgrind is there."""
    samples = InProcess(LAYERS, cases(), check).timed(rounds, "segments")
    counts: dict[str, float] = {}
    if not missing("valgrind", "Segment routes, instructions"):
        counts = instructions.count("segments", 20 if quick else 200)

    def ir(app: str, tname: str, layer: str) -> str:
        if not counts:
            return "-"
        return f"{counts[f'{app} {tname} {layer}'] / counts[f'{app} {tname} bare']:.3f}"

    rows = []
    for app in ("starlette", "flask"):
        for tname in cases():
            bare = samples[app, tname, "bare"]
            segment = ratios(samples[app, tname, "segment"], bare)
            if tname == "kept %2F":
                rows.append(
                    [app, tname, "-", iqr(segment).text(), "-", "-", ir(app, tname, "segment")]
                )
                continue
            guarded = ratios(samples[app, tname, "guarded"], bare)
            more = iqr([s - g for s, g in zip(segment, guarded, strict=True)]).text("+.3f")
            rows.append(
                [app, tname, iqr(guarded).text(), iqr(segment).text(), more,
                 ir(app, tname, "guarded"), ir(app, tname, "segment")]
            )  # fmt: skip
    print(f"Segment routes: × bare, {rounds} rounds: median (IQR); Ir: callgrind, one run")
    header = ["app", "target", "guarded", "guarded, segment route", "more"]
    print(markdown([*header, "guarded Ir", "segment route Ir"], rows))
