"""The layer zip is made once per state of the files it holds; its unpacked copy once per
version, interpreter and zip, in the user's cache."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import io
import os
import shutil
import time
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


def _layers(cache: Path) -> list[str]:
    """The unpacked layers' folders in the cache ``cache``, the kept zips' folder left out."""
    return [p.name for p in (cache / "loadtest").iterdir() if p.name != layer.KEPT_ZIPS]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the package the layer is made of, the one ``layer`` reads, with the user's
    cache in ``tmp_path``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copied = _copy(tmp_path)
    monkeypatch.setattr(layer, "package_dir", lambda: copied)
    return copied


def test_the_zip_is_reused_until_a_file_it_holds_changes(package: Path) -> None:
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
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = layer.layer_zip()
    (package / "observer" / "write_observer.py").unlink()
    with pytest.raises(FileNotFoundError):
        layer.layer_zip()  # as the first making of it would: the entry is missing
    assert first
    monkeypatch.setattr(layer, "_made", {})  # nor does the next process reuse it
    with pytest.raises(FileNotFoundError):
        layer.layer_zip()


def _counting_derivations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each package folder whose module list is derived from now on, once per derivation."""
    derived: list[Path] = []
    derive = layer._derived

    def counted(package: Path) -> tuple[tuple[str, ...], frozenset[str]]:
        derived.append(package)
        return derive(package)

    monkeypatch.setattr(layer, "_derived", counted)
    return derived


