"""Builds the package: Python over libtuned.so, plus the optional C extension tuned._native (the
fast path of tuned.gemm for torch tensors; stable ABI, one build for every Python from 3.11 on; a
failed compile leaves the package pure Python, with a warning), and the top-level module tuned_gpu
(an import that says so where `import tuned` finds another package of that name).

The package bundles libtuned.so as tuned/lib/<its soname> and the autotune program as
tuned/bin/autotune, which links that library (its run path $ORIGIN/../lib, as `cmake --install`
gives it), so the kernels are in the wheel once. They come from, in order: TUNED_LIBRARY (and
TUNED_AUTOTUNE), e.g. the ones `cmake --install` put in a prefix of a -DBUILD_SHARED_LIBS=ON build;
nothing when a libtuned is on the system's library path (found at run time); else a CMake build and
install of the repository this folder is in (TUNED_BUILD_LIBRARY=0 skips it). Either way a binary
whose run path names a folder outside the package (a build tree's), or an autotune that does not
link the bundled library (a static build's, with its own copy of the kernels), is refused: the
wheel must work wherever it is installed. At run time TUNED_LIBRARY, when set, overrides the
bundled library.
"""
import ctypes.util
import glob
import os
import re
import shutil
import struct
import subprocess
import sys

from setuptools import Distribution, Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(HERE)
STARTUP_HOOK = "tuned-torch.pth"
LIMITED_API = 0x030B0000  # Python 3.11: the oldest whose stable ABI _native uses


def project_version():
    with open(os.path.join(REPOSITORY, "CMakeLists.txt")) as f:
        return re.search(r"project\(tuned VERSION ([0-9.]+)", f.read())[1]


def log(message):
    print(f"tuned setup: {message}", file=sys.stderr, flush=True)


class BundleError(Exception):
    """A binary that must not go into the package, and why."""


