"""The command line (``urlguard``, ``python -m urlguard``) and the offline
tools it runs: ``check``, ``audit`` (and its ``--suggest``), ``encode``,
``clean``, ``pretty``. Nothing here runs in a request."""

from .commands import main

__all__ = ["main"]
