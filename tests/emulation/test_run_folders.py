"""``parent_runs.new_log_dir`` removes the folders of harnesses that are gone, and only those."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from loadtest.emulation.environment.parent_runs import LOG_DIR_PREFIX, new_log_dir


@pytest.mark.process
def test_a_new_run_removes_the_folders_of_harnesses_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    gone = tmp_path / f"{LOG_DIR_PREFIX}{int(ended.stdout)}-abc"
    (gone / "layer").mkdir(parents=True)
    (gone / "env-0.log").write_text("left by a killed run")
    alive = tmp_path / f"{LOG_DIR_PREFIX}1-abc"  # init's: never gone
    alive.mkdir()
    other = tmp_path / "someone-else"
    other.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fresh = Path(new_log_dir())
    assert fresh.parent == tmp_path
    assert fresh.name.startswith(f"{LOG_DIR_PREFIX}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive.name, other.name, fresh.name]
    )