def elf_dynamic(path):
    """The dynamic section of an ELF64 little-endian file: {"SONAME": str, "NEEDED": [...],
    "RUNPATH": [...], "RPATH": [...]} (what the loader reads to find libraries)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise BundleError(f"{path} is not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    SHT_DYNAMIC = 6
    DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 14, 15, 29
    result = {"SONAME": None, "NEEDED": [], "RUNPATH": [], "RPATH": []}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != SHT_DYNAMIC:
            continue
        strings = sections[link][4]  # the dynamic string table's file offset

        def string(at):
            return data[strings + at:data.index(b"\0", strings + at)].decode()
        for i in range(0, size, entsize or 16):
            tag, value = struct.unpack_from("<qQ", data, offset + i)
            if tag == DT_NEEDED:
                result["NEEDED"].append(string(value))
            elif tag == DT_SONAME:
                result["SONAME"] = string(value)
            elif tag in (DT_RPATH, DT_RUNPATH):
                result["RPATH" if tag == DT_RPATH else "RUNPATH"] += string(value).split(":")
    return result


def check_run_path(path, dynamic, wanted):
    """Refuses a binary whose run path names anything but wanted ($ORIGIN-relative) folders."""
    for entry in dynamic["RUNPATH"] + dynamic["RPATH"]:
        if entry not in wanted:
            raise BundleError(
                f"{path} has the run path {':'.join(dynamic['RUNPATH'] + dynamic['RPATH'])}, "
                f"which names {entry!r}: only {' or '.join(wanted)} finds what the package "
                "holds wherever it is installed. Bundle the files `cmake --install` writes "
                "(PREFIX/lib/libtuned.so, PREFIX/bin/autotune), not the build tree's")


def plan_bundle(library, autotune):
    """Where library and autotune go in the package ({file in the package: source}), after
    checking that they work from there."""
    library = os.path.realpath(library)
    dynamic = elf_dynamic(library)
    check_run_path(library, dynamic, ["$ORIGIN"])
    name = dynamic["SONAME"] or os.path.basename(library)
    if not name.startswith("libtuned.so"):
        raise BundleError(f"{library} is not libtuned (its soname is {name})")
    files = {os.path.join("lib", name): library}
    if autotune:
        autotune = os.path.realpath(autotune)
        dynamic = elf_dynamic(autotune)
        if name not in dynamic["NEEDED"]:
            raise BundleError(
                f"{autotune} does not link {name} (it needs {', '.join(dynamic['NEEDED'])}): a "
                "static build's autotune carries its own copy of the kernels. Bundle the autotune "
                "of the -DBUILD_SHARED_LIBS=ON build that made the library")
        check_run_path(autotune, dynamic, ["$ORIGIN/../lib"])
        if "$ORIGIN/../lib" not in dynamic["RUNPATH"] + dynamic["RPATH"]:
            raise BundleError(f"{autotune} has no run path $ORIGIN/../lib: from the package's "
                              f"bin/ it would not find lib/{name}")
        files[os.path.join("bin", "autotune")] = autotune
    return files


def cmake_build(build_temp):
    """Builds libtuned.so and autotune from the repository with CMake and installs them into a
    prefix in build_temp; returns their installed paths."""
    build = os.path.abspath(os.path.join(build_temp, "libtuned-cmake"))
    prefix = os.path.abspath(os.path.join(build_temp, "libtuned-prefix"))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    log(f"TUNED_LIBRARY is not set and no libtuned is installed: building it with CMake in "
        f"{build} (several minutes)")
    subprocess.check_call(["cmake", "-S", REPOSITORY, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                           "-DBUILD_SHARED_LIBS=ON", "-DTUNED_BUILD_TESTS=OFF",
                           "-DTUNED_BUILD_TOOLS=ON", "-DTUNED_BUILD_BENCH=OFF",
                           "-DCMAKE_INSTALL_LIBDIR=lib"])
    # What `cmake --install` installs: tuned (the top-level CMakeLists.txt), autotune and tunedb
    # (tools/CMakeLists.txt; tunedb only links objects built for the others).
    subprocess.check_call(["cmake", "--build", build, "--target", "tuned", "autotune", "tunedb",
                           "--parallel", jobs])
    # Installed, the run paths are the ones of the install (no build folder in them).
    shutil.rmtree(prefix, ignore_errors=True)
    subprocess.check_call(["cmake", "--install", build, "--prefix", prefix])
    libraries = sorted(glob.glob(os.path.join(prefix, "lib", "libtuned.so.*")))
    return libraries[0], os.path.join(prefix, "bin", "autotune")


class BuildWithLibrary(build_py):
    """build_py, then libtuned.so and autotune copied into the package being built, and the
    start-up hook of TUNED_TORCH beside it."""

    def run(self):
        super().run()
        # TUNED_TORCH=1 with no change to the program: site runs this file's line at start-up,
        # which (only where it is set) waits for the program's import of torch (_tuned_startup).
        shutil.copy2(os.path.join(HERE, STARTUP_HOOK), os.path.join(self.build_lib, STARTUP_HOOK))
        package = os.path.join(self.build_lib, "tuned")
        # Whatever an earlier build bundled: the package holds this build's binaries or none.
        for stale in ("lib", "bin", "libtuned.so"):
            path = os.path.join(package, stale)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
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
        if autotune and not library:
            raise SystemExit("tuned setup: TUNED_AUTOTUNE needs the libtuned.so it links in "
                             "TUNED_LIBRARY")
        if not library:
            return
        for variable, path in (("TUNED_LIBRARY", library), ("TUNED_AUTOTUNE", autotune)):
            if path and not os.path.isfile(path):
                raise SystemExit(f"tuned setup: {variable}={path}: no such file (pip builds in "
                                 f"{os.getcwd()}: give an absolute path)")
        try:
            files = plan_bundle(library, autotune)
        except BundleError as e:
            raise SystemExit(f"tuned setup: {e}")
        for target, source in files.items():
            os.makedirs(os.path.dirname(os.path.join(package, target)), exist_ok=True)
            shutil.copy2(source, os.path.join(package, target))
            log(f"bundled {source} as tuned/{target} ({os.path.getsize(source) / 1e6:.1f} MB)")


class BinaryDistribution(Distribution):
    """The wheel holds binaries for this platform, extension or not."""

    def has_ext_modules(self):
        return True


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
      distclass=BinaryDistribution, ext_modules=extensions(), options=wheel_options())
