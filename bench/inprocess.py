"""In-process part: the hello-world apps called directly, each request on a fresh
copy of a scope or environ as uvicorn (httptools) and gunicorn build them.
"""

from __future__ import annotations

import asyncio
import functools
import io
import logging
import sys
import time
from collections.abc import Callable, MutableMapping
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

from .parsers import available
from .summary import Results
from .timing import calls_per, collect, collector_off, fastest_of_two, iqr, markdown, ratios

TARGETS = {
    "plain": b"/api/v1/users/12345/orders?limit=10&page=2",
    "encoded": b"/wiki/Caf%C3%A9?q=caf%C3%A9+au+lait&lang=fr",
}
HOSTILE = b"/wiki/a%2Fb"
#: The allow-list of the ``guarded-allowlist`` layer: the requests' host among others.
ALLOWED = ["example.com", "*.example.com", "127.0.0.1"]
HELLO = b"Hello, world!"
BATCH_SECONDS = 0.001

Carrier = MutableMapping[str, Any]
Key = tuple[str, str, str]  # (framework, case, layer)
#: Layer name -> the arguments that make its app (bench/apps).
Layers = dict[str, dict[str, Any]]


#: What every revision answers (bench.ab): its guard as it comes (older ones take no parser=).
REVISION: Layers = {"bare": {"layer": "bare"}, "guarded-urlguard": {"layer": "guarded"}}


def layers() -> Layers:
    """``bare``, ``noop``, ``floor``, ``guarded-NAME`` per parser, and ``guarded-allowlist``."""
    found: Layers = {layer: {"layer": layer} for layer in ("bare", "noop", "floor")}
    for name, module in available().items():
        found[f"guarded-{name}"] = {"layer": "guarded", "parser": module}
    found["guarded-allowlist"] = {"layer": "guarded", "allowed_hosts": ALLOWED}
    return found


def uvicorn_scope(target: bytes) -> dict[str, Any]:
    """The scope uvicorn's httptools protocol gives an app for ``GET target``."""
    raw_path, _, query = target.partition(b"?")
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 51234),
        "scheme": "http", "root_path": "", "state": {}, "method": "GET",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"wrk"), (b"accept", b"*/*")],
        "path": unquote(raw_path.decode("ascii")), "raw_path": raw_path, "query_string": query,
    }  # fmt: skip


def gunicorn_environ(target: bytes) -> dict[str, Any]:
    """The environ gunicorn's sync worker gives an app for ``GET target``."""
    raw_path, _, query = target.partition(b"?")
    return {
        "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": False, "wsgi.run_once": False, "wsgi.input_terminated": True,
        "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http", "SERVER_SOFTWARE": "gunicorn",
        "REQUEST_METHOD": "GET", "QUERY_STRING": query.decode("latin-1"),
        "RAW_URI": target.decode("latin-1"), "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000", "HTTP_USER_AGENT": "wrk", "HTTP_ACCEPT": "*/*",
        "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "51234", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
        "SCRIPT_NAME": "",
    }  # fmt: skip


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _drop(message: Carrier) -> None:
    return None


def _close(body: Any) -> None:
    if hasattr(body, "close"):
        body.close()


def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
    return None


