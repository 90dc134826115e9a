"""Golden reports: save what a report is built from, and rebuild every rendering of it.

A refactoring of the report must change no byte of what a user sees. This tool
checks that across two checkouts:

    # at the commit before the change
    PYTHONPATH=/path/to/old python tools/report_golden.py capture /tmp/golden-in
    PYTHONPATH=/path/to/old python tools/report_golden.py render /tmp/golden-in /tmp/old
    # with the change
    PYTHONPATH=$PWD python tools/report_golden.py render /tmp/golden-in /tmp/new
    diff -r /tmp/old /tmp/new        # must print nothing

``capture DIR`` runs every built-in scenario (small settings, a fixed seed) on the
embedded backend, plus a repeat, a sweep and extra thresholds, and saves, per case,
what the report builder reads: the engine's ``RunResult`` (histories, checks, end
states, latencies; pickled with its on-disk frame stores turned into lists) and
the run's inputs (thresholds, prices, repeat, command). Nothing is taken from the
clock at render time: every figure and timestamp comes from the saved inputs.

``render DIR OUT`` rebuilds, for each saved case: the JSON report, the HTML page,
the Markdown summary, JUnit XML, the .hgrm files, the terminal summary (plain and
with its ANSI styles), the same summary after a JSON round trip (``loadtest report
FILE``), the text a failed ``assert_passed`` raises with, and the diff table of the
report against itself (``loadtest diff``); for each case also once as an interrupted
run (``incomplete``).

``digest DIR`` renders the cases saved in DIR and writes the SHA-256 of every file to
``DIR/expected.json``: ``tests/reports/test_report_golden.py`` renders the few small
cases saved in ``tests/reports/golden`` and fails on any byte that differs. When a change
to a report is intended, refresh the digests (and say why in the commit)::

    PYTHONPATH=$PWD python tools/report_golden.py digest tests/reports/golden

and to add a case: ``capture tests/reports/golden --only NAME``, then ``digest``.

A pickle names classes by module: ``_MOVED`` maps a module that moved to where it is
now, so inputs captured before a move still load; a record pickled before a field was
added to its class gets the field's default.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

MANIFEST = "expected.json"
"""The digests a golden test compares with (``digest DIR`` writes them)."""

SEED = 7
SMALL: dict[str, Any] = {"distinct_ids": 12}
"""Overrides that keep every built-in scenario small (those that send a list of
messages keep their list)."""

EXTRA_THRESHOLDS = ("duplicate_writes == 0", "end_to_end.p99 < 60s", "cost.per_million_usd < 100")

_MOVED = {
    # The old names spelled in parts, so a rewrite of dotted module names leaves them be.
    ".".join(("loadtest", "adapters", "aws")): "loadtest.aws.clients",
    ".".join(("loadtest", "adapters", "spool")): "loadtest.spool",
    ".".join(("loadtest", "model", "attribute_values")): "loadtest.model.dynamodb.attribute_values",
    ".".join(
        ("loadtest", "model", "update_expressions")
    ): "loadtest.model.dynamodb.update_expressions",
    ".".join(("loadtest", "model", "updates")): "loadtest.model.dynamodb.updates",
    ".".join(("loadtest", "model", "partiql")): "loadtest.model.dynamodb.partiql.statements",
    ".".join(("loadtest", "model", "partiql_clauses")): "loadtest.model.dynamodb.partiql.clauses",
    ".".join(("loadtest", "model", "partiql_syntax")): "loadtest.model.dynamodb.partiql.syntax",
    ".".join(("loadtest", "model", "scenario")): "loadtest.model.scenario.loading",
    ".".join(("loadtest", "model", "scenario_fields")): "loadtest.model.scenario.fields",
    ".".join(("loadtest", "model", "scenario_model")): "loadtest.model.scenario.model",
    ".".join(("loadtest", "model", "settings")): "loadtest.model.scenario.settings",
    ".".join(("loadtest", "model", "function_config")): "loadtest.model.scenario.function_config",
    ".".join(("loadtest", "model", "toml_text")): "loadtest.model.scenario.toml_text",
    ".".join(("loadtest", "model", "body")): "loadtest.model.scenario.body",
    ".".join(("loadtest", "model", "body_template")): "loadtest.model.scenario.body_template",
    ".".join(("loadtest", "model", "envelopes")): "loadtest.model.scenario.envelopes",
    ".".join(("loadtest", "model", "schedule")): "loadtest.model.workload.schedule",
    ".".join(("loadtest", "model", "rate")): "loadtest.model.figures.rate",
    ".".join(("loadtest", "model", "ids")): "loadtest.model.workload.ids",
    ".".join(("loadtest", "model", "history")): "loadtest.model.history.log",
    ".".join(("loadtest", "model", "history_records")): "loadtest.model.history.records",
    ".".join(("loadtest", "model", "history_frames")): "loadtest.model.history.frames",
    ".".join(("loadtest", "model", "history_keys")): "loadtest.model.history.keys",
    ".".join(("loadtest", "model", "observation")): "loadtest.model.history.observation",
    ".".join(("loadtest", "model", "explore")): "loadtest.model.explore.points",
    ".".join(("loadtest", "model", "explore_search")): "loadtest.model.explore.strategies",
    ".".join(("loadtest", "model", "explore_shrink")): "loadtest.model.explore.shrink",
    ".".join(("loadtest", "model", "shrink")): "loadtest.model.search.shrink",
    ".".join(("loadtest", "model", "repeats")): "loadtest.model.search.repeats",
    ".".join(("loadtest", "model", "confidence")): "loadtest.model.search.confidence",
    ".".join(("loadtest", "model", "metrics")): "loadtest.model.figures.metrics",
    ".".join(("loadtest", "model", "cost")): "loadtest.model.figures.cost",
    ".".join(("loadtest", "model", "price_tables")): "loadtest.model.figures.price_tables",
    ".".join(("loadtest", "model", "thresholds")): "loadtest.model.figures.thresholds",
    ".".join(
        ("loadtest", "model", "threshold_grammar")
    ): "loadtest.model.figures.threshold_grammar",
    ".".join(("loadtest", "model", "lint")): "loadtest.model.advice.lint",
    ".".join(("loadtest", "model", "lint_rules")): "loadtest.model.scenario.lint_rules",
    ".".join(("loadtest", "model", "scaffold")): "loadtest.model.advice.scaffold.writer",
    ".".join(("loadtest", "model", "scaffold_key")): "loadtest.model.advice.scaffold.key",
    ".".join(("loadtest", "model", "scaffold_sample")): "loadtest.model.advice.scaffold.sample",
    ".".join(("loadtest", "model", "handler_source")): "loadtest.model.advice.handler_source",
}

_SPLIT = {
    "loadtest.model.history.log": (
        "loadtest.model.history.frames",
        "loadtest.model.history.records",
        "loadtest.model.history.keys",
    ),
}
"""Modules split in parts, and the parts a name saved from them may now live in."""


@dataclasses.dataclass
class Case:
    """One saved report input: the engine's result and what the report builder is told."""

    name: str
    result: Any
    """The engine's ``RunResult``."""
    thresholds: tuple[str, ...]
    prices: Any
    repeat: int
    command: str


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # A run's record logs keep their frames in a file: saved as a list of the frames.
        if type(obj).__name__ == "FileFrames":
            return (list, ([obj[i] for i in range(len(obj))],))
        # A histogram holds ctypes arrays: saved as its own encoding, decoded on load.
        if type(obj).__name__ == "HdrHistogram":
            from loadtest.model.figures.metrics import decode

            return (decode, (obj.encode().decode("ascii"),))
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name == "Case" and module in ("__main__", __name__):
            return Case  # saved by this tool, run as a script or imported
        module = _MOVED.get(module, module)
        # A private codec function made public when its module was split keeps its name
        # without the underscore, in the module or one split from it.
        for place in (module, *_SPLIT.get(module, ())):
            for candidate in dict.fromkeys((name, name.lstrip("_"), f"_{name}")):
                try:
                    return super().find_class(place, candidate)
                except AttributeError:
                    continue
        return super().find_class(module, name)


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    from loadtest.model.scenario.loading import builtin_scenarios

    cases: list[tuple[str, str, dict[str, Any]]] = []
    for name, scenario in builtin_scenarios().items():
        small = {} if scenario.workload.messages else SMALL
        cases.append((name, name, {**small}))
    cases.append(("race-burst-thresholds", "race-burst", {**SMALL, "thresholds": EXTRA_THRESHOLDS}))
    cases.append(("race-burst-repeat", "race-burst", {"distinct_ids": 6, "repeat": 3}))
    cases.append(
        (
            "race-burst-repeat-small",
            "race-burst",
            {"distinct_ids": 2, "repeat": 2, "thresholds": ("duplicate_writes.runs_with >= 0",)},
        )
    )
    cases.append(
        (
            "race-burst-sweep",
            "race-burst",
            {"distinct_ids": 6, "cells": [{"batch_size": 1}, {"batch_size": 5}]},
        )
    )
    return cases