def test_the_next_process_reuses_the_kept_zip_until_a_file_it_holds_changes(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    derived = _counting_derivations(monkeypatch)
    first = layer.layer_zip()
    monkeypatch.setattr(layer, "_made", {})  # as a new process starts
    assert layer.layer_zip() == first
    assert derived == [package]  # derived once: the second process read the kept zip

    entry = package / "observer" / "lambda_entry.py"
    entry.write_text(entry.read_text() + "\nCHANGED = 1\n")
    os.utime(entry, ns=(entry.stat().st_atime_ns, entry.stat().st_mtime_ns + 1_000_000))
    monkeypatch.setattr(layer, "_made", {})
    changed = layer.layer_zip()
    assert _held(changed, "observer/lambda_entry.py").endswith(b"CHANGED = 1\n")
    assert derived == [package, package]
    monkeypatch.setattr(layer, "_made", {})
    assert layer.layer_zip() == changed and len(derived) == 2


def test_a_module_made_where_one_was_looked_for_new_rules_or_damage_make_it_again(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = layer.layer_zip()
    absent = sorted(layer._derived(package)[1])
    assert layer._kept_zip(package) == (layer._made[package][0], first)

    (package / absent[0]).parent.mkdir(parents=True, exist_ok=True)
    (package / absent[0]).write_text("")  # it may change what the layer must carry
    assert layer._kept_zip(package) is None
    (package / absent[0]).unlink()
    assert layer._kept_zip(package) is not None

    with monkeypatch.context() as changed:
        changed.setattr(layer, "_making_code", lambda: "other code")
        assert layer._kept_zip(package) is None  # the layer's own rules changed
    assert layer._kept_zip(package) is not None

    kept = Path(layer._kept_path(package))
    kept.write_bytes(kept.read_bytes()[:-1] + b"!")
    assert layer._kept_zip(package) is None
    monkeypatch.setattr(layer, "_made", {})
    assert layer.layer_zip() == first  # made again, and kept again
    assert layer._kept_zip(package) is not None


def test_no_more_zips_are_kept_than_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(layer, "KEPT_ZIPS_LIMIT", 2)
    for n in range(3):
        layer._keep_zip(tmp_path / f"package-{n}", (), (), b"zip")
        os.utime(layer._kept_path(tmp_path / f"package-{n}"), ns=(n, n))  # oldest first
    kept = tmp_path / "cache" / "loadtest" / layer.KEPT_ZIPS
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        Path(layer._kept_path(tmp_path / f"package-{n}")).name for n in (1, 2)
    )


def test_the_cached_layer_is_made_once_with_its_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = layer.cached_layer()
    assert made is not None and made.startswith(str(tmp_path / "cache" / "loadtest"))
    manifest = Path(made).parent / layer.MANIFEST
    written = manifest.stat().st_mtime_ns
    with zipfile.ZipFile(io.BytesIO(layer.layer_zip())) as archive:
        for name in archive.namelist():
            assert (Path(made) / name).read_bytes() == archive.read(name)
            if name.endswith(".py"):
                pyc = importlib.util.cache_from_source(str(Path(made) / name))
                flags = int.from_bytes(Path(pyc).read_bytes()[4:8], "little")
                assert flags == 0b11  # hash-based, checked against its source
    assert layer.cached_layer() == made
    assert manifest.stat().st_mtime_ns == written  # not made again
    assert _layers(tmp_path / "cache") == [Path(made).parent.name]


def test_a_cached_layer_that_differs_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = layer.cached_layer()
    assert made is not None
    entry = Path(made) / layer.PYTHON_DIR / "loadtest" / "observer" / "lambda_entry.py"
    entry.write_text(entry.read_text() + "\nCHANGED = 1\n")
    assert layer.cached_layer() == made
    assert entry.read_bytes() == _held(layer.layer_zip(), "observer/lambda_entry.py")
    stray = Path(made) / layer.PYTHON_DIR / "loadtest" / "observer" / "stray.py"
    stray.write_text("")
    assert layer.cached_layer() == made and not stray.exists()
    assert _layers(tmp_path / "cache") == [Path(made).parent.name]


def test_concurrent_runs_share_one_cached_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    layer.layer_zip()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        made = set(pool.map(lambda _: layer.cached_layer(), range(8)))
    assert len(made) == 1 and None not in made
    assert _layers(tmp_path / "cache") == [
        Path(str(made.pop())).parent.name
    ]  # no temporary folder left


def test_a_run_links_the_cached_layer_or_unpacks_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = tmp_path / "run"
    run.mkdir()
    assert layer.unpack(str(run)) == str(run / "layer" / layer.PYTHON_DIR)
    assert (run / "layer").is_symlink()
    assert os.readlink(run / "layer") == layer.cached_layer()

    (tmp_path / "readonly").write_text("")  # a file: nothing can be made below it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "readonly"))
    other = tmp_path / "other"
    other.mkdir()
    assert layer.cached_layer() is None
    assert layer.unpack(str(other)) == str(other / "layer" / layer.PYTHON_DIR)
    assert not (other / "layer").is_symlink()
    entry = other / "layer" / layer.PYTHON_DIR / "loadtest" / "observer" / "lambda_entry.py"
    assert entry.read_bytes() == _held(layer.layer_zip(), "observer/lambda_entry.py")


def test_layers_unused_for_a_day_beyond_the_limit_are_deleted_when_one_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(layer, "KEPT_LAYERS_LIMIT", 3)
    root = tmp_path / "cache" / "loadtest"
    day_ago = time.time() - layer.UNUSED_LAYER_S - 60
    # Four other versions' layers, two used a day ago and two just now, and a half-made
    # copy a killed process left a day ago.
    for name, used in (
        ("old-1", day_ago),
        ("old-2", day_ago - 1),
        ("new-1", None),
        ("new-2", None),
    ):
        folder = root / f"layer-cpython-311-{name}"
        folder.mkdir(parents=True)
        if used is not None:
            os.utime(folder, (used, used))
    (root / ".unpacking-abc").mkdir()
    os.utime(root / ".unpacking-abc", (day_ago, day_ago))
    made = layer.cached_layer()
    assert made is not None
    # Kept: the one made, the two used just now (three, the limit); the older ones beyond
    # it and the half-made copy are gone.
    assert sorted(_layers(tmp_path / "cache")) == sorted(
        [Path(made).parent.name, "layer-cpython-311-new-1", "layer-cpython-311-new-2"]
    )
    assert not (root / ".unpacking-abc").exists()


def test_a_layer_in_use_is_kept_however_many_there_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(layer, "KEPT_LAYERS_LIMIT", 1)
    root = tmp_path / "cache" / "loadtest"
    (root / "layer-cpython-311-running").mkdir(parents=True)  # a run of another version
    made = layer.cached_layer()
    assert made is not None
    assert "layer-cpython-311-running" in _layers(tmp_path / "cache")
    # Each use touches the layer: a day-old copy used again is the most recent.
    folder = Path(made).parent
    os.utime(folder, (0, 0))
    assert layer.cached_layer() == made
    assert folder.stat().st_mtime > time.time() - 60
