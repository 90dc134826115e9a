"""The explorer's deliveries: one thread each, parked at every point until the scheduler lets it go.

Each delivery (one receive of one copy of the message) runs the handler in a
thread of this process, against the real table of the backend, with its execution
environment's copy of the handler (``environments``; imported there the first time, as
Lambda's init: not a point). A delivery
runs only when the scheduler lets it go, and stops at the next **point**:
invocation start, before each DynamoDB call or effect call and after its answer (the
``GatedObserver`` calls ``before_call`` and ``after_call``), in a sleep (the
``VirtualClock``), and when the handler has returned, before the
acknowledgement. Exactly one delivery runs at a time.

A delivery is handed over, not waited for: the scheduler releases the lock one
delivery waits on and waits on that delivery's other lock until it reports that it
parked or ended, so each step costs two thread switches and wakes no other thread. A received
delivery is parked at its start without a thread; it gets one (a worker kept
from earlier deliveries, or a new one) when it is let go from there, and one
that is crashed or abandoned at its start ends without ever running.

Owns the delivery threads, the points and how a delivery ends (returned, failed, crashed,
timed out, abandoned); which delivery goes next, and what the queue does with a message
afterwards, is the scheduler's (``loadtest.emulation.explore.explorer``).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from loadtest.emulation.environment.child_host import FunctionIdentity, LambdaContext
from loadtest.emulation.explore.observer import THROTTLING_CODE, GatedObserver
from loadtest.emulation.explore.runs import (
    NS_PER_S,
    Abandon,
    ExploreSettings,
    Killed,
    Message,
    Run,
    capturing,
    sqs_record,
)
from loadtest.emulation.explore.steps import StepLog
from loadtest.emulation.explore.virtual_clock import VirtualClock
from loadtest.errors import ExploreError
from loadtest.model.explore.points import LOCAL, Access, Delivery, Fault, Point
from loadtest.model.history.log import Ack, InvocationOutcome
from loadtest.model.history.observation import decode
from loadtest.model.history.records import UnobservedCall
from loadtest.observer import record_marks
from loadtest.observer.layer_environment import SideTables

STEP_LIMIT_S = 120.0
"""Real seconds a delivery may run between two points before explore gives up on it."""


class _Worker:
    """A thread that runs deliveries one after another, each when it is handed one."""

    def __init__(self, body: Callable[[Run, _Worker], None]) -> None:
        self._body = body
        # Held while it waits; released once per delivery handed to it (a plain lock: a
        # semaphore is a condition and a lock, written in Python).
        self._go = threading.Lock()
        self._go.acquire()
        self._run: Run | None = None
        threading.Thread(target=self._loop, daemon=True, name="delivery").start()

    def start(self, run: Run) -> None:
        self._run = run
        self._go.release()

    def stop(self) -> None:
        self._run = None
        with contextlib.suppress(RuntimeError):  # released already: it reads None next
            self._go.release()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            run, self._run = self._run, None
            if run is None:
                return
            threading.current_thread().name = f"delivery-{run.delivery.label}"
            self._body(run, self)


def _in_event_loop(label: str) -> bool:
    """Whether delivery ``label``'s thread is inside an asyncio event loop's wait."""
    threads = {t.ident for t in threading.enumerate() if t.name == f"delivery-{label}"}
    for ident, frame in sys._current_frames().items():
        if ident not in threads:
            continue
        at: FrameType | None = frame
        while at is not None:
            if at.f_code.co_name == "_run_once" and "asyncio" in at.f_code.co_filename:
                return True
            at = at.f_back
    return False


class Deliveries:
    """The deliveries of one handler's schedules: their threads, and the gate its observer
    and clock call from them."""

    def __init__(
        self,
        handler: Callable[[Any, Any], Any],
        table_name: str,
        key_names: tuple[str, ...],
        settings: ExploreSettings,
        *,
        function: FunctionIdentity,
        source_queues: tuple[str, ...] = (),
        dead_letter_queues: tuple[str, ...] = (),
        side_tables: SideTables = (),
    ) -> None:
        self.handler = handler
        self.handler_of: Callable[[int], Callable[[Any, Any], Any]] = lambda _: self.handler
        """Each execution environment's handler, by its number
        (``environments.EnvironmentHandlers``; by default ``handler`` in every one)."""
        self.settings = settings
        self.function = function
        self.clock = VirtualClock(self._sleep)
        self.observer = GatedObserver(
            table_name,
            key_names,
            sink=self._sink,
            clock=self._stamp,
            gate=self,
            source_queues=source_queues,
            dead_letter_queues=dead_letter_queues,
            side_tables=side_tables,
        )
        self._pending: list[Run] = []
        """Deliveries let go whose report the scheduler has not taken yet."""
        self._idle: list[_Worker] = []
        self._workers: list[_Worker] = []
        self._local = threading.local()
        self._runs: list[Run] = []
        self._log = StepLog()
        self._seq = 0
        self._aliases: list[tuple[str, str]] = []
        self._scheduling = False
        self._running: Run | None = None
        self._unscheduled = 0
        self._acks: list[Ack] = []
        """The schedule's acknowledgements (the explorer's list, which ``deleted`` adds to)."""
        self._receipts: dict[str, str] = {}
        """The schedule's deliveries' message ids by receipt handle: the observer reads it
        when the handler deletes a message itself."""
        self.observer.set_receipts(self._receipts)

    # --- the gate (called in delivery threads) -----------------------------------

    def in_delivery(self) -> bool:
        """Whether this thread is a delivery's, running the handler (not importing it)."""
        local = self._local
        return getattr(local, "run", None) is not None and not getattr(local, "cold", False)

    def _stamp(self) -> int:
        self._seq += 1
        return self.clock.elapsed_ns + self._seq

    def _sink(self, line: str) -> None:
        run: Run | None = getattr(self._local, "run", None)
        if run is None:
            return
        observation = decode(line)
        run.observations.append(observation)
        self._log.observed(run.delivery, observation)

    def _park(
        self, run: Run, point: Point, access: Access, wake_ns: int | None = None
    ) -> str | None:
        if run.stopped is not None:
            # Dead or abandoned: code still unwinding (a ``finally``) reaches nothing more.
            raise Abandon if run.stopped == "abandon" else Killed(run.stopped)
        run.point = point
        run.access = access
        if wake_ns is not None:
            run.wake_ns = wake_ns
        run.report.release()
        run.go.acquire()
        return self._instruction(run)

    @staticmethod
    def _instruction(run: Run) -> str | None:
        """What the scheduler let ``run`` go with (it ends here on a crash, a timeout, an
        abandon)."""
        instruction, run.instruction = run.instruction, None
        if instruction in ("abandon", "crash", "timeout"):
            run.stopped = instruction
            raise Abandon if instruction == "abandon" else Killed(instruction)
        return instruction

    def before_call(
        self, operation: str, access: Access, target: str, throttled_as: str = THROTTLING_CODE
    ) -> str | None:
        run: Run = self._local.run
        self._log.pending(run.delivery, operation, target, throttled_as)
        if self._aliases and access.keys:
            # The same item in every schedule, whatever fresh ids this one has.
            keys = set()
            for key in access.keys:
                for fresh, plain in self._aliases:
                    key = key.replace(fresh, plain)
                keys.add(key)
            access = Access(access.kind, frozenset(keys))
        return self._park(run, Point.CALL, access)

    def unscheduled(self, operation: str, target: str) -> None:
        """A DynamoDB or effect call made outside every delivery's thread while a schedule
        runs (``target``: what it calls, ``table orders``).

        It cannot be stopped at a point (the handler's own thread, an executor's), so
        the schedules run do not cover where it falls: it is noted as unobserved on
        the delivery that ran last, which leaves the schedule inconclusive, naming it.
        The explorer's own calls, between schedules, are not noted.
        """
        run = self._running
        if not self._scheduling or run is None or getattr(self._local, "cold", False):
            return
        self._not_covered(
            run,
            operation,
            f"made outside the delivery's thread ({target}): explore cannot "
            "schedule it, so no schedule covers where it falls",
        )

    def unordered(self, operation: str, target: str, other: str) -> None:
        """A call made while ``other``, a call of the same invocation that it does not
        commute with, was in flight (``asyncio.gather``).

        The observer runs the two one at a time, in the order they were made; the
        service might have run them the other way round, and no schedule covers that
        order: it is noted as unobserved, which leaves the schedule inconclusive,
        naming both.
        """
        self._not_covered(
            self._local.run,
            operation,
            f"made while {other} of the same invocation was in flight ({target}): "
            "explore runs them one at a time in the order they were made, so no "
            "schedule covers the other order",
        )

    def _not_covered(self, run: Run, operation: str, why: str) -> None:
        """Note on ``run`` a call no schedule covers: the schedule is inconclusive."""
        self._unscheduled += 1
        run.observations.append(UnobservedCall(operation, why, run.request_id))

    def deleted(self, message_ids: list[str]) -> None:
        """The handler deleted these messages of the modelled queue itself: each is
        acknowledged now, whatever its delivery does next (no redelivery after a crash)."""
        for run in self._runs:
            message = run.message
            if message.message_id in message_ids and not message.acked:
                message.acked = True
                self._acks.append(Ack(message.message_id, self.clock.elapsed_ns))

    def after_call(self, answer: str | None = None) -> None:
        run: Run = self._local.run
        self._log.answered(run.delivery, answer)
        self._park(run, Point.ANSWER, LOCAL)

    def _sleep(self, seconds: float) -> None:
        run: Run = self._local.run
        self._log.slept(run.delivery, seconds)
        self._park(run, Point.SLEEP, LOCAL, self.clock.elapsed_ns + int(seconds * NS_PER_S))

    # --- a delivery's thread ---------------------------------------------------------

    def _body(self, run: Run, worker: _Worker) -> None:
        self._local.run = run
        self.clock.threads.add(threading.get_ident())
        self.observer.request_id = run.request_id
        try:
            run.go.acquire()  # released as it was let go from its start
            self._instruction(run)
            run.started, run.started_ns = True, self.clock.elapsed_ns
            # Records that mark themselves when read, as the observer layer hands them over.
            record = sqs_record(run)
            self._receipts[record["receiptHandle"]] = record["messageId"]
            event = record_marks.tracked({"Records": [record]})
            # Made in this thread: its deadline and remaining time follow the virtual clock.
            context = LambdaContext(run.request_id, self._timeout_ns // 1_000_000, self.function)
            result = self._cold_start(run.environment)(event, context)
            json.dumps(result)  # what Lambda's runtime would marshal (raises if it cannot)
            run.result = result
            failures = result.get("batchItemFailures") if isinstance(result, dict) else None
            if failures:
                run.outcome, run.error = (
                    InvocationOutcome.ERROR,
                    "batchItemFailures named the record",
                )
            if self._park(run, Point.END, LOCAL) == Fault.ACK_LOST.value:
                run.ack_lost = True
        except Abandon:
            run.abandoned = True
        except Killed as killed:
            timeout = str(killed) == "timeout"
            run.outcome = InvocationOutcome.TIMEOUT if timeout else InvocationOutcome.CRASH
            run.error = (
                "Task timed out (injected)" if timeout else "Runtime exited (injected crash)"
            )
        except Exception as exc:
            run.outcome, run.error = InvocationOutcome.ERROR, f"{type(exc).__name__}: {exc}"
        finally:
            run.ended_ns = self.clock.elapsed_ns
            self.clock.threads.discard(threading.get_ident())
            self._local.run = None
            self._idle.append(worker)
            run.done = True
            run.point = None
            run.report.release()

    def _cold_start(self, environment: int) -> Callable[[Any, Any], Any]:
        """The environment's handler, imported the first time one runs there: as Lambda's
        init, before the invocation, so its calls are no points and no unscheduled calls."""
        self._local.cold = True
        try:
            return self.handler_of(environment)
        finally:
            self._local.cold = False

    # --- handing deliveries over (the scheduler's thread) ------------------------------

    @property
    def _timeout_ns(self) -> int:
        return int(self.settings.function_timeout_s * NS_PER_S)

    def _receive(self, message: Message, wake_ns: int, schedule: int) -> None:
        message.receives += 1
        message.live += 1
        delivery = Delivery(message.copy, message.receives)
        run = Run(
            delivery,
            message,
            environment=len(self._runs) + 1,
            request_id=f"s{schedule}-{delivery.label}",
            received_ns=wake_ns,
            wake_ns=wake_ns,
        )
        # Parked at its start; its thread comes when it is let go from there.
        run.point, run.access = Point.START, LOCAL
        self._runs.append(run)
        self._log.received(delivery, run.environment)

    def _wait_parked(self) -> None:
        while self._pending:
            if not self._pending[-1].report.acquire(timeout=STEP_LIMIT_S):
                break
            self._pending.pop()
        if self._pending:
            running = [r.delivery.label for r in self._runs if not r.done and r.point is None]
            where = (
                "it waits in asyncio's event loop: an `await asyncio.sleep` (or an asyncio "
                "timeout), whose time is virtual here and passes only at points, or a "
                "network call outside DynamoDB"
                if any(_in_event_loop(label) for label in running)
                else "it blocks on something explore does not schedule (a lock, a queue, a "
                "thread of its own, a network call outside DynamoDB)"
            )
            raise ExploreError(
                f"delivery {', '.join(running)} ran {STEP_LIMIT_S:g} s of real time without "
                f"reaching a point (a DynamoDB call, a sleep, its end): {where}"
            )

    def _release(self, run: Run, instruction: str | None = None) -> None:
        if (
            instruction is None
            and run.started
            and run.deadline_ns(self._timeout_ns) <= self.clock.elapsed_ns
        ):
            instruction = "timeout"  # the function timeout passed while it was parked
            self._log.note(run.delivery, "timed out (the function timeout passed)")
        run.instruction = instruction
        self._running = run
        at_start = not run.started and run.point is Point.START
        run.point = None
        if at_start and instruction in ("abandon", "crash", "timeout"):
            self._end_unstarted(run, instruction)
            return
        self._pending.append(run)
        run.go.release()
        if at_start:
            worker = self._idle.pop() if self._idle else self._new_worker()
            worker.start(run)

    def _new_worker(self) -> _Worker:
        worker = _Worker(self._body)
        self._workers.append(worker)
        return worker

    def _end_unstarted(self, run: Run, instruction: str) -> None:
        """End a delivery let go from its start with ``instruction``, as its thread would
        have ended it there (nothing of the handler has run)."""
        run.instruction = None
        run.stopped = instruction
        if instruction == "abandon":
            run.abandoned = True
        else:
            timeout = instruction == "timeout"
            run.outcome = InvocationOutcome.TIMEOUT if timeout else InvocationOutcome.CRASH
            run.error = (
                "Task timed out (injected)" if timeout else "Runtime exited (injected crash)"
            )
        run.ended_ns = self.clock.elapsed_ns
        run.done = True

    def close(self) -> None:
        """Stop the worker threads (each waits for a delivery between schedules)."""
        for worker in self._workers:
            worker.stop()
        self._workers.clear()
        self._idle.clear()

    def capturing(self) -> contextlib.AbstractContextManager[None]:
        """Route the deliveries' prints to their invocations' logs for the block."""
        return capturing(self._local)
