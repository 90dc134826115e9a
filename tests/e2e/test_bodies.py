"""Messages as real producers send them (body templates, envelopes, attributes), run
end to end on the embedded backend against consumers that read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app

HERE = Path(__file__).parent
SNS_CONSUMER = f"{HERE / 'sns_orders.py'}:handler"
runner = CliRunner()


@pytest.mark.parametrize(("batch_size", "window_s"), [("10", "1"), ("1", "0")])
def test_an_sns_envelope_consumer_with_an_unconditional_put_fails_with_one_duplicate_per_order(
    backend_url: str, tmp_path: Path, batch_size: str, window_s: str
) -> None:
    # 20 orders x 2 copies, each order a JSON string inside the SNS notification's Message:
    # every resend is a second accepted put of its order, at Lambda's default batch size
    # with a batching window (several copies of an order may share an invocation) as at 1.
    out = tmp_path / "sns.json"
    result = runner.invoke(
        app,
        [
            "run",
            str(HERE / "sns_orders.toml"),
            "--handler",
            SNS_CONSUMER,
            "--batch-size",
            batch_size,
            "--batching-window",
            window_s,
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    (run,) = json.loads(out.read_text())["runs"]
    counts = run["counts"]
    assert counts["messages_sent"] == 40
    assert counts["distinct_ids"] == 20
    assert counts["acked"] == 40
    assert counts["writes_accepted"] == 40
    assert counts["duplicate_writes"] == 20
    assert counts["lost_outcomes"] == 0
    assert counts["side_writes"] == 0
    assert run["settings"]["batch_size"] == int(batch_size)
    assert run["table_after"] == {"items": 20}
    assert run["verdict"] == "fail"
