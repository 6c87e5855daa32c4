"""Hello-world apps for the benchmarks: ``starlette_hello`` and ``flask_hello``
each expose ``bare``, ``noop`` and ``guarded`` (on the parser chosen at
import), and ``make_app(layer, parser)`` for a guard on a given parser.
The handlers are the same in every variant: what differs is the layer.
"""
