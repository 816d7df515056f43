"""Builds the package: pure Python over libtuned.so, which is bundled when TUNED_LIBRARY names it
at build time (cmake -DBUILD_SHARED_LIBS=ON builds it), else found at run time through
TUNED_LIBRARY or the system's library path."""
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(HERE, "..", "CMakeLists.txt")) as f:
        return re.search(r"project\(tuned VERSION ([0-9.]+)", f.read())[1]


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = os.environ.get("TUNED_LIBRARY")
        if library:
            shutil.copy2(os.path.realpath(library),
                         os.path.join(self.build_lib, "tuned", "libtuned.so"))


setup(version=project_version(), cmdclass={"build_py": BuildWithLibrary})
