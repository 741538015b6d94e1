"""`pip install ./python` works offline in a fresh virtual environment, and the installed module is the core.

What a user does (README "Python"): a venv that sees the system's setuptools and wheel, pip with no
package index and no build isolation. The installed module must then answer like vram-probe.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pip_install_into_a_venv_without_an_index(probe, fixtures, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = "2"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "--no-index", "--no-build-isolation", "--disable-pip-version-check",
         str(ROOT / "python")],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert pip.returncode == 0, pip.stdout[-4000:] + pip.stderr[-4000:]

    request = {
        "model": {"config": json.loads((fixtures / "models" / "Qwen__Qwen3-0.6B.json").read_text())},
        "task": "train",
        "train": {"method": "lora", "seq_len": 1024},
        "gpu": {"name": "A100 80GB"},
    }
    (tmp_path / "request.json").write_text(json.dumps(request))
    script = (
        "import json, sys, vram_planner\n"
        "print(vram_planner.__file__, file=sys.stderr)\n"
        "sys.stdout.write(vram_planner.estimate_json(open('request.json').read()) + '\\n')\n"
    )
    run = subprocess.run([str(py), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # Imported from the venv, not from the build tree or the source folder.
    assert Path(run.stderr.strip()).resolve().is_relative_to(venv.resolve()), run.stderr
    cli = subprocess.run([str(probe), "estimate", "--request", str(tmp_path / "request.json"), "--json"],
                         capture_output=True, text=True)
    assert cli.returncode == 0
    assert run.stdout == cli.stdout

    show = subprocess.run([str(py), "-m", "pip", "show", "vram-planner"], capture_output=True, text=True, env=env)
    version = json.loads(subprocess.run([str(probe), "version"], capture_output=True, text=True).stdout)["version"]
    assert f"Version: {version}" in show.stdout
