"""A run's scope for its execution environments: their log folder and the run's zygote.

Owns ``log_directory`` (a fresh ``loadtest-envs-*`` folder, removed however the run ends:
when the harness is killed, by the zygote or the guards of directly started environments
(``loadtest.emulation.environment.child_guard``), else by the next run's ``new_log_dir``)
and the zygote of each run under way (``zygote_for``: started by the first environment
that needs it, stopped and reaped when the folder is left). A ``log_directory`` entered
within another is a ``variant-*`` folder inside it, sharing its zygote and its unpacked layer:
the variants and cells of one run fork their environments from one zygote, started once
(about 0.3 s of CPU each), and only the outermost folder's end stops it. Must not start
environments itself (``loadtest.emulation.environment.parent_environments`` does).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio

from loadtest.emulation.environment import parent_zygote as zygotes

LOG_DIR_PREFIX = "loadtest-envs-"


def new_log_dir() -> str:
    """A fresh ``loadtest-envs-PID-*`` folder (PID: this harness), after removing those of
    harnesses that are gone: a killed run's zygote, or its directly started environments'
    guards, remove its folder, but a run killed with no environment alive, or where guards
    are not armed (not Linux), has no one left to."""
    root = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            owner = entry.name.removeprefix(LOG_DIR_PREFIX).split("-", 1)[0]
            if entry.name.startswith(LOG_DIR_PREFIX) and owner.isdigit() and _gone(int(owner)):
                shutil.rmtree(entry.path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{LOG_DIR_PREFIX}{os.getpid()}-", dir=root)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's live process
        return False
    return False


@dataclass
class _Run:
    """The zygote of one run (one log folder, and the folders entered within it), started by
    the first environment that needs it."""

    folder: str
    """The outermost log folder: where the layer is unpacked and the zygote logs."""
    zygote: zygotes.Zygote | None = None
    lock: anyio.Lock | None = None


_RUNS: dict[str, _Run] = {}
"""The runs under way in this process, by log folder (``log_directory`` adds and removes them)."""

_ENCLOSING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "loadtest_enclosing_log_directory", default=None
)
"""The outermost ``log_directory`` entered in this context, if any."""


def run_folder(log_dir: str) -> str:
    """The outermost log folder of the run ``log_dir`` belongs to (``log_dir`` outside one)."""
    run = _RUNS.get(log_dir)
    return log_dir if run is None else run.folder


async def zygote_for(log_dir: str, layer_dir: str, env: dict[str, str]) -> zygotes.Zygote | None:
    """The run's zygote (started now if need be), or None for a direct start: outside
    ``log_directory``, where fork servers are unavailable, or for an environ whose interpreter
    start-up settings differ from the zygote's."""
    run = _RUNS.get(log_dir)
    if run is None or not zygotes.available():
        return None
    if run.lock is None:
        run.lock = anyio.Lock()
    async with run.lock:
        if run.zygote is None:
            run.zygote = await zygotes.Zygote.start(
                layer_dir, env, os.path.join(run.folder, "zygote.log")
            )
    zygote = run.zygote
    if not zygote.alive():
        raise zygote.died()
    if zygote.key != zygotes.startup_key(env, os.getcwd()):
        return None
    return zygote


@contextmanager
def log_directory() -> Iterator[str]:
    """A fresh ``loadtest-envs-*`` folder for the environments' logs, removed on exit.

    Also the scope of the run's zygote (``loadtest.emulation.environment.parent_zygote``): its
    environments are forked from it, and it is stopped and reaped here
    however the run ends.
    """
    enclosing = _ENCLOSING.get()
    if enclosing is not None and enclosing in _RUNS:
        # A variant of the enclosing run: its own folder for its environments' logs and
        # observations, the run's zygote (stopped when the enclosing folder is left).
        path = tempfile.mkdtemp(prefix="variant-", dir=enclosing)
        _RUNS[path] = _RUNS[enclosing]
        try:
            yield path
        finally:
            del _RUNS[path]
            shutil.rmtree(path, ignore_errors=True)
        return
    path = new_log_dir()
    _RUNS[path] = _Run(path)
    token = _ENCLOSING.set(path)
    try:
        yield path
    finally:
        _ENCLOSING.reset(token)
        zygote = _RUNS.pop(path).zygote
        if zygote is not None:
            zygote.stop()
        shutil.rmtree(path, ignore_errors=True)
