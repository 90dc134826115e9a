"""An execution environment: one process that imports a handler once and runs invocations.

The parent (``loadtest.emulation.environment.parent_environments``) starts ``python -m loadtest.emulation.environment.child_host``
with the function's configuration in the environment, writes one JSON line
per invocation on stdin and reads one JSON line per reply from the protocol
descriptor (the process's original stdout). The handler's own prints go to a
per-invocation log capture, like Lambda's log stream, never to the protocol.

Protocol (one JSON object per line)::

    child  -> {"ready": true, "init_ns": N} | {"ready": false, "error": "..."}
    parent -> {"request_id": "...", "event": {...}, "timeout_ms": N, "records": [...]}
    child  -> {"request_id": "...", "ok": bool, "result": ..., "error": "...",
               "started_ns": N, "ended_ns": N, "log_tail": "..."}

The reply's ``result`` is what Lambda's Python runtime would send for the
handler's return value (``loadtest.observer.runtime_marshal``), read back as
JSON (``response_json`` false when it is not JSON); a value the runtime refuses
fails the invocation with ``Runtime.MarshalError``. ``sys.exit`` in a handler
ends the process with its status, as it ends the runtime's (no reply: the
parent reports the exit). With ``LOADTEST_FREEZE=1`` the process stops itself (SIGSTOP)
right after each reply and runs again when the parent continues it (SIGCONT)
with the next invocation: Lambda's freeze between invocations.

Observations do not travel in the reply: the write observer appends each one
to the file named by ``LOADTEST_OBSERVATIONS`` the moment it is made
(``loadtest.model.history.observation``), so a write outlives an invocation that then times
out, crashes or is killed.

The observer is installed and every invocation run by the observer layer's
own entry point (``loadtest.observer.lambda_entry``: ``start`` and
``invoke``), the code a deployed function runs, without its invocation lines:
the parent measures invocations itself.

Owns nothing outside its process; it must not import the rest of loadtest
beyond the observer layer and its guards (``loadtest.emulation.environment.child_guard``: it dies with its
parent and is stopped past ``memory_mb``) (the handler should see an environment like Lambda's).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import importlib
import importlib.util
import io
import json
import os
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadtest.emulation.environment.child_guard import (
    OUT_OF_MEMORY_EXIT,
    die_with_parent,
    enforce_memory,
    over_memory_peak,
)
from loadtest.model.history.observation import json_line_writer
from loadtest.observer import lambda_entry, runtime_marshal
from loadtest.observer.layer_environment import CRASH_AFTER_WRITE_ENV, FAULT_SEED_ENV

LOG_TAIL_CHARS = 2000

_json_text = json_line_writer(None)
"""``json.dumps(value, separators=(",", ":"))``: the protocol's lines, from one encoder."""


