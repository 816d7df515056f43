"""Builds the package: Python over libtuned.so, plus the optional C extension tuned._native (the
fast path of tuned.gemm for torch tensors; stable ABI, one build for every Python from 3.11 on; a
failed compile leaves the package pure Python, with a warning).

libtuned.so is bundled from, in order: TUNED_LIBRARY (cmake -DBUILD_SHARED_LIBS=ON builds it);
nothing when a libtuned is on the system's library path (found at run time); else a CMake build of
the repository this folder is in, which also bundles its autotune as tuned/bin/autotune
(TUNED_BUILD_LIBRARY=0 skips it). TUNED_AUTOTUNE names an autotune executable to bundle instead.
At run time TUNED_LIBRARY, when set, overrides the bundled library.
"""
import ctypes.util
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(HERE)
LIMITED_API = 0x030B0000  # Python 3.11: the oldest whose stable ABI _native uses


def project_version():
    with open(os.path.join(REPOSITORY, "CMakeLists.txt")) as f:
        return re.search(r"project\(tuned VERSION ([0-9.]+)", f.read())[1]


def log(message):
    print(f"tuned setup: {message}", file=sys.stderr, flush=True)


def cmake_build(build_temp):
    """Builds libtuned.so (and autotune) from the repository with CMake; returns their paths
    (autotune None if it was not built)."""
    build = os.path.abspath(os.path.join(build_temp, "libtuned-cmake"))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    configure = ["cmake", "-S", REPOSITORY, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 "-DBUILD_SHARED_LIBS=ON", "-DTUNED_BUILD_TESTS=OFF", "-DTUNED_BUILD_TOOLS=ON",
                 "-DTUNED_BUILD_BENCH=OFF",
                 # The package holds the library as libtuned.so and autotune in bin/ below it: an
                 # unversioned soname and $ORIGIN/.. let the bundled autotune find it.
                 "-DCMAKE_PLATFORM_NO_VERSIONED_SONAME=ON", "-DCMAKE_BUILD_RPATH=$ORIGIN/.."]
    log(f"TUNED_LIBRARY is not set and no libtuned is installed: building it with CMake in "
        f"{build} (several minutes)")
    subprocess.check_call(configure)
    # Targets of the top-level CMakeLists.txt (tuned) and tools/CMakeLists.txt (autotune).
    subprocess.check_call(["cmake", "--build", build, "--target", "tuned", "autotune",
                           "--parallel", jobs])
    autotune = os.path.join(build, "tools", "autotune")
    return os.path.join(build, "libtuned.so"), autotune if os.path.exists(autotune) else None


class BuildWithLibrary(build_py):
    """build_py, then libtuned.so (and autotune) copied into the package being built."""

    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "tuned")
        library = os.environ.get("TUNED_LIBRARY")
        autotune = os.environ.get("TUNED_AUTOTUNE")
        if not library and not ctypes.util.find_library("tuned") \
                and os.environ.get("TUNED_BUILD_LIBRARY", "1") != "0":
            if os.path.exists(os.path.join(REPOSITORY, "CMakeLists.txt")):
                built, built_autotune = cmake_build(self.get_finalized_command("build").build_temp)
                library, autotune = built, autotune or built_autotune
            else:
                log("no libtuned to bundle (TUNED_LIBRARY unset, no repository to build): set "
                    "TUNED_LIBRARY at run time")
        if library:
            shutil.copy2(os.path.realpath(library), os.path.join(package, "libtuned.so"))
        if autotune:
            os.makedirs(os.path.join(package, "bin"), exist_ok=True)
            shutil.copy2(os.path.realpath(autotune), os.path.join(package, "bin", "autotune"))


def extensions():
    if sys.version_info < (3, 11) or sys.implementation.name != "cpython":
        return []  # pure Python: the stable ABI the extension is written for starts at 3.11
    # optional: a compiler or header missing warns and leaves the package pure Python.
    return [Extension("tuned._native", ["tuned/_native.c"], optional=True, py_limited_api=True,
                      define_macros=[("Py_LIMITED_API", hex(LIMITED_API))])]


def wheel_options():
    """The wheel is tagged cp311-abi3 where the extension is built: it loads on 3.11 and later."""
    return {"bdist_wheel": {"py_limited_api": "cp311"}} if extensions() else {}


setup(version=project_version(), cmdclass={"build_py": BuildWithLibrary},
      ext_modules=extensions(), options=wheel_options())
