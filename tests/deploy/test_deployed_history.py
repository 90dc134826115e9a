"""A deployed run's history (``--deploy --history PATH``): closed, ``loadtest report`` gives
the run's own JSON report byte for byte; cut at a record boundary before the run's end, or
inside a record, it gives what was measured up to there, rebuilt from the observation lines
the run drained by the run's own collector, marked incomplete (exit 4). A history path that
cannot be written exits 2 before anything is deployed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.deploy.collect import InvocationStart, parse
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients
from loadtest.model.history import journal

runner = CliRunner()


def _report(history: Path, out: Path) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["report", str(history), "--json", str(out), "--quiet"])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, json.loads(out.read_text(encoding="utf-8"))


def _delivered(entries: tuple[journal.Entry, ...]) -> int:
    """Records delivered by the invocations whose start line the given records hold."""
    starts: dict[str, int] = {}
    for entry in entries:
        if entry.kind == journal.LINES:
            for line in entry.values()["lines"]:
                parsed = parse(line)
                if isinstance(parsed, InvocationStart):
                    starts.setdefault(parsed.request_id, len(parsed.records))
    return sum(starts.values())


@pytest.mark.slow
def test_a_deployed_runs_history_rebuilds_its_report_closed_or_cut(
    ministack: str, tmp_path: Path
) -> None:
    history = tmp_path / "lab.history"
    ran = tmp_path / "ran.json"
    result = runner.invoke(
        app,
        [
            *("run", "seed-lab", "--deploy", "--endpoint-url", ministack),
            *("--history", str(history), "--json", str(ran), "--quiet"),
        ],
    )
    assert result.exit_code == 0, result.output
    (run,) = json.loads(ran.read_text(encoding="utf-8"))["runs"]
    counts = run["counts"]
    assert (counts["messages_sent"], counts["deliveries"]) == (4, 4), counts
    assert find_tagged(make_clients(ministack)[0], None) == []

    # Closed: the run's own report, byte for byte.
    code, _ = _report(history, tmp_path / "rebuilt.json")
    assert code == 0
    assert (tmp_path / "rebuilt.json").read_bytes() == ran.read_bytes()

    data = history.read_bytes()
    entries = journal.scan(data).entries
    kinds = [e.kind for e in entries]
    assert journal.LINES in kinds and journal.ENDED in kinds, kinds
    assert kinds[-1] == journal.CLOSED, kinds
    assert "collect" in entries[kinds.index(journal.VARIANT)].values()

    # Cut at the run's end record: the built logs the file already holds are set aside and
    # the invocations, acknowledgements and writes rebuilt from the drained lines.
    ended = entries[kinds.index(journal.ENDED)]
    (tmp_path / "at-end.history").write_bytes(data[: ended.offset])
    code, cut = _report(tmp_path / "at-end.history", tmp_path / "at-end.json")
    assert code == 4
    assert cut["incomplete"] is True
    assert cut["incomplete_reason"].startswith("cut short: the history ends at its last record")
    (cut_run,) = cut["runs"]
    assert cut_run["incomplete"] is True and cut_run["verdict"] == "inconclusive"
    for name in ("messages_sent", "deliveries", "writes_accepted", "writes_rejected", "acked"):
        assert cut_run["counts"][name] == counts[name], name
    assert cut_run["cold_starts"] == run["cold_starts"]

    # Cut inside the last batch of lines: what the lines before it say.
    last = max(i for i, kind in enumerate(kinds) if kind == journal.LINES)
    (tmp_path / "torn.history").write_bytes(data[: entries[last].offset + 12])
    code, torn = _report(tmp_path / "torn.history", tmp_path / "torn.json")
    assert code == 4
    assert f"a torn record at byte {entries[last].offset}" in torn["incomplete_reason"]
    (torn_run,) = torn["runs"]
    assert torn_run["counts"]["messages_sent"] == 4
    assert torn_run["counts"]["deliveries"] == _delivered(entries[:last])


@pytest.mark.parametrize(
    "where",
    [
        ["--deploy"],
        ["--function", "fn", "--queue-url", "http://127.0.0.1:9/000000000000/q", "--table", "t"],
    ],
    ids=["deploy", "attach"],
)
def test_an_unwritable_history_exits_two_before_anything_is_deployed(
    where: list[str], tmp_path: Path
) -> None:
    # The endpoint answers nothing: had the run tried to deploy, it would exit 3.
    result = runner.invoke(
        app,
        [
            *("run", "seed-lab", *where, "--endpoint-url", "http://127.0.0.1:9", "--yes"),
            *("--history", str(tmp_path / "missing" / "h.history")),
            *("--out", str(tmp_path / "out")),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "cannot write history" in " ".join(result.output.split())
    assert not (tmp_path / "missing").exists() and not (tmp_path / "out").exists()
