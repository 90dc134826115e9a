"""What writing a run's history costs the harness: CPU microseconds per message.

Takes a real run's records (a run of race-burst's conditional variant on the
embedded backend, ``--ids`` x ``--copies`` messages), then appends the same
records, in the order the run made them, to a history kept in the run's
unnamed spool (``loadtest.spool.FileFrames``, a run without ``--history``) and
to one written to a history file (``loadtest.engine.recording.HistoryWriter``,
flushed and synced every ``--flush-every`` messages, as the one-second timer
would at the run's rate), ``--repeat`` times each, alternating, and prints the
harness CPU per message of each and their difference. The run itself (its
environments, backend and checker) costs the same either way; this is the part
the history adds. Prints; asserts nothing about time.

    python -m benchmarks.history_bench [--ids 1000 --copies 3 --repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loadtest import engine
from loadtest.aws.clients import ResourceNames
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.engine.recording import HistoryWriter
from loadtest.model.history.log import History, RecordLog
from loadtest.model.scenario.loading import load_scenario
from loadtest.spool import FileFrames


def _records(history: History) -> list[tuple[str, Any]]:
    """The run's records in one stream, ordered by when each was made."""
    stream: list[tuple[int, str, Any]] = []
    stream += [(m.sent_ns, "sent", m) for m in history.sent]
    stream += [(i.ended_ns, "invocations", i) for i in history.invocations]
    stream += [(a.acked_ns, "acks", a) for a in history.acks]
    stream += [(d.seen_ns, "dead_letters", d) for d in history.dead_letters]
    stream.sort(key=lambda entry: entry[0])
    return [(log, record) for _, log, record in stream]


def _append(history: History, records: list[tuple[str, Any]], flush: Any, every: int) -> float:
    logs: dict[str, RecordLog[Any]] = {
        "sent": history.sent,
        "invocations": history.invocations,
        "acks": history.acks,
        "dead_letters": history.dead_letters,
    }
    started = time.process_time()
    for n, (log, record) in enumerate(records, start=1):
        logs[log].append(record)
        if flush is not None and n % every == 0:
            flush()
    if flush is not None:
        flush()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ids", type=int, default=1000)
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--flush-every",
        type=int,
        default=500,
        help="records between two flushes (default 500: about a second of a 3,000-message burst)",
    )
    args = parser.parse_args()
    scenario = load_scenario("race-burst").with_overrides(
        distinct_ids=args.ids, copies=args.copies, concurrency=8
    )
    result = engine.run(scenario, [parse_ref("conditional")])
    run = result.runs[0]
    messages = max(1, run.check.counts.messages_sent)
    records = _records(run.history)
    spool_s: list[float] = []
    file_s: list[float] = []
    sizes: list[int] = []
    names = ResourceNames("q", "d", "t")
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.repeat):
            spool_s.append(_append(History(frames=FileFrames), records, None, 0))
            path = Path(folder) / f"{i}.history"
            writer = HistoryWriter(path, {"format": 1})
            history = writer.history(0, parse_ref("conditional"), names, 0)

            def flush(writer: HistoryWriter = writer) -> None:
                writer.flush()
                writer.sync()

            file_s.append(_append(history, records, flush, args.flush_every))
            writer.close(None)
            sizes.append(path.stat().st_size)

    def per_message_us(seconds: list[float]) -> tuple[float, float]:
        values = [1e6 * s / messages for s in seconds]
        return statistics.median(values), (max(values) - min(values)) / 2

    spool, spool_spread = per_message_us(spool_s)
    kept, kept_spread = per_message_us(file_s)
    print(
        f"loadtest history bench: {messages} messages, {len(records)} records, "
        f"{args.repeat} repeats (median, ± half the range)"
    )
    print(f"  unnamed spool (no --history)   {spool:8.1f} µs CPU per message  ± {spool_spread:.1f}")
    print(f"  history file (--history)       {kept:8.1f} µs CPU per message  ± {kept_spread:.1f}")
    print(f"  the history file adds         {kept - spool:8.1f} µs CPU per message")
    print(
        f"  history file size              {statistics.median(sizes) / messages:8.1f} bytes per message"
    )


if __name__ == "__main__":
    main()
