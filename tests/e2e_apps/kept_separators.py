"""The echo apps of guarded_asgi and guarded_wsgi under a policy that keeps separators.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.kept_separators:asgi
    waitress-serve --listen 127.0.0.1:8000 e2e_apps.kept_separators:wsgi

Application-wide, ``%2F`` and ``%5C`` stay in a decoded segment and a raw
``\\`` is accepted (``Policy.browser`` with ``\\`` added), so the parts a kept
separator makes inside a segment are judged (``dot-segment``,
``empty-segment``, ``drive-letter``); the route ``/admin/`` rejects ``%2F``
again. ``mounted`` is the ASGI app below a Starlette ``Mount("/m", ...)``.
Every request that reaches an application gets the same JSON as in
guarded_asgi and guarded_wsgi.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from e2e_apps import guarded_asgi, guarded_wsgi
from urlguard import Policy

POLICY = Policy.browser(raw_path_extra="[]|\\", encoded_slash="keep", encoded_backslash="keep")
ROUTES: dict[str, Any] = {"/admin/": {"encoded_slash": "reject"}}

asgi = guarded_asgi.echo_app(policy=POLICY, routes=ROUTES)

# Starlette's Mount hands the app below it the raw_path as sent and root_path
# "/m"; it routes on the decoded path, as the guard must judge it.
mounted = Starlette(routes=[Mount("/m", app=asgi)])

wsgi = guarded_wsgi.echo_app(policy=POLICY, routes=ROUTES)