def capture(directory: Path, only: list[str]) -> None:
    from loadtest import api
    from loadtest.engine import CLEANUP_TIMEOUT_S
    from loadtest.engine.runtime import RunOptions, runtime_for

    directory.mkdir(parents=True, exist_ok=True)
    for case_name, scenario, options in _cases():
        if only and case_name not in only:
            continue
        plan = api.prepare(scenario, seed=SEED, **options)
        runtime = runtime_for(plan.kind, plan.endpoint_url, deployed=plan.deployed)
        result = runtime.run(
            plan.scenario,
            plan.refs,
            RunOptions(cells=plan.cells, cleanup_timeout_s=CLEANUP_TIMEOUT_S),
        )
        case = Case(
            name=case_name,
            result=result,
            thresholds=tuple(options.get("thresholds", ())),
            prices=plan.prices,
            repeat=plan.repeat,
            command=f"loadtest run {scenario} --seed {SEED}",
        )
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(case)
        (directory / f"{case_name}.pickle").write_bytes(buffer.getvalue())
        sys.stderr.write(f"captured {case_name}\n")


def load_case(path: Path) -> Case:
    with path.open("rb") as handle:
        case: Case = _Unpickler(handle).load()
    _fill_added_fields(case)
    return case


def _fill_added_fields(root: Any) -> None:
    """Give each record pickled before a field was added to its class that field's
    default, as the code makes it: a slotted dataclass restored from fewer values than it
    has fields keeps no value for the rest. Walks loadtest's objects and the containers
    holding them."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, str | bytes | int | float | bool | type(None)):
            continue
        seen.add(id(obj))
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                if hasattr(obj, f.name):
                    stack.append(getattr(obj, f.name))
                elif f.default is not dataclasses.MISSING:
                    object.__setattr__(obj, f.name, f.default)
                elif f.default_factory is not dataclasses.MISSING:
                    object.__setattr__(obj, f.name, f.default_factory())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif type(obj).__module__.startswith(("loadtest.", "__main__")) and hasattr(
            obj, "__dict__"
        ):
            stack.extend(vars(obj).values())


def build(case: Case, *, incomplete: str | None = None) -> dict[str, Any]:
    """The JSON report of a saved case, through the library's own seam."""
    from loadtest import api

    result = case.result
    if incomplete is not None:
        result = dataclasses.replace(
            result,
            runs=[dataclasses.replace(run, incomplete=incomplete) for run in result.runs],
            incomplete=incomplete,
        )
    report_of = getattr(api, "report_of", None)
    if report_of is not None:  # one Plan carries the thresholds, prices and repeats
        from loadtest.model.plan import RunPlan

        plan = RunPlan.of(result.scenario, case.thresholds, prices=case.prices, repeat=case.repeat)
        return report_of(plan, result, case.command).to_dict()  # type: ignore[no-any-return]
    from loadtest.reports.report import build_report

    data = build_report(
        result,
        command=case.command,
        thresholds=case.thresholds,
        prices=case.prices,
        repeat=case.repeat > 1,
    )
    return json.loads(json.dumps(data))  # type: ignore[no-any-return]


