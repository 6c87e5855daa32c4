"""urlguard in front of a FastAPI application.

Every request target is checked, raw, by ``urlguard.asgi.StrictURLMiddleware``
with the default (strict) policy before FastAPI routes it; under ``/files/``
a per-route policy keeps ``%2F`` inside its segment, and so does one under
``/units/``, where ``{unit:segment}`` receives one segment, ``%2F`` and all. The handler takes the
guarded target as a dependency (``GuardedTarget``), so it never reads the
decoded ``request.url.path`` (where ``%2F`` has already become ``/`` and
invalid UTF-8 has become U+FFFD).

    GET /echo/<anything>   ->  {"segments": [...], "query": [[name, value], ...]}
    GET /files/<anything>  ->  the same, with encoded slashes kept
    GET /units/<unit>      ->  {"unit": "<the decoded segment>"}

Start it from the project root (uvicorn listens on 127.0.0.1:8000)::

    uvicorn example_apps.fastapi_app:app
    uvicorn --app-dir example_apps fastapi_app:app

Then try (``--path-as-is``: without it curl resolves ``..`` and ``%2e`` itself)::

    curl --path-as-is 'http://127.0.0.1:8000/echo/caf%C3%A9/x?q=a+b&q=%E2%82%AC'
    {"segments":["echo","café","x"],"query":[["q","a b"],["q","€"]]}

    curl --path-as-is 'http://127.0.0.1:8000/files/blue%2Fred%3Fand+green'
    {"segments":["files","blue/red?and+green"],"query":[]}

    curl --path-as-is 'http://127.0.0.1:8000/units/kg%2Fs'
    {"unit":"kg/s"}

    curl --path-as-is 'http://127.0.0.1:8000/units/..%2Fetc'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/echo/blue%2Fred'
    400 Bad Request: encoded-slash: a path segment contains an encoded '/' (%2F)
        (path segment 1, byte offset 10)

    curl --path-as-is 'http://127.0.0.1:8000/echo/%ED%A0%80'
    400 Bad Request: invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)
        (path segment 1, byte offset 6)

    curl --path-as-is 'http://127.0.0.1:8000/echo/%252e%252e'
    400 Bad Request: double-encoding: a decoded path segment still contains a
        percent-escape (path segment 1, byte offset 6)

    curl --path-as-is 'http://127.0.0.1:8000/echo/a%5Cb'
    400 Bad Request: encoded-backslash: a path segment contains an encoded '\\' (%5C)
        (path segment 1, byte offset 7)

(The 400 bodies are one line each, wrapped here.)
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import FastAPI

from urlguard.asgi import StrictURLMiddleware
from urlguard.integrations.fastapi import GuardedTarget  # and registers {name:segment}

#: Raw path prefix -> overrides of the default policy.
ROUTES: Final[dict[str, dict[str, Any]]] = {
    "/files/": {"encoded_slash": "keep"},
    "/units/": {"encoded_slash": "keep"},
}

app = FastAPI()
app.add_middleware(StrictURLMiddleware, routes=ROUTES)


@app.get("/echo/{rest:path}")
@app.get("/files/{rest:path}")
async def echo(target: GuardedTarget) -> dict[str, list[Any]]:
    """The decoded segments of the whole path and the query pairs."""
    return {"segments": list(target.segments), "query": [list(pair) for pair in target.query]}


@app.get("/units/{unit:segment}")
async def unit(unit: str) -> dict[str, str]:
    """One segment of the guarded target, decoded: ``kg%2Fs`` is ``kg/s``."""
    return {"unit": unit}
