"""explore on consumers that delete their messages themselves: the modelled queue answers
the delete and acknowledges the message, so a crash right after it is explored."""

from __future__ import annotations

import loadtest

CONSUMERS = "tests/integration/explore/consumers"


def test_a_crash_between_the_handlers_own_delete_and_its_write_loses_the_order(
    backend_url: str,
) -> None:
    handler = f"{CONSUMERS}/delete_then_store.py:handler"
    env = ["QUEUE_URL={queue_url}"]
    report = loadtest.explore(
        "seed-lab", handler=handler, copies=1, env=env, faults="crash", endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1, explore["bound"]["sentence"]
    [bug] = explore["bugs"]
    assert bug["counts"]["lost_outcomes"] == 1 and bug["faults"] == 1
    assert explore["schedules_inconclusive"] == 0 and explore["exhaustive"] is True
    steps = [step["what"] for step in explore["counterexample"]["steps"]]
    assert any(text.startswith("delete a message of queue ") for text in steps), steps
    # Without a crash the message is acknowledged by the handler's delete, once.
    [run] = report.runs
    assert run.counts.acked >= 1 and run.counts.unsettled == 0

    again = loadtest.explore(
        "seed-lab",
        handler=handler,
        copies=1,
        env=env,
        faults="crash",
        schedule=bug["schedule"],
        endpoint_url=backend_url,
    )
    assert again.exit_code == 1
    assert again.to_dict()["explore"]["counterexample"]["counts"]["lost_outcomes"] == 1
