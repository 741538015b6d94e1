"""README "Coming from another calculator": every command of our column runs from the repository root.

Rows whose command is `vram-probe ...` or `python3 ...` run as written (vram-probe from the build, the
build tree's vram_planner on PYTHONPATH, python3 = this interpreter); `vram-probe run` rows get
`--script-only` and an output folder, since they would train a 7B model. `make` rows build the page and
are run by `make test` itself.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rows():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Coming from another calculator", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("seed", "---"):
            continue
        ours = re.findall(r"`([^`]+)`", cells[2])
        out.append((cells[0], cells[1], ours))
    return out


def test_the_table_lists_the_seeds_commands_and_ours():
    table = rows()
    assert len(table) >= 6
    seeds = {r[0] for r in table}
    assert {"000", "001", "002", "003", "004"} <= seeds
    assert any("--probe true" in r[1] for r in table)


def test_every_command_of_ours_runs(probe, tmp_path):
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").symlink_to(sys.executable)
    env = {
        **os.environ,
        "PATH": f"{Path(probe).resolve().parent}{os.pathsep}{shim}{os.pathsep}{os.environ['PATH']}",
    }
    ran = 0
    for seed, theirs, commands in rows():
        for command in commands:
            argv = shlex.split(command)
            if argv[0] not in ("vram-probe", "python3"):
                assert argv[0] in ("make", ".github/workflows/space.yml"), command
                continue
            if argv[:2] == ["vram-probe", "run"]:
                argv += ["--script-only", "--out", str(tmp_path / f"run{ran}.json")]
            proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            assert proc.stdout.strip() or proc.stderr.strip(), command
            ran += 1
    assert ran >= 5