class Framework:
    """One framework's apps, one behind each layer, and how to call them."""

    def __init__(self, name: str, layers: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
        self.name, self.layers, self.loop = name, layers, loop

    def batch(self, layer: str, target: bytes, n: int) -> int:
        """Nanoseconds for ``n`` requests for ``target``."""
        app = self.layers[layer]
        if self.name == "starlette":
            return self.loop.run_until_complete(_asgi_batch(app, uvicorn_scope(target), n))
        template = gunicorn_environ(target)
        start = time.perf_counter_ns()
        for _ in range(n):
            environ = template.copy()
            environ["wsgi.input"] = io.BytesIO()
            body = app(environ, _start_response)
            for _chunk in body:
                pass
            _close(body)
        return time.perf_counter_ns() - start

    def batch_size(self, target: bytes) -> int:
        """Requests in about BATCH_SECONDS of the bare app, sized on batches of 20
        so that a batch's own set-up is not counted per request."""
        return 20 * calls_per(BATCH_SECONDS, functools.partial(self.batch, "bare", target, 20))

    def time_layers(self, targets: dict[str, bytes], round_no: int, n: int) -> dict[str, float]:
        """µs per request of each layer on its target: the faster of two batches of
        ``n``, the layers in their ``round_no``-th order."""

        def batch(layer: str) -> int:
            return self.batch(layer, targets[layer], n)

        fastest = fastest_of_two(list(targets), round_no, batch)
        return {layer: ns / n / 1000 for layer, ns in fastest.items()}

    def once(self, layer: str, target: bytes) -> tuple[int, bytes, Carrier]:
        """One request: its status, body, and the scope or environ after it."""
        app, sent = self.layers[layer], []
        if self.name == "starlette":

            async def send(message: Carrier) -> None:
                sent.append(message)

            scope = uvicorn_scope(target)
            self.loop.run_until_complete(app(scope, _receive, send))
            body = b"".join(m.get("body", b"") for m in sent)
            return next(m["status"] for m in sent if "status" in m), body, scope
        environ = gunicorn_environ(target)
        chunks = app(environ, lambda status, *_: sent.append({"status": int(status[:3])}))
        body = b"".join(chunks)
        _close(chunks)
        return sent[0]["status"], body, environ

    def verify(self) -> None:
        """Refuse to time a layer that does not answer 200 "Hello, world!" to both
        targets, or a guard that stores no ``Target`` or lets the hostile one in."""
        for layer in self.layers:
            guarded = layer.startswith("guarded") or layer == "floor"
            for target in TARGETS.values():
                status, body, carrier = self.once(layer, target)
                stored = "urlguard.target" in carrier
                if status != 200 or body != HELLO or stored != guarded:
                    raise RuntimeError(f"{self.name} {layer} {target!r}: {status} {body!r}")
            if (self.once(layer, HOSTILE)[0] == 400) != guarded:
                raise RuntimeError(f"{self.name} {layer}: the hostile target was not refused")


async def _asgi_batch(app: Any, template: dict[str, Any], n: int) -> int:
    start = time.perf_counter_ns()
    for _ in range(n):
        scope = template.copy()
        scope["state"] = {}
        await app(scope, _receive, _drop)
    return time.perf_counter_ns() - start


class InProcess:
    """Both frameworks behind each layer of ``spec``, checked, then timed a round at a
    time on each case: name -> each layer's target (default: TARGETS, for all)."""

    def __init__(
        self,
        spec: Layers,
        cases: dict[str, dict[str, bytes]] | None = None,
        check: Callable[[Framework], None] = Framework.verify,
    ) -> None:
        from .apps import flask_app, starlette_app

        logging.getLogger("urlguard").disabled = True  # its warning for each hostile target
        self.loop = asyncio.new_event_loop()
        self.frameworks = [
            Framework(name, {layer: make(**app) for layer, app in spec.items()}, self.loop)
            for name, make in (("starlette", starlette_app), ("flask", flask_app))
        ]
        for framework in self.frameworks:
            check(framework)
        self.cases = cases or {tname: dict.fromkeys(spec, t) for tname, t in TARGETS.items()}

    def size_batches(self) -> None:
        """Requests per batch of each framework and case (:meth:`Framework.batch_size`)."""
        self.sizes = {
            (f.name, tname): f.batch_size(case["bare"])
            for f in self.frameworks
            for tname, case in self.cases.items()
        }

    def round(self, round_no: int) -> dict[Key, float]:
        """(framework, case, layer) -> µs per request, this round."""
        times: dict[Key, float] = {}
        with collector_off():
            for f in self.frameworks:
                for tname, case in self.cases.items():
                    layers = f.time_layers(case, round_no, self.sizes[f.name, tname])
                    times.update(((f.name, tname, layer), us) for layer, us in layers.items())
        return times

    def timed(self, rounds: int, name: str) -> dict[Key, list[float]]:
        """Each (framework, case, layer)'s µs per request over ``rounds`` rounds."""
        try:
            self.size_batches()
            return collect(self.round, rounds, name)
        finally:
            self.close()

    def close(self) -> None:
        self.loop.close()


def run(rounds: int, results: Results) -> None:
    """Time every layer of both frameworks for both targets; print one table."""
    samples = InProcess(layers()).timed(rounds, "in-process")
    rows = []
    for (framework, tname, layer), values in samples.items():
        spread = iqr(ratios(values, samples[framework, tname, "bare"]))
        rows.append([framework, tname, layer, iqr(values).text(".2f"), spread.text()])
        if layer.startswith("guarded-"):
            results[f"{framework} {tname}", layer.removeprefix("guarded-")] = spread
    print(f"In process: µs per request and ratio to bare, {rounds} rounds: median (IQR)")
    print(markdown(["app", "target", "layer", "µs per request", "× bare"], rows))
