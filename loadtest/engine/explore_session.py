"""One ``explore`` session: the backend's table, the handler in this process, and judging a schedule.

A session creates the run's table (and, for a variant that needs one, its
idempotency table) and the sinks the scenario names on the backend, gives this process the function's
configuration (``TABLE_NAME``, the endpoint, the region, fixed credentials),
installs the gated observer and the virtual clock, imports the handler, and
restores all of it on exit. Each schedule gets fresh message ids and a fresh
business id (the scenario's, suffixed ``_sN`` from the second schedule on), so
schedules share the table without seeing each other's items. The suffix is one every sink
takes in a name (a Step Functions execution's name refuses ``~``; a bucket's key and a FIFO
deduplication id take ``_``), so a consumer that names an execution or an object by the
business id runs as it does outside explore. The sinks are read
after each schedule, and reading drains them (a queue's messages, a bucket's objects; a
state machine's executions are read once), so each schedule's end state holds only
what that schedule sent. Judging a schedule is the checker's, on the schedule's
history and the items it touched.

Owns that setup and the translation of the backend's errors while it runs;
the search and the report are ``loadtest.engine.explore``'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from loadtest.aws import clients as aws
from loadtest.aws.item_reads import ItemReader, ItemReadError
from loadtest.emulation.environment.child_host import FunctionIdentity
from loadtest.emulation.environment.handlers import HandlerRef, tables_for
from loadtest.emulation.explore import transfers, virtual_clock, wire
from loadtest.emulation.explore.environments import EnvironmentHandlers
from loadtest.emulation.explore.explorer import Explorer
from loadtest.emulation.explore.runs import Execution, ExploreSettings
from loadtest.engine.results import function_environment
from loadtest.errors import BackendError, HandlerRefError
from loadtest.model.checker import Check, check
from loadtest.model.checker.effects import SinkLearned
from loadtest.model.checker.harness import MODELLED_QUEUE
from loadtest.model.checker.passes import Model
from loadtest.model.checker.verdict import Complete
from loadtest.model.explore.points import Chooser
from loadtest.model.history.log import EndState, History, SentMessage, key_string
from loadtest.model.scenario.body import FLAT, BodyShape, body_shape
from loadtest.model.scenario.function_config import extra_table_name
from loadtest.model.scenario.loading import Scenario
from loadtest.model.workload.schedule import plan

FRESH_SEPARATOR = "_s"
"""What a fresh business id adds to the scenario's, before the schedule's number."""


def _forget_package(module: str) -> None:
    """A cold start for a module reference: the handler's module and its siblings (the
    modules of its package, which it may keep clients in) are imported again under this
    session's variables, never reused with what they bound by an earlier exploration in this
    process (a client and its endpoint, a table name). loadtest's own modules stay."""
    package = module.rpartition(".")[0]
    stale = [module] if not package else [n for n in sys.modules if n.startswith(package + ".")]
    for name in stale:
        if name != "loadtest" and not name.startswith("loadtest."):
            sys.modules.pop(name, None)


def explored_messages(
    scenario: Scenario, copies: int | None, distinct_ids: int
) -> list[SentMessage]:
    """The messages explored: the first ``distinct_ids`` business ids of the scenario's seeded
    workload, each with ``copies`` copies (default: as many as the workload sends of the first)."""
    planned = [m for m in plan(scenario.workload, scenario.seed) if m.business_id is not None]
    by_id: dict[str, list[Any]] = {}
    for message in planned:
        by_id.setdefault(str(message.business_id), []).append(message)
    chosen = list(by_id.items())[:distinct_ids]
    out: list[SentMessage] = []
    for business_id, messages in chosen:
        count = copies if copies is not None else len(messages)
        for i in range(count):
            message = messages[min(i, len(messages) - 1)]
            out.append(
                SentMessage(len(out), business_id, message.body, 0, 0, None, poison=message.poison)
            )
    return out


def _fresh_body(body: str, business_id: str, fresh: str, shape: BodyShape) -> str:
    """``body`` carrying ``fresh`` where it carried ``business_id``."""
    if shape != FLAT:
        # A template may place the id in several fields, inside other text ("ORDER#{id}")
        # or inside an envelope's JSON string: each whole token of it is the id. The fresh
        # id adds only "_sN", which needs no escaping in JSON, even twice over.
        return _token(business_id).sub(fresh, body)
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict) and data.get("id") == business_id:
        data["id"] = fresh
        return json.dumps(data, separators=(",", ":"))
    return body


