"""boto3's managed S3 transfers while exploring: one transfer manager per transfer, on the
calling thread, with the caller's own config left as it was; the originals back after."""

from __future__ import annotations

from typing import Any

import boto3
from boto3.s3 import inject, transfer
from boto3.s3.transfer import TransferConfig
from s3transfer.futures import NonThreadedExecutor

from loadtest.emulation.explore import transfers


def test_a_transfer_runs_on_the_calling_thread_only_while_installed() -> None:
    original = transfer.create_transfer_manager
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    config = TransferConfig()  # use_threads: True, as a consumer leaves it
    made: list[Any] = []
    with transfers.installed():
        with transfers.installed():  # nested sessions share the one patch
            assert inject.create_transfer_manager is transfer.create_transfer_manager
            assert transfer.create_transfer_manager is not original
        manager = inject.create_transfer_manager(client, config)
        made.append(manager)
    try:
        (manager,) = made
        assert isinstance(manager._request_executor._executor, NonThreadedExecutor)
        assert config.use_threads is True  # the consumer's config is not changed
    finally:
        manager.shutdown()
    assert transfer.create_transfer_manager is original
    assert inject.create_transfer_manager is original
