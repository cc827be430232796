"""Builds overspill._speedups from ext/.

The extension is optional for users: when it cannot be compiled, the pure
Python twin is used and the build says so.  Set OVERSPILL_REQUIRE_EXTENSION=1
(as CI and release builds do) to turn that into an error.
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRE_EXTENSION = os.environ.get("OVERSPILL_REQUIRE_EXTENSION", "") not in ("", "0")

# Bounds checks stay on by default; each hot function turns them off itself,
# with the reason beside it.
COMPILER_DIRECTIVES = {
    "language_level": 3,
    "binding": False,
    "embedsignature": True,
    "initializedcheck": False,
    "wraparound": False,
    "cdivision": True,
}


def speedups_extension():
    compile_args = [] if sys.platform == "win32" else ["-O3", "-std=c99"]
    return Extension(
        "overspill._speedups",
        sources=["ext/_speedups.pyx"],
        # Every header and include: a change to any of them rebuilds the module.
        depends=sorted(glob.glob("ext/*.h") + glob.glob("ext/*.pxd") + glob.glob("ext/*.pxi")),
        include_dirs=["ext"],
        extra_compile_args=compile_args,
        optional=not REQUIRE_EXTENSION,
    )


class optional_build_ext(build_ext):
    """Reports a failed optional build instead of hiding it."""

    def run(self):
        try:
            super().run()
        except Exception as error:  # noqa: BLE001 - any build failure means "no extension"
            if REQUIRE_EXTENSION:
                raise
            self.warn(f"overspill: the compiled extension was NOT built ({error}); "
                      "the pure-Python implementation will be used")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:  # noqa: BLE001
            if REQUIRE_EXTENSION:
                raise
            self.warn(f"overspill: building {ext.name} failed ({error}); "
                      "the pure-Python implementation will be used")


def extensions():
    from Cython.Build import cythonize

    modules = cythonize(
        [speedups_extension()], include_path=["ext"], compiler_directives=COMPILER_DIRECTIVES
    )
    # cythonize() rebuilds the Extension objects and drops `optional`.
    for module in modules:
        module.optional = not REQUIRE_EXTENSION
    return modules


# The ``overspill`` command: our own launcher (see scripts/overspill), whose
# "#!python" line pip rewrites to the environment's interpreter.
setup(ext_modules=extensions(), cmdclass={"build_ext": optional_build_ext}, scripts=["scripts/overspill"])
