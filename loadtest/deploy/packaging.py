"""A function's code package: the zip a deploy uploads for a handler reference.

Owns what goes into it (a file handler's folder, or a module handler's top
package, without caches and hidden folders). The observer layer is
``loadtest.observer.layer``'s; both use its reproducible ``zip_entries``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.errors import InputError
from loadtest.observer.layer import zip_entries

_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".venv", "venv", "node_modules", ".mypy_cache"})


def _tree(root: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and path.suffix not in (".pyc", ".pyo"):
            yield f"{prefix}{relative.as_posix()}", path


def function_zip(ref: HandlerRef) -> bytes:
    """The function's code: a file handler's directory, or a module handler's top package."""
    if ref.path is not None:
        return zip_entries(_tree(Path(ref.path).parent, ""))
    assert ref.module is not None
    top = ref.module.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        raise InputError(f"cannot find the package of {ref.ref} to deploy it")
    origin = Path(spec.origin)
    if origin.name == "__init__.py":
        return zip_entries(_tree(origin.parent, f"{top}/"))
    return zip_entries(iter([(origin.name, origin)]))
