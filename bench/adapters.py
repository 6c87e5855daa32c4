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
valgrind must be installed), the instructions per request, which do not
depend on what else the machine is doing: of each layer in each framework,
and of each version's middleware alone, called directly around an
application that does nothing, with no options, with per-route policies,
and mounted below a root path. In a framework a row can move by a few
hundred instructions from one setting to another (the heap and the
specialized instructions the layers share); the min–max over the turns
shows it. The middleware alone moves by a handful. A tool for tuning, not
one of the speed goals of docs/speed.md; run it from the project root.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import urlguard

if __package__ in (None, ""):  # run as `python bench/adapters.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ab import WORKTREE, load, source
from bench.inprocess import (
    TARGETS,
    Bench,
    batch_sizes,
    gunicorn_environ,
    interleave,
    quiet_logger,
    uvicorn_scope,
)
from bench.instructions import VALGRIND_MISSING, phases
from bench.run import header, load_average
from bench.stats import permuted, ratios, summarize, table

#: The modules of the parser, its result and its error: one copy, this
#: process's, serves both versions.
SHARED = ("_grammar", "_errors", "_policy", "_target", "_parser_py", "_parser_c", "_parser")
FRAMEWORKS = ("starlette", "flask")
PARTS = ("time", "instructions")
REQUESTS = 400
TURNS = 4


def shared_modules() -> list[str]:
    """The :data:`SHARED` modules this installation has (no ``_parser_c``
    where the compiled parser was not built)."""
    return [name for name in SHARED if importlib.util.find_spec(f"urlguard.{name}") is not None]


def versions(a: str, b: str, tmp: Path) -> dict[str, Path]:
    """Layer name -> the folder holding that version's ``urlguard`` package."""
    if a == b:
        raise SystemExit(f"bench.adapters: A and B are both {a!r}")
    return {f"guarded@{a}": source(a, tmp / "a"), f"guarded@{b}": source(b, tmp / "b")}


_LOADED: dict[str, ModuleType] = {}


def packages(folders: dict[str, Path]) -> dict[str, ModuleType]:
    """Layer name -> that version's package, loaded once, on this process's parser."""
    shared = shared_modules()
    for i, (layer, folder) in enumerate(folders.items()):
        if layer not in _LOADED:
            _LOADED[layer] = load(f"urlguard_adapters_{i}", folder, shared)
            if _LOADED[layer].parse_target is not urlguard.parse_target:
                raise SystemExit(f"bench.adapters: {layer} does not run this process's parser")
    return {layer: _LOADED[layer] for layer in folders}


def benches(
    folders: dict[str, Path], loop: asyncio.AbstractEventLoop, frameworks: Sequence[str]
) -> dict[str, Bench]:
    """A :class:`Bench` per framework: ``bare`` and each version's guarded app."""
    from bench.apps import flask_hello, starlette_hello

    out = {}
    loaded = packages(folders)
    for framework in frameworks:
        module: Any = starlette_hello if framework == "starlette" else flask_hello
        adapter = "asgi" if framework == "starlette" else "wsgi"
        apps = {"bare": module.bare}
        for layer, package in loaded.items():
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
        samples = interleave(timed, sizes, rounds, permuted)
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
        f"Time: µs per request, median of {rounds} interleaved rounds, the layers in each of "
        "their orders in turn (IQR); ×bare = layer/bare within each round"
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


# The middleware alone, called directly around an application that does
# nothing: with no options, with per-route policies (neither prefix is a
# target's), and mounted below /mnt (uvicorn's and gunicorn's way).
SETUPS = ("plain", "routes", "mount")
ROUTES = {"/files/": {"encoded_slash": "keep"}, "/static/": {"encoded_slash": "keep"}}
MOUNT = "/mnt"
PROTOCOLS = ("asgi", "wsgi")


def schedule(
    groups: Sequence[tuple[str, ...]], layers: Sequence[str], turns: int
) -> list[tuple[tuple[str, ...], str]]:
    """The measured phases of a worker, in order: for each group, ``turns``
    turns over the layers, every other turn in the reverse order, so that no
    layer always follows the same one (each phase preceded by a warm-up
    phase)."""
    return [
        (group, layer)
        for group in groups
        for turn in range(turns)
        for layer in (layers if turn % 2 == 0 else layers[::-1])
    ]


def framework_groups() -> list[tuple[str, ...]]:
    return [(tname,) for tname in TARGETS]


