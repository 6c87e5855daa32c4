"""In-process benchmark: the hello-world apps called directly, no sockets.

Each request gets a fresh scope (ASGI) or environ (WSGI) shaped the way
uvicorn with httptools and gunicorn's sync worker build them: ``raw_path``,
``query_string`` and the decoded ``path`` for ASGI; ``RAW_URI``,
``PATH_INFO`` (unquoted to latin-1), ``QUERY_STRING`` and the rest of
gunicorn's keys for WSGI. Copying the template is part of every variant's
time, as building it is part of every server's.

ASGI apps run on one event loop, reused: a batch of requests is one
``run_until_complete``, each request awaited in turn with a ``receive`` that
returns an empty body and a ``send`` that drops the messages. WSGI apps are
called with a ``start_response`` stub and their body iterated and closed.

Before timing, every variant must answer 200 "Hello, world!" for both
targets, and the guarded one must answer 400 for a hostile target and leave a
``Target`` at ``urlguard.target``: a benchmark of a guard that is not on, or
of an app that answers 404, would be worthless.

Rounds are interleaved (bare, noop, stored and guarded back to back,
rotated), with
the collector off during each round. Batches are short (about 1 ms by
default): on a shared 2-core machine most of them then run without being
preempted, and the median over many rounds is clean. The ratio is
guarded/bare (and noop/bare, stored/bare) within each round, summarised over
rounds. Rounds are cheap (about 16 ms), so there are many: on this machine
the per-round ratios spread by about ±10 %, and the median of 1,000 of them
still moves by up to two hundredths from run to run (seen: 1.194 and 1.174).

``stored`` (see ``bench.apps``) stores a ``Target`` parsed when the target was
first seen: between it and ``guarded`` lies the guard's parsing and checking,
between ``bare`` and it what any guard costs before it judges.

``guarded`` runs the parser this process chose (``urlguard.IMPLEMENTATION``,
the compiled one wherever it was built); ``guarded-py`` is the same guarded
app with the middlewares' parser pointed at the pure-Python reference for
its batches, so both are measured in the same rounds.
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, unquote_to_bytes
from wsgiref.types import WSGIApplication, WSGIEnvironment
from wsgiref.util import FileWrapper

import urlguard
from urlguard import Target

from .stats import Check, Goal, quiet_gc, ratios, rotated, summarize, table

TARGETS: dict[str, bytes] = {
    "plain": b"/api/v1/users/12345/orders?limit=10&page=2",
    "encoded": b"/wiki/Caf%C3%A9?q=caf%C3%A9+au+lait&lang=fr",
}
HOSTILE = b"/wiki/a%2Fb"
LAYERS = ("bare", "noop", "stored", "guarded", "guarded-py")
HELLO = b"Hello, world!"

# The goals of the compiled parser's guard ("guarded"); the reference's
# guard ("guarded-py") is shown beside it, without a goal of its own.
GOALS = {
    ("starlette", "plain"): Goal("in-process: Starlette plain, guarded/bare", 1.08, at_most=True),
    ("starlette", "encoded"): Goal(
        "in-process: Starlette encoded, guarded/bare", 1.08, at_most=True
    ),
    ("flask", "plain"): Goal("in-process: Flask plain, guarded/bare", 1.02, at_most=True),
    ("flask", "encoded"): Goal("in-process: Flask encoded, guarded/bare", 1.02, at_most=True),
}


_PARSERS = ("urlguard._parser", "urlguard._parser_c", "urlguard._parser_py")
# (module, name, function name) of every binding to the chosen parser, found
# once: walking sys.modules per batch would be counted in the instruction
# part's phases.
_SITES: list[tuple[Any, str, str]] = []


def _parser_sites() -> list[tuple[Any, str, str]]:
    if not _SITES:
        from urlguard import _parser

        names = ("parse_target", "parse_split_target", "decider_for")
        chosen = {id(getattr(_parser, name)): name for name in names}
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("urlguard.") and module_name not in _PARSERS:
                for name, value in list(vars(module).items()):
                    function = chosen.get(id(value))
                    if function is not None:
                        _SITES.append((module, name, function))
    return _SITES


@contextmanager
def reference_parser() -> Iterator[None]:
    """Point urlguard's modules (the guard, the middlewares) at the pure-Python
    reference parser for a while: every module global that holds the chosen
    parser's parse_target, parse_split_target or decider_for. A guard asks
    for its decider when it is made, so a guard that is to run on the
    reference must be made inside this too."""
    from urlguard import _parser_py

    saved = []
    for module, name, function in _parser_sites():
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, getattr(_parser_py, function))
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Any], Callable[[Message], Any]], Any]

# --- ASGI, as uvicorn (httptools) builds the scope -----------------------------------


def uvicorn_scope(target: bytes) -> dict[str, Any]:
    """The scope uvicorn's httptools protocol gives an app for ``GET target``."""
    raw_path, _, query = target.partition(b"?")
    path = raw_path.decode("ascii")
    if "%" in path:
        path = unquote(path)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 51234),
        "scheme": "http",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"user-agent", b"wrk/4.1.0"),
            (b"accept", b"*/*"),
        ],
        "state": {},
        "method": "GET",
        "path": path,
        "raw_path": raw_path,
        "query_string": query,
    }


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _drop(message: Message) -> None:
    return None


