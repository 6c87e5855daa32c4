"""urlguard in front of a Django project in one file.

urlguard wraps Django's WSGI handler, not a Django middleware: the raw target
is only in the WSGI environ, before Django builds its request (and re-encodes
invalid UTF-8 in ``request.path``, which urlguard refuses instead). The
default (strict) policy applies everywhere; under ``/files/`` a per-route
policy keeps ``%2F`` inside its segment, and one under ``/units/``, where
``<segment:unit>`` takes one segment: Django resolves ``/units/kg%2Fs`` on
the routing path (``/units/kg%2Fs``, the kept ``/`` still escaped) and the
converter hands the view ``"kg/s"``.

    GET /echo/<anything>   ->  {"segments": [...], "query": [[name, value], ...]}
    GET /files/<anything>  ->  the same, with encoded slashes kept
    GET /units/<unit>      ->  {"unit": "<the decoded segment>"}

Start it from the project root (needs Django: ``pip install -e '.[django]'``)::

    gunicorn --chdir example_apps django_app:application

Not under ``runserver``: Django's development server is built on wsgiref,
which hands over no raw target, so urlguard would refuse every request with
501 rather than guess from the decoded path. Then try::

    curl --path-as-is 'http://127.0.0.1:8000/echo/caf%C3%A9?q=a+b'
    {"segments": ["echo", "caf\\u00e9"], "query": [["q", "a b"]]}

    curl --path-as-is 'http://127.0.0.1:8000/files/a%2Fb'
    {"segments": ["files", "a/b"], "query": []}

    curl --path-as-is 'http://127.0.0.1:8000/echo/caf%C4'
    400 Bad Request: invalid-utf8: percent-decoded bytes are not valid UTF-8 (RFC 3629)
        (path segment 1, byte offset 9)

    curl --path-as-is 'http://127.0.0.1:8000/units/kg%2Fs'
    {"unit": "kg/s"}

    curl --path-as-is 'http://127.0.0.1:8000/units/caf%C3%A9'
    {"unit": "caf\\u00e9"}

    curl --path-as-is 'http://127.0.0.1:8000/units/..%2Fetc'
    400 Bad Request: dot-segment: a path segment is '.' or '..' (RFC 3986 section 3.3)
        (path segment 1, byte offset 7)

    curl --path-as-is 'http://127.0.0.1:8000/echo/kg%2Fs'
    400 Bad Request: encoded-slash: a path segment contains an encoded '/' (%2F)
        (path segment 1, byte offset 8)

(The 400 bodies are one line each, wrapped here.)
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Final

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path

from urlguard.integrations.django import get_target  # and registers <segment:name>
from urlguard.wsgi import StrictURLMiddleware

#: Raw path prefix -> overrides of the default policy.
ROUTES: Final[dict[str, dict[str, Any]]] = {
    "/files/": {"encoded_slash": "keep"},
    "/units/": {"encoded_slash": "keep"},
}

if not settings.configured:
    settings.configure(
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]", "testserver"],
        # Nothing here signs anything; a real project reads its key from its secrets.
        SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
        DEBUG=False,
        INSTALLED_APPS=[],
        MIDDLEWARE=[],
        USE_TZ=True,
    )


def echo(request: HttpRequest) -> JsonResponse:
    """The decoded segments of the whole path and the query pairs."""
    target = get_target(request)
    return JsonResponse(
        {"segments": list(target.segments), "query": [list(pair) for pair in target.query]}
    )


def unit(request: HttpRequest, unit: str) -> JsonResponse:
    """One segment of the guarded target, decoded: ``kg%2Fs`` gives ``kg/s``."""
    return JsonResponse({"unit": unit})


urlpatterns = [
    re_path(r"^(?:echo|files)/", echo),
    path("units/<segment:unit>", unit, name="unit"),
]

application = StrictURLMiddleware(get_wsgi_application(), routes=ROUTES)
