"""What a local execution environment is started with: the function's configuration.

Owns ``FunctionConfig`` (what a deployed function would be configured with) and the
environ it gives an environment process (``FunctionConfig.environ``: the run's settings,
the variables Lambda's Python runtime defines, the function's own). Must not start
processes (``loadtest.emulation.environment.parent_environments`` does).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.observer.layer_environment import (
    DEAD_LETTER_QUEUES_ENV,
    KEY_NAMES_ENV,
    SIDE_TABLES_ENV,
    SOURCE_QUEUES_ENV,
    SideTables,
    side_tables_value,
)


@dataclass(frozen=True)
class FunctionConfig:
    """What a deployed function would be configured with."""

    handler: HandlerRef
    function_name: str
    table_name: str
    region: str
    endpoint_url: str | None
    memory_mb: int
    timeout_s: int
    extra_env: tuple[tuple[str, str], ...] = ()
    """Credentials and settings passed to the function (e.g. for an embedded backend)."""
    report_batch_item_failures: bool = False
    """Told to the function as ``REPORT_BATCH_ITEM_FAILURES`` (its mapping's setting)."""
    fault_env: tuple[tuple[str, str], ...] = ()
    """The scenario's faults, read by the environment process (``LOADTEST_*``)."""
    key_names: tuple[str, ...] = ("id",)
    """The table's key attributes (hash, then range), for the write observer."""
    side_tables: SideTables = ()
    """The consumer's extra tables and their key attributes, whose writes the observer
    counts as side writes."""
    source_queues: tuple[str, ...] = ()
    """The queue that feeds the function (its URL and ARN): the observer does not count a
    send to it as an effect."""
    dead_letter_queues: tuple[str, ...] = ()
    """Its dead-letter queue (URL and ARN): a send to it parks a record, not an effect."""
    function_env: tuple[tuple[str, str], ...] = ()
    """The function's own variables: the scenario's ``[consumer] environment`` and ``--env``
    with the run's resources filled in, and each extra table's variable."""

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update(self.fault_env)
        env.update(
            {
                "TABLE_NAME": self.table_name,
                "REPORT_BATCH_ITEM_FAILURES": str(self.report_batch_item_failures).lower(),
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                **self.lambda_environ(),
                "LOADTEST_PARENT_PID": str(os.getpid()),
                "LOADTEST_HANDLER": self.handler.ref,
                KEY_NAMES_ENV: ",".join(self.key_names),
                SIDE_TABLES_ENV: side_tables_value(self.side_tables),
                SOURCE_QUEUES_ENV: ",".join(self.source_queues),
                DEAD_LETTER_QUEUES_ENV: ",".join(self.dead_letter_queues),
                "PYTHONUNBUFFERED": "1",
                "PYTHONPATH": os.pathsep.join(
                    p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p
                ),
            }
        )
        env.update(self.function_env)
        if self.endpoint_url:
            env["AWS_ENDPOINT_URL"] = self.endpoint_url
        else:
            env.pop("AWS_ENDPOINT_URL", None)
        return env

    def lambda_environ(self) -> dict[str, str]:
        """The variables Lambda's Python runtime environment defines (its guide's
        "Defined runtime environment variables"), but the runtime API's address: nothing
        serves it here. ``AWS_LAMBDA_LOG_STREAM_NAME`` is set per environment (``start``)."""
        handler = self.handler
        if handler.path is not None:
            task_root = os.path.dirname(handler.path)
            module = os.path.splitext(os.path.basename(handler.path))[0]
        else:
            task_root, module = os.getcwd(), str(handler.module)
        return {
            "AWS_LAMBDA_FUNCTION_NAME": self.function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.function_name}",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info[0]}.{sys.version_info[1]}",
            "_HANDLER": f"{module}.{handler.function}",
            "LAMBDA_TASK_ROOT": task_root,
            "TZ": ":UTC",
        }
