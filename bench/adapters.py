"""The middlewares of two versions, side by side in one process, on one parser.

    python -m bench.adapters 081f5f5                     # that commit's against src/ as it is
    python -m bench.adapters HEAD~1 WORKTREE --rounds 2000
    python -m bench.adapters 081f5f5 --part time         # no callgrind

What the adapters cost on every request's path is a few hundred
instructions inside a framework's tens of thousands: two runs of the
in-process benchmark, minutes apart on a machine whose speed drifts, cannot
show it. This loads the ``urlguard`` package of both versions under other
names, as ``bench.ab`` does, builds the hello-world apps of ``bench.apps``
guarded by each version's ``StrictURLMiddleware``, and times the three
layers, ``bare``, ``guarded@A`` and ``guarded@B``, in the same short
interleaved rounds as ``bench.inprocess`` (the same scopes and environs),
for Starlette and Flask with its plain and encoded targets.

Both versions run on the same parser: the modules the parser is made of
(:data:`SHARED`: the parser, its tables, its result and its error) are not
loaded from either version; both packages get this process's, the compiled
parser wherever it was built. So the difference measured is that of the
middlewares, the guard and the route table, not that of two parsers. A
version whose parser modules differ from today's in what the rest calls
fails to load, or to pass the check below, rather than being measured.

Every layer must first answer 200 "Hello, world!" to both targets with a
``Target`` stored, and 400 to a hostile one (``bench.inprocess.Bench``).

Printed: µs per request (median over rounds, IQR); the ratio to ``bare``
within each round (median, IQR); and B against A within each round, as a
ratio and in nanoseconds. Then, under callgrind (``bench.instructions``;
valgrind must be installed), the instructions per request of each layer,
which do not depend on what else the machine is doing. A tool for tuning,
not one of the speed goals of docs/speed.md; run it from the project root.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import urlguard

if __package__ in (None, ""):  # run as `python bench/adapters.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ab import WORKTREE, load, source
from bench.inprocess import TARGETS, Bench, batch_sizes, interleave, quiet_logger
from bench.instructions import VALGRIND_MISSING, phases
from bench.run import header
from bench.stats import ratios, summarize, table

#: The modules of the parser, its result and its error: one copy, this
#: process's, serves both versions.
SHARED = ("_grammar", "_errors", "_policy", "_target", "_parser_py", "_parser_c", "_parser")
FRAMEWORKS = ("starlette", "flask")
PARTS = ("time", "instructions")
REQUESTS = 200


def shared_modules() -> list[str]:
    """The :data:`SHARED` modules this installation has (no ``_parser_c``
    where the compiled parser was not built)."""
    return [name for name in SHARED if importlib.util.find_spec(f"urlguard.{name}") is not None]


def versions(a: str, b: str, tmp: Path) -> dict[str, Path]:
    """Layer name -> the folder holding that version's ``urlguard`` package."""
    if a == b:
        raise SystemExit(f"bench.adapters: A and B are both {a!r}")
    return {f"guarded@{a}": source(a, tmp / "a"), f"guarded@{b}": source(b, tmp / "b")}


def benches(
    folders: dict[str, Path], loop: asyncio.AbstractEventLoop, frameworks: Sequence[str]
) -> dict[str, Bench]:
    """A :class:`Bench` per framework: ``bare`` and each version's guarded app."""
    from bench.apps import flask_hello, starlette_hello

    shared = shared_modules()
    packages = {
        layer: load(f"urlguard_adapters_{i}", folder, shared)
        for i, (layer, folder) in enumerate(folders.items())
    }
    for layer, package in packages.items():
        if package.parse_target is not urlguard.parse_target:
            raise SystemExit(f"bench.adapters: {layer} does not run this process's parser")
    out = {}
    for framework in frameworks:
        module: Any = starlette_hello if framework == "starlette" else flask_hello
        adapter = "asgi" if framework == "starlette" else "wsgi"
        apps = {"bare": module.bare}
        for layer, package in packages.items():
            middleware = importlib.import_module(f"{package.__name__}.{adapter}")
            apps[layer] = module.make_app("guarded", middleware.StrictURLMiddleware)
        out[framework] = Bench(framework, loop, apps)
    return out


