"""The benchmark runs and finds every process kind it reports on.

It asserts nothing about time: only that a small burst settles and that each
figure was measured (a figure it could not read prints ``n/a``).
"""

from __future__ import annotations

import re

import pytest

from loadtest.cli import bench


def test_a_small_bench_settles_and_measures_every_process_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench.main(["--ids", "20", "--copies", "2", "--concurrency", "2", "--ceiling-messages", "0"])
    out = capsys.readouterr().out
    assert "settled                           40 (acked 40" in out, out
    for label in (
        "peak RSS one environment",
        "peak RSS environments, summed",
        "peak RSS backend",
        "peak memory, all processes (PSS)",
        "execution environments",
    ):
        (line,) = [line for line in out.splitlines() if line.strip().startswith(label)]
        assert re.search(r"\d+(\.\d+)? (MB|ms)", line), line
    (sampler,) = [line for line in out.splitlines() if "memory sampler" in line]
    assert re.search(r"sampler \d+\.\d\d ms", sampler), sampler