def _terminal(renderable: Any, *, styles: bool) -> str:
    from rich.console import Console

    console = Console(
        file=io.StringIO(),
        width=140,
        force_terminal=styles,
        color_system="truecolor" if styles else None,
        record=True,
        legacy_windows=False,
        _environ={},
    )
    console.print(renderable)
    return console.export_text(styles=styles)


def _report_of(data: dict[str, Any]) -> Any:
    from loadtest import api

    loads = getattr(api, "report_from_json", None)
    return loads(data) if loads is not None else api.Report(data)


def render_one(data: dict[str, Any], out: Path) -> None:
    try:
        from loadtest.reports.text.formats import hgrm_files
    except ImportError:  # before the .hgrm files were the reports' to write
        from loadtest.model.figures.metrics import hgrm_files  # type: ignore[attr-defined,no-redef]
    from loadtest.reports.diff import diff_reports

    try:
        from loadtest.reports.text.diff_view import render_diff_table
    except ImportError:  # before the table had its own module
        from loadtest.reports.diff import render_diff_table  # type: ignore[attr-defined,no-redef]
    from loadtest.reports.html.page import render_html
    from loadtest.reports.text.formats import junit_xml, markdown_summary
    from loadtest.reports.text.render import render

    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2) + "\n"
    (out / "report.json").write_text(text, encoding="utf-8")
    report = _report_of(data)
    (out / "report-api.json").write_text(
        json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8"
    )
    reloaded = json.loads(text)
    (out / "report.html").write_text(render_html(reloaded), encoding="utf-8")
    (out / "summary.md").write_text(markdown_summary(reloaded), encoding="utf-8")
    (out / "junit.xml").write_text(junit_xml(reloaded), encoding="utf-8")
    for name, hgrm in hgrm_files(reloaded).items():
        (out / name).write_text(hgrm, encoding="utf-8")
    (out / "terminal.txt").write_text(_terminal(render(reloaded), styles=False), encoding="utf-8")
    (out / "terminal.ansi").write_text(_terminal(render(reloaded), styles=True), encoding="utf-8")
    try:
        report.assert_passed("replay: pytest -k golden")
        explained = "passed\n"
    except AssertionError as exc:
        explained = str(exc) + "\n"
    (out / "explanation.txt").write_text(explained, encoding="utf-8")
    (out / "api.txt").write_text(
        "\n".join(
            [
                repr(report),
                f"passed={report.passed} exit_code={report.exit_code} "
                f"incomplete={report.incomplete!r}",
                *(
                    f"{run.variant} {run.verdict} passed={run.passed} {run.counts!r} "
                    f"{dict(run.latency)!r} {run.reasons!r} {run.inconclusive!r} "
                    f"raw={json.dumps(dict(run.raw), sort_keys=True) == json.dumps(data_run, sort_keys=True)}"
                    for run, data_run in zip(report.runs, data["runs"], strict=True)
                ),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    diffed = diff_reports(reloaded, json.loads(text), max_regression=0.1)
    (out / "diff.txt").write_text(
        _terminal(render_diff_table(diffed), styles=False)
        + f"ok={diffed.ok} regressions={diffed.regressions}\n",
        encoding="utf-8",
    )


def render_all(directory: Path, out: Path) -> None:
    for path in sorted(directory.glob("*.pickle")):
        case = load_case(path)
        render_one(build(case), out / case.name)
        render_one(
            build(case, incomplete="interrupted by SIGTERM"), out / f"{case.name}-incomplete"
        )
        sys.stderr.write(f"rendered {case.name}\n")


def digests(directory: Path, out: Path) -> dict[str, str]:
    """``{path under out: sha256}`` of every rendering of the cases saved in ``directory``."""
    render_all(directory, out)
    return {
        path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cap = commands.add_parser("capture", help="run the built-in scenarios and save their inputs")
    cap.add_argument("directory", type=Path)
    cap.add_argument("--only", nargs="*", default=[], help="case names to capture")
    ren = commands.add_parser("render", help="rebuild every rendering from saved inputs")
    ren.add_argument("directory", type=Path)
    ren.add_argument("out", type=Path)
    dig = commands.add_parser(
        "digest", help=f"render the saved inputs and write their digests to DIR/{MANIFEST}"
    )
    dig.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.command == "capture":
        capture(args.directory, args.only)
    elif args.command == "render":
        render_all(args.directory, args.out)
    else:
        with tempfile.TemporaryDirectory() as out:
            found = digests(args.directory, Path(out))
        text = json.dumps(found, indent=2, sort_keys=True) + "\n"
        (args.directory / MANIFEST).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
