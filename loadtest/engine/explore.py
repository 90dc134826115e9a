"""``explore``: search the schedules of a few deliveries for one that fails, and shrink it.

Runs a session (``loadtest.engine.explore_session``) on the embedded backend
(or an endpoint), then, by strategy:

- ``exhaustive``: every schedule the DFS of ``loadtest.model.explore.strategies``
  yields, until the space is covered, ``budget`` schedules ran or ``time_budget_s``
  seconds passed (or, with ``stop_at_first``, one fails);
- ``pct``: ``budget`` PCT schedules, seeded by ``seed``, until ``time_budget_s``
  seconds passed (or, with ``stop_at_first``, one fails);
- a ``schedule`` token: exactly that schedule, once.

The budgets are checked between schedules; one schedule is bounded by the driver's
limit on a step's real time. The result's ``bound`` states what was covered and why
the search stopped. Failing schedules are grouped into distinct bugs
(``loadtest.model.explore.bugs``: the same kinds of failure, leaving the search's first
schedule the same way); the first schedule of each bug is shrunk
(``loadtest.model.explore.shrink``), keyed again and merged with a bug it now matches, and
replayed once more to record its steps. The smallest bug is the counterexample. Every
schedule is judged by the checker, as a run is.

Owns the search loop and the result; prints nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from loadtest.aws import clients as aws
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.emulation.explore.runs import ExploreSettings
from loadtest.emulation.explore.steps import Step
from loadtest.engine.explore_session import FRESH_SEPARATOR, Judged, Session, explored_messages
from loadtest.engine.explore_workers import Workers, workers_for
from loadtest.engine.results import VariantRun
from loadtest.errors import InputError
from loadtest.model.checker import BAD_WHEN_NONZERO
from loadtest.model.explore.bounds import BoundSpec, check_schedule
from loadtest.model.explore.bugs import BugKey, bug_key, same_bug, within
from loadtest.model.explore.points import (
    Bound,
    Chooser,
    Fault,
    Option,
    Replay,
    Schedule,
    schedule_of,
    stopped_by,
)
from loadtest.model.explore.shrink import Candidate, shrink, size
from loadtest.model.explore.strategies import Exhaustive, Pct
from loadtest.model.figures.metrics import latencies
from loadtest.model.history.log import SentMessage
from loadtest.model.scenario.function_config import extra_table_name
from loadtest.model.scenario.loading import Scenario

STRATEGIES = ("exhaustive", "pct")
DEFAULT_BUDGET = 2000
DEFAULT_TIME_BUDGET_S = 120.0
PCT_DEPTH = 3
MOST_BUGS = 12
"""Distinct failing schedules (by their key before shrinking) kept to shrink, at most; the
failing schedules of further keys are counted (``ExploreResult.bugs_left_out``)."""


@dataclass(frozen=True)
class ExploreOptions:
    """What to explore and how (the command's options)."""

    strategy: str = "exhaustive"
    budget: int = DEFAULT_BUDGET
    """Most schedules to run (shrinking not included)."""
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    """Most seconds to search for (checked between schedules; shrinking not included)."""
    faults: tuple[Fault, ...] = ()
    max_faults: int = 1
    schedule: Schedule | None = None
    """Replay exactly this schedule instead of searching."""
    seed: int = 0
    copies: int | None = None
    distinct_ids: int = 1
    clock_jump_s: float | None = None
    """How far a ``clock`` fault moves time; default the function timeout minus one second."""
    env: tuple[str, ...] = ()
    """The ``--env NAME=VALUE`` pairs given: already in the scenario explored; its replay
    line carries them."""
    stop_at_first: bool = False
    """Stop the search at the first failing schedule (a quick gate) instead of running it
    to its budget and reporting every distinct bug."""
    limits: tuple[tuple[Fault, int], ...] = ()
    """The most of each fault kind one schedule may take (empty: ``max_faults`` bounds all
    kinds together)."""
    bound: BoundSpec | None = None
    """The ``--bound`` these options were set by (its replay line carries it)."""
    workers: int | None = None
    """Processes an exhaustive search runs schedules in (None: ``explore_workers.workers_for``
    decides; 1: this process alone). A search that stops at the first failure, PCT and a
    replay run here alone."""

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise InputError(
                f"strategy {self.strategy!r} is not known; allowed: {', '.join(STRATEGIES)}"
            )
        if self.budget < 1:
            raise InputError(f"budget {self.budget} must be at least 1 schedule")
        if not self.time_budget_s > 0:
            raise InputError(
                f"time budget {self.time_budget_s:g} must be more than 0 seconds "
                "(--time-budget S: how long the search may run)"
            )
        if self.max_faults < 0:
            raise InputError(f"max_faults {self.max_faults} must be 0 or more")
        if self.workers is not None and self.workers < 1:
            raise InputError(f"workers {self.workers} must be at least 1 process")
        if self.copies is not None and not 1 <= self.copies <= 8:
            raise InputError(
                f"copies {self.copies} must be 1 to 8 (each copy multiplies the schedules)"
            )
        if not 1 <= self.distinct_ids <= 4:
            raise InputError(f"distinct_ids {self.distinct_ids} must be 1 to 4")


@dataclass
class Counterexample:
    """One distinct bug: its shrunk schedule, that schedule's steps and judgement."""

    schedule: Schedule
    steps: list[Step]
    judged: Judged
    key: BugKey | None = None
    """What makes it one bug (``loadtest.model.explore.bugs``), of the shrunk schedule."""
    schedules: int = 1
    """Failing schedules of the search that were this bug."""
    reasons: list[str] = field(default_factory=list)
    """The judgement's reasons with the scenario's ids and message names (``_plain_reasons``)."""

    @property
    def size(self) -> tuple[int, int, int, int]:
        return size(self.schedule, len(self.judged.execution.taken))


@dataclass
class _Found:
    """The first failing schedule of a key, while the search runs."""

    judged: Judged
    key: BugKey
    schedules: int = 1


@dataclass
class ExploreResult:
    scenario: Scenario
    ref: HandlerRef
    target: aws.Target
    options: ExploreOptions
    messages: list[SentMessage]
    schedules_run: int = 0
    schedules_failed: int = 0
    schedules_inconclusive: int = 0
    exhaustive: bool = False
    bound: Bound | None = None
    """What the search covered and why it stopped."""
    counterexample: Counterexample | None = None
    """The smallest of ``bugs``."""
    bugs: list[Counterexample] = field(default_factory=list)
    """Every distinct bug found, shrunk, smallest first."""
    bugs_left_out: int = 0
    """Failing schedules of keys beyond ``MOST_BUGS``, not shrunk nor reported as bugs."""
    shown: Judged | None = None
    """The schedule the report's run shows: the counterexample, else an inconclusive one, else the first."""
    elapsed_s: float = 0.0
    blocked: int = 0
    nondeterministic: int = 0
    shrink_tries: int = 0
    inconclusive_reasons: list[str] = field(default_factory=list)

    @property
    def schedules_per_s(self) -> float:
        return self.schedules_run / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _settings(scenario: Scenario, options: ExploreOptions) -> ExploreSettings:
    consumer = scenario.consumer
    jump = options.clock_jump_s
    if jump is None:
        jump = max(1.0, consumer.function_timeout_s - 1.0)
    return ExploreSettings(
        visibility_timeout_s=consumer.visibility_timeout_s,
        function_timeout_s=consumer.function_timeout_s,
        max_receive_count=consumer.max_receive_count,
        faults=options.faults,
        max_faults=options.max_faults if options.faults else 0,
        clock_jump_s=jump,
    )


_NAME_CHAR = r"[A-Za-z0-9_.\-]"
"""A character a table, sink or message id may hold: a name ends where none follows."""


def _plainer(judged: Judged, business_ids: set[str], named: dict[str, str]) -> Callable[[str], str]:
    """Text with each fresh business id (``id_sN``) shown as the scenario's, each message id
    as ``message-N`` (N: the copy), each request id as ``request-D`` (D: the delivery), and
    the session's tables and sinks by what names them
    in the scenario (``named``: a variable, a sink's NAME): the same in every schedule and
    replay."""
    pattern = re.compile(
        "("
        + "|".join(re.escape(b) for b in sorted(business_ids, key=len, reverse=True))
        + ")"
        + re.escape(FRESH_SEPARATOR)
        + r"\d+"
    )
    message_ids = {m.message_id: f"message-{i + 1}" for i, m in enumerate(judged.history.sent)}
    # A request id is the schedule's and the delivery's (``s12-1.2``): shown as the
    # delivery's alone, as a handler that stores its own (a claim's owner) is replayed.
    request_ids = {
        i.request_id: f"request-{i.request_id.partition('-')[2]}"
        for i in judged.history.invocations
    }
    aliases = dict(
        (fresh, alias)
        for fresh, alias in [*message_ids.items(), *request_ids.items(), *named.items()]
        if fresh
    )
    # Whole names only: a topic named PREFIX-orders.fifo is not the table PREFIX-orders.
    names = (
        re.compile(
            rf"(?<!{_NAME_CHAR})("
            + "|".join(re.escape(n) for n in sorted(aliases, key=len, reverse=True))
            + rf")(?!{_NAME_CHAR})"
        )
        if aliases
        else None
    )

    def plain(text: str) -> str:
        if business_ids:
            text = pattern.sub(r"\1", text)
        if names is not None:
            text = names.sub(lambda found: aliases[found.group(1)], text)
        return text

    return plain


def _plain(judged: Judged, business_ids: set[str], named: dict[str, str]) -> list[Step]:
    """The steps as ``_plainer`` shows them."""
    plain = _plainer(judged, business_ids, named)
    return [Step(**json.loads(plain(json.dumps(s.to_dict())))) for s in judged.execution.steps]


def _plain_reasons(judged: Judged, business_ids: set[str], named: dict[str, str]) -> list[str]:
    """The schedule's reasons as ``_plainer`` shows them (a witness names the scenario's id)."""
    plain = _plainer(judged, business_ids, named)
    return [plain(reason) for reason in judged.check.reasons]


def explore(
    scenario: Scenario,
    ref: HandlerRef,
    target: aws.Target,
    options: ExploreOptions,
    interrupted: Callable[[], str | None] | None = None,
) -> ExploreResult:
    """Run the search ``options`` ask for. ``interrupted`` is asked between schedules (and
    while workers search); once it names a reason, the search stops there and
    KeyboardInterrupt unwinds every session, so each drops what it made."""
    options.check()
    check_fits(scenario, options)
    # A token's deliveries are the first of the messages its search explored: the same
    # list, built from the same options, whatever the token's count.
    messages = explored_messages(scenario, options.copies, options.distinct_ids)
    if options.schedule is not None:
        messages = messages[: options.schedule.copies]
    result = ExploreResult(scenario, ref, target, options, messages)
    session = Session(scenario, ref, target, _settings(scenario, options))
    named = {session.table: "$TABLE_NAME"} | {
        extra_table_name(session.names.prefix, t): f"${t.env}" if t.env else str(t.name)
        for t in session.extra_tables
    }
    started = time.perf_counter()
    counter = 0

    def halt_if_interrupted() -> None:
        reason = interrupted() if interrupted is not None else None
        if reason is not None:
            raise KeyboardInterrupt(reason)

    def stop() -> str | None:
        halt_if_interrupted()
        return stopped_by(
            result.schedules_run,
            options.budget,
            time.perf_counter() - started,
            options.time_budget_s,
        )

    opened = contextlib.ExitStack()

    def open_session() -> None:
        """This process's own session, opened before it first runs a schedule: with workers
        searching, only to shrink what they found (a search that found nothing never
        needs it, nor pays for it while the workers start)."""
        if session.explorer is None:
            opened.enter_context(session.open())
            # Each sink as the scenario names it (its resource exists from here on).
            named.update({made.name: made.sink.name for made in session.sinks if made.name})

    def run(chooser: Replay | object, chosen: Sequence[SentMessage], cold: bool = False) -> Judged:
        nonlocal counter
        halt_if_interrupted()
        open_session()
        judged = session.run(chooser, chosen, counter, cold=cold)  # type: ignore[arg-type]
        counter += 1
        return judged

    def run_searched(chooser: Chooser) -> Judged | None:
        """A search's execution, judged; None when it was abandoned (``Session.search``)."""
        nonlocal counter
        halt_if_interrupted()
        open_session()
        ran = session.search(chooser, messages, counter)
        counter += 1
        return None if ran is None else session.judge(ran)

    found: dict[BugKey, _Found] = {}
    reference: list[tuple[int, Option, Option]] | None = None
    """The first schedule's decisions: where each failing one leaves them keys it."""
    first_failure = False

    def judged_one(judged: Judged) -> bool:
        """Note a judged schedule; True when the search stops here (the first failure
        with ``stop_at_first``)."""
        nonlocal reference, first_failure
        _tally(result, judged)
        if reference is None:
            reference = list(judged.execution.taken)
        if judged.verdict != "fail":
            return False
        key = _key(judged, reference)
        if key in found:
            found[key].schedules += 1
        elif len(found) < MOST_BUGS:
            found[key] = _Found(judged, key)
        else:
            result.bugs_left_out += 1
        first_failure = options.stop_at_first
        return first_failure

    stopped = "space"
    pct: Pct | None = None
    local_first = not {Fault.CLOCK, Fault.TIMEOUT} & set(options.faults)
    searched_by = (
        workers_for(options.workers, scenario)
        if options.schedule is None
        and options.strategy == "exhaustive"
        and not options.stop_at_first
        else 1
    )
    # Forked before this process opens its session: no thread of it is copied.
    workers = (
        Workers(
            scenario,
            ref,
            target,
            _settings(scenario, options),
            messages,
            workers=searched_by,
            local_first=local_first,
            limits=dict(options.limits),
        )
        if searched_by > 1
        else contextlib.nullcontext()
    )
    with workers, opened:
        if not isinstance(workers, Workers):
            open_session()  # a bad handler or backend is named before anything runs
        if options.schedule is not None:
            # The default schedule first (not counted): it shows where outcomes live, as the
            # search's first schedule showed it when the token was found.
            run(Replay(Schedule(options.schedule.copies)), messages)
            replay = Replay(options.schedule)
            judged = run(replay, messages)
            unmatched = replay.unmatched()
            if unmatched is not None:
                raise InputError(
                    f"schedule {options.schedule.token!r} does not match the steps of "
                    f"{ref.variant} on {scenario.name}: {unmatched}"
                )
            result.schedules_run = 1
            judged_one(judged)
        elif isinstance(workers, Workers):

            def search_stop(ran: int) -> str | None:
                halt_if_interrupted()
                return stopped_by(
                    ran, options.budget, time.perf_counter() - started, options.time_budget_s
                )

            searched = workers.search(search_stop)
            # Judged here, in the one search's order: each as that search would judge it.
            unscheduled = False
            for _, ran in sorted(searched.ran[: options.budget], key=lambda each: each[0]):
                judged = session.judge(ran)
                result.schedules_run += 1
                unscheduled = unscheduled or judged.execution.unscheduled > 0
                judged_one(judged)
            workers.close()  # they ended while these were judged
            stopped = searched.stopped_by or "space"
            # What runs here next (shrinking, replays) is numbered as after one search.
            counter = searched.executions
            result.exhaustive = (
                searched.covered and not searched.nondeterministic and not unscheduled
            )
            result.blocked, result.nondeterministic = searched.blocked, searched.nondeterministic
            if unscheduled and stopped == "space":
                stopped = "unscheduled_call"
        elif options.strategy == "exhaustive":
            search = Exhaustive(local_first=local_first, limits=dict(options.limits))
            unscheduled = False
            while True:
                cut = stop()
                if cut is not None:
                    stopped = cut
                    break
                chooser = search.execution()
                if chooser is None:
                    break
                schedule = run_searched(chooser)
                if schedule is None:
                    continue
                result.schedules_run += 1
                unscheduled = unscheduled or schedule.execution.unscheduled > 0
                if judged_one(schedule):
                    stopped = "first_failure"
                    break
            # A call no point stopped falls where it falls: the space searched is not all.
            result.exhaustive = (
                search.covered
                and not search.nondeterministic
                and not first_failure
                and not unscheduled
            )
            result.blocked, result.nondeterministic = search.blocked, search.nondeterministic
            if unscheduled and stopped == "space":
                stopped = "unscheduled_call"
        else:
            pct = Pct(
                options.seed,
                PCT_DEPTH,
                _settings(scenario, options).max_faults,
                limits=dict(options.limits),
            )
            while (cut := stop()) is None:
                judged = run(pct.execution(), messages)
                pct.learn(len(judged.execution.taken), judged.execution.deliveries)
                result.schedules_run += 1
                if judged_one(judged):
                    break
            stopped = "first_failure" if first_failure else cut or "budget"
        result.elapsed_s = time.perf_counter() - started
        if options.schedule is not None:
            strategy, stopped = "replay", "space"
        else:
            strategy = options.strategy
        result.bound = Bound(
            deliveries=len(messages),
            ids=tuple(dict.fromkeys(str(m.business_id) for m in messages if m.business_id)),
            faults=options.faults,
            max_faults=options.max_faults,
            strategy=strategy,
            schedules=result.schedules_run,
            exhaustive=result.exhaustive,
            stopped_by=stopped,
            failed=result.schedules_failed,
            budget=options.budget,
            time_budget_s=options.time_budget_s,
            pct_depth=pct.depth if pct is not None else None,
            pct_deliveries=pct.deliveries if pct is not None else None,
            pct_steps=pct.steps if pct is not None else None,
            limits=options.limits,
        )
        if options.schedule is not None:
            # A replay shows exactly the schedule it was given, not a shrunk one.
            result.bugs = [
                Counterexample(
                    options.schedule,
                    _plain(f.judged, _ids(messages), named),
                    f.judged,
                    _key(f.judged),
                    reasons=_plain_reasons(f.judged, _ids(messages), named),
                )
                for f in found.values()
            ]
        else:
            result.bugs = _bugs(result, list(found.values()), messages, run, named)
        if result.bugs:
            result.counterexample = result.bugs[0]
            result.shown = result.counterexample.judged
    return result


def check_fits(scenario: Scenario, options: ExploreOptions) -> None:
    """Bad input (exit 2), found before anything is made: more business ids asked for than
    the scenario sends, a fault the scenario never lets strike (a redelivery where a message
    is received once at most), or a ``schedule`` token that does not fit the deliveries and faults
    explored. (Whether a token's entries match the handler's steps shows only once it ran.)"""
    messages = explored_messages(scenario, options.copies, options.distinct_ids)
    if not messages:
        raise InputError(
            f"scenario {scenario.name!r} sends no message with a business id to explore"
        )
    ids = len({m.business_id for m in messages})
    if ids < options.distinct_ids:
        raise InputError(
            f"{options.distinct_ids} business ids asked for, but scenario {scenario.name!r} "
            f"sends {ids} ({', '.join(sorted({str(m.business_id) for m in messages}))})"
        )
    if Fault.REDELIVER in options.faults and scenario.consumer.max_receive_count <= 1:
        raise InputError(
            f"fault redeliver cannot strike in scenario {scenario.name!r}: its "
            f"max_receive_count is {scenario.consumer.max_receive_count}, so a message is "
            "never received again"
        )
    if options.schedule is not None:
        check_schedule(
            options.schedule,
            deliveries=len(messages),
            faults=options.faults,
            max_faults=options.max_faults,
            limits=options.limits,
        )


def _key(judged: Judged, reference: Sequence[tuple[int, Option, Option]] | None = None) -> BugKey:
    """A failing schedule's bug key (``reference``: the search's first schedule; None: the
    default schedule)."""
    check = judged.check
    return bug_key(
        judged.execution.taken,
        check.counts.as_dict(),
        BAD_WHEN_NONZERO,
        check.reasons,
        reference,
    )


def _tally(result: ExploreResult, judged: Judged) -> None:
    if judged.verdict == "fail":
        result.schedules_failed += 1
    elif judged.verdict == "inconclusive":
        result.schedules_inconclusive += 1
        if result.shown is None or result.shown.verdict == "pass":
            result.shown = judged
    if result.shown is None:
        result.shown = judged


def _bugs(
    result: ExploreResult,
    found: list[_Found],
    messages: list[SentMessage],
    run: object,
    named: dict[str, str],
) -> list[Counterexample]:
    """Each key's first failing schedule shrunk, keyed again by where it leaves the default
    schedule, and merged with a bug it now is: the distinct bugs, smallest first."""
    bugs: list[Counterexample] = []
    for each in found:
        # With stop_at_first the one failure shrinks to any smaller failing schedule, as
        # ever; otherwise to one that shows no other kind of failure than it did.
        keep = None if result.options.stop_at_first else each.key
        example = _shrunk(result, each.judged, messages, run, named, keep)
        example.schedules = each.schedules
        assert example.key is not None
        same = next(
            (n for n, b in enumerate(bugs) if b.key is not None and same_bug(b.key, example.key)),
            None,
        )
        if same is None:
            bugs.append(example)
            continue
        kept = bugs[same]
        if example.size < kept.size:
            example.schedules += kept.schedules
            bugs[same] = example
        else:
            kept.schedules += example.schedules
    return sorted(bugs, key=lambda b: b.size)


def _shrunk(
    result: ExploreResult,
    failure: Judged,
    messages: list[SentMessage],
    run: object,
    named: dict[str, str],
    keep: BugKey | None = None,
) -> Counterexample:
    """``failure``'s schedule shrunk (``keep``: only to schedules ``within`` that bug) and
    replayed once more for its steps."""
    copies = len(messages)
    found = schedule_of(copies, failure.execution.taken)

    def still_fails(
        candidate: Schedule | Candidate,
    ) -> tuple[Schedule, int, tuple[int, ...]] | None:
        replay = (
            Replay(candidate.schedule, candidate.anchors)
            if isinstance(candidate, Candidate)
            else Replay(candidate)
        )
        judged = run(replay, messages[: candidate.copies])  # type: ignore[operator]
        if judged.verdict != "fail":
            return None
        if keep is not None and not within(_key(judged), keep):
            return None
        taken = judged.execution.taken
        return schedule_of(candidate.copies, taken), len(taken), _trace(taken)

    best, _, tries = shrink(
        found, len(failure.execution.taken), _trace(failure.execution.taken), still_fails
    )
    result.shrink_tries += tries
    # The steps shown are those of a run from cold environments, as its token replays in a
    # process of its own: a schedule that failed only in an environment warm from earlier
    # schedules (a client a module kept from an ended invocation) is not passed off as it.
    final: Judged = run(Replay(best), messages[: best.copies], True)  # type: ignore[operator]
    if not _fails_as(final, keep):
        best = found
        final = run(Replay(found), messages, True)  # type: ignore[operator]
    if not _fails_as(final, keep):
        final = failure
        reasons = [
            *_plain_reasons(final, _ids(messages), named),
            WARM_ONLY,
        ]
        return Counterexample(
            best, _plain(final, _ids(messages), named), final, _key(final), reasons=reasons
        )
    return Counterexample(
        best,
        _plain(final, _ids(messages), named),
        final,
        _key(final),
        reasons=_plain_reasons(final, _ids(messages), named),
    )


WARM_ONLY = (
    "it failed only in an execution environment kept warm by earlier schedules (what its "
    "modules kept from an ended invocation): its token does not replay it, for a replay "
    "starts from cold environments; `loadtest run` runs invocations in warm environments"
)


def _fails_as(judged: Judged, keep: BugKey | None) -> bool:
    """Whether ``judged`` failed (within the bug ``keep``, when one is given)."""
    return judged.verdict == "fail" and (keep is None or within(_key(judged), keep))


def _trace(taken: Sequence[tuple[int, Option, Option]]) -> tuple[int, ...]:
    return tuple(option.delivery.copy for _, option, _ in taken)


def _ids(messages: Sequence[SentMessage]) -> set[str]:
    return {str(m.business_id) for m in messages if m.business_id is not None}


def plain_ids(result: ExploreResult) -> Callable[[str], str]:
    """Text about the shown schedule with each fresh business id (``id_sN``) shown as the
    scenario's id, as its steps show it (the identity when the ids are the scenario's)."""
    judged = result.shown
    scenario_ids = {m.index: m.business_id for m in result.messages}
    fresh = sorted(
        {
            (str(m.business_id), str(scenario_ids[m.index]))
            for m in (judged.history.sent if judged is not None else ())
            if m.business_id
            and scenario_ids.get(m.index)
            and m.business_id != scenario_ids[m.index]
        },
        key=lambda pair: -len(pair[0]),  # "id_s12" before "id_s1"
    )

    def plain(text: str) -> str:
        for one, scenario_id in fresh:
            text = text.replace(one, scenario_id)
        return text

    return plain


def variant_run(result: ExploreResult) -> VariantRun:
    """The report's run: the schedule the result shows, judged as a run is."""
    judged = result.shown
    assert judged is not None
    history = judged.history
    check = judged.check
    if result.counterexample is not None and judged is result.counterexample.judged:
        # Its reasons as the explore section says them (the scenario's ids, message-N).
        check = dataclasses.replace(check, reasons=tuple(result.counterexample.reasons))
    return VariantRun(
        variant=result.ref.variant,
        handler=result.ref.ref if result.ref.path else f"{result.ref.module}:{result.ref.function}",
        settings=result.scenario.consumer,
        history=history,
        end_state=judged.end_state,
        check=check,
        latency=latencies(history),
        duration_s=history.ended_ns / 1e9,
        cold_starts=1,
        resources=aws.ResourceNames("(modelled)", "(modelled)", "(explore)"),
        faults=result.scenario.faults,
    )
