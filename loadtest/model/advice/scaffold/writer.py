"""A first scenario for a handler: what ``loadtest new`` writes.

Owns writing the commented scenario (``scenario_text``) from a sample message's template
(``loadtest.model.advice.scaffold.sample``, whose ``sample_template`` is re-exported here), from
what ``loadtest.model.advice.handler_source`` read in the handler's source, and from the table key
a dry run showed (``loadtest.model.advice.scaffold.key``). Pure: the caller reads the files and
runs the dry run (``loadtest.api.new_scenario``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loadtest.errors import InputError
from loadtest.model.advice.handler_source import RUNTIME_VARIABLES, suggested_value
from loadtest.model.advice.scaffold.key import KeyChoice
from loadtest.model.advice.scaffold.sample import Sample, sample_template
from loadtest.model.scenario.envelopes import EnvelopeKind
from loadtest.model.scenario.placeholders import sink_of
from loadtest.model.scenario.toml_text import toml_key as _key
from loadtest.model.scenario.toml_text import toml_value as _toml_value

__all__ = ["Sample", "sample_template", "scenario_text", "toml_value"]

# --- the scenario ------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A JSON-like value as a TOML value (``loadtest.model.scenario.toml_text``); a value TOML cannot
    hold (a null in the sample) is the user's input, refused with ``InputError``."""
    try:
        return _toml_value(value)
    except ValueError:
        raise InputError(f"{value!r} cannot be written in a scenario (TOML)") from None


def _line(text: str, comment: str, width: int = 40) -> str:
    return f"{text:<{width}}# {comment}" if len(text) < width else f"{text}  # {comment}"


def scenario_text(
    handler: str,
    sample: Sample | None,
    sample_name: str | None,
    environment: list[str],
    *,
    tables: Sequence[str] = (),
    item_failures: bool = False,
    stored_as: str | None = None,
    table_key: KeyChoice | str | None = None,
) -> str:
    """The commented scenario ``loadtest new`` writes for ``handler`` (a reference as the
    user gave it): ``environment`` the variables its source reads, ``tables`` the table
    names it hard-codes, ``item_failures`` whether it answers with partial batch responses,
    ``stored_as`` the attribute its source stores the business id under (else the outcome
    key is named as the sample's id field), ``table_key`` the key a dry run's first write
    showed (or why it showed none)."""
    out = [
        f"# A scenario for the handler {handler}, written by `loadtest new`.",
        "# Run it with `loadtest run THIS_FILE`. Check each setting against how the function is",
        "# deployed; docs/scenarios-messages.md explains the message fields.",
        "",
        f"description = {toml_value(f'{handler}: each business id sent twice')}",
        f"variants = [{toml_value(handler)}]",
        "",
        "[workload]",
        _line("distinct_ids = 20", "generated business ids"),
        _line("copies = 2", "each id twice: the original and a producer resend"),
        _line('order = "shuffled"', "copies in different batches, processed at the same time"),
    ]
    uses_quantity = sample is None or "{quantity}" in json.dumps(sample.template)
    if uses_quantity:
        out.append(_line("# conflict_fraction = 0.1", "resends carrying another {quantity}"))
    if sample is not None and sample.envelope is not EnvelopeKind.NONE:
        envelope: Any = sample.envelope.value
        if sample.envelope_fields:
            envelope = {"type": sample.envelope.value, **sample.envelope_fields}
        where = "Message (a JSON string)" if sample.envelope is EnvelopeKind.SNS else "detail"
        out.append(
            _line(
                f"envelope = {toml_value(envelope)}", f"the sample's envelope: the body in {where}"
            )
        )
    if sample is not None and sample.attributes:
        out.append(
            _line(
                f"attributes = {toml_value(sample.attributes)}",
                "from the sample's message attributes",
            )
        )
    id_name = "id"
    if sample is None:
        out += [
            '# The body: {"id": ..., "quantity": 1..10}. Give `loadtest new --sample-message',
            "# FILE.json` to start from a real message, or write a template:",
            '# body = { orderId = "{id}", quantity = "{quantity}" }',
        ]
    else:
        id_name = stored_as or sample.id_key
        out += ["", "[workload.body]"]
        origin = (
            f"From the sample message {sample_name}" if sample_name else "From the sample message"
        )
        out += _comment(f"{origin}: {{id}} is the business id ({sample.id_path}).")
        for note in sample.notes:
            out += _comment(f"{note}.")
        out += [f"{_key(k)} = {toml_value(v)}" for k, v in sample.template.items()]
    stored = (
        f"The handler's source stores {sample.id_key} as {stored_as}"
        if sample is not None and stored_as and stored_as != sample.id_key
        else None
    )
    out += _outcome_block(id_name, table_key, stored)
    out += [
        "",
        "[consumer]",
        _line("batch_size = 10", "Lambda's default for an SQS event source mapping"),
        _line("batching_window_s = 0", "MaximumBatchingWindowInSeconds"),
        _line("concurrency = 4", "concurrent executions (execution environments)"),
        _line("function_timeout_s = 30", "the function's Timeout"),
        _line(
            "visibility_timeout_s = 30",
            "the queue's VisibilityTimeout (AWS advises 6x the function timeout)",
        ),
        _line("max_receive_count = 3", "the redrive policy's maxReceiveCount (AWS advises 5+)"),
        _line(
            f"report_batch_item_failures = {toml_value(item_failures)}",
            "the handler returns batchItemFailures: deployed with ReportBatchItemFailures"
            if item_failures
            else "true if deployed with ReportBatchItemFailures",
        ),
    ]
    out += _environment_block(environment)
    out += _tables_block(environment, tables, table_key)
    return "\n".join(out) + "\n"