def direct_groups() -> list[tuple[str, ...]]:
    return [(p, setup, tname) for p in PROTOCOLS for setup in SETUPS for tname in TARGETS]


def count_instructions(
    folders: dict[str, Path], requests: int, turns: int, out: Callable[[str], None]
) -> None:
    """Instructions per request under callgrind: in each framework, and of the
    middleware alone."""
    if shutil.which("valgrind") is None:
        out(VALGRIND_MISSING.replace("python -m bench --part instructions", "this again"))
        return
    a = next(iter(folders))
    note = (
        f"{requests} requests per layer and turn, the layers in turn (every other turn in the "
        "reverse order), each after a warm-up of its own; median (min–max) over the turns; "
        f"against A = Ir above {a}"
    )
    rows = []
    for framework in FRAMEWORKS:
        print(f"  instructions: {framework}  ", file=sys.stderr, end="\r", flush=True)
        ir: dict[tuple[tuple[str, ...], str], list[float]] = {}
        # In a framework, which version's package was loaded first moves a
        # row by a few hundred instructions (the heap, the type caches): one
        # worker loads A first, another B first, and the turns of both count.
        for versions_in_order in (list(folders), list(folders)[::-1]):
            places = [str(part) for layer in versions_in_order for part in (layer, folders[layer])]
            args = [framework, str(requests), str(turns), *places]
            layers = ("bare", *versions_in_order)
            for key, values in _measure(args, framework_groups(), layers, turns).items():
                ir.setdefault(key, []).extend(values)
        for (tname,) in framework_groups():
            bare = statistics.median(ir[(tname,), "bare"])
            for layer in ("bare", *folders):
                rows.append([
                    framework, tname, layer, *_cells(ir, (tname,), layer, a),
                    f"{statistics.median(ir[(tname,), layer]) / bare:.4f}",
                ])  # fmt: skip
    print(file=sys.stderr)
    out(
        f"Instructions (callgrind Ir) per request in the framework, {2 * turns} turns in two "
        f"workers (one loads A first, the other B): {note}"
    )
    out(table(["app", "target", "layer", "Ir", "min–max", "against A", "×bare"], rows))
    out("")
    print("  instructions: the middleware alone  ", file=sys.stderr, end="\r", flush=True)
    places = [str(part) for pair in folders.items() for part in pair]
    ir = _measure(
        ["direct", str(requests), str(turns), *places], direct_groups(), tuple(folders), turns
    )
    print(file=sys.stderr)
    rows = [
        [*group, layer, *_cells(ir, group, layer, a)]
        for group in direct_groups()
        for layer in folders
    ]
    out(
        "Instructions (callgrind Ir) per call of the middleware alone, around an application "
        f"that does nothing (routes: {', '.join(ROUTES)}; mount: {MOUNT}), {turns} turns: {note}"
    )
    out(table(["adapter", "setup", "target", "layer", "Ir", "min–max", "against A"], rows))


def _measure(
    args: list[str], groups: list[tuple[str, ...]], layers: Sequence[str], turns: int
) -> dict[tuple[tuple[str, ...], str], list[float]]:
    """(group, layer) -> Ir of each turn's measured phase (not per request yet)."""
    order = schedule(groups, layers, turns)
    counts = phases(["adapters", *args], 2 * len(order))[1::2]  # not the warm-ups
    ir: dict[tuple[tuple[str, ...], str], list[float]] = {}
    requests = int(args[1])
    for key, count in zip(order, counts, strict=True):
        ir.setdefault(key, []).append(count["Ir"] / requests)
    return ir


def _cells(
    ir: dict[tuple[tuple[str, ...], str], list[float]],
    group: tuple[str, ...],
    layer: str,
    a: str,
) -> list[str]:
    median = statistics.median(ir[group, layer])
    against = median - statistics.median(ir[group, a])
    return [
        f"{median:,.0f}", summarize(ir[group, layer]).range(",.0f"),
        f"{against:+,.0f}" if layer != "bare" else "",
    ]  # fmt: skip


