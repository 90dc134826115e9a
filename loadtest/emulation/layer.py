"""The observer layer artifact: the zip a deployed function and a local environment both run.

Owns the layer's contents (``LAYER_MODULES``: the observer, its entry point
``lambda_entry`` and what they import), its reproducible zip (``layer_zip``)
and unpacking it for local execution environments (``unpack``). The deploy
path publishes the same bytes as a Lambda layer. Must not import boto3.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

from loadtest.errors import InputError

LAYER_MODULES = (
    "__init__.py",
    "emulation/__init__.py",
    "emulation/observer.py",
    "emulation/lambda_entry.py",
    "model/__init__.py",
    "model/observation.py",
    "model/history.py",
    "model/partiql.py",
    "model/updates.py",
)
"""The loadtest modules the observer layer carries (the observer and what it imports)."""
MAX_CODE_BYTES = 50 * 1024 * 1024
"""Lambda's limit on a zip uploaded directly."""
PYTHON_DIR = "python"
"""Where a Python layer's modules sit (on the runtime's path as /opt/python)."""


def zip_entries(entries: Iterator[tuple[str, Path]]) -> bytes:
    """A zip of ``(name in the archive, file)`` pairs with fixed timestamps (reproducible)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, path in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16  # readable by the runtime's user
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    if len(data) > MAX_CODE_BYTES:
        raise InputError(f"the package is {len(data)} bytes; Lambda takes at most {MAX_CODE_BYTES}")
    return data


def package_dir() -> Path:
    """The installed ``loadtest`` package's folder."""
    return Path(__file__).resolve().parent.parent


def layer_zip() -> bytes:
    """The observer layer: ``python/loadtest/...`` (on the runtime's path under /opt/python).

    Byte-for-byte reproducible (fixed timestamps), so the same observer code
    always makes the same layer.
    """
    package = package_dir()
    return zip_entries((f"{PYTHON_DIR}/loadtest/{name}", package / name) for name in LAYER_MODULES)


def unpack(into: str) -> str:
    """Unpack the layer zip under ``into``; return the folder to put first on ``sys.path``."""
    target = os.path.join(into, "layer")
    with zipfile.ZipFile(io.BytesIO(layer_zip())) as archive:
        archive.extractall(target)
    return os.path.join(target, PYTHON_DIR)


BOOTSTRAP = """\
import sys
layer, installed = sys.argv[1], sys.argv[2]
sys.path.insert(0, layer)
import loadtest, loadtest.emulation, loadtest.model
# The layer's modules come first; the rest of the environment host (its guards) from the
# installed package, as if the layer were on a Lambda runtime beside it.
loadtest.__path__.append(installed)
loadtest.emulation.__path__.append(installed + "/emulation")
loadtest.model.__path__.append(installed + "/model")
from loadtest.emulation import envhost
envhost.main()
"""
"""``python -c BOOTSTRAP LAYER_DIR PACKAGE_DIR``: an execution environment that runs the observer
and its entry point from the unpacked layer."""
