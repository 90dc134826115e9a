"""Markdown summary and JUnit XML renderings of a report."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from loadtest.model.figures.thresholds import parse_threshold
from loadtest.reports.judge import apply_thresholds, relax_default_verdict
from loadtest.reports.text.formats import format_us, junit_xml, markdown_summary


def latency(p50: int, p99: int) -> dict[str, Any]:
    return {
        "count": 600,
        "min": 900,
        "p50": p50,
        "p90": p99,
        "p99": p99,
        "p99_9": p99,
        "max": p99,
        "mean": float(p50),
        "out_of_range": 0,
    }


def make_run(variant: str, duplicate_writes: int) -> dict[str, Any]:
    reasons = (
        [f"{duplicate_writes} duplicate write(s): an outcome was written again"]
        if duplicate_writes
        else []
    )
    return {
        "variant": variant,
        "handler": f"consumer.{variant.replace('-', '_')}:handler",
        "counts": {
            "messages_sent": 600,
            "distinct_ids": 150,
            "deliveries": 604,
            "redeliveries": 4,
            "overlapping_ids": 140,
            "overlapping_deliveries": 310,
            "duplicate_writes": duplicate_writes,
            "conflicting_writes": 0,
            "lost_outcomes": 0,
            "unsettled": 0,
            "dead_lettered": 0,
            "acked": 600,
            "handler_errors": 0,
        },
        "latency_us": {
            "end_to_end": latency(120_500, 310_000),
            "handler": latency(15_000, 40_000),
            "write": latency(800, 2_500),
        },
        "throughput": {"messages_per_s": 456.78, "duration_s": 1.314},
        "thresholds": [],
        "verdict": "fail" if reasons else "pass",
        "reasons": reasons,
    }


def make_report() -> dict[str, Any]:
    report = {
        "schema_version": 1,
        "seed": 7,
        "scenario": {"name": "race-burst"},
        "backend": {"kind": "embedded", "endpoint_url": None},
        "command": "loadtest compare race-burst --variants read-then-write,conditional --seed 7",
        "runs": [make_run("read-then-write", 450), make_run("conditional", 0)],
    }
    thresholds = [
        parse_threshold("duplicate_writes == 0"),
        parse_threshold("end_to_end.p99 < 250ms"),
        parse_threshold("conditional: throughput.messages_per_s > 400"),
    ]
    return apply_thresholds(report, thresholds)


def test_format_us() -> None:
    assert format_us(850) == "850 µs"
    assert format_us(120_500) == "120.5 ms"
    assert format_us(2_500_000) == "2.50 s"


def test_markdown_names_an_inconclusive_run_instead_of_calling_it_a_fail() -> None:
    report = make_report()
    run = report["runs"][1]
    run["verdict"] = "inconclusive"
    run["inconclusive"] = ["2 UpdateItem call(s) not understood"]
    lines = markdown_summary(report).splitlines()
    assert lines[7].startswith("| `conditional` | ⚠️ inconclusive | ")
    assert lines[6].startswith("| `read-then-write` | ❌ fail | ")
    assert "### Inconclusive (the run could not prove either way)" in lines
    assert "- `conditional`: 2 UpdateItem call(s) not understood" in lines


def test_markdown_summary() -> None:
    text = markdown_summary(make_report())
    lines = text.splitlines()
    assert lines[0] == "## loadtest: race-burst (seed 7)"
    assert "0 of 2 variant(s) passed." in lines
    assert lines[4] == (
        "| variant | verdict | sent | deliveries | redeliveries | overlapping ids | "
        "duplicate writes | "
        "conflicting writes | lost outcomes | dead-lettered | end-to-end p50 | end-to-end p99 | "
        "handler p99 | write p99 | msg/s | $ per M msgs |"
    )
    assert lines[5] == "|---|---|" + "---:|" * 14
    assert lines[6] == (
        "| `read-then-write` | ❌ fail | 600 | 604 | 4 | 140 (310 pairs) | **450** | 0 | 0 | 0 | 120.5 ms | "
        "310.0 ms | 40.0 ms | 2.5 ms | 456.78 | – |"
    )
    assert lines[7] == (
        "| `conditional` | ❌ fail | 600 | 604 | 4 | 140 (310 pairs) | 0 | 0 | 0 | 0 | 120.5 ms | "
        "310.0 ms | 40.0 ms | 2.5 ms | 456.78 | – |"
    )
    assert "### Failed thresholds" in lines
    assert "- `read-then-write`: `duplicate_writes == 0` — observed 450" in lines
    assert "- `read-then-write`: `end_to_end.p99 < 250ms` — observed 310.0 ms" in lines
    assert "- `conditional`: `end_to_end.p99 < 250ms` — observed 310.0 ms" in lines
    assert not any("messages_per_s" in line for line in lines)  # it passed
    assert "### Default verdict failures" in lines
    assert "- `read-then-write`: 450 duplicate write(s): an outcome was written again" in lines
    assert text.endswith(
        "Reproduce:\n\n```sh\n"
        "loadtest compare race-burst --variants read-then-write,conditional --seed 7\n```\n"
    )


def test_markdown_passing_report_has_no_failure_sections() -> None:
    report = make_report()
    report["runs"] = [report["runs"][1]]
    report["runs"][0]["thresholds"] = [{"expr": "duplicate_writes == 0", "observed": 0, "ok": True}]
    report["runs"][0]["verdict"] = "pass"
    report["command"] = None
    text = markdown_summary(report)
    assert "1 of 1 variant(s) passed." in text
    assert "| `conditional` | ✅ pass |" in text
    assert "###" not in text
    assert "Reproduce" not in text


def test_markdown_lists_relaxed_reasons_and_escapes_pipes() -> None:
    report = make_report()
    run = report["runs"][0]
    run["thresholds"] = []
    report["runs"] = [relax_default_verdict(run, {"duplicate_writes"})]
    report["runs"][0]["variant"] = "a|b"
    text = markdown_summary(report)
    assert "| `a\\|b` | ✅ pass |" in text
    assert "### Allowed by the scenario (expected in this demonstration)" in text
    assert "- `a\\|b`: 450 duplicate write(s): an outcome was written again" in text


def test_junit_xml_parses_with_one_suite_per_variant() -> None:
    text = junit_xml(make_report())
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>\n")
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures")) == ("7", "4")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "loadtest.race-burst.read-then-write",
        "loadtest.race-burst.conditional",
    ]
    racy, guarded = suites
    assert (racy.get("tests"), racy.get("failures"), racy.get("time")) == ("3", "3", "1.314")
    assert [c.get("name") for c in racy.findall("testcase")] == [
        "default verdict",
        "duplicate_writes == 0",
        "end_to_end.p99 < 250ms",
    ]
    failures = [c.find("failure") for c in racy.findall("testcase")]
    assert [f.get("message") if f is not None else None for f in failures] == [
        "450 duplicate write(s): an outcome was written again",
        "duplicate_writes == 0: observed 450",
        "end_to_end.p99 < 250ms: observed 310.0 ms",
    ]
    assert (guarded.get("tests"), guarded.get("failures")) == ("4", "1")
    guarded_cases = {c.get("name"): c.find("failure") for c in guarded.findall("testcase")}
    assert guarded_cases.keys() == {
        "default verdict",
        "duplicate_writes == 0",
        "end_to_end.p99 < 250ms",
        "conditional: throughput.messages_per_s > 400",
    }
    assert guarded_cases["default verdict"] is None
    assert guarded_cases["conditional: throughput.messages_per_s > 400"] is None
    assert guarded_cases["end_to_end.p99 < 250ms"] is not None
    properties = {p.get("name"): p.get("value") for p in racy.iter("property")}
    assert properties == {
        "seed": "7",
        "variant": "read-then-write",
        "handler": "consumer.read_then_write:handler",
        "verdict": "fail",
    }


def test_junit_failed_run_without_reasons_or_failed_thresholds_still_fails() -> None:
    report = make_report()
    run = report["runs"][1]
    run["thresholds"] = []
    run["verdict"] = "fail"
    report["runs"] = [run]
    root = ET.fromstring(junit_xml(report))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "verdict fail"
    assert root.get("failures") == "1"


def test_junit_escapes_markup_in_reasons() -> None:
    report = make_report()
    report["runs"][0]["reasons"] = ['<&> "quoted"']
    root = ET.fromstring(junit_xml(report))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == '<&> "quoted"'
    assert failure.text == '<&> "quoted"'
