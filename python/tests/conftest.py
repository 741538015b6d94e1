"""Paths the suite needs: the native vram-probe to compare with and the repository's fixtures.

CTest sets VRAM_PROBE and VRAM_FIXTURES (python/CMakeLists.txt) and puts the build tree's
package on PYTHONPATH; run by hand, the defaults are the repository's build/ folder.
"""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def probe() -> Path:
    path = Path(os.environ.get("VRAM_PROBE", ROOT / "build" / "bin" / "vram-probe"))
    if not path.exists():
        pytest.fail(f"vram-probe not found at {path}: build it (cmake --build build --target vram-probe)")
    return path


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return Path(os.environ.get("VRAM_FIXTURES", ROOT / "tests" / "fixtures"))
