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
            *("compare", "seed-lab", "--variants", "conditional,read-then-write"),
            *("--deploy", "--endpoint-url", ministack),
            *("--history", str(history), "--json", str(ran), "--quiet"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    runs = json.loads(ran.read_text(encoding="utf-8"))["runs"]
    assert [r["counts"]["deliveries"] for r in runs] == [4, 4], runs
    assert find_tagged(make_clients(ministack)[0], None) == []

    # Closed: the run's own report, byte for byte.
    code, _ = _report(history, tmp_path / "rebuilt.json")
    assert code == result.exit_code
    assert (tmp_path / "rebuilt.json").read_bytes() == ran.read_bytes()

    data = history.read_bytes()
    entries = journal.scan(data).entries
    kinds = [e.kind for e in entries]
    assert kinds.count(journal.VARIANT) == kinds.count(journal.ENDED) == 2, kinds
    assert kinds[-1] == journal.CLOSED, kinds
    assert all("collect" in e.values() for e in entries if e.kind == journal.VARIANT)
    # The first variant run's end was written as it was collected, before the second began.
    assert kinds.index(journal.ENDED) < len(kinds) - 1 - kinds[::-1].index(journal.VARIANT)

    # Cut at the second run's end record: the first is judged from its end as the run
    # judged it; the second's logs the file already holds are set aside and its
    # invocations, acknowledgements and writes rebuilt from the lines it drained.
    ended = max(i for i, kind in enumerate(kinds) if kind == journal.ENDED)
    (tmp_path / "at-end.history").write_bytes(data[: entries[ended].offset])
    code, cut = _report(tmp_path / "at-end.history", tmp_path / "at-end.json")
    assert code in (1, 4)
    assert cut["incomplete"] is True
    assert cut["incomplete_reason"].startswith("cut short: the history ends at its last record")
    first, second = cut["runs"]
    assert first == runs[0]
    assert second["incomplete"] is True and second["verdict"] in ("inconclusive", "fail")
    for name in ("messages_sent", "deliveries", "writes_accepted", "writes_rejected", "acked"):
        assert second["counts"][name] == runs[1]["counts"][name], name
    assert second["cold_starts"] == runs[1]["cold_starts"]

    # Cut inside the first run's last batch of lines: what the lines before it say.
    last = max(
        i for i, kind in enumerate(kinds[: kinds.index(journal.ENDED)]) if kind == journal.LINES
    )
    (tmp_path / "torn.history").write_bytes(data[: entries[last].offset + 12])
    code, torn = _report(tmp_path / "torn.history", tmp_path / "torn.json")
    assert code in (1, 4)
    assert f"a torn record at byte {entries[last].offset}" in torn["incomplete_reason"]
    (torn_run,) = torn["runs"]
    assert torn_run["incomplete"] is True
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
