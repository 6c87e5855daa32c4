"""urlguard in front of a Starlette application.

Every request target is checked, raw, by ``urlguard.asgi.StrictURLMiddleware``
with the default (strict) policy before Starlette routes it; under ``/files/``
a per-route policy keeps ``%2F`` inside its segment, and so does one under
``/units/``, where ``{unit:segment}`` receives one segment, ``%2F`` and all. The handlers read the
decoded pieces from the guarded target, never from ``request.url.path``
(where ``%2F`` has already become ``/`` and invalid UTF-8 has become U+FFFD).

    GET /echo/<anything>   ->  {"segments": [...], "query": [[name, value], ...]}
    GET /files/<anything>  ->  the same, with encoded slashes kept
    GET /units/<unit>      ->  {"unit": "<the decoded segment>"}

Start it from the project root (uvicorn listens on 127.0.0.1:8000)::

    uvicorn example_apps.starlette_app:app
    uvicorn --app-dir example_apps starlette_app:app

Then try (``--path-as-is``: without it curl resolves ``..`` and ``%2e`` itself)::

    curl --path-as-is 'http://127.0.0.1:8000/echo/caf%C3%A9/x?q=a+b'
    {"segments":["echo","café","x"],"query":[["q","a b"]]}

    curl --path-as-is 'http://127.0.0.1:8000/files/units/kg%2Fs'
    {"segments":["files","units","kg/s"],"query":[]}

    curl --path-as-is 'http://127.0.0.1:8000/units/kg%2Fs'
    {"unit":"kg/s"}

    curl --path-as-is 'http://127.0.0.1:8000/units/..%2Fetc'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/echo/units/kg%2Fs'
    400 Bad Request: encoded-slash: a path segment contains an encoded '/' (%2F)
        (path segment 2, byte offset 14)

    curl --path-as-is 'http://127.0.0.1:8000/echo/%C4rzteblatt'
    400 Bad Request: invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)
        (path segment 1, byte offset 6)

    curl --path-as-is 'http://127.0.0.1:8000/echo/%2e%2e/etc/passwd'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 6)

    curl --path-as-is 'http://127.0.0.1:8000/echo/a?q=%zz'
    400 Bad Request: malformed-escape: '%' is not followed by two hexadecimal digits
        (RFC 3986 section 2.1) (query parameter 0, byte offset 10)

    curl --path-as-is -H 'Accept: application/json' 'http://127.0.0.1:8000/echo/%E2%80%AE'
    {"type":"about:blank","title":"Bad Request","status":400,"detail":"forbidden-char: a
        decoded character is a bidirectional control (Unicode TR9; CVE-2021-42574)
        (path segment 1, byte offset 6)",
        "rule":"forbidden-char","component":"path","index":1,"offset":6}

(The 400 bodies are one line each, wrapped here.)
"""

from __future__ import annotations

from typing import Any, Final

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from urlguard.asgi import StrictURLMiddleware
from urlguard.integrations.starlette import get_target  # and registers {name:segment}

#: Raw path prefix -> overrides of the default policy.
ROUTES: Final[dict[str, dict[str, Any]]] = {
    "/files/": {"encoded_slash": "keep"},
    "/units/": {"encoded_slash": "keep"},
}


async def echo(request: Request) -> JSONResponse:
    """The decoded segments of the whole path and the query pairs."""
    target = get_target(request)
    return JSONResponse(
        {"segments": list(target.segments), "query": [list(pair) for pair in target.query]}
    )


async def unit(request: Request) -> JSONResponse:
    """One segment of the guarded target, decoded: ``kg%2Fs`` is ``kg/s``."""
    return JSONResponse({"unit": request.path_params["unit"]})


app = Starlette(
    routes=[
        Route("/echo/{rest:path}", echo),
        Route("/files/{rest:path}", echo),
        Route("/units/{unit:segment}", unit),
    ],
    middleware=[Middleware(StrictURLMiddleware, routes=ROUTES)],
)
