"""An execution environment: one process that imports a handler once and runs invocations.

The parent (``loadtest.emulation.environments``) starts ``python -m loadtest.emulation.envhost``
with the function's configuration in the environment, writes one JSON line
per invocation on stdin and reads one JSON line per reply from the protocol
descriptor (the process's original stdout). The handler's own prints go to a
per-invocation log capture, like Lambda's log stream, never to the protocol.

Protocol (one JSON object per line)::

    child  -> {"ready": true, "init_ns": N} | {"ready": false, "error": "..."}
    parent -> {"request_id": "...", "event": {...}, "timeout_ms": N, "records": [...]}
    child  -> {"request_id": "...", "ok": bool, "result": ..., "error": "...",
               "started_ns": N, "ended_ns": N, "log_tail": "..."}

Observations do not travel in the reply: the write observer appends each one
to the file named by ``LOADTEST_OBSERVATIONS`` the moment it is made
(``loadtest.model.observation``), so a write outlives an invocation that then times
out, crashes or is killed.

The observer is installed and every invocation run by the observer layer's
own entry point (``loadtest.emulation.lambda_entry``: ``start`` and
``invoke``), the code a deployed function runs, without its invocation lines:
the parent measures invocations itself.

Owns nothing outside its process; it must not import the rest of loadtest
beyond the observer layer and its guards (``loadtest.emulation.envguard``: it dies with its
parent and is stopped past ``memory_mb``) (the handler should see an environment like Lambda's).
"""

from __future__ import annotations

import contextlib
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

from loadtest.emulation import lambda_entry
from loadtest.emulation.envguard import (
    OUT_OF_MEMORY_EXIT,
    die_with_parent,
    enforce_memory,
    over_memory_peak,
)
from loadtest.emulation.layer_environment import CRASH_AFTER_WRITE_ENV, FAULT_SEED_ENV

LOG_TAIL_CHARS = 2000


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


class LambdaContext:
    """The subset of Lambda's context object that handlers and libraries use."""

    def __init__(self, request_id: str, timeout_ms: int, function: FunctionIdentity) -> None:
        self.aws_request_id = request_id
        self.function_name = function.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.invoked_function_arn
        self.memory_limit_in_mb = function.memory_limit_in_mb
        self.log_group_name = function.log_group_name
        self.log_stream_name = "loadtest"
        self._deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, (self._deadline_ns - time.monotonic_ns()) // 1_000_000)


def load_handler(ref: str) -> Callable[[Any, Any], Any]:
    """Import ``module:function`` or ``/path/file.py:function`` and return the callable."""
    target, _, function = ref.rpartition(":")
    if target.endswith(".py"):
        directory = os.path.dirname(target)
        sys.path.insert(0, directory)  # sibling imports work, as in a Lambda zip
        name = os.path.splitext(os.path.basename(target))[0]
        spec = importlib.util.spec_from_file_location(name, target)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    handler = getattr(module, function, None)
    if handler is None:
        raise AttributeError(f"{target} has no attribute {function!r}")
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


def _jsonable(value: Any) -> Any:
    """The handler's result as JSON, or a description of it when it is not JSON."""
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except Exception as exc:  # a result whose repr raises: say so, keep the run going
            return f"<unprintable {type(value).__name__}: repr raised {type(exc).__name__}: {exc}>"
    return value


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


def _reply_line(reply: dict[str, Any]) -> bytes:
    """The reply as one JSON line, its result encoded once (described instead when not JSON)."""
    try:
        text = json.dumps(reply, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        reply["result"] = _jsonable(reply["result"])
        text = json.dumps(reply, separators=(",", ":"))
    return (text + "\n").encode("utf-8")


def main(parent_pid: int | None = None, harness_pidfd: int | None = None) -> None:
    """Serve invocations on stdin/stdout; started directly, or forked by the zygote, which
    passes its own pid (this process's parent) and a pidfd on the harness to watch."""
    die_with_parent(parent_pid, harness_pidfd)
    # A cold start that hangs is asked, by SIGUSR1, where it is (shown in the error).
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
    protocol = os.dup(1)
    os.dup2(
        2, 1
    )  # stray writes to fd 1 (C extensions, subprocesses) go to the log, not the protocol
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        _write_all(protocol, (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))

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
        send(
            {
                "ready": False,
                "error": f"{type(exc).__name__}: {exc}{lambda_entry.environ_note(exc)}",
            }
        )
        return
    function = FunctionIdentity.from_environ()
    memory_mb = function.memory_limit_in_mb
    memory = enforce_memory(memory_mb)
    send({"ready": True, "init_ns": time.monotonic_ns() - started, "entry": lambda_entry.__file__})

    for line in sys.stdin.buffer:
        request = json.loads(line)
        capture = io.StringIO()
        context = LambdaContext(request["request_id"], request["timeout_ms"], function)
        ok, result, error = True, None, None
        memory.invocation_started()
        started = time.monotonic_ns()
        with contextlib.redirect_stdout(capture), contextlib.redirect_stderr(capture):
            try:
                # Arms the injected handler duration (a labelled fault) and ends it.
                result = lambda_entry.invoke(state, request["event"], context)
            except Exception as exc:
                ok = False
                error = f"{type(exc).__name__}: {exc}{lambda_entry.environ_note(exc)}"
                traceback.print_exc(file=capture)
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
            "result": result,
            "error": error,
            "started_ns": started,
            "ended_ns": ended,
            # The calls refused for something the run does not provide lead the tail, so a
            # long traceback never pushes them out.
            "log_tail": "".join(f"{line}\n" for line in state.observer.take_missing())
            + capture.getvalue()[-LOG_TAIL_CHARS:],
        }
        _write_all(protocol, _reply_line(reply))
        if crash:
            os._exit(137)  # the writes are made and reported; nothing is acknowledged


if __name__ == "__main__":
    main()
