"""The HTML report: rendered from a recorded ``compare race-burst`` report, and in a real browser.

``sample_report.json`` was produced by ``loadtest compare race-burst.toml
--distinct-ids 10`` (the built-in scenario without its [verdict.allow], so the racy variant fails) on the embedded backend: read-then-write double-wrote
several ids, conditional rejected every duplicate.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from loadtest.reports.html.page import percentile_curve, render_html

SAMPLE = Path(__file__).parents[1] / "reports" / "sample_report.json"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT_COPY = Path("/tmp/loadtest-report.png")
PLANTED = '<script>alert("pwned")</script>'


def _sample() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return report


def _svg(html: str, css_class: str) -> list[str]:
    return re.findall(rf'<svg class="plot {css_class}".*?</svg>', html, flags=re.S)


def _race_blocks(html: str) -> dict[str, str]:
    blocks = re.findall(
        r'<div class="race" data-business-id="([^"]+)">(.*?)(?=<div class="race"|</section>)',
        html,
        re.S,
    )
    return {business_id: body for business_id, body in blocks}


def test_sample_report_is_a_race() -> None:
    report = _sample()
    by_variant = {run["variant"]: run for run in report["runs"]}
    assert by_variant["read-then-write"]["counts"]["duplicate_writes"] > 0
    assert by_variant["read-then-write"]["findings"]
    assert by_variant["conditional"]["counts"]["duplicate_writes"] == 0
    assert by_variant["conditional"]["findings"] == []


def test_timeline_shows_two_absent_reads_then_two_accepted_writes() -> None:
    report = _sample()
    html = render_html(report)
    blocks = _race_blocks(html)
    assert blocks, "no race timeline rendered"
    finding_ids = {f["business_id"] for f in report["runs"][0]["findings"]}
    business_id, block = next(iter(blocks.items()))
    assert business_id in finding_ids
    racy, conditional = re.split(r'<div class="timeline-block">', block)[1:3]
    # The racy variant: lanes per environment, reads that saw "absent", then writes accepted again.
    assert racy.count('class="event read read-absent"') >= 2
    assert racy.count('class="event write w-accepted"') == 1
    assert racy.count('class="event write w-again"') >= 1
    assert "GetItem → absent" in racy
    assert re.search(r'class="lane-label"[^>]*>env \d+<', racy)
    reads_at = [float(x) for x in re.findall(r'read-absent"><title>[^<]*at ([\d.]+) ms', racy)]
    writes_at = [
        float(x) for x in re.findall(r'w-(?:accepted|again)"><title>[^<]*at ([\d.]+) ms', racy)
    ]
    assert len(reads_at) >= 2 and len(writes_at) >= 2
    assert sorted(reads_at)[1] < max(writes_at), "the second read of absent must precede a write"
    # The conditional variant, same business id: rejected writes and the item they preserved.
    assert "<b>conditional</b>" in conditional
    assert 'class="event write w-rejected"' in conditional
    assert "rejected — kept quantity=" in conditional
    assert "w-again" not in conditional


def test_percentile_plot_has_one_path_per_variant() -> None:
    report = _sample()
    html = render_html(report)
    plots = _svg(html, "percentile-plot")
    names = list(report["runs"][0]["latency_hdr"])
    assert len(plots) == len(names)
    main = next(p for p in plots if 'id="plot-end_to_end"' in p)
    paths = re.findall(r'<path class="series" data-variant="([^"]+)" d="([^"]+)"', main)
    assert [variant for variant, _ in paths] == [run["variant"] for run in report["runs"]]
    for _, d in paths:
        assert d.startswith("M") and d.count("L") >= 50
    for label in ("0%", "90%", "99%", "99.9%", "99.99%", "latency (ms)", "percentile"):
        assert f">{label}<" in main
    assert main.count('class="legend-item"') == len(report["runs"])


def test_percentile_curve_follows_the_histogram() -> None:
    encoded = _sample()["runs"][0]["latency_hdr"]["end_to_end"]
    histogram = HdrHistogram.decode(encoded)
    curve = percentile_curve(encoded)
    assert curve[0] == (0.0, float(histogram.get_value_at_percentile(0)))
    assert curve[-1][1] == float(histogram.get_max_value())
    assert [y for _, y in curve] == sorted(y for _, y in curve)
    assert all(0 <= x <= 4 for x, _ in curve)


def test_header_summary_and_tables() -> None:
    report = _sample()
    html = render_html(report)
    assert f"seed <b>{report['seed']}</b>" in html
    assert 'id="copy-command"' in html
    assert report["command"] in html
    assert '<span class="v">fail</span>' in html and '<span class="v">pass</span>' in html
    assert "duplicate write(s)" in html  # the failed reason
    assert re.search(r'<td class="num bad">\d+</td>', html)  # duplicate_writes highlighted
    assert _svg(html, "step-plot") and "Duplicate writes per interval" in html
    for run in report["runs"]:
        total = run["write_decisions_total"]
        assert f"showing {len(run['write_decisions'])} of {total} write decisions" in html
    assert "receipt" not in html.lower()


def test_render_is_deterministic() -> None:
    assert render_html(_sample()) == render_html(_sample())


def test_report_derived_text_is_escaped() -> None:
    report = _sample()
    run = report["runs"][0]
    run["errors"] = [{"outcome": "error", "error": f"ValueError: {PLANTED}", "count": 3}]
    run["dead_letters"] = [
        {"message_id": "m-1", "business_id": PLANTED, "body": PLANTED, "last_error": PLANTED}
    ]
    run["warnings"] = [PLANTED]
    run["reasons"] = [PLANTED]
    run["write_decisions"][0]["item_after"] = {"id": {"S": PLANTED}}
    report["runs"][1]["variant"] = PLANTED
    report["command"] = f"loadtest run x {PLANTED}"
    html = render_html(report)
    assert PLANTED not in html
    assert "alert(&#34;pwned&#34;)" in html or "alert(&quot;pwned&quot;)" in html
    assert "&lt;script&gt;" in html
    assert "3×" in html  # grouped handler errors keep their count


def test_capped_write_decisions_say_so() -> None:
    report = _sample()
    run = report["runs"][1]
    run["write_decisions"] = run["write_decisions"][:5]
    run["write_decisions_total"] = 1234
    html = render_html(report)
    assert "showing 5 of 1234 write decisions (the report keeps the first 5)" in html


def test_without_findings_an_example_id_is_shown() -> None:
    report = _sample()
    for run in report["runs"]:
        run["findings"] = []
    html = render_html(report)
    assert "No business id was written twice" in html
    assert _race_blocks(html)
    assert "w-rejected" in html


def test_minimal_report_renders() -> None:
    report: dict[str, Any] = {"schema_version": 1, "seed": 1, "runs": [{"variant": "only"}]}
    html = render_html(report)
    assert "loadtest run SCENARIO --variant only --seed 1" in html
    assert "No latency histograms" in html


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_page_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(_sample()), encoding="utf-8")
    url = page.as_uri()

    dumped = _chromium(tmp_path, "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    console = [
        line for line in dumped.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line
    ]
    assert console == [], console
    dom = dumped.stdout
    # The page's script ran to its end (it sets this as its last statement).
    assert re.search(r'<body[^>]*data-ready="1"', dom), dom[:500]
    main_plot = re.search(
        r'<svg class="plot percentile-plot" id="plot-end_to_end".*?</svg>', dom, re.S
    )
    assert main_plot is not None
    paths = re.findall(r'<path class="series"[^>]*d="(M[^"]+)"', main_plot.group(0))
    assert len(paths) == 2 and all(d.count("L") >= 50 for d in paths)
    assert dom.count('class="plot timeline"') >= 2
    assert 'class="event read read-absent"' in dom
    # Pagination is applied by the script: no more than one page of rows is visible per table.
    assert 'class="pager"' in dom

    screenshot = tmp_path / "report.png"
    shot = _chromium(tmp_path, f"--screenshot={screenshot}", "--window-size=1400,4200", url)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.stat().st_size > 20_000
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copyfile(screenshot, SCREENSHOT_COPY)


def test_copy_of_sample_is_not_mutated() -> None:
    report = _sample()
    before = copy.deepcopy(report)
    render_html(report)
    assert report == before


def test_thresholds_failing_first_and_warnings_flagged() -> None:
    report = _sample()
    run = report["runs"][1]
    run["thresholds"] = [
        {"expr": "duplicate_writes == 0", "observed": 0, "ok": True},
        {"expr": "end_to_end.p99 < 1ms", "observed": 532479, "ok": False},
    ]
    run["warnings"] = ["moto is not atomic here"]
    html = render_html(report)
    failing = html.index("✗ <code>end_to_end.p99 &lt; 1ms</code>")
    passing = html.index("✓ <code>duplicate_writes == 0</code>")
    assert failing < passing
    assert 'class="nok"' in html
    assert 'id="warnings"' in html and "conditional: moto is not atomic here" in html


def test_the_page_and_the_terminal_show_every_count_the_json_has() -> None:
    """The HTML table and the terminal summary agree with the JSON on every count."""
    from rich.console import Console

    from loadtest.model.checker import COUNT_NAMES
    from loadtest.reports.model import RunModel
    from loadtest.reports.text.render import ROWS, summary_table

    report = _sample()
    html = render_html(report)
    rows = dict(
        re.findall(
            r'<tr class="[^"]*"><td>([a-z_]+)</td>((?:<td class="num[^"]*">[^<]*</td>)+)</tr>', html
        )
    )
    runs = report["runs"]
    for name in COUNT_NAMES:
        if name not in rows:
            # Counts beyond the main list appear only when they have something to say (the
            # effect counts only in runs with sinks or effects).
            assert all(run["counts"].get(name, 0) == 0 for run in runs), name
            continue
        cells = re.findall(r">([^<]*)</td>", rows[name])
        assert cells == [f"{run['counts'][name]:,}" for run in runs], name

    console = Console(width=200, record=True)
    console.print(summary_table(report))
    text = console.export_text()
    for label, read, _ in ROWS:
        values = [str(read(RunModel.from_json(run))) for run in runs]
        line = next(line for line in text.splitlines() if f" {label} " in line)
        assert [cell.strip() for cell in line.split("│")[2:-1]] == values, label


def test_an_explorations_page_reproduces_its_schedule_with_the_replay_line() -> None:
    report = _sample()
    report["command"] = "loadtest explore seed-lab --variant read-then-write"
    replay = "loadtest explore seed-lab --variant read-then-write --schedule 2:2=2"
    report["explore"] = {"replay": replay}
    html = render_html(report)
    assert replay in html
    del report["explore"]
    assert "--schedule" not in render_html(report)


def test_a_warning_every_run_shares_is_listed_once_with_the_runs_it_concerns() -> None:
    report = _sample()
    for run in report["runs"]:
        run["warnings"] = ["visibility timeout 30 s is below six times the function timeout"]
    report["runs"][0]["warnings"].append("redrive maxReceiveCount 3 is below 5")
    html = render_html(report)
    block = html[html.index('id="warnings"') :]
    assert block.count("visibility timeout 30 s is below") == 1
    assert "read-then-write, conditional: visibility timeout 30 s" in block
    assert "read-then-write: redrive maxReceiveCount 3 is below 5" in block
