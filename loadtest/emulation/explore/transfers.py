"""boto3's managed S3 transfers in ``explore``: run on the delivery's own thread.

``upload_file``, ``upload_fileobj``, ``download_file``, ``download_fileobj`` and ``copy``
(on a client, a ``Bucket`` or an ``Object``) hand their ``PutObject`` (or their parts) to
s3transfer's worker threads and wait for them. A call from a thread the delivery did not
run itself is one the scheduler cannot place, and every schedule through it would be
inconclusive. While installed (``installed``), each transfer gets a copy of its
``TransferConfig`` with ``use_threads = False`` (and the classic transfer client): the
same requests, one after another on the calling thread, where each is a point. What the
transfer leaves in S3 is the same; only the order of a multipart upload's parts is no
longer concurrent. A load run never installs this.

Owns the patch of ``create_transfer_manager`` in ``boto3.s3.transfer`` and
``boto3.s3.inject``; nothing else.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_users = 0
_original: Any = None
_patched: list[Any] = []
"""The modules whose ``create_transfer_manager`` is replaced: ``boto3.s3.transfer``, and
``boto3.s3.inject``, which imported the name (the client's ``upload_fileobj`` calls it)."""


def _on_calling_thread(client: Any, config: Any, osutil: Any = None) -> Any:
    """``create_transfer_manager`` with the transfer's threads turned off."""
    config = copy.copy(config)
    config.use_threads = False
    config.preferred_transfer_client = "classic"
    return _original(client, config, osutil)


@contextmanager
def installed() -> Iterator[None]:
    """Run boto3's managed transfers on the calling thread for the block (a no-op without
    boto3)."""
    global _users, _original
    try:
        from boto3.s3 import inject, transfer
    except ImportError:
        yield
        return
    with _lock:
        if _users == 0:
            _original = transfer.create_transfer_manager
            for module in (transfer, inject):
                if getattr(module, "create_transfer_manager", None) is _original:
                    setattr(module, "create_transfer_manager", _on_calling_thread)  # noqa: B010
                    _patched.append(module)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                for module in _patched:
                    setattr(module, "create_transfer_manager", _original)  # noqa: B010
                _patched.clear()
                _original = None
