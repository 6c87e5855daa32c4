"""urlguard's benchmarks: ``python -m bench`` (bench/__main__.py) and
``python -m bench.ab`` (bench/ab.py). docs/speed.md says what they measure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_path(*first: str) -> str:
    """A subprocess's ``PYTHONPATH``: ``first``, the project root, then ours."""
    return os.pathsep.join(filter(None, [*first, str(ROOT), os.environ.get("PYTHONPATH")]))


def missing(tool: str, part: str) -> bool:
    """Whether ``tool`` is not installed, once ``part`` has said so and how to get it."""
    if shutil.which(tool) is not None:
        return False
    print(f"{part}: skipped: {tool} is not installed (apt-get install -y {tool}).")
    return True
