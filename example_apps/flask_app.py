"""urlguard in front of a Flask application.

Every request target is checked, raw, by ``urlguard.wsgi.StrictURLMiddleware``
with the default (strict) policy before Flask routes it; under ``/files/`` a
per-route policy keeps ``%2F`` inside its segment, and so does one under
``/units/``, where ``<segment:unit>`` receives one segment, ``%2F`` and all. The handlers
read the decoded pieces from the guarded target, never from ``request.path``
(where ``%2F`` has already become ``/``).

    GET /echo/<anything>   ->  {"segments": [...], "query": [[name, value], ...]}
    GET /files/<anything>  ->  the same, with encoded slashes kept
    GET /units/<unit>      ->  {"unit": "<the decoded segment>"}

Start it from the project root, under gunicorn (127.0.0.1:8000) or Flask's
development server (127.0.0.1:5000)::

    gunicorn --chdir example_apps flask_app:app
    flask --app example_apps/flask_app run

Then try (``--path-as-is``: without it curl resolves ``..`` and ``%2e`` itself)::

    curl --path-as-is 'http://127.0.0.1:8000/echo/caf%C3%A9/x?q=a+b'
    {"query":[["q","a b"]],"segments":["echo","caf\\u00e9","x"]}

    curl --path-as-is 'http://127.0.0.1:8000/files/units/kg%2Fs'
    {"query":[],"segments":["files","units","kg/s"]}

    curl --path-as-is 'http://127.0.0.1:8000/files/.git%2Fconfig'
    {"query":[],"segments":["files",".git/config"]}

    curl --path-as-is 'http://127.0.0.1:8000/files/%2Fetc%2Fpasswd'
    400 Bad Request: empty-segment: the path contains an empty segment ('//')
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/files/..%2F..%2Fetc%2Fpasswd'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/units/kg%2Fs'
    {"unit":"kg/s"}

    curl --path-as-is 'http://127.0.0.1:8000/units/caf%C3%A9'
    {"unit":"caf\\u00e9"}

    curl --path-as-is 'http://127.0.0.1:8000/units/..%2Fetc'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/echo/units/kg%2Fs'
    400 Bad Request: encoded-slash: a path segment contains an encoded '/' (%2F)
        (path segment 2, byte offset 14)

    curl --path-as-is 'http://127.0.0.1:8000/echo/%C0%AF'
    400 Bad Request: invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)
        (path segment 1, byte offset 6)

    curl --path-as-is 'http://127.0.0.1:8000/echo/a/..;/b'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 2, byte offset 8)

    curl --path-as-is 'http://127.0.0.1:8000/echo/a?q=%00'
    400 Bad Request: forbidden-char: a decoded character is a control character
        (C0, DEL or C1) (query parameter 0, byte offset 10)

    curl --path-as-is -H 'Accept: application/json' 'http://127.0.0.1:8000/echo/a//b'
    {"type":"about:blank","title":"Bad Request","status":400,"detail":"empty-segment: the
        path contains an empty segment ('//') (path segment 2, byte offset 8)",
        "rule":"empty-segment","component":"path","index":2,"offset":8}

(The 400 bodies are one line each, wrapped here; under ``flask run`` the port
is 5000. Flask writes ``\\u00e9`` for ``é``: the same JSON string.) A kept
``%2F`` is data inside one segment: the parts it separates may be neither
``..`` nor empty, but ``.git/config`` above passes. Never join such a segment
into a file system path (docs/security.md, "What a kept %2F still means").
"""

from __future__ import annotations

from typing import Any, Final

from flask import Flask
from werkzeug.routing import BaseConverter

from urlguard.integrations.flask import SegmentConverter, get_target
from urlguard.wsgi import StrictURLMiddleware

#: Raw path prefix -> overrides of the default policy.
ROUTES: Final[dict[str, dict[str, Any]]] = {
    "/files/": {"encoded_slash": "keep"},
    "/units/": {"encoded_slash": "keep"},
}


class Anything(BaseConverter):
    """The rest of the decoded path, whatever it is: empty, or starting with
    ``/`` (a kept ``%2F`` decodes to one), which ``<path:...>`` would not match."""

    regex = ".*"
    part_isolating = False


app = Flask(__name__)
app.url_map.converters["anything"] = Anything
app.url_map.converters["segment"] = SegmentConverter
app.wsgi_app = StrictURLMiddleware(app.wsgi_app, routes=ROUTES)  # type: ignore[method-assign]


@app.get("/echo/<anything:rest>")
@app.get("/files/<anything:rest>")
def echo(rest: str) -> dict[str, Any]:
    """The decoded segments of the whole path and the query pairs."""
    target = get_target()
    return {"segments": list(target.segments), "query": [list(pair) for pair in target.query]}


@app.get("/units/<segment:unit>")
def unit(unit: str) -> dict[str, str]:
    """One segment of the guarded target, decoded: ``kg%2Fs`` arrives as ``kg/s``."""
    return {"unit": unit}
