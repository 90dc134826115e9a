"""The observer layer's interface to a function: its entry point and the environment
variables it reads.

The one owner of these names. The deploy plan and attach mode (``loadtest.deploy``) write
them into a function's configuration, ``loadtest.observer.fault_env`` writes the fault
variables for local execution environments and deployed functions alike, and ``loadtest.observer.lambda_entry`` reads them. Imports
nothing: the layer carries it beside the entry point.
"""

from __future__ import annotations

WRAPPER_HANDLER = "loadtest.observer.lambda_entry.handler"
"""The observer layer's entry point; it calls the function's own handler."""

ORIGINAL_HANDLER_ENV = "LOADTEST_ORIGINAL_HANDLER"
"""The function's own handler (``module.function``), moved aside for the entry point."""
WATCH_TABLE_ENV = "LOADTEST_WATCH_TABLE"
"""The table whose writes the observer records."""
KEY_NAMES_ENV = "LOADTEST_KEY_NAMES"
"""The table's key attribute names, comma-separated (default ``id``)."""
OBSERVATION_QUEUE_ENV = "LOADTEST_OBSERVATION_QUEUE"
"""The queue the observation lines are sent to."""
SIDE_TABLES_ENV = "LOADTEST_SIDE_TABLES"
"""The consumer's extra tables (``[[tables]]``), comma-separated, each with its key
attributes after colons (``idem:id,stock:sku:warehouse``): their writes are side writes
(``side_tables_value``, ``side_tables_of``)."""
SOURCE_QUEUES_ENV = "LOADTEST_SOURCE_QUEUES"
"""The queues that feed the function (URLs or ARNs), comma-separated: a send to one of them
is not an effect. Each event's ``eventSourceARN`` is added to them as it comes."""
DEAD_LETTER_QUEUES_ENV = "LOADTEST_DEAD_LETTER_QUEUES"
"""The dead-letter queue of the queue that feeds the function (its URL and ARN),
comma-separated: a send to it parks the record the handler is on, never an effect."""
ATTACHED_ENV = "LOADTEST_ATTACHED"
"""Attach mode's JSON note on a function: the run, its original handler and layers, the
keys added (what ``loadtest cleanup`` restores if the run could not)."""

HANDLER_DURATION_ENV = "LOADTEST_HANDLER_DURATION_MS"
"""Fault: extra handler time in milliseconds, before the invocation's first write."""
HANDLER_JITTER_ENV = "LOADTEST_HANDLER_JITTER_MS"
"""Fault: plus a uniform random 0..N milliseconds."""
RACE_WINDOW_ENV = "LOADTEST_RACE_WINDOW_MS"
"""Fault: a pause in milliseconds after each read of the watched table."""
CRASH_AFTER_WRITE_ENV = "LOADTEST_CRASH_AFTER_WRITE"
"""Fault (local environments only): the probability of a crash after the writes."""
CRASH_MID_HANDLER_ENV = "LOADTEST_CRASH_MID_HANDLER"
"""Fault: the probability of a crash right after a write to the watched table is answered,
before the handler sees the answer (injected by the layer, locally and deployed)."""
POINT_FAULTS_ENV = "LOADTEST_POINT_FAULTS"
"""Faults (local environments only): the point faults' probabilities, ``name=p`` pairs
comma-separated (``redeliver=0.05,throttle=1``)."""
FAULT_SEED_ENV = "LOADTEST_FAULT_SEED"
"""The seed of the faults' random draws."""


SideTables = tuple[tuple[str, tuple[str, ...]], ...]
"""Extra tables and their key attributes (hash, then range)."""


def side_tables_value(tables: SideTables) -> str:
    """``SIDE_TABLES_ENV``'s value for ``tables``."""
    return ",".join(":".join((name, *keys)) for name, keys in tables)


def side_tables_of(value: str) -> SideTables:
    """The tables ``SIDE_TABLES_ENV``'s ``value`` names; one given without its key is keyed
    by ``id``."""
    tables = []
    for entry in value.split(","):
        name, *keys = entry.split(":")
        if name:
            tables.append((name, tuple(k for k in keys if k) or ("id",)))
    return tuple(tables)
