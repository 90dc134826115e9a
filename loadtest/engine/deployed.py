"""The deployed runtime: each variant runs as a Lambda function behind a real event source mapping.

Owns turning a scenario and its variants into a ``RunResult`` through
``loadtest.deploy`` (deploy or attach, send, collect, delete or restore): each
collected ``RemoteVariant`` becomes the engine's ``VariantRun`` through the
same builder as a local run (``variant_result``). With a ``recorder`` the run's
history file gets the backend, each variant run's evidence as it is collected
(``remote_run.Journal``), and each variant run's end (``E``) as it is collected
(the last one's once what was made is deleted: it says what could not be).
Prints nothing, never exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loadtest.aws import clients as aws
from loadtest.deploy.remote_run import AttachTo, RemoteVariant
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine.results import RunResult, VariantRun
from loadtest.engine.variant_result import variant_result
from loadtest.model.scenario.loading import Scenario
from loadtest.observer.fault_env import refuse_local_only

if TYPE_CHECKING:
    from loadtest.engine.recording import HistoryWriter


def run_deployed(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    target: aws.Target,
    *,
    keep: bool = False,
    attach: AttachTo | None = None,
    run_id: str | None = None,
    recorder: HistoryWriter | None = None,
) -> RunResult:
    """Run the scenario through deployed Lambda functions behind real mappings, and judge it.

    ``target`` is AWS or an endpoint that runs Lambda functions (MiniStack).
    Without ``attach`` each variant is deployed (and deleted afterwards unless
    ``keep``); with it, that already deployed consumer's own handler runs (one
    run, reported as ``attached:NAME``, the variants ignored) and the function
    is restored exactly afterwards. Credentials come from boto3's chain.
    Control-plane failures raise ``BackendError``. ``recorder`` writes the run's history
    as it goes (see the module's docstring).
    """
    from loadtest.deploy import remote_attach, remote_run
    from loadtest.deploy.lambda_cleanup import make_clients

    refuse_local_only(scenario.faults)
    clients, _ = make_clients(target.endpoint_url, target.region)
    run_id = run_id or aws.new_run_id()
    written = 0  # variant runs whose end is in the history

    def end(index: int, remote: RemoteVariant) -> None:
        nonlocal written
        if recorder is not None:
            run = deployed_variant_run(scenario, remote)
            recorder.ended(
                index, run, cut_short=remote.cut_short, backlog_peak=0, stopped_early=None
            )
        written = index + 1

    def on_variant(remote: RemoteVariant) -> None:
        # Each variant run's end as it is collected, but the last one's: what could not be
        # deleted is known once everything is, and is said in the last variant run.
        if written < len(refs) - 1:
            end(written, remote)

    if recorder is not None:
        recorder.backend(target)
    if attach is not None:
        # The function's own handler runs, whatever variants the scenario names.
        remote = [
            remote_attach.run_attached(
                scenario, attach, clients, target, run_id=run_id, journal=recorder
            )
        ]
    else:
        remote = remote_run.run_deployed(
            scenario,
            refs,
            clients,
            target,
            run_id=run_id,
            keep=keep,
            on_variant=on_variant,
            journal=recorder,
        )
    for index in range(written, len(remote)):
        end(index, remote[index])
    return RunResult(scenario, target, [deployed_variant_run(scenario, r) for r in remote])


def noticed(unreadable_lines: int, orphan_invocations: int) -> list[str]:
    """What the collector saw that the user should know, in the report's words."""
    said = []
    if unreadable_lines:
        said.append(f"{unreadable_lines} lines on the observation queue were not loadtest's")
    if orphan_invocations:
        said.append(f"{orphan_invocations} invocations wrote without reporting their records")
    return said


def deployed_variant_run(scenario: Scenario, remote: RemoteVariant) -> VariantRun:
    """The engine's record of a variant run, from one collected through a deployed mapping."""
    return variant_result(
        scenario,
        remote.ref,
        remote.names,
        remote.history,
        remote.end_state,
        check=remote.check,
        latency=remote.latency,
        cold_starts=remote.cold_starts,
        cleanup_problems=remote.cleanup_problems,
        incomplete=remote.incomplete,
        consumer_warnings=remote.deployed_warnings,  # an attached consumer runs its own settings
        noticed=noticed(remote.unreadable_lines, remote.orphan_invocations),
    )
