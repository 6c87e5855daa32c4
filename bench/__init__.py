"""urlguard's benchmark suite: ``python -m bench`` from the project root.

Parts: ``corpus`` (the fixed 2000-target corpus), ``micro`` (parse_target
against naive decoding, werkzeug, yarl and ada-url), ``inprocess``
(Starlette and Flask called directly, bare vs guarded), ``e2e`` (uvicorn and
gunicorn under wrk), ``audit`` (``urlguard audit`` lines per second), and
``profile`` (a cost ladder and cProfile breakdowns, for tuning). Results and
how to read them: ``bench/RESULTS.md``. For tuning, ``python -m bench.ab A B``
times two versions of the parser side by side in one process.
"""
