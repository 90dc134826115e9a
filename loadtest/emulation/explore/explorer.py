"""The explorer: runs one schedule of a few deliveries, one step at a time, as a chooser says.

The deliveries themselves (a thread each, parked at every point) are
``loadtest.emulation.explore.deliveries``'; here, the scheduler: at each decision it
offers the chooser the deliveries that can go and the faults that can strike there, and
applies the choice. Exactly one delivery runs at a time, so a schedule is a sequence of
decisions and runs the same way every time it is replayed.

The queue is modelled here, as Lambda's SQS event source mapping behaves: a
delivery whose invocation fails (the handler raised, the environment crashed
or timed out) or whose acknowledgement is lost leaves the message to come back
once its visibility timeout has passed since it was received (when its invocation
started, if the clock jumped past the moment it became visible), with its receive
count one higher, until ``max_receive_count``, after which it is
dead-lettered. Time is virtual and moves only when no delivery can go (to the
earliest sleep's end or message's return), or when a ``clock`` or
``timeout`` fault moves it.

Owns the decisions, the faults' effects, the queue's model and a schedule's history;
the search (which option at each decision) is the chooser's
(``loadtest.model.explore.strategies``), judging is the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadtest.emulation.explore.deliveries import STEP_LIMIT_S as STEP_LIMIT_S
from loadtest.emulation.explore.deliveries import Deliveries
from loadtest.emulation.explore.observer import THROTTLED
from loadtest.emulation.explore.runs import (
    NS_PER_S,
    Execution,
    Message,
    Run,
    invocation_of,
    observed_keys,
)
from loadtest.emulation.explore.steps import StepLog
from loadtest.model.explore.points import (
    FAULTS_AT,
    GLOBAL,
    TIME,
    Chooser,
    Delivery,
    Fault,
    Option,
    Point,
    default_option,
)
from loadtest.model.history.log import Ack, DeadLetter, InvocationOutcome, SentMessage, key_string


class Explorer(Deliveries):
    """Runs schedules of one handler; install its observer and clock around them."""

    # --- one schedule (the scheduler's thread) ------------------------------------------

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
        # A poller invokes what it receives at once: a delivery that started later than it
        # was made visible (the clock jumped past that moment while others ran) was
        # received when it started, and its visibility timeout counts from there.
        received = max(run.received_ns, run.started_ns) if run.started else run.received_ns
        back = received + int(self.settings.visibility_timeout_s * NS_PER_S)
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
        self._scheduling, self._running, self._unscheduled = True, None, 0
        self.clock.elapsed_ns = 0
        self._seq = 0
        self._runs = []
        self._receipts.clear()
        self._log = StepLog()
        queue = [
            Message(i + 1, m.message_id or f"s{schedule}-m{i + 1}", m.body, m.business_id)
            for i, m in enumerate(messages)
        ]
        for message in queue:
            self._receive(message, 0, schedule)
        taken: list[tuple[int, Option, Option]] = []
        acks: list[Ack] = []
        self._acks = acks
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
        self._scheduling = False
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
            self._unscheduled,
        )
