"""What an invocation in a local execution environment came to, in Lambda's words.

Owns ``Reply`` (one invocation's answer, or its failure with the writes it made), the
errors Lambda reports for an environment's exit (``exit_reason``: ``Runtime.ExitError``
with the status or signal, out of memory, the injected crashes) and the handler results
kept for the report (``keep_result``). Must not touch processes.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from typing import Any

from loadtest.model.history.observation import Observed
from loadtest.model.history.records import WorkLeft
from loadtest.observer.lambda_entry import CRASH_MID_HANDLER_EXIT, CRASH_MID_HANDLER_MESSAGE
from loadtest.observer.point_faults import (
    POINT_CRASH_EXIT,
    POINT_CRASH_MESSAGE,
    POINT_TIMEOUT_EXIT,
    POINT_TIMEOUT_MESSAGE,
)

# The error of an invocation the run stopped while it ran: its deadline, or an interrupt
# (Ctrl-C, SIGTERM). Either way the invocation happened and its writes are on record.
CUT_OFF_ERROR = "Cut off when the run stopped (its deadline, or an interrupt)"
RESULT_KEEP_BYTES = 256 * 1024
"""The largest handler result kept (as JSON) for the report; a larger one is described."""
OUT_OF_MEMORY_EXIT = 99
"""Exit code of an environment stopped for using more than its ``memory_mb`` (see child_host)."""


@dataclass(frozen=True)
class Reply:
    ok: bool
    timed_out: bool
    crashed: bool
    result: Any
    error: str | None
    started_ns: int
    ended_ns: int
    observed: Observed
    log_tail: str
    ack_lost: bool = False
    """The handler succeeded and the ``ack-lost`` point fault lost its acknowledgement."""
    response_json: bool = True
    """Whether the response's body is strict JSON (``runtime_marshal.response_value``)."""
    left_work: tuple[WorkLeft, ...] = ()
    """The threads, pool calls and asyncio tasks the handler left running when it returned."""
    ended_work: tuple[str, ...] = ()
    """The ids of work earlier invocations left running that has finished since."""


def keep_result(result: Any) -> Any:
    """``result``, or a short description when its JSON is over ``RESULT_KEEP_BYTES``."""
    try:
        size = len(json.dumps(result))
    except (TypeError, ValueError):
        return result
    if size <= RESULT_KEEP_BYTES:
        return result
    return f"<result of {size} bytes not kept: over {RESULT_KEEP_BYTES // 1024} KiB>"


def out_of_memory_error(memory_mb: int) -> str:
    return (
        f"Runtime.OutOfMemory: the execution environment used more than its memory_mb "
        f"({memory_mb} MB) and was stopped, as Lambda stops it"
    )


def exit_reason(code: int | None, memory_mb: int, request_id: str) -> str:
    """Why an environment's process ended during an invocation, as Lambda words it: a
    ``Runtime.ExitError`` with the exit status or the signal, unless it ran out of memory."""
    if code == OUT_OF_MEMORY_EXIT:
        return out_of_memory_error(memory_mb)
    if code == CRASH_MID_HANDLER_EXIT:
        return CRASH_MID_HANDLER_MESSAGE
    if code == POINT_TIMEOUT_EXIT:
        return POINT_TIMEOUT_MESSAGE
    if code == POINT_CRASH_EXIT:
        return POINT_CRASH_MESSAGE
    if code is None:
        return "Runtime exited: the execution environment's process died"
    if code == 0:
        why = "Runtime exited without providing a reason"
    elif code > 0:
        why = f"Runtime exited with error: exit status {code}"
    else:
        try:
            name = signal.strsignal(-code) or f"signal {-code}"
        except ValueError:
            name = f"signal {-code}"
        why = f"Runtime exited with error: signal: {name.lower()}"
    return f"Runtime.ExitError: RequestId: {request_id} Error: {why}"


def memory_error(error: Any, memory_mb: int) -> str | None:
    """A handler's MemoryError (the hard ceiling, see child_host) is Lambda's out of memory."""
    if error is None:
        return None
    text = str(error)
    if text.startswith("MemoryError"):
        return out_of_memory_error(memory_mb)
    return text
