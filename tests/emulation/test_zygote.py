"""Environments forked by the run's zygote start as a direct start would, and end as they did."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from loadtest.emulation.environment import parent_zygote as zygotes
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.emulation.environment.parent_environments import (
    _RUNS,
    ExecutionEnvironment,
    FunctionConfig,
    log_directory,
)
from loadtest.emulation.environment.parent_freezing import FREEZE

pytestmark = pytest.mark.skipif(not zygotes.available(), reason="needs Linux pidfds")

HANDLER = """
import os, sys, time
SEEN = {
    "modules": sorted(sys.modules),
    "environ": dict(os.environ),
    "argv": list(sys.argv),
    "path": list(sys.path),
    "cwd": os.getcwd(),
    "session_leader": os.getsid(0) == os.getpid(),
}

def handler(event, context):
    action = event.get("action")
    if action == "exit":
        os._exit(int(event["code"]))
    if action == "kill":
        os.kill(os.getpid(), int(event["signal"]))
    if action == "sleep":
        time.sleep(float(event["s"]))
    return {**SEEN, "pid": os.getpid(), "ppid": os.getppid()}
"""


def _config(handler: Path) -> FunctionConfig:
    return FunctionConfig(
        handler=parse_ref(f"{handler}:handler"),
        function_name="local-fn",
        table_name="orders",
        region="us-east-1",
        endpoint_url="http://127.0.0.1:9",  # never called
        memory_mb=128,
        timeout_s=5,
    )


@pytest.fixture
def handler(tmp_path: Path) -> Path:
    path = tmp_path / "seen_handler.py"
    path.write_text(HANDLER)
    return path


async def _seen(config: FunctionConfig, log_dir: str) -> dict[str, Any]:
    env = ExecutionEnvironment(config, 0, log_dir)
    try:
        reply = await env.invoke("r-1", {})
        assert reply.ok, reply.error
        result: dict[str, Any] = reply.result
        result["entry"] = env.entry_file
        result["forked"] = isinstance(env._process, zygotes.ForkedProcess)
        return result
    finally:
        await env.aclose()


def test_a_forked_environment_sees_what_a_direct_start_sees(
    handler: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(handler)

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        with log_directory() as log_dir:
            forked = await _seen(config, log_dir)
        monkeypatch.setenv("LOADTEST_ZYGOTE", "0")
        with log_directory() as log_dir:
            direct = await _seen(config, log_dir)
        return forked, direct

    forked, direct = anyio.run(both)
    assert forked["forked"] and not direct["forked"]
    assert forked["modules"] == direct["modules"]
    # The layer is unpacked in each run's own folder; the rest is the same.
    assert [forked["argv"][0], forked["argv"][2]] == [direct["argv"][0], direct["argv"][2]]
    assert forked["path"][1].endswith("/layer/python")  # after the handler's own folder
    assert forked["path"][:1] + forked["path"][2:] == direct["path"][:1] + direct["path"][2:]
    for seen in (forked, direct):
        del seen["environ"]["LOADTEST_OBSERVATIONS"]  # in each run's own folder
        del seen["environ"]["AWS_LAMBDA_LOG_STREAM_NAME"]  # new for each environment
        seen["environ"].pop("LOADTEST_ZYGOTE", None)
    assert forked["environ"] == direct["environ"]
    assert forked["session_leader"] and direct["session_leader"]
    assert forked["cwd"] == direct["cwd"]
    assert forked["entry"].endswith("layer/python/loadtest/observer/lambda_entry.py")
    assert forked["ppid"] != os.getpid() and direct["ppid"] == os.getpid()


def test_an_environments_exit_code_reaches_the_harness(handler: Path) -> None:
    config = _config(handler)

    async def run() -> list[str | None]:
        errors = []
        with log_directory() as log_dir:
            env = ExecutionEnvironment(config, 0, log_dir)
            try:
                for event in (
                    {"action": "exit", "code": 99},
                    {"action": "kill", "signal": int(signal.SIGKILL)},
                    # The zygote catches SIGTERM; an environment has the default action back.
                    {"action": "kill", "signal": int(signal.SIGTERM)},
                    {},
                ):
                    reply = await env.invoke("r", event)
                    errors.append(reply.error)
            finally:
                await env.aclose()
        return errors

    out_of_memory, killed, terminated, fine = anyio.run(run)
    assert out_of_memory is not None and out_of_memory.startswith("Runtime.OutOfMemory")
    assert (
        killed == "Runtime.ExitError: RequestId: r Error: Runtime exited with error: signal: killed"
    )
    assert terminated == (
        "Runtime.ExitError: RequestId: r Error: Runtime exited with error: signal: terminated"
    )
    assert fine is None


def test_a_zygote_that_dies_is_an_error_not_a_crash(handler: Path) -> None:
    config = _config(handler)

    async def run() -> None:
        with log_directory() as log_dir:
            env = ExecutionEnvironment(config, 0, log_dir)
            try:
                await env.start()
                zygote = _RUNS[log_dir].zygote
                assert zygote is not None
                async with anyio.create_task_group() as tg:

                    async def kill_zygote() -> None:
                        await anyio.sleep(0.3)
                        os.kill(zygote.pid, signal.SIGKILL)

                    tg.start_soon(kill_zygote)
                    await env.invoke("r", {"action": "sleep", "s": 3})
            finally:
                await env.aclose()

    with pytest.raises(BaseException) as caught:
        anyio.run(run)
    errors = [caught.value]
    while isinstance(errors[0], BaseExceptionGroup):
        errors = list(errors[0].exceptions)
    assert isinstance(errors[0], zygotes.ZygoteError), errors
    assert "zygote" in str(errors[0]) and "died" in str(errors[0])


def test_the_zygote_and_its_environments_end_with_the_run(handler: Path) -> None:
    config = _config(handler)

    async def run() -> list[int]:
        with log_directory() as log_dir:
            envs = [ExecutionEnvironment(config, n, log_dir) for n in range(3)]
            for env in envs:
                await env.start()
            zygote = _RUNS[log_dir].zygote
            assert zygote is not None
            pids = [zygote.pid] + [env._process.pid for env in envs if env._process]
            # The environments are not closed: leaving the run's folder stops them all.
        for env in envs:
            await env.aclose()  # and closing them afterwards is quiet
        return pids

    pids = anyio.run(run)
    assert len(pids) == 4
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_variants_of_a_run_share_its_zygote_and_layer_in_folders_of_their_own(
    handler: Path,
) -> None:
    config = _config(handler)

    async def run() -> tuple[list[dict[str, Any]], list[Path], int]:
        seen = []
        folders = []
        with log_directory() as run_dir:
            for _ in range(2):
                with log_directory() as variant_dir:
                    folders.append(Path(variant_dir))
                    assert Path(variant_dir).parent == Path(run_dir)
                    seen.append(await _seen(config, variant_dir))
                    zygote = _RUNS[variant_dir].zygote
                    assert zygote is not None
                    seen[-1]["zygote"] = pid = zygote.pid
                # Its logs and observations go with it.
                assert not await anyio.Path(variant_dir).exists()
                assert zygote.alive()  # the run's zygote outlives each variant
            left = sorted([p.name async for p in anyio.Path(run_dir).iterdir()])
            assert left == ["layer", "zygote.log"]
        return seen, folders, pid

    (first, second), folders, pid = anyio.run(run)
    assert first["forked"] and second["forked"]
    assert first["zygote"] == second["zygote"] == pid
    assert first["pid"] != second["pid"]  # each variant's environment is a fresh fork
    assert first["entry"] == second["entry"]  # from the layer unpacked once for the run
    assert first["entry"].startswith(str(folders[0].parent))
    assert first["environ"]["LOADTEST_OBSERVATIONS"].startswith(str(folders[0]))
    assert second["environ"]["LOADTEST_OBSERVATIONS"].startswith(str(folders[1]))
    assert not folders[0].parent.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the run's end stops its zygote


def _voluntary_switches(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError(f"no context switches in /proc/{pid}/status")


@pytest.mark.skipif(not FREEZE, reason="environments are not frozen between invocations")
def test_an_environment_frozen_and_continued_does_not_wake_the_zygote(handler: Path) -> None:
    config = _config(handler)

    async def run() -> int:
        with log_directory() as log_dir:
            env = ExecutionEnvironment(config, 0, log_dir)
            try:
                assert (await env.invoke("r-0", {})).ok
                zygote = _RUNS[log_dir].zygote
                assert zygote is not None
                before = _voluntary_switches(zygote.pid)
                for n in range(1, 21):
                    assert (await env.invoke(f"r-{n}", {})).ok
                return _voluntary_switches(zygote.pid) - before
            finally:
                await env.aclose()

    # Each stop and continue of an environment would wake its zygote twice (SIGCHLD).
    assert anyio.run(run) <= 2