def _outcome_block(
    id_name: str, table_key: KeyChoice | str | None, stored: str | None
) -> list[str]:
    guess = f'key = {{ {_key(id_name)} = "{{id}}" }}'
    if isinstance(table_key, KeyChoice):
        if table_key.key == ((id_name, "S"),):
            return [
                "",
                "[outcome]",
                "# A message's outcome is stored under its business id (see [table] below).",
                guess,
            ]
        return [
            "",
            "# Where outcomes live is found by the checker (the business id and the message's",
            "# details in the stored items); declare it only if the handler keys items on the id:",
            "# [outcome]",
            f"# {guess}",
        ]
    out = [
        "",
        "[outcome]",
        "# The key of the item a message's outcome is stored under (and of the table the run",
        '# creates). Change it if the handler keys its items otherwise, e.g. { pk = "ORDER#{id}" }.',
    ]
    if stored is not None:
        out += _comment(f"{stored}.")
    if isinstance(table_key, str):
        out += _comment(f"A dry run could not show the key the handler writes: {table_key}.")
    return [*out, guess]


def _comment(text: str) -> list[str]:
    """``text`` as TOML comment lines, one per line of it: a reason quoted from an error
    may span lines, and an uncommented one would leave the scenario unreadable."""
    return [f"# {line}".rstrip() for line in text.splitlines() or [""]]


def _is_sink(value: str | None) -> bool:
    return value is not None and sink_of(value.strip("{}")) is not None


def _other_tables(names: list[str]) -> list[str]:
    """The variables that name a table besides the outcome table, though their names
    suggest ``{table}``: a handler that reads two table variables keeps two tables. The
    outcome table is ``TABLE_NAME`` when the handler reads it, else the first read."""
    tables = [n for n in names if n not in RUNTIME_VARIABLES and suggested_value(n) == "{table}"]
    return tables if "TABLE_NAME" in names else tables[1:]


def _environment_block(names: list[str]) -> list[str]:
    if not names:
        return [
            "",
            "# The handler's source reads no environment variable by a name loadtest can see.",
        ]
    entries: list[str] = []
    others = _other_tables(names)
    for name in names:
        value = suggested_value(name)
        if name in RUNTIME_VARIABLES or name.startswith("LOADTEST_"):
            entries.append(f"# {name}: already set in every execution environment")
        elif name in others or (value is not None and value.startswith("{table:")):
            entries.append(f"# {name}: names an extra table (see [[tables]] below)")
        elif value is None:
            # Left a comment: an empty value would change what the handler does.
            entries.append(
                _line(f'# {_key(name)} = "..."', "not a run resource: its deployed value")
            )
        else:
            entries.append(f"{_key(name)} = {toml_value(value)}")
    live = any(not entry.startswith("#") for entry in entries)
    return [
        "",
        "# The environment variables the handler's source reads, as the function is deployed with",
        "# them: each given the run's resource its name suggests ({table}: the run's table,",
        "# {queue_url}, {queue_arn}, {dlq_url}, {region}); give the others their deployed value.",
        *(
            [
                "# {topic:NAME}, {queue_url:NAME}, {bus:NAME}, {bucket:NAME}, {state_machine:NAME},",
                "# {function:NAME}:",
                "# a sink the run creates for the handler's effects, reads back and deletes.",
            ]
            if any(_is_sink(suggested_value(name)) for name in names)
            else []
        ),
        "[consumer.environment]" if live else "# [consumer.environment]",
        *entries,
    ]


def _tables_block(
    names: list[str], tables: Sequence[str], table_key: KeyChoice | str | None
) -> list[str]:
    out: list[str] = []
    key_lines: list[str] = []
    if isinstance(table_key, KeyChoice):
        schema = "{ " + ", ".join(f"{_key(n)} = {toml_value(t)}" for n, t in table_key.key) + " }"
        key_lines = [
            f"# The table's key, from a dry run (one message, one invocation): {table_key.why}.",
            f"key = {schema}",
        ]
    if len(tables) == 1:
        out += [
            "",
            f"# The handler's source names its table {tables[0]!r}: the run creates it under that",
            "# name on its own backend (on AWS it refuses to touch an existing table of that name).",
            "[table]",
            f"name = {toml_value(tables[0])}",
            *key_lines,
        ]
    else:
        if tables:
            out += [
                "",
                "# The handler's source names several tables: say which holds the outcomes.",
            ]
            out += ["# [table]"] + [f"# name = {toml_value(t)}" for t in tables]
        if key_lines:
            out += ["", "[table]", *key_lines]
    others = _other_tables(names)
    for name in names:
        value = suggested_value(name)
        if name in others:
            out += [
                "",
                f"# {name} names a table besides the outcome table (stock, customers, ...): the",
                "# handler reads two table variables, so the run makes one table per variable,",
                "# its writes judged as side writes. Give the key the handler's calls on it use.",
                "[[tables]]",
                f"env = {toml_value(name)}",
                'key = { id = "S" }',
            ]
            continue
        if name in RUNTIME_VARIABLES or value is None or not value.startswith("{table:"):
            continue
        out += [
            "",
            f"# {name} names a table the handler needs besides its outcomes (an idempotency",
            "# store, a lock table): created per run, its writes shown as side writes.",
            "[[tables]]",
            f"env = {toml_value(name)}",
            'key = { id = "S" }',
        ]
    return out
