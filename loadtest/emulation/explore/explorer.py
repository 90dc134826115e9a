"""The explorer: runs one schedule of a few deliveries, one step at a time, as a chooser says.

Each delivery (one receive of one copy of the message) runs the handler in a
thread of this process, against the real table of the backend. A delivery
runs only when the scheduler lets it go, and stops at the next **point**:
invocation start, before each DynamoDB call and after its answer (the
``GatedObserver``), in a sleep (the ``VirtualClock``), and when the handler
has returned, before the acknowledgement. Exactly one delivery runs at a
time, so a schedule is a sequence of decisions and runs the same way every
time it is replayed.

The queue is modelled here, as Lambda's SQS event source mapping behaves: a
delivery whose invocation fails (the handler raised, the environment crashed
or timed out) or whose acknowledgement is lost leaves the message to come back
once its visibility timeout has passed since it was received, with its receive
count one higher, until ``max_receive_count``, after which it is
dead-lettered. Time is virtual and moves only when no delivery can go (to the
earliest sleep's end or message's return), or when a ``clock`` or
``timeout`` fault moves it.

Owns the threads, the points, the faults' effects and a schedule's history;
the search (which option at each decision) is the chooser's
(``loadtest.model.explore_search``), judging is the engine's.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from loadtest.emulation.environment.child_host import FunctionIdentity, LambdaContext
from loadtest.emulation.explore.observer import THROTTLED, GatedObserver
from loadtest.emulation.explore.runs import (
    NS_PER_S,
    Abandon,
    Execution,
    ExploreSettings,
    Killed,
    Message,
    Run,
    capturing,
    invocation_of,
    observed_keys,
    sqs_record,
)
from loadtest.emulation.explore.steps import StepLog
from loadtest.emulation.explore.virtual_clock import VirtualClock
from loadtest.errors import ExploreError
from loadtest.model.explore import (
    FAULTS_AT,
    GLOBAL,
    LOCAL,
    TIME,
    Access,
    Chooser,
    Delivery,
    Fault,
    Option,
    Point,
    default_option,
)
from loadtest.model.history import (
    Ack,
    DeadLetter,
    InvocationOutcome,
    SentMessage,
    key_string,
)
from loadtest.model.observation import decode
from loadtest.observer import record_marks

STEP_LIMIT_S = 120.0
"""Real seconds a delivery may run between two points before explore gives up on it."""


class Explorer:
    """Runs schedules of one handler; install its observer and clock around them."""

    def __init__(
        self,
        handler: Callable[[Any, Any], Any],
        table_name: str,
        key_names: tuple[str, ...],
        settings: ExploreSettings,
        *,
        function: FunctionIdentity,
    ) -> None:
        self.handler = handler
        self.settings = settings
        self.function = function
        self.clock = VirtualClock(self._sleep)
        self.observer = GatedObserver(
            table_name, key_names, sink=self._sink, clock=self._stamp, gate=self
        )
        self._cv = threading.Condition()
        self._local = threading.local()
        self._runs: list[Run] = []
        self._log = StepLog()
        self._seq = 0
        self._aliases: list[tuple[str, str]] = []

    # --- the gate (called in delivery threads) -----------------------------------

    def in_delivery(self) -> bool:
        return getattr(self._local, "run", None) is not None

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
        with self._cv:
            run.point = point
            run.access = access
            if wake_ns is not None:
                run.wake_ns = wake_ns
            self._cv.notify_all()
        run.semaphore.acquire()
        instruction, run.instruction = run.instruction, None
        if instruction in ("abandon", "crash", "timeout"):
            run.stopped = instruction
            raise Abandon if instruction == "abandon" else Killed(instruction)
        return instruction

    def before_call(self, operation: str, access: Access, target: str) -> str | None:
        run: Run = self._local.run
        self._log.pending(run.delivery, operation, target)
        if self._aliases and access.keys:
            # The same item in every schedule, whatever fresh ids this one has.
            keys = set()
            for key in access.keys:
                for fresh, plain in self._aliases:
                    key = key.replace(fresh, plain)
                keys.add(key)
            access = Access(access.kind, frozenset(keys))
        return self._park(run, Point.CALL, access)

    def after_call(self, answer: str | None = None) -> None:
        run: Run = self._local.run
        self._log.answered(run.delivery, answer)
        self._park(run, Point.ANSWER, LOCAL)

    def _sleep(self, seconds: float) -> None:
        run: Run = self._local.run
        self._log.slept(run.delivery, seconds)
        self._park(run, Point.SLEEP, LOCAL, self.clock.elapsed_ns + int(seconds * NS_PER_S))

    # --- a delivery's thread ---------------------------------------------------------

    def _body(self, run: Run) -> None:
        self._local.run = run
        self.clock.threads.add(threading.get_ident())
        self.observer.request_id = run.request_id
        try:
            self._park(run, Point.START, LOCAL)
            run.started, run.started_ns = True, self.clock.elapsed_ns
            # Records that mark themselves when read, as the observer layer hands them over.
            event = record_marks.tracked({"Records": [sqs_record(run)]})
            # Made in this thread: its deadline and remaining time follow the virtual clock.
            context = LambdaContext(run.request_id, self._timeout_ns // 1_000_000, self.function)
            result = self.handler(event, context)
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
            with self._cv:
                run.done = True
                run.point = None
                self._cv.notify_all()

    # --- one schedule (the scheduler's thread) ------------------------------------------

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
        self._runs.append(run)
        self._log.received(delivery, run.environment)
        threading.Thread(
            target=self._body, args=(run,), daemon=True, name=f"delivery-{delivery.label}"
        ).start()

    def _settle(self, run: Run, schedule: int, acks: list[Ack], dead: list[DeadLetter]) -> None:
        run.settled = True
        message = run.message
        message.live -= 1
        now = self.clock.elapsed_ns
        if run.outcome is InvocationOutcome.SUCCESS and not run.ack_lost:
            self._log.note(run.delivery, "acknowledged")
            if not message.acked:
                message.acked = True
                acks.append(Ack(message.message_id, now))
            return
        if run.ack_lost:
            self._log.note(
                run.delivery, "returned; the acknowledgement is lost", fault=Fault.ACK_LOST
            )
        elif run.outcome is InvocationOutcome.ERROR:
            self._log.note(run.delivery, f"failed: {run.error}")
        if message.acked or message.dead or message.live > 0:
            return
        if message.receives >= self.settings.max_receive_count:
            message.dead = True
            dead.append(DeadLetter(message.message_id, message.receives, now))
            self._log.note(run.delivery, "message dead-lettered")
            return
        back = run.received_ns + int(self.settings.visibility_timeout_s * NS_PER_S)
        self._receive(message, max(back, now), schedule)

    def _options(self, used_faults: int) -> list[Option]:
        now = self.clock.elapsed_ns
        options: list[Option] = []
        for run in self._runs:
            if run.done or run.point is None or run.wake_ns > now:
                continue
            options.append(Option(run.delivery, run.point, run.access))
            if used_faults >= self.settings.max_faults:
                continue
            for fault in FAULTS_AT[run.point]:
                if fault not in self.settings.faults:
                    continue
                if (
                    fault is Fault.REDELIVER
                    and run.message.receives >= self.settings.max_receive_count
                ):
                    continue
                access = TIME if fault is Fault.CLOCK else GLOBAL
                options.append(Option(run.delivery, run.point, access, fault))
        return options

    def _wait_parked(self) -> None:
        with self._cv:
            parked = self._cv.wait_for(
                lambda: all(r.done or r.point is not None for r in self._runs),
                timeout=STEP_LIMIT_S,
            )
        if not parked:
            running = [r.delivery.label for r in self._runs if not r.done and r.point is None]
            raise ExploreError(
                f"delivery {', '.join(running)} ran {STEP_LIMIT_S:g} s of real time without "
                "reaching a point (a DynamoDB call, a sleep, its end): it blocks on something "
                "explore does not schedule (a lock, a queue, a thread of its own, a network "
                "call outside DynamoDB)"
            )

    def _advance(self) -> bool:
        """Move time to the next wake-up when no delivery can go; False when none waits."""
        waiting = [r for r in self._runs if not r.done and r.point is not None]
        if not waiting:
            return False
        wake = min(min(r.wake_ns, r.deadline_ns(self._timeout_ns)) for r in waiting)
        self.clock.elapsed_ns = max(self.clock.elapsed_ns, wake)
        for r in waiting:
            if r.point is Point.SLEEP and r.deadline_ns(self._timeout_ns) <= self.clock.elapsed_ns:
                r.wake_ns = self.clock.elapsed_ns
        return True

    def _release(self, run: Run, instruction: str | None = None) -> None:
        if (
            instruction is None
            and run.started
            and run.deadline_ns(self._timeout_ns) <= self.clock.elapsed_ns
        ):
            instruction = "timeout"  # the function timeout passed while it was parked
            self._log.note(run.delivery, "timed out (the function timeout passed)")
        run.instruction = instruction
        with self._cv:
            run.point = None
        run.semaphore.release()

    def _apply(self, option: Option, schedule: int) -> None:
        run = next(r for r in self._runs if r.delivery == option.delivery and not r.done)
        fault = option.fault
        self._log.at(self.clock.elapsed_ns)
        if fault is None:
            self._log.released(run.delivery, run.point)
            self._release(run)
        elif fault is Fault.REDELIVER:
            self._log.note(run.delivery, "the message becomes visible again", fault=fault)
            self._receive(run.message, self.clock.elapsed_ns, schedule)
        elif fault is Fault.CLOCK:
            jump = int(self.settings.clock_jump_s * NS_PER_S)
            self._log.note(
                run.delivery, f"the clock jumps {self.settings.clock_jump_s:g} s", fault=fault
            )
            self.clock.elapsed_ns += jump
        elif fault is Fault.THROTTLE:
            self._log.released(run.delivery, run.point, fault)
            self._release(run, THROTTLED)
        elif fault is Fault.ACK_LOST:
            self._release(run, Fault.ACK_LOST.value)
        elif fault is Fault.CRASH:
            self._log.note(run.delivery, "the environment crashes", fault=fault)
            self._release(run, "crash")
        else:  # TIMEOUT
            self._log.note(
                run.delivery, "the function timeout cuts the invocation off", fault=fault
            )
            self.clock.elapsed_ns = max(self.clock.elapsed_ns, run.deadline_ns(self._timeout_ns))
            self._release(run, "timeout")

    def run(
        self,
        chooser: Chooser,
        messages: Sequence[SentMessage],
        schedule: int,
        aliases: Sequence[tuple[str, str]] = (),
    ) -> Execution:
        """Run one schedule of ``messages`` (one per copy), each received at once.

        ``aliases`` (fresh, plain) name this schedule's fresh ids (business ids, message
        ids) as every schedule's, in the items its calls touch: the search compares
        steps of different schedules by the items they touch.
        """
        self._aliases = list(aliases)
        self.clock.elapsed_ns = 0
        self._seq = 0
        self._runs = []
        self._log = StepLog()
        queue = [
            Message(i + 1, m.message_id or f"s{schedule}-m{i + 1}", m.body, m.business_id)
            for i, m in enumerate(messages)
        ]
        for message in queue:
            self._receive(message, 0, schedule)
        taken: list[tuple[int, Option, Option]] = []
        acks: list[Ack] = []
        dead: list[DeadLetter] = []
        last: Delivery | None = None
        faults = 0
        abandoned = False
        while True:
            self._wait_parked()
            for run in self._runs:
                if run.done and not run.settled:
                    self._settle(run, schedule, acks, dead)
            self._wait_parked()
            options = self._options(faults)
            if not options:
                if self._advance():
                    continue
                break
            decision = len(taken)
            option = chooser.choose(decision, options, last)
            if option is None:
                abandoned = True
                break
            taken.append((decision, option, default_option(options, last)))
            faults += option.fault is not None
            last = option.delivery
            self._apply(option, schedule)
        for run in self._runs:
            if not run.done:
                self._release(run, "abandon")
        self._wait_parked()
        invocations = [invocation_of(r) for r in self._runs if r.started and not r.abandoned]
        keys = {key_string(k): k for r in self._runs for k in observed_keys(r)}
        return Execution(
            taken,
            list(messages),
            invocations,
            acks,
            dead,
            self._log.steps,
            self.clock.elapsed_ns + self._seq,
            abandoned,
            len(self._runs),
            faults,
            keys,
        )

    def capturing(self) -> contextlib.AbstractContextManager[None]:
        """Route the deliveries' prints to their invocations' logs for the block."""
        return capturing(self._local)
