"""What the fresh-virtualenv tests share: a copy of the source tree as a
user's checkout holds it, and an environment free of the suite's switches."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a source tree holds that a user's checkout would not.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".tox", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c",
    ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "site",
)  # fmt: skip


def user_env(**changes: str) -> dict[str, str]:
    """This environment without urlguard's switches (the suite's own may be set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("URLGUARD_")}
    env.update(changes)
    return env


def copy_source(to: Path) -> Path:
    """The project's source tree at ``to``, as a clone has it."""
    shutil.copytree(ROOT, to, ignore=NOT_SOURCE)
    return to