@dataclass(frozen=True)
class FunctionIdentity:
    """What a context says about the function itself: fixed for an environment's life, as
    Lambda's runtime fixes it at the cold start (read once, not once per invocation)."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    log_group_name: str

    @staticmethod
    def from_environ() -> FunctionIdentity:
        name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "loadtest-function")
        region = os.environ.get("AWS_REGION", "us-east-1")
        return FunctionIdentity(
            function_name=name,
            invoked_function_arn=f"arn:aws:lambda:{region}:000000000000:function:{name}",
            memory_limit_in_mb=int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")),
            log_group_name=f"/aws/lambda/{name}",
        )


class CognitoIdentity:
    """``context.identity``: always present, its fields None outside a mobile SDK call (as the
    runtime's ``awslambdaric/lambda_context.py`` builds it)."""

    __slots__ = ("cognito_identity_id", "cognito_identity_pool_id")

    def __init__(self) -> None:
        self.cognito_identity_id: str | None = None
        self.cognito_identity_pool_id: str | None = None


class LambdaContext:
    """Lambda's context object, field for field as the runtime builds it
    (``awslambdaric/lambda_context.py``): the fields it reads from the environment are
    strings there (``memory_limit_in_mb`` is ``"128"``, not ``128``), and so they are here."""

    def __init__(self, request_id: str, timeout_ms: int, function: FunctionIdentity) -> None:
        env = os.environ
        self.aws_request_id = request_id
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = function.invoked_function_arn
        self.tenant_id: str | None = None
        self.client_context: Any = None
        self.identity = CognitoIdentity()
        self._deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, (self._deadline_ns - time.monotonic_ns()) // 1_000_000)

    def log(self, msg: Any) -> None:
        sys.stdout.write(str(msg))


class HandlerLoadError(Exception):
    """The handler could not be imported; ``error_type`` is the runtime's for it."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def load_handler(ref: str) -> Callable[[Any, Any], Any]:
    """Import ``module:function`` or ``/path/file.py:function`` and return the callable.

    Failures are named as the runtime names them (``awslambdaric/bootstrap.py``,
    ``_get_handler``): an ``ImportError`` is ``Runtime.ImportModuleError``, a
    ``SyntaxError`` ``Runtime.UserCodeSyntaxError``, a missing function
    ``Runtime.HandlerNotFound``; any other exception raised by the import is itself.
    """
    target, _, function = ref.rpartition(":")
    modname = os.path.splitext(os.path.basename(target))[0] if target.endswith(".py") else target
    try:
        if target.endswith(".py"):
            directory = os.path.dirname(target)
            sys.path.insert(0, directory)  # sibling imports work, as in a Lambda zip
            spec = importlib.util.spec_from_file_location(modname, target)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {target}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[modname] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ImportError as exc:
        raise HandlerLoadError(
            "Runtime.ImportModuleError", f"Unable to import module '{modname}': {exc}"
        ) from exc
    except SyntaxError as exc:
        raise HandlerLoadError(
            "Runtime.UserCodeSyntaxError", f"Syntax error in module '{modname}': {exc}"
        ) from exc
    handler = getattr(module, function, None)
    if handler is None:
        raise HandlerLoadError(
            "Runtime.HandlerNotFound", f"Handler '{function}' missing on module '{modname}'"
        )
    if not callable(handler):
        raise TypeError(f"{target}:{function} is not callable")
    return handler  # type: ignore[no-any-return]


class _Faults:
    """This environment's seeded fault sequence: the handler duration's jitter and the
    crash mid-handler (drawn by the entry point) and the crash after the handler returned,
    drawn in that order so a run can be reproduced."""

    def __init__(self, crash_p: float, seed: str) -> None:
        self.crash_p = crash_p
        self.rng = random.Random(seed)

    @staticmethod
    def from_environ() -> _Faults:
        env = os.environ
        return _Faults(
            crash_p=float(env.get(CRASH_AFTER_WRITE_ENV, "0")),
            seed=env.get(FAULT_SEED_ENV, "0"),
        )

    def crash(self) -> bool:
        return self.crash_p > 0 and self.rng.random() < self.crash_p


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``: one system call unless it is cut short."""
    while data:
        data = data[os.write(fd, data) :]


def file_sink(path: str) -> Callable[[str], None]:
    """Append each observation line to ``path`` with one unbuffered write."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(line: str) -> None:
        _write_all(fd, line.encode("utf-8"))

    return write


def main(parent_pid: int | None = None, harness_pidfd: int | None = None) -> None:
    """Serve invocations on stdin/stdout; started directly, or forked by the zygote, which
    passes its own pid (this process's parent) and a pidfd on the harness to watch."""
    watchdog = die_with_parent(parent_pid, harness_pidfd)
    # A cold start that hangs is asked, by SIGUSR1, where it is (shown in the error).
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
    protocol = os.dup(1)
    os.dup2(
        2, 1
    )  # stray writes to fd 1 (C extensions, subprocesses) go to the log, not the protocol
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        _write_all(protocol, (_json_text(message) + "\n").encode("utf-8"))

    faults = _Faults.from_environ()
    started = time.monotonic_ns()
    try:
        # The observer layer's own entry point, as on Lambda: it installs the observer,
        # then imports the handler; only the sink, clock and loader are local.
        state = lambda_entry.start(
            {**os.environ, lambda_entry.WATCH_TABLE_ENV: os.environ["TABLE_NAME"]},
            file_sink(os.environ["LOADTEST_OBSERVATIONS"]),
            clock=time.monotonic_ns,
            load=lambda: load_handler(os.environ["LOADTEST_HANDLER"]),
            rng=faults.rng,
            invocation_lines=False,
        )
    except BaseException as exc:  # report any import failure, then exit
        kind = getattr(exc, "error_type", type(exc).__name__)
        send({"ready": False, "error": f"{kind}: {exc}{lambda_entry.environ_note(exc)}"})
        return
    function = FunctionIdentity.from_environ()
    memory_mb = function.memory_limit_in_mb
    memory = enforce_memory(memory_mb, watchdog)
    send({"ready": True, "init_ns": time.monotonic_ns() - started, "entry": lambda_entry.__file__})

    freeze = _freezer() if os.environ.get("LOADTEST_FREEZE") == "1" else None
    for line in sys.stdin.buffer:
        request = json.loads(line)
        capture = io.StringIO()
        context = LambdaContext(request["request_id"], request["timeout_ms"], function)
        ok, answer, error = True, None, None
        response_json = True
        memory.invocation_started()
        started = time.monotonic_ns()
        with contextlib.redirect_stdout(capture), contextlib.redirect_stderr(capture):
            try:
                # Arms the injected handler duration (a labelled fault) and ends it.
                result = lambda_entry.invoke(state, request["event"], context)
                response_json, answer = runtime_marshal.response_value(
                    runtime_marshal.marshal_response(result)
                )
            except runtime_marshal.MarshalError as exc:
                ok = False
                error = runtime_marshal.error_line(exc)
                capture.write(f"[ERROR] {error}\n")
            except Exception as exc:
                ok = False
                error = f"{type(exc).__name__}: {exc}{lambda_entry.environ_note(exc)}"
                traceback.print_exc(file=capture)
            except SystemExit as exc:
                # The runtime does not catch it: its process ends, with what the handler
                # logged, and the parent reports the exit status as Lambda does.
                _write_all(2, capture.getvalue().encode("utf-8", "replace"))
                os._exit(_exit_status(exc.code))
            # Dropped here, inside the log capture: an un-awaited coroutine's RuntimeWarning
            # goes to the invocation's log, as the runtime's would.
            result = None
        ended = time.monotonic_ns()
        memory.invocation_ended()
        peak_mb = over_memory_peak(memory_mb)
        if peak_mb is not None:
            os.write(
                2, f"loadtest: out of memory: peak {peak_mb} MB, memory_mb = {memory_mb}\n".encode()
            )
            os._exit(OUT_OF_MEMORY_EXIT)  # as Lambda stops the function: no reply
        crash = ok and faults.crash()
        if crash:
            ok = False
            error = "Runtime exited after the handler returned, before the acknowledgement (injected crash)"
        # Drawn after the crash: a run without the point faults draws what it drew before.
        ack_lost = ok and state.points is not None and state.points.ack_lost()
        reply = {
            "request_id": request["request_id"],
            "ok": ok,
            "crashed": crash,
            "ack_lost": ack_lost,
            "result": answer,
            "response_json": response_json,
            "error": error,
            "started_ns": started,
            "ended_ns": ended,
            # The calls refused for something the run does not provide lead the tail, so a
            # long traceback never pushes them out.
            "log_tail": "".join(f"{line}\n" for line in state.observer.take_missing())
            + capture.getvalue()[-LOG_TAIL_CHARS:],
            # Threads and pool calls the handler left running, and those left before that
            # have finished: the run judges work that never finished as cut short.
            **lambda_entry.left_lines(state),
        }
        data = (_json_text(reply) + "\n").encode("utf-8")
        if freeze is not None and not reply["crashed"]:
            freeze(protocol, data)
        else:
            _write_all(protocol, data)
        if crash:
            os._exit(137)  # the writes are made and reported; nothing is acknowledged


def _freezer() -> Callable[[int, bytes], None]:
    """Write a reply, then stop this whole process and its process group (SIGSTOP) until the
    parent continues them with the next invocation: Lambda's freeze between invocations.

    Both calls go through ``ctypes.PyDLL``, which keeps the GIL: from the handler's
    return until the stop, no other thread of the handler's runs Python code (``os.write``
    would let one run while the reply is written, before the process is stopped).
    """
    libc = ctypes.PyDLL(None, use_errno=True)
    write = libc.write
    write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    write.restype = ctypes.c_ssize_t
    kill = libc.kill
    kill.argtypes = (ctypes.c_int, ctypes.c_int)
    kill.restype = ctypes.c_int
    # The whole process group when this process leads one (it does: each environment is
    # a session of its own), so processes the handler started are frozen with it.
    pid = -os.getpid() if os.getpgrp() == os.getpid() else os.getpid()

    def reply_and_freeze(fd: int, data: bytes) -> None:
        while data:
            written = write(fd, data, len(data))
            if written < 0:
                errno = ctypes.get_errno()
                if errno == 4:  # EINTR
                    continue
                raise OSError(errno, os.strerror(errno))
            data = data[written:]
        kill(pid, signal.SIGSTOP)

    return reply_and_freeze


def _exit_status(code: object) -> int:
    """The process exit status ``sys.exit(code)`` gives."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1  # a message: printed, status 1


if __name__ == "__main__":
    main()
