"""Hello-world apps for the benchmarks, each bare, behind a no-op layer, and guarded.

``starlette_hello`` (ASGI) and ``flask_hello`` (WSGI) expose ``bare``,
``noop`` and ``guarded`` module attributes, so a server can load any variant
(``uvicorn bench.apps.starlette_hello:guarded``). The handlers are identical
in every variant: the difference measured is the layer in front.
"""