async def _asgi_batch(app: ASGIApp, template: dict[str, Any], n: int) -> None:
    for _ in range(n):
        scope = template.copy()
        scope["state"] = {}
        await app(scope, _receive, _drop)


async def _asgi_timed(app: ASGIApp, template: dict[str, Any], n: int) -> int:
    """Nanoseconds for ``n`` requests, timed inside the loop (not its start-up)."""
    start = time.perf_counter_ns()
    for _ in range(n):
        scope = template.copy()
        scope["state"] = {}
        await app(scope, _receive, _drop)
    return time.perf_counter_ns() - start


async def _asgi_once(app: ASGIApp, target: bytes) -> tuple[int, bytes, Scope]:
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    scope = uvicorn_scope(target)
    await app(scope, _receive, send)
    status = next(int(m["status"]) for m in messages if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, body, scope


# --- WSGI, as gunicorn (sync worker) builds the environ ---------------------------------


def gunicorn_environ(target: bytes) -> dict[str, Any]:
    """The environ gunicorn's sync worker gives an app for ``GET target``."""
    raw_path, _, query = target.partition(b"?")
    return {
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.file_wrapper": FileWrapper,
        "wsgi.input_terminated": True,
        "SERVER_SOFTWARE": "gunicorn/27.0.1",
        "wsgi.input": io.BytesIO(),
        "gunicorn.socket": None,
        "REQUEST_METHOD": "GET",
        "QUERY_STRING": query.decode("latin-1"),
        "RAW_URI": target.decode("latin-1"),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": "wrk/4.1.0",
        "HTTP_ACCEPT": "*/*",
        "wsgi.url_scheme": "http",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "51234",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
        "SCRIPT_NAME": "",
    }


def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
    return _write


def _write(data: bytes) -> None:
    return None


def _wsgi_batch(app: WSGIApplication, template: dict[str, Any], n: int) -> None:
    for _ in range(n):
        environ = template.copy()
        environ["wsgi.input"] = io.BytesIO()
        body: Iterable[bytes] = app(environ, _start_response)
        for _chunk in body:
            pass
        close = getattr(body, "close", None)
        if close is not None:
            close()


def _wsgi_once(app: WSGIApplication, target: bytes) -> tuple[int, bytes, WSGIEnvironment]:
    statuses: list[str] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        statuses.append(status)
        return _write

    environ = gunicorn_environ(target)
    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(statuses[0].split()[0]), body, environ


@contextmanager
def quiet_logger() -> Iterator[None]:
    """Keep the guard's one warning per rejected target off the tables."""
    logger = logging.getLogger("urlguard")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


# --- the benchmark ----------------------------------------------------------------------


class Bench:
    """One framework's layers and how to run a batch of each.

    ``apps`` maps each layer's name to its app, for other sets of layers than
    :data:`LAYERS` (``bench.adapters``): a name starting with ``guarded`` is
    a guard, so it must store a target and refuse the hostile one."""

    def __init__(
        self, framework: str, loop: asyncio.AbstractEventLoop, apps: dict[str, Any] | None = None
    ) -> None:
        self.framework = framework
        self.loop = loop
        if apps is None:
            if framework == "starlette":
                from .apps import starlette_hello as module
            else:
                from .apps import flask_hello as module  # type: ignore[no-redef]
            apps = {layer: getattr(module, layer) for layer in LAYERS if layer != "guarded-py"}
            with reference_parser():  # a guard of its own, made on the reference
                apps["guarded-py"] = module.make_app("guarded")
        self.layers = tuple(apps)
        if framework == "starlette":
            self.asgi: dict[str, ASGIApp] = apps
        else:
            self.wsgi: dict[str, WSGIApplication] = apps

    def once(self, layer: str, target: bytes) -> tuple[int, bytes, MutableMapping[str, Any]]:
        """One request, with its status, body and the scope/environ after it."""
        if layer == "guarded-py":
            with reference_parser():
                return self._once(layer, target)
        return self._once(layer, target)

    def _once(self, layer: str, target: bytes) -> tuple[int, bytes, MutableMapping[str, Any]]:
        if self.framework == "starlette":
            return self.loop.run_until_complete(_asgi_once(self.asgi[layer], target))
        return _wsgi_once(self.wsgi[layer], target)

    def batch(self, layer: str, target: bytes, n: int) -> int:
        """Nanoseconds for ``n`` requests for ``target`` (the caller turns the
        collector off)."""
        if layer == "guarded-py":
            with reference_parser():
                return self._batch(layer, target, n)
        return self._batch(layer, target, n)

    def _batch(self, layer: str, target: bytes, n: int) -> int:
        if self.framework == "starlette":
            timed = _asgi_timed(self.asgi[layer], uvicorn_scope(target), n)
            return self.loop.run_until_complete(timed)
        environ = gunicorn_environ(target)
        wsgi = self.wsgi[layer]
        start = time.perf_counter_ns()
        _wsgi_batch(wsgi, environ, n)
        return time.perf_counter_ns() - start

    def verify(self) -> None:
        """Refuse to time anything that does not behave (see the module docstring)."""
        with quiet_logger():
            self._verify()

    def _verify(self) -> None:
        for layer in self.layers:
            guard = layer.startswith("guarded")
            for name, target in TARGETS.items():
                status, body, scope = self.once(layer, target)
                if status != 200 or body != HELLO:
                    raise RuntimeError(f"{self.framework} {layer} {name}: {status} {body[:60]!r}")
                if (guard or layer == "stored") != ("urlguard.target" in scope):
                    raise RuntimeError(f"{self.framework} {layer}: urlguard.target not as expected")
                if guard and not self._parsed_by_the_right_parser(layer, scope):
                    raise RuntimeError(f"{self.framework} {layer}: the target is not its parser's")
            status, _, _ = self.once(layer, HOSTILE)
            if (status == 400) != guard:
                raise RuntimeError(f"{self.framework} {layer}: hostile target got {status}")

    @staticmethod
    def _parsed_by_the_right_parser(layer: str, scope: MutableMapping[str, Any]) -> bool:
        """The reference hands over a ``Target`` itself; the compiled parser, for
        these origin-form targets, its subclass whose pieces are made when read."""
        made_by_the_reference = type(scope["urlguard.target"]) is Target
        if layer == "guarded-py" or urlguard.IMPLEMENTATION == "python":
            return made_by_the_reference
        return layer != "guarded" or not made_by_the_reference


Samples = dict[tuple[str, str, str], list[float]]


def batch_sizes(benches: dict[str, Bench], batch_ms: float) -> dict[tuple[str, str], int]:
    """Check every bench, then size its batches: requests per ``batch_ms`` of
    the bare app, per (framework, target)."""
    sizes: dict[tuple[str, str], int] = {}
    for name, bench in benches.items():
        bench.verify()
        for tname, target in TARGETS.items():
            with quiet_gc():
                bench.batch("bare", target, 50)  # warm up
                # The quickest of a few tries: a preempted try would make batches too short.
                per_request = min(bench.batch("bare", target, 100) for _ in range(5)) / 100
            sizes[name, tname] = max(5, round(batch_ms * 1e6 / per_request))
    return sizes


def interleave(
    benches: dict[str, Bench],
    sizes: dict[tuple[str, str], int],
    rounds: int,
    order: Callable[[Sequence[str], int], list[str]] = rotated,
) -> Samples:
    """µs per request of every layer, per round: (framework, target, layer) ->
    one value per round, the layers back to back in each round, in the
    ``order`` of that round (rotated by default)."""
    samples: Samples = {}
    for round_no in range(rounds + 1):  # round 0 warms up and is dropped
        with quiet_gc():
            for name, bench in benches.items():
                for tname, target in TARGETS.items():
                    n = sizes[name, tname]
                    for layer in order(bench.layers, round_no):
                        elapsed = bench.batch(layer, target, n)
                        if round_no:
                            samples.setdefault((name, tname, layer), []).append(elapsed / n / 1000)
        print(f"  in-process round {round_no}/{rounds}", file=sys.stderr, end="\r", flush=True)
    print(file=sys.stderr)
    return samples


def run(rounds: int, batch_ms: float, out: Callable[[str], None] = print) -> list[Check]:
    """Time every layer for both frameworks and targets; print one table."""
    loop = asyncio.new_event_loop()
    try:
        return _run(loop, rounds, batch_ms, out)
    finally:
        loop.close()


def _run(
    loop: asyncio.AbstractEventLoop, rounds: int, batch_ms: float, out: Callable[[str], None]
) -> list[Check]:
    benches = {name: Bench(name, loop) for name in ("starlette", "flask")}
    sizes = batch_sizes(benches, batch_ms)
    samples = interleave(benches, sizes, rounds)

    rows: list[list[str]] = []
    checks: list[Check] = []
    for name in benches:
        for tname in TARGETS:
            bare = samples[name, tname, "bare"]
            for layer in LAYERS:
                s = summarize(samples[name, tname, layer])
                r = summarize(ratios(samples[name, tname, layer], bare))
                floor = s.lo / min(bare)
                goal = GOALS[name, tname] if layer == "guarded" else None
                rows.append([
                    name, tname, layer, f"{s.median:.2f}", s.iqr(".2f"), s.range(".2f"),
                    f"{r.median:.3f}", r.iqr(".3f"), f"{floor:.3f}",
                    f"{goal.text()} {goal.verdict(r.median)}" if goal else "",
                ])  # fmt: skip
                if goal:
                    checks.append(Check(goal, r.median, f"IQR {r.iqr('.3f')}"))
    out(
        f"In-process: µs per request, median of {rounds} interleaved rounds (IQR, min–max); "
        "ratio = variant/bare within each round; ×bare of minima = fastest batch / fastest bare "
        "batch (the floor, least touched by a busy machine)"
    )
    out(", ".join(f"{n} {t}: {sizes[n, t]} requests per batch" for n, t in sizes))
    out(f"guarded = the {urlguard.IMPLEMENTATION} parser, guarded-py = the pure-Python reference")
    headers = [
        "app", "target", "layer", "µs", "IQR", "min–max", "×bare", "×bare IQR",
        "×bare of minima", "goal",
    ]  # fmt: skip
    out(table(headers, rows))
    return checks
