"""Build the optional compiled parser; fall back to pure Python without a compiler.

Everything else about the package is in pyproject.toml. The extension
(``urlguard._url.parser_c``, from ``src/urlguard/_url/parser_c.pyx``) is an
accelerator: ``urlguard._url.parser_py`` gives the same answer on every input.

* ``URLGUARD_NO_EXTENSIONS=1`` (or ``true``, ``yes``) builds no extension, so
  the wheel is the pure ``py3-none-any`` one.
* Without a working C compiler (or without Python's headers) the build of the
  extension fails; the install goes on with the pure-Python parser, says so
  in one line (as markupsafe's setup.py does), and the wheel is the pure
  ``py3-none-any`` one: a wheel says by its tag what it holds, so a platform
  wheel always holds the compiled parser and a fallback never does.
* ``URLGUARD_REQUIRE_EXTENSIONS=1`` turns that failure into an error: for
  building the platform wheels, which must never hold the fallback.
* ``URLGUARD_SANITIZE=1`` builds with AddressSanitizer and
  UndefinedBehaviorSanitizer (``tox -e asan``).

A tree that was built before keeps its compiled module in ``build/`` (and,
after ``build_ext --inplace``, in ``src/urlguard/_url/``). A build without a
compiler must not ship it: setuptools skips the compiler when that module is
newer than its sources, and copies the whole build directory into the wheel.
So the compiler is tried on every build (a probe, before the up-to-date
check), and a fallback deletes the earlier module from the build directory;
the one in ``src/`` never reaches a wheel (MANIFEST.in and
``exclude-package-data`` leave binaries out of the package data).
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, PlatformError

_TRUE = ("1", "true", "yes")
# What a missing or broken compiler raises, from the probe or the real build.
_BUILD_ERRORS = (CCompilerError, CompileError, ExecError, PlatformError, ValueError)


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

    def build_extensions(self) -> None:
        # The probe runs before setuptools' up-to-date check, which would
        # otherwise skip the compiler and keep an earlier build's module.
        try:
            self._probe_compiler()
        except _BUILD_ERRORS as error:
            self._fall_back(error)
            return
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as error:
            self._fall_back(error)

    def _probe_compiler(self) -> None:
        """Compile a file that includes ``Python.h`` with this build's compiler
        and flags: it fails as the extension would without a compiler
        (``CC=false``, no ``gcc``) or without Python's headers."""
        with tempfile.TemporaryDirectory(prefix="urlguard-probe-") as tmp:
            source = os.path.join(tmp, "probe.c")
            with open(source, "w", encoding="ascii") as file:
                file.write('#include "Python.h"\nint urlguard_probe(void) { return 0; }\n')
            self.compiler.compile([source], output_dir=tmp, include_dirs=self.include_dirs)

    def _fall_back(self, error: BaseException) -> None:
        if _flag("URLGUARD_REQUIRE_EXTENSIONS"):
            raise error
        for ext in self.extensions:
            self._remove_earlier_build(ext)
        # No extension left in the distribution: bdist_wheel then tags the
        # wheel py3-none-any (TaggedBdistWheel) and install_lib runs no
        # build_ext again.
        self.extensions = []
        self.distribution.ext_modules = []
        print(
            "urlguard: the compiled parser could not be built "
            f"({type(error).__name__}); installing the pure-Python parser",
            file=sys.stderr,
        )

    def _remove_earlier_build(self, ext: Extension) -> None:
        """Delete the module an earlier build left where this one builds
        (install_lib copies that directory whole), under any suffix this
        interpreter imports."""
        base = os.path.join(self.build_lib, *ext.name.split("."))
        for suffix in EXTENSION_SUFFIXES:
            if os.path.exists(base + suffix):
                os.remove(base + suffix)


class TaggedBdistWheel(bdist_wheel):
    """bdist_wheel that tags the wheel after the build, not before it.

    bdist_wheel decides whether the wheel is pure when its options are
    finalized, from the extensions declared then; whether the compiled parser
    was built is known only after build_ext ran. So the build runs first, and
    the tag follows what it made: a fallback is ``py3-none-any``.
    """

    def run(self) -> None:
        if not self.skip_build:
            build_ext_command = self.reinitialize_command("build_ext")
            build_ext_command.inplace = False
            self.run_command("build")
        self.root_is_pure = not (
            self.distribution.has_ext_modules() or self.distribution.has_c_libraries()
        )
        super().run()


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
        "urlguard._url.parser_c",
        ["src/urlguard/_url/parser_c.pyx"],
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
setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": OptionalBuildExt, "bdist_wheel": TaggedBdistWheel},
    options=_options,
)
