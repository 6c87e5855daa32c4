"""Installs as a user's machine does them, each in a fresh virtualenv.

* ``python -m build`` makes an sdist and, from that sdist, a wheel with the
  compiled parser; installed, ``urlguard.IMPLEMENTATION`` is ``"compiled"``.
* With no working C compiler (``CC=false``) the install of the same sdist
  still succeeds, with the pure-Python parser, and the build says so once.
* ``URLGUARD_NO_EXTENSIONS=1`` at build time makes the pure
  ``py3-none-any`` wheel, the fallback for every other platform.

The builds fetch only their build requirements (setuptools, Cython), from
the package index or pip's cache. Slow (minutes), so marked ``install``:
``tox -e install`` runs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
FALLBACK = "urlguard: the compiled parser could not be built"
# What a source tree holds that a user's checkout would not.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".tox", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c",
    ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "site",
)  # fmt: skip


def _env(**changes: str) -> dict[str, str]:
    """This environment without urlguard's switches (the suite's own may be set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("URLGUARD_")}
    env.update(changes)
    return env


def _run(args: list[str | Path], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An sdist and a wheel built from it by ``python -m build``, from a copy
    of the source tree (a build writes into its tree)."""
    base = tmp_path_factory.mktemp("build")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    out = base / "dist"
    _run([sys.executable, "-m", "build", "--outdir", out, source], _env(), base)
    return out


def _fresh_venv(path: Path) -> Path:
    venv.create(path, with_pip=True)
    return path / "bin" / "python"


def _implementation(python: Path, cwd: Path) -> str:
    code = "import urlguard; print(urlguard.IMPLEMENTATION)"
    return _run([python, "-c", code], _env(), cwd).strip()


def test_build_makes_an_sdist_and_a_compiled_wheel(dist: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    (wheel,) = dist.glob("urlguard-*.whl")
    assert "-cp3" in wheel.name, wheel.name
    assert "none-any" not in wheel.name
    listing = subprocess.run(
        ["tar", "tzf", sdist], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for member in ("setup.py", "pyproject.toml", "src/urlguard/_parser_c.pyx", "LICENSE"):
        assert f"/{member}" in listing, member


def test_install_with_a_compiler_gives_the_compiled_parser(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    python = _fresh_venv(tmp_path / "venv")
    _run([python, "-m", "pip", "install", "--no-deps", sdist], _env(), tmp_path)
    assert _implementation(python, tmp_path) == "compiled"


def test_install_without_a_compiler_falls_back_and_says_so(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    python = _fresh_venv(tmp_path / "venv")
    # -v: pip shows a build's output only when asked (or when it fails).
    log = _run(
        [python, "-m", "pip", "install", "-v", "--no-deps", "--no-cache-dir", sdist],
        _env(CC="false"),
        tmp_path,
    )
    assert log.count(FALLBACK) == 1, log[-4000:]
    assert _implementation(python, tmp_path) == "python"


def test_no_extensions_at_build_time_makes_the_pure_wheel(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    out = tmp_path / "pure"
    env = _env(URLGUARD_NO_EXTENSIONS="1")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, sdist], env, tmp_path)
    (wheel,) = out.glob("urlguard-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    python = _fresh_venv(tmp_path / "venv")
    _run([python, "-m", "pip", "install", "--no-deps", wheel], _env(), tmp_path)
    assert _implementation(python, tmp_path) == "python"
