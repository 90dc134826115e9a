"""Effects beyond the table, sent the ways teams send them: boto3's resource API, aioboto3,
a FIFO topic's deduplication id, a batch whose answer is never read, an execution named by
the message, an audit line that names no order.

Each consumer of ``tests/integration/consumers/effects`` named here (the right verdict in
its docstring) runs through ``loadtest.api.run`` on the embedded backend with the small
scenarios of ``tests.integration.test_effects`` (batch size 1, one execution environment:
the effect counts are exact), or through ``loadtest.api.explore``.
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_effects import _effects, _expect, _run, _user

# --- an entry of a batch refused, and the answer never read --------------------------


HELD = """
seed = 3

[expect]
overlap = false

[[workload.messages]]
body = { id = "h-1", quantity = 1 }
copies = 2

[[workload.messages]]
body = { id = "h-2", quantity = 2, hold_s = 1800 }
copies = 2

[[workload.messages]]
body = { id = "h-3", quantity = 3, hold_s = 1 }
copies = 2

[consumer]
batch_size = 10
batching_window_s = 1
concurrency = 1
environment = { SHIPPING_QUEUE_URL = "{queue_url:shipping}" }

[run]
deadline_s = 60
"""


def test_an_entry_a_batch_send_refused_is_lost_for_its_own_order(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "held.toml"
    path.write_text(HELD, encoding="utf-8")
    run = _run(backend_url, path, _user("shipping_batch_unchecked.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    assert (counts["acked"], counts["handler_errors"], counts["lost_outcomes"]) == (6, 0, 0)
    # The requests go out in one SendMessageBatch after the loop; h-2's asks for a delay
    # SQS does not take and is refused alone. h-1 and h-3 went through cleanly and reached
    # the queue, so it is required: both of h-2's acknowledged messages lost their request.
    assert _effects(run) == _expect(2, 2, lost=2)
    (sink,) = run.raw["effects"]
    assert sink["required"] == "learned"
    (witness,) = sink["witnesses"]
    assert witness["business_id"] == "h-2"
    assert witness["text"].endswith("; the sink refused 1 of its entries (InvalidParameterValue)")
