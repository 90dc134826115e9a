"""explore on a poison record: refused by raising (the modelled queue dead-letters it after
its receives) or parked on the dead-letter queue by the handler itself (the modelled queue
answers the send): either way it is dead-lettered as the scenario expects, not a valid
message lost."""

from __future__ import annotations

from pathlib import Path

import loadtest

ADVERSARIAL = "tests/integration/consumers/adversarial"

SCENARIO = """
variants = ["conditional"]

[[workload.messages]]
body = { id = "bad-order", quantity = 0 }
poison = true
copies = 2

[consumer]
batch_size = 1
max_receive_count = 2
environment = { DLQ_URL = "{dlq_url}" }
"""


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "poison.toml"
    path.write_text(SCENARIO)
    return path


def test_a_poison_record_the_handler_refuses_is_an_expected_dead_letter(
    backend_url: str, tmp_path: Path
) -> None:
    report = loadtest.explore(
        _scenario(tmp_path), variant="conditional", faults="crash", endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["schedules_failed"] == 0 and explore["exhaustive"] is True
    [run] = report.runs
    assert (run.counts.dead_lettered, run.counts.unexpected_dead_letters) == (2, 0)


def test_a_poison_record_parked_by_the_handler_is_dead_lettered_once_per_copy(
    backend_url: str, tmp_path: Path
) -> None:
    report = loadtest.explore(
        _scenario(tmp_path),
        handler=f"{ADVERSARIAL}/park_bad_records.py:handler",
        faults="crash,redeliver",
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["schedules_inconclusive"] == 0 and explore["exhaustive"] is True
    [run] = report.runs
    assert (run.counts.dead_lettered, run.counts.unexpected_dead_letters) == (2, 0)
    assert run.counts.acked == 2 and run.counts.effects_sent is None