def _token(business_id: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(business_id)}(?![A-Za-z0-9])")


def _word_char(text: str, at: int) -> bool:
    return 0 <= at < len(text) and text[at].isascii() and text[at].isalnum()


def _has_token(text: str, business_id: str) -> bool:
    """Whether ``text`` holds ``business_id`` as a whole token, as ``_token`` matches it
    (no ASCII letter or digit either side), without compiling a pattern for each
    schedule's fresh id."""
    if not business_id:
        return _token(business_id).search(text) is not None
    at = text.find(business_id)
    while at >= 0:
        if not _word_char(text, at - 1) and not _word_char(text, at + len(business_id)):
            return True
        at = text.find(business_id, at + 1)
    return False


def fresh_messages(
    messages: Sequence[SentMessage], schedule: int, shape: BodyShape = FLAT
) -> list[SentMessage]:
    """The messages of schedule ``schedule``: fresh message ids, and from the second schedule
    on a fresh business id (``id_sN``), in the body where ``shape`` says it is."""
    out = []
    for m in messages:
        business_id = m.business_id
        body = m.body
        if schedule and business_id is not None:
            business_id = f"{m.business_id}{FRESH_SEPARATOR}{schedule}"
            body = _fresh_body(m.body, str(m.business_id), business_id, shape)
        message_id = str(uuid.UUID(int=(schedule << 32) + m.index + 1))
        out.append(SentMessage(m.index, business_id, body, 0, 0, message_id, poison=m.poison))
    return out


@dataclass
class Ran:
    """A schedule as run, with the history and end state it left, before it is judged."""

    execution: Execution
    history: History
    end_state: EndState


@dataclass
class Judged:
    """A schedule as run and judged."""

    execution: Execution
    history: History
    end_state: EndState
    check: Check

    @property
    def verdict(self) -> str:
        return str(self.check.verdict.value)


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _dynamodb(target: aws.Target) -> Any:
    credentials = dict(target.credentials_env)
    return boto3.client(
        "dynamodb",
        endpoint_url=target.endpoint_url,
        region_name=target.region,
        aws_access_key_id=credentials.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=credentials.get("AWS_SECRET_ACCESS_KEY"),
    )


def drop_made(target: aws.Target, tables: Sequence[str], sinks: Sequence[aws.MadeSink]) -> None:
    """Delete, as far as they exist, the tables and sinks a session made and could not
    delete itself (its process ended: a worker whose handler ended it, or one killed)."""
    if sinks:
        clients = aws.sink_clients(target)
        try:
            aws.delete_sinks(clients, list(sinks))
        finally:
            clients.close()
    if tables:
        client = _dynamodb(target)
        for name in tables:
            with contextlib.suppress(BotoCoreError, ClientError):
                client.delete_table(TableName=name)