def worker(args: Sequence[str], phase: Callable[[], None]) -> None:
    """Under callgrind: the phases of :func:`schedule`, each layer warmed up in
    a phase of its own and then measured in the next. ``args``: a framework
    or ``direct``, requests, turns, then each version's layer name and folder.

    The layers share the framework's code, whose specialized instructions a
    layer may have to specialize again after another ran: one such change
    costs thousands of instructions once. The warm-up takes most of them out
    of the measured phase, and the median over turns the rest."""
    kind, requests, turns = args[0], int(args[1]), int(args[2])
    folders = {args[i]: Path(args[i + 1]) for i in range(3, len(args), 2)}
    loop = asyncio.new_event_loop()
    if kind == "direct":
        calls = direct_calls(folders)
        order = schedule(direct_groups(), tuple(folders), turns)

        def run(group: tuple[str, ...], layer: str, n: int) -> None:
            calls[group, layer](n)

    else:
        bench = benches(folders, loop, [kind])[kind]
        with quiet_logger():
            bench.verify()
        order = schedule(framework_groups(), bench.layers, turns)

        def run(group: tuple[str, ...], layer: str, n: int) -> None:
            bench.batch(layer, TARGETS[group[0]], n)

    for group, layer in order:
        phase()
        run(group, layer, 50)
        phase()
        run(group, layer, requests)
    loop.close()


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    return None


def _nothing_wsgi(environ: Any, start_response: Any) -> tuple[bytes, ...]:
    return ()


def direct_calls(
    folders: dict[str, Path],
) -> dict[tuple[tuple[str, ...], str], Callable[[int], None]]:
    """((adapter, setup, target), layer) -> a function that calls that
    version's middleware ``n`` times, each on a fresh copy of the scope or
    environ. Each is checked first: it must store the target, relative to
    the mount point."""
    calls: dict[tuple[tuple[str, ...], str], Callable[[int], None]] = {}
    for layer, package in packages(folders).items():
        for protocol, setup, tname in direct_groups():
            module = importlib.import_module(f"{package.__name__}.{protocol}")
            app = _nothing if protocol == "asgi" else _nothing_wsgi
            middleware = module.StrictURLMiddleware(
                app, routes=ROUTES if setup == "routes" else None
            )
            template = _carrier(protocol, TARGETS[tname], MOUNT if setup == "mount" else "")
            call = _asgi_calls if protocol == "asgi" else _wsgi_calls
            seen: list[dict[str, Any]] = []
            call(middleware, template, 1, seen)
            target = seen[0].get("urlguard.target")
            if target is None or target.raw != TARGETS[tname]:
                raise SystemExit(f"bench.adapters: {layer} {protocol} {setup} {tname}: {target!r}")
            calls[(protocol, setup, tname), layer] = functools.partial(call, middleware, template)
    return calls


def _carrier(protocol: str, target: bytes, mount: str) -> dict[str, Any]:
    """The server's scope or environ for ``target`` below ``mount``."""
    if protocol == "asgi":
        scope = uvicorn_scope(target)
        # uvicorn glues root_path in front of raw_path and path.
        scope.update(
            root_path=mount, raw_path=mount.encode() + scope["raw_path"], path=mount + scope["path"]
        )
        return scope
    environ = gunicorn_environ(target)
    environ.update(SCRIPT_NAME=mount, RAW_URI=mount + environ["RAW_URI"])
    return environ


def _asgi_calls(
    middleware: Any, template: dict[str, Any], n: int, seen: list[dict[str, Any]] | None = None
) -> None:
    """``n`` calls; ``seen`` (to check a call) gets each scope after its call."""
    for _ in range(n):
        scope = template.copy()
        call = middleware(scope, None, None)
        try:  # noqa: SIM105 (a with block would be measured too)
            call.send(None)  # the application awaits nothing: done in one step
        except StopIteration:
            pass
        if seen is not None:
            seen.append(scope)


def _wsgi_calls(
    middleware: Any, template: dict[str, Any], n: int, seen: list[dict[str, Any]] | None = None
) -> None:
    """``n`` calls; ``seen`` (to check a call) gets each environ after its call."""
    for _ in range(n):
        environ = template.copy()
        middleware(environ, None)
        if seen is not None:
            seen.append(environ)


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
        help=f"requests per layer and turn under callgrind ({REQUESTS})",
    )  # fmt: skip
    parser.add_argument(
        "--turns", type=int, default=TURNS, help=f"turns over the layers under callgrind ({TURNS})"
    )
    args = parser.parse_args(args_list)
    if min(args.rounds, args.requests, args.turns) < 1:
        parser.error("--rounds, --requests and --turns must be at least 1")
    parts = args.parts or PARTS
    print(header(args_list, "python -m bench.adapters"), flush=True)
    started = time.monotonic()
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
            count_instructions(folders, args.requests, args.turns, print)
    print()
    print(f"load     {load_average()} (1, 5, 15 min) after; {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
