"""A dry run of a handler: one message, one invocation, to see the key of its first write.

Owns running a first scenario once (``first_write_key``) for ``loadtest new``: one
message, delivered once, to one execution environment with the observer, on the embedded
backend, against a table the run creates keyed on an attribute no handler writes (so the
write is refused after the observer has seen the request). The backend is stopped and
the run's queues and tables deleted before it returns. Choosing the key among what was
requested is ``loadtest.model.advice.scaffold.key``'s.
"""

from __future__ import annotations

import dataclasses

from loadtest.aws import clients as aws
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.errors import LoadtestError
from loadtest.model.advice.scaffold.key import DRY_RUN_KEY, KeyChoice, choose_key
from loadtest.model.history.log import WriteRecord
from loadtest.model.scenario.loading import Scenario

DRY_RUN_TIMEOUT_S = 10
"""The handler's timeout in the dry run (seconds)."""
DRY_RUN_VISIBILITY_S = 1
"""The queue's visibility timeout in the dry run (seconds): the refused write fails the
invocation, and its message goes to the dead-letter queue at its next receive once it is
visible again. With one execution environment no receive is made while the invocation
runs, so a handler slower than this still makes its first write; the run then ends a
second after the invocation, not the function's timeout after it."""


def first_write_key(scenario: Scenario, ref: HandlerRef) -> KeyChoice | str:
    """The table key ``ref``'s first write shows when ``scenario``'s first message is
    delivered to it once, or why the dry run could not show one (a sentence)."""
    from loadtest import engine

    single = scenario.with_overrides(
        distinct_ids=1,
        copies=1,
        batch_size=1,
        concurrency=1,
        max_receive_count=1,
        visibility_timeout_s=DRY_RUN_VISIBILITY_S,
        function_timeout_s=DRY_RUN_TIMEOUT_S,
        conflict_fraction=0.0,
    )
    single = dataclasses.replace(
        single,
        function=dataclasses.replace(single.function, table_key=((DRY_RUN_KEY, "S"),)),
    )
    try:
        result = engine.run(single, [ref], kind=aws.BackendKind.EMBEDDED)
    except LoadtestError as exc:
        return f"the dry run could not run: {exc}"
    writes: list[WriteRecord] = []
    business_id = message_id = ""
    error = None
    for run in result.runs:
        for invocation in run.history.invocations:
            writes += invocation.writes
            if invocation.records and not message_id:
                message_id = invocation.records[0].message_id
                business_id = invocation.records[0].business_id or ""
            error = error or invocation.error
    if not writes:
        why = "the handler wrote nothing to the run's table"
        return f"{why} ({error.splitlines()[0]})" if error else why
    return choose_key(writes, business_id=business_id, message_id=message_id)
