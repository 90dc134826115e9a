"""The doctor's probe: a handler that measures the event source mapping, not the table.

``loadtest doctor`` deploys it behind a mapping (or runs it on the emulated one)
and reads what the mapping did from the run's history: when each invocation
started and ended, which records it carried and at which receive count. What
the probe does is in each message's body, so one function serves every check::

    {"id": "...", "quantity": 1, "probe": {"first_sleep_ms": N, "sleep_ms": N,
                                           "fail_first": bool}}

``first_sleep_ms``: time spent on the record's first delivery (receive count 1);
``sleep_ms``: on every delivery; ``fail_first``: its first delivery is named in a
partial batch response (``batchItemFailures``). It writes nothing.
"""

from __future__ import annotations

import json
import time
from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    failures = []
    for record in event.get("Records", []):
        try:
            probe = json.loads(record["body"]).get("probe", {})
        except (ValueError, AttributeError):
            probe = {}
        first = int(record.get("attributes", {}).get("ApproximateReceiveCount", "1")) == 1
        sleep_ms = int(probe.get("sleep_ms", 0)) + (
            int(probe.get("first_sleep_ms", 0)) if first else 0
        )
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        if first and probe.get("fail_first"):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
