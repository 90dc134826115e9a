"""The library's report: typed views over one report model, and its files.

Owns ``Report`` (what ``loadtest.run``, ``compare`` and ``explore`` return),
``RunReport`` and ``LatencySummary``. A ``Report`` holds one ``ReportModel``
(``loadtest.reports.model``): its verdicts and exit code, the explanation a
failed assertion shows, and the JSON and HTML files, all read from that model.
Writes only the files it is asked to; prints nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtest.model.checker import OPTIONAL_COUNT_NAMES, Counts
from loadtest.reports.model import ReportModel, RunModel
from loadtest.reports.report import verdict_exit_code


@dataclass(frozen=True)
class LatencySummary:
    """One latency's percentiles, in microseconds (``None`` when nothing was measured).

    The fields are ``loadtest.model.figures.metrics.LATENCY_STATS`` spelled out (so type
    checkers and editors know ``.p99``); a test holds the two equal.
    """

    count: int
    min: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p99_9: float | None
    max: float | None
    mean: float | None
    out_of_range: int = 0
    """Values beyond the histogram's range: counted, never dropped silently."""


@dataclass(frozen=True)
class RunReport:
    """One variant's run, as in the JSON report's ``runs[]``."""

    variant: str
    verdict: str
    """"pass", "fail" or "inconclusive" (after the scenario's rules and thresholds)."""
    counts: Counts
    latency: Mapping[str, LatencySummary]
    """By name (``end_to_end``, ``handler``, ``write``, ...), in microseconds."""
    reasons: tuple[str, ...]
    inconclusive: tuple[str, ...]
    raw: Mapping[str, Any]
    """The run's JSON object, every key."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class Report:
    """A run's or comparison's report: typed views over exactly the JSON report."""

    def __init__(self, data: ReportModel | Mapping[str, Any]) -> None:
        self.model = data if isinstance(data, ReportModel) else ReportModel.from_json(data)
        """The report itself; its JSON is ``to_dict()``."""
        self.runs = [_run_report(run) for run in self.model.runs]

    @property
    def passed(self) -> bool:
        """Whether every verdict passed (what makes the CLI exit 0)."""
        return self.exit_code == 0

    @property
    def exit_code(self) -> int:
        """0 all passed, 1 a verdict or threshold failed, 4 inconclusive (``verdict_exit_code``).

        An interrupted run's report (``incomplete``) is judged the same way; the
        CLI exits 130 for it instead.
        """
        return verdict_exit_code(self.model)

    @property
    def incomplete(self) -> str | None:
        """Why the run stopped before its workload was settled (``None`` if it finished)."""
        return self.model.incomplete_reason

    def assert_passed(self, *replay: str) -> None:
        """Raise ``AssertionError`` unless every verdict passed.

        Its message is the explanation a person acts on: each run's verdict and the
        counts that failed it, the first counterexample as the terminal shows it (a
        race's reads and writes in order), and the command that replays the run, seed
        included (``replay`` adds lines, such as a test runner's command).
        """
        __tracebackhide__ = True  # pytest: the failure points at the caller's line
        if not self.passed:
            from loadtest.reports.text.explain import explanation

            raise AssertionError(explanation(self.model, replay))

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``schema_version`` 1), as ``--json`` writes it."""
        return self.model.to_json()

    def write_json(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return target

    def write_html(self, path: str | Path) -> Path:
        from loadtest.reports.html.page import render_html

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_html(self.model), encoding="utf-8")
        return target

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{r.variant}={r.verdict}" for r in self.runs)
        return f"<Report {self.model.name}: {verdicts}>"


def _run_report(run: RunModel) -> RunReport:
    # The effect counts only where the run has them (None otherwise, as the checker gives).
    measured: dict[str, Any] = {
        name: run.counts.get(name) if name in OPTIONAL_COUNT_NAMES else run.count(name)
        for name in Counts.__dataclass_fields__
    }
    counts = Counts(**measured)
    known = LatencySummary.__dataclass_fields__
    latency = {
        name: LatencySummary(**{k: v for k, v in values.items() if k in known})
        for name, values in run.latency_us.items()
    }
    return RunReport(
        variant=run.variant,
        verdict=run.verdict,
        counts=counts,
        latency=latency,
        reasons=run.reasons,
        inconclusive=run.inconclusive,
        raw=run.to_json(),
    )