class Session:
    """The handler loaded in this process against one table; runs and judges schedules."""

    def __init__(
        self, scenario: Scenario, ref: HandlerRef, target: aws.Target, settings: ExploreSettings
    ) -> None:
        self.scenario = scenario
        self.ref = ref
        self.target = target
        self.settings = settings
        prefix = f"loadtest-explore-{uuid.uuid4().hex[:8]}"
        setup = scenario.function
        self.names = aws.ResourceNames(
            queue=f"{prefix}-jobs",
            dlq=f"{prefix}-dlq",
            table=setup.table_name or f"{prefix}-orders",
            prefix=prefix,
        )
        self.table = self.names.table
        self.extra_tables = tables_for(ref, setup)
        """The consumer's other tables (the scenario's ``[[tables]]``, a variant's own)."""
        self.key_schema = setup.key_schema(scenario.outcome.key_names)
        self.created: list[str] = []
        self.sinks: list[aws.MadeSink] = []
        """The sinks made so far (``loadtest.aws.sinks``), deleted on exit."""
        self._sink_clients: aws.SinkClients | None = None
        self.explorer: Explorer | None = None
        self._handlers: EnvironmentHandlers | None = None
        self.outcome = scenario.outcome
        """Where outcomes live: the scenario's key, taken as declared once a schedule stored
        an outcome there (``run``)."""
        self.body = body_shape(scenario.workload)
        self.effects = scenario.effects
        """Where the messages carry their business id and details."""
        self.complete: dict[str, Complete] = {}
        """What a complete outcome holds, by where outcomes live: what every outcome where
        nothing failed held in the schedules that passed (``run``)."""
        self.effects_complete: dict[str, SinkLearned] = {}
        """By sink, what the clean ids of the schedules that passed showed of it, merged."""
        self._client: Any = None
        self._items: ItemReader | None = None

    def _clients(self) -> Any:
        return _dynamodb(self.target)

    @property
    def made(self) -> tuple[list[str], list[aws.MadeSink]]:
        """The tables and sinks made so far (``drop_made`` deletes them)."""
        return list(self.created), list(self.sinks)

    def _create_table(self, name: str, key: tuple[tuple[str, str], ...]) -> None:
        schema: list[Any] = [{"AttributeName": key[0][0], "KeyType": "HASH"}]
        if len(key) > 1:
            schema.append({"AttributeName": key[1][0], "KeyType": "RANGE"})
        self._client.create_table(
            TableName=name,
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in key],
            KeySchema=schema,
            BillingMode="PAY_PER_REQUEST",
        )
        self.created.append(name)

    def _source_queues(self) -> tuple[str, str]:
        """The modelled queue's URL and ARN, as the consumer is told them (no real queue)."""
        return (
            f"{MODELLED_QUEUE}{self.names.queue}",
            f"arn:aws:sqs:{self.target.region}:000000000000:{self.names.queue}",
        )

    def _function_environment(self) -> dict[str, str]:
        """The scenario's and the extra tables' variables, as a run gives them (the queue
        is modelled: its URL and ARN name no real queue)."""
        queue_url, queue_arn = self._source_queues()
        made = aws.Provisioned(
            queue_url=queue_url,
            queue_arn=queue_arn,
            dlq_url=f"{MODELLED_QUEUE}{self.names.dlq}",
            table_name=self.table,
            sinks=self.sinks,
        )
        return dict(
            function_environment(
                self.scenario.function, self.extra_tables, self.names, made, self.target.region
            )
        )

    @contextmanager
    def open(self) -> Iterator[Session]:
        try:
            self._create_sinks()
            with self._opened() as session:
                yield session
        finally:
            self._drop_sinks()

    def _create_sinks(self) -> None:
        sinks = self.scenario.sinks
        if not sinks:
            return
        self._sink_clients = aws.sink_clients(self.target)
        aws.create_sinks(
            self._sink_clients, sinks, self.names.prefix, into=self.sinks, target=self.target
        )

    def _drop_sinks(self) -> None:
        if self._sink_clients is None:
            return
        # Deleted as far as they exist; a backend already gone took them with it.
        aws.delete_sinks(self._sink_clients, self.sinks)
        self._sink_clients.close()
        self._sink_clients = None

    @contextmanager
    def _opened(self) -> Iterator[Session]:
        key_names = tuple(name for name, _ in self.key_schema)
        environ = {
            "TABLE_NAME": self.table,
            **self._function_environment(),
            "AWS_REGION": self.target.region,
            "AWS_DEFAULT_REGION": self.target.region,
            "AWS_LAMBDA_FUNCTION_NAME": "loadtest-explore",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.scenario.consumer.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(self.scenario.consumer.function_timeout_s),
            "REPORT_BATCH_ITEM_FAILURES": str(
                self.scenario.consumer.report_batch_item_failures
            ).lower(),
            **dict(self.target.credentials_env),
        }
        if self.target.endpoint_url:
            environ["AWS_ENDPOINT_URL"] = self.target.endpoint_url
        with _environ(environ):
            try:
                self._client = self._clients()
                self._items = ItemReader(self.target, self._client)
                self._create_table(self.table, self.key_schema)
                for extra in self.extra_tables:
                    self._create_table(extra_table_name(self.names.prefix, extra), extra.key)
            except (BotoCoreError, ClientError) as exc:
                raise BackendError(f"explore could not create its table: {exc}") from exc
            explorer = Explorer(
                lambda event, context: None,
                self.table,
                key_names,
                self.settings,
                function=FunctionIdentity.from_environ(),
                source_queues=self._source_queues(),
                dead_letter_queues=(f"{MODELLED_QUEUE}{self.names.dlq}",),
                side_tables=tuple(
                    (extra_table_name(self.names.prefix, t), t.key_names) for t in self.extra_tables
                ),
            )
            explorer.observer.install()
            virtual_clock.install(explorer.clock)
            try:
                if self.ref.module is not None:
                    _forget_package(self.ref.module)
                try:
                    handlers = EnvironmentHandlers(self.ref.ref, self.ref.module, self.ref.path)
                except Exception as exc:
                    raise HandlerRefError(
                        f"handler {self.ref.ref!r} could not be imported: {type(exc).__name__}: {exc}"
                    ) from exc
                explorer.handler, explorer.handler_of = handlers.first, handlers
                self._handlers = handlers
                self.explorer = explorer
                # On loadtest's own backend the handler's requests go out on kept
                # connections spoken by hand (time is virtual here: only the rate changes).
                kept = (
                    wire.installed(self.target.endpoint_url)
                    if self._items.by_hand and self.target.endpoint_url
                    else contextlib.nullcontext()
                )
                try:
                    # boto3's managed S3 transfers put their objects from worker threads:
                    # on the delivery's own thread, each of their calls is a point.
                    with kept, transfers.installed(), explorer.capturing():
                        yield self
                finally:
                    handlers.close()
                    self._handlers = None
            finally:
                explorer.close()
                virtual_clock.uninstall()
                explorer.observer.uninstall()
                self._drop_tables()
                if self._items is not None:
                    self._items.close()

    def _drop_tables(self) -> None:
        for name in self.created:
            # Never created, or the backend is already gone with everything in it.
            with contextlib.suppress(BotoCoreError, ClientError):
                self._client.delete_table(TableName=name)

    def run(
        self,
        chooser: Chooser,
        messages: Sequence[SentMessage],
        schedule: int,
        *,
        cold: bool = False,
    ) -> Judged:
        """Run and judge one schedule (``cold``: as ``execute``)."""
        return self.judge(self.execute(chooser, messages, schedule, cold=cold))

    def execute(
        self,
        chooser: Chooser,
        messages: Sequence[SentMessage],
        schedule: int,
        *,
        cold: bool = False,
    ) -> Ran:
        """Run one schedule and read back what it left; not judged (``judge``).

        Environments stay warm from one schedule to the next (their imports are kept);
        ``cold`` first imports afresh every environment whose modules changed since
        their import, so the schedule runs as it does first in a process of its own (a
        replay of its token)."""
        assert self.explorer is not None, "open the session first"
        if cold and self._handlers is not None:
            self._handlers.settle()
        execution, sent = self._execution(chooser, messages, schedule)
        return self._read_back(execution, sent)

    def search(
        self, chooser: Chooser, messages: Sequence[SentMessage], schedule: int
    ) -> Ran | None:
        """``execute`` for a search: None for an execution the chooser abandoned (every
        option left was asleep: no schedule of the search, and never judged), whose items
        are cleared for the next schedule without being read back."""
        execution, sent = self._execution(chooser, messages, schedule)
        if execution.abandoned:
            self._forget_shared(execution, sent)
            return None
        return self._read_back(execution, sent)

    def _execution(
        self, chooser: Chooser, messages: Sequence[SentMessage], schedule: int
    ) -> tuple[Execution, list[SentMessage]]:
        assert self.explorer is not None, "open the session first"
        sent = fresh_messages(messages, schedule, self.body)
        aliases = [
            (str(fresh.message_id), f"message-{plain.index + 1}")
            for fresh, plain in zip(sent, messages, strict=True)
        ] + sorted(
            {
                (str(fresh.business_id), str(plain.business_id))
                for fresh, plain in zip(sent, messages, strict=True)
                if fresh.business_id != plain.business_id
            },
            key=lambda pair: -len(pair[0]),  # "id_s12" before "id_s1"
        )
        return self.explorer.run(chooser, sent, schedule, aliases), sent

    def _read_back(self, execution: Execution, sent: list[SentMessage]) -> Ran:
        history = History(
            sent=sent,
            invocations=execution.invocations,
            acks=execution.acks,
            dead_letters=execution.dead_letters,
            started_ns=0,
            ended_ns=execution.ended_ns,
        )
        end_state = self._end_state(
            execution, sent, len(execution.acks) + len(execution.dead_letters)
        )
        self._forget_shared(execution, sent)
        return Ran(execution, history, end_state)

    def _forget_shared(self, execution: Execution, sent: Sequence[SentMessage]) -> None:
        """Delete what this schedule left that the next one would find: every item it
        touched whose key does not carry one of its (fresh) business ids (a running total per
        customer, a counter, a lock by another key), and everything in the extra tables it
        wrote. Each schedule then starts from what the first one found, so a token replays
        what its search ran, and workers' schedules see the same tables."""
        ids = {str(m.business_id) for m in sent if m.business_id is not None}
        shared = [
            key for name, key in execution.keys.items() if not any(_has_token(name, i) for i in ids)
        ]
        written = {
            side.table.rpartition("/")[2]
            for invocation in execution.invocations
            for side in invocation.side_writes
        }
        try:
            for key in shared:
                self._client.delete_item(TableName=self.table, Key=key)
            for extra in self.extra_tables:
                name = extra_table_name(self.names.prefix, extra)
                if name in written:
                    self._empty(name, tuple(n for n, _ in extra.key))
        except (BotoCoreError, ClientError) as exc:
            raise BackendError(
                f"explore could not clear the table after a schedule: {exc}"
            ) from exc

    def _empty(self, table: str, key_names: tuple[str, ...]) -> None:
        pages = self._client.get_paginator("scan").paginate(
            TableName=table,
            ProjectionExpression=", ".join(f"#k{i}" for i in range(len(key_names))),
            ExpressionAttributeNames={f"#k{i}": n for i, n in enumerate(key_names)},
            ConsistentRead=True,
        )
        for page in pages:
            for key in page.get("Items", []):
                self._client.delete_item(TableName=table, Key=key)

    def judge(self, ran: Ran) -> Judged:
        """Judge a schedule as run (in this process or in a worker of the same exploration), and
        learn from it: judged in the search's order, each is judged as one search would."""
        execution, history, end_state = ran.execution, ran.history, ran.end_state
        judged = Judged(
            execution,
            history,
            end_state,
            check(
                history,
                end_state,
                self.outcome,
                body=self.body,
                effects=self.effects,
                learned_before=self.complete,
                effects_before=self.effects_complete,
            ),
        )
        learned = judged.check.complete
        if judged.verdict == "pass":
            # A schedule that passed shows what a complete outcome holds, and what a
            # complete delivery sends to each sink; a failing schedule is judged by them.
            if learned is not None:
                kind = judged.check.outcome
                known = self.complete.get(kind)
                self.complete[kind] = learned if known is None else known.merged(learned)
            for sink, shown in judged.check.effects_learned.items():
                prior = self.effects_complete.get(sink)
                self.effects_complete[sink] = shown if prior is None else prior.merged(shown)
        if (
            not self.outcome.declared
            and judged.check.counts.writes_accepted
            and judged.check.outcome == Model.key(self.outcome).description
        ):
            # This schedule stored its outcome under the scenario's key: that is where
            # outcomes live, also in a schedule that never got as far as storing one.
            self.outcome = dataclasses.replace(self.outcome, declared=True)
        return judged

    def _end_state(
        self, execution: Execution, sent: Sequence[SentMessage], settled: int
    ) -> EndState:
        keys = dict(execution.keys)
        for m in sent:
            if m.business_id is not None:
                key = self.outcome.key_for(m.business_id)
                keys.setdefault(key_string(key), key)
        items: dict[str, Any] = {}
        assert self._items is not None, "open the session first"
        try:
            read = self._items.get_items(self.table, list(keys.values()))
            for name, found in zip(keys, read, strict=True):
                if found is not None:
                    items[name] = found
        except (BotoCoreError, ClientError, ItemReadError, OSError) as exc:
            raise BackendError(f"explore could not read the table back: {exc}") from exc
        unsettled = len({m.message_id for m in sent}) - settled
        sinks = (
            aws.read_sinks(self._sink_clients, self.sinks, self.target)
            if self._sink_clients is not None
            else ()
        )
        return EndState(max(0, unsettled), 0, len(execution.dead_letters), items, sinks=sinks)
