"""The benchmark: a burst of a few thousand messages on the embedded backend.

``nox -s bench`` (or ``python -m benchmarks.run_bench``) prints figures and asserts
nothing about time. Figures, for one run of race-burst's conditional variant:

- messages per second end to end (settled messages / run duration),
- requests per message the backend served, by service (its own counter),
- CPU milliseconds per message of each process kind: the harness (this
  process), the execution environments (with the zygote that forks them) and
  the backend,
- cores busy: all processes' CPU over the run's wall time (setting up and tearing
  down included), and over the span from the first send to the last settled
  message alone, from the CPU the sampler reads at each sample,
- peak resident memory of each process kind (the largest single process, and
  for the environments their sum), and the run's memory across all its
  processes: the largest sum of their proportional set sizes (PSS: a page
  shared by several processes is counted once, split between them), sampled
  every ``SAMPLE_S * PSS_EVERY`` seconds through the report analysis; and the
  peak of each part (harness, backend, environments) in each quarter of the
  span messages flow, then after the run (the check and the report): a flat
  row is memory that does not grow with the traffic (``--rate`` sends at a
  steady rate instead of one burst, so the backlog stays small),
- the sizes of the JSON and HTML reports of the run,
- the producer's own ceiling: one producer process sending a burst with
  SendMessageBatch to a stub endpoint that answers at once (messages per CPU
  second of the producer, i.e. per core, and per wall second), and the same
  burst split across ``--ceiling-producers`` processes (``--producers``),
- with ``--history FILE``, the run's history written as it goes (as ``run --history``):
  compare its CPU per message with a run without it, side by side,
- with ``--env NAME=VALUE`` (placeholders allowed) and a variant that sends effects, e.g.
  ``--variant publish-after-guard --env ORDERS_TOPIC_ARN={topic:orders}``: the cost of an
  effect per message (its sink made, observed and read back), beside a run without,

and each figure's ratio to the one committed in ``reports/baselines/bench.json``
(``--save-baseline`` rewrites that file; refresh it in the same commit as an
intended change). Absolute figures depend on the machine and on what else it
runs; compare runs made side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.stub_sqs import producer_ceiling
from loadtest import engine
from loadtest.aws.clients import BackendKind
from loadtest.backend.embedded import EmbeddedBackend
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.engine.recording import HistoryWriter
from loadtest.model.figures.rate import rate_warning
from loadtest.model.history.journal import FORMAT_VERSION
from loadtest.model.scenario.loading import load_scenario
from loadtest.observer import layer
from loadtest.reports.html.page import render_html
from loadtest.reports.report import build_report

BASELINE = Path("reports/baselines/bench.json")
"""Where the committed figures live (relative to the repository root)."""
SAMPLE_S = 0.2
"""How often (in seconds) the child processes' peak memory is read."""
PSS_EVERY = 10
"""Every how many samples the processes' PSS is summed: the kernel walks every page
table to answer, which costs far more than the peak figures."""
PSS_PARTS = ("harness", "backend", "environments")
FLOW_STEPS = 4
"""The span from the first send to the last settled message is cut in this many equal
steps, and each step's peak PSS printed: memory that stops growing with the traffic shows
as a flat row."""


def _proc_cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _proc_mb(path: str, field: str) -> float | None:
    """A ``field: N kB`` figure of a /proc file, in MB; None if unreadable."""
    try:
        with open(path, encoding="ascii") as source:
            for line in source:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _peak_rss_mb(pid: int) -> float | None:
    """A live process's peak resident memory (VmHWM, in MB), None if unreadable."""
    return _proc_mb(f"/proc/{pid}/status", "VmHWM:")


