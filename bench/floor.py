"""The floor of the micro benchmark, built when it runs: bench/floor.pyx.

``parser()`` compiles ``floor.pyx`` with Cython into a temporary folder
(once per process), imports it and returns its ``split``, after checking that
it makes the very segments and query urlguard makes for every plain and
encoded target of the corpus (a floor that made something else would prove
nothing). Without Cython or a C compiler it raises ``ImportError`` saying
so, and the micro part leaves the floor out.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import urlguard

from .corpus import build
from .micro import Parser

SOURCE = Path(__file__).resolve().parent / "floor.pyx"
_BUILD = """
from setuptools import Extension, setup
from Cython.Build import cythonize
setup(
    script_args=["-q", "build_ext", "--inplace"],
    ext_modules=cythonize([Extension("floor", ["floor.pyx"], extra_compile_args=["-O2"])],
                          quiet=True),
)
"""
_built: list[Parser] = []


def parser() -> Parser:
    """The floor's ``split``; ``ImportError`` when it cannot be built here."""
    if _built:
        return _built[0]
    if importlib.util.find_spec("Cython") is None:
        raise ImportError("not built: needs Cython (pip install Cython) and a C compiler")
    with tempfile.TemporaryDirectory(prefix="urlguard-floor-", ignore_cleanup_errors=True) as name:
        folder = Path(name)
        (folder / "floor.pyx").write_bytes(SOURCE.read_bytes())
        done = subprocess.run(
            [sys.executable, "-c", _BUILD], cwd=folder, capture_output=True, text=True, check=False
        )
        built = sorted(folder.glob("floor*.so")) + sorted(folder.glob("floor*.pyd"))
        if done.returncode != 0 or not built:
            last = (done.stderr.strip().splitlines() or ["no module"])[-1]
            raise ImportError(f"not built: cannot be built here ({last})")
        spec = importlib.util.spec_from_file_location("floor", built[0])
        if spec is None or spec.loader is None:
            raise ImportError(f"not built: cannot load {built[0]}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # loaded: the folder can go
    split: Parser = module.split
    _check(split)
    _built.append(split)
    return split


def _check(split: Parser) -> None:
    corpus = build()
    for kind in ("plain", "encoded"):
        for raw in corpus.subset(kind):
            target = urlguard.parse_target(raw)
            if split(raw) != (target.segments, target.query):
                raise AssertionError(f"the floor makes something else of a {kind} target")
