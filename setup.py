"""Build the optional compiled parser; fall back to pure Python without a compiler.

Everything else about the package is in pyproject.toml. The extension
(``urlguard._parser_c``, from ``src/urlguard/_parser_c.pyx``) is an
accelerator: ``urlguard._parser_py`` gives the same answer on every input.

* ``URLGUARD_NO_EXTENSIONS=1`` (or ``true``, ``yes``) builds no extension, so
  the wheel is the pure ``py3-none-any`` one.
* Without a working C compiler the build of the extension fails; the install
  goes on with the pure-Python parser and says so in one line (as
  markupsafe's setup.py does).
* ``URLGUARD_REQUIRE_EXTENSIONS=1`` turns that failure into an error: for
  building the platform wheels, which must never hold the fallback.
* ``URLGUARD_SANITIZE=1`` builds with AddressSanitizer and
  UndefinedBehaviorSanitizer (``tox -e asan``).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, PlatformError

_TRUE = ("1", "true", "yes")


def _flag(name: str) -> bool:
    """An environment switch: only 1/true/yes (any case) turn it on, so that
    ``0`` or ``false`` never does what the name says."""
    return os.environ.get(name, "").strip().lower() in _TRUE


class OptionalBuildExt(build_ext):
    """build_ext that leaves the compiled parser out when it cannot be built."""

    def run(self) -> None:
        try:
            super().run()
        except (PlatformError, FileNotFoundError) as error:
            self._fall_back(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, CompileError, ExecError, PlatformError, ValueError) as error:
            self._fall_back(error)

    def _fall_back(self, error: BaseException) -> None:
        if _flag("URLGUARD_REQUIRE_EXTENSIONS"):
            raise error
        print(
            "urlguard: the compiled parser could not be built "
            f"({type(error).__name__}); installing the pure-Python parser",
            file=sys.stderr,
        )


def _extensions() -> list[Extension]:
    if _flag("URLGUARD_NO_EXTENSIONS") or sys.implementation.name != "cpython":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError as error:  # only without build isolation: Cython is a build requirement
        if _flag("URLGUARD_REQUIRE_EXTENSIONS"):
            raise
        print(f"urlguard: {error}; installing the pure-Python parser", file=sys.stderr)
        return []
    compile_args = ["-O2"]
    link_args: list[str] = []
    if _flag("URLGUARD_SANITIZE"):
        sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
        compile_args = ["-O1", "-fno-sanitize-recover=undefined", *sanitize]
        link_args = sanitize
    extension = Extension(
        "urlguard._parser_c",
        ["src/urlguard/_parser_c.pyx"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    return cythonize(
        [extension],
        language_level=3,
        compiler_directives={"embedsignature": True},
        quiet=True,
    )


# A sanitized build goes to a build directory of its own: setuptools decides
# whether to compile again from timestamps alone, so a later normal build in
# the same directory would otherwise reuse (and ship) the sanitized module.
_options = {"build": {"build_base": "build/sanitize"}} if _flag("URLGUARD_SANITIZE") else {}
setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt}, options=_options)