def _pss_mb(pid: int) -> float | None:
    """A live process's proportional set size (MB): its private pages plus its share
    of pages it shares with others, so a sum over processes counts each page once."""
    return _proc_mb(f"/proc/{pid}/smaps_rollup", "Pss:")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                out += [int(c) for c in children.read().split()]
    except OSError:
        pass
    return out


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (environments may be a zygote's children)."""
    out: list[int] = []
    todo = _children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo += _children(child)
    return out


def _kind(pid: int) -> str:
    """What a process below the harness is, from its command line and its parent.

    A run's zygote is the harness's child running ``layer.ZYGOTE``; the
    environments it forks keep that command line, so they are told apart by
    their parent. Environments started directly run ``layer.BOOTSTRAP``.
    """
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            args = cmdline.read()
        with open(f"/proc/{pid}/stat", "rb") as stat:
            parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return "other"
    if layer.ZYGOTE_MARKER.encode() in args:
        return "zygote" if parent == os.getpid() else "environment"
    if b"loadtest.emulation.environment.child_host" in args or b"envhost.main()" in args:
        return "environment"
    if b"multiprocessing" in args:
        return "producer"  # the only processes loadtest spawns through multiprocessing
    return "other"


class _PeakMemory:
    """Samples the peak memory of this process's children while a run goes on."""

    def __init__(self) -> None:
        self.peaks_mb: dict[int, float] = {}
        self.kinds: dict[int, str] = {}
        """Each process's kind: ``environment``, ``zygote`` or ``producer`` (``--producers``),
        else ``other``."""
        self._samples = 0
        self.pss_sum_peak_mb = 0.0
        """The largest sum of PSS over this process and all its descendants at one sample:
        the run's memory across all its processes, shared pages counted once."""
        self.cpu_s = 0.0
        """CPU seconds the sampling thread has used so far (it runs in the harness, so the
        harness's figure includes them)."""
        self._cpu_by_pid: dict[int, float] = {}
        self.cpu_steps: list[tuple[int, float]] = []
        """At each sample, ``(time.monotonic_ns(), CPU seconds)``: the CPU this process and
        its descendants used since the previous sample, summed over the processes alive at
        both (a process that appeared or died in between adds nothing)."""
        self.backend_pid: int | None = None
        """Set once the embedded backend runs, so its memory is told apart in ``pss_steps``."""
        self.pss_steps: list[tuple[int, dict[str, float]]] = []
        """At each PSS sample, ``(time.monotonic_ns(), MB by part)``: ``harness`` (this
        process), ``backend`` and ``environments`` (every other process below this one:
        the zygote, the environments and any producer processes)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self, pss: bool = False) -> None:
        pss = pss or self._samples % PSS_EVERY == 0
        self._samples += 1
        parts = {"harness": (_pss_mb(os.getpid()) or 0.0) if pss else 0.0}
        processes = _descendants(os.getpid())
        self._step_cpu([os.getpid(), *processes])
        for pid in processes:
            peak = _peak_rss_mb(pid)
            if peak is not None:
                self.peaks_mb[pid] = max(peak, self.peaks_mb.get(pid, 0.0))
                if pid not in self.kinds:
                    self.kinds[pid] = _kind(pid)
            if pss:
                part = "backend" if pid == self.backend_pid else "environments"
                parts[part] = parts.get(part, 0.0) + (_pss_mb(pid) or 0.0)
        if pss:
            self.pss_steps.append((time.monotonic_ns(), parts))
            self.pss_sum_peak_mb = max(self.pss_sum_peak_mb, sum(parts.values()))

    def pss_peaks(self, start_ns: int, end_ns: int) -> dict[str, float] | None:
        """The largest PSS of each part, and of all (``all``: the largest sum at one sample),
        over the samples taken between two ``time.monotonic_ns()`` readings; None when no
        sample falls inside."""
        inside = [parts for t, parts in self.pss_steps if start_ns <= t <= end_ns]
        if not inside:
            return None
        peaks = {part: max(p.get(part, 0.0) for p in inside) for part in PSS_PARTS}
        peaks["all"] = max(sum(p.values()) for p in inside)
        return peaks

    def _step_cpu(self, pids: list[int]) -> None:
        now_ns = time.monotonic_ns()
        cpu = {pid: _proc_cpu_s(pid) for pid in pids}
        step = sum(
            cpu[pid] - before
            for pid, before in self._cpu_by_pid.items()
            if pid in cpu and cpu[pid] == cpu[pid]  # nan: it died while being read
        )
        self._cpu_by_pid = {pid: s for pid, s in cpu.items() if s == s}
        self.cpu_steps.append((now_ns, step))

    def cores_busy(self, start_ns: int, end_ns: int) -> float | None:
        """Average cores busy between two ``time.monotonic_ns()`` readings, from the samples
        taken inside that span; None when fewer than two samples fall inside it."""
        inside = [(t, step) for t, step in self.cpu_steps if start_ns <= t <= end_ns]
        if len(inside) < 2:
            return None
        return sum(step for _, step in inside[1:]) / ((inside[-1][0] - inside[0][0]) / 1e9)

    def _sample(self) -> None:
        started_s = time.thread_time()
        while not self._stop.wait(SAMPLE_S):
            self.sample()
            self.cpu_s = time.thread_time() - started_s


def _backend_requests(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"{url}/_loadtest/stats", timeout=5) as response:
            stats: dict[str, Any] = json.load(response)
            return stats
    except OSError:
        return {}


def _ratio(new: float | None, old: float | None) -> str:
    if new is None or not old:
        return ""
    return f"  ({new / old:.2f}x baseline {old:g})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ids", type=int, default=1000, help="distinct business ids (default 1000)"
    )
    parser.add_argument("--copies", type=int, default=3, help="messages per id (default 3)")
    parser.add_argument(
        "--concurrency", type=int, default=8, help="execution environments (default 8)"
    )
    parser.add_argument(
        "--variant", default="conditional", help="consumer variant (default conditional)"
    )
    parser.add_argument(
        "--close-connections",
        action="store_true",
        help="the backend closes every connection after its response (for comparisons)",
    )
    parser.add_argument(
        "--ceiling-messages",
        type=int,
        default=20_000,
        help="messages for the producer-ceiling measurement (default 20000; 0 skips it)",
    )
    parser.add_argument(
        "--ceiling-producers",
        type=int,
        default=2,
        help="also measure the ceiling with this many producer processes (default 2; 1 skips)",
    )
    parser.add_argument(
        "--producers",
        type=int,
        default=1,
        help="producer processes of the run (default 1)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="send at this steady rate (messages/s) instead of one burst: a soak whose "
        "backlog stays small, to see memory against the traffic alone",
    )
    parser.add_argument(
        "--history",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the run's history to FILE as it goes (run --history), to measure its cost",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for the function, placeholders allowed (as run --env): e.g. "
        'ORDERS_TOPIC_ARN="{topic:orders}" with --variant publish-after-guard, to measure '
        "the cost of an effect per message",
    )
    parser.add_argument(
        "--save-baseline",
        action="store_true",
        help=f"write this run's figures to {BASELINE}",
    )
    args = parser.parse_args(argv)

    scenario = load_scenario("race-burst").with_overrides(
        distinct_ids=args.ids,
        copies=args.copies,
        concurrency=args.concurrency,
        deadline_s=3600 if args.rate is None else 3600 + args.ids * args.copies / args.rate,
        producers=args.producers,
        rate_per_s=args.rate,
    )
    if args.env:
        scenario = dataclasses.replace(
            scenario, function=scenario.function.with_environment(args.env)
        )
    refs = [parse_ref(args.variant)]
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The sampler runs through the report analysis too: its memory is the run's.
    with _PeakMemory() as memory:
        with EmbeddedBackend(keep_alive=not args.close_connections) as backend:
            assert backend.pid is not None
            memory.backend_pid = backend.pid
            backend_cpu_before = _proc_cpu_s(backend.pid)
            requests_before = _backend_requests(backend.endpoint_url)
            wall_start = time.perf_counter()
            recorder = (
                HistoryWriter(args.history, {"format": FORMAT_VERSION, "command": "bench"})
                if args.history is not None
                else None
            )
            result = engine.run(
                scenario,
                refs,
                kind=BackendKind.ENDPOINT,
                endpoint_url=backend.endpoint_url,
                recorder=recorder,
            )
            if recorder is not None:
                recorder.close(result.incomplete)
            wall_s = time.perf_counter() - wall_start
            backend_cpu_s = _proc_cpu_s(backend.pid) - backend_cpu_before
            requests_after = _backend_requests(backend.endpoint_url)
            memory.sample(pss=True)
            backend_peak_mb = memory.peaks_mb.pop(backend.pid, None)
        self_after = resource.getrusage(resource.RUSAGE_SELF)
        sampler_cpu_s = memory.cpu_s
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        harness_run_peak_mb = self_after.ru_maxrss / 1024

        analysis_start = time.process_time()
        report = build_report(result)
        json_bytes = len(json.dumps(report, indent=2)) + 1
        html_bytes = len(render_html(report).encode())
        analysis_cpu_s = time.process_time() - analysis_start
        harness_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        memory.sample(pss=True)

    harness_cpu_s = (self_after.ru_utime + self_after.ru_stime) - (
        self_before.ru_utime + self_before.ru_stime
    )
    # RUSAGE_CHILDREN counts waited-for children: the environments, and the
    # backend once stopped; subtract the backend's share measured live.
    children_cpu_s = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    environments_cpu_s = max(0.0, children_cpu_s - backend_cpu_s)
    total_cpu_s = harness_cpu_s + environments_cpu_s + backend_cpu_s
    run = result.runs[0]
    counts = run.check.counts
    messages = max(1, counts.messages_sent)
    flowing = memory.cores_busy(run.history.started_ns, run.history.ended_ns)
    step_ns = max(1, (run.history.ended_ns - run.history.started_ns) // FLOW_STEPS)
    flow_steps = [
        memory.pss_peaks(
            run.history.started_ns + i * step_ns, run.history.started_ns + (i + 1) * step_ns
        )
        for i in range(FLOW_STEPS)
    ]
    after_run = memory.pss_peaks(run.history.ended_ns, time.monotonic_ns())

    def served(key: str) -> int:
        return int(requests_after.get(key, 0)) - int(requests_before.get(key, 0))

    env_peaks = [
        mb for pid, mb in memory.peaks_mb.items() if memory.kinds.get(pid) == "environment"
    ]
    zygote_peaks = [mb for pid, mb in memory.peaks_mb.items() if memory.kinds.get(pid) == "zygote"]
    producer_peaks = [
        mb for pid, mb in memory.peaks_mb.items() if memory.kinds.get(pid) == "producer"
    ]
    figures: dict[str, float | None] = {
        "messages_per_s": round(run.messages_per_s, 1),
        "requests_per_message": round(served("requests") / messages, 3),
        "sqs_requests_per_message": round(served("sqs") / messages, 3),
        "dynamodb_requests_per_message": round(served("dynamodb") / messages, 3),
        "cpu_ms_per_message": round(1000 * total_cpu_s / messages, 2),
        "harness_cpu_ms_per_message": round(1000 * harness_cpu_s / messages, 2),
        "environments_cpu_ms_per_message": round(1000 * environments_cpu_s / messages, 2),
        "backend_cpu_ms_per_message": round(1000 * backend_cpu_s / messages, 2),
        "cores_busy": round(total_cpu_s / wall_s, 2),
        "cores_busy_while_flowing": None if flowing is None else round(flowing, 2),
        "harness_peak_rss_mb": round(harness_peak_mb, 1),
        "environment_peak_rss_mb": round(max(env_peaks), 1) if env_peaks else None,
        "environments_peak_rss_sum_mb": round(sum(env_peaks), 1) if env_peaks else None,
        "zygote_peak_rss_mb": round(max(zygote_peaks), 1) if zygote_peaks else None,
        "producer_peak_rss_mb": round(max(producer_peaks), 1) if producer_peaks else None,
        "backend_peak_rss_mb": None if backend_peak_mb is None else round(backend_peak_mb, 1),
        "all_processes_peak_pss_mb": round(memory.pss_sum_peak_mb, 1),
        "all_processes_peak_pss_after_run_mb": None
        if after_run is None
        else round(after_run["all"], 1),
        "json_report_kb": round(json_bytes / 1024, 1),
        "html_report_kb": round(html_bytes / 1024, 1),
    }
    if args.ceiling_messages > 0:
        ceiling = producer_ceiling(args.ceiling_messages)
        figures["producer_ceiling_per_cpu_s"] = round(ceiling.messages_per_cpu_s)
        figures["producer_ceiling_per_s"] = round(ceiling.messages_per_s)
        if args.ceiling_producers > 1:
            several = producer_ceiling(args.ceiling_messages, args.ceiling_producers)
            figures["producers_ceiling_per_s"] = round(several.messages_per_s)
            figures["producers_ceiling_per_cpu_s"] = round(several.messages_per_cpu_s)
    baseline: dict[str, Any] = {}
    if BASELINE.exists() and not args.save_baseline:
        baseline = json.loads(BASELINE.read_text()).get("figures", {})

    def line(label: str, key: str, unit: str) -> None:
        value = figures[key]
        shown = "n/a" if value is None else f"{value:g} {unit}"
        print(f"  {label:<34}{shown}{_ratio(value, baseline.get(key))}")

    print(
        f"loadtest bench: {counts.messages_sent} messages ({args.ids} ids x {args.copies}), "
        f"variant {run.variant}, {args.concurrency} environments, embedded backend"
        + ("" if args.rate is None else f", sent at {args.rate:g} messages/s")
    )
    print(
        f"  settled                           {counts.acked + counts.dead_lettered} "
        f"(acked {counts.acked}, dead-lettered {counts.dead_lettered}, "
        f"duplicate writes {counts.duplicate_writes})"
    )
    print(
        f"  run duration                      {run.duration_s:.2f} s "
        f"(whole process incl. setup {wall_s:.2f} s)"
    )
    line("end to end", "messages_per_s", "messages/s")
    if args.rate is not None:
        summaries = {name: run.latency[name].summary() for name in ("end_to_end", "queue_dwell")}
        shortfall = rate_warning(run.rate, summaries)
        print(f"    ({shortfall or 'the requested rate was reached'})")
    e2e = run.latency["end_to_end"].summary()
    if e2e["count"]:
        print(
            f"  end-to-end p50/p99                {e2e['p50'] / 1000:.0f} ms / "
            f"{e2e['p99'] / 1000:.0f} ms"
        )
    if served("requests"):
        line("requests per message", "requests_per_message", "")
        line("  SQS", "sqs_requests_per_message", "")
        line("  DynamoDB", "dynamodb_requests_per_message", "")
    else:
        print("  requests per message              (the backend exposes no request counter)")
    line("CPU per message, all processes", "cpu_ms_per_message", "ms")
    line("  harness", "harness_cpu_ms_per_message", "ms")
    print(
        f"    (of which this bench's memory sampler {1000 * sampler_cpu_s / messages:.2f} ms, "
        "as far as its last sample)"
    )
    line(
        "  execution environments" + (" + producers" if args.producers > 1 else ""),
        "environments_cpu_ms_per_message",
        "ms",
    )
    line("  backend", "backend_cpu_ms_per_message", "ms")
    line("cores busy (avg)", "cores_busy", f"of {os.cpu_count()}")
    line("  while messages flow", "cores_busy_while_flowing", f"of {os.cpu_count()}")
    print(
        "    (from the first send to the last settled message; the average above also "
        "counts setting up and tearing down the run)"
    )
    line("peak RSS harness", "harness_peak_rss_mb", "MB")
    print(
        f"    (through the run and its check {harness_run_peak_mb:.1f} MB; building the reports "
        f"{analysis_cpu_s:.2f} s CPU)"
    )
    line("peak RSS one environment", "environment_peak_rss_mb", "MB")
    line("peak RSS environments, summed", "environments_peak_rss_sum_mb", "MB")
    print("    (each environment's RSS counts the pages it shares with the zygote and the others)")
    line("peak RSS zygote", "zygote_peak_rss_mb", "MB")
    line("peak RSS backend", "backend_peak_rss_mb", "MB")
    line("peak memory, all processes (PSS)", "all_processes_peak_pss_mb", "MB")
    print(
        f"    peak of each {100 // FLOW_STEPS}% of the time from the first send to the last "
        "settled message (a flat row: memory does not grow with the traffic)"
    )
    for part in (*PSS_PARTS, "all"):
        shown = " / ".join("n/a" if p is None else f"{p[part]:.0f}" for p in flow_steps)
        print(f"      {part:<30}{shown} MB")
    line("  after the run (check, report)", "all_processes_peak_pss_after_run_mb", "MB")
    if after_run is not None:
        print("    (" + ", ".join(f"{part} {after_run[part]:.0f} MB" for part in PSS_PARTS) + ")")
    if figures["producer_peak_rss_mb"] is not None:
        line("peak RSS one producer process", "producer_peak_rss_mb", "MB")
    line("JSON report", "json_report_kb", "KB")
    line("HTML report", "html_report_kb", "KB")
    if args.ceiling_messages > 0:
        line("producer ceiling, per core", "producer_ceiling_per_cpu_s", "messages/s")
        line("  per wall second", "producer_ceiling_per_s", "messages/s")
        if args.ceiling_producers > 1:
            line(
                f"  {args.ceiling_producers} processes, per wall second",
                "producers_ceiling_per_s",
                "messages/s",
            )
            line("  ... per CPU second, all", "producers_ceiling_per_cpu_s", "messages/s")
    if args.save_baseline:
        BASELINE.parent.mkdir(parents=True, exist_ok=True)
        BASELINE.write_text(
            json.dumps(
                {
                    "bench": {
                        "ids": args.ids,
                        "copies": args.copies,
                        "concurrency": args.concurrency,
                        "variant": args.variant,
                        "producers": args.producers,
                        "rate": args.rate,
                    },
                    "cpu_count": os.cpu_count(),
                    "figures": figures,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"  figures written to {BASELINE}")


if __name__ == "__main__":
    main()
