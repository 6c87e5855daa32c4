"""The echo apps of guarded_asgi and guarded_wsgi behind a guard with an allow-list.

    uvicorn --host 127.0.0.1 --port 8000 e2e_apps.allowed_hosts:asgi
    waitress-serve --listen 127.0.0.1:8000 e2e_apps.allowed_hosts:wsgi

``allowed_hosts`` is :data:`ALLOWED`: the loopback address the tests connect
to, and every name below ``example.com``. Any other valid host is
``host-not-allowed``; an invalid one is still ``bad-host``. Every request that
reaches an application gets the same JSON as in guarded_asgi and guarded_wsgi.
"""

from __future__ import annotations

from e2e_apps import guarded_asgi, guarded_wsgi

ALLOWED = ["127.0.0.1", "*.example.com"]

asgi = guarded_asgi.echo_app(allowed_hosts=ALLOWED)

wsgi = guarded_wsgi.echo_app(allowed_hosts=ALLOWED)
