"""tox's plugin for this project: tox loads ``toxfile.py`` from the project root.

The test command promises every CPython from 3.11 to 3.13. tox finds an
interpreter by looking for ``python3.12`` (say) on ``PATH``. Under pyenv,
``PATH`` holds shims that refuse to run any version but the active ones
(``pyenv: python3.12: command not found``), so a 3.12 that pyenv has
installed would look missing. Before tox looks, each installed pyenv
version's own ``bin`` folder is put on ``PATH``, after everything already
there: a Python found today is still the one found. A version that is not
installed anywhere fails its environment by name (``tox.ini`` sets
``skip_missing_interpreters = false``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tox.plugin import impl


def _pyenv_bin_folders() -> list[str]:
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return []
    # pyenv as PATH finds it, with fixed arguments: no input reaches these.
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)  # noqa: S603
    versions = subprocess.run(  # noqa: S603
        [pyenv, "versions", "--bare", "--skip-aliases"], capture_output=True, text=True, check=False
    )
    if root.returncode != 0 or versions.returncode != 0:
        return []
    # CPython releases only ("3.12.1"): not virtualenvs, not other interpreters.
    installed = [v for v in versions.stdout.split() if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    folders = [Path(root.stdout.strip(), "versions", v, "bin") for v in installed]
    return [str(folder) for folder in folders if folder.is_dir()]


@impl
def tox_add_core_config(core_conf: Any, state: Any) -> None:
    path = os.environ.get("PATH", "").split(os.pathsep)
    added = [folder for folder in _pyenv_bin_folders() if folder not in path]
    if added:
        os.environ["PATH"] = os.pathsep.join([*path, *added])
