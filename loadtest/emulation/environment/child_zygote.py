"""The zygote: one process per run that forks the run's execution environments.

``python -c layer.ZYGOTE LAYER_DIR PACKAGE_DIR`` imports what an environment
imports before the user's handler (the layer path set-up, then
``loadtest.emulation.environment.child_host``: the observer, its entry point, botocore) and
then waits on its control socket (its stdin, from
``loadtest.emulation.environment.parent_zygote``). Each request carries three descriptors: the
environment's protocol socket, its log file and a status socket. The zygote
forks; the child becomes the environment (``become_environment``) and returns
from ``serve`` into ``child_host.main``, which imports the handler: the cold
start. The zygote writes ``pid N`` (with a pidfd, so the harness can signal
the child without a pid-reuse race) and, once it has reaped the child,
``exit CODE`` (``-SIGNAL`` for a signal) on the status socket, then closes it.

Must stay single-threaded, hold no sockets but its own control and status
sockets, and import nothing beyond the standard library and what the
environment host imports: whatever it holds, every environment inherits. It
dies with the harness (``PR_SET_PDEATHSIG``, a pidfd on the harness, and the
end of its control socket), and its children die with it. Linux only.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Set
from typing import NoReturn

from loadtest.emulation.environment.child_guard import parent_death_signal

READY = b'{"ready":true}\n'
"""The zygote's hello on its control socket once its imports are done."""


def _fail(message: str) -> NoReturn:
    os.write(2, f"loadtest zygote: {message}\n".encode())
    os._exit(1)


def serve(environment_modules: Set[str]) -> tuple[int, int]:
    """Serve fork requests; return only in a forked child, as ``(zygote pid, harness pidfd)``.

    ``environment_modules`` are the modules a direct start has imported before
    its handler; a child drops any other (this module and what it imported).
    """
    harness = int(os.environ.get("LOADTEST_PARENT_PID", "0")) or os.getppid()
    zygote = os.getpid()  # the children's parent, whatever has happened to it by the time they look
    parent_death_signal()
    try:
        harness_fd = os.pidfd_open(harness)
    except OSError as exc:
        _fail(f"cannot watch the harness (pid {harness}): {exc}")
    if os.getppid() != harness:  # the harness died before the guards took effect
        os._exit(1)
    control = socket.socket(fileno=os.dup(0))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    children: dict[int, socket.socket] = {}
    poller = select.poll()
    for fd in (control.fileno(), wake_r, harness_fd):
        poller.register(fd, select.POLLIN)
    control.sendall(READY)
    while True:
        events = poller.poll()
        for fd, _ in events:
            if fd == wake_r:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                _reap(children)
            elif fd == harness_fd:
                _stop(children)
            elif fd == control.fileno():
                message, fds, _, _ = socket.recv_fds(control, 16, 3)
                if not message:
                    _stop(children)  # the harness closed the run
                if len(fds) != 3:
                    for extra in fds:
                        os.close(extra)
                    continue
                forked = _fork(*fds, children=children, keep=environment_modules)
                if forked:
                    # This process is now an environment: drop the zygote's own descriptors.
                    for child in children.values():
                        child.close()
                    control.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    return zygote, harness_fd


def _fork(
    proto: int, log: int, status: int, *, children: dict[int, socket.socket], keep: Set[str]
) -> bool:
    """Fork one environment; True in the child (set up as one), False in the zygote."""
    status_sock = socket.socket(fileno=status)
    sys.stdout.flush()
    sys.stderr.flush()
    # The imported modules' objects move to the collector's permanent generation: a child's
    # collections then never write to their pages, which stay shared (see gc.freeze).
    gc.freeze()
    try:
        pid = os.fork()
    except OSError as exc:
        with _quiet():
            status_sock.sendall(f"error cannot fork: {exc}\n".encode())
        status_sock.close()
        os.close(proto)
        os.close(log)
        return False
    if pid == 0:
        status_sock.close()
        become_environment(proto, log, keep)
        return True
    os.close(proto)
    os.close(log)
    try:
        pidfd = os.pidfd_open(pid)  # before any reap: it names this child, never a reused pid
    except OSError:
        pidfd = -1
    with _quiet():
        socket.send_fds(status_sock, [f"pid {pid}\n".encode()], [pidfd] if pidfd >= 0 else [])
    if pidfd >= 0:
        os.close(pidfd)
    children[pid] = status_sock
    return False


class _quiet:
    """Ignore a harness that stopped listening: its end of a status socket is gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, OSError)


def _reap(children: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _report_exit(children, pid, status)


def _report_exit(children: dict[int, socket.socket], pid: int, status: int) -> None:
    """Tell the harness how a reaped child ended (``exit CODE``) and close its status socket."""
    sock = children.pop(pid, None)
    if sock is not None:
        with _quiet():
            sock.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
        sock.close()


def _stop(children: dict[int, socket.socket]) -> None:
    """End the zygote: kill what is left of its children, reap them all, exit."""
    for pid in children:
        with _quiet():
            os.kill(pid, signal.SIGKILL)
    while children:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        _report_exit(children, pid, status)
    os._exit(0)


def _read_line(fd: int) -> bytes:
    """The set-up line the harness writes before anything else on the protocol socket."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os._exit(1)  # the harness gave up on this environment before it started
        data += chunk
    return data


def become_environment(proto: int, log: int, keep: Set[str]) -> None:
    """In the forked child: the session, descriptors, environ and working folder of a fresh start.

    The harness's set-up line (``{"environ": {...}, "cwd": ...}``) is read
    from the protocol socket and applied before anything of the user's runs.
    """
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.dup2(proto, 0)
    os.dup2(proto, 1)
    os.dup2(log, 2)
    os.close(proto)
    os.close(log)
    setup = json.loads(_read_line(0))
    os.environ.clear()
    os.environ.update(setup["environ"])
    time.tzset()  # TZ may differ from the zygote's
    os.chdir(setup["cwd"])
    # The zygote's own modules are not part of an environment's state.
    for name in set(sys.modules) - keep:
        del sys.modules[name]
    package = sys.modules.get("loadtest.emulation.environment")
    if package is not None and hasattr(package, "child_zygote"):
        delattr(package, "child_zygote")
