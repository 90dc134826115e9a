"""The observer layer artifact: the zip a deployed function and a local environment both run.

Owns the layer's contents (``layer_modules()``: the observer, its entry point
``lambda_entry`` and what they import, derived from their imports), its
reproducible zip (``layer_zip``) and unpacking it for local execution
environments (``unpack``: a link to one copy kept, with its bytecode, in the user's
cache per interpreter and zip, ``cached_layer``; else unpacked in the run's folder). The
deploy path publishes the same bytes as a Lambda layer. The zip is made once per state of
its files: a later run (a sweep's next cell, a compare's next variant, a test session's next
run, the next process, through the copy kept in the user's cache) reuses it until one of the
files it holds changes. Must not import boto3.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from loadtest.errors import InputError

LAYER_ENTRIES = ("observer/lambda_entry.py", "observer/write_observer.py")
"""What a function's runtime imports from the layer; everything else follows from their imports."""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[str]:
    """The ``loadtest`` modules a module imports when it is imported: not under ``if
    TYPE_CHECKING`` and not inside functions (the package's lazy attributes are never used in a
    function; the isolated import test in tests/observer/test_lambda_entry.py checks the result)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from (name for child in node.orelse for name in _runtime_imports(child))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("loadtest"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("loadtest"):
            assert node.module is not None
            yield node.module
            # ``from loadtest.model import history`` imports the submodule history.
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        else:
            yield from _runtime_imports(node)


def _module_file(package: Path, dotted: str, absent: set[str] | None = None) -> str | None:
    """``loadtest.model.history.log`` -> ``model/history/log.py``; None when it is not a module
    (the files looked for and not found are added to ``absent``, when given)."""
    parts = dotted.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (package / candidate).is_file():
            return candidate.removeprefix("/")
        if absent is not None:
            absent.add(candidate)
    return None


def layer_modules(package: Path | None = None) -> tuple[str, ...]:
    """The files the layer must carry: its entries, what they import at run time, transitively,
    and every package ``__init__.py`` on the way (derived, so a new module cannot be forgotten)."""
    return _derived(package or package_dir())[0]


def _derived(package: Path) -> tuple[tuple[str, ...], frozenset[str]]:
    """``layer_modules`` of ``package``, and the files it looked for and did not find (a
    module made there later would change the answer)."""
    wanted: set[str] = set()
    absent: set[str] = set()
    pending = list(LAYER_ENTRIES)
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        folders = Path(name).parent.parts
        for depth in range(len(folders) + 1):
            pending.append("/".join([*folders[:depth], "__init__.py"]))
        tree = ast.parse((package / name).read_text(encoding="utf-8"), filename=name)
        for dotted in _runtime_imports(tree):
            found = _module_file(package, dotted, absent)
            if found is not None:
                pending.append(found)
    return tuple(sorted(wanted, key=lambda n: (n.count("/"), n))), frozenset(absent)


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


_made: dict[Path, tuple[tuple[tuple[str, int, int], ...], bytes]] = {}
"""The last zip made of each package folder, with the state (name, mtime, size) of each
file it holds."""


def _state(package: Path, names: Iterable[str]) -> tuple[tuple[str, int, int], ...] | None:
    """(name, mtime_ns, size) of each file, or None if one is gone."""
    try:
        return tuple(
            (name, (stat := (package / name).stat()).st_mtime_ns, stat.st_size) for name in names
        )
    except OSError:
        return None


def layer_zip() -> bytes:
    """The observer layer: ``python/loadtest/...`` (on the runtime's path under /opt/python).

    Byte-for-byte reproducible (fixed timestamps), so the same observer code
    always makes the same layer. Made again only when a file it holds has changed since
    it was last made in this process (a new import is a change to a file it holds).
    """
    package = package_dir()
    made = _made.get(package)
    if made is not None and _state(package, (name for name, _, _ in made[0])) == made[0]:
        return made[1]
    kept = _kept_zip(package)
    if kept is not None:
        _made[package] = kept
        return kept[1]
    names, absent = _derived(package)
    state = _state(package, names)  # before reading them: a change meanwhile shows next time
    data = zip_entries((f"{PYTHON_DIR}/loadtest/{name}", package / name) for name in names)
    if state is not None:
        _made[package] = (state, data)
        _keep_zip(package, state, absent, data)
    return data


KEPT_ZIPS = "zips"
"""The folder under ``cache_root()`` where the last layer zip made of each package folder is
kept for the next process (deriving the module list parses every module it holds: about
0.1 s of CPU per process, a run's largest fixed cost in its harness)."""
KEPT_ZIPS_LIMIT = 16
"""Zips kept at most (one per package folder: an installed copy, a checkout, a worktree);
the oldest are removed."""


def _kept_path(package: Path) -> str:
    digest = hashlib.sha256(os.fsencode(package)).hexdigest()[:32]
    return os.path.join(cache_root(), KEPT_ZIPS, digest)


@functools.cache
def _making_code() -> str:
    """The SHA-256 of this module's source: a zip kept by other code that derives or zips the
    layer (another entry, another rule for imports) is not reused."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _kept_zip(package: Path) -> tuple[tuple[tuple[str, int, int], ...], bytes] | None:
    """The zip kept by ``_keep_zip`` for ``package`` and its state, if this module made it,
    every file it holds is as it was (name, mtime, size), every module it looked for and did
    not find is still missing, and its bytes are the ones written; else None (it is made
    again)."""
    try:
        with open(_kept_path(package), "rb") as file:
            head = json.loads(file.readline())
            data = file.read()
        if (
            head["package"] != str(package)
            or head["made_by"] != _making_code()
            or hashlib.sha256(data).hexdigest() != head["sha256"]
        ):
            return None
        state = tuple((str(name), int(mtime), int(size)) for name, mtime, size in head["held"])
        absent = [str(name) for name in head["absent"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if _state(package, (name for name, _, _ in state)) != state:
        return None
    if any((package / name).is_file() for name in absent):
        return None
    return state, data


def _keep_zip(
    package: Path, state: tuple[tuple[str, int, int], ...], absent: Iterable[str], data: bytes
) -> None:
    """Keep the zip made of ``package`` for the next process (see ``_kept_zip``), written
    whole under a temporary name and renamed; nothing is kept where the cache cannot be
    written."""
    path = _kept_path(package)
    head = {
        "package": str(package),
        "made_by": _making_code(),
        "held": state,
        "absent": sorted(absent),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        kept = sorted(os.scandir(folder), key=lambda entry: entry.stat().st_mtime_ns)
        for entry in kept[: max(0, len(kept) + 1 - KEPT_ZIPS_LIMIT)]:
            if entry.path != path:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        descriptor, temporary = tempfile.mkstemp(prefix=".writing-", dir=folder)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(json.dumps(head).encode() + b"\n" + data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        return


def unpack(into: str) -> str:
    """Give ``into`` the layer as ``into/layer``: a link to its copy in the user's cache
    (``cached_layer``), else the zip unpacked there; return the folder to put first on
    ``sys.path``."""
    target = os.path.join(into, "layer")
    if os.path.islink(target):  # its cached copy was removed meanwhile
        os.unlink(target)
    cached = cached_layer()
    if cached is not None:
        try:
            os.symlink(cached, target, target_is_directory=True)
            return os.path.join(target, PYTHON_DIR)
        except OSError:
            pass
    with zipfile.ZipFile(io.BytesIO(layer_zip())) as archive:
        archive.extractall(target)
    return os.path.join(target, PYTHON_DIR)


CACHE_NAME = "loadtest"
"""The folder under the user's cache (``$XDG_CACHE_HOME``, else ``~/.cache``) holding the
unpacked layers."""
MANIFEST = "manifest.json"
"""In each cached layer: the SHA-256 of every file under its ``layer`` folder, by path."""
KEPT_LAYERS_LIMIT = 8
"""Unpacked layers the cache keeps: when one is made, those beyond this many most recently
used (a use touches its folder) and unused for ``UNUSED_LAYER_S`` are deleted, as are
half-made copies left that long by a process that was killed."""
UNUSED_LAYER_S = 24 * 3600
"""How long a cached layer must have gone unused before it may be deleted: a run links its
layer for as long as it lasts."""


def cache_root() -> str:
    """Where the unpacked layers are kept: ``$XDG_CACHE_HOME/loadtest``, else ``~/.cache/loadtest``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, CACHE_NAME)


def cached_layer() -> str | None:
    """The layer unpacked, with its modules' bytecode, in the user's cache: the path of its
    ``layer`` folder, or None where the cache cannot be written.

    One copy per interpreter and layer (the zip's SHA-256 names it: a loadtest version whose
    layer changed makes its own, one whose layer did not shares it), so a run's zygote imports the layer without compiling it, even where
    ``PYTHONDONTWRITEBYTECODE`` is set. Made in a temporary folder beside it and renamed
    into place, so a concurrent run sees it whole or not at all; each use checks every file
    against its manifest, and the manifest's sources against the zip's, and a copy that
    differs is replaced. The bytecode is checked against its source's hash at import
    (``CHECKED_HASH``), not its time stamp. The zip itself is unchanged: a deployed function
    compiles the layer at its cold start, as before.
    """
    data = layer_zip()
    sources = _digests_of_zip(data)
    root = cache_root()
    name = f"layer-{sys.implementation.cache_tag}-{hashlib.sha256(data).hexdigest()[:32]}"
    final = os.path.join(root, name)
    if _verified(final, sources):
        with contextlib.suppress(OSError):
            os.utime(final)  # used: ``_prune`` keeps the most recently used
        return os.path.join(final, "layer")
    try:
        os.makedirs(root, exist_ok=True)
        _prune(root, name)
        fresh = tempfile.mkdtemp(prefix=".unpacking-", dir=root)
    except OSError:
        return None
    try:
        _fill(fresh, data, final)
        stale = None
        if os.path.lexists(final):  # a copy that failed its check: moved aside first
            stale = tempfile.mkdtemp(prefix=".stale-", dir=root)
            with contextlib.suppress(OSError):  # another run moved it first
                os.rename(final, os.path.join(stale, name))
        with contextlib.suppress(OSError):  # another run's copy landed first
            os.rename(fresh, final)
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
    except OSError:
        return None
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return os.path.join(final, "layer") if _verified(final, sources) else None


def _prune(root: str, making: str) -> None:
    """Delete the cached layers under ``root`` beyond the ``KEPT_LAYERS_LIMIT`` most
    recently used (``making`` about to be one of them) that went unused for
    ``UNUSED_LAYER_S``, and half-made copies as old."""
    now = time.time()
    layers: list[tuple[float, str]] = []
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.name == making or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                used = entry.stat(follow_symlinks=False).st_mtime
                if entry.name.startswith("layer-"):
                    layers.append((used, entry.path))
                elif entry.name.startswith((".unpacking-", ".stale-")) and (
                    now - used > UNUSED_LAYER_S
                ):
                    shutil.rmtree(entry.path, ignore_errors=True)
    layers.sort(reverse=True)
    for used, path in layers[KEPT_LAYERS_LIMIT - 1 :]:
        if now - used > UNUSED_LAYER_S:
            shutil.rmtree(path, ignore_errors=True)


def _digests_of_zip(data: bytes) -> dict[str, str]:
    """The SHA-256 of each file in the layer zip, by its path in the zip."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {
            info.filename: hashlib.sha256(archive.read(info)).hexdigest()
            for info in archive.infolist()
            if not info.is_dir()
        }


def _files_under(folder: str) -> list[str]:
    """Every file below ``folder``, as a ``/``-separated path relative to it."""
    found: list[str] = []
    for parent, _, files in os.walk(folder):
        relative = os.path.relpath(parent, folder)
        found.extend(name if relative == "." else f"{relative}/{name}" for name in files)
    return found


def _verified(final: str, sources: dict[str, str]) -> bool:
    """Whether the cached copy ``final`` holds its manifest's files, those bytes, no other
    file but bytecode, and the zip's sources among them."""
    try:
        with open(os.path.join(final, MANIFEST), encoding="utf-8") as manifest:
            listed: dict[str, str] = json.load(manifest)
        layer = os.path.join(final, "layer")
        # Bytecode for other optimization levels, which an interpreter may add, is checked
        # against its source when imported.
        extra = set(_files_under(layer)) - set(listed)
        if any(not (path.endswith(".pyc") and "/__pycache__/" in f"/{path}") for path in extra):
            return False
        for path, digest in listed.items():
            with open(os.path.join(layer, path), "rb") as file:
                if hashlib.sha256(file.read()).hexdigest() != digest:
                    return False
    except (OSError, ValueError, AttributeError):
        return False
    return all(listed.get(path) == digest for path, digest in sources.items())


def _fill(fresh: str, data: bytes, final: str) -> None:
    """Unpack the zip under ``fresh/layer``, compile its modules (the bytecode names their
    sources as they will be found under ``final``) and write the manifest."""
    import py_compile  # only when a copy is made

    layer = os.path.join(fresh, "layer")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(layer)
    if sys.pycache_prefix is None:  # elsewhere the bytecode would not be found beside them
        for path in _files_under(layer):
            if path.endswith(".py"):
                source = os.path.join(layer, path)
                py_compile.compile(
                    source,
                    cfile=importlib.util.cache_from_source(source),
                    dfile=os.path.join(final, "layer", path),
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
    listed: dict[str, str] = {}
    for path in _files_under(layer):
        with open(os.path.join(layer, path), "rb") as file:
            listed[path] = hashlib.sha256(file.read()).hexdigest()
    with open(os.path.join(fresh, MANIFEST), "w", encoding="utf-8") as manifest:
        json.dump(listed, manifest, sort_keys=True)


BOOTSTRAP = """\
import sys
layer, installed = sys.argv[1], sys.argv[2]
sys.path.insert(0, layer)
import loadtest, loadtest.model, loadtest.observer
# The layer's modules come first; the rest of the environment host (its guards) from the
# installed package, as if the layer were on a Lambda runtime beside it.
loadtest.__path__.append(installed)
loadtest.model.__path__.append(installed + "/model")
loadtest.observer.__path__.append(installed + "/observer")
from loadtest.emulation.environment import child_host
child_host.main()
"""
"""``python -c BOOTSTRAP LAYER_DIR PACKAGE_DIR``: an execution environment that runs the observer
and its entry point from the unpacked layer."""

ZYGOTE_MARKER = "# loadtest-zygote"
"""The first line of ``ZYGOTE``: in ``/proc/PID/cmdline`` of the zygote and of every
environment it forks (a forked child keeps its parent's command line)."""
ZYGOTE = f"""\
{ZYGOTE_MARKER}: forks execution environments (loadtest.emulation.environment.child_zygote)
import sys
layer, installed = sys.argv[1], sys.argv[2]
sys.path.insert(0, layer)
import loadtest, loadtest.model, loadtest.observer
loadtest.__path__.append(installed)
loadtest.model.__path__.append(installed + "/model")
loadtest.observer.__path__.append(installed + "/observer")
from loadtest.emulation.environment import child_host
environment_modules = frozenset(sys.modules)
from loadtest.emulation.environment import child_zygote
parent_pid, harness_pidfd = child_zygote.serve(environment_modules)
del child_zygote, environment_modules
child_host.main(parent_pid, harness_pidfd)
"""
"""``python -c ZYGOTE LAYER_DIR PACKAGE_DIR``: BOOTSTRAP's imports, then fork requests served
until one returns in a child, which runs as an environment (``loadtest.emulation.environment.child_zygote``)."""
