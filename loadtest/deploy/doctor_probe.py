"""The doctor's data-plane checks on an endpoint that serves Lambda (MiniStack, LocalStack).

Deploys the probe handler behind a real event source mapping once per probe workload
of ``loadtest.doctor.mapping`` (``run_deployed``: the run's role, observer
layer, queues, table, function and mapping, every one tagged ``loadtest:run`` with the
probe's run id and deleted at the end, also on failure), and judges the history the
observer layer reported. Afterwards it looks for anything still tagged with those run
ids: what is found fails a ``cleanup`` check by name.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import botocore.exceptions

from loadtest.aws import clients as aws
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients, translated
from loadtest.deploy.remote_run import run_deployed
from loadtest.doctor.checks import CLEANUP, CheckResult
from loadtest.doctor.mapping import probes
from loadtest.emulation.environment.handlers import parse_ref


def serves_lambda(endpoint_url: str) -> bool:
    """Whether the endpoint answers Lambda's control plane (``ListFunctions``)."""
    clients, _ = make_clients(endpoint_url)
    try:
        clients.lambda_.list_functions(MaxItems=1)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
        return False
    return True


def run_mapping_checks(
    endpoint_url: str, *, on_check: Callable[[CheckResult], None] | None = None
) -> list[CheckResult]:
    """Every data-plane check through mappings deployed on ``endpoint_url``."""
    clients, where = make_clients(endpoint_url)
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, endpoint_url)
    base = f"dr{secrets.token_hex(3)}"
    run_ids = []
    results: list[CheckResult] = []

    def report(result: CheckResult) -> None:
        results.append(result)
        if on_check is not None:
            on_check(result)

    try:
        for index, probe in enumerate(probes()):
            run_id = f"{base}{index}"
            run_ids.append(run_id)
            refs = [parse_ref(v) for v in probe.scenario.variants]
            (variant,) = run_deployed(probe.scenario, refs, clients, target, run_id=run_id)
            report(probe.judge(variant.history))
    finally:
        with translated("look for the doctor's leftovers", where):
            left = [f for run_id in run_ids for f in find_tagged(clients, run_id)]
    if left:
        report(
            CheckResult(
                CLEANUP,
                False,
                f"{len(left)} tagged resource(s) left behind: "
                + ", ".join(f"{f.kind} {f.name}" for f in left)
                + f" (loadtest cleanup --endpoint-url {endpoint_url} deletes them)",
                {"left_behind": len(left)},
            )
        )
    return results
