"""Builds vram_planner._core with the repository's CMake (python/CMakeLists.txt).

pip runs this for `pip install ./python`: it configures the repository root with
only the core and the Python module (no tests, probe or benchmarks), for the
interpreter running pip, and puts the extension where setuptools packs it. The
package version is the CMake project's (CMakeLists.txt `project(... VERSION x)`),
so it is declared once.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    m = re.search(r"project\(\s*vram_planner\s+VERSION\s+([0-9.]+)", text)
    if not m:
        sys.exit("setup.py: no `project(vram_planner VERSION x.y.z)` in " + str(ROOT / "CMakeLists.txt"))
    return m.group(1)


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not (ROOT / "core" / "include" / "vram" / "api.h").exists():
            sys.exit(f"setup.py: the core is not at {ROOT / 'core'}; install from a clone (pip install ./python)")
        package_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DVRAM_BUILD_PYTHON=ON", "-DVRAM_BUILD_TESTS=OFF", "-DVRAM_BUILD_PROBE=OFF",
            "-DVRAM_BUILD_BENCHMARKS=OFF",
            f"-DVRAM_PYTHON_PACKAGE_DIR={package_dir}",
        ]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        build = ["cmake", "--build", str(build_dir), "--target", "vram_planner_core", "-j", jobs]
        for cmd in (configure, build):
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        if not Path(self.get_ext_fullpath(ext.name)).exists():
            sys.exit(f"setup.py: CMake did not produce {self.get_ext_fullpath(ext.name)}")


setup(
    version=project_version(),
    ext_modules=[CMakeExtension("vram_planner._core")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
