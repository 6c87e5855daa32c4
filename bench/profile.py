"""Where the time goes: a cost ladder and cProfile breakdowns, for tuning.

Not a pass/fail part. The *ladder* times, without any profiler, the steps a
guarded request pays for the two in-process targets: ``parse_target`` alone,
then with ``.segments`` and ``.query`` read, naive decoding for comparison,
and the bare middleware (ASGI and WSGI, in front of an app that does nothing)
minus that app. Interleaved rounds, medians, ns per call.

The *profiles* run cProfile over many calls and list the functions with the
most own time, per call of the whole. cProfile adds a fixed cost to every
Python-level call, so many small calls look dearer than they are: read the
shares as a ranking, and the ladder for the absolute numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import urlguard
from urlguard import cli
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

from .inprocess import TARGETS, gunicorn_environ, uvicorn_scope
from .stats import quiet_gc, rotated, summarize, table


async def _nothing_asgi(scope: Any, receive: Any, send: Any) -> None:
    return None


def _nothing_wsgi(environ: Any, start_response: Any) -> list[bytes]:
    return []


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(message: Any) -> None:
    return None


def _steps(target: bytes, loop: asyncio.AbstractEventLoop) -> dict[str, Callable[[int], int]]:
    """name -> run(n) returning ns for n calls."""
    parse = urlguard.parse_target
    guard_asgi = ASGIGuard(_nothing_asgi)
    guard_wsgi = WSGIGuard(_nothing_wsgi)
    scope = uvicorn_scope(target)
    environ = gunicorn_environ(target)

    def timed(body: Callable[[int], None]) -> Callable[[int], int]:
        def run(n: int) -> int:
            with quiet_gc():
                start = time.perf_counter_ns()
                body(n)
                return time.perf_counter_ns() - start

        return run

    def parse_only(n: int) -> None:
        for _ in range(n):
            parse(target)

    def parse_read(n: int) -> None:
        for _ in range(n):
            t = parse(target)
            t.segments  # noqa: B018
            t.query  # noqa: B018

    def naive(n: int) -> None:
        for _ in range(n):
            path, _, query = target.decode("latin-1").partition("?")
            unquote(path).split("/")
            parse_qsl(query)

    async def asgi(app: Any, n: int) -> None:
        for _ in range(n):
            await app(scope.copy(), _receive, _send)

    def wsgi(app: Any, n: int) -> None:
        for _ in range(n):
            app(environ.copy(), None)

    return {
        "parse_target(raw)": timed(parse_only),
        "parse_target(raw) + .segments + .query": timed(parse_read),
        "naive unquote/split + parse_qsl": timed(naive),
        "ASGI: app that does nothing": timed(
            lambda n: loop.run_until_complete(asgi(_nothing_asgi, n))
        ),
        "ASGI: StrictURLMiddleware(that app)": timed(
            lambda n: loop.run_until_complete(asgi(guard_asgi, n))
        ),
        "WSGI: app that does nothing": timed(lambda n: wsgi(_nothing_wsgi, n)),
        "WSGI: StrictURLMiddleware(that app)": timed(lambda n: wsgi(guard_wsgi, n)),
    }


def ladder(rounds: int, n: int, out: Callable[[str], None] = print) -> None:
    """Print the cost ladder for both targets."""
    loop = asyncio.new_event_loop()
    rows: list[list[str]] = []
    try:
        for tname, target in TARGETS.items():
            steps = _steps(target, loop)
            names = list(steps)
            samples: dict[str, list[float]] = {name: [] for name in names}
            for round_no in range(rounds + 1):
                for name in rotated(names, round_no):
                    elapsed = steps[name](n)
                    if round_no:
                        samples[name].append(elapsed / n)
            medians = {name: summarize(samples[name]) for name in names}
            for name in names:
                s = medians[name]
                rows.append([tname, name, f"{s.median:,.0f}", s.iqr(",.0f")])
            for kind, app, guard in (
                ("ASGI", "ASGI: app that does nothing", "ASGI: StrictURLMiddleware(that app)"),
                ("WSGI", "WSGI: app that does nothing", "WSGI: StrictURLMiddleware(that app)"),
            ):
                cost = [g - a for g, a in zip(samples[guard], samples[app], strict=True)]
                s = summarize(cost)
                rows.append([tname, f"= {kind} middleware cost", f"{s.median:,.0f}", s.iqr(",.0f")])
    finally:
        loop.close()
    out(f"Cost ladder: ns per call, median of {rounds} interleaved rounds of {n:,} calls (IQR)")
    out(table(["target", "step", "ns", "IQR"], rows))


def rejections(rounds: int, n: int, out: Callable[[str], None] = print) -> None:
    """Print what ``parse_target`` costs to reject each malformed target of the
    corpus (the exception raised and caught included), by rule."""
    from .corpus import build

    parse = urlguard.parse_target
    by_rule: dict[str, list[bytes]] = {}
    for raw in build().subset("malformed"):
        try:
            parse(raw)
        except urlguard.InvalidTarget as exc:
            by_rule.setdefault(exc.rule, []).append(raw)

    def reject(targets: list[bytes]) -> int:
        with quiet_gc():
            start = time.perf_counter_ns()
            for _ in range(n):
                for raw in targets:
                    try:  # noqa: SIM105 (as in the micro part)
                        parse(raw)
                    except ValueError:
                        pass
            return time.perf_counter_ns() - start

    rules = sorted(by_rule)
    samples: dict[str, list[float]] = {rule: [] for rule in rules}
    for round_no in range(rounds + 1):
        for rule in rotated(rules, round_no):
            elapsed = reject(by_rule[rule])
            if round_no:
                samples[rule].append(elapsed / (n * len(by_rule[rule])))
    rows = []
    for rule in rules:
        s = summarize(samples[rule])
        example = by_rule[rule][0].decode("ascii", "backslashreplace")
        rows.append(
            [rule, f"{len(by_rule[rule])}", f"{s.median:,.0f}", s.iqr(",.0f"), example[:44]]
        )
    out(
        f"Rejections: ns per malformed corpus target by rule, raise and catch included, "
        f"median of {rounds} rounds (IQR)"
    )
    out(table(["rule", "targets", "ns", "IQR", "first example"], rows))


def _profile(label: str, body: Callable[[], None], calls: int, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    body()
    profiler.disable()
    stats = pstats.Stats(profiler)
    entries: list[tuple[float, int, str]] = []
    total = 0.0
    raw_stats: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, func), (_cc, ncalls, tottime, _ct, _callers) in raw_stats.items():
        total += tottime
        where = filename.rsplit("/", 1)[-1]
        name = f"{func}" if filename == "~" else f"{where}:{line} {func}"
        entries.append((tottime, ncalls, name))
    entries.sort(reverse=True)
    rows = [
        [name[:70], f"{n / calls:.2f}", f"{own / calls * 1e9:,.0f}", f"{own / total:.1%}"]
        for own, n, name in entries[:top]
    ]  # fmt: skip
    head = f"{label}: {calls:,} calls under cProfile, {total / calls * 1e9:,.0f} ns each (inflated)"
    return head + "\n" + table(["function (own time)", "calls/call", "ns/call", "share"], rows)


def profiles(calls: int, top: int, out: Callable[[str], None] = print) -> None:
    """Print cProfile breakdowns of parse_target and of guarded in-process requests."""
    from .apps import flask_hello, starlette_hello
    from .inprocess import _asgi_batch, _wsgi_batch

    loop = asyncio.new_event_loop()
    try:
        for tname, target in TARGETS.items():

            def parse(target: bytes = target) -> None:
                for _ in range(calls):
                    t = urlguard.parse_target(target)
                    t.segments  # noqa: B018
                    t.query  # noqa: B018

            out(_profile(f"parse_target + reads, {tname}", parse, calls, top))
            out("")
            scope = uvicorn_scope(target)
            environ = gunicorn_environ(target)
            # Warm up: first requests build middleware stacks and caches.
            loop.run_until_complete(_asgi_batch(starlette_hello.guarded, scope, 50))
            _wsgi_batch(flask_hello.guarded, environ, 20)

            def asgi(scope: dict[str, Any] = scope) -> None:
                batch = _asgi_batch(starlette_hello.guarded, scope, calls // 10)
                loop.run_until_complete(batch)

            def wsgi(environ: dict[str, Any] = environ) -> None:
                _wsgi_batch(flask_hello.guarded, environ, calls // 50)

            out(_profile(f"Starlette guarded request, {tname}", asgi, calls // 10, top))
            out("")
            out(_profile(f"Flask guarded request, {tname}", wsgi, calls // 50, top))
            out("")
        out(_profile_audit(calls, top))
    finally:
        loop.close()


def _profile_audit(lines: int, top: int) -> str:
    """cProfile of ``urlguard audit`` over an all-distinct log of ``lines`` lines."""
    from .audit import distinct_targets, write_log
    from .corpus import build

    with tempfile.TemporaryDirectory(prefix="urlguard-bench-") as tmp:
        path = Path(tmp, "distinct.log")
        corpus = build()
        write_log(path, distinct_targets(corpus, lines), corpus.seed)

        def audit() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main(["audit", "--json", str(path)])

        return _profile("urlguard audit, all-distinct log, per line", audit, lines, top)
