"""An execution environment's own CPU per invocation, without a run around it.

``python -m benchmarks.environment_bench --invocations 1000 --environments 1`` starts
``python -m loadtest.emulation.environment.child_host`` (started directly, with its guard)
with a handler that makes no call (``return None``), and feeds each environment the given
number of invocations on its stdin, freezing and continuing it as the harness does
(it stops itself after each reply; the driver writes the next request, waits for the
stop, then sends SIGCONT to its group; ``--continue-first`` continues it before writing,
as the harness once did). Several environments are driven at once, one driver thread each. Prints, per
environment, the CPU (user + system, from ``/proc/PID/stat``) and the context switches of
all its threads (``/proc/PID/task/*/status``) between its first and its last invocation,
per invocation, and the median over the environments. ``--prefix`` runs the environment
under another command (callgrind, to count its instructions). Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HANDLER = "def handler(event, context):\n    return None\n"
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S


def _switches(pid: int) -> int:
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def _stopped(pid: int) -> bool:
    state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    return state in (b"T", b"t")


def _thaw(pid: int) -> None:
    """Continue the environment's group once it has stopped itself after its reply."""
    while not _stopped(pid):
        time.sleep(0.0002)
    os.killpg(pid, signal.SIGCONT)


def _drive(
    folder: Path, number: int, args: argparse.Namespace, out: list[tuple[float, float]]
) -> None:
    invocations = args.invocations
    env = {
        **os.environ,
        "TABLE_NAME": "orders",
        "LOADTEST_HANDLER": f"{folder / 'bench_handler.py'}:handler",
        "LOADTEST_OBSERVATIONS": str(folder / f"env-{number}.observations"),
        "LOADTEST_FREEZE": "1",
        "LOADTEST_PARENT_PID": str(os.getpid()),
    }
    process = subprocess.Popen(
        [*args.prefix.split(), sys.executable, "-m", "loadtest.emulation.environment.child_host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    hello = json.loads(process.stdout.readline())
    assert hello["ready"], hello
    event: dict[str, object] = {}
    cpu_s = switches = 0.0
    for i in range(invocations + 1):
        if i == 1:  # after the first invocation: the cold start's first touches are done
            cpu_s, switches = _cpu_s(process.pid), _switches(process.pid)
        if i and args.continue_first:
            _thaw(process.pid)
        request = {"request_id": f"r-{i}", "event": event, "timeout_ms": 3000, "records": []}
        process.stdin.write((json.dumps(request) + "\n").encode())
        process.stdin.flush()
        if i and not args.continue_first:
            _thaw(process.pid)
        reply = json.loads(process.stdout.readline())
        assert reply["ok"], reply
    cpu_s, switches = _cpu_s(process.pid) - cpu_s, _switches(process.pid) - switches
    out.append((cpu_s / invocations * 1000, switches / invocations))
    # Ended by the end of its input, so a tool it runs under (callgrind) writes its output.
    _thaw(process.pid)
    process.stdin.close()
    process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=1000)
    parser.add_argument("--environments", type=int, default=1)
    parser.add_argument(
        "--continue-first",
        action="store_true",
        help="continue the stopped environment before writing its next request",
    )
    parser.add_argument(
        "--prefix",
        default="",
        help="a command the environment runs under, e.g. 'valgrind --tool=callgrind'",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loadtest-envs-bench-") as name:
        folder = Path(name)
        (folder / "bench_handler.py").write_text(HANDLER)
        out: list[tuple[float, float]] = []
        threads = [
            threading.Thread(target=_drive, args=(folder, n, args, out))
            for n in range(args.environments)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    cpu_ms = statistics.median(cpu for cpu, _ in out)
    switches = statistics.median(s for _, s in out)
    print(
        json.dumps(
            {
                "environments": args.environments,
                "invocations": args.invocations,
                "cpu_ms_per_invocation": round(cpu_ms, 4),
                "context_switches_per_invocation": round(switches, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
