"""The floor of the micro part: bench/floor.pyx, built with Cython when the
part runs, and checked to make the very pieces urlguard's parsers make.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .corpus import build as build_corpus
from .parsers import Parse, available, reader

SOURCE = Path(__file__).resolve().parent / "floor.pyx"


def build(into: Path) -> Path | None:
    """Compile the floor in ``into``: its path, or ``None`` once it has said why not."""
    if importlib.util.find_spec("Cython") is None:
        print("floor: left out: the floor needs Cython (pip install Cython) and a C compiler")
        return None
    (into / "floor.pyx").write_bytes(SOURCE.read_bytes())
    # -O2, as urlguard's own extension is built (setup.py), after Python's own flags.
    env = dict(os.environ, CFLAGS=os.environ.get("CFLAGS", "") + " -O2")
    argv = [sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-q", "floor.pyx"]
    done = subprocess.run(argv, cwd=into, capture_output=True, text=True, check=False, env=env)
    built = sorted(into.glob("floor*.so")) + sorted(into.glob("floor*.pyd"))
    if done.returncode != 0 or not built:
        last = (done.stderr.strip().splitlines() or ["no module"])[-1]
        print(f"floor: left out: the floor cannot be built here ({last})")
        return None
    return built[0]


def load(path: Path) -> Parse:
    """The floor built at ``path``, checked, and called as the parsers are: through
    one Python function (``parsers.reader``'s frame is no cost of the checks)."""
    spec = importlib.util.spec_from_file_location("floor", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    split: Callable[[bytes], tuple[object, object]] = module.split
    check(split)

    def split_and_read(raw: bytes) -> object:
        segments, query = split(raw)
        return segments, query

    return split_and_read


def check(split: Parse) -> None:
    """``AssertionError`` unless ``split`` makes what each parser makes of every
    plain and encoded target: a floor that made something else would prove nothing."""
    corpus = build_corpus()
    for name, module in available().items():
        parse = reader(module)
        for kind in ("plain", "encoded"):
            for raw in corpus.subset(kind):
                if split(raw) != parse(raw):
                    raise AssertionError(f"the floor and the {name} parser differ on {raw!r}")
