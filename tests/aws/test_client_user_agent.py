"""loadtest's own clients reuse their User-Agent strings, and send the very header botocore
builds: per client, and per set of features a call registers."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from botocore import useragent
from botocore.context import start_as_current_context
from botocore.useragent import UserAgentString, register_feature_id

from loadtest.aws import clients as aws
from loadtest.aws.user_agent import UserAgentMemo, memoise_user_agent


def _sent_user_agents(client: Any) -> list[str]:
    """Records the User-Agent header of each request ``client`` sends."""
    sent: list[str] = []

    def record(request: Any, **kwargs: Any) -> None:
        sent.append(request.headers["User-Agent"].decode())

    client.meta.events.register("before-send.sqs", record)
    return sent


def test_clients_send_the_header_botocore_builds(backend_url: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, backend_url)

    async def main() -> tuple[list[str], Any]:
        async with aws.clients(target) as (sqs, _):
            memo = sqs._user_agent_creator.to_string  # type: ignore[attr-defined]
            sent = _sent_user_agents(sqs)
            for memoised in (True, False):
                if not memoised:
                    # The same client without the memo: botocore's own string each time.
                    del sqs._user_agent_creator.to_string  # type: ignore[attr-defined]
                await sqs.list_queues()
                with start_as_current_context():
                    register_feature_id("PAGINATOR")
                    await sqs.list_queues()
                await sqs.list_queues()
            return sent, memo

    sent, memo = anyio.run(main, backend="asyncio")
    assert isinstance(memo, UserAgentMemo)
    assert sent[:3] == sent[3:]
    assert sent[0] == sent[2] != sent[1]  # the call's feature is in its header


def test_memo_builds_once_per_input() -> None:
    creator = UserAgentString.from_environment()
    creator.set_client_features({"A"})
    holder = type("Client", (), {"_user_agent_creator": creator})()
    builds: list[str] = []
    original = creator.to_string

    def counting() -> str:
        builds.append("built")
        return original()

    creator.to_string = counting  # type: ignore[method-assign]
    memoise_user_agent(holder)
    memoise_user_agent(holder)  # a second call wraps nothing more
    first = creator.to_string()
    assert creator.to_string() == first
    assert len(builds) == 1
    with start_as_current_context():
        register_feature_id("WAITER")
        assert creator.to_string() != first
    assert len(builds) == 2


def test_memo_follows_botocores_components_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    creator = UserAgentString.from_environment()
    holder = type("Client", (), {"_user_agent_creator": creator})()
    memoise_user_agent(holder)
    first = creator.to_string()
    monkeypatch.setattr(useragent, "modify_components", lambda components: components[:1])
    assert creator.to_string() == first.split(" ")[0]


def test_a_client_without_the_botocore_internals_is_left_alone() -> None:
    client = object()
    memoise_user_agent(client)
