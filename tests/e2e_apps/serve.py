"""Serve a WSGI app with a server that has no command line of its own.

    python -m e2e_apps.serve werkzeug 8000    # werkzeug.serving.run_simple, threaded
    python -m e2e_apps.serve wsgiref 8000     # wsgiref.simple_server

Both serve ``e2e_apps.guarded_wsgi:app`` on 127.0.0.1 only.
"""

from __future__ import annotations

import sys

from e2e_apps.guarded_wsgi import app

HOST = "127.0.0.1"


def main(argv: list[str]) -> None:
    server, port = argv[0], int(argv[1])
    if server == "werkzeug":
        from werkzeug.serving import run_simple

        run_simple(HOST, port, app, threaded=True)
    elif server == "wsgiref":
        from wsgiref.simple_server import make_server

        with make_server(HOST, port, app) as httpd:
            httpd.serve_forever()
    else:
        raise SystemExit(f"unknown server {server!r}: werkzeug or wsgiref")


if __name__ == "__main__":
    main(sys.argv[1:])
