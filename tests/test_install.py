"""Installs as a user's machine does them, each in a fresh virtualenv.

* ``python -m build`` makes an sdist and, from that sdist, a wheel with the
  compiled parser; installed, ``urlguard.IMPLEMENTATION`` is ``"compiled"``.
* With no working C compiler (``CC=false``) the install of the same sdist
  still succeeds, with the pure-Python parser, and the build says so once.
* ``URLGUARD_NO_EXTENSIONS=1`` at build time makes the pure
  ``py3-none-any`` wheel, the fallback for every other platform.
* A tree that was built before holds a compiled module in ``build/`` and,
  as ``build_ext --inplace`` leaves it, in ``src/urlguard/``. Built again
  without a compiler it makes the pure ``py3-none-any`` wheel, with neither
  module in it; built again with one, a platform wheel that holds it.

A wheel's tag says what it holds: a platform wheel always has the compiled
parser, a ``py3-none-any`` one never does. Since pip shows a build's output
only under ``-v``, the first guard a process makes on CPython without the
compiled parser logs one warning (logger ``urlguard``); the second does not,
and neither does a process that chose the pure parser
(``URLGUARD_NO_EXTENSIONS=1``).

The README's test command promises CPython 3.11, 3.12 and 3.13: tox, with
this project's ``toxfile.py``, runs each of them (under pyenv too, whichever
is active), and fails by name a Python it cannot find (tox is among the
``install`` environment's dependencies).

The builds fetch only their build requirements (setuptools, Cython), and
each fresh virtualenv urlguard's one runtime dependency (idna, as
pyproject.toml names it), from the package index or pip's cache; urlguard
itself is installed with ``--no-deps`` from what was built. Slow (a minute or two), so marked
``install``: ``tox -e install`` runs them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from fresh_installs import copy_source, user_env

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_DEPENDENCIES: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))[
    "project"
]["dependencies"]
FALLBACK = "urlguard: the compiled parser could not be built"
WARNING = "WARNING urlguard: the compiled parser is not installed"
# The compiled parser in a wheel or a tree, under any platform's suffix.
COMPILED_MODULE = re.compile(r"(^|/)urlguard/_url/parser_c\.[^/]*(\.so|\.pyd)$")

# Two guards, one per protocol, with the log on stdout between the marks:
# the warning, if any, shows which guard logged it.
GUARDS = """
import logging, sys
logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(name)s: %(message)s")
import urlguard
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard
print("implementation", urlguard.IMPLEMENTATION)
WSGIGuard(lambda environ, start_response: [])
print("first guard")
ASGIGuard(lambda scope, receive, send: None)
print("second guard")
"""


def _attempt(
    args: list[str | Path], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )


def _run(args: list[str | Path], env: dict[str, str], cwd: Path) -> str:
    done = _attempt(args, env, cwd)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output


def _build_wheel(tree: Path, out: Path, **env: str) -> tuple[Path, str]:
    """``python -m build --wheel`` in the tree itself, as ``pip install .``
    does: the tree's ``build/`` is used and kept."""
    log = _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", out, tree],
        user_env(**env),
        out.parent,
    )
    (wheel,) = out.glob("urlguard-*.whl")
    return wheel, log


