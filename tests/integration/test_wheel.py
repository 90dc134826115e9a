"""The built wheel ships every module and data file, and a run works from it.

The package list in pyproject.toml is kept by hand (the top-level scenarios/
folder ships as ``loadtest.scenarios``), and an editable install hides a
package left out of it: the tests import from the source tree. So this builds
the wheel as ``pip install loadtest`` would, compares its files with the source
tree, and runs a small comparison from the unpacked wheel alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {"loadtest": "loadtest", "consumer": "consumer", "scenarios": "loadtest/scenarios"}
"""Source folder -> where its files land in the wheel."""
DATA_SUFFIXES = (".py", ".toml", ".j2", ".typed")


def _source_files() -> set[str]:
    files: set[str] = set()
    for folder, installed in SHIPPED.items():
        for path in (ROOT / folder).rglob("*"):
            if (
                path.is_file()
                and path.name.endswith(DATA_SUFFIXES)
                and "__pycache__" not in path.parts
            ):
                files.add(f"{installed}/{path.relative_to(ROOT / folder).as_posix()}")
    return files


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        timeout=240,
    )
    (built,) = out.glob("loadtest-*.whl")
    return built


def test_the_wheel_ships_every_module_and_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if not name.startswith("loadtest-")}
    missing = sorted(_source_files() - shipped)
    assert not missing, f"left out of the wheel (pyproject.toml [tool.setuptools]): {missing}"


def test_a_run_works_from_the_unpacked_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    out = tmp_path / "out"
    # Run from an empty folder with the unpacked wheel first on the path: nothing
    # is imported from the source tree (the processes the run starts inherit it).
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import loadtest.model.checker as c; print(c.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(site)), where.stdout
    done = subprocess.run(
        [
            *(sys.executable, "-m", "loadtest", "run", "race-burst", "--variant", "conditional"),
            *("--distinct-ids", "5", "--out", str(out)),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    (report,) = out.glob("*.json")
    assert [run["verdict"] for run in json.loads(report.read_text())["runs"]] == ["pass"]