def time_layers(
    folders: dict[str, Path], rounds: int, batch_ms: float, out: Callable[[str], None]
) -> None:
    """The interleaved rounds, and their table."""
    loop = asyncio.new_event_loop()
    try:
        timed = benches(folders, loop, FRAMEWORKS)
        with quiet_logger():  # the hostile target of the check logs a line
            sizes = batch_sizes(timed, batch_ms)
        samples = interleave(timed, sizes, rounds)
    finally:
        loop.close()
    a, b = folders
    rows = []
    for framework in FRAMEWORKS:
        for tname in TARGETS:
            bare = samples[framework, tname, "bare"]
            for layer in ("bare", a, b):
                s = summarize(samples[framework, tname, layer])
                r = summarize(ratios(samples[framework, tname, layer], bare))
                rows.append([
                    framework, tname, layer, f"{s.median:.2f}", s.iqr(".2f"),
                    f"{r.median:.4f}", r.iqr(".4f"),
                ])  # fmt: skip
    out(
        f"Time: µs per request, median of {rounds} interleaved rounds (IQR); "
        "×bare = layer/bare within each round"
    )
    out(", ".join(f"{n} {t}: {sizes[n, t]} requests per batch" for n, t in sizes))
    out(table(["app", "target", "layer", "µs", "IQR", "×bare", "×bare IQR"], rows))
    out("")
    rows = []
    for framework in FRAMEWORKS:
        for tname in TARGETS:
            first, second = samples[framework, tname, a], samples[framework, tname, b]
            r = summarize(ratios(second, first))
            d = summarize([(y - x) * 1000 for x, y in zip(first, second, strict=True)])
            rows.append([
                framework, tname, f"{r.median:.4f}", r.iqr(".4f"), f"{d.median:+.0f}",
                d.iqr("+.0f"),
            ])  # fmt: skip
    out(f"B = {b} against A = {a}, within each round; B/A < 1 means B is faster")
    out(table(["app", "target", "B/A", "B/A IQR", "B−A ns", "B−A ns IQR"], rows))


def count_instructions(folders: dict[str, Path], requests: int, out: Callable[[str], None]) -> None:
    """Instructions per request under callgrind, one worker per framework."""
    if shutil.which("valgrind") is None:
        out(VALGRIND_MISSING.replace("python -m bench --part instructions", "this again"))
        return
    layers = ("bare", *folders)
    places = [str(part) for pair in folders.items() for part in pair]
    rows = []
    for framework in FRAMEWORKS:
        print(f"  instructions: {framework}  ", file=sys.stderr, end="\r", flush=True)
        args = ["adapters", framework, str(requests), *places]
        counts = phases(args, len(layers) * len(TARGETS))
        for i, tname in enumerate(TARGETS):
            ir = {
                layer: count["Ir"] / requests
                for layer, count in zip(layers, counts[len(layers) * i :], strict=False)
            }
            for layer in layers:
                extra = f"{ir[layer] - ir[layers[1]]:+,.0f}" if layer != "bare" else ""
                rows.append([
                    framework, tname, layer, f"{ir[layer]:,.0f}",
                    f"{ir[layer] / ir['bare']:.4f}", f"{ir[layer] - ir['bare']:+,.0f}", extra,
                ])  # fmt: skip
    print(file=sys.stderr)
    out(
        f"Instructions (callgrind Ir) per request, {requests} requests per layer after a "
        f"warm-up; guard = Ir above bare; against A = Ir above {layers[1]}"
    )
    out(table(["app", "target", "layer", "Ir", "×bare", "guard", "against A"], rows))


def worker(args: Sequence[str], phase: Callable[[], None]) -> None:
    """Under callgrind: one phase per (target, layer), as ``bench.instructions``
    measures the in-process layers. ``args``: framework, requests, then each
    version's layer name and folder."""
    framework, requests = args[0], int(args[1])
    folders = {args[i]: Path(args[i + 1]) for i in range(2, len(args), 2)}
    loop = asyncio.new_event_loop()
    bench = benches(folders, loop, [framework])[framework]
    with quiet_logger():
        bench.verify()
    for layer in bench.layers:
        for target in TARGETS.values():
            bench.batch(layer, target, 50)  # warm-up
    for target in TARGETS.values():
        for layer in bench.layers:
            phase()
            bench.batch(layer, target, requests)
    loop.close()


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.adapters", description=__doc__.split("\n")[0]
    )
    parser.add_argument("a", help=f"a git revision, or {WORKTREE} for src/ as it is")
    parser.add_argument("b", nargs="?", default=WORKTREE, help=f"the same (default {WORKTREE})")
    parser.add_argument(
        "--part", action="append", choices=PARTS, dest="parts",
        help="time or instructions (repeatable); default: both",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1000, help="interleaved rounds (1000)")
    parser.add_argument("--batch-ms", type=float, default=0.5, help="length of a batch (0.5)")
    parser.add_argument(
        "--requests", type=int, default=REQUESTS,
        help=f"requests per layer under callgrind ({REQUESTS})",
    )  # fmt: skip
    args = parser.parse_args(args_list)
    if args.rounds < 1 or args.requests < 1:
        parser.error("--rounds and --requests must be at least 1")
    parts = args.parts or PARTS
    print(header(args_list, "python -m bench.adapters"), flush=True)
    with tempfile.TemporaryDirectory(prefix="urlguard-adapters-") as tmp:
        folders = versions(args.a, args.b, Path(tmp))
        print(
            f"parser   the {urlguard.IMPLEMENTATION} one, for A and B alike "
            f"(this process's {', '.join(shared_modules())})"
        )
        if "time" in parts:
            print(flush=True)
            time_layers(folders, args.rounds, args.batch_ms, print)
        if "instructions" in parts:
            print(flush=True)
            count_instructions(folders, args.requests, print)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
