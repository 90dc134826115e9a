"""The runtime seam: the library and the CLI choose the same runtime for the same run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.api import prepare
from loadtest.aws import clients as aws
from loadtest.cli import app
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine import deployed
from loadtest.engine.runtime import Deployed, Emulated, runtime_for
from loadtest.errors import InputError
from loadtest.model.scenario.loading import Scenario


class Reached(Exception):
    """Raised by the stand-in for the deployed runtime, carrying what it was given."""


@pytest.fixture
def deployed_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def standin(
        scenario: Scenario, refs: Sequence[HandlerRef], target: aws.Target, **kwargs: Any
    ) -> None:
        calls.append(
            {
                "scenario": scenario.name,
                "seed": scenario.seed,
                "refs": [ref.variant for ref in refs],
                "kind": target.kind,
                "keep": kwargs["keep"],
                "attach": kwargs["attach"],
            }
        )
        raise Reached

    monkeypatch.setattr(deployed, "run_deployed", standin)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    return calls


def test_the_library_and_the_cli_deploy_the_same_run_on_aws(
    deployed_calls: list[dict[str, Any]],
) -> None:
    with pytest.raises(Reached):
        loadtest.run("seed-lab", target="aws", seed=5)
    result = CliRunner().invoke(app, ["run", "seed-lab", "--target", "aws", "--seed", "5", "--yes"])
    assert isinstance(result.exception, Reached), result.output
    library, cli = deployed_calls
    assert library == cli
    assert library["kind"] is aws.BackendKind.AWS
    assert library["refs"] == ["conditional"] and library["seed"] == 5


def test_runtime_for_chooses_deployed_functions_on_aws_and_when_asked() -> None:
    assert runtime_for(aws.BackendKind.AWS, None, deployed=False) == Deployed(aws.BackendKind.AWS)
    url = "http://localhost:4566"
    assert runtime_for(aws.BackendKind.ENDPOINT, url, deployed=True, keep=True) == Deployed(
        aws.BackendKind.ENDPOINT, url, keep=True
    )
    assert runtime_for(aws.BackendKind.ENDPOINT, url, deployed=False) == Emulated(
        aws.BackendKind.ENDPOINT, url
    )
    assert runtime_for(aws.BackendKind.EMBEDDED, None, deployed=False) == Emulated()


def test_a_deployed_plan_refuses_what_only_the_local_runtime_does() -> None:
    assert prepare("seed-lab", target="aws").deployed
    assert not prepare("seed-lab").deployed
    with pytest.raises(InputError, match="not with target 'aws'"):
        prepare("seed-lab", target="aws", repeat=2)
    with pytest.raises(InputError, match="not with target 'aws'"):
        prepare("seed-lab", target="aws", cells=[{"batch_size": 1}])
    with pytest.raises(InputError, match="deploying \\(or attaching\\) needs endpoint_url"):
        prepare("seed-lab", deploy=True)
