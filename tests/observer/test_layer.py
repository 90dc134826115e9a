"""The layer zip is made once per state of the files it holds."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from loadtest.observer import layer


def _copy(tmp_path: Path) -> Path:
    package = tmp_path / "loadtest"
    shutil.copytree(layer.package_dir(), package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _held(data: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read(f"{layer.PYTHON_DIR}/loadtest/{name}")


def test_the_zip_is_reused_until_a_file_it_holds_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _copy(tmp_path)
    monkeypatch.setattr(layer, "package_dir", lambda: package)
    first = layer.layer_zip()
    assert layer.layer_zip() is first  # the same bytes object: not made again

    entry = package / "observer" / "lambda_entry.py"
    entry.write_text(entry.read_text() + "\nCHANGED = 1\n")
    os.utime(entry, ns=(entry.stat().st_atime_ns, entry.stat().st_mtime_ns + 1_000_000))
    changed = layer.layer_zip()
    assert changed != first
    assert _held(changed, "observer/lambda_entry.py").endswith(b"CHANGED = 1\n")
    assert layer.layer_zip() is changed


def test_a_file_it_holds_that_is_gone_makes_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _copy(tmp_path)
    monkeypatch.setattr(layer, "package_dir", lambda: package)
    first = layer.layer_zip()
    (package / "observer" / "write_observer.py").unlink()
    with pytest.raises(FileNotFoundError):
        layer.layer_zip()  # as the first making of it would: the entry is missing
    assert first