def _compiled_modules(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return [name for name in archive.namelist() if COMPILED_MODULE.search(name)]


def _fresh_venv(path: Path) -> Path:
    """A virtualenv with urlguard's runtime dependencies, and not urlguard."""
    venv.create(path, with_pip=True)
    python = path / "bin" / "python"
    _run([python, "-m", "pip", "install", *RUNTIME_DEPENDENCIES], user_env(), path)
    return python


def _installed(wheel: Path, at: Path) -> Path:
    python = _fresh_venv(at / "venv")
    _run([python, "-m", "pip", "install", "--no-deps", wheel], user_env(), at)
    return python


def _implementation(python: Path, cwd: Path) -> str:
    code = "import urlguard; print(urlguard.IMPLEMENTATION)"
    return _run([python, "-c", code], user_env(), cwd).strip()


def _guards(python: Path, cwd: Path, **env: str) -> list[str]:
    return _run([python, "-c", GUARDS], user_env(**env), cwd).splitlines()


def _assert_warns_on_the_first_guard_only(python: Path, cwd: Path) -> None:
    lines = _guards(python, cwd)
    assert lines[0] == "implementation python", lines
    assert lines[1].startswith(WARNING), lines
    assert "URLGUARD_NO_EXTENSIONS=1" in lines[1]
    assert lines[2:] == ["first guard", "second guard"], lines


def _assert_silent(python: Path, cwd: Path, implementation: str, **env: str) -> None:
    lines = _guards(python, cwd, **env)
    assert lines == [f"implementation {implementation}", "first guard", "second guard"]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An sdist and a wheel built from it by ``python -m build``, from a copy
    of the source tree (a build writes into its tree)."""
    base = tmp_path_factory.mktemp("build")
    source = copy_source(base / "source")
    out = base / "dist"
    _run([sys.executable, "-m", "build", "--outdir", out, source], user_env(), base)
    return out


@pytest.fixture(scope="module")
def built_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree built before with a compiler: its compiled module is in
    ``build/lib*/urlguard/_url/`` and, where ``build_ext --inplace`` puts it, in
    ``src/urlguard/_url/``. Each test builds in a copy of it."""
    base = tmp_path_factory.mktemp("built")
    tree = copy_source(base / "tree")
    _build_wheel(tree, base / "first")
    (module,) = tree.glob("build/lib*/urlguard/_url/parser_c.*.so")
    shutil.copy2(module, tree / "src" / "urlguard" / "_url")
    return tree


def _copy_built(tree: Path, to: Path) -> Path:
    shutil.copytree(tree, to)
    # The precondition: both earlier modules are there to be shipped by mistake.
    assert list(to.glob("build/lib*/urlguard/_url/parser_c.*.so"))
    assert list(to.glob("src/urlguard/_url/parser_c.*.so"))
    return to


# -- from an sdist --------------------------------------------------------------------


def test_build_makes_an_sdist_and_a_compiled_wheel(dist: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    (wheel,) = dist.glob("urlguard-*.whl")
    assert "-cp3" in wheel.name, wheel.name
    assert "none-any" not in wheel.name
    assert len(_compiled_modules(wheel)) == 1, wheel.name
    listing = subprocess.run(
        ["tar", "tzf", sdist], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for member in ("setup.py", "pyproject.toml", "src/urlguard/_url/parser_c.pyx", "LICENSE"):
        assert f"/{member}" in listing, member
    assert not [name for name in listing.splitlines() if COMPILED_MODULE.search(name)]


def test_install_with_a_compiler_gives_the_compiled_parser(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    python = _fresh_venv(tmp_path / "venv")
    _run([python, "-m", "pip", "install", "--no-deps", sdist], user_env(), tmp_path)
    assert _implementation(python, tmp_path) == "compiled"
    _assert_silent(python, tmp_path, "compiled")


def test_install_without_a_compiler_falls_back_and_says_so(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    python = _fresh_venv(tmp_path / "venv")
    # -v: pip shows a build's output only when asked (or when it fails).
    log = _run(
        [python, "-m", "pip", "install", "-v", "--no-deps", "--no-cache-dir", sdist],
        user_env(CC="false"),
        tmp_path,
    )
    assert log.count(FALLBACK) == 1, log[-4000:]
    assert re.search(r"Created wheel for urlguard: filename=\S+-py3-none-any\.whl", log), log
    assert _implementation(python, tmp_path) == "python"
    _assert_warns_on_the_first_guard_only(python, tmp_path)


def test_no_extensions_at_build_time_makes_the_pure_wheel(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("urlguard-*.tar.gz")
    out = tmp_path / "pure"
    env = user_env(URLGUARD_NO_EXTENSIONS="1")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, sdist], env, tmp_path)
    (wheel,) = out.glob("urlguard-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert _compiled_modules(wheel) == []
    python = _installed(wheel, tmp_path)
    assert _implementation(python, tmp_path) == "python"
    # The switch at run time too: the pure parser by choice, and silent.
    _assert_silent(python, tmp_path, "python", URLGUARD_NO_EXTENSIONS="1")


# -- from a tree that was built before ------------------------------------------------------


def test_built_tree_without_a_compiler_makes_the_pure_wheel(
    built_tree: Path, tmp_path: Path
) -> None:
    tree = _copy_built(built_tree, tmp_path / "tree")
    wheel, log = _build_wheel(tree, tmp_path / "out", CC="false")
    assert log.count(FALLBACK) == 1, log[-4000:]
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert _compiled_modules(wheel) == [], "an earlier build's module was shipped"
    python = _installed(wheel, tmp_path)
    assert _implementation(python, tmp_path) == "python"
    _assert_warns_on_the_first_guard_only(python, tmp_path)
    _assert_silent(python, tmp_path, "python", URLGUARD_NO_EXTENSIONS="1")


def test_built_tree_without_a_compiler_and_without_build_isolation(tmp_path: Path) -> None:
    """Without build isolation the tree's compiled module is up to date for
    setuptools (newer than its sources, and Cython is the same one), so it
    would not even call the compiler: the fallback must not depend on a
    compile being tried."""
    builder = _fresh_venv(tmp_path / "builder")
    pip: list[str | Path] = [builder, "-m", "pip"]
    _run([*pip, "install", "setuptools>=77", "Cython>=3.0"], user_env(), tmp_path)
    tree = copy_source(tmp_path / "tree")
    wheel_args = [*pip, "wheel", "-v", "--no-deps", "--no-build-isolation"]
    _run([*wheel_args, "-w", tmp_path / "first", tree], user_env(), tmp_path)
    (module,) = tree.glob("build/lib*/urlguard/_url/parser_c.*.so")
    built_at = module.stat().st_mtime_ns
    # The precondition: with a compiler, a second build keeps the module as it is.
    _run([*wheel_args, "-w", tmp_path / "second", tree], user_env(), tmp_path)
    assert module.stat().st_mtime_ns == built_at
    (second,) = (tmp_path / "second").glob("urlguard-*.whl")
    assert len(_compiled_modules(second)) == 1, second.name

    log = _run([*wheel_args, "-w", tmp_path / "third", tree], user_env(CC="false"), tmp_path)
    assert log.count(FALLBACK) == 1, log[-4000:]
    (third,) = (tmp_path / "third").glob("urlguard-*.whl")
    assert third.name.endswith("-py3-none-any.whl"), third.name
    assert _compiled_modules(third) == [], "an earlier build's module was shipped"


def test_built_tree_with_a_compiler_makes_a_platform_wheel(
    built_tree: Path, tmp_path: Path
) -> None:
    tree = _copy_built(built_tree, tmp_path / "tree")
    wheel, log = _build_wheel(tree, tmp_path / "out")
    assert FALLBACK not in log
    assert "-cp3" in wheel.name, wheel.name
    assert "none-any" not in wheel.name
    assert len(_compiled_modules(wheel)) == 1, wheel.name
    python = _installed(wheel, tmp_path)
    assert _implementation(python, tmp_path) == "compiled"
    _assert_silent(python, tmp_path, "compiled")


def test_require_extensions_makes_the_fallback_an_error(built_tree: Path, tmp_path: Path) -> None:
    """The platform wheels are built so (pyproject.toml's cibuildwheel
    environment): no compiler there is a failed build, never a pure wheel
    under a platform tag."""
    tree = _copy_built(built_tree, tmp_path / "tree")
    out = tmp_path / "out"
    args: list[str | Path] = [sys.executable, "-m", "build", "--wheel", "--outdir", out, tree]
    done = _attempt(args, user_env(CC="false", URLGUARD_REQUIRE_EXTENSIONS="1"), tmp_path)
    assert done.returncode != 0, (done.stdout + done.stderr)[-4000:]
    assert FALLBACK not in done.stdout + done.stderr
    assert not list(out.glob("*.whl"))


# --- the test command finds every promised Python -------------------------------------------

#: The CPythons the README's test command promises, as tox's environments name them.
PROMISED = {"py311": "3.11", "py312": "3.12", "py313": "3.13"}


def _tox_project(at: Path, env_list: str, extra: str = "") -> Path:
    """A project of this one's tox settings (its ``[tox]`` table and its
    ``toxfile.py``) whose environments only print their Python's version."""
    at.mkdir()
    shutil.copy(ROOT / "toxfile.py", at / "toxfile.py")
    (at / "tox.ini").write_text(
        f"[tox]\nenv_list = {env_list}\nskip_missing_interpreters = false\n\n"
        "[testenv]\nskip_install = true\n"
        "commands = python -c \"import sys; print('version', *sys.version_info[:2])\"\n"
        f"{extra}",
        encoding="utf-8",
    )
    return at


def test_tox_settings_refuse_a_missing_python() -> None:
    """The project's tox.ini fails, rather than skips, a Python it cannot find."""
    ini = (ROOT / "tox.ini").read_text(encoding="utf-8")
    assert re.search(r"^skip_missing_interpreters = false$", ini, re.MULTILINE)
    env_list = re.search(r"^env_list = (.*)$", ini, re.MULTILINE)
    assert env_list is not None
    assert set(PROMISED) <= {name.strip() for name in env_list[1].split(",")}


def test_tox_runs_every_promised_python(tmp_path: Path) -> None:
    """Under pyenv too, whichever version is active: each promised Python
    runs its own environment."""
    project = _tox_project(tmp_path / "project", ", ".join(PROMISED))
    out = _run([sys.executable, "-m", "tox"], user_env(), project)
    for name, version in PROMISED.items():
        major, minor = version.split(".")
        assert re.search(rf"^version {major} {minor}$", out, re.MULTILINE), out[-4000:]
        assert re.search(rf"^  {name}: OK", out, re.MULTILINE), out[-4000:]


def test_tox_fails_naming_a_python_it_cannot_find(tmp_path: Path) -> None:
    project = _tox_project(
        tmp_path / "project", "py311, missing", "\n[testenv:missing]\nbase_python = python3.99\n"
    )
    done = _attempt([sys.executable, "-m", "tox"], user_env(), project)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-4000:]
    assert re.search(r"^  missing: FAIL", out, re.MULTILINE), out[-4000:]
    assert "could not find python interpreter" in out
    assert re.search(r"^  py311: OK", out, re.MULTILINE), out[-4000:]
