"""The benchmark runs and finds every process kind it reports on.

It asserts nothing about time: only that a small burst settles and that each
figure was measured (a figure it could not read prints ``n/a``).
"""

from __future__ import annotations

import re
import time

import pytest

from benchmarks import run_bench as bench


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
    (flowing,) = [line for line in out.splitlines() if "while messages flow" in line]
    assert re.search(r"flow +(\d+(\.\d+)? of \d+|n/a)", flowing), flowing
    for part in ("harness", "backend", "environments", "all"):
        rows = [line.split() for line in out.splitlines() if " / " in line]
        (row,) = [cells for cells in rows if cells[0] == part]
        assert re.fullmatch(r"((\d+|n/a) / ){3}(\d+|n/a) MB", " ".join(row[1:])), row
    (sampler,) = [line for line in out.splitlines() if "memory sampler" in line]
    assert re.search(r"sampler \d+\.\d\d ms", sampler), sampler


def test_cores_busy_counts_the_samples_inside_the_span_only() -> None:
    memory = bench._PeakMemory()
    second = 1_000_000_000
    # Steps: CPU used since the previous sample. The first sample inside the span
    # only marks its start; the step that ends it belongs to the time before.
    memory.cpu_steps = [(0, 5.0), (1 * second, 9.0), (2 * second, 1.5), (3 * second, 2.0)]
    assert memory.cores_busy(1 * second, 3 * second) == pytest.approx((1.5 + 2.0) / 2)
    assert memory.cores_busy(2 * second, 2 * second) is None


def test_pss_peaks_are_the_largest_of_each_part_inside_the_span() -> None:
    memory = bench._PeakMemory()
    memory.pss_steps = [
        (0, {"harness": 50.0, "backend": 90.0, "environments": 200.0}),
        (1, {"harness": 70.0, "backend": 80.0, "environments": 210.0}),
        (2, {"harness": 60.0, "backend": 95.0}),
        (3, {"harness": 999.0, "backend": 999.0, "environments": 999.0}),
    ]
    assert memory.pss_peaks(1, 2) == {
        "harness": 70.0,
        "backend": 95.0,
        "environments": 210.0,
        "all": 360.0,  # the largest sum at one sample, not the sum of the peaks
    }
    assert memory.pss_peaks(4, 9) is None


def test_cores_busy_measures_a_busy_thread_as_about_one_core() -> None:
    """The figure is the CPU the process used over the wall time between samples. The spin
    is measured in the thread's own CPU time, so a busy machine (which stretches the wall
    time, not the CPU the spin uses) cannot change what is asserted."""
    memory = bench._PeakMemory()
    start_ns = time.monotonic_ns()
    memory.sample()
    spun_from = time.thread_time()
    for _ in range(5):
        until = time.thread_time() + 0.1
        while time.thread_time() < until:
            pass
        memory.sample()
    spun_s = time.thread_time() - spun_from
    busy = memory.cores_busy(start_ns, time.monotonic_ns())
    assert busy is not None
    wall_s = (memory.cpu_steps[-1][0] - memory.cpu_steps[0][0]) / 1e9
    counted_s = busy * wall_s
    # All of the spin is counted (less one clock tick of /proc's rounding at each end);
    # the process's other threads and children may add a little, never a second core's worth.
    assert spun_s - 0.03 <= counted_s <= spun_s + 0.3, (counted_s, spun_s, wall_s)
    # One thread spinning is at most one core (a busy machine only lowers the figure).
    assert 0 < busy < 1.3, busy
